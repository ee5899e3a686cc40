//! A side's heap: its SMT arrays, reads and writes of places, where fields and items are, epochs.

use std::collections::BTreeMap;

use z3::ast::{Array, BV};
use z3::Sort;

use super::memory::{
    byte_index, holds_bytes, scaled, select_apart, select_expanded, twin_of, Place, ZeroSpan, BYTES, RAW, TWIN_BYTES,
};
use super::side::Side;
use super::terms::{bv, zero};

impl<'t> Side<'t> {
    pub(super) fn array(&mut self, key: &str, domain_bits: u32) -> Array {
        if let Some(a) = self.arrays.get(key) {
            return a.clone();
        }
        let a = self.initial(key, domain_bits);
        self.arrays.insert(key.to_string(), a.clone());
        self.bits.insert(key.to_string(), domain_bits);
        a
    }

    /// The heap of `key` as the current epoch started (what [`Self::array`] stores into).
    /// Immutable fields' arrays start at entry and are never replaced; an immutable twin
    /// starts as its memory at entry, or fresh at a label.
    pub(super) fn initial(&self, key: &str, domain_bits: u32) -> Array {
        let name = if key.starts_with("imm:") {
            format!("heap[{key}]@0")
        } else if let Some(of) = key.strip_prefix("twin:") {
            if self.twin_epoch == "0" {
                format!("heap[{of}]@0")
            } else {
                format!("heap[{key}]@{}", self.twin_epoch)
            }
        } else {
            format!("heap[{key}]@{}", self.epoch)
        };
        let range = if holds_bytes(key) { 8 } else { 64 };
        Array::new_const(name, &Sort::bitvector(domain_bits), &Sort::bitvector(range))
    }

    /// The arrays the reads of `key` start from in the current epoch: its own and its twin's.
    pub(super) fn initials(&self, key: &str, domain_bits: u32) -> Vec<Array> {
        let mut out = vec![self.initial(key, domain_bits)];
        if let Some(t) = twin_of(key) {
            let ti = self.initial(&t, domain_bits);
            if !ti.ast_eq(&out[0]) {
                out.push(ti);
            }
        }
        out
    }

    pub(super) fn read(&mut self, key: &str, index: &BV) -> BV {
        let a = self.array(key, index.get_size());
        if holds_bytes(key) {
            select_expanded(&a, index, &self.zeros.borrow())
        } else {
            select_apart(&a, index, &self.apart)
        }
    }

    /// Write `value` at `index` of `key` and of its immutable twin.
    pub(super) fn write(&mut self, key: &str, index: &BV, value: &BV) {
        self.store(key, index, value);
        if let Some(t) = twin_of(key) {
            let a = self.array(&t, index.get_size());
            self.arrays.insert(t, a.store(index, value));
        }
    }

    /// Write `value` at `index` of `key` only.
    pub(super) fn store(&mut self, key: &str, index: &BV, value: &BV) {
        let a = self.array(key, index.get_size());
        self.arrays.insert(key.to_string(), a.store(index, value));
        self.written.insert(key.to_string());
        self.written_at.entry(key.to_string()).or_default().push(index.clone());
    }

    /// `size` bytes of the byte memory `mem` from `offset` (of the object at `addr`; raw
    /// memory: absolute), little-endian, zero-extended to 64 bits.
    pub(super) fn read_bytes(&mut self, mem: &str, addr: Option<&BV>, offset: &BV, size: u8) -> BV {
        let n = size.clamp(1, 8) as u32;
        let mut v: Option<BV> = None;
        for k in (0..n).rev() {
            let b = self.read(mem, &byte_index(addr, offset, k as u64));
            v = Some(match v {
                None => b,
                Some(high) => high.concat(&b),
            });
        }
        let v = v.expect("at least one byte");
        if n < 8 {
            v.zero_ext(64 - 8 * n)
        } else {
            v
        }
    }

