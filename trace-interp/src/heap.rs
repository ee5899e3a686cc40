//! The interpreter's heap model: objects the trace allocated (with exact contents), the
//! remembered writes to external objects and raw memory, the heap epoch, and the
//! deterministic values read from memory nobody wrote. `docs/memory-model.md` states the
//! model every part of tracejit obeys; this module is its executable form.
//!
//! # Addresses
//!
//! - Objects allocated by the run (by `new*` ops or rebuilt at a guard exit) get addresses
//!   `ALLOC_BASE + k * ALLOC_STRIDE` in allocation order, skipping any address the trace
//!   names as a pointer constant (a fresh object is never equal to a reference that existed
//!   before it). Any other non-null address is **external**: an
//!   input, a `ConstPtr`, a call result, a value read from external memory.
//! - Deterministic external addresses ([`external_address`]) live in
//!   `0x5000_0000_0000..0x6000_0000_0000`; [`trace_ir::trace::symbol_address`] (named constants)
//!   hashes into `0x4000_0000_0000..0x8000_0000_0000`; allocated objects start at
//!   `0x1000_0000_1000` (not a power of two nor next to one, so the special integers of
//!   random traces do not name one) and stay far below both.
//!
//! # Bytes and cells
//!
//! Every object is a range of bytes addressed by offset from its start (raw memory by
//! absolute address). An access is a [`View`]: a byte offset and a width, computed from the
//! descriptor (a field's offset; an array item `base + index * item_size`; an interior field
//! `16 + index * item_size + offset`; string characters from offset 16). What the run wrote
//! is kept as [`Cell`]s, each the value of one write, which never overlap: a write that
//! covers part of an older cell keeps the older cell's other bytes as integer cells (those of
//! a reference remember it: [`Cell::reference`]). A read
//! whose view is exactly one cell returns that cell's value; a read that overlaps several
//! cells, or cells and unwritten bytes, assembles its bytes (little-endian) from them and
//! from the view's value of unwritten memory. Each cell remembers the descriptor that wrote
//! it, for the type-based aliasing rule ([`trace_ir::Aliasing::TypeBased`], checked by the
//! interpreter before the access).
//!
//! # Reads of memory nobody wrote
//!
//! A view of an external object that this run has not written reads as a value derived from
//! `(address, offset, epoch)` by [`derived_value`]: integers in `0..128`, floats finite in
//! `0..1000`, references non-null external addresses. The value depends on where the view
//! starts and on the kind read, not on the descriptor: two views of unwritten bytes that start
//! elsewhere or read another kind are not related (the model's initial memory is chosen per
//! view, and no part of tracejit relates such views). Immutable reads (pure fields,
//! `getarrayitem_gc_pure_*`, lengths, string contents of external objects) use epoch 0, so
//! they never change. [`Heap::preset`] (from `RunConfig::preset`, filled by the guided input
//! search) overrides the derived value of chosen views of initial memory, and
//! [`Heap::decided`] (what a `record_known_field` promised of a view nobody read as its kind)
//! that of views of one kind. Unwritten bytes of allocated objects are zero.
//!
//! # Escape and calls that may write the heap
//!
//! An allocated object **escapes** when a call happens while it is reachable from the call's
//! arguments, from an external object, from raw memory or from an object that escaped
//! earlier ([`Heap::escape_at_call`]); from then on it stays escaped (the callee may have kept
//! it). Escape is decided at calls, not at stores, because only a call lets the outside world
//! look: a reference stored into an external object and overwritten before any call was
//! never seen, so an optimized trace that reorders or drops such stores behaves the same.
//!
//! A call that may write the heap ([`Heap::clobber`]) bumps the epoch. Mutable cells of
//! external objects written before it become **stale**: a mutable read no longer sees them
//! (it reads the value derived from the new epoch), while an immutable read still does. That
//! is the meaning of immutability in the model: calls never change what an immutable read sees
//! (the last value the trace wrote there, or the value at entry); the trace's own writes do.
//! Raw memory is forgotten entirely. For an escaped allocated object the effect is computed
//! lazily ([`HeapObject::read`]): every heap-writing call after the object escaped replaces
//! each mutable integer or float cell (written or not; unwritten bytes count as zero) that was
//! not written since by a value (as [`derived_value`]) mixed from the cell's current value,
//! its offset and width, and the call's epoch. A mutable reference cell becomes a derived
//! external address mixed from its offset and the epoch alone (the current value may be an
//! allocated object's address, which is not the same in an optimized run). Immutable reads
//! and string contents are left alone. The rule depends only on contents and epochs, never on
//! addresses or on whether a zero was stored explicitly, so an optimized trace that
//! materializes a virtual with fewer explicit stores (or drops a redundant write-back) behaves
//! the same, while a heap cache that wrongly forwards a mutable field across such a call
//! produces a different value.

