//! The x86-64 backend of tracejit: compiles a [`Trace`] to native code with `dynasm`
//! (register allocation, instruction selection, guard exits, loops, calls, heap access) and
//! runs it.
//!
//! ```
//! use backend_x86_64::{compile, CompileOptions, Exit, ExitValue, SimpleHeap};
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! // sum = 0; i = 0; while i < n { sum += i; i += 1 }
//! let mut b = TraceBuilder::new();
//! let (i, n, s) = (b.input(Kind::Int), b.input(Kind::Int), b.input(Kind::Int));
//! let p = b.label(&[i, n, s]);
//! let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
//! b.guard(Opcode::GuardTrue, &[lt], &[p[2]], 0);
//! let s2 = b.op(Opcode::IntAdd, &[p[2], p[0]]);
//! let one = b.const_int(1);
//! let i2 = b.op(Opcode::IntAdd, &[p[0], one]);
//! b.jump(&[i2, p[1], s2]);
//! let trace = b.build().unwrap();
//! let code = compile(&trace, &CompileOptions::default()).unwrap();
//! // SAFETY: the trace reads no memory and calls nothing, so any inputs are valid.
//! let exit = unsafe { code.run(&[0, 10, 0], &mut SimpleHeap::new()) }.unwrap();
//! match exit {
//!     Exit::Guard { values, .. } => assert_eq!(values, vec![ExitValue::Int(45)]),
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! # Semantics at the edges
//! - Partial operations never trap: a shift amount outside `0..64`, a zero divisor, an
//!   `int_signext` width outside {1, 2, 4, 8}, a `new_array` length outside
//!   `0..=2^24`, an allocation larger than the memory model's limit
//!   ([`trace_ir::descr::MAX_ALLOC_BYTES`]) or a failed allocation end the run with
//!   [`Exit::Invalid`] naming the op (the reference interpreter's "invalid operation"
//!   outcome; a [`Runtime`] may refuse smaller allocations too). `MININT / -1` wraps to
//!   `MININT` with remainder 0.
//! - The memory model (`docs/memory-model.md`) is the interpreter's: native code reads and
//!   writes bytes, so byte views of one object alias as [`trace_ir::Aliasing::Bytes`] says;
//!   the promises of [`trace_ir::Aliasing::TypeBased`] and of hints are the trace's to keep
//!   (native code does not check them).
//! - A loop that never leaves runs forever, like the embedder's own loop would: there is no
//!   iteration limit in native code.
//! - `guard_not_invalidated`, `guard_not_forced`, `guard_not_forced_2` and
//!   `guard_future_condition` never fail in Direct mode (nothing invalidates or forces
//!   compiled code); in Hooks mode `guard_not_invalidated` asks the runtime. Hints
//!   (`keepalive`, `record_*`, ...) emit nothing; `force_token` is the interpreter's fixed
//!   token; `virtual_ref` and `virtual_ref_finish` make and write a `JitVirtualRef`
//!   ([`trace_ir::abi::VirtualRefLayout`]): no call forces a reference, so the object it
//!   stands for is never rebuilt by a callee.
//! - Exceptions (interpreter semantics: `save_exc_class` reads the pending class, 0 if none;
//!   `save_exception` reads the pending value, null if none, and clears it;
//!   `restore_exception(cls, v)` sets it, clears it when both are 0; `guard_exception(cls)`
//!   holds when `cls` is pending, returns the value and clears it; `guard_no_exception`
//!   holds when nothing is pending). Direct mode keeps the state per run in the backend
//!   (calls made natively cannot raise, so only `restore_exception` sets it; without any
//!   exception-setting op in the trace `guard_no_exception` emits nothing); Hooks mode asks
//!   the runtime, whose calls may raise.
//! - `cond_call(c, f, args...)` calls `f` when `c` is non-zero (the opcode table's
//!   definition); `cond_call_value_*(v, f, args...)` is `v` when non-zero, else the call's
//!   result.
//! - `guard_class`, `guard_nonnull_class` and `guard_subclass` compare the class word at
//!   offset 0 with the constant (no class hierarchy, as in the interpreter); a class check
//!   on null (other than `guard_nonnull_class`'s) is an invalid operation.
//! - Heap accesses check for null (and `*_gc` array accesses check the index against the
//!   length word) and report an invalid operation, as the interpreter does. Interior fields
//!   (arrays of structs) use the default array layout: length word at offset 8, item `i` at
//!   `16 + i * item_size`, the field at its offset inside the item.
//!
//! # Code space
//! Compiled code lives in a process-wide code space: regions of 4 MiB (a larger trace gets
//! a region of its own), each a memory file mapped twice, read+execute where code runs and
//! read+write elsewhere for copying code in and patching it, so no page is ever writable
//! and executable and compiling makes no system call once a region exists. Each trace takes
//! a 64-byte aligned block (at most 63 bytes of padding; nothing else is kept per trace);
//! a dropped trace's block is coalesced with its free neighbours and reused, a bridge is
//! placed in its loop's region when there is room, and one empty region is kept while the
//! others are unmapped. An inaccessible guard page follows each region's executable view.
//! [`code_space_usage`] reports the regions and bytes in use.
//!
//! # Trace trees
//! Each guard's exit stub counts the guard's exits ([`CompiledTrace::guard_failures`]: one
//! memory increment per exit, for the embedder's "is this guard hot" decision).
//! [`CompiledTrace::attach_bridge`] (or [`Compiler::attach_bridge`]) compiles a bridge, a
//! trace whose inputs are the guard's exit words (`trace_ir::tree`), into the same tree and
//! patches the guard's stub to jump to it (the bridge takes the exit words from the
//! registers and frame words the guard left them in); its `jump` to a `TargetToken` of the tree enters
//! that label with the label's own register and frame locations, and its guards can get
//! bridges in turn. The tree runs in one frame and is freed as one. The design is in the
//! `tree` module; the bridges that are refused (with [`CompileError::Bridge`]) are listed
//! at [`Compiler::attach_bridge`].
//!
//! # Ops served by the runtime
//! In [`MemoryAccess::Hooks`] mode every op that reads or writes memory, allocates, calls
//! (`call_*`, `call_pure_*`, `call_loopinvariant_*`, `call_may_force_*`,
//! `call_assembler_*`, `cond_call*`), touches the exception state, or checks a class or type
//! is a call to [`Runtime::exec`] (calling sequence in the `hooks` module), and a failing
//! guard gets its fail arguments from [`Runtime::guard_exit`]. In Direct mode the ops with no
//! inline code go the same way: string and unicode ops (`newstr`, `strlen`, `strgetitem`,
//! `strsetitem`, `strhash`, `copystrcontent` and the `unicode` ones), `guard_gc_type`,
//! `guard_is_object`, `call_assembler_*`, and a `gc_load*`/`gc_store*` whose scale, base or
//! size is not a constant (or whose size is not one the op can have). The default [`Runtime::exec`]
//! ([`exec_in_memory`]) serves them on real memory with documented layouts (strings: length
//! word at 8, characters from 16; the GC type is the class word), and answers
//! [`HookReply::Invalid`] for calls and `call_assembler` (the embedder knows its loops:
//! it overrides `exec`).
//!
//! Every op of the opcode table compiles in both modes. In Direct mode calls follow the
//! System V ABI for any number of arguments (the first 6 integer/pointer and 8 float
//! arguments in registers, the rest pushed on the stack right to left, 8 bytes each, `rsp`
//! 16-byte aligned at the call, popped by the caller), and field, array and interior offsets
//! that do not fit a 32-bit displacement are added to the base in a scratch register
//! (address arithmetic wraps, like the interpreter's raw accesses).
//!
//! # Instruction selection
//! Beyond one instruction per op, the code generator picks these forms (each has a per-op
//! test against the interpreter):
//! - a comparison whose boolean only feeds the next `guard_true`/`guard_false` is a `cmp`
//!   fused with the guard's branch; an `int_and` only tested for zero (by the guard itself,
//!   or through `int_is_true`, `int_is_zero`, `int_ne(_, 0)`, `int_eq(_, 0)`) is a `test`
//!   (`test r8, imm8` for masks up to 0xff) fused the same way;
//! - `int_and` with 0xff, 0xffff, 0xffffffff is a zero-extending `movzx`/`mov r32, r32`
//!   into any register (no copy of the operand);
//! - multiplication by a constant is `imul d, x, imm8/imm32`; `add`/`sub` of a constant and
//!   `add` of two registers into a different register are `lea`; a commutative op overwrites
//!   whichever operand dies;
//! - `_ovf` ops are fused with their overflow guard (`jo`/`jno`); an `int_add_ovf`/
//!   `int_sub_ovf` may overwrite an operand that only that guard's exit still reports: the
//!   exit stub recomputes it from the result (wrapping), so the hot path has no copy;
//! - a result whose last use is the loop's `jump` is computed in the register the jump
//!   moves it to, when that register is free (the jump then moves nothing);
//! - loop rotation: when the loop body starts with such a fused comparison of the label's
//!   parameters and constants, the `jump` repeats the `cmp` and branches back past the guard
//!   (one branch per iteration instead of two).
//!
//! # What the embedder guarantees
//! [`CompiledTrace::run`] is `unsafe`; its `# Safety` section is the contract, and this is
//! its summary. [`compile`] checks everything it can first: the trace passes
//! `trace_ir::verify` and the options are in range. In Direct mode native code works on
//! real memory: a reference input, a pointer constant or
//! an integer used as a raw address must point to memory laid out as the trace's
//! descriptors say, and a called function address must be a `sysv64` function of the
//! descriptor's signature. Objects allocated by the trace come from the [`Runtime`]. In
//! Hooks mode native code never dereferences a trace value nor calls a trace function: the
//! runtime decides what every access and call means, so traces that name another process's
//! memory (PyPy logs) run safely against a model such as `trace_interp::ModelHeap`,
//! which implements [`Runtime`] with the reference interpreter's own code (crate
//! `trace-interp`, feature `native`).
//!
//! # Debugging and profiling
//! [`CompileOptions::gdb_jit`], [`CompileOptions::jitdump`] and
//! [`CompileOptions::perf_map`] announce compiled code to GDB (a symbol, the trace's text as
//! its source, unwind information) and to `perf`, until the code is freed; the `debuginfo`
//! module implements them and `docs/debugging.md` describes their use.
//!
//! # Testing
//! Every op is compared with `trace_ir::eval::eval_pure` on special and random values;
//! thousands of random traces (`trace_interp::random`: loops, overflow, floats, allocations,
//! field and array accesses, and the optimizer's output with virtual objects in resume
//! data) run natively and in the reference interpreter with the same exit, values and heap
//! contents (compared by content, since addresses differ). In Direct mode random traces get
//! integer and float inputs only (the interpreter models external objects behind reference
//! inputs without memory); in Hooks mode, with `ModelHeap` as the runtime, they also get
//! reference inputs and calls, and the whole run (exit, values, allocated objects, calls,
//! external memory, exception state) is compared with `trace_interp::outcomes_equivalent`.
//! `tests/corpus_native.rs` does the same for every trace of the PyPy dev corpus, as logged
//! and optimized (320 + 320 traces, all accepted). String, exception, `call_assembler` and
//! type-guard ops have per-op tests in both modes. Calls with stack arguments (7..12
//! integer, 9..12 float and mixed, up to 24 arguments, plain and conditional) call real
//! `extern "sysv64"` functions and are compared with the interpreter calling a model of
//! them; offsets beyond 32 bits are exercised on real buffers through base pointers
//! offset by as much. Every compilation in tests is also
//! checked by the symbolic register-allocation checker (`checker` feature). The allocator
//! and the hand-encoded instructions have unit tests of their own, and
//! `tests/asm_golden.rs` keeps the annotated disassembly of a trace per op family
//! (`tests/golden/*.txt`; needs the `disasm` feature; `BLESS=1` rewrites the listings).
//!
//! The design of the register allocator is described in the `codegen::regalloc` module, the
//! frame layout in `codegen::frame`.
#![deny(missing_docs)]

