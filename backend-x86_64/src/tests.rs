//! Unit tests of the backend: per-op results against `eval_pure`, loops, register pressure,
//! exits, and differential runs of random traces against the reference interpreter.

// dynasm's expansion converts dynamic register numbers with `.into()`, even from `u8`.
#![allow(clippy::useless_conversion)]

use crate::*;
use proptest::prelude::*;
use trace_ir::eval::eval_pure;
use trace_ir::interp::{self, Outcome, RtValue, RunConfig};
use trace_ir::random::{random_trace, RandomConfig, SPECIAL_INTS};
use trace_ir::{Kind, Opcode, TraceBuilder};

fn opts() -> CompileOptions {
    CompileOptions {
        memory: crate::MemoryAccess::Direct,
        int_regs: 13,
        float_regs: 15,
        log_asm: false,
        perf_map: false,
    }
}
fn tight() -> CompileOptions {
    CompileOptions {
        memory: crate::MemoryAccess::Direct,
        int_regs: 3,
        float_regs: 2,
        log_asm: false,
        perf_map: false,
    }
}

fn run_native(t: &Trace, inputs: &[u64], o: &CompileOptions) -> Exit {
    let c = compile(t, o).unwrap_or_else(|e| panic!("compile failed: {e}\n{}", trace_ir::text::print_trace(t)));
    c.run(inputs, &mut SimpleHeap::new()).unwrap()
}

/// Native exit vs interpreter outcome, for traces without references in their exits.
fn same(t: &Trace, native: &Exit, int: &Outcome) -> Result<(), String> {
    let bits = |v: &[RtValue]| v.iter().map(|x| x.bits()).collect::<Vec<u64>>();
    let ok = match (native, int) {
        (Exit::Finish { values }, Outcome::Finish(w)) => *values == bits(w),
        (
            Exit::Guard {
                guard,
                resume_key,
                values,
            },
            Outcome::GuardFailed {
                guard: g,
                resume_key: k,
                values: w,
            },
        ) => guard == g && resume_key == k && *values == bits(w),
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => true,
        (Exit::ExternalJump { target, values }, Outcome::ExternalJump { target: t, values: w }) => {
            target == t && *values == bits(w)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "native {native:?} vs interpreter {int}\n{}",
            trace_ir::text::print_trace(t)
        ))
    }
}

// ---------------------------------------------------------------------------------------
// Per-op tests
// ---------------------------------------------------------------------------------------

const BINARY: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
    Opcode::IntLshift,
    Opcode::IntRshift,
    Opcode::UintRshift,
    Opcode::UintMulHigh,
    Opcode::IntLt,
    Opcode::IntLe,
    Opcode::IntEq,
    Opcode::IntNe,
    Opcode::IntGt,
    Opcode::IntGe,
    Opcode::UintLt,
    Opcode::UintLe,
    Opcode::UintGt,
    Opcode::UintGe,
    Opcode::IntSignext,
];
const UNARY: &[Opcode] = &[
    Opcode::IntIsTrue,
    Opcode::IntIsZero,
    Opcode::IntNeg,
    Opcode::IntInvert,
    Opcode::IntForceGeZero,
    Opcode::SameAsI,
];

/// `finish(op(x, y))` with each operand an input or a constant: native = eval_pure.
fn check_binary(opc: Opcode, x: i64, y: i64) {
    let want = eval_pure(opc, &[x as u64, y as u64]);
    for (cx, cy) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut b = TraceBuilder::new();
        let ix = b.input(Kind::Int);
        let iy = b.input(Kind::Int);
        let vx = if cx { b.const_int(x) } else { ix };
        let vy = if cy { b.const_int(y) } else { iy };
        let r = b.op(opc, &[vx, vy]);
        // Keep x alive past the op so the result cannot reuse its register (exercises `lea`).
        b.finish_with(&[r, ix]);
        let t = b.finish().unwrap();
        let got = run_native(&t, &[x as u64, y as u64], &opts());
        match &want {
            Ok(w) => assert_eq!(
                got,
                Exit::Finish {
                    values: vec![*w, x as u64]
                },
                "{opc}({x}, {y}) consts {cx} {cy}"
            ),
            Err(_) => assert!(
                matches!(got, Exit::Invalid { .. }),
                "{opc}({x}, {y}) consts {cx} {cy}: {got:?}"
            ),
        }
    }
}

#[test]
fn binary_ops_on_special_values() {
    let specials: Vec<i64> = SPECIAL_INTS.iter().copied().chain([-63, 65, 4, 5, -8]).collect();
    for &opc in BINARY {
        for &x in &specials {
            for &y in &specials {
                check_binary(opc, x, y);
            }
        }
    }
}

