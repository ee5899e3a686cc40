//! Translation validation of optimized random traces (integer, overflow, guards, heap,
//! calls, floats, loops): no trace may be `Invalid`, and fewer than 2% may be `Unknown`.
//!
//! `Unknown` verdicts are Z3 timeouts (2 s per query here: the test must not depend on how
//! loaded the machine is). Multiplications and divisions
//! are first checked abstracted as uninterpreted functions, and a guard that pins a value
//! to a constant makes later uses of it constant (see the module documentation of
//! `verify::validate`); before those two, 5-10% of these traces ended `Unknown`.

use optimizer::{optimize, Options};
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::print_trace;
use verify::validate::{validate_with_stats, Config, Stats, Verdict};

#[derive(Default)]
struct Tally {
    total: usize,
    valid: usize,
    unknown: Vec<(u64, String)>,
    invalid: Vec<String>,
    stats: Stats,
}

fn run(cfg: &RandomConfig, seeds: std::ops::Range<u64>) -> Tally {
    run_with(cfg, seeds, &Options::default(), false)
}

/// Validate the optimized traces of `seeds`; with `facts`, the facts the optimizer states
/// at guards are proven too (`Config::guard_facts`).
fn run_with(cfg: &RandomConfig, seeds: std::ops::Range<u64>, opts: &Options, facts: bool) -> Tally {
    let vcfg = Config {
        timeout_ms: 2000,
        ..Config::default()
    };
    let mut tally = Tally::default();
    for seed in seeds {
        let (trace, _) = random_trace(cfg, seed);
        let out = match optimize(&trace, opts) {
            Ok(o) => o,
            Err(e) => panic!(
                "seed {seed}: optimizer refused a random trace: {e}\n{}",
                print_trace(&trace)
            ),
        };
        tally.total += 1;
        let mut vcfg = vcfg.clone().stating(&out);
        if !facts {
            vcfg.guard_facts.clear();
        }
        let (verdict, stats) = validate_with_stats(&trace, &out.trace, &vcfg);
        tally.stats.add(&stats);
        match verdict {
            Verdict::Valid => tally.valid += 1,
            Verdict::Unknown { reason } => tally.unknown.push((seed, reason)),
            Verdict::Invalid { counterexample } => tally.invalid.push(format!(
                "seed {seed}: {counterexample}\noriginal:\n{}\noptimized:\n{}",
                print_trace(&trace),
                print_trace(&out.trace)
            )),
        }
    }
    tally
}

fn check(name: &str, t: &Tally) {
    eprintln!(
        "{name}: {} traces, {} valid, {} unknown, {} invalid; {} claims, {} abstract / {} concrete queries, {} timeouts, {:.1} s in Z3",
        t.total,
        t.valid,
        t.unknown.len(),
        t.invalid.len(),
        t.stats.claims,
        t.stats.abstract_queries,
        t.stats.concrete_queries,
        t.stats.timeouts,
        t.stats.solver_time.as_secs_f64()
    );
    for (seed, reason) in &t.unknown {
        eprintln!("  unknown: seed {seed}: {reason}");
    }
    assert!(
        t.invalid.is_empty(),
        "{name}: {} invalid of {}:\n{}",
        t.invalid.len(),
        t.total,
        t.invalid.join("\n\n")
    );
}

/// 150 integer traces (arithmetic, overflow ops and their guards, comparisons and guards)
/// and 150 mixed ones (plus heap, calls, floats, loops), validated on two threads; fewer
/// than 2% of the 300 may be `Unknown`.
#[test]
fn random_traces_validate() {
    let (ints, mixed) = std::thread::scope(|s| {
        let ints = s.spawn(|| {
            run(
                &RandomConfig {
                    length: 15,
                    ..RandomConfig::integers_only()
                },
                0..150,
            )
        });
        let mixed = s.spawn(|| {
            run(
                &RandomConfig {
                    length: 20,
                    ..RandomConfig::default()
                },
                0..150,
            )
        });
        (
            ints.join().expect("integer traces"),
            mixed.join().expect("mixed traces"),
        )
    });
    check("integer", &ints);
    check("mixed", &mixed);
    let total = ints.total + mixed.total;
    let unknown = ints.unknown.len() + mixed.unknown.len();
    assert_eq!(total, 300);
    assert!(
        unknown * 100 < total * 2,
        "{unknown} unknown of {total} (limit: under 2%)"
    );
    // Both halves are meaningful (the 2% limit could otherwise fall on one of them).
    assert!(
        ints.valid >= 144 && mixed.valid >= 144,
        "{} and {} valid",
        ints.valid,
        mixed.valid
    );
}

