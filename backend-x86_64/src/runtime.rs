//! The embedder's side of native execution: the [`Runtime`] trait (object allocation and,
//! in [`crate::MemoryAccess::Hooks`] mode, every memory access, call and exception-state op),
//! a simple heap that implements it ([`SimpleHeap`]), and the `extern "sysv64"` trampolines the
//! generated code calls.

use trace_ir::descr::{DEFAULT_ARRAY_BASE, DEFAULT_ARRAY_LEN, MAX_ALLOC_BYTES};
use trace_ir::{Descr, GuardId, OpRef, Opcode};

/// What compiled code needs from its embedder: memory for new objects and, in
/// [`crate::MemoryAccess::Hooks`] mode, every op that touches memory, calls a function or
/// reads the exception state.
///
/// In the default [`crate::MemoryAccess::Direct`] mode native code calls [`Runtime::alloc`]
/// and [`Runtime::alloc_array`] while a trace runs (for `new`, `new_with_vtable`, `new_array`,
/// `new_array_clear`) and the exit path calls them to rebuild virtual objects; it reads and
/// writes memory itself and calls the trace's function addresses directly. A few ops that
/// have no inline code (see the crate documentation) go through [`Runtime::exec`] in both
/// modes.
///
/// In Hooks mode native code never dereferences a trace value and never calls a trace
/// function: each such op becomes a call to [`Runtime::exec`] with the op's operand values,
/// and a failing guard's fail arguments (virtual objects included) come from
/// [`Runtime::guard_exit`]. The default implementations work on real memory with the layouts
/// Direct mode uses ([`exec_in_memory`]); an embedder whose memory is not the process's
/// (a model, a remote heap, a sandbox) overrides both. The reference interpreter's model does:
/// `trace_interp::ModelHeap` implements this trait (crate `trace-interp`, feature `native`).
///
/// # Invariants the implementation must keep
/// - An address returned by `alloc`/`alloc_array` points to at least `size` bytes of
///   **zeroed**, writable memory, 8-byte aligned, that stays valid and does not move while
///   the trace runs and as long as the embedder holds values derived from it (a moving GC is
///   not supported). (In Hooks mode, addresses returned by `exec` for allocation ops are
///   only ever handed back to the runtime, so they may be anything non-zero.)
/// - The returned address is never 0; return 0 only to report that the allocation cannot be
///   served, which the trace reports as an [`crate::Exit::Invalid`] exit.
/// - `alloc` and `alloc_array` must not unwind (a panic inside them aborts the process, since
///   they are called from native code). A panic inside `exec` is caught and ends the run with
///   [`crate::Exit::Invalid`] at the op.
///
/// The backend itself writes the class word (offset 0) of instances and the length word (at
/// the array descriptor's `len_offset`) of arrays; `class` and `len` are passed for the
/// embedder's bookkeeping only.
pub trait Runtime {
    /// Allocate a struct or instance of `size` bytes whose class is `class` (0 for `new`).
    fn alloc(&mut self, size: u64, class: u64) -> u64;
    /// Allocate an array of `size` bytes in total holding `len` items.
    fn alloc_array(&mut self, size: u64, len: u64) -> u64;

    /// Perform the op `req` for compiled code (Hooks mode: heap accesses, allocations,
    /// calls, exception-state ops, class and type guards; in both modes the ops that have no
    /// inline code). A guard replies [`HookReply::Value`] when it holds (with
    /// `guard_exception`'s exception value, else 0) and [`HookReply::GuardFails`] when it
    /// fails; any op may reply [`HookReply::Invalid`], which ends the run with
    /// [`crate::Exit::Invalid`] at the op. Default: [`exec_in_memory`].
    fn exec(&mut self, req: &HookRequest<'_>) -> HookReply {
        exec_in_memory(self, req)
    }

    /// Hooks mode: the guard `req.guard` failed; return its fail arguments (one word each,
    /// virtual objects rebuilt by the runtime, holes as 0). `None` (the default) lets the
    /// backend rebuild virtual objects itself with [`Runtime::alloc`] and direct writes to
    /// the returned memory, as in Direct mode.
    fn guard_exit(&mut self, req: &ExitRequest<'_>) -> Option<Vec<u64>> {
        let _ = req;
        None
    }
}

