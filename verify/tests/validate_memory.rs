//! Translation validation under the memory and value model (`docs/memory-model.md`): byte
//! views and type-based aliasing, raw memory, immutable items across calls, fresh objects
//! against constants, fresh objects paired by role, and hints as promises. Each correct
//! optimization must be `Valid`, each wrong one `Invalid`; the optimizer's own output on the
//! originals must not be `Invalid`.

mod common;

use common::{assert_invalid, assert_optimizer_output_not_invalid, assert_valid, verdict};

fn type_based(text: &str) -> String {
    format!("aliasing type-based\n{text}")
}

// --- byte views -----------------------------------------------------------------------------

const ITEM_VIEW: &str = "
[p0]
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
finish(i1)
";

const ITEM_VIEW_LOAD_FIRST: &str = "
[p0]
i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
finish(i1)
";

#[test]
fn byte_view_of_an_item_reads_the_stored_low_byte() {
    assert_valid(ITEM_VIEW, ITEM_VIEW);
    // 4660 = 0x1234: the byte view of item 0 reads 0x34.
    let forwarded = "
[p0]
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
finish(52)
";
    assert_valid(ITEM_VIEW, forwarded);
    let wrong_byte = forwarded.replace("finish(52)", "finish(18)");
    assert_invalid(ITEM_VIEW, &wrong_byte);
    assert_optimizer_output_not_invalid(ITEM_VIEW);
}

#[test]
fn byte_view_load_moved_before_the_store_is_invalid_under_byte_views() {
    assert_invalid(ITEM_VIEW, ITEM_VIEW_LOAD_FIRST);
}

#[test]
fn load_moved_before_a_store_of_another_descriptor_is_valid_under_type_based_aliasing() {
    assert_valid(&type_based(ITEM_VIEW), &type_based(ITEM_VIEW_LOAD_FIRST));
    assert_optimizer_output_not_invalid(&type_based(ITEM_VIEW));
}

#[test]
fn traces_of_different_aliasing_are_unknown() {
    let v = verdict(ITEM_VIEW, &type_based(ITEM_VIEW));
    assert!(v.is_unknown(), "{v}");
}

const THREE_STORES: &str = "
[p0, i1, i2, i3]
setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
i4 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 8>)
finish(i4)
";

#[test]
fn stores_through_item_views_merge_by_bytes() {
    // The last store covers the same eight bytes as the other two.
    let merged = "
[p0, i1, i2, i3]
setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
finish(i3)
";
    assert_valid(THREE_STORES, merged);
    assert_optimizer_output_not_invalid(THREE_STORES);
}

#[test]
fn stores_through_item_views_merged_per_descriptor_are_invalid_under_byte_views() {
    // Merged as if each descriptor were its own memory: the `ArrayU 8` store survives last,
    // and the `ArrayU 8` load is answered from it.
    let per_descriptor = "
[p0, i1, i2, i3]
setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
finish(i2)
";
    assert_invalid(THREE_STORES, per_descriptor);
    // Under type-based aliasing that is what the descriptors promise.
    assert_valid(&type_based(THREE_STORES), &type_based(per_descriptor));
}

const FIELD_VIEW: &str = "
[p0, f1]
setfield_gc(p0, f1, descr=<FieldF T.x 8>)
i2 = getfield_gc_i(p0, descr=<FieldS T.y 8>)
finish(i2)
";

#[test]
fn integer_view_of_a_float_field_reads_its_bits() {
    let reinterpreted = "
[p0, f1]
setfield_gc(p0, f1, descr=<FieldF T.x 8>)
i2 = convert_float_bytes_to_longlong(f1)
finish(i2)
";
    assert_valid(FIELD_VIEW, reinterpreted);
    assert_optimizer_output_not_invalid(FIELD_VIEW);
}

#[test]
fn field_view_load_moved_before_the_store_is_invalid_under_byte_views() {
    let load_first = "
[p0, f1]
i2 = getfield_gc_i(p0, descr=<FieldS T.y 8>)
setfield_gc(p0, f1, descr=<FieldF T.x 8>)
finish(i2)
";
    assert_invalid(FIELD_VIEW, load_first);
    assert_valid(&type_based(FIELD_VIEW), &type_based(load_first));
}

