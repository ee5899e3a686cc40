//! Memory of non-virtual objects: the heap cache ([`crate::heap`]) and the delayed writes,
//! both asking [`crate::alias`] which locations may share a byte under the trace's memory
//! model.

use super::pure::Key;
use super::{Pass, MAX_EXIT_WRITES};
use crate::alias::{Index, Layout, Loc};
use crate::domain::IntBound;
use crate::heap::HeapCache;
use crate::Reason;
use smallvec::SmallVec;
use trace_ir::{Descr, DescrRef, Kind, Op, Opcode, Trace, Value, VirtualField, VirtualKind};

/// A write to a non-virtual object that is not emitted yet (see `Memory::pending`).
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingWrite {
    /// Where: a field, or an array item at a constant index (`index` holds it).
    pub(super) loc: Loc,
    /// The index operand of an array item write.
    pub(super) index: Option<Value>,
    pub(super) obj: Value,
    pub(super) val: Value,
    /// The input op that wrote it.
    pub(super) src: u32,
    /// What memory holds in the slot (the delayed writes of it never happened), when the
    /// heap cache knows it.
    pub(super) prev: Option<Value>,
}

/// Facts about a descriptor that the pass asks often.
#[derive(Clone, Debug, Default)]
pub(super) struct DescrFacts {
    /// Field: byte range, integer width and signedness, immutability.
    pub(super) offset: i64,
    pub(super) size: u8,
    pub(super) signed: bool,
    pub(super) kind: Option<Kind>,
    pub(super) immutable: bool,
    pub(super) is_field: bool,
}

/// The pass's knowledge of memory (reused from trace to trace).
#[derive(Default)]
pub(crate) struct Memory {
    pub heap: HeapCache,
    /// Writes delayed until something could observe them (a read of a possibly aliasing slot,
    /// a guard, a call or any other op with effects, the end of the trace), so that a write
    /// overwritten before that is never emitted. Only with the heap cache on.
    pub pending: Vec<PendingWrite>,
    /// Per descriptor: byte range, width, signedness, kind, immutability.
    pub descr_facts: Vec<DescrFacts>,
    /// The descriptors' bytes and which may overlap under the trace's memory model.
    pub layout: Layout,
}

impl Clone for Memory {
    fn clone(&self) -> Memory {
        let mut m = Memory::default();
        m.clone_from(self);
        m
    }

    /// Field by field, keeping this value's allocations.
    fn clone_from(&mut self, o: &Memory) {
        self.heap.clone_from(&o.heap);
        self.pending.clone_from(&o.pending);
        self.descr_facts.clone_from(&o.descr_facts);
        self.layout.clone_from(&o.layout);
    }
}

impl Memory {
    /// Empty tables for `input`'s descriptors followed by `extra`.
    pub fn reset(&mut self, input: &Trace, extra: &[Descr]) {
        self.heap.clear();
        self.pending.clear();
        self.descr_facts.clear();
        self.descr_facts
            .extend(input.descrs.iter().chain(extra).map(|d| match d {
                Descr::Field(f) => DescrFacts {
                    offset: f.offset,
                    size: f.size.max(1),
                    signed: f.signed,
                    kind: Some(f.kind),
                    immutable: f.immutable,
                    is_field: true,
                },
                Descr::Array(a) => DescrFacts {
                    size: a.item_size.max(1),
                    signed: a.signed,
                    kind: Some(a.kind),
                    ..Default::default()
                },
                _ => DescrFacts::default(),
            }));
        self.layout.reset(input, extra);
    }
}

impl<'a> Pass<'a> {
    /// Whether storing `val` through descriptor `d` and reading it back gives `val` exactly
    /// (full-width slots, or narrow integers that provably fit).
    pub(super) fn fits(&self, d: DescrRef, val: Value) -> bool {
        let f = &self.mem.descr_facts[d.index()];
        if f.kind != Some(Kind::Int) || f.size >= 8 {
            return true;
        }
        let b = self.bound_of(val);
        let bits = 8 * f.size as u32;
        let (lo, hi) = if f.signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        !b.is_empty() && b.lower_i64() >= lo && b.upper_i64() <= hi
    }

