//! Differential tests: random traces (`trace_interp::random`, with heap ops, calls, floats and
//! loops) run in the reference interpreter before and after optimization, on their example
//! inputs and on random inputs; the outcomes must be equivalent
//! (`trace_interp::runs_equivalent`: same exit guard, same values, virtuals rebuilt at exits
//! compared by content, same heap-writing calls and external heap state; a fused guard may
//! exit early with the original's state there).
//!
//! Inputs on which the ORIGINAL trace hits an invalid operation (a shift by 70, a division by
//! zero, a null dereference) are skipped: there the original has no defined behaviour, so any
//! behaviour of the optimized trace is correct. They are counted, and most runs must be
//! defined.

mod common;
use common::{same_behaviour, Inputs};
use optimizer::{optimize, Options};
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::{OpFlags, Opcode};

/// Optimize `n` random traces of `cfg` with `opts`; run each on its example inputs and on
/// `extra` random inputs. Returns (runs compared, runs skipped).
fn differential(cfg: &RandomConfig, opts: &Options, seeds: std::ops::Range<u64>, extra: usize) -> (usize, usize) {
    let (mut compared, mut skipped) = (0, 0);
    let mut inputs = Inputs::new(seeds.start);
    for seed in seeds {
        let (t, example) = random_trace(cfg, seed);
        let out =
            optimize(&t, opts).unwrap_or_else(|e| panic!("seed {seed} ({opts:?}): {e}\n{}", trace_ir::print_trace(&t)));
        trace_ir::verify(&out.trace).unwrap();
        let mut runs = vec![example];
        for _ in 0..extra {
            runs.push(inputs.for_trace(&t));
        }
        for inp in runs {
            match same_behaviour(&t, &out.trace, &inp) {
                Ok(true) => compared += 1,
                Ok(false) => skipped += 1,
                Err(e) => panic!("seed {seed} ({opts:?}): {e}"),
            }
        }
    }
    (compared, skipped)
}

#[test]
fn random_traces_integers_only() {
    let (c, s) = differential(
        &RandomConfig {
            length: 40,
            ..RandomConfig::integers_only()
        },
        &Options::default(),
        0..1500,
        3,
    );
    assert!(c > 4 * s, "compared {c}, skipped {s}");
}

#[test]
fn random_traces_with_heap_calls_and_loops() {
    let (c, s) = differential(&RandomConfig::default(), &Options::default(), 10_000..12_000, 3);
    assert!(c > 4 * s, "compared {c}, skipped {s}");
}

#[test]
fn random_heap_heavy_traces() {
    // Dense in heap ops: escapes, overwritten stores and possible aliases interact.
    let cfg = RandomConfig {
        length: 60,
        heap: 25,
        int_ops: 5,
        guards: 8,
        calls: 4,
        ..RandomConfig::default()
    };
    let (c, s) = differential(&cfg, &Options::default(), 20_000..23_000, 2);
    assert!(c > 4 * s, "compared {c}, skipped {s}");
}

#[test]
fn random_traces_peeled() {
    // Loops peeled before optimizing: the copied body's guards report by resume key.
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let (c, s) = differential(&RandomConfig::default(), &opts, 60_000..61_500, 3);
    assert!(c > 4 * s, "compared {c}, skipped {s}");
    let (c, s) = differential(
        &RandomConfig {
            length: 40,
            ..RandomConfig::integers_only()
        },
        &opts,
        61_500..62_500,
        3,
    );
    assert!(c > 4 * s, "compared {c}, skipped {s}");
}

#[test]
fn random_traces_each_part_off() {
    // any combination must be correct: switch each part off in turn
    for part in Options::PARTS {
        let mut o = Options::default();
        assert!(o.set(part, false));
        differential(&RandomConfig::default(), &o, 30_000..30_150, 1);
    }
}

#[test]
fn random_long_traces() {
    let cfg = RandomConfig {
        length: 300,
        ..RandomConfig::default()
    };
    differential(&cfg, &Options::default(), 40_000..40_100, 2);
}

