//! Register allocation: which register or spill slot holds each value, with loads, spills and
//! results decided in one forward pass together with instruction selection.
//!
//! # Design
//! Every value gets at most one spill slot, assigned on its first spill and never reused, so
//! a slot once written stays valid for the rest of the trace. The allocator maps each
//! register to the value it holds; a live value is always in a register or a valid slot (or
//! both). Ops are handled in order: operands are loaded (pinned for the op), the result gets
//! a register (reusing the first operand's register when that operand dies here), and values
//! whose last use is this op are released ([`Allocator::end_op`]). Under pressure the
//! unpinned register whose value is used furthest in the future is spilled
//! ([`Allocator::alloc_reg`]).
//!
//! At a `label` every value that is live after it is stored in its slot, the label's operands
//! are moved (in parallel) into the parameters' fixed locations (registers while enough are
//! free, slots beyond), and the register state is reset to exactly "parameters in their
//! fixed locations" ([`Allocator::reset_to_params`]). A `jump` performs the same parallel
//! move into the target label's fixed locations (for the trace start: the input slots) and
//! jumps back. Because the state at a label is the same canonical state on entry from above
//! and from the back edge, the straight-line allocation is valid for every iteration (see
//! the `loops` module).
//!
//! Guards snapshot where their fail arguments are; values in spill slots stay there for the
//! exit to read (see the `exits` module).
//!
//! A bridge starts with its inputs where the guard it leaves from had them: in registers
//! (owned by the inputs from the start) or in frame words of the trace the guard belongs to,
//! which the bridge adopts as the inputs' slots ([`Allocator::adopt_word`]): never written
//! by the bridge, since a slot once valid is never stored to again.
//!
//! The allocator emits the moves its decisions need (spills, register-to-register moves)
//! and records, for the symbolic checker (`crate::checker`), every read it claims: a
//! [`Cx`] gives it the code, the liveness tables and the current op. Instruction selection
//! asks for operands and results through the helpers of the `operands` module.

use super::emit::Emitter;
use super::frame::FrameLayout;
use super::liveness::{Liveness, NEVER};
use super::regs::{pools, Pool, Reg, RegSet, CALLEE_SAVED, NO_REG};
use super::{lost_value, out_of_registers, R};
use crate::checker::Event;
use crate::pmove::Loc;
use crate::CompileOptions;
use std::hint::select_unpredictable;
use trace_ir::Kind;

/// What an allocation step works with besides the allocator's own state.
pub(super) struct Cx<'a> {
    /// The code (spills and moves go there) and the checker's events.
    pub(super) em: &'a mut Emitter,
    /// The trace's liveness tables.
    pub(super) live: &'a Liveness,
    /// The op being compiled.
    pub(super) pos: usize,
}

/// The register allocator's state: which value each register holds, which registers are
/// pinned for the current op, and the spill slots. Values are op indices. Reused from trace
/// to trace ([`Allocator::reset`]).
pub(super) struct Allocator {
    /// The allocatable general-purpose registers.
    gprs: Pool,
    /// The allocatable XMM registers.
    xmms: Pool,
    /// The register counts (`int_regs`, `float_regs`) the pools were made for.
    pools_for: Option<(usize, usize)>,
    /// The value each register holds; entry `NO_REG` is a dummy that `end_op` writes
    /// instead of branching.
    owner: [Option<u32>; NO_REG.index() + 1],
    /// The registers that have an owner (kept in sync with `owner`).
    occupied: RegSet,
    /// The registers the current op uses: never chosen for anything else until the op
    /// ends.
    pinned: RegSet,
    /// The register holding each value, [`NO_REG`] if none (the dummy owner entry, so
    /// `end_op` releases it without a branch); kept in sync with `owner`.
    val_reg: Vec<Reg>,
    /// Each value's spill slot, once it has one: a slot of this trace, or (with the bit
    /// [`ADOPTED`]) a frame word of another trace of the tree, adopted by a bridge input.
    val_slot: Vec<Option<u32>>,
    /// Per slot: whether it holds its value (from the slot's first store on).
    slot_valid: Vec<bool>,
    /// Spill slots handed out.
    nslots: u32,
    /// Where the slots are in the frame.
    frame: FrameLayout,
}

/// The bit of a slot number that makes the rest a frame word adopted by a bridge input.
const ADOPTED: u32 = 1 << 31;

