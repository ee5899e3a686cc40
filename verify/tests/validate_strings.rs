//! Translation validation of string ops: strings the trace allocates are tracked with their
//! characters (stored as their low byte, or 4 bytes for unicode, zero where unwritten), so
//! that virtual strings, the characters forwarded from them, copies between them and their
//! resume data are proved, and wrong variants are not.

mod common;

use common::{assert_invalid, assert_optimizer_output_not_invalid, assert_valid};

const BUILT: &str = "[i0]
     p1 = newstr(3)
     strsetitem(p1, 0, i0)
     strsetitem(p1, 1, 98)
     i2 = strgetitem(p1, 0)
     i3 = strgetitem(p1, 1)
     i4 = strgetitem(p1, 2)
     i5 = strlen(p1)
     finish(i2, i3, i4, i5)";

#[test]
fn characters_read_back_from_a_string_the_trace_built() {
    assert_valid(
        BUILT,
        "[i0]
         i1 = int_and(i0, 255)
         finish(i1, 98, 0, 3)",
    );
    // The whole value instead of its low byte, a wrong character, a wrong length.
    for wrong in [
        "[i0]\nfinish(i0, 98, 0, 3)",
        "[i0]\ni1 = int_and(i0, 255)\nfinish(i1, 99, 0, 3)",
        "[i0]\ni1 = int_and(i0, 255)\nfinish(i1, 98, 1, 3)",
        "[i0]\ni1 = int_and(i0, 255)\nfinish(i1, 98, 0, 2)",
    ] {
        assert_invalid(BUILT, wrong);
    }
}

#[test]
fn unicode_characters_keep_four_bytes() {
    let orig = "[i0]
         p1 = newunicode(1)
         unicodesetitem(p1, 0, i0)
         i2 = unicodegetitem(p1, 0)
         finish(i2)";
    assert_valid(orig, "[i0]\ni1 = int_and(i0, 4294967295)\nfinish(i1)");
    assert_invalid(orig, "[i0]\ni1 = int_and(i0, 255)\nfinish(i1)");
}

#[test]
fn a_copy_between_strings_moves_their_characters() {
    let orig = "[p0, i1]
         p2 = newstr(2)
         strsetitem(p2, 0, i1)
         strsetitem(p2, 1, 120)
         p3 = newstr(3)
         copystrcontent(p2, p3, 0, 1, 2)
         setfield_gc(p0, p3, descr=<FieldP s 8>)
         finish()";
    assert_valid(
        orig,
        "[p0, i1]
         p3 = newstr(3)
         strsetitem(p3, 1, i1)
         strsetitem(p3, 2, 120)
         setfield_gc(p0, p3, descr=<FieldP s 8>)
         finish()",
    );
    // Copied one place off.
    assert_invalid(
        orig,
        "[p0, i1]
         p3 = newstr(3)
         strsetitem(p3, 0, i1)
         strsetitem(p3, 1, 120)
         setfield_gc(p0, p3, descr=<FieldP s 8>)
         finish()",
    );
    assert_optimizer_output_not_invalid(orig);
}

#[test]
fn a_virtual_string_in_resume_data_is_the_string_the_original_built() {
    let orig = "[i0, i1]
         p2 = newstr(2)
         strsetitem(p2, 1, i0)
         guard_true(i1, descr=<Guard0>) [p2]
         finish()";
    assert_valid(
        orig,
        "[i0, i1]
         guard_true(i1, descr=<Guard0>) [$0] {$0 = newstr(2) [1]: i0}
         finish()",
    );
    for wrong in [
        "{$0 = newstr(2) [0]: i0}",
        "{$0 = newstr(3) [1]: i0}",
        "{$0 = newunicode(2) [1]: i0}",
        "{$0 = newstr(2) [1]: i0, [0]: 1}",
    ] {
        assert_invalid(
            orig,
            &format!("[i0, i1]\nguard_true(i1, descr=<Guard0>) [$0] {wrong}\nfinish()"),
        );
    }
}

#[test]
fn characters_of_strings_the_trace_did_not_allocate_are_memory() {
    // A string from outside: its characters are memory (a byte each, as read), written
    // and read back through the same place.
    let orig = "[p0, i1]
         strsetitem(p0, 2, i1)
         i2 = strgetitem(p0, 2)
         i3 = strgetitem(p0, 3)
         finish(i2, i3)";
    assert_valid(
        orig,
        "[p0, i1]
         strsetitem(p0, 2, i1)
         i2 = int_and(i1, 255)
         i3 = strgetitem(p0, 3)
         finish(i2, i3)",
    );
    assert_invalid(
        orig,
        "[p0, i1]
         strsetitem(p0, 2, i1)
         i3 = strgetitem(p0, 3)
         finish(i1, i3)",
    );
}

#[test]
fn a_string_stored_by_a_guards_exit_is_the_string_the_original_stored() {
    // The optimizer delays the store of a virtual string past the guard into its exit.
    let orig = "[i0, p1, i3]
         p2 = newstr(2)
         strsetitem(p2, 0, i0)
         setfield_gc(p1, p2, descr=<FieldP s 8>)
         guard_true(i3, descr=<Guard0>) []
         finish()";
    assert_valid(
        orig,
        "[i0, p1, i3]
         guard_true(i3, descr=<Guard0>) [] {$0 = newstr(2) [0]: i0; setfield_gc(p1, $0, descr=<FieldP s 8>)}
         p2 = newstr(2)
         strsetitem(p2, 0, i0)
         setfield_gc(p1, p2, descr=<FieldP s 8>)
         finish()",
    );
    assert_invalid(
        orig,
        "[i0, p1, i3]
         guard_true(i3, descr=<Guard0>) [] {$0 = newstr(2) [1]: i0; setfield_gc(p1, $0, descr=<FieldP s 8>)}
         p2 = newstr(2)
         strsetitem(p2, 0, i0)
         setfield_gc(p1, p2, descr=<FieldP s 8>)
         finish()",
    );
    assert_optimizer_output_not_invalid(orig);
}