#[test]
fn narrow_field_view_reads_part_of_a_wider_field() {
    // The second byte of 0x1234 (a field at 8, a byte view at 9), through a fresh object the
    // views make escape, and through an external one.
    let original = "
[p0, i1]
p2 = new(descr=<SizeDescr 24>)
setfield_gc(p2, 4660, descr=<FieldS T.a 8>)
i3 = getfield_gc_i(p2, descr=<FieldU T.b 9 size=1>)
setfield_gc(p0, i1, descr=<FieldS T.a 8>)
i5 = getfield_gc_i(p0, descr=<FieldU T.b 9 size=1>)
i6 = int_and(i1, 65280)
i7 = uint_rshift(i6, 8)
i8 = int_sub(i5, i7)
finish(i3, i8)
";
    let optimized = |first: &str| {
        format!(
            "
[p0, i1]
setfield_gc(p0, i1, descr=<FieldS T.a 8>)
finish({first}, 0)
"
        )
    };
    assert_valid(original, &optimized("18"));
    assert_invalid(original, &optimized("52"));
    assert_optimizer_output_not_invalid(original);
}

#[test]
fn fresh_array_read_through_another_item_view_is_zero_where_unwritten() {
    let original = "
[p0]
p1 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p1, 0, 4660, descr=<ArrayS 8>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
i2 = getarrayitem_gc_i(p1, 0, descr=<ArrayU 1>)
i3 = getarrayitem_gc_i(p1, 1, descr=<ArrayU 1>)
i4 = getarrayitem_gc_i(p1, 8, descr=<ArrayU 1>)
finish(i2, i3, i4)
";
    let optimized = |last: &str| {
        format!(
            "
[p0]
p1 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p1, 0, 4660, descr=<ArrayS 8>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
finish(52, 18, {last})
"
        )
    };
    assert_valid(original, &optimized("0"));
    assert_invalid(original, &optimized("1"));
    assert_optimizer_output_not_invalid(original);
}

#[test]
fn fresh_array_read_through_another_descriptor_after_it_escaped_is_zero_under_type_based_aliasing() {
    // The read of the fresh array's item moves before the store that lets the array escape:
    // under type-based aliasing the item read through another descriptor is still zero.
    let original = type_based(
        "
[p0]
p1 = new_array(4, descr=<ArrayU 1>)
setfield_gc(p0, p1, descr=<FieldP T.p 24>)
i2 = getarrayitem_gc_i(p1, 0, descr=<ArrayS 1>)
i3 = getarrayitem_gc_i(p1, 3, descr=<ArrayS 1>)
finish(i2, i3)
",
    );
    let moved = |last: &str| {
        type_based(&format!(
            "
[p0]
p1 = new_array(4, descr=<ArrayU 1>)
i2 = getarrayitem_gc_i(p1, 0, descr=<ArrayS 1>)
setfield_gc(p0, p1, descr=<FieldP T.p 24>)
finish(i2, {last})
"
        ))
    };
    assert_valid(&original, &moved("0"));
    assert_invalid(&original, &moved("1"));
    assert_optimizer_output_not_invalid(&original);
}

#[test]
fn arrays_of_one_length_offset_share_the_length_word_under_byte_views() {
    let original = "
[p0]
i1 = arraylen_gc(p0, descr=<ArrayS 8>)
i2 = arraylen_gc(p0, descr=<ArrayU 1>)
i3 = int_sub(i1, i2)
finish(i3)
";
    let zero = "
[p0]
finish(0)
";
    assert_valid(original, zero);
    // Under type-based aliasing the two descriptors' lengths are not related.
    assert_invalid(&type_based(original), &type_based(zero));
}

// --- raw memory -----------------------------------------------------------------------------

const RAW: &str = "
[i0]
raw_store(i0, 0, 4660, descr=<ArrayS 8>)
i1 = raw_load_i(i0, 1, descr=<ArrayU 1>)
i2 = int_add(i0, 8)
setfield_raw(i2, 86, descr=<FieldS T.a 0>)
i4 = getarrayitem_raw_i(i0, 1, descr=<ArrayS 8>)
finish(i1, i4)
";

#[test]
fn raw_memory_is_byte_addressed() {
    // Byte 1 of 0x1234 is 0x12; the word at i0 + 8 is what the field store at i0 + 8 wrote.
    let forwarded = |byte: &str| {
        format!(
            "
[i0]
raw_store(i0, 0, 4660, descr=<ArrayS 8>)
i2 = int_add(i0, 8)
setfield_raw(i2, 86, descr=<FieldS T.a 0>)
finish({byte}, 86)
"
        )
    };
    assert_valid(RAW, &forwarded("18"));
    assert_invalid(RAW, &forwarded("52"));
    assert_optimizer_output_not_invalid(RAW);
}

