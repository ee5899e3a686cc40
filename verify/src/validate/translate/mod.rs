//! Translation of the ops between sync points into Z3 terms: [`Validator::translate`]
//! dispatches each op to the function of its family.
//!
//! - [`values`]: copies, `_ovf` ops, pointer comparisons, casts, pure integer and float ops;
//! - [`alloc`]: allocations (tracked objects);
//! - [`fields`]: fields of GC objects, raw fields, interior fields;
//! - [`arrays`]: array items, lengths, string characters and hashes, raw memory;
//! - [`calls`]: elidable and loop-invariant calls, hints, frame ops (a call whose oopspec
//!   names a pure op is translated as that op, in [`values`]).
//!
//! Calls that are sync points and guards are not translated here (see `sync` and `guards`).

mod alloc;
mod arrays;
mod calls;
mod fields;
mod values;

pub(super) use arrays::string_items;

use trace_ir::descr::Descr;
use trace_ir::{Kind, OpFlags, OpRef, Opcode, Trace};
use z3::ast::{Bool, BV};

use crate::semantics::{no_overflow, op_semantics};

use super::side::{Side, Sym};
use super::sync::{is_elidable_call, pure_call};
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
    /// Translate op `r` of side `orig` (`true`: the original): give it its value, and return
    /// its precondition and the fact it asserts.
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
        match opc {
            Opcode::SameAsI | Opcode::SameAsR | Opcode::SameAsF => self.side(orig).same_as(r, &op)?,
            Opcode::IntAddOvf | Opcode::IntSubOvf | Opcode::IntMulOvf => self.ovf_op(orig, r, &op)?,
            Opcode::PtrEq | Opcode::PtrNe | Opcode::InstancePtrEq | Opcode::InstancePtrNe => {
                self.side(orig).ptr_cmp(r, &op)?
            }
            _ if flags.contains(OpFlags::PURE) => self.pure_op(orig, r, &op, &mut t)?,
            _ if opc.is_call() && pure_call(trace, r).is_some() => {
                let pure = trace_ir::Op {
                    opcode: pure_call(trace, r).expect("checked"),
                    descr: None,
                    guard: None,
                    args: op.args[1..].iter().copied().collect(),
                };
                self.pure_op(orig, r, &pure, &mut t)?
            }
            Opcode::New | Opcode::NewWithVtable => self.side(orig).new_struct(r, &op)?,
            Opcode::NewArray | Opcode::NewArrayClear => self.side(orig).new_array(r, &op)?,
            Opcode::Newstr | Opcode::Newunicode => self.side(orig).new_string(r, &op)?,
            Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF => self.side(orig).getfield_gc(r, &op)?,
            Opcode::SetfieldGc => self.side(orig).setfield_gc(r, &op)?,
            Opcode::GetfieldRawI | Opcode::GetfieldRawR | Opcode::GetfieldRawF | Opcode::SetfieldRaw => {
                self.side(orig).field_raw(r, &op)?
            }
            Opcode::GetarrayitemGcI
            | Opcode::GetarrayitemGcR
            | Opcode::GetarrayitemGcF
            | Opcode::GetarrayitemGcPureI
            | Opcode::GetarrayitemGcPureR
            | Opcode::GetarrayitemGcPureF => self.side(orig).getarrayitem_gc(r, &op, &mut t)?,
            Opcode::SetarrayitemGc => self.side(orig).setarrayitem_gc(r, &op, &mut t)?,
            Opcode::ArraylenGc | Opcode::Strlen | Opcode::Unicodelen => self.side(orig).length(r, &op, &mut t)?,
            Opcode::Strgetitem | Opcode::Unicodegetitem => self.side(orig).string_getitem(r, &op, &mut t)?,
            Opcode::Strsetitem | Opcode::Unicodesetitem => self.side(orig).string_setitem(&op, &mut t)?,
            Opcode::Strhash | Opcode::Unicodehash => self.side(orig).string_hash(r, &op)?,
            Opcode::Copystrcontent | Opcode::Copyunicodecontent => self.side(orig).string_copy(&op, &mut t)?,
            Opcode::GetarrayitemRawI
            | Opcode::GetarrayitemRawF
            | Opcode::RawLoadI
            | Opcode::RawLoadF
            | Opcode::SetarrayitemRaw
            | Opcode::RawStore => self.side(orig).raw_item(r, &op)?,
            Opcode::GetinteriorfieldGcI
            | Opcode::GetinteriorfieldGcR
            | Opcode::GetinteriorfieldGcF
            | Opcode::SetinteriorfieldGc => self.side(orig).interior_field(r, &op)?,
            Opcode::SetinteriorfieldRaw => self.side(orig).interior_raw(r, &op)?,
            Opcode::GcLoadI
            | Opcode::GcLoadR
            | Opcode::GcLoadF
            | Opcode::GcLoadIndexedI
            | Opcode::GcLoadIndexedR
            | Opcode::GcLoadIndexedF
            | Opcode::GcStore
            | Opcode::GcStoreIndexed => self.side(orig).gc_access(r, &op)?,
            Opcode::RecordExactValueR | Opcode::RecordExactValueI => {
                self.side(orig).record_exact_value(orig, &op, &mut t)?
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
                self.side(orig).elidable_call(r, &op)?
            }
            Opcode::VirtualRefFinish => self.side(orig).virtual_ref_finish(&op)?,
            Opcode::QuasiimmutField | Opcode::EnterPortalFrame | Opcode::LeavePortalFrame | Opcode::Keepalive => {}
            Opcode::RecordKnownResult => self.side(orig).record_known_result(orig, r, &op, &mut t)?,
            Opcode::RecordExactClass => self.side(orig).record_exact_class(orig, &op, &mut t)?,
            Opcode::RecordKnownField => self.side(orig).record_known_field(orig, r, &op, &mut t)?,
            Opcode::AssertNotNone => self.side(orig).assert_not_none(orig, &op, &mut t)?,
            Opcode::RecordIntRange | Opcode::RecordIntBits => self.side(orig).record_int(orig, &op, &mut t)?,
            Opcode::ForceToken => self.side(orig).set(r, Side::force_token()),
            Opcode::VirtualRef => self.side(orig).virtual_ref(r),
            _ => return unsupported(format!("{} is not modelled by the validator", opc)),
        }
        // (Pure ops read no heap: what follows concerns only loads; `load_field` and
        // `load_item` finish their reads themselves.)
        let s = self.side(orig);
        let finished = matches!(
            opc,
            Opcode::GetfieldGcI
                | Opcode::GetfieldGcR
                | Opcode::GetfieldGcF
                | Opcode::GetarrayitemGcI
                | Opcode::GetarrayitemGcR
                | Opcode::GetarrayitemGcF
                | Opcode::GetarrayitemGcPureI
                | Opcode::GetarrayitemGcPureR
                | Opcode::GetarrayitemGcPureF
        );
        if flags.contains(OpFlags::READS_HEAP) && !flags.contains(OpFlags::GUARD) && !finished {
            if let Some(Sym::Bv(v)) = s.vals[r.index()].clone() {
                let d = op.descr.map(|d| trace.descr(d));
                s.vals[r.index()] = Some(Sym::Bv(s.read_as(d, opc.result_kind(), opc, v)));
            }
        }
        Ok(t)
    }
}