use crate::RtValue;
use std::collections::{BTreeMap, HashMap};
use trace_ir::abi::hash_words;
use trace_ir::descr::ArrayDescr;
use trace_ir::opcode::Kind;

/// Address of the first object allocated by a run.
pub const ALLOC_BASE: u64 = 0x1000_0000_1000;
/// Distance between consecutive allocated objects.
pub const ALLOC_STRIDE: u64 = 0x1_0000;
/// The writer of an instance's class word (written by `new_with_vtable`, never by a
/// descriptor: it cannot be written).
pub const WRITER_CLASS: u32 = u32::MAX - 1;
/// The writer of string characters (string ops take no descriptor).
pub const WRITER_STRING: u32 = u32::MAX - 2;
/// The writers of a virtual reference's token and `forced` fields (`virtual_ref`,
/// `virtual_ref_finish`) in a trace whose table lacks the layout's descriptors
/// ([`trace_ir::abi::VirtualRefLayout`]); with them, their ids.
pub const WRITER_VREF: [u32; 2] = [u32::MAX - 3, u32::MAX - 4];

/// A deterministic, 8-byte aligned, non-null external address derived from `h`.
pub fn external_address(h: u64) -> u64 {
    0x5000_0000_0000 | (h & 0x0fff_ffff_fff8) | 0x8
}

/// The value of kind `kind` derived from the hash `h` (see the module documentation):
/// integers in `0..128` (unchanged by every narrow field's sign or zero extension, so a
/// derived value reads the same through any width), finite floats in `0..1000`, non-null
/// external references.
pub fn derived_value(kind: Kind, h: u64) -> RtValue {
    match kind {
        Kind::Float => RtValue::float((h % 1_000_000) as f64 / 1000.0),
        Kind::Ref => RtValue::Ref(external_address(h)),
        _ => RtValue::Int((h % 128) as i64),
    }
}

/// Where an access lands: `size` bytes at byte `offset` from the object's start (for raw
/// memory, at the absolute address `offset`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct View {
    /// Byte offset from the object's start (raw memory: the address).
    pub offset: i64,
    /// Width in bytes (1 to 8).
    pub size: u8,
}

impl View {
    /// `size` bytes at `offset`.
    pub fn new(offset: i64, size: u8) -> View {
        View { offset, size }
    }
    /// One past the last byte.
    pub fn end(self) -> i64 {
        self.offset.wrapping_add(self.size as i64)
    }
    /// Whether the two views share a byte.
    pub fn overlaps(self, other: View) -> bool {
        self.offset < other.end() && other.offset < self.end()
    }
}

/// The value of one write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Width in bytes (1 to 8).
    pub size: u8,
    /// The value as written (narrow integers already sign- or zero-extended by the writing
    /// view).
    pub value: RtValue,
    /// Whether it was written through an immutable descriptor (heap-writing calls never change
    /// it).
    pub immutable: bool,
    /// The heap epoch when it was written.
    pub epoch: u64,
    /// The descriptor that wrote it (its index in the trace), or [`WRITER_CLASS`] /
    /// [`WRITER_STRING`].
    pub writer: u32,
    /// Whether it is an object's class word or an array's or string's length word, written
    /// by the allocation: no write may change it.
    pub header: bool,
    /// For bytes a later write left of a reference (an integer cell): the reference and the
    /// offset of the cell's first byte in it. An address differs from one run of a program
    /// to the next, so its bytes are not a number (reading them breaks a promise, and two runs
    /// hold the same bytes when they hold the same bytes of corresponding references).
    pub reference: Option<(u64, u8)>,
}