#[test]
fn raw_byte_load_moved_before_the_word_store_is_invalid() {
    let load_first = "
[i0]
i1 = raw_load_i(i0, 1, descr=<ArrayU 1>)
raw_store(i0, 0, 4660, descr=<ArrayS 8>)
i2 = int_add(i0, 8)
setfield_raw(i2, 86, descr=<FieldS T.a 0>)
i4 = getarrayitem_raw_i(i0, 1, descr=<ArrayS 8>)
finish(i1, i4)
";
    assert_invalid(RAW, load_first);
    // Raw memory is byte-addressed under type-based aliasing too.
    assert_invalid(&type_based(RAW), &type_based(load_first));
}

// --- immutable items ------------------------------------------------------------------------

const PURE_ITEMS: &str = "
[p0, i1]
i2 = getarrayitem_gc_pure_i(p0, 0, descr=<ArrayS 8>)
call_n(268466320, i1, descr=<Callv 0 i EF=5>)
i3 = getarrayitem_gc_pure_i(p0, 0, descr=<ArrayS 8>)
i4 = int_sub(i3, i2)
finish(i4)
";

#[test]
fn immutable_item_reads_are_not_changed_by_calls() {
    let reused = "
[p0, i1]
call_n(268466320, i1, descr=<Callv 0 i EF=5>)
finish(0)
";
    assert_valid(PURE_ITEMS, reused);
    assert_valid(&type_based(PURE_ITEMS), &type_based(reused));
    assert_optimizer_output_not_invalid(PURE_ITEMS);
    // A mutable read after the call may see another value.
    let mutable = PURE_ITEMS.replace(
        "i3 = getarrayitem_gc_pure_i(p0, 0, descr=<ArrayS 8>)",
        "i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)",
    );
    assert_invalid(&mutable, reused);
    assert_invalid(&type_based(&mutable), &type_based(reused));
}

#[test]
fn immutable_item_read_of_an_escaped_array_sees_the_last_write() {
    let original = "
[i0]
p1 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p1, 0, i0, descr=<ArrayS 8>)
call_n(268466320, p1, descr=<Callv 0 r EF=5>)
i3 = getarrayitem_gc_pure_i(p1, 0, descr=<ArrayS 8>)
finish(i3)
";
    let forwarded = "
[i0]
p1 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p1, 0, i0, descr=<ArrayS 8>)
call_n(268466320, p1, descr=<Callv 0 r EF=5>)
finish(i0)
";
    assert_valid(original, forwarded);
    assert_optimizer_output_not_invalid(original);
    let mutable = original.replace("getarrayitem_gc_pure_i", "getarrayitem_gc_i");
    assert_invalid(&mutable, forwarded);
}

// --- fresh objects and constants ------------------------------------------------------------

const FRESH_VS_CONST: &str = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
i3 = instance_ptr_eq(ConstPtr(ptr1), p1)
guard_false(i3, descr=<Guard0>) []
i4 = instance_ptr_eq(ConstPtr(ptr1), p2)
guard_false(i4, descr=<Guard1>) []
finish()
";

#[test]
fn fresh_object_is_never_a_constant() {
    let without_guard0 = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
i4 = instance_ptr_eq(ConstPtr(ptr1), p2)
guard_false(i4, descr=<Guard1>) []
finish()
";
    assert_valid(FRESH_VS_CONST, without_guard0);
    assert_optimizer_output_not_invalid(FRESH_VS_CONST);
}

#[test]
fn input_compared_with_a_constant_keeps_its_guard() {
    let without_both = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
finish()
";
    assert_invalid(FRESH_VS_CONST, without_both);
}

const FRESH_VS_OLDER: &str = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
i3 = ptr_eq(p2, p1)
guard_false(i3, descr=<Guard0>) []
p4 = getfield_gc_r(p2, descr=<FieldP T.p 8>)
i5 = ptr_eq(p4, p1)
guard_false(i5, descr=<Guard1>) []
finish()
";

