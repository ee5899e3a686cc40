//! Loops: labels (the canonical allocation state at a loop header), the `jump` back edge,
//! result hints for values the jump carries, and loop rotation.

use super::*;

/// reads only the label's parameters and constants: the `jump` repeats the `cmp` after its
/// parallel move and branches back to `body` (right after the guard) while the guard holds,
/// else to the guard's stub (whose fail-argument locations are the label's fixed ones,
/// which the parallel move has just filled). One branch per iteration instead of the
/// `jmp` and the guard's branch.
#[derive(Copy, Clone, Debug)]
pub(super) struct LoopTop {
    pub(super) x: Reg,
    pub(super) y: Opnd,
    pub(super) exit_if: Cond,
    /// The guard's stub (an index into `Gen::stubs`).
    pub(super) stub: u32,
    pub(super) body: DynamicLabel,
}

/// The fixed locations of a label's parameters.
pub(super) struct LabelInfo {
    pub(super) label: DynamicLabel,
    pub(super) params: Vec<Loc>,
    /// Values living across the label, in their slots (for the checker).
    pub(super) keep: Vec<(Loc, u32)>,
}

impl Gen<'_> {
    pub(super) fn label(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        // Everything still needed after the label (other than through its parameters) must
        // be in its slot: the back edge does not preserve registers.
        let last_param = at + op.args.len();
        let mut keep = Vec::new();
        for v in 0..at {
            if self.used_from(v, last_param + 1) && (self.reg_of(v).is_some() || self.val_slot[v].is_some()) {
                self.ensure_slot(v)?;
                keep.push((Loc::Mem(self.slot_disp(self.val_slot[v].unwrap())), v as u32));
            }
        }
        // Fixed locations of the parameters: registers while enough stay free, slots beyond.
        let gpr_pool = self.gpr_pool.clone();
        let xmm_pool = self.xmm_pool.clone();
        let mut gprs = gpr_pool.iter().copied().take(gpr_pool.len().saturating_sub(4));
        let mut xmms = xmm_pool.iter().copied().take(xmm_pool.len().saturating_sub(2));
        let mut params = Vec::new();
        let mut moves = Vec::new();
        for (k, &a) in op.args.iter().enumerate() {
            let p = at + 1 + k;
            let r = if t.kind_of(a) == Kind::Float {
                xmms.next()
            } else {
                gprs.next()
            };
            let dst = match r {
                Some(r) => Loc::Reg(r),
                None => {
                    let s = self.new_slot();
                    self.val_slot[p] = Some(s);
                    Loc::Mem(self.slot_disp(s))
                }
            };
            params.push(dst);
            moves.push((dst, self.loc(a)?));
        }
        self.parallel_move(&moves);
        for (k, &(dst, _)) in moves.iter().enumerate() {
            self.expect(dst, self.val(op.args[k]));
        }
        for &(l, v) in &keep {
            self.expect(l, Val::Op(v));
        }
        let checked_params = params
            .iter()
            .enumerate()
            .map(|(k, &l)| (l, (at + 1 + k) as u32))
            .collect();
        self.record(Event::Label {
            params: checked_params,
            keep: keep.clone(),
        });
        // Canonical state: parameters in their fixed locations, nothing else in registers.
        for r in 0..32 {
            self.release(r);
        }
        for (k, &dst) in params.iter().enumerate() {
            let p = at + 1 + k;
            match dst {
                Loc::Reg(r) => self.set_owner(r, p),
                Loc::Mem(_) => {
                    let s = self.val_slot[p].unwrap();
                    self.slot_valid[s as usize] = true;
                }
                Loc::Imm(_) => unreachable!(),
            }
        }
        let label = self.asm.new_dynamic_label();
        // The loop starts on a 64-byte boundary (NOPs, run once on entry): a small loop body
        // that straddles two 64-byte lines costs a second fetch line per iteration (measured on
        // the sum example: 0.62 -> 0.31 ns per iteration).
        self.align_with_nops(64);
        dynasm!(self.asm ; .arch x64 ; =>label);
        // The jump back to this label, for result register hints.
        let last = t.ops.len() - 1;
        if t.ops[last].opcode == Opcode::Jump
            && matches!(jump_target(t, OpRef::new(last)), JumpTarget::Label(l) if l.index() == at)
        {
            self.loop_jump = Some((last, params.clone()));
            self.loop_first = Some(at + op.args.len() + 1);
        }
        // Memory may differ when the loop comes back.
        self.in_bounds.clear();
        self.lens.clear();
        // Non-null parameters: those whose argument is, when every entry passes that same
        // value (the loop's jump gives the parameter back unchanged, or nothing jumps here).
        let looped = self.loop_first == Some(at + op.args.len() + 1);
        for (k, &arg) in op.args.iter().enumerate() {
            let param = Value::op(OpRef::new(at + 1 + k));
            if self.known_nonnull(arg) && (!looped || t.ops[last].args.get(k) == Some(&param)) {
                self.make_nonnull(param);
            }
        }
        self.labels.insert(at, LabelInfo { label, params, keep });
        Ok(())
    }

    /// When the last use of the current op's result is the loop's `jump` and the register
    /// the jump moves it into (its target label's parameter) is free: that register. A
    /// result computed there costs the jump no move (on a loop-carried value, a move less on
    /// the critical path).
    pub(super) fn jump_hint(&self, kind: Kind) -> Option<Reg> {
        let (jpos, params) = self.loop_jump.as_ref()?;
        if self.last_use[self.pos] as usize != *jpos {
            return None;
        }
        let me = Value::op(OpRef::new(self.pos));
        let k = self.t.ops[*jpos].args.iter().position(|&a| a == me)?;
        match params.get(k) {
            Some(&Loc::Reg(r))
                if is_xmm(r) == (kind == Kind::Float) && (self.occupied | self.pinned) & (1 << r) == 0 =>
            {
                Some(r)
            }
            _ => None,
        }
    }

    pub(super) fn jump(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let info = match jump_target(t, OpRef::new(at)) {
            JumpTarget::Label(l) => self
                .labels
                .get(&l.index())
                .ok_or_else(|| bad("jump to a label defined later"))?,
            JumpTarget::Start => self.start.as_ref().unwrap(),
            JumpTarget::External => {
                // Leaving for another loop: report the jump's operands like `finish` does.
                let target = match op.descr.map(|d| t.descr(d)) {
                    Some(trace_ir::Descr::Loop(n)) => Some(*n),
                    _ => None,
                };
                self.leave(
                    &op.args,
                    ExitInfo::External {
                        target,
                        n: op.args.len(),
                    },
                )?;
                return Ok(());
            }
        };
        let label = info.label;
        let params = info.params.clone();
        let keep = info.keep.clone();
        if params.len() != op.args.len() {
            return Err(bad("jump arity differs from its target"));
        }
        let mut moves = Vec::new();
        for (k, &v) in op.args.iter().enumerate() {
            moves.push((params[k], self.loc(v)?));
        }
        self.parallel_move(&moves);
        for (k, &v) in op.args.iter().enumerate() {
            self.expect(params[k], self.val(v));
        }
        for &(l, v) in &keep {
            self.expect(l, Val::Op(v));
        }
        match self.loop_top {
            Some(top) if self.loop_jump.as_ref().is_some_and(|j| j.0 == at) => {
                self.cmp(top.x, top.y);
                self.jcc(top.exit_if.negate(), top.body);
                self.jmp_stub(top.stub);
            }
            _ => dynasm!(self.asm ; .arch x64 ; jmp =>label),
        }
        self.record(Event::End);
        Ok(())
    }
}