/// The bytes a run wrote into one object (or raw memory): non-overlapping cells by start
/// offset.
pub type Cells = BTreeMap<i64, Cell>;

/// The cells of `cells` that share a byte with `view`, in order.
pub fn overlapping(cells: &Cells, view: View) -> impl Iterator<Item = (i64, &Cell)> {
    cells
        .range(view.offset.saturating_sub(7)..view.end().max(view.offset))
        .filter(move |(&s, c)| View::new(s, c.size).overlaps(view))
        .map(|(&s, c)| (s, c))
}

/// The low `n` bytes of `bits`.
fn low_bytes(bits: u64, n: u32) -> u64 {
    if n >= 8 {
        bits
    } else {
        bits & ((1u64 << (8 * n)) - 1)
    }
}

/// Insert `cell` at `offset`, cutting the bytes it covers out of older cells (their other
/// bytes stay as integer cells with the older cell's attributes).
pub fn write_cell(cells: &mut Cells, offset: i64, cell: Cell) {
    let view = View::new(offset, cell.size);
    let hit: Vec<i64> = overlapping(cells, view).map(|(s, _)| s).collect();
    for s in hit {
        let old = cells.remove(&s).expect("listed above");
        let bits = old.value.bits();
        let old_end = s + old.size as i64;
        // bytes before the new cell, and after it
        for (lo, hi) in [(s, offset.min(old_end)), (view.end().max(s), old_end)] {
            if lo < hi {
                let piece = low_bytes(bits >> (8 * (lo - s)), (hi - lo) as u32);
                let reference = match (old.value, old.reference) {
                    (RtValue::Ref(r), _) => Some((r, (lo - s) as u8)),
                    (_, Some((r, at))) => Some((r, at + (lo - s) as u8)),
                    _ => None,
                };
                cells.insert(
                    lo,
                    Cell {
                        size: (hi - lo) as u8,
                        value: RtValue::Int(piece as i64),
                        reference,
                        ..old
                    },
                );
            }
        }
    }
    cells.insert(offset, cell);
}

/// The `view.size` bytes of `view` assembled from `base` (the view's value where nothing
/// overrides it) and `pieces` (start, width, bits) that override bytes.
fn assemble(view: View, base: u64, pieces: &[(i64, u8, u64)]) -> u64 {
    let mut out = 0u64;
    for k in 0..view.size as i64 {
        let at = view.offset + k;
        let byte = pieces
            .iter()
            .find(|(s, n, _)| at >= *s && at < s + *n as i64)
            .map_or((base >> (8 * k)) & 0xff, |(s, _, bits)| (bits >> (8 * (at - s))) & 0xff);
        out |= byte << (8 * k);
    }
    out
}

/// What an allocated object is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjKind {
    /// `new`/`new_with_vtable` (or a rebuilt struct virtual) of this size.
    Struct {
        /// Object size in bytes, from the size descriptor.
        size: i64,
    },
    /// `new_array`/`new_array_clear` (or a rebuilt array virtual).
    Array {
        /// Number of items.
        len: u64,
        /// The array descriptor of the allocation: its layout gives the items' bytes.
        descr: ArrayDescr,
    },
    /// `newstr`.
    Str {
        /// Number of bytes.
        len: u64,
    },
    /// `newunicode`.
    Unicode {
        /// Number of code points.
        len: u64,
    },
}