impl Default for Allocator {
    fn default() -> Self {
        Allocator {
            gprs: Pool::default(),
            xmms: Pool::default(),
            pools_for: None,
            owner: [None; NO_REG.index() + 1],
            occupied: RegSet::EMPTY,
            pinned: RegSet::EMPTY,
            val_reg: Vec::new(),
            val_slot: Vec::new(),
            slot_valid: Vec::new(),
            nslots: 0,
            frame: FrameLayout::default(),
        }
    }
}

impl Allocator {
    /// Start a trace of `n` ops (values) with the registers `opts` allows and its frame
    /// layout: no register holds anything, no slot is handed out.
    pub(super) fn reset(&mut self, opts: &CompileOptions, n: usize, frame: FrameLayout) {
        if self.pools_for != Some((opts.int_regs, opts.float_regs)) {
            (self.gprs, self.xmms) = pools(opts);
            self.pools_for = Some((opts.int_regs, opts.float_regs));
        }
        self.owner = [None; NO_REG.index() + 1];
        self.occupied = RegSet::EMPTY;
        self.pinned = RegSet::EMPTY;
        self.val_reg.clear();
        self.val_reg.resize(n + 1, NO_REG);
        self.val_slot.clear();
        self.val_slot.resize(n, None);
        self.slot_valid.clear();
        self.nslots = 0;
        self.frame = frame;
    }

    // ------------------------------------------------------------------------------------
    // Queries
    // ------------------------------------------------------------------------------------

    /// The allocatable general-purpose registers, most preferred first.
    pub(super) fn gpr_order(&self) -> &[Reg] {
        &self.gprs.order
    }

    /// The allocatable XMM registers, most preferred first.
    pub(super) fn xmm_order(&self) -> &[Reg] {
        &self.xmms.order
    }

    /// The register holding value `v`, if any.
    #[inline]
    pub(super) fn reg_of(&self, v: usize) -> Option<Reg> {
        let r = self.val_reg[v];
        (r != NO_REG).then_some(r)
    }

    /// The value register `r` holds, if any.
    #[inline]
    pub(super) fn owner(&self, r: Reg) -> Option<usize> {
        self.owner[r.index()].map(|v| v as usize)
    }

    /// Whether `r` holds no value and the current op does not use it.
    #[inline]
    pub(super) fn is_free(&self, r: Reg) -> bool {
        !(self.occupied | self.pinned).contains(r)
    }

    /// Whether the current op uses `r`.
    #[inline]
    pub(super) fn is_pinned(&self, r: Reg) -> bool {
        self.pinned.contains(r)
    }

    /// Whether `v` is in a register or has a slot.
    pub(super) fn has_location(&self, v: usize) -> bool {
        self.reg_of(v).is_some() || self.val_slot[v].is_some()
    }

    /// `v`'s spill slot as a location, if it has one.
    pub(super) fn slot_loc(&self, v: usize) -> Option<Loc> {
        self.val_slot[v].map(|s| Loc::Mem(self.slot_disp(s)))
    }

    /// The frame displacement of slot `s` (of this trace, or adopted).
    #[inline]
    fn slot_disp(&self, s: u32) -> i32 {
        if s & ADOPTED != 0 {
            (8 * (s & !ADOPTED)) as i32
        } else {
            self.frame.slot_disp(s)
        }
    }

    /// Whether slot `s` holds its value (an adopted word always does).
    #[inline]
    fn slot_holds(&self, s: u32) -> bool {
        s & ADOPTED != 0 || self.slot_valid[s as usize]
    }

    /// The number of spill slots handed out.
    pub(super) fn nslots(&self) -> u32 {
        self.nslots
    }

    /// Where value `v` is right now: its register, else its slot if that holds it. The op at
    /// `pos` reads it there (recorded for the checker).
    #[inline]
    pub(super) fn loc_of(&self, em: &Emitter, v: usize, pos: usize) -> R<Loc> {
        if let Some(r) = self.reg_of(v) {
            em.record_use(r.loc(), v, pos);
            return Ok(r.loc());
        }
        match self.val_slot[v] {
            Some(s) if self.slot_holds(s) => {
                let l = Loc::Mem(self.slot_disp(s));
                em.record_use(l, v, pos);
                Ok(l)
            }
            _ => Err(lost_value(v, pos)),
        }
    }

    // ------------------------------------------------------------------------------------
    // Registers
    // ------------------------------------------------------------------------------------

