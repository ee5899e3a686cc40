//! The heap cache and delayed writes, and the memory model: byte views and type-based
//! aliasing (docs/memory-model.md).

use super::*;

#[test]
fn heap_read_after_write_and_read() {
    check(
        "[p0, i1]
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i3 = getfield_gc_i(p0, descr=<FieldS c 16>)
         i4 = getfield_gc_i(p0, descr=<FieldS c 16>)
         setarrayitem_gc(p0, 2, i1, descr=<ArrayS 8>)
         i5 = getarrayitem_gc_i(p0, 2, descr=<ArrayS 8>)
         finish(i2, i3, i4, i5)",
        "[p0, i1]
         i3 = getfield_gc_i(p0, descr=<FieldS c 16>)
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         setarrayitem_gc(p0, 2, i1, descr=<ArrayS 8>)
         finish(i1, i3, i3, i1)",
    );
}

#[test]
fn dead_stores_between_guards_are_removed() {
    // the frame-like pattern of PyPy traces: a slot rewritten before anything can observe it
    let out = check(
        "[p0, p1, i2]
         setfield_gc(p0, 1, descr=<FieldS depth 8>)
         setarrayitem_gc(p1, 0, i2, descr=<ArrayS 8>)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         i3 = int_add(i2, 1)
         setarrayitem_gc(p1, 0, i3, descr=<ArrayS 8>)
         setfield_gc(p0, 3, descr=<FieldS depth 8>)
         guard_true(i2, descr=<Guard1>) [i2]
         setfield_gc(p0, 4, descr=<FieldS depth 8>)
         i5 = getfield_gc_i(p1, descr=<FieldS other 16>)
         setfield_gc(p0, 5, descr=<FieldS depth 8>)
         finish(i5)",
        "[p0, p1, i2]
         i3 = int_add(i2, 1)
         setarrayitem_gc(p1, 0, i3, descr=<ArrayS 8>)
         setfield_gc(p0, 3, descr=<FieldS depth 8>)
         guard_true(i2, descr=<Guard1>) [0]
         i7 = getfield_gc_i(p1, descr=<FieldS other 16>)
         setfield_gc(p0, 5, descr=<FieldS depth 8>)
         finish(i7)",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 4);
}

#[test]
fn overwritten_stores_of_allocations_are_dead_and_the_allocation_waits() {
    // p2 is stored and the store overwritten before anything observes it: the store goes, and
    // p2 stays virtual until the `finish` needs it (after the call, which cannot reach it)
    let src = "[p0, i1]
         p2 = new_array_clear(2, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i1, descr=<ArrayS 8>)
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         setfield_gc(p0, ConstPtr(null), descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish(p2)";
    let out = check(
        src,
        "[p0, i1]
         setfield_gc(p0, ConstPtr(null), descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         p4 = new_array_clear(2, descr=<ArrayS 8>)
         setarrayitem_gc(p4, 0, i1, descr=<ArrayS 8>)
         finish(p4)",
    );
    let t = parse(src);
    for i in [0i64, 5, -7] {
        assert!(same_behaviour(&t, &out.trace, &[RtValue::Ref(0x5000_0000_1008), RtValue::Int(i)]).unwrap());
    }
}

#[test]
fn overwritten_reference_stores_of_older_objects_are_dead() {
    // p1 existed before the trace: the first store is overwritten before anything observes it
    let out = check(
        "[p0, p1, p2]
         setfield_gc(p0, p1, descr=<FieldP p 8>)
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()",
        "[p0, p1, p2]
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 1);
}

#[test]
fn delayed_writes_keep_their_order_with_possible_aliases() {
    // p0 and p1 may be the same object: the last write wins, and the read sees it
    check(
        "[p0, p1]
         setfield_gc(p0, 1, descr=<FieldS a 8>)
         setfield_gc(p1, 2, descr=<FieldS a 8>)
         setfield_gc(p0, 3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i4)",
        "[p0, p1]
         setfield_gc(p0, 1, descr=<FieldS a 8>)
         setfield_gc(p1, 2, descr=<FieldS a 8>)
         setfield_gc(p0, 3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i4)",
    );
}

#[test]
fn heap_write_through_possible_alias_invalidates() {
    let src = "[p0, p1, i2, i3]
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i4)";
    check(src, src);
}

#[test]
fn heap_distinct_allocations_do_not_alias() {
    check(
        "[i2, i3]
         p0 = new(descr=<SizeDescr 16>)
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(f), p0, p1, descr=<Callv 0 rr EF=2>)
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i4)",
        "[i2, i3]
         p0 = new(descr=<SizeDescr 16>)
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(f), p0, p1, descr=<Callv 0 rr EF=2>)
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         finish(i2)",
    );
}

