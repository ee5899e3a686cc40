//! Escape of tracked objects: their fresh addresses, the facts about them, their contents.

use std::collections::{BTreeSet, HashSet};

use trace_ir::descr::{string_char_size, ArrayDescr, Descr};
use trace_ir::{Kind, Opcode};
use z3::ast::{Ast, BV};
use z3::DeclKind;

use super::memory::Place;
use super::side::{LocalObj, Side, Sym};
use super::terms::{bv, class_of, zero};
use super::translate::{narrow_to, string_items};

/// One field or item of an escaped object: its name in [`LocalObj::fields`], where the heap
/// model keeps it, and its current value.
pub(super) struct Content {
    pub(super) name: String,
    pub(super) place: Place,
    pub(super) value: BV,
}

impl<'t> Side<'t> {
    /// Give a tracked object an address and move its fields into the heap model.
    pub(super) fn escape(&mut self, s: &Sym) -> BV {
        let id = match s {
            Sym::Bv(b) => return b.clone(),
            Sym::Obj(id) => *id,
        };
        if let Some(a) = &self.objs[id].addr {
            return a.clone();
        }
        let obj = self.objs[id].clone();
        let len = obj.len.as_ref().and_then(|l| l.simplify().as_u64());
        self.esc_shapes.insert((obj.shape.clone(), len.is_some()));
        let addr = self.fresh_address(&obj, len);
        self.record_escape(&addr, &obj);
        self.objs[id].addr = Some(addr.clone());
        self.escaped_in.insert(id, self.epoch.clone());
        let layout = self.layout.clone();
        self.state_fresh_zeros(id, &obj, &addr, len);
        if let Some(len) = &obj.len {
            let key = layout.len_key_of_shape(&obj.shape);
            self.write(&key, &addr, len);
        }
        for (key, val) in &obj.fields {
            let vb = self.escape(val);
            if obj.item_of.contains_key(key) {
                self.expose(&vb);
            }
            let place = self.obj_place(&addr, key, &obj.item_of);
            self.write_place(&place, &vb, true);
        }
        addr
    }

    /// Record that the object `obj` escaped at `addr` on this side, and state what is known of a
    /// fresh address: not null, different from the other fresh ones, from the traces' constants
    /// and from every pointer that existed before, and of its allocation's class.
    fn record_escape(&mut self, addr: &BV, obj: &LocalObj) {
        // A fresh allocation is not null, differs from the other fresh ones and from the
        // traces' constants, and has the class its allocation gave it.
        self.esc_facts.push(addr.eq(zero()).not());
        for other in &self.esc_addrs {
            self.esc_facts.push(addr.eq(other).not());
        }
        for &c in self.consts.iter() {
            self.esc_facts.push(addr.eq(bv(c)).not());
            self.apart.insert(addr, &bv(c));
        }
        self.esc_addrs.push(addr.clone());
        self.esc_shape_of.push(obj.shape.clone());
        self.esc_epoch_of
            .push(self.epoch_numbers.get(&self.epoch).copied().unwrap_or(usize::MAX));
        self.paired.push(false);
        self.exposed.push(false);
        if let Some(c) = &obj.class {
            self.esc_facts.push(class_of(addr).eq(c));
        }
        // Nor is it any pointer that existed before (its only references were tracked until
        // now).
        let mut seen = HashSet::new();
        for (i, v) in self.vals.iter().enumerate() {
            if let Some(Sym::Bv(b)) = v {
                if self.trace.ops[i].opcode.result_kind() == Kind::Ref && b.get_size() == 64 && seen.insert(b.clone()) {
                    self.esc_facts.push(addr.eq(b).not());
                    self.apart.insert(addr, b);
                }
            }
        }
    }

