//! The interpreter's heap model: objects the trace allocated (with exact contents), the
//! remembered writes to external objects and raw memory, the heap epoch, and the
//! deterministic values read from memory nobody wrote.
//!
//! # Addresses
//!
//! - Objects allocated by the run (by `new*` ops or rebuilt at a guard exit) get addresses
//!   `ALLOC_BASE + k * ALLOC_STRIDE` in allocation order. Any other non-null address is
//!   **external**: an input, a `ConstPtr`, a call result, a value read from external memory.
//! - Deterministic external addresses ([`external_address`]) live in
//!   `0x5000_0000_0000..0x6000_0000_0000`; [`crate::trace::symbol_address`] (named constants)
//!   hashes into `0x4000_0000_0000..0x8000_0000_0000`; allocated objects start at
//!   `0x1000_0000_0000` and stay far below both, so an allocated object is never mistaken for
//!   an external one (two hashed external addresses could collide, improbably).
//!
//! # Reads of memory nobody wrote
//!
//! A field (array item, string character, raw word) of an external object that this run has
//! not written reads as a value derived from `(address, slot, epoch)` by
//! [`derived_value`]: integers in `0..128`, floats finite in `0..1000`, references
//! non-null external addresses. Immutable fields (`FieldDescr::immutable`,
//! `getarrayitem_gc_pure_*`), array and string lengths (in `0..64`) and string contents of
//! external objects use epoch 0, so they never change. [`Heap::preset`] (from
//! `RunConfig::preset`, filled by the guided input search) overrides the derived value of
//! chosen slots of initial memory. Unwritten fields of allocated objects read as zero / null.
//!
//! # Escape and calls that may write the heap
//!
//! An allocated object **escapes** when a call happens while it is reachable from the call's
//! arguments, from an external object, from raw memory or from an object that escaped
//! earlier ([`Heap::escape_at_call`]); from then on it stays escaped (the callee may have kept
//! it). Escape is decided at calls, not at stores, because only a call lets the outside world
//! look: a reference stored into an external object and overwritten before any call was
//! never seen, so an optimized trace that reorders or drops such stores behaves the same.
//! A call that may write the heap ([`Heap::clobber`]) bumps the epoch and forgets every
//! non-immutable write to external objects and raw memory (so the next read derives a fresh
//! value from the new epoch). For an escaped allocated object the effect is computed lazily
//! ([`HeapObject::effective`]): every heap-writing call after the object escaped replaces
//! each mutable integer or float field (written or not; an absent field counts as zero) that
//! was not written since by a value (as [`derived_value`]) mixed from the field's current
//! value, the slot and the call's epoch. The new value depends on the current value only, not
//! on how it got there. A mutable reference field becomes a derived external address mixed
//! from the slot and the epoch alone (the current value may be an allocated object's address,
//! which is not the same in an optimized run). String contents are left alone. The rule depends
//! only on contents and epochs, never on addresses or on whether a zero was stored
//! explicitly, so an optimized trace that materializes a virtual with fewer explicit stores
//! (or drops a redundant write-back) behaves the same, while a heap cache that wrongly
//! forwards a mutable field across such a call produces a different value.

use super::RtValue;
use crate::descr::ArrayDescr;
use crate::opcode::Kind;
use crate::rng::hash_words;
use std::collections::{BTreeMap, HashMap};

/// Address of the first object allocated by a run.
pub const ALLOC_BASE: u64 = 0x1000_0000_0000;
/// Distance between consecutive allocated objects.
pub const ALLOC_STRIDE: u64 = 0x1_0000;
/// The reference `force_token` returns.
pub const FORCE_TOKEN: u64 = 0x3000_0000_0000;

/// A deterministic, 8-byte aligned, non-null external address derived from `h`.
pub fn external_address(h: u64) -> u64 {
    0x5000_0000_0000 | (h & 0x0fff_ffff_fff8) | 0x8
}

/// The value of kind `kind` derived from the hash `h` (see the module documentation):
/// integers in `0..128` (unchanged by every narrow field's sign or zero extension, so a
/// derived value reads the same through any field size), finite floats in `0..1000`,
/// non-null external references.
pub fn derived_value(kind: Kind, h: u64) -> RtValue {
    match kind {
        Kind::Float => RtValue::float((h % 1_000_000) as f64 / 1000.0),
        Kind::Ref => RtValue::Ref(external_address(h)),
        _ => RtValue::Int((h % 128) as i64),
    }
}

/// Where a value lives inside an object.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// A struct field, by byte offset.
    Field(i64),
    /// An array item or string character, by index.
    Item(u64),
    /// A field of an array-of-structs item: (index, byte offset in the item).
    Interior(u64, i64),
    /// The length of an external array or string (never written).
    Len,
}

