//! Fusion: an op whose result only the next op reads passes it on in the flags (a comparison
//! fused into its guard, an `int_and` tested for zero, an `_ovf` op and its overflow guard).
//!
//! What passes is an explicit value, [`Fusion`]: the code generator hands each op the fusion
//! its predecessor returned and keeps the one it returns for the next op, so no op reads
//! state that an op further back left behind.

use super::emit::{Cond, Opnd};
use super::regs::{Reg, RegSet};
use super::{Gen, R};
use dynasmrt::{dynasm, DynasmApi};
use trace_ir::{Kind, OpRef, Opcode, Value};

/// What an op leaves in the flags (and beside them) for the op right after it. Every op
/// (labels included) consumes the fusion of the op before it; only the kinds of op named
/// below read one.
#[derive(Copy, Clone, Debug, Default)]
pub(super) enum Fusion {
    /// Nothing: the next op reads no flags.
    #[default]
    None,
    /// A comparison (or an `int_and` tested for zero) fused into the `guard_true`/
    /// `guard_false` right after it: the flags hold this condition when its boolean is true.
    Cmp(Cond),
    /// A [`Fusion::Cmp`] that is the loop body's first op, emitted as a bare `cmp x, y` of
    /// label parameters and constants (no loads): its guard may rotate the loop (see
    /// [`LoopTop`](super::loops::LoopTop)).
    LoopTest {
        /// The condition the flags hold when the boolean is true.
        cond: Cond,
        /// The compared register.
        x: Reg,
        /// What it is compared with.
        y: Opnd,
    },
    /// An `int_and` emitted as a `test` only (no result): the flags say whether its value
    /// is zero, for the `int_is_true`, `int_is_zero`, `int_ne(_, 0)` or `int_eq(_, 0)`
    /// right after it (see [`Gen::and_test`]), which passes them on to its guard.
    AndTest {
        /// The `int_and` op.
        and: usize,
    },
    /// An `_ovf` op: the overflow flag for the overflow guard right after it, and the
    /// operand it overwrote in place, if any (see [`Undo`]).
    Overflow(Option<Undo>),
}

impl Fusion {
    /// The condition the flags hold when the previous op's boolean is true (the overflow
    /// flag for an `_ovf` op), if the previous op left one for a guard.
    pub(super) fn flags(self) -> Option<Cond> {
        match self {
            Fusion::Cmp(c) | Fusion::LoopTest { cond: c, .. } => Some(c),
            Fusion::Overflow(_) => Some(Cond::O),
            Fusion::None | Fusion::AndTest { .. } => None,
        }
    }
}

/// `x` was overwritten in place by `x = x + y` / `x - y` (an `_ovf` op, register `reg` holding
/// the result of op `at`) although the fail arguments of the overflow guard right after it
/// still name `x`: instead of copying `x` first on the hot path, that guard's exit stub
/// recomputes it (wrapping) as `result - y` / `result + y`. `y` (an immediate, a register
/// or a slot) is still in place at the exit: the overflow guard emits nothing but its jump.
#[derive(Copy, Clone, Debug)]
pub(super) struct Undo {
    /// The overwritten operand `x` (an op index).
    pub(super) val: usize,
    /// The register that held `x` and now holds the result.
    pub(super) reg: Reg,
    /// The `_ovf` op.
    pub(super) at: usize,
    /// The op that recomputes `x` from the result: `int_sub` for an add, `int_add` for a
    /// subtraction.
    pub(super) inverse: Opcode,
    /// The other operand, where it is.
    pub(super) y: Opnd,
    /// The other operand's value (for the checker).
    pub(super) y_val: Value,
}

