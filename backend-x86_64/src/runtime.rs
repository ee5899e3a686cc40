//! The embedder's side of native execution: the [`Runtime`] trait (object allocation), a
//! simple heap that implements it ([`SimpleHeap`]), and the `extern "sysv64"` trampolines the
//! generated code calls.

/// What compiled code needs from its embedder: memory for new objects.
///
/// Native code calls these methods while a trace runs (for `new`, `new_with_vtable`,
/// `new_array`, `new_array_clear`) and the exit path calls them to rebuild virtual objects.
///
/// # Invariants the implementation must keep
/// - The returned address points to at least `size` bytes of **zeroed**, writable memory,
///   8-byte aligned, that stays valid and does not move while the trace runs and as long as
///   the embedder holds values derived from it (a moving GC is not supported).
/// - The returned address is never 0; return 0 only to report that the allocation cannot be
///   served, which the trace reports as an [`crate::Exit::Invalid`] exit.
/// - The methods must not unwind (a panic inside them aborts the process, since they are
///   called from native code).
///
/// The backend itself writes the class word (offset 0) of instances and the length word (at
/// the array descriptor's `len_offset`) of arrays; `class` and `len` are passed for the
/// embedder's bookkeeping only.
pub trait Runtime {
    /// Allocate a struct or instance of `size` bytes whose class is `class` (0 for `new`).
    fn alloc(&mut self, size: u64, class: u64) -> u64;
    /// Allocate an array of `size` bytes in total holding `len` items.
    fn alloc_array(&mut self, size: u64, len: u64) -> u64;
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
    /// Largest allocation accepted, in bytes (larger requests return 0). Default 1 MiB.
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
        if size > self.max_size.unwrap_or(1 << 20) {
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
}

/// Array layout passed to [`tramp_new_array`] (kept alive by the compiled trace).
#[derive(Clone, Debug)]
pub(crate) struct ArrayLayout {
    pub item_size: u64,
    pub base_offset: u64,
    pub len_offset: u64,
}

/// Largest array length `new_array` accepts natively (longer is an invalid operation).
pub(crate) const MAX_ARRAY_LEN: u64 = 1 << 24;

/// `new` / `new_with_vtable`: allocate and write the class word when non-zero.
pub(crate) extern "sysv64" fn tramp_new(ctx: *mut RtCtx<'_>, size: u64, class: u64) -> u64 {
    // SAFETY: native code passes the context pointer that `CompiledTrace::run` stored in the
    // frame; it points to a live `RtCtx` for the duration of the run.
    let ctx = unsafe { &mut *ctx };
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
    if len > MAX_ARRAY_LEN {
        return 0;
    }
    let size = (layout.base_offset + len * layout.item_size).max(layout.len_offset + 8);
    let p = rt.alloc_array(size, len);
    if p != 0 {
        // SAFETY: the runtime returned `size` writable aligned bytes, and `len_offset + 8 <= size`.
        unsafe { ((p + layout.len_offset) as *mut u64).write_unaligned(len) };
    }
    p
}