#[cfg_attr(not(any(test, feature = "checker")), allow(dead_code))]
mod asm;
mod checker;
mod codegen;
mod codemem;
mod debuginfo;
mod exit;
mod options;
pub mod pmove;
mod runtime;
mod tree;

pub use exit::{Exit, ExitValue, RunError};
pub use options::{CompileError, CompileOptions, MemoryAccess};
pub use runtime::{exec_in_memory, Allocation, ExitRequest, HookReply, HookRequest, Runtime, SimpleHeap};

use codemem::CodeMemory;

/// How much memory the process's code space holds: compiled code is packed into shared
/// regions, each mapped twice (read+execute to run, read+write to write and patch; never
/// both in one mapping), followed by a guard page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeSpaceUsage {
    /// Regions mapped.
    pub regions: usize,
    /// Bytes of code pages mapped (counted once, though each is mapped twice).
    pub mapped_bytes: usize,
    /// Bytes held by live traces and bridges, alignment included.
    pub live_bytes: usize,
}

/// The code space's current usage.
pub fn code_space_usage() -> CodeSpaceUsage {
    let (regions, mapped_bytes, live_bytes) = codemem::footprint();
    CodeSpaceUsage {
        regions,
        mapped_bytes,
        live_bytes,
    }
}
use std::fmt;
use trace_ir::{GuardId, Kind, OpRef, Trace};

