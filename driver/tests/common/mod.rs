//! A loop trace shared by the driver's tests.

use trace_ir::{GuardId, Kind, Opcode, Trace, TraceBuilder};

/// `s += i; i += 1` while `i < n` (guard 0, resume 0, the loop's exit); the guard
/// `i & 3 != 0` (guard 1, resume 1) leaves with `[i, n, s]`. Returns the trace and the id of
/// the loop's exit.
pub fn loop_trace() -> (Trace, GuardId) {
    let mut b = TraceBuilder::new();
    let ins: Vec<_> = (0..3).map(|_| b.input(Kind::Int)).collect();
    let p = b.label(&ins);
    let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
    let exit = b.guard(Opcode::GuardTrue, &[lt], &p, 0);
    let three = b.const_int(3);
    let low = b.op(Opcode::IntAnd, &[p[0], three]);
    b.guard(Opcode::GuardTrue, &[low], &p, 1);
    let s = b.op(Opcode::IntAdd, &[p[2], p[0]]);
    let one = b.const_int(1);
    let i = b.op(Opcode::IntAdd, &[p[0], one]);
    b.jump(&[i, p[1], s]);
    (b.build().unwrap(), exit)
}