    /// Reserve `r` for the current op.
    #[inline]
    pub(super) fn pin(&mut self, r: Reg) {
        self.pinned.insert(r);
    }

    /// `r` holds value `v` (and `v` is in no other register).
    #[inline]
    pub(super) fn set_owner(&mut self, r: Reg, v: usize) {
        self.owner[r.index()] = Some(v as u32);
        self.occupied.insert(r);
        self.val_reg[v] = r;
    }

    /// `r` holds nothing any more (its value stays wherever else it is).
    #[inline]
    pub(super) fn release(&mut self, r: Reg) {
        if let Some(v) = self.owner[r.index()].take() {
            self.occupied.remove(r);
            self.val_reg[v as usize] = NO_REG;
        }
    }

    /// Release every register of `regs` (after a call clobbered them).
    pub(super) fn release_all(&mut self, regs: RegSet) {
        let mut regs = self.occupied & regs;
        while let Some(r) = regs.pop_first() {
            self.release(r);
        }
    }

    /// The result of the op at `pos` is in `r`.
    #[inline]
    pub(super) fn define(&mut self, em: &Emitter, r: Reg, pos: usize) {
        em.record(Event::Def {
            reg: r.number(),
            op: pos as u32,
        });
        self.release(r);
        self.set_owner(r, pos);
    }

    /// Free `r`: its value (if still needed) moves to another free register of its class
    /// outside `avoid`, or to its slot.
    pub(super) fn evict(&mut self, cx: &mut Cx<'_>, r: Reg, avoid: RegSet) -> R<()> {
        let Some(v) = self.owner(r) else { return Ok(()) };
        if cx.live.used_from(v, cx.pos) {
            let pool = if r.is_xmm() { &self.xmms } else { &self.gprs };
            match pool.first_free(pool.set & !(self.occupied | self.pinned | avoid).with(r)) {
                Some(q) => {
                    cx.em.record_use(r.loc(), v, cx.pos);
                    cx.em.mov(q.loc(), r.loc());
                    self.release(r);
                    self.set_owner(q, v);
                    if self.is_pinned(r) {
                        self.pin(q);
                    }
                    return Ok(());
                }
                None => self.ensure_slot(cx, v)?,
            }
        }
        self.release(r);
        Ok(())
    }

    /// A register of the class of `kind` that is free for this op (not pinned, not in
    /// `avoid`), spilling the value used furthest in the future if none is free. The
    /// register is pinned and has no owner.
    pub(super) fn alloc_reg(&mut self, cx: &mut Cx<'_>, kind: Kind, avoid: RegSet) -> R<Reg> {
        let pool = if kind == Kind::Float { &self.xmms } else { &self.gprs };
        let blocked = self.pinned | avoid;
        let free = pool.first_free(pool.set & !(blocked | self.occupied));
        let mut candidates = pool.set & !blocked;
        // A free register, the first in pool order.
        if let Some(r) = free {
            self.pin(r);
            return Ok(r);
        }
        // The candidate whose value is used furthest away (never again counts as furthest;
        // of equals, the highest-numbered register): the largest `(next use, register)`.
        if candidates.is_empty() {
            return Err(out_of_registers(cx.pos));
        }
        let mut best = 0u64;
        while let Some(r) = candidates.pop_first() {
            let v = self.owner[r.index()].unwrap() as usize;
            best = best.max((cx.live.next_use(v) as u64) << 8 | r.number() as u64);
        }
        let victim = Reg::new(best as u8);
        let v = self.owner[victim.index()].unwrap() as usize;
        if cx.live.used_from(v, cx.pos) {
            self.ensure_slot(cx, v)?;
        }
        self.release(victim);
        self.pin(victim);
        Ok(victim)
    }

    /// Make `r` free and pinned for the current op (for instructions with fixed registers).
    pub(super) fn take_reg(&mut self, cx: &mut Cx<'_>, r: Reg) -> R<()> {
        self.evict(cx, r, RegSet::EMPTY.with(r))?;
        self.pin(r);
        Ok(())
    }