/// Where a fail argument's value is when its guard's exit returns.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ExitSlot {
    /// Frame word `i`: a word of the exit buffer that the stub filled from a register, or
    /// the spill slot that held the value at the guard (slots are never
    /// reused and nothing runs between the guard's branch and the return, so the stub
    /// copies nothing for it).
    Frame(u32),
    /// A constant (its bits).
    Const(u64),
    /// The virtual object at this index of the exit's `virtuals`.
    Virtual(u32),
    /// No value.
    Hole,
}

impl ExitSlot {
    /// The word this slot names in the exit's `frame`, if it names one (not a virtual
    /// object or a hole).
    fn word(&self, frame: &[u64]) -> Option<u64> {
        match *self {
            ExitSlot::Frame(i) => Some(frame[i as usize]),
            ExitSlot::Const(bits) => Some(bits),
            ExitSlot::Virtual(_) | ExitSlot::Hole => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum VirtualInit {
    Struct { size: u64, class: u64 },
    Array { layout: runtime::ArrayLayout, len: u64 },
}

/// One field write when a virtual object is rebuilt: `(offset, size, value)`.
pub(crate) type FieldWrite = (u64, u8, ExitSlot);

/// How to rebuild one virtual object: allocation, then the writes
/// `CompiledTrace::virtual_fields[fields.0..fields.1]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VirtualLayout {
    pub init: VirtualInit,
    pub fields: (u32, u32),
}

/// A write a guard's exit performs after rebuilding its virtual objects
/// ([`trace_ir::ResumeWrite`]): `size` bytes of `value` at byte `offset` of `obj`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExitWrite {
    pub obj: ExitSlot,
    pub offset: u64,
    pub size: u8,
    pub value: ExitSlot,
}

/// What the exits of a compiled trace mean, in flat tables (one vector each for all exits,
/// instead of vectors per guard and per virtual object).
pub(crate) struct ExitTables {
    /// What each exit code means.
    pub exits: Vec<ExitInfo>,
    /// The fail-argument slots of the guard exits (see `ExitInfo::Guard::fail`).
    pub slots: Vec<ExitSlot>,
    /// The virtual objects of the guard exits (see `ExitInfo::Guard::virtuals`).
    pub virtuals: Vec<VirtualLayout>,
    /// The fields of the virtual objects (see [`VirtualLayout::fields`]).
    pub virtual_fields: Vec<FieldWrite>,
    /// The writes of the guard exits (see `ExitInfo::Guard::writes`).
    pub writes: Vec<ExitWrite>,
    /// The kinds of each exit's values.
    pub kinds: exit::ExitKinds,
}

/// What an exit code returned by native code means.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ExitInfo {
    /// `finish`: its `n` values are at frame words `at..at + n`.
    Finish {
        at: u32,
        n: usize,
    },
    /// A `jump` out of the tree: its `n` values are at frame words `at..at + n`.
    External {
        target: Option<i64>,
        at: u32,
        n: usize,
    },
    Guard {
        guard: GuardId,
        resume_key: u64,
        /// The fail arguments: `CompiledTrace::exit_slots[fail.0..fail.1]` (one vector for
        /// all guards instead of one per guard).
        fail: (u32, u32),
        /// The virtual objects of the resume data, `CompiledTrace::virtuals[virtuals.0..virtuals.1]`
        /// (`ExitSlot::Virtual(k)` names the `k`-th).
        virtuals: (u32, u32),
        /// The writes the exit performs, `CompiledTrace::exit_writes[writes.0..writes.1]`.
        writes: (u32, u32),
        /// The guard op (an exit whose write finds a null object is invalid there).
        op: OpRef,
    },
    Invalid {
        op: OpRef,
    },
}