    /// Write the low `size` bytes of `value` little-endian from `offset` (see
    /// [`Self::read_bytes`]); `mirror`: into the immutable twin too.
    pub(super) fn write_bytes(
        &mut self,
        mem: &str,
        addr: Option<&BV>,
        offset: &BV,
        size: u8,
        value: &BV,
        mirror: bool,
    ) {
        let n = size.clamp(1, 8) as u32;
        for k in 0..n {
            let i = byte_index(addr, offset, k as u64);
            let b = value.extract(8 * k + 7, 8 * k);
            if mirror {
                self.write(mem, &i, &b);
            } else {
                self.store(mem, &i, &b);
            }
        }
    }

    pub(super) fn read_place(&mut self, place: &Place) -> BV {
        match place {
            Place::Word { key, index, imm } => {
                let key = match (imm, twin_of(key)) {
                    (true, Some(t)) => t,
                    _ => key.clone(),
                };
                self.read(&key, index)
            }
            Place::Bytes {
                addr,
                offset,
                size,
                imm,
            } => {
                let mem = if *imm { TWIN_BYTES } else { BYTES };
                self.read_bytes(mem, Some(addr), offset, *size)
            }
            Place::Raw { addr, size } => self.read_bytes(RAW, None, addr, *size),
        }
    }

    /// Write `value` to `place` (an immutable place: its mutable memory, as every write);
    /// `mirror`: into the immutable twin too (false only when carrying contents over a call).
    pub(super) fn write_place(&mut self, place: &Place, value: &BV, mirror: bool) {
        // (Where an immutable read may see the value: an elidable call may reach it. Array
        // items in the byte memory are exposed by their writers, which know they write items.)
        let immutably_read = match place {
            Place::Word { key, .. } => key.starts_with("imm:") || twin_of(key).is_some(),
            Place::Bytes { imm, .. } => *imm,
            Place::Raw { .. } => true,
        };
        if immutably_read {
            self.expose(value);
        }
        match place {
            Place::Word { key, index, .. } => {
                if mirror {
                    self.write(key, index, value);
                } else {
                    self.store(key, index, value);
                }
            }
            Place::Bytes { addr, offset, size, .. } => {
                self.write_bytes(BYTES, Some(addr), offset, *size, value, mirror)
            }
            Place::Raw { addr, size } => self.write_bytes(RAW, None, addr, *size, value, false),
        }
    }

    /// State that word `place` (of a fresh object) is zero in the memories this epoch started
    /// from. (Fresh objects' bytes in the byte memory are zero by their [`ZeroSpan`]s.)
    pub(super) fn state_zero(&mut self, place: &Place) {
        let Place::Word { key, index, .. } = place else {
            return;
        };
        for init in self.initials(key, index.get_size()) {
            if let Some(v) = init.select(index).as_bv() {
                self.esc_facts.push(v.eq(zero()));
            }
        }
    }

    /// Bytes `[lo, hi)` of the fresh object `id` at `addr` are zero in the byte memories this
    /// epoch started from.
    pub(super) fn zero_span(&mut self, id: usize, addr: &BV, lo: u64, hi: u64) {
        self.zero_span_of.insert(id, (lo, hi));
        for init in self.initials(BYTES, 128) {
            self.zeros.borrow_mut().push(ZeroSpan {
                init,
                addr: addr.clone(),
                lo,
                hi,
            });
        }
    }

    /// Where field `key` (`{:?}` or `imm:{:?}` of its descriptor) of the object at `addr` is.
    pub(super) fn field_place(&self, addr: &BV, key: &str) -> Place {
        match self.layout.field(key) {
            Some(f) if self.layout.shared(key.strip_prefix("imm:").unwrap_or(key)) => Place::Bytes {
                addr: addr.clone(),
                offset: bv(f.offset as u64),
                size: f.size,
                imm: f.immutable,
            },
            _ => Place::Word {
                key: key.to_string(),
                index: addr.clone(),
                imm: false,
            },
        }
    }

