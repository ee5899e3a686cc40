//! The heap cache for non-virtual objects: what the optimizer knows about the contents of
//! memory at the current point of the pass.
//!
//! Every entry states "the field (or array item with a constant index) of this object holds
//! this value right now": it is only created from a read (the value read) or from a write of a
//! value that the field stores exactly (full-width fields, or narrow integer fields when the
//! value provably fits). Entries are keyed by descriptor; a write through a descriptor kills
//! the entries of every object that may be the same object (two different allocations of this
//! trace never are), for that descriptor and for every descriptor whose bytes overlap it. A
//! call that may write the heap, a barrier op, any other heap write and a `label` clear the
//! mutable entries. Immutable fields (`FieldDescr::immutable`) and `getarrayitem_gc_pure`
//! items survive calls (the interpreter's model: immutable slots never change), but not writes.

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

    /// A write of field `d` of `obj`: kill entries of `d` and of the descriptors in `overlap`
    /// for every object that may alias `obj`.
    pub fn write_field(
        &mut self,
        d: DescrRef,
        overlap: &[DescrRef],
        obj: Value,
        may_alias: impl Fn(Value, Value) -> bool,
    ) {
        if let Some(e) = self.fields.get_mut(&d) {
            e.retain(|e| !may_alias(e.0, obj));
        }
        for &o in overlap {
            if let Some(e) = self.fields.get_mut(&o) {
                e.retain(|e| !may_alias(e.0, obj));
            }
        }
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

    /// A write of item `idx` (`None`: not a constant) of `obj` through descriptor `d`. Items of
    /// other array descriptors are forgotten entirely (their layouts may overlap).
    pub fn write_item(&mut self, d: DescrRef, idx: Option<i64>, obj: Value, may_alias: impl Fn(Value, Value) -> bool) {
        self.pure_items.clear();
        match idx {
            Some(k) => {
                self.items.retain(|&(dd, kk), e| {
                    if dd != d {
                        return false;
                    }
                    if kk == k {
                        e.retain(|e| !may_alias(e.0, obj));
                    }
                    true
                });
            }
            None => self.items.retain(|&(dd, _), e| {
                if dd != d {
                    return false;
                }
                e.retain(|e| !may_alias(e.0, obj));
                true
            }),
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
