//! Unit tests of the backend: per-op results against `eval_pure`, loops, register pressure,
//! exits, and differential runs of random traces against the reference interpreter.

use crate::*;
use proptest::prelude::*;
use trace_ir::eval::eval_pure;
use trace_ir::interp::{self, Outcome, RtValue, RunConfig};
use trace_ir::random::{random_trace, RandomConfig, SPECIAL_INTS};
use trace_ir::{Kind, Opcode, TraceBuilder, Value};

fn opts() -> CompileOptions {
    CompileOptions { int_regs: 13, float_regs: 15, log_asm: false, perf_map: false }
}
fn tight() -> CompileOptions {
    CompileOptions { int_regs: 3, float_regs: 2, log_asm: false, perf_map: false }
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
        (Exit::Guard { guard, resume_key, values }, Outcome::GuardFailed { guard: g, resume_key: k, values: w }) => {
            guard == g && resume_key == k && *values == bits(w)
        }
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("native {native:?} vs interpreter {int}\n{}", trace_ir::text::print_trace(t)))
    }
}

// ---------------------------------------------------------------------------------------
// Per-op tests
// ---------------------------------------------------------------------------------------

const BINARY: &[Opcode] = &[
    Opcode::IntAdd, Opcode::IntSub, Opcode::IntMul, Opcode::IntAnd, Opcode::IntOr, Opcode::IntXor,
    Opcode::IntFloorDiv, Opcode::IntMod, Opcode::IntPyDiv, Opcode::IntPyMod, Opcode::IntLshift,
    Opcode::IntRshift, Opcode::UintRshift, Opcode::UintMulHigh, Opcode::IntLt, Opcode::IntLe,
    Opcode::IntEq, Opcode::IntNe, Opcode::IntGt, Opcode::IntGe, Opcode::UintLt, Opcode::UintLe,
    Opcode::UintGt, Opcode::UintGe, Opcode::IntSignext,
];
const UNARY: &[Opcode] = &[
    Opcode::IntIsTrue, Opcode::IntIsZero, Opcode::IntNeg, Opcode::IntInvert, Opcode::IntForceGeZero,
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
            Ok(w) => assert_eq!(got, Exit::Finish { values: vec![*w, x as u64] }, "{opc}({x}, {y}) consts {cx} {cy}"),
            Err(_) => assert!(matches!(got, Exit::Invalid { .. }), "{opc}({x}, {y}) consts {cx} {cy}: {got:?}"),
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
            assert_eq!(run_native(&t, &[x as u64], &opts()), Exit::Finish { values: vec![want] }, "{opc}({x})");
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
    for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 9.3e18, -9.3e18, 9.223372036854775807e18, -9.223372036854775808e18, 0.5, -0.5, 1e300] {
        let mut b = TraceBuilder::new();
        let fx = b.input(Kind::Float);
        let r = b.op(Opcode::CastFloatToInt, &[fx]);
        b.finish_with(&[r]);
        let t = b.finish().unwrap();
        let want = eval_pure(Opcode::CastFloatToInt, &[x.to_bits()]).unwrap();
        assert_eq!(run_native(&t, &[x.to_bits()], &opts()), Exit::Finish { values: vec![want] }, "{x}");
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
                let int = interp::run(&t, &inputs.iter().map(|&v| RtValue::Int(v as i64)).collect::<Vec<_>>(), &RunConfig::default()).outcome;
                same(&t, &native, &int).unwrap();
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
        Exit::Guard { guard, resume_key, values } => {
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
    assert_eq!(c.run(&[], &mut SimpleHeap::new()), Err(RunError::InputCount { expected: 1, got: 0 }));
}

#[test]
fn unsupported_ops_are_errors() {
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref);
    let n = b.op(Opcode::Strlen, &[p]);
    b.finish_with(&[n]);
    let t = b.finish().unwrap();
    match compile(&t, &opts()) {
        Err(CompileError::Unsupported { opcode: Opcode::Strlen, op }) => assert_eq!(op.index(), 1),
        other => panic!("{other:?}"),
    }
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

// ---------------------------------------------------------------------------------------
// Differential tests on random traces
// ---------------------------------------------------------------------------------------

fn no_heap() -> RandomConfig {
    RandomConfig { max_ref_inputs: 0, heap: 0, calls: 0, ..RandomConfig::default() }
}

fn differential(cfg: &RandomConfig, seeds: std::ops::Range<u64>, o: &CompileOptions) {
    let mut compiled = 0;
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
    }
    assert!(compiled > 0);
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
    differential(&RandomConfig { length: 60, ..no_heap() }, 0..1000, &tight());
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

#[allow(dead_code)]
fn _unused(_: Value) {}
