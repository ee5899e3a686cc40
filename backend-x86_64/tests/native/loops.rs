//! Loops and register pressure: parallel moves on the back edge, more live values than
//! registers, jumps back to the trace start.

use super::*;

/// A loop whose jump rotates its `k` carried values (a cycle of length `k` in the parallel
/// move) while counting down; the exit reports the rotated values.
pub(super) fn rotation_loop(k: usize, iters: i64) -> Trace {
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
    b.build().unwrap()
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
                let jump = &listing[listing.find("; jump(").unwrap()..];
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
        b.finish(&[acc]);
        let t = b.build().unwrap();
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
    let t = b.build().unwrap();
    match run_native(&t, &[0, 0], &opts()) {
        Exit::Guard {
            guard,
            resume_key,
            values,
        } => {
            assert_eq!((guard.0, resume_key), (0, 3));
            assert_eq!(values, ints(&[45, 10]));
        }
        other => panic!("{other:?}"),
    }
}
