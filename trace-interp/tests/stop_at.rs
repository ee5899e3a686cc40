//! `RunConfig::stop_at`: a run stops at the guard with a given resume key, at a given
//! loop-header entry, as if the guard failed; a loop and its peeled form count loop-header
//! entries alike, so both stop in the same iteration with the same state.

use trace_interp::{run, Outcome, RtValue, RunConfig, StopAt};
use trace_ir::peel::peel_loop;
use trace_ir::text::parse_trace;

const LOOP: &str = "[i0, i1]
     label(i0, i1, descr=TargetToken(7))
     i2 = int_lt(i0, i1)
     guard_true(i2, descr=<Guard3 key=40>) [i0]
     i3 = int_add(i0, 1)
     jump(i3, i1, descr=TargetToken(7))";

fn stopped(t: &trace_ir::Trace, loop_entries: u64, resume_key: u64) -> Outcome {
    let cfg = RunConfig {
        stop_at: Some(StopAt {
            loop_entries,
            resume_key,
        }),
        ..RunConfig::default()
    };
    run(t, &[RtValue::Int(0), RtValue::Int(10)], &cfg).outcome
}

#[test]
fn a_run_stops_at_the_guard_of_the_given_iteration() {
    let t = parse_trace(LOOP).unwrap();
    let plain = run(&t, &[RtValue::Int(0), RtValue::Int(10)], &RunConfig::default());
    // Ten iterations pass the guard; the eleventh fails it.
    assert_eq!(plain.loop_entries, 11);
    assert!(matches!(plain.outcome, Outcome::GuardFailed { ref values, .. } if values == &[RtValue::Int(10)]));
    let peeled = peel_loop(&t).unwrap();
    for trace in [&t, &peeled] {
        for entry in [1u64, 4, 11] {
            let want = [RtValue::Int(entry as i64 - 1)];
            assert!(
                matches!(stopped(trace, entry, 40), Outcome::GuardFailed { resume_key: 40, ref values, .. } if values == &want),
                "entry {entry}"
            );
        }
        // Another resume key, or an entry the run never reaches, does not stop it.
        assert!(
            matches!(stopped(trace, 4, 41), Outcome::GuardFailed { ref values, .. } if values == &[RtValue::Int(10)])
        );
        assert!(
            matches!(stopped(trace, 12, 40), Outcome::GuardFailed { ref values, .. } if values == &[RtValue::Int(10)])
        );
    }
}
