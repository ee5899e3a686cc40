//! Virtual strings: `newstr`/`newunicode` of a constant length, their characters, lengths
//! and copies, materialization and resume data.

use super::*;

#[test]
fn a_string_built_and_read_back_is_never_allocated() {
    check(
        "[i0]
         p1 = newstr(3)
         strsetitem(p1, 0, 104)
         strsetitem(p1, 1, 105)
         i2 = strlen(p1)
         i3 = strgetitem(p1, 1)
         i4 = strgetitem(p1, 2)
         finish(i2, i3, i4)",
        "[i0]
         finish(3, 105, 0)",
    );
}

#[test]
fn a_character_read_back_keeps_only_its_low_byte() {
    // `strsetitem` stores the low byte (a unicode string: 4 bytes) of what it is given.
    check(
        "[i0, i1]
         p1 = newstr(2)
         strsetitem(p1, 0, i0)
         strsetitem(p1, 1, 300)
         i2 = strgetitem(p1, 0)
         i3 = strgetitem(p1, 1)
         p4 = newunicode(1)
         unicodesetitem(p4, 0, i1)
         i5 = unicodegetitem(p4, 0)
         finish(i2, i3, i5)",
        "[i0, i1]
         i2 = int_and(i0, 255)
         i3 = int_and(i1, 4294967295)
         finish(i2, 44, i3)",
    );
}

#[test]
fn a_character_known_to_fit_is_read_back_as_is() {
    check(
        "[i0]
         i1 = int_and(i0, 127)
         p2 = newstr(1)
         strsetitem(p2, 0, i1)
         i3 = strgetitem(p2, 0)
         finish(i3)",
        "[i0]
         i1 = int_and(i0, 127)
         finish(i1)",
    );
}

#[test]
fn a_copy_between_virtual_strings_moves_characters() {
    check(
        "[i0]
         p1 = newstr(3)
         strsetitem(p1, 0, 97)
         strsetitem(p1, 1, i0)
         p2 = newstr(4)
         copystrcontent(p1, p2, 0, 1, 3)
         i3 = strgetitem(p2, 0)
         i4 = strgetitem(p2, 1)
         i5 = strgetitem(p2, 2)
         i6 = strlen(p2)
         finish(i3, i4, i5, i6)",
        "[i0]
         i1 = int_and(i0, 255)
         finish(0, 97, i1, 4)",
    );
}

#[test]
fn an_escaping_string_is_materialized_with_its_characters() {
    check(
        "[p0, i1]
         p2 = newstr(2)
         strsetitem(p2, 0, i1)
         strsetitem(p2, 1, 98)
         setfield_gc(p0, p2, descr=<FieldP s 8>)
         finish()",
        "[p0, i1]
         p2 = newstr(2)
         strsetitem(p2, 0, i1)
         strsetitem(p2, 1, 98)
         setfield_gc(p0, p2, descr=<FieldP s 8>)
         finish()",
    );
}

#[test]
fn a_virtual_string_at_a_guard_goes_into_its_resume_data() {
    check(
        "[i0, i1]
         p2 = newunicode(2)
         unicodesetitem(p2, 1, i0)
         guard_true(i1, descr=<Guard0>) [p2]
         finish()",
        "[i0, i1]
         guard_true(i1, descr=<Guard0>) [$0] {$0 = newunicode(2) [1]: i0}
         finish()",
    );
}

#[test]
fn strings_of_unknown_length_or_index_stay() {
    check(
        "[i0, i1]
         p2 = newstr(i0)
         strsetitem(p2, 0, 97)
         p3 = newstr(2)
         strsetitem(p3, i1, 98)
         i4 = strgetitem(p3, 0)
         finish(i4)",
        "[i0, i1]
         p2 = newstr(i0)
         strsetitem(p2, 0, 97)
         p3 = newstr(2)
         strsetitem(p3, i1, 98)
         i4 = strgetitem(p3, 0)
         finish(i4)",
    );
}

#[test]
fn an_index_past_the_end_is_left_to_fail_as_written() {
    // The original's `strgetitem` is an invalid operation; the optimized trace keeps it.
    check(
        "[i0]
         p1 = newstr(1)
         i2 = strgetitem(p1, 5)
         finish(i2)",
        "[i0]
         p1 = newstr(1)
         i2 = strgetitem(p1, 5)
         finish(i2)",
    );
}

#[test]
fn a_strings_length_is_read_once() {
    // A length never changes: the allocation's, or the first read's, serves every later
    // read, calls in between included.
    check(
        "[i0, p1]
         p2 = newstr(i0)
         i3 = strlen(p2)
         i4 = strlen(p1)
         call_n(ConstClass(f), p1, descr=<Callv 0 r EF=5>)
         i5 = strlen(p1)
         i6 = int_add(i3, i5)
         finish(i6, i4)",
        "[i0, p1]
         p2 = newstr(i0)
         i4 = strlen(p1)
         call_n(ConstClass(f), p1, descr=<Callv 0 r EF=5>)
         i6 = int_add(i0, i4)
         finish(i6, i4)",
    );
}

#[test]
fn string_writes_leave_fields_known_under_type_based_aliasing() {
    // Under type-based aliasing a string op touches only bytes string ops wrote: the heap
    // keeps the field across `strsetitem`, and the field's store waits past it.
    check(
        "aliasing type-based
         [p0, p1, i2]
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         strsetitem(p1, 0, 65)
         i3 = getfield_gc_i(p0, descr=<FieldS a 8>)
         setfield_gc(p0, 7, descr=<FieldS a 8>)
         finish(i3)",
        "aliasing type-based
         [p0, p1, i2]
         strsetitem(p1, 0, 65)
         setfield_gc(p0, 7, descr=<FieldS a 8>)
         finish(i2)",
    );
    // Under byte views a field may read a string's characters: the field is read again.
    check(
        "[p0, p1, i2]
         setfield_gc(p0, i2, descr=<FieldS a 16>)
         strsetitem(p1, 0, 65)
         i3 = getfield_gc_i(p0, descr=<FieldS a 16>)
         finish(i3)",
        "[p0, p1, i2]
         setfield_gc(p0, i2, descr=<FieldS a 16>)
         strsetitem(p1, 0, 65)
         i3 = getfield_gc_i(p0, descr=<FieldS a 16>)
         finish(i3)",
    );
}
