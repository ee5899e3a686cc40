//! CSE, and guards: removed when implied, learnt from, kept when they may fail.

use super::*;

#[test]
fn cse_commutative() {
    let out = check(
        "[i0, i1]
         i2 = int_add(i0, i1)
         i3 = int_add(i1, i0)
         i4 = int_xor(i2, i3)
         i5 = int_mul(i2, i3)
         finish(i5, i4)",
        "[i0, i1]
         i2 = int_add(i0, i1)
         i5 = int_mul(i2, i2)
         finish(i5, 0)",
    );
    assert_eq!(out.stats.removed(Reason::Cse), 1);
}

#[test]
fn cse_elidable_call_and_loopinvariant_call() {
    check(
        "[i0]
         i1 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i2 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i3 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i4 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i5 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         i6 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         finish(i1, i2, i3, i4, i5, i6)",
        "[i0]
         i1 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i3 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i5 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         i6 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         finish(i1, i1, i3, i3, i5, i6)",
    );
}

#[test]
fn cse_immutable_reads() {
    check(
        "[p0, i1]
         i2 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i4 = arraylen_gc(p0, descr=<ArrayS 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         i5 = arraylen_gc(p0, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         finish(i2, i3, i4, i5, i6)",
        "[p0, i1]
         i2 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i4 = arraylen_gc(p0, descr=<ArrayS 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish(i2, i2, i4, i4, i2)",
    );
}

// ---------------------------------------------------------------- guards

#[test]
fn guard_implied_by_stronger_guard() {
    check(
        "[i0]
         i1 = int_lt(i0, 10)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_lt(i0, 20)
         guard_true(i2, descr=<Guard2>) [i0]
         i3 = int_ge(i0, 10)
         guard_false(i3, descr=<Guard3>) [i0]
         finish(i0)",
        "[i0]
         i1 = int_lt(i0, 10)
         guard_true(i1, descr=<Guard1>) [i0]
         finish(i0)",
    );
}

#[test]
fn guard_narrows_both_operands() {
    check(
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_lt(i1, -9223372036854775807)
         guard_false(i3, descr=<Guard2>) [i0]
         i4 = int_eq(i0, 9223372036854775807)
         finish(i4)",
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0]
         finish(0)",
    );
}

#[test]
fn guard_value_makes_a_constant() {
    check(
        "[i0, p1]
         guard_value(i0, 5, descr=<Guard1>) [i0]
         i2 = int_add(i0, 1)
         guard_value(p1, ConstPtr(ptr7), descr=<Guard2>) [i0]
         i3 = getfield_gc_i(p1, descr=<FieldS x 8>)
         guard_value(i0, 5, descr=<Guard3>) [i0]
         finish(i2, i3)",
        "[i0, p1]
         guard_value(i0, 5, descr=<Guard1>) [i0]
         guard_value(p1, ConstPtr(ptr7), descr=<Guard2>) [5]
         i3 = getfield_gc_i(ConstPtr(ptr7), descr=<FieldS x 8>)
         finish(6, i3)",
    );
}

#[test]
fn guard_class_and_nonnull_remembered() {
    check(
        "[p0, p1]
         guard_nonnull_class(p0, 1234, descr=<Guard1>) [p0]
         guard_nonnull(p0, descr=<Guard2>) [p0]
         guard_class(p0, 1234, descr=<Guard3>) [p0]
         guard_class(p1, 77, descr=<Guard4>) [p0]
         guard_class(p1, 77, descr=<Guard5>) [p0]
         guard_nonnull(p1, descr=<Guard6>) [p0]
         guard_isnull(ConstPtr(null), descr=<Guard7>) [p0]
         finish()",
        "[p0, p1]
         guard_nonnull_class(p0, 1234, descr=<Guard1>) [p0]
         guard_class(p1, 77, descr=<Guard4>) [p0]
         finish()",
    );
}

#[test]
fn guard_known_false_is_kept() {
    // the guard always fails: it must stay (it is the exit)
    check(
        "[i0]
         i1 = int_and(i0, 7)
         i2 = int_gt(i1, 100)
         guard_true(i2, descr=<Guard1>) [i0]
         finish(i0)",
        "[i0]
         guard_true(0, descr=<Guard1>) [i0]
         finish(i0)",
    );
}

#[test]
fn guard_is_true_chain() {
    check(
        "[i0]
         i1 = int_is_true(i0)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_is_zero(i0)
         guard_false(i2, descr=<Guard2>) [i0]
         i3 = int_ne(i0, 0)
         finish(i3)",
        "[i0]
         guard_true(i0, descr=<Guard1>) [i0]
         finish(1)",
    );
}

/// A guard on `int_is_zero(x)` or `int_is_true(x)` tests `x` itself (the sense flipped for
/// `int_is_zero`); the test op stays only where something else reads it (here a fail
/// argument, whose value at each exit is known).
#[test]
fn guard_on_a_truth_test_tests_the_operand() {
    check(
        "[i0, i1, i2]
         i3 = int_is_zero(i0)
         guard_true(i3, descr=<Guard1>) [i1]
         i4 = int_is_true(i1)
         guard_false(i4, descr=<Guard2>) [i2]
         i5 = int_is_zero(i2)
         guard_false(i5, descr=<Guard3>) [i5]
         finish(i3, i4)",
        "[i0, i1, i2]
         guard_false(i0, descr=<Guard1>) [i1]
         guard_false(i1, descr=<Guard2>) [i2]
         guard_true(i2, descr=<Guard3>) [1]
         finish(1, 0)",
    );
}

#[test]
fn guard_no_exception_and_not_invalidated_repeats() {
    check(
        "[i0]
         i1 = call_i(ConstClass(f), i0, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard1>) [i0]
         guard_no_exception(descr=<Guard2>) [i0]
         guard_not_invalidated(descr=<Guard3>) [i0]
         guard_not_invalidated(descr=<Guard4>) [i0]
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard5>) [i0]
         guard_not_invalidated(descr=<Guard6>) [i0]
         finish(i2)",
        "[i0]
         i1 = call_i(ConstClass(f), i0, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard1>) [i0]
         guard_not_invalidated(descr=<Guard3>) [i0]
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard5>) [i0]
         guard_not_invalidated(descr=<Guard6>) [i0]
         finish(i2)",
    );
}