/// One op compiled code hands to the [`Runtime`] (see [`Runtime::exec`]). Only a run
/// creates requests (the type cannot be built outside this crate), so a request always
/// describes an op of code running under [`crate::CompiledTrace::run`]'s contract.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct HookRequest<'a> {
    /// The trace of the tree the op is in: 0 for the trace compiled first (the loop), `k`
    /// for the `k`-th bridge attached ([`crate::CompiledTrace::attach_bridge`]).
    pub trace: usize,
    /// The op in that trace.
    pub op: OpRef,
    /// Its opcode.
    pub opcode: Opcode,
    /// Its descriptor, if any.
    pub descr: Option<&'a Descr>,
    /// The values of all its operands in order, as 64-bit words (integers as two's
    /// complement, floats as IEEE bits, references as addresses); constants included.
    pub args: &'a [u64],
}

/// The [`Runtime`]'s answer to a [`HookRequest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookReply {
    /// Done: the op's result (0 when it has none); for a guard, the guard holds.
    Value(u64),
    /// The guard fails (only for guards).
    GuardFails,
    /// The op is an invalid operation (null pointer, index out of bounds, an op the runtime
    /// does not support...): the run ends with [`crate::Exit::Invalid`] at it.
    Invalid,
}

/// A failing guard's exit handed to the [`Runtime`] in Hooks mode (see
/// [`Runtime::guard_exit`]); only a run creates them.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ExitRequest<'a> {
    /// The guard's stable id.
    pub guard: GuardId,
    /// The guard's resume key.
    pub resume_key: u64,
    /// The values of the guard's `FailArg::Value` entries, in order: first its fail
    /// arguments, then the fields of each virtual object of its resume data, then the object
    /// and value of each of its writes ([`trace_ir::GuardData::for_each_entry`]); the
    /// runtime performs the writes after rebuilding the virtual objects.
    pub words: &'a [u64],
}

/// Largest string length `newstr`/`newunicode` accept in [`exec_in_memory`].
const MAX_STR_LEN: u64 = 1 << 24;

/// Read `size` bytes at `addr`, sign- or zero-extended (floats: 8 bytes as bits).
///
/// # Safety
/// `addr..addr + size` must be readable.
pub(crate) unsafe fn read_mem(addr: u64, size: u8, signed: bool) -> u64 {
    let p = addr as *const u8;
    // SAFETY: the caller guarantees the bytes are readable; unaligned reads are allowed.
    unsafe {
        match (size, signed) {
            (1, true) => p.read() as i8 as i64 as u64,
            (1, false) => p.read() as u64,
            (2, true) => (p as *const i16).read_unaligned() as i64 as u64,
            (2, false) => (p as *const u16).read_unaligned() as u64,
            (4, true) => (p as *const i32).read_unaligned() as i64 as u64,
            (4, false) => (p as *const u32).read_unaligned() as u64,
            _ => (p as *const u64).read_unaligned(),
        }
    }
}

/// Write the low `size` bytes of `v` at `addr`.
///
/// # Safety
/// `addr..addr + size` must be writable.
pub(crate) unsafe fn write_mem(addr: u64, size: u8, v: u64) {
    let p = addr as *mut u8;
    // SAFETY: the caller guarantees the bytes are writable; unaligned writes are allowed.
    unsafe {
        match size {
            1 => p.write(v as u8),
            2 => (p as *mut u16).write_unaligned(v as u16),
            4 => (p as *mut u32).write_unaligned(v as u32),
            _ => (p as *mut u64).write_unaligned(v),
        }
    }
}

