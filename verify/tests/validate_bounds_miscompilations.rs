//! Translation validation on PyPy's integer-bounds miscompilations, written as (original, wrong optimized)
//! text pairs: each must be `Invalid` with a counterexample; correct optimizations of the
//! same traces must be `Valid`.

use trace_ir::text::parse_trace;
use verify::validate::{validate, Config, Verdict};

fn check(original: &str, optimized: &str) -> Verdict {
    let a = parse_trace(original).unwrap_or_else(|e| panic!("original: {e}"));
    let b = parse_trace(optimized).unwrap_or_else(|e| panic!("optimized: {e}"));
    validate(&a, &b, &Config::default())
}

/// The counterexample's value of input `name`.
fn input(v: &Verdict, name: &str) -> i64 {
    match v {
        Verdict::Invalid { counterexample } => {
            counterexample
                .inputs
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("no input {name} in {counterexample}"))
                .1
        }
        other => panic!("expected invalid, got {other}"),
    }
}

fn assert_invalid(v: &Verdict, message_part: &str) {
    match v {
        Verdict::Invalid { counterexample } => {
            assert!(
                counterexample.message.contains(message_part),
                "message `{}` lacks `{message_part}`",
                counterexample.message
            );
        }
        other => panic!("expected invalid ({message_part}), got {other}"),
    }
}

// --- unit-test bug 1: int_add(x, 10) < 15 does not imply x < 6 (wrap-around) ----

const ADD_WRAP: &str = "
[i0]
i1 = int_add(i0, 10)
i2 = int_lt(i1, 15)
guard_true(i2, descr=<Guard0>) [i0]
i3 = int_lt(i0, 6)
guard_true(i3, descr=<Guard1>) [i0]
finish(0)
";

#[test]
fn add_wrap_guard_removed_is_invalid() {
    let wrong = "
[i0]
i1 = int_add(i0, 10)
i2 = int_lt(i1, 15)
guard_true(i2, descr=<Guard0>) [i0]
finish(0)
";
    let v = check(ADD_WRAP, wrong);
    assert_invalid(&v, "Guard1");
    let x = input(&v, "i0");
    // The counterexample really passes the first guard and fails the second.
    assert!(x.wrapping_add(10) < 15 && x >= 6, "x = {x}");
}

#[test]
fn add_wrap_identity_is_valid() {
    assert_eq!(check(ADD_WRAP, ADD_WRAP), Verdict::Valid);
}

// --- unit-test bug 2: -x < 0 does not imply x > 0 (x = MININT) -------------------

const NEG: &str = "
[i0]
i1 = int_sub(0, i0)
i2 = int_lt(i1, 0)
guard_true(i2, descr=<Guard0>) [i0]
i3 = int_gt(i0, 0)
guard_true(i3, descr=<Guard1>) [i0]
finish(1)
";

#[test]
fn neg_minint_guard_removed_is_invalid() {
    let wrong = "
[i0]
i1 = int_sub(0, i0)
i2 = int_lt(i1, 0)
guard_true(i2, descr=<Guard0>) [i0]
finish(1)
";
    let v = check(NEG, wrong);
    assert_invalid(&v, "Guard1");
    assert_eq!(input(&v, "i0"), i64::MIN);
}

#[test]
fn neg_with_int_neg_guard_removed_is_invalid() {
    let orig = "
[i0]
i1 = int_neg(i0)
i2 = int_lt(i1, 0)
guard_true(i2, descr=<Guard0>) [i0]
i3 = int_gt(i0, 0)
guard_true(i3, descr=<Guard1>) [i0]
finish(i3)
";
    let wrong = "
[i0]
i1 = int_neg(i0)
i2 = int_lt(i1, 0)
guard_true(i2, descr=<Guard0>) [i0]
finish(1)
";
    let v = check(orig, wrong);
    assert_eq!(input(&v, "i0"), i64::MIN);
}

// --- fuzzer bug: 12 == int_mul(x, 12) does not imply x == 1 ---------------------

const MUL12: &str = "
[i0]
i1 = int_mul(i0, 12)
i2 = int_eq(i1, 12)
guard_true(i2, descr=<Guard0>) [i0]
i3 = int_add(i0, 5)
finish(i3)
";

#[test]
fn mul_12_does_not_imply_one() {
    let wrong = "
[i0]
i1 = int_mul(i0, 12)
i2 = int_eq(i1, 12)
guard_true(i2, descr=<Guard0>) [i0]
finish(6)
";
    let v = check(MUL12, wrong);
    assert_invalid(&v, "output 0");
    let x = input(&v, "i0");
    assert_eq!(x.wrapping_mul(12), 12);
    assert_ne!(x, 1);
    match &v {
        Verdict::Invalid { counterexample } => {
            let (a, b) = counterexample.differing.expect("differing values");
            assert_eq!(a, x.wrapping_add(5));
            assert_eq!(b, 6);
        }
        _ => unreachable!(),
    }
}