#[test]
fn a_known_result_answers_the_later_call() {
    // `record_known_result` of a loop-invariant (or elidable) function: the call with the
    // same function, arguments and descriptor is that value (a bridge starts so from what
    // its loop computed).
    check(
        "[i0, p1]
         record_known_result(p1, ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         p2 = call_loopinvariant_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         p3 = call_pure_r(ConstClass(tl), 65, descr=<Callr 8 i EF=1 OS=5>)
         i4 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i4, p3)",
        "[i0, p1]
         p3 = call_pure_r(ConstClass(tl), 65, descr=<Callr 8 i EF=1 OS=5>)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i4, p3)",
    );
    // A function that may write the heap promises nothing by it.
    check(
        "[p1]
         record_known_result(p1, ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         p2 = call_r(ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         finish(p2)",
        "[p1]
         record_known_result(p1, ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         p2 = call_r(ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         finish(p2)",
    );
}

#[test]
fn a_known_field_answers_the_later_load() {
    // `record_known_field` states what a field holds (a bridge starts so from what its loop
    // had loaded): a later load of it is that value, and the object is not null. The hint
    // stays (no code; it decides an untouched external field for the interpreter), unless
    // the field was known already.
    check(
        "[p0, p1, i2]
         record_known_field(p0, p1, descr=<FieldP map 8>)
         record_known_field(p0, 7, descr=<FieldS n 16>)
         p3 = getfield_gc_r(p0, descr=<FieldP map 8>)
         guard_value(p3, p1, descr=<Guard1>) [p0]
         guard_nonnull(p0, descr=<Guard2>) [p0]
         i4 = getfield_gc_i(p0, descr=<FieldS n 16>)
         record_known_field(p0, 7, descr=<FieldS n 16>)
         i5 = int_add(i4, i2)
         finish(i5)",
        "[p0, p1, i2]
         record_known_field(p0, p1, descr=<FieldP map 8>)
         record_known_field(p0, 7, descr=<FieldS n 16>)
         i5 = int_add(7, i2)
         finish(i5)",
    );
    // A delayed write that may touch the field is made before the hint (the promise is about
    // memory after it); for a value the field cannot hold (a one-byte field) the load stays.
    check(
        "[p0, p1, i2]
         setfield_gc(p1, i2, descr=<FieldS n 16>)
         record_known_field(p0, 7, descr=<FieldS n 16>)
         i4 = getfield_gc_i(p0, descr=<FieldS n 16>)
         record_known_field(p1, 300, descr=<FieldU b 24 size=1>)
         i5 = getfield_gc_i(p1, descr=<FieldU b 24 size=1>)
         finish(i4, i5)",
        "[p0, p1, i2]
         setfield_gc(p1, i2, descr=<FieldS n 16>)
         record_known_field(p0, 7, descr=<FieldS n 16>)
         record_known_field(p1, 300, descr=<FieldU b 24 size=1>)
         i5 = getfield_gc_i(p1, descr=<FieldU b 24 size=1>)
         finish(7, i5)",
    );
}

#[test]
fn a_constant_has_the_class_it_was_promised_or_checked_for() {
    // A pointer constant's class never changes: known from `record_exact_class`, or from a
    // class guard that passed, a later class guard on it is dropped.
    check(
        "[i0]
         record_exact_class(ConstPtr(code), ConstClass(PyCode))
         guard_class(ConstPtr(code), ConstClass(PyCode), descr=<Guard1>) [i0]
         guard_class(ConstPtr(dict), ConstClass(Dict), descr=<Guard2>) [i0]
         guard_nonnull_class(ConstPtr(dict), ConstClass(Dict), descr=<Guard3>) [i0]
         finish(i0)",
        "[i0]
         record_exact_class(ConstPtr(code), ConstClass(PyCode))
         guard_class(ConstPtr(dict), ConstClass(Dict), descr=<Guard2>) [i0]
         finish(i0)",
    );
}
