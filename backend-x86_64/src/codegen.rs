//! Register allocation and instruction selection in one forward pass over the trace.
//!
//! # Frame
//! Native code keeps a pointer to a frame of 64-bit words (allocated by
//! [`crate::CompiledTrace::run`]) in `rbp`:
//!
//! ```text
//!  rbp + 0                    runtime context pointer (for allocation trampolines)
//!  rbp + 8                    parallel-move temporary
//!  rbp + 16 ...               exit buffer: `exit_len` words (fail arguments, virtual fields,
//!                             finish values)
//!  rbp + 16 + 8*exit_len ...  spill slots; slot i < num_inputs holds trace input i
//! ```
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

// dynasm's expansion converts dynamic register numbers with `.into()`, even from `u8`.
#![allow(clippy::useless_conversion)]

use crate::checker::{Event, Val};
// Ops handed to the runtime (Hooks mode); a child module so it can extend `Gen`.
#[path = "hooks.rs"]
mod hooks;
use crate::asm::CodeBuf;
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

/// A register: general-purpose 0..16 (hardware numbering), XMM registers 16..32.
pub(crate) type Reg = u8;

const RAX: Reg = 0;
const RCX: Reg = 1;
const RDX: Reg = 2;
const RBX: Reg = 3;
const RSI: Reg = 6;
const RDI: Reg = 7;
const R8: Reg = 8;
const R9: Reg = 9;
const R10: Reg = 10;
const R12: Reg = 12;
const R13: Reg = 13;
const R14: Reg = 14;
const R15: Reg = 15;
const XMM0: Reg = 16;
/// "No register": one past the last register, an index of the dummy owner entry.
const NO_REG: Reg = 32;

/// Allocatable general-purpose registers in order of preference (callee-saved first, so
/// values survive calls). `rsp`, `rbp` (frame) and `r11` (scratch) are reserved.
pub(crate) const GPR_ORDER: [Reg; 13] = [RBX, R12, R13, R14, R15, RSI, RDI, R8, R9, R10, RAX, RCX, RDX];
const CALLEE_SAVED: [Reg; 5] = [RBX, R12, R13, R14, R15];
const INT_ARG_REGS: [Reg; 6] = [RDI, RSI, RDX, RCX, R8, R9];
const CALLER_SAVED_GPR: [Reg; 8] = [RAX, RCX, RDX, RSI, RDI, R8, R9, R10];
/// The registers a call clobbers (caller-saved GPRs and every XMM register) as a bit set.
const CALL_CLOBBERED: u32 =
    (1 << RAX) | (1 << RCX) | (1 << RDX) | (1 << RSI) | (1 << RDI) | (1 << R8) | (1 << R9) | (1 << R10) | 0xffff_0000;

/// Whether code generation records events for the symbolic checker.
const CHECK: bool = cfg!(any(test, feature = "checker"));

/// Frame words before the exit buffer.
pub(crate) const FRAME_HEADER: usize = 2;
const TEMP_DISP: i32 = 8;

fn is_xmm(r: Reg) -> bool {
    r >= 16
}
fn x(r: Reg) -> u8 {
    debug_assert!(is_xmm(r));
    r - 16
}

/// An operand of an integer ALU instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Opnd {
    Reg(Reg),
    Mem(i32),
    Imm(i32),
}

/// A condition code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Cond {
    E,
    Ne,
    L,
    Le,
    G,
    Ge,
    B,
    Be,
    A,
    Ae,
    O,
    No,
}

impl Cond {
    /// The condition's encoding (the low nibble of `jcc`, `setcc`, `cmovcc`).
    fn code(self) -> u8 {
        use Cond::*;
        match self {
            O => 0x0,
            No => 0x1,
            B => 0x2,
            Ae => 0x3,
            E => 0x4,
            Ne => 0x5,
            Be => 0x6,
            A => 0x7,
            L => 0xc,
            Ge => 0xd,
            Le => 0xe,
            G => 0xf,
        }
    }
    fn negate(self) -> Cond {
        use Cond::*;
        match self {
            E => Ne,
            Ne => E,
            L => Ge,
            Ge => L,
            Le => G,
            G => Le,
            B => Ae,
            Ae => B,
            Be => A,
            A => Be,
            O => No,
            No => O,
        }
    }
    /// The condition with the operands swapped (`a < b` == `b > a`).
    fn swap(self) -> Cond {
        use Cond::*;
        match self {
            L => G,
            G => L,
            Le => Ge,
            Ge => Le,
            B => A,
            A => B,
            Be => Ae,
            Ae => Be,
            c => c,
        }
    }
    fn of_cmp(opc: Opcode) -> Option<Cond> {
        use Opcode::*;
        Some(match opc {
            IntLt => Cond::L,
            IntLe => Cond::Le,
            IntGt => Cond::G,
            IntGe => Cond::Ge,
            IntEq | PtrEq | InstancePtrEq => Cond::E,
            IntNe | PtrNe | InstancePtrNe => Cond::Ne,
            UintLt => Cond::B,
            UintLe => Cond::Be,
            UintGt => Cond::A,
            UintGe => Cond::Ae,
            _ => return None,
        })
    }
}

/// `x` was overwritten in place by `x = x + y` / `x - y` (an `_ovf` op, register `reg` holding
/// the result of op `at`) although the fail arguments of the overflow guard right after it
/// still name `x`: instead of copying `x` first on the hot path, that guard's exit stub
/// recomputes it (wrapping) as `result - y` / `result + y`. `y` (an immediate, a register
/// or a slot) is still in place at the exit: the overflow guard emits nothing but its jump.
#[derive(Copy, Clone, Debug)]
struct Undo {
    val: usize,
    reg: Reg,
    at: usize,
    inverse: Opcode,
    y: Opnd,
    y_val: Value,
}

/// The loop body starts with a comparison fused into its guard (`cmp x, y; jcc exit`) that
/// reads only the label's parameters and constants: the `jump` repeats the `cmp` after its
/// parallel move and branches back to `body` (right after the guard) while the guard holds,
/// else to the guard's stub (whose fail-argument locations are the label's fixed ones,
/// which the parallel move has just filled). One branch per iteration instead of the
/// `jmp` and the guard's branch.
#[derive(Copy, Clone, Debug)]
struct LoopTop {
    x: Reg,
    y: Opnd,
    exit_if: Cond,
    /// The guard's stub (an index into `Gen::stubs`).
    stub: u32,
    body: DynamicLabel,
}

/// A guard or invalid-operation exit waiting for its stub.
struct Stub {
    /// Where the stub starts in the code, once placed. Jumps to stubs are hand-encoded and
    /// fixed up then (see `Gen::stub_jumps`), without the assembler's label and relocation
    /// per exit.
    at: u32,
    code: u32,
    /// The registers each exit-buffer word comes from: `Gen::stub_words[words.0..words.1]`.
    words: (u32, u32),
}

/// The fixed locations of a label's parameters.
struct LabelInfo {
    label: DynamicLabel,
    params: Vec<Loc>,
    /// Values living across the label, in their slots (for the checker).
    keep: Vec<(Loc, u32)>,
}

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
    /// The op at `pos - 1` was a comparison fused into the guard at `pos`: its condition.
    fused: Option<Cond>,
    /// The op at `pos - 1` was an `int_and` emitted as `test` only (no register): the flags
    /// say whether its value is zero, for the `int_is_true`/`int_is_zero`/`int_ne 0`/`int_eq 0`
    /// at `pos` (see [`Gen::and_test`]).
    and_flags: Option<usize>,
    /// The loop's `jump` (its position) and the fixed locations of its target label's
    /// parameters, once that label is emitted: results whose last use is the jump are put
    /// where it wants them when that register is free (see [`Gen::jump_hint`]).
    loop_jump: Option<(usize, Vec<Loc>)>,
    /// The `_ovf` op at `pos - 1` overwrote an operand that only the exit of the overflow
    /// guard at `pos` still reports (see [`Undo`]).
    undo: Option<Undo>,
    /// The first op of the loop body (after the loop label's parameters), once that label
    /// is emitted.
    loop_first: Option<usize>,
    /// The comparison at this op was fused and emitted as a bare `cmp` (no loads):
    /// `(op, x, y)`.
    bare_cmp: Option<(usize, Reg, Opnd)>,
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

fn fits_i32(v: i64) -> bool {
    v >= i32::MIN as i64 && v <= i32::MAX as i64
}

/// Whether [`Gen::mov`] of `src` into `dst` goes through the scratch register `r11`:
/// frame to frame, a 64-bit immediate into a slot, a non-zero immediate into an XMM
/// register. (Kept beside `mov`'s cases: `parallel_move` breaks cycles through `r11` only
/// when no move of its set uses it.)
fn mov_uses_r11(dst: Loc, src: Loc) -> bool {
    match (dst, src) {
        (Loc::Mem(_), Loc::Mem(_)) => true,
        (Loc::Mem(_), Loc::Imm(v)) => !fits_i32(v as i64),
        (Loc::Reg(r), Loc::Imm(v)) => is_xmm(r) && v != 0,
        _ => false,
    }
}

/// Everything an op reads, in order: its arguments (as `FailArg::Value`), then its guard's
/// fail arguments and the fields of its virtual objects (values, holes and virtual
/// references alike).
fn reads(t: &Trace, op: &Op, f: &mut impl FnMut(FailArg)) {
    for &a in &op.args {
        f(FailArg::Value(a));
    }
    if let Some(g) = op.guard {
        let gd = t.guard(g);
        for &fa in &gd.fail_args {
            f(fa);
        }
        for vo in &gd.virtuals {
            for &(_, fa) in &vo.fields {
                f(fa);
            }
        }
    }
}

/// Every value an op reads, including guard fail arguments and virtual fields (see
/// [`reads`]).
fn values_read(t: &Trace, op: &Op, f: &mut impl FnMut(Value)) {
    reads(t, op, &mut |fa| {
        if let FailArg::Value(v) = fa {
            f(v)
        }
    });
}

/// The allocatable registers in order of preference: general-purpose and XMM, as many as
/// `opts` allows (at least 3 and 2).
fn pools(opts: &CompileOptions) -> (Vec<Reg>, Vec<Reg>) {
    let ni = opts.int_regs.clamp(3, GPR_ORDER.len());
    // With a restricted pool keep rax, rcx, rdx (needed by div, mul, shifts) in it.
    let gpr_pool: Vec<Reg> = if ni == GPR_ORDER.len() {
        GPR_ORDER.to_vec()
    } else {
        let mut p = vec![RAX, RCX, RDX];
        p.extend(
            GPR_ORDER
                .iter()
                .copied()
                .filter(|r| ![RAX, RCX, RDX].contains(r))
                .take(ni - 3),
        );
        p
    };
    let nf = opts.float_regs.clamp(2, 15);
    let xmm_pool: Vec<Reg> = (0..nf as u8).map(|i| XMM0 + i).collect();
    (gpr_pool, xmm_pool)
}

/// A register pool's preference order as bit sets: its maximal runs of ascending register
/// numbers, in pool order (`GPR_ORDER` has three: `rbx r12..r15`, `rsi rdi r8..r10`,
/// `rax rcx rdx`). The first free register in pool order is then the lowest free register
/// of the first run that has one ([`first_free`]): a few bit operations instead of a scan.
fn pool_runs(pool: &[Reg]) -> [u32; 4] {
    let mut runs = [0u32; 4];
    let mut k = 0;
    for (i, &r) in pool.iter().enumerate() {
        if i > 0 && r < pool[i - 1] {
            k += 1;
        }
        runs[k] |= 1 << r;
    }
    runs
}

/// The first register of the set `free` in the pool order that `runs` describes
/// ([`pool_runs`]), if any. Without branches (which run has one is unpredictable): the runs'
/// free registers side by side in 32-bit lanes, the lowest set bit is in the first non-empty
/// run, and its lane position is the register.
fn first_free(runs: &[u32; 4], free: u32) -> Option<Reg> {
    let lanes = runs
        .iter()
        .enumerate()
        .fold(0u128, |acc, (k, &m)| acc | ((m & free) as u128) << (32 * k));
    (lanes != 0).then(|| (lanes.trailing_zeros() % 32) as Reg)
}

/// "No further use", in [`Gen::next_use`] and [`Gen::reads`].
const NEVER: u32 = u32::MAX;

