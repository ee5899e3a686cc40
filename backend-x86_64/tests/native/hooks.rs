//! Hooks mode with the interpreter's model as the runtime, and the ops served through
//! `Runtime::exec` in both modes (strings, exceptions, `call_assembler`, type guards).

use super::*;

use super::random::same_with_heap;
use trace_interp::{outcomes_equivalent, ModelHeap};
use trace_ir::descr::{ArrayDescr, SizeDescr};

fn hooks_opts() -> CompileOptions {
    CompileOptions {
        memory: MemoryAccess::Hooks,
        ..opts()
    }
}

/// Run `t` natively in Hooks mode against the interpreter's model and compare the whole run
/// (exit, values, allocated objects by content, calls, external memory, exception state)
/// with the interpreter's. Returns the interpreter's outcome.
fn model_run(t: &Trace, inputs: &[RtValue], cfg: &RunConfig, o: &CompileOptions) -> Result<Outcome, String> {
    let want = interp::run(t, inputs, cfg);
    let c = compile(t, o).map_err(|e| format!("compile: {e}\n{}", trace_ir::text::print_trace(t)))?;
    let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
    let mut model = ModelHeap::new(t, cfg);
    let exit = c.run_test(&words, &mut model).map_err(|e| e.to_string())?;
    let got = model.into_result(exit_outcome(&exit));
    // A broken promise of the memory model (type-based aliasing, a hint) has no defined
    // outcome, and native code does not check promises.
    if matches!(want.outcome, Outcome::Invalid { promise: true, .. }) {
        return Ok(want.outcome);
    }
    outcomes_equivalent(&want, &got).map_err(|e| {
        format!(
            "{e}\n  interp: {}\n  native: {}\n{}",
            want.outcome,
            got.outcome,
            trace_ir::text::print_trace(t)
        )
    })?;
    Ok(want.outcome)
}

/// Random traces with reference inputs (external objects), heap ops, calls (derived results,
/// heap clobbering, escape) and loops, as generated and optimized, in Hooks mode against the
/// model: the same runs as the interpreter's.
#[test]
fn hooks_random_traces_with_external_objects_and_calls() {
    let cfg = RandomConfig {
        heap: 8,
        calls: 4,
        ..RandomConfig::default()
    };
    let (mut compared, mut with_calls, mut with_external) = (0, 0, 0);
    for seed in 0..2000u64 {
        let (t, inputs) = random_trace(&cfg, seed);
        let o = if seed % 4 == 3 {
            CompileOptions {
                memory: MemoryAccess::Hooks,
                ..tight()
            }
        } else {
            hooks_opts()
        };
        let mut variants = vec![t.clone()];
        if seed % 2 == 0 {
            if let Ok(opt) = optimizer::optimize(&t, &optimizer::Options::default()) {
                variants.push(opt.trace);
            }
        }
        for v in &variants {
            let r = interp::run(v, &inputs, &RunConfig::default());
            if r.outcome == Outcome::IterationLimit {
                continue;
            }
            if !r.calls.is_empty() {
                with_calls += 1;
            }
            if !r.heap.external.is_empty() {
                with_external += 1;
            }
            model_run(v, &inputs, &RunConfig::default(), &o).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            compared += 1;
        }
    }
    assert!(compared > 2500, "only {compared} runs compared");
    assert!(with_calls > 300, "only {with_calls} runs made heap-writing calls");
    assert!(
        with_external > 500,
        "only {with_external} runs touched external objects"
    );
}

/// Hooks mode with the default hooks (`exec_in_memory`, virtuals rebuilt by the backend) on
/// real memory: random heap traces and their optimized versions behave as in the
/// interpreter, as in Direct mode.
#[test]
fn hooks_mode_with_the_default_hooks_on_real_memory() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        ..RandomConfig::default()
    };
    let mut compared = 0;
    for seed in 0..800u64 {
        let (t, inputs) = random_trace(&cfg, seed);
        let mut variants = vec![t.clone()];
        if let Ok(opt) = optimizer::optimize(&t, &optimizer::Options::default()) {
            variants.push(opt.trace);
        }
        for v in &variants {
            let int = interp::run(v, &inputs, &RunConfig::default());
            if int.outcome == Outcome::IterationLimit {
                continue;
            }
            let c = compile(v, &hooks_opts()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let words: Vec<u64> = inputs.iter().map(|x| x.bits()).collect();
            let mut heap = SimpleHeap::new();
            let native = c.run_test(&words, &mut heap).unwrap();
            if let Err(e) = same_with_heap(v, &native, &heap, &int) {
                panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(v));
            }
            compared += 1;
        }
    }
    assert!(compared > 1000, "only {compared} runs compared");
}