#[test]
fn fresh_object_is_never_a_value_that_existed_before_it() {
    // p2 existed before p1 was allocated; p4, read after p1 was stored, is p1 when p2 is p0
    let without_guard0 = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
p4 = getfield_gc_r(p2, descr=<FieldP T.p 8>)
i5 = ptr_eq(p4, p1)
guard_false(i5, descr=<Guard1>) []
finish()
";
    let without_guard1 = "
[p0, p2]
p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p0, p1, descr=<FieldP T.p 8>)
i3 = ptr_eq(p2, p1)
guard_false(i3, descr=<Guard0>) []
finish()
";
    assert_valid(FRESH_VS_OLDER, without_guard0);
    assert_invalid(FRESH_VS_OLDER, without_guard1);
    assert_optimizer_output_not_invalid(FRESH_VS_OLDER);
}

// --- fresh objects paired by role -----------------------------------------------------------

/// The original escapes a temporary object (stored into an external field, then overwritten)
/// that the optimized trace keeps virtual, then passes another object of the same shape to a
/// call: the call arguments are the same object by role.
const ROLE: &str = "
[p0, i1]
p2 = new(descr=<SizeDescr 32>)
setfield_gc(p2, i1, descr=<FieldS T.a 8>)
setfield_gc(p0, p2, descr=<FieldP T.p 16>)
setfield_gc(p0, ConstPtr(null), descr=<FieldP T.p 16>)
p3 = new(descr=<SizeDescr 32>)
setfield_gc(p3, i1, descr=<FieldS T.a 8>)
call_n(268466320, p3, descr=<Callv 0 r EF=5>)
finish()
";

fn role_optimized(value: &str) -> String {
    format!(
        "
[p0, i1]
setfield_gc(p0, ConstPtr(null), descr=<FieldP T.p 16>)
p3 = new(descr=<SizeDescr 32>)
setfield_gc(p3, {value}, descr=<FieldS T.a 8>)
call_n(268466320, p3, descr=<Callv 0 r EF=5>)
finish()
"
    )
}

#[test]
fn call_arguments_that_are_fresh_objects_are_paired_by_role() {
    assert_valid(ROLE, &role_optimized("i1"));
    assert_optimizer_output_not_invalid(ROLE);
}

#[test]
fn role_paired_objects_with_different_contents_are_invalid() {
    assert_invalid(ROLE, &role_optimized("7"));
}

#[test]
fn one_fresh_object_is_not_paired_with_two() {
    // The original passes one object twice, the optimized trace two objects.
    let once = "
[i1]
p2 = new(descr=<SizeDescr 32>)
call_n(268466320, p2, p2, descr=<Callv 0 rr EF=5>)
finish()
";
    let twice = "
[i1]
p2 = new(descr=<SizeDescr 32>)
p3 = new(descr=<SizeDescr 32>)
call_n(268466320, p2, p3, descr=<Callv 0 rr EF=5>)
finish()
";
    assert_valid(once, once);
    assert_invalid(once, twice);
    assert_invalid(twice, once);
}

#[test]
fn fresh_objects_passed_in_swapped_roles_are_invalid() {
    let original = "
[i1]
p2 = new(descr=<SizeDescr 32>)
p3 = new(descr=<SizeDescr 32>)
setfield_gc(p2, i1, descr=<FieldS T.a 8>)
call_n(268466320, p2, p3, descr=<Callv 0 rr EF=5>)
finish()
";
    let swapped = "
[i1]
p2 = new(descr=<SizeDescr 32>)
p3 = new(descr=<SizeDescr 32>)
setfield_gc(p2, i1, descr=<FieldS T.a 8>)
call_n(268466320, p3, p2, descr=<Callv 0 rr EF=5>)
finish()
";
    // With `i1` possibly zero the objects can be equal in contents, but not by role: the
    // first argument's field is `i1` in the original and 0 in the optimized trace.
    assert_invalid(original, swapped);
}

