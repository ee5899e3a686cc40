//! Loops: labels (the canonical allocation state at a loop header), the `jump` back edge,
//! result hints for values the jump carries, and loop rotation.
//!
//! At a `label` every value still needed after it (other than through its parameters) is
//! stored in its slot, the operands move in parallel into the parameters' fixed locations
//! (registers while enough stay free, slots beyond) and the allocator is reset to
//! "parameters there, nothing else in registers". A `jump` moves its operands into the
//! same locations (for the trace start: the input slots) and jumps back: both edges into a
//! label agree on the state, so the straight-line allocation holds in every iteration.

use super::emit::{Cond, Opnd};
use super::regs::Reg;
use super::{bad, Gen, CHECK, R};
use crate::checker::{Event, Val};
use crate::pmove::Loc;
use crate::ExitInfo;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};
use trace_ir::fxhash::FxHashMap;
use trace_ir::{jump_target, JumpTarget, Kind, OpRef, Opcode, Value};

/// The loop body starts with a comparison fused into its guard (`cmp x, y; jcc exit`) that
/// reads only the label's parameters and constants: the `jump` repeats the `cmp` after its
/// parallel move and branches back to `body` (right after the guard) while the guard holds,
/// else to the guard's stub (whose fail-argument locations are the label's fixed ones,
/// which the parallel move has just filled). One branch per iteration instead of the
/// `jmp` and the guard's branch.
#[derive(Copy, Clone, Debug)]
pub(super) struct LoopTop {
    /// The compared register (a parameter's fixed register).
    pub(super) x: Reg,
    /// What it is compared with.
    pub(super) y: Opnd,
    /// The condition under which the guard exits.
    pub(super) exit_if: Cond,
    /// The guard's stub.
    pub(super) stub: u32,
    /// Right after the guard.
    pub(super) body: DynamicLabel,
}

/// The fixed locations of a label's parameters.
pub(super) struct LabelInfo {
    /// The label's position in the code.
    label: DynamicLabel,
    /// Where each parameter lives.
    params: Vec<Loc>,
    /// Values living across the label, in their slots (for the checker).
    keep: Vec<(Loc, u32)>,
}

/// A label of a compiled trace that a bridge of its tree may jump to.
#[derive(Clone, Debug)]
pub(crate) struct TreeLabel {
    /// The label's address in the code.
    pub(crate) addr: u64,
    /// Where each parameter lives (frame displacements are the tree's: one frame).
    pub(crate) params: Vec<Loc>,
    /// The parameters the code after the label takes to be non-null (their null checks are
    /// gone): a jump into the label must pass values known to be non-null there.
    pub(crate) nonnull: Vec<bool>,
}

/// A label of the trace being compiled, for its tree: its `TargetToken`, code offset,
/// parameters and the parameters taken to be non-null (see [`TreeLabel`]).
pub(crate) type LabelExport = (u64, u32, Vec<Loc>, Vec<bool>);

/// What code generation knows about the trace's labels and its loop.
#[derive(Default)]
pub(super) struct Loops {
    /// The labels emitted so far, by op index.
    labels: FxHashMap<usize, LabelInfo>,
    /// The trace start as a label: its parameters are the inputs, in their slots.
    start: Option<LabelInfo>,
    /// The loop's `jump` (its position) and the fixed locations of its target label's
    /// parameters, once that label is emitted: results whose last use is the jump are put
    /// where it wants them when that register is free (see [`Gen::jump_hint`]).
    jump: Option<(usize, Vec<Loc>)>,
    /// The first op of the loop body (after the loop label's parameters), once that label
    /// is emitted.
    first: Option<usize>,
    /// The loop is rotated (see [`LoopTop`]).
    pub(super) top: Option<LoopTop>,
    /// The labels with a `TargetToken`, for the tree.
    pub(super) exported: Vec<LabelExport>,
    /// A bridge's jumps into labels of its tree: the code offset of each `mov r11, imm64;
    /// jmp r11` and the label's address (a `jmp rel32` once the bridge's place is known and
    /// the label within reach: see `tree`).
    pub(super) tree_jumps: Vec<(u32, u64)>,
}

impl Loops {
    /// The trace start is at `label`, the inputs in `params`.
    pub(super) fn set_start(&mut self, label: DynamicLabel, params: Vec<Loc>) {
        self.start = Some(LabelInfo {
            label,
            params,
            keep: Vec::new(),
        });
    }

    /// Whether `at` is the first op of the loop body.
    pub(super) fn is_first(&self, at: usize) -> bool {
        self.first == Some(at)
    }
}