#[test]
fn unary_ops_on_special_values() {
    for &opc in UNARY {
        for &x in SPECIAL_INTS {
            let mut b = TraceBuilder::new();
            let ix = b.input(Kind::Int);
            let r = b.op(opc, &[ix]);
            b.finish_with(&[r]);
            let t = b.finish().unwrap();
            let want = eval_pure(opc, &[x as u64]).unwrap();
            assert_eq!(
                run_native(&t, &[x as u64], &opts()),
                Exit::Finish { values: vec![want] },
                "{opc}({x})"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn binary_ops_random(i in 0..BINARY.len(), x in any::<i64>(), y in prop_oneof![any::<i64>(), -2i64..70]) {
        check_binary(BINARY[i], x, y);
    }

    #[test]
    fn float_ops_random(x in any::<f64>(), y in prop_oneof![any::<f64>(), Just(0.0), Just(f64::NAN), Just(1.0), Just(-0.0)]) {
        for opc in [Opcode::FloatAdd, Opcode::FloatSub, Opcode::FloatMul, Opcode::FloatTrueDiv, Opcode::FloatLt,
                    Opcode::FloatLe, Opcode::FloatEq, Opcode::FloatNe, Opcode::FloatGt, Opcode::FloatGe] {
            let mut b = TraceBuilder::new();
            let fx = b.input(Kind::Float);
            let fy = b.input(Kind::Float);
            let r = b.op(opc, &[fx, fy]);
            b.finish_with(&[r]);
            let t = b.finish().unwrap();
            let want = eval_pure(opc, &[x.to_bits(), y.to_bits()]).unwrap();
            let got = run_native(&t, &[x.to_bits(), y.to_bits()], &opts());
            prop_assert_eq!(got, Exit::Finish { values: vec![want] }, "{}({}, {})", opc, x, y);
        }
        for opc in [Opcode::FloatNeg, Opcode::FloatAbs, Opcode::CastFloatToInt, Opcode::ConvertFloatBytesToLonglong] {
            let mut b = TraceBuilder::new();
            let fx = b.input(Kind::Float);
            let r = b.op(opc, &[fx]);
            b.finish_with(&[r]);
            let t = b.finish().unwrap();
            let want = eval_pure(opc, &[x.to_bits()]).unwrap();
            prop_assert_eq!(run_native(&t, &[x.to_bits()], &opts()), Exit::Finish { values: vec![want] }, "{}({})", opc, x);
        }
    }

    #[test]
    fn int_to_float_random(x in any::<i64>()) {
        for opc in [Opcode::CastIntToFloat, Opcode::ConvertLonglongBytesToFloat] {
            let mut b = TraceBuilder::new();
            let ix = b.input(Kind::Int);
            let r = b.op(opc, &[ix]);
            b.finish_with(&[r]);
            let t = b.finish().unwrap();
            let want = eval_pure(opc, &[x as u64]).unwrap();
            prop_assert_eq!(run_native(&t, &[x as u64], &opts()), Exit::Finish { values: vec![want] });
        }
    }
}

#[test]
fn cast_float_to_int_edges() {
    for x in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        9.3e18,
        -9.3e18,
        9.223_372_036_854_776e18,
        -9.223_372_036_854_776e18,
        0.5,
        -0.5,
        1e300,
    ] {
        let mut b = TraceBuilder::new();
        let fx = b.input(Kind::Float);
        let r = b.op(Opcode::CastFloatToInt, &[fx]);
        b.finish_with(&[r]);
        let t = b.finish().unwrap();
        let want = eval_pure(Opcode::CastFloatToInt, &[x.to_bits()]).unwrap();
        assert_eq!(
            run_native(&t, &[x.to_bits()], &opts()),
            Exit::Finish { values: vec![want] },
            "{x}"
        );
    }
}

/// `_ovf` + guard at the overflow edges: native exit = interpreter outcome.
#[test]
fn overflow_guards_at_the_edges() {
    for opc in [Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf] {
        for guard in [Opcode::GuardNoOverflow, Opcode::GuardOverflow] {
            for &x in SPECIAL_INTS {
                for &y in SPECIAL_INTS {
                    let mut b = TraceBuilder::new();
                    let ix = b.input(Kind::Int);
                    let iy = b.input(Kind::Int);
                    let r = b.op(opc, &[ix, iy]);
                    b.guard(guard, &[], &[ix, r], 42);
                    b.finish_with(&[r]);
                    let t = b.finish().unwrap();
                    let native = run_native(&t, &[x as u64, y as u64], &opts());
                    let int = interp::run(&t, &[RtValue::Int(x), RtValue::Int(y)], &RunConfig::default()).outcome;
                    same(&t, &native, &int).unwrap();
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Loops and register pressure
// ---------------------------------------------------------------------------------------

/// A loop whose jump rotates its `k` carried values (a cycle of length `k` in the parallel
/// move) while counting down; the exit reports the rotated values.
fn rotation_loop(k: usize, iters: i64) -> Trace {
    let mut b = TraceBuilder::new();
    let mut ins = vec![b.input(Kind::Int)];
    for _ in 0..k {
        ins.push(b.input(Kind::Int));
    }
    let p = b.label(&ins);
    let zero = b.const_int(0);
    let gt = b.op(Opcode::IntGt, &[p[0], zero]);
    b.guard(Opcode::GuardTrue, &[gt], &p, 1);
    let one = b.const_int(1);
    let n2 = b.op(Opcode::IntSub, &[p[0], one]);
    let mut next = vec![n2];
    for j in 0..k {
        next.push(p[1 + (j + 1) % k]);
    }
    b.jump(&next);
    let _ = iters;
    b.finish().unwrap()
}

#[test]
fn jump_permutes_its_arguments() {
    for o in [opts(), tight()] {
        for k in 2..=5 {
            for iters in 0..7i64 {
                let t = rotation_loop(k, iters);
                let mut inputs = vec![iters as u64];
                inputs.extend((0..k as u64).map(|j| 100 + j));
                let native = run_native(&t, &inputs, &o);
                let int = interp::run(
                    &t,
                    &inputs.iter().map(|&v| RtValue::Int(v as i64)).collect::<Vec<_>>(),
                    &RunConfig::default(),
                )
                .outcome;
                same(&t, &native, &int).unwrap();
            }
            // With every carried value in a register, the cycle goes through `r11`, not
            // through the frame's temporary word at `[rbp+8]`.
            if o.int_regs == opts().int_regs && cfg!(feature = "disasm") {
                let t = rotation_loop(k, 0);
                let listing = compile(&t, &o).unwrap().disassembly(&t);
                let jump = &listing[listing.find("= jump(").unwrap()..];
                assert!(jump.contains("r11") && !jump.contains("[rbp+8]"), "{jump}");
            }
        }
    }
}

/// More live values than registers: 40 values, all summed at the end, with a guard in the
/// middle whose fail arguments are all of them.
#[test]
fn more_live_values_than_registers() {
    for o in [opts(), tight()] {
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        let mut vals = Vec::new();
        for k in 0..40 {
            let c = b.const_int(k * 1000 + 7);
            vals.push(b.op(Opcode::IntMul, &[x, c]));
        }
        let lim = b.const_int(5);
        let lt = b.op(Opcode::IntLt, &[x, lim]);
        b.guard(Opcode::GuardTrue, &[lt], &vals, 9);
        let mut acc = vals[0];
        for &v in &vals[1..] {
            acc = b.op(Opcode::IntXor, &[acc, v]);
            acc = b.op(Opcode::IntAdd, &[acc, v]);
        }
        b.finish_with(&[acc]);
        let t = b.finish().unwrap();
        for input in [3i64, 7] {
            let native = run_native(&t, &[input as u64], &o);
            let int = interp::run(&t, &[RtValue::Int(input)], &RunConfig::default()).outcome;
            same(&t, &native, &int).unwrap();
        }
    }
}

/// A jump without a label goes back to the trace start.
#[test]
fn jump_to_trace_start() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    let acc = b.input(Kind::Int);
    let ten = b.const_int(10);
    let lt = b.op(Opcode::IntLt, &[i, ten]);
    b.guard(Opcode::GuardTrue, &[lt], &[acc, i], 3);
    let acc2 = b.op(Opcode::IntAdd, &[acc, i]);
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAdd, &[i, one]);
    b.jump(&[i2, acc2]);
    let t = b.finish().unwrap();
    match run_native(&t, &[0, 0], &opts()) {
        Exit::Guard {
            guard,
            resume_key,
            values,
        } => {
            assert_eq!((guard.0, resume_key), (0, 3));
            assert_eq!(values, vec![45, 10]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_input_count_is_an_error() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.finish_with(&[i]);
    let t = b.finish().unwrap();
    let c = compile(&t, &opts()).unwrap();
    assert_eq!(
        c.run(&[], &mut SimpleHeap::new()),
        Err(RunError::InputCount { expected: 1, got: 0 })
    );
}

/// A call with more arguments than argument registers compiles in both modes (Direct mode
/// passes the rest on the stack; `calls_with_stack_arguments_match_the_interpreter` runs
/// such calls), and the compiled Direct code pushes the stack argument.
#[test]
fn calls_with_stack_arguments_compile_in_both_modes() {
    let mut b = TraceBuilder::new();
    let f = b.input(Kind::Int);
    let args: Vec<_> = std::iter::once(f).chain((0..7).map(|k| b.const_int(k))).collect();
    let cd = b.descr(trace_ir::Descr::Call(trace_ir::CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: vec![Kind::Int; 7],
        effect: trace_ir::CallEffect::CanRaise,
        oopspec: None,
    }));
    let r = b.op_with_descr(Opcode::CallI, &args, cd);
    b.finish_with(&[r]);
    let t = b.finish().unwrap();
    let direct = compile(&t, &opts()).unwrap();
    // `push 6` (the seventh argument, `push imm32`), after `sub rsp, 8` for alignment.
    let code = direct.code();
    let sub_push = [0x48, 0x83, 0xec, 0x08, 0x68, 0x06, 0, 0, 0];
    assert!(
        code.windows(sub_push.len()).any(|w| w == sub_push),
        "no `sub rsp, 8 ; push 6` in {code:02x?}"
    );
    let hooks = CompileOptions {
        memory: MemoryAccess::Hooks,
        ..opts()
    };
    assert!(compile(&t, &hooks).is_ok());
}

#[test]
fn compiled_trace_is_send_and_sync_and_drops() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledTrace>();
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.finish_with(&[i]);
    let t = b.finish().unwrap();
    let c = compile(&t, &opts()).unwrap();
    let h = std::thread::spawn(move || c.run(&[5], &mut SimpleHeap::new()).unwrap());
    assert_eq!(h.join().unwrap(), Exit::Finish { values: vec![5] });
}

/// Code compiled into a recycled mapping runs like code in a fresh one: traces compiled
/// and dropped in turn, each run after the previous one's mapping went back to the cache.
#[test]
fn code_in_recycled_memory_runs() {
    for k in 0..50u64 {
        let mut b = TraceBuilder::new();
        let i = b.input(Kind::Int);
        let c = b.const_int(k as i64);
        let s = b.op(Opcode::IntAdd, &[i, c]);
        b.finish_with(&[s]);
        let t = b.finish().unwrap();
        let c = compile(&t, &opts()).unwrap();
        assert_eq!(
            c.run(&[5], &mut SimpleHeap::new()).unwrap(),
            Exit::Finish { values: vec![5 + k] }
        );
    }
}

// ---------------------------------------------------------------------------------------
// Differential tests on random traces
// ---------------------------------------------------------------------------------------

fn no_heap() -> RandomConfig {
    RandomConfig {
        max_ref_inputs: 0,
        heap: 0,
        calls: 0,
        ..RandomConfig::default()
    }
}

fn differential(cfg: &RandomConfig, seeds: std::ops::Range<u64>, o: &CompileOptions) {
    let mut compiled = 0;
    let mut loops_left_by_guard = 0;
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
        let c = match compile(&t, o) {
            Ok(c) => c,
            Err(e) => panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)),
        };
        compiled += 1;
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let native = c.run(&words, &mut SimpleHeap::new()).unwrap();
        if let Err(e) = same(&t, &native, &int) {
            panic!("seed {seed}: {e}");
        }
        if t.last_label().is_some() && matches!(native, Exit::Guard { .. }) {
            loops_left_by_guard += 1;
        }
    }
    // The generator must really have produced loops that ran natively.
    if cfg.loops {
        assert!(
            loops_left_by_guard * 5 > compiled,
            "only {loops_left_by_guard} of {compiled} traces looped"
        );
    }
}

#[test]
fn random_integer_traces() {
    differential(&RandomConfig::integers_only(), 0..1500, &opts());
}

#[test]
fn random_loops_with_floats() {
    differential(&no_heap(), 0..1500, &opts());
}

#[test]
fn random_loops_under_register_pressure() {
    differential(
        &RandomConfig {
            length: 60,
            ..no_heap()
        },
        0..1000,
        &tight(),
    );
}

#[test]
fn values_are_never_lost_reading_the_argument_twice() {
    // x - x and x op x with x dying here (the result reuses x's register).
    for opc in [Opcode::IntSub, Opcode::IntAdd, Opcode::IntXor, Opcode::IntMul] {
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        let one = b.const_int(1);
        let y = b.op(Opcode::IntAdd, &[x, one]);
        let r = b.op(opc, &[y, y]);
        b.finish_with(&[r]);
        let t = b.finish().unwrap();
        let yv = 6u64;
        let want = eval_pure(opc, &[yv, yv]).unwrap();
        assert_eq!(run_native(&t, &[5], &opts()), Exit::Finish { values: vec![want] });
    }
}

// ---------------------------------------------------------------------------------------
// Heap: native memory compared with the interpreter's modelled heap, by content
// ---------------------------------------------------------------------------------------

/// Compares interpreter values (with its heap) against native words (with real memory),
/// pairing interpreter objects with native objects as they are reached.
struct HeapCmp<'a> {
    iheap: &'a trace_ir::interp::Heap,
    nheap: &'a SimpleHeap,
    pairs: std::collections::HashMap<u64, u64>,
}

impl HeapCmp<'_> {
    fn value(&mut self, what: &str, i: RtValue, n: u64) -> Result<(), String> {
        match i {
            RtValue::Ref(a) => self.refs(what, a, n),
            other if other.bits() == n => Ok(()),
            other => Err(format!("{what}: interpreter {other} vs native {n:#x}")),
        }
    }

    fn refs(&mut self, what: &str, a: u64, n: u64) -> Result<(), String> {
        if (a == 0) != (n == 0) {
            return Err(format!("{what}: interpreter {a:#x} vs native {n:#x}"));
        }
        let Some(obj) = self.iheap.objects.get(&a) else {
            return if a == n {
                Ok(())
            } else {
                Err(format!("{what}: external {a:#x} vs {n:#x}"))
            };
        };
        if let Some(&seen) = self.pairs.get(&a) {
            return if seen == n {
                Ok(())
            } else {
                Err(format!("{what}: object shared differently"))
            };
        }
        self.pairs.insert(a, n);
        let alloc = self
            .nheap
            .find(n)
            .ok_or_else(|| format!("{what}: native {n:#x} is not an allocation"))?;
        // SAFETY (reads below): `n` is the start of a live SimpleHeap allocation of
        // `alloc.size` bytes and every offset read is checked against that size.
        let read = |off: u64, size: u8, signed: bool| -> Result<u64, String> {
            if off + size as u64 > alloc.size + 64 {
                return Err(format!("{what}: read at {off} outside {} bytes", alloc.size));
            }
            Ok(unsafe { crate::runtime::read_mem(n + off, size, signed) })
        };
        if obj.class != 0 && read(0, 8, false)? != obj.class {
            return Err(format!("{what}: class differs"));
        }
        let obj_len = match obj.kind {
            trace_ir::interp::ObjKind::Struct { .. } => None,
            trace_ir::interp::ObjKind::Array { len, .. }
            | trace_ir::interp::ObjKind::Str { len }
            | trace_ir::interp::ObjKind::Unicode { len } => Some(len),
        };
        if let Some(len) = obj_len {
            if alloc.len != Some(len) {
                return Err(format!("{what}: array length {len} vs {:?}", alloc.len));
            }
        }
        // Every byte the interpreter wrote (its cells: fields, items, the class and length
        // words) against native memory.
        let cells: Vec<(i64, u8, RtValue)> = obj.cells.iter().map(|(&s, c)| (s, c.size, c.value)).collect();
        for (off, size, v) in cells {
            let at = format!("{what}@{off}..{}", off + size as i64);
            let off = u64::try_from(off).map_err(|_| format!("{at}: negative offset"))?;
            let w = read(off, size, false)?;
            match v {
                RtValue::Ref(_) if size == 8 => self.value(&at, v, w)?,
                _ => {
                    let mask = if size >= 8 { u64::MAX } else { (1u64 << (8 * size)) - 1 };
                    if v.bits() & mask != w {
                        return Err(format!("{at}: interpreter {v:?} vs native {w:#x}"));
                    }
                }
            }
        }
        Ok(())
    }
}

fn same_with_heap(t: &Trace, native: &Exit, nheap: &SimpleHeap, int: &interp::RunResult) -> Result<(), String> {
    let mut c = HeapCmp {
        iheap: &int.heap,
        nheap,
        pairs: Default::default(),
    };
    let pairwise = |c: &mut HeapCmp, x: &[RtValue], y: &[u64]| -> Result<(), String> {
        if x.len() != y.len() {
            return Err("different number of values".into());
        }
        for (k, (&a, &b)) in x.iter().zip(y).enumerate() {
            c.value(&format!("value {k}"), a, b)?;
        }
        Ok(())
    };
    match (native, &int.outcome) {
        (Exit::Finish { values }, Outcome::Finish(w)) => pairwise(&mut c, w, values),
        (
            Exit::Guard {
                guard,
                resume_key,
                values,
            },
            Outcome::GuardFailed {
                guard: g,
                resume_key: k,
                values: w,
            },
        ) if guard == g && resume_key == k => pairwise(&mut c, w, values),
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => Ok(()),
        // native code does not check the memory model's promises
        (_, Outcome::Invalid { promise: true, .. }) => Ok(()),
        (n, i) => Err(format!("native {n:?} vs interpreter {i}")),
    }
}

fn heap_differential(cfg: &RandomConfig, seeds: std::ops::Range<u64>, o: &CompileOptions) -> usize {
    let mut with_heap = 0;
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        let int = interp::run(&t, &inputs, &RunConfig::default());
        let c = compile(&t, o).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)));
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let mut heap = SimpleHeap::new();
        let native = c.run(&words, &mut heap).unwrap();
        if !heap.allocations.is_empty() {
            with_heap += 1;
        }
        if let Err(e) = same_with_heap(&t, &native, &heap, &int) {
            panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t));
        }
    }
    with_heap
}

/// Random traces with allocations, field and array accesses (objects allocated in the trace,
/// so native code works on real memory from the runtime; no reference inputs).
#[test]
fn random_heap_traces() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        ..RandomConfig::default()
    };
    let n = heap_differential(&cfg, 0..1500, &opts());
    assert!(n > 500, "only {n} traces allocated");
    heap_differential(&cfg, 1500..2000, &tight());
}

// ---------------------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------------------

extern "sysv64" fn host_mix(a: i64, b: i64) -> i64 {
    a.wrapping_mul(31).wrapping_add(b) ^ 0x55
}
extern "sysv64" fn host_scale(x: f64, k: i64) -> f64 {
    x * k as f64 + 0.5
}
extern "sysv64" fn host_six(a: i64, b: i64, c: i64, d: i64, e: i64, f: i64) -> i64 {
    a - 2 * b + 3 * c - 4 * d + 5 * e - 6 * f
}

fn call_config() -> RunConfig {
    let mut cfg = RunConfig::default();
    let f1 = host_mix as *const () as u64;
    let f2 = host_scale as *const () as u64;
    let f3 = host_six as *const () as u64;
    cfg.functions.insert(
        f1,
        std::sync::Arc::new(|a: &[RtValue]| RtValue::Int(host_mix(a[0].bits() as i64, a[1].bits() as i64))),
    );
    cfg.functions.insert(
        f2,
        std::sync::Arc::new(|a: &[RtValue]| {
            RtValue::float(host_scale(f64::from_bits(a[0].bits()), a[1].bits() as i64))
        }),
    );
    cfg.functions.insert(
        f3,
        std::sync::Arc::new(|a: &[RtValue]| {
            let w: Vec<i64> = a.iter().map(|v| v.bits() as i64).collect();
            RtValue::Int(host_six(w[0], w[1], w[2], w[3], w[4], w[5]))
        }),
    );
    cfg
}

