//! Translation of the ops between sync points into Z3 terms.

use std::collections::BTreeMap;

use trace_ir::descr::{Descr, DEFAULT_ARRAY_BASE};
use trace_ir::eval::eval_pure;
use trace_ir::{Kind, OpFlags, OpRef, Opcode, Trace};
use z3::ast::{Ast, Bool, BV};

use crate::semantics::{no_overflow, op_semantics};

use super::layout::{descr_key, field_key};
use super::memory::{add_const, scaled, Place};
use super::side::{alloc_class, LocalObj, Side, Sym};
use super::sync::is_elidable_call;
use super::terms::{bool_to_bv, bv, class_of, uf_bool, uf_bv, zero};
use super::validator::Validator;
use super::{unsupported, R};

/// What translating one op produced besides its value.
pub(super) struct Translated {
    /// A precondition of the op (`valid_if`), when not trivially true.
    pub(super) valid: Option<Bool>,
    /// A fact the op asserts (hints such as `assert_not_none`).
    pub(super) fact: Option<Bool>,
}

impl<'t> Validator<'t> {
    pub(super) fn translate(&mut self, orig: bool, r: OpRef) -> R<Translated> {
        let s = if orig { &mut self.o } else { &mut self.p };
        let trace = s.trace;
        let op = trace.op(r).clone();
        let mut t = Translated {
            valid: None,
            fact: None,
        };
        let opc = op.opcode;
        if opc.is_input() {
            // Label parameters were given values by `sync_label`.
            if s.vals[r.index()].is_none() {
                return unsupported(format!("{} trace: input {r} outside the input list and label", s.tag));
            }
            return Ok(t);
        }
        let flags = opc.flags();
        let set = |s: &mut Side, v: Sym| s.vals[r.index()] = Some(v);
        match opc {
            Opcode::SameAsI | Opcode::SameAsR | Opcode::SameAsF => {
                let v = s.value(op.args[0])?;
                set(s, v);
            }
            Opcode::IntAddOvf | Opcode::IntSubOvf | Opcode::IntMulOvf => {
                let a = s.bv_of(op.args[0])?;
                let b = s.bv_of(op.args[1])?;
                let (res, no_ovf) = match (
                    self.abs.value(opc, &[a.clone(), b.clone()]),
                    self.abs.no_overflow(opc, &a, &b),
                ) {
                    (Some((res, _)), Some(no_ovf)) => (res, no_ovf),
                    _ => ovf_semantics(opc, &a, &b)?,
                };
                s.no_ovf = Some(no_ovf);
                set(s, Sym::Bv(res));
            }
            Opcode::PtrEq | Opcode::PtrNe | Opcode::InstancePtrEq | Opcode::InstancePtrNe => {
                let a = s.value(op.args[0])?;
                let b = s.value(op.args[1])?;
                let eq = match (s.tracked(&a), s.tracked(&b)) {
                    (None, None) => s.escape(&a).eq(s.escape(&b)),
                    (Some(x), Some(y)) => Bool::from_bool(x == y),
                    _ => Bool::from_bool(false),
                };
                let res = if matches!(opc, Opcode::PtrEq | Opcode::InstancePtrEq) {
                    eq
                } else {
                    eq.not()
                };
                set(s, Sym::Bv(bool_to_bv(&res)));
            }
            Opcode::CastPtrToInt | Opcode::CastIntToPtr => {
                let a = s.bv_of(op.args[0])?;
                set(s, Sym::Bv(a));
            }
            Opcode::ConvertFloatBytesToLonglong | Opcode::ConvertLonglongBytesToFloat => {
                let a = s.bv_of(op.args[0])?;
                set(s, Sym::Bv(a));
            }
            _ if flags.contains(OpFlags::PURE) => {
                let mut args = Vec::with_capacity(op.args.len());
                for &a in &op.args {
                    args.push(s.bv_of(a)?);
                }
                // Fold constants with the interpreter's evaluation function.
                let consts: Option<Vec<u64>> = args.iter().map(|a| a.simplify().as_u64()).collect();
                let is_float =
                    op.args.iter().any(|&a| trace.kind_of(a) == Kind::Float) || opc.result_kind() == Kind::Float;
                if let (Some(cs), true) = (&consts, is_float) {
                    match eval_pure(opc, cs) {
                        Ok(v) => {
                            set(s, Sym::Bv(bv(v)));
                            return Ok(t);
                        }
                        Err(e) => return unsupported(format!("{opc}: {e}")),
                    }
                }
                if is_float {
                    self.float_uf = true;
                    let s = if orig { &mut self.o } else { &mut self.p };
                    let v = if flags.contains(OpFlags::BOOL_RESULT) {
                        bool_to_bv(&uf_bool(opc.name(), &args))
                    } else {
                        uf_bv(opc.name(), &args)
                    };
                    s.vals[r.index()] = Some(Sym::Bv(v));
                    return Ok(t);
                }
                let abstracted = self.abs.value(opc, &args);
                let (v, valid) = match abstracted.map(Ok).unwrap_or_else(|| op_semantics(opc, &args)) {
                    Ok(x) => x,
                    Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
                };
                if valid.simplify().as_bool() != Some(true) {
                    t.valid = Some(valid);
                }
                set(s, Sym::Bv(v));
            }
            Opcode::New | Opcode::NewWithVtable => {
                let d = op.descr.map(|d| trace.descr(d));
                let class = alloc_class(opc, d);
                let shape = match d {
                    Some(d) => format!("{}:{d:?}", opc.name().trim_end_matches("_with_vtable")),
                    None => return unsupported(format!("{opc} without a size descriptor")),
                };
                let o = s.new_obj(LocalObj {
                    shape,
                    class,
                    len: None,
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::NewArray | Opcode::NewArrayClear => {
                let len = s.bv_of(op.args[0])?;
                let d = op.descr.map(|d| trace.descr(d));
                let Some(d) = d else {
                    return unsupported(format!("{opc} without an array descriptor"));
                };
                let shape = format!("array:{d:?}");
                let o = s.new_obj(LocalObj {
                    shape,
                    class: None,
                    len: Some(len.clone()),
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::Newstr | Opcode::Newunicode => {
                let len = s.bv_of(op.args[0])?;
                let o = s.new_obj(LocalObj {
                    shape: opc.name().into(),
                    class: None,
                    len: Some(len),
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF => {
                let key = field_key(trace, r);
                let base = s.value(op.args[0])?;
                let v = match s.tracked(&base).filter(|&id| !s.field_overlaps(id, &key)) {
                    Some(id) => s.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero())),
                    None => {
                        let p = s.escape(&base);
                        let place = s.field_place(&p, &key);
                        Sym::Bv(s.read_place(&place))
                    }
                };
                set(s, v);
            }
            Opcode::SetfieldGc => {
                let key = field_key(trace, r);
                let base = s.value(op.args[0])?;
                let val = narrow_store(trace, r, s.value(op.args[1])?);
                match s.tracked(&base).filter(|&id| !s.field_overlaps(id, &key)) {
                    Some(id) => {
                        s.objs[id].fields.insert(key, val);
                    }
                    None => {
                        let p = s.escape(&base);
                        let v = s.escape(&val);
                        let place = s.field_place(&p, &key);
                        if matches!(place, Place::Bytes { .. }) && !key.starts_with("imm:") {
                            s.written_fields.insert(key);
                        }
                        s.write_place(&place, &v, true);
                    }
                }
            }
            Opcode::GetfieldRawI | Opcode::GetfieldRawR | Opcode::GetfieldRawF | Opcode::SetfieldRaw => {
                let Some(fd) = op.descr.and_then(|d| trace.descr(d).as_field()) else {
                    return unsupported(format!("{opc} without a field descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let place = Place::Raw {
                    addr: add_const(&p, fd.offset as u64),
                    size: fd.size,
                };
                if opc == Opcode::SetfieldRaw {
                    let v = narrow_bv(trace, r, s.bv_of(op.args[1])?);
                    s.write_place(&place, &v, false);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::GetarrayitemGcI
            | Opcode::GetarrayitemGcR
            | Opcode::GetarrayitemGcF
            | Opcode::GetarrayitemGcPureI
            | Opcode::GetarrayitemGcPureR
            | Opcode::GetarrayitemGcPureF => {
                let akey = descr_key(trace, r);
                let pure = matches!(
                    opc,
                    Opcode::GetarrayitemGcPureI | Opcode::GetarrayitemGcPureR | Opcode::GetarrayitemGcPureF
                );
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let cidx = idx.simplify().as_u64();
                let tracked = s.tracked(&base).filter(|&id| !s.item_overlaps(id, &akey, cidx));
                let v = match (tracked, cidx) {
                    (Some(id), Some(ix)) if ix <= u32::MAX as u64 => {
                        let key = format!("item:{akey}#{ix}");
                        s.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero()))
                    }
                    (Some(id), None) if s.items(id, &akey).is_some() => {
                        // A non-constant index into a tracked array of known length: select
                        // among its items; the index must be in range.
                        let items = s.items(id, &akey).unwrap_or_default();
                        let n = items.len() as u64;
                        let mut v = zero();
                        for (i, item) in items.iter().enumerate().rev() {
                            v = idx.eq(bv(i as u64)).ite(item, &v);
                        }
                        t.valid = Some(idx.bvult(bv(n)));
                        Sym::Bv(v)
                    }
                    _ => {
                        let p = s.escape(&base);
                        let place = s.item_place(&p, &akey, &idx, pure);
                        Sym::Bv(s.read_place(&place))
                    }
                };
                set(s, v);
            }
            Opcode::SetarrayitemGc => {
                let akey = descr_key(trace, r);
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let val = narrow_store(trace, r, s.value(op.args[2])?);
                let cidx = idx.simplify().as_u64();
                let tracked = s.tracked(&base).filter(|&id| !s.item_overlaps(id, &akey, cidx));
                match (tracked, cidx) {
                    (Some(id), Some(ix)) if ix <= u32::MAX as u64 => {
                        let key = format!("item:{akey}#{ix}");
                        s.objs[id].item_of.insert(key.clone(), (akey, ix as u32));
                        s.objs[id].fields.insert(key, val);
                    }
                    (Some(id), None) if matches!(val, Sym::Bv(_)) && s.items(id, &akey).is_some() => {
                        let items = s.items(id, &akey).unwrap_or_default();
                        let Sym::Bv(vb) = &val else { unreachable!() };
                        t.valid = Some(idx.bvult(bv(items.len() as u64)));
                        for (i, old) in items.iter().enumerate() {
                            let key = format!("item:{akey}#{i}");
                            let new = idx.eq(bv(i as u64)).ite(vb, old);
                            s.objs[id].item_of.insert(key.clone(), (akey.clone(), i as u32));
                            s.objs[id].fields.insert(key, Sym::Bv(new));
                        }
                    }
                    _ => {
                        let p = s.escape(&base);
                        let v = s.escape(&val);
                        let place = s.item_place(&p, &akey, &idx, false);
                        s.write_place(&place, &v, true);
                    }
                }
            }
            Opcode::ArraylenGc | Opcode::Strlen | Opcode::Unicodelen => {
                let base = s.value(op.args[0])?;
                let v = match s.tracked(&base) {
                    Some(id) => s.objs[id].len.clone().unwrap_or_else(zero),
                    None => {
                        let p = s.escape(&base);
                        let key = match opc {
                            Opcode::ArraylenGc => s.layout.len_key(Some(&descr_key(trace, r)), ""),
                            _ => s.layout.len_key(None, opc.name()),
                        };
                        let v = s.read(&key, &p);
                        // Lengths are never negative.
                        t.fact = Some(v.bvsge(zero()));
                        v
                    }
                };
                set(s, Sym::Bv(v));
            }
            Opcode::Strgetitem | Opcode::Unicodegetitem => {
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.read(&format!("chars:{}", opc.name()), &p.concat(&i));
                set(s, Sym::Bv(v));
            }
            Opcode::Strsetitem | Opcode::Unicodesetitem => {
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.bv_of(op.args[2])?;
                let name = if opc == Opcode::Strsetitem {
                    "strgetitem"
                } else {
                    "unicodegetitem"
                };
                s.write(&format!("chars:{name}"), &p.concat(&i), &v);
            }
            Opcode::Strhash | Opcode::Unicodehash => {
                let p = s.bv_of(op.args[0])?;
                let v = s.read(&format!("hash:{}", opc.name()), &p);
                set(s, Sym::Bv(v));
            }
            Opcode::GetarrayitemRawI
            | Opcode::GetarrayitemRawF
            | Opcode::RawLoadI
            | Opcode::RawLoadF
            | Opcode::SetarrayitemRaw
            | Opcode::RawStore => {
                let Some(ad) = op.descr.and_then(|d| trace.descr(d).as_array()) else {
                    return unsupported(format!("{opc} without an array descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
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
                    let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                    s.write_place(&place, &v, false);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::GetinteriorfieldGcI
            | Opcode::GetinteriorfieldGcR
            | Opcode::GetinteriorfieldGcF
            | Opcode::SetinteriorfieldGc => {
                let ikey = descr_key(trace, r);
                let Some(Descr::Interior(id)) = op.descr.map(|d| trace.descr(d)) else {
                    return unsupported(format!("{opc} without an interior descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let place = if s.layout.shared(&ikey) {
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
                    let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                    s.write_place(&place, &v, true);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::CallPureI
            | Opcode::CallPureR
            | Opcode::CallPureF
            | Opcode::CallPureN
            | Opcode::CallI
            | Opcode::CallR
            | Opcode::CallF
            | Opcode::CallN
            | Opcode::CallLoopinvariantI
            | Opcode::CallLoopinvariantR
            | Opcode::CallLoopinvariantF
            | Opcode::CallLoopinvariantN
                if is_elidable_call(trace, r) || opc.name().starts_with("call_loopinvariant") =>
            {
                let mut args = Vec::new();
                for &a in &op.args {
                    args.push(s.bv_of(a)?);
                }
                let name = format!("call[{}]", descr_key(trace, r));
                let v = uf_bv(&name, &args);
                if opc.result_kind() != Kind::Void {
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::QuasiimmutField
            | Opcode::VirtualRefFinish
            | Opcode::EnterPortalFrame
            | Opcode::LeavePortalFrame
            | Opcode::Keepalive
            | Opcode::RecordKnownResult => {}
            Opcode::RecordExactClass => {
                // A promise: on the original, the object is not null and has that class.
                if orig {
                    let x = s.value(op.args[0])?;
                    let c = s.bv_of(op.args[1])?;
                    t.fact = Some(match s.tracked(&x) {
                        Some(id) => s.objs[id]
                            .class
                            .clone()
                            .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)]))
                            .eq(&c),
                        None => {
                            let p = s.escape(&x);
                            Bool::and(&[p.eq(zero()).not(), class_of(&p).eq(&c)])
                        }
                    });
                }
            }
            Opcode::AssertNotNone => {
                let x = s.value(op.args[0])?;
                if s.tracked(&x).is_none() {
                    let p = s.escape(&x);
                    if orig {
                        t.fact = Some(p.eq(zero()).not());
                    }
                }
            }
            Opcode::ForceToken => set(s, Sym::Bv(BV::new_const("force_token", 64))),
            Opcode::VirtualRef => {
                let v = s.value(op.args[0])?;
                set(s, v);
            }
            _ => return unsupported(format!("{} is not modelled by the validator", opc)),
        }
        if flags.contains(OpFlags::READS_HEAP) && !flags.contains(OpFlags::GUARD) {
            if let Some(Sym::Bv(v)) = s.vals[r.index()].clone() {
                if opc.result_kind() == Kind::Ref {
                    s.read_before_escapes(&v);
                }
                s.vals[r.index()] = Some(Sym::Bv(narrow_read(trace, r, v)));
            }
        }
        Ok(t)
    }
}

/// A store through a narrow integer descriptor keeps only what memory holds (see
/// [`narrow_bv`]), so two heaps that differ only in bits no read can see compare equal.
pub(super) fn narrow_store(trace: &Trace, r: OpRef, v: Sym) -> Sym {
    match v {
        Sym::Bv(b) => Sym::Bv(narrow_bv(trace, r, b)),
        obj => obj,
    }
}

/// A store of `v` through the narrow integer descriptor of op `r`: the low bytes, sign- or
/// zero-extended, exactly what a later read through the same descriptor gives.
pub(super) fn narrow_bv(trace: &Trace, r: OpRef, v: BV) -> BV {
    let op = trace.op(r);
    let d = op.descr.map(|d| trace.descr(d));
    let int_kind = match d {
        Some(Descr::Field(f)) => f.kind == Kind::Int,
        Some(Descr::Interior(i)) => i.field.kind == Kind::Int,
        Some(Descr::Array(a)) => a.kind == Kind::Int,
        _ => false,
    };
    if !int_kind {
        return v;
    }
    narrow_to_descr(d, op.opcode, v)
}

/// Memory holds only `size` bytes of a narrow integer field or array item: a read gives
/// the low bytes, sign- or zero-extended.
pub(super) fn narrow_read(trace: &Trace, r: OpRef, v: BV) -> BV {
    let op = trace.op(r);
    if op.opcode.result_kind() != Kind::Int {
        return v;
    }
    narrow_to_descr(op.descr.map(|d| trace.descr(d)), op.opcode, v)
}

/// `v` as a narrow integer slot of descriptor `d` holds it (`arraylen_gc` reads the full
/// length word, not an item).
pub(super) fn narrow_to_descr(d: Option<&Descr>, opcode: Opcode, v: BV) -> BV {
    let (size, signed) = match d {
        Some(Descr::Field(f)) => (f.size, f.signed),
        Some(Descr::Interior(i)) => (i.field.size, i.field.signed),
        Some(Descr::Array(a)) if opcode != Opcode::ArraylenGc => (a.item_size, a.signed),
        _ => return v,
    };
    if size == 0 || size >= 8 {
        return v;
    }
    let bits = size as u32 * 8;
    let low = v.extract(bits - 1, 0);
    if signed {
        low.sign_ext(64 - bits)
    } else {
        low.zero_ext(64 - bits)
    }
}

/// The wrapping result and the "no overflow" condition of an `_ovf` op, both from
/// [`crate::semantics`].
pub(super) fn ovf_semantics(opc: Opcode, a: &BV, b: &BV) -> R<(BV, Bool)> {
    let (res, _) = match op_semantics(opc, &[a.clone(), b.clone()]) {
        Ok(x) => x,
        Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
    };
    match no_overflow(opc, a, b) {
        Some(f) => Ok((res, f)),
        None => unsupported(format!("{opc}: no overflow semantics")),
    }
}