/// A trace of string (or unicode) ops on two strings it allocates:
/// `[n, i, c, j, n2, s, d, k, m]`: p = newstr(n); p[0] = c; p[i] = c + 1; q = newstr(n2);
/// copy k chars p[s..] -> q[d..]; finish(p[j], strlen(p), strhash(p), q[m], strhash(q)).
fn string_trace(unicode: bool) -> Trace {
    use Opcode::*;
    let (new, set, get, len, hash, copy) = if unicode {
        (
            Newunicode,
            Unicodesetitem,
            Unicodegetitem,
            Unicodelen,
            Unicodehash,
            Copyunicodecontent,
        )
    } else {
        (Newstr, Strsetitem, Strgetitem, Strlen, Strhash, Copystrcontent)
    };
    let mut b = TraceBuilder::new();
    let ins: Vec<trace_ir::Value> = (0..9).map(|_| b.input(Kind::Int)).collect();
    let (n, i, c, j, n2, s, d, k, m) = (ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], ins[6], ins[7], ins[8]);
    let p = b.op(new, &[n]);
    let zero = b.const_int(0);
    b.op(set, &[p, zero, c]);
    let one = b.const_int(1);
    let c1 = b.op(IntAdd, &[c, one]);
    b.op(set, &[p, i, c1]);
    let q = b.op(new, &[n2]);
    b.op(copy, &[p, q, s, d, k]);
    let x = b.op(get, &[p, j]);
    let l = b.op(len, &[p]);
    let h = b.op(hash, &[p]);
    let y = b.op(get, &[q, m]);
    let h2 = b.op(hash, &[q]);
    b.finish(&[x, l, h, y, h2]);
    b.build().unwrap()
}

/// String and unicode ops, in Direct mode (served on real memory by `exec_in_memory`) and
/// in Hooks mode (the interpreter's model), against the interpreter, including
/// out-of-bounds indices, bad lengths and empty copies.
#[test]
fn string_ops_match_the_interpreter() {
    let mut rng = trace_interp::rng::Rng::new(99);
    for unicode in [false, true] {
        let t = string_trace(unicode);
        let mut valid = 0;
        for round in 0..400 {
            let inputs: Vec<i64> = if round == 0 {
                vec![5, 4, 300, 4, 6, 0, 1, 5, 5]
            } else if round % 4 == 0 {
                // Anything small, mostly invalid somewhere.
                (0..9)
                    .map(|k| {
                        if k == 2 {
                            rng.range_i64(-1000, 100_000)
                        } else {
                            rng.range_i64(-2, 9)
                        }
                    })
                    .collect()
            } else {
                // In bounds (`range_i64` includes both ends).
                let (n, n2) = (rng.range_i64(1, 8), rng.range_i64(1, 8));
                let k = rng.range_i64(0, n.min(n2));
                vec![
                    n,
                    rng.range_i64(0, n - 1),
                    rng.range_i64(-1000, 100_000),
                    rng.range_i64(0, n - 1),
                    n2,
                    rng.range_i64(0, n - k),
                    rng.range_i64(0, n2 - k),
                    k,
                    rng.range_i64(0, n2 - 1),
                ]
            };
            let rt: Vec<RtValue> = inputs.iter().map(|&v| RtValue::Int(v)).collect();
            let words: Vec<u64> = inputs.iter().map(|&v| v as u64).collect();
            let int = interp::run(&t, &rt, &RunConfig::default()).outcome;
            if matches!(int, Outcome::Finish(_)) {
                valid += 1;
            }
            let native = compile(&t, &opts())
                .unwrap()
                .run_test(&words, &mut SimpleHeap::new())
                .unwrap();
            same(&t, &native, &int).unwrap_or_else(|e| panic!("direct, inputs {inputs:?}: {e}"));
            model_run(&t, &rt, &RunConfig::default(), &hooks_opts())
                .unwrap_or_else(|e| panic!("hooks, inputs {inputs:?}: {e}"));
        }
        // The fixed first round: p = [300, 0, 0, 0, 301], q[1..6] = p[0..5].
        let native = compile(&t, &opts())
            .unwrap()
            .run_test(&[5, 4, 300, 4, 6, 0, 1, 5, 5], &mut SimpleHeap::new())
            .unwrap();
        let Exit::Finish { values } = native else {
            panic!("{native:?}")
        };
        let (c0, c4) = if unicode { (300, 301) } else { (300 & 0xff, 301 & 0xff) };
        assert_eq!(
            (values[0], values[1], values[3]),
            (ExitValue::Int(c4), ExitValue::Int(5), ExitValue::Int(c4)),
            "q[5] is the copied p[4]: {values:?}"
        );
        let Exit::Finish { values: v2 } = compile(&t, &opts())
            .unwrap()
            .run_test(&[5, 4, 300, 4, 6, 0, 1, 5, 1], &mut SimpleHeap::new())
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(v2[3], ExitValue::Int(c0), "q[1] is the copied p[0]");
        assert!(valid > 250, "only {valid} valid runs");
    }
}