/// Loops optimized with peeling (`Options::peel`): the validator peels the original the same
/// way. No trace may be `Invalid`, fewer than 3% `Unknown`, and most must be loops.
#[test]
fn random_peeled_loops_validate() {
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let cfg = RandomConfig {
        length: 20,
        ..RandomConfig::default()
    };
    let t = run_with(&cfg, 500..650, &opts, false);
    check("peeled", &t);
    let loops = (500..650u64)
        .filter(|&s| trace_ir::is_peelable(&random_trace(&cfg, s).0))
        .count();
    assert!(loops >= 40, "only {loops} loops");
    assert!(
        t.unknown.len() * 100 < t.total * 3,
        "{} unknown of {}: {:?}",
        t.unknown.len(),
        t.total,
        t.unknown
    );
}

/// Peeled random loops whose body label takes an object field by field (the loop makes a
/// new one for its next iteration, `Optimized::carried_virtuals`): no trace may be
/// `Invalid`, fewer than 3% `Unknown`, and enough of them must carry objects.
#[test]
fn random_loops_carrying_objects_field_by_field_validate() {
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let cfg = RandomConfig::default();
    let seeds: Vec<u64> = (70_000..71_000u64)
        .filter(|&s| {
            let (t, _) = random_trace(&cfg, s);
            optimize(&t, &opts).is_ok_and(|o| !o.carried_virtuals.is_empty())
        })
        .take(40)
        .collect();
    assert!(seeds.len() >= 30, "only {} loops carry objects", seeds.len());
    let mut all = Tally::default();
    for &s in &seeds {
        let t = run_with(&cfg, s..s + 1, &opts, true);
        all.total += t.total;
        all.valid += t.valid;
        all.unknown.extend(t.unknown);
        all.invalid.extend(t.invalid);
        all.stats.add(&t.stats);
    }
    check("carrying objects", &all);
    assert!(
        all.unknown.len() * 100 < all.total * 3,
        "{} unknown of {}: {:?}",
        all.unknown.len(),
        all.total,
        all.unknown
    );
}

/// Random integer loops whose jump masks every loop-carried integer operand with a low
/// mask (`x & 0xffff`, or `x & 0x7fffffff` on odd seeds), optimized with peeling so the
/// optimizer assumes the masked ranges at the loop header: none may be `Invalid`, the
/// interpreter must agree before and after optimization on random inputs (exits compared by
/// resume key), and the masks must reach enough optimized loops to matter.
#[test]
fn random_masked_loops_validate_and_run() {
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let cfg = RandomConfig {
        length: 20,
        loops: true,
        ..RandomConfig::integers_only()
    };
    let vcfg = Config {
        timeout_ms: 2000,
        ..Config::default()
    };
    let (mut masked_loops, mut invalid, mut unknown) = (0, Vec::new(), 0);
    for seed in 700..820u64 {
        let (mut t, _) = random_trace(&cfg, seed);
        let Some((header, invariant)) = trace_ir::invariant_params(&t) else {
            continue;
        };
        let mask = if seed % 2 == 0 { 0xffff } else { 0x7fff_ffff };
        let c = t.make_const_int(mask);
        let jump = t.ops.pop().unwrap();
        let mut args = jump.args.clone();
        for (k, a) in args.iter_mut().enumerate() {
            let param = t.label_params(header).nth(k).unwrap();
            if !invariant[k] && t.op(param).opcode.result_kind() == trace_ir::Kind::Int {
                t.ops.push(trace_ir::Op::new(trace_ir::Opcode::IntAnd, &[*a, c]));
                *a = trace_ir::Value::op(trace_ir::OpRef::new(t.ops.len() - 1));
            }
        }
        t.ops.push(trace_ir::Op { args, ..jump });
        trace_ir::verify(&t).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", print_trace(&t)));
        let out = optimize(&t, &opts).unwrap().trace;
        if trace_ir::masked_params(&out).is_some_and(|(_, m)| m.iter().any(Option::is_some))
            && trace_ir::is_peeled_form(&t, &out)
        {
            masked_loops += 1;
        }
        match validate_with_stats(&t, &out, &vcfg).0 {
            Verdict::Invalid { counterexample } => invalid.push(format!(
                "seed {seed}: {counterexample}\noriginal:\n{}\noptimized:\n{}",
                print_trace(&t),
                print_trace(&out)
            )),
            Verdict::Unknown { .. } => unknown += 1,
            Verdict::Valid => {}
        }
        let mut rng = trace_interp::rng::Rng::new(seed);
        for _ in 0..4 {
            let inputs = trace_interp::random::random_inputs(&mut rng, &t);
            let rc = trace_interp::RunConfig::default();
            let (a, b) = (
                trace_interp::run(&t, &inputs, &rc),
                trace_interp::run(&out, &inputs, &rc),
            );
            if matches!(a.outcome, trace_interp::Outcome::Invalid { .. }) {
                continue;
            }
            trace_interp::runs_equivalent(&t, &out, &inputs, &rc, &a, &b).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}: {e}\noriginal:\n{}\noptimized:\n{}",
                    print_trace(&t),
                    print_trace(&out)
                )
            });
        }
    }
    eprintln!("masked loops: {masked_loops} optimized with masks, {unknown} unknown");
    assert!(invalid.is_empty(), "{}", invalid.join("\n\n"));
    assert!(
        masked_loops >= 30,
        "only {masked_loops} optimized loops kept a masked parameter"
    );
}

