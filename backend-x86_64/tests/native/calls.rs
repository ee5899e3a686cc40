//! Calls: values living across calls, conditional calls, and calls with stack arguments
//! (more than 6 integer or 8 float arguments) to real `extern "sysv64"` functions.

use super::*;

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
    b.finish(&[r]);
    let t = b.build().unwrap();
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
    let t = b.build().unwrap();
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
    b.finish(&[r, s, live]);
    let t = b.build().unwrap();
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
                    values: ints(&[r, r.wrapping_add(121), 121])
                }
            );
        }
    }
}

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
    b.build().unwrap()
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
                let native = c.run_test(&words, &mut SimpleHeap::new()).unwrap();
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
    let t = b.build().unwrap();
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
            let native = c.run_test(&words, &mut SimpleHeap::new()).unwrap();
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