/// The default [`Runtime::exec`]: performs `req` on real memory with the layouts of Direct
/// mode (field at its descriptor offset; array length word at the descriptor's `len_offset`
/// and item `i` at `base_offset + i * item_size`, checked against the length for `*_gc`;
/// interior fields and strings in the default array layout: length word at offset 8, item
/// `i` at `16 + i * item_size`, 1-byte `str` and 4-byte `unicode` characters; the class word
/// at offset 0, also read as the GC type by `guard_gc_type`; `guard_is_object` holds when the
/// class word is non-zero; `record_exact_class` is an invalid operation when the class word
/// differs (a broken promise), `record_known_result` does nothing (a real function keeps
/// it); a `new` object whose field at offset 0 was written has that
/// value as class, where the interpreter keeps the class of an object it did not allocate
/// apart from its bytes).
/// `strhash`/`unicodehash` hash the length and characters like the
/// interpreter does for strings it allocated. Allocations use [`Runtime::alloc`] and
/// [`Runtime::alloc_array`]. Null pointers and out-of-bounds indices are
/// [`HookReply::Invalid`].
///
/// Not served (`Invalid`): calls and `call_assembler_*` (a foreign function's signature and
/// exception behaviour, and the embedder's compiled loops, are the embedder's business), `save_exception`/`save_exc_class`/`restore_exception`/
/// `guard_exception` (there is no exception state in real memory; `guard_no_exception`
/// holds, as calls never raise).
///
/// The addresses the trace names must be real memory of this process laid out as the
/// descriptors say (the same requirement as Direct mode).
pub fn exec_in_memory<R: Runtime + ?Sized>(rt: &mut R, req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let opc = req.opcode;
    // Operand 0 is the base address of every access below: null is invalid.
    let base = arg(req, 0);
    let needs_base = opc.has(trace_ir::OpFlags::READS_HEAP) || opc.has(trace_ir::OpFlags::WRITES_HEAP);
    if needs_base && base == 0 && opc != GuardNonnullClass {
        return HookReply::Invalid;
    }
    match opc {
        New | NewWithVtable | NewArray | NewArrayClear | Newstr | Newunicode => exec_alloc(rt, req),
        Strlen | Unicodelen | Strgetitem | Unicodegetitem | Strsetitem | Unicodesetitem | Strhash | Unicodehash
        | Copystrcontent | Copyunicodecontent => exec_string(req),
        GuardClass | GuardSubclass | GuardGcType | GuardNonnullClass | RecordExactClass | GuardIsObject => {
            exec_type_check(req)
        }
        // (Real functions keep the promise themselves.)
        GuardNoException | GuardNotInvalidated | RecordKnownResult => HookReply::Value(0),
        RecordKnownField => exec_known_field(req),
        VirtualRef | VirtualRefFinish => exec_virtual_ref(rt, req),
        _ => exec_access(req),
    }
}

/// Operand `i` of a request (0 when missing).
fn arg(req: &HookRequest<'_>, i: usize) -> u64 {
    req.args.get(i).copied().unwrap_or(0)
}

/// The address of item `index` of the array at `base` (`base + base_off + index * size`),
/// if `index` is below the length word at `base + len_off`.
fn item_address(base: u64, index: u64, len_off: i64, base_off: i64, size: i64) -> Option<u64> {
    // SAFETY: the length word of an array the trace names is readable (the contract of
    // `exec_in_memory`).
    let len = unsafe { read_mem(base.wrapping_add(len_off as u64), 8, false) };
    (index < len).then(|| {
        base.wrapping_add(base_off as u64)
            .wrapping_add(index.wrapping_mul(size as u64))
    })
}

/// The bytes of a string op's characters: 1 (`str`) or 4 (`unicode`,
/// [`trace_ir::descr::string_char_size`]).
fn str_size(opc: Opcode) -> i64 {
    i64::from(trace_ir::descr::string_char_size(opc).unwrap_or(4))
}

/// The value of `size` bytes at `addr`, sign- or zero-extended.
fn load(addr: u64, size: u8, signed: bool) -> HookReply {
    // SAFETY: the address comes from the trace's descriptors applied to memory the embedder
    // guarantees (see `exec_in_memory`).
    HookReply::Value(unsafe { read_mem(addr, size, signed) })
}

/// Store the low `size` bytes of `v` at `addr`.
fn store(addr: u64, size: u8, v: u64) -> HookReply {
    // SAFETY: as for `load`.
    unsafe { write_mem(addr, size, v) };
    HookReply::Value(0)
}

/// `record_known_field`, a promise: the field holds the value's low bytes, or it is invalid.
fn exec_known_field(req: &HookRequest<'_>) -> HookReply {
    let Some(f) = req.descr.and_then(Descr::as_field).filter(|_| arg(req, 0) != 0) else {
        return HookReply::Invalid;
    };
    let mask = u64::MAX >> (64 - 8 * u32::from(f.size.clamp(1, 8)));
    match load(arg(req, 0).wrapping_add(f.offset as u64), f.size, false) {
        HookReply::Value(v) if v & mask == arg(req, 1) & mask => HookReply::Value(0),
        _ => HookReply::Invalid,
    }
}