/// Two fresh objects stored into an external array in the opposite order on the two sides:
/// paired by the heap word that holds them at the guard, or not compared when nothing holds
/// them any more.
fn opposite_order(keep_item3: bool, optimized: bool, value3: &str) -> String {
    let null3 = if keep_item3 {
        ""
    } else {
        "setarrayitem_gc(p0, 3, ConstPtr(null), descr=<ArrayP 8>)\n"
    };
    let first = format!(
        "p3 = new_with_vtable(descr=<SizeDescr 16>)\nsetfield_gc(p3, {value3}, descr=<FieldS T.v 8 pure>)\nsetarrayitem_gc(p0, 3, p3, descr=<ArrayP 8>)\n"
    );
    let second = "p4 = new_with_vtable(descr=<SizeDescr 16>)\nsetfield_gc(p4, i2, descr=<FieldS T.v 8 pure>)\nsetarrayitem_gc(p0, 4, p4, descr=<ArrayP 8>)\n";
    let (a, b) = if optimized {
        (second.to_string(), first)
    } else {
        (first, second.to_string())
    };
    format!(
        "aliasing type-based
[p0, i1, i2]
{a}{b}setarrayitem_gc(p0, 4, ConstPtr(null), descr=<ArrayP 8>)
{null3}i5 = int_gt(i1, i2)
guard_true(i5, descr=<Guard0>) [p0]
finish()
"
    )
}

#[test]
fn fresh_objects_escaping_in_opposite_order_are_paired_by_role() {
    for keep in [false, true] {
        assert_valid(&opposite_order(keep, false, "i1"), &opposite_order(keep, true, "i1"));
        assert_optimizer_output_not_invalid(&opposite_order(keep, false, "i1"));
    }
    assert_invalid(&opposite_order(true, false, "i1"), &opposite_order(true, true, "i2"));
}

/// The original lets a temporary object escape (read through a descriptor overlapping the one
/// it was written through; the optimized trace drops it), then stores another fresh object
/// into a field the byte memory holds (a narrower view shares its bytes): the stored objects are
/// the same object by role, whatever the order of escapes.
fn byte_word_role(value: &str) -> (String, String) {
    let original = "
[p0, p1, i1]
i9 = getfield_gc_i(p1, descr=<FieldS T.vp 16 size=4>)
p2 = new(descr=<SizeDescr 32>)
setfield_gc(p2, i1, descr=<FieldS T.va 8 size=4>)
i3 = getfield_gc_i(p2, descr=<FieldS T.a 8>)
p4 = new(descr=<SizeDescr 32>)
setfield_gc(p4, i1, descr=<FieldS T.a 8>)
setfield_gc(p0, p4, descr=<FieldP T.p 16>)
finish(i9)
";
    let optimized = format!(
        "
[p0, p1, i1]
i9 = getfield_gc_i(p1, descr=<FieldS T.vp 16 size=4>)
p4 = new(descr=<SizeDescr 32>)
setfield_gc(p4, {value}, descr=<FieldS T.a 8>)
setfield_gc(p0, p4, descr=<FieldP T.p 16>)
finish(i9)
"
    );
    (original.to_string(), optimized)
}

#[test]
fn fresh_objects_stored_into_byte_memory_are_paired_by_role() {
    let (original, optimized) = byte_word_role("i1");
    assert_valid(&original, &optimized);
    assert_optimizer_output_not_invalid(&original);
    let (original, wrong) = byte_word_role("7");
    assert_invalid(&original, &wrong);
}

/// As [`byte_word_role`], with the object stored at a variable index of a fresh array: the
/// array's items share the byte memory with the overlapping fields, and the stored objects are
/// paired at the item's bytes, at a symbolic offset; after a call (`call`), which carries the
/// array's items over as words at constant offsets whose values involve the stored object, by
/// the one object not yet paired that each side's word involves.
fn byte_item_role(stored: &str, call: bool) -> (String, String) {
    let call = if call {
        "call_may_force_n(268466320, descr=<Callv 0 EF=6>)\n"
    } else {
        ""
    };
    let original = format!(
        "
[i1]
p4 = new_with_vtable(descr=<SizeDescr 48 vtable=4096>)
setfield_gc(p4, 0, descr=<FieldS T.k 40 pure>)
p6 = new_array(4, descr=<ArrayP 8>)
p9 = new_with_vtable(descr=<SizeDescr 48 vtable=4096>)
i10 = getfield_gc_i(p4, descr=<FieldS T.view_k 40>)
i11 = int_and(i1, 3)
setarrayitem_gc(p6, i11, p9, descr=<ArrayP 8>)
{call}finish(p6)
"
    );
    let optimized = format!(
        "
[i1]
i7 = int_and(i1, 3)
p8 = new_array(4, descr=<ArrayP 8>)
p9 = new_with_vtable(descr=<SizeDescr 48 vtable=4096>)
setarrayitem_gc(p8, i7, {stored}, descr=<ArrayP 8>)
{call}finish(p8)
"
    );
    (original, optimized)
}

