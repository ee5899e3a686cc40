//! Allocation removal: virtual objects, their materialization and their resume data.

use super::*;

#[test]
fn remove_unused_allocation() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i2)",
        "[i0]
         finish(i0)",
    );
}

#[test]
fn remove_two_allocations() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, p1, descr=<FieldP b 8>)
         p3 = getfield_gc_r(p2, descr=<FieldP b 8>)
         i4 = getfield_gc_i(p3, descr=<FieldS a 8>)
         finish(i4)",
        "[i0]
         finish(i0)",
    );
}

#[test]
fn materialize() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn dont_materialize_twice() {
    // one allocation; the second identical store is redundant (heap cache)
    let out = check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
    assert_eq!(out.stats.virtuals_materialized, 1);
    // without the heap cache both stores stay, and still one allocation
    let o = Options {
        heapcache: false,
        ..Options::default()
    };
    check_with(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        &o,
    );
}

#[test]
fn materialize_non_virtuals_and_constants() {
    let src = "[p0, p1]
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p1, 17, descr=<FieldS a 16>)
         finish()";
    check(src, src);
}

#[test]
fn materialize_fields() {
    check(
        "[p0, i1]
         p2 = new(descr=<SizeDescr 24>)
         setfield_gc(p2, 8, descr=<FieldS a 8>)
         setfield_gc(p2, i1, descr=<FieldS c 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         finish()",
        "[p0, i1]
         p2 = new(descr=<SizeDescr 24>)
         setfield_gc(p2, 8, descr=<FieldS a 8>)
         setfield_gc(p2, i1, descr=<FieldS c 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn materialize_chained_objects() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p2, descr=<FieldP n 8>)
         setfield_gc(p2, 1337, descr=<FieldS a 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, 1337, descr=<FieldS a 8>)
         setfield_gc(p1, p2, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn object_graph_cycles() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p1, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 16>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p1, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 16>)
         finish()",
    );
}

#[test]
fn long_chain_of_virtuals_materializes_without_recursion() {
    // 20,000 nested virtual objects escape at once
    let n = 20_000;
    let mut src = String::from("[p0]\n p1 = new(descr=<SizeDescr 16>)\n");
    for i in 2..=n {
        src += &format!(
            " p{i} = new(descr=<SizeDescr 16>)\n setfield_gc(p{i}, p{}, descr=<FieldP next 8>)\n",
            i - 1
        );
    }
    src +=
        &format!(" guard_true(0, descr=<Guard1>) [p{n}]\n setfield_gc(p0, p{n}, descr=<FieldP head 8>)\n finish()\n");
    let t = parse(&src);
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || optimize(&t, &Options::default()).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out.stats.virtuals_materialized, n);
    // n allocations, n - 1 inner stores, the guard, the outer store, finish
    assert_eq!(out.trace.num_real_ops(), 2 * n + 2);
    // the guard describes the whole chain
    assert_eq!(out.trace.guards[0].virtuals.len(), n);
}

#[test]
fn load_non_virtual() {
    let src = "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i1)";
    check(src, src);
}

#[test]
fn materialize_on_other_ops() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(print), p1, descr=<Callv 0 r EF=2>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(print), p1, descr=<Callv 0 r EF=2>)
         finish()",
    );
}

#[test]
fn sink_allocations() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 123, descr=<FieldS a 8>)
         setfield_gc(p1, 456, descr=<FieldS c 16>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = getfield_gc_i(p1, descr=<FieldS c 16>)
         i4 = int_add(i2, i3)
         setfield_gc(p1, i4, descr=<FieldS a 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 579, descr=<FieldS a 8>)
         setfield_gc(p1, 456, descr=<FieldS c 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn unwritten_fields_read_as_zero() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 24>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         p3 = getfield_gc_r(p1, descr=<FieldP b 16>)
         finish(i2, p3)",
        "[i0]
         finish(0, ConstPtr(null))",
    );
}

#[test]
fn virtual_only_in_fail_args_is_described() {
    let out = check(
        "[i0, i1]
         p2 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>)
         setfield_gc(p2, i0, descr=<FieldS a 8>)
         p3 = new_array(2, descr=<ArrayP 8>)
         setarrayitem_gc(p3, 1, p2, descr=<ArrayP 8>)
         guard_true(i1, descr=<Guard1>) [i0, p3, p2]
         i4 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i4)",
        "[i0, i1]
         guard_true(i1, descr=<Guard1>) [i0, $0, $1] {$0 = new_array(2, descr=<ArrayP 8>) [1]: $1; $1 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>) <FieldS a 8>: i0}
         finish(i0)",
    );
    assert_eq!(out.stats.virtuals_removed, 2);
    assert_eq!(out.stats.virtuals_materialized, 0);
    // the exit rebuilds the objects
    let t = parse(
        "[i0, i1]
         p2 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>)
         setfield_gc(p2, i0, descr=<FieldS a 8>)
         p3 = new_array(2, descr=<ArrayP 8>)
         setarrayitem_gc(p3, 1, p2, descr=<ArrayP 8>)
         guard_true(i1, descr=<Guard1>) [i0, p3, p2]
         i4 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i4)",
    );
    for inputs in [[RtValue::Int(7), RtValue::Int(0)], [RtValue::Int(7), RtValue::Int(1)]] {
        assert!(same_behaviour(&t, &out.trace, &inputs).unwrap());
    }
}

