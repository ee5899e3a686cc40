//! Constant folding, the abstract values (known bits and ranges) and the peephole rules.

use super::*;

#[test]
fn constfold_two_ops() {
    check(
        "[i0]
         i1 = int_add(5, 4)
         i2 = int_add(i1, 10)
         i3 = int_add(i2, i0)
         finish(i3)",
        "[i0]
         i3 = int_add(19, i0)
         finish(i3)",
    );
}

#[test]
fn invalid_evaluation_is_kept() {
    // a shift by 70 is invalid: the folder leaves it alone
    check(
        "[i0]
         i1 = int_lshift(1, 70)
         finish(i1)",
        "[i0]
         i1 = int_lshift(1, 70)
         finish(i1)",
    );
}

#[test]
fn float_folding() {
    check(
        "[f0]
         f1 = float_add(1.5, 2.25)
         f2 = float_mul(f1, f0)
         finish(f2)",
        "[f0]
         f2 = float_mul(3.75, f0)
         finish(f2)",
    );
}

// ---------------------------------------------------------------- abstract values

#[test]
fn constfold_via_knownbits() {
    check(
        "[i0]
         i1 = int_or(i0, 1)
         i2 = int_and(i1, 1)
         finish(i2, i1)",
        "[i0]
         i1 = int_or(i0, 1)
         finish(1, i1)",
    );
}

#[test]
fn constfold_alignment_check() {
    check(
        "[i0]
         i1 = int_invert(7)
         i2 = int_and(i0, i1)
         i3 = int_add(i2, 16)
         i4 = int_and(i3, 7)
         i5 = int_eq(i4, 0)
         guard_true(i5, descr=<Guard1>) [i0]
         finish(i3)",
        "[i0]
         i2 = int_and(i0, -8)
         i3 = int_add(i2, 16)
         finish(i3)",
    );
}

#[test]
fn remove_redundant_and() {
    check(
        "[i0]
         i1 = int_invert(15)
         i2 = int_and(i0, i1)
         i3 = int_and(i2, i1)
         finish(i3)",
        "[i0]
         i2 = int_and(i0, -16)
         finish(i2)",
    );
}

#[test]
fn remove_redundant_and_more_complex() {
    let out = check(
        "[i0, i1]
         i2 = int_and(i0, 15)
         i3 = int_or(i1, 15)
         i4 = int_and(i2, i3)
         finish(i4, i3)",
        "[i0, i1]
         i2 = int_and(i0, 15)
         i3 = int_or(i1, 15)
         finish(i2, i3)",
    );
    assert_eq!(out.stats.removed(Reason::Identity), 1);
}

#[test]
fn remove_and_simple() {
    check(
        "[i0, i1]
         i2 = int_and(0, i0)
         i3 = int_invert(i2)
         i4 = int_and(i1, i3)
         finish(i4)",
        "[i0, i1]
         finish(i1)",
    );
}

#[test]
fn remove_redundant_or() {
    // i3 has the low 8 bits set; or-ing a value of at most 4 bits changes nothing
    check(
        "[i0, i1]
         i2 = int_and(i1, 15)
         i3 = int_or(i0, 255)
         i4 = int_or(i3, i2)
         finish(i4)",
        "[i0, i1]
         i3 = int_or(i0, 255)
         finish(i3)",
    );
}

#[test]
fn comparison_known_from_ranges() {
    check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_lt(i1, 256)
         i3 = uint_rshift(i0, 60)
         i4 = int_le(i3, 15)
         i5 = int_add(i2, i4)
         finish(i5)",
        "[i0]
         finish(2)",
    );
}

// ---------------------------------------------------------------- rule hook

#[test]
fn rules_fire_through_the_hook() {
    let out = check(
        "[i0, i1]
         i2 = int_sub(i0, i0)
         i3 = int_add(i1, i2)
         i4 = int_mul(i3, 8)
         finish(i4)",
        "[i0, i1]
         i4 = int_lshift(i1, 3)
         finish(i4)",
    );
    assert!(out.stats.rules.values().sum::<usize>() >= 2, "{:?}", out.stats.rules);
}

#[test]
fn rules_can_be_switched_off() {
    let o = Options {
        rules: false,
        ..Options::default()
    };
    check_with(
        "[i0]
         i4 = int_mul(i0, 8)
         finish(i4)",
        "[i0]
         i4 = int_mul(i0, 8)
         finish(i4)",
        &o,
    );
}