/// Values live across many calls (in caller-saved registers before the calls), float and
/// integer arguments and results, six register arguments; in a loop and under pressure.
#[test]
fn values_live_across_calls() {
    use trace_ir::{CallDescr, CallEffect, Descr};
    let mut b = TraceBuilder::new();
    let n = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let f = b.input(Kind::Float);
    let p = b.label(&[n, x, f]);
    let zero = b.const_int(0);
    let gt = b.op(Opcode::IntGt, &[p[0], zero]);
    b.guard(Opcode::GuardTrue, &[gt], &[p[1], p[2]], 5);
    let di = b.descr(Descr::Call(CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: vec![Kind::Int, Kind::Int],
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let df = b.descr(Descr::Call(CallDescr {
        result: Kind::Float,
        result_size: 8,
        args: vec![Kind::Float, Kind::Int],
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let d6 = b.descr(Descr::Call(CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: vec![Kind::Int; 6],
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let fmix = b.const_int(host_mix as *const () as i64);
    let fscale = b.const_int(host_scale as *const () as i64);
    let fsix = b.const_int(host_six as *const () as i64);
    let mut live = vec![p[1]];
    for k in 0..12 {
        let c = b.const_int(k);
        let t = b.op(Opcode::IntAdd, &[p[1], c]);
        live.push(t);
    }
    let mut acc = p[1];
    for &l in &live[..6] {
        acc = b.op_with_descr(Opcode::CallI, &[fmix, acc, l], di);
    }
    let s = b.op_with_descr(
        Opcode::CallI,
        &[fsix, live[1], live[2], live[3], live[4], live[5], acc],
        d6,
    );
    let f2 = b.op_with_descr(Opcode::CallF, &[fscale, p[2], live[7]], df);
    let mut sum = s;
    for &v in &live {
        sum = b.op(Opcode::IntAdd, &[sum, v]);
    }
    let one = b.const_int(1);
    let n2 = b.op(Opcode::IntSub, &[p[0], one]);
    let mask = b.const_int(0xffff);
    let x2 = b.op(Opcode::IntAnd, &[sum, mask]);
    b.jump(&[n2, x2, f2]);
    let t = b.finish().unwrap();
    for o in [opts(), tight()] {
        for iters in [0i64, 1, 4] {
            let inputs = [RtValue::Int(iters), RtValue::Int(7), RtValue::float(1.25)];
            let int = interp::run(&t, &inputs, &call_config()).outcome;
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            let native = run_native(&t, &words, &o);
            same(&t, &native, &int).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Virtual objects in resume data
// ---------------------------------------------------------------------------------------

/// A guard whose fail arguments name virtual objects (a struct with a vtable pointing to an
/// array and to itself): the exit rebuilds them through the runtime with the same content as
/// the interpreter's rebuilt objects.
#[test]
fn exits_rebuild_virtual_objects() {
    use trace_ir::{ArrayDescr, Descr, FailArg, FieldDescr, SizeDescr, VirtualField, VirtualKind, VirtualObject};
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Float);
    let sd = b.descr(Descr::Size(SizeDescr {
        size: 48,
        vtable: Some(0x7000_1000),
    }));
    let fa = b.descr(Descr::Field(FieldDescr {
        name: "T.a".into(),
        offset: 8,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let fb = b.descr(Descr::Field(FieldDescr {
        name: "T.b".into(),
        offset: 16,
        size: 2,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let fp = b.descr(Descr::Field(FieldDescr {
        name: "T.p".into(),
        offset: 24,
        size: 8,
        signed: false,
        kind: Kind::Ref,
        immutable: false,
    }));
    let ff = b.descr(Descr::Field(FieldDescr {
        name: "T.f".into(),
        offset: 32,
        size: 8,
        signed: false,
        kind: Kind::Float,
        immutable: false,
    }));
    let fs = b.descr(Descr::Field(FieldDescr {
        name: "T.s".into(),
        offset: 40,
        size: 8,
        signed: false,
        kind: Kind::Ref,
        immutable: false,
    }));
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: 16,
        len_offset: 8,
    }));
    let seven = b.const_int(7);
    let y2 = b.op(Opcode::IntMul, &[x, seven]);
    let ten = b.const_int(10);
    let lt = b.op(Opcode::IntLt, &[x, ten]);
    b.guard(Opcode::GuardTrue, &[lt], &[], 77);
    b.finish_with(&[y2]);
    let mut t = b.finish().unwrap();
    let c99 = t.make_const_int(-99);
    t.guards[0].fail_args = vec![
        FailArg::Value(x),
        FailArg::Virtual(0),
        FailArg::Hole,
        FailArg::Virtual(1),
    ];
    t.guards[0].virtuals = vec![
        VirtualObject {
            kind: VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr: sd,
            },
            fields: vec![
                (VirtualField::Field(fa), FailArg::Value(y2)),
                (VirtualField::Field(fb), FailArg::Value(c99)),
                (VirtualField::Field(fp), FailArg::Virtual(1)),
                (VirtualField::Field(ff), FailArg::Value(y)),
                (VirtualField::Field(fs), FailArg::Virtual(0)),
            ],
        },
        VirtualObject {
            kind: VirtualKind::Array {
                opcode: Opcode::NewArray,
                descr: ad,
                len: 3,
            },
            fields: vec![
                (VirtualField::Item(0), FailArg::Value(x)),
                (VirtualField::Item(2), FailArg::Value(y2)),
            ],
        },
    ];
    trace_ir::verify(&t).unwrap();
    for o in [opts(), tight()] {
        let inputs = [RtValue::Int(12), RtValue::float(2.5)];
        let int = interp::run(&t, &inputs, &RunConfig::default());
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let c = compile(&t, &o).unwrap();
        let mut heap = SimpleHeap::new();
        let native = c.run(&words, &mut heap).unwrap();
        assert!(matches!(native, Exit::Guard { ref values, .. } if values.len() == 4 && values[2] == 0));
        assert_eq!(heap.allocations.len(), 2);
        same_with_heap(&t, &native, &heap, &int).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Encodings, byte for byte
// ---------------------------------------------------------------------------------------

fn bytes(f: impl FnOnce(&mut dynasmrt::VecAssembler<dynasmrt::x64::X64Relocation>)) -> Vec<u8> {
    let mut a = dynasmrt::VecAssembler::new(0);
    f(&mut a);
    a.finalize().unwrap()
}

/// Byte stores from a dynamically chosen `rsi`/`rdi` need a REX prefix (without one the
/// encoding names `dh`/`bh`): the backend relies on dynasm emitting it.
#[test]
fn byte_register_encodings_carry_rex() {
    use dynasmrt::{dynasm, DynasmApi};
    let (rsi, rbx) = (6u8, 3u8);
    assert_eq!(
        bytes(|a| dynasm!(a ; .arch x64 ; mov BYTE [Rq(rbx) + 1], Rb(rsi))),
        vec![0x40, 0x88, 0x74, 0x23, 0x01]
    );
    assert_eq!(
        bytes(|a| dynasm!(a ; .arch x64 ; movsx Rq(rsi), Rb(rsi))),
        vec![0x48, 0x0f, 0xbe, 0xf6]
    );
    assert_eq!(
        bytes(|a| dynasm!(a ; .arch x64 ; movzx Rq(rsi), r11b)),
        vec![0x49, 0x0f, 0xb6, 0xf3]
    );
    // shl rbx, cl / sar rbx, 5
    assert_eq!(
        bytes(|a| dynasm!(a ; .arch x64 ; shl Rq(rbx), cl)),
        vec![0x48, 0xd3, 0xe3]
    );
    assert_eq!(
        bytes(|a| dynasm!(a ; .arch x64 ; sar Rq(rbx), 5)),
        vec![0x48, 0xc1, 0xfb, 0x05]
    );
}

/// The fused compare-and-guard: `cmp` directly followed by the exit branch, no `setcc`.
#[test]
fn comparison_is_fused_into_its_guard() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Int);
    let lt = b.op(Opcode::IntLt, &[x, y]);
    b.guard(Opcode::GuardTrue, &[lt], &[x], 1);
    b.finish_with(&[y]);
    let t = b.finish().unwrap();
    let c = compile(&t, &opts()).unwrap();
    let code = c.code();
    // No setcc (0f 9x) anywhere, and `cmp rbx, [rbp + 0x20]` (x in rbx, y in its input
    // slot) directly followed by `jge rel32` (0f 8d) to the exit stub.
    assert!(
        !code.windows(2).any(|w| w[0] == 0x0f && (0x90..=0x9f).contains(&w[1])),
        "{code:02x?}"
    );
    assert!(
        code.windows(9)
            .any(|w| w[..7] == [0x48, 0x3b, 0x9d, 0x20, 0, 0, 0] && w[7..] == [0x0f, 0x8d]),
        "{code:02x?}"
    );
    assert_eq!(
        c.run(&[1, 2], &mut SimpleHeap::new()).unwrap(),
        Exit::Finish { values: vec![2] }
    );
    assert!(
        matches!(c.run(&[3, 2], &mut SimpleHeap::new()).unwrap(), Exit::Guard { ref values, .. } if values == &[3])
    );
}

#[test]
fn perf_map_gets_an_entry() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    b.finish_with(&[x]);
    let mut t = b.finish().unwrap();
    t.info.name = "perf map test trace".into();
    let c = compile(
        &t,
        &CompileOptions {
            perf_map: true,
            ..opts()
        },
    )
    .unwrap();
    let map = std::fs::read_to_string(format!("/tmp/perf-{}.map", std::process::id())).unwrap();
    let start = c.code().as_ptr() as u64;
    assert!(
        map.lines()
            .any(|l| l.starts_with(&format!("{start:x} ")) && l.ends_with("tracejit:perf map test trace")),
        "{map}"
    );
    let listing = c.disassembly(&t);
    assert!(listing.contains("; op1 = finish(op0)"), "{listing}");
}

/// A jump to another loop (`<Loop3>`) leaves the trace with its operands.
#[test]
fn external_jump_reports_its_values() {
    let t = trace_ir::parse_trace("[i0, f1]\ni2 = int_add(i0, 5)\njump(i2, f1, descr=<Loop3>)\n").unwrap();
    let native = run_native(&t, &[4, 2.5f64.to_bits()], &opts());
    assert_eq!(
        native,
        Exit::ExternalJump {
            target: Some(3),
            values: vec![9, 2.5f64.to_bits()]
        }
    );
    let int = interp::run(&t, &[RtValue::Int(4), RtValue::float(2.5)], &RunConfig::default()).outcome;
    same(&t, &native, &int).unwrap();
}

// ---------------------------------------------------------------------------------------
// Optimized traces: the optimizer's output (virtuals in resume data, removed guards)
// ---------------------------------------------------------------------------------------

/// Random traces optimized by `optimizer::optimize`, compiled and run natively, against the
/// interpreter running the same optimized trace (so an optimizer bug cannot fail this test,
/// only a backend one). Allocation removal puts virtual objects into resume data, which the
/// exits rebuild through the runtime.
#[test]
fn random_optimized_traces() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        ..RandomConfig::default()
    };
    let mut with_virtuals = 0;
    let mut compared = 0;
    for seed in 0..1500u64 {
        let (t, inputs) = random_trace(&cfg, seed);
        let Ok(opt) = optimizer::optimize(&t, &optimizer::Options::default()) else {
            continue;
        };
        let t = opt.trace;
        if t.guards.iter().any(|g| !g.virtuals.is_empty()) {
            with_virtuals += 1;
        }
        let int = interp::run(&t, &inputs, &RunConfig::default());
        if int.outcome == Outcome::IterationLimit {
            continue;
        }
        let c =
            compile(&t, &opts()).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)));
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let mut heap = SimpleHeap::new();
        let native = c.run(&words, &mut heap).unwrap();
        if let Err(e) = same_with_heap(&t, &native, &heap, &int) {
            panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t));
        }
        compared += 1;
    }
    assert!(compared > 1000, "only {compared} traces compared");
    assert!(
        with_virtuals > 100,
        "only {with_virtuals} optimized traces have virtuals in resume data"
    );
}

static COND_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
extern "sysv64" fn host_count(k: i64) {
    COND_CALLS.fetch_add(k as u64, std::sync::atomic::Ordering::SeqCst);
}

/// `cond_call_value_i` (same as the interpreter) and `cond_call` (calls when the condition
/// is non-zero, per the opcode table), with values live across them.
#[test]
fn conditional_calls() {
    use trace_ir::{CallDescr, CallEffect, Descr};
    let mut b = TraceBuilder::new();
    let v = b.input(Kind::Int);
    let c = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let di = b.descr(Descr::Call(CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: vec![Kind::Int, Kind::Int],
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let dn = b.descr(Descr::Call(CallDescr {
        result: Kind::Void,
        result_size: 0,
        args: vec![Kind::Int],
        effect: CallEffect::CannotRaise,
        oopspec: None,
    }));
    let fmix = b.const_int(host_mix as *const () as i64);
    let fcount = b.const_int(host_count as *const () as i64);
    let live = b.op(Opcode::IntMul, &[x, x]);
    let r = b.op_with_descr(Opcode::CondCallValueI, &[v, fmix, x, live], di);
    let hundred = b.const_int(100);
    b.op_with_descr(Opcode::CondCallN, &[c, fcount, hundred], dn);
    let s = b.op(Opcode::IntAdd, &[r, live]);
    b.finish_with(&[r, s, live]);
    let t = b.finish().unwrap();
    for o in [opts(), tight()] {
        for (vv, cc) in [(0i64, 0i64), (5, 0), (0, 1), (-3, 7)] {
            let inputs = [RtValue::Int(vv), RtValue::Int(cc), RtValue::Int(11)];
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            let before = COND_CALLS.load(std::sync::atomic::Ordering::SeqCst);
            let native = run_native(&t, &words, &o);
            let after = COND_CALLS.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(
                after - before,
                if cc != 0 { 100 } else { 0 },
                "cond_call with condition {cc}"
            );
            let r = if vv != 0 { vv } else { host_mix(11, 121) };
            assert_eq!(
                native,
                Exit::Finish {
                    values: vec![r as u64, r.wrapping_add(121) as u64, 121]
                }
            );
        }
    }
}

/// Interior fields of an allocated array of structs: stores and loads at `16 + i * item +
/// offset`, index checked against the length like the interpreter does.
#[test]
fn interior_fields_of_an_array_of_structs() {
    use trace_ir::{ArrayDescr, Descr, FieldDescr, InteriorDescr};
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 16,
        signed: false,
        kind: Kind::Int,
        base_offset: 16,
        len_offset: 8,
    }));
    let fk = FieldDescr {
        name: "E.k".into(),
        offset: 0,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    };
    let fv = FieldDescr {
        name: "E.v".into(),
        offset: 8,
        size: 4,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    };
    let dk = b.descr(Descr::Interior(InteriorDescr {
        item_size: 16,
        field: fk,
    }));
    let dv = b.descr(Descr::Interior(InteriorDescr {
        item_size: 16,
        field: fv,
    }));
    let three = b.const_int(3);
    let p = b.op_with_descr(Opcode::NewArrayClear, &[three], ad);
    let one = b.const_int(1);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[p, i, x], dk);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[p, one, x], dv);
    let k = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, i], dk);
    let v = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, one], dv);
    let w = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, i], dv);
    b.finish_with(&[k, v, w]);
    let t = b.finish().unwrap();
    for o in [opts(), tight()] {
        for (iv, xv) in [(0i64, 5i64), (1, -7), (2, 1 << 40), (3, 1), (-1, 1)] {
            let inputs = [RtValue::Int(iv), RtValue::Int(xv)];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let native = run_native(&t, &[iv as u64, xv as u64], &o);
            same(&t, &native, &int).unwrap();
        }
    }
}