#[test]
fn fresh_objects_stored_at_a_variable_item_of_byte_memory_are_paired_by_role() {
    for call in [false, true] {
        let (original, optimized) = byte_item_role("p9", call);
        assert_valid(&original, &optimized);
        assert_optimizer_output_not_invalid(&original);
        let (original, wrong) = byte_item_role("ConstPtr(null)", call);
        assert_invalid(&original, &wrong);
    }
}

/// The original stores a fresh object into a field of `p1`, then writes through the result of
/// an elidable call; the optimized trace stores the object after the call (into the guard's
/// exit too). An elidable call reads its arguments and immutable memory only: through a
/// mutable field (`mutable`) it cannot reach the object, so its result is not the object and
/// the write does not change it; through an immutable field it may be.
fn store_past_elidable(mutable: bool) -> (String, String) {
    let field = if mutable {
        "<FieldP T.p 24>"
    } else {
        "<FieldP T.p 24 pure>"
    };
    let original = format!(
        "
[i0, p1]
p2 = new(descr=<SizeDescr 48>)
setfield_gc(p1, p2, descr={field})
p5 = call_r(268466320, i0, descr=<Callr 8 i EF=4>)
setfield_gc(p5, 7, descr=<FieldS T.a 8>)
guard_true(i0, descr=<Guard1>) [p1]
finish()
"
    );
    let optimized = format!(
        "
[i0, p1]
p5 = call_r(268466320, i0, descr=<Callr 8 i EF=4>)
setfield_gc(p5, 7, descr=<FieldS T.a 8>)
guard_true(i0, descr=<Guard1>) [p1] {{$0 = new(descr=<SizeDescr 48>); setfield_gc(p1, $0, descr={field})}}
p9 = new(descr=<SizeDescr 48>)
setfield_gc(p1, p9, descr={field})
finish()
"
    );
    (original, optimized)
}

#[test]
fn an_elidable_call_does_not_return_an_object_only_mutable_memory_holds() {
    let (original, optimized) = store_past_elidable(true);
    assert_valid(&original, &optimized);
    assert_optimizer_output_not_invalid(&original);
    let (original, optimized) = store_past_elidable(false);
    assert!(!verdict(&original, &optimized).is_valid());
}

// --- hints ----------------------------------------------------------------------------------

const EXACT_CLASS: &str = "
[p0]
record_exact_class(p0, 4096)
guard_nonnull_class(p0, 4096, descr=<Guard0>) []
guard_nonnull(p0, descr=<Guard1>) []
guard_class(p0, 8192, descr=<Guard2>) []
finish()
";

#[test]
fn record_exact_class_promises_class_and_nonnull() {
    let without_guards = "
[p0]
guard_class(p0, 8192, descr=<Guard2>) []
finish()
";
    assert_valid(EXACT_CLASS, without_guards);
    assert_optimizer_output_not_invalid(EXACT_CLASS);
}

#[test]
fn record_exact_class_promises_nothing_on_the_optimized_side() {
    // The guard against another class fails there: removing it is wrong.
    let wrong = "
[p0]
finish()
";
    assert_invalid(EXACT_CLASS, wrong);
    // A hint only the optimized trace has is not assumed.
    let original = "
[p0]
guard_nonnull(p0, descr=<Guard1>) []
finish()
";
    let hinted = "
[p0]
record_exact_class(p0, 4096)
finish()
";
    assert_invalid(original, hinted);
}

// --- reads that existed before an escape, and the writes of exits ---------------------------

/// The original escapes a fresh array by storing it into p0 (and takes the store back); the
/// item it then reads, through an array read from p1's field, is not from that array: the
/// array read from memory existed before the fresh one escaped.
const READ_BEFORE_ESCAPE: &str = "
[p0, p1]
p2 = new_array_clear(2, descr=<ArrayP 8>)
setarrayitem_gc(p2, 0, p1, descr=<ArrayP 8>)
setfield_gc(p0, p2, descr=<FieldP top 8>)
p3 = getfield_gc_r(p1, descr=<FieldP v 16>)
p4 = getarrayitem_gc_r(p3, 0, descr=<ArrayP 8>)
guard_nonnull(p4, descr=<Guard1>) []
setfield_gc(p0, ConstPtr(null), descr=<FieldP top 8>)
finish()
";

