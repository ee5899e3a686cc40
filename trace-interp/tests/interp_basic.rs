//! Interpreter unit tests: loops, iteration limit, guard exits, virtual rebuild (nested and
//! cyclic), escape and heap-writing calls, invalid operations, exceptions, classes, calls.

use std::sync::Arc;
use trace_interp::{outcomes_equivalent, run, ClassPolicy, HostFn, Outcome, RtValue, RunConfig, RunResult};
use trace_ir::{
    Aliasing, ArrayDescr, CallDescr, CallEffect, Descr, DescrRef, FailArg, FieldDescr, GuardId, Kind, Op, Opcode,
    SizeDescr, Trace, TraceBuilder, Value, VirtualField, VirtualKind, VirtualObject,
};

fn ints(v: &[i64]) -> Vec<RtValue> {
    v.iter().map(|&i| RtValue::Int(i)).collect()
}

fn go(t: &Trace, inputs: &[RtValue]) -> RunResult {
    run(t, inputs, &RunConfig::default())
}

fn field(b: &mut TraceBuilder, name: &str, offset: i64, kind: Kind) -> DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: name.into(),
        offset,
        size: 8,
        signed: true,
        kind,
        immutable: false,
    }))
}

fn imm_field(b: &mut TraceBuilder, offset: i64) -> DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: "imm".into(),
        offset,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: true,
    }))
}

fn size(b: &mut TraceBuilder, size: i64) -> DescrRef {
    b.descr(Descr::Size(SizeDescr {
        size,
        vtable: Some(0x7000),
    }))
}

fn array(b: &mut TraceBuilder, kind: Kind) -> DescrRef {
    b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind,
        base_offset: 16,
        len_offset: 8,
    }))
}

fn calldescr(b: &mut TraceBuilder, result: Kind, args: &[Kind], effect: CallEffect) -> DescrRef {
    b.descr(Descr::Call(CallDescr {
        result,
        result_size: 8,
        args: args.to_vec(),
        effect,
        oopspec: None,
    }))
}