/// Field, array item, interior field and raw accesses, and `arraylen_gc` (everything else
/// is invalid).
fn exec_access(req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let opc = req.opcode;
    let base = arg(req, 0);
    let field = req.descr.and_then(Descr::as_field);
    let array = req.descr.and_then(Descr::as_array);
    let interior_size = match req.descr {
        Some(Descr::Interior(i)) => Some(i.item_size),
        _ => None,
    };
    let item = |index: u64, len_off: i64, base_off: i64, size: i64| item_address(base, index, len_off, base_off, size);
    match opc {
        GetfieldGcI | GetfieldGcR | GetfieldGcF | GetfieldRawI | GetfieldRawR | GetfieldRawF => match field {
            Some(f) => load(base.wrapping_add(f.offset as u64), f.size, f.signed),
            None => HookReply::Invalid,
        },
        SetfieldGc | SetfieldRaw => match field {
            Some(f) => store(base.wrapping_add(f.offset as u64), f.size, arg(req, 1)),
            None => HookReply::Invalid,
        },
        GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF | GetarrayitemGcPureI | GetarrayitemGcPureR
        | GetarrayitemGcPureF => {
            match array.and_then(|a| Some((a, item(arg(req, 1), a.len_offset, a.base_offset, a.item_size as i64)?))) {
                Some((a, at)) => load(at, a.item_size, a.signed),
                None => HookReply::Invalid,
            }
        }
        SetarrayitemGc => {
            match array.and_then(|a| Some((a, item(arg(req, 1), a.len_offset, a.base_offset, a.item_size as i64)?))) {
                Some((a, at)) => store(at, a.item_size, arg(req, 2)),
                None => HookReply::Invalid,
            }
        }
        GetarrayitemRawI | GetarrayitemRawF | RawLoadI | RawLoadF => match array {
            Some(a) => {
                let scale = if matches!(opc, RawLoadI | RawLoadF) {
                    1
                } else {
                    a.item_size as u64
                };
                load(
                    base.wrapping_add(arg(req, 1).wrapping_mul(scale)),
                    a.item_size,
                    a.signed,
                )
            }
            None => HookReply::Invalid,
        },
        SetarrayitemRaw | RawStore => match array {
            Some(a) => {
                let scale = if opc == RawStore { 1 } else { a.item_size as u64 };
                store(
                    base.wrapping_add(arg(req, 1).wrapping_mul(scale)),
                    a.item_size,
                    arg(req, 2),
                )
            }
            None => HookReply::Invalid,
        },
        GetinteriorfieldGcI | GetinteriorfieldGcR | GetinteriorfieldGcF => {
            match interior_size.zip(field).and_then(|(sz, f)| {
                Some((
                    f,
                    item(arg(req, 1), DEFAULT_ARRAY_LEN, DEFAULT_ARRAY_BASE + f.offset, sz)?,
                ))
            }) {
                Some((f, at)) => load(at, f.size, f.signed),
                None => HookReply::Invalid,
            }
        }
        SetinteriorfieldGc => {
            match interior_size.zip(field).and_then(|(sz, f)| {
                Some((
                    f,
                    item(arg(req, 1), DEFAULT_ARRAY_LEN, DEFAULT_ARRAY_BASE + f.offset, sz)?,
                ))
            }) {
                Some((f, at)) => store(at, f.size, arg(req, 2)),
                None => HookReply::Invalid,
            }
        }
        SetinteriorfieldRaw => match interior_size.zip(field) {
            Some((sz, f)) => {
                let at = base
                    .wrapping_add(arg(req, 1).wrapping_mul(sz as u64))
                    .wrapping_add(f.offset as u64);
                store(at, f.size, arg(req, 2))
            }
            None => HookReply::Invalid,
        },
        GcLoadI | GcLoadR | GcLoadF | GcLoadIndexedI | GcLoadIndexedR | GcLoadIndexedF | GcStore | GcStoreIndexed => {
            let Some(g) = opc.gc_access() else {
                return HookReply::Invalid;
            };
            // (the kind of a stored value is not in the request: a size the interpreter
            // refuses for a reference or float is the trace's to avoid)
            let kind = if g.value.is_some() {
                trace_ir::Kind::Int
            } else {
                opc.result_kind()
            };
            match g.resolve(|k| arg(req, k) as i64, kind) {
                Some((offset, size, signed)) => {
                    let at = base.wrapping_add(offset as u64);
                    match g.value {
                        None => load(at, size, signed),
                        Some(k) => store(at, size, arg(req, k)),
                    }
                }
                None => HookReply::Invalid,
            }
        }
        ArraylenGc => match array {
            Some(a) => load(base.wrapping_add(a.len_offset as u64), 8, false),
            None => HookReply::Invalid,
        },
        _ => HookReply::Invalid,
    }
}