/// A compiled trace: executable code (a block of the code space, freed on drop; see
/// [`code_space_usage`]) and what its exits mean.
///
/// It is `Send` and `Sync`: the code is immutable once compiled and every run uses its own
/// frame.
pub struct CompiledTrace {
    code: CodeMemory,
    exits: Vec<ExitInfo>,
    /// The fail-argument slots of all guard exits, back to back.
    exit_slots: Vec<ExitSlot>,
    /// The virtual objects of all guard exits, back to back.
    virtuals: Vec<VirtualLayout>,
    /// The fields of all virtual objects, back to back.
    virtual_fields: Vec<FieldWrite>,
    /// The writes of all guard exits, back to back.
    exit_writes: Vec<ExitWrite>,
    /// The kinds of each exit's values.
    exit_kinds: exit::ExitKinds,
    frame_words: usize,
    exit_len: usize,
    num_inputs: usize,
    input_kinds: Vec<Kind>,
    /// Code range of each op: (op index, start, end).
    ranges: Vec<(u32, u32, u32)>,
    /// Array layouts referenced by address from the code; must live as long as `code`.
    #[allow(clippy::vec_box)]
    _array_layouts: Vec<Box<runtime::ArrayLayout>>,
    /// Ops handed to the runtime, referenced by address from the code; must live as long as
    /// `code`.
    #[allow(clippy::vec_box)]
    _hook_ops: Vec<Box<runtime::HookOp>>,
    memory: MemoryAccess,
    /// Guard counters, the labels bridges may enter, and the bridges.
    tree: tree::Tree,
}

