//! Invalid operations, overflow, exceptions, invalidation and class policies, calls, strings.

use super::exits::sum_loop;
use super::*;

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
