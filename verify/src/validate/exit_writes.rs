//! The writes a guard's exit performs ([`trace_ir::GuardData::writes`]): compared with what
//! the original trace's heap holds when the guard fails.

use std::collections::{BTreeSet, HashMap};

use trace_ir::{Descr, GuardData, GuardId, Opcode};
use z3::ast::{Array, BV};

use super::compare::Pairs;
use super::layout::field_key_of;
use super::side::{Side, Sym};
use super::terms::bv;
use super::translate::narrow_to_descr;
use super::validator::Validator;
use super::{unsupported, R};

/// What an exit's writes change on the optimized side, put back once the exit is compared
/// (the writes happen only when the guard fails).
pub(super) struct Undo {
    arrays: HashMap<String, Array>,
    written: BTreeSet<String>,
    written_fields: BTreeSet<String>,
    written_at: HashMap<String, Vec<BV>>,
    bits: HashMap<String, u32>,
    /// Tracked objects' fields as they were: (object, key, old value).
    fields: Vec<(usize, String, Option<Sym>)>,
}

impl<'t> Side<'t> {
    /// The heap state an exit's writes may change.
    pub(super) fn undo_point(&self) -> Undo {
        Undo {
            arrays: self.arrays.clone(),
            written: self.written.clone(),
            written_fields: self.written_fields.clone(),
            written_at: self.written_at.clone(),
            bits: self.bits.clone(),
            fields: Vec::new(),
        }
    }

    /// Put back the state of `u`.
    pub(super) fn undo(&mut self, u: Undo) {
        self.arrays = u.arrays;
        self.written = u.written;
        self.written_fields = u.written_fields;
        self.written_at = u.written_at;
        self.bits = u.bits;
        for (id, key, old) in u.fields.into_iter().rev() {
            match old {
                Some(v) => self.objs[id].fields.insert(key, v),
                None => self.objs[id].fields.remove(&key),
            };
        }
    }
}

impl<'t> Validator<'t> {
    /// Perform the writes of the optimized guard `gp`'s exit (after its virtual objects are
    /// rebuilt, sharing `memo` with the fail arguments): into an object the optimized trace
    /// still tracks, as a field of it; into the heap, proving first that the value equals
    /// what the original's heap holds at that place when the guard fails (a virtual object
    /// of the exit against the object the original stored there, field by field, matched in
    /// `pairs`), and then writing the original's value, so that the heap comparison covers
    /// the rest. Changes are recorded in `undo`.
    pub(super) fn exit_writes(
        &mut self,
        g: GuardId,
        gp: &GuardData,
        memo: &mut HashMap<u32, Sym>,
        pairs: &mut Pairs,
        undo: &mut Undo,
    ) -> R<()> {
        let trace = self.p.trace;
        for (k, w) in gp.writes.iter().enumerate() {
            let d = trace.descr(w.descr);
            let val = match self.fail_arg(false, gp, &w.value, memo)? {
                Sym::Bv(b) => Sym::Bv(narrow_to_descr(Some(d), Opcode::SetfieldGc, b)),
                obj => obj,
            };
            let (key, item) = match (d, w.index) {
                (Descr::Field(_), None) => (field_key_of(d), None),
                (Descr::Array(_), Some(i)) => {
                    let akey = format!("{d:?}");
                    (format!("item:{akey}#{i}"), Some((akey, i)))
                }
                _ => return unsupported("an exit's write without a field or array descriptor"),
            };
            let base = self.p.value(w.obj)?;
            if let Some(id) = self.p.tracked(&base) {
                let overlaps = match &item {
                    None => self.p.field_overlaps(id, &key),
                    Some((akey, i)) => self.p.item_overlaps(id, akey, Some(u64::from(*i))),
                };
                if overlaps {
                    return unsupported("an exit's write into overlapping fields of a tracked object");
                }
                if let Some((akey, i)) = item {
                    self.p.objs[id].item_of.insert(key.clone(), (akey, i));
                }
                let old = self.p.objs[id].fields.insert(key.clone(), val);
                undo.fields.push((id, key, old));
                continue;
            }
            let addr = self.p.escape(&base);
            let place = match &item {
                None => self.p.field_place(&addr, &key),
                Some((akey, i)) => self.p.item_place(&addr, akey, &bv(u64::from(*i)), false),
            };
            let held = self.o.read_place(&place);
            let seen = Sym::Bv(narrow_to_descr(Some(d), Opcode::SetfieldGc, held.clone()));
            let claim = self.obj_equal(&seen, &val, pairs);
            self.prove(
                &claim,
                || format!("guard {g}: write {k} of its exit differs from what the original holds there"),
                None,
            )?;
            self.p.write_place(&place, &held, true);
        }
        Ok(())
    }
}