/// A trace with the exception ops: `[c, v, w]`: restore_exception(c, v); k = save_exc_class;
/// guard_exception(w) (its value e); guard_no_exception; e2 = save_exception; finish(k, e, e2).
fn exception_trace() -> Trace {
    use Opcode::*;
    let mut b = TraceBuilder::new();
    let (c, v, w) = (b.input(Kind::Int), b.input(Kind::Ref), b.input(Kind::Int));
    b.op(RestoreException, &[c, v]);
    let k = b.op(SaveExcClass, &[]);
    b.guard(GuardNoException, &[], &[k], 1);
    b.op(RestoreException, &[c, v]);
    let (e, _) = b.guard_op(GuardException, &[w], &[k], 2);
    b.guard(GuardNoException, &[], &[e], 3);
    b.op(RestoreException, &[w, v]);
    let e2 = b.op(SaveException, &[]);
    b.guard(GuardNoException, &[], &[e2], 4);
    b.finish(&[k, e, e2]);
    b.build().unwrap()
}

/// The exception ops in both modes against the interpreter: Direct mode keeps a per-run
/// exception state, Hooks mode uses the model's.
#[test]
fn exception_ops_match_the_interpreter() {
    let t = exception_trace();
    let v = trace_interp::heap::external_address(77);
    for (c, val, w) in [
        (0, 0, 0),
        (0, v, 0),
        (5, v, 5),
        (5, v, 6),
        (5, 0, 5),
        (0, 0, 3),
        (7, v, 7),
    ] {
        let inputs = [RtValue::Int(c), RtValue::Ref(val), RtValue::Int(w)];
        let words = [c as u64, val, w as u64];
        let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
        let native = compile(&t, &opts())
            .unwrap()
            .run_test(&words, &mut SimpleHeap::new())
            .unwrap();
        same(&t, &native, &int).unwrap_or_else(|e| panic!("direct ({c}, {val:#x}, {w}): {e}"));
        model_run(&t, &inputs, &RunConfig::default(), &hooks_opts())
            .unwrap_or_else(|e| panic!("hooks ({c}, {val:#x}, {w}): {e}"));
    }
    // (0, 0, 0): no exception anywhere; (5, v, 5) reaches finish with e = v; (5, v, 6) fails
    // guard_exception; (0, v, 0) fails the first guard_no_exception.
    let run = |c: i64, val: u64, w: i64| {
        compile(&t, &opts())
            .unwrap()
            .run_test(&[c as u64, val, w as u64], &mut SimpleHeap::new())
            .unwrap()
    };
    assert!(matches!(run(5, v, 5), Exit::Guard { resume_key: 1, .. }));
    assert!(matches!(run(0, 0, 0), Exit::Guard { resume_key: 2, .. }));
    assert!(matches!(run(0, 0, 3), Exit::Guard { resume_key: 2, .. }));
    let t2 = {
        // Without the first check: restore then guard_exception.
        use Opcode::*;
        let mut b = TraceBuilder::new();
        let (c, v, w) = (b.input(Kind::Int), b.input(Kind::Ref), b.input(Kind::Int));
        b.op(RestoreException, &[c, v]);
        let (e, _) = b.guard_op(GuardException, &[w], &[c], 2);
        b.guard(GuardNoException, &[], &[e], 3);
        b.finish(&[e]);
        b.build().unwrap()
    };
    for (c, val, w) in [(5, v, 5), (5, v, 6), (0, 0, 0), (0, v, 0)] {
        let inputs = [RtValue::Int(c), RtValue::Ref(val), RtValue::Int(w)];
        let int = interp::run(&t2, &inputs, &RunConfig::default()).outcome;
        let native = compile(&t2, &opts())
            .unwrap()
            .run_test(&[c as u64, val, w as u64], &mut SimpleHeap::new())
            .unwrap();
        same(&t2, &native, &int).unwrap_or_else(|e| panic!("direct ({c}, {val:#x}, {w}): {e}"));
        model_run(&t2, &inputs, &RunConfig::default(), &hooks_opts()).unwrap();
    }
    let native = compile(&t2, &opts())
        .unwrap()
        .run_test(&[5, v, 5], &mut SimpleHeap::new())
        .unwrap();
    assert_eq!(
        native,
        Exit::Finish {
            values: vec![ExitValue::Ref(v)]
        }
    );
}