#[test]
fn a_reference_read_before_an_escape_is_not_the_escaped_object() {
    let original = type_based(READ_BEFORE_ESCAPE);
    let optimized = type_based(
        "
[p0, p1]
p3 = getfield_gc_r(p1, descr=<FieldP v 16>)
p4 = getarrayitem_gc_r(p3, 0, descr=<ArrayP 8>)
guard_nonnull(p4, descr=<Guard1>) [] {$0 = new_array_clear(2, descr=<ArrayP 8>) [0]: p1; setfield_gc(p0, $0, descr=<FieldP top 8>)}
setfield_gc(p0, ConstPtr(null), descr=<FieldP top 8>)
finish()
",
    );
    assert_valid(&original, &optimized);
    assert_optimizer_output_not_invalid(&original);
}

/// An object stored into p0 before a guard and overwritten after it: the optimized trace keeps
/// it virtual and its guard's exit stores it.
const STORED_ACROSS_A_GUARD: &str = "
[p0, i1]
p2 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
setfield_gc(p2, i1, descr=<FieldS T.f 8>)
p3 = getfield_gc_r(p0, descr=<FieldP E.top 16>)
setfield_gc(p0, p2, descr=<FieldP E.top 16>)
guard_true(i1, descr=<Guard1>) [p3]
setfield_gc(p0, p3, descr=<FieldP E.top 16>)
finish()
";

#[test]
fn the_writes_of_an_exit_must_leave_the_original_heap() {
    let original = type_based(STORED_ACROSS_A_GUARD);
    let with = |exit: &str| {
        type_based(&format!(
            "
[p0, i1]
p3 = getfield_gc_r(p0, descr=<FieldP E.top 16>)
guard_true(i1, descr=<Guard1>) [p3] {{$0 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>) <FieldS T.f 8>: {exit}}}
finish()
"
        ))
    };
    assert_valid(&original, &with("i1; setfield_gc(p0, $0, descr=<FieldP E.top 16>)"));
    // the stored object differs, is missing, or goes into another field
    assert_invalid(&original, &with("5; setfield_gc(p0, $0, descr=<FieldP E.top 16>)"));
    assert_invalid(&original, &with("i1"));
    assert_invalid(&original, &with("i1; setfield_gc(p0, $0, descr=<FieldP E.other 24>)"));
    assert_invalid(&original, &with("i1; setfield_gc(p0, p3, descr=<FieldP E.top 16>)"));
    assert_optimizer_output_not_invalid(&original);
}

#[test]
fn objects_of_different_classes_are_never_one_object() {
    // An instance of another class escaping in its place is another object, whatever the
    // order of escapes: a callee sees the class word.
    assert_invalid(
        "
[p0]
p1 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
i2 = call_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
finish(i2)",
        "
[p0]
p1 = new_with_vtable(descr=<SizeDescr 32>)
setfield_gc(p0, p1, descr=<FieldP EC.topframeref 16>)
i2 = call_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
finish(i2)",
    );
}

#[test]
fn a_new_struct_may_leave_a_zero_field_unwritten() {
    // Its memory is zero: the optimizer does not write zero fields of an object it
    // materializes, though nothing reads them before a call sees the object.
    let original = "
[p0]
p1 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p1, 0, descr=<FieldS T.a 8>)
setfield_gc(p1, ConstPtr(null), descr=<FieldP T.p 16>)
setfield_gc(p0, p1, descr=<FieldP E.top 16>)
i2 = call_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
finish(i2)";
    let with = |fields: &str| {
        format!(
            "
[p0]
p1 = new_with_vtable(descr=<SizeDescr 24>)
{fields}
setfield_gc(p0, p1, descr=<FieldP E.top 16>)
i2 = call_i(ConstClass(f), 1, descr=<Calli 8 i EF=7>)
finish(i2)"
        )
    };
    assert_valid(original, &with(""));
    assert_invalid(original, &with("setfield_gc(p1, 1, descr=<FieldS T.a 8>)"));
    assert_invalid(original, &with("setfield_gc(p1, p0, descr=<FieldP T.p 16>)"));
    assert_optimizer_output_not_invalid(original);
}

