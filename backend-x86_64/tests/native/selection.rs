//! Instruction selection: fused compare-and-guard, zero-extending masks, `test` for tested
//! `and`s, three-operand forms, results placed where the loop's jump wants them, overflow
//! operands recomputed at exits, loop rotation, bounds and null checks done once, aligned
//! loop bodies.

use super::*;
use trace_ir::descr::ArrayDescr;

/// The fused compare-and-guard: `cmp` directly followed by the exit branch, no `setcc`.
#[test]
fn comparison_is_fused_into_its_guard() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Int);
    let lt = b.op(Opcode::IntLt, &[x, y]);
    b.guard(Opcode::GuardTrue, &[lt], &[x], 1);
    b.finish(&[y]);
    let t = b.build().unwrap();
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
        c.run_test(&[1, 2], &mut SimpleHeap::new()).unwrap(),
        Exit::Finish { values: ints(&[2]) }
    );
    assert!(
        matches!(c.run_test(&[3, 2], &mut SimpleHeap::new()).unwrap(), Exit::Guard { ref values, .. } if values == &ints(&[3]))
    );
}

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
                    b.finish(&[r, xv]);
                } else {
                    b.finish(&[r]);
                }
                let t = b.build().unwrap();
                let mut values = ints(&[want as i64]);
                if lives {
                    values.push(ExitValue::Int(x));
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
    b.finish(&[ix]);
    b.build().unwrap()
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
                b.finish(&[r]);
                let t = b.build().unwrap();
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
            b.finish(&out);
            let t = b.build().unwrap();
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
    let t = b.build().unwrap();
    let (mut h, mut k) = (2_166_136_261i64, 5i64);
    for _ in 0..1000 {
        h = ((h ^ k) * 16_777_619) & 0xffff_ffff;
        k += 1;
    }
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        assert_eq!(
            c.run_test(&[2_166_136_261, 5, 1000], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard {
                guard: t.guards[0].id,
                resume_key: 1,
                values: ints(&[h, 0])
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
            .position(|l| l.starts_with("; ") && l.contains(what))
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
    let jump = code_of(at("; jump("));
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
                    b.finish(&[r]);
                    let t = b.build().unwrap();
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
        let t = b.build().unwrap();
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
                    Exit::Guard { values, .. } => assert_eq!(&values[..3], &ints(&[i, n, s])),
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
        b.finish(&[r]);
        let t = b.build().unwrap();
        for o in [opts(), tight()] {
            let c = compile(&t, &o).unwrap();
            for iv in [-1i64, 0, 1, 2, 3, 7] {
                let mut buf = vec![0u64, 3, 100, 101, 102, 103];
                let pv = buf.as_mut_ptr() as u64;
                let got = c.run_test(&[pv, iv as u64], &mut SimpleHeap::new()).unwrap();
                if !(0..3).contains(&iv) {
                    assert!(
                        matches!(&got, Exit::Guard { values, .. } if values == &[ExitValue::Ref(pv), ExitValue::Int(iv)]),
                        "index {iv}: {got:?}"
                    );
                } else if write_len && iv >= 1 {
                    assert!(matches!(got, Exit::Invalid { .. }), "index {iv}: {got:?}");
                } else {
                    assert_eq!(
                        got,
                        Exit::Finish {
                            values: ints(&[100 + iv])
                        },
                        "index {iv}"
                    );
                }
                buf[0] = 0;
            }
            assert!(matches!(
                c.run_test(&[0, 0], &mut SimpleHeap::new()).unwrap(),
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
    let t = b.build().unwrap();
    let mut obj = vec![0u64, 5, 7];
    let pv = obj.as_mut_ptr() as u64;
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        assert!(matches!(
            c.run_test(&[pv, 10, 1], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard { values, .. } if values == [ExitValue::Ref(pv), ExitValue::Int(0), ExitValue::Int(1 + 10 * 12)]
        ));
        assert!(matches!(
            c.run_test(&[0, 10, 1], &mut SimpleHeap::new()).unwrap(),
            Exit::Guard { values, .. } if values == [ExitValue::Ref(0)]
        ));
        // No `test r, r` (48/49/4d 85 with mod 11) anywhere in the loop body after the guard.
        let listing = c.disassembly(&t);
        let body = &listing[listing.find("= getfield_gc_i(").unwrap()..listing.find("; jump(").unwrap()];
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
        let t = b.build().unwrap();
        same_as_interpreter(&t, &[0, 50]);
        let c = compile(&t, &opts()).unwrap();
        let label = t.ops.iter().position(|o| o.opcode == Opcode::Label).unwrap();
        let body_start = c.op_ranges().find(|r| r.0.index() > label).unwrap().1.start;
        assert_eq!(body_start % 64, 0, "loop body at {body_start}");
        assert_eq!(c.code().as_ptr() as usize % 64, 0, "code starts on a cache line");
        if cfg!(feature = "disasm") {
            let listing = c.disassembly(&t);
            let label_part = &listing[listing.find("; label(").unwrap()..];
            let label_part = &label_part[..label_part[1..].find("\n; ").unwrap()];
            let nops = label_part.matches("nop").count();
            assert!(nops <= 8, "{nops} NOPs pad the loop:\n{label_part}");
        }
    }
}