    /// Move every value that lives past the current op out of the caller-saved registers
    /// (into a free callee-saved one when possible, else its slot), before a call. The
    /// register mapping stays until the call: argument sources may still read it.
    #[inline]
    pub(super) fn save_live_across_call(&mut self, cx: &mut Cx<'_>, clobbered: RegSet) -> R<()> {
        // Occupied clobbered registers in ascending order (caller-saved GPRs, then XMMs).
        let mut regs = self.occupied & clobbered;
        while let Some(r) = regs.pop_first() {
            let Some(v) = self.owner(r) else { continue };
            if !cx.live.live_after(v, cx.pos) {
                continue;
            }
            if !r.is_xmm() {
                let free = CALLEE_SAVED
                    .iter()
                    .copied()
                    .find(|&q| !(self.occupied | self.pinned).contains(q) && self.gprs.order.contains(&q));
                if let Some(q) = free {
                    cx.em.mov(q.loc(), r.loc());
                    self.release(r);
                    self.set_owner(q, v);
                    continue;
                }
            }
            self.ensure_slot(cx, v)?;
        }
        Ok(())
    }

    /// Past the op at `pos`: each value it read has its next use moved on, the registers of
    /// values that die here (and of a result nobody reads) are released, and no register
    /// is pinned any more.
    #[inline]
    pub(super) fn end_op(&mut self, live: &mut Liveness, pos: usize) {
        // Without branches (which values die is unpredictable): a value that stays live,
        // or has no register, releases the dummy register `NO_REG`.
        let (reads, next_use, result_unused) = live.pass(pos);
        let (val_reg, owner) = (&mut self.val_reg[..], &mut self.owner);
        // The occupied set with a bit for the dummy register too (cleared with the rest).
        let mut occupied = self.occupied.bits() as u64;
        let mut kill = |v: usize, dies: bool| {
            let reg = val_reg[v];
            let r = select_unpredictable(dies, reg, NO_REG).index();
            owner[r] = None;
            occupied &= !(1 << r);
            val_reg[v] = select_unpredictable(dies, NO_REG, reg);
        };
        for &(v, next) in reads {
            next_use[v as usize] = next;
            kill(v as usize, next == NEVER);
        }
        // A result nobody reads.
        kill(pos, result_unused);
        owner[NO_REG.index()] = None;
        self.occupied = RegSet::from_bits(occupied as u32);
        self.pinned = RegSet::EMPTY;
    }

    /// The canonical state at a label: the values `first_param..` in `params` (registers or
    /// slots given by [`Allocator::give_slot`]), nothing else in registers.
    pub(super) fn reset_to_params(&mut self, params: &[Loc], first_param: usize) {
        for r in 0..32 {
            self.release(Reg::new(r));
        }
        for (k, &dst) in params.iter().enumerate() {
            let p = first_param + k;
            match dst {
                Loc::Reg(r) => self.set_owner(Reg::new(r), p),
                Loc::Mem(_) => {
                    let s = self.val_slot[p].unwrap();
                    if s & ADOPTED == 0 {
                        self.slot_valid[s as usize] = true;
                    }
                }
                Loc::Imm(_) => unreachable!("a parameter in an immediate"),
            }
        }
    }

    // ------------------------------------------------------------------------------------
    // Spill slots
    // ------------------------------------------------------------------------------------

    /// A new spill slot (not holding anything yet).
    pub(super) fn new_slot(&mut self) -> u32 {
        let s = self.nslots;
        self.nslots += 1;
        self.slot_valid.push(false);
        s
    }

    /// A new slot for value `v` (an input, whose slot holds it from the start: `valid`; or
    /// a label parameter living in the frame).
    pub(super) fn give_slot(&mut self, v: usize, valid: bool) -> u32 {
        let s = self.new_slot();
        self.val_slot[v] = Some(s);
        self.slot_valid[s as usize] = valid;
        s
    }

    /// Value `v` (a bridge input) lives in frame word `word` of another trace of the tree,
    /// which holds it for as long as the bridge runs: its slot.
    pub(super) fn adopt_word(&mut self, v: usize, word: usize) {
        debug_assert!((word as u32) < ADOPTED);
        self.val_slot[v] = Some(ADOPTED | word as u32);
    }

