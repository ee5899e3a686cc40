//! Operands of the current op: how instruction selection asks the allocator for the
//! locations of its operands and for a register for its result.

use super::emit::{fits_i32, Opnd};
use super::regalloc::{Allocator, Cx};
use super::regs::{Reg, RegSet};
use super::{internal, kind_of, Gen, R};
use crate::checker::Val;
use crate::pmove::Loc;
use trace_ir::{Kind, Value, ValueData};

impl<'t> Gen<'t> {
    /// The allocator, with what it works with: split borrows of the code generator's rooms.
    #[inline]
    pub(super) fn ra(&mut self) -> (&mut Allocator, Cx<'_>) {
        (
            &mut self.r.ra,
            Cx {
                em: &mut self.em,
                live: &self.r.live,
                pos: self.pos,
            },
        )
    }

    /// `v` as the checker names it.
    pub(super) fn val(&self, v: Value) -> Val {
        match v.data() {
            ValueData::Op(o) => Val::Op(o.index() as u32),
            ValueData::Const(c) => Val::Const(self.t.consts.get(c).bits()),
        }
    }

    /// Whether `v` (an op index) is used after the current op.
    #[inline]
    pub(super) fn live_after(&self, v: usize) -> bool {
        self.r.live.live_after(v, self.pos)
    }

    /// Where the value `v` is right now.
    #[inline]
    pub(super) fn loc(&self, v: Value) -> R<Loc> {
        match v.data() {
            ValueData::Const(c) => Ok(Loc::Imm(self.t.consts.get(c).bits())),
            ValueData::Op(o) => self.r.ra.loc_of(&self.em, o.index(), self.pos),
        }
    }

    /// The current op reads `v` (an op index) in register `r`, which it reserves.
    #[inline]
    pub(super) fn use_reg(&mut self, r: Reg, v: usize) {
        self.em.record_use(r.loc(), v, self.pos);
        self.r.ra.pin(r);
    }

    /// A free register of the class of `kind` for this op, outside `avoid` (see
    /// [`Allocator::alloc_reg`]).
    #[inline]
    pub(super) fn alloc_reg(&mut self, kind: Kind, avoid: RegSet) -> R<Reg> {
        let (ra, mut cx) = self.ra();
        ra.alloc_reg(&mut cx, kind, avoid)
    }

    /// Make `r` free and pinned for the current op (for instructions with fixed registers).
    pub(super) fn take_reg(&mut self, r: Reg) -> R<()> {
        let (ra, mut cx) = self.ra();
        ra.take_reg(&mut cx, r)
    }

    /// Store `v` (an op index) into its slot unless the slot already holds it.
    pub(super) fn ensure_slot(&mut self, v: usize) -> R<()> {
        let (ra, mut cx) = self.ra();
        ra.ensure_slot(&mut cx, v)
    }

    /// `v` in a register (pinned). Constants go to a temporary register without owner.
    #[inline]
    pub(super) fn load(&mut self, v: Value) -> R<Reg> {
        if let Some(o) = v.as_op() {
            if let Some(r) = self.r.ra.reg_of(o.index()) {
                self.use_reg(r, o.index());
                return Ok(r);
            }
        }
        let kind = kind_of(self.t, v);
        let src = self.loc(v)?;
        let r = self.alloc_reg(kind, RegSet::EMPTY)?;
        self.em.mov(r.loc(), src);
        if let Some(o) = v.as_op() {
            self.r.ra.set_owner(r, o.index());
        }
        Ok(r)
    }

    /// `v` as an integer ALU operand: an immediate, a register or a slot.
    #[inline]
    pub(super) fn opnd(&mut self, v: Value) -> R<Opnd> {
        match self.loc(v)? {
            Loc::Imm(b) if fits_i32(b as i64) => Ok(Opnd::Imm(b as i64 as i32)),
            Loc::Imm(_) => Ok(Opnd::Reg(self.load(v)?)),
            Loc::Reg(r) => {
                let r = Reg::new(r);
                self.r.ra.pin(r);
                Ok(Opnd::Reg(r))
            }
            Loc::Mem(d) => Ok(Opnd::Mem(d)),
        }
    }

    /// `v` as an SSE operand: a register or a slot (constants are loaded).
    pub(super) fn fopnd(&mut self, v: Value) -> R<Opnd> {
        match self.loc(v)? {
            Loc::Reg(r) => {
                let r = Reg::new(r);
                self.r.ra.pin(r);
                Ok(Opnd::Reg(r))
            }
            Loc::Mem(m) => Ok(Opnd::Mem(m)),
            Loc::Imm(_) => Ok(Opnd::Reg(self.load(v)?)),
        }
    }

    /// A fresh register holding a copy of `v` that the op may overwrite: `v`'s own register
    /// when `v` dies at this op, else a new one.
    #[inline]
    pub(super) fn copy_to_new(&mut self, v: Value, kind: Kind) -> R<Reg> {
        if let Some(o) = v.as_op() {
            if let Some(r) = self.r.ra.reg_of(o.index()) {
                if !self.live_after(o.index()) {
                    self.em.record_use(r.loc(), o.index(), self.pos);
                    self.r.ra.release(r);
                    self.r.ra.pin(r);
                    return Ok(r);
                }
            }
        }
        let src = self.loc(v)?;
        let r = self.alloc_result(kind)?;
        self.em.mov(r.loc(), src);
        Ok(r)
    }

    /// A register for the result of the current op (pinned, no owner): the one the loop's
    /// `jump` wants it in when that one is free, else any.
    pub(super) fn alloc_result(&mut self, kind: Kind) -> R<Reg> {
        match self.jump_hint(kind) {
            Some(r) => {
                self.r.ra.pin(r);
                Ok(r)
            }
            None => self.alloc_reg(kind, RegSet::EMPTY),
        }
    }

    /// The destination of a three-operand form reading `x` (`imul d, x, imm`, `mov e_d, e_x`,
    /// `movzx d, x`): the register the loop's `jump` wants (see [`Gen::jump_hint`]), else
    /// `x`'s register when `x` dies here, else a new one. Returns it (pinned, no owner) and
    /// `x` as an operand (a register or a slot; `x` must not be a constant).
    pub(super) fn three_operand(&mut self, x: Value, kind: Kind) -> R<(Reg, Opnd)> {
        let src = match self.loc(x)? {
            Loc::Reg(r) => {
                let r = Reg::new(r);
                self.r.ra.pin(r);
                Opnd::Reg(r)
            }
            Loc::Mem(m) => Opnd::Mem(m),
            Loc::Imm(_) => return Err(internal("three-operand form of a constant".into())),
        };
        if let Some(h) = self.jump_hint(kind) {
            self.r.ra.pin(h);
            return Ok((h, src));
        }
        if let (Opnd::Reg(r), Some(o)) = (src, x.as_op()) {
            if !self.live_after(o.index()) {
                self.r.ra.release(r);
                return Ok((r, src));
            }
        }
        Ok((self.alloc_reg(kind, RegSet::EMPTY)?, src))
    }

    /// The result of the current op is in `r`.
    #[inline]
    pub(super) fn def(&mut self, r: Reg) {
        self.r.ra.define(&self.em, r, self.pos);
    }
}
