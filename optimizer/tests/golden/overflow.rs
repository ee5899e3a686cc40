//! Overflow checks, and PyPy's known integer-bounds miscompilations (each kept guard, and
//! the trace behaving like the original on the counterexample).

use super::*;

#[test]
fn ovf_removed_when_bounds_exclude_overflow() {
    let out = check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_mul_ovf(i2, 1000)
         guard_no_overflow(descr=<Guard2>) [i0]
         finish(i3)",
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add(i1, 1)
         i3 = int_mul(i2, 1000)
         finish(i3)",
    );
    assert_eq!(out.stats.removed(Reason::Overflow), 2);
}

#[test]
fn ovf_kept_when_it_may_overflow() {
    check(
        "[i0]
         i2 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i2)",
        "[i0]
         i2 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i2)",
    );
}

#[test]
fn guard_overflow_after_safe_op_is_kept() {
    // the op cannot overflow, so guard_overflow always fails: it must stay
    check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_overflow(descr=<Guard1>) [i0]
         finish(i2)",
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_overflow(descr=<Guard1>) [i0]
         finish(i2)",
    );
}

#[test]
fn ovf_constant_folding() {
    check(
        "[i0]
         i1 = int_add_ovf(9223372036854775807, 1)
         guard_overflow(descr=<Guard1>) [i0]
         i2 = int_mul_ovf(3, 4)
         guard_no_overflow(descr=<Guard2>) [i0]
         i3 = int_sub_ovf(-9223372036854775808, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(i1, i2, i3)",
        "[i0]
         i3 = int_sub_ovf(-9223372036854775808, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(-9223372036854775808, 12, i3)",
    );
}

#[test]
fn knowledge_from_passed_guard_no_overflow() {
    check(
        "[i0]
         i1 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i2 = int_eq(i1, -9223372036854775808)
         guard_false(i2, descr=<Guard2>) [i0]
         i3 = int_lt(i0, 9223372036854775807)
         guard_true(i3, descr=<Guard3>) [i0]
         i4 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard4>) [i0]
         finish(i4)",
        "[i0]
         i1 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i1)",
    );
}

// ---------------------------------------------------------------- PyPy's known integer-bounds miscompilations

/// Optimizing must keep `guards` guards, and the trace must behave like the original on the
/// counterexample inputs of the seed.
fn must_keep(src: &str, guards: usize, counterexamples: &[Vec<RtValue>]) {
    let t = parse(src);
    let out = optimize(&t, &Options::default()).unwrap();
    let kept = out.trace.ops.iter().filter(|o| o.opcode.is_guard()).count();
    assert_eq!(kept, guards, "guards removed:\n{}", trace_ir::print_trace(&out.trace));
    for inp in counterexamples {
        assert!(
            same_behaviour(&t, &out.trace, inp).unwrap(),
            "original invalid on {inp:?}"
        );
    }
}

#[test]
fn miscompilation_1_wrapping_add_backwards() {
    // int_add(x, 10) < 15 does not imply x < 6 (x = MAXINT - 4 wraps)
    must_keep(
        "[i0]
         i1 = int_add(i0, 10)
         i2 = int_lt(i1, 15)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_lt(i0, 6)
         guard_true(i3, descr=<Guard2>) [i0]
         finish(i0)",
        2,
        &[
            vec![RtValue::Int(i64::MAX - 4)],
            vec![RtValue::Int(9223372036854775800)],
        ],
    );
}

#[test]
fn miscompilation_2_negation_of_minint() {
    // int_sub(0, x) < 0 does not imply x > 0 (x = MININT)
    for op in ["i1 = int_sub(0, i0)", "i1 = int_neg(i0)"] {
        must_keep(
            &format!(
                "[i0]
                 {op}
                 i2 = int_lt(i1, 0)
                 guard_true(i2, descr=<Guard1>) [i0]
                 i3 = int_gt(i0, 0)
                 guard_true(i3, descr=<Guard2>) [i0]
                 finish(i0)"
            ),
            2,
            &[vec![RtValue::Int(i64::MIN)]],
        );
    }
}

#[test]
fn miscompilation_3_wrapping_mul_equality() {
    // 12 == int_mul(x, 12) does not imply x == 1 (x = 0x8000000000000001)
    must_keep(
        "[i0]
         i1 = int_mul(i0, 12)
         i2 = int_eq(i1, 12)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_eq(i0, 1)
         guard_true(i3, descr=<Guard2>) [i0]
         finish(i0)",
        2,
        &[vec![RtValue::Int(0x8000000000000001u64 as i64)]],
    );
}

#[test]
fn miscompilation_4_sub_ovf_of_wrapping_add() {
    // int_sub_ovf(int_add(a, b), b) is not a: the guard can fail
    let src = "[i0, i1]
         i2 = int_add(i0, i1)
         i3 = int_sub_ovf(i2, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i3)";
    check(src, src);
    must_keep(
        src,
        1,
        &[
            vec![RtValue::Int(i64::MAX), RtValue::Int(1)],
            vec![RtValue::Int(-5), RtValue::Int(i64::MIN)],
        ],
    );
}

#[test]
fn correct_variant_of_miscompilation_4() {
    // after a passed int_add_ovf, int_sub(c, b) is a
    check(
        "[i0, i1]
         i2 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_sub(i2, i1)
         finish(i3, i2)",
        "[i0, i1]
         i2 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i0, i2)",
    );
}

#[test]
fn shifted_constant_equal_zero_is_not_misread() {
    // 0 == int_lshift(0x1000000000000000, x) with 0 <= x <= 15 must not conclude anything
    must_keep(
        "[i0]
         i1 = int_ge(i0, 0)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_le(i0, 15)
         guard_true(i2, descr=<Guard2>) [i0]
         i3 = int_lshift(1152921504606846976, i0)
         i4 = int_eq(i3, 0)
         guard_true(i4, descr=<Guard3>) [i0]
         finish(i3)",
        3,
        &[vec![RtValue::Int(4)], vec![RtValue::Int(3)]],
    );
}