/// An object allocated by the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapObject {
    /// What it is.
    pub kind: ObjKind,
    /// Its class (vtable): the size descriptor's vtable or a class derived from it for
    /// `new_with_vtable` (also its class word, a cell at offset 0); 0 for everything else.
    pub class: u64,
    /// The bytes written so far (unwritten bytes are zero).
    pub cells: Cells,
    /// Whether the outside world can see it (see the module documentation).
    pub escaped: bool,
    /// The heap epoch when it escaped (meaningful when `escaped`).
    pub escape_epoch: u64,
    /// Whether a guard exit rebuilt it from a virtual description.
    pub rebuilt: bool,
}

/// One heap-writing call's effect on a mutable value of an escaped object (see the module
/// documentation).
fn transform(v: RtValue, view: View, epoch: u64) -> RtValue {
    let (a, b) = (view.offset as u64, view.size as u64);
    match v {
        // an allocated object's address differs between runs of the same program
        // (allocation removal), so a reference's new value ignores it
        RtValue::Ref(_) => derived_value(Kind::Ref, hash_words(&[0xc10c, a, b, epoch])),
        other => derived_value(other.kind(), hash_words(&[0xc10b, other.bits(), a, b, epoch])),
    }
}

impl HeapObject {
    /// The number of items for arrays and strings.
    pub fn length(&self) -> Option<u64> {
        match self.kind {
            ObjKind::Struct { .. } => None,
            ObjKind::Array { len, .. } | ObjKind::Str { len } | ObjKind::Unicode { len } => Some(len),
        }
    }

    fn is_string(&self) -> bool {
        matches!(self.kind, ObjKind::Str { .. } | ObjKind::Unicode { .. })
    }

    /// `v`, last written (or, unwritten, zero) at `written`, as the heap-writing calls up to
    /// `epoch` left it.
    fn after_calls(&self, v: RtValue, view: View, written: u64, epoch: u64, immutable: bool) -> RtValue {
        if !self.escaped || immutable || self.is_string() {
            return v;
        }
        (written.max(self.escape_epoch) + 1..=epoch).fold(v, |v, e| transform(v, view, e))
    }

    /// Before a write of `view` at `epoch`: every cell it cuts takes the value the calls made
    /// since its write gave it, as of `epoch`, so the bytes the write leaves keep that value
    /// (the calls' effect is per cell; cutting a cell must not change what they did).
    fn settle(&mut self, view: View, epoch: u64) {
        let cut: Vec<i64> = overlapping(&self.cells, view)
            .filter(|(s, c)| *s < view.offset || *s + c.size as i64 > view.end())
            .map(|(s, _)| s)
            .collect();
        for s in cut {
            let c = self.cells[&s];
            let value = self.after_calls(c.value, View::new(s, c.size), c.epoch, epoch, c.immutable);
            self.cells.insert(s, Cell { value, epoch, ..c });
        }
    }

    /// The value a read of `view` as `kind` returns when the heap epoch is `epoch`: the
    /// written bytes (zero where unwritten), transformed once per heap-writing call made after
    /// the last write and after the escape (see the module documentation). `pure` reads (and
    /// cells written through immutable descriptors) are never transformed.
    pub fn read(&self, view: View, kind: Kind, epoch: u64, pure: bool) -> RtValue {
        let mut cells = overlapping(&self.cells, view).peekable();
        match cells.peek() {
            None => self.after_calls(RtValue::zero(kind), view, 0, epoch, pure),
            Some(&(s, c)) if s == view.offset && c.size == view.size => {
                self.after_calls(c.value.with_kind(kind), view, c.epoch, epoch, pure || c.immutable)
            }
            Some(_) => {
                let pieces: Vec<(i64, u8, u64)> = cells
                    .map(|(s, c)| {
                        let v = self.after_calls(c.value, View::new(s, c.size), c.epoch, epoch, pure || c.immutable);
                        (s, c.size, v.bits())
                    })
                    .collect();
                let base = self.after_calls(RtValue::zero(kind), view, 0, epoch, pure).bits();
                RtValue::from_bits(kind, assemble(view, base, &pieces))
            }
        }
    }
}

/// What the run knows about an external object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalObject {
    /// Writes this run made (mutable ones go stale at the next heap-writing call).
    pub cells: Cells,
    /// The class decided by the first class check (see `ClassPolicy`).
    pub class: Option<u64>,
    /// The GC type id decided by the first `guard_gc_type`.
    pub gc_type: Option<u64>,
}