/// The string and unicode ops (strings in the default array layout).
fn exec_string(req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let opc = req.opcode;
    let base = arg(req, 0);
    let size = str_size(opc);
    match opc {
        Strlen | Unicodelen => load(base.wrapping_add(DEFAULT_ARRAY_LEN as u64), 8, false),
        Strgetitem | Unicodegetitem => {
            match item_address(base, arg(req, 1), DEFAULT_ARRAY_LEN, DEFAULT_ARRAY_BASE, size) {
                Some(at) => load(at, size as u8, false),
                None => HookReply::Invalid,
            }
        }
        Strsetitem | Unicodesetitem => {
            match item_address(base, arg(req, 1), DEFAULT_ARRAY_LEN, DEFAULT_ARRAY_BASE, size) {
                Some(at) => store(at, size as u8, arg(req, 2)),
                None => HookReply::Invalid,
            }
        }
        Strhash | Unicodehash => {
            // SAFETY: a string the trace names is laid out as documented above.
            let len = unsafe { read_mem(base.wrapping_add(DEFAULT_ARRAY_LEN as u64), 8, false) };
            if len > MAX_STR_LEN {
                return HookReply::Invalid;
            }
            let chars = (0..len).map(|k| {
                let at = base
                    .wrapping_add(DEFAULT_ARRAY_BASE as u64)
                    .wrapping_add(k * size as u64);
                // SAFETY: `k < len`, so the character lies inside the string.
                unsafe { read_mem(at, size as u8, false) }
            });
            HookReply::Value(trace_ir::abi::string_hash(len, chars))
        }
        _ => copy_string_content(req, size),
    }
}

/// `copystrcontent`/`copyunicodecontent` (`size`-byte characters).
fn copy_string_content(req: &HookRequest<'_>, size: i64) -> HookReply {
    let base = arg(req, 0);
    let (dst, ss, ds, n) = (arg(req, 1), arg(req, 2) as i64, arg(req, 3) as i64, arg(req, 4) as i64);
    if dst == 0 || !(0..=trace_ir::abi::MAX_COPY_LEN).contains(&n) {
        return HookReply::Invalid;
    }
    if n == 0 {
        // Nothing is read or written, so nothing is checked (as in the interpreter).
        return HookReply::Value(0);
    }
    // SAFETY: both strings are laid out as documented above.
    let (slen, dlen) = unsafe {
        (
            read_mem(base.wrapping_add(DEFAULT_ARRAY_LEN as u64), 8, false),
            read_mem(dst.wrapping_add(DEFAULT_ARRAY_LEN as u64), 8, false),
        )
    };
    let fits = |start: i64, len: u64| start >= 0 && start.checked_add(n).is_some_and(|end| end as u64 <= len);
    if !fits(ss, slen) || !fits(ds, dlen) {
        return HookReply::Invalid;
    }
    let at = |p: u64, i: i64| {
        p.wrapping_add(DEFAULT_ARRAY_BASE as u64)
            .wrapping_add((i * size) as u64)
    };
    let chars: Vec<u64> = (0..n)
        // SAFETY: indices checked against the source length above.
        .map(|k| unsafe { read_mem(at(base, ss + k), size as u8, false) })
        .collect();
    for (k, c) in chars.into_iter().enumerate() {
        // SAFETY: indices checked against the destination length above.
        unsafe { write_mem(at(dst, ds + k as i64), size as u8, c) };
    }
    HookReply::Value(0)
}

/// `virtual_ref` (a new `JitVirtualRef` holding the force token) and `virtual_ref_finish`
/// (`trace_ir::abi::VirtualRefLayout`).
fn exec_virtual_ref<R: Runtime + ?Sized>(rt: &mut R, req: &HookRequest<'_>) -> HookReply {
    let l = trace_ir::abi::VirtualRefLayout::get();
    let at = |base: u64, f: &trace_ir::FieldDescr| base.wrapping_add(f.offset as u64);
    if req.opcode == Opcode::VirtualRefFinish {
        let (r, p) = (arg(req, 0), arg(req, 1));
        if p != 0 {
            store(at(r, &l.forced), 8, p);
        }
        return store(at(r, &l.token), 8, 0);
    }
    let class = trace_ir::abi::default_class(&l.size);
    let p = rt.alloc(l.size.size as u64, class);
    if p == 0 {
        return HookReply::Invalid;
    }
    // SAFETY: the runtime returned `size` zeroed, writable, aligned bytes.
    unsafe {
        write_mem(p, 8, class);
        write_mem(at(p, &l.token), 8, trace_ir::abi::FORCE_TOKEN);
    }
    HookReply::Value(p)
}