impl Gen<'_> {
    /// Whether the boolean result of the op at `at` is only consumed by a directly following
    /// `guard_true`/`guard_false` (so the comparison can jump on the flags).
    pub(super) fn fusable(&self, at: usize) -> bool {
        let t = self.t;
        let Some(next) = t.ops.get(at + 1) else { return false };
        matches!(next.opcode, Opcode::GuardTrue | Opcode::GuardFalse)
            && next.args[0] == Value::op(OpRef::new(at))
            && self.r.live.used_only_next(at)
            && {
                let mut also_fail_arg = false;
                let mut seen = 0;
                next.for_each_value_read(&t.guards, |v| {
                    if v == Value::op(OpRef::new(at)) {
                        seen += 1;
                    }
                });
                if seen > 1 {
                    also_fail_arg = true;
                }
                !also_fail_arg
            }
    }

    /// A comparison whose flags are set by `emit_cmp`: fused into the next guard (the
    /// returned fusion), or materialized as 0/1.
    pub(super) fn bool_result(&mut self, at: usize, emit_cmp: impl FnOnce(&mut Self), c: Cond) -> R<Fusion> {
        if self.fusable(at) {
            emit_cmp(self);
            return Ok(Fusion::Cmp(c));
        }
        let d = self.alloc_reg(Kind::Int, RegSet::EMPTY)?;
        emit_cmp(self);
        self.em.setcc_r11(c);
        dynasm!(self.em.asm ; .arch x64 ; movzx Rq(d), r11b);
        self.def(d);
        Ok(Fusion::None)
    }

    /// `int_and(x, y)` at `at` whose value is only tested for zero: by a directly
    /// following `guard_true`/`guard_false`, or by an `int_is_true`, `int_is_zero`,
    /// `int_ne(_, 0)` or `int_eq(_, 0)` that is itself fused into the next guard. Then emit
    /// `test x, y` (the flags `and` would set, without a result) and return the fusion for
    /// the next op: the guard's condition, or [`Fusion::AndTest`] for the comparison.
    pub(super) fn and_test(&mut self, at: usize, x: Value, y: Value) -> R<Option<Fusion>> {
        use Opcode::*;
        let t = self.t;
        let me = Value::op(OpRef::new(at));
        let direct = self.fusable(at);
        let via = !direct
            && self.r.live.used_only_next(at)
            && t.ops.get(at + 1).is_some_and(|n| match n.opcode {
                IntIsTrue | IntIsZero => n.args[0] == me,
                IntNe | IntEq => {
                    (n.args[0] == me && t.const_int(n.args[1]) == Some(0))
                        || (n.args[1] == me && t.const_int(n.args[0]) == Some(0))
                }
                _ => false,
            })
            && self.fusable(at + 1);
        if !direct && !via {
            return Ok(None);
        }
        let rx = self.load(x)?;
        match self.opnd(y)? {
            Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; test Rq(rx), Rq(r)),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; test QWORD [rbp + m], Rq(rx)),
            // The low byte alone when the mask has no other bits (`test r8, imm8`).
            Opnd::Imm(i) if (0..=0xff).contains(&i) => {
                let b = i as u8 as i8;
                dynasm!(self.em.asm ; .arch x64 ; test Rb(rx), BYTE b)
            }
            Opnd::Imm(i) => dynasm!(self.em.asm ; .arch x64 ; test Rq(rx), i),
        }
        Ok(Some(if direct {
            // Non-zero is true.
            Fusion::Cmp(Cond::Ne)
        } else {
            Fusion::AndTest { and: at }
        }))
    }

    /// Whether `v` is in a register and, after the current op (an `_ovf` op), is read only
    /// by the overflow guard right after it, through its fail arguments or virtual fields
    /// (so the op may overwrite it; see [`Undo`]).
    pub(super) fn undoable(&self, v: Value) -> bool {
        let Some(o) = v.as_op() else { return false };
        let o = o.index();
        self.r.ra.reg_of(o).is_some()
            && self.r.live.last_use(o) == self.pos + 1
            && self
                .t
                .ops
                .get(self.pos + 1)
                .is_some_and(|g| matches!(g.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow))
    }
}