/// Raw memory (a real buffer whose address is an integer input): stores then loads of
/// several widths through `setfield_raw`, `raw_store` and `setarrayitem_raw`.
#[test]
fn raw_memory_round_trips() {
    use trace_ir::{ArrayDescr, Descr, FieldDescr};
    let mut b = TraceBuilder::new();
    let addr = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let f4 = b.descr(Descr::Field(FieldDescr {
        name: "R.a".into(),
        offset: 8,
        size: 4,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let a2 = b.descr(Descr::Array(ArrayDescr {
        item_size: 2,
        signed: true,
        kind: Kind::Int,
        base_offset: 0,
        len_offset: 0,
    }));
    let a1 = b.descr(Descr::Array(ArrayDescr {
        item_size: 1,
        signed: false,
        kind: Kind::Int,
        base_offset: 0,
        len_offset: 0,
    }));
    b.op_with_descr(Opcode::SetfieldRaw, &[addr, x], f4);
    let r1 = b.op_with_descr(Opcode::GetfieldRawI, &[addr], f4);
    let sixteen = b.const_int(16);
    b.op_with_descr(Opcode::RawStore, &[addr, sixteen, x], a2);
    let r2 = b.op_with_descr(Opcode::RawLoadI, &[addr, sixteen], a2);
    let three = b.const_int(3);
    b.op_with_descr(Opcode::SetarrayitemRaw, &[addr, three, x], a1);
    let r3 = b.op_with_descr(Opcode::GetarrayitemRawI, &[addr, three], a1);
    b.finish_with(&[r1, r2, r3]);
    let t = b.finish().unwrap();
    let mut buf = vec![0u64; 8];
    let p = buf.as_mut_ptr() as i64;
    for o in [opts(), tight()] {
        for xv in [0i64, -1, 0x1234_5678_9abc, i64::MIN, 255, 0x8000] {
            let inputs = [RtValue::Int(p), RtValue::Int(xv)];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let native = run_native(&t, &[p as u64, xv as u64], &o);
            same(&t, &native, &int).unwrap();
        }
    }
    assert_eq!(buf[2] & 0xffff, 0x8000, "the last raw_store wrote the real buffer");
}

/// `guard_class` and `guard_nonnull_class` on allocated instances and on null.
#[test]
fn class_guards() {
    use trace_ir::{Descr, SizeDescr};
    for (opc, with_null) in [
        (Opcode::GuardClass, false),
        (Opcode::GuardClass, true),
        (Opcode::GuardSubclass, false),
        (Opcode::GuardNonnullClass, false),
        (Opcode::GuardNonnullClass, true),
    ] {
        for right in [true, false] {
            let mut b = TraceBuilder::new();
            let x = b.input(Kind::Int);
            let sd = b.descr(Descr::Size(SizeDescr {
                size: 24,
                vtable: Some(0x7000_2000),
            }));
            let p = if with_null {
                b.const_ref(0)
            } else {
                b.op_with_descr(Opcode::NewWithVtable, &[], sd)
            };
            let cls = b.const_int(if right { 0x7000_2000 } else { 0x7000_3000 });
            b.guard(opc, &[p, cls], &[x], 8);
            b.finish_with(&[x]);
            let t = b.finish().unwrap();
            let int = interp::run(&t, &[RtValue::Int(4)], &RunConfig::default()).outcome;
            let native = run_native(&t, &[4], &opts());
            same(&t, &native, &int).unwrap();
            let failed = matches!(native, Exit::Guard { .. });
            if opc != Opcode::GuardNonnullClass && with_null {
                assert!(
                    matches!(native, Exit::Invalid { .. }),
                    "guard_class on null: {native:?}"
                );
            } else {
                assert_eq!(failed, with_null || !right, "{opc} right={right} null={with_null}");
            }
        }
    }
}

#[cfg(feature = "disasm")]
#[test]
fn disassembly_names_instructions() {
    let t = rotation_loop(3, 0);
    let c = compile(&t, &opts()).unwrap();
    let listing = c.disassembly(&t);
    assert!(listing.contains("; op4 = label(op0, op1, op2, op3)"), "{listing}");
    assert!(listing.contains("jmp") && listing.contains("cmp"), "{listing}");
    if std::env::var("SHOW_LISTING").is_ok() {
        eprintln!("{listing}");
    }
}

// ---------------------------------------------------------------------------------------
// Hooks mode, the interpreter's model as the runtime, and the ops served through
// `Runtime::exec` (strings, exceptions, call_assembler, type guards)
// ---------------------------------------------------------------------------------------

use trace_ir::descr::{ArrayDescr, Descr, FieldDescr, SizeDescr};
use trace_ir::interp::{outcomes_equivalent, ModelHeap};

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
    let exit = c.run(&words, &mut model).map_err(|e| e.to_string())?;
    let got = model.into_result(exit.outcome(t));
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
            let native = c.run(&words, &mut heap).unwrap();
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
    b.finish_with(&[x, l, h, y, h2]);
    b.finish().unwrap()
}

/// String and unicode ops, in Direct mode (served on real memory by `exec_in_memory`) and
/// in Hooks mode (the interpreter's model), against the interpreter, including
/// out-of-bounds indices, bad lengths and empty copies.
#[test]
fn string_ops_match_the_interpreter() {
    let mut rng = trace_ir::rng::Rng::new(99);
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
                .run(&words, &mut SimpleHeap::new())
                .unwrap();
            same(&t, &native, &int).unwrap_or_else(|e| panic!("direct, inputs {inputs:?}: {e}"));
            model_run(&t, &rt, &RunConfig::default(), &hooks_opts())
                .unwrap_or_else(|e| panic!("hooks, inputs {inputs:?}: {e}"));
        }
        // The fixed first round: p = [300, 0, 0, 0, 301], q[1..6] = p[0..5].
        let native = compile(&t, &opts())
            .unwrap()
            .run(&[5, 4, 300, 4, 6, 0, 1, 5, 5], &mut SimpleHeap::new())
            .unwrap();
        let Exit::Finish { values } = native else {
            panic!("{native:?}")
        };
        let (c0, c4) = if unicode { (300, 301) } else { (300 & 0xff, 301 & 0xff) };
        assert_eq!(
            (values[0], values[1], values[3]),
            (c4, 5, c4),
            "q[5] is the copied p[4]: {values:?}"
        );
        let Exit::Finish { values: v2 } = compile(&t, &opts())
            .unwrap()
            .run(&[5, 4, 300, 4, 6, 0, 1, 5, 1], &mut SimpleHeap::new())
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(v2[3], c0, "q[1] is the copied p[0]");
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
    b.finish_with(&[k, e, e2]);
    b.finish().unwrap()
}

/// The exception ops in both modes against the interpreter: Direct mode keeps a per-run
/// exception state, Hooks mode uses the model's.
#[test]
fn exception_ops_match_the_interpreter() {
    let t = exception_trace();
    let v = trace_ir::interp::heap::external_address(77);
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
            .run(&words, &mut SimpleHeap::new())
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
            .run(&[c as u64, val, w as u64], &mut SimpleHeap::new())
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
        b.finish_with(&[e]);
        b.finish().unwrap()
    };
    for (c, val, w) in [(5, v, 5), (5, v, 6), (0, 0, 0), (0, v, 0)] {
        let inputs = [RtValue::Int(c), RtValue::Ref(val), RtValue::Int(w)];
        let int = interp::run(&t2, &inputs, &RunConfig::default()).outcome;
        let native = compile(&t2, &opts())
            .unwrap()
            .run(&[c as u64, val, w as u64], &mut SimpleHeap::new())
            .unwrap();
        same(&t2, &native, &int).unwrap_or_else(|e| panic!("direct ({c}, {val:#x}, {w}): {e}"));
        model_run(&t2, &inputs, &RunConfig::default(), &hooks_opts()).unwrap();
    }
    let native = compile(&t2, &opts())
        .unwrap()
        .run(&[5, v, 5], &mut SimpleHeap::new())
        .unwrap();
    assert_eq!(native, Exit::Finish { values: vec![v] });
}

fn int_field(b: &mut TraceBuilder, offset: i64) -> trace_ir::DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: format!("f{offset}"),
        offset,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }))
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
    b.finish_with(&[before, r, after]);
    let t = b.finish().unwrap();
    let p0 = trace_ir::interp::heap::external_address(5);
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
        code.run(&[addr, 4], &mut SimpleHeap::new()).unwrap(),
        Exit::Invalid { op: OpRef::new(3) }
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
    let exit = code.run(&[addr, 4], &mut Loops(SimpleHeap::new())).unwrap();
    assert_eq!(exit, Exit::Finish { values: vec![41, 7, 4] });
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
    let class = trace_ir::interp::default_class(&size);
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
        b.finish_with(&[arr]);
        b.finish().unwrap()
    };
    // Allocated objects only: both modes.
    let t = build(false);
    for want in [class as i64, class as i64 + 8, 0] {
        let inputs = [RtValue::Ref(0), RtValue::Int(want)];
        let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
        let native = compile(&t, &opts())
            .unwrap()
            .run(&[0, want as u64], &mut SimpleHeap::new())
            .unwrap();
        same(&t, &native, &int).unwrap_or_else(|e| panic!("direct {want:#x}: {e}"));
        model_run(&t, &inputs, &RunConfig::default(), &hooks_opts()).unwrap();
    }
    // `guard_is_object` on a plain `new` struct fails (class 0) once the gc-type checks pass.
    let native = compile(&t, &opts())
        .unwrap()
        .run(&[0, class], &mut SimpleHeap::new())
        .unwrap();
    assert!(matches!(native, Exit::Guard { resume_key: 5, .. }), "{native:?}");
    // External objects: Hooks mode, both class policies.
    let t = build(true);
    let e = trace_ir::interp::heap::external_address(1234);
    for policy in [
        trace_ir::interp::ClassPolicy::FirstCheckDecides,
        trace_ir::interp::ClassPolicy::FromAddress,
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
    b.finish_with(&[i]);
    let t = b.finish().unwrap();
    for invalidated in [false, true] {
        let cfg = RunConfig {
            invalidated,
            ..RunConfig::default()
        };
        let out = model_run(&t, &[RtValue::Int(3)], &cfg, &hooks_opts()).unwrap();
        assert_eq!(matches!(out, Outcome::GuardFailed { resume_key: 9, .. }), invalidated);
    }
    let direct = compile(&t, &opts()).unwrap().run(&[3], &mut SimpleHeap::new()).unwrap();
    assert_eq!(direct, Exit::Finish { values: vec![3] });
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
            .map(|i| trace_ir::Value::op(OpRef::new(i)))
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
        b.finish_with(&outs);
        let t = b.finish().unwrap_or_else(|e| panic!("{opc}: {e}"));
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
                    Kind::Ref => RtValue::Ref(trace_ir::interp::heap::external_address(round * 7 + k as u64)),
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
    b.finish_with(&[i]);
    let t = b.finish().unwrap();
    let c = compile(&t, &hooks_opts()).unwrap();
    assert_eq!(
        c.run(&[0x1000, 4], &mut Panics).unwrap(),
        Exit::Invalid { op: OpRef::new(2) }
    );
}