impl Gen<'_> {
    /// The `label` at `at` (its parameters follow it): see the module documentation.
    pub(super) fn label(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        // Everything still needed after the label (other than through its parameters) must
        // be in its slot: the back edge does not preserve registers.
        let last_param = at + op.args.len();
        let mut keep = Vec::new();
        for v in 0..at {
            if self.r.live.used_from(v, last_param + 1) && self.r.ra.has_location(v) {
                self.ensure_slot(v)?;
                keep.push((self.r.ra.slot_loc(v).unwrap(), v as u32));
            }
        }
        let params = self.label_params(at)?;
        for &(l, v) in &keep {
            self.em.expect(l, Val::Op(v), self.pos);
        }
        if CHECK {
            let checked_params = params
                .iter()
                .enumerate()
                .map(|(k, &l)| (l, (at + 1 + k) as u32))
                .collect();
            self.em.record(Event::Label {
                params: checked_params,
                keep: keep.clone(),
            });
        }
        // Canonical state: parameters in their fixed locations, nothing else in registers.
        self.r.ra.reset_to_params(&params, at + 1);
        let label = self.em.asm.new_dynamic_label();
        // The loop starts on a 64-byte boundary (NOPs, run once on entry): a small loop body
        // that straddles two 64-byte lines costs a second fetch line per iteration (measured
        // on the sum example: 0.62 -> 0.31 ns per iteration).
        self.em.align_with_nops(64);
        dynasm!(self.em.asm ; .arch x64 ; =>label);
        let offset = self.em.asm.offset().0 as u32;
        // The jump back to this label, for result register hints.
        let last = t.ops.len() - 1;
        if t.ops[last].opcode == Opcode::Jump
            && matches!(jump_target(t, OpRef::new(last)), JumpTarget::Label(l) if l.index() == at)
        {
            self.loops.jump = Some((last, params.clone()));
            self.loops.first = Some(at + op.args.len() + 1);
        }
        // Memory may differ when the loop comes back.
        self.r.heap.forget_memory();
        // Non-null parameters: those whose argument is, when every entry passes that same
        // value (the loop's jump gives the parameter back unchanged, or nothing jumps here).
        // (A bridge that jumps here later must pass non-null values for those: see
        // `TreeLabel::nonnull`.)
        let looped = self.loops.first == Some(at + op.args.len() + 1);
        let mut nonnull = Vec::with_capacity(op.args.len());
        for (k, &arg) in op.args.iter().enumerate() {
            let param = Value::op(OpRef::new(at + 1 + k));
            let yes = self.known_nonnull(arg) && (!looped || t.ops[last].args.get(k) == Some(&param));
            if yes {
                self.r.heap.make_nonnull(param);
            }
            nonnull.push(yes && t.kind_of(arg) == Kind::Ref);
        }
        if let Some(trace_ir::Descr::Target(token)) = op.descr.map(|d| t.descr(d)) {
            self.loops.exported.push((*token, offset, params.clone(), nonnull));
        }
        self.loops.labels.insert(at, LabelInfo { label, params, keep });
        Ok(())
    }

    /// The fixed locations of the parameters of the label at `at` (registers while enough
    /// stay free, slots beyond), with the label's operands moved there in parallel.
    fn label_params(&mut self, at: usize) -> R<Vec<Loc>> {
        let t = self.t;
        let op = &t.ops[at];
        // The pools copied out of the allocator, which hands out slots meanwhile.
        let (gpr_pool, ngprs) = reg_array(self.r.ra.gpr_order());
        let (xmm_pool, nxmms) = reg_array(self.r.ra.xmm_order());
        let mut gprs = gpr_pool[..ngprs.saturating_sub(4)].iter().copied();
        let mut xmms = xmm_pool[..nxmms.saturating_sub(2)].iter().copied();
        let mut params = Vec::with_capacity(op.args.len());
        let mut moves = Vec::with_capacity(op.args.len());
        for (k, &a) in op.args.iter().enumerate() {
            let p = at + 1 + k;
            let r = if t.kind_of(a) == Kind::Float {
                xmms.next()
            } else {
                gprs.next()
            };
            let dst = match r {
                Some(r) => r.loc(),
                None => {
                    let s = self.r.ra.give_slot(p, false);
                    Loc::Mem(self.frame.slot_disp(s))
                }
            };
            params.push(dst);
            moves.push((dst, self.loc(a)?));
        }
        self.r.pm.emit(&mut self.em, &moves);
        for (k, &(dst, _)) in moves.iter().enumerate() {
            self.em.expect(dst, self.val(op.args[k]), self.pos);
        }
        Ok(params)
    }

    /// When the last use of the current op's result is the loop's `jump` and the register
    /// the jump moves it into (its target label's parameter) is free: that register. A
    /// result computed there costs the jump no move (on a loop-carried value, a move less on
    /// the critical path).
    pub(super) fn jump_hint(&self, kind: Kind) -> Option<Reg> {
        let (jpos, params) = self.loops.jump.as_ref()?;
        if self.r.live.last_use(self.pos) != *jpos {
            return None;
        }
        let me = Value::op(OpRef::new(self.pos));
        let k = self.t.ops[*jpos].args.iter().position(|&a| a == me)?;
        match params.get(k) {
            Some(&Loc::Reg(r)) => {
                let r = Reg::new(r);
                (r.is_xmm() == (kind == Kind::Float) && self.r.ra.is_free(r)).then_some(r)
            }
            _ => None,
        }
    }

    /// The `jump` at `at`: its operands into the target label's parameters, and back (or out
    /// of the trace, for a jump to another loop).
    pub(super) fn jump(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        // The jump ends the trace: its target's description is taken, not copied.
        let info = match jump_target(t, OpRef::new(at)) {
            JumpTarget::Label(l) => self
                .loops
                .labels
                .remove(&l.index())
                .ok_or_else(|| bad("jump to a label defined later"))?,
            JumpTarget::Start => self.loops.start.take().unwrap(),
            JumpTarget::External => {
                // Leaving for another loop: report the jump's operands like `finish` does.
                let target = match op.descr.map(|d| t.descr(d)) {
                    Some(trace_ir::Descr::Loop(n)) => Some(*n),
                    _ => None,
                };
                if let Some(tl) = self.tree_label(op) {
                    return self.enter_tree_label(at, &tl);
                }
                self.leave(
                    &op.args,
                    ExitInfo::External {
                        target,
                        at: self.frame.exit_word(0) as u32,
                        n: op.args.len(),
                    },
                )?;
                return Ok(());
            }
        };
        let LabelInfo { label, params, keep } = info;
        if params.len() != op.args.len() {
            return Err(bad("jump arity differs from its target"));
        }
        let mut moves = Vec::with_capacity(op.args.len());
        for (k, &v) in op.args.iter().enumerate() {
            moves.push((params[k], self.loc(v)?));
        }
        self.r.pm.emit(&mut self.em, &moves);
        for (k, &v) in op.args.iter().enumerate() {
            self.em.expect(params[k], self.val(v), self.pos);
        }
        for &(l, v) in &keep {
            self.em.expect(l, Val::Op(v), self.pos);
        }
        match self.loops.top {
            Some(top) if self.loops.jump.as_ref().is_some_and(|j| j.0 == at) => {
                self.em.cmp(top.x, top.y);
                self.em.jcc(top.exit_if.negate(), top.body);
                self.jmp_stub(top.stub);
            }
            _ => dynasm!(self.em.asm ; .arch x64 ; jmp =>label),
        }
        self.em.record(Event::End);
        Ok(())
    }
}