#[test]
fn byte_offset_accesses_meet_the_fields_they_overlap() {
    // `gc_store`/`gc_load` address bytes: a field read after a store at its offset sees the
    // stored value; a store that is dropped, or one at another offset, is a difference.
    let original = "
[p0, i1]
gc_store(p0, 8, i1, 8)
i2 = getfield_gc_i(p0, descr=<FieldS T.a 8>)
i3 = gc_load_i(p0, 8, -2)
finish(i2, i3)";
    assert_valid(
        original,
        "
[p0, i1]
gc_store(p0, 8, i1, 8)
i3 = int_signext(i1, 2)
finish(i1, i3)",
    );
    assert_invalid(original, "[p0, i1]\ni3 = int_signext(i1, 2)\nfinish(i1, i3)");
    assert_invalid(
        original,
        "
[p0, i1]
gc_store(p0, 16, i1, 8)
i3 = int_signext(i1, 2)
finish(i1, i3)",
    );
    assert_optimizer_output_not_invalid(original);
}

#[test]
fn record_exact_value_is_assumed_on_the_original() {
    let original = "
[i0]
record_exact_value_i(i0, 7)
i1 = int_add(i0, 1)
finish(i1)";
    assert_valid(original, "[i0]\nfinish(8)");
    assert_invalid(original, "[i0]\nfinish(9)");
    assert_optimizer_output_not_invalid(original);
}

#[test]
fn an_object_holding_itself_is_compared_through_its_field() {
    // Under byte views `T.c` reads a byte of `T.q`; the object holds itself in `T.q` and is
    // stored by a guard's exit in the optimized trace. Its bytes there are those of the
    // reference, compared as `T.q`.
    let original = "
[p2, i3]
p10 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p2, p10, descr=<FieldP T.inst_p 24>)
setfield_gc(p10, p10, descr=<FieldP T.q 16>)
i4 = getfield_gc_i(p2, descr=<FieldU T.c 20 size=1>)
guard_true(i3, descr=<Guard1>) [i4]
finish()";
    let with = |q: &str| {
        format!(
            "
[p2, i3]
i4 = getfield_gc_i(p2, descr=<FieldU T.c 20 size=1>)
guard_true(i3, descr=<Guard1>) [i4] {{$0 = new_with_vtable(descr=<SizeDescr 24>) <FieldP T.q 16>: {q}; setfield_gc(p2, $0, descr=<FieldP T.inst_p 24>)}}
p10 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p10, p10, descr=<FieldP T.q 16>)
setfield_gc(p2, p10, descr=<FieldP T.inst_p 24>)
finish()"
        )
    };
    assert_valid(original, &with("$0"));
    assert_invalid(original, &with("p2"));
    assert_optimizer_output_not_invalid(original);
}

/// A fresh object stored into a field and overwritten there before anything reads it
/// escapes in the original only (the optimized trace drops the dead store); the objects that
/// escape on both sides are paired by the field the survivor sits in, although that field
/// holds the third object when the two inputs are one object (the third is the same object
/// on both sides, so the survivor is the one each side's value holds besides it).
fn dead_store_of_a_fresh_object(exit_stores: &str) -> (String, String) {
    let original = "
[i0, p1, p2]
p4 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p2, p4, descr=<FieldP T.inst_p 24>)
p10 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p2, p10, descr=<FieldP T.inst_p 24>)
p14 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p1, p14, descr=<FieldP T.inst_p 24>)
guard_true(i0, descr=<Guard2>) [p1]
finish()
"
    .to_string();
    let optimized = format!(
        "
[i0, p1, p2]
p3 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p2, p3, descr=<FieldP T.inst_p 24>)
guard_true(i0, descr=<Guard2>) [p1] {{$0 = new_with_vtable(descr=<SizeDescr 24>); setfield_gc({exit_stores}, $0, descr=<FieldP T.inst_p 24>)}}
p6 = new_with_vtable(descr=<SizeDescr 24>)
setfield_gc(p1, p6, descr=<FieldP T.inst_p 24>)
finish()
"
    );
    (original, optimized)
}

#[test]
fn an_object_whose_store_is_overwritten_escapes_in_the_original_only() {
    let (original, optimized) = dead_store_of_a_fresh_object("p1");
    assert_valid(&original, &optimized);
    assert_optimizer_output_not_invalid(&original);
    // The exit stores its object into the wrong input.
    let (original, wrong) = dead_store_of_a_fresh_object("p2");
    assert_invalid(&original, &wrong);
}