#[test]
fn heap_calls_invalidate_unless_they_cannot_write() {
    check(
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=0>)
         i3 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_n(ConstClass(g), descr=<Callv 0 EF=2>)
         i5 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i6 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_may_force_n(ConstClass(h), descr=<Callv 0 EF=7>)
         i7 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         finish(i2, i3, i5, i6, i7)",
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=0>)
         i4 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_n(ConstClass(g), descr=<Callv 0 EF=2>)
         i5 = getfield_gc_i(p0, descr=<FieldS a 8>)
         call_may_force_n(ConstClass(h), descr=<Callv 0 EF=7>)
         i7 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         finish(i2, i1, i5, i4, i7)",
    );
}

#[test]
fn heap_overlapping_descriptors_invalidate_each_other() {
    let src = "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         setfield_gc(p0, i1, descr=<FieldS other_name_same_offset 8>)
         i3 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i2, i3)";
    check(src, src);
}

#[test]
fn heap_array_writes() {
    check(
        "[p0, i1, i2]
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         i4 = getarrayitem_gc_i(p0, 1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 1, i2, descr=<ArrayS 8>)
         i5 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         setarrayitem_gc(p0, i1, i2, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i3, i4, i5, i6)",
        "[p0, i1, i2]
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         i4 = getarrayitem_gc_i(p0, 1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 1, i2, descr=<ArrayS 8>)
         setarrayitem_gc(p0, i1, i2, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i3, i4, i3, i6)",
    );
}

#[test]
fn byte_views_keep_stores_before_loads_of_their_bytes() {
    // Under byte views (the default) the byte load reads the word store's low byte: the
    // delayed store is flushed before it; a load of other bytes does not flush it.
    check(
        "[p0]
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i1 = getarrayitem_gc_i(p0, 8, descr=<ArrayU 1>)
         i2 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         finish(i1, i2)",
        "[p0]
         i1 = getarrayitem_gc_i(p0, 8, descr=<ArrayU 1>)
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         finish(i1, i3)",
    );
}

#[test]
fn type_based_aliasing_keeps_descriptors_apart() {
    // Under PyPy's rule a byte view never aliases the word array: the store stays delayed
    // to the end, and the word is read back from the heap cache.
    check(
        "aliasing type-based
         [p0]
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         i2 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i1, i2)",
        "aliasing type-based
         [p0]
         i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         finish(i1, 4660)",
    );
}

