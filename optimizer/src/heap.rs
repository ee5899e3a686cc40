//! The heap cache for non-virtual objects: what the optimizer knows about the contents of
//! memory at the current point of the pass.
//!
//! Every entry states "the field (or array item with a constant index) of this object holds
//! this value right now": it is only created from a read (the value read) or from a write of a
//! value that the field stores exactly (full-width fields, or narrow integer fields when the
//! value provably fits). Entries are keyed by descriptor; a write kills the entries of every
//! location that may share a byte with it ([`crate::alias::Layout::may_overlap`]: under
//! type-based aliasing only its own descriptor's, under byte views every overlapping field or
//! item of any descriptor) on every object that may be the same object (two different
//! allocations of this trace never are, nor an allocation and a constant or a value that
//! existed before it). A call that may write the heap, a barrier op, any
//! other heap write and a `label` clear the mutable entries. Immutable fields
//! (`FieldDescr::immutable`) survive calls (the interpreter's model: calls never change what
//! an immutable read sees), but not writes. Immutable item reads (`getarrayitem_gc_pure_*`)
//! have a cache of their own: they see an item as calls leave it, so they are never answered
//! from, nor feed, the mutable items' entries (a mutable read after a call may see another
//! value than an immutable one of the same item).

use crate::alias::{Index, Layout, Loc};
use smallvec::SmallVec;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{DescrRef, Value};

type Entries = SmallVec<[(Value, Value); 4]>;

/// See the module documentation.
#[derive(Default, Debug)]
pub(crate) struct HeapCache {
    /// Struct fields: descriptor -> (object, value).
    fields: FxHashMap<DescrRef, Entries>,
    /// Array items with a constant index: (descriptor, index) -> (object, value).
    items: FxHashMap<(DescrRef, i64), Entries>,
    /// Reads of immutable array items with any index: (descriptor, array, index) -> value.
    pure_items: FxHashMap<(DescrRef, Value, Value), Value>,
}

impl Clone for HeapCache {
    fn clone(&self) -> HeapCache {
        let mut h = HeapCache::default();
        h.clone_from(self);
        h
    }

    /// Field by field, keeping this value's allocations.
    fn clone_from(&mut self, o: &HeapCache) {
        self.fields.clone_from(&o.fields);
        self.items.clone_from(&o.items);
        self.pure_items.clone_from(&o.pure_items);
    }
}

impl HeapCache {
    /// Forget everything.
    pub fn clear(&mut self) {
        self.fields.clear();
        self.items.clear();
        self.pure_items.clear();
    }

    /// Forget everything a heap-writing call may change: all but immutable fields and
    /// immutable items.
    pub fn clear_mutable(&mut self, immutable_field: impl Fn(DescrRef) -> bool) {
        self.fields.retain(|&d, _| immutable_field(d));
        self.items.clear();
    }

    /// Forget all but the immutable fields (`keep` says which entries: those whose object
    /// and value stay what they are, as constants and values defined before a loop's label
    /// do in every iteration of the loop: kept at its label).
    pub fn keep_fields(&mut self, immutable_field: impl Fn(DescrRef) -> bool, keep: impl Fn(Value, Value) -> bool) {
        self.fields.retain(|&d, e| {
            e.retain(|(o, v)| keep(*o, *v));
            immutable_field(d) && !e.is_empty()
        });
        self.items.clear();
        self.pure_items.clear();
    }

    /// The known value of field `d` of `obj`.
    pub fn field(&self, d: DescrRef, obj: Value) -> Option<Value> {
        self.fields.get(&d)?.iter().find(|e| e.0 == obj).map(|e| e.1)
    }

    /// Remember that field `d` of `obj` holds `val` (after a read, or after a write once the
    /// write was reported with [`HeapCache::write_field`]).
    pub fn remember_field(&mut self, d: DescrRef, obj: Value, val: Value) {
        let e = self.fields.entry(d).or_default();
        if let Some(slot) = e.iter_mut().find(|e| e.0 == obj) {
            slot.1 = val;
        } else {
            e.push((obj, val));
        }
    }

    /// A write of `loc` of `obj`: kill the entries of every location that may share a byte
    /// with it, on every object that may alias `obj`.
    pub fn write(&mut self, loc: Loc, obj: Value, layout: &Layout, may_alias: impl Fn(Value, Value) -> bool) {
        let others = layout.overlapping(loc.descr);
        for d in std::iter::once(loc.descr).chain(others.iter().copied()) {
            if let Some(e) = self.fields.get_mut(&d) {
                if layout.may_overlap(loc, Loc::field(d)) {
                    e.retain(|e| !may_alias(e.0, obj));
                }
            }
        }
        if loc.index != Index::Field || !others.is_empty() {
            for (&(d, k), e) in self.items.iter_mut() {
                if layout.may_overlap(loc, Loc::item(d, Some(k))) {
                    e.retain(|e| !may_alias(e.0, obj));
                }
            }
            self.pure_items
                .retain(|&(d, _, _), _| d != loc.descr && !others.contains(&d));
        }
    }

    /// Each field entry (mutable or immutable): descriptor, object, value.
    pub fn for_each_field(&self, mut f: impl FnMut(DescrRef, Value, Value)) {
        for (&d, e) in &self.fields {
            for &(o, v) in e {
                f(d, o, v);
            }
        }
    }

    /// Whether no field entry is known.
    pub fn no_fields(&self) -> bool {
        self.fields.values().all(|e| e.is_empty())
    }

    /// Every mutable and immutable field entry and every constant-index item entry, as
    /// (descriptor, index (`None` for a field), object, value).
    pub fn entries(&self) -> Vec<(DescrRef, Option<i64>, Value, Value)> {
        let fields = self
            .fields
            .iter()
            .flat_map(|(&d, e)| e.iter().map(move |&(o, v)| (d, None, o, v)));
        let items = self
            .items
            .iter()
            .flat_map(|(&(d, i), e)| e.iter().map(move |&(o, v)| (d, Some(i), o, v)));
        fields.chain(items).collect()
    }

    /// The known value of item `idx` of array `obj` (descriptor `d`).
    pub fn item(&self, d: DescrRef, idx: i64, obj: Value) -> Option<Value> {
        self.items.get(&(d, idx))?.iter().find(|e| e.0 == obj).map(|e| e.1)
    }

    /// Remember that item `idx` of `obj` holds `val`.
    pub fn remember_item(&mut self, d: DescrRef, idx: i64, obj: Value, val: Value) {
        let e = self.items.entry((d, idx)).or_default();
        if let Some(slot) = e.iter_mut().find(|e| e.0 == obj) {
            slot.1 = val;
        } else {
            e.push((obj, val));
        }
    }

    /// The known result of an immutable item read.
    pub fn pure_item(&self, d: DescrRef, obj: Value, idx: Value) -> Option<Value> {
        self.pure_items.get(&(d, obj, idx)).copied()
    }

    /// Remember an immutable item read.
    pub fn remember_pure_item(&mut self, d: DescrRef, obj: Value, idx: Value, val: Value) {
        self.pure_items.insert((d, obj, idx), val);
    }
}