impl fmt::Debug for CompiledTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledTrace")
            .field("code_size", &self.code.len())
            .field("exits", &self.exits.len())
            .finish()
    }
}

/// Compile `trace` to x86-64 code with a fresh [`Compiler`] context. The trace is checked
/// with `trace_ir::verify` first ([`CompileError::BadTrace`] when it fails). An embedder that compiles many traces keeps one `Compiler`
/// instead, so that each compilation reuses the working memory of the one before.
pub fn compile(trace: &Trace, opts: &CompileOptions) -> Result<CompiledTrace, CompileError> {
    Compiler::new().compile(trace, opts)
}

/// A reusable compilation context: the code generator's working memory (liveness tables,
/// the allocator's tables, the code buffer, exit descriptions, move and call buffers),
/// cleared and reused by each compilation, so compiling allocates little beyond its output.
/// Keeps the buffers of the largest trace it compiled (about 150 bytes per op); after a
/// compilation fails it starts from empty buffers. One context compiles one trace at a
/// time; use one per thread.
#[derive(Default)]
pub struct Compiler {
    rooms: codegen::Rooms,
}

impl fmt::Debug for Compiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiler").finish_non_exhaustive()
    }
}

impl Compiler {
    /// A context with empty buffers.
    pub fn new() -> Compiler {
        Compiler::default()
    }

    /// Compile `trace` to x86-64 code (see [`compile`]), reusing this context's buffers.
    pub fn compile(&mut self, trace: &Trace, opts: &CompileOptions) -> Result<CompiledTrace, CompileError> {
        opts.check()?;
        trace_ir::verify(trace).map_err(|e| CompileError::BadTrace(e.to_string()))?;
        let rooms = std::mem::take(&mut self.rooms);
        let (g, rooms) = codegen::Gen::new(trace, opts, rooms, None)
            .and_then(codegen::Gen::generate)
            .map_err(|e| *e)?;
        self.rooms = rooms;
        finish_compile(trace, opts, g, &mut self.rooms)
    }
}

/// Copy generated code into executable memory (and its buffer back into `rooms`) and
/// describe its exits.
fn finish_compile(
    trace: &Trace,
    opts: &CompileOptions,
    mut g: codegen::Generated,
    rooms: &mut codegen::Rooms,
) -> Result<CompiledTrace, CompileError> {
    let code = CodeMemory::new(&g.code);
    rooms.give_back_code(std::mem::take(&mut g.code));
    let mut code = code.map_err(|e| CompileError::Memory(e.to_string()))?;
    if debuginfo::wanted(opts) {
        code.set_registration(debuginfo::register(
            opts,
            &debuginfo::Piece {
                trace,
                code: code.bytes(),
                ranges: &g.ranges,
                unwind: &g.unwind,
                bridge_of: None,
            },
        ));
    }
    let tree = tree::Tree::new(trace, &mut g, code.as_ptr() as u64);
    let ct = CompiledTrace {
        code,
        exit_kinds: g.exit_kinds,
        exits: g.exits,
        exit_slots: g.exit_slots,
        virtuals: g.virtuals,
        virtual_fields: g.virtual_fields,
        exit_writes: g.exit_writes,
        frame_words: g.frame_words,
        exit_len: g.exit_len,
        num_inputs: trace.num_inputs,
        input_kinds: trace.input_kinds(),
        ranges: g.ranges,
        _array_layouts: g.array_layouts,
        _hook_ops: g.hook_ops,
        memory: opts.memory,
        tree,
    };
    if opts.log_asm {
        eprint!("{}", ct.disassembly(trace));
    }
    Ok(ct)
}