// ---------------------------------------------------------------------------------------
// Calls with stack arguments (more than 6 integer or 8 float arguments)
// ---------------------------------------------------------------------------------------

/// Set when a host function finds its stack misaligned (the System V ABI wants `rsp`
/// 16-byte aligned at the call).
static MISALIGNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[repr(align(16))]
struct Aligned16(#[allow(dead_code)] u64);

/// A 16-aligned local sits at an aligned address only if the caller aligned `rsp` (the
/// compiler relies on the ABI and does not realign for 16).
#[inline(never)]
fn check_aligned() {
    let a = std::hint::black_box(Aligned16(0));
    if !std::hint::black_box(&a as *const Aligned16 as usize).is_multiple_of(16) {
        MISALIGNED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An order-sensitive mix of argument words (the bits of every argument, in order).
fn mix_words(words: impl Iterator<Item = u64>) -> u64 {
    words.enumerate().fold(0x9e37_79b9_7f4a_7c15, |h, (k, w)| {
        (h ^ w.wrapping_add(k as u64))
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(17)
    })
}

trait HostArg: Copy {
    const KIND: Kind;
    fn word(self) -> u64;
}
impl HostArg for i64 {
    const KIND: Kind = Kind::Int;
    fn word(self) -> u64 {
        self as u64
    }
}
impl HostArg for f64 {
    const KIND: Kind = Kind::Float;
    fn word(self) -> u64 {
        self.to_bits()
    }
}
trait HostRet {
    const KIND: Kind;
    fn from_mix(m: u64) -> Self;
}
impl HostRet for i64 {
    const KIND: Kind = Kind::Int;
    fn from_mix(m: u64) -> i64 {
        m as i64
    }
}
impl HostRet for f64 {
    const KIND: Kind = Kind::Float;
    fn from_mix(m: u64) -> f64 {
        // A finite value (float results are compared by bits).
        (m >> 11) as f64 * 0.125 - 1e14
    }
}

/// The interpreter's model of a host function: the same mix over the argument bits.
fn host_model(result: Kind) -> interp::HostFn {
    std::sync::Arc::new(move |a: &[RtValue]| {
        let m = mix_words(a.iter().map(|v| v.bits()));
        if result == Kind::Float {
            RtValue::float(f64::from_mix(m))
        } else {
            RtValue::Int(i64::from_mix(m))
        }
    })
}

/// `extern "sysv64" fn name(args...) -> ret`: checks the stack alignment and returns the
/// mix of its arguments; `name_sig()` gives its address, argument kinds and result kind.
macro_rules! host_fn {
    ($name:ident, $sig:ident, $ret:ty, $($a:ident: $t:ty),*) => {
        extern "sysv64" fn $name($($a: $t),*) -> $ret {
            check_aligned();
            <$ret>::from_mix(mix_words([$(HostArg::word($a)),*].into_iter()))
        }
        fn $sig() -> (u64, Vec<Kind>, Kind) {
            ($name as *const () as u64, vec![$(<$t as HostArg>::KIND),*], <$ret as HostRet>::KIND)
        }
    };
}

host_fn!(ints7, ints7_sig, i64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64);
host_fn!(ints8, ints8_sig, i64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64, a7: i64);
host_fn!(ints9, ints9_sig, f64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64, a7: i64, a8: i64);
host_fn!(ints10, ints10_sig, i64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64, a7: i64, a8: i64,
    a9: i64);
host_fn!(ints11, ints11_sig, i64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64, a7: i64, a8: i64,
    a9: i64, a10: i64);
host_fn!(ints12, ints12_sig, i64, a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, a5: i64, a6: i64, a7: i64, a8: i64,
    a9: i64, a10: i64, a11: i64);
host_fn!(floats9, floats9_sig, f64, a0: f64, a1: f64, a2: f64, a3: f64, a4: f64, a5: f64, a6: f64, a7: f64, a8: f64);
host_fn!(floats10, floats10_sig, i64, a0: f64, a1: f64, a2: f64, a3: f64, a4: f64, a5: f64, a6: f64, a7: f64,
    a8: f64, a9: f64);
host_fn!(floats11, floats11_sig, f64, a0: f64, a1: f64, a2: f64, a3: f64, a4: f64, a5: f64, a6: f64, a7: f64,
    a8: f64, a9: f64, a10: f64);
host_fn!(floats12, floats12_sig, f64, a0: f64, a1: f64, a2: f64, a3: f64, a4: f64, a5: f64, a6: f64, a7: f64,
    a8: f64, a9: f64, a10: f64, a11: f64);
// Interleaved: 8 integers and 10 floats (stack: i6, i7, f8, f9 in argument order).
host_fn!(mixed_a, mixed_a_sig, i64, i0: i64, f0: f64, i1: i64, f1: f64, i2: i64, f2: f64, i3: i64, f3: f64,
    i4: i64, f4: f64, i5: i64, f5: f64, i6: i64, f6: f64, i7: i64, f7: f64, f8: f64, f9: f64);
// 12 integers and 12 floats alternating (12 stack arguments, kinds interleaved on the stack).
host_fn!(mixed_b, mixed_b_sig, f64, i0: i64, f0: f64, i1: i64, f1: f64, i2: i64, f2: f64, i3: i64, f3: f64,
    i4: i64, f4: f64, i5: i64, f5: f64, i6: i64, f6: f64, i7: i64, f7: f64, i8: i64, f8: f64, i9: i64, f9: f64,
    i10: i64, f10: f64, i11: i64, f11: f64);
// Floats first, then integers, then floats: 7 integers and 9 floats (stack: i6, f8).
host_fn!(mixed_c, mixed_c_sig, i64, f0: f64, f1: f64, f2: f64, i0: i64, i1: i64, i2: i64, i3: i64, i4: i64,
    i5: i64, i6: i64, f3: f64, f4: f64, f5: f64, f6: f64, f7: f64, f8: f64);
// Six integers in registers and 9 floats (one float on the stack, odd count: padding).
host_fn!(mixed_d, mixed_d_sig, f64, f0: f64, i0: i64, f1: f64, i1: i64, f2: f64, i2: i64, f3: f64, i3: i64,
    f4: f64, i4: i64, f5: f64, i5: i64, f6: f64, f7: f64, f8: f64);

fn stack_arg_signatures() -> Vec<(u64, Vec<Kind>, Kind)> {
    vec![
        ints7_sig(),
        ints8_sig(),
        ints9_sig(),
        ints10_sig(),
        ints11_sig(),
        ints12_sig(),
        floats9_sig(),
        floats10_sig(),
        floats11_sig(),
        floats12_sig(),
        mixed_a_sig(),
        mixed_b_sig(),
        mixed_c_sig(),
        mixed_d_sig(),
    ]
}

/// A loop calling `f` once per iteration with arguments of every origin: label parameters
/// (registers or slots), values computed in the iteration and live after the call, small
/// and 64-bit constants, a repeated value; the result and the computed values feed the
/// accumulators. `guard_true(n > 0)` leaves with the accumulators.
fn stack_call_loop(f: u64, kinds: &[Kind], result: Kind) -> Trace {
    use trace_ir::{CallDescr, CallEffect, Descr};
    let mut b = TraceBuilder::new();
    let n = b.input(Kind::Int);
    let acc = b.input(Kind::Int);
    let facc = b.input(Kind::Float);
    let xs: Vec<_> = (0..4).map(|_| b.input(Kind::Int)).collect();
    let ys: Vec<_> = (0..3).map(|_| b.input(Kind::Float)).collect();
    let mut params = vec![n, acc, facc];
    params.extend(&xs);
    params.extend(&ys);
    let p = b.label(&params);
    let (n, acc, facc, xs, ys) = (p[0], p[1], p[2], p[3..7].to_vec(), p[7..10].to_vec());
    let zero = b.const_int(0);
    let gt = b.op(Opcode::IntGt, &[n, zero]);
    b.guard(Opcode::GuardTrue, &[gt], &[acc, facc], 1);
    let cd = b.descr(Descr::Call(CallDescr {
        result,
        result_size: 8,
        args: kinds.to_vec(),
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let fv = b.const_int(f as i64);
    let mut args = vec![fv];
    let (mut ints, mut floats) = (Vec::new(), Vec::new());
    for (k, &kind) in kinds.iter().enumerate() {
        let v = if kind == Kind::Float {
            match k % 4 {
                0 => {
                    let c = b.const_float(k as f64 + 0.5);
                    let u = b.op(Opcode::FloatAdd, &[ys[k % 3], c]);
                    floats.push(u);
                    u
                }
                1 => ys[k % 3],
                2 => b.const_float(-(k as f64) * 0.25),
                _ => floats.last().copied().unwrap_or(ys[0]),
            }
        } else {
            match k % 4 {
                0 => {
                    let c = b.const_int(k as i64 * 7 + 1);
                    let t = b.op(Opcode::IntAdd, &[xs[k % 4], c]);
                    ints.push(t);
                    t
                }
                1 => xs[k % 4],
                2 if k % 8 == 2 => b.const_int(-(k as i64)),
                2 => b.const_int(0x1234_5678_9abc_de00 + k as i64),
                _ => ints.last().copied().unwrap_or(xs[1]),
            }
        };
        args.push(v);
    }
    let opc = if result == Kind::Float {
        Opcode::CallF
    } else {
        Opcode::CallI
    };
    let r = b.op_with_descr(opc, &args, cd);
    // The computed values live across the call.
    let three = b.const_int(3);
    let mut acc2 = b.op(Opcode::IntMul, &[acc, three]);
    for &t in &ints {
        acc2 = b.op(Opcode::IntXor, &[acc2, t]);
    }
    let mut facc2 = facc;
    for &u in &floats {
        facc2 = b.op(Opcode::FloatAdd, &[facc2, u]);
    }
    if result == Kind::Float {
        facc2 = b.op(Opcode::FloatAdd, &[facc2, r]);
    } else {
        acc2 = b.op(Opcode::IntAdd, &[acc2, r]);
    }
    let one = b.const_int(1);
    let n2 = b.op(Opcode::IntSub, &[n, one]);
    // The parameters rotate, so each iteration passes different values.
    let x0 = b.op(Opcode::IntAdd, &[xs[0], acc2]);
    let mut jargs = vec![n2, acc2, facc2, xs[1], xs[2], xs[3], x0];
    jargs.extend([ys[1], ys[2], ys[0]]);
    b.jump(&jargs);
    b.finish().unwrap()
}

/// Calls to real `extern "sysv64"` functions with 7..12 integer, 9..12 float and mixed
/// arguments (the rest on the stack): native exits equal the interpreter's (which calls a
/// model of the same functions), in loops, with all registers and under register pressure
/// (arguments then come from spill slots), and every call sees an aligned stack.
#[test]
fn calls_with_stack_arguments_match_the_interpreter() {
    let medium = CompileOptions {
        int_regs: 6,
        float_regs: 4,
        ..opts()
    };
    let mut cfg = RunConfig::default();
    let sigs = stack_arg_signatures();
    for (f, _, result) in &sigs {
        cfg.functions.insert(*f, host_model(*result));
    }
    // Which forms of stack-argument push the generated code used, over all compilations.
    let (mut from_slot, mut from_xmm, mut imm64) = (false, false, false);
    for (f, kinds, result) in &sigs {
        let t = stack_call_loop(*f, kinds, *result);
        for o in [opts(), medium.clone(), tight()] {
            let c = compile(&t, &o).unwrap_or_else(|e| panic!("{e}\n{}", trace_ir::text::print_trace(&t)));
            let code = c.code();
            // push QWORD [rbp + disp32]
            from_slot |= code.windows(2).any(|w| w == [0xff, 0xb5]);
            // movsd QWORD [rsp], xmmN (after sub rsp, 8; dynasm adds a REX prefix)
            from_xmm |= code.windows(10).any(|w| {
                let rex = (w[5] & 0xf0 == 0x40) as usize;
                w[..5] == [0x48, 0x83, 0xec, 0x08, 0xf2] && w[5 + rex..7 + rex] == [0x0f, 0x11] && w[8 + rex] == 0x24
            });
            // mov r11, imm64 ; push r11
            imm64 |= code
                .windows(12)
                .any(|w| w[..2] == [0x49, 0xbb] && w[10..] == [0x41, 0x53]);
            for (iters, x) in [(0i64, 5i64), (1, -9), (3, 1 << 40), (7, i64::MIN)] {
                let mut inputs = vec![RtValue::Int(iters), RtValue::Int(x), RtValue::float(0.75)];
                inputs.extend((0..4).map(|k| RtValue::Int(x.wrapping_mul(k + 3) ^ k)));
                inputs.extend((0..3).map(|k| RtValue::float(x as f64 * 0.5 + k as f64)));
                let int = interp::run(&t, &inputs, &cfg).outcome;
                assert!(matches!(int, Outcome::GuardFailed { .. }), "{int}");
                let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
                let native = c.run(&words, &mut SimpleHeap::new()).unwrap();
                same(&t, &native, &int).unwrap();
            }
        }
    }
    assert!(
        from_slot && from_xmm && imm64,
        "push forms used: slot {from_slot}, xmm {from_xmm}, imm64 {imm64}"
    );
    assert!(
        !MISALIGNED.load(std::sync::atomic::Ordering::SeqCst),
        "a host function was called with a misaligned stack"
    );
}

thread_local! {
    /// What the last `void` host function with stack arguments saw (native run).
    static SINK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The same, seen by the interpreter's model of the function.
    static MODEL_SINK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
extern "sysv64" fn sink8(a0: i64, a1: i64, a2: i64, a3: i64, a4: i64, f0: f64, a5: i64, a6: i64, a7: i64) {
    check_aligned();
    let words = [a0, a1, a2, a3, a4].map(|a| a as u64);
    let rest = [f0.to_bits(), a5 as u64, a6 as u64, a7 as u64];
    SINK.with(|s| s.set(mix_words(words.into_iter().chain(rest))));
}

/// `cond_call` and `cond_call_value_i` with stack arguments: the call path pushes and pops
/// them, the skipping path leaves the stack alone (a loop runs both paths many times; a
/// leaked stack word would crash the epilogue).
#[test]
fn conditional_calls_with_stack_arguments() {
    use trace_ir::{CallDescr, CallEffect, Descr};
    let mut b = TraceBuilder::new();
    let n = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Float);
    let acc = b.input(Kind::Int);
    let p = b.label(&[n, x, y, acc]);
    let (n, x, y, acc) = (p[0], p[1], p[2], p[3]);
    let zero = b.const_int(0);
    let gt = b.op(Opcode::IntGt, &[n, zero]);
    b.guard(Opcode::GuardTrue, &[gt], &[acc, x], 1);
    let (f8, kinds8, _) = ints8_sig();
    let di = b.descr(Descr::Call(CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: kinds8,
        effect: CallEffect::ElidableCannotRaise,
        oopspec: None,
    }));
    let dn = b.descr(Descr::Call(CallDescr {
        result: Kind::Void,
        result_size: 0,
        args: vec![
            Kind::Int,
            Kind::Int,
            Kind::Int,
            Kind::Int,
            Kind::Int,
            Kind::Float,
            Kind::Int,
            Kind::Int,
            Kind::Int,
        ],
        effect: CallEffect::CannotRaise,
        oopspec: None,
    }));
    let fv = b.const_int(f8 as i64);
    let fsink = b.const_int(sink8 as *const () as i64);
    // Odd iterations call (the condition value is 0), even ones skip.
    let one = b.const_int(1);
    let odd = b.op(Opcode::IntAnd, &[n, one]);
    let v = b.op(Opcode::IntXor, &[odd, one]);
    let mut args = vec![v, fv];
    let mut live = Vec::new();
    for k in 0..8 {
        let c = b.const_int(k * 11 + 2);
        let t = b.op(Opcode::IntAdd, &[x, c]);
        live.push(t);
        args.push(t);
    }
    let r = b.op_with_descr(Opcode::CondCallValueI, &args, di);
    let big = b.const_int(-0x7654_3210_fedc_ba98);
    b.op_with_descr(
        Opcode::CondCallN,
        &[odd, fsink, x, live[1], live[2], live[3], live[4], y, big, n, live[7]],
        dn,
    );
    let mut acc2 = b.op(Opcode::IntAdd, &[acc, r]);
    for &t in &live {
        acc2 = b.op(Opcode::IntXor, &[acc2, t]);
    }
    let n2 = b.op(Opcode::IntSub, &[n, one]);
    let x2 = b.op(Opcode::IntAdd, &[x, r]);
    b.jump(&[n2, x2, y, acc2]);
    let t = b.finish().unwrap();
    let mut cfg = RunConfig::default();
    cfg.functions.insert(f8, host_model(Kind::Int));
    cfg.functions.insert(
        sink8 as *const () as u64,
        std::sync::Arc::new(|a: &[RtValue]| {
            MODEL_SINK.with(|s| s.set(mix_words(a.iter().map(|v| v.bits()))));
            RtValue::Int(0)
        }),
    );
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        for (iters, xv) in [(0i64, 3i64), (1, 4), (2, -5), (9, 1 << 50), (1000, 17)] {
            let inputs = [
                RtValue::Int(iters),
                RtValue::Int(xv),
                RtValue::float(2.5),
                RtValue::Int(1),
            ];
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            SINK.with(|s| s.set(0));
            MODEL_SINK.with(|s| s.set(0));
            let int = interp::run(&t, &inputs, &cfg).outcome;
            let native = c.run(&words, &mut SimpleHeap::new()).unwrap();
            same(&t, &native, &int).unwrap();
            // The last `cond_call` (at n == 1) passed the same words natively and in the
            // interpreter; none happens without iterations.
            let (got, want) = (SINK.with(|s| s.get()), MODEL_SINK.with(|s| s.get()));
            assert_eq!(got, want, "iterations {iters}");
            assert_eq!(got == 0, iters == 0, "iterations {iters}");
        }
    }
    assert!(!MISALIGNED.load(std::sync::atomic::Ordering::SeqCst));
}

// ---------------------------------------------------------------------------------------
// Displacements that do not fit 32 bits
// ---------------------------------------------------------------------------------------

/// Field, array, interior and raw accesses whose offsets do not fit 32 bits, on real
/// memory: the base pointers are a buffer's address minus the offset (wrapping), so every
/// access lands in the buffer. Stores then loads, against the interpreter (which treats
/// the reference input as an external object and raw memory by address), and the buffers
/// hold what was stored.
#[test]
fn displacements_beyond_32_bits() {
    use trace_ir::InteriorDescr;
    const BIG: i64 = 0x3_0000_0000; // 12 GiB: no 32-bit displacement reaches it
    const RAW_BIG: i64 = -0x5_0000_0010;
    let fd = |b: &mut TraceBuilder, offset: i64, size: u8, kind: Kind| {
        b.descr(Descr::Field(FieldDescr {
            name: format!("W.f{offset}"),
            offset,
            size,
            signed: true,
            kind,
            immutable: false,
        }))
    };
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref); // buf - BIG
    let a = b.input(Kind::Int); // raw - RAW_BIG
    let q = b.input(Kind::Ref); // an array of huge structs (see below), really `inner`
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Float);
    let i = b.input(Kind::Int);
    let j = b.input(Kind::Int); // interior index, always 1
    let f1 = fd(&mut b, BIG + 8, 8, Kind::Int);
    let f2 = fd(&mut b, BIG + 16, 8, Kind::Float);
    let f3 = fd(&mut b, BIG + 24, 8, Kind::Float);
    let f4 = fd(&mut b, BIG + 72, 4, Kind::Int);
    let fraw = fd(&mut b, RAW_BIG + 8, 4, Kind::Int);
    // Array at p: length word at BIG (buf[0]), items from BIG + 32 (buf[4..8]).
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: BIG + 32,
        len_offset: BIG,
    }));
    // Interior: items of 2^32 bytes, field at -2^32 + 8: item 1's field is at q + 24.
    let di = b.descr(Descr::Interior(InteriorDescr {
        item_size: 1 << 32,
        field: FieldDescr {
            name: "H.v".into(),
            offset: -(1 << 32) + 8,
            size: 8,
            signed: true,
            kind: Kind::Int,
            immutable: false,
        },
    }));
    b.op_with_descr(Opcode::SetfieldGc, &[p, x], f1);
    let r1 = b.op_with_descr(Opcode::GetfieldGcI, &[p], f1);
    b.op_with_descr(Opcode::SetfieldGc, &[p, y], f2);
    let r2 = b.op_with_descr(Opcode::GetfieldGcF, &[p], f2);
    // A float constant goes through r11 when it is loaded: the store must not lose it.
    let fc = b.const_float(-3.75);
    b.op_with_descr(Opcode::SetfieldGc, &[p, fc], f3);
    let r3 = b.op_with_descr(Opcode::GetfieldGcF, &[p], f3);
    let c64 = b.const_int(0x1_2345_6789);
    b.op_with_descr(Opcode::SetfieldGc, &[p, c64], f4);
    let r4 = b.op_with_descr(Opcode::GetfieldGcI, &[p], f4);
    b.op_with_descr(Opcode::SetarrayitemGc, &[p, i, x], ad);
    let r5 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, i], ad);
    let two = b.const_int(2);
    let x1 = b.op(Opcode::IntAdd, &[x, two]);
    b.op_with_descr(Opcode::SetarrayitemGc, &[p, two, x1], ad);
    let r6 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, two], ad);
    b.op_with_descr(Opcode::SetfieldRaw, &[a, x], fraw);
    let r7 = b.op_with_descr(Opcode::GetfieldRawI, &[a], fraw);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[q, j, x1], di);
    let r8 = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[q, j], di);
    b.finish_with(&[r1, r2, r3, r4, r5, r6, r7, r8]);
    let t = b.finish().unwrap();

    let medium = CompileOptions {
        int_regs: 5,
        float_regs: 2,
        ..opts()
    };
    for o in [opts(), medium, tight()] {
        let c = compile(&t, &o).unwrap_or_else(|e| panic!("{e}"));
        for (iv, xv, yv) in [
            (0i64, 5i64, 1.5f64),
            (3, -1, -0.0),
            (1, 0x7fff_ffff_1234, 1e300),
            (2, i64::MIN, 2.0),
        ] {
            let mut buf = vec![0u64; 12];
            buf[0] = 4; // array length
            let mut raw = vec![0u64; 4];
            let mut inner = vec![0u64; 6];
            inner[1] = 2; // interior array length (items 0 and 1; only item 1 is in the buffer)
            let pv = (buf.as_mut_ptr() as u64).wrapping_sub(BIG as u64);
            let av = (raw.as_mut_ptr() as u64).wrapping_sub(RAW_BIG as u64);
            let qv = inner.as_mut_ptr() as u64;
            let inputs = [
                RtValue::Ref(pv),
                RtValue::Int(av as i64),
                RtValue::Ref(qv),
                RtValue::Int(xv),
                RtValue::float(yv),
                RtValue::Int(iv),
                RtValue::Int(1),
            ];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            let native = c.run(&words, &mut SimpleHeap::new()).unwrap();
            same(&t, &native, &int).unwrap();
            assert_eq!(buf[1], xv as u64);
            assert_eq!(buf[2], yv.to_bits());
            assert_eq!(buf[3], (-3.75f64).to_bits());
            assert_eq!(buf[9] as u32, 0x2345_6789);
            assert_eq!(
                buf[4 + iv as usize],
                if iv == 2 { xv.wrapping_add(2) } else { xv } as u64
            );
            assert_eq!(buf[6], xv.wrapping_add(2) as u64);
            assert_eq!(raw[1] as u32, xv as u32);
            assert_eq!(inner[3], xv.wrapping_add(2) as u64);
        }
    }
}