#[test]
fn guards_and_comparisons_on_virtuals_fold() {
    check(
        "[p0]
         p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         guard_class(p1, 4096, descr=<Guard1>) [p0]
         guard_nonnull(p1, descr=<Guard2>) [p0]
         guard_nonnull_class(p1, 4096, descr=<Guard3>) [p0]
         i2 = ptr_eq(p1, p0)
         i3 = ptr_ne(p1, p1)
         i4 = instance_ptr_eq(p1, ConstPtr(null))
         finish(i2, i3, i4)",
        "[p0]
         finish(0, 0, 0)",
    );
}

#[test]
fn guard_isnull_on_virtual_escapes_and_stays() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         guard_isnull(p1, descr=<Guard1>) [p0]
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         guard_isnull(p1, descr=<Guard1>) [p0]
         finish()",
    );
}

#[test]
fn virtual_arrays() {
    check(
        "[i0]
         p1 = new_array_clear(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, i0, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, 1, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_i(p1, 2, descr=<ArrayS 8>)
         i4 = arraylen_gc(p1, descr=<ArrayS 8>)
         finish(i2, i3, i4)",
        "[i0]
         finish(i0, 0, 3)",
    );
}

#[test]
fn virtual_array_with_variable_index_escapes() {
    check(
        "[i0]
         p1 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, 5, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, i0, descr=<ArrayS 8>)
         finish(i2)",
        "[i0]
         p1 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, 5, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, i0, descr=<ArrayS 8>)
         finish(i2)",
    );
}

#[test]
fn narrow_field_that_may_not_fit_is_not_forwarded() {
    // a 1-byte unsigned field truncates: the read must stay
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
    );
    check(
        "[i0]
         i1 = int_and(i0, 255)
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i1, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
        "[i0]
         i1 = int_and(i0, 255)
         finish(i1)",
    );
}

#[test]
fn a_materialized_object_gets_no_writes_of_zero() {
    // Its memory is zero already; an immutable field is written all the same (a call may
    // change what the trace did not write, not what it wrote into an immutable field).
    // Type-based aliasing: no other descriptor reads the fields' bytes.
    check(
        "aliasing type-based
         [p0]
         p1 = new_with_vtable(descr=<SizeDescr 40>)
         setfield_gc(p1, 0, descr=<FieldS T.a 8>)
         setfield_gc(p1, ConstPtr(null), descr=<FieldP T.p 16>)
         setfield_gc(p1, 0.0, descr=<FieldF T.f 24>)
         setfield_gc(p1, 0, descr=<FieldS T.k 32 pure>)
         p2 = new_array(2, descr=<ArrayP 8>)
         setarrayitem_gc(p2, 0, ConstPtr(null), descr=<ArrayP 8>)
         setarrayitem_gc(p2, 1, p1, descr=<ArrayP 8>)
         setfield_gc(p0, p2, descr=<FieldP E.top 8>)
         finish(p0)",
        "aliasing type-based
         [p0]
         p2 = new_array(2, descr=<ArrayP 8>)
         p1 = new_with_vtable(descr=<SizeDescr 40>)
         setfield_gc(p1, 0, descr=<FieldS T.k 32 pure>)
         setarrayitem_gc(p2, 1, p1, descr=<ArrayP 8>)
         setfield_gc(p0, p2, descr=<FieldP E.top 8>)
         finish(p0)",
    );
}

#[test]
fn a_zero_field_another_descriptor_overlaps_is_written() {
    // Under byte views a narrower descriptor reads a byte of the field: the write stays (the
    // interpreter's model of a call's effect on memory the trace did not write goes by the
    // view read).
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 0, descr=<FieldS T.a 8>)
         setfield_gc(p0, p1, descr=<FieldP E.top 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=7>)
         i2 = getfield_gc_i(p1, descr=<FieldU T.a1 9 size=1>)
         finish(i2)",
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 0, descr=<FieldS T.a 8>)
         setfield_gc(p0, p1, descr=<FieldP E.top 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=7>)
         i2 = getfield_gc_i(p1, descr=<FieldU T.a1 9 size=1>)
         finish(i2)",
    );
}