impl CompiledTrace {
    /// Run the code on `inputs` (one 64-bit word per trace input: integers as two's
    /// complement, floats as IEEE bits, references as addresses) until it leaves. The
    /// runtime allocates objects for `new*` ops and for the virtual objects of a failing
    /// guard.
    ///
    /// Running is `unsafe` because native code works on the embedder's memory at addresses
    /// the library cannot check: the point of compiling is to read and write objects and
    /// call functions at full speed, without a check per access. (An API that vouched for
    /// every reference would have to route each access through the embedder, which is what
    /// [`MemoryAccess::Hooks`] does, at the cost of a call per access; the contract below is
    /// then kept by the embedder's [`Runtime`] instead.) Everything the library can check,
    /// it checks: the number of inputs ([`RunError::InputCount`]), null references, array
    /// bounds of `*_gc` accesses, shift amounts, divisors and allocation sizes
    /// ([`Exit::Invalid`]).
    ///
    /// # Safety
    /// In [`MemoryAccess::Direct`] mode (the crate documentation's "What the embedder
    /// guarantees"):
    /// - every non-null reference input, pointer constant, and integer the trace uses as a
    ///   raw address points to live memory laid out as the trace's descriptors say, for as
    ///   long as the run lasts (no other thread writes it meanwhile unless the embedder's
    ///   own synchronization makes that sound);
    /// - every function address the trace calls is an `extern "sysv64"` function with the
    ///   call descriptor's signature, safe to call with any arguments the trace passes;
    /// - the [`Runtime`] keeps the invariants listed on the trait (zeroed, aligned, live
    ///   memory from `alloc`/`alloc_array`; no unwinding out of them);
    /// - the trace's promises hold on this run (`docs/memory-model.md`: type-based aliasing
    ///   when the trace declares it, and hints such as `record_exact_class`).
    ///
    /// In [`MemoryAccess::Hooks`] mode native code never dereferences a trace value; the
    /// contract is the [`Runtime`]'s: its `exec` and `guard_exit` must be sound for the
    /// requests they get (the defaults, [`exec_in_memory`] and the backend's rebuilding of
    /// virtual objects, work on real memory and need the Direct-mode guarantees above; an
    /// embedder whose runtime interprets references itself, like
    /// `trace_interp::ModelHeap`, needs nothing more).
    pub unsafe fn run(&self, inputs: &[u64], rt: &mut dyn Runtime) -> Result<Exit, RunError> {
        if inputs.len() != self.num_inputs {
            return Err(RunError::InputCount {
                expected: self.num_inputs,
                got: inputs.len(),
            });
        }
        let mut frame = vec![0u64; self.frame_words];
        let slots = codegen::FRAME_HEADER + self.exit_len;
        frame[slots..slots + inputs.len()].copy_from_slice(inputs);
        let fp = frame.as_mut_ptr();
        let mut ctx = runtime::RtCtx {
            rt,
            frame: fp,
            exception: None,
        };
        let cp = &mut ctx as *mut runtime::RtCtx<'_> as u64;
        // SAFETY: `fp` points to the frame's first word (the frame is never empty: it has a
        // header).
        unsafe { fp.write(cp) };
        // SAFETY: the buffer holds a function generated by `codegen` with this signature; it
        // only touches the frame (sized `frame_words`, which covers every displacement it
        // uses), the runtime through `ctx`, which outlives the call, and memory the caller
        // vouches for (this function's contract).
        let code = unsafe {
            let f: extern "sysv64" fn(*mut u64) -> u64 = std::mem::transmute(self.code.as_ptr());
            f(fp)
        };
        let rt = ctx.rt;
        let code = code as usize;
        let kinds = self.exit_kinds.of(code);
        // Every word is reported: a runtime's `guard_exit` answering more words than the
        // guard has fail arguments gets its extra words back as integers.
        let typed = |words: &[u64]| -> Vec<ExitValue> {
            words
                .iter()
                .enumerate()
                .map(|(i, &w)| ExitValue::from_bits(kinds.get(i).copied().unwrap_or(Kind::Int), w))
                .collect()
        };
        Ok(match &self.exits[code] {
            ExitInfo::Finish { at, n } => Exit::Finish {
                values: typed(&frame[*at as usize..*at as usize + n]),
            },
            ExitInfo::Invalid { op } => Exit::Invalid { op: *op },
            ExitInfo::External { target, at, n } => Exit::ExternalJump {
                target: *target,
                values: typed(&frame[*at as usize..*at as usize + n]),
            },
            ExitInfo::Guard {
                guard,
                resume_key,
                fail,
                virtuals,
                writes,
                op,
            } => {
                let (fail, virtuals, writes) = (*fail, *virtuals, *writes);
                if self.memory == MemoryAccess::Hooks {
                    // The values of the `FailArg::Value` entries in order.
                    let words: Vec<u64> = self
                        .exit_entries(fail, virtuals, writes)
                        .filter_map(|s| s.word(&frame))
                        .collect();
                    let req = ExitRequest {
                        guard: *guard,
                        resume_key: *resume_key,
                        words: &words,
                    };
                    if let Some(values) = rt.guard_exit(&req) {
                        return Ok(Exit::Guard {
                            guard: *guard,
                            resume_key: *resume_key,
                            values: typed(&values),
                        });
                    }
                }
                let fail = &self.exit_slots[fail.0 as usize..fail.1 as usize];
                let virtuals = &self.virtuals[virtuals.0 as usize..virtuals.1 as usize];
                let addrs = rebuild_virtuals(virtuals, &self.virtual_fields, &frame, rt);
                for w in &self.exit_writes[writes.0 as usize..writes.1 as usize] {
                    let obj = w.obj.word(&frame).unwrap_or(0);
                    let value = match w.value {
                        ExitSlot::Virtual(k) => addrs[k as usize],
                        ExitSlot::Hole => continue,
                        ref s => s.word(&frame).unwrap_or(0),
                    };
                    if obj == 0 {
                        return Ok(Exit::Invalid { op: *op });
                    }
                    // SAFETY: the trace wrote these bytes of this object before the guard
                    // (the optimizer delayed that write into the exit), so they are
                    // writable memory of the object under the run's contract.
                    unsafe { runtime::write_mem(obj.wrapping_add(w.offset), w.size, value) }
                }
                let values = fail
                    .iter()
                    .zip(kinds)
                    .map(|(s, &k)| match *s {
                        ExitSlot::Virtual(k) => ExitValue::Ref(addrs[k as usize]),
                        ExitSlot::Hole => ExitValue::Hole,
                        ref s => ExitValue::from_bits(k, s.word(&frame).unwrap_or(0)),
                    })
                    .collect();
                Exit::Guard {
                    guard: *guard,
                    resume_key: *resume_key,
                    values,
                }
            }
        })
    }

