//! Loops: labels, peeling, and what crosses the back edge.

use super::*;

#[test]
fn label_parameters_start_without_knowledge() {
    check(
        "[i0]
         i1 = int_and(i0, 7)
         i9 = int_lt(i1, 8)
         guard_true(i9, descr=<Guard1>) [i0]
         label(i1, descr=TargetToken(1))
         i3 = int_lt(i1, 8)
         guard_true(i3, descr=<Guard2>) [i1]
         i4 = int_add(i1, 1)
         jump(i4, descr=TargetToken(1))",
        "[i0]
         i1 = int_and(i0, 7)
         label(i1, descr=TargetToken(1))
         i3 = int_lt(i1, 8)
         guard_true(i3, descr=<Guard2>) [i1]
         i4 = int_add(i1, 1)
         jump(i4, descr=TargetToken(1))",
    );
}

/// With peeling, the first iteration's guard on a loop-invariant value (`base & 7 == 0`,
/// after `(base + 24 * i) & 7` became `base & 7`) holds in the loop body: the copy is gone.
/// A guard on the loop-carried `i` stays. The copied guards get the next free ids and keep
/// their original's resume key.
#[test]
fn peeling_removes_a_loop_invariant_guard() {
    check_with(
        "[i0, i1, i2]
         label(i0, i1, i2, descr=TargetToken(1))
         i3 = int_lt(i2, i0)
         guard_true(i3, descr=<Guard1>) [i2]
         i4 = int_mul(i2, 24)
         i5 = int_add(i1, i4)
         i6 = int_and(i5, 7)
         i7 = int_is_true(i6)
         guard_false(i7, descr=<Guard2>) [i2]
         i8 = int_add(i2, 1)
         jump(i0, i1, i8, descr=TargetToken(1))",
        "[i0, i1, i2]
         label(i0, i1, i2, descr=TargetToken(1))
         i7 = int_lt(i2, i0)
         guard_true(i7, descr=<Guard1>) [i2]
         i9 = int_and(i1, 7)
         guard_false(i9, descr=<Guard2>) [i2]
         i11 = int_add(i2, 1)
         label(i0, i1, i11, descr=TargetToken(4611686018427387905))
         i16 = int_lt(i11, i0)
         guard_true(i16, descr=<Guard3 key=1>) [i11]
         i18 = int_add(i11, 1)
         jump(i0, i1, i18, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    // Without peeling the guard stays in the loop: the output is the input.
    let unchanged = "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i2 = int_and(i0, 7)
         guard_false(i2, descr=<Guard1>) [i1]
         i4 = int_add(i1, 1)
         jump(i0, i4, descr=TargetToken(1))";
    let out = check_with(unchanged, unchanged, &Options::default());
    assert_eq!(out.stats.removed(optimizer::Reason::GuardKnown), 0);
}

/// A loop-carried accumulator masked on the back edge (`s = (s + x) & 0xffffff`) is in
/// `[0, 0xffffff]` at the loop header once the peeled iteration has masked it on entry: the
/// body adds a byte to it without an overflow check. The peeled iteration keeps its check
/// (`s` is arbitrary on entry).
#[test]
fn peeling_drops_the_overflow_check_of_a_masked_accumulator() {
    check_with(
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i2 = int_and(i1, 255)
         i3 = int_add_ovf(i0, i2)
         guard_no_overflow(descr=<Guard1>) [i0]
         i4 = int_and(i3, 16777215)
         jump(i4, i1, descr=TargetToken(1))",
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i5 = int_and(i1, 255)
         i6 = int_add_ovf(i0, i5)
         guard_no_overflow(descr=<Guard1>) [i0]
         i8 = int_and(i6, 16777215)
         label(i8, i1, i5, descr=TargetToken(4611686018427387905))
         i13 = int_add(i8, i5)
         i14 = int_and(i13, 16777215)
         jump(i14, i1, i5, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    // A mask wider than the sum can stay below keeps the check: `x` may be any integer.
    check_with(
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i3 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i4 = int_and(i3, 16777215)
         jump(i4, i1, descr=TargetToken(1))",
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1)) -> [i2, i3]
         i5 = int_add_ovf(i2, i3)
         guard_no_overflow(descr=<Guard1>) [i2]
         i6 = int_and(i5, 16777215)
         label(i6, i3, descr=TargetToken(4611686018427387905)) -> [i7, i8]
         i10 = int_add_ovf(i7, i8)
         guard_no_overflow(descr=<Guard2 key=1>) [i7]
         i11 = int_and(i10, 16777215)
         jump(i11, i8, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
}

/// A parameter the jump does not pass back unchanged is not invariant: what the peeled
/// iteration learnt about it does not carry into the loop.
#[test]
fn peeling_keeps_guards_on_loop_carried_values() {
    let out = check_with(
        "[i0, i1]
         label(i0, i1)
         i2 = int_and(i0, 7)
         i3 = int_is_true(i2)
         guard_false(i3, descr=<Guard1>) [i1]
         i4 = int_add(i0, 1)
         jump(i4, i1)",
        "[i0, i1]
         label(i0, i1)
         i5 = int_and(i0, 7)
         guard_false(i5, descr=<Guard1>) [i1]
         i7 = int_add(i0, 1)
         label(i7, i1)
         i11 = int_and(i7, 7)
         guard_false(i11, descr=<Guard2 key=1>) [i1]
         i13 = int_add(i7, 1)
         jump(i13, i1)",
        &peel(),
    );
    assert_eq!(out.stats.removed(optimizer::Reason::GuardKnown), 0);
}

#[test]
fn virtuals_reaching_a_label_are_materialized() {
    let out = check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         label(p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = int_add(i2, 1)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = int_lt(i3, 100)
         guard_true(i4, descr=<Guard1>) [p1]
         jump(p1, descr=TargetToken(1))",
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         label(p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = int_add(i2, 1)
         i4 = int_lt(i3, 100)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         guard_true(i4, descr=<Guard1>) [p1]
         jump(p1, descr=TargetToken(1))",
    );
    assert_eq!(out.stats.virtuals_materialized, 1);
}

#[test]
fn loop_body_virtuals_are_removed() {
    // a box allocated and consumed inside the body never exists
    let src = "[i0]
         label(i0, descr=TargetToken(1))
         p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         setfield_gc(p1, i0, descr=<FieldS v 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS v 8>)
         i3 = int_add(i2, 1)
         i4 = int_lt(i3, 10)
         guard_true(i4, descr=<Guard1>) [i3, p1]
         jump(i3, descr=TargetToken(1))";
    let out = check(
        src,
        "[i0]
         label(i0, descr=TargetToken(1))
         i3 = int_add(i0, 1)
         i4 = int_lt(i3, 10)
         guard_true(i4, descr=<Guard1>) [i3, $0] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>) <FieldS v 8>: i0}
         jump(i3, descr=TargetToken(1))",
    );
    let t = parse(src);
    for i in [-5i64, 0, 9, 10] {
        assert!(same_behaviour(&t, &out.trace, &[RtValue::Int(i)]).unwrap());
    }
}

/// With peeling, an object the loop makes for its next iteration (a boxed running sum) is
/// not allocated: the body label takes its field as a parameter of its own (a null stands
/// in the object's parameter), the body's object stays virtual, and the guard's exit
/// rebuilds it from that parameter.
#[test]
fn peeling_keeps_an_object_passed_to_the_next_iteration_virtual() {
    let out = check_with(
        "[i0, p1]
         label(i0, p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
         i3 = int_add(i2, i0)
         i4 = int_lt(i3, 100)
         guard_true(i4, descr=<Guard1>) [i0, p1]
         p5 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p5, i3, descr=<FieldS T.v 8>)
         jump(i0, p5, descr=TargetToken(1))",
        "[i0, p1]
         label(i0, p1, descr=TargetToken(1))
         i5 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
         i6 = int_add(i5, i0)
         i7 = int_lt(i6, 100)
         guard_true(i7, descr=<Guard1>) [i0, p1]
         label(i0, ConstPtr(null), i6, descr=TargetToken(4611686018427387905)) -> [i10, p11, i12]
         i13 = int_add(i12, i10)
         i14 = int_lt(i13, 100)
         guard_true(i14, descr=<Guard2 key=1>) [i10, $0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS T.v 8>: i12}
         jump(i10, ConstPtr(null), i13, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert_eq!(out.carried_virtuals.len(), 1);
    assert_eq!(out.carried_virtuals[0].param, 1);
}

/// The object the body passes on escapes first (stored into the input object): the label
/// cannot take it field by field, and the loop allocates it in every iteration.
#[test]
fn an_object_that_escapes_in_the_body_is_allocated() {
    let out = check_with(
        "[i0, p1]
         label(i0, p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
         i3 = int_add(i2, i0)
         i4 = int_lt(i3, 100)
         guard_true(i4, descr=<Guard1>) [i0, p1]
         p5 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p5, i3, descr=<FieldS T.v 8>)
         setfield_gc(p1, p5, descr=<FieldP T.next 16>)
         jump(i0, p5, descr=TargetToken(1))",
        "[i0, p1]
         label(i0, p1, descr=TargetToken(1))
         i5 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
         i6 = int_add(i5, i0)
         i7 = int_lt(i6, 100)
         guard_true(i7, descr=<Guard1>) [i0, p1]
         p9 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p9, i6, descr=<FieldS T.v 8>)
         setfield_gc(p1, p9, descr=<FieldP T.next 16>)
         label(i0, p9, i6, descr=TargetToken(4611686018427387905))
         i16 = int_add(i6, i0)
         i17 = int_lt(i16, 100)
         guard_true(i17, descr=<Guard2 key=1>) [i0, p9]
         p19 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p19, i16, descr=<FieldS T.v 8>)
         setfield_gc(p9, p19, descr=<FieldP T.next 16>)
         jump(i0, p19, i16, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    assert!(out.carried_virtuals.is_empty());
}

/// With peeling, a pure op on loop-invariant operands (`i1 * 24`) is computed once, in the
/// peeled iteration, and the body label carries its result (loop-invariant code motion);
/// the loop's own jump passes it back, and a bridge entering the body computes it itself
/// ([`trace_ir::CarriedPure`]), so the body stays enterable, with or without carried loads.
#[test]
fn peeling_computes_pure_ops_on_invariant_operands_once() {
    let input = "[p0, i1, i2]
         label(p0, i1, i2, descr=TargetToken(1))
         i3 = getfield_gc_i(p0, descr=<FieldS T.n 8>)
         i4 = int_lt(i2, i3)
         guard_true(i4, descr=<Guard1>) [i2]
         i5 = int_mul(i1, 24)
         i6 = int_add(i5, i2)
         jump(p0, i1, i6, descr=TargetToken(1))";
    let expected = "[p0, i1, i2]
         label(p0, i1, i2, descr=TargetToken(1))
         i7 = getfield_gc_i(p0, descr=<FieldS T.n 8>)
         i8 = int_lt(i2, i7)
         guard_true(i8, descr=<Guard1>) [i2]
         i10 = int_mul(i1, 24)
         i11 = int_add(i10, i2)
         label(p0, i1, i11, i7, i10, descr=TargetToken(4611686018427387905))
         i18 = int_lt(i11, i7)
         guard_true(i18, descr=<Guard2 key=1>) [i11]
         i20 = int_add(i10, i11)
         jump(p0, i1, i20, i7, i10, descr=TargetToken(4611686018427387905))";
    let out = check_with(input, expected, &peel());
    assert_eq!(out.carried.len(), 1);
    let times_24 = trace_ir::CarriedPure {
        param: 4,
        opcode: trace_ir::Opcode::IntMul,
        args: vec![
            trace_ir::CarriedBase::Param(1),
            trace_ir::CarriedBase::Const(trace_ir::Const::Int(24)),
        ],
        // A multiple of 8, as a bridge computing it knows too.
        facts: trace_ir::WordFacts {
            range: Some((i64::MIN, i64::MAX - 7)),
            bits: Some((7, 0)),
            ..trace_ir::WordFacts::default()
        },
    };
    assert_eq!(out.carried_pure, vec![times_24.clone()]);
    assert_eq!(out.body_entries.len(), 1);
    assert_eq!(out.body_entries[0].carried_pure, vec![times_24]);
    assert_eq!(out.body_entries[0].arity(), 5);
    // Without a carried load: `i1 + 100` is carried too, and the loop is the same.
    let load = "getfield_gc_i(p0, descr=<FieldS T.n 8>)";
    let plain = check_with(
        &input.replace(load, "int_add(i1, 100)"),
        &expected.replace(load, "int_add(i1, 100)"),
        &peel(),
    );
    assert!(plain.carried.is_empty());
    let ops: Vec<_> = plain.carried_pure.iter().map(|c| (c.param, c.opcode)).collect();
    assert_eq!(ops, [(3, trace_ir::Opcode::IntAdd), (4, trace_ir::Opcode::IntMul)]);
    assert_eq!(plain.body_entries.len(), 1);
}

#[test]
fn an_immutable_field_of_a_constant_holds_in_every_iteration() {
    // What a constant's immutable field holds (here promised before the loop) holds in every
    // iteration: the peeled body reads and checks it no more than the preamble does. A
    // mutable field of it is read again.
    let input = "
[i0]
record_known_field(ConstPtr(code), ConstPtr(name), descr=<FieldP Code.co_name 8 pure>)
label(i0, descr=TargetToken(3)) -> [i1]
p2 = getfield_gc_r(ConstPtr(code), descr=<FieldP Code.co_name 8 pure>)
guard_value(p2, ConstPtr(name), descr=<Guard1>) [i1]
i3 = getfield_gc_i(ConstPtr(code), descr=<FieldS Code.count 16>)
i4 = int_add(i1, i3)
jump(i4, descr=TargetToken(3))
";
    let out = check_with(
        input,
        "
[i0]
record_known_field(ConstPtr(code), ConstPtr(name), descr=<FieldP Code.co_name 8 pure>)
label(i0, descr=TargetToken(3)) -> [i1]
i3 = getfield_gc_i(ConstPtr(code), descr=<FieldS Code.count 16>)
i4 = int_add(i1, i3)
label(i4, descr=TargetToken(4611686018427387907)) -> [i5]
i6 = getfield_gc_i(ConstPtr(code), descr=<FieldS Code.count 16>)
i7 = int_add(i5, i6)
jump(i7, descr=TargetToken(4611686018427387907))
",
        &peel(),
    );
    assert!(out.trace.guards.is_empty());
}

#[test]
fn an_immutable_field_read_before_the_label_holds_in_every_iteration() {
    // An object defined before the loop's label is the same object in every iteration, so
    // what its immutable field held before the label it holds in every iteration.
    check(
        "
[p0, i0]
p1 = getfield_gc_r(p0, descr=<FieldP ec 8 pure>)
p2 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
guard_isnull(p2, descr=<Guard1>) [i0]
label(i0, descr=TargetToken(5)) -> [i3]
p4 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
guard_isnull(p4, descr=<Guard2>) [i3]
i5 = int_add(i3, 1)
jump(i5, descr=TargetToken(5))
",
        "
[p0, i0]
p1 = getfield_gc_r(p0, descr=<FieldP ec 8 pure>)
p2 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
guard_isnull(p2, descr=<Guard1>) [i0]
label(i0, descr=TargetToken(5)) -> [i3]
i5 = int_add(i3, 1)
jump(i5, descr=TargetToken(5))
",
    );
}