/// The state of memory during and after a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heap {
    /// Objects allocated by the run, by address.
    pub objects: HashMap<u64, HeapObject>,
    /// External objects the run touched, by address.
    pub external: HashMap<u64, ExternalObject>,
    /// Raw memory the run wrote since the last heap-writing call, by address.
    pub raw: Cells,
    /// Number of heap-writing calls so far.
    pub epoch: u64,
    /// Number of objects allocated so far.
    pub allocated: u64,
    /// Initial contents of external memory (from `RunConfig::preset`): an unwritten view
    /// `(address, offset)` listed here reads as this value instead of a derived one, while no
    /// heap-writing call has happened (or always, for immutable reads).
    pub preset: HashMap<(u64, i64), RtValue>,
    /// Addresses a fresh object must not get: the trace's pointer constants.
    pub taken: std::collections::HashSet<u64>,
    /// Views `(address, offset, kind)` of external memory the run has read from its initial
    /// contents: a `record_known_field` may decide an initial value only where no view of
    /// that start and kind was read.
    pub initial_reads: std::collections::HashSet<(u64, i64, Kind)>,
    /// Initial contents of external memory a `record_known_field` decided, by view start and
    /// kind: like [`Heap::preset`], but only for reads of that kind (views of initial memory
    /// that read another kind are not related, so a promise about one decides nothing about
    /// them, whether or not a read of them came first).
    pub decided: HashMap<(u64, i64, Kind), RtValue>,
}

impl Heap {
    /// Whether `addr` is an object allocated by this run.
    pub fn is_allocated(&self, addr: u64) -> bool {
        self.objects.contains_key(&addr)
    }

    /// Allocate a new object; returns its address.
    pub fn alloc(&mut self, kind: ObjKind, class: u64, rebuilt: bool) -> u64 {
        let addr = loop {
            let a = ALLOC_BASE + self.allocated * ALLOC_STRIDE;
            self.allocated += 1;
            if !self.taken.contains(&a) {
                break a;
            }
        };
        let mut cells = Cells::new();
        if class != 0 {
            cells.insert(
                0,
                Cell {
                    size: 8,
                    value: RtValue::Int(class as i64),
                    immutable: true,
                    epoch: self.epoch,
                    writer: WRITER_CLASS,
                    header: true,
                    reference: None,
                },
            );
        }
        self.objects.insert(
            addr,
            HeapObject {
                kind,
                class,
                cells,
                escaped: false,
                escape_epoch: 0,
                rebuilt,
            },
        );
        addr
    }

    /// The cells of the object at `addr` (allocated or external; `None` for an external
    /// object the run never touched).
    pub fn cells_of(&self, addr: u64) -> Option<&Cells> {
        match self.objects.get(&addr) {
            Some(o) => Some(&o.cells),
            None => self.external.get(&addr).map(|e| &e.cells),
        }
    }

    /// The writer of a cell of `addr` overlapping `view` other than `writer`, if any (the
    /// type-based rule's check).
    pub fn other_writer(&self, addr: u64, view: View, writer: u32) -> Option<u32> {
        let cells = self.cells_of(addr)?;
        overlapping(cells, view).map(|(_, c)| c.writer).find(|&w| w != writer)
    }

    /// Whether this run wrote any byte of `view` of the object at `addr`.
    pub fn written(&self, addr: u64, view: View) -> bool {
        self.cells_of(addr)
            .is_some_and(|c| overlapping(c, view).next().is_some())
    }

    /// Whether a reference read of `view` of `addr` would assemble an address out of bytes
    /// that were not written as one reference (or one header word): an integer or a float
    /// written over any of them, or a reference of which the view sees only a part. Nobody
    /// handed such an address out (a forged reference), so reading one is a broken promise
    /// (see `docs/memory-model.md`). Unwritten bytes and stale external cells forge nothing.
    pub fn forges_reference(&self, addr: u64, view: View, pure: bool) -> bool {
        let mut seen = self.seen_cells(addr, view, pure);
        match (seen.next(), seen.next()) {
            (None, _) => false,
            (Some((s, c)), None) => {
                let whole = s == view.offset && c.size == view.size;
                !(whole && (c.value.kind() == Kind::Ref || c.header))
            }
            _ => true,
        }
    }