#[test]
fn stores_through_two_views_stay_in_order() {
    // The second store is another view of the first one's bytes: it flushes the first, and
    // the third is not merged into the first one's place (before the second).
    check(
        "[p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
        "[p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
    );
    // Under the type-based rule the views never alias: the third store replaces the first.
    check(
        "aliasing type-based
         [p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
        "aliasing type-based
         [p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
    );
}

#[test]
fn a_float_view_is_not_forwarded_into_an_integer_view() {
    // The float stays in memory: the integer view loads its bits.
    check(
        "[f0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, f0, descr=<FieldF x 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS y 8>)
         finish(i2)",
        "[f0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, f0, descr=<FieldF x 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS y 8>)
         finish(i2)",
    );
}

#[test]
fn commuted_float_ops_are_not_one_expression() {
    // NaN payloads: float_add(a, b) and float_add(b, a) differ in their bits.
    check(
        "[f0, f1]
         f2 = float_add(f0, f1)
         f3 = float_add(f1, f0)
         f4 = float_add(f0, f1)
         finish(f2, f3, f4)",
        "[f0, f1]
         f2 = float_add(f0, f1)
         f3 = float_add(f1, f0)
         finish(f2, f3, f2)",
    );
}

#[test]
fn the_first_statement_of_a_class_stays() {
    // record_exact_class is a promise: the guard it implies goes; the hint stays (it is the
    // first word about p0's class), a repeated one goes.
    let out = check(
        "[p0]
         record_exact_class(p0, 4096)
         guard_class(p0, 4096, descr=<Guard0>) [p0]
         record_exact_class(p0, 4096)
         guard_nonnull(p0, descr=<Guard1>) [p0]
         finish(p0)",
        "[p0]
         record_exact_class(p0, 4096)
         finish(p0)",
    );
    assert_eq!(out.stats.removed.get(&Reason::Hint), Some(&1));
}

#[test]
fn fresh_objects_differ_from_constants_and_older_values() {
    // p2 escapes (stored into p0), so it is allocated; it is at no constant's address and at
    // no address p0 or p1 (which existed before it) held. p3, read after the allocation, may
    // be p2.
    check(
        "[p0, p1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         i3 = instance_ptr_eq(p2, ConstPtr(ptr7))
         i4 = ptr_eq(p1, p2)
         i5 = ptr_ne(p2, p0)
         p6 = getfield_gc_r(p1, descr=<FieldP b 8>)
         i7 = ptr_eq(p6, p2)
         finish(i3, i4, i5, i7)",
        "[p0, p1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         p6 = getfield_gc_r(p1, descr=<FieldP b 8>)
         i7 = ptr_eq(p6, p2)
         finish(0, 0, 1, i7)",
    );
}

#[test]
fn writes_to_a_fresh_object_keep_what_is_known_of_older_ones() {
    // the write to p3's field (p3 exists: an elidable call took it) cannot change p0's: the
    // load of p0's field is forwarded
    check(
        "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         p3 = new(descr=<SizeDescr 16>)
         i5 = call_i(ConstClass(f), p3, descr=<Calli 8 r EF=0>)
         setfield_gc(p3, i1, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i2, i4, i5)",
        "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         p3 = new(descr=<SizeDescr 16>)
         i4 = call_i(ConstClass(f), p3, descr=<Calli 8 r EF=0>)
         setfield_gc(p3, i1, descr=<FieldS a 8>)
         finish(i2, i2, i4)",
    );
}

#[test]
fn hints_do_not_keep_overwritten_stores() {
    // a hint observes no memory: the first write of the frame field is dead across it
    let out = check(
        "[p0]
         setfield_gc(p0, 1, descr=<FieldS depth 8>)
         enter_portal_frame(14, 5108)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         leave_portal_frame(14)
         finish()",
        "[p0]
         enter_portal_frame(14, 5108)
         leave_portal_frame(14)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         finish()",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 1);
}

#[test]
fn guards_teach_the_operands_of_an_xor() {
    // (x ^ 12) & 3 == 1: the low two bits of x ^ 12 are 01, and 12 leaves them alone
    check(
        "[i0]
         i1 = int_xor(i0, 12)
         i2 = int_and(i1, 3)
         i3 = int_eq(i2, 1)
         guard_true(i3, descr=<Guard1>) [i0]
         i4 = int_and(i0, 1)
         finish(i4)",
        "[i0]
         i1 = int_xor(i0, 12)
         i2 = int_and(i1, 3)
         i3 = int_eq(i2, 1)
         guard_true(i3, descr=<Guard1>) [i0]
         finish(1)",
    );
}

#[test]
fn byte_offset_accesses_read_and_write_the_object() {
    // A `gc_load` reads the delayed write before it and the virtual object it reads is
    // materialized; a `gc_store` ends what the heap cache knows; an unused `gc_load` goes.
    check(
        "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS T.a 8>)
         i3 = gc_load_i(p2, 8, 8)
         setfield_gc(p0, i1, descr=<FieldS T.a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS T.a 8>)
         gc_store(p0, 8, 5, 8)
         i5 = getfield_gc_i(p0, descr=<FieldS T.a 8>)
         i6 = gc_load_i(p0, 16, 4)
         finish(i3, i4, i5)",
        "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS T.a 8>)
         i3 = gc_load_i(p2, 8, 8)
         setfield_gc(p0, i1, descr=<FieldS T.a 8>)
         gc_store(p0, 8, 5, 8)
         i5 = getfield_gc_i(p0, descr=<FieldS T.a 8>)
         finish(i3, i1, i5)",
    );
}