fn sum_loop() -> Trace {
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

/// p = object; setfield(p, 5); call(p or nothing, effect); i = getfield(p); finish(i), and the
/// "wrongly optimized" finish(5).
fn heap_call_pair(external: bool, effect: CallEffect, pass_p: bool) -> (RunResult, RunResult) {
    let build = |forward: bool| {
        let mut b = TraceBuilder::new();
        let input = b.input(Kind::Ref);
        let sz = size(&mut b, 16);
        let fi = field(&mut b, "fi", 8, Kind::Int);
        let cd = calldescr(&mut b, Kind::Void, &[Kind::Ref], effect);
        let p = if external {
            input
        } else {
            b.op_with_descr(Opcode::New, &[], sz)
        };
        let five = b.const_int(5);
        b.op_with_descr(Opcode::SetfieldGc, &[p, five], fi);
        let f = b.const_int(0x1234);
        let arg = if pass_p { p } else { b.const_ref(0) };
        b.op_with_descr(Opcode::CallN, &[f, arg], cd);
        let i = if forward {
            five
        } else {
            b.op_with_descr(Opcode::GetfieldGcI, &[p], fi)
        };
        b.finish(&[i]);
        b.build().unwrap()
    };
    let input = [RtValue::Ref(0x4000_0000_1000)];
    (go(&build(false), &input), go(&build(true), &input))
}

#[test]
fn heap_writing_calls_change_escaped_and_external_objects() {
    // Escaped (passed to the call) and external objects change: forwarding is wrong.
    for (external, pass) in [(false, true), (true, false), (true, true)] {
        let (real, forwarded) = heap_call_pair(external, CallEffect::CannotRaise, pass);
        assert_ne!(
            real.outcome,
            Outcome::Finish(ints(&[5])),
            "external={external} pass={pass}"
        );
        assert!(outcomes_equivalent(&real, &forwarded).is_err());
        assert_eq!(real.calls.len(), 1);
        assert_eq!(real.heap.epoch, 1);
    }
    // A call that cannot write the heap, or an object that did not escape: forwarding is right.
    for (external, effect, pass) in [
        (true, CallEffect::ElidableCannotRaise, true),
        (false, CallEffect::ElidableCannotRaise, true),
        (false, CallEffect::CanRaise, false),
    ] {
        let (real, forwarded) = heap_call_pair(external, effect, pass);
        assert_eq!(
            real.outcome,
            Outcome::Finish(ints(&[5])),
            "external={external} {effect:?}"
        );
        outcomes_equivalent(&real, &forwarded).unwrap();
    }
}

/// Reference fields of an escaped allocated object change at a heap-writing call too: the
/// callee may store any object there. p = new; q = new; setfield(p, q); call(p); r =
/// getfield(p), and the "wrongly forwarded" r = q.
#[test]
fn heap_writing_calls_change_reference_fields_of_escaped_objects() {
    let build = |forward: bool, effect: CallEffect| {
        let mut b = TraceBuilder::new();
        let sz = size(&mut b, 16);
        let fp = field(&mut b, "fp", 8, Kind::Ref);
        let cd = calldescr(&mut b, Kind::Void, &[Kind::Ref], effect);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        let q = b.op_with_descr(Opcode::New, &[], sz);
        b.op_with_descr(Opcode::SetfieldGc, &[p, q], fp);
        let f = b.const_int(0x1234);
        b.op_with_descr(Opcode::CallN, &[f, p], cd);
        let r = if forward {
            q
        } else {
            b.op_with_descr(Opcode::GetfieldGcR, &[p], fp)
        };
        b.finish(&[r]);
        b.build().unwrap()
    };
    let real = go(&build(false, CallEffect::CannotRaise), &[]);
    let forwarded = go(&build(true, CallEffect::CannotRaise), &[]);
    let Outcome::Finish(ref values) = real.outcome else {
        panic!("expected a finish, got {:?}", real.outcome)
    };
    assert!(
        matches!(values[..], [RtValue::Ref(a)] if a != 0 && !real.heap.objects.contains_key(&a)),
        "the field now holds an external object: {values:?}"
    );
    assert!(outcomes_equivalent(&real, &forwarded).is_err());
    // Deterministic: the same program gives the same reference.
    assert_eq!(go(&build(false, CallEffect::CannotRaise), &[]).outcome, real.outcome);
    // A call that cannot write the heap leaves the field alone: forwarding is right.
    let real = go(&build(false, CallEffect::ElidableCannotRaise), &[]);
    outcomes_equivalent(&real, &go(&build(true, CallEffect::ElidableCannotRaise), &[])).unwrap();
}

#[test]
fn stores_into_external_objects_escape_and_are_compared() {
    // setfield(ext, new obj); call (writes heap); the object's fields change.
    let build = |value: i64| {
        let mut b = TraceBuilder::new();
        let e = b.input(Kind::Ref);
        let sz = size(&mut b, 16);
        let fi = field(&mut b, "fi", 8, Kind::Int);
        let fr = field(&mut b, "fr", 16, Kind::Ref);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        let v = b.const_int(value);
        b.op_with_descr(Opcode::SetfieldGc, &[p, v], fi);
        b.op_with_descr(Opcode::SetfieldGc, &[e, p], fr);
        b.finish(&[]);
        b.build().unwrap()
    };
    let e = [RtValue::Ref(0x4000_0000_2000)];
    let (a, a2, c) = (go(&build(1), &e), go(&build(1), &e), go(&build(2), &e));
    outcomes_equivalent(&a, &a2).unwrap();
    let err = outcomes_equivalent(&a, &c).unwrap_err();
    assert!(err.contains("external"), "{err}");
    // Escape is decided at calls: with no call, nothing has escaped yet.
    assert!(a.heap.objects.values().all(|o| !o.escaped));
}

// Regression (optimizer differential, seed 22575): a reference stored into an external object
// and overwritten before any call was never visible outside, so a heap-writing call does not
// change its fields — whether or not the store happened (the optimizer may drop it).
#[test]
fn escape_is_decided_at_calls_not_at_stores() {
    let build = |store_first: bool| {
        let mut b = TraceBuilder::new();
        let e = b.input(Kind::Ref);
        let sz = size(&mut b, 16);
        let fi = field(&mut b, "fi", 8, Kind::Int);
        let fr = field(&mut b, "fr", 16, Kind::Ref);
        let cd = calldescr(&mut b, Kind::Void, &[], CallEffect::CanRaise);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        let v = b.const_int(41);
        b.op_with_descr(Opcode::SetfieldGc, &[p, v], fi);
        if store_first {
            b.op_with_descr(Opcode::SetfieldGc, &[e, p], fr);
        }
        let null = b.const_ref(0);
        b.op_with_descr(Opcode::SetfieldGc, &[e, null], fr);
        let f = b.const_int(0x77);
        b.op_with_descr(Opcode::CallN, &[f], cd);
        let r = b.op_with_descr(Opcode::GetfieldGcI, &[p], fi);
        b.finish(&[r]);
        b.build().unwrap()
    };
    let e = [RtValue::Ref(0x4000_0000_2000)];
    let (with, without) = (go(&build(true), &e), go(&build(false), &e));
    assert_eq!(with.outcome, Outcome::Finish(ints(&[41])));
    outcomes_equivalent(&with, &without).unwrap();
    // Still reachable at the call: it escapes and the call changes its field.
    let mut b = TraceBuilder::new();
    let e2 = b.input(Kind::Ref);
    let sz = size(&mut b, 16);
    let fi = field(&mut b, "fi", 8, Kind::Int);
    let fr = field(&mut b, "fr", 16, Kind::Ref);
    let cd = calldescr(&mut b, Kind::Void, &[], CallEffect::CanRaise);
    let p = b.op_with_descr(Opcode::New, &[], sz);
    let v = b.const_int(41);
    b.op_with_descr(Opcode::SetfieldGc, &[p, v], fi);
    b.op_with_descr(Opcode::SetfieldGc, &[e2, p], fr);
    let f = b.const_int(0x77);
    b.op_with_descr(Opcode::CallN, &[f], cd);
    let r = b.op_with_descr(Opcode::GetfieldGcI, &[p], fi);
    b.finish(&[r]);
    let escaped = go(&b.build().unwrap(), &e);
    assert_ne!(
        escaped.outcome,
        Outcome::Finish(ints(&[41])),
        "a reachable object is clobbered"
    );
    assert!(escaped.heap.objects.values().all(|o| o.escaped));
}

#[test]
fn immutable_fields_survive_heap_writing_calls() {
    let mut b = TraceBuilder::new();
    let e = b.input(Kind::Ref);
    let fk = imm_field(&mut b, 40);
    let fi = field(&mut b, "fi", 8, Kind::Int);
    let cd = calldescr(&mut b, Kind::Int, &[], CallEffect::RandomEffects);
    let k1 = b.op_with_descr(Opcode::GetfieldGcI, &[e], fk);
    let m1 = b.op_with_descr(Opcode::GetfieldGcI, &[e], fi);
    let m1b = b.op_with_descr(Opcode::GetfieldGcI, &[e], fi);
    let f = b.const_int(0x99);
    b.op_with_descr(Opcode::CallI, &[f], cd);
    let k2 = b.op_with_descr(Opcode::GetfieldGcI, &[e], fk);
    let m2 = b.op_with_descr(Opcode::GetfieldGcI, &[e], fi);
    b.finish(&[k1, k2, m1, m1b, m2]);
    let t = b.build().unwrap();
    let r = go(&t, &[RtValue::Ref(0x4000_0000_3000)]);
    let v = r.outcome.values().unwrap().to_vec();
    assert_eq!(v[0], v[1], "immutable field changed across a call");
    assert_eq!(v[2], v[3], "two reads without a call in between differ");
    assert_ne!(
        v[2], v[4],
        "a mutable external field did not change across a heap-writing call"
    );
    // Deterministic.
    assert_eq!(go(&t, &[RtValue::Ref(0x4000_0000_3000)]).outcome, r.outcome);
}

fn one_op_trace(build: impl FnOnce(&mut TraceBuilder, Value) -> Value) -> Trace {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let r = build(&mut b, x);
    b.finish(&[r]);
    b.build().unwrap()
}

#[test]
fn invalid_operations_are_reported_not_panicking() {
    let cases: Vec<(Trace, Vec<RtValue>, &str)> = vec![
        (
            one_op_trace(|b, x| {
                let c = b.const_int(64);
                b.op(Opcode::IntLshift, &[x, c])
            }),
            ints(&[1]),
            "shift",
        ),
        (
            one_op_trace(|b, x| {
                let c = b.const_int(-1);
                b.op(Opcode::UintRshift, &[x, c])
            }),
            ints(&[1]),
            "shift",
        ),
        (
            one_op_trace(|b, x| {
                let c = b.const_int(0);
                b.op(Opcode::IntFloorDiv, &[x, c])
            }),
            ints(&[1]),
            "division by zero",
        ),
        (
            one_op_trace(|b, x| {
                let c = b.const_int(0);
                b.op(Opcode::IntPyMod, &[x, c])
            }),
            ints(&[1]),
            "division by zero",
        ),
        (
            one_op_trace(|b, x| {
                let c = b.const_int(3);
                b.op(Opcode::IntSignext, &[x, c])
            }),
            ints(&[1]),
            "signext",
        ),
        (
            one_op_trace(|b, _| {
                let fi = field(b, "fi", 8, Kind::Int);
                let null = b.const_ref(0);
                b.op_with_descr(Opcode::GetfieldGcI, &[null], fi)
            }),
            ints(&[1]),
            "null",
        ),
        (
            one_op_trace(|b, x| {
                let ad = array(b, Kind::Int);
                let two = b.const_int(2);
                let a = b.op_with_descr(Opcode::NewArray, &[two], ad);
                b.op_with_descr(Opcode::GetarrayitemGcI, &[a, x], ad)
            }),
            ints(&[2]),
            "out of bounds",
        ),
        (
            one_op_trace(|b, x| {
                let ad = array(b, Kind::Int);
                let a = b.op_with_descr(Opcode::NewArray, &[x], ad);
                b.op_with_descr(Opcode::ArraylenGc, &[a], ad)
            }),
            ints(&[-1]),
            "allocation length",
        ),
        // Type-based aliasing: bytes written through one descriptor are not accessed through
        // another (the allocation writes the length word through the array's descriptor).
        (
            one_op_trace(|b, x| {
                b.aliasing(Aliasing::TypeBased);
                let (ap, ai) = (array(b, Kind::Ref), array(b, Kind::Int));
                let two = b.const_int(2);
                let a = b.op_with_descr(Opcode::NewArrayClear, &[two], ai);
                b.op_with_descr(Opcode::SetarrayitemGc, &[a, x, x], ai);
                let r = b.op_with_descr(Opcode::GetarrayitemGcR, &[a, x], ap);
                b.op(Opcode::CastPtrToInt, &[r])
            }),
            ints(&[0]),
            "type-based",
        ),
        (
            one_op_trace(|b, _| {
                b.aliasing(Aliasing::TypeBased);
                let (ap, ai) = (array(b, Kind::Ref), array(b, Kind::Int));
                let two = b.const_int(2);
                let a = b.op_with_descr(Opcode::NewArrayClear, &[two], ap);
                b.op_with_descr(Opcode::ArraylenGc, &[a], ai)
            }),
            ints(&[0]),
            "type-based",
        ),
    ];
    for (t, inputs, what) in cases {
        match go(&t, &inputs).outcome {
            Outcome::Invalid {
                op: Some(_), reason, ..
            } => {
                assert!(reason.contains(what), "{reason} does not mention {what}")
            }
            other => panic!("expected invalid ({what}), got {other}"),
        }
    }
    // Wrong number of inputs.
    assert!(matches!(
        go(&sum_loop(), &[]).outcome,
        Outcome::Invalid { op: None, .. }
    ));
}

#[test]
fn overflow_guards() {
    let build = |g: Opcode| {
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        let y = b.input(Kind::Int);
        let r = b.op(Opcode::IntMulOvf, &[x, y]);
        b.guard(g, &[], &[r], 0);
        b.finish(&[r]);
        b.build().unwrap()
    };
    let (no, yes) = (build(Opcode::GuardNoOverflow), build(Opcode::GuardOverflow));
    assert_eq!(go(&no, &ints(&[3, 4])).outcome, Outcome::Finish(ints(&[12])));
    assert!(matches!(go(&yes, &ints(&[3, 4])).outcome, Outcome::GuardFailed { .. }));
    assert!(
        matches!(go(&no, &ints(&[1 << 32, 1 << 32])).outcome, Outcome::GuardFailed { ref values, .. } if values == &ints(&[0]))
    );
    assert_eq!(
        go(&yes, &ints(&[i64::MIN, -1])).outcome,
        Outcome::Finish(ints(&[i64::MIN]))
    );
}

#[test]
fn exceptions_are_modelled_state() {
    let mut b = TraceBuilder::new();
    let cls = b.input(Kind::Int);
    let val = b.input(Kind::Ref);
    b.guard(Opcode::GuardNoException, &[], &[], 0);
    b.op(Opcode::RestoreException, &[cls, val]);
    let c = b.op(Opcode::SaveExcClass, &[]);
    let k = b.const_int(77);
    let (e, _) = b.guard_op(Opcode::GuardException, &[k], &[c], 1);
    b.guard(Opcode::GuardNoException, &[], &[], 2);
    b.finish(&[c, e]);
    let t = b.build().unwrap();
    let r = go(&t, &[RtValue::Int(77), RtValue::Ref(0x4000_0000_0040)]);
    assert_eq!(
        r.outcome,
        Outcome::Finish(vec![RtValue::Int(77), RtValue::Ref(0x4000_0000_0040)])
    );
    assert_eq!(r.exception, None);
    // Another class: guard_exception fails and the exception stays pending.
    let r = go(&t, &[RtValue::Int(5), RtValue::Ref(0x4000_0000_0040)]);
    assert!(matches!(r.outcome, Outcome::GuardFailed { guard: GuardId(1), ref values, .. } if values == &ints(&[5])));
    assert_eq!(r.exception, Some((5, 0x4000_0000_0040)));
}

#[test]
fn invalidation_and_class_policies() {
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref);
    b.guard(Opcode::GuardNotInvalidated, &[], &[], 0);
    let c1 = b.const_int(0x7100);
    b.guard(Opcode::GuardClass, &[p, c1], &[], 1);
    b.guard(Opcode::GuardNonnullClass, &[p, c1], &[], 2);
    let c2 = b.const_int(0x7200);
    b.guard(Opcode::GuardClass, &[p, c2], &[], 3);
    b.finish(&[]);
    let t = b.build().unwrap();
    let p = [RtValue::Ref(0x4000_0000_0080)];
    // First check decides the class: the guards with 0x7100 pass, the one with 0x7200 fails.
    assert!(matches!(
        go(&t, &p).outcome,
        Outcome::GuardFailed { guard: GuardId(3), .. }
    ));
    let inval = RunConfig {
        invalidated: true,
        ..RunConfig::default()
    };
    assert!(matches!(
        run(&t, &p, &inval).outcome,
        Outcome::GuardFailed { guard: GuardId(0), .. }
    ));
    let by_addr = RunConfig {
        class_policy: ClassPolicy::FromAddress,
        ..RunConfig::default()
    };
    assert!(matches!(
        run(&t, &p, &by_addr).outcome,
        Outcome::GuardFailed { guard: GuardId(1), .. }
    ));
    // guard_nonnull_class on null fails; guard_class on a new_with_vtable object uses its vtable.
    assert!(matches!(go(&t, &[RtValue::Ref(0)]).outcome, Outcome::Invalid { .. }));
    let mut b = TraceBuilder::new();
    let sz = size(&mut b, 16);
    let o = b.op_with_descr(Opcode::NewWithVtable, &[], sz);
    let vt = b.const_int(0x7000);
    b.guard(Opcode::GuardClass, &[o, vt], &[], 0);
    b.guard(Opcode::GuardIsObject, &[o], &[], 1);
    b.finish(&[o]);
    assert!(matches!(go(&b.build().unwrap(), &[]).outcome, Outcome::Finish(_)));
}