// --- fuzzer bug: 0 == int_lshift(0x1000000000000000, x), x in [0, 15] -----------
// The optimizer reasoned about the shift without overflow: a nonzero constant shifted left
// by at most 15 "is nonzero", so `guard_false(shifted == 0)` was dropped.

const LSHIFT: &str = "
[i0]
i1 = int_ge(i0, 0)
guard_true(i1, descr=<Guard0>) [i0]
i2 = int_le(i0, 15)
guard_true(i2, descr=<Guard1>) [i0]
i3 = int_lshift(1152921504606846976, i0)
i4 = int_eq(i3, 0)
guard_false(i4, descr=<Guard2>) [i0]
finish(i3)
";

#[test]
fn lshift_overflow_guard_removed_is_invalid() {
    let wrong = "
[i0]
i1 = int_ge(i0, 0)
guard_true(i1, descr=<Guard0>) [i0]
i2 = int_le(i0, 15)
guard_true(i2, descr=<Guard1>) [i0]
i3 = int_lshift(1152921504606846976, i0)
finish(i3)
";
    let v = check(LSHIFT, wrong);
    assert_invalid(&v, "Guard2");
    let x = input(&v, "i0");
    assert!((4..=15).contains(&x), "x = {x}");
}

// --- fuzzer bug: chained additions with a constant, the wrong IR value used -----

const CHAIN: &str = "
[i0]
i1 = int_add(i0, 5)
i2 = int_add(i1, 7)
i3 = int_sub(i2, 3)
finish(i3, i1)
";

#[test]
fn chained_add_wrong_base_is_invalid() {
    // (i0 + 5) + 7 - 3 folded to i1 + 9 instead of i0 + 9.
    let wrong = "
[i0]
i1 = int_add(i0, 5)
i3 = int_add(i1, 9)
finish(i3, i1)
";
    let v = check(CHAIN, wrong);
    assert_invalid(&v, "output 0");
}

#[test]
fn chained_add_right_fold_is_valid() {
    let right = "
[i0]
i1 = int_add(i0, 5)
i3 = int_add(i0, 9)
finish(i3, i1)
";
    assert_eq!(check(CHAIN, right), Verdict::Valid);
}

// --- Z3-found bug: int_sub_ovf(int_add(a, b), b) is not a ------------------------

#[test]
fn sub_ovf_of_wrapping_add_is_not_identity() {
    let orig = "
[i0, i1]
i2 = int_add(i0, i1)
i3 = int_sub_ovf(i2, i1)
guard_no_overflow(descr=<Guard0>) [i0, i1]
finish(i3)
";
    let wrong = "
[i0, i1]
finish(i0)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "Guard0");
    let (a, b) = (input(&v, "i0"), input(&v, "i1"));
    assert!(
        a.wrapping_add(b).checked_sub(b).is_none(),
        "a = {a}, b = {b} does not overflow"
    );
}

#[test]
fn sub_of_checked_add_is_identity() {
    // The related, correct optimization.
    let orig = "
[i0, i1]
i2 = int_add_ovf(i0, i1)
guard_no_overflow(descr=<Guard0>) [i0, i1]
i3 = int_sub(i2, i1)
finish(i3)
";
    let right = "
[i0, i1]
i2 = int_add_ovf(i0, i1)
guard_no_overflow(descr=<Guard0>) [i0, i1]
finish(i0)
";
    assert_eq!(check(orig, right), Verdict::Valid);
}

// --- structure: guards, fail arguments, heap, virtuals, loops ------------------------------

#[test]
fn new_guard_id_is_invalid() {
    let orig = "
[i0]
finish(i0)
";
    let wrong = "
[i0]
i1 = int_lt(i0, 5)
guard_true(i1, descr=<Guard7>) [i0]
finish(i0)
";
    assert_invalid(&check(orig, wrong), "new id");
}

#[test]
fn wrong_fail_argument_is_invalid() {
    let orig = "
[i0, i1]
i2 = int_lt(i0, i1)
guard_true(i2, descr=<Guard0>) [i0, i1]
finish(i0)
";
    let wrong = "
[i0, i1]
i2 = int_lt(i0, i1)
guard_true(i2, descr=<Guard0>) [i0, i0]
finish(i0)
";
    assert_invalid(&check(orig, wrong), "fail argument 1");
}

