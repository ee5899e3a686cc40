//! Guided inputs, conditional calls, NaN payloads, and the memory model's promises.

use super::*;

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

/// `cond_call` calls its function when the condition is non-zero (PyPy's COND_CALL), and
/// `cond_call_value_i` is its value when non-zero, else the call's result.
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
/// is a broken promise (native code would dereference it): here a loop stores an array into
/// its own item, and the next iteration writes a struct field over it.
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
/// program (here a loop writes a reference into an array's item and the next iteration reads
/// a byte of it through a struct field descriptor).
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

/// Bytes a narrower write leaves of a reference are still an address's bytes: a number read
/// of them breaks a promise, and two runs whose objects hold the same bytes of corresponding
/// references (allocated at different addresses) are equivalent.
#[test]
fn the_bytes_left_of_a_reference_are_not_a_number() {
    let cut = "[i0]
        p0 = new_array_clear(4, descr=<ArrayU 1>)
        p1 = new_array_clear(2, descr=<ArrayP 8>)
        setarrayitem_gc(p1, 0, p1, descr=<ArrayP 8>)
        setfield_gc(p1, i0, descr=<FieldU T.inst_c 20 size=1>)
        READ
        finish(p1)";
    let t = trace_ir::parse_trace(&cut.replace("READ", "i3 = getfield_gc_i(p1, descr=<FieldU T.inst_b 16 size=4>)"))
        .unwrap();
    let r = go(&t, &ints(&[7]));
    assert!(
        matches!(r.outcome, Outcome::Invalid { promise: true, .. }),
        "{}",
        r.outcome
    );
    // The same object allocated second in one run and first in the other: its bytes left in
    // its own item differ as numbers, not as the bytes of one reference.
    let a = trace_ir::parse_trace(&cut.replace("READ", "")).unwrap();
    let b = trace_ir::parse_trace(
        &cut.replace("READ", "")
            .replace("p0 = new_array_clear(4, descr=<ArrayU 1>)\n", ""),
    )
    .unwrap();
    let cfg = trace_interp::RunConfig::default();
    let (ra, rb) = (
        trace_interp::run(&a, &ints(&[7]), &cfg),
        trace_interp::run(&b, &ints(&[7]), &cfg),
    );
    trace_interp::runs_equivalent(&a, &b, &ints(&[7]), &cfg, &ra, &rb).unwrap();
    // Other bytes than the reference's in the same place are a difference.
    let c =
        trace_ir::parse_trace(&cut.replace("READ", "setfield_gc(p1, 5, descr=<FieldU T.inst_b 16 size=4>)")).unwrap();
    let rc = trace_interp::run(&c, &ints(&[7]), &cfg);
    assert!(trace_interp::runs_equivalent(&a, &c, &ints(&[7]), &cfg, &ra, &rc).is_err());
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

/// `record_exact_value_i/_r` promise that the value is the constant: broken when it is not.
#[test]
fn record_exact_value_is_a_promise() {
    for (text, input, broken) in [
        ("[i0]\nrecord_exact_value_i(i0, 7)\nfinish(i0)", RtValue::Int(7), false),
        ("[i0]\nrecord_exact_value_i(i0, 7)\nfinish(i0)", RtValue::Int(8), true),
        (
            "[p0]\nrecord_exact_value_r(p0, ConstPtr(0x7000))\nfinish(p0)",
            RtValue::Ref(0x7000),
            false,
        ),
        (
            "[p0]\nrecord_exact_value_r(p0, ConstPtr(0x7000))\nfinish(p0)",
            RtValue::Ref(0),
            true,
        ),
    ] {
        let r = go(&trace_ir::parse_trace(text).unwrap(), &[input]);
        assert_eq!(
            matches!(r.outcome, Outcome::Invalid { promise: true, .. }),
            broken,
            "{text} on {input:?}: {}",
            r.outcome
        );
    }
}

#[test]
fn a_known_result_is_what_the_call_returns_in_the_run() {
    // `record_known_result` of a loop-invariant (or elidable) function says what the call
    // returns in the run, before and after it: a call after it returns that value, and a
    // call before it that returned something else breaks the promise. Of a function that
    // may write the heap it says nothing.
    let t = trace_ir::parse_trace(
        "[p0]
         record_known_result(p0, ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         p1 = call_loopinvariant_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         finish(p1)",
    )
    .unwrap();
    let x = RtValue::Ref(0x5000_0000_1000);
    assert_eq!(go(&t, &[x]).outcome, Outcome::Finish(vec![x]));
    let t = trace_ir::parse_trace(
        "[p0]
         p1 = call_loopinvariant_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         record_known_result(p0, ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         finish(p1)",
    )
    .unwrap();
    let r = go(&t, &[x]);
    assert!(
        matches!(r.outcome, Outcome::Invalid { promise: true, .. }),
        "{}",
        r.outcome
    );
    let cfg = RunConfig::default();
    let tl = trace_ir::trace::symbol_address("tl");
    let same = trace_interp::call_value(&cfg, &Default::default(), tl, &[RtValue::Int(64)], Kind::Ref);
    assert_eq!(go(&t, &[same]).outcome, Outcome::Finish(vec![same]));
    let t = trace_ir::parse_trace(
        "[p0]
         record_known_result(p0, ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         p1 = call_r(ConstClass(g), 64, descr=<Callr 8 i EF=5>)
         i2 = ptr_eq(p0, p1)
         finish(i2)",
    )
    .unwrap();
    assert_eq!(go(&t, &[x]).outcome, Outcome::Finish(vec![RtValue::Int(0)]));
}

#[test]
fn a_known_field_is_what_the_field_holds() {
    // `record_known_field` decides an external field nothing has read yet (as the first
    // class check decides a class), so a later load gives that value; where the field was
    // read or written before, it must hold the value, and of null it is broken.
    let t = trace_ir::parse_trace(
        "[p0]
         record_known_field(p0, 77, descr=<FieldS n 8>)
         i1 = getfield_gc_i(p0, descr=<FieldS n 8>)
         finish(i1)",
    )
    .unwrap();
    let obj = RtValue::Ref(0x5000_0000_2000);
    assert_eq!(go(&t, &[obj]).outcome, Outcome::Finish(vec![RtValue::Int(77)]));
    let broken = |text: &str, inputs: &[RtValue]| {
        let r = go(&trace_ir::parse_trace(text).unwrap(), inputs);
        matches!(r.outcome, Outcome::Invalid { promise: true, .. })
    };
    assert!(broken(
        "[p0]
         record_known_field(p0, 77, descr=<FieldS n 8>)
         finish()",
        &[RtValue::Ref(0)]
    ));
    // Read first: the run's value is not 77.
    assert!(broken(
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS n 8>)
         record_known_field(p0, 77, descr=<FieldS n 8>)
         finish(i1)",
        &[obj]
    ));
    // Written first: the promise is about the written value (narrowed as the field stores).
    for (stored, broke) in [(77, false), (78, true)] {
        assert_eq!(
            broken(
                &format!(
                    "[p0]
                     setfield_gc(p0, {stored}, descr=<FieldS n 8>)
                     record_known_field(p0, 77, descr=<FieldS n 8>)
                     finish()"
                ),
                &[obj]
            ),
            broke
        );
    }
    assert!(!broken(
        "[p0]
         setfield_gc(p0, 257, descr=<FieldU b 8 size=1>)
         record_known_field(p0, 1, descr=<FieldU b 8 size=1>)
         finish()",
        &[obj]
    ));
}

#[test]
fn a_known_field_decides_only_reads_of_its_kind() {
    // Views of initial memory that read another kind are unrelated, so a float read of the
    // same bytes, before or after the promise, sees the derived float either way: dropping a
    // dead float load before the promise changes nothing.
    let obj = RtValue::Ref(0x5000_0000_2000);
    let float_after = |read_first: bool| {
        let first = if read_first {
            "f9 = getfield_gc_f(p0, descr=<FieldF v 8>)"
        } else {
            ""
        };
        let text = format!(
            "[p0]
             {first}
             record_known_field(p0, 77, descr=<FieldS n 8>)
             i1 = getfield_gc_i(p0, descr=<FieldS n 8>)
             f2 = getfield_gc_f(p0, descr=<FieldF v 8>)
             finish(i1, f2)"
        );
        go(&trace_ir::parse_trace(&text).unwrap(), &[obj]).outcome
    };
    let (before, after) = (float_after(true), float_after(false));
    assert_eq!(before, after);
    let Outcome::Finish(values) = before else {
        panic!("{before:?}")
    };
    assert_eq!(values[0], RtValue::Int(77));
    assert_ne!(
        values[1].bits(),
        77,
        "the float view is not decided by the integer promise"
    );
}