/// Liveness tables of `t` into the scratch buffers (`last_use`, `next_use`, `reads_start`,
/// `reads`; see [`Gen`]), and the exit buffer size: the largest `finish`/`jump` or guard
/// exit (a guard's exit words are the values it reads beyond its arguments: fail
/// arguments, virtual fields).
///
/// A forward pass lists everything each op reads, as `(value, op)`, and records each value's
/// last use; a backward pass over that list replaces each op by the value's next use after
/// it, leaving in `next_use` every value's first use. Written without data-dependent
/// branches, since operands mix constants and op results (and fail arguments values and
/// holes) at random: index `n` stands for every constant and non-value, and an op reading a
/// value twice is handled by a select. The backward pass is one flat loop (no loop per op,
/// whose exits would be mispredicted).
fn liveness(t: &Trace, sc: &mut Scratch) -> usize {
    const PREFETCH_AHEAD: usize = 8;
    let n = t.ops.len();
    sc.last_use.clear();
    sc.last_use.resize(n + 1, 0);
    sc.reads_start.clear();
    sc.reads_start.reserve(n + 1);
    let mut nreads = 0;
    let mut exit_len = 0;
    for (i, op) in t.ops.iter().enumerate() {
        sc.reads_start.push(nreads as u32);
        let i = i as u32;
        let words = op.guard.map_or(0, |g| {
            // The fail arguments of a guard a few guards ahead (guards are usually numbered
            // in trace order): a separate allocation each, often not in the cache.
            if let Some(ahead) = t.guards.get(g.index() + PREFETCH_AHEAD) {
                prefetch(ahead.fail_args.as_ptr());
            }
            let g = t.guard(g);
            g.fail_args.len() + g.virtuals.iter().map(|v| v.fields.len()).sum::<usize>()
        });
        let need = nreads + op.args.len() + words;
        if need > sc.reads.len() {
            sc.reads.resize(need.max(2 * sc.reads.len()).max(1024), (0, 0));
        }
        let (last_use, list) = (&mut sc.last_use[..], &mut sc.reads[..]);
        let mut nvalues = 0;
        reads(t, op, &mut |fa| {
            let (o, is_value) = match fa {
                FailArg::Value(v) => (v.op_index_or(n), 1),
                _ => (n, 0),
            };
            nvalues += is_value;
            last_use[o] = i;
            list[nreads] = (o as u32, i);
            nreads += 1;
        });
        if matches!(op.opcode, Opcode::Finish | Opcode::Jump) {
            exit_len = exit_len.max(op.args.len());
        }
        if op.guard.is_some() {
            exit_len = exit_len.max(nvalues - op.args.len());
        }
    }
    sc.reads_start.push(nreads as u32);
    sc.last_use[n] = 0;
    // Backward: `next[v]` is `v`'s earliest use seen so far, `after[v]` the one after that
    // (needed when an op reads `v` twice: its second read, seen first here, moved `next[v]`).
    sc.next_use.clear();
    sc.next_use.resize(n + 1, NEVER);
    sc.after.clear();
    sc.after.resize(n + 1, NEVER);
    let (next, after) = (&mut sc.next_use[..], &mut sc.after[..]);
    for r in sc.reads[..nreads].iter_mut().rev() {
        let (o, i) = (r.0 as usize, r.1);
        let c = next[o];
        let a = if c != i { c } else { after[o] };
        after[o] = a;
        next[o] = i;
        r.1 = a;
    }
    exit_len
}

