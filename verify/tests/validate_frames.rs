//! Translation validation of virtual references (`trace_ir::abi::VirtualRefLayout`): the
//! reference is an object of its own that holds the force token, so a frame may stay virtual
//! while its reference escapes. Each correct optimization is `Valid`, each wrong one
//! `Invalid`.

mod common;

use common::{assert_invalid, assert_valid, parse};
use optimizer::{optimize, Options};
use trace_ir::print_trace;
use verify::validate::{validate, Config};

/// An interpreter links a frame into its execution context `p0` through a virtual reference
/// around a call that may force, then restores the caller's reference `p1`.
const LINKED_FRAME: &str = "
[p0, p1]
p2 = new_with_vtable(descr=<SizeDescr 32>)
setfield_gc(p2, 7, descr=<FieldS Frame.pc 8>)
p3 = virtual_ref(p2, 0)
setfield_gc(p0, p3, descr=<FieldP EC.topframeref 16>)
i4 = call_may_force_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
guard_not_forced(descr=<Guard1>) [p0, p2]
setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
virtual_ref_finish(p3, ConstPtr(null))
finish(i4, p3)";

#[test]
fn the_optimizer_keeps_the_frame_virtual_and_that_is_valid() {
    let t = parse(LINKED_FRAME);
    let out = optimize(&t, &Options::default()).unwrap();
    let text = print_trace(&out.trace);
    assert!(
        !text.contains("<SizeDescr 32>)\n"),
        "the frame stays virtual (only in resume data):\n{text}"
    );
    let v = validate(&t, &out.trace, &Config::default());
    assert!(v.is_valid(), "{v}\n{text}");
}

#[test]
fn the_frame_in_place_of_its_reference_is_invalid() {
    // Storing the frame itself (what `virtual_ref(p, i) = p` would do) lets the call see
    // another object.
    assert_invalid(
        LINKED_FRAME,
        "
[p0, p1]
p2 = new_with_vtable(descr=<SizeDescr 32>)
setfield_gc(p2, 7, descr=<FieldS Frame.pc 8>)
setfield_gc(p0, p2, descr=<FieldP EC.topframeref 16>)
i4 = call_may_force_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
guard_not_forced(descr=<Guard1>) [p0, p2]
setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
finish(i4, p2)",
    );
}

/// The optimizer's output on [`LINKED_FRAME`], written out, with one change: `token`
/// (the value the reference's token holds after `virtual_ref_finish`), `store` (whether the
/// reference is stored into the context before the call).
fn linked_frame_output(token: &str, store: bool) -> String {
    let store = if store {
        "setfield_gc(p0, p3, descr=<FieldP EC.topframeref 16>)"
    } else {
        ""
    };
    format!(
        "
[p0, p1]
p2 = force_token()
p3 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p3, p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
setfield_gc(p3, ConstPtr(null), descr=<FieldP JitVirtualRef.forced 16>)
{store}
i4 = call_may_force_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
guard_not_forced(descr=<Guard1>) [p0, $0] {{$0 = new_with_vtable(descr=<SizeDescr 32>) <FieldS Frame.pc 8>: 7}}
setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
setfield_gc(p3, {token}, descr=<FieldP JitVirtualRef.virtual_token 8>)
finish(i4, p3)"
    )
}

#[test]
fn the_reference_must_reach_the_call_and_lose_its_token() {
    assert_valid(LINKED_FRAME, &linked_frame_output("ConstPtr(null)", true));
    // the call would see the caller's reference instead
    assert_invalid(LINKED_FRAME, &linked_frame_output("ConstPtr(null)", false));
    // the finished reference keeps its token
    assert_invalid(LINKED_FRAME, &linked_frame_output("p2", true));
}

#[test]
fn finishing_stores_the_object_only_when_it_is_not_null() {
    let original = "
[p0, p1]
virtual_ref_finish(p1, p0)
finish(p1)";
    assert_valid(original, original);
    // an unconditional store of a null `p0` would erase what `forced` held
    assert_invalid(
        original,
        "
[p0, p1]
setfield_gc(p1, p0, descr=<FieldP JitVirtualRef.forced 16>)
setfield_gc(p1, ConstPtr(null), descr=<FieldP JitVirtualRef.virtual_token 8>)
finish(p1)",
    );
    // with `p0` known not null, it is that store
    let nonnull = "
[p0, p1]
guard_nonnull(p0, descr=<Guard1>) []
virtual_ref_finish(p1, p0)
finish(p1)";
    assert_valid(
        nonnull,
        "
[p0, p1]
guard_nonnull(p0, descr=<Guard1>) []
setfield_gc(p1, p0, descr=<FieldP JitVirtualRef.forced 16>)
setfield_gc(p1, ConstPtr(null), descr=<FieldP JitVirtualRef.virtual_token 8>)
finish(p1)",
    );
}
