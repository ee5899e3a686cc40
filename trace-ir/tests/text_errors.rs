//! Malformed input: one test per kind of mistake, each checking the message and where it
//! points (line and column).

use trace_ir::text::{parse_file, parse_trace};

fn error(text: &str) -> String {
    match parse_trace(text) {
        Ok(t) => panic!("parsed a bad trace:\n{text}\n{t}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unknown_op() {
    assert_eq!(
        error("[i0]\ni1 = int_frobnicate(i0, 1)\nfinish(i1)\n"),
        "line 2, column 6: unknown operation `int_frobnicate`"
    );
}

#[test]
fn wrong_arity() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0)\nfinish(i1)\n"),
        "line 2, column 6: `int_add` takes 2 operand(s), got 1"
    );
    assert_eq!(
        error("[i0]\ncall_n(descr=<Callv 0 EF=2>)\nfinish(i0)\n"),
        "line 2, column 1: `call_n` takes at least 1 operand(s), got 0"
    );
}

#[test]
fn use_before_definition() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, i2)\ni2 = int_add(i0, 1)\nfinish(i1)\n"),
        "line 2, column 18: use of undefined value `i2`"
    );
    assert_eq!(
        error("[i0]\nfinish(p7)\n"),
        "line 2, column 8: use of undefined value `p7`"
    );
}

#[test]
fn kind_mismatch() {
    assert_eq!(
        error("[i0, p1]\ni2 = int_add(i0, p1)\nfinish(i2)\n"),
        "line 2, column 18: kind mismatch: operand 2 of `int_add` must be an integer, got a reference"
    );
    assert_eq!(
        error("[i0]\np2 = int_add(i0, 1)\nfinish(p2)\n"),
        "line 2, column 1: kind mismatch: `p2` names a reference but `int_add` returns an integer"
    );
    assert_eq!(
        error("[i0, f1]\nguard_value(i0, f1, descr=<Guard0>) []\nfinish(i0)\n"),
        "line 2, column 1: invalid trace: guard_value compares values of different kinds"
    );
}

#[test]
fn truncated_line() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, 1\nfinish(i1)\n"),
        "line 2, column 19: unexpected end of line: expected `,` or `)` in the argument list"
    );
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, \nfinish(i1)\n"),
        "line 2, column 18: unexpected end of line: expected a value (a name like `i3` or a constant)"
    );
    assert_eq!(
        error("[i0]\ni1 = int_add\nfinish(i1)\n"),
        "line 2, column 13: truncated line: expected `(` after `int_add`"
    );
    assert_eq!(
        error("[i0, i1\nfinish(i0)\n"),
        "line 1, column 8: unexpected end of line: expected `,` or `]` in the input list"
    );
    assert_eq!(
        error("[i0]\nguard_true(i0, descr=<Guard0>) [i0\nfinish(i0)\n"),
        "line 2, column 35: unexpected end of line: expected `,` or `]` in the fail-argument list"
    );
}

#[test]
fn bad_descriptor() {
    assert_eq!(
        error("[p0]\ni1 = getfield_gc_i(p0, descr=<FieldS x>)\nfinish(i1)\n"),
        "line 2, column 30: bad descriptor: missing field offset"
    );
    assert_eq!(
        error("[p0]\ni1 = getfield_gc_i(p0, descr=<FieldS x 8\nfinish(i1)\n"),
        "line 2, column 30: bad descriptor: unterminated descriptor: missing `>`"
    );
    assert_eq!(
        error("[p0]\ni1 = getfield_gc_i(p0, descr=<ArrayS 8>)\nfinish(i1)\n"),
        "line 2, column 30: bad descriptor: `getfield_gc_i` needs a Field descriptor"
    );
    assert_eq!(
        error("[i0]\ni1 = call_i(1, i0, descr=<Calli 8 iq EF=0>)\nfinish(i1)\n"),
        "line 2, column 26: bad descriptor: bad argument kind `q` in a call descriptor (expected i, r or f)"
    );
    assert_eq!(
        error("[i0]\nguard_true(i0, descr=<Loop3>) []\nfinish(i0)\n"),
        "line 2, column 22: bad descriptor: a guard's descriptor must be `<GuardN>` or `<Guard0x...>`, found `<Loop3>`"
    );
    assert_eq!(
        error("[p0]\ni1 = getfield_gc_i(p0)\nfinish(i1)\n"),
        "line 2, column 6: `getfield_gc_i` needs a descriptor (`descr=<...>`)"
    );
}