/// The bounds check reads the length word at a wide offset: indices at or beyond it and
/// negative ones are invalid operations; `arraylen_gc` reads the same word.
#[test]
fn wide_length_word_bounds_check() {
    const BIG: i64 = -0x2_0000_0000;
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref);
    let i = b.input(Kind::Int);
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: BIG + 16,
        len_offset: BIG + 8,
    }));
    let n = b.op_with_descr(Opcode::ArraylenGc, &[p], ad);
    let r = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, i], ad);
    let k = b.const_int(2);
    let r2 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, k], ad);
    b.finish_with(&[n, r, r2]);
    let t = b.finish().unwrap();
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        for len in [2u64, 3, 5] {
            let mut buf = vec![0u64, len, 100, 101, 102, 103, 104];
            let pv = (buf.as_mut_ptr() as u64).wrapping_sub(BIG as u64);
            for iv in [-1i64, 0, 1, 2, 4, 5] {
                let native = c.run(&[pv, iv as u64], &mut SimpleHeap::new()).unwrap();
                if iv < 0 || iv as u64 >= len || len <= 2 {
                    assert!(
                        matches!(native, Exit::Invalid { .. }),
                        "len {len} index {iv}: {native:?}"
                    );
                } else {
                    assert_eq!(
                        native,
                        Exit::Finish {
                            values: vec![len, 100 + iv as u64, 102]
                        },
                        "len {len} index {iv}"
                    );
                }
            }
            buf[0] = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Instruction selection: zero-extending masks, `test` for tested `and`s, three-operand
// forms, results placed where the loop's jump wants them
// ---------------------------------------------------------------------------------------

/// Native run (with all registers and with 3) against the reference interpreter.
fn same_as_interpreter(t: &Trace, inputs: &[i64]) {
    let rt: Vec<RtValue> = inputs.iter().map(|&v| RtValue::Int(v)).collect();
    let words: Vec<u64> = inputs.iter().map(|&v| v as u64).collect();
    let int = interp::run(t, &rt, &RunConfig::default()).outcome;
    for o in [opts(), tight()] {
        let native = run_native(t, &words, &o);
        same(t, &native, &int).unwrap_or_else(|e| panic!("inputs {inputs:?}, {} registers: {e}", o.int_regs));
    }
}

const MASK_VALUES: &[i64] = &[0x1234_5678_9abc_def0, -0x80, -0x8000, 0x7f, 0x80, 0xffff, 0x1_0000];

/// `int_and` with 0xff, 0xffff and 0xffffffff (zero-extending moves) and other masks, with
/// `x` in its input slot or in a register, dying or living on, the mask on either side.
#[test]
fn and_masks_on_special_values() {
    let masks = [0xff, 0xffff, 0xffff_ffff, 0xff_ffff, 0x7fff_ffff, 7, -8];
    for &mask in &masks {
        for &x in SPECIAL_INTS.iter().chain(MASK_VALUES) {
            let want = (x & mask) as u64;
            for (in_reg, lives, mask_first) in (0..8).map(|k| (k & 1 != 0, k & 2 != 0, k & 4 != 0)) {
                let mut b = TraceBuilder::new();
                let ix = b.input(Kind::Int);
                let zero = b.input(Kind::Int);
                // `x ^ 0` is computed into a register; the input itself stays in its slot.
                let xv = if in_reg { b.op(Opcode::IntXor, &[ix, zero]) } else { ix };
                let m = b.const_int(mask);
                let r = if mask_first {
                    b.op(Opcode::IntAnd, &[m, xv])
                } else {
                    b.op(Opcode::IntAnd, &[xv, m])
                };
                if lives {
                    b.finish_with(&[r, xv]);
                } else {
                    b.finish_with(&[r]);
                }
                let t = b.finish().unwrap();
                let mut values = vec![want];
                if lives {
                    values.push(x as u64);
                }
                for o in [opts(), tight()] {
                    assert_eq!(
                        run_native(&t, &[x as u64, 0], &o),
                        Exit::Finish { values: values.clone() },
                        "{x:#x} & {mask:#x}, in register {in_reg}, lives {lives}"
                    );
                }
            }
        }
    }
}

/// The `int_and` consumers that become a `test` fused with the guard: the guard itself,
/// `int_is_true`, `int_is_zero`, `int_ne(_, 0)`, `int_eq(_, 0)` (0 on either side).
const AND_CONSUMERS: usize = 7;

/// `guard(consumer(x & y))` with `x` in the fail arguments, `y` an input or a constant.
fn and_test_trace(consumer: usize, guard: Opcode, y: Option<i64>) -> Trace {
    let mut b = TraceBuilder::new();
    let ix = b.input(Kind::Int);
    let iy = b.input(Kind::Int);
    let yv = match y {
        Some(c) => b.const_int(c),
        None => iy,
    };
    let a = b.op(Opcode::IntAnd, &[ix, yv]);
    let zero = b.const_int(0);
    let c = match consumer {
        0 => a,
        1 => b.op(Opcode::IntIsTrue, &[a]),
        2 => b.op(Opcode::IntIsZero, &[a]),
        3 => b.op(Opcode::IntNe, &[a, zero]),
        4 => b.op(Opcode::IntNe, &[zero, a]),
        5 => b.op(Opcode::IntEq, &[a, zero]),
        _ => b.op(Opcode::IntEq, &[zero, a]),
    };
    b.guard(guard, &[c], &[ix, iy], 9);
    b.finish_with(&[ix]);
    b.finish().unwrap()
}

#[test]
fn and_tested_for_zero_on_special_values() {
    let ys = [
        None,
        Some(7),
        Some(0xff),
        Some(0x80),
        Some(0x100),
        Some(-8),
        Some(0x7fff_ffff),
        Some(1 << 40),
    ];
    for consumer in 0..AND_CONSUMERS {
        for guard in [Opcode::GuardTrue, Opcode::GuardFalse] {
            for y in ys {
                let t = and_test_trace(consumer, guard, y);
                for &x in SPECIAL_INTS.iter().chain(MASK_VALUES) {
                    same_as_interpreter(&t, &[x, y.unwrap_or(0xf0)]);
                }
            }
        }
    }
}

/// The tested `and` leaves no `setcc`, `and` or separate `test r, r`: `test dil/bl, 7`
/// then the exit branch.
#[test]
fn and_tested_for_zero_is_a_test_fused_with_the_guard() {
    for consumer in 0..AND_CONSUMERS {
        let t = and_test_trace(consumer, Opcode::GuardFalse, Some(7));
        let code = compile(&t, &opts()).unwrap().code().to_vec();
        assert!(
            !code.windows(2).any(|w| w[0] == 0x0f && (0x90..=0x9f).contains(&w[1])),
            "consumer {consumer}: setcc in {code:02x?}"
        );
        // `test r8, imm8` is f6 /0 ib; then `jne/je rel32` (0f 85 / 0f 84).
        assert!(
            code.windows(5).any(|w| w[0] == 0xf6
                && w[1] & 0xf8 == 0xc0
                && w[2] == 7
                && w[3] == 0x0f
                && matches!(w[4], 0x84 | 0x85)),
            "consumer {consumer}: {code:02x?}"
        );
    }
}

/// `imul d, x, imm` (8- and 32-bit immediates) with and without overflow guards, `x` dying
/// or living on (in the guard's fail arguments), in a register or its slot.
#[test]
fn multiplication_by_constants_on_special_values() {
    for c in [
        3i64,
        24,
        -1,
        127,
        128,
        -128,
        16_777_619,
        i32::MIN as i64,
        i32::MAX as i64,
    ] {
        for ovf in [false, true] {
            for (in_reg, lives) in [(false, false), (false, true), (true, false), (true, true)] {
                let mut b = TraceBuilder::new();
                let ix = b.input(Kind::Int);
                let zero = b.input(Kind::Int);
                let xv = if in_reg { b.op(Opcode::IntXor, &[ix, zero]) } else { ix };
                let k = b.const_int(c);
                let opc = if ovf { Opcode::IntMulOvf } else { Opcode::IntMul };
                let r = b.op(opc, &[xv, k]);
                if ovf {
                    let fail: &[trace_ir::Value] = if lives { &[xv] } else { &[] };
                    b.guard(Opcode::GuardNoOverflow, &[], fail, 3);
                }
                b.finish_with(&[r]);
                let t = b.finish().unwrap();
                for &x in SPECIAL_INTS.iter().chain(MASK_VALUES) {
                    same_as_interpreter(&t, &[x, 0]);
                }
            }
        }
    }
}

/// Additions by `lea` of two registers and commutative ops overwriting the operand that dies:
/// every combination of which operand lives on.
#[test]
fn commutative_ops_with_either_operand_living_on() {
    for opc in [
        Opcode::IntAdd,
        Opcode::IntAddOvf,
        Opcode::IntXor,
        Opcode::IntMul,
        Opcode::IntAnd,
        Opcode::IntOr,
    ] {
        for keep in 0..4 {
            let mut b = TraceBuilder::new();
            let i0 = b.input(Kind::Int);
            let i1 = b.input(Kind::Int);
            let zero = b.const_int(0);
            // Both operands in registers.
            let x = b.op(Opcode::IntAdd, &[i0, zero]);
            let y = b.op(Opcode::IntSub, &[i1, zero]);
            let r = b.op(opc, &[x, y]);
            if opc.is_ovf() {
                b.guard(Opcode::GuardNoOverflow, &[], &[x, y], 4);
            }
            let mut out = vec![r];
            if keep & 1 != 0 {
                out.push(x);
            }
            if keep & 2 != 0 {
                out.push(y);
            }
            b.finish_with(&out);
            let t = b.finish().unwrap();
            for &(p, q) in &[(3i64, 4i64), (i64::MAX, 1), (-1, i64::MIN), (0x1234_5678, -0x9abc)] {
                same_as_interpreter(&t, &[p, q]);
            }
        }
    }
}

/// FNV-1a steps in a loop: `h = ((h ^ k) * 16777619) & 0xffffffff` with `h` carried by the
/// jump. The masked product is computed directly in `h`'s loop register (`mov r32, r32`,
/// no move at the jump); the result matches a Rust computation.
#[test]
fn loop_carried_mask_lands_in_the_jump_register() {
    let mut b = TraceBuilder::new();
    let (h0, k0, n0) = (b.input(Kind::Int), b.input(Kind::Int), b.input(Kind::Int));
    let p = b.label(&[h0, k0, n0]);
    let zero = b.const_int(0);
    let more = b.op(Opcode::IntGt, &[p[2], zero]);
    b.guard(Opcode::GuardTrue, &[more], &[p[0], p[2]], 1);
    let x = b.op(Opcode::IntXor, &[p[0], p[1]]);
    let prime = b.const_int(16_777_619);
    let m = b.op(Opcode::IntMulOvf, &[x, prime]);
    b.guard(Opcode::GuardNoOverflow, &[], &[x, p[2]], 2);
    let mask = b.const_int(0xffff_ffff);
    let h = b.op(Opcode::IntAnd, &[m, mask]);
    let one = b.const_int(1);
    let k = b.op(Opcode::IntAdd, &[p[1], one]);
    let n = b.op(Opcode::IntSub, &[p[2], one]);
    b.jump(&[h, k, n]);
    let t = b.finish().unwrap();
    let (mut h, mut k) = (2_166_136_261i64, 5i64);
    for _ in 0..1000 {
        h = ((h ^ k) * 16_777_619) & 0xffff_ffff;
        k += 1;
    }
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        assert_eq!(
            c.run(&[2_166_136_261, 5, 1000], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard {
                guard: t.guards[0].id,
                resume_key: 1,
                values: vec![h as u64, 0]
            }
        );
    }
    same_as_interpreter(&t, &[2_166_136_261, 5, 1000]);
    // With all registers the jump moves nothing: its code is the `jmp` alone (one line of
    // the listing: `jmp ...` with the `disasm` feature, the 5 bytes `e9 ..` without), and the
    // mask is one `mov r32, r32` (no REX.W: 89 /r or 8b /r, optionally after 41/44/45).
    let c = compile(&t, &opts()).unwrap();
    let listing = c.disassembly(&t);
    let lines: Vec<&str> = listing.lines().collect();
    let at = |what: &str| {
        lines
            .iter()
            .position(|l| l.starts_with("; op") && l.contains(what))
            .unwrap()
    };
    let code_of = |k: usize| -> Vec<&str> {
        lines[k + 1..]
            .iter()
            .take_while(|l| !l.starts_with(';'))
            .copied()
            .collect()
    };
    // The loop is rotated: the jump repeats the loop's first test (`cmp r, imm32` and `jg`
    // back into the body, 7 + 6 bytes) and otherwise jumps to that guard's exit (`jmp rel32`,
    // 5 bytes). No `mov` before: 18 bytes in the hex listing, no `mov` with `disasm`.
    let jump = code_of(at("= jump("));
    let tokens: Vec<&str> = jump.iter().flat_map(|l| l.split_whitespace().skip(1)).collect();
    let hex = tokens.iter().all(|w| w.len() == 2 && u8::from_str_radix(w, 16).is_ok());
    if hex {
        assert_eq!(tokens.len(), 18, "{listing}");
    } else {
        assert!(
            jump.len() == 3 && !jump.iter().any(|l| l.contains(" mov ")) && jump[0].contains("cmp"),
            "{listing}"
        );
    }
    let mask = code_of(at("= int_and("));
    assert_eq!(mask.len(), 1, "{listing}");
    let words: Vec<&str> = mask[0].split_whitespace().skip(1).collect();
    // `mov r15d,edi` (32-bit register names: eXX or rNd).
    let reg32 = |r: &str| r.starts_with('e') || (r.starts_with('r') && r.ends_with('d'));
    let text_form = words.first() == Some(&"mov") && words.get(1).is_some_and(|ops| ops.split(',').all(reg32));
    let byte_form = matches!(words.first().copied(), Some("89" | "8b"))
        || (matches!(words.first().copied(), Some("41" | "44" | "45"))
            && matches!(words.get(1).copied(), Some("89" | "8b")));
    assert!(text_form || byte_form, "{listing}");
}

/// `_ovf` add/sub that overwrite an operand only the overflow guard's exit still reports
/// (the exit stub recomputes it from the result): operands in registers, a slot or a
/// constant, either side, both guard kinds, on the overflow edges.
#[test]
fn overwritten_operands_are_recomputed_at_overflow_exits() {
    let ys: [Option<i64>; 5] = [None, Some(16), Some(-1), Some(i32::MAX as i64), Some(i64::MIN)];
    for opc in [Opcode::IntAddOvf, Opcode::IntSubOvf] {
        for guard in [Opcode::GuardNoOverflow, Opcode::GuardOverflow] {
            for y in ys {
                for (y_in_reg, also_result, y_first) in (0..8).map(|k| (k & 1 != 0, k & 2 != 0, k & 4 != 0)) {
                    let mut b = TraceBuilder::new();
                    let ix = b.input(Kind::Int);
                    let iy = b.input(Kind::Int);
                    let zero = b.input(Kind::Int);
                    let x = b.op(Opcode::IntXor, &[ix, zero]);
                    let yv = match y {
                        Some(c) => b.const_int(c),
                        None if y_in_reg => b.op(Opcode::IntOr, &[iy, zero]),
                        None => iy,
                    };
                    let (p, q) = if y_first { (yv, x) } else { (x, yv) };
                    let r = b.op(opc, &[p, q]);
                    let mut fail = vec![x, yv];
                    if also_result {
                        fail.push(r);
                    }
                    b.guard(guard, &[], &fail, 5);
                    b.finish_with(&[r]);
                    let t = b.finish().unwrap();
                    for &xv in &[0i64, 1, -1, i64::MAX, i64::MIN, i64::MAX - 15, 1 << 62] {
                        same_as_interpreter(&t, &[xv, y.unwrap_or(i64::MAX), 0]);
                        same_as_interpreter(&t, &[xv, y.unwrap_or(-7), 0]);
                    }
                    // In place: the op is one instruction (no copy of `x` first): `add/sub r64,
                    // imm8` (4 bytes: REX.W 83 /0 or /5 ib) in the hex listing, one line with
                    // the `disasm` feature.
                    if matches!(y, Some(16 | -1)) && !y_first {
                        let listing = compile(&t, &opts()).unwrap().disassembly(&t);
                        let lines: Vec<&str> = listing.lines().collect();
                        let k = lines.iter().position(|l| l.contains("_ovf(")).unwrap();
                        let code: Vec<&str> = lines[k + 1..]
                            .iter()
                            .take_while(|l| !l.starts_with(';'))
                            .copied()
                            .collect();
                        let tokens: Vec<&str> = code[0].split_whitespace().skip(1).collect();
                        let hex = tokens.iter().all(|w| w.len() == 2 && u8::from_str_radix(w, 16).is_ok());
                        assert!(code.len() == 1 && (!hex || tokens.len() == 4), "{listing}");
                    }
                }
            }
        }
    }
}

/// Rotated loops (the jump repeats the loop's first test and branches back into the body):
/// the guard fails on entry (top copy) or after k iterations (the jump's copy), with the
/// test against a parameter or a constant, many parameters (some in slots), both guard
/// polarities; exits match the interpreter and a direct computation.
#[test]
fn rotated_loops_exit_with_the_right_values() {
    for (against_const, guard, extra) in (0..12).map(|k| {
        (
            k & 1 != 0,
            if k & 2 != 0 {
                Opcode::GuardTrue
            } else {
                Opcode::GuardFalse
            },
            [0usize, 3, 12][k / 4],
        )
    }) {
        let mut b = TraceBuilder::new();
        let i0 = b.input(Kind::Int);
        let n0 = b.input(Kind::Int);
        let s0 = b.input(Kind::Int);
        let extras: Vec<_> = (0..extra).map(|_| b.input(Kind::Int)).collect();
        let mut args = vec![i0, n0, s0];
        args.extend(&extras);
        let p = b.label(&args);
        let bound = if against_const { b.const_int(5) } else { p[1] };
        // guard_true(i < n) or guard_false(i >= n)
        let c = if guard == Opcode::GuardTrue {
            b.op(Opcode::IntLt, &[p[0], bound])
        } else {
            b.op(Opcode::IntGe, &[p[0], bound])
        };
        b.guard(guard, &[c], &p, 7);
        let s = b.op(Opcode::IntAdd, &[p[2], p[0]]);
        let one = b.const_int(1);
        let i = b.op(Opcode::IntAdd, &[p[0], one]);
        let mut next = vec![i, p[1], s];
        // Extra parameters rotate (so they stay live and move).
        for k in 0..extra {
            next.push(p[3 + (k + 1) % extra]);
        }
        b.jump(&next);
        let t = b.finish().unwrap();
        for n in [0i64, 1, 5, 9] {
            for start in [0i64, 3, 7] {
                let mut inputs = vec![start, n, 100];
                inputs.extend((0..extra as i64).map(|k| 1000 + k));
                same_as_interpreter(&t, &inputs);
                let limit = if against_const { 5 } else { n };
                let (mut i, mut s) = (start, 100i64);
                while i < limit {
                    s += i;
                    i += 1;
                }
                match run_native(&t, &inputs.iter().map(|&v| v as u64).collect::<Vec<_>>(), &opts()) {
                    Exit::Guard { values, .. } => assert_eq!(&values[..3], &[i as u64, n as u64, s as u64]),
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

/// `guard_true(uint_lt(i, arraylen_gc(p)))` then `getarrayitem_gc(p, i)`: the access needs
/// neither a null check (the length read checked `p`) nor a bounds check (the guard did);
/// with `i` out of bounds the guard exits, with `p` null the length read is invalid. A
/// write of the length word in between (`setfield_gc` at its offset) makes the access check
/// again: the shrunk length turns it into an invalid operation.
#[test]
fn accesses_after_a_passed_bounds_guard_skip_the_checks_but_keep_their_meaning() {
    for write_len in [false, true] {
        let mut b = TraceBuilder::new();
        let p = b.input(Kind::Ref);
        let i = b.input(Kind::Int);
        let ad = b.descr(Descr::Array(ArrayDescr {
            item_size: 8,
            signed: true,
            kind: Kind::Int,
            base_offset: 16,
            len_offset: 8,
        }));
        let n = b.op_with_descr(Opcode::ArraylenGc, &[p], ad);
        let c = b.op(Opcode::UintLt, &[i, n]);
        b.guard(Opcode::GuardTrue, &[c], &[p, i], 3);
        if write_len {
            let f = int_field(&mut b, 8);
            let one = b.const_int(1);
            b.op_with_descr(Opcode::SetfieldGc, &[p, one], f);
        }
        let r = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, i], ad);
        b.finish_with(&[r]);
        let t = b.finish().unwrap();
        for o in [opts(), tight()] {
            let c = compile(&t, &o).unwrap();
            for iv in [-1i64, 0, 1, 2, 3, 7] {
                let mut buf = vec![0u64, 3, 100, 101, 102, 103];
                let pv = buf.as_mut_ptr() as u64;
                let got = c.run(&[pv, iv as u64], &mut SimpleHeap::new()).unwrap();
                if !(0..3).contains(&iv) {
                    assert!(
                        matches!(&got, Exit::Guard { values, .. } if values == &[pv, iv as u64]),
                        "index {iv}: {got:?}"
                    );
                } else if write_len && iv >= 1 {
                    assert!(matches!(got, Exit::Invalid { .. }), "index {iv}: {got:?}");
                } else {
                    assert_eq!(
                        got,
                        Exit::Finish {
                            values: vec![100 + iv as u64]
                        },
                        "index {iv}"
                    );
                }
                buf[0] = 0;
            }
            assert!(matches!(
                c.run(&[0, 0], &mut SimpleHeap::new()).unwrap(),
                Exit::Invalid { .. }
            ));
            // The access's own code: no conditional branch (0f 8x / a jcc mnemonic) unless
            // the length word was written.
            let listing = c.disassembly(&t);
            let lines: Vec<&str> = listing.lines().collect();
            let k = lines.iter().position(|l| l.contains("= getarrayitem_gc_i(")).unwrap();
            let code: Vec<&str> = lines[k + 1..]
                .iter()
                .take_while(|l| !l.starts_with(';'))
                .copied()
                .collect();
            let tokens: Vec<&str> = code.iter().flat_map(|l| l.split_whitespace().skip(1)).collect();
            let branches = tokens.windows(2).any(|w| w[0] == "0f" && w[1].starts_with('8'))
                || code
                    .iter()
                    .any(|l| l.split_whitespace().nth(1).is_some_and(|m| m.starts_with('j')));
            assert_eq!(branches, write_len, "{listing}");
        }
    }
}

/// Null checks are dropped once a value passed one (or `guard_nonnull`), and for a loop
/// parameter the jump passes back unchanged; the loop still reads the right values.
#[test]
fn null_checks_once_per_value() {
    let mut b = TraceBuilder::new();
    let p0 = b.input(Kind::Ref);
    let n0 = b.input(Kind::Int);
    let s0 = b.input(Kind::Int);
    b.guard(Opcode::GuardNonnull, &[p0], &[p0], 1);
    let f = int_field(&mut b, 8);
    let g = int_field(&mut b, 16);
    let params = b.label(&[p0, n0, s0]);
    let (p, n, s) = (params[0], params[1], params[2]);
    let zero = b.const_int(0);
    let more = b.op(Opcode::IntGt, &[n, zero]);
    b.guard(Opcode::GuardTrue, &[more], &[p, n, s], 2);
    let x = b.op_with_descr(Opcode::GetfieldGcI, &[p], f);
    let y = b.op_with_descr(Opcode::GetfieldGcI, &[p], g);
    let s1 = b.op(Opcode::IntAdd, &[s, x]);
    let s2 = b.op(Opcode::IntAdd, &[s1, y]);
    let one = b.const_int(1);
    let n1 = b.op(Opcode::IntSub, &[n, one]);
    b.jump(&[p, n1, s2]);
    let t = b.finish().unwrap();
    let mut obj = vec![0u64, 5, 7];
    let pv = obj.as_mut_ptr() as u64;
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        assert!(matches!(
            c.run(&[pv, 10, 1], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard { values, .. } if values == [pv, 0, 1 + 10 * 12]
        ));
        assert!(matches!(
            c.run(&[0, 10, 1], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard { values, .. } if values == [0]
        ));
        // No `test r, r` (48/49/4d 85 with mod 11) anywhere in the loop body after the guard.
        let listing = c.disassembly(&t);
        let body = &listing[listing.find("= getfield_gc_i(").unwrap()..listing.find("= jump(").unwrap()];
        assert!(!body.contains("test") && !body.contains(" 85 "), "{listing}");
    }
    obj[0] = 0;
}

/// The loop body starts on a 64-byte boundary whatever the length of the code before it,
/// padded with a few multi-byte NOPs that run once on entry: loops behind entry code of
/// every length modulo 9 (the longest NOP) run like the interpreter.
#[test]
fn loop_bodies_are_aligned_with_multi_byte_nops() {
    for extra in 0..24 {
        let mut b = TraceBuilder::new();
        let i0 = b.input(Kind::Int);
        let n = b.input(Kind::Int);
        // Entry code of varying length: a chain of additions folded into the start value.
        let mut v = i0;
        for k in 0..extra {
            let c = b.const_int(k as i64 + 1);
            v = b.op(if k % 2 == 0 { Opcode::IntAdd } else { Opcode::IntXor }, &[v, c]);
        }
        let p = b.label(&[v, n]);
        let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
        b.guard(Opcode::GuardTrue, &[lt], &[p[0]], 1);
        let one = b.const_int(1);
        let i = b.op(Opcode::IntAdd, &[p[0], one]);
        b.jump(&[i, p[1]]);
        let t = b.finish().unwrap();
        same_as_interpreter(&t, &[0, 50]);
        let c = compile(&t, &opts()).unwrap();
        let label = t.ops.iter().position(|o| o.opcode == Opcode::Label).unwrap();
        let body_start = c.ranges.iter().find(|r| r.0 as usize > label).unwrap().1;
        assert_eq!(body_start % 64, 0, "loop body at {body_start}");
        assert_eq!(c.code.as_ptr() as usize % 64, 0, "code mapping is page-aligned");
        if cfg!(feature = "disasm") {
            let listing = c.disassembly(&t);
            let label_part = &listing[listing.find("= label(").unwrap()..];
            let label_part = &label_part[..label_part[1..].find("; op").unwrap()];
            let nops = label_part.matches("nop").count();
            assert!(nops <= 8, "{nops} NOPs pad the loop:\n{label_part}");
        }
    }
}
