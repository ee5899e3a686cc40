//! Values a peeled loop carries through its body label (PyPy's short preamble): a field or
//! constant-index item the preamble's heap cache knows at the body label, of a label operand
//! or of a value so loaded, becomes a parameter of the label when the body's heap cache knows
//! the same place at the final jump and the body reads it; the body then loads nothing
//! again. What the body cannot know at its jump (a call may have written it) or never reads
//! is not carried.

mod common;
use common::{check_with, parse, peel, same_behaviour, Inputs};
use optimizer::optimize;
use trace_ir::{CarriedBase, CarriedValue};

#[test]
fn an_invariant_field_and_the_item_read_from_it_are_carried() {
    let out = check_with(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i3 = getarrayitem_gc_i(p2, 0, descr=<ArrayS 8>)
         i4 = int_add(i1, i3)
         jump(p0, i4, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p5 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i6 = getarrayitem_gc_i(p5, 0, descr=<ArrayS 8>)
         i7 = int_add(i1, i6)
         label(p0, i7, p5, i6, descr=TargetToken(4611686018427387905))
         i13 = int_add(i7, i6)
         jump(p0, i13, p5, i6, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    let c = &out.carried;
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(
        (c[0].value, c[0].base, c[0].index),
        (CarriedValue::Param(2), CarriedBase::Param(0), None)
    );
    assert_eq!(
        (c[1].value, c[1].base, c[1].index),
        (CarriedValue::Param(3), CarriedBase::Param(2), Some(0))
    );
    assert_ne!(c[0].descr, c[1].descr);
    // A bridge may enter the body by passing what its label carries.
    let entry = &out.body_entries[0];
    assert_eq!(entry.carried.len(), 2, "{entry:?}");
    for (e, c) in entry.carried.iter().zip(c) {
        assert_eq!((e.value, e.base, e.index), (c.value, c.base, c.index));
        assert_eq!(&entry.descrs[e.descr.index()], out.trace.descr(c.descr));
    }
}

#[test]
fn a_field_the_body_writes_is_carried_with_the_value_written() {
    let out = check_with(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.cur 8>)
         i3 = getfield_gc_i(p2, descr=<FieldS N.val 8>)
         p4 = getfield_gc_r(p2, descr=<FieldP N.next 16>)
         setfield_gc(p0, p4, descr=<FieldP T.cur 8>)
         i5 = int_add(i1, i3)
         i6 = int_lt(i5, 1000)
         guard_true(i6, descr=<Guard1>) [i5]
         jump(p0, i5, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p5 = getfield_gc_r(p0, descr=<FieldP T.cur 8>)
         i6 = getfield_gc_i(p5, descr=<FieldS N.val 8>)
         p7 = getfield_gc_r(p5, descr=<FieldP N.next 16>)
         i8 = int_add(i1, i6)
         i9 = int_lt(i8, 1000)
         setfield_gc(p0, p7, descr=<FieldP T.cur 8>)
         guard_true(i9, descr=<Guard1>) [i8]
         label(p0, i8, p7, descr=TargetToken(4611686018427387905))
         i16 = getfield_gc_i(p7, descr=<FieldS N.val 8>)
         p17 = getfield_gc_r(p7, descr=<FieldP N.next 16>)
         i18 = int_add(i8, i16)
         i19 = int_lt(i18, 1000)
         setfield_gc(p0, p17, descr=<FieldP T.cur 8>)
         guard_true(i19, descr=<Guard2 key=1>) [i18]
         jump(p0, i18, p17, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert_eq!(out.carried.len(), 1);
    assert_eq!(out.carried[0].base, CarriedBase::Param(0));
}

#[test]
fn nothing_is_carried_past_a_call_that_may_write_the_heap() {
    let out = check_with(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i3 = getarrayitem_gc_i(p2, 0, descr=<ArrayS 8>)
         i4 = int_add(i1, i3)
         call_n(ConstClass(f), i4, descr=<Callv 0 i EF=5>)
         jump(p0, i4, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p5 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i6 = getarrayitem_gc_i(p5, 0, descr=<ArrayS 8>)
         i7 = int_add(i1, i6)
         call_n(ConstClass(f), i7, descr=<Callv 0 i EF=5>)
         label(p0, i7, descr=TargetToken(4611686018427387905))
         p12 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i13 = getarrayitem_gc_i(p12, 0, descr=<ArrayS 8>)
         i14 = int_add(i7, i13)
         call_n(ConstClass(f), i14, descr=<Callv 0 i EF=5>)
         jump(p0, i14, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert!(out.carried.is_empty());
}

#[test]
fn a_field_the_body_does_not_read_is_not_carried() {
    let out = check_with(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.next 8>)
         guard_nonnull(p2, descr=<Guard1>) [i1]
         i3 = getfield_gc_i(p2, descr=<FieldS T.val 16>)
         i4 = int_add(i1, i3)
         jump(p2, i4, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p5 = getfield_gc_r(p0, descr=<FieldP T.next 8>)
         guard_nonnull(p5, descr=<Guard1>) [i1]
         i7 = getfield_gc_i(p5, descr=<FieldS T.val 16>)
         i8 = int_add(i1, i7)
         label(p5, i8, descr=TargetToken(4611686018427387905))
         p12 = getfield_gc_r(p5, descr=<FieldP T.next 8>)
         guard_nonnull(p12, descr=<Guard2 key=1>) [i8]
         i14 = getfield_gc_i(p12, descr=<FieldS T.val 16>)
         i15 = int_add(i8, i14)
         jump(p12, i15, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert!(out.carried.is_empty());
}

#[test]
fn a_field_that_holds_a_constant_is_carried_without_a_parameter() {
    let out = check_with(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.code 8 pure>)
         guard_value(p2, ConstPtr(ptr7), descr=<Guard1>) [i1]
         i3 = getfield_gc_i(p2, descr=<FieldS C.n 8>)
         call_n(ConstClass(f), i1, descr=<Callv 0 i EF=5>)
         i4 = int_add(i1, i3)
         jump(p0, i4, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p5 = getfield_gc_r(p0, descr=<FieldP T.code 8 pure>)
         guard_value(p5, ConstPtr(ptr7), descr=<Guard1>) [i1]
         i7 = getfield_gc_i(ConstPtr(ptr7), descr=<FieldS C.n 8>)
         call_n(ConstClass(f), i1, descr=<Callv 0 i EF=5>)
         i9 = int_add(i1, i7)
         label(p0, i9, descr=TargetToken(4611686018427387905))
         i13 = getfield_gc_i(ConstPtr(ptr7), descr=<FieldS C.n 8>)
         call_n(ConstClass(f), i9, descr=<Callv 0 i EF=5>)
         i15 = int_add(i9, i13)
         jump(p0, i15, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert_eq!(out.carried.len(), 1, "{:?}", out.carried);
    assert!(matches!(out.carried[0].value, CarriedValue::Const(_)));
}

/// The interpreter runs each loop above (and one whose carried item the body overwrites
/// through another array) alike before and after optimization, on random inputs and memory.
#[test]
fn loops_with_carried_values_behave_as_the_original() {
    let loops = [
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i3 = getarrayitem_gc_i(p2, 0, descr=<ArrayS 8>)
         i4 = int_add(i1, i3)
         i5 = int_lt(i4, 100)
         guard_true(i5, descr=<Guard1>) [i4]
         jump(p0, i4, descr=TargetToken(1))",
        "[p0, i1]
         label(p0, i1, descr=TargetToken(1))
         p2 = getfield_gc_r(p0, descr=<FieldP T.cur 8>)
         i3 = getfield_gc_i(p2, descr=<FieldS N.val 8>)
         p4 = getfield_gc_r(p2, descr=<FieldP N.next 16>)
         setfield_gc(p0, p4, descr=<FieldP T.cur 8>)
         i5 = int_add(i1, i3)
         i6 = int_lt(i5, 1000)
         guard_true(i6, descr=<Guard1>) [i5]
         jump(p0, i5, descr=TargetToken(1))",
        "[p0, p1, i2]
         label(p0, p1, i2, descr=TargetToken(1))
         p3 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
         i4 = getarrayitem_gc_i(p3, 1, descr=<ArrayS 8>)
         i5 = int_add(i2, i4)
         setarrayitem_gc(p1, 1, i5, descr=<ArrayS 8>)
         i6 = int_lt(i5, 500)
         guard_true(i6, descr=<Guard1>) [i5]
         jump(p0, p1, i5, descr=TargetToken(1))",
    ];
    let mut gen = Inputs::new(7);
    for text in loops {
        let t = parse(text);
        let out = optimize(&t, &peel()).unwrap_or_else(|e| panic!("{e}"));
        let mut compared = 0;
        for _ in 0..200 {
            let inputs = gen.for_trace(&t);
            if same_behaviour(&t, &out.trace, &inputs).unwrap_or_else(|e| panic!("{e}")) {
                compared += 1;
            }
        }
        assert!(compared > 0, "no valid run of\n{text}");
    }
}