#[test]
fn bad_constant() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, 12abc)\nfinish(i1)\n"),
        "line 2, column 18: bad constant `12abc`"
    );
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, 99999999999999999999)\nfinish(i1)\n"),
        "line 2, column 18: integer constant `99999999999999999999` does not fit in 64 bits"
    );
    assert_eq!(
        error("[p0]\ni1 = ptr_eq(p0, ConstPtr())\nfinish(i1)\n"),
        "line 2, column 26: expected a name or a number in `ConstPtr(...)`, found `)`"
    );
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, ConstFoo(1))\nfinish(i1)\n"),
        "line 2, column 18: unknown constant form `ConstFoo`"
    );
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, banana)\nfinish(i1)\n"),
        "line 2, column 18: expected a value, found `banana`"
    );
}

#[test]
fn constant_label_operand_without_arrow() {
    assert_eq!(
        error("[i0]\nlabel(i0, 5, descr=TargetToken(1))\njump(i0, 5, descr=TargetToken(1))\n"),
        "line 2, column 11: a constant label operand needs explicit parameter names: write `label(...) -> [names]`"
    );
    assert_eq!(
        error("[i0]\nlabel(i0, 5, descr=TargetToken(1)) -> [i1]\njump(i0, 5)\n"),
        "line 2, column 1: label has 2 operand(s) but 1 parameter name(s)"
    );
    assert_eq!(
        error("[i0]\nlabel(i0, descr=TargetToken(1)) -> [p1]\njump(p1)\n"),
        "line 2, column 37: kind mismatch: parameter `p1` names a reference but its operand is an integer"
    );
}

#[test]
fn duplicate_definition() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, 1)\ni1 = int_add(i0, 2)\nfinish(i1)\n"),
        "line 3, column 1: `i1` is already defined (on line 2)"
    );
    assert_eq!(
        error("[i0, i0]\nfinish(i0)\n"),
        "line 1, column 6: `i0` is already defined (on line 1)"
    );
    assert_eq!(
        error("[i0]\nguard_true(i0, descr=<Guard4>) []\nguard_true(i0, descr=<Guard4>) []\nfinish(i0)\n"),
        "line 3, column 1: duplicate guard id 4 (also on line 2)"
    );
}

#[test]
fn structure_errors() {
    assert_eq!(
        error("[i0]\ni1 = int_add(i0, 1)\n"),
        "line 2, column 1: the trace ends without a final `jump` or `finish`"
    );
    assert_eq!(
        error("[i0]\nfinish(i0)\ni1 = int_add(i0, 1)\n"),
        "line 3, column 1: text after the end of the trace (its final jump or finish)"
    );
    assert_eq!(error(""), "line 1, column 1: no trace in the input");
    assert_eq!(
        error("[i0]\ni1 = int_add_ovf(i0, 1)\nfinish(i1)\n"),
        "line 2, column 6: invalid trace: int_add_ovf must be followed by guard_no_overflow or guard_overflow"
    );
    assert_eq!(
        error("[i0]\nsetfield_gc(i0, 1, descr=<FieldS x 8>) trailing\nfinish(i0)\n"),
        "line 2, column 13: kind mismatch: operand 1 of `setfield_gc` must be a reference, got an integer"
    );
    assert_eq!(
        error("[p0]\nsetfield_gc(p0, 1, descr=<FieldS x 8>) trailing\nfinish(p0)\n"),
        "line 2, column 40: unexpected text after the operation"
    );
    assert_eq!(
        error("[p0]\ni1 = setfield_gc(p0, 1, descr=<FieldS x 8>)\nfinish(p0)\n"),
        "line 2, column 1: `setfield_gc` has no result to name"
    );
    assert_eq!(
        error("[i0]\nguard_true(i0, descr=<Guard0>) [$1] {$0 = new(descr=<SizeDescr 8>)}\nfinish(i0)\n"),
        "line 2, column 33: `$1` names a virtual object that is not described"
    );
}

#[test]
fn file_errors_name_the_absolute_line() {
    let log = "\
[1a] {jit-log-noopt
# Traced loop or bridge with 2 ops
[i0]
i1 = int_add(i0, 1)
finish(i1)
[1b] jit-log-noopt}
[1c] {jit-backend-dump
anything goes here
[1d] jit-backend-dump}
[1e] {jit-log-opt-loop
# Loop 0 (f) : loop with 2 ops
[i0]
+12: i1 = int_sub(i0, p9)
+20: finish(i1)
[1f] jit-log-opt-loop}
";
    let e = parse_file(log).unwrap_err();
    assert_eq!(e.to_string(), "line 13, column 23: use of undefined value `p9`");
    let unclosed = "[1a] {jit-log-noopt\n[i0]\nfinish(i0)\n";
    assert_eq!(
        parse_file(unclosed).unwrap_err().to_string(),
        "line 1, column 1: section `jit-log-noopt` is not closed"
    );
    let plain = "# first\n[i0]\nfinish(i0)\n\n# second\n[i0]\ni1 = int_add(i0, x)\nfinish(i1)\n";
    assert_eq!(
        parse_file(plain).unwrap_err().to_string(),
        "line 7, column 18: expected a value, found `x`"
    );
}