    /// The field writes of virtual object `v` of an exit.
    fn fields_of(&self, v: &VirtualLayout) -> &[FieldWrite] {
        &self.virtual_fields[v.fields.0 as usize..v.fields.1 as usize]
    }

    /// The slots of a guard exit's entries (its `fail`, `virtuals` and `writes` ranges) in
    /// resume-data order ([`trace_ir::GuardData::for_each_entry`]): fail arguments, the fields
    /// of each virtual object, the object and value of each write.
    fn exit_entries(
        &self,
        fail: (u32, u32),
        virtuals: (u32, u32),
        writes: (u32, u32),
    ) -> impl Iterator<Item = &ExitSlot> {
        let virtuals = &self.virtuals[virtuals.0 as usize..virtuals.1 as usize];
        self.exit_slots[fail.0 as usize..fail.1 as usize]
            .iter()
            .chain(virtuals.iter().flat_map(|v| self.fields_of(v).iter().map(|f| &f.2)))
            .chain(
                self.exit_writes[writes.0 as usize..writes.1 as usize]
                    .iter()
                    .flat_map(|w| [&w.obj, &w.value]),
            )
    }

    /// The kinds of the trace inputs, in order.
    pub fn input_kinds(&self) -> &[Kind] {
        &self.input_kinds
    }

    /// The size of the machine code in bytes.
    pub fn code_size(&self) -> usize {
        self.code.len()
    }

    /// The machine code.
    pub fn code(&self) -> &[u8] {
        self.code.bytes()
    }