impl Gen<'_> {
    /// The label of another trace of the tree that the `jump` `op` names, when this trace
    /// is a bridge and its tree has that label.
    fn tree_label(&self, op: &trace_ir::Op) -> Option<TreeLabel> {
        let env = self.bridge.as_ref()?;
        match op.descr.map(|d| self.t.descr(d)) {
            Some(trace_ir::Descr::Target(token)) => env.labels.get(token).cloned(),
            _ => None,
        }
    }

    /// The bridge's `jump` at `at` into the label `tl` of another trace of its tree: its
    /// operands into the label's parameters (the tree's frame is one), then an absolute jump
    /// to the label.
    fn enter_tree_label(&mut self, at: usize, tl: &TreeLabel) -> R<()> {
        let op = &self.t.ops[at];
        if tl.params.len() != op.args.len() {
            return Err(bridge_error(format!(
                "the jump passes {} values to a label of {} parameters",
                op.args.len(),
                tl.params.len()
            )));
        }
        for (k, &a) in op.args.iter().enumerate() {
            if tl.nonnull[k] && !self.known_nonnull(a) {
                return Err(bridge_error(format!(
                    "the jump passes operand {k}, not known to be non-null, to a parameter the loop's code takes \
                     to be non-null (check it with `guard_nonnull` first)"
                )));
            }
        }
        let mut moves = Vec::with_capacity(op.args.len());
        for (k, &v) in op.args.iter().enumerate() {
            moves.push((tl.params[k], self.loc(v)?));
        }
        self.r.pm.emit(&mut self.em, &moves);
        let addr = tl.addr;
        self.loops.tree_jumps.push((self.em.asm.offset().0 as u32, addr));
        dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD addr as i64 ; jmp r11);
        self.em.record(Event::End);
        Ok(())
    }
}

fn bridge_error(msg: String) -> Box<crate::CompileError> {
    Box::new(crate::CompileError::Bridge(msg))
}

/// The registers of `regs` (a pool: at most 16) in an array, and their number.
fn reg_array(regs: &[Reg]) -> ([Reg; 16], usize) {
    let mut a = [Reg::new(0); 16];
    a[..regs.len()].copy_from_slice(regs);
    (a, regs.len())
}