    /// Whether a read of `view` of `addr` as an integer or a float would see bytes of a
    /// reference (a visible cell written as a reference, or bytes a later write left of
    /// one): an address's bytes are not the same
    /// from one run of a program to the next (allocation), so such a read is a broken promise
    /// too (see `docs/memory-model.md`).
    pub fn exposes_reference(&self, addr: u64, view: View, pure: bool) -> bool {
        self.seen_cells(addr, view, pure)
            .any(|(_, c)| c.value.kind() == Kind::Ref && !c.header || c.reference.is_some())
    }

    /// The cells of `addr` overlapping `view` that a read (`pure`: an immutable one) sees:
    /// all of an allocated object's, the visible ones of an external object's.
    fn seen_cells(&self, addr: u64, view: View, pure: bool) -> impl Iterator<Item = (i64, &Cell)> {
        let external = !self.objects.contains_key(&addr);
        self.cells_of(addr)
            .into_iter()
            .flat_map(move |cells| overlapping(cells, view))
            .filter(move |(_, c)| !external || self.visible(c, pure))
    }

    /// Whether a write of `view` into `addr` would change a class or length word.
    pub fn writes_header(&self, addr: u64, view: View) -> bool {
        self.cells_of(addr)
            .is_some_and(|cells| overlapping(cells, view).any(|(_, c)| c.header))
    }

    /// Write the header word `view` (a length) of the object at `addr`, as its allocation
    /// does.
    pub fn write_header(&mut self, addr: u64, view: View, value: u64, writer: u32) {
        if let Some(obj) = self.objects.get_mut(&addr) {
            let cell = Cell {
                size: view.size,
                value: RtValue::Int(value as i64),
                immutable: true,
                epoch: self.epoch,
                writer,
                header: true,
                reference: None,
            };
            write_cell(&mut obj.cells, view.offset, cell);
        }
    }

    /// Escape `v` if it is a reference.
    pub fn escape_value(&mut self, v: RtValue) {
        if let RtValue::Ref(r) = v {
            self.escape_from(vec![r]);
        }
    }

    /// Mark the allocated objects at `work` and everything reachable from them as escaped.
    fn escape_from(&mut self, mut work: Vec<u64>) {
        let epoch = self.epoch;
        let mut seen = std::collections::HashSet::new();
        while let Some(a) = work.pop() {
            if !seen.insert(a) {
                continue;
            }
            let Some(obj) = self.objects.get_mut(&a) else { continue };
            if !obj.escaped {
                obj.escaped = true;
                obj.escape_epoch = epoch;
            }
            work.extend(obj.cells.values().filter_map(|c| match c.value {
                RtValue::Ref(r) => Some(r),
                _ => None,
            }));
        }
    }

    /// Whether a cell of an external object is what a read sees now (immutable reads see
    /// stale cells too).
    fn visible(&self, c: &Cell, pure: bool) -> bool {
        pure || c.immutable || c.epoch == self.epoch
    }

    /// The value a view of unwritten external memory reads (see the module documentation).
    fn unwritten(&self, addr: u64, view: View, kind: Kind, pure: bool) -> RtValue {
        let epoch = if pure { 0 } else { self.epoch };
        if epoch == 0 {
            if let Some(v) = self.preset.get(&(addr, view.offset)) {
                return v.with_kind(kind);
            }
            if let Some(v) = self.decided.get(&(addr, view.offset, kind)) {
                return *v;
            }
        }
        derived_value(kind, hash_words(&[0x0b1ec7, addr, view.offset as u64, epoch]))
    }