    /// Store `v` into its slot (allocating one) unless the slot already holds it.
    pub(super) fn ensure_slot(&mut self, cx: &mut Cx<'_>, v: usize) -> R<()> {
        let s = match self.val_slot[v] {
            Some(s) => s,
            None => {
                let s = self.new_slot();
                self.val_slot[v] = Some(s);
                s
            }
        };
        if !self.slot_holds(s) {
            let r = self.reg_of(v).ok_or_else(|| lost_value(v, cx.pos))?;
            cx.em.record_use(r.loc(), v, cx.pos);
            cx.em.store(self.frame.slot_disp(s), r);
            self.slot_valid[s as usize] = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::CodeBuf;
    use crate::checker::{self, Val};
    use crate::codegen::regs::{CALL_CLOBBERED, R12, RAX, RBX, RCX, RDX, XMM0};

    /// A trace of four inputs whose values are read at ops 5, 6, 7 (`i1`, `i2`, `i3`) and 4
    /// (`i0`); `i4` is read at 5 and by the `finish`.
    const CHAIN: &str = "[i0, i1, i2, i3]
        i4 = int_add(i0, 1)
        i5 = int_add(i4, i1)
        i6 = int_add(i5, i2)
        i7 = int_add(i6, i3)
        finish(i7, i4)";

    /// What code generation sets up for a trace: its liveness, an allocator with
    /// `int_regs` general-purpose registers and the inputs in their slots, an emitter.
    struct Setup {
        t: trace_ir::Trace,
        live: Liveness,
        ra: Allocator,
        em: Emitter,
    }

    impl Setup {
        fn new(text: &str, int_regs: usize) -> Setup {
            let t = trace_ir::parse_trace(text).unwrap();
            let mut live = Liveness::default();
            let exit_len = live.compute(&t);
            let mut ra = Allocator::default();
            let opts = CompileOptions {
                int_regs,
                ..CompileOptions::default()
            };
            ra.reset(
                &opts,
                t.ops.len(),
                FrameLayout {
                    exit_len,
                    ..FrameLayout::default()
                },
            );
            for i in 0..t.num_inputs {
                ra.give_slot(i, true);
            }
            let em = Emitter::new(CodeBuf::with_capacity(256, 0, 0), Vec::new());
            Setup { t, live, ra, em }
        }

        /// Allocate a register at op `pos`.
        fn alloc(&mut self, pos: usize, kind: Kind) -> Reg {
            let cx = &mut Cx {
                em: &mut self.em,
                live: &self.live,
                pos,
            };
            self.ra.alloc_reg(cx, kind, RegSet::EMPTY).unwrap()
        }

        /// Load value `v` into a new register at op `pos`, as instruction selection does.
        fn load(&mut self, v: usize, pos: usize) -> Reg {
            let src = self.ra.loc_of(&self.em, v, pos).unwrap();
            let r = self.alloc(pos, Kind::Int);
            self.em.mov(r.loc(), src);
            self.ra.set_owner(r, v);
            r
        }

        /// The stores into the frame emitted so far.
        fn frame_stores(&self) -> usize {
            let events = self.em.events();
            events
                .iter()
                .filter(|e| matches!(e, Event::Move { dst: Loc::Mem(_), .. }))
                .count()
        }

        /// Replay the recorded events through the symbolic checker.
        fn check(&self) {
            let inputs: Vec<(Loc, u32)> = (0..self.t.num_inputs)
                .map(|i| (self.ra.slot_loc(i).unwrap(), i as u32))
                .collect();
            checker::check(&self.em.events(), &inputs).unwrap();
        }
    }

    /// Free registers are handed out in pool order (callee-saved first), pinned and
    /// without owner.
    #[test]
    fn free_registers_go_in_pool_order() {
        let mut s = Setup::new(CHAIN, 13);
        let got: Vec<Reg> = (0..3).map(|_| s.alloc(4, Kind::Int)).collect();
        assert_eq!(got, vec![RBX, R12, crate::codegen::regs::R13]);
        assert!(got.iter().all(|&r| s.ra.is_pinned(r) && s.ra.owner(r).is_none()));
        assert_eq!(s.alloc(4, Kind::Float), XMM0);
    }

    /// With every register taken, the value used furthest in the future loses its
    /// register; an input's slot already holds it, so nothing is stored.
    #[test]
    fn the_value_used_furthest_away_is_spilled() {
        let mut s = Setup::new(CHAIN, 3);
        // The restricted pool is rax, rcx, rdx: i1 (next use 5), i2 (6), i3 (7).
        assert_eq!([s.load(1, 4), s.load(2, 4), s.load(3, 4)], [RAX, RCX, RDX]);
        s.ra.pinned = RegSet::EMPTY;
        let stores = s.frame_stores();
        let r = s.alloc(4, Kind::Int);
        assert_eq!(r, RDX, "the register of i3, read last");
        assert_eq!(s.ra.reg_of(3), None);
        assert_eq!(s.ra.loc_of(&s.em, 3, 4).unwrap(), s.ra.slot_loc(3).unwrap());
        assert_eq!(s.frame_stores(), stores);
        s.check();
    }

    /// A computed value spilled gets a slot on its first spill; the slot then holds it,
    /// and a second spill stores nothing.
    #[test]
    fn a_value_is_stored_into_its_slot_once() {
        let mut s = Setup::new(CHAIN, 13);
        let r = s.alloc(4, Kind::Int);
        s.ra.define(&s.em, r, 4);
        let cx = &mut Cx {
            em: &mut s.em,
            live: &s.live,
            pos: 5,
        };
        s.ra.ensure_slot(cx, 4).unwrap();
        s.ra.ensure_slot(cx, 4).unwrap();
        assert_eq!(s.frame_stores(), 1);
        assert!(s.ra.slot_loc(4).is_some());
        // The value is still in its register too, which reads prefer.
        assert_eq!(s.ra.loc_of(&s.em, 4, 5).unwrap(), r.loc());
        s.check();
    }

    /// Evicting a register whose value lives on moves the value to the first free register
    /// of its class (which inherits the pin), not to memory.
    #[test]
    fn eviction_moves_a_live_value_to_a_free_register() {
        let mut s = Setup::new(CHAIN, 13);
        s.ra.set_owner(RAX, 1);
        s.ra.pin(RAX);
        let cx = &mut Cx {
            em: &mut s.em,
            live: &s.live,
            pos: 4,
        };
        s.ra.take_reg(cx, RAX).unwrap();
        assert_eq!(s.ra.reg_of(1), Some(RBX));
        assert!(s.ra.is_pinned(RBX) && s.ra.is_pinned(RAX));
        assert_eq!(s.ra.owner(RAX), None);
        assert_eq!(s.frame_stores(), 0);
    }

    /// Past an op, the registers of values it read for the last time and of a result
    /// nobody reads are released, and nothing stays pinned.
    #[test]
    fn end_op_releases_dead_values_and_pins() {
        let mut s = Setup::new(
            "[i0, i1]
             i2 = int_add(i0, i1)
             i3 = int_add(i0, 5)
             finish(i2)",
            13,
        );
        s.ra.set_owner(RAX, 0);
        s.ra.set_owner(RCX, 1);
        s.ra.pin(RAX);
        s.ra.pin(RCX);
        s.ra.define(&s.em, RDX, 2);
        s.ra.end_op(&mut s.live, 2);
        // i1 dies at op 2, i0 lives until op 3, i2 until the finish.
        assert_eq!(
            (s.ra.reg_of(0), s.ra.reg_of(1), s.ra.reg_of(2)),
            (Some(RAX), None, Some(RDX))
        );
        assert!(s.ra.is_free(RCX) && !s.ra.is_pinned(RAX));
        s.ra.define(&s.em, RCX, 3);
        s.ra.end_op(&mut s.live, 3);
        // i0 dies at op 3; i3 is never read.
        assert_eq!((s.ra.reg_of(0), s.ra.reg_of(3)), (None, None));
        assert!(s.ra.is_free(RAX) && s.ra.is_free(RCX));
    }

    /// Before a call, a live value in a caller-saved register moves to a free callee-saved
    /// one, and a live float goes to its slot (every XMM register is clobbered).
    #[test]
    fn values_living_across_a_call_leave_the_clobbered_registers() {
        let mut s = Setup::new(
            "[i0, f1]
             i2 = int_add(i0, 1)
             f3 = float_add(f1, 1.5)
             call_n(ConstClass(f), descr=<Callv 0 EF=2>)
             finish(i2, f3)",
            13,
        );
        s.ra.define(&s.em, RAX, 2);
        s.ra.define(&s.em, XMM0, 3);
        let cx = &mut Cx {
            em: &mut s.em,
            live: &s.live,
            pos: 4,
        };
        s.ra.save_live_across_call(cx, CALL_CLOBBERED).unwrap();
        assert_eq!(s.ra.reg_of(2), Some(RBX));
        assert!(s.ra.slot_loc(3).is_some());
        s.ra.release_all(CALL_CLOBBERED);
        assert_eq!((s.ra.reg_of(2), s.ra.reg_of(3)), (Some(RBX), None));
        s.em.expect(s.ra.slot_loc(3).unwrap(), Val::Op(3), 4);
        s.check();
    }
}