#[test]
fn strengthened_guard_is_invalid() {
    let orig = "
[i0]
i1 = int_lt(i0, 10)
guard_true(i1, descr=<Guard0>) [i0]
finish(i0)
";
    let wrong = "
[i0]
i1 = int_lt(i0, 9)
guard_true(i1, descr=<Guard0>) [i0]
finish(i0)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "Guard0");
    assert_eq!(input(&v, "i0"), 9);
}

#[test]
fn removed_allocation_described_by_resume_data_is_valid() {
    let orig = "
[i0, i1]
p2 = new(descr=<SizeDescr 16>)
setfield_gc(p2, i0, descr=<FieldS x 8>)
i3 = getfield_gc_i(p2, descr=<FieldS x 8>)
i4 = int_lt(i3, i1)
guard_true(i4, descr=<Guard0>) [p2, i1]
finish(i3)
";
    let right = "
[i0, i1]
i4 = int_lt(i0, i1)
guard_true(i4, descr=<Guard0>) [$0, i1] {$0 = new(descr=<SizeDescr 16>) <FieldS x 8>: i0}
finish(i0)
";
    assert_eq!(check(orig, right), Verdict::Valid);
    let wrong = "
[i0, i1]
i4 = int_lt(i0, i1)
guard_true(i4, descr=<Guard0>) [$0, i1] {$0 = new(descr=<SizeDescr 16>) <FieldS x 8>: i1}
finish(i0)
";
    assert_invalid(&check(orig, wrong), "fail argument 0");
}

#[test]
fn dropped_heap_write_is_invalid() {
    let orig = "
[p0, i1]
setfield_gc(p0, i1, descr=<FieldS x 8>)
setfield_gc(p0, 5, descr=<FieldS y 16>)
finish(i1)
";
    let wrong = "
[p0, i1]
setfield_gc(p0, 5, descr=<FieldS y 16>)
finish(i1)
";
    assert_invalid(&check(orig, wrong), "heap");
}

#[test]
fn read_after_write_forwarding_is_valid_and_aliasing_is_respected() {
    let orig = "
[p0, p1, i2]
setfield_gc(p0, i2, descr=<FieldS x 8>)
setfield_gc(p1, 7, descr=<FieldS x 8>)
i3 = getfield_gc_i(p0, descr=<FieldS x 8>)
finish(i3)
";
    // Forwarding i2 ignores that p1 may be p0.
    let wrong = "
[p0, p1, i2]
setfield_gc(p0, i2, descr=<FieldS x 8>)
setfield_gc(p1, 7, descr=<FieldS x 8>)
finish(i2)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "output 0");
    assert_eq!(input(&v, "p0"), input(&v, "p1"));
    // A different field cannot alias.
    let orig2 = "
[p0, p1, i2]
setfield_gc(p0, i2, descr=<FieldS x 8>)
setfield_gc(p1, 7, descr=<FieldS y 16>)
i3 = getfield_gc_i(p0, descr=<FieldS x 8>)
finish(i3)
";
    let right2 = "
[p0, p1, i2]
setfield_gc(p0, i2, descr=<FieldS x 8>)
setfield_gc(p1, 7, descr=<FieldS y 16>)
finish(i2)
";
    assert_eq!(check(orig2, right2), Verdict::Valid);
}

#[test]
fn loop_body_is_validated_with_fresh_parameters() {
    let orig = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_lt(i0, i1)
guard_true(i2, descr=<Guard0>) [i0, i1]
i3 = int_add(i0, 1)
i4 = int_mul(i3, 1)
jump(i3, i1, descr=TargetToken(1))
";
    let right = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_lt(i0, i1)
guard_true(i2, descr=<Guard0>) [i0, i1]
i3 = int_add(i0, 1)
jump(i3, i1, descr=TargetToken(1))
";
    assert_eq!(check(orig, right), Verdict::Valid);
    // Dropping the loop test would be correct for the first iteration only if i0 < i1
    // were known; it is not.
    let wrong = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i3 = int_add(i0, 1)
jump(i3, i1, descr=TargetToken(1))
";
    assert_invalid(&check(orig, wrong), "Guard0");
}

#[test]
fn unsupported_op_is_unknown() {
    let orig = "
[p0, p1, i2]
copystrcontent(p0, p1, 0, 0, i2)
finish()
";
    assert!(check(orig, orig).is_unknown());
}

// --- the optimizer's own output on the originals is valid ---------------------------------