    /// State that the fresh object `id` (`obj`, at `addr`, of constant length `len` if an array)
    /// is zero where it holds nothing, in the memories this epoch started from.
    fn state_fresh_zeros(&mut self, id: usize, obj: &LocalObj, addr: &BV, len: Option<u64>) {
        let layout = self.layout.clone();
        // A fresh object's fields are zero: stated for every field either trace reads or
        // writes into a new struct of its shape (and every byte of the shared fields) about
        // the heap both sides start the epoch from,
        // not written: the other side may not read the same fields (the optimizer removes dead
        // reads), and zeros never contradict each other. Array items that were never written
        // are left unknown after an escape when the length is not a constant: it may be
        // constant on one side and symbolic on the other, so zeros could not be stated alike.
        if obj.len.is_none() {
            let written = self.written_keys.clone();
            let written = written.get(&obj.shape).map_or(&[][..], |k| &k[..]);
            for key in self.read_keys.clone().iter().chain(written) {
                if !obj.fields.contains_key(key) {
                    let place = self.field_place(addr, key);
                    if matches!(place, Place::Word { .. }) {
                        self.state_zero(&place);
                    }
                }
            }
            if let (Some(&lo), Some(&hi)) = (layout.field_bytes.first(), layout.field_bytes.last()) {
                // (An instance's class word is not zero.)
                let lo = if obj.class.is_some() { lo.max(8) } else { lo };
                if lo <= hi {
                    self.zero_span(id, addr, lo as u64, hi as u64 + 1);
                }
            }
        }
        // A fresh string's characters are zero (with a constant length).
        if let (Some(opc), Some(n)) = (Opcode::from_name(&obj.shape), len) {
            if string_char_size(opc).is_some() && n <= 64 {
                let (akey, _) = string_items(opc);
                for i in 0..n {
                    let place = self.item_place(addr, akey, &bv(i), false);
                    self.state_zero(&place);
                }
            }
        }
        // A fresh array's items are zero (with a constant length: the other side may know the
        // same length only symbolically, or escape the array later, and must see the same
        // zeros through its reads of the heap this epoch started from).
        if let (Some(akey), Some(n)) = (obj.shape.strip_prefix("array:"), len) {
            match layout.array(akey) {
                Some(a) if layout.shared(akey) => {
                    let lo = a.base_offset as u64;
                    let hi = n.saturating_mul(a.item_size as u64).saturating_add(lo);
                    self.zero_span(id, addr, lo, hi);
                }
                _ if n <= 64 => {
                    for i in 0..n {
                        let place = self.item_place(addr, akey, &bv(i), false);
                        self.state_zero(&place);
                    }
                }
                _ => {}
            }
            // Its bytes read through another array descriptor are zero too (as a tracked
            // array's items are under any descriptor), for the items within its bytes.
            let bytes = layout.array(akey).map(|a| n.saturating_mul(a.item_size.max(1) as u64));
            let mut others: Vec<(&String, &ArrayDescr)> = layout
                .descrs
                .iter()
                .filter_map(|(k, d)| match d {
                    Descr::Array(a) if k != akey && !layout.shared(k) => Some((k, a)),
                    _ => None,
                })
                .collect();
            others.sort_by_key(|&(k, _)| k);
            for (key, other) in others {
                let Some(bytes) = bytes else { break };
                for i in 0..bytes.div_ceil(other.item_size.max(1) as u64).min(64) {
                    let place = self.item_place(addr, key, &bv(i), false);
                    self.state_zero(&place);
                }
            }
        }
    }

    /// Mark the escaped objects whose addresses `v` may be (any address it involves) as
    /// reachable by elidable calls: `v` is an argument of a call, or is written where an
    /// immutable read may see it (an immutable field, an array item, the byte or raw memory).
    pub(super) fn expose(&mut self, v: &BV) {
        if self.esc_addrs.is_empty() {
            return;
        }
        let mut stack = vec![z3::ast::Dynamic::from_ast(v)];
        let mut seen = HashSet::new();
        while let Some(t) = stack.pop() {
            if !seen.insert(t.clone()) {
                continue;
            }
            let kids = t.children();
            if kids.is_empty() {
                if let Some(b) = t.as_bv() {
                    for (a, e) in self.esc_addrs.iter().zip(self.exposed.iter_mut()) {
                        if a.ast_eq(&b) {
                            *e = true;
                        }
                    }
                }
            }
            stack.extend(kids);
        }
    }

    /// Mark every object escaped so far as reachable by elidable calls (a call that may
    /// write the heap may store what it reaches where immutable reads see it).
    pub(super) fn expose_all(&mut self) {
        self.exposed.iter_mut().for_each(|e| *e = true);
    }

    /// State that `result`, the reference an elidable call returns, is none of the escaped
    /// objects it cannot reach: it reads its arguments and immutable memory only, and these
    /// objects were never either (`docs/memory-model.md`).
    pub(super) fn unreachable_by_elidable(&mut self, result: &BV) {
        for (a, &e) in self.esc_addrs.iter().zip(&self.exposed) {
            if !e {
                self.esc_facts.push(result.eq(a).not());
            }
        }
    }

    /// `v`, a reference read from memory: when it is read from the memory an epoch started
    /// from (no store of this trace), it is no object that escaped in that epoch or later (the
    /// memory held only references that existed then; a fresh object's address reaches memory
    /// only by a store or a call after it escaped).
    pub(super) fn read_before_escapes(&mut self, v: &BV) {
        let Ok(decl) = v.safe_decl() else { return };
        if decl.kind() != DeclKind::Select {
            return;
        }
        let Some(array) = v.children().first().cloned() else {
            return;
        };
        let Ok(adecl) = array.safe_decl() else { return };
        // (a constant: no children. Not by its declaration's kind, whose value the system
        // Z3 may number differently from the bindings' enumeration.)
        if !array.children().is_empty() || adecl.arity() != 0 {
            return;
        }
        let name = adecl.name();
        let Some(start) = name
            .strip_prefix("heap[")
            .and_then(|n| n.rsplit_once("]@"))
            .and_then(|(_, e)| self.epoch_numbers.get(e).copied())
        else {
            return;
        };
        for (addr, &e) in self.esc_addrs.iter().zip(&self.esc_epoch_of) {
            if e >= start {
                self.esc_facts.push(v.eq(addr).not());
                self.apart.insert(addr, v);
            }
        }
    }

