//! Virtual references (`trace_ir::abi::VirtualRefLayout`): the reference is an object of its
//! own, so the frame it stands for stays virtual when only the reference escapes. Type-based
//! aliasing, as PyPy's traces have it.

use super::*;

#[test]
fn a_frame_stays_virtual_when_its_reference_escapes_into_a_call() {
    // The interpreter links a new frame into the execution context through a virtual
    // reference around a call that may force: the reference escapes (the call may read the
    // context), the frame stays in the resume data of `guard_not_forced`.
    check(
        "aliasing type-based
         [p0, p1]
         p2 = new_with_vtable(descr=<SizeDescr 32>)
         setfield_gc(p2, 7, descr=<FieldS Frame.pc 8>)
         p3 = virtual_ref(p2, 0)
         setfield_gc(p0, p3, descr=<FieldP EC.topframeref 16>)
         i4 = call_may_force_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
         guard_not_forced(descr=<Guard1>) [p0, p2]
         setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
         virtual_ref_finish(p3, ConstPtr(null))
         finish(i4)",
        "aliasing type-based
         [p0, p1]
         p2 = force_token()
         p3 = new_with_vtable(descr=<SizeDescr 24>)
         setfield_gc(p3, p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
         setfield_gc(p0, p3, descr=<FieldP EC.topframeref 16>)
         i6 = call_may_force_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
         guard_not_forced(descr=<Guard1>) [p0, $0] {$0 = new_with_vtable(descr=<SizeDescr 32>) <FieldS Frame.pc 8>: 7}
         setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
         setfield_gc(p3, ConstPtr(null), descr=<FieldP JitVirtualRef.virtual_token 8>)
         finish(i6)",
    );
}

#[test]
fn a_reference_overwritten_before_any_call_never_exists() {
    // The context's field gets its old value back before anything could read it: the
    // stores go, and with them the reference and its token.
    check(
        "aliasing type-based
         [p0, p1]
         p2 = new_with_vtable(descr=<SizeDescr 32>)
         p3 = virtual_ref(p2, 0)
         setfield_gc(p0, p3, descr=<FieldP EC.topframeref 16>)
         i4 = int_add(7, 1)
         setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
         virtual_ref_finish(p3, ConstPtr(null))
         finish(i4)",
        "aliasing type-based
         [p0, p1]
         setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
         finish(8)",
    );
}

#[test]
fn finishing_with_an_object_stores_it_and_an_unknown_one_keeps_the_op() {
    // `virtual_ref_finish(r, p)` stores `p` into `forced` unless `p` is null; known
    // non-null: a field write (here into the virtual reference, which then escapes whole;
    // its token is null by then, so no `force_token` is left).
    check(
        "aliasing type-based
         [p0]
         p2 = new_with_vtable(descr=<SizeDescr 32>)
         p3 = virtual_ref(p2, 0)
         virtual_ref_finish(p3, p2)
         finish(p3)",
        "aliasing type-based
         [p0]
         p1 = new_with_vtable(descr=<SizeDescr 24>)
         p2 = new_with_vtable(descr=<SizeDescr 32>)
         setfield_gc(p1, p2, descr=<FieldP JitVirtualRef.forced 16>)
         finish(p1)",
    );
    // whether `p0` is null is not known: the op stays (the reference materialized first)
    check(
        "aliasing type-based
         [p0]
         p2 = new_with_vtable(descr=<SizeDescr 32>)
         p3 = virtual_ref(p2, 0)
         virtual_ref_finish(p3, p0)
         finish(p3)",
        "aliasing type-based
         [p0]
         p1 = force_token()
         p2 = new_with_vtable(descr=<SizeDescr 24>)
         setfield_gc(p2, p1, descr=<FieldP JitVirtualRef.virtual_token 8>)
         virtual_ref_finish(p2, p0)
         finish(p2)",
    );
}