impl Slot {
    /// The slot as words for hashing.
    pub(crate) fn words(self) -> [u64; 3] {
        match self {
            Slot::Field(o) => [1, o as u64, 0],
            Slot::Item(i) => [2, i, 0],
            Slot::Interior(i, o) => [3, i, o as u64],
            Slot::Len => [4, 0, 0],
        }
    }
}

/// A stored value and whether its field is immutable (survives heap-writing calls).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The value.
    pub value: RtValue,
    /// Whether the field is immutable.
    pub immutable: bool,
    /// The heap epoch when it was written.
    pub epoch: u64,
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
        /// The array descriptor of the allocation: the only one its items and length may be
        /// accessed with (the optimizer's heap cache keeps apart what different descriptors
        /// access, as PyPy's does, so mixing them is an invalid operation).
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
    /// `new_with_vtable`; 0 for everything else.
    pub class: u64,
    /// The fields written so far (absent fields are zero / null).
    pub fields: BTreeMap<Slot, Cell>,
    /// Whether the outside world can see it (see the module documentation).
    pub escaped: bool,
    /// The heap epoch when it escaped (meaningful when `escaped`).
    pub escape_epoch: u64,
    /// Whether a guard exit rebuilt it from a virtual description.
    pub rebuilt: bool,
}

impl HeapObject {
    /// The number of items for arrays and strings.
    pub fn length(&self) -> Option<u64> {
        match self.kind {
            ObjKind::Struct { .. } => None,
            ObjKind::Array { len, .. } | ObjKind::Str { len } | ObjKind::Unicode { len } => Some(len),
        }
    }

    /// The value a read of `slot` returns when the heap epoch is `epoch`: the stored value
    /// (zero of `kind` when absent), transformed once per heap-writing call made after the
    /// last write and after the escape (see the module documentation). The field is
    /// immutable (never transformed) when its cell says so or `immutable` is set (the reading
    /// descriptor is immutable).
    pub fn effective(&self, slot: Slot, kind: Kind, epoch: u64, immutable: bool) -> RtValue {
        let (value, immutable, written) = match self.fields.get(&slot) {
            Some(c) => (c.value.with_kind(kind), c.immutable || immutable, c.epoch),
            None => (RtValue::zero(kind), immutable, 0),
        };
        if !self.escaped || immutable || matches!(self.kind, ObjKind::Str { .. } | ObjKind::Unicode { .. }) {
            return value;
        }
        // Each heap-writing call since the last write (or the escape) maps the current value
        // to a new one; the map depends only on that value, the slot and the call's epoch.
        let [a, b, c] = slot.words();
        let mut v = value;
        for e in written.max(self.escape_epoch) + 1..=epoch {
            let h = hash_words(&[0xc10b, v.bits(), a, b, c, e]);
            v = match v {
                // an allocated object's address differs between runs of the same program
                // (allocation removal), so a reference field's new value ignores it
                RtValue::Ref(_) => derived_value(Kind::Ref, hash_words(&[0xc10c, a, b, c, e])),
                other => derived_value(other.kind(), h),
            };
        }
        v
    }
}

/// What the run knows about an external object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalObject {
    /// Writes this run made that are still valid (a heap-writing call forgets the mutable ones).
    pub written: BTreeMap<Slot, Cell>,
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
    /// Raw-memory words written by the run and still valid, by address.
    pub raw: BTreeMap<u64, RtValue>,
    /// Number of heap-writing calls so far.
    pub epoch: u64,
    /// Number of objects allocated so far.
    pub allocated: u64,
    /// Initial contents of external memory (from `RunConfig::preset`): an unwritten slot
    /// listed here reads as this value instead of a derived one, while no heap-writing call
    /// has happened (or always, for immutable reads).
    pub preset: HashMap<(u64, Slot), RtValue>,
}

impl Heap {
    /// Whether `addr` is an object allocated by this run.
    pub fn is_allocated(&self, addr: u64) -> bool {
        self.objects.contains_key(&addr)
    }

    /// Allocate a new object; returns its address.
    pub fn alloc(&mut self, kind: ObjKind, class: u64, rebuilt: bool) -> u64 {
        let addr = ALLOC_BASE + self.allocated * ALLOC_STRIDE;
        self.allocated += 1;
        self.objects.insert(
            addr,
            HeapObject {
                kind,
                class,
                fields: BTreeMap::new(),
                escaped: false,
                escape_epoch: 0,
                rebuilt,
            },
        );
        addr
    }