    /// Read `view` of the object at `addr` as a value of `kind` (no null, bounds or aliasing
    /// checks: the caller does them). `pure` reads see the object as immutable.
    pub fn read(&self, addr: u64, view: View, kind: Kind, pure: bool) -> RtValue {
        if let Some(obj) = self.objects.get(&addr) {
            return obj.read(view, kind, self.epoch, pure);
        }
        let pieces: Vec<(i64, u8, RtValue)> = self
            .seen_cells(addr, view, pure)
            .map(|(s, c)| (s, c.size, c.value))
            .collect();
        match pieces.as_slice() {
            [] => self.unwritten(addr, view, kind, pure),
            [(s, n, v)] if *s == view.offset && *n == view.size => v.with_kind(kind),
            _ => {
                let pieces: Vec<(i64, u8, u64)> = pieces.iter().map(|&(s, n, v)| (s, n, v.bits())).collect();
                let base = self.unwritten(addr, view, kind, pure).bits();
                RtValue::from_bits(kind, assemble(view, base, &pieces))
            }
        }
    }

    /// Whether a read of `view` of `addr` now would come from the initial contents of
    /// external memory alone (an external object, nothing it overlaps written and visible,
    /// before any heap-writing call or through an immutable descriptor): then [`Heap::preset`]
    /// can choose its value.
    pub fn reads_initial_memory(&self, addr: u64, view: View, pure: bool) -> bool {
        !self.objects.contains_key(&addr)
            && (pure || self.epoch == 0)
            && !self
                .external
                .get(&addr)
                .is_some_and(|e| overlapping(&e.cells, view).any(|(_, c)| self.visible(c, pure)))
    }

    /// Write `view` of the object at `addr` (no null, bounds or aliasing checks). Whether a
    /// stored reference escapes is decided at the next call ([`Heap::escape_at_call`]).
    pub fn write(&mut self, addr: u64, view: View, value: RtValue, immutable: bool, writer: u32) {
        let cell = Cell {
            size: view.size,
            value,
            immutable,
            epoch: self.epoch,
            writer,
            header: false,
            reference: None,
        };
        let cells = match self.objects.get_mut(&addr) {
            Some(obj) => {
                obj.settle(view, self.epoch);
                &mut obj.cells
            }
            None => &mut self.external.entry(addr).or_default().cells,
        };
        write_cell(cells, view.offset, cell);
    }

    /// A call is about to happen with these arguments: every allocated object reachable from
    /// them, from external objects, from raw memory or from an already escaped object escapes
    /// now (and stays escaped).
    pub fn escape_at_call(&mut self, args: &[RtValue]) {
        let refs = |c: &Cell| match c.value {
            RtValue::Ref(r) => Some(r),
            _ => None,
        };
        let mut work: Vec<u64> = args
            .iter()
            .filter_map(|v| if let RtValue::Ref(r) = v { Some(*r) } else { None })
            .collect();
        for ext in self.external.values() {
            work.extend(ext.cells.values().filter_map(refs));
        }
        work.extend(self.raw.values().filter_map(refs));
        work.extend(self.objects.iter().filter(|(_, o)| o.escaped).map(|(&a, _)| a));
        self.escape_from(work);
    }

    /// Read raw memory at `addr` (`size` bytes) as a value of `kind`.
    pub fn read_raw(&self, addr: u64, size: u8, kind: Kind) -> RtValue {
        let view = View::new(addr as i64, size);
        let derived = || derived_value(kind, hash_words(&[0x4a3, addr, self.epoch]));
        let pieces: Vec<(i64, u8, u64)> = overlapping(&self.raw, view)
            .map(|(s, c)| (s, c.size, c.value.bits()))
            .collect();
        match pieces.as_slice() {
            [] => derived(),
            [(s, n, _)] if *s == view.offset && *n == size => self.raw[s].value.with_kind(kind),
            _ => RtValue::from_bits(kind, assemble(view, derived().bits(), &pieces)),
        }
    }