    /// The abstract value of a value read through descriptor `d` (narrow integer slots).
    pub(super) fn read_bound(&self, d: DescrRef) -> Option<IntBound<u64>> {
        let f = &self.mem.descr_facts[d.index()];
        if f.kind != Some(Kind::Int) || f.size >= 8 {
            return None;
        }
        let bits = 8 * f.size as u32;
        Some(if f.signed {
            IntBound::from_range_i64(-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            IntBound::from_range_i64(0, (1i64 << bits) - 1)
        })
    }

    pub(super) fn getfield(&mut self, op: &Op, args: &[Value]) -> Value {
        let obj = args[0];
        let d = op.descr.expect("verified: field ops have a descriptor");
        if let Some(id) = self.virt_of(obj) {
            if self.virtual_field_ok(id, d) {
                let found = self.virtuals[id as usize].get(VirtualField::Field(d));
                let val = match found {
                    Some(val) => Some(self.find(val)),
                    None => Some(self.zero_of(op.opcode.result_kind())),
                };
                if let Some(val) = val {
                    if self.fits(d, val) {
                        self.removed(Reason::VirtualAccess);
                        return val;
                    }
                }
            }
            self.force(obj);
        }
        if self.opts.heapcache {
            if let Some(val) = self.mem.heap.field(d, obj) {
                self.removed(Reason::HeapCache);
                return self.find(val);
            }
        }
        let v = self.emit_load(op.opcode, Loc::field(d), args, obj);
        if self.opts.heapcache {
            self.mem.heap.remember_field(d, obj, v);
        }
        v
    }

    /// `record_known_field(p, v, descr=F)`, a promise that field `F` of `p` holds `v`: the
    /// heap cache knows it from here on, as if the field had been read. The hint stays
    /// (after the delayed writes that may touch the field) unless the heap cache already knew
    /// the field: it emits no code, and it is what decides an untouched field of an external
    /// object for the interpreter, as `record_exact_class` decides a class. Not used on
    /// virtual objects or values, or where `v` would not read back as itself.
    pub(super) fn record_known_field(&mut self, op: &Op, args: &[Value]) {
        let (obj, val) = (self.find(args[0]), self.find(args[1]));
        let d = op.descr.expect("verified: field ops have a descriptor");
        if self.opts.guards {
            self.set_nonnull(obj);
        }
        if self.is_virtual(obj)
            || self.is_virtual(val)
            || (self.opts.heapcache && self.mem.heap.field(d, obj).is_some())
        {
            self.removed(Reason::Hint);
            return;
        }
        self.flush_conflicting(Loc::field(d), obj, None);
        if self.opts.heapcache && self.fits(d, val) {
            self.mem.heap.remember_field(d, obj, val);
        }
        self.emit(Op {
            opcode: op.opcode,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(&[obj, val]),
        });
    }

    /// Emit a heap load that the heap cache could not forward: delayed writes it may observe
    /// are flushed first, and the result gets the bound the descriptor's size and sign give.
    pub(super) fn emit_load(&mut self, opcode: Opcode, loc: Loc, args: &[Value], obj: Value) -> Value {
        let d = loc.descr;
        self.flush_conflicting(loc, obj, None);
        let v = self.emit(Op {
            opcode,
            descr: Some(d),
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if self.opts.intbounds {
            if let Some(b) = self.read_bound(d) {
                self.v.info[v.as_op().unwrap().index()].bound = b;
            }
        }
        v
    }

    /// Emit every delayed write, in program order.
    pub(super) fn flush_writes(&mut self) {
        if self.mem.pending.is_empty() {
            return;
        }
        for w in std::mem::take(&mut self.mem.pending) {
            self.emit_write(w);
        }
    }

    /// Emit the delayed writes an exit cannot perform, in program order: those whose value
    /// is not virtual, and those of immutable fields. The stores of virtual objects into
    /// mutable slots stay delayed; a guard's resume data performs them at its exit
    /// ([`trace_ir::GuardData::writes`]), and a call that changes nothing cannot see them.
    pub(super) fn flush_for_exit(&mut self) {
        if self.mem.pending.is_empty() {
            return;
        }
        for k in 0..self.mem.pending.len() {
            let val = self.find(self.mem.pending[k].val);
            self.mem.pending[k].val = val;
        }
        // (an item index the resume data can name)
        let at_exit = |s: &Self, w: &PendingWrite| {
            s.is_virtual(w.val)
                && !s.mem.descr_facts[w.loc.descr.index()].immutable
                && match w.loc.index {
                    Index::Field => true,
                    Index::Item(k) => (0..=u32::MAX as i64).contains(&k),
                    Index::AnyItem => false,
                }
        };
        let n = self.mem.pending.len();
        if n <= MAX_EXIT_WRITES && self.mem.pending.iter().all(|w| at_exit(self, w)) {
            return;
        }
        let mut flush: SmallVec<[PendingWrite; 4]> = SmallVec::new();
        let mut pending = std::mem::take(&mut self.mem.pending);
        // (the newest MAX_EXIT_WRITES may stay)
        let kept = pending.iter().filter(|w| at_exit(self, w)).count();
        let mut skip = kept.saturating_sub(MAX_EXIT_WRITES);
        pending.retain(|w| {
            let mut keep = at_exit(self, w);
            if keep && skip > 0 {
                skip -= 1;
                keep = false;
            }
            if !keep {
                flush.push(*w);
            }
            keep
        });
        self.mem.pending = pending;
        for w in flush {
            self.emit_write(w);
        }
    }

    /// Emit a delayed write (materializing the value first if it is a virtual object).
    pub(super) fn emit_write(&mut self, w: PendingWrite) {
        let val = self.find(w.val);
        let mark = self.origin_mark();
        self.force(val);
        let w = PendingWrite { val, ..w };
        let op = match w.index {
            None => Op {
                opcode: Opcode::SetfieldGc,
                descr: Some(w.loc.descr),
                guard: None,
                args: SmallVec::from_slice(&[w.obj, w.val]),
            },
            Some(idx) => Op {
                opcode: Opcode::SetarrayitemGc,
                descr: Some(w.loc.descr),
                guard: None,
                args: SmallVec::from_slice(&[w.obj, idx, w.val]),
            },
        };
        self.emit(op);
        self.note_origins_since(mark, w.src);
    }

    /// Emit the delayed writes that an access to `loc` of `obj` may observe or must stay
    /// ordered with (any that may share a byte with it, under the trace's memory model);
    /// `except` is a write that the access replaces.
    pub(super) fn flush_conflicting(&mut self, loc: Loc, obj: Value, except: Option<usize>) {
        if self.mem.pending.is_empty() {
            return;
        }
        let (info, layout) = (&self.v.info, &self.mem.layout);
        let conflicts = |k: usize, w: &PendingWrite| {
            Some(k) != except && layout.may_overlap(w.loc, loc) && Self::may_alias(info, w.obj, obj)
        };
        if !self.mem.pending.iter().enumerate().any(|(k, w)| conflicts(k, w)) {
            return;
        }
        // partition in place (program order kept on both sides), without allocating
        let mut flush: SmallVec<[PendingWrite; 4]> = SmallVec::new();
        let mut k = 0usize;
        self.mem.pending.retain(|w| {
            let c = conflicts(k, w);
            k += 1;
            if c {
                flush.push(*w);
            }
            !c
        });
        for w in flush {
            self.emit_write(w);
        }
    }

    /// A write to a non-virtual object: delayed (replacing an earlier delayed write of the
    /// same slot, which is then dead) when the heap cache is on, emitted otherwise.
    pub(super) fn delay_write(&mut self, w: PendingWrite) {
        if !self.opts.heapcache {
            self.emit_write(w);
            return;
        }
        // An overwritten write is dead, references included (calls flush the delayed writes,
        // and a stored object escapes only if it is reachable at a call:
        // docs/memory-model.md); a virtual object whose only store is overwritten is never
        // allocated.
        let same = self.mem.pending.iter().position(|p| p.loc == w.loc && p.obj == w.obj);
        self.flush_conflicting(w.loc, w.obj, same);
        // The replaced write is dead; the new one goes last, so the delayed writes stay in
        // the order of their latest writes (the order in which the original stored the
        // values the heap ends up holding, and so in which stored objects escape).
        let prev = match self.mem.pending.iter().position(|p| p.loc == w.loc && p.obj == w.obj) {
            Some(k) => {
                let old = self.mem.pending.remove(k);
                self.removed_at(old.src as usize, Reason::DeadStore);
                old.prev
            }
            None => self.memory_value(&w),
        };
        // A slot written back with what memory holds needs no write at all (a field saved,
        // overwritten and restored before anything observed it).
        if let Some(p) = prev {
            if self.find(p) == self.find(w.val) && self.mem.layout.alone(w.loc.descr) {
                self.removed_at(w.src as usize, Reason::RedundantWrite);
                return;
            }
        }
        self.mem.pending.push(PendingWrite { prev, ..w });
    }

    /// What memory holds in the slot `w` writes, when no delayed write of it is pending and
    /// the heap cache knows it (then the cache's value is memory's).
    fn memory_value(&self, w: &PendingWrite) -> Option<Value> {
        match w.loc.index {
            Index::Field => self.mem.heap.field(w.loc.descr, w.obj),
            Index::Item(k) => self.mem.heap.item(w.loc.descr, k, w.obj),
            Index::AnyItem => None,
        }
    }

    pub(super) fn setfield(&mut self, op: &Op, args: &[Value]) {
        let (obj, val) = (args[0], args[1]);
        let d = op.descr.expect("verified: field ops have a descriptor");
        if let Some(id) = self.virt_of(obj) {
            // a narrow field truncates: track only values that fit (otherwise the object is
            // materialized and the real write does the truncation)
            if self.virtual_field_ok(id, d) && self.fits(d, val) {
                self.virtuals[id as usize].set(VirtualField::Field(d), val);
                self.removed(Reason::VirtualAccess);
                return;
            }
        }
        self.force(obj);
        // (a stored virtual object stays virtual while the write is delayed)
        let fits = self.fits(d, val);
        if self.opts.heapcache && self.mem.layout.alone(d) && self.mem.heap.field(d, obj) == Some(val) {
            self.removed(Reason::RedundantWrite);
            return;
        }
        let loc = Loc::field(d);
        self.delay_write(PendingWrite {
            loc,
            index: None,
            obj,
            val,
            src: self.cur as u32,
            prev: None,
        });
        let (info, layout) = (&self.v.info, &self.mem.layout);
        self.mem
            .heap
            .write(loc, obj, layout, |a, b| Self::may_alias(info, a, b));
        if self.opts.heapcache && fits {
            self.mem.heap.remember_field(d, obj, val);
        }
    }

    pub(super) fn getitem(&mut self, op: &Op, args: &[Value]) -> Value {
        let (arr, idx) = (args[0], args[1]);
        let d = op.descr.expect("verified: array ops have a descriptor");
        let pure_read = matches!(
            op.opcode,
            Opcode::GetarrayitemGcPureI | Opcode::GetarrayitemGcPureR | Opcode::GetarrayitemGcPureF
        );
        if let Some(id) = self.virt_of(arr) {
            if let Some(k) = self.virtual_item(id, d, idx) {
                let found = self.virtuals[id as usize].get(VirtualField::Item(k));
                let val = match found {
                    Some(val) => self.find(val),
                    None => self.zero_of(op.opcode.result_kind()),
                };
                if self.fits(d, val) {
                    self.removed(Reason::VirtualAccess);
                    return val;
                }
            }
            self.force(arr);
        }
        let cidx = self.const_i64(idx);
        if self.opts.heapcache {
            // Immutable reads see an item as calls leave it, mutable ones as calls change it:
            // each kind is answered only from its own entries.
            let hit = match (pure_read, cidx) {
                (true, _) => self.mem.heap.pure_item(d, arr, idx),
                (false, Some(k)) => self.mem.heap.item(d, k, arr),
                (false, None) => None,
            };
            if let Some(val) = hit {
                self.removed(Reason::HeapCache);
                return self.find(val);
            }
        }
        let v = self.emit_load(op.opcode, Loc::item(d, cidx), args, arr);
        if self.opts.heapcache {
            match (pure_read, cidx) {
                (true, _) => self.mem.heap.remember_pure_item(d, arr, idx, v),
                (false, Some(k)) => self.mem.heap.remember_item(d, k, arr, v),
                (false, None) => {}
            }
        }
        v
    }

    pub(super) fn setitem(&mut self, op: &Op, args: &[Value]) {
        let (arr, idx, val) = (args[0], args[1], args[2]);
        let d = op.descr.expect("verified: array ops have a descriptor");
        if let Some(id) = self.virt_of(arr) {
            let k = self.virtual_item(id, d, idx).filter(|_| self.fits(d, val));
            if let Some(k) = k {
                self.virtuals[id as usize].set(VirtualField::Item(k), val);
                self.removed(Reason::VirtualAccess);
                return;
            }
        }
        self.force(arr);
        let cidx = self.const_i64(idx);
        let fits = self.fits(d, val);
        if self.opts.heapcache && self.mem.layout.alone(d) {
            if let Some(k) = cidx {
                if self.mem.heap.item(d, k, arr) == Some(val) {
                    self.removed(Reason::RedundantWrite);
                    return;
                }
            }
        }
        let loc = Loc::item(d, cidx);
        if cidx.is_some() {
            self.delay_write(PendingWrite {
                loc,
                index: Some(idx),
                obj: arr,
                val,
                src: self.cur as u32,
                prev: None,
            });
        } else {
            self.flush_conflicting(loc, arr, None);
            self.force(val);
            self.emit(Op {
                opcode: Opcode::SetarrayitemGc,
                descr: Some(d),
                guard: None,
                args: SmallVec::from_slice(&[arr, idx, val]),
            });
        }
        let (info, layout) = (&self.v.info, &self.mem.layout);
        self.mem
            .heap
            .write(loc, arr, layout, |a, b| Self::may_alias(info, a, b));
        if self.opts.heapcache && fits {
            if let Some(k) = cidx {
                self.mem.heap.remember_item(d, k, arr, val);
            }
        }
    }

    pub(super) fn arraylen(&mut self, op: &Op, args: &[Value]) -> Value {
        let arr = args[0];
        if let Some(id) = self.virt_of(arr) {
            if let VirtualKind::Array { len, descr, .. } = self.virtuals[id as usize].kind {
                // the length word the allocation wrote, if this descriptor reads that word
                let word = |d: Option<DescrRef>| d.and_then(|d| self.descr(d).as_array()).map(|a| a.len_offset);
                if word(op.descr) == word(Some(descr)) {
                    self.removed(Reason::VirtualAccess);
                    return self.make_int(len as i64);
                }
            }
            self.force(arr);
        }
        let key = Key::new(Opcode::ArraylenGc, args, op.descr);
        if self.opts.cse {
            if let Some(v) = self.cse_get(&key) {
                self.removed(Reason::Cse);
                return self.find(v);
            }
        }
        let v = self.emit(Op {
            opcode: op.opcode,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if self.opts.intbounds {
            self.v.info[v.as_op().unwrap().index()].bound = IntBound::nonnegative();
        }
        if self.opts.cse {
            self.cse.pure.insert(key, v);
        }
        v
    }
}
