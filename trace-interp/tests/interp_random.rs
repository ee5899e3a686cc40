//! Random traces: they verify, run to their expected exit on their example inputs, and are
//! deterministic in the seed; they divide by constants and take square roots (what the
//! optimizer rewrites).

use trace_interp::random::{expected_exit_guard, is_expected_exit, random_trace, RandomConfig};
use trace_interp::{run, Outcome, RunConfig};
use trace_ir::{verify, Opcode};

fn check_many(cfg: &RandomConfig, seeds: std::ops::Range<u64>) -> (usize, usize, usize) {
    let (mut loops, mut guards, mut allocs) = (0, 0, 0);
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        if let Err(e) = verify(&t) {
            panic!("seed {seed}: {e}");
        }
        let r = run(&t, &inputs, &RunConfig::default());
        assert!(
            is_expected_exit(&t, &r.outcome),
            "seed {seed}: unexpected outcome {} (expected {:?})",
            r.outcome,
            expected_exit_guard(&t)
        );
        assert!(!matches!(r.outcome, Outcome::Invalid { .. }));
        if expected_exit_guard(&t).is_some() {
            loops += 1;
            assert!(r.iterations >= 1, "seed {seed}: the loop body never repeated");
        }
        guards += t.guards.len();
        allocs += t
            .ops
            .iter()
            .filter(|o| {
                matches!(
                    o.opcode,
                    Opcode::New | Opcode::NewWithVtable | Opcode::NewArray | Opcode::NewArrayClear
                )
            })
            .count();
    }
    (loops, guards, allocs)
}

#[test]
fn two_thousand_default_traces_run_to_their_exit() {
    let (loops, guards, allocs) = check_many(&RandomConfig::default(), 0..2000);
    // The mix must actually contain loops, guards and allocations.
    assert!(loops > 400, "only {loops} loops");
    assert!(guards > 4000, "only {guards} guards");
    assert!(allocs > 1000, "only {allocs} allocations");
}

#[test]
fn integer_only_traces_run_to_finish() {
    let cfg = RandomConfig {
        length: 40,
        ..RandomConfig::integers_only()
    };
    check_many(&cfg, 0..1000);
}

#[test]
fn long_traces_run_to_their_exit() {
    let cfg = RandomConfig {
        length: 120,
        ..RandomConfig::default()
    };
    check_many(&cfg, 5000..5300);
}

#[test]
fn generation_is_deterministic() {
    for seed in [0u64, 1, 99, 12345] {
        let (a, ia) = random_trace(&RandomConfig::default(), seed);
        let (b, ib) = random_trace(&RandomConfig::default(), seed);
        assert_eq!(a, b);
        assert_eq!(ia, ib);
    }
    let (a, _) = random_trace(&RandomConfig::default(), 1);
    let (b, _) = random_trace(&RandomConfig::default(), 2);
    assert_ne!(a, b);
}

#[test]
fn some_example_inputs_alias() {
    let aliasing = (0..500u64)
        .filter(|&seed| {
            let (_, inputs) = random_trace(&RandomConfig::default(), seed);
            let refs: Vec<u64> = inputs
                .iter()
                .filter_map(|v| match v {
                    trace_interp::RtValue::Ref(a) if *a != 0 => Some(*a),
                    _ => None,
                })
                .collect();
            (1..refs.len()).any(|i| refs[..i].contains(&refs[i]))
        })
        .count();
    assert!(
        aliasing > 20,
        "only {aliasing} of 500 traces have aliasing reference inputs"
    );
}

#[test]
fn random_traces_divide_by_constants_and_take_square_roots() {
    use trace_ir::Opcode::*;
    let (mut const_div, mut sqrt) = (0, 0);
    for seed in 0..300 {
        let (t, _) = random_trace(&RandomConfig::default(), seed);
        for op in &t.ops {
            if matches!(op.opcode, IntFloorDiv | IntMod | IntPyDiv | IntPyMod) && op.args[1].is_const() {
                const_div += 1;
            }
            sqrt += (op.opcode == FloatSqrt) as usize;
        }
    }
    assert!(
        const_div > 100 && sqrt > 5,
        "{const_div} constant divisions, {sqrt} square roots"
    );
}

#[test]
fn random_traces_link_frames_through_virtual_references() {
    use trace_ir::Opcode::*;
    let (mut made, mut stored, mut finished) = (0, 0, 0);
    for seed in 0..300 {
        let (t, _) = random_trace(&RandomConfig::default(), seed);
        let is_vref = |v: &trace_ir::Value| v.as_op().is_some_and(|o| t.ops[o.index()].opcode == VirtualRef);
        for op in &t.ops {
            made += (op.opcode == VirtualRef) as usize;
            stored += (op.opcode == SetfieldGc && is_vref(&op.args[1])) as usize;
            finished += (op.opcode == VirtualRefFinish) as usize;
        }
    }
    assert!(
        made > 50 && stored > 10 && finished > 10,
        "{made} virtual references, {stored} stored into a field, {finished} finished"
    );
}

#[test]
fn random_traces_load_and_store_at_byte_offsets() {
    let (mut loads, mut stores) = (0, 0);
    for seed in 0..300 {
        let (t, _) = random_trace(&RandomConfig::default(), seed);
        for op in &t.ops {
            if let Some(g) = op.opcode.gc_access() {
                *if g.value.is_some() { &mut stores } else { &mut loads } += 1;
            }
        }
    }
    assert!(loads > 20 && stores > 20, "{loads} gc loads, {stores} gc stores");
}
