//! Code generation: one forward pass over the trace that allocates registers and selects
//! instructions op by op, then the epilogue and the exit stubs.
//!
//! [`Gen`] holds the trace, the position of the op being compiled, and one room per
//! concern, each owning its state:
//!
//! | concern | state | module |
//! |---|---|---|
//! | registers | `Reg`, `RegSet`, the allocatable pools | [`regs`] |
//! | liveness | last and next uses of every value (`Liveness`) | [`liveness`] |
//! | register allocation | `Allocator`: registers, pins, spill slots; the design | [`regalloc`] |
//! | operands | how instruction selection asks the allocator for operands and results | [`operands`] |
//! | frame | `FrameLayout`, prologue, epilogue | [`frame`] |
//! | emission | `Emitter`: the code, the checker's events, every hand-encoded instruction | [`emit`] |
//! | moves | one move of any kind, `ParallelMoves` | [`moves`] |
//! | exits | `Exits`: exit codes, guard and invalid-operation stubs | [`exits`] |
//! | loops | `Loops`: labels, the back edge, loop rotation | [`loops`] |
//! | fusion | `Fusion`: what an op leaves in the flags for the next one | [`fusion`] |
//! | instruction selection | per op family: integer, float, guards, heap (`HeapFacts`), calls (`Calls`), Hooks mode (`HookState`) | [`select`] |
//!
//! For each op the driver ([`Gen::generate`]) hands the op the fusion the previous op
//! returned; the op's selection loads its operands through the allocator, emits its code
//! and returns its own fusion; then `Allocator::end_op` releases the registers of the values
//! that died. The context ([`crate::Compiler`]) hands the rooms' buffers ([`Rooms`]) from one
//! compilation to the next.

// dynasm's expansion converts dynamic register numbers with `.into()`: from a `Reg` for
// general-purpose registers, a no-op from the `u8` of an XMM register's number.
#![allow(clippy::useless_conversion)]

mod emit;
mod exits;
mod frame;
mod fusion;
mod liveness;
mod loops;
mod moves;
mod operands;
mod regalloc;
mod regs;
mod select;

use emit::{Emitter, CHECK};
use exits::Exits;
use frame::FrameLayout;
use fusion::Fusion;
use liveness::Liveness;
use loops::Loops;
use moves::ParallelMoves;
use regalloc::Allocator;
use select::{hooks, Calls, HeapFacts};

pub(crate) use exits::{GuardTail, WordFact, PATCH_LEN};
pub(crate) use frame::{Unwind, FRAME_HEADER};
pub(crate) use loops::{LabelExport, TreeLabel};

use crate::asm::CodeBuf;
use crate::checker::Event;
use crate::pmove::Loc;
use crate::runtime::{self, ArrayLayout};
use crate::{CompileError, CompileOptions, ExitInfo, ExitSlot};
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};
use std::sync::atomic::AtomicU64;
use trace_ir::{Opcode, Trace};

/// The result of code generation, before it is copied into executable memory.
pub(crate) struct Generated {
    /// The machine code.
    pub code: Vec<u8>,
    /// What each exit code means.
    pub exits: Vec<ExitInfo>,
    /// The fail-argument slots of the guard exits (see `ExitInfo::Guard::fail`).
    pub exit_slots: Vec<ExitSlot>,
    /// The virtual objects of the guard exits (see `ExitInfo::Guard::virtuals`).
    pub virtuals: Vec<crate::VirtualLayout>,
    /// The fields of the virtual objects (see `VirtualLayout::fields`).
    pub virtual_fields: Vec<crate::FieldWrite>,
    /// The writes of the guard exits (see `ExitInfo::Guard::writes`).
    pub exit_writes: Vec<crate::ExitWrite>,
    /// The kinds of each exit's values.
    pub exit_kinds: crate::exit::ExitKinds,
    /// The frame's size in words.
    pub frame_words: usize,
    /// Words in the frame's exit buffer.
    pub exit_len: usize,
    /// Code range of each op (op index, start, end), for the disassembly listing.
    pub ranges: Vec<(u32, u32, u32)>,
    /// Boxed: the code embeds their addresses, which must not move when the vector grows.
    #[allow(clippy::vec_box)]
    pub array_layouts: Vec<Box<ArrayLayout>>,
    /// Ops handed to the runtime, boxed for the same reason.
    #[allow(clippy::vec_box)]
    pub hook_ops: Vec<Box<runtime::HookOp>>,
    /// The guard failure counters (by guard index), which the exit stubs increment.
    pub counters: Box<[AtomicU64]>,
    /// The patch point of each guard's stub, by guard index (`tail == u32::MAX`: the
    /// guard has no stub, it never fails natively).
    pub tails: Vec<GuardTail>,
    /// The labels with a `TargetToken`, which bridges may enter.
    pub labels: Vec<LabelExport>,
    /// The exit words of the guards (see `GuardTail::words`).
    pub word_facts: Vec<WordFact>,
    /// The jumps to guard stubs a bridge may take over (see `GuardTail::jumps`).
    pub guard_jumps: Vec<u32>,
    /// A bridge's jumps into labels of its tree: code offset, label address.
    pub tree_jumps: Vec<(u32, u64)>,
    /// How to unwind the code (see `frame`): the steps, by code offset (empty unless
    /// `CompileOptions::gdb_jit`).
    pub unwind: Vec<(u32, Unwind)>,
}