/// Ask the processor to bring the cache line at `p` closer (a hint: no effect on results).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch never faults nor reads
        // memory visibly, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
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
            fused: None,
            and_flags: None,
            loop_jump: None,
            undo: None,
            loop_first: None,
            bare_cmp: None,
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
    // Frame layout
    // ------------------------------------------------------------------------------------

    fn exit_disp(&self, i: usize) -> i32 {
        (8 * (FRAME_HEADER + i)) as i32
    }
    fn slot_disp(&self, s: u32) -> i32 {
        (8 * (FRAME_HEADER + self.exit_len + s as usize)) as i32
    }
    fn new_slot(&mut self) -> u32 {
        let s = self.nslots;
        self.nslots += 1;
        self.slot_valid.push(false);
        s
    }

    // ------------------------------------------------------------------------------------
    // Checker events
    // ------------------------------------------------------------------------------------

    fn record(&self, e: Event) {
        if CHECK {
            self.events.borrow_mut().push(e);
        }
    }
    fn val(&self, v: Value) -> Val {
        match v.data() {
            ValueData::Op(o) => Val::Op(o.index() as u32),
            ValueData::Const(c) => Val::Const(self.t.consts.get(c).bits()),
        }
    }
    fn record_use(&self, loc: Loc, v: usize) {
        self.record(Event::Use {
            loc,
            val: Val::Op(v as u32),
            at: self.pos as u32,
        });
    }
    fn expect(&self, loc: Loc, val: Val) {
        self.record(Event::Expect {
            loc,
            val,
            at: self.pos as u32,
        });
    }
    fn clobber(&self, regs: &[Reg]) {
        for &r in regs {
            self.record(Event::Clobber { reg: r });
        }
    }

    // ------------------------------------------------------------------------------------
    // Liveness queries
    // ------------------------------------------------------------------------------------

    /// Whether the only use of the value of op `at` is the op right after it.
    fn used_only_next(&self, at: usize) -> bool {
        // Uses come after the definition (a trace reading a value earlier fails in `loc`).
        self.last_use[at] as usize == at + 1
    }
    /// Whether `v` is used at or after position `from`.
    fn used_from(&self, v: usize, from: usize) -> bool {
        self.last_use[v] as usize >= from
    }
    /// Whether `v` is used after the current op.
    fn live_after(&self, v: usize) -> bool {
        self.used_from(v, self.pos + 1)
    }

    // ------------------------------------------------------------------------------------
    // Register state
    // ------------------------------------------------------------------------------------

    fn pin(&mut self, r: Reg) {
        self.pinned |= 1 << r;
    }
    fn is_pinned(&self, r: Reg) -> bool {
        self.pinned & (1 << r) != 0
    }
    fn set_owner(&mut self, r: Reg, v: usize) {
        self.owner[r as usize] = Some(v as u32);
        self.occupied |= 1 << r;
        self.val_reg[v] = r;
    }
    fn release(&mut self, r: Reg) {
        if let Some(v) = self.owner[r as usize].take() {
            self.occupied &= !(1 << r);
            self.val_reg[v as usize] = NO_REG;
        }
    }

    /// The register holding value `v`, if any.
    #[inline]
    fn reg_of(&self, v: usize) -> Option<Reg> {
        let r = self.val_reg[v];
        (r != NO_REG).then_some(r)
    }

    /// Store `v` into its slot (allocating one) unless the slot already holds it.
    fn ensure_slot(&mut self, v: usize) -> R<()> {
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
    fn evict(&mut self, r: Reg, avoid: u32) -> R<()> {
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
    fn alloc_reg(&mut self, kind: Kind, avoid: u32) -> R<Reg> {
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
    fn take_reg(&mut self, r: Reg) -> R<()> {
        self.evict(r, 1 << r)?;
        self.pin(r);
        Ok(())
    }

    /// Where the value `v` is right now.
    fn loc(&self, v: Value) -> R<Loc> {
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
    fn load(&mut self, v: Value) -> R<Reg> {
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
    fn opnd(&mut self, v: Value) -> R<Opnd> {
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
    fn copy_to_new(&mut self, v: Value, kind: Kind) -> R<Reg> {
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
    fn alloc_result(&mut self, kind: Kind) -> R<Reg> {
        match self.jump_hint(kind) {
            Some(r) => {
                self.pin(r);
                Ok(r)
            }
            None => self.alloc_reg(kind, 0),
        }
    }

    /// When the last use of the current op's result is the loop's `jump` and the register
    /// the jump moves it into (its target label's parameter) is free: that register. A
    /// result computed there costs the jump no move (on a loop-carried value, a move less on
    /// the critical path).
    fn jump_hint(&self, kind: Kind) -> Option<Reg> {
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

    /// The destination of a three-operand form reading `x` (`imul d, x, imm`, `mov e_d, e_x`,
    /// `movzx d, x`): the register the loop's `jump` wants (see [`Gen::jump_hint`]), else
    /// `x`'s register when `x` dies here, else a new one. Returns it (pinned, no owner) and
    /// `x` as an operand (a register or a slot; `x` must not be a constant).
    fn three_operand(&mut self, x: Value, kind: Kind) -> R<(Reg, Opnd)> {
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
    fn def(&mut self, r: Reg) {
        let p = self.pos;
        self.record(Event::Def { reg: r, op: p as u32 });
        self.release(r);
        self.set_owner(r, p);
    }

    /// Past the current op: each value it read has its next use moved on, and the registers
    /// of values that die here (and of a result nobody reads) are released.
    fn end_op(&mut self) {
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

    // ------------------------------------------------------------------------------------
    // Moves
    // ------------------------------------------------------------------------------------

    /// One move between any two locations (`Mem <- Mem` goes through `r11`, see
    /// [`mov_uses_r11`]).
    fn mov(&mut self, dst: Loc, src: Loc) {
        self.record(Event::Move { dst, src });
        match (dst, src) {
            _ if dst == src => {}
            (Loc::Reg(d), Loc::Reg(s)) => match (is_xmm(d), is_xmm(s)) {
                (false, false) => self.mov_gpr(d, s),
                (true, true) => dynasm!(self.asm ; .arch x64 ; movaps Rx(x(d)), Rx(x(s))),
                (true, false) => dynasm!(self.asm ; .arch x64 ; movq Rx(x(d)), Rq(s)),
                (false, true) => dynasm!(self.asm ; .arch x64 ; movq Rq(d), Rx(x(s))),
            },
            (Loc::Reg(d), Loc::Mem(m)) => self.load_frame(d, m),
            (Loc::Reg(d), Loc::Imm(v)) => {
                if is_xmm(d) {
                    if v == 0 {
                        dynasm!(self.asm ; .arch x64 ; xorps Rx(x(d)), Rx(x(d)))
                    } else {
                        self.mov_imm_r11(v);
                        dynasm!(self.asm ; .arch x64 ; movq Rx(x(d)), r11)
                    }
                } else {
                    // Zero too: not `xor`, moves must not disturb the flags (fused guards).
                    self.mov_gpr_imm(d, v)
                }
            }
            (Loc::Mem(m), Loc::Reg(s)) => self.store_frame(m, s),
            (Loc::Mem(m), Loc::Mem(s)) => match (i8::try_from(s), i8::try_from(m)) {
                (Ok(s), Ok(m)) => dynasm!(self.asm ; .arch x64 ; mov r11, [BYTE rbp + s] ; mov [BYTE rbp + m], r11),
                (Ok(s), Err(_)) => dynasm!(self.asm ; .arch x64 ; mov r11, [BYTE rbp + s] ; mov [rbp + m], r11),
                (Err(_), Ok(m)) => dynasm!(self.asm ; .arch x64 ; mov r11, [rbp + s] ; mov [BYTE rbp + m], r11),
                (Err(_), Err(_)) => dynasm!(self.asm ; .arch x64 ; mov r11, [rbp + s] ; mov [rbp + m], r11),
            },
            (Loc::Mem(m), Loc::Imm(v)) => {
                if fits_i32(v as i64) {
                    let v = v as i64 as i32;
                    match i8::try_from(m) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; mov QWORD [BYTE rbp + b], v),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; mov QWORD [rbp + m], v),
                    }
                } else {
                    self.mov_imm_r11(v);
                    self.store_frame(m, 11);
                }
            }
            (Loc::Imm(_), _) => unreachable!("move into an immediate"),
        }
    }

    /// Pad the code to a multiple of `align` bytes with the recommended multi-byte NOPs
    /// (Intel SDM, "NOP"): a few instructions instead of up to `align - 1` one-byte ones.
    fn align_with_nops(&mut self, align: usize) {
        const NOPS: [&[u8]; 9] = [
            &[0x90],
            &[0x66, 0x90],
            &[0x0f, 0x1f, 0x00],
            &[0x0f, 0x1f, 0x40, 0x00],
            &[0x0f, 0x1f, 0x44, 0x00, 0x00],
            &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
            &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
            &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
            &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        ];
        let mut pad = (align - self.asm.offset().0 % align) % align;
        while pad > 0 {
            let n = pad.min(NOPS.len());
            self.asm.extend(NOPS[n - 1]);
            pad -= n;
        }
    }

    /// `d <- [rbp + m]`. Frame words within 127 bytes of `rbp` (header, exit buffer, the
    /// first slots) take the 8-bit displacement form, 3 bytes shorter. Hand-encoded (see
    /// [`Gen::frame_insn`]): the allocator's most frequent instructions.
    fn load_frame(&mut self, d: Reg, m: i32) {
        // mov r64, [rbp + m] (8B /r); movsd xmm, [rbp + m] (F2 0F 10 /r)
        self.frame_move(d, m, 0x8b, 0x10);
    }

    /// `[rbp + m] <- s`, with the short displacement form when it fits.
    fn store_frame(&mut self, m: i32, s: Reg) {
        // mov [rbp + m], r64 (89 /r); movsd [rbp + m], xmm (F2 0F 11 /r)
        self.frame_move(s, m, 0x89, 0x11);
    }

    /// A 64-bit move between register `r` and `[rbp + m]`: `mov` with opcode `gpr_op`
    /// (REX.W, REX.R for r8-r15) or `movsd` with `0F xmm_op` (F2, REX.R for xmm8-xmm15 only).
    fn frame_move(&mut self, r: Reg, m: i32, gpr_op: u8, xmm_op: u8) {
        if is_xmm(r) {
            match x(r) >= 8 {
                true => self.frame_insn(u32::from_le_bytes([0xf2, 0x44, 0x0f, xmm_op]), 4, x(r), m),
                false => self.frame_insn(u32::from_le_bytes([0xf2, 0x0f, xmm_op, 0]), 3, x(r), m),
            }
        } else {
            self.frame_insn(u32::from_le_bytes([0x48 | (r >> 3) << 2, gpr_op, 0, 0]), 2, r, m);
        }
    }

    /// An instruction whose memory operand is `[rbp + m]`: the `head_len` bytes of `head`
    /// (prefixes, REX, opcode; little-endian), the ModRM byte for register field `reg` (its
    /// low 3 bits; REX.R is in `head`) with base `rbp` and an 8- or 32-bit displacement, then
    /// the displacement. One append instead of dynasm's push per byte; the encodings are the
    /// ones dynasm produced (the code bytes of the compile benchmark's traces are unchanged).
    #[inline]
    fn frame_insn(&mut self, head: u32, head_len: usize, reg: u8, m: i32) {
        let (modrm, len) = match i8::try_from(m) {
            Ok(d) => ((0x45 | (reg & 7) << 3) as u64 | (d as u8 as u64) << 8, 2),
            Err(_) => ((0x85 | (reg & 7) << 3) as u64 | (m as u32 as u64) << 8, 5),
        };
        self.asm
            .put(head as u128 | (modrm as u128) << (8 * head_len), head_len + len);
    }

    /// `mov d, s` between general-purpose registers (`REX.W 89 /r`), hand-encoded as
    /// dynasm encodes it (`encoding_tests`): after the frame moves, the most frequent
    /// instruction.
    #[inline]
    fn mov_gpr(&mut self, d: Reg, s: Reg) {
        let rex = 0x48 | (s >> 3) << 2 | d >> 3;
        let modrm = 0xc0 | (s & 7) << 3 | (d & 7);
        self.asm.put(u32::from_le_bytes([rex, 0x89, modrm, 0]) as u128, 3);
    }

    /// General-purpose register `d` <- the 64-bit constant `v`, in the shortest form:
    /// `mov r32, imm32` (`B8+r`, zero-extending) up to `u32::MAX`, `mov r64, simm32`
    /// (`REX.W C7 /0`) for small negative values, else `mov r64, imm64` (`REX.W B8+r`).
    /// Hand-encoded as dynasm encodes them (`encoding_tests`), but for the REX prefix dynasm
    /// puts on every `mov r32, imm32` with a register chosen at run time: here only when
    /// the register needs it.
    #[inline]
    fn mov_gpr_imm(&mut self, d: Reg, v: u64) {
        let (lo, b) = (d & 7, d >> 3);
        if v <= u32::MAX as u64 {
            // An optional REX.B, then B8+r and the immediate.
            let (head, n) = if b != 0 {
                (0x41 | (0xb8 | lo as u32) << 8, 2)
            } else {
                (0xb8 | lo as u32, 1)
            };
            self.asm.put(head as u128 | (v as u128) << (8 * n), n + 4);
        } else if fits_i32(v as i64) {
            let head = u32::from_le_bytes([0x48 | b, 0xc7, 0xc0 | lo, 0]);
            self.asm.put(head as u128 | (v as u32 as u128) << 24, 7);
        } else {
            self.asm.put(
                u16::from_le_bytes([0x48 | b, 0xb8 | lo]) as u128 | (v as u128) << 16,
                10,
            );
        }
    }

    /// `[rbp + m] <- r`: [`Gen::mov`] of a register into the frame, without its dispatch
    /// (spills, exit stubs).
    fn store(&mut self, m: i32, r: Reg) {
        self.record(Event::Move {
            dst: Loc::Mem(m),
            src: Loc::Reg(r),
        });
        self.store_frame(m, r);
    }

    fn mov_imm_r11(&mut self, v: u64) {
        if fits_i32(v as i64) {
            dynasm!(self.asm ; .arch x64 ; mov r11, v as i64 as i32)
        } else {
            dynasm!(self.asm ; .arch x64 ; mov r11, QWORD v as i64)
        }
    }

    /// Perform `moves` (`(dst, src)`) as if simultaneously. A cycle is broken through the
    /// scratch register `r11` unless one of the moves needs `r11` itself (frame to frame,
    /// a 64-bit immediate into a slot or an XMM register), then through the frame's
    /// parallel-move temporary.
    fn parallel_move(&mut self, moves: &[(Loc, Loc)]) {
        let temp = if moves.iter().any(|&(d, s)| mov_uses_r11(d, s)) {
            Loc::Mem(TEMP_DISP)
        } else {
            Loc::Reg(11)
        };
        let mut seq = std::mem::take(&mut self.pm_seq);
        sequentialize_into(moves, temp, &mut self.pm_pending, &mut seq);
        for &(d, s) in &seq {
            self.mov(d, s);
        }
        seq.clear();
        self.pm_seq = seq;
    }

    // ------------------------------------------------------------------------------------
    // Emission helpers
    // ------------------------------------------------------------------------------------

    fn jcc(&mut self, c: Cond, l: DynamicLabel) {
        match c {
            Cond::E => dynasm!(self.asm ; .arch x64 ; je =>l),
            Cond::Ne => dynasm!(self.asm ; .arch x64 ; jne =>l),
            Cond::L => dynasm!(self.asm ; .arch x64 ; jl =>l),
            Cond::Le => dynasm!(self.asm ; .arch x64 ; jle =>l),
            Cond::G => dynasm!(self.asm ; .arch x64 ; jg =>l),
            Cond::Ge => dynasm!(self.asm ; .arch x64 ; jge =>l),
            Cond::B => dynasm!(self.asm ; .arch x64 ; jb =>l),
            Cond::Be => dynasm!(self.asm ; .arch x64 ; jbe =>l),
            Cond::A => dynasm!(self.asm ; .arch x64 ; ja =>l),
            Cond::Ae => dynasm!(self.asm ; .arch x64 ; jae =>l),
            Cond::O => dynasm!(self.asm ; .arch x64 ; jo =>l),
            Cond::No => dynasm!(self.asm ; .arch x64 ; jno =>l),
        }
    }

    /// `jcc rel32` to guard stub `s`, hand-encoded (`0F 80+cc`); the displacement is filled
    /// in when the stubs are placed (see [`Gen::stub_jumps`]).
    fn jcc_stub(&mut self, c: Cond, s: u32) {
        self.stub_jump(&[0x0f, 0x80 | c.code()], s);
    }
    /// `jmp rel32` to guard stub `s` (`E9`), fixed up as [`Gen::jcc_stub`].
    fn jmp_stub(&mut self, s: u32) {
        self.stub_jump(&[0xe9], s);
    }
    /// `opcode` and a zero displacement to be fixed up.
    fn stub_jump(&mut self, opcode: &[u8], s: u32) {
        let at = self.asm.offset().0 + opcode.len();
        self.stub_jumps.push((at as u32, s));
        self.rel32_insn(opcode, 0);
    }
    /// A jump (`opcode`, at most two bytes) with 32-bit displacement `rel`, in one append.
    fn rel32_insn(&mut self, opcode: &[u8], rel: i32) {
        let (head, n) = match *opcode {
            [a] => (a as u128, 1),
            [a, b] => (a as u128 | (b as u128) << 8, 2),
            _ => unreachable!("jump opcodes are one or two bytes"),
        };
        self.asm.put(head | (rel as u32 as u128) << (8 * n), n + 4);
    }

    /// `r11b = cond`.
    fn setcc_r11(&mut self, c: Cond) {
        match c {
            Cond::E => dynasm!(self.asm ; .arch x64 ; sete r11b),
            Cond::Ne => dynasm!(self.asm ; .arch x64 ; setne r11b),
            Cond::L => dynasm!(self.asm ; .arch x64 ; setl r11b),
            Cond::Le => dynasm!(self.asm ; .arch x64 ; setle r11b),
            Cond::G => dynasm!(self.asm ; .arch x64 ; setg r11b),
            Cond::Ge => dynasm!(self.asm ; .arch x64 ; setge r11b),
            Cond::B => dynasm!(self.asm ; .arch x64 ; setb r11b),
            Cond::Be => dynasm!(self.asm ; .arch x64 ; setbe r11b),
            Cond::A => dynasm!(self.asm ; .arch x64 ; seta r11b),
            Cond::Ae => dynasm!(self.asm ; .arch x64 ; setae r11b),
            Cond::O => dynasm!(self.asm ; .arch x64 ; seto r11b),
            Cond::No => dynasm!(self.asm ; .arch x64 ; setno r11b),
        }
    }

    /// `op dst, src` for a two-operand integer ALU instruction.
    fn alu(&mut self, opc: Opcode, d: Reg, s: Opnd) {
        // Displacements and immediates that fit 8 bits take the short forms.
        macro_rules! alu {
            ($ins:ident) => {
                match s {
                    Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), Rq(s)),
                    Opnd::Mem(m) => match i8::try_from(m) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), QWORD [BYTE rbp + b]),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), QWORD [rbp + m]),
                    },
                    Opnd::Imm(i) => match i8::try_from(i) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), BYTE b),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), i),
                    },
                }
            };
        }
        match opc {
            Opcode::IntAdd | Opcode::IntAddOvf => alu!(add),
            Opcode::IntSub | Opcode::IntSubOvf => alu!(sub),
            Opcode::IntAnd => alu!(and),
            Opcode::IntOr => alu!(or),
            Opcode::IntXor => alu!(xor),
            Opcode::IntMul | Opcode::IntMulOvf => match s {
                Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(s)),
                Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m]),
                Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(d), i),
            },
            _ => unreachable!("not an ALU op: {opc}"),
        }
    }

    /// `cmp a, b` where `a` is a register.
    fn cmp(&mut self, a: Reg, b: Opnd) {
        match b {
            Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), Rq(s)),
            Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), QWORD [rbp + m]),
            Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), i),
        }
    }

    /// `[rbp + d] = [rbp + d] inverse y` in an exit stub (see [`Undo`]).
    fn undo_word(&mut self, d: i32, inverse: Opcode, y: Opnd) {
        let y = match y {
            Opnd::Mem(m) => {
                self.load_frame(11, m);
                Opnd::Reg(11)
            }
            y => y,
        };
        match (inverse, y) {
            (Opcode::IntAdd, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; add QWORD [rbp + d], Rq(r)),
            (Opcode::IntAdd, Opnd::Imm(i)) => dynasm!(self.asm ; .arch x64 ; add QWORD [rbp + d], i),
            (_, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; sub QWORD [rbp + d], Rq(r)),
            (_, Opnd::Imm(i)) => dynasm!(self.asm ; .arch x64 ; sub QWORD [rbp + d], i),
            (_, Opnd::Mem(_)) => unreachable!("loaded into r11"),
        }
    }

    /// The label of an exit stub that reports an invalid operation at the current op.
    fn invalid_exit(&mut self) -> u32 {
        if let Some((at, stub)) = self.invalid {
            if at == self.pos {
                return stub;
            }
        }
        let stub = self.stubs.len() as u32;
        let code = self.exits.len() as u32;
        self.exits.push(ExitInfo::Invalid {
            op: OpRef::new(self.pos),
        });
        self.stubs.push(Stub {
            at: 0,
            code,
            words: (0, 0),
        });
        self.invalid = Some((self.pos, stub));
        stub
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
        while i < t.ops.len() {
            self.pos = i;
            let begin = self.asm.offset().0;
            let op = &t.ops[i];
            if op.opcode == Opcode::Label {
                self.label(i)?;
                i += 1 + op.args.len();
            } else {
                self.op(i)?;
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

    fn label(&mut self, at: usize) -> R<()> {
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

    /// Snapshot the fail arguments of the guard at the current op and jump to its stub when
    /// `exit_if` holds.
    fn guard_exit(&mut self, exit_if: Cond) -> R<()> {
        let t = self.t;
        let g = t.ops[self.pos]
            .guard
            .ok_or_else(|| internal("guard without resume data".into()))?;
        let gd = t.guard(g);
        let mut words = std::mem::take(&mut self.stub_words);
        let first = words.len();
        let undo = self.undo.take();
        let stub_index = self.stubs.len() as u32;
        let mut undos = std::mem::take(&mut self.undos);
        let mut slot_of = |fa: &FailArg, words: &mut Vec<Reg>, me: &Self| -> R<ExitSlot> {
            Ok(match *fa {
                FailArg::Value(v) => {
                    match undo {
                        Some(u) if v.as_op().is_some_and(|o| o.index() == u.val) => {
                            // The register holds the op's result; the stub recomputes `v`.
                            me.record_use(Loc::Reg(u.reg), u.at);
                            if let Opnd::Reg(r) = u.y {
                                me.expect(Loc::Reg(r), me.val(u.y_val));
                            }
                            undos.push((stub_index, (words.len() - first) as u32, u.inverse, u.y));
                            words.push(u.reg);
                        }
                        _ => return me.exit_slot(v, words, first),
                    }
                    ExitSlot::Frame((FRAME_HEADER + words.len() - 1 - first) as u32)
                }
                FailArg::Virtual(k) => ExitSlot::Virtual(k),
                FailArg::Hole => ExitSlot::Hole,
            })
        };
        let mut slots = std::mem::take(&mut self.exit_slots);
        let fail_start = slots.len() as u32;
        for fa in &gd.fail_args {
            // Most fail arguments are plain values with nothing to undo: straight to their slot.
            let slot = match *fa {
                FailArg::Value(v) if undo.is_none() => self.exit_slot(v, &mut words, first)?,
                _ => slot_of(fa, &mut words, self)?,
            };
            slots.push(slot);
        }
        let fail = (fail_start, slots.len() as u32);
        self.exit_slots = slots;
        let mut virtuals = Vec::new();
        for vo in &gd.virtuals {
            let init = match vo.kind {
                VirtualKind::Struct { opcode, descr } => {
                    let sd = t
                        .descr(descr)
                        .as_size()
                        .ok_or_else(|| bad("virtual struct without a size descriptor"))?;
                    let class = if opcode == Opcode::NewWithVtable {
                        trace_ir::interp::default_class(sd)
                    } else {
                        0
                    };
                    VirtualInit::Struct {
                        size: sd.size.max(0) as u64,
                        class,
                    }
                }
                VirtualKind::Array { descr, len, .. } => {
                    let ad = t
                        .descr(descr)
                        .as_array()
                        .ok_or_else(|| bad("virtual array without an array descriptor"))?;
                    VirtualInit::Array {
                        layout: ArrayLayout {
                            item_size: ad.item_size as u64,
                            base_offset: ad.base_offset as u64,
                            len_offset: ad.len_offset as u64,
                        },
                        len: len as u64,
                    }
                }
            };
            let mut fields = Vec::with_capacity(vo.fields.len());
            for (place, fa) in &vo.fields {
                let (offset, size) = match (*place, &init) {
                    (VirtualField::Field(d), _) => {
                        let f = t
                            .descr(d)
                            .as_field()
                            .ok_or_else(|| bad("virtual field without a field descriptor"))?;
                        (f.offset as u64, f.size)
                    }
                    (VirtualField::Item(i), VirtualInit::Array { layout, .. }) => {
                        (layout.base_offset + i as u64 * layout.item_size, layout.item_size as u8)
                    }
                    (VirtualField::Item(_), _) => return Err(bad("array item of a virtual struct")),
                };
                fields.push((offset, size, slot_of(fa, &mut words, self)?));
            }
            virtuals.push(VirtualLayout { init, fields });
        }
        self.undos = undos;
        let code = self.exits.len() as u32;
        self.exits.push(ExitInfo::Guard {
            guard: gd.id,
            resume_key: gd.resume_key,
            fail,
            virtuals,
        });
        self.stubs.push(Stub {
            at: 0,
            code,
            words: (first as u32, words.len() as u32),
        });
        self.stub_words = words;
        self.jcc_stub(exit_if, stub_index);
        Ok(())
    }

    /// Where an exit finds value `v`: its spill slot (a spilled value stays where it is),
    /// its constant, or (held in a register) the next exit-buffer word of the stub, whose
    /// words start at `words[first]`.
    #[inline]
    fn exit_slot(&self, v: Value, words: &mut Vec<Reg>, first: usize) -> R<ExitSlot> {
        Ok(match self.loc(v)? {
            Loc::Mem(d) => ExitSlot::Frame((d / 8) as u32),
            Loc::Imm(bits) => ExitSlot::Const(bits),
            Loc::Reg(r) => {
                words.push(r);
                ExitSlot::Frame((FRAME_HEADER + words.len() - 1 - first) as u32)
            }
        })
    }

    /// Whether the boolean result of the op at `at` is only consumed by a directly following
    /// `guard_true`/`guard_false` (so the comparison can jump on the flags).
    fn fusable(&self, at: usize) -> bool {
        let t = self.t;
        let Some(next) = t.ops.get(at + 1) else { return false };
        matches!(next.opcode, Opcode::GuardTrue | Opcode::GuardFalse)
            && next.args[0] == Value::op(OpRef::new(at))
            && self.used_only_next(at)
            && {
                let mut also_fail_arg = false;
                let mut seen = 0;
                values_read(t, next, &mut |v| {
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

    fn op(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        // The operands as a plain slice: one look at the small vector's inline/heap state.
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let fused = self.fused.take();
        if at > 0 && self.may_write(t.ops[at - 1].opcode) {
            self.in_bounds.clear();
            self.lens.clear();
        }
        if opc == ArraylenGc {
            self.lens.push(at);
        }
        if self.undo.is_some_and(|u| u.at + 1 != at) {
            self.undo = None;
        }
        let and_flags = self.and_flags.take();
        if self.hk.routes(opc) {
            return self.hook_op(at);
        }
        match opc {
            // ---- integer ALU -------------------------------------------------------------
            IntAdd | IntSub | IntAnd | IntOr | IntXor | IntMul | IntAddOvf | IntSubOvf | IntMulOvf => {
                let (mut x, mut y) = (a(0), a(1));
                if opc.is_commutative() && x.is_const() && !y.is_const() {
                    std::mem::swap(&mut x, &mut y);
                }
                // A commutative op overwrites the operand that dies here, not a copy of the
                // one that lives on.
                if opc.is_commutative() {
                    if let (Some(xo), Some(yo)) = (x.as_op(), y.as_op()) {
                        let (xo, yo) = (xo.index(), yo.index());
                        if self.reg_of(xo).is_some()
                            && self.reg_of(yo).is_some()
                            && self.live_after(xo)
                            && !self.live_after(yo)
                        {
                            std::mem::swap(&mut x, &mut y);
                        }
                    }
                }
                if opc == IntAnd && !x.is_const() {
                    // Only tested for zero: `test`, no result.
                    if self.and_test(at, x, y)? {
                        return Ok(());
                    }
                    // Zero-extending moves for the masks of the low 8, 16 and 32 bits.
                    if let Some(c @ (0xff | 0xffff | 0xffff_ffff)) = t.const_int(y) {
                        let (d, s) = self.three_operand(x, Kind::Int)?;
                        match (c, s) {
                            (0xff, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; movzx Rd(d), Rb(r)),
                            (0xff, Opnd::Mem(m)) => dynasm!(self.asm ; .arch x64 ; movzx Rd(d), BYTE [rbp + m]),
                            (0xffff, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; movzx Rd(d), Rw(r)),
                            (0xffff, Opnd::Mem(m)) => dynasm!(self.asm ; .arch x64 ; movzx Rd(d), WORD [rbp + m]),
                            (_, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; mov Rd(d), Rd(r)),
                            (_, Opnd::Mem(m)) => dynasm!(self.asm ; .arch x64 ; mov Rd(d), DWORD [rbp + m]),
                            (_, Opnd::Imm(_)) => unreachable!("three_operand gives a register or a slot"),
                        }
                        self.def(d);
                        return Ok(());
                    }
                }
                // `imul d, x, imm`: no copy of `x`.
                if matches!(opc, IntMul | IntMulOvf) && !x.is_const() {
                    if let Some(c) = t.const_int(y).filter(|&c| fits_i32(c)) {
                        let (d, s) = self.three_operand(x, Kind::Int)?;
                        match (i8::try_from(c), s) {
                            (Ok(b), Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(r), BYTE b),
                            (Ok(b), Opnd::Mem(m)) => {
                                dynasm!(self.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m], BYTE b)
                            }
                            (Err(_), Opnd::Reg(r)) => {
                                let c = c as i32;
                                dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(r), c)
                            }
                            (Err(_), Opnd::Mem(m)) => {
                                let c = c as i32;
                                dynasm!(self.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m], c)
                            }
                            (_, Opnd::Imm(_)) => unreachable!("three_operand gives a register or a slot"),
                        }
                        self.def(d);
                        if opc.is_ovf() {
                            self.fused = Some(Cond::O);
                        }
                        return Ok(());
                    }
                }
                // `lea` for add/sub of a constant or add of two registers into a different
                // register: when `x` lives on, or the loop's jump wants the result elsewhere.
                if matches!(opc, IntAdd | IntSub) {
                    if let (Some(xo), Some(rx)) = (x.as_op(), x.as_op().and_then(|o| self.reg_of(o.index()))) {
                        let xo = xo.index();
                        let elsewhere = self.live_after(xo) || self.jump_hint(Kind::Int).is_some();
                        if let Some(c) = t.const_int(y) {
                            let c = if opc == IntSub { c.checked_neg() } else { Some(c) };
                            if let Some(c) = c.filter(|&c| fits_i32(c) && elsewhere) {
                                self.record_use(Loc::Reg(rx), xo);
                                self.pin(rx);
                                let d = self.alloc_result(Kind::Int)?;
                                let c = c as i32;
                                dynasm!(self.asm ; .arch x64 ; lea Rq(d), [Rq(rx) + c]);
                                self.def(d);
                                return Ok(());
                            }
                        } else if let (IntAdd, Loc::Reg(ry), true) = (opc, self.loc(y)?, elsewhere) {
                            self.record_use(Loc::Reg(rx), xo);
                            self.pin(rx);
                            self.pin(ry);
                            let d = self.alloc_result(Kind::Int)?;
                            dynasm!(self.asm ; .arch x64 ; lea Rq(d), [Rq(rx) + Rq(ry)]);
                            self.def(d);
                            return Ok(());
                        }
                    }
                }
                // An `_ovf` add/sub overwrites an operand that only the overflow guard's exit
                // still reports; the exit recomputes it (see `Undo`).
                if matches!(opc, IntAddOvf | IntSubOvf) {
                    if opc == IntAddOvf && !self.undoable(x) && self.undoable(y) {
                        std::mem::swap(&mut x, &mut y);
                    }
                    if self.undoable(x) && x != y {
                        let xo = x.as_op().unwrap().index();
                        let y_opnd = match self.loc(y)? {
                            Loc::Imm(b) if fits_i32(b as i64) => Some(Opnd::Imm(b as i64 as i32)),
                            Loc::Imm(_) => None,
                            Loc::Reg(r) => {
                                self.pin(r);
                                Some(Opnd::Reg(r))
                            }
                            Loc::Mem(m) => Some(Opnd::Mem(m)),
                        };
                        if let Some(s) = y_opnd {
                            let rx = self.reg_of(xo).unwrap();
                            self.record_use(Loc::Reg(rx), xo);
                            self.release(rx);
                            self.pin(rx);
                            self.alu(opc, rx, s);
                            self.def(rx);
                            self.fused = Some(Cond::O);
                            self.undo = Some(Undo {
                                val: xo,
                                reg: rx,
                                at,
                                inverse: if opc == IntAddOvf { IntSub } else { IntAdd },
                                y: s,
                                y_val: y,
                            });
                            return Ok(());
                        }
                    }
                }
                let s = self.opnd(y)?;
                let d = self.copy_to_new(x, Kind::Int)?;
                self.alu(opc, d, s);
                self.def(d);
                if opc.is_ovf() {
                    self.fused = Some(Cond::O);
                }
            }
            IntNeg | IntInvert => {
                let d = self.copy_to_new(a(0), Kind::Int)?;
                if opc == IntNeg {
                    dynasm!(self.asm ; .arch x64 ; neg Rq(d));
                } else {
                    dynasm!(self.asm ; .arch x64 ; not Rq(d));
                }
                self.def(d);
            }
            SameAsI | SameAsR | SameAsF | CastPtrToInt | CastIntToPtr => {
                let kind = opc.result_kind();
                let d = self.copy_to_new(a(0), kind)?;
                self.def(d);
            }
            IntForceGeZero => {
                let d = self.copy_to_new(a(0), Kind::Int)?;
                dynasm!(self.asm ; .arch x64 ; xor r11d, r11d ; test Rq(d), Rq(d) ; cmovl Rq(d), r11);
                self.def(d);
            }
            IntLshift | IntRshift | UintRshift => self.shift(opc, a(0), a(1))?,
            IntFloorDiv | IntMod | IntPyDiv | IntPyMod => self.divide(opc, a(0), a(1))?,
            UintMulHigh => {
                self.take_reg(RAX)?;
                self.take_reg(RDX)?;
                let (x, y) = if a(0).is_const() { (a(1), a(0)) } else { (a(0), a(1)) };
                let sx = self.loc(x)?;
                self.mov(Loc::Reg(RAX), sx);
                match self.loc(y)? {
                    Loc::Reg(r) => dynasm!(self.asm ; .arch x64 ; mul Rq(r)),
                    Loc::Mem(m) => dynasm!(self.asm ; .arch x64 ; mul QWORD [rbp + m]),
                    Loc::Imm(v) => {
                        self.mov_imm_r11(v);
                        dynasm!(self.asm ; .arch x64 ; mul r11)
                    }
                }
                self.clobber(&[RAX, RDX]);
                self.def(RDX);
            }
            IntSignext => self.signext(a(0), a(1))?,

            // ---- comparisons -------------------------------------------------------------
            IntLt | IntLe | IntGt | IntGe | IntEq | IntNe | UintLt | UintLe | UintGt | UintGe | PtrEq | PtrNe
            | InstancePtrEq | InstancePtrNe => {
                let mut c = Cond::of_cmp(opc).unwrap();
                if let Some(p) = and_flags {
                    // `int_ne(and, 0)` / `int_eq(and, 0)`: the `test` of the `int_and` at `p`
                    // set the flags (see `and_test`).
                    debug_assert!(op.args.contains(&Value::op(OpRef::new(p))));
                    self.fused = Some(c);
                    return Ok(());
                }
                let (mut x, mut y) = (a(0), a(1));
                if x.is_const() && !y.is_const() {
                    std::mem::swap(&mut x, &mut y);
                    c = c.swap();
                }
                let before = self.asm.offset().0;
                let rx = self.load(x)?;
                let s = self.opnd(y)?;
                let bare = self.asm.offset().0 == before;
                self.bool_result(at, |g| g.cmp(rx, s), c)?;
                if bare && self.fused.is_some() && self.loop_first == Some(at) {
                    self.bare_cmp = Some((at, rx, s));
                }
            }
            IntIsTrue | IntIsZero => {
                let c = if opc == IntIsTrue { Cond::Ne } else { Cond::E };
                if let Some(p) = and_flags {
                    debug_assert_eq!(a(0), Value::op(OpRef::new(p)));
                    self.fused = Some(c);
                    return Ok(());
                }
                let rx = self.load(a(0))?;
                self.bool_result(at, |g| dynasm!(g.asm ; .arch x64 ; test Rq(rx), Rq(rx)), c)?;
            }

            // ---- floats ------------------------------------------------------------------
            FloatAdd | FloatSub | FloatMul | FloatTrueDiv => {
                let s = self.fopnd(a(1))?;
                let d = self.copy_to_new(a(0), Kind::Float)?;
                let dx = x(d);
                macro_rules! fop {
                    ($ins:ident) => {
                        match s {
                            Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; $ins Rx(dx), Rx(x(s))),
                            Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; $ins Rx(dx), QWORD [rbp + m]),
                            Opnd::Imm(_) => unreachable!(),
                        }
                    };
                }
                match opc {
                    FloatAdd => fop!(addsd),
                    FloatSub => fop!(subsd),
                    FloatMul => fop!(mulsd),
                    _ => fop!(divsd),
                }
                self.def(d);
            }
            FloatNeg | FloatAbs => {
                let d = self.copy_to_new(a(0), Kind::Float)?;
                let dx = x(d);
                if opc == FloatNeg {
                    dynasm!(self.asm ; .arch x64 ; mov r11, QWORD i64::MIN ; movq xmm15, r11 ; xorpd Rx(dx), xmm15);
                } else {
                    dynasm!(self.asm ; .arch x64 ; mov r11, QWORD i64::MAX ; movq xmm15, r11 ; andpd Rx(dx), xmm15);
                }
                self.def(d);
            }
            FloatLt | FloatLe | FloatGt | FloatGe | FloatEq | FloatNe => {
                // lt/le are gt/ge with swapped operands; ucomisd sets CF/ZF like an unsigned
                // compare and PF when unordered (then CF = ZF = 1: `a`/`ae` are false).
                let (p, q) = if matches!(opc, FloatLt | FloatLe) {
                    (a(1), a(0))
                } else {
                    (a(0), a(1))
                };
                let rp = self.load(p)?;
                let s = self.fopnd(q)?;
                let d = self.alloc_reg(Kind::Int, 0)?;
                dynasm!(self.asm ; .arch x64 ; xor r11d, r11d);
                match s {
                    Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; ucomisd Rx(x(rp)), Rx(x(s))),
                    Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; ucomisd Rx(x(rp)), QWORD [rbp + m]),
                    Opnd::Imm(_) => unreachable!(),
                }
                match opc {
                    FloatLt | FloatGt => dynasm!(self.asm ; .arch x64 ; seta r11b ; mov Rq(d), r11),
                    FloatLe | FloatGe => dynasm!(self.asm ; .arch x64 ; setae r11b ; mov Rq(d), r11),
                    FloatEq => dynasm!(self.asm ; .arch x64 ; setnp r11b ; mov Rd(d), 0 ; cmove Rq(d), r11),
                    _ => dynasm!(self.asm ; .arch x64 ; setp r11b ; mov Rd(d), 1 ; cmove Rq(d), r11),
                }
                self.def(d);
            }
            CastIntToFloat => {
                let r = self.load(a(0))?;
                let d = self.alloc_reg(Kind::Float, 0)?;
                dynasm!(self.asm ; .arch x64 ; cvtsi2sd Rx(x(d)), Rq(r));
                self.def(d);
            }
            CastFloatToInt => {
                // cvttsd2si gives MININT for NaN and out-of-range values; fix up to the
                // saturating semantics (NaN -> 0, too large -> MAXINT).
                let r = self.load(a(0))?;
                let d = self.alloc_reg(Kind::Int, 0)?;
                let rx = x(r);
                let done = self.asm.new_dynamic_label();
                let nan = self.asm.new_dynamic_label();
                dynasm!(self.asm
                    ; .arch x64
                    ; cvttsd2si Rq(d), Rx(rx)
                    ; mov r11, QWORD i64::MIN
                    ; cmp Rq(d), r11
                    ; jne =>done
                    ; ucomisd Rx(rx), Rx(rx)
                    ; jp =>nan
                    ; xorpd xmm15, xmm15
                    ; ucomisd Rx(rx), xmm15
                    ; jbe =>done
                    ; lea Rq(d), [r11 - 1]
                    ; jmp =>done
                    ; =>nan
                    ; xor Rd(d), Rd(d)
                    ; =>done
                );
                self.def(d);
            }
            ConvertFloatBytesToLonglong | ConvertLonglongBytesToFloat => {
                let kind = opc.result_kind();
                let src = self.loc(a(0))?;
                let d = self.alloc_reg(kind, 0)?;
                self.mov(Loc::Reg(d), src);
                self.def(d);
            }

            // ---- guards ------------------------------------------------------------------
            GuardTrue | GuardFalse => {
                let exit_if_true = opc == GuardFalse;
                match fused {
                    Some(c) => {
                        let exit_if = if exit_if_true { c } else { c.negate() };
                        self.guard_exit(exit_if)?;
                        self.learn_in_bounds(at - 1, opc == GuardTrue);
                        if let Some((cmp_at, rx, s)) = self.bare_cmp.take().filter(|b| b.0 + 1 == at) {
                            // The loop's first test: rotate (see `LoopTop`). The body starts on
                            // a 64-byte boundary (the NOPs run once per entry).
                            let _ = cmp_at;
                            let stub = self.stubs.len() as u32 - 1;
                            let body = self.asm.new_dynamic_label();
                            self.align_with_nops(64);
                            dynasm!(self.asm ; .arch x64 ; =>body);
                            self.loop_top = Some(LoopTop {
                                x: rx,
                                y: s,
                                exit_if,
                                stub,
                                body,
                            });
                        }
                    }
                    None => {
                        match self.opnd(a(0))? {
                            Opnd::Reg(r) => dynasm!(self.asm ; .arch x64 ; test Rq(r), Rq(r)),
                            Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; cmp QWORD [rbp + m], 0),
                            Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; mov r11d, i ; test r11, r11),
                        }
                        self.guard_exit(if exit_if_true { Cond::Ne } else { Cond::E })?;
                    }
                }
            }
            GuardNoOverflow | GuardOverflow => {
                let c = fused.ok_or_else(|| bad("overflow guard without a preceding _ovf op"))?;
                self.guard_exit(if opc == GuardNoOverflow { c } else { c.negate() })?;
            }
            GuardValue => {
                if t.kind_of(a(0)) == Kind::Float || t.kind_of(a(1)) == Kind::Float {
                    // Compare the bits.
                    let r = self.alloc_reg(Kind::Int, 0)?;
                    let s0 = self.loc(a(0))?;
                    self.mov(Loc::Reg(r), s0);
                    let s1 = self.loc(a(1))?;
                    match s1 {
                        Loc::Reg(q) => dynasm!(self.asm ; .arch x64 ; movq r11, Rx(x(q))),
                        other => self.mov(Loc::Reg(11), other),
                    }
                    dynasm!(self.asm ; .arch x64 ; cmp Rq(r), r11);
                } else {
                    let (p, q) = if a(0).is_const() { (a(1), a(0)) } else { (a(0), a(1)) };
                    let r = self.load(p)?;
                    let s = self.opnd(q)?;
                    self.cmp(r, s);
                }
                self.guard_exit(Cond::Ne)?;
            }
            GuardNonnull | GuardIsnull => {
                match self.opnd(a(0))? {
                    Opnd::Reg(r) => dynasm!(self.asm ; .arch x64 ; test Rq(r), Rq(r)),
                    Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; cmp QWORD [rbp + m], 0),
                    Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; mov r11d, i ; test r11, r11),
                }
                self.guard_exit(if opc == GuardNonnull { Cond::E } else { Cond::Ne })?;
                if opc == GuardNonnull {
                    self.make_nonnull(a(0));
                }
            }
            GuardClass | GuardNonnullClass | GuardSubclass => {
                // No class hierarchy is modelled (as in the interpreter): `guard_subclass`
                // checks for the exact class.
                let r = self.load(a(0))?;
                if opc != GuardNonnullClass {
                    // A class check on null is an invalid operation (as in the interpreter).
                    self.null_check(a(0), r);
                }
                if opc == GuardNonnullClass {
                    dynasm!(self.asm ; .arch x64 ; test Rq(r), Rq(r));
                    // Both branches share one stub: nothing moves between them.
                    self.guard_exit(Cond::E)?;
                    self.make_nonnull(a(0));
                }
                match self.loc(a(1))? {
                    Loc::Imm(v) if fits_i32(v as i64) => {
                        let v = v as i64 as i32;
                        dynasm!(self.asm ; .arch x64 ; cmp QWORD [Rq(r)], v)
                    }
                    other => {
                        self.mov(Loc::Reg(11), other);
                        dynasm!(self.asm ; .arch x64 ; cmp r11, QWORD [Rq(r)])
                    }
                }
                if opc == GuardNonnullClass {
                    self.jcc_stub(Cond::Ne, self.stubs.len() as u32 - 1);
                } else {
                    self.guard_exit(Cond::Ne)?;
                }
            }
            GuardNotInvalidated | GuardFutureCondition | GuardNotForced | GuardNotForced2 | GuardNoException => {
                // Never fail in this backend: nothing invalidates or forces compiled code, and
                // no exception can be pending (calls never raise, as in the interpreter, and
                // the ops that set the exception state are not supported).
            }
            ForceToken => {
                // A fixed token, the interpreter's.
                let d = self.alloc_reg(Kind::Ref, 0)?;
                self.mov(Loc::Reg(d), Loc::Imm(trace_ir::interp::heap::FORCE_TOKEN));
                self.def(d);
            }
            VirtualRef => {
                // `virtual_ref(p, i)` is `p` in this model.
                let d = self.copy_to_new(a(0), Kind::Ref)?;
                self.def(d);
            }

            // ---- hints -------------------------------------------------------------------
            Keepalive | EnterPortalFrame | LeavePortalFrame | RecordKnownResult | RecordExactClass | AssertNotNone
            | QuasiimmutField | VirtualRefFinish => {}

            // ---- heap ----------------------------------------------------------------------
            GetfieldGcI | GetfieldGcR | GetfieldGcF | GetfieldRawI | GetfieldRawR | GetfieldRawF => {
                let f = self.field(op)?;
                let base = self.load(a(0))?;
                self.null_check(a(0), base);
                let d = self.alloc_reg(opc.result_kind(), 0)?;
                let (base, disp) = self.mem_operand(base, f.offset);
                self.load_mem(d, base, disp, f.size, f.signed);
                self.def(d);
            }
            SetfieldGc | SetfieldRaw => {
                let f = self.field(op)?;
                let base = self.load(a(0))?;
                self.null_check(a(0), base);
                let v = self.load(a(1))?;
                // After loading `v` (a float constant goes through `r11`).
                let (base, disp) = self.mem_operand(base, f.offset);
                self.store_mem(base, disp, v, f.size);
            }
            ArraylenGc => {
                let ad = self.array(op)?;
                let base = self.load(a(0))?;
                self.null_check(a(0), base);
                let d = self.alloc_reg(Kind::Int, 0)?;
                let (base, disp) = self.mem_operand(base, ad.len_offset);
                self.load_mem(d, base, disp, 8, true);
                self.def(d);
            }
            GetinteriorfieldGcI | GetinteriorfieldGcR | GetinteriorfieldGcF => {
                let (item, f) = self.interior(op)?;
                let (base, disp) = self.address(
                    a(0),
                    a(1),
                    item,
                    DEFAULT_ARRAY_BASE.wrapping_add(f.offset),
                    Some(DEFAULT_ARRAY_LEN),
                )?;
                let d = self.alloc_reg(opc.result_kind(), 0)?;
                self.load_mem(d, base, disp, f.size, f.signed);
                self.def(d);
            }
            SetinteriorfieldGc => {
                let (item, f) = self.interior(op)?;
                let v = self.load(a(2))?;
                let (base, disp) = self.address(
                    a(0),
                    a(1),
                    item,
                    DEFAULT_ARRAY_BASE.wrapping_add(f.offset),
                    Some(DEFAULT_ARRAY_LEN),
                )?;
                self.store_mem(base, disp, v, f.size);
            }
            GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF | GetarrayitemGcPureI | GetarrayitemGcPureR
            | GetarrayitemGcPureF | GetarrayitemRawI | GetarrayitemRawF | RawLoadI | RawLoadF => {
                let ad = self.array(op)?;
                let (base, disp) = self.item_address(opc, a(0), a(1), ad)?;
                let d = self.alloc_reg(opc.result_kind(), 0)?;
                self.load_mem(d, base, disp, ad.item_size, ad.signed);
                self.def(d);
            }
            SetarrayitemGc | SetarrayitemRaw | RawStore => {
                let ad = self.array(op)?;
                let v = self.load(a(2))?;
                let (base, disp) = self.item_address(opc, a(0), a(1), ad)?;
                self.store_mem(base, disp, v, ad.item_size);
            }

            // ---- allocation and calls ------------------------------------------------------
            New | NewWithVtable => {
                let sd = op
                    .descr
                    .and_then(|d| t.descr(d).as_size())
                    .ok_or_else(|| bad("allocation without a size descriptor"))?;
                let class = if opc == NewWithVtable {
                    trace_ir::interp::default_class(sd)
                } else {
                    0
                };
                let size = sd.size.max(if class != 0 { 8 } else { 0 }) as u64;
                let f = runtime::tramp_new as *const () as usize as u64;
                self.call(
                    Loc::Imm(f),
                    &[
                        ArgSrc::Ctx,
                        ArgSrc::Loc(Loc::Imm(size), Kind::Int),
                        ArgSrc::Loc(Loc::Imm(class), Kind::Int),
                    ],
                    Kind::Ref,
                )?;
                let inv = self.invalid_exit();
                dynasm!(self.asm ; .arch x64 ; test rax, rax);
                self.jcc_stub(Cond::E, inv);
            }
            NewArray | NewArrayClear => {
                let ad = self.array(op)?;
                let layout = Box::new(ArrayLayout {
                    item_size: ad.item_size as u64,
                    base_offset: ad.base_offset.max(0) as u64,
                    len_offset: ad.len_offset.max(0) as u64,
                });
                let lp = &*layout as *const ArrayLayout as u64;
                self.array_layouts.push(layout);
                let f = runtime::tramp_new_array as *const () as usize as u64;
                self.call(
                    Loc::Imm(f),
                    &[ArgSrc::Ctx, ArgSrc::Value(a(0)), ArgSrc::Loc(Loc::Imm(lp), Kind::Int)],
                    Kind::Ref,
                )?;
                let inv = self.invalid_exit();
                dynasm!(self.asm ; .arch x64 ; test rax, rax);
                self.jcc_stub(Cond::E, inv);
            }
            CallI | CallR | CallF | CallN | CallPureI | CallPureR | CallPureF | CallPureN | CallLoopinvariantI
            | CallLoopinvariantR | CallLoopinvariantF | CallLoopinvariantN | CallMayForceI | CallMayForceR
            | CallMayForceF | CallMayForceN => {
                let cd = op.descr.and_then(|d| t.descr(d).as_call());
                let nargs = op.args.len() - 1;
                let mut args = std::mem::take(&mut self.call_args);
                args.clear();
                for k in 0..nargs {
                    let v = a(k + 1);
                    let kind = match cd.and_then(|c| c.args.get(k)) {
                        Some(&k) => k,
                        None => t.kind_of(v),
                    };
                    if kind != t.kind_of(v) {
                        return Err(bad("call argument kind differs from its descriptor"));
                    }
                    args.push(ArgSrc::Value(v));
                }
                self.call_inner(None, Some(a(0)), &args, opc.result_kind(), None)?;
                self.call_args = args;
            }
            CondCallN | CondCallValueI | CondCallValueR => {
                let nargs = op.args.len() - 2;
                let mut args = std::mem::take(&mut self.call_args);
                args.clear();
                args.extend((0..nargs).map(|k| ArgSrc::Value(a(k + 2))));
                self.call_inner(None, Some(a(1)), &args, opc.result_kind(), Some(a(0)))?;
                self.call_args = args;
            }

            Jump => self.jump(at)?,
            Finish => self.leave(&op.args, ExitInfo::Finish { n: op.args.len() })?,
            _ => {
                return Err(Box::new(CompileError::Unsupported {
                    op: OpRef::new(at),
                    opcode: opc,
                }))
            }
        }
        Ok(())
    }

    /// Leave the trace: store `args` into the exit buffer and return the code of `info`.
    fn leave(&mut self, args: &[Value], info: ExitInfo) -> R<()> {
        for (k, &v) in args.iter().enumerate() {
            let src = self.loc(v)?;
            self.mov(Loc::Mem(self.exit_disp(k)), src);
        }
        let code = self.exits.len() as i32;
        self.exits.push(info);
        let e = self.epilogue;
        dynasm!(self.asm ; .arch x64 ; mov eax, code ; jmp =>e);
        self.record(Event::End);
        Ok(())
    }

    /// A comparison whose flags are set by `emit_cmp`: fused into the next guard, or
    /// materialized as 0/1.
    fn bool_result(&mut self, at: usize, emit_cmp: impl FnOnce(&mut Self), c: Cond) -> R<()> {
        if self.fusable(at) {
            emit_cmp(self);
            self.fused = Some(c);
        } else {
            let d = self.alloc_reg(Kind::Int, 0)?;
            emit_cmp(self);
            self.setcc_r11(c);
            dynasm!(self.asm ; .arch x64 ; movzx Rq(d), r11b);
            self.def(d);
        }
        Ok(())
    }

    /// `int_and(x, y)` at `at` whose value is only tested for zero: by a directly
    /// following `guard_true`/`guard_false`, or by an `int_is_true`, `int_is_zero`,
    /// `int_ne(_, 0)` or `int_eq(_, 0)` that is itself fused into the next guard. Then emit
    /// `test x, y` (the flags `and` would set, without a result) and return true; the
    /// comparison finds the flags through `and_flags`.
    fn and_test(&mut self, at: usize, x: Value, y: Value) -> R<bool> {
        use Opcode::*;
        let t = self.t;
        let me = Value::op(OpRef::new(at));
        let direct = self.fusable(at);
        let via = !direct
            && self.used_only_next(at)
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
            return Ok(false);
        }
        let rx = self.load(x)?;
        match self.opnd(y)? {
            Opnd::Reg(r) => dynasm!(self.asm ; .arch x64 ; test Rq(rx), Rq(r)),
            Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; test QWORD [rbp + m], Rq(rx)),
            // The low byte alone when the mask has no other bits (`test r8, imm8`).
            Opnd::Imm(i) if (0..=0xff).contains(&i) => {
                let b = i as u8 as i8;
                dynasm!(self.asm ; .arch x64 ; test Rb(rx), BYTE b)
            }
            Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; test Rq(rx), i),
        }
        if direct {
            // Non-zero is true.
            self.fused = Some(Cond::Ne);
        } else {
            self.and_flags = Some(at);
        }
        Ok(true)
    }

    /// Whether `v` is in a register and, after the current op (an `_ovf` op), is read only
    /// by the overflow guard right after it, through its fail arguments or virtual fields
    /// (so the op may overwrite it; see [`Undo`]).
    fn undoable(&self, v: Value) -> bool {
        let Some(o) = v.as_op() else { return false };
        let o = o.index();
        self.reg_of(o).is_some()
            && self.last_use[o] as usize == self.pos + 1
            && self
                .t
                .ops
                .get(self.pos + 1)
                .is_some_and(|g| matches!(g.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow))
    }

    fn fopnd(&mut self, v: Value) -> R<Opnd> {
        match self.loc(v)? {
            Loc::Reg(r) => {
                self.pin(r);
                Ok(Opnd::Reg(r))
            }
            Loc::Mem(m) => Ok(Opnd::Mem(m)),
            Loc::Imm(_) => Ok(Opnd::Reg(self.load(v)?)),
        }
    }

    fn shift(&mut self, opc: Opcode, v: Value, amount: Value) -> R<()> {
        if let Some(c) = self.t.const_int(amount) {
            let d = self.copy_to_new(v, Kind::Int)?;
            if (0..64).contains(&c) {
                let c = c as i8;
                match opc {
                    Opcode::IntLshift => dynasm!(self.asm ; .arch x64 ; shl Rq(d), c),
                    Opcode::IntRshift => dynasm!(self.asm ; .arch x64 ; sar Rq(d), c),
                    _ => dynasm!(self.asm ; .arch x64 ; shr Rq(d), c),
                }
            } else {
                let inv = self.invalid_exit();
                self.jmp_stub(inv);
            }
            self.def(d);
            return Ok(());
        }
        self.take_reg(RCX)?;
        let s = self.loc(amount)?;
        self.mov(Loc::Reg(RCX), s);
        let inv = self.invalid_exit();
        dynasm!(self.asm ; .arch x64 ; cmp rcx, 63);
        self.jcc_stub(Cond::A, inv);
        let d = self.copy_to_new(v, Kind::Int)?;
        match opc {
            Opcode::IntLshift => dynasm!(self.asm ; .arch x64 ; shl Rq(d), cl),
            Opcode::IntRshift => dynasm!(self.asm ; .arch x64 ; sar Rq(d), cl),
            _ => dynasm!(self.asm ; .arch x64 ; shr Rq(d), cl),
        }
        self.def(d);
        Ok(())
    }

    /// Division and remainder (C and Python flavours). Never traps: a zero divisor is an
    /// invalid operation, and `MININT / -1` wraps (quotient MININT, remainder 0).
    fn divide(&mut self, opc: Opcode, v: Value, divisor: Value) -> R<()> {
        self.take_reg(RAX)?;
        self.take_reg(RDX)?;
        let sv = self.loc(v)?;
        let sd = self.loc(divisor)?;
        self.mov(Loc::Reg(RAX), sv);
        self.mov(Loc::Reg(11), sd);
        let inv = self.invalid_exit();
        let minus_one = self.asm.new_dynamic_label();
        let done = self.asm.new_dynamic_label();
        dynasm!(self.asm ; .arch x64 ; test r11, r11);
        self.jcc_stub(Cond::E, inv);
        dynasm!(self.asm
            ; .arch x64
            ; cmp r11, -1
            ; je =>minus_one
            ; cqo
            ; idiv r11
        );
        match opc {
            Opcode::IntPyDiv => {
                // Floor: subtract one when the remainder is non-zero and its sign differs
                // from the divisor's.
                dynasm!(self.asm
                    ; .arch x64
                    ; test rdx, rdx
                    ; jz =>done
                    ; xor rdx, r11
                    ; jns =>done
                    ; sub rax, 1
                    ; jmp =>done
                );
            }
            Opcode::IntPyMod => {
                let adjust = self.asm.new_dynamic_label();
                dynasm!(self.asm
                    ; .arch x64
                    ; test rdx, rdx
                    ; jz =>done
                    ; xor r11, rdx
                    ; js =>adjust
                    ; jmp =>done
                    ; =>adjust
                    ; xor r11, rdx
                    ; add rdx, r11
                    ; jmp =>done
                );
            }
            _ => dynasm!(self.asm ; .arch x64 ; jmp =>done),
        }
        dynasm!(self.asm
            ; .arch x64
            ; =>minus_one
            ; neg rax
            ; xor edx, edx
            ; =>done
        );
        self.clobber(&[RAX, RDX]);
        let r = if matches!(opc, Opcode::IntFloorDiv | Opcode::IntPyDiv) {
            RAX
        } else {
            RDX
        };
        self.def(r);
        Ok(())
    }

    /// Sign-extend the low `n` bytes (n in 1, 2, 4, 8; anything else is invalid).
    fn signext(&mut self, v: Value, n: Value) -> R<()> {
        if let Some(c) = self.t.const_int(n) {
            let d = self.copy_to_new(v, Kind::Int)?;
            match c {
                1 => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), Rb(d)),
                2 => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), Rw(d)),
                4 => dynasm!(self.asm ; .arch x64 ; movsxd Rq(d), Rd(d)),
                8 => {}
                _ => {
                    let inv = self.invalid_exit();
                    self.jmp_stub(inv);
                }
            }
            self.def(d);
            return Ok(());
        }
        self.take_reg(RCX)?;
        let s = self.loc(n)?;
        self.mov(Loc::Reg(RCX), s);
        let inv = self.invalid_exit();
        let ok = self.asm.new_dynamic_label();
        // Valid: n in {1, 2, 4, 8}; then shift left and back by 64 - 8n.
        dynasm!(self.asm
            ; .arch x64
            ; cmp rcx, 1 ; je =>ok
            ; cmp rcx, 2 ; je =>ok
            ; cmp rcx, 4 ; je =>ok
            ; cmp rcx, 8
        );
        self.jcc_stub(Cond::Ne, inv);
        dynasm!(self.asm
            ; .arch x64
            ; =>ok
            ; shl ecx, 3
            ; neg ecx
            ; add ecx, 64
        );
        self.clobber(&[RCX]);
        let d = self.copy_to_new(v, Kind::Int)?;
        // A shift by 64 is a shift by 0 on x86 (the count is masked), which is what n = 8 needs.
        dynasm!(self.asm ; .arch x64 ; shl Rq(d), cl ; sar Rq(d), cl);
        self.def(d);
        Ok(())
    }

    fn field(&self, op: &Op) -> R<&'t FieldDescr> {
        let t = self.t;
        op.descr
            .and_then(|d| t.descr(d).as_field())
            .ok_or_else(|| bad("field access without a field descriptor"))
    }
    fn interior(&self, op: &Op) -> R<(i64, &'t FieldDescr)> {
        let t = self.t;
        match op.descr.map(|d| t.descr(d)) {
            Some(trace_ir::Descr::Interior(i)) => Ok((i.item_size, &i.field)),
            _ => Err(bad("interior field access without an interior descriptor")),
        }
    }
    fn array(&self, op: &Op) -> R<&'t trace_ir::ArrayDescr> {
        let t = self.t;
        op.descr
            .and_then(|d| t.descr(d).as_array())
            .ok_or_else(|| bad("array access without an array descriptor"))
    }

    /// The address of an array item (or raw `address + offset`) as base register plus
    /// displacement; a variable index is folded into `r11`.
    fn item_address(&mut self, opc: Opcode, base: Value, index: Value, ad: &trace_ir::ArrayDescr) -> R<(Reg, i32)> {
        let raw_offset = matches!(opc, Opcode::RawLoadI | Opcode::RawLoadF | Opcode::RawStore);
        let raw = raw_offset
            || matches!(
                opc,
                Opcode::GetarrayitemRawI | Opcode::GetarrayitemRawF | Opcode::SetarrayitemRaw
            );
        let (scale, base_off) = match (raw_offset, raw) {
            (true, _) => (1i64, 0i64),
            (false, true) => (ad.item_size as i64, 0),
            _ => (ad.item_size as i64, ad.base_offset),
        };
        let len_off = if raw { None } else { Some(ad.len_offset) };
        self.address(base, index, scale, base_off, len_off)
    }

    /// `base + index * scale + base_off` as a base register and displacement, after a null
    /// check and (with `len_off`) a bounds check against the length word there. Address
    /// arithmetic wraps (as the interpreter's raw accesses do); a variable index or a
    /// displacement that does not fit 32 bits is folded into `r11`.
    fn address(&mut self, base: Value, index: Value, scale: i64, base_off: i64, len_off: Option<i64>) -> R<(Reg, i32)> {
        let rb = self.load(base)?;
        self.null_check(base, rb);
        let fact = len_off.map(|l| (self.val(base), self.val(index), l));
        let len_off = match fact {
            Some(f) if self.in_bounds.contains(&f) => None,
            Some(f) => {
                if self.in_bounds.len() < 16 {
                    self.in_bounds.push(f);
                }
                len_off
            }
            None => None,
        };
        if let Some(len_off) = len_off {
            // Bounds check against the length word (unsigned: negative indices fail too).
            let inv = self.invalid_exit();
            let opnd = self.opnd(index)?;
            if fits_i32(len_off) {
                let len_off = len_off as i32;
                match opnd {
                    Opnd::Reg(r) => dynasm!(self.asm ; .arch x64 ; cmp Rq(r), QWORD [Rq(rb) + len_off]),
                    Opnd::Mem(m) => {
                        dynasm!(self.asm ; .arch x64 ; mov r11, QWORD [rbp + m] ; cmp r11, QWORD [Rq(rb) + len_off])
                    }
                    Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; mov r11, i ; cmp r11, QWORD [Rq(rb) + len_off]),
                }
                self.jcc_stub(Cond::Ae, inv);
            } else {
                // The length word into `r11` (through `[base + r11]`), then the index against it.
                self.mov_imm_r11(len_off as u64);
                dynasm!(self.asm ; .arch x64 ; mov r11, QWORD [Rq(rb) + r11]);
                let c = match opnd {
                    Opnd::Reg(r) => {
                        dynasm!(self.asm ; .arch x64 ; cmp Rq(r), r11);
                        Cond::Ae
                    }
                    Opnd::Mem(m) => {
                        dynasm!(self.asm ; .arch x64 ; cmp QWORD [rbp + m], r11);
                        Cond::Ae
                    }
                    // length <= index (the immediate sign-extends like the index value).
                    Opnd::Imm(i) => {
                        dynasm!(self.asm ; .arch x64 ; cmp r11, i);
                        Cond::Be
                    }
                };
                self.jcc_stub(c, inv);
            }
        }
        if let Some(i) = self.t.const_int(index) {
            let d = i.wrapping_mul(scale).wrapping_add(base_off);
            return Ok(self.mem_operand(rb, d));
        }
        let ri = self.load(index)?;
        let wide = !fits_i32(base_off);
        if wide && !matches!(scale, 1 | 2 | 4 | 8) {
            // No second scratch register: the offset waits in the frame's temporary word
            // (free outside parallel moves).
            self.mov_imm_r11(base_off as u64);
            dynasm!(self.asm ; .arch x64 ; mov QWORD [rbp + TEMP_DISP], r11);
        }
        match scale {
            1 | 2 | 4 | 8 if wide => {
                // r11 = base + base_off, then the scaled index.
                self.mov_imm_r11(base_off as u64);
                dynasm!(self.asm ; .arch x64 ; add r11, Rq(rb));
                match scale {
                    1 => dynasm!(self.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 1]),
                    2 => dynasm!(self.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 2]),
                    4 => dynasm!(self.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 4]),
                    _ => dynasm!(self.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 8]),
                }
                return Ok((11, 0));
            }
            1 => dynasm!(self.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 1]),
            2 => dynasm!(self.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 2]),
            4 => dynasm!(self.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 4]),
            8 => dynasm!(self.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 8]),
            s if fits_i32(s) => {
                let s = s as i32;
                dynasm!(self.asm ; .arch x64 ; imul r11, Rq(ri), s ; add r11, Rq(rb))
            }
            s => {
                // A 64-bit item size (interior fields of huge structs): multiply in `r11`.
                self.mov_imm_r11(s as u64);
                dynasm!(self.asm ; .arch x64 ; imul r11, Rq(ri) ; add r11, Rq(rb))
            }
        }
        if wide {
            dynasm!(self.asm ; .arch x64 ; add r11, QWORD [rbp + TEMP_DISP]);
            return Ok((11, 0));
        }
        Ok((11, base_off as i32))
    }

    /// `[base + off]` as a base register and 32-bit displacement: `base` itself when `off`
    /// fits, else `r11 = base + off` (wrapping) with displacement 0. Emit it right before the
    /// access: nothing may use `r11` in between.
    fn mem_operand(&mut self, base: Reg, off: i64) -> (Reg, i32) {
        if fits_i32(off) {
            return (base, off as i32);
        }
        self.mov_imm_r11(off as u64);
        dynasm!(self.asm ; .arch x64 ; add r11, Rq(base));
        (11, 0)
    }

    /// Exit as invalid when `v` (in `r`) is null (heap accesses through null are invalid
    /// operations), unless `v` is known to be non-null.
    fn null_check(&mut self, v: Value, r: Reg) {
        if self.known_nonnull(v) {
            return;
        }
        let inv = self.invalid_exit();
        dynasm!(self.asm ; .arch x64 ; test Rq(r), Rq(r));
        self.jcc_stub(Cond::E, inv);
        self.make_nonnull(v);
    }

    /// Whether `v` is a non-zero constant or an op known to be non-null here (the trace is
    /// straight-line code: a check passed earlier holds for the rest of the trace).
    fn known_nonnull(&self, v: Value) -> bool {
        match v.data() {
            ValueData::Const(c) => self.t.consts.get(c).bits() != 0,
            ValueData::Op(o) => self.nonnull[o.index() / 64] & (1 << (o.index() % 64)) != 0,
        }
    }
    /// Whether an op may change memory (or call code that may): it ends what
    /// `in_bounds` knows.
    /// (Bit operations without short-circuits: asked at every op, of a random op mix.)
    fn may_write(&self, opc: Opcode) -> bool {
        use trace_ir::OpFlags;
        let f = opc.flags();
        let reads_only = f.contains(OpFlags::READS_HEAP) & !f.contains(OpFlags::WRITES_HEAP);
        let quiet = f.intersects(OpFlags::PURE | OpFlags::GUARD) | reads_only;
        !quiet | f.intersects(OpFlags::CALL | OpFlags::WRITES_HEAP | OpFlags::ALLOC) | self.hk.routes(opc)
    }

    /// After a guard on the comparison at `cmp` passed (`holds`: the comparison is true):
    /// when that says `index <u arraylen_gc(array)` with the length read since memory last
    /// changed, accesses of `array[index]` need no bounds check.
    fn learn_in_bounds(&mut self, cmp: usize, holds: bool) {
        use Opcode::*;
        let t = self.t;
        let Some(op) = t.ops.get(cmp) else { return };
        let (index, len) = match (op.opcode, holds) {
            (UintLt, true) | (UintGe, false) => (op.args[0], op.args[1]),
            (UintGt, true) | (UintLe, false) => (op.args[1], op.args[0]),
            _ => return,
        };
        let Some(l) = len.as_op().map(|o| o.index()) else {
            return;
        };
        if !self.lens.contains(&l) || t.ops[l].opcode != ArraylenGc {
            return;
        }
        let Some(ad) = t.ops[l].descr.and_then(|d| t.descr(d).as_array()) else {
            return;
        };
        let fact = (self.val(t.ops[l].args[0]), self.val(index), ad.len_offset);
        if self.in_bounds.len() < 16 && !self.in_bounds.contains(&fact) {
            self.in_bounds.push(fact);
        }
    }

    fn make_nonnull(&mut self, v: Value) {
        if let Some(o) = v.as_op() {
            self.nonnull[o.index() / 64] |= 1 << (o.index() % 64);
        }
    }

    /// Load `size` bytes at `[base + disp]` into `d`, sign- or zero-extending.
    fn load_mem(&mut self, d: Reg, base: Reg, disp: i32, size: u8, signed: bool) {
        if is_xmm(d) {
            dynasm!(self.asm ; .arch x64 ; movsd Rx(x(d)), QWORD [Rq(base) + disp]);
            return;
        }
        match (size, signed) {
            (1, true) => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), BYTE [Rq(base) + disp]),
            (1, false) => dynasm!(self.asm ; .arch x64 ; movzx Rq(d), BYTE [Rq(base) + disp]),
            (2, true) => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), WORD [Rq(base) + disp]),
            (2, false) => dynasm!(self.asm ; .arch x64 ; movzx Rq(d), WORD [Rq(base) + disp]),
            (4, true) => dynasm!(self.asm ; .arch x64 ; movsxd Rq(d), DWORD [Rq(base) + disp]),
            (4, false) => dynasm!(self.asm ; .arch x64 ; mov Rd(d), DWORD [Rq(base) + disp]),
            _ => dynasm!(self.asm ; .arch x64 ; mov Rq(d), QWORD [Rq(base) + disp]),
        }
    }

    /// Store the low `size` bytes of `v` at `[base + disp]`.
    fn store_mem(&mut self, base: Reg, disp: i32, v: Reg, size: u8) {
        if is_xmm(v) {
            dynasm!(self.asm ; .arch x64 ; movsd QWORD [Rq(base) + disp], Rx(x(v)));
            return;
        }
        match size {
            1 => dynasm!(self.asm ; .arch x64 ; mov BYTE [Rq(base) + disp], Rb(v)),
            2 => dynasm!(self.asm ; .arch x64 ; mov WORD [Rq(base) + disp], Rw(v)),
            4 => dynasm!(self.asm ; .arch x64 ; mov DWORD [Rq(base) + disp], Rd(v)),
            _ => dynasm!(self.asm ; .arch x64 ; mov QWORD [Rq(base) + disp], Rq(v)),
        }
    }

    fn jump(&mut self, at: usize) -> R<()> {
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

    /// Spill or move every value that lives past the current op out of caller-saved
    /// registers (to free callee-saved registers when possible).
    fn save_live_caller_saved(&mut self) -> R<()> {
        // Occupied clobbered registers in ascending order (caller-saved GPRs, then XMMs).
        let mut regs = self.occupied & CALL_CLOBBERED;
        while regs != 0 {
            let r = regs.trailing_zeros() as Reg;
            regs &= regs - 1;
            let Some(v) = self.owner[r as usize] else { continue };
            let v = v as usize;
            if !self.live_after(v) {
                continue;
            }
            if !is_xmm(r) {
                let free = CALLEE_SAVED
                    .iter()
                    .copied()
                    .find(|&q| (self.occupied | self.pinned) & (1 << q) == 0 && self.gpr_pool.contains(&q));
                if let Some(q) = free {
                    self.mov(Loc::Reg(q), Loc::Reg(r));
                    self.release(r);
                    self.set_owner(q, v);
                    continue;
                }
            }
            self.ensure_slot(v)?;
            // Keep the register mapping until the call: argument sources may read it.
        }
        Ok(())
    }

    /// Push one 8-byte stack argument (a float as its bits).
    fn push_arg(&mut self, src: Loc) {
        match src {
            Loc::Reg(r) if is_xmm(r) => {
                dynasm!(self.asm ; .arch x64 ; sub rsp, 8 ; movsd QWORD [rsp], Rx(x(r)))
            }
            Loc::Reg(r) => dynasm!(self.asm ; .arch x64 ; push Rq(r)),
            Loc::Mem(m) => dynasm!(self.asm ; .arch x64 ; push QWORD [rbp + m]),
            // `push imm32` sign-extends to 64 bits.
            Loc::Imm(v) if fits_i32(v as i64) => {
                let v = v as i64 as i32;
                dynasm!(self.asm ; .arch x64 ; push v)
            }
            Loc::Imm(v) => {
                self.mov_imm_r11(v);
                dynasm!(self.asm ; .arch x64 ; push r11)
            }
        }
    }

    fn call(&mut self, f: Loc, args: &[ArgSrc], result: Kind) -> R<()> {
        self.call_inner(Some(f), None, args, result, None)
    }

    /// A System V call: live caller-saved values saved, arguments beyond the 6 integer and
    /// 8 float argument registers pushed (right to left, padded to keep `rsp` 16-byte
    /// aligned, popped after the call), the others moved in parallel into their registers
    /// (function address into `rax`), result in `rax`/`xmm0`.
    ///
    /// With `cond` (`cond_call`, `cond_call_value_*`): `cond_call` calls only when the
    /// condition is non-zero; `cond_call_value` returns the value when it is non-zero and
    /// calls otherwise. Saving live values happens before the branch, so both paths leave
    /// the same allocation state (the skipping path clobbers a subset of the registers).
    fn call_inner(
        &mut self,
        f: Option<Loc>,
        fv: Option<Value>,
        args: &[ArgSrc],
        result: Kind,
        cond: Option<Value>,
    ) -> R<()> {
        self.save_live_caller_saved()?;
        let skip = match cond {
            Some(c) => {
                let l = self.loc(c)?;
                self.mov(Loc::Reg(11), l);
                let skip = self.asm.new_dynamic_label();
                if result == Kind::Void {
                    dynasm!(self.asm ; .arch x64 ; test r11, r11 ; jz =>skip);
                } else {
                    dynasm!(self.asm ; .arch x64 ; test r11, r11 ; jnz =>skip);
                }
                Some(skip)
            }
            None => None,
        };
        let mut moves = std::mem::take(&mut self.call_moves);
        moves.clear();
        // Arguments beyond the argument registers go on the stack (System V: the first
        // stack argument at `[rsp]` at the call, 8 bytes each, `rsp` 16-byte aligned there;
        // the body runs with `rsp` aligned, see the prologue). Their sources, in argument
        // order; empty (no allocation) for calls with register arguments only.
        let mut stack: Vec<Loc> = Vec::new();
        let (mut ni, mut nf) = (0, 0);
        for a in args {
            let (src, kind) = match *a {
                ArgSrc::Ctx => (Loc::Mem(0), Kind::Int),
                ArgSrc::Loc(l, k) => (l, k),
                ArgSrc::Value(v) => (self.loc(v)?, self.t.kind_of(v)),
            };
            let dst = if kind == Kind::Float {
                nf += 1;
                (nf <= 8).then(|| XMM0 + nf - 1)
            } else {
                ni += 1;
                (ni <= 6).then(|| INT_ARG_REGS[ni as usize - 1])
            };
            match dst {
                Some(d) => moves.push((Loc::Reg(d), src)),
                None => stack.push(src),
            }
        }
        let fsrc = match (f, fv) {
            (Some(l), _) => l,
            (None, Some(v)) => self.loc(v)?,
            _ => unreachable!(),
        };
        // Stack arguments first, pushed right to left, while every source still holds its
        // value (the register moves below may overwrite them). Pushing touches no register
        // or frame word the allocator tracks (only `rsp` and the scratch `r11`).
        let stack_bytes = 8 * (stack.len() + stack.len() % 2) as i32;
        if stack.len() % 2 == 1 {
            dynasm!(self.asm ; .arch x64 ; sub rsp, 8);
        }
        for &src in stack.iter().rev() {
            self.push_arg(src);
        }
        moves.push((Loc::Reg(RAX), fsrc));
        self.parallel_move(&moves);
        if CHECK {
            // The argument registers hold the argument values (register arguments are
            // `moves[..]` in argument order).
            let mut regs = moves.iter();
            let (mut ni, mut nf) = (0, 0);
            for a in args {
                let kind = match *a {
                    ArgSrc::Ctx => Kind::Int,
                    ArgSrc::Loc(_, k) => k,
                    ArgSrc::Value(v) => self.t.kind_of(v),
                };
                let in_reg = if kind == Kind::Float {
                    nf += 1;
                    nf <= 8
                } else {
                    ni += 1;
                    ni <= 6
                };
                if !in_reg {
                    continue;
                }
                let d = regs.next().map(|m| m.0);
                if let (ArgSrc::Value(v), Some(d)) = (*a, d) {
                    self.expect(d, self.val(v));
                }
            }
        }
        self.call_moves = moves;
        dynasm!(self.asm ; .arch x64 ; call rax);
        if stack_bytes != 0 {
            // The caller pops the stack arguments (`lea` keeps the flags, though nothing
            // reads them after a call).
            dynasm!(self.asm ; .arch x64 ; lea rsp, [rsp + stack_bytes]);
        }
        if let Some(skip) = skip {
            if result == Kind::Void {
                dynasm!(self.asm ; .arch x64 ; =>skip);
            } else {
                let done = self.asm.new_dynamic_label();
                dynasm!(self.asm ; .arch x64 ; jmp =>done ; =>skip ; mov rax, r11 ; =>done);
            }
        }
        // Every caller-saved register is clobbered: values living on are in slots or
        // callee-saved registers now.
        if CHECK {
            for r in CALLER_SAVED_GPR.into_iter().chain((0..16).map(|i| XMM0 + i)) {
                self.record(Event::Clobber { reg: r });
            }
        }
        let mut regs = self.occupied & CALL_CLOBBERED;
        while regs != 0 {
            let r = regs.trailing_zeros() as Reg;
            regs &= regs - 1;
            self.release(r);
        }
        match result {
            Kind::Int | Kind::Ref => self.def(RAX),
            Kind::Float => self.def(XMM0),
            Kind::Void => {}
        }
        Ok(())
    }
}