fn verdict(original: &str, optimized: &str) -> Verdict {
    let o = trace_ir::parse_trace(original).unwrap();
    let p = trace_ir::parse_trace(optimized).unwrap();
    verify::validate::validate(&o, &p, &Config::default())
}

/// A peeled loop whose jump masks a loop-carried parameter (`s = (s + x) & 0xffffff`) may
/// drop the body's overflow check on `s + x` for a small `x`: the validator assumes the
/// parameter in `[0, 0xffffff]` once its entry operand is proven in it (the back edge masks
/// it by its shape). Without the mask on the jump, or with an entry operand not known to be
/// in range (the loop not peeled), the dropped check is caught.
#[test]
fn masked_loop_parameters_are_checked() {
    let masked = "[i0, i1]\nlabel(i0, i1)\ni2 = int_and(i1, 255)\ni3 = int_add_ovf(i0, i2)\n\
        guard_no_overflow(descr=<Guard1>) [i0]\ni4 = int_and(i3, 16777215)\njump(i4, i1)\n";
    let preamble = "[i0, i1]\nlabel(i0, i1) -> [i2, i3]\ni4 = int_and(i3, 255)\ni5 = int_add_ovf(i2, i4)\n\
        guard_no_overflow(descr=<Guard1>) [i2]\ni6 = int_and(i5, 16777215)\nlabel(i6, i3) -> [i7, i8]\n\
        i9 = int_and(i8, 255)\ni10 = int_add(i7, i9)\n";
    let good = format!("{preamble}i11 = int_and(i10, 16777215)\njump(i11, i8)\n");
    assert!(verdict(masked, &good).is_valid(), "{:?}", verdict(masked, &good));
    // The optimizer's own output for it has no overflow check in the loop body, and is valid.
    let t = trace_ir::parse_trace(masked).unwrap();
    let opt = optimizer::optimize(
        &t,
        &optimizer::Options {
            peel: true,
            ..optimizer::Options::default()
        },
    )
    .unwrap();
    let out = &opt.trace;
    let body = out.last_label().unwrap().index();
    assert!(
        out.ops[body..].iter().all(|o| !o.opcode.is_ovf()),
        "{}",
        trace_ir::print_trace(out)
    );
    assert!(verify::validate::validate(&t, out, &Config::for_optimized(&opt)).is_valid());
    // Unmasked accumulator: `s + x` can overflow in a later iteration.
    let unmasked = "[i0, i1]\nlabel(i0, i1)\ni2 = int_and(i1, 255)\ni3 = int_add_ovf(i0, i2)\n\
        guard_no_overflow(descr=<Guard1>) [i0]\njump(i3, i1)\n";
    let wrong = "[i0, i1]\nlabel(i0, i1) -> [i2, i3]\ni4 = int_and(i3, 255)\ni5 = int_add_ovf(i2, i4)\n\
         guard_no_overflow(descr=<Guard1>) [i2]\nlabel(i5, i3) -> [i7, i8]\n\
         i9 = int_and(i8, 255)\ni10 = int_add(i7, i9)\njump(i10, i8)\n";
    assert!(verdict(unmasked, wrong).is_invalid(), "{:?}", verdict(unmasked, wrong));
    // Not peeled: the loop is entered with an arbitrary `s`, so the first iteration's check
    // cannot go.
    let unpeeled = "[i0, i1]\nlabel(i0, i1)\ni2 = int_and(i1, 255)\ni3 = int_add(i0, i2)\n\
        i4 = int_and(i3, 16777215)\njump(i4, i1)\n";
    assert!(
        verdict(masked, unpeeled).is_invalid(),
        "{:?}",
        verdict(masked, unpeeled)
    );
}