/// `call_assembler_r` in Hooks mode (the model derives its result and clobbers the heap),
/// and in Direct mode through an embedder that serves it in `Runtime::exec`.
#[test]
fn call_assembler_through_the_runtime() {
    use Opcode::*;
    let mut b = TraceBuilder::new();
    let (p, i) = (b.input(Kind::Ref), b.input(Kind::Int));
    let f = int_field(&mut b, 8);
    let before = b.op_with_descr(GetfieldGcI, &[p], f);
    let looptok = b.descr(Descr::Loop(3));
    let r = b.op_with_descr(CallAssemblerI, &[p, i], looptok);
    let after = b.op_with_descr(GetfieldGcI, &[p], f);
    b.finish(&[before, r, after]);
    let t = b.build().unwrap();
    let p0 = trace_interp::heap::external_address(5);
    let out = model_run(
        &t,
        &[RtValue::Ref(p0), RtValue::Int(4)],
        &RunConfig::default(),
        &hooks_opts(),
    )
    .unwrap();
    assert!(matches!(out, Outcome::Finish(_)), "{out}");
    // Direct mode: the default runtime cannot call compiled loops (invalid at the op) ...
    let code = compile(&t, &opts()).unwrap();
    let mut obj = [0u64, 41];
    let addr = obj.as_mut_ptr() as u64;
    assert_eq!(
        code.run_test(&[addr, 4], &mut SimpleHeap::new()).unwrap(),
        Exit::Invalid {
            op: trace_ir::OpRef::new(3)
        }
    );
    // ... an embedder that knows its loops serves it.
    struct Loops(SimpleHeap);
    impl Runtime for Loops {
        fn alloc(&mut self, size: u64, class: u64) -> u64 {
            self.0.alloc(size, class)
        }
        fn alloc_array(&mut self, size: u64, len: u64) -> u64 {
            self.0.alloc_array(size, len)
        }
        fn exec(&mut self, req: &HookRequest<'_>) -> HookReply {
            match (req.opcode, req.descr) {
                (Opcode::CallAssemblerI, Some(Descr::Loop(3))) => {
                    // "Loop 3" stores its second argument into field 8 and returns 7.
                    // SAFETY: the test passes a pointer to two live words.
                    unsafe { ((req.args[0] + 8) as *mut u64).write(req.args[1]) };
                    HookReply::Value(7)
                }
                _ => exec_in_memory(self, req),
            }
        }
    }
    let exit = code.run_test(&[addr, 4], &mut Loops(SimpleHeap::new())).unwrap();
    assert_eq!(
        exit,
        Exit::Finish {
            values: ints(&[41, 7, 4])
        }
    );
    obj[1] = 0;
    assert_eq!(obj, [0, 0]);
}