    /// Write `size` bytes of raw memory at `addr` (a stored reference escapes at the next
    /// call).
    pub fn write_raw(&mut self, addr: u64, size: u8, value: RtValue) {
        let cell = Cell {
            size,
            value,
            immutable: false,
            epoch: self.epoch,
            writer: 0,
            header: false,
            reference: None,
        };
        write_cell(&mut self.raw, addr as i64, cell);
    }

    /// The effect of a call that may write the heap (see the module documentation).
    pub fn clobber(&mut self) {
        self.epoch += 1;
        self.raw.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(size: u8, v: i64, writer: u32) -> Cell {
        Cell {
            size,
            value: RtValue::Int(v),
            immutable: false,
            epoch: 0,
            writer,
            header: false,
            reference: None,
        }
    }

    /// A byte written into the middle of a word keeps the word's other bytes as cells of
    /// their own; reads assemble the bytes little-endian.
    #[test]
    fn writes_cut_older_cells_and_reads_assemble_bytes() {
        let mut cells = Cells::new();
        write_cell(&mut cells, 8, int(8, 0x1122_3344_5566_7788, 1));
        write_cell(&mut cells, 10, int(1, 0xaa, 2));
        let layout: Vec<(i64, u8, u64, u32)> = cells
            .iter()
            .map(|(&s, c)| (s, c.size, c.value.bits(), c.writer))
            .collect();
        assert_eq!(
            layout,
            vec![(8, 2, 0x7788, 1), (10, 1, 0xaa, 2), (11, 5, 0x11_2233_4455, 1)]
        );
        let obj = HeapObject {
            kind: ObjKind::Struct { size: 24 },
            class: 0,
            cells,
            escaped: false,
            escape_epoch: 0,
            rebuilt: false,
        };
        assert_eq!(
            obj.read(View::new(8, 8), Kind::Int, 0, false).bits(),
            0x1122_3344_55aa_7788
        );
        assert_eq!(obj.read(View::new(9, 2), Kind::Int, 0, false).bits(), 0xaa77);
        // bytes 16.. were never written: zero
        assert_eq!(obj.read(View::new(14, 4), Kind::Int, 0, false).bits(), 0x1122);
    }

    /// A mutable write to an external object goes stale at a heap-writing call for mutable
    /// reads, while immutable reads still see it.
    #[test]
    fn calls_stale_mutable_cells_for_mutable_reads_only() {
        let mut h = Heap::default();
        let a = external_address(7);
        h.write(a, View::new(16, 8), RtValue::Int(5), false, 0);
        assert_eq!(h.read(a, View::new(16, 8), Kind::Int, false), RtValue::Int(5));
        h.clobber();
        assert_ne!(h.read(a, View::new(16, 8), Kind::Int, false), RtValue::Int(5));
        assert_eq!(h.read(a, View::new(16, 8), Kind::Int, true), RtValue::Int(5));
    }

    /// A heap-writing call changes an escaped object's cells; a later write that cuts a cell
    /// keeps what the call did to the cell's other bytes (reading them before or after the
    /// write gives the same).
    #[test]
    fn cutting_a_cell_keeps_what_earlier_calls_did() {
        let mut h = Heap::default();
        let a = h.alloc(ObjKind::Struct { size: 32 }, 0, false);
        h.write(a, View::new(8, 8), RtValue::float(1.5), false, 0);
        h.escape_value(RtValue::Ref(a));
        h.clobber();
        let before = h.read(a, View::new(9, 1), Kind::Int, false);
        h.write(a, View::new(14, 2), RtValue::Int(7), false, 1);
        assert_eq!(h.read(a, View::new(9, 1), Kind::Int, false), before);
    }

    /// Raw memory is byte-addressed: a byte store changes one byte of a word.
    #[test]
    fn raw_memory_is_byte_addressed() {
        let mut h = Heap::default();
        h.write_raw(0x1000, 8, RtValue::Int(0x1234));
        h.write_raw(0x1001, 1, RtValue::Int(0));
        assert_eq!(h.read_raw(0x1000, 8, Kind::Int), RtValue::Int(0x34));
        assert_eq!(h.read_raw(0x1000, 1, Kind::Int), RtValue::Int(0x34));
    }
}