/// A peeled loop whose body drops the copy of a guard on a loop-invariant parameter is
/// valid; dropping one on a loop-carried parameter, or passing a parameter back unchanged
/// so that it looks invariant when the original changes it, is caught.
#[test]
fn peeled_loop_invariants_are_checked() {
    let invariant = "[i0, i1]\nlabel(i0, i1)\ni2 = int_and(i1, 7)\ni3 = int_is_true(i2)\n\
        guard_false(i3, descr=<Guard1>) [i0]\ni4 = int_add(i0, 1)\njump(i4, i1)\n";
    let good = "[i0, i1]\nlabel(i0, i1) -> [i2, i3]\ni4 = int_and(i3, 7)\ni5 = int_is_true(i4)\n\
        guard_false(i5, descr=<Guard1>) [i2]\ni6 = int_add(i2, 1)\nlabel(i6, i3) -> [i7, i8]\n\
        i9 = int_add(i7, 1)\njump(i9, i8)\n";
    assert!(verdict(invariant, good).is_valid(), "{:?}", verdict(invariant, good));
    // The guard's copy tests the loop-carried i0: it can fail in a later iteration.
    let carried = "[i0, i1]\nlabel(i0, i1)\ni2 = int_and(i0, 7)\ni3 = int_is_true(i2)\n\
        guard_false(i3, descr=<Guard1>) [i1]\ni4 = int_add(i0, 1)\njump(i4, i1)\n";
    // The optimized trace up to its loop: the peeled iteration tests the loop-carried i0.
    let head = "[i0, i1]\nlabel(i0, i1) -> [i2, i3]\ni4 = int_and(i2, 7)\ni5 = int_is_true(i4)\n\
        guard_false(i5, descr=<Guard1>) [i3]\ni6 = int_add(i2, 1)\nlabel(i6, i3) -> [i7, i8]\n";
    let wrong = format!("{head}i9 = int_add(i7, 1)\njump(i9, i8)\n");
    assert!(verdict(carried, &wrong).is_invalid(), "{:?}", verdict(carried, &wrong));
    // The optimized jump passes i7 back unchanged (so the validator treats it as
    // invariant), but the original increments it: the jump operands differ.
    let fake = format!("{head}jump(i7, i8)\n");
    assert!(verdict(carried, &fake).is_invalid(), "{:?}", verdict(carried, &fake));
}

/// The facts the optimizer states at the guards of 100 integer traces and 50 peeled loops
/// are proven to hold whenever their guard fails: none is refuted, and Z3 decides at least
/// nine in ten traces (the facts of ranges bounded by multiplications and divisions are
/// the queries it gives up on).
#[test]
fn guard_facts_are_proven() {
    let ints = run_with(
        &RandomConfig {
            length: 15,
            ..RandomConfig::integers_only()
        },
        1000..1100,
        &Options::default(),
        true,
    );
    let loops = run_with(
        &RandomConfig {
            length: 20,
            loops: true,
            ..RandomConfig::integers_only()
        },
        2000..2050,
        &Options {
            peel: true,
            ..Options::default()
        },
        true,
    );
    for (name, t) in [("integer", &ints), ("peeled", &loops)] {
        check(name, t);
        assert!(t.valid * 10 >= t.total * 9, "{name}: {} of {} valid", t.valid, t.total);
    }
}

/// Random string traces (strings the trace allocates, characters that may not fit,
/// copies, escapes and guards between), optimized with virtual strings: none `Invalid`,
/// fewer than 2% `Unknown`.
#[test]
fn random_string_traces_validate() {
    let cfg = RandomConfig {
        length: 20,
        strings: 12,
        heap: 3,
        ..RandomConfig::default()
    };
    let t = run(&cfg, 40_000..40_200);
    check("strings", &t);
    assert!(
        t.unknown.len() * 100 < t.total * 2 && t.valid >= 196,
        "{} valid, {} unknown of {}",
        t.valid,
        t.unknown.len(),
        t.total
    );
}

/// Random traces with `record_known_field` promises of what fields hold, optimized to use
/// them instead of loads: none `Invalid`, fewer than 2% `Unknown`.
#[test]
fn random_field_promise_traces_validate() {
    let cfg = RandomConfig {
        length: 20,
        field_hints: 8,
        heap: 6,
        ..RandomConfig::default()
    };
    let t = run(&cfg, 41_000..41_200);
    check("field promises", &t);
    assert!(
        t.unknown.len() * 100 < t.total * 2 && t.valid >= 190,
        "{} valid, {} unknown of {}",
        t.valid,
        t.unknown.len(),
        t.total
    );
}