#[test]
fn optimizing_twice_is_still_correct() {
    let cfg = RandomConfig::default();
    let mut inputs = Inputs::new(5);
    for seed in 50_000..50_500u64 {
        let (t, example) = random_trace(&cfg, seed);
        let once = optimize(&t, &Options::default()).unwrap().trace;
        let twice = optimize(&once, &Options::default()).unwrap();
        assert!(
            twice.trace.num_real_ops() <= once.num_real_ops(),
            "seed {seed}: optimizing again grew the trace"
        );
        for inp in [example, inputs.for_trace(&t)] {
            same_behaviour(&t, &twice.trace, &inp).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }
}

#[test]
fn random_traces_exercise_stores_delayed_into_exits() {
    // the random traces store allocations into objects that exist before guards: some of
    // the optimized traces carry those stores in their exits, and behave as the originals
    let (mut with_writes, mut compared) = (0, 0);
    for seed in 20_000..22_000u64 {
        let (t, example) = random_trace(&RandomConfig::default(), seed);
        let out = optimize(&t, &Options::default()).unwrap();
        if out.trace.guards.iter().any(|g| !g.writes.is_empty()) {
            with_writes += 1;
            if same_behaviour(&t, &out.trace, &example).unwrap_or_else(|e| panic!("seed {seed}: {e}")) {
                compared += 1;
            }
        }
    }
    assert!(
        with_writes >= 20 && compared >= 10,
        "{with_writes} traces with exit writes, {compared} compared"
    );
}

/// Random traces of `seeds` optimized with peeling: those whose output `pick` selects run
/// like their originals (on the example inputs and two random ones); how many were picked
/// and how many runs compared (the others broke a promise).
fn peeled_runs_agree(seeds: std::ops::Range<u64>, pick: impl Fn(&optimizer::Optimized) -> bool) -> (usize, usize) {
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let (mut picked, mut compared) = (0, 0);
    let mut inputs = Inputs::new(5);
    for seed in seeds {
        let (t, example) = random_trace(&RandomConfig::default(), seed);
        let out = optimize(&t, &opts).unwrap();
        if !pick(&out) {
            continue;
        }
        picked += 1;
        for inp in [example, inputs.for_trace(&t), inputs.for_trace(&t)] {
            if same_behaviour(&t, &out.trace, &inp).unwrap_or_else(|e| panic!("seed {seed}: {e}")) {
                compared += 1;
            }
        }
    }
    (picked, compared)
}

#[test]
fn random_peeled_loops_exercise_carried_loads() {
    // random loops read fields and items of their parameters: some of the peeled ones carry
    // those loads through the body label, and behave as the originals
    let (carrying, compared) = peeled_runs_agree(60_000..62_000, |out| !out.carried.is_empty());
    assert!(
        carrying >= 20 && compared >= 20,
        "{carrying} loops carry loads, {compared} runs compared"
    );
}

#[test]
fn random_peeled_loops_keep_objects_virtual_across_the_back_edge() {
    // random loops that make a new object for their next iteration: some of the peeled ones
    // take it field by field through the body label (no allocation per iteration), and
    // behave as the originals, exits included (they rebuild the object)
    let (carrying, compared) = peeled_runs_agree(70_000..72_000, |out| !out.carried_virtuals.is_empty());
    assert!(
        carrying >= 20 && compared >= 20,
        "{carrying} loops carry objects field by field, {compared} runs compared"
    );
}

#[test]
fn random_string_traces_keep_strings_virtual() {
    // Strings the trace allocates, their characters (some that do not fit a character),
    // copies between them, escapes into calls and fields, and guards between: the optimized
    // traces keep strings virtual, rebuild them at exits, and behave as the originals.
    let cfg = RandomConfig {
        length: 50,
        strings: 12,
        heap: 3,
        ..RandomConfig::default()
    };
    let (c, s) = differential(&cfg, &Options::default(), 30_000..32_000, 3);
    assert!(c > 4 * s, "compared {c}, skipped {s}");
    let peel = Options {
        peel: true,
        ..Options::default()
    };
    let (c, s) = differential(&cfg, &peel, 32_000..33_000, 3);
    assert!(c > 4 * s, "peeled: compared {c}, skipped {s}");
    let (mut in_resume, mut removed_ops) = (0, 0);
    for seed in 30_000..32_000u64 {
        let (t, _) = random_trace(&cfg, seed);
        let out = optimize(&t, &Options::default()).unwrap();
        let strings = |tr: &trace_ir::Trace| {
            tr.ops
                .iter()
                .filter(|o| trace_ir::descr::string_char_size(o.opcode).is_some())
                .count()
        };
        removed_ops += strings(&t).saturating_sub(strings(&out.trace));
        if out.trace.guards.iter().any(|g| {
            g.virtuals
                .iter()
                .any(|v| matches!(v.kind, trace_ir::VirtualKind::Str { .. }))
        }) {
            in_resume += 1;
        }
    }
    assert!(
        in_resume >= 1_000 && removed_ops >= 10_000,
        "{in_resume} traces with a virtual string in resume data, {removed_ops} string ops removed"
    );
}

#[test]
fn random_field_promises_answer_loads() {
    // `record_known_field` of what a field holds (true on the example inputs, broken on
    // some others, whose runs are skipped): the optimized traces use the promised values
    // instead of loading them, and behave as the originals.
    let cfg = RandomConfig {
        length: 40,
        field_hints: 8,
        heap: 6,
        ..RandomConfig::default()
    };
    let (c, s) = differential(&cfg, &Options::default(), 40_000..42_000, 3);
    assert!(c > 2 * s, "compared {c}, skipped {s}");
    let (mut hinted, mut answered) = (0, 0);
    for seed in 40_000..42_000u64 {
        let (t, _) = random_trace(&cfg, seed);
        let count = |tr: &trace_ir::Trace, opc: Opcode| tr.ops.iter().filter(|o| o.opcode == opc).count();
        if count(&t, Opcode::RecordKnownField) > 0 {
            hinted += 1;
            let out = optimize(&t, &Options::default()).unwrap();
            let loads = |tr: &trace_ir::Trace| tr.ops.iter().filter(|o| o.opcode.has(OpFlags::LOAD)).count();
            if loads(&out.trace) < loads(&t) && count(&out.trace, Opcode::RecordKnownField) == 0 {
                answered += 1;
            }
        }
    }
    assert!(
        hinted > 500 && answered > 100,
        "{hinted} traces with promises, {answered} with loads answered"
    );
}