/// How a bridge joins the tree it is compiled into.
pub(crate) struct BridgeEnv<'e> {
    /// What native code knew of each input at the guard the bridge leaves from, and where
    /// the input is when the bridge starts (the guard's exit words).
    pub entry: Vec<WordFact>,
    /// The first frame word the bridge may use.
    pub exit_at: usize,
    /// The bridge's first exit code.
    pub code_base: u32,
    /// Its number in the tree: `k` for the `k`-th bridge attached.
    pub piece: usize,
    /// The tree's labels a bridge may jump to, by `TargetToken`.
    pub labels: &'e trace_ir::fxhash::FxHashMap<u64, TreeLabel>,
}

/// The code generator of one trace: the trace, the op being compiled, and the rooms of the
/// concerns (each owns its state; see the module documentation).
pub(crate) struct Gen<'t> {
    /// The trace being compiled.
    t: &'t Trace,
    /// The op being compiled.
    pos: usize,
    /// The code and the checker's events.
    em: Emitter,
    /// The rooms whose buffers outlive one compilation: liveness, allocator, parallel
    /// moves, exits, heap facts, calls.
    r: Rooms,
    /// Where the frame's words are.
    frame: FrameLayout,
    /// The epilogue every exit returns through.
    epilogue: DynamicLabel,
    /// Labels, the back edge, loop rotation.
    loops: Loops,
    /// Ops handed to the runtime (see the `hooks` module).
    hk: hooks::HookState,
    /// Code range of each op: (op index, start, end).
    ranges: Vec<(u32, u32, u32)>,
    /// The guard failure counters the stubs increment.
    counters: Box<[AtomicU64]>,
    /// When compiling a bridge: how it joins its tree.
    bridge: Option<BridgeEnv<'t>>,
}

/// Results inside code generation: the error boxed, so a result fits in registers (most
/// helpers return `R<()>` or `R<Loc>`; a 32-byte `CompileError` would go through memory at
/// every call).
type R<T> = Result<T, Box<CompileError>>;

/// The rooms whose buffers one compilation hands to the next through a [`crate::Compiler`]
/// (cleared, capacity kept): compiling then allocates little beyond its output, and the heap
/// does not shrink and grow again around every trace. A context keeps the buffers of the
/// largest trace it compiled (about 150 bytes per op). A compilation that fails leaves
/// fresh, empty buffers behind.
#[derive(Default)]
pub(crate) struct Rooms {
    /// Last and next uses of every value.
    live: Liveness,
    /// Registers, pins and spill slots.
    ra: Allocator,
    /// Stubs and their words: guard exits, invalid-operation exits.
    exits: Exits,
    /// The working memory of parallel moves.
    pm: ParallelMoves,
    /// What is known about memory (non-null values, in-bounds accesses).
    heap: HeapFacts,
    /// Call working memory and the data allocations point to.
    calls: Calls,
    /// The checker's events (held by the emitter while compiling).
    events: Vec<Event>,
    /// The assembler's label tables (held by the emitter while compiling).
    asm: CodeBuf,
    /// The code buffer: handed out with the generated code, given back by the context once
    /// the code is copied into executable memory ([`Rooms::give_back_code`]).
    code: Vec<u8>,
}

