//! Loops, the iteration limit, guard exits and the objects rebuilt at them.

use super::*;

pub(crate) fn sum_loop() -> Trace {
    let mut b = TraceBuilder::new();
    let n = b.input(Kind::Int);
    let zero = b.const_int(0);
    let p = b.label(&[zero, zero, n]);
    let (i, sum, n) = (p[0], p[1], p[2]);
    let lt = b.op(Opcode::IntLt, &[i, n]);
    b.guard(Opcode::GuardTrue, &[lt], &[sum, i], 42);
    let sum2 = b.op(Opcode::IntAdd, &[sum, i]);
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAdd, &[i, one]);
    b.jump(&[i2, sum2, n]);
    b.build().unwrap()
}

#[test]
fn label_jump_loop_sums() {
    let t = sum_loop();
    for n in [0i64, 1, 5, 100] {
        let r = go(&t, &ints(&[n]));
        let want = n * (n - 1) / 2;
        match &r.outcome {
            Outcome::GuardFailed {
                guard,
                resume_key,
                values,
            } => {
                assert_eq!(*guard, GuardId(0));
                assert_eq!(*resume_key, 42);
                assert_eq!(values, &ints(&[want, n.max(0)]));
            }
            other => panic!("{other}"),
        }
        assert_eq!(r.iterations, n.max(0) as u64);
    }
}

#[test]
fn jump_without_label_restarts_at_the_inputs() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    let acc = b.input(Kind::Int);
    let ten = b.const_int(10);
    let lt = b.op(Opcode::IntLt, &[i, ten]);
    b.guard(Opcode::GuardTrue, &[lt], &[i, acc], 0);
    let three = b.const_int(3);
    let acc2 = b.op(Opcode::IntMul, &[acc, three]);
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAdd, &[i, one]);
    b.jump(&[i2, acc2]);
    let t = b.build().unwrap();
    let r = go(&t, &ints(&[7, 1]));
    assert_eq!(r.outcome.values(), Some(&ints(&[10, 27])[..]));
    assert_eq!(r.iterations, 3);
}

#[test]
fn iteration_limit_stops_an_endless_loop() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAdd, &[i, one]);
    b.jump(&[i2]);
    let t = b.build().unwrap();
    let cfg = RunConfig {
        max_iterations: 50,
        ..RunConfig::default()
    };
    let r = run(&t, &ints(&[0]), &cfg);
    assert_eq!(r.outcome, Outcome::IterationLimit);
    assert_eq!(r.iterations, 51);
}

#[test]
fn guard_exit_values_holes_and_constants() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let f = b.input(Kind::Float);
    let y = b.op(Opcode::IntMul, &[x, x]);
    let c = b.const_int(-5);
    b.guard(Opcode::GuardFalse, &[x], &[y, c, x], 9);
    b.finish(&[]);
    let mut t = b.build().unwrap();
    t.guards[0].fail_args.push(FailArg::Hole);
    t.guards[0].fail_args.push(FailArg::Value(f));
    let r = go(&t, &[RtValue::Int(6), RtValue::float(2.5)]);
    assert_eq!(
        r.outcome,
        Outcome::GuardFailed {
            guard: GuardId(0),
            resume_key: 9,
            values: vec![
                RtValue::Int(36),
                RtValue::Int(-5),
                RtValue::Int(6),
                RtValue::Int(0),
                RtValue::float(2.5)
            ]
        }
    );
    assert!(matches!(
        go(&t, &[RtValue::Int(0), RtValue::float(0.0)]).outcome,
        Outcome::Finish(_)
    ));
}

/// The same structure twice: explicitly allocated by the trace (original), and described as
/// virtuals at the guard (optimized). Object A (instance) has int field = x and ref field ->
/// B; B (struct) has ref field -> A (a cycle) and int field 7; array C = [B, A].
/// The guard passes [A, C, A].
fn virtual_pair(int_in_b: i64) -> (Trace, Trace) {
    // Original.
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let sz = size(&mut b, 32);
    let fi = field(&mut b, "fi", 8, Kind::Int);
    let fr = field(&mut b, "fr", 16, Kind::Ref);
    let ar = array(&mut b, Kind::Ref);
    let pa = b.op_with_descr(Opcode::NewWithVtable, &[], sz);
    let pb = b.op_with_descr(Opcode::New, &[], sz);
    b.op_with_descr(Opcode::SetfieldGc, &[pa, x], fi);
    b.op_with_descr(Opcode::SetfieldGc, &[pa, pb], fr);
    b.op_with_descr(Opcode::SetfieldGc, &[pb, pa], fr);
    let seven = b.const_int(7);
    b.op_with_descr(Opcode::SetfieldGc, &[pb, seven], fi);
    let two = b.const_int(2);
    let pc = b.op_with_descr(Opcode::NewArray, &[two], ar);
    let zero = b.const_int(0);
    let one = b.const_int(1);
    b.op_with_descr(Opcode::SetarrayitemGc, &[pc, zero, pb], ar);
    b.op_with_descr(Opcode::SetarrayitemGc, &[pc, one, pa], ar);
    b.guard(Opcode::GuardFalse, &[x], &[pa, pc, pa], 5);
    b.finish(&[]);
    let orig = b.build().unwrap();

    // Optimized: no allocations; the guard describes them.
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let sz = size(&mut b, 32);
    let fi = field(&mut b, "fi", 8, Kind::Int);
    let fr = field(&mut b, "fr", 16, Kind::Ref);
    let ar = array(&mut b, Kind::Ref);
    let k = b.const_int(int_in_b);
    b.guard(Opcode::GuardFalse, &[x], &[], 5);
    b.finish(&[]);
    let mut opt = b.build().unwrap();
    let g = &mut opt.guards[0];
    g.virtuals = vec![
        VirtualObject {
            kind: VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr: sz,
            },
            fields: vec![
                (VirtualField::Field(fi), FailArg::Value(x)),
                (VirtualField::Field(fr), FailArg::Virtual(1)),
            ],
        },
        VirtualObject {
            kind: VirtualKind::Struct {
                opcode: Opcode::New,
                descr: sz,
            },
            fields: vec![
                (VirtualField::Field(fr), FailArg::Virtual(0)),
                (VirtualField::Field(fi), FailArg::Value(k)),
            ],
        },
        VirtualObject {
            kind: VirtualKind::Array {
                opcode: Opcode::NewArray,
                descr: ar,
                len: 2,
            },
            fields: vec![
                (VirtualField::Item(0), FailArg::Virtual(1)),
                (VirtualField::Item(1), FailArg::Virtual(0)),
            ],
        },
    ];
    g.fail_args = vec![FailArg::Virtual(0), FailArg::Virtual(2), FailArg::Virtual(0)];
    trace_ir::verify(&opt).unwrap();
    (orig, opt)
}

