//! Translation of array, string and raw memory accesses: items, lengths, characters and hashes.

use trace_ir::descr::Descr;
use trace_ir::{Op, OpRef, Opcode};
use z3::ast::{Ast, Bool, BV};

use super::{narrow_bv, narrow_store, narrow_to, Translated};
use crate::validate::layout::descr_key;
use crate::validate::memory::{scaled, Place};
use crate::validate::side::{Side, Sym};
use crate::validate::terms::{bv, zero};
use crate::validate::{unsupported, R};

impl<'t> Side<'t> {
    /// `getarrayitem_gc_*` (and the `_pure` reads, of the immutable twin):
    /// [`Side::load_item`].
    pub(super) fn getarrayitem_gc(&mut self, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let Some(d) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{opc} without an array descriptor"));
        };
        let pure = matches!(
            opc,
            Opcode::GetarrayitemGcPureI | Opcode::GetarrayitemGcPureR | Opcode::GetarrayitemGcPureF
        );
        let base = self.value(op.args[0])?;
        let idx = self.bv_of(op.args[1])?;
        let (v, valid) = self.load_item(&base, d, &idx, pure);
        if valid.is_some() {
            t.valid = valid;
        }
        self.set(r, v);
        Ok(())
    }

    /// What a read of item `idx` of `base` through array descriptor `d` gives (`pure`: of the
    /// immutable twin), and the read's precondition if any: a tracked array's item (selected
    /// among its items for a non-constant index, which must then be in range), or a read of
    /// the heap, as the read sees it ([`Side::loaded`]). `getarrayitem_gc_*` and the loop
    /// body parameters that carry an item (`Config::carried`) read with this.
    pub(in crate::validate) fn load_item(
        &mut self,
        base: &Sym,
        d: &Descr,
        idx: &BV,
        pure: bool,
    ) -> (Sym, Option<Bool>) {
        let akey = format!("{d:?}");
        let cidx = idx.simplify().as_u64();
        let tracked = self.tracked(base).filter(|&id| !self.item_overlaps(id, &akey, cidx));
        let mut valid = None;
        let v = match (tracked, cidx) {
            (Some(id), Some(ix)) if ix <= u32::MAX as u64 => self.tracked_item(id, &akey, ix),
            (Some(id), None) if self.items(id, &akey).is_some() => {
                let (v, in_range) = self.select_item(id, &akey, idx).expect("its items are known");
                valid = Some(in_range);
                Sym::Bv(v)
            }
            _ => {
                let p = self.escape(base);
                let place = self.item_place(&p, &akey, idx, pure);
                Sym::Bv(self.read_place(&place))
            }
        };
        (self.loaded(d, v), valid)
    }

    /// Item `ix` of tracked object `id` through item key `akey` (zero where nothing was
    /// written).
    fn tracked_item(&self, id: usize, akey: &str, ix: u64) -> Sym {
        let key = format!("item:{akey}#{ix}");
        self.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero()))
    }

    /// Item `idx` (not a constant) of tracked object `id` of known length through item key
    /// `akey`: selected among its items, with the condition that the index is in range;
    /// `None` when its items are not all known.
    fn select_item(&self, id: usize, akey: &str, idx: &BV) -> Option<(BV, Bool)> {
        let items = self.items(id, akey)?;
        let mut v = zero();
        for (i, item) in items.iter().enumerate().rev() {
            v = idx.eq(bv(i as u64)).ite(item, &v);
        }
        Some((v, idx.bvult(bv(items.len() as u64))))
    }

    /// Store `v` as item `idx` (not a constant) of tracked object `id` of known length
    /// through item key `akey`: every item conditionally; returns the condition that the
    /// index is in range (`None`, storing nothing, when its items are not all known).
    fn store_at_index(&mut self, id: usize, akey: &str, idx: &BV, v: &BV) -> Option<Bool> {
        let items = self.items(id, akey)?;
        for (i, old) in items.iter().enumerate() {
            let new = idx.eq(bv(i as u64)).ite(v, old);
            self.store_item(id, akey, i as u32, Sym::Bv(new));
        }
        Some(idx.bvult(bv(items.len() as u64)))
    }

    /// `setarrayitem_gc`: into a tracked array (every item conditionally for a non-constant index,
    /// which must be in range), or a write to the heap.
    pub(super) fn setarrayitem_gc(&mut self, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let trace = self.trace;
        let akey = descr_key(trace, r);
        let base = self.value(op.args[0])?;
        let idx = self.bv_of(op.args[1])?;
        let val = narrow_store(trace, r, self.value(op.args[2])?);
        let cidx = idx.simplify().as_u64();
        let tracked = self.tracked(&base).filter(|&id| !self.item_overlaps(id, &akey, cidx));
        match (tracked, cidx) {
            (Some(id), Some(ix)) if ix <= u32::MAX as u64 => self.store_item(id, &akey, ix as u32, val),
            (Some(id), None) if matches!(val, Sym::Bv(_)) && self.items(id, &akey).is_some() => {
                let Sym::Bv(vb) = &val else { unreachable!() };
                t.valid = self.store_at_index(id, &akey, &idx, vb);
            }
            _ => {
                let p = self.escape(&base);
                let v = self.escape(&val);
                // (Items may be read as immutable: `getarrayitem_gc_pure_*`.)
                self.expose(&v);
                let place = self.item_place(&p, &akey, &idx, false);
                self.write_place(&place, &v, true);
            }
        }
        Ok(())
    }

    /// `arraylen_gc`, `strlen`, `unicodelen`: a tracked object's length, or its length word
    /// (never negative).
    pub(super) fn length(&mut self, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let base = self.value(op.args[0])?;
        let v = match self.tracked(&base) {
            Some(id) => self.objs[id].len.clone().unwrap_or_else(zero),
            None => {
                let p = self.escape(&base);
                let key = match opc {
                    Opcode::ArraylenGc => self.layout.len_key(Some(&descr_key(trace, r)), ""),
                    _ => self.layout.len_key(None, opc.name()),
                };
                let v = self.read(&key, &p);
                // Lengths are never negative.
                t.fact = Some(v.bvsge(zero()));
                v
            }
        };
        self.set(r, Sym::Bv(v));
        Ok(())
    }

    /// `strgetitem`, `unicodegetitem`: [`Side::read_char`].
    pub(super) fn string_getitem(&mut self, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let base = self.value(op.args[0])?;
        let idx = self.bv_of(op.args[1])?;
        let v = self.read_char(op.opcode, &base, &idx, t);
        self.set(r, v);
        Ok(())
    }

    /// `strsetitem`, `unicodesetitem`: [`Side::write_char`].
    pub(super) fn string_setitem(&mut self, op: &Op, t: &mut Translated) -> R<()> {
        let base = self.value(op.args[0])?;
        let idx = self.bv_of(op.args[1])?;
        let v = self.bv_of(op.args[2])?;
        self.write_char(op.opcode, &base, &idx, v, t);
        Ok(())
    }

    /// `copystrcontent`, `copyunicodecontent` of a constant number of characters (at most
    /// 64) from constant positions: every character read, then every one written, as
    /// [`Side::read_char`] and [`Side::write_char`] do; the length must be in range.
    pub(super) fn string_copy(&mut self, op: &Op, t: &mut Translated) -> R<()> {
        let src = self.value(op.args[0])?;
        let dst = self.value(op.args[1])?;
        let [ss, ds, n] = [2, 3, 4].map(|k| self.bv_of(op.args[k]));
        let (ss, ds, n) = (ss?, ds?, n?);
        let (Some(cs), Some(cd), Some(cn)) = (
            ss.simplify().as_u64().map(|x| x as i64),
            ds.simplify().as_u64().map(|x| x as i64),
            n.simplify().as_u64().map(|x| x as i64),
        ) else {
            return unsupported(format!("{} of a non-constant range", op.opcode));
        };
        if !(0..=64).contains(&cn) {
            return unsupported(format!("{} of {cn} characters", op.opcode));
        }
        let mut chars = Vec::with_capacity(cn as usize);
        for k in 0..cn {
            chars.push(self.read_char(op.opcode, &src, &bv(cs.wrapping_add(k) as u64), t));
        }
        for (k, c) in chars.into_iter().enumerate() {
            let Sym::Bv(c) = c else {
                return unsupported("a reference as a character");
            };
            self.write_char(op.opcode, &dst, &bv(cd.wrapping_add(k as i64) as u64), c, t);
        }
        Ok(())
    }

    /// Character `idx` of the string `base` as string op `opc` reads it: a tracked string's
    /// (selected among its characters for a non-constant index, which must then be in
    /// range; zero where nothing was written), or the characters' memory; a byte or a 4-byte
    /// code point, zero-extended. A precondition joins `t.valid`.
    fn read_char(&mut self, opc: Opcode, base: &Sym, idx: &BV, t: &mut Translated) -> Sym {
        let (akey, width) = string_items(opc);
        let v = match (self.tracked(base), idx.simplify().as_u64()) {
            (Some(id), Some(ix)) if ix <= u32::MAX as u64 => self.tracked_item(id, akey, ix),
            (Some(id), None) if self.items(id, akey).is_some() => {
                let (v, in_range) = self.select_item(id, akey, idx).expect("its items are known");
                add_valid(t, in_range);
                Sym::Bv(v)
            }
            _ => {
                let p = self.escape(base);
                let place = self.item_place(&p, akey, idx, false);
                Sym::Bv(self.read_place(&place))
            }
        };
        match v {
            Sym::Bv(b) => Sym::Bv(narrow_to(b, width, false)),
            obj => obj,
        }
    }

    /// Store `v` as character `idx` of the string `base`, as string op `opc` does: into a
    /// tracked string (every character conditionally for a non-constant index, which must
    /// then be in range), or into the characters' memory; the low byte (or 4 bytes) is what
    /// is stored. A precondition joins `t.valid`.
    fn write_char(&mut self, opc: Opcode, base: &Sym, idx: &BV, v: BV, t: &mut Translated) {
        let (akey, width) = string_items(opc);
        let v = narrow_to(v, width, false);
        match (self.tracked(base), idx.simplify().as_u64()) {
            (Some(id), Some(ix)) if ix <= u32::MAX as u64 => self.store_item(id, akey, ix as u32, Sym::Bv(v)),
            (Some(id), None) if self.items(id, akey).is_some() => {
                if let Some(in_range) = self.store_at_index(id, akey, idx, &v) {
                    add_valid(t, in_range);
                }
            }
            _ => {
                let p = self.escape(base);
                let place = self.item_place(&p, akey, idx, false);
                self.write_place(&place, &v, true);
            }
        }
    }

    /// `strhash`, `unicodehash`: an uninterpreted memory of hashes.
    pub(super) fn string_hash(&mut self, r: OpRef, op: &Op) -> R<()> {
        let opc = op.opcode;
        let p = self.bv_of(op.args[0])?;
        let v = self.read(&format!("hash:{}", opc.name()), &p);
        self.set(r, Sym::Bv(v));
        Ok(())
    }

    /// `getarrayitem_raw_*`, `setarrayitem_raw` (an index) and `raw_load_*`, `raw_store` (a byte
    /// offset): raw memory, by bytes.
    pub(super) fn raw_item(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let Some(ad) = op.descr.and_then(|d| trace.descr(d).as_array()) else {
            return unsupported(format!("{opc} without an array descriptor"));
        };
        let p = self.bv_of(op.args[0])?;
        let i = self.bv_of(op.args[1])?;
        // `raw_load`/`raw_store` take a byte offset, the array item ops an index.
        let scale = if matches!(opc, Opcode::RawLoadI | Opcode::RawLoadF | Opcode::RawStore) {
            1
        } else {
            ad.item_size as u64
        };
        let offset = scaled(&i, scale, 0);
        let addr = match (p.simplify().as_u64(), offset.as_u64()) {
            (Some(a), Some(o)) => bv(a.wrapping_add(o)),
            (_, Some(0)) => p,
            _ => p.bvadd(&offset),
        };
        let place = Place::Raw {
            addr,
            size: ad.item_size,
        };
        if matches!(opc, Opcode::SetarrayitemRaw | Opcode::RawStore) {
            let v = narrow_bv(trace, r, self.bv_of(op.args[2])?);
            self.write_place(&place, &v, false);
        } else {
            let v = self.read_place(&place);
            self.set(r, Sym::Bv(v));
        }
        Ok(())
    }

    /// `setinteriorfield_raw`: raw memory at the address plus index times the item size plus
    /// the field's offset.
    pub(super) fn interior_raw(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let Some(Descr::Interior(id)) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{} without an interior descriptor", op.opcode));
        };
        let p = self.bv_of(op.args[0])?;
        let i = self.bv_of(op.args[1])?;
        let addr = p.bvadd(scaled(&i, id.item_size as u64, id.field.offset));
        let v = narrow_bv(trace, r, self.bv_of(op.args[2])?);
        self.write_place(
            &Place::Raw {
                addr,
                size: id.field.size,
            },
            &v,
            false,
        );
        Ok(())
    }

    /// `gc_load*`, `gc_store*` ([`trace_ir::GcAccess`]): the byte memory at the object's
    /// address and the byte offset, `|size|` bytes; the size must be a constant.
    pub(super) fn gc_access(&mut self, r: OpRef, op: &Op) -> R<()> {
        let opc = op.opcode;
        let g = opc.gc_access().expect("a gc_load/gc_store op");
        let constant = |s: &mut Self, k: usize| s.bv_of(op.args[k]).map(|b| b.simplify().as_u64());
        let Some(size) = constant(self, g.size)? else {
            return unsupported(format!("{opc} with a size that is not a constant"));
        };
        let (width, signed) = ((size as i64).unsigned_abs(), (size as i64) < 0);
        let kind = match g.value {
            Some(v) => self.trace.kind_of(op.args[v]),
            None => opc.result_kind(),
        };
        if !matches!(width, 1 | 2 | 4 | 8) || kind != trace_ir::Kind::Int && width != 8 {
            return unsupported(format!("{opc} of {width} bytes"));
        }
        let index = self.bv_of(op.args[g.index])?;
        let scale = match g.scale {
            Some(k) => self.bv_of(op.args[k])?,
            None => bv(1),
        };
        let base = match g.base {
            Some(k) => self.bv_of(op.args[k])?,
            None => zero(),
        };
        let obj = self.value(op.args[0])?;
        let addr = self.escape(&obj);
        let place = Place::Bytes {
            addr,
            offset: index.bvmul(&scale).bvadd(&base).simplify(),
            size: width as u8,
            imm: false,
        };
        match g.value {
            Some(k) => {
                let v = self.value(op.args[k])?;
                let v = self.escape(&v);
                self.expose(&v);
                self.write_place(&place, &narrow_to(v, width as u8, false), true);
            }
            None => {
                let v = self.read_place(&place);
                self.set(r, Sym::Bv(narrow_to(v, width as u8, signed)));
            }
        }
        Ok(())
    }
}

/// The item key under which a string op's characters are tracked (shared by the read and
/// the write of one string kind), and their width in bytes.
pub(in crate::validate) fn string_items(opc: Opcode) -> (&'static str, u8) {
    match trace_ir::descr::string_char_size(opc) {
        Some(1) => ("chars:str", 1),
        _ => ("chars:unicode", 4),
    }
}

/// Add `c` to the op's precondition.
fn add_valid(t: &mut Translated, c: Bool) {
    t.valid = Some(match t.valid.take() {
        Some(v) => Bool::and(&[&v, &c]),
        None => c,
    });
}