/// `guard_gc_type`, `guard_is_object` (and `guard_class`) on objects the trace allocates
/// (both modes) and on external objects (Hooks mode: the model decides their type on the
/// first check, as the interpreter does).
#[test]
fn type_guards_match_the_interpreter() {
    use Opcode::*;
    let size = SizeDescr { size: 24, vtable: None };
    let class = trace_ir::abi::default_class(&size);
    let build = |ext_checks: bool| {
        let mut b = TraceBuilder::new();
        let (e, want) = (b.input(Kind::Ref), b.input(Kind::Int));
        let sd = b.descr(Descr::Size(size.clone()));
        let obj = b.op_with_descr(NewWithVtable, &[], sd);
        let plain = b.op_with_descr(New, &[], sd);
        let ad = b.descr(Descr::Array(ArrayDescr {
            item_size: 8,
            signed: true,
            kind: Kind::Int,
            base_offset: 16,
            len_offset: 8,
        }));
        let two = b.const_int(2);
        let arr = b.op_with_descr(NewArray, &[two], ad);
        let cls = b.const_int(class as i64);
        b.guard(GuardGcType, &[obj, want], &[want], 1);
        b.guard(GuardGcType, &[obj, cls], &[want], 2);
        b.guard(GuardIsObject, &[obj], &[want], 3);
        b.guard(GuardClass, &[obj, cls], &[want], 4);
        b.guard(GuardIsObject, &[plain], &[want], 5);
        if ext_checks {
            b.guard(GuardGcType, &[e, want], &[want], 6);
            b.guard(GuardIsObject, &[e], &[want], 7);
            b.guard(GuardGcType, &[e, cls], &[want], 8);
        }
        b.finish(&[arr]);
        b.build().unwrap()
    };
    // Allocated objects only: both modes.
    let t = build(false);
    for want in [class as i64, class as i64 + 8, 0] {
        let inputs = [RtValue::Ref(0), RtValue::Int(want)];
        let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
        let native = compile(&t, &opts())
            .unwrap()
            .run_test(&[0, want as u64], &mut SimpleHeap::new())
            .unwrap();
        same(&t, &native, &int).unwrap_or_else(|e| panic!("direct {want:#x}: {e}"));
        model_run(&t, &inputs, &RunConfig::default(), &hooks_opts()).unwrap();
    }
    // `guard_is_object` on a plain `new` struct fails (class 0) once the gc-type checks pass.
    let native = compile(&t, &opts())
        .unwrap()
        .run_test(&[0, class], &mut SimpleHeap::new())
        .unwrap();
    assert!(matches!(native, Exit::Guard { resume_key: 5, .. }), "{native:?}");
    // External objects: Hooks mode, both class policies.
    let t = build(true);
    let e = trace_interp::heap::external_address(1234);
    for policy in [
        trace_interp::ClassPolicy::FirstCheckDecides,
        trace_interp::ClassPolicy::FromAddress,
    ] {
        let cfg = RunConfig {
            class_policy: policy,
            ..RunConfig::default()
        };
        for want in [class as i64, 99] {
            model_run(&t, &[RtValue::Ref(e), RtValue::Int(want)], &cfg, &hooks_opts()).unwrap();
        }
    }
}

/// `guard_not_invalidated` never fails in Direct mode; in Hooks mode the runtime answers
/// (the model fails it when the run configuration says the trace was invalidated).
#[test]
fn guard_not_invalidated_asks_the_runtime_in_hooks_mode() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.guard(Opcode::GuardNotInvalidated, &[], &[i], 9);
    b.finish(&[i]);
    let t = b.build().unwrap();
    for invalidated in [false, true] {
        let cfg = RunConfig {
            invalidated,
            ..RunConfig::default()
        };
        let out = model_run(&t, &[RtValue::Int(3)], &cfg, &hooks_opts()).unwrap();
        assert_eq!(matches!(out, Outcome::GuardFailed { resume_key: 9, .. }), invalidated);
    }
    let direct = compile(&t, &opts())
        .unwrap()
        .run_test(&[3], &mut SimpleHeap::new())
        .unwrap();
    assert_eq!(direct, Exit::Finish { values: ints(&[3]) });
}

