//! Code generation: register allocation and instruction selection in one forward pass over
//! the trace, then the exit stubs.
//!
//! The rooms: [`regs`] (registers and pools), [`liveness`] (last and next uses), [`regalloc`]
//! (the allocator and its design), [`frame`] (the frame layout), [`emit`] (hand-encoded
//! instructions and checker events), [`moves`] (single and parallel moves), [`exits`] (guard
//! and invalid-operation exits), [`loops`] (labels and the back edge), [`fusion`] (what an op
//! passes to the next one in the flags) and [`select`] (instruction selection per op
//! family, Hooks mode included).

// dynasm's expansion converts dynamic register numbers with `.into()`, even from `u8`.
#![allow(clippy::useless_conversion)]

mod emit;
mod exits;
mod frame;
mod fusion;
mod liveness;
mod loops;
mod moves;
mod regalloc;
mod regs;
mod select;

use emit::*;
use exits::*;
use frame::*;
use fusion::*;
use liveness::*;
use loops::*;
use regs::*;
use select::hooks;
use select::ArgSrc;

pub(crate) use frame::FRAME_HEADER;

use crate::asm::CodeBuf;
use crate::checker::{Event, Val};
use crate::pmove::{sequentialize_into, Loc};
use crate::runtime::{self, ArrayLayout};
use crate::{CompileError, CompileOptions, ExitInfo, ExitSlot, VirtualInit, VirtualLayout};
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hint::select_unpredictable;
use trace_ir::descr::{DEFAULT_ARRAY_BASE, DEFAULT_ARRAY_LEN};
use trace_ir::{
    jump_target, FailArg, FieldDescr, JumpTarget, Kind, Op, OpRef, Opcode, Trace, Value, ValueData, VirtualField,
    VirtualKind,
};

/// The result of code generation, before it is copied into executable memory.
pub(crate) struct Generated {
    pub code: Vec<u8>,
    pub exits: Vec<ExitInfo>,
    /// The fail-argument slots of the guard exits (see `ExitInfo::Guard::fail`).
    pub exit_slots: Vec<ExitSlot>,
    pub frame_words: usize,
    pub exit_len: usize,
    /// Code range of each op (op index, start, end), for the disassembly listing.
    pub ranges: Vec<(u32, u32, u32)>,
    /// Boxed: the code embeds their addresses, which must not move when the vector grows.
    #[allow(clippy::vec_box)]
    pub array_layouts: Vec<Box<ArrayLayout>>,
    /// Ops handed to the runtime, boxed for the same reason.
    #[allow(clippy::vec_box)]
    pub hook_ops: Vec<Box<runtime::HookOp>>,
}