/// A call argument.
#[derive(Copy, Clone, Debug)]
enum ArgSrc {
    /// The runtime context pointer (frame word 0).
    Ctx,
    /// A fixed location of the given kind.
    Loc(Loc, Kind),
    /// A trace value (its location is looked up when the arguments are moved).
    Value(Value),
}

/// The displacement of a jump whose instruction ends at code offset `end` to offset `to`.
#[inline]
fn rel32(end: usize, to: usize) -> R<i32> {
    i32::try_from(to as i64 - end as i64).map_err(|_| internal("jump out of 32-bit range".into()))
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

#[cfg(test)]
mod liveness_tests {
    use super::*;
    use trace_ir::random::{random_trace, RandomConfig};

    /// `first_free` over `pool_runs` finds what a scan of the pool in order finds, for every
    /// pool size the options allow and random sets of free registers.
    #[test]
    fn first_free_is_the_first_free_register_in_pool_order() {
        let mut rng = trace_ir::rng::Rng::new(7);
        for (ni, nf) in (0..16).flat_map(|i| (0..17).map(move |f| (i, f))) {
            let opts = CompileOptions {
                int_regs: ni,
                float_regs: nf,
                ..CompileOptions::default()
            };
            let (gprs, xmms) = pools(&opts);
            for pool in [&gprs, &xmms] {
                let runs = pool_runs(pool);
                for k in 0..200 {
                    // Sparse and dense free sets.
                    let bits = rng.next_u64() as u32;
                    let free = if k % 2 == 0 {
                        bits
                    } else {
                        bits & (rng.next_u64() as u32) & (rng.next_u64() as u32)
                    };
                    let want = pool.iter().copied().find(|&r| free & (1 << r) != 0);
                    assert_eq!(first_free(&runs, free), want, "pool {pool:?}, free {free:#x}");
                }
            }
        }
    }

    /// The liveness tables (`last_use`, `next_use` as `end_op` moves it on, `reads`) agree
    /// with a direct scan of the trace, also when the per-thread buffers are reused by
    /// traces of different sizes.
    #[test]
    fn liveness_tables_match_a_direct_scan() {
        let opts = CompileOptions::default();
        for seed in 0..300u64 {
            let cfg = RandomConfig {
                length: [5, 60, 300][seed as usize % 3],
                ..RandomConfig::default()
            };
            let (t, _) = random_trace(&cfg, seed);
            let mut g = Gen::new(&t, &opts).unwrap();
            let n = t.ops.len();
            // Direct scan: the positions reading each value, ascending, without repeats.
            let mut want: Vec<Vec<u32>> = vec![Vec::new(); n];
            for (i, op) in t.ops.iter().enumerate() {
                values_read(&t, op, &mut |v| {
                    if let Some(o) = v.as_op() {
                        if want[o.index()].last() != Some(&(i as u32)) {
                            want[o.index()].push(i as u32);
                        }
                    }
                });
            }
            for (v, w) in want.iter().enumerate() {
                assert_eq!(g.last_use[v], w.last().copied().unwrap_or(0), "seed {seed}: op{v}");
            }
            // Walking forward as code generation does: before each op, every value's next
            // use is its first use not before the op; the values whose reads say "never
            // again" are those whose last use is the op.
            for p in 0..n {
                g.pos = p;
                for (v, w) in want.iter().enumerate() {
                    let first = w.iter().copied().find(|&u| u as usize >= p).unwrap_or(NEVER);
                    assert_eq!(g.next_use[v], first, "seed {seed}: next use of op{v} at {p}");
                }
                let read = &g.reads[g.reads_start[p] as usize..g.reads_start[p + 1] as usize];
                let mut dying: Vec<u32> = read
                    .iter()
                    .filter(|&&(v, next)| (v as usize) < n && next == NEVER)
                    .map(|&(v, _)| v)
                    .collect();
                dying.sort_unstable();
                dying.dedup();
                let expect: Vec<u32> = (0..n as u32)
                    .filter(|&v| want[v as usize].last() == Some(&(p as u32)))
                    .collect();
                assert_eq!(dying, expect, "seed {seed}: values dying at op{p}");
                g.end_op();
            }
            drop(g);
            // Leave this trace's buffers (with stale contents) to the next, differently
            // sized trace.
            crate::compile(&t, &opts).unwrap();
        }
    }
}

#[cfg(all(test, feature = "disasm"))]
mod encoding_tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
    use trace_ir::random::{random_trace, RandomConfig};

    /// The instructions in `bytes`, as Intel syntax text.
    fn decode(bytes: &[u8]) -> Vec<String> {
        let mut dec = Decoder::new(64, bytes, DecoderOptions::NONE);
        let mut fmt = IntelFormatter::new();
        let mut out = Vec::new();
        while dec.can_decode() {
            let ins = dec.decode();
            assert!(!ins.is_invalid(), "undecodable bytes {bytes:02x?}");
            let mut text = String::new();
            fmt.format(&ins, &mut text);
            out.push(text);
        }
        out
    }

    /// The hand-encoded register moves are the bytes dynasm assembles for them, and the
    /// constant loads decode to the instructions it assembles (one byte shorter for
    /// `mov r32, imm32` into the first eight registers), for every pair of general-purpose
    /// registers and constants at every boundary of the three forms.
    #[test]
    fn hand_encoded_register_moves_are_dynasm_bytes() {
        let (t, _) = random_trace(&RandomConfig::default(), 1);
        let mut g = Gen::new(&t, &CompileOptions::default()).unwrap();
        for d in 0..16u8 {
            for s in 0..16u8 {
                g.mov_gpr(d, s);
                let hand = g.asm.take();
                dynasm!(g.asm ; .arch x64 ; mov Rq(d), Rq(s));
                assert_eq!(hand, g.asm.take(), "mov {d}, {s}");
            }
            let imms = [
                0u64,
                1,
                0x7f,
                0x80,
                0x7fff_ffff,
                0x8000_0000,
                u32::MAX as u64,
                1 << 32,
                -1i64 as u64,
                i32::MIN as i64 as u64,
                i32::MIN as i64 as u64 - 1,
                0x1234_5678_9abc_def0,
                u64::MAX - 0x8000_0000,
            ];
            for v in imms {
                g.mov_gpr_imm(d, v);
                let hand = g.asm.take();
                if v <= u32::MAX as u64 {
                    dynasm!(g.asm ; .arch x64 ; mov Rd(d), v as u32 as i32);
                } else if fits_i32(v as i64) {
                    dynasm!(g.asm ; .arch x64 ; mov Rq(d), v as i64 as i32);
                } else {
                    dynasm!(g.asm ; .arch x64 ; mov Rq(d), QWORD v as i64);
                }
                let reference = g.asm.take();
                // dynasm puts a REX prefix on every `mov r32, imm32` with a register chosen at
                // run time; the hand encoding only when the register needs one (r8d-r15d).
                let (h, r) = (decode(&hand), decode(&reference));
                assert_eq!(h.len(), 1, "{hand:02x?}");
                assert_eq!(h, r, "mov {d}, {v:#x}: {hand:02x?} vs {reference:02x?}");
                assert_eq!(hand.len() + usize::from(v <= u32::MAX as u64 && d < 8), reference.len());
            }
        }
    }

    /// The hand-encoded frame loads and stores decode to the instructions dynasm assembles
    /// for them, for every register and displacements on both sides of the 8-bit form.
    #[test]
    fn hand_encoded_frame_moves_decode_as_dynasm_assembles_them() {
        let (t, _) = random_trace(&RandomConfig::default(), 1);
        let mut g = Gen::new(&t, &CompileOptions::default()).unwrap();
        for r in (0..32u8).filter(|&r| r != 4 && r != 5 && r != 11) {
            for m in [0, 8, -8, 120, 127, -128, 128, -129, 4096, 1 << 20, -(1 << 20)] {
                let _ = g.asm.take();
                g.load_frame(r, m);
                g.store_frame(m, r);
                let hand = g.asm.take();
                match (is_xmm(r), i8::try_from(m)) {
                    (true, Ok(b)) => dynasm!(g.asm ; .arch x64
                        ; movsd Rx(x(r)), QWORD [BYTE rbp + b] ; movsd QWORD [BYTE rbp + b], Rx(x(r))),
                    (true, Err(_)) => dynasm!(g.asm ; .arch x64
                        ; movsd Rx(x(r)), QWORD [rbp + m] ; movsd QWORD [rbp + m], Rx(x(r))),
                    (false, Ok(b)) => dynasm!(g.asm ; .arch x64
                        ; mov Rq(r), QWORD [BYTE rbp + b] ; mov QWORD [BYTE rbp + b], Rq(r)),
                    (false, Err(_)) => dynasm!(g.asm ; .arch x64
                        ; mov Rq(r), QWORD [rbp + m] ; mov QWORD [rbp + m], Rq(r)),
                }
                let reference = g.asm.take();
                let (h, d) = (decode(&hand), decode(&reference));
                assert_eq!(h.len(), 2, "{hand:02x?}");
                assert_eq!(h, d, "register {r}, displacement {m}: {hand:02x?} vs {reference:02x?}");
                assert!(hand.len() <= reference.len());
            }
        }
    }
}
