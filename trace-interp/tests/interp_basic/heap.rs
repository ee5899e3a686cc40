//! Heap-writing calls, escape and what calls change; stores that do not matter; exit writes.

use super::*;

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

/// A reference stored into an external object and overwritten before any call was never
/// visible outside, so a heap-writing call does not change its fields — whether or not the
/// store happened (the optimizer may drop it).
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
    // An unwritten field of an escaped object read through an immutable descriptor does not
    // change across a heap-writing call, so reusing the first read is correct.
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

/// `virtual_ref(p, i)` makes a `JitVirtualRef` of its own (`trace_ir::abi::VirtualRefLayout`):
/// its class is the default class of its size, its token is the force token and `forced` is
/// null; `virtual_ref_finish(r, p)` stores `p` unless it is null, then null into the token.
#[test]
fn a_virtual_reference_is_an_object_of_its_own() {
    let l = trace_ir::abi::VirtualRefLayout::get();
    let t = trace_ir::parse_trace(
        "[p0]
        p1 = new_with_vtable(descr=<SizeDescr 32>)
        p2 = virtual_ref(p1, 0)
        i3 = ptr_eq(p1, p2)
        p4 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
        p5 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.forced 16>)
        virtual_ref_finish(p2, ConstPtr(null))
        p6 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.forced 16>)
        p7 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
        virtual_ref_finish(p2, p1)
        p8 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.forced 16>)
        guard_class(p2, CLASS, descr=<Guard1>) []
        finish(i3, p4, p5, p6, p7, p8, p1)"
            .replace("CLASS", &trace_ir::abi::default_class(&l.size).to_string())
            .as_str(),
    )
    .unwrap();
    let r = go(&t, &[RtValue::Ref(0)]);
    let Outcome::Finish(v) = &r.outcome else {
        panic!("{}", r.outcome)
    };
    assert_eq!(v[0], RtValue::Int(0), "another object than its referent");
    assert_eq!(v[1], RtValue::Ref(trace_ir::abi::FORCE_TOKEN));
    assert_eq!(
        &v[2..5],
        &[RtValue::Ref(0); 3],
        "forced null, kept by a null finish; token cleared"
    );
    assert_eq!(v[5], v[6], "a non-null finish stores the object");
}

/// A virtual reference stored into an external object does not make the object it stands
/// for reachable: a call that may write the heap leaves that object alone.
#[test]
fn the_referent_does_not_escape_through_its_reference() {
    let t = trace_ir::parse_trace(
        "[p0]
        p1 = new_with_vtable(descr=<SizeDescr 32>)
        setfield_gc(p1, 7, descr=<FieldS Frame.pc 8>)
        p2 = virtual_ref(p1, 0)
        setfield_gc(p0, p2, descr=<FieldP EC.topframeref 16>)
        call_n(ConstClass(f), descr=<Callv 0 EF=7>)
        i3 = getfield_gc_i(p1, descr=<FieldS Frame.pc 8>)
        finish(i3)",
    )
    .unwrap();
    let r = go(&t, &[RtValue::Ref(0x7000_0000_1000)]);
    assert_eq!(r.outcome, Outcome::Finish(vec![RtValue::Int(7)]));
}

/// The bytes of an allocated struct are those of its size: an access beyond them is a
/// broken promise (native code does not check it).
#[test]
fn an_access_beyond_an_allocated_struct_is_a_broken_promise() {
    for (offset, broken) in [(16, false), (24, true)] {
        let t = trace_ir::parse_trace(&format!(
            "[i0]
            p1 = new(descr=<SizeDescr 24>)
            setfield_gc(p1, i0, descr=<FieldS T.x {offset}>)
            finish(p1)"
        ))
        .unwrap();
        let r = go(&t, &ints(&[5]));
        assert_eq!(
            matches!(r.outcome, Outcome::Invalid { promise: true, .. }),
            broken,
            "offset {offset}: {}",
            r.outcome
        );
    }
}