/// Every op of the opcode table compiles in Hooks mode, and a one-op trace of it (operands
/// from inputs: integers, external objects or null, floats) runs like the interpreter's run
/// of it (whole runs compared).
#[test]
fn every_opcode_compiles_in_hooks_mode_and_runs_like_the_interpreter() {
    use trace_ir::opcode::OpFlags;
    use trace_ir::{CallDescr, CallEffect, DescrKind, InteriorDescr};
    let mut covered = 0;
    for &opc in Opcode::ALL {
        // Loads return, stores take, values of their descriptor's kind.
        let vk = match opc.result_kind() {
            k if opc.has(OpFlags::READS_HEAP) && k != Kind::Void && opc != Opcode::ArraylenGc => k,
            _ => Kind::Int,
        };
        let narrow = if vk == Kind::Int { 4 } else { 8 };
        let field = FieldDescr {
            name: "f".into(),
            offset: 8,
            size: narrow,
            signed: true,
            kind: vk,
            immutable: false,
        };
        // Overflow ops and their guards only exist in pairs (tested with the integer ops).
        if opc.is_input()
            || opc == Opcode::Label
            || opc.has(OpFlags::FINAL)
            || opc.is_ovf()
            || matches!(opc, Opcode::GuardNoOverflow | Opcode::GuardOverflow)
        {
            continue;
        }
        let mut b = TraceBuilder::new();
        let mut args = Vec::new();
        let mut extra_kinds = Vec::new();
        for (k, c) in opc.info().args.bytes().enumerate() {
            match c {
                b'i' | b'a' => args.push(b.input(Kind::Int)),
                b'r' => args.push(b.input(Kind::Ref)),
                b'f' => args.push(b.input(Kind::Float)),
                b'*' => {
                    // Variable operands: two integers (`call_assembler`: its arguments).
                    let _ = k;
                    for _ in 0..2 {
                        args.push(b.input(Kind::Int));
                        extra_kinds.push(Kind::Int);
                    }
                }
                _ => {}
            }
        }
        let d = match opc.descr_kind() {
            DescrKind::Field => Some(b.descr(Descr::Field(field.clone()))),
            DescrKind::Interior => Some(b.descr(Descr::Interior(InteriorDescr {
                item_size: 16,
                field: field.clone(),
            }))),
            DescrKind::Size => Some(b.descr(Descr::Size(SizeDescr { size: 16, vtable: None }))),
            DescrKind::Array => Some(b.descr(Descr::Array(ArrayDescr {
                item_size: if vk == Kind::Int { 2 } else { 8 },
                signed: false,
                kind: vk,
                base_offset: 16,
                len_offset: 8,
            }))),
            DescrKind::Call => Some(b.descr(Descr::Call(CallDescr {
                result: opc.result_kind(),
                result_size: 8,
                args: extra_kinds.clone(),
                effect: CallEffect::CanRaise,
                oopspec: None,
            }))),
            _ if opc.is_call() => Some(b.descr(Descr::Loop(2))),
            _ => None,
        };
        let inputs_v: Vec<trace_ir::Value> = (0..b.trace().num_inputs)
            .map(|i| trace_ir::Value::op(trace_ir::OpRef::new(i)))
            .collect();
        let result = if opc.is_guard() {
            let (r, _) = b.guard_op(opc, &args, &inputs_v, 1);
            r
        } else {
            let mut op = trace_ir::Op::new(opc, &args);
            op.descr = d;
            trace_ir::Value::op(b.push(op))
        };
        let mut outs = inputs_v.clone();
        if opc.result_kind() != Kind::Void {
            outs.push(result);
        }
        b.finish(&outs);
        let t = b.build().unwrap_or_else(|e| panic!("{opc}: {e}"));
        compile(&t, &hooks_opts()).unwrap_or_else(|e| panic!("{opc}: {e}"));
        // Direct mode compiles every op too (nothing is `CompileError::Unsupported`).
        compile(&t, &opts()).unwrap_or_else(|e| panic!("{opc} in Direct mode: {e}"));
        let kinds = t.input_kinds();
        for round in 0..6u64 {
            let inputs: Vec<RtValue> = kinds
                .iter()
                .enumerate()
                .map(|(k, kind)| match kind {
                    Kind::Ref if round == 5 => RtValue::Ref(0),
                    Kind::Ref => RtValue::Ref(trace_interp::heap::external_address(round * 7 + k as u64)),
                    Kind::Float => RtValue::float(1.5 * round as f64),
                    _ => RtValue::Int([0, 1, 2, 5, -1, 3][round as usize]),
                })
                .collect();
            model_run(&t, &inputs, &RunConfig::default(), &hooks_opts())
                .unwrap_or_else(|e| panic!("{opc}, round {round}: {e}"));
        }
        covered += 1;
    }
    // Skipped: 3 inputs, label, jump, finish, 3 `_ovf` ops and their 2 guards.
    assert_eq!(covered, Opcode::ALL.len() - 11);
}