    /// Where each op's code is: the op and its byte range in [`CompiledTrace::code`], for
    /// every op of the trace in order (inputs and label parameters excepted; a range may be
    /// empty). The prologue comes before the first range; exit stubs and the epilogue come
    /// after the last.
    pub fn op_ranges(&self) -> impl Iterator<Item = (OpRef, std::ops::Range<usize>)> + '_ {
        self.ranges
            .iter()
            .map(|&(op, start, end)| (OpRef::new(op as usize), start as usize..end as usize))
    }

    /// The instructions in `range` of [`CompiledTrace::code`] (e.g. an op's range from
    /// [`CompiledTrace::op_ranges`]): each instruction's offset in the code and its text
    /// (Intel syntax under the `disasm` feature; without it, the range's bytes in hex as one
    /// entry).
    pub fn instructions(&self, range: std::ops::Range<usize>) -> Vec<(usize, String)> {
        instructions(&self.code.bytes()[range.clone()], range.start as u64)
            .into_iter()
            .map(|(at, text)| (at as usize, text))
            .collect()
    }

    /// A listing of the code: each op of the trace, as the printed trace shows it (the
    /// same value names, `trace_ir::print_listing`), followed by its instructions
    /// (disassembled with iced-x86 under the `disasm` feature, as hex bytes otherwise).
    pub fn disassembly(&self, trace: &Trace) -> String {
        use std::fmt::Write;
        let listing = trace_ir::print_listing(trace);
        let mut out = String::new();
        let base = self.code.as_ptr() as u64;
        let _ = writeln!(
            out,
            "; trace {} at {base:#x}, {} bytes",
            trace.info.name,
            self.code.len()
        );
        let mut last = 0;
        let emit = |out: &mut String, from: usize, to: usize| {
            if from < to {
                out.push_str(&disasm(&self.code.bytes()[from..to], base + from as u64));
            }
        };
        for &(op, start, end) in &self.ranges {
            let (op, start, end) = (op as usize, start as usize, end as usize);
            emit(&mut out, last, start);
            let line = listing.line_of(OpRef::new(op)).unwrap_or("?");
            let _ = writeln!(out, "; {line}");
            emit(&mut out, start, end);
            last = end;
        }
        let _ = writeln!(out, "; exit stubs and epilogue");
        emit(&mut out, last, self.code.len());
        out
    }
}

/// The instructions of `bytes`, which start at address `ip`: each instruction's address
/// and text (Intel syntax with the `disasm` feature; its bytes in hex without it, one
/// "instruction" per call).
fn instructions(bytes: &[u8], ip: u64) -> Vec<(u64, String)> {
    #[cfg(feature = "disasm")]
    {
        use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
        let mut out = Vec::new();
        let mut dec = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
        let mut fmt = IntelFormatter::new();
        while dec.can_decode() {
            let ins = dec.decode();
            let mut text = String::new();
            fmt.format(&ins, &mut text);
            out.push((ins.ip(), text));
        }
        out
    }
    #[cfg(not(feature = "disasm"))]
    {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if bytes.is_empty() {
            Vec::new()
        } else {
            vec![(ip, hex.join(" "))]
        }
    }
}

/// The listing lines of `bytes` at address `ip`.
fn disasm(bytes: &[u8], ip: u64) -> String {
    instructions(bytes, ip)
        .into_iter()
        .map(|(at, text)| format!("  {at:016x}  {text}\n"))
        .collect()
}

/// Allocate every virtual object of an exit, then write their fields (`fields` holds the
/// writes of all objects; values read from the exit's `frame`; so objects may refer to each
/// other, cycles included). Returns their addresses.
fn rebuild_virtuals(
    virtuals: &[VirtualLayout],
    fields: &[FieldWrite],
    frame: &[u64],
    rt: &mut dyn Runtime,
) -> Vec<u64> {
    let addrs: Vec<u64> = virtuals
        .iter()
        .map(|v| match &v.init {
            VirtualInit::Struct { size, class } => {
                let p = rt.alloc((*size).max(if *class != 0 { 8 } else { 0 }), *class);
                if p != 0 && *class != 0 {
                    // SAFETY: the runtime returned at least 8 writable, aligned bytes.
                    unsafe { (p as *mut u64).write(*class) };
                }
                p
            }
            VirtualInit::Array { layout, len } => runtime::new_array(rt, *len, layout),
        })
        .collect();
    for (v, &p) in virtuals.iter().zip(&addrs) {
        if p == 0 {
            continue;
        }
        for (offset, size, slot) in &fields[v.fields.0 as usize..v.fields.1 as usize] {
            let val = match *slot {
                ExitSlot::Virtual(k) => addrs[k as usize],
                ExitSlot::Hole => continue,
                ref s => s.word(frame).expect("a frame word or a constant"),
            };
            // SAFETY: the runtime allocated the object with the size its descriptor gives and
            // the trace's descriptors place every field inside it.
            unsafe { runtime::write_mem(p + offset, *size, val) }
        }
    }
    addrs
}