/// Allocations: objects, arrays, strings.
fn exec_alloc<R: Runtime + ?Sized>(rt: &mut R, req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let opc = req.opcode;
    match opc {
        New | NewWithVtable => match req.descr.and_then(Descr::as_size) {
            Some(sd) => {
                let class = if opc == NewWithVtable {
                    trace_ir::abi::default_class(sd)
                } else {
                    0
                };
                let size = sd.size.max(if class != 0 { 8 } else { 0 }).max(0) as u64;
                let p = rt.alloc(size, class);
                if p != 0 && class != 0 {
                    // SAFETY: the runtime returned at least 8 writable, aligned bytes.
                    unsafe { write_mem(p, 8, class) };
                }
                if p == 0 {
                    HookReply::Invalid
                } else {
                    HookReply::Value(p)
                }
            }
            None => HookReply::Invalid,
        },
        NewArray | NewArrayClear => match req.descr.and_then(Descr::as_array) {
            Some(a) => {
                let layout = ArrayLayout {
                    item_size: a.item_size as u64,
                    base_offset: a.base_offset.max(0) as u64,
                    len_offset: a.len_offset.max(0) as u64,
                };
                match new_array_in(rt, arg(req, 0), &layout) {
                    0 => HookReply::Invalid,
                    p => HookReply::Value(p),
                }
            }
            None => HookReply::Invalid,
        },
        _ => {
            let layout = ArrayLayout::of_string(str_size(opc) == 4);
            match new_array_in(rt, arg(req, 0), &layout) {
                0 => HookReply::Invalid,
                p => HookReply::Value(p),
            }
        }
    }
}

/// Class and type checks on the class word at offset 0.
fn exec_type_check(req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let base = arg(req, 0);
    match req.opcode {
        GuardClass | GuardSubclass | GuardGcType | GuardNonnullClass => {
            if base == 0 {
                // Only `guard_nonnull_class` gets here with null: it fails.
                return HookReply::GuardFails;
            }
            // SAFETY: an object the trace names starts with its class word.
            let class = unsafe { read_mem(base, 8, false) };
            if class == arg(req, 1) {
                HookReply::Value(0)
            } else {
                HookReply::GuardFails
            }
        }
        // A promise (`docs/memory-model.md`): a broken one is an invalid operation.
        RecordExactClass if base == 0 => HookReply::Invalid,
        RecordExactClass => {
            // SAFETY: as for the class guards.
            if unsafe { read_mem(base, 8, false) } == arg(req, 1) {
                HookReply::Value(0)
            } else {
                HookReply::Invalid
            }
        }
        // `guard_is_object`.
        _ => {
            // SAFETY: as for the class guards.
            if unsafe { read_mem(base, 8, false) } != 0 {
                HookReply::Value(0)
            } else {
                HookReply::GuardFails
            }
        }
    }
}

/// One allocation of a [`SimpleHeap`].
#[derive(Debug)]
pub struct Allocation {
    /// Start address.
    pub addr: u64,
    /// Size in bytes as requested.
    pub size: u64,
    /// Class passed to [`Runtime::alloc`] (0 for arrays and `new`).
    pub class: u64,
    /// Array length, for arrays.
    pub len: Option<u64>,
    words: Box<[u64]>,
}

/// A [`Runtime`] that keeps every allocation alive until it is dropped (no garbage
/// collection): for tests, the command line and simple embedders.
#[derive(Debug, Default)]
pub struct SimpleHeap {
    /// The allocations, in order.
    pub allocations: Vec<Allocation>,
    /// Largest allocation accepted, in bytes (larger requests return 0). Default: the
    /// memory model's limit, [`trace_ir::descr::MAX_ALLOC_BYTES`] (the reference interpreter
    /// refuses the same allocations).
    pub max_size: Option<u64>,
    /// Zeroed bytes added after every object (default 64), so that a trace whose field
    /// descriptors reach past its size descriptor (the interpreter's model reads zeros
    /// there) reads zeros natively as well instead of a neighbour's memory.
    pub slack: Option<u64>,
}