pub(crate) struct Gen<'t> {
    t: &'t Trace,
    asm: CodeBuf,
    gpr_pool: Vec<Reg>,
    xmm_pool: Vec<Reg>,
    /// The registers of `gpr_pool` and of `xmm_pool` as bit sets.
    gpr_mask: u32,
    xmm_mask: u32,
    /// The pools' preference orders as bit sets (see [`pool_runs`]).
    gpr_runs: [u32; 4],
    xmm_runs: [u32; 4],
    /// The last use of each op's value, 0 if it has none (no op reads at position 0), so
    /// "`v` is live after position `p`" is `last_use[v] > p`. Index `n` (one past the last
    /// op) stands for every constant and non-value operand (see [`liveness`]).
    last_use: Vec<u32>,
    /// Per value, its first use at or after the current op (`NEVER`: none), kept current by
    /// `end_op` from `reads` (the spill choice reads it for the owner of each register).
    next_use: Vec<u32>,
    /// Everything op `p` reads is `reads[reads_start[p]..reads_start[p + 1]]`, in the order
    /// of [`reads`]: `(value, the value's next use after p)` (`NEVER`: `p` is its last).
    reads_start: Vec<u32>,
    reads: Vec<(u32, u32)>,
    /// The value each register holds; entry `NO_REG` is a dummy that `end_op` writes instead of
    /// branching.
    owner: [Option<u32>; NO_REG as usize + 1],
    /// The registers that have an owner, as a bit set (kept in sync with `owner`).
    occupied: u32,
    /// The register holding each value, [`NO_REG`] if none (the dummy owner slot, so
    /// `end_op` releases it without a branch); read through [`Gen::reg_of`].
    val_reg: Vec<Reg>,
    val_slot: Vec<Option<u32>>,
    slot_valid: Vec<bool>,
    nslots: u32,
    pinned: u32,
    pos: usize,
    exit_len: usize,
    exits: Vec<ExitInfo>,
    /// The fail-argument slots of all guard exits, back to back.
    exit_slots: Vec<ExitSlot>,
    stubs: Vec<Stub>,
    /// The exit-buffer sources of all stubs, back to back (see [`Stub::words`]): registers
    /// only (constants and spilled values are read from the exit's description and the frame).
    stub_words: Vec<Reg>,
    /// The jumps to guard stubs: the code offset of each jump's 32-bit displacement and the
    /// stub it goes to.
    stub_jumps: Vec<(u32, u32)>,
    /// The invalid-operation exit of the current op, if one was made (all invalid exits of
    /// one op share a stub: they report the same op).
    invalid: Option<(usize, u32)>,
    /// Scratch buffers of `parallel_move` and `call_inner`, reused across ops.
    pm_pending: Vec<(Loc, Loc)>,
    pm_seq: Vec<(Loc, Loc)>,
    call_moves: Vec<(Loc, Loc)>,
    /// The arguments of the current call op (reused across ops).
    call_args: Vec<ArgSrc>,
    labels: HashMap<usize, LabelInfo>,
    start: Option<LabelInfo>,
    epilogue: DynamicLabel,
    /// The loop's `jump` (its position) and the fixed locations of its target label's
    /// parameters, once that label is emitted: results whose last use is the jump are put
    /// where it wants them when that register is free (see [`Gen::jump_hint`]).
    loop_jump: Option<(usize, Vec<Loc>)>,
    /// The first op of the loop body (after the loop label's parameters), once that label
    /// is emitted.
    loop_first: Option<usize>,
    /// The loop is rotated (see [`LoopTop`]).
    loop_top: Option<LoopTop>,
    /// Per op, as a bit set: its value is known to be non-null (it passed a null check or
    /// `guard_nonnull*`, or is a label parameter that always equals such a value), so heap
    /// accesses through it need no null check of their own.
    nonnull: Vec<u64>,
    /// Known in-bounds accesses since memory last changed: `(array, index, length offset)`
    /// with `index <u [array + length offset]` checked (by a bounds check or a passed guard
    /// on `uint_lt(index, arraylen_gc(array))`). Forgotten at every op that may write memory
    /// or call, and at labels.
    in_bounds: Vec<(Val, Val, i64)>,
    /// The `arraylen_gc` ops read since memory last changed.
    lens: Vec<usize>,
    /// Exit-buffer words that a stub recomputes after copying: `(stub index, word index,
    /// inverse op, other operand)`, in stub order.
    undos: Vec<(u32, u32, Opcode, Opnd)>,
    ranges: Vec<(u32, u32, u32)>,
    /// Layouts whose addresses the code embeds (boxed so they never move).
    #[allow(clippy::vec_box)]
    array_layouts: Vec<Box<ArrayLayout>>,
    /// Events for the symbolic checker (recorded when `CHECK`).
    events: RefCell<Vec<Event>>,
    /// `liveness`'s working memory (kept for reuse).
    after: Vec<u32>,
    /// Ops handed to the runtime (see the `hooks` module).
    hk: hooks::HookState,
}

/// Results inside code generation: the error boxed, so a result fits in registers (most
/// helpers return `R<()>` or `R<Loc>`; a 32-byte `CompileError` would go through memory at
/// every call).
type R<T> = Result<T, Box<CompileError>>;

/// The working buffers of a compilation, handed to the next compilation on the same thread
/// (cleared, capacity kept): compiling then allocates little beyond its output, and the heap
/// does not shrink and grow again around every trace. A thread keeps the buffers of the
/// largest trace it compiled (about 40 bytes per op). A compilation that fails leaves
/// fresh, empty buffers behind.
#[derive(Default)]
struct Scratch {
    last_use: Vec<u32>,
    next_use: Vec<u32>,
    after: Vec<u32>,
    reads_start: Vec<u32>,
    reads: Vec<(u32, u32)>,
    val_reg: Vec<Reg>,
    val_slot: Vec<Option<u32>>,
    slot_valid: Vec<bool>,
    stubs: Vec<Stub>,
    stub_words: Vec<Reg>,
    stub_jumps: Vec<(u32, u32)>,
    pm_pending: Vec<(Loc, Loc)>,
    pm_seq: Vec<(Loc, Loc)>,
    call_moves: Vec<(Loc, Loc)>,
    events: Vec<Event>,
}