    /// Where item `index` of the array at `addr` accessed through descriptor `akey` is;
    /// `imm`: for an immutable read.
    pub(super) fn item_place(&self, addr: &BV, akey: &str, index: &BV, imm: bool) -> Place {
        match self.layout.array(akey) {
            Some(a) if self.layout.shared(akey) => Place::Bytes {
                addr: addr.clone(),
                offset: scaled(index, a.item_size as u64, a.base_offset),
                size: a.item_size,
                imm,
            },
            _ => Place::Word {
                key: format!("items:{akey}"),
                index: addr.concat(index),
                imm,
            },
        }
    }

    /// Where field or item `key` of a tracked object ([`LocalObj::fields`]) is once the object
    /// has the address `addr`.
    ///
    /// [`LocalObj::fields`]: super::side::LocalObj::fields
    pub(super) fn obj_place(&self, addr: &BV, key: &str, item_of: &BTreeMap<String, (String, u32)>) -> Place {
        match item_of.get(key) {
            Some((akey, i)) => self.item_place(addr, akey, &bv(*i as u64), false),
            None => self.field_place(addr, key),
        }
    }

    /// Whether bytes `[start, end)` accessed through shared descriptor `d` of tracked object
    /// `id` overlap a field or item it holds through another descriptor (the object then
    /// escapes, and the byte memory assembles the bytes).
    pub(super) fn overlaps_other(&self, id: usize, d: &str, start: i64, end: i64) -> bool {
        let o = &self.objs[id];
        o.fields.keys().any(|k| match self.layout.bytes_of(k, &o.item_of) {
            Some((kd, s, e)) => kd != d && s < end && start < e,
            None => false,
        })
    }

    /// Whether an access to field `key` of tracked object `id` must go through the byte
    /// memory (see [`Self::overlaps_other`]).
    pub(super) fn field_overlaps(&self, id: usize, key: &str) -> bool {
        let d = key.strip_prefix("imm:").unwrap_or(key);
        match self.layout.field(key) {
            Some(f) if self.layout.shared(d) => self.overlaps_other(id, d, f.offset, f.offset + f.size.max(1) as i64),
            _ => false,
        }
    }

    /// Whether an access to item `index` (`None`: not a constant) through `akey` of tracked
    /// object `id` must go through the byte memory: it overlaps what the object holds through
    /// another descriptor, or its index is not a constant and `akey` is not the allocation's.
    pub(super) fn item_overlaps(&self, id: usize, akey: &str, index: Option<u64>) -> bool {
        let Some(a) = self.layout.array(akey).filter(|_| self.layout.shared(akey)) else {
            return false;
        };
        match index {
            Some(i) => {
                let start = a
                    .base_offset
                    .saturating_add((i as i64).saturating_mul(a.item_size as i64));
                self.overlaps_other(id, akey, start, start.saturating_add(a.item_size.max(1) as i64))
            }
            None => {
                self.objs[id].shape.strip_prefix("array:") != Some(akey)
                    || self.overlaps_other(id, akey, a.base_offset, i64::MAX)
            }
        }
    }

    /// Forget the heap (after a call that may write it, or at a label, which also replaces
    /// the immutable twins).
    pub(super) fn new_epoch(&mut self, epoch: String, label: bool) {
        let keep = |k: &String| k.starts_with("imm:") || (!label && k.starts_with("twin:"));
        self.arrays.retain(|k, _| keep(k));
        self.written_at.retain(|k, _| keep(k));
        self.written.clear();
        self.written_fields.clear();
        self.carried.clear();
        if label {
            self.twin_epoch = epoch.clone();
        }
        let n = self.epoch_numbers.len();
        self.epoch_numbers.entry(epoch.clone()).or_insert(n);
        self.epoch = epoch;
    }
}
