//! Hints, dead code, options and statistics, and what guards know at their exits.

use super::*;

#[test]
fn hints_are_dropped_consistently() {
    // quasiimmut_field goes, its guard_not_invalidated stays
    check(
        "[p0, p1]
         quasiimmut_field(p0, descr=<QuasiImmutDescr object at 0x7fe0f98cf6e0>)
         guard_not_invalidated(descr=<Guard1>) [p0]
         assert_not_none(p1)
         guard_nonnull(p1, descr=<Guard2>) [p0]
         p3 = same_as_r(p1)
         enter_portal_frame(1, 2)
         finish(p3)",
        "[p0, p1]
         guard_not_invalidated(descr=<Guard1>) [p0]
         enter_portal_frame(1, 2)
         finish(p1)",
    );
}

// ---------------------------------------------------------------- dead code, options, stats

#[test]
fn dead_pure_ops_and_reads_are_removed() {
    let out = check(
        "[i0, p1]
         i2 = int_mul(i0, i0)
         i3 = int_add(i2, 1)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i0)",
        "[i0, p1]
         finish(i0)",
    );
    assert_eq!(out.stats.removed(Reason::Dead), 3);
    assert_eq!(out.stats.ops_in, 4);
    assert_eq!(out.stats.ops_out, 1);
}

#[test]
fn everything_off_is_the_identity() {
    let src = "[i0, p1]
         i2 = int_add(i0, 0)
         i3 = int_add(5, 4)
         p4 = new(descr=<SizeDescr 16>)
         setfield_gc(p4, i3, descr=<FieldS a 8>)
         i5 = getfield_gc_i(p4, descr=<FieldS a 8>)
         i6 = int_lt(i5, 10)
         guard_true(i6, descr=<Guard1>) [i0]
         guard_true(i6, descr=<Guard2>) [i0]
         i7 = int_add_ovf(i2, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(i7)";
    check_with(src, src, &Options::none());
}

#[test]
fn input_is_not_mutated_and_guard_ids_survive() {
    let t = parse(
        "[i0]
         i1 = int_add(i0, 0)
         i2 = int_lt(i1, 5)
         guard_true(i2, descr=<Guard7 key=99>) [i1]
         finish(i1)",
    );
    let before = t.clone();
    let out = optimize(&t, &Options::default()).unwrap();
    assert_eq!(t, before);
    let g = out
        .trace
        .guards
        .iter()
        .find(|g| g.id == trace_ir::GuardId(7))
        .expect("guard 7 kept");
    assert_eq!(g.resume_key, 99);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let mut t = parse("[i0]\n i1 = int_add(i0, 1)\n finish(i1)");
    t.ops[1].args[0] = trace_ir::Value::op(trace_ir::OpRef::new(5));
    assert!(matches!(
        optimize(&t, &Options::default()),
        Err(optimizer::OptError::BadInput(_))
    ));
}

// ---------------------------------------------------------------- guards and their exits

#[test]
fn guard_condition_at_its_own_exit_is_a_constant() {
    // When `guard_true(c)` fails, c is 0; when `guard_false(b)` fails on a boolean b, b is 1.
    // Resume data names the constant (also inside a virtual object), so the comparison has no
    // use left but the guard and the backend fuses it into the jump. `guard_false` on a
    // non-boolean says nothing about the value at the exit: it stays.
    check(
        "[i0, i1]
         i2 = int_lt(i0, i1)
         p3 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         setfield_gc(p3, i2, descr=<FieldS value 8>)
         guard_true(i2, descr=<Guard1>) [i0, i2, p3]
         i4 = int_eq(i0, 5)
         guard_false(i4, descr=<Guard2>) [i4, i1]
         i5 = int_and(i0, i1)
         guard_false(i5, descr=<Guard3>) [i5]
         finish(i0)",
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0, 0, $0] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>) <FieldS value 8>: 0}
         i4 = int_eq(i0, 5)
         guard_false(i4, descr=<Guard2>) [1, i1]
         i6 = int_and(i0, i1)
         guard_false(i6, descr=<Guard3>) [i6]
         finish(i0)",
    );
}