impl<'t> Side<'t> {
    /// `v`, just read through field or array descriptor `d` (a value of the descriptor's
    /// kind), as the read gives it ([`Side::read_as`]).
    pub(super) fn loaded(&mut self, d: &Descr, v: Sym) -> Sym {
        match (v, d.value_kind()) {
            // (Any read but `arraylen_gc`, which reads the length word.)
            (Sym::Bv(b), Some(kind)) => Sym::Bv(self.read_as(Some(d), kind, Opcode::GetfieldGcI, b)),
            (v, _) => v,
        }
    }

    /// `v`, just read by `opcode` (a value of `kind`) through descriptor `d`, as the read
    /// gives it: a narrow integer's low bytes, sign- or zero-extended ([`narrow_to_descr`]);
    /// a reference read from the memory an epoch started from is no object that escaped
    /// since ([`Side::read_before_escapes`]).
    fn read_as(&mut self, d: Option<&Descr>, kind: Kind, opcode: Opcode, v: BV) -> BV {
        match kind {
            Kind::Ref => {
                self.read_before_escapes(&v);
                v
            }
            Kind::Int => narrow_to_descr(d, opcode, v),
            _ => v,
        }
    }
}

/// A store through a narrow integer descriptor keeps only what memory holds (see
/// [`narrow_bv`]), so two heaps that differ only in bits no read can see compare equal.
fn narrow_store(trace: &Trace, r: OpRef, v: Sym) -> Sym {
    match v {
        Sym::Bv(b) => Sym::Bv(narrow_bv(trace, r, b)),
        obj => obj,
    }
}

/// A store of `v` through the narrow integer descriptor of op `r`: the low bytes, sign- or
/// zero-extended, exactly what a later read through the same descriptor gives.
fn narrow_bv(trace: &Trace, r: OpRef, v: BV) -> BV {
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

/// `v` as a narrow integer slot of descriptor `d` holds it (`arraylen_gc` reads the full
/// length word, not an item).
pub(super) fn narrow_to_descr(d: Option<&Descr>, opcode: Opcode, v: BV) -> BV {
    let (size, signed) = match d {
        Some(Descr::Field(f)) => (f.size, f.signed),
        Some(Descr::Interior(i)) => (i.field.size, i.field.signed),
        Some(Descr::Array(a)) if opcode != Opcode::ArraylenGc => (a.item_size, a.signed),
        _ => return v,
    };
    narrow_to(v, size, signed)
}

/// The low `size` bytes of `v`, sign- or zero-extended to 64 bits (`v` itself for 0 or 8).
pub(super) fn narrow_to(v: BV, size: u8, signed: bool) -> BV {
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
fn ovf_semantics(opc: Opcode, a: &BV, b: &BV) -> R<(BV, Bool)> {
    let (res, _) = match op_semantics(opc, &[a.clone(), b.clone()]) {
        Ok(x) => x,
        Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
    };
    match no_overflow(opc, a, b) {
        Some(f) => Ok((res, f)),
        None => unsupported(format!("{opc}: no overflow semantics")),
    }
}