impl SimpleHeap {
    /// An empty heap.
    pub fn new() -> SimpleHeap {
        SimpleHeap::default()
    }
    fn take(&mut self, size: u64, class: u64, len: Option<u64>) -> u64 {
        if size > self.max_size.unwrap_or(MAX_ALLOC_BYTES) {
            return 0;
        }
        let total = size + self.slack.unwrap_or(64);
        let words = vec![0u64; (total as usize).div_ceil(8).max(1)].into_boxed_slice();
        let addr = words.as_ptr() as u64;
        self.allocations.push(Allocation {
            addr,
            size,
            class,
            len,
            words,
        });
        addr
    }
    /// The allocation containing `addr`, if any.
    pub fn find(&self, addr: u64) -> Option<&Allocation> {
        self.allocations
            .iter()
            .find(|a| addr >= a.addr && addr < a.addr + (a.words.len() as u64) * 8)
    }
    /// The bytes of the allocation starting at `addr` (its requested size).
    pub fn bytes(&self, addr: u64) -> Option<&[u8]> {
        let a = self.allocations.iter().find(|a| a.addr == addr)?;
        // SAFETY: `words` is a live boxed slice of at least `size` bytes owned by `a`; the
        // returned borrow is tied to `&self`.
        Some(unsafe { std::slice::from_raw_parts(a.words.as_ptr() as *const u8, a.size as usize) })
    }
}

impl Runtime for SimpleHeap {
    fn alloc(&mut self, size: u64, class: u64) -> u64 {
        self.take(size, class, None)
    }
    fn alloc_array(&mut self, size: u64, len: u64) -> u64 {
        self.take(size, 0, Some(len))
    }
}

/// What native code receives (in frame word 0) to reach the embedder.
pub(crate) struct RtCtx<'a> {
    pub rt: &'a mut dyn Runtime,
    /// The frame of the running code (hook operands and results live in it).
    pub frame: *mut u64,
    /// Direct mode's exception state: (class, value) (see [`local_exception_op`]).
    pub exception: Option<(u64, u64)>,
}

/// What compiled code passes to [`tramp_hook`] for one op (kept alive by the compiled trace).
#[derive(Clone, Debug)]
pub(crate) struct HookOp {
    /// The trace of the tree (see [`HookRequest::trace`]).
    pub trace: usize,
    pub op: OpRef,
    pub opcode: Opcode,
    pub descr: Option<Descr>,
    /// Frame word of the first operand; the result is written there.
    pub area: usize,
    pub nargs: usize,
    /// Served by the trampoline (Direct mode's exception state), not by the runtime.
    pub local: bool,
}

/// [`tramp_hook`]'s status: the op is done (result in the first area word).
pub(crate) const HOOK_OK: u64 = 0;
/// [`tramp_hook`]'s status: the guard fails.
pub(crate) const HOOK_GUARD_FAILS: u64 = 1;
/// [`tramp_hook`]'s status: an invalid operation.
pub(crate) const HOOK_INVALID: u64 = 2;

/// An op handed to the runtime: the operands are in the frame at `hop.area`; the result goes
/// to the same word; returns one of the `HOOK_*` statuses. A panic in the runtime is caught
/// and reported as an invalid operation (unwinding through native code is not allowed).
pub(crate) extern "sysv64" fn tramp_hook(ctx: *mut RtCtx<'_>, hop: *const HookOp) -> u64 {
    // SAFETY: native code passes the context pointer that `CompiledTrace::run` stored in the
    // frame (alive for the run) and a `HookOp` owned by the compiled trace.
    let (ctx, hop) = unsafe { (&mut *ctx, &*hop) };
    // SAFETY: `area..area + nargs` are frame words the code reserved for this op (the frame
    // has `frame_words` words, covering every slot the code uses); native code is suspended
    // in this call, so nothing else accesses them.
    let area = unsafe { std::slice::from_raw_parts_mut(ctx.frame.add(hop.area), hop.nargs.max(1)) };
    let req = HookRequest {
        trace: hop.trace,
        op: hop.op,
        opcode: hop.opcode,
        descr: hop.descr.as_ref(),
        args: &area[..hop.nargs],
    };
    let reply = if hop.local {
        local_exception_op(&mut ctx.exception, &req)
    } else {
        let rt = &mut *ctx.rt;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.exec(&req))).unwrap_or(HookReply::Invalid)
    };
    match reply {
        HookReply::Value(v) => {
            area[0] = v;
            HOOK_OK
        }
        HookReply::GuardFails if hop.opcode.is_guard() => HOOK_GUARD_FAILS,
        _ => HOOK_INVALID,
    }
}

