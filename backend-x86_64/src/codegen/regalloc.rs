//! Register allocation: which register or spill slot holds each value, loads, spills and
//! results, in one forward pass together with instruction selection.
//!
//! # Register allocation
//! Every value gets at most one spill slot, assigned on its first spill and never reused, so
//! a slot once written stays valid for the rest of the trace. The allocator state maps each
//! register to the value it holds; a live value is always in a register or a valid slot (or
//! both). Ops are handled in order: operands are loaded (pinned for the op), the result gets
//! a register (reusing the first operand's register when that operand dies here), and values
//! whose last use is this op are released. Under pressure the unpinned register whose value
//! is used furthest in the future is spilled.
//!
//! At a `label` every value that is live after it is stored in its slot, the label's operands
//! are moved (in parallel) into the parameters' fixed locations (registers while enough are
//! free, slots beyond), and the register state is reset to exactly "parameters in their
//! fixed locations". A `jump` performs the same parallel move into the target label's fixed
//! locations (for the trace start: the input slots) and jumps back. Because the state at a
//! label is the same canonical state on entry from above and from the back edge, the
//! straight-line allocation is valid for every iteration.
//!
//! Guards snapshot the locations of their fail arguments (and of the fields of virtual
//! objects in their resume data) right before their conditional jump. The exit stub, emitted
//! after the loop body, copies the ones in registers into the exit buffer and returns the
//! exit code; constants are part of the exit's description, and values in spill slots stay
//! there: the exit reads them from the frame (slots are never reused and nothing runs between the branch and the
//! return, so a slot still holds what it held at the guard). A PyPy trace carries most of
//! its fail arguments in slots: its stubs shrink to a few stores.

use super::*;