impl Rooms {
    /// Keep `code`'s buffer (its bytes copied into executable memory) for the next trace.
    pub(crate) fn give_back_code(&mut self, code: Vec<u8>) {
        self.code = code;
    }
}

impl<'t> Gen<'t> {
    /// A code generator for `t` (its liveness computed), with the buffers of `sc` (what the
    /// context's previous compilation left).
    pub(crate) fn new(t: &'t Trace, opts: &CompileOptions, mut sc: Rooms, bridge: Option<BridgeEnv<'t>>) -> R<Gen<'t>> {
        let n = t.ops.len();
        let frame = FrameLayout {
            exit_at: bridge.as_ref().map_or(FRAME_HEADER, |b| b.exit_at),
            exit_len: sc.live.compute(t),
        };
        sc.ra.reset(opts, n, frame);
        let nguards = t.guards.len();
        sc.exits.reset();
        let counters: Box<[AtomicU64]> = (0..nguards).map(|_| AtomicU64::new(0)).collect();
        sc.exits.counters = counters.as_ptr() as u64;
        sc.exits.code_base = bridge.as_ref().map_or(0, |b| b.code_base);
        sc.exits.tails.resize(
            nguards,
            GuardTail {
                exit: u32::MAX,
                tail: u32::MAX,
                words: (0, 0),
                jumps: (0, 0),
            },
        );
        sc.heap.reset(n);
        sc.calls.array_layouts = Vec::new();
        // The code takes about 35 bytes per op on average, stubs included: room for 40 (the
        // buffer is the context's, so it only grows for a larger trace than any before).
        let mut asm = std::mem::take(&mut sc.asm);
        asm.reset(std::mem::take(&mut sc.code), 64 + 40 * n);
        let epilogue = asm.new_dynamic_label();
        Ok(Gen {
            t,
            pos: 0,
            em: Emitter::new(asm, std::mem::take(&mut sc.events)).with_unwind(opts.gdb_jit),
            r: sc,
            frame,
            epilogue,
            loops: Loops::default(),
            hk: hooks::HookState::new(t, opts),
            ranges: Vec::with_capacity(n),
            counters,
            bridge,
        })
    }

    /// The start of the code: a root trace saves the callee-saved registers and takes its
    /// frame, its inputs in their slots; a bridge, entered at a guard's stub inside the
    /// tree's code (registers saved, frame in `rbp`), starts with its inputs where the guard
    /// left them (see [`Gen::bridge_inputs`]) and knows what native code knew of them there.
    /// Returns where the inputs are.
    fn entry(&mut self) -> Vec<Loc> {
        if self.bridge.is_none() {
            self.em.prologue();
            return (0..self.t.num_inputs)
                .map(|i| Loc::Mem(self.frame.slot_disp(self.r.ra.give_slot(i, true))))
                .collect();
        }
        self.em.body_unwind_state();
        let homes = self.bridge_inputs();
        // The checker starts from the inputs where the entry left them.
        self.em.forget_events();
        homes
    }

    /// A bridge's inputs: each stays where the guard left it (a register of the bridge's
    /// pools, or a frame word the bridge adopts as its slot) unless that cannot be its home
    /// (a constant, a register held by an earlier input or outside the pools, a frame word
    /// when the bridge may jump back to its own start and so write its inputs' homes), which
    /// moves it into a slot of its own.
    fn bridge_inputs(&mut self) -> Vec<Loc> {
        let t = self.t;
        let env = self.bridge.as_ref().expect("a bridge");
        let loops_to_start = t.ops.iter().enumerate().any(|(i, op)| {
            op.opcode == Opcode::Jump
                && matches!(
                    trace_ir::jump_target(t, trace_ir::OpRef::new(i)),
                    trace_ir::JumpTarget::Start
                )
        });
        let mut homes = Vec::with_capacity(env.entry.len());
        let mut moves = Vec::new();
        for (i, f) in env.entry.iter().enumerate() {
            let home = match f.at {
                Loc::Reg(r) => {
                    let reg = regs::Reg::new(r);
                    let pool = if reg.is_xmm() {
                        self.r.ra.xmm_order()
                    } else {
                        self.r.ra.gpr_order()
                    };
                    (pool.contains(&reg) && self.r.ra.is_free(reg)).then(|| {
                        // An input nothing reads leaves its register free.
                        if self.r.live.used_from(i, t.num_inputs) {
                            self.r.ra.set_owner(reg, i);
                        }
                        f.at
                    })
                }
                Loc::Mem(d) if !loops_to_start => {
                    self.r.ra.adopt_word(i, (d / 8) as usize);
                    Some(f.at)
                }
                _ => None,
            };
            let home = home.unwrap_or_else(|| {
                let own = Loc::Mem(self.frame.slot_disp(self.r.ra.give_slot(i, true)));
                // An input nothing reads needs no value in its slot.
                if loops_to_start || self.r.live.used_from(i, t.num_inputs) {
                    moves.push((own, f.at));
                }
                own
            });
            homes.push(home);
            if f.nonnull {
                self.r.heap.make_nonnull(trace_ir::Value::op(trace_ir::OpRef::new(i)));
            }
        }
        self.r.pm.emit(&mut self.em, &moves);
        homes
    }

    /// Compile the trace: the prologue, every op in order, the epilogue, the exit stubs.
    /// Returns the code and the rooms, for the context's next compilation.
    pub(crate) fn generate(mut self) -> R<(Generated, Rooms)> {
        let t = self.t;
        let inputs = self.entry();
        let start = self.em.asm.new_dynamic_label();
        dynasm!(self.em.asm ; .arch x64 ; =>start);
        self.loops.set_start(start, inputs.clone());

        let mut i = t.num_inputs;
        // What the previous op left in the flags for the current one.
        let mut fusion = Fusion::None;
        while i < t.ops.len() {
            self.pos = i;
            let begin = self.em.asm.offset().0;
            let op = &t.ops[i];
            if op.opcode == Opcode::Label {
                self.label(i)?;
                fusion = Fusion::None;
                i += 1 + op.args.len();
            } else {
                fusion = self.op(i, fusion)?;
                i += 1;
            }
            self.r.ra.end_op(&mut self.r.live, self.pos);
            self.ranges
                .push((self.pos as u32, begin as u32, self.em.asm.offset().0 as u32));
        }

        // The epilogue, then the exit stubs: each jumps back to it, a displacement known
        // when the jump is emitted (no label, no relocation to resolve at the end).
        let e = self.epilogue;
        let e_off = self.em.asm.offset().0;
        dynasm!(self.em.asm ; .arch x64 ; =>e);
        self.em.epilogue();
        self.r.exits.place_stubs(&mut self.em, self.frame, e_off)?;
        if CHECK {
            let inputs: Vec<(Loc, u32)> = inputs.iter().enumerate().map(|(i, &l)| (l, i as u32)).collect();
            crate::checker::check(&self.em.events(), &inputs)
                .map_err(|e| internal(format!("register allocation checker: {e}")))?;
        }
        let (mut asm, events, unwind) = self.em.finish();
        let mut code = asm.take_code().map_err(|e| internal(format!("assembler: {e}")))?;
        self.r.asm = asm;
        self.r.exits.patch_stub_jumps(&mut code)?;
        let crate::ExitTables {
            exits,
            slots: exit_slots,
            virtuals,
            virtual_fields,
            writes: exit_writes,
            kinds: exit_kinds,
        } = self.r.exits.output();
        let array_layouts = std::mem::take(&mut self.r.calls.array_layouts);
        let frame_words = self.frame.words(self.r.ra.nslots());
        self.r.events = events;
        let generated = Generated {
            code,
            exits,
            exit_slots,
            virtuals,
            virtual_fields,
            exit_writes,
            exit_kinds,
            frame_words,
            exit_len: self.frame.exit_len,
            ranges: self.ranges,
            array_layouts,
            hook_ops: self.hk.ops,
            counters: self.counters,
            tails: std::mem::take(&mut self.r.exits.tails),
            word_facts: self.r.exits.word_facts.clone(),
            guard_jumps: self.r.exits.guard_jumps.clone(),
            tree_jumps: std::mem::take(&mut self.loops.tree_jumps),
            labels: std::mem::take(&mut self.loops.exported),
            unwind,
        };
        Ok((generated, self.r))
    }
}

/// The kind of `v` (`Trace::kind_of`, inlined: code generation asks it of every operand
/// and exit value).
#[inline]
fn kind_of(t: &Trace, v: trace_ir::Value) -> trace_ir::Kind {
    match v.data() {
        trace_ir::ValueData::Op(o) => t.ops[o.index()].opcode.result_kind(),
        trace_ir::ValueData::Const(c) => t.consts.get(c).kind(),
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
