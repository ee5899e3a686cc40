//! Lazy stores of virtual objects: a store of a virtual into an object that exists is
//! delayed, the virtual stays virtual while nothing observes the store, a guard's exit
//! performs the store (its resume data carries it), and a slot written back with what memory
//! holds is never written.

mod common;
use common::{check, parse, same_behaviour};
use trace_interp::RtValue;

/// The pattern of inlined interpreter frames: the frame is stored into the execution
/// context, guards run, and the context's field is restored.
const FRAME_PUSHED_AND_POPPED: &str = "aliasing type-based
[p0, i1, i2]
p3 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p3, i1, descr=<FieldS Frame.depth 8>)
p4 = getfield_gc_r(p0, descr=<FieldP Ec.top 16>)
setfield_gc(p3, p4, descr=<FieldP Frame.back 16>)
setfield_gc(p0, p3, descr=<FieldP Ec.top 16>)
guard_true(i2, descr=<Guard1>) [i1]
setfield_gc(p3, 2, descr=<FieldS Frame.depth 8>)
guard_false(i1, descr=<Guard2>) [i1]
setfield_gc(p0, p4, descr=<FieldP Ec.top 16>)
finish()";

#[test]
fn a_stored_frame_stays_virtual_and_the_exits_store_it() {
    let out = check(
        FRAME_PUSHED_AND_POPPED,
        "aliasing type-based
         [p0, i1, i2]
         p3 = getfield_gc_r(p0, descr=<FieldP Ec.top 16>)
         guard_true(i2, descr=<Guard1>) [i1] {$0 = new_with_vtable(descr=<SizeDescr 24>) <FieldS Frame.depth 8>: i1, <FieldP Frame.back 16>: p3; setfield_gc(p0, $0, descr=<FieldP Ec.top 16>)}
         guard_false(i1, descr=<Guard2>) [i1] {$0 = new_with_vtable(descr=<SizeDescr 24>) <FieldS Frame.depth 8>: 2, <FieldP Frame.back 16>: p3; setfield_gc(p0, $0, descr=<FieldP Ec.top 16>)}
         finish()",
    );
    let t = parse(FRAME_PUSHED_AND_POPPED);
    for (i1, i2) in [(0, 1), (0, 0), (3, 1), (3, 0)] {
        let inputs = [RtValue::Ref(0x5000_0000_1008), RtValue::Int(i1), RtValue::Int(i2)];
        assert!(same_behaviour(&t, &out.trace, &inputs).unwrap(), "inputs {i1} {i2}");
    }
}

#[test]
fn a_stored_virtual_is_materialized_before_a_call_that_may_read_it() {
    let src = "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS T.a 8>)
         setfield_gc(p0, p2, descr=<FieldP E.p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()";
    let out = check(
        src,
        "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS T.a 8>)
         setfield_gc(p0, p2, descr=<FieldP E.p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()",
    );
    let t = parse(src);
    assert!(same_behaviour(&t, &out.trace, &[RtValue::Ref(0x5000_0000_2008), RtValue::Int(4)]).unwrap());
}

#[test]
fn a_stored_virtual_read_back_stays_virtual() {
    // the load of p0's field is answered by the store; the field of the object it gives too
    check(
        "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS T.a 8>)
         setfield_gc(p0, p2, descr=<FieldP E.p 8>)
         p3 = getfield_gc_r(p0, descr=<FieldP E.p 8>)
         i4 = getfield_gc_i(p3, descr=<FieldS T.a 8>)
         setfield_gc(p0, ConstPtr(null), descr=<FieldP E.p 8>)
         finish(i4)",
        "[p0, i1]
         setfield_gc(p0, ConstPtr(null), descr=<FieldP E.p 8>)
         finish(i1)",
    );
}

#[test]
fn a_slot_written_back_with_what_memory_holds_is_not_written() {
    // with other descriptors of the object in the trace, byte views could see the bytes in
    // between: the write-back is kept there (docs/memory-model.md)
    let typed = "aliasing type-based
         [p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS E.n 8>)
         setfield_gc(p0, i1, descr=<FieldS E.n 8>)
         setfield_gc(p0, i2, descr=<FieldS E.n 8>)
         finish(i2)";
    check(
        typed,
        "aliasing type-based
         [p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS E.n 8>)
         finish(i2)",
    );
}

#[test]
fn a_stored_virtual_stays_virtual_across_a_call_that_changes_nothing() {
    // the elidable call cannot keep a reference to the frame nor read the mutable field;
    // the write of the immutable field of p5 (which exists: the call takes it) is done first
    let src = "aliasing type-based
         [p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS Frame.depth 8>)
         p3 = getfield_gc_r(p0, descr=<FieldP Ec.top 16>)
         setfield_gc(p0, p2, descr=<FieldP Ec.top 16>)
         p5 = new(descr=<SizeDescr 16>)
         i4 = call_pure_i(ConstClass(f), p5, descr=<Calli 8 r EF=0>)
         setfield_gc(p5, i1, descr=<FieldS Int.v 8 pure>)
         i6 = call_pure_i(ConstClass(g), p5, descr=<Calli 8 r EF=0>)
         setfield_gc(p0, p3, descr=<FieldP Ec.top 16>)
         finish(i4, i6)";
    let out = check(
        src,
        "aliasing type-based
         [p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         i3 = call_pure_i(ConstClass(f), p2, descr=<Calli 8 r EF=0>)
         setfield_gc(p2, i1, descr=<FieldS Int.v 8 pure>)
         i5 = call_pure_i(ConstClass(g), p2, descr=<Calli 8 r EF=0>)
         finish(i3, i5)",
    );
    let t = parse(src);
    assert!(same_behaviour(&t, &out.trace, &[RtValue::Ref(0x5000_0000_3008), RtValue::Int(9)]).unwrap());
}

#[test]
fn a_guard_keeps_at_most_sixteen_stores_of_virtuals_delayed() {
    // twenty objects stored into twenty fields: the four oldest stores are done before the
    // guard (each guard's resume data would otherwise grow with the trace)
    let mut src = String::from("[p0, i1]\n");
    for k in 0..20 {
        src += &format!("p{} = new(descr=<SizeDescr 16>)\n", 100 + k);
        src += &format!("setfield_gc(p0, p{}, descr=<FieldP E.f{k} {}>)\n", 100 + k, 8 * (k + 1));
    }
    src += "guard_true(i1, descr=<Guard1>) []\nfinish()\n";
    let t = parse(&src);
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap();
    let g = &out.trace.guards[0];
    assert_eq!(g.writes.len(), 16);
    assert_eq!(g.virtuals.len(), 16);
    let emitted = out
        .trace
        .ops
        .iter()
        .filter(|o| o.opcode == trace_ir::Opcode::SetfieldGc)
        .count();
    // four before the guard, the sixteen delayed ones at the end
    assert_eq!(emitted, 20);
    for i1 in [0, 1] {
        assert!(same_behaviour(&t, &out.trace, &[RtValue::Ref(0x5000_0000_4008), RtValue::Int(i1)]).unwrap());
    }
}