/// A runtime that panics inside a hook: native code must not unwind; the run ends with an
/// invalid operation at the op instead.
#[test]
fn a_panicking_hook_is_an_invalid_exit() {
    struct Panics;
    impl Runtime for Panics {
        fn alloc(&mut self, _: u64, _: u64) -> u64 {
            0
        }
        fn alloc_array(&mut self, _: u64, _: u64) -> u64 {
            0
        }
        fn exec(&mut self, _: &HookRequest<'_>) -> HookReply {
            panic!("embedder bug (expected by this test)")
        }
    }
    let mut b = TraceBuilder::new();
    let (p, i) = (b.input(Kind::Ref), b.input(Kind::Int));
    let f = int_field(&mut b, 8);
    b.op_with_descr(Opcode::SetfieldGc, &[p, i], f);
    b.finish(&[i]);
    let t = b.build().unwrap();
    let c = compile(&t, &hooks_opts()).unwrap();
    assert_eq!(
        c.run_test(&[0x1000, 4], &mut Panics).unwrap(),
        Exit::Invalid {
            op: trace_ir::OpRef::new(2)
        }
    );
}

/// Hooks mode with the model as the runtime: the model rebuilds the exit's virtual object and
/// performs its writes as the interpreter does (the whole run compared, heap included).
#[test]
fn hooks_exits_perform_their_writes_in_the_model() {
    let t = exits::exit_write_trace();
    let cfg = RunConfig::default();
    for i in [0, 1] {
        let inputs = [
            RtValue::Ref(0x5000_0000_1008),
            RtValue::Ref(0x5000_0000_2008),
            RtValue::Int(i),
        ];
        let out = model_run(&t, &inputs, &cfg, &hooks_opts()).unwrap();
        assert_eq!(matches!(out, Outcome::GuardFailed { .. }), i == 0, "{out}");
    }
}

/// `record_known_field` emits no code in Direct mode; in Hooks mode the default hooks check
/// the promise on real memory (a field holding another value is an invalid operation).
#[test]
fn a_known_field_is_checked_by_the_default_hooks() {
    let text = |promised: i64| {
        format!(
            "[i0]
             p1 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>)
             setfield_gc(p1, i0, descr=<FieldU b 8 size=1>)
             record_known_field(p1, {promised}, descr=<FieldU b 8 size=1>)
             i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
             finish(i2)"
        )
    };
    for (promised, holds) in [(5, true), (261, true), (6, false)] {
        let t = trace_ir::parse_trace(&text(promised)).unwrap();
        for options in [opts(), hooks_opts()] {
            let hooked = options.memory == MemoryAccess::Hooks;
            let c = compile(&t, &options).unwrap();
            let exit = c.run_test(&[5], &mut SimpleHeap::new()).unwrap();
            match (holds || !hooked, exit) {
                (true, Exit::Finish { values }) => assert_eq!(values, vec![ExitValue::Int(5)]),
                (false, Exit::Invalid { .. }) => {}
                (_, other) => panic!("{promised} (hooks: {hooked}): {other:?}"),
            }
        }
    }
}
