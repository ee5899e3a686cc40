//! Translation validation of optimized random traces (integer, overflow, guards, heap,
//! calls, floats, loops): no trace may be `Invalid`.
//!
//! `Unknown` verdicts are Z3 timeouts on 64-bit multiplication and division circuits (a
//! removed overflow guard after `int_mul_ovf`, `x / x` folded to 1). With a 1 s limit per
//! query they are about 5-10% of 15- and 20-op traces; the target is 2%, so the bound
//! asserted here (10%) is looser than the target (see the module documentation of
//! `verify::validate`).

use optimizer::{optimize, Options};
use trace_ir::print_trace;
use trace_ir::random::{random_trace, RandomConfig};
use verify::validate::{validate, Config, Verdict};

struct Tally {
    total: usize,
    valid: usize,
    unknown: Vec<(u64, String)>,
    invalid: Vec<String>,
}

fn run(cfg: &RandomConfig, seeds: std::ops::Range<u64>, tally: &mut Tally) {
    let vcfg = Config {
        timeout_ms: 1000,
        ..Config::default()
    };
    for seed in seeds {
        let (trace, _) = random_trace(cfg, seed);
        let out = match optimize(&trace, &Options::default()) {
            Ok(o) => o,
            Err(e) => panic!(
                "seed {seed}: optimizer refused a random trace: {e}\n{}",
                print_trace(&trace)
            ),
        };
        tally.total += 1;
        match validate(&trace, &out.trace, &vcfg) {
            Verdict::Valid => tally.valid += 1,
            Verdict::Unknown { reason } => tally.unknown.push((seed, reason)),
            Verdict::Invalid { counterexample } => tally.invalid.push(format!(
                "seed {seed}: {counterexample}\noriginal:\n{}\noptimized:\n{}",
                print_trace(&trace),
                print_trace(&out.trace)
            )),
        }
    }
}

fn check(t: &Tally) {
    assert!(
        t.invalid.is_empty(),
        "{} invalid of {}:\n{}",
        t.invalid.len(),
        t.total,
        t.invalid.join("\n\n")
    );
    assert!(
        t.unknown.len() * 100 <= t.total * 10,
        "{} unknown of {} (limit 10%): {:?}",
        t.unknown.len(),
        t.total,
        &t.unknown[..t.unknown.len().min(10)]
    );
}

#[test]
fn random_integer_traces_validate() {
    let mut t = Tally {
        total: 0,
        valid: 0,
        unknown: Vec::new(),
        invalid: Vec::new(),
    };
    run(
        &RandomConfig {
            length: 15,
            ..RandomConfig::integers_only()
        },
        0..150,
        &mut t,
    );
    check(&t);
    assert!(t.valid >= 135, "only {} valid", t.valid);
}

#[test]
fn random_mixed_traces_validate() {
    // Heap, calls, floats and loops (the default mix).
    let mut t = Tally {
        total: 0,
        valid: 0,
        unknown: Vec::new(),
        invalid: Vec::new(),
    };
    run(
        &RandomConfig {
            length: 20,
            ..RandomConfig::default()
        },
        0..150,
        &mut t,
    );
    check(&t);
    assert!(t.valid >= 135, "only {} valid", t.valid);
}