#[test]
fn guard_on_a_mask_teaches_the_masked_bits() {
    // After `x & 7 == 0` (either spelling) the low three bits of x are known 0, so the same
    // test on x + 16 is known to pass (the alignment kernel); `x | 1 == 5` makes `x & 4` 4.
    check(
        "[i0, i1, i2]
         i3 = int_and(i0, 7)
         i4 = int_is_true(i3)
         guard_false(i4, descr=<Guard1>) [i0]
         i5 = int_add(i0, 16)
         i6 = int_and(i5, 7)
         i7 = int_is_true(i6)
         guard_false(i7, descr=<Guard2>) [i0]
         i8 = int_and(i1, 7)
         i9 = int_eq(i8, 0)
         guard_true(i9, descr=<Guard3>) [i1]
         i10 = int_sub(i1, 8)
         i11 = int_and(i10, 7)
         i12 = int_or(i2, 1)
         i13 = int_eq(i12, 5)
         guard_true(i13, descr=<Guard4>) [i2]
         i14 = int_and(i2, 4)
         finish(i5, i11, i14)",
        "[i0, i1, i2]
         i3 = int_and(i0, 7)
         guard_false(i3, descr=<Guard1>) [i0]
         i5 = int_add(i0, 16)
         i6 = int_and(i1, 7)
         guard_false(i6, descr=<Guard3>) [i1]
         i8 = int_or(i2, 1)
         i9 = int_eq(i8, 5)
         guard_true(i9, descr=<Guard4>) [i2]
         finish(i5, 0, 4)",
    );
}

#[test]
fn checked_mul_by_power_of_two_is_found_as_a_shift() {
    // A passed `int_mul_ovf(2, x)` computes `x << 1`: a later shift (or a multiplication the
    // rules turn into that shift) reuses it (`tracejit mine` on mmh3).
    check(
        "[i0]
         i1 = int_mul_ovf(2, i0)
         guard_no_overflow(descr=<Guard1>) [i0]
         i2 = int_lshift(i0, 1)
         i3 = int_mul(i0, 2)
         i4 = int_lshift(i0, 2)
         finish(i1, i2, i3, i4)",
        "[i0]
         i1 = int_mul_ovf(2, i0)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_lshift(i0, 2)
         finish(i1, i1, i1, i3)",
    );
}

#[test]
fn constant_moves_off_the_loop_carried_chain() {
    // The PyPy kernel's s' = (s + (x ^ 5) - 5) & M with x a multiple of 8: the xor adds 5
    // without carries, so the new s is s + x (rule sub_add_xor_const, also through the passed
    // int_add_ovf, which stays for its guard).
    check(
        "[i0, i1]
         i2 = int_mul_ovf(i1, 8)
         guard_no_overflow(descr=<Guard1>) [i0, i1]
         i3 = int_and(i2, 255)
         i4 = int_xor(i3, 5)
         i5 = int_add_ovf(i0, i4)
         guard_no_overflow(descr=<Guard2>) [i0, i1]
         i6 = int_sub_ovf(i5, 5)
         guard_no_overflow(descr=<Guard3>) [i0, i1]
         i7 = int_and(i6, 2147483647)
         finish(i7)",
        "[i0, i1]
         i2 = int_mul_ovf(i1, 8)
         guard_no_overflow(descr=<Guard1>) [i0, i1]
         i4 = int_and(i2, 255)
         i5 = int_xor(i4, 5)
         i6 = int_add_ovf(i0, i5)
         guard_no_overflow(descr=<Guard2>) [i0, i1]
         i8 = int_add(i0, i4)
         i9 = int_and(i8, 2147483647)
         finish(i9)",
    );
}

#[test]
fn record_exact_value_makes_the_value_a_constant() {
    check(
        "[i0, p1]
         record_exact_value_i(i0, 7)
         record_exact_value_r(p1, ConstPtr(ptr5))
         i2 = int_add(i0, 1)
         guard_value(p1, ConstPtr(ptr5), descr=<Guard1>) [i0]
         finish(i2, p1)",
        "[i0, p1]
         finish(8, ConstPtr(ptr5))",
    );
}