impl Gen<'_> {
    // ------------------------------------------------------------------------------------
    // Register state
    // ------------------------------------------------------------------------------------

    pub(super) fn pin(&mut self, r: Reg) {
        self.pinned |= 1 << r;
    }
    pub(super) fn is_pinned(&self, r: Reg) -> bool {
        self.pinned & (1 << r) != 0
    }
    pub(super) fn set_owner(&mut self, r: Reg, v: usize) {
        self.owner[r as usize] = Some(v as u32);
        self.occupied |= 1 << r;
        self.val_reg[v] = r;
    }
    pub(super) fn release(&mut self, r: Reg) {
        if let Some(v) = self.owner[r as usize].take() {
            self.occupied &= !(1 << r);
            self.val_reg[v as usize] = NO_REG;
        }
    }

    /// The register holding value `v`, if any.
    #[inline]
    pub(super) fn reg_of(&self, v: usize) -> Option<Reg> {
        let r = self.val_reg[v];
        (r != NO_REG).then_some(r)
    }

    /// Store `v` into its slot (allocating one) unless the slot already holds it.
    pub(super) fn ensure_slot(&mut self, v: usize) -> R<()> {
        let s = match self.val_slot[v] {
            Some(s) => s,
            None => {
                let s = self.new_slot();
                self.val_slot[v] = Some(s);
                s
            }
        };
        if !self.slot_valid[s as usize] {
            let r = self.reg_of(v).ok_or_else(|| lost_value(v, self.pos))?;
            self.record_use(Loc::Reg(r), v);
            let d = self.slot_disp(s);
            self.store(d, r);
            self.slot_valid[s as usize] = true;
        }
        Ok(())
    }

    /// Free `r`: its value (if still needed) moves to another free register of its class
    /// outside `avoid`, or to its slot.
    pub(super) fn evict(&mut self, r: Reg, avoid: u32) -> R<()> {
        let Some(v) = self.owner[r as usize] else { return Ok(()) };
        let v = v as usize;
        if self.used_from(v, self.pos) {
            let (runs, mask) = if is_xmm(r) {
                (&self.xmm_runs, self.xmm_mask)
            } else {
                (&self.gpr_runs, self.gpr_mask)
            };
            match first_free(runs, mask & !(self.occupied | self.pinned | avoid | 1 << r)) {
                Some(q) => {
                    self.record_use(Loc::Reg(r), v);
                    self.mov(Loc::Reg(q), Loc::Reg(r));
                    self.release(r);
                    self.set_owner(q, v);
                    if self.is_pinned(r) {
                        self.pin(q);
                    }
                    return Ok(());
                }
                None => self.ensure_slot(v)?,
            }
        }
        self.release(r);
        Ok(())
    }

    /// A register of the class of `kind` that is free for this op (not pinned, not in
    /// `avoid`), spilling the value used furthest in the future if none is free. The
    /// register is pinned and has no owner.
    pub(super) fn alloc_reg(&mut self, kind: Kind, avoid: u32) -> R<Reg> {
        let (runs, mask) = if kind == Kind::Float {
            (&self.xmm_runs, self.xmm_mask)
        } else {
            (&self.gpr_runs, self.gpr_mask)
        };
        let blocked = self.pinned | avoid;
        // A free register, the first in pool order.
        if let Some(r) = first_free(runs, mask & !(blocked | self.occupied)) {
            self.pin(r);
            return Ok(r);
        }
        // The candidate whose value is used furthest away (never again counts as furthest;
        // of equals, the highest-numbered register): the largest `(next use, register)`.
        let mut candidates = mask & !blocked;
        if candidates == 0 {
            return Err(out_of_registers(self.pos));
        }
        let mut best = 0u64;
        while candidates != 0 {
            let r = candidates.trailing_zeros() as Reg;
            candidates &= candidates - 1;
            let v = self.owner[r as usize].unwrap() as usize;
            best = best.max((self.next_use[v] as u64) << 8 | r as u64);
        }
        let victim = best as u8;
        let v = self.owner[victim as usize].unwrap() as usize;
        if self.used_from(v, self.pos) {
            self.ensure_slot(v)?;
        }
        self.release(victim);
        self.pin(victim);
        Ok(victim)
    }

    /// Make `r` free and pinned for the current op (for instructions with fixed registers).
    pub(super) fn take_reg(&mut self, r: Reg) -> R<()> {
        self.evict(r, 1 << r)?;
        self.pin(r);
        Ok(())
    }

    /// Where the value `v` is right now.
    pub(super) fn loc(&self, v: Value) -> R<Loc> {
        match v.data() {
            ValueData::Const(c) => Ok(Loc::Imm(self.t.consts.get(c).bits())),
            ValueData::Op(o) => {
                let i = o.index();
                if let Some(r) = self.reg_of(i) {
                    self.record_use(Loc::Reg(r), i);
                    return Ok(Loc::Reg(r));
                }
                match self.val_slot[i] {
                    Some(s) if self.slot_valid[s as usize] => {
                        let l = Loc::Mem(self.slot_disp(s));
                        self.record_use(l, i);
                        Ok(l)
                    }
                    _ => Err(lost_value(i, self.pos)),
                }
            }
        }
    }

    /// `v` in a register (pinned). Constants go to a temporary register without owner.
    pub(super) fn load(&mut self, v: Value) -> R<Reg> {
        if let Some(o) = v.as_op() {
            if let Some(r) = self.reg_of(o.index()) {
                self.record_use(Loc::Reg(r), o.index());
                self.pin(r);
                return Ok(r);
            }
        }
        let kind = self.t.kind_of(v);
        let src = self.loc(v)?;
        let r = self.alloc_reg(kind, 0)?;
        self.mov(Loc::Reg(r), src);
        if let Some(o) = v.as_op() {
            self.set_owner(r, o.index());
        }
        Ok(r)
    }

    /// `v` as an integer ALU operand: an immediate, a register or a slot.
    pub(super) fn opnd(&mut self, v: Value) -> R<Opnd> {
        match self.loc(v)? {
            Loc::Imm(b) if fits_i32(b as i64) => Ok(Opnd::Imm(b as i64 as i32)),
            Loc::Imm(_) => Ok(Opnd::Reg(self.load(v)?)),
            Loc::Reg(r) => {
                self.pin(r);
                Ok(Opnd::Reg(r))
            }
            Loc::Mem(d) => Ok(Opnd::Mem(d)),
        }
    }

    /// A fresh register holding a copy of `v` that the op may overwrite: `v`'s own register
    /// when `v` dies at this op, else a new one.
    pub(super) fn copy_to_new(&mut self, v: Value, kind: Kind) -> R<Reg> {
        if let Some(o) = v.as_op() {
            if let Some(r) = self.reg_of(o.index()) {
                if !self.live_after(o.index()) {
                    self.record_use(Loc::Reg(r), o.index());
                    self.release(r);
                    self.pin(r);
                    return Ok(r);
                }
            }
        }
        let src = self.loc(v)?;
        let r = self.alloc_result(kind)?;
        self.mov(Loc::Reg(r), src);
        Ok(r)
    }

    /// A register for the result of the current op (pinned, no owner): the one the loop's
    /// `jump` wants it in when that one is free, else any.
    pub(super) fn alloc_result(&mut self, kind: Kind) -> R<Reg> {
        match self.jump_hint(kind) {
            Some(r) => {
                self.pin(r);
                Ok(r)
            }
            None => self.alloc_reg(kind, 0),
        }
    }

    /// The destination of a three-operand form reading `x` (`imul d, x, imm`, `mov e_d, e_x`,
    /// `movzx d, x`): the register the loop's `jump` wants (see [`Gen::jump_hint`]), else
    /// `x`'s register when `x` dies here, else a new one. Returns it (pinned, no owner) and
    /// `x` as an operand (a register or a slot; `x` must not be a constant).
    pub(super) fn three_operand(&mut self, x: Value, kind: Kind) -> R<(Reg, Opnd)> {
        let src = match self.loc(x)? {
            Loc::Reg(r) => {
                self.pin(r);
                Opnd::Reg(r)
            }
            Loc::Mem(m) => Opnd::Mem(m),
            Loc::Imm(_) => return Err(internal("three-operand form of a constant".into())),
        };
        if let Some(h) = self.jump_hint(kind) {
            self.pin(h);
            return Ok((h, src));
        }
        if let (Opnd::Reg(r), Some(o)) = (src, x.as_op()) {
            if !self.live_after(o.index()) {
                self.release(r);
                return Ok((r, src));
            }
        }
        Ok((self.alloc_reg(kind, 0)?, src))
    }

    /// The result of the current op is in `r`.
    pub(super) fn def(&mut self, r: Reg) {
        let p = self.pos;
        self.record(Event::Def { reg: r, op: p as u32 });
        self.release(r);
        self.set_owner(r, p);
    }

    /// Past the current op: each value it read has its next use moved on, and the registers
    /// of values that die here (and of a result nobody reads) are released.
    pub(super) fn end_op(&mut self) {
        let pos = self.pos;
        // Without branches (which values die is unpredictable): a value that stays live,
        // or has no register, releases the dummy register `NO_REG`.
        let (next_use, val_reg, owner) = (&mut self.next_use[..], &mut self.val_reg[..], &mut self.owner);
        let mut occupied = self.occupied as u64;
        let mut kill = |v: usize, dies: bool| {
            let reg = val_reg[v];
            let r = select_unpredictable(dies, reg, NO_REG) as usize;
            owner[r] = None;
            occupied &= !(1 << r);
            val_reg[v] = select_unpredictable(dies, NO_REG, reg);
        };
        for &(v, next) in &self.reads[self.reads_start[pos] as usize..self.reads_start[pos + 1] as usize] {
            next_use[v as usize] = next;
            kill(v as usize, next == NEVER);
        }
        // A result nobody reads.
        kill(pos, self.last_use[pos] == 0);
        owner[NO_REG as usize] = None;
        self.occupied = occupied as u32;
        self.pinned = 0;
    }

    pub(super) fn fopnd(&mut self, v: Value) -> R<Opnd> {
        match self.loc(v)? {
            Loc::Reg(r) => {
                self.pin(r);
                Ok(Opnd::Reg(r))
            }
            Loc::Mem(m) => Ok(Opnd::Mem(m)),
            Loc::Imm(_) => Ok(Opnd::Reg(self.load(v)?)),
        }
    }
}