fn optimizer_output_is_valid(original: &str) {
    let t = parse_trace(original).unwrap();
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap();
    let v = validate(&t, &out.trace, &Config::default());
    assert_eq!(v, Verdict::Valid, "optimized:\n{}", trace_ir::print_trace(&out.trace));
}

#[test]
fn optimizer_output_on_seed_004_originals_is_valid() {
    for original in [ADD_WRAP, NEG, MUL12, LSHIFT, CHAIN] {
        optimizer_output_is_valid(original);
    }
    optimizer_output_is_valid(
        "[i0, i1]\ni2 = int_add(i0, i1)\ni3 = int_sub_ovf(i2, i1)\nguard_no_overflow(descr=<Guard0>) [i0, i1]\nfinish(i3)\n",
    );
}

/// Regression (found by the random-trace validation): the result of an `_ovf` op in the
/// fail arguments of its own overflow guard was replaced by op 0.
#[test]
fn regression_ovf_result_in_its_own_guard() {
    optimizer_output_is_valid(
        "[i0, i1, i2]\ni3 = int_sub_ovf(i1, 13)\nguard_no_overflow(descr=<Guard0>) [i3, i0, i0]\nguard_value(i3, -22, descr=<Guard1>) [i2]\nfinish(i3)\n",
    );
}

// --- multiplication and division under the abstraction (uninterpreted functions first,
// full semantics when that fails): right folds stay valid, wrong ones are caught with real
// counterexamples ----------------------------------------------------------------------

#[test]
fn div_of_itself_folds_to_one_and_zero() {
    let orig = "
[i0, i1]
i2 = int_floordiv(i0, i0)
i3 = int_pymod(i0, i0)
i4 = int_pydiv(0, i1)
finish(i2, i3, i4)
";
    let right = "
[i0, i1]
finish(1, 0, 0)
";
    assert_eq!(check(orig, right), Verdict::Valid);
    let wrong = "
[i0, i1]
finish(0, 0, 0)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "output 0");
    match &v {
        Verdict::Invalid { counterexample } => assert_eq!(counterexample.differing, Some((1, 0))),
        _ => unreachable!(),
    }
}

#[test]
fn commuted_product_is_the_same_value() {
    let orig = "
[i0, i1]
i2 = int_mul(i0, i1)
i3 = int_mul(i1, i0)
i4 = int_sub(i2, i3)
finish(i4)
";
    let right = "
[i0, i1]
finish(0)
";
    assert_eq!(check(orig, right), Verdict::Valid);
}

#[test]
fn wrong_product_has_a_concrete_counterexample() {
    let orig = "
[i0, i1]
i2 = int_mul(i0, i1)
finish(i2)
";
    let wrong = "
[i0, i1]
i2 = int_mul(i0, i0)
finish(i2)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "output 0");
    let (a, b) = (input(&v, "i0"), input(&v, "i1"));
    match &v {
        Verdict::Invalid { counterexample } => {
            // The printed values are the real products, not values of an uninterpreted
            // function.
            assert_eq!(counterexample.differing, Some((a.wrapping_mul(b), a.wrapping_mul(a))));
            assert_ne!(a.wrapping_mul(b), a.wrapping_mul(a));
        }
        _ => unreachable!(),
    }
}

#[test]
fn removed_mul_overflow_guard_is_invalid() {
    let orig = "
[i0, i1]
i2 = int_mul_ovf(i0, i1)
guard_no_overflow(descr=<Guard0>) [i0, i1]
finish(i2)
";
    let wrong = "
[i0, i1]
i2 = int_mul(i0, i1)
finish(i2)
";
    let v = check(orig, wrong);
    assert_invalid(&v, "Guard0");
    let (a, b) = (input(&v, "i0"), input(&v, "i1"));
    assert!(a.checked_mul(b).is_none(), "{a} * {b} does not overflow");
    // With bounds that make overflow impossible the removal is right.
    let bounded = "
[i0, i1]
i2 = uint_lt(i0, 1000)
guard_true(i2, descr=<Guard1>) [i0, i1]
i3 = uint_lt(i1, 1000)
guard_true(i3, descr=<Guard2>) [i0, i1]
i4 = int_mul_ovf(i0, i1)
guard_no_overflow(descr=<Guard0>) [i0, i1]
finish(i4)
";
    let bounded_right = "
[i0, i1]
i2 = uint_lt(i0, 1000)
guard_true(i2, descr=<Guard1>) [i0, i1]
i3 = uint_lt(i1, 1000)
guard_true(i3, descr=<Guard2>) [i0, i1]
i4 = int_mul(i0, i1)
finish(i4)
";
    assert_eq!(check(bounded, bounded_right), Verdict::Valid);
}