#[test]
fn virtuals_are_rebuilt_at_the_exit() {
    let (orig, opt) = virtual_pair(7);
    let r = go(&opt, &ints(&[3]));
    let Outcome::GuardFailed { values, .. } = &r.outcome else {
        panic!("{}", r.outcome)
    };
    let (RtValue::Ref(a), RtValue::Ref(c), RtValue::Ref(a2)) = (values[0], values[1], values[2]) else {
        panic!()
    };
    assert_eq!(a, a2, "one virtual is rebuilt once per exit");
    let oa = &r.heap.objects[&a];
    assert!(oa.rebuilt);
    assert_eq!(oa.class, 0x7000);
    let fields: Vec<RtValue> = oa.cells.values().filter(|c| !c.header).map(|c| c.value).collect();
    assert_eq!(fields[0], RtValue::Int(3));
    let RtValue::Ref(bb) = fields[1] else { panic!() };
    let ob = &r.heap.objects[&bb];
    assert_eq!(ob.class, 0);
    assert!(
        ob.cells.values().any(|c| c.value == RtValue::Ref(a)),
        "the cycle B -> A is closed"
    );
    let oc = &r.heap.objects[&c];
    assert_eq!(oc.length(), Some(2));
    // The explicit allocation and the rebuilt virtuals are equivalent outcomes...
    let o = go(&orig, &ints(&[3]));
    outcomes_equivalent(&o, &r).unwrap();
    outcomes_equivalent(&r, &o).unwrap();
    // ...but not when a field differs.
    let (_, bad) = virtual_pair(8);
    let e = outcomes_equivalent(&o, &go(&bad, &ints(&[3]))).unwrap_err();
    assert!(e.contains("Int(7) != Int(8)"), "{e}");
}

#[test]
fn aliasing_must_match_one_to_one() {
    // finish(p, p) vs finish(p, q) with equal contents: different.
    let build = |same: bool| {
        let mut b = TraceBuilder::new();
        let sz = size(&mut b, 16);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        let q = if same { p } else { b.op_with_descr(Opcode::New, &[], sz) };
        b.finish(&[p, q]);
        b.build().unwrap()
    };
    let (one, two) = (go(&build(true), &[]), go(&build(false), &[]));
    assert!(outcomes_equivalent(&one, &two).is_err());
    outcomes_equivalent(&one, &go(&build(true), &[])).unwrap();
}

#[test]
fn virtual_strings_are_rebuilt_at_the_exit_with_their_characters() {
    // The exit rebuilds `$0` as a string of length 3 whose characters are the low bytes of
    // what the resume data names (a unicode string: the low 4 bytes), the rest zero.
    let orig = trace_ir::parse_trace(
        "[i0, i1]
         p2 = newstr(3)
         strsetitem(p2, 0, i0)
         strsetitem(p2, 2, 98)
         p3 = newunicode(1)
         unicodesetitem(p3, 0, i0)
         guard_true(i1, descr=<Guard0>) [p2, p3]
         finish()",
    )
    .unwrap();
    let opt = |c: i64| {
        trace_ir::parse_trace(&format!(
            "[i0, i1]
             guard_true(i1, descr=<Guard0>) [$0, $1] {{$0 = newstr(3) [0]: i0, [2]: {c}; $1 = newunicode(1) [0]: i0}}
             finish()"
        ))
        .unwrap()
    };
    for x in [97, 300, -1, 1 << 40] {
        let inputs = ints(&[x, 0]);
        let o = go(&orig, &inputs);
        assert!(matches!(o.outcome, Outcome::GuardFailed { .. }), "{}", o.outcome);
        outcomes_equivalent(&o, &go(&opt(98), &inputs)).unwrap();
        assert!(outcomes_equivalent(&o, &go(&opt(99), &inputs)).is_err());
    }
}