thread_local! {
    static SCRATCH: Cell<Scratch> = Cell::new(Scratch::default());
}

impl<'t> Gen<'t> {
    pub(crate) fn new(t: &'t Trace, opts: &CompileOptions) -> R<Gen<'t>> {
        let n = t.ops.len();
        let mut sc = SCRATCH.with(Cell::take);
        let exit_len = liveness(t, &mut sc);
        sc.val_reg.clear();
        sc.val_reg.resize(n + 1, NO_REG);
        sc.val_slot.clear();
        sc.val_slot.resize(n, None);
        sc.slot_valid.clear();
        sc.stubs.clear();
        sc.stub_words.clear();
        sc.stub_jumps.clear();
        sc.events.clear();
        let (gpr_pool, xmm_pool) = pools(opts);
        // Capacities from the trace, so the buffers rarely grow:
        // - code: about 35 bytes per op on average, stubs included (more would cost page
        //   faults on large traces: the allocator then maps the buffer afresh each time);
        // - label references: one or two per guard and per call;
        // - exits: one per guard plus the invalid-operation exits (at most one per op that
        //   can be invalid, a fraction of the ops);
        // - exit slots: one per fail argument, more for virtual objects' fields.
        let nguards = t.guards.len();
        let nexits = nguards + n / 8 + 2;
        let nslots: usize = t.guards.iter().map(|g| g.fail_args.len() + 2 * g.virtuals.len()).sum();
        let mut asm = CodeBuf::with_capacity(64 + 40 * n, nexits + 8, 4 * nguards + n / 2 + 8);
        let epilogue = asm.new_dynamic_label();
        let mask = |pool: &[Reg]| pool.iter().fold(0u32, |m, &r| m | 1 << r);
        Ok(Gen {
            t,
            asm,
            gpr_mask: mask(&gpr_pool),
            xmm_mask: mask(&xmm_pool),
            gpr_runs: pool_runs(&gpr_pool),
            xmm_runs: pool_runs(&xmm_pool),
            gpr_pool,
            xmm_pool,
            last_use: sc.last_use,
            next_use: sc.next_use,
            reads_start: sc.reads_start,
            reads: sc.reads,
            owner: [None; NO_REG as usize + 1],
            occupied: 0,
            val_reg: sc.val_reg,
            val_slot: sc.val_slot,
            slot_valid: sc.slot_valid,
            nslots: 0,
            pinned: 0,
            pos: 0,
            exit_len,
            exits: Vec::with_capacity(nexits),
            exit_slots: Vec::with_capacity(nslots),
            stubs: sc.stubs,
            stub_words: sc.stub_words,
            stub_jumps: sc.stub_jumps,
            invalid: None,
            pm_pending: sc.pm_pending,
            pm_seq: sc.pm_seq,
            call_moves: sc.call_moves,
            call_args: Vec::new(),
            labels: HashMap::new(),
            start: None,
            epilogue,
            loop_jump: None,
            loop_first: None,
            loop_top: None,
            nonnull: vec![0; n.div_ceil(64)],
            in_bounds: Vec::new(),
            lens: Vec::new(),
            undos: Vec::new(),
            ranges: Vec::with_capacity(n),
            array_layouts: Vec::new(),
            events: RefCell::new(sc.events),
            after: sc.after,
            hk: hooks::HookState::new(t, opts),
        })
    }

    // ------------------------------------------------------------------------------------
    // The driver
    // ------------------------------------------------------------------------------------

    pub(crate) fn generate(mut self) -> R<Generated> {
        let t = self.t;
        // Prologue: save callee-saved registers, align the stack, frame base in rbp.
        dynasm!(self.asm
            ; .arch x64
            ; push rbp ; push rbx ; push r12 ; push r13 ; push r14 ; push r15
            ; sub rsp, 8
            ; mov rbp, rdi
        );
        for i in 0..t.num_inputs {
            let s = self.new_slot();
            self.val_slot[i] = Some(s);
            self.slot_valid[s as usize] = true;
        }
        let start = self.asm.new_dynamic_label();
        dynasm!(self.asm ; .arch x64 ; =>start);
        let params = (0..t.num_inputs).map(|i| Loc::Mem(self.slot_disp(i as u32))).collect();
        self.start = Some(LabelInfo {
            label: start,
            params,
            keep: Vec::new(),
        });

        let mut i = t.num_inputs;
        // What the previous op left in the flags for the current one.
        let mut fusion = Fusion::None;
        while i < t.ops.len() {
            self.pos = i;
            let begin = self.asm.offset().0;
            let op = &t.ops[i];
            if op.opcode == Opcode::Label {
                self.label(i)?;
                fusion = Fusion::None;
                i += 1 + op.args.len();
            } else {
                fusion = self.op(i, fusion)?;
                i += 1;
            }
            self.end_op();
            self.ranges
                .push((self.pos as u32, begin as u32, self.asm.offset().0 as u32));
        }

        // The epilogue, then the exit stubs: each jumps back to it, a displacement known
        // when the jump is emitted (no label, no relocation to resolve at the end).
        let e = self.epilogue;
        let e_off = self.asm.offset().0;
        dynasm!(self.asm
            ; .arch x64
            ; =>e
            ; add rsp, 8
            ; pop r15 ; pop r14 ; pop r13 ; pop r12 ; pop rbx ; pop rbp
            ; ret
        );
        let mut stubs_buf = std::mem::take(&mut self.stubs);
        let (mut stub_index, mut undo_next) = (0usize, 0usize);
        for stub in &mut stubs_buf {
            stub.at = self.asm.offset().0 as u32;
            for w in stub.words.0..stub.words.1 {
                let r = self.stub_words[w as usize];
                let d = self.exit_disp((w - stub.words.0) as usize);
                self.store(d, r);
            }
            // Operands overwritten in place, recomputed from the result (see `Undo`).
            while let Some(&(k, w, inverse, y)) = self.undos.get(undo_next) {
                if k as usize != stub_index {
                    break;
                }
                let d = self.exit_disp(w as usize);
                self.undo_word(d, inverse, y);
                undo_next += 1;
            }
            stub_index += 1;
            let code = stub.code as i32;
            dynasm!(self.asm ; .arch x64 ; mov eax, code);
            // `jmp rel32` back to the epilogue, whose offset is known.
            let rel = rel32(self.asm.offset().0 + 5, e_off)?;
            self.rel32_insn(&[0xe9], rel);
        }
        if CHECK {
            let inputs: Vec<(Loc, u32)> = (0..t.num_inputs)
                .map(|i| (Loc::Mem(self.slot_disp(i as u32)), i as u32))
                .collect();
            crate::checker::check(&self.events.borrow(), &inputs)
                .map_err(|e| internal(format!("register allocation checker: {e}")))?;
        }
        let mut code = self.asm.finalize().map_err(|e| internal(format!("assembler: {e}")))?;
        for &(at, stub) in &self.stub_jumps {
            let at = at as usize;
            let rel = rel32(at + 4, stubs_buf[stub as usize].at as usize)?;
            code[at..at + 4].copy_from_slice(&rel.to_le_bytes());
        }
        SCRATCH.with(|c| {
            c.set(Scratch {
                last_use: self.last_use,
                next_use: self.next_use,
                after: self.after,
                reads_start: self.reads_start,
                reads: self.reads,
                val_reg: self.val_reg,
                val_slot: self.val_slot,
                slot_valid: self.slot_valid,
                stubs: stubs_buf,
                stub_words: self.stub_words,
                stub_jumps: self.stub_jumps,
                pm_pending: self.pm_pending,
                pm_seq: self.pm_seq,
                call_moves: self.call_moves,
                events: self.events.into_inner(),
            })
        });
        Ok(Generated {
            code,
            exits: self.exits,
            exit_slots: self.exit_slots,
            frame_words: FRAME_HEADER + self.exit_len + self.nslots as usize,
            exit_len: self.exit_len,
            ranges: self.ranges,
            array_layouts: self.array_layouts,
            hook_ops: self.hk.ops,
        })
    }
}

#[cold]
fn internal(msg: String) -> Box<CompileError> {
    Box::new(CompileError::Internal(msg))
}
/// An allocator bug: the value of op `v`, read at op `pos`, is neither in a register nor
/// in a slot. (Errors of the hot paths are built out of line, from plain arguments, so
/// those paths need no stack frame for formatting.)
#[cold]
#[inline(never)]
fn lost_value(v: usize, pos: usize) -> Box<CompileError> {
    internal(format!("value op{v} used at op{pos} has no location"))
}
#[cold]
#[inline(never)]
fn out_of_registers(pos: usize) -> Box<CompileError> {
    internal(format!("out of registers at op{pos}"))
}
#[cold]
fn bad(msg: &str) -> Box<CompileError> {
    Box::new(CompileError::BadTrace(msg.to_string()))
}