    /// The contents of escaped object `id` as this side's heap holds them now: every item of
    /// an array (every character of a string) of constant length up to 64, or for a struct the fields it had as it escaped,
    /// the fields either trace reads, the fields written since (this epoch or carried over
    /// heap-writing calls) and `extra`. A field the object never had is zero: stated about the
    /// heap this epoch started from. `None` for other shapes or lengths.
    pub(super) fn escaped_contents(&mut self, id: usize, extra: &[String]) -> Option<Vec<Content>> {
        let obj = self.objs[id].clone();
        let addr = obj.addr.clone()?;
        let mut out = Vec::new();
        if let Some(akey) = obj.shape.strip_prefix("array:") {
            let n = obj.len.as_ref()?.simplify().as_u64().filter(|&n| n <= 64)?;
            for i in 0..n {
                let place = self.item_place(&addr, akey, &bv(i), false);
                // As a read sees it (a narrow item's word or bytes hold only its bytes).
                let value = self.read_place(&place);
                let value = self.layout.extend(akey, value);
                out.push(Content {
                    name: format!("item:{akey}#{i}"),
                    place,
                    value,
                });
            }
            return Some(out);
        }
        if let Some(opc) = Opcode::from_name(&obj.shape).filter(|&o| string_char_size(o).is_some()) {
            let n = obj.len.as_ref()?.simplify().as_u64().filter(|&n| n <= 64)?;
            let (akey, width) = string_items(opc);
            for i in 0..n {
                let place = self.item_place(&addr, akey, &bv(i), false);
                // As `strgetitem` reads it.
                let value = narrow_to(self.read_place(&place), width, false);
                out.push(Content {
                    name: format!("item:{akey}#{i}"),
                    place,
                    value,
                });
            }
            return Some(out);
        }
        if obj.len.is_some() {
            return None;
        }
        let carried = self.carried.get(&id).cloned().unwrap_or_default();
        let layout = self.layout.clone();
        let plain = |k: &&String| layout.field(k).is_some() && !k.starts_with("imm:");
        let keys: BTreeSet<String> = obj
            .fields
            .keys()
            .chain(self.read_keys.iter())
            .chain(self.written.iter().filter(plain))
            .chain(self.written_fields.iter())
            .chain(carried.iter())
            .chain(extra.iter())
            .cloned()
            .collect();
        for key in keys {
            let place = self.field_place(&addr, &key);
            if !obj.fields.contains_key(&key) && !carried.contains(&key) {
                self.state_zero(&place);
            }
            let value = self.read_place(&place);
            let value = layout.extend(key.strip_prefix("imm:").unwrap_or(&key), value);
            out.push(Content {
                name: key,
                place,
                value,
            });
        }
        Some(out)
    }

    /// Start a new heap epoch after a call that may write the heap, keeping the contents of
    /// the objects only this side has escaped (`one_sided`, see [`one_sided`]): the call
    /// cannot reach them, since the heaps and the call's arguments were proven equal before it
    /// and nothing compared holds their addresses.
    ///
    /// [`one_sided`]: super::naming::one_sided
    pub(super) fn new_epoch_after_call(&mut self, epoch: String, one_sided: &[BV]) {
        let mut keep = Vec::new();
        for id in 0..self.objs.len() {
            let current = self.escaped_in.get(&id) == Some(&self.epoch);
            let Some(addr) = self.objs[id].addr.clone() else {
                continue;
            };
            if !current || !one_sided.iter().any(|e| e.ast_eq(&addr)) {
                continue;
            }
            if let Some(contents) = self.escaped_contents(id, &[]) {
                keep.push((id, contents));
            }
        }
        self.new_epoch(epoch, false);
        for (id, contents) in keep {
            let mut keys = BTreeSet::new();
            for f in contents {
                // Immutable fields' arrays are not replaced.
                if !matches!(&f.place, Place::Word { key, .. } if key.starts_with("imm:")) {
                    self.write_place(&f.place, &f.value, false);
                }
                keys.insert(f.name);
            }
            if self.objs[id].len.is_none() {
                self.carried.insert(id, keys);
            }
            // The bytes it never had are still zero.
            if let (Some(&(lo, hi)), Some(addr)) = (self.zero_span_of.get(&id), self.objs[id].addr.clone()) {
                self.zero_span(id, &addr, lo, hi);
            }
            self.escaped_in.insert(id, self.epoch.clone());
        }
    }
}