/// Direct mode's exception ops on the run's exception state, with the interpreter's
/// semantics: `save_exc_class` reads the class (0 if none), `save_exception` reads the value
/// (null if none) and clears the state, `restore_exception(cls, v)` sets it (clears it when
/// both are 0), `guard_exception(cls)` holds when the pending class is `cls` and then returns
/// the value and clears the state, `guard_no_exception` holds when nothing is pending.
fn local_exception_op(state: &mut Option<(u64, u64)>, req: &HookRequest<'_>) -> HookReply {
    use Opcode::*;
    let arg = |i: usize| req.args.get(i).copied().unwrap_or(0);
    match req.opcode {
        SaveException => HookReply::Value(state.take().map_or(0, |(_, v)| v)),
        SaveExcClass => HookReply::Value(state.map_or(0, |(c, _)| c)),
        RestoreException => {
            let (c, v) = (arg(0), arg(1));
            *state = if c == 0 && v == 0 { None } else { Some((c, v)) };
            HookReply::Value(0)
        }
        GuardException => match *state {
            Some((c, v)) if c == arg(0) => {
                *state = None;
                HookReply::Value(v)
            }
            _ => HookReply::GuardFails,
        },
        GuardNoException if state.is_none() => HookReply::Value(0),
        GuardNoException => HookReply::GuardFails,
        _ => HookReply::Invalid,
    }
}

/// Array layout passed to [`tramp_new_array`] (kept alive by the compiled trace).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayLayout {
    pub item_size: u64,
    pub base_offset: u64,
    pub len_offset: u64,
}

impl ArrayLayout {
    /// The layout of a string (`newstr`: 1-byte characters; `newunicode`: 4-byte ones): its
    /// length word and characters where `trace_ir::descr` puts them.
    pub(crate) fn of_string(unicode: bool) -> ArrayLayout {
        ArrayLayout {
            item_size: if unicode { 4 } else { 1 },
            base_offset: trace_ir::descr::STR_CHARS_OFFSET as u64,
            len_offset: trace_ir::descr::STR_LEN_OFFSET as u64,
        }
    }
}

/// Largest array length `new_array` accepts natively (longer is an invalid operation).
pub(crate) const MAX_ARRAY_LEN: u64 = 1 << 24;

/// `new` / `new_with_vtable`: allocate and write the class word when non-zero.
pub(crate) extern "sysv64" fn tramp_new(ctx: *mut RtCtx<'_>, size: u64, class: u64) -> u64 {
    // SAFETY: native code passes the context pointer that `CompiledTrace::run` stored in the
    // frame; it points to a live `RtCtx` for the duration of the run.
    let ctx = unsafe { &mut *ctx };
    if size > MAX_ALLOC_BYTES {
        return 0;
    }
    let p = ctx.rt.alloc(size, class);
    if p != 0 && class != 0 {
        // SAFETY: the runtime guarantees `size` (>= 8 for instances) writable, aligned bytes.
        unsafe { (p as *mut u64).write(class) };
    }
    p
}

/// `new_array` / `new_array_clear`: check the length, allocate, write the length word.
/// Returns 0 for an invalid length or a failed allocation.
pub(crate) extern "sysv64" fn tramp_new_array(ctx: *mut RtCtx<'_>, len: u64, layout: *const ArrayLayout) -> u64 {
    // SAFETY: as in `tramp_new`; `layout` points into the compiled trace, alive while it runs.
    let (ctx, layout) = unsafe { (&mut *ctx, &*layout) };
    new_array(ctx.rt, len, layout)
}

pub(crate) fn new_array(rt: &mut dyn Runtime, len: u64, layout: &ArrayLayout) -> u64 {
    new_array_in(rt, len, layout)
}

fn new_array_in<R: Runtime + ?Sized>(rt: &mut R, len: u64, layout: &ArrayLayout) -> u64 {
    if len > MAX_ARRAY_LEN {
        return 0;
    }
    let size = (layout.base_offset + len * layout.item_size).max(layout.len_offset + 8);
    if size > MAX_ALLOC_BYTES {
        return 0;
    }
    let p = rt.alloc_array(size, len);
    if p != 0 {
        // SAFETY: the runtime returned `size` writable aligned bytes, and `len_offset + 8 <= size`.
        unsafe { ((p + layout.len_offset) as *mut u64).write_unaligned(len) };
    }
    p
}