#[test]
fn registered_functions_and_derived_call_results() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let cd = calldescr(&mut b, Kind::Int, &[Kind::Int], CallEffect::ElidableCannotRaise);
    let f = b.const_int(0x5000);
    let g = b.const_int(0x6000);
    let r1 = b.op_with_descr(Opcode::CallI, &[f, x], cd);
    let r2 = b.op_with_descr(Opcode::CallPureI, &[g, x], cd);
    let r3 = b.op_with_descr(Opcode::CallPureI, &[g, x], cd);
    b.finish(&[r1, r2, r3]);
    let t = b.build().unwrap();
    let mut cfg = RunConfig::default();
    let double: HostFn = Arc::new(|args: &[RtValue]| RtValue::Int(args[0].bits() as i64 * 2));
    cfg.functions.insert(0x5000, double);
    let r = run(&t, &ints(&[21]), &cfg);
    let v = r.outcome.values().unwrap();
    assert_eq!(v[0], RtValue::Int(42));
    assert_eq!(v[1], v[2], "the same call gives the same result");
    assert!(r.calls.is_empty(), "elidable calls are not heap-writing");
}

#[test]
fn external_jump_and_float_nan_comparison() {
    let mut b = TraceBuilder::new();
    let f = b.input(Kind::Float);
    let target = b.descr(Descr::Loop(3));
    let mut op = Op::new(Opcode::Jump, &[f]);
    op.descr = Some(target);
    b.push(op);
    let t = b.build().unwrap();
    let nan = RtValue::Float(0x7ff8_0000_0000_0001);
    let r = go(&t, &[nan]);
    assert_eq!(
        r.outcome,
        Outcome::ExternalJump {
            target: Some(3),
            values: vec![nan]
        }
    );
    outcomes_equivalent(&r, &go(&t, &[nan])).unwrap();
    // NaN payloads are compared (see `nan_payloads_are_compared`); a number is not NaN.
    assert!(outcomes_equivalent(&r, &go(&t, &[RtValue::Float(0x7ff8_0000_0000_0002)])).is_err());
    assert!(outcomes_equivalent(&r, &go(&t, &[RtValue::float(f64::INFINITY)])).is_err());
}

