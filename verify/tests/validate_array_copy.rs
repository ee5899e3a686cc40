//! Translation validation of array copies (`ll_arraycopy`, `trace_ir::oopspec::is_array_copy`)
//! the optimizer performed on virtual arrays: the original's copy between arrays it allocated
//! is the copy of their items, so the optimized trace without the call is `Valid`; a wrong
//! result is `Invalid`, and a copy the validator cannot follow (arrays it did not allocate)
//! removed is never `Valid`.

use optimizer::{optimize, Options};
use trace_ir::text::parse_trace;
use trace_ir::{print_trace, Trace};
use verify::validate::{validate, Config, Verdict};

fn parse(src: &str) -> Trace {
    parse_trace(src).unwrap_or_else(|e| panic!("{e}"))
}

const COPY: &str = "
[i0, i1, p7]
p2 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
p3 = new_array_clear(3, descr=<ArrayS 8>)
call_n(ConstClass(ll_arraycopy), p2, p3, 0, 1, 2, descr=<Callv 0 rriii EF=2 OS=1>)
i4 = getarrayitem_gc_i(p3, 2, descr=<ArrayS 8>)
guard_true(i4, descr=<Guard1>) [p3]
i5 = getarrayitem_gc_i(p3, 1, descr=<ArrayS 8>)
finish(i5)
";

#[test]
fn the_optimizers_copy_between_virtual_arrays_validates() {
    let t = parse(COPY);
    let out = optimize(&t, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !out.trace.ops.iter().any(|o| o.opcode.is_call()),
        "{}",
        print_trace(&out.trace)
    );
    let v = validate(&t, &out.trace, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
}

#[track_caller]
fn assert_invalid(original: &str, wrong: &str) {
    let v = validate(&parse(original), &parse(wrong), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}");
}

#[test]
fn a_wrong_item_after_the_copy_is_invalid() {
    assert_invalid(
        COPY,
        "[i0, i1, p7]
         guard_true(i0, descr=<Guard1>) [$0] {$0 = new_array_clear(3, descr=<ArrayS 8>) [1]: i0, [2]: i1}
         finish(i1)",
    );
}

#[test]
fn a_wrong_array_at_an_exit_after_the_copy_is_invalid() {
    // The exit rebuilds the destination without the copied items.
    assert_invalid(
        COPY,
        "[i0, i1, p7]
         guard_true(i1, descr=<Guard1>) [$0] {$0 = new_array_clear(3, descr=<ArrayS 8>) [2]: i1}
         finish(i0)",
    );
}

#[test]
fn a_removed_copy_into_an_array_the_trace_did_not_allocate_is_not_valid() {
    let original = "[i0, p1]
         p2 = new_array(1, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
         call_n(ConstClass(ll_arraycopy), p2, p1, 0, 0, 1, descr=<Callv 0 rriii EF=2 OS=1>)
         finish(i0)";
    let wrong = "[i0, p1]
         finish(i0)";
    let v = validate(&parse(original), &parse(wrong), &Config::default());
    assert!(!matches!(v, Verdict::Valid), "{v}");
}

/// The source escaped before the copy (stored into `p7`), as PyPy's list concatenations do:
/// its items are read from the heap, where the escape wrote them.
const COPY_FROM_ESCAPED: &str = "
[i0, i1, p7]
p2 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
setfield_gc(p7, p2, descr=<FieldP T.items 8>)
p3 = new_array_clear(3, descr=<ArrayS 8>)
call_n(ConstClass(ll_arraycopy), p2, p3, 0, 1, 2, descr=<Callv 0 rriii EF=2 OS=1>)
i5 = getarrayitem_gc_i(p3, 1, descr=<ArrayS 8>)
i6 = getarrayitem_gc_i(p3, 2, descr=<ArrayS 8>)
finish(i5, i6)
";

#[test]
fn a_copy_from_an_array_that_escaped_validates() {
    let t = parse(COPY_FROM_ESCAPED);
    let out = optimize(&t, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let v = validate(&t, &out.trace, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
    let by_hand = "[i0, i1, p7]
         p2 = new_array(2, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
         setfield_gc(p7, p2, descr=<FieldP T.items 8>)
         finish(i0, i1)";
    let v = validate(&t, &parse(by_hand), &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}");
    assert_invalid(
        COPY_FROM_ESCAPED,
        "[i0, i1, p7]
         p2 = new_array(2, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
         setfield_gc(p7, p2, descr=<FieldP T.items 8>)
         finish(i1, i0)",
    );
}

#[test]
fn a_copy_into_an_array_that_escaped_writes_its_items_in_the_heap() {
    let original = "[i0, i1, p7]
         p2 = new_array(2, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
         p3 = new_array_clear(2, descr=<ArrayS 8>)
         setfield_gc(p7, p3, descr=<FieldP T.items 8>)
         call_n(ConstClass(ll_arraycopy), p2, p3, 0, 0, 2, descr=<Callv 0 rriii EF=2 OS=1>)
         finish()";
    let copied = |a: &str, b: &str| {
        format!(
            "[i0, i1, p7]
         p3 = new_array_clear(2, descr=<ArrayS 8>)
         setfield_gc(p7, p3, descr=<FieldP T.items 8>)
         setarrayitem_gc(p3, 0, {a}, descr=<ArrayS 8>)
         setarrayitem_gc(p3, 1, {b}, descr=<ArrayS 8>)
         finish()"
        )
    };
    let v = validate(&parse(original), &parse(&copied("i0", "i1")), &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}");
    assert_invalid(original, &copied("i1", "i0"));
}
