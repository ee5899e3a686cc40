//! Guard fusion (`Options::guardfusion`): a `guard_class` on an object whose `guard_nonnull`
//! was emitted earlier becomes part of that guard (`guard_nonnull_class`, at the earlier
//! place, with the earlier guard's resume data). The optimized trace may then exit at the
//! earlier guard where the original exits at the later one; the runs must then agree with the
//! original stopped at the earlier guard (`trace_interp::runs_equivalent`).

mod common;
use common::{check, check_with, parse, same_behaviour_under};
use optimizer::{optimize, Options, Reason};
use trace_interp::random::{random_trace, RandomConfig};
use trace_interp::{run, ClassPolicy, Outcome, RtValue, RunConfig};

const FUSABLE: &str = "[p0, p1, i2]
     guard_nonnull(p0, descr=<Guard1>) [i2]
     setfield_gc(p1, i2, descr=<FieldS T.x 8>)
     i3 = int_add(i2, 1)
     guard_class(p0, 4096, descr=<Guard2>) [i3, p1]
     i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
     finish(i4)";

#[test]
fn a_class_check_joins_the_earlier_nonnull_guard_of_its_object() {
    let out = check(
        FUSABLE,
        "[p0, p1, i2]
         guard_nonnull_class(p0, 4096, descr=<Guard1>) [i2]
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
    );
    assert_eq!(out.stats.removed(Reason::GuardFused), 1);
}

#[test]
fn guards_stay_apart_when_fusion_is_off() {
    let opts = Options {
        guardfusion: false,
        ..Options::default()
    };
    let out = check_with(
        FUSABLE,
        "[p0, p1, i2]
         guard_nonnull(p0, descr=<Guard1>) [i2]
         i3 = int_add(i2, 1)
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         guard_class(p0, 4096, descr=<Guard2>) [i3, p1]
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
        &opts,
    );
    assert_eq!(out.stats.removed(Reason::GuardFused), 0);
}

#[test]
fn no_fusion_across_a_label() {
    check(
        "[p0, i1]
         guard_nonnull(p0, descr=<Guard1>) [i1]
         label(p0, i1, descr=TargetToken(7))
         guard_class(p0, 4096, descr=<Guard2>) [i1]
         i2 = int_add(i1, 1)
         jump(p0, i2, descr=TargetToken(7))",
        "[p0, i1]
         guard_nonnull(p0, descr=<Guard1>) [i1]
         label(p0, i1, descr=TargetToken(7))
         guard_class(p0, 4096, descr=<Guard2>) [i1]
         i2 = int_add(i1, 1)
         jump(p0, i2, descr=TargetToken(7))",
    );
}

#[test]
fn a_class_check_with_a_variable_class_is_not_fused() {
    let out = check(
        "[p0, i1]
         guard_nonnull(p0, descr=<Guard1>) [i1]
         guard_class(p0, i1, descr=<Guard2>) [i1]
         finish(i1)",
        "[p0, i1]
         guard_nonnull(p0, descr=<Guard1>) [i1]
         guard_class(p0, i1, descr=<Guard2>) [i1]
         finish(i1)",
    );
    assert_eq!(out.stats.removed(Reason::GuardFused), 0);
}

/// The fused trace exits at `Guard1` for an object of another class, where the original exits
/// at `Guard2`: equivalent to the original stopped at `Guard1` (its write to `p1` not done,
/// `i2` not yet incremented), and told apart from a trace whose early exit leaves another
/// state.
#[test]
fn an_early_exit_leaves_the_state_of_the_earlier_guard() {
    let t = parse(FUSABLE);
    let out = optimize(&t, &Options::default()).unwrap();
    let cfg = RunConfig {
        class_policy: ClassPolicy::FromAddress,
        ..RunConfig::default()
    };
    let inputs = [
        RtValue::Ref(0x5000_0000_1008),
        RtValue::Ref(0x5000_0000_2008),
        RtValue::Int(41),
    ];
    let (a, b) = (run(&t, &inputs, &cfg), run(&out.trace, &inputs, &cfg));
    assert!(matches!(a.outcome, Outcome::GuardFailed { ref values, .. } if values[0] == RtValue::Int(42)));
    assert!(matches!(b.outcome, Outcome::GuardFailed { ref values, .. } if values == &[RtValue::Int(41)]));
    assert_eq!(same_behaviour_under(&t, &out.trace, &inputs, &cfg), Ok(true));
    // An early exit that does not leave the earlier guard's state is told apart.
    let wrong = parse(
        "[p0, p1, i2]
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         guard_nonnull_class(p0, 4096, descr=<Guard1>) [i2]
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
    );
    let err = same_behaviour_under(&t, &wrong, &inputs, &cfg).unwrap_err();
    assert!(err.contains("stopped where the optimized trace exited early"), "{err}");
    // And an exit at an earlier guard that was not fused is a difference as before.
    let unfused = parse(
        "[p0, p1, i2]
         guard_true(0, descr=<Guard1>) [i2]
         finish(0)",
    );
    let err = same_behaviour_under(&t, &unfused, &inputs, &cfg).unwrap_err();
    assert!(!err.contains("exited early"), "{err}");
}

/// Random traces with heap ops and loops, optimized with and without peeling, run with classes
/// derived from addresses (so class checks on inputs fail): the fused traces agree with the
/// originals, and some runs exit early at a fused guard.
#[test]
fn random_traces_with_fused_guards_agree_with_their_originals() {
    let cfg = RandomConfig::default();
    let run_cfg = RunConfig {
        class_policy: ClassPolicy::FromAddress,
        ..RunConfig::default()
    };
    let (mut fused, mut early, mut compared) = (0, 0, 0);
    let mut inputs = common::Inputs::new(7);
    for seed in 0..3500u64 {
        let (t, example) = random_trace(&cfg, seed);
        for opts in [Options::default(), common::peel()] {
            let out = optimize(&t, &opts).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            if out.stats.removed(Reason::GuardFused) == 0 {
                continue;
            }
            fused += 1;
            for inp in [example.clone(), inputs.for_trace(&t)] {
                match same_behaviour_under(&t, &out.trace, &inp, &run_cfg) {
                    Ok(true) => compared += 1,
                    Ok(false) => {}
                    Err(e) => panic!("seed {seed} ({opts:?}): {e}"),
                }
                let (a, b) = (run(&t, &inp, &run_cfg), run(&out.trace, &inp, &run_cfg));
                if let (Outcome::GuardFailed { resume_key: ka, .. }, Outcome::GuardFailed { resume_key: kb, .. }) =
                    (&a.outcome, &b.outcome)
                {
                    early += usize::from(ka != kb);
                }
            }
        }
    }
    assert!(fused >= 80, "only {fused} optimized traces fused a guard");
    assert!(
        early >= 60,
        "only {early} runs exited early at a fused guard ({compared} compared)"
    );
}