#[test]
fn strings_and_narrow_fields() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let three = b.const_int(3);
    let s = b.op(Opcode::Newstr, &[three]);
    let one = b.const_int(1);
    b.op(Opcode::Strsetitem, &[s, one, x]);
    let c = b.op(Opcode::Strgetitem, &[s, one]);
    let n = b.op(Opcode::Strlen, &[s]);
    let sz = size(&mut b, 16);
    let narrow = b.descr(Descr::Field(FieldDescr {
        name: "b".into(),
        offset: 8,
        size: 1,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let o = b.op_with_descr(Opcode::New, &[], sz);
    b.op_with_descr(Opcode::SetfieldGc, &[o, x], narrow);
    let y = b.op_with_descr(Opcode::GetfieldGcI, &[o], narrow);
    b.finish(&[c, n, y]);
    let t = b.build().unwrap();
    assert_eq!(go(&t, &ints(&[0x1ff])).outcome, Outcome::Finish(ints(&[0xff, 3, -1])));
}

#[test]
fn explicit_zero_stores_do_not_matter_after_escape() {
    // p = new; [setfield(p, 0)]; call(p) writes heap; getfield(p): the same with or without
    // the explicit zero store (an optimizer may materialize a virtual without it).
    let build = |store_zero: bool, store_after: Option<i64>| {
        let mut b = TraceBuilder::new();
        let sz = size(&mut b, 16);
        let fi = field(&mut b, "fi", 8, Kind::Int);
        let cd = calldescr(&mut b, Kind::Void, &[Kind::Ref], CallEffect::CannotRaise);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        if store_zero {
            let zero = b.const_int(0);
            b.op_with_descr(Opcode::SetfieldGc, &[p, zero], fi);
        }
        let f = b.const_int(0x1234);
        b.op_with_descr(Opcode::CallN, &[f, p], cd);
        if let Some(v) = store_after {
            let v = b.const_int(v);
            b.op_with_descr(Opcode::SetfieldGc, &[p, v], fi);
        }
        let i = b.op_with_descr(Opcode::GetfieldGcI, &[p], fi);
        b.finish(&[i, p]);
        b.build().unwrap()
    };
    let with = go(&build(true, None), &[]);
    let without = go(&build(false, None), &[]);
    outcomes_equivalent(&with, &without).unwrap();
    assert_ne!(
        with.outcome.values().unwrap()[0],
        RtValue::Int(0),
        "the call changed the escaped field"
    );
    // A store after the call is what a later read sees.
    let after = go(&build(true, Some(9)), &[]);
    assert_eq!(after.outcome.values().unwrap()[0], RtValue::Int(9));
}

#[test]
fn removing_a_redundant_write_back_is_equivalent() {
    // x = getfield(p); setfield(p, x) is a no-op, across heap-writing calls too, for an
    // escaped allocated object and for an external one, through a narrow field as well.
    for external in [false, true] {
        for narrow in [false, true] {
            let build = |write_back: bool| {
                let mut b = TraceBuilder::new();
                let e = b.input(Kind::Ref);
                let sz = size(&mut b, 16);
                let fd = if narrow {
                    b.descr(Descr::Field(FieldDescr {
                        name: "c".into(),
                        offset: 20,
                        size: 1,
                        signed: true,
                        kind: Kind::Int,
                        immutable: false,
                    }))
                } else {
                    field(&mut b, "fi", 8, Kind::Int)
                };
                let cd = calldescr(&mut b, Kind::Void, &[Kind::Ref], CallEffect::CannotRaise);
                let p = if external {
                    e
                } else {
                    b.op_with_descr(Opcode::New, &[], sz)
                };
                let f = b.const_int(0x1234);
                b.op_with_descr(Opcode::CallN, &[f, p], cd);
                let x = b.op_with_descr(Opcode::GetfieldGcI, &[p], fd);
                if write_back {
                    b.op_with_descr(Opcode::SetfieldGc, &[p, x], fd);
                }
                b.op_with_descr(Opcode::CallN, &[f, p], cd);
                let y = b.op_with_descr(Opcode::GetfieldGcI, &[p], fd);
                b.finish(&[x, y, p]);
                b.build().unwrap()
            };
            let e = [RtValue::Ref(0x4000_0000_5000)];
            let (a, b) = (go(&build(true), &e), go(&build(false), &e));
            outcomes_equivalent(&a, &b).unwrap_or_else(|err| panic!("external={external} narrow={narrow}: {err}"));
        }
    }
}

#[test]
fn pure_field_reads_may_be_reused_across_calls() {
    // Regression (found by the optimizer's differential test): an unwritten field of an
    // escaped object read through an immutable descriptor does not change across a
    // heap-writing call, so reusing the first read is correct.
    let build = |reuse: bool| {
        let mut b = TraceBuilder::new();
        let sz = size(&mut b, 16);
        let fk = imm_field(&mut b, 40);
        let cd = calldescr(&mut b, Kind::Void, &[Kind::Ref], CallEffect::CanRaise);
        let p = b.op_with_descr(Opcode::New, &[], sz);
        let f = b.const_int(0x1234);
        b.op_with_descr(Opcode::CallN, &[f, p], cd);
        let k1 = b.op_with_descr(Opcode::GetfieldGcI, &[p], fk);
        b.op_with_descr(Opcode::CallN, &[f, p], cd);
        let k2 = if reuse {
            k1
        } else {
            b.op_with_descr(Opcode::GetfieldGcI, &[p], fk)
        };
        b.finish(&[k1, k2, p]);
        b.build().unwrap()
    };
    outcomes_equivalent(&go(&build(false), &[]), &go(&build(true), &[])).unwrap();
}

#[test]
fn guided_inputs_satisfy_guards_on_inputs_and_initial_memory() {
    // [p0, i1]: i2 = getfield(p0.f); guard_value(i2, 7); guard_true(int_lt(i1, 10));
    // p3 = getfield(p0.g); guard_nonnull(p3); finish(i2, i1)
    let mut b = TraceBuilder::new();
    let p0 = b.input(Kind::Ref);
    let i1 = b.input(Kind::Int);
    let fi = field(&mut b, "f", 8, Kind::Int);
    let fg = field(&mut b, "g", 16, Kind::Ref);
    let i2 = b.op_with_descr(Opcode::GetfieldGcI, &[p0], fi);
    let seven = b.const_int(7);
    b.guard(Opcode::GuardValue, &[i2, seven], &[], 0);
    let ten = b.const_int(10);
    let lt = b.op(Opcode::IntLt, &[i1, ten]);
    b.guard(Opcode::GuardTrue, &[lt], &[], 1);
    let p3 = b.op_with_descr(Opcode::GetfieldGcR, &[p0], fg);
    b.guard(Opcode::GuardIsnull, &[p3], &[], 2);
    b.finish(&[i2, i1]);
    let t = b.build().unwrap();
    let start = [RtValue::Ref(0x4000_0000_7000), RtValue::Int(1000)];
    assert!(matches!(
        go(&t, &start).outcome,
        Outcome::GuardFailed { guard: GuardId(0), .. }
    ));
    let (inputs, cfg) = trace_interp::guided::guided_inputs(&t, &start, &RunConfig::default(), 10);
    let r = run(&t, &inputs, &cfg);
    match r.outcome {
        Outcome::Finish(v) => {
            assert_eq!(v[0], RtValue::Int(7));
            assert!(matches!(v[1], RtValue::Int(x) if x < 10));
        }
        other => panic!("{other}"),
    }
    assert_eq!(cfg.preset.len(), 2, "field f and field g are preset");
}

// Regression: cond_call calls its function when the condition is non-zero (PyPy's COND_CALL),
// and cond_call_value_i is its value when non-zero, else the call's result.
#[test]
fn cond_call_calls_on_nonzero_condition() {
    let mut b = TraceBuilder::new();
    let c = b.input(Kind::Int);
    let vd = calldescr(&mut b, Kind::Int, &[Kind::Int], CallEffect::ElidableCannotRaise);
    let f = b.const_int(0x7000);
    let seven = b.const_int(7);
    let r = b.op_with_descr(Opcode::CondCallValueI, &[c, f, seven], vd);
    b.finish(&[r]);
    let t = b.build().unwrap();
    let mut cfg = RunConfig::default();
    let plus_one: HostFn = Arc::new(|args: &[RtValue]| RtValue::Int(args[0].bits() as i64 + 1));
    cfg.functions.insert(0x7000, plus_one);
    assert_eq!(run(&t, &ints(&[5]), &cfg).outcome.values().unwrap(), &[RtValue::Int(5)]);
    assert_eq!(run(&t, &ints(&[0]), &cfg).outcome.values().unwrap(), &[RtValue::Int(8)]);

    // cond_call with a heap-writing effect: only a taken call is logged.
    let mut b = TraceBuilder::new();
    let c = b.input(Kind::Int);
    let nd = calldescr(&mut b, Kind::Void, &[], CallEffect::CanRaise);
    let g = b.const_int(0x7100);
    b.op_with_descr(Opcode::CondCallN, &[c, g], nd);
    b.finish(&[c]);
    let t = b.build().unwrap();
    let cfg = RunConfig::default();
    assert_eq!(
        run(&t, &ints(&[1]), &cfg).calls.len(),
        1,
        "non-zero condition: the call happens"
    );
    assert!(run(&t, &ints(&[0]), &cfg).calls.is_empty(), "zero condition: no call");
}

/// Fuzz finding (optimize_diff): `float_mul(NaN, f)` with `f` a NaN of another payload returns
/// the first operand's NaN, the commuted product the other one. NaN payloads of arithmetic
/// results are unspecified, so runs compare any two NaNs equal, and only NaNs.
#[test]
fn nan_payloads_are_compared() {
    // The IR's float ops are exact in their bits: a NaN result carries its first NaN
    // operand's payload (x86-64's rule), so commuted operands give another result and the
    // two runs differ.
    let build = |commuted: bool| {
        let mut b = TraceBuilder::new();
        let i = b.input(Kind::Int);
        let f = b.op(Opcode::ConvertLonglongBytesToFloat, &[i]);
        let nan = b.const_float(f64::NAN);
        let m = if commuted {
            b.op(Opcode::FloatMul, &[f, nan])
        } else {
            b.op(Opcode::FloatMul, &[nan, f])
        };
        b.finish(&[m]);
        b.build().unwrap()
    };
    let payload = RtValue::Int(-4); // 0xffff_ffff_ffff_fffc: a NaN with a payload
    let (x, y) = (go(&build(false), &[payload]), go(&build(true), &[payload]));
    let (Outcome::Finish(vx), Outcome::Finish(vy)) = (&x.outcome, &y.outcome) else {
        panic!("expected finishes: {:?} {:?}", x.outcome, y.outcome)
    };
    assert_eq!(vx[0], RtValue::Float(f64::NAN.to_bits()));
    assert_eq!(vy[0], RtValue::Float(0xffff_ffff_ffff_fffc));
    assert!(outcomes_equivalent(&x, &y).is_err());
    outcomes_equivalent(&x, &go(&build(false), &[payload])).unwrap();
}

/// A reference read is defined only from bytes written as that reference: an integer field
/// written over half of a reference item forges an address nobody handed out, and reading it
/// is a broken promise (native code would dereference it). Found by `native_diff`: a loop
/// stored an array into its own item, and the next iteration wrote a struct field over it.
#[test]
fn a_reference_read_from_other_bytes_is_a_broken_promise() {
    let forged = trace_ir::parse_trace(
        "[i0]
        p1 = new_array_clear(1, descr=<ArrayP 8>)
        setarrayitem_gc(p1, 0, p1, descr=<ArrayP 8>)
        setfield_gc(p1, i0, descr=<FieldS T.inst_b 16 size=4>)
        p2 = getarrayitem_gc_r(p1, 0, descr=<ArrayP 8>)
        finish(p2)",
    )
    .unwrap();
    let r = go(&forged, &ints(&[7]));
    assert!(
        matches!(r.outcome, Outcome::Invalid { promise: true, .. }),
        "{}",
        r.outcome
    );
    // The reference as it was written reads back.
    let intact = trace_ir::parse_trace(
        "[i0]
        p1 = new_array_clear(1, descr=<ArrayP 8>)
        setarrayitem_gc(p1, 0, p1, descr=<ArrayP 8>)
        p2 = getarrayitem_gc_r(p1, 0, descr=<ArrayP 8>)
        finish(p2)",
    )
    .unwrap();
    let r = go(&intact, &ints(&[7]));
    assert!(
        matches!(r.outcome, Outcome::Finish(ref v) if v[0] != RtValue::Ref(0)),
        "{}",
        r.outcome
    );
    // An integer written where a reference is read forges one too; an unwritten item is null.
    let int_item = trace_ir::parse_trace(
        "[i0]
        p1 = new_array_clear(2, descr=<ArrayP 8>)
        setarrayitem_gc(p1, 0, i0, descr=<ArrayS 8>)
        p2 = getarrayitem_gc_r(p1, 1, descr=<ArrayP 8>)
        p3 = getarrayitem_gc_r(p1, 0, descr=<ArrayP 8>)
        finish(p2, p3)",
    )
    .unwrap();
    let r = go(&int_item, &ints(&[7]));
    assert!(
        matches!(r.outcome, Outcome::Invalid { promise: true, op: Some(op), .. } if op.index() == 4),
        "{}",
        r.outcome
    );
}

/// A reference's bytes are not read as a number: the address differs between runs of one
/// program (found by `native_diff`: a loop wrote a reference into an array's item and the
/// next iteration read a byte of it through a struct field descriptor).
#[test]
fn a_number_read_of_a_reference_is_a_broken_promise() {
    let t = trace_ir::parse_trace(
        "[i0]
        p1 = new_array_clear(2, descr=<ArrayP 8>)
        setarrayitem_gc(p1, 0, p1, descr=<ArrayP 8>)
        i2 = getarrayitem_gc_i(p1, 1, descr=<ArrayS 8>)
        i3 = getfield_gc_i(p1, descr=<FieldU T.inst_c 20 size=1>)
        finish(i2, i3)",
    )
    .unwrap();
    let r = go(&t, &ints(&[7]));
    assert!(
        matches!(r.outcome, Outcome::Invalid { promise: true, op: Some(op), .. } if op.index() == 4),
        "{}",
        r.outcome
    );
}

/// `record_int_range` and `record_int_bits` are promises: a value outside what they state
/// is an invalid operation (so every part may rely on them), a value inside passes.
#[test]
fn integer_hints_are_promises() {
    let t = trace_ir::parse_trace(
        "
[i0]
record_int_range(i0, -3, 10)
record_int_bits(i0, 1, 0)
finish(i0)
",
    )
    .unwrap();
    for (x, broken) in [(-4, true), (-2, false), (10, false), (11, true), (3, true), (4, false)] {
        let r = go(&t, &ints(&[x]));
        let is_broken = matches!(r.outcome, Outcome::Invalid { promise: true, .. });
        assert_eq!(is_broken, broken, "{x}: {:?}", r.outcome);
    }
}

#[test]
fn an_exit_performs_its_writes_after_rebuilding_its_virtuals() {
    let parse = |s: &str| trace_ir::parse_trace(s).unwrap();
    // The object stored into p0.top, and the same store delayed into the guard's exit.
    let original = parse(
        "[p0, i1]
         p2 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS f 8>)
         setfield_gc(p0, p2, descr=<FieldP top 16>)
         guard_true(i1, descr=<Guard1>) [p2]
         finish()",
    );
    let delayed = "[p0, i1]
         guard_true(i1, descr=<Guard1>) [$0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS f 8>: i1WRITE}
         p2 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS f 8>)
         setfield_gc(p0, p2, descr=<FieldP top 16>)
         finish()";
    let with_write = parse(&delayed.replace("WRITE", "; setfield_gc(p0, $0, descr=<FieldP top 16>)"));
    let without = parse(&delayed.replace("WRITE", ""));
    for (p0, i1) in [(0x5000_0000_1008u64, 0i64), (0x5000_0000_1008, 1)] {
        let inputs = [RtValue::Ref(p0), RtValue::Int(i1)];
        let a = go(&original, &inputs);
        let b = go(&with_write, &inputs);
        outcomes_equivalent(&a, &b).unwrap_or_else(|e| panic!("i1 = {i1}: {e}"));
        let c = go(&without, &inputs);
        assert_eq!(
            outcomes_equivalent(&a, &c).is_ok(),
            i1 != 0,
            "without the write, i1 = {i1}"
        );
    }
    // an exit's write through a null pointer is invalid, as the store it stands for was
    let r = go(&with_write, &[RtValue::Ref(0), RtValue::Int(0)]);
    assert!(matches!(r.outcome, Outcome::Invalid { .. }), "{}", r.outcome);
}