    /// Mark the allocated object at `addr` (if it is one) and everything reachable from it
    /// as escaped.
    pub fn escape(&mut self, addr: u64) {
        let epoch = self.epoch;
        let mut work = vec![addr];
        while let Some(a) = work.pop() {
            let Some(obj) = self.objects.get_mut(&a) else { continue };
            if obj.escaped {
                continue;
            }
            obj.escaped = true;
            obj.escape_epoch = epoch;
            for cell in obj.fields.values() {
                if let RtValue::Ref(r) = cell.value {
                    work.push(r);
                }
            }
        }
    }

    /// Escape `v` if it is a reference.
    pub fn escape_value(&mut self, v: RtValue) {
        if let RtValue::Ref(r) = v {
            self.escape(r);
        }
    }

    /// Read `slot` of the object at `addr` as a value of `kind` (no null or bounds checks:
    /// the caller does them). `immutable` reads of external objects ignore the epoch.
    pub fn read(&mut self, addr: u64, slot: Slot, kind: Kind, immutable: bool) -> RtValue {
        if let Some(obj) = self.objects.get(&addr) {
            return obj.effective(slot, kind, self.epoch, immutable);
        }
        let ext = self.external.entry(addr).or_default();
        if let Some(c) = ext.written.get(&slot) {
            return c.value.with_kind(kind);
        }
        let epoch = if immutable { 0 } else { self.epoch };
        if epoch == 0 {
            if let Some(v) = self.preset.get(&(addr, slot)) {
                return v.with_kind(kind);
            }
        }
        let [a, b, c] = slot.words();
        derived_value(kind, hash_words(&[0x0b1ec7, addr, a, b, c, epoch]))
    }

    /// Whether a read of `slot` of `addr` now would come from the initial contents of
    /// external memory (an external object, slot unwritten, before any heap-writing call or
    /// through an immutable descriptor): then [`Heap::preset`] can choose its value.
    pub fn reads_initial_memory(&self, addr: u64, slot: Slot, immutable: bool) -> bool {
        !self.objects.contains_key(&addr)
            && (immutable || self.epoch == 0)
            && !self.external.get(&addr).is_some_and(|e| e.written.contains_key(&slot))
    }

    /// Write `slot` of the object at `addr` (no null or bounds checks). Whether a stored
    /// reference escapes is decided at the next call ([`Heap::escape_at_call`]).
    pub fn write(&mut self, addr: u64, slot: Slot, value: RtValue, immutable: bool) {
        let cell = Cell {
            value,
            immutable,
            epoch: self.epoch,
        };
        if let Some(obj) = self.objects.get_mut(&addr) {
            obj.fields.insert(slot, cell);
        } else {
            self.external.entry(addr).or_default().written.insert(slot, cell);
        }
    }

    /// A call is about to happen with these arguments: every allocated object reachable from
    /// them, from external objects, from raw memory or from an already escaped object escapes
    /// now (and stays escaped).
    pub fn escape_at_call(&mut self, args: &[RtValue]) {
        let mut work: Vec<u64> = args
            .iter()
            .filter_map(|v| if let RtValue::Ref(r) = v { Some(*r) } else { None })
            .collect();
        for ext in self.external.values() {
            work.extend(
                ext.written
                    .values()
                    .filter_map(|c| if let RtValue::Ref(r) = c.value { Some(r) } else { None }),
            );
        }
        work.extend(
            self.raw
                .values()
                .filter_map(|v| if let RtValue::Ref(r) = v { Some(*r) } else { None }),
        );
        for (&a, obj) in &self.objects {
            if obj.escaped {
                work.push(a);
            }
        }
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
            for cell in obj.fields.values() {
                if let RtValue::Ref(r) = cell.value {
                    work.push(r);
                }
            }
        }
    }

    /// Read a raw-memory word at `addr` as a value of `kind`.
    pub fn read_raw(&self, addr: u64, kind: Kind) -> RtValue {
        match self.raw.get(&addr) {
            Some(v) => v.with_kind(kind),
            None => derived_value(kind, hash_words(&[0x4a3, addr, self.epoch])),
        }
    }

    /// Write a raw-memory word at `addr` (a stored reference escapes at the next call).
    pub fn write_raw(&mut self, addr: u64, value: RtValue) {
        self.raw.insert(addr, value);
    }

    /// The effect of a call that may write the heap (see the module documentation).
    pub fn clobber(&mut self) {
        self.epoch += 1;
        for ext in self.external.values_mut() {
            ext.written.retain(|_, c| c.immutable);
        }
        self.raw.clear();
    }
}
