//! Every peephole rule of `optimizer/rules/*.rules` proven correct by Z3 (with the shared op
//! semantics and the optimizer's own `IntBound` code for `check` conditions), every rule's
//! conditions shown satisfiable, and wrong rules shown to be rejected with a counterexample.

use std::path::Path;
use verify::rules::{load_rule_dir, prove_rule, ProofError};

fn rules_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../optimizer/rules")
}

#[test]
fn every_rule_is_proven() {
    let rules = load_rule_dir(&rules_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(rules.len() >= 80, "only {} rules", rules.len());
    let mut failures = Vec::new();
    let mut slow = Vec::new();
    for r in &rules {
        let t = std::time::Instant::now();
        if let Err(e) = prove_rule(r) {
            failures.push(format!("{e}\n"));
        }
        let el = t.elapsed();
        if el.as_millis() > 500 {
            slow.push(format!("{} {:?}", r.name(), el));
        }
    }
    if !slow.is_empty() {
        eprintln!("slow proofs: {}", slow.join(", "));
    }
    assert!(
        failures.is_empty(),
        "{} of {} rules failed:\n{}",
        failures.len(),
        rules.len(),
        failures.join("\n")
    );
}

fn prove_src(src: &str) -> Result<(), ProofError> {
    let rules = rule_dsl::load_str(src, "test.rules").unwrap_or_else(|e| panic!("{e}"));
    prove_rule(&rules[0])
}

#[test]
fn a_wrong_rule_is_rejected_with_a_counterexample() {
    let err = prove_src("mul_is_add: int_mul(a, b)\n    => int_add(a, b)\n").unwrap_err();
    let ProofError::Counterexample(c) = &err else {
        panic!("expected a counterexample, got {err}")
    };
    // The values Z3 picks must really be a counterexample (checked with plain Rust arithmetic).
    let a = c.vars.iter().find(|v| v.name == "a").unwrap().value;
    let b = c.vars.iter().find(|v| v.name == "b").unwrap().value;
    assert_eq!(c.source_value, a.wrapping_mul(b));
    assert_eq!(c.target_value, Some(a.wrapping_add(b)));
    assert_ne!(c.source_value, a.wrapping_add(b));
    let report = err.to_string();
    for needle in [
        "Could not prove correctness of rule 'mul_is_add'",
        "test.rules line 1",
        "counterexample values:",
        "a: ",
        "b: ",
        "operation int_mul(a, b)",
        "BUT",
        "target expression: int_add(a, b)",
    ] {
        assert!(report.contains(needle), "missing `{needle}` in:\n{report}");
    }
}

#[test]
fn checks_are_taken_into_account_in_counterexamples() {
    // The rule-language article's second example: with a > 1 and b > 2 the smallest counterexample is still wrong.
    let err = prove_src(
        "mul_is_add: int_mul(a, b)\n    check a.known_gt_const(1) and b.known_gt_const(2)\n    => int_add(a, b)\n",
    )
    .unwrap_err();
    let ProofError::Counterexample(c) = &err else {
        panic!("expected a counterexample, got {err}")
    };
    for v in &c.vars {
        let (lo, _, _, _) = v.bound;
        let min = if v.name == "a" { 1 } else { 2 };
        assert!(lo > min && v.value >= lo, "{err}");
    }
    assert!(err.to_string().contains("abstract value"), "{err}");
}

#[test]
fn subtle_wrong_rules_are_rejected() {
    // `and_x_c_in_range` without its check.
    assert!(matches!(
        prove_src("r: int_and(x, C)\n    => x\n"),
        Err(ProofError::Counterexample(_))
    ));
    // Off by one in the range check: x <= C is not enough (C = 2, x = 1).
    assert!(matches!(
        prove_src("r: int_and(x, C)\n    check x.lower >= 0 and x.upper <= C\n    => x\n"),
        Err(ProofError::Counterexample(_))
    ));
    // The target may not be less defined than the pattern: x << (y + 1) is invalid for y = 63.
    let e = prove_src("r: int_lshift(int_lshift(x, 1), y)\n    => int_lshift(x, int_add(y, 1))\n").unwrap_err();
    assert!(
        matches!(&e, ProofError::Counterexample(c) if c.target_value.is_none()),
        "{e}"
    );
    // MININT / -1: int_neg is right, but "x / -1 == 0 - x" with overflow semantics would not be.
    assert!(prove_src("r: int_floordiv(x, -1)\n    => int_neg(x)\n").is_ok());
    // Python modulo by a power of two is a mask, C's modulo is not.
    assert!(matches!(
        prove_src("r: int_mod(x, C)\n    check C > 0 and C & (C - 1) == 0\n    => int_and(x, C - 1)\n"),
        Err(ProofError::Counterexample(_))
    ));
}

#[test]
fn a_rule_that_can_never_apply_is_rejected() {
    let err =
        prove_src("never_applies: int_is_true(x)\n    check x.known_lt_const(0) and x.known_gt_const(0)\n    => x\n")
            .unwrap_err();
    assert!(matches!(err, ProofError::NeverApplies { .. }), "{err}");
    assert!(
        err.to_string().contains("Rule 'never_applies' cannot ever apply"),
        "{err}"
    );
    // Impossible checks on constants are caught too.
    let err = prove_src("r: int_add(x, C)\n    check C > 5 and C < 3\n    => x\n").unwrap_err();
    assert!(matches!(err, ProofError::NeverApplies { .. }), "{err}");
}
