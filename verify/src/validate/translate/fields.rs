//! Translation of field accesses: fields of GC objects, raw fields and interior fields.

use trace_ir::descr::{Descr, DEFAULT_ARRAY_BASE};
use trace_ir::{Op, OpRef, Opcode};

use super::{narrow_bv, narrow_store};
use crate::validate::layout::{descr_key, field_key_of};
use crate::validate::memory::{add_const, scaled, Place};
use crate::validate::side::{Side, Sym};
use crate::validate::terms::zero;
use crate::validate::{unsupported, R};
use z3::ast::Bool;

use super::Translated;

impl<'t> Side<'t> {
    /// `record_known_field(p, v, descr=F)`, a promise assumed on the original: `p` is not
    /// null and its field `F` holds `v` as the field stores it. (Not stated of an object the
    /// trace allocated, nor with such an object as the value: the optimizer uses it on
    /// objects from outside only.)
    pub(super) fn record_known_field(&mut self, orig: bool, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let trace = self.trace;
        let Some(d) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{} without a field descriptor", op.opcode));
        };
        let base = self.value(op.args[0])?;
        let want = narrow_store(trace, r, self.value(op.args[1])?);
        if !orig || self.tracked(&base).is_some() || self.tracked(&want).is_some() {
            return Ok(());
        }
        let got = self.load_field(&base, d);
        let (p, got, want) = (self.escape(&base), self.escape(&got), self.escape(&want));
        t.fact = Some(Bool::and(&[p.eq(zero()).not(), got.eq(&want)]));
        Ok(())
    }

    /// `getfield_gc_*`: [`Side::load_field`].
    pub(super) fn getfield_gc(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let Some(d) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{} without a field descriptor", op.opcode));
        };
        let base = self.value(op.args[0])?;
        let v = self.load_field(&base, d);
        self.set(r, v);
        Ok(())
    }

    /// What a read of field `d` of `base` gives: a tracked object's field, or a read of the
    /// heap (an immutable field from its own memory), as the read sees it
    /// ([`Side::loaded`]). `getfield_gc_*` and the loop body parameters that carry a field
    /// (`Config::carried`) read with this.
    pub(in crate::validate) fn load_field(&mut self, base: &Sym, d: &Descr) -> Sym {
        let key = field_key_of(d);
        let v = match self.tracked(base).filter(|&id| !self.field_overlaps(id, &key)) {
            Some(id) => self.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero())),
            None => {
                let p = self.escape(base);
                let place = self.field_place(&p, &key);
                Sym::Bv(self.read_place(&place))
            }
        };
        self.loaded(d, v)
    }

    /// `setfield_gc`: [`Side::store_field`] of the value narrowed as the descriptor says.
    pub(super) fn setfield_gc(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let Some(d) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{} without a field descriptor", op.opcode));
        };
        let base = self.value(op.args[0])?;
        let val = narrow_store(trace, r, self.value(op.args[1])?);
        self.store_field(&base, d, val);
        Ok(())
    }

    /// A write of `val` into field `d` of `base`: into a tracked object, or a write to the
    /// heap.
    pub(super) fn store_field(&mut self, base: &Sym, d: &Descr, val: Sym) {
        let key = field_key_of(d);
        match self.tracked(base).filter(|&id| !self.field_overlaps(id, &key)) {
            Some(id) => {
                self.objs[id].fields.insert(key, val);
            }
            None => {
                let p = self.escape(base);
                let v = self.escape(&val);
                let place = self.field_place(&p, &key);
                if matches!(place, Place::Bytes { .. }) && !key.starts_with("imm:") {
                    self.written_fields.insert(key);
                }
                self.write_place(&place, &v, true);
            }
        }
    }

    /// `getfield_raw_*`, `setfield_raw`: raw memory at the pointer plus the field's offset.
    pub(super) fn field_raw(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let Some(fd) = op.descr.and_then(|d| trace.descr(d).as_field()) else {
            return unsupported(format!("{opc} without a field descriptor"));
        };
        let p = self.bv_of(op.args[0])?;
        let place = Place::Raw {
            addr: add_const(&p, fd.offset as u64),
            size: fd.size,
        };
        if opc == Opcode::SetfieldRaw {
            let v = narrow_bv(trace, r, self.bv_of(op.args[1])?);
            self.write_place(&place, &v, false);
        } else {
            let v = self.read_place(&place);
            self.set(r, Sym::Bv(v));
        }
        Ok(())
    }

    /// `getinteriorfield_gc_*`, `setinteriorfield_gc`: a word memory of the descriptor, or the byte
    /// memory when its bytes overlap another descriptor's.
    pub(super) fn interior_field(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let ikey = descr_key(trace, r);
        let Some(Descr::Interior(id)) = op.descr.map(|d| trace.descr(d)) else {
            return unsupported(format!("{opc} without an interior descriptor"));
        };
        let p = self.bv_of(op.args[0])?;
        let i = self.bv_of(op.args[1])?;
        let place = if self.layout.shared(&ikey) {
            Place::Bytes {
                addr: p,
                offset: scaled(&i, id.item_size as u64, DEFAULT_ARRAY_BASE + id.field.offset),
                size: id.field.size,
                imm: id.field.immutable,
            }
        } else {
            Place::Word {
                key: format!("interior:{ikey}"),
                index: p.concat(&i),
                imm: false,
            }
        };
        if opc == Opcode::SetinteriorfieldGc {
            let v = narrow_bv(trace, r, self.bv_of(op.args[2])?);
            self.expose(&v);
            self.write_place(&place, &v, true);
        } else {
            let v = self.read_place(&place);
            self.set(r, Sym::Bv(v));
        }
        Ok(())
    }
}