#[test]
fn objects_reachable_at_a_call_that_changes_nothing_do_not_escape() {
    // p1 is reachable from p0 at the first call only; a call that changes nothing keeps no
    // reference to it, so the heap-writing call after cannot change it
    let src = "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, 7, descr=<FieldS a 8>)
         setfield_gc(p0, p1, descr=<FieldP top 8>)
         i2 = CALL
         setfield_gc(p0, ConstPtr(null), descr=<FieldP top 8>)
         call_n(ConstClass(g), descr=<Callv 0 EF=7>)
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3, i2)";
    let run_with = |call: &str| {
        let t = trace_ir::parse_trace(&src.replace("CALL", call)).unwrap();
        match go(&t, &[RtValue::Ref(0x5000_0000_1008)]).outcome {
            Outcome::Finish(v) => v[0].bits() as i64,
            other => panic!("{other}"),
        }
    };
    for call in [
        "call_pure_i(ConstClass(f), 1, descr=<Calli 8 i EF=0>)",
        "call_i(ConstClass(f), 1, descr=<Calli 8 i EF=0>)",
        "call_loopinvariant_i(ConstClass(f), 1, descr=<Calli 8 i EF=1>)",
    ] {
        assert_eq!(run_with(call), 7, "{call}");
    }
    // a call that may write the heap makes p1 escape, and changes its field
    assert_ne!(run_with("call_i(ConstClass(f), 1, descr=<Calli 8 i EF=2>)"), 7);
}
