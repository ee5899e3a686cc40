//! Comparison of values, tracked and escaped objects, and heaps at a sync point.

use std::collections::{BTreeSet, HashMap, HashSet};

use z3::ast::{Ast, Bool, BV};

use super::memory::{holds_bytes, select_apart, select_expanded, RAW};
use super::naming::one_sided;
use super::side::Sym;
use super::validator::Validator;
use super::R;

/// Objects of the original (by id) matched with objects of the optimized trace while
/// comparing values: a matching in both directions, so that aliasing differs visibly.
#[derive(Clone, Default)]
pub(super) struct Pairs {
    pub(super) fwd: HashMap<usize, usize>,
    pub(super) bwd: HashMap<usize, usize>,
}

impl Pairs {
    /// Whether `a` (original) and `b` (optimized) are matched: `Some(true)` if with each
    /// other, `Some(false)` if either with another object, `None` if neither is matched.
    pub(super) fn known(&self, a: usize, b: usize) -> Option<bool> {
        match (self.fwd.get(&a), self.bwd.get(&b)) {
            (None, None) => None,
            (Some(&b2), _) => Some(b2 == b),
            (None, Some(_)) => Some(false),
        }
    }

    pub(super) fn insert(&mut self, a: usize, b: usize) {
        self.fwd.insert(a, b);
        self.bwd.insert(b, a);
    }
}

impl<'t> Validator<'t> {
    /// Prove two values equal: bit-vectors by equality, tracked objects field by field.
    /// `pairs` relates the objects already matched at this sync point (shared by all its
    /// values, so one object on one side cannot stand for two different ones on the other).
    pub(super) fn prove_equal(&mut self, so: &Sym, sp: &Sym, pairs: &mut Pairs, what: &dyn Fn() -> String) -> R<()> {
        match (self.o.tracked(so), self.p.tracked(sp)) {
            (None, None) => {
                let a = self.o.escape(so);
                let b = self.p.escape(sp);
                self.note_equal_candidate(&a, &b);
                self.try_pair(&a, &b);
                self.prove(&a.eq(&b), what, Some((&a, &b)))
            }
            _ => {
                let claim = self.obj_equal(so, sp, pairs);
                self.prove(&claim, what, None)
            }
        }
    }

    /// The condition under which two values (possibly tracked objects) are equal.
    pub(super) fn obj_equal(&mut self, so: &Sym, sp: &Sym, pairs: &mut Pairs) -> Bool {
        match (self.o.tracked(so), self.p.tracked(sp)) {
            (None, None) => {
                let a = self.o.escape(so);
                let b = self.p.escape(sp);
                self.note_equal_candidate(&a, &b);
                self.try_pair(&a, &b);
                a.eq(&b)
            }
            (Some(a), Some(b)) => {
                if let Some(known) = pairs.known(a, b) {
                    return Bool::from_bool(known);
                }
                pairs.insert(a, b);
                let (oa, ob) = (self.o.objs[a].clone(), self.p.objs[b].clone());
                if oa.shape != ob.shape {
                    return Bool::from_bool(false);
                }
                let mut conj = Vec::new();
                if let (Some(x), Some(y)) = (&oa.len, &ob.len) {
                    conj.push(x.eq(y));
                }
                // Every field either object holds, as the other holds its bytes (objects never
                // hold overlapping fields themselves).
                let keys: BTreeSet<&String> = oa.fields.keys().chain(ob.fields.keys()).collect();
                let layout = self.o.layout.clone();
                for k in keys {
                    let (Some(fa), Some(fb)) = (layout.tracked_view(&oa, k), layout.tracked_view(&ob, k)) else {
                        return Bool::from_bool(false);
                    };
                    conj.push(self.obj_equal(&fa, &fb, pairs));
                }
                Bool::and(&conj)
            }
            // A tracked object on one side, a pointer on the other: equal only if the pointer
            // is a fresh object the other side has not escaped (so nothing compared holds its
            // address on the tracked side) with the same contents.
            (None, Some(b)) => self.escaped_vs_tracked(true, so, b, pairs),
            (Some(a), None) => self.escaped_vs_tracked(false, sp, a, pairs),
        }
    }

    /// `x` on side `orig` (a pointer) against the object `t` tracked on the other side: the
    /// disjunction, over this side's fresh objects escaped only here with `t`'s shape, of
    /// "`x` is its address and its contents equal `t`'s". With a single syntactic match the
    /// pairing is kept in `pairs`; otherwise each alternative pairs on a copy.
    pub(super) fn escaped_vs_tracked(&mut self, orig: bool, x: &Sym, t: usize, pairs: &mut Pairs) -> Bool {
        let xv = self.side(orig).escape(x).simplify();
        let (mine, other) = if orig { (&self.o, &self.p) } else { (&self.p, &self.o) };
        let one_sided = one_sided(mine, other);
        let shape = &other.objs[t].shape;
        let candidates: Vec<(usize, BV)> = mine
            .objs
            .iter()
            .enumerate()
            .filter_map(|(id, o)| {
                let addr = o.addr.as_ref()?;
                (o.shape == *shape
                    && !o.dead
                    && mine.escaped_in.get(&id) == Some(&mine.epoch)
                    && one_sided.iter().any(|e| e.ast_eq(addr)))
                .then(|| (id, addr.clone()))
            })
            .collect();
        let pair = |pairs: &Pairs, c: usize| if orig { pairs.known(c, t) } else { pairs.known(t, c) };
        if let Some((c, _)) = candidates.iter().find(|(_, a)| a.ast_eq(&xv)) {
            return match pair(pairs, *c) {
                Some(known) => Bool::from_bool(known),
                None => self.escaped_contents_equal(orig, *c, t, pairs),
            };
        }
        let mut alternatives = Vec::new();
        let tentative = std::mem::replace(&mut self.tentative, true);
        for (c, addr) in candidates {
            let same = match pair(pairs, c) {
                Some(known) => Bool::from_bool(known),
                None => self.escaped_contents_equal(orig, c, t, &mut pairs.clone()),
            };
            alternatives.push(Bool::and(&[xv.eq(&addr), same]));
        }
        self.tentative = tentative;
        Bool::or(&alternatives)
    }

    /// Object `c`, escaped on side `orig` (its contents in that side's heap), against object
    /// `t` tracked on the other side: same shape, length and fields (pairs them first).
    pub(super) fn escaped_contents_equal(&mut self, orig: bool, c: usize, t: usize, pairs: &mut Pairs) -> Bool {
        if orig {
            pairs.insert(c, t);
        } else {
            pairs.insert(t, c);
        }
        let (mine, other) = if orig {
            (&mut self.o, &self.p)
        } else {
            (&mut self.p, &self.o)
        };
        let (esc, tr) = (mine.objs[c].clone(), other.objs[t].clone());
        let mut conj = Vec::new();
        if let (Some(x), Some(y)) = (&esc.len, &tr.len) {
            conj.push(x.eq(y));
        }
        let extra: Vec<String> = tr.fields.keys().cloned().collect();
        let Some(contents) = mine.escaped_contents(c, &extra) else {
            return Bool::from_bool(false);
        };
        // (this side's value read from its heap, the tracked side's value)
        let layout = mine.layout.clone();
        let mut fields: Vec<(BV, Sym)> = Vec::new();
        for f in contents {
            let Some(w) = layout.tracked_view(&tr, &f.name) else {
                // A view inside a field through which `t` holds an object: those bytes are
                // compared as that field (one of `extra`).
                if layout.within_object_field(&tr, &f.name) {
                    continue;
                }
                return Bool::from_bool(false);
            };
            fields.push((f.value, w));
        }
        for (v, w) in fields {
            let v = Sym::Bv(v);
            conj.push(if orig {
                self.obj_equal(&v, &w, pairs)
            } else {
                self.obj_equal(&w, &v, pairs)
            });
        }
        Bool::and(&conj)
    }

    pub(super) fn prove_heap_equal(&mut self, when: &str) -> R<()> {
        let keys: BTreeSet<String> = self.o.written.iter().chain(self.p.written.iter()).cloned().collect();
        self.pair_heap_values(&keys);
        // Fresh objects only one side gave an address so far (`esc{k}` for k at or above the
        // smaller count; by role: not paired): on the other side the object is still tracked,
        // or does not exist. Its contents are not part of the heap comparison; if anything
        // compared can reach it, that reference itself differs (an address on one side, not on
        // the other).
        let mut one_sided = one_sided(&self.o, &self.p);
        one_sided.extend(self::one_sided(&self.p, &self.o));
        let layout = self.o.layout.clone();
        let on_one_side = |key: &str, i: &BV| {
            if key == RAW {
                return false;
            }
            let n = i.get_size();
            let a = if n > 64 {
                i.extract(n - 1, n - 64).simplify()
            } else {
                i.simplify()
            };
            one_sided.iter().any(|e| e.ast_eq(&a))
        };
        for key in keys {
            let bits = self
                .o
                .bits
                .get(&key)
                .or_else(|| self.p.bits.get(&key))
                .copied()
                .unwrap_or(64);
            let a = self.o.array(&key, bits);
            let b = self.p.array(&key, bits);
            if a.ast_eq(&b) {
                continue;
            }
            // Both arrays are stores into the same initial array, so they are equal exactly
            // when they agree at every index either side wrote: a finite conjunction of
            // reads instead of array extensionality, which Z3 finds much harder.
            let mut seen = HashSet::new();
            let mut same = Vec::new();
            let mut skipped = 0;
            for side in [&self.o, &self.p] {
                for i in side.written_at.get(&key).into_iter().flatten() {
                    if on_one_side(&key, i) {
                        skipped += 1;
                        continue;
                    }
                    if seen.insert(i.clone()) {
                        same.push(if holds_bytes(&key) {
                            let zeros = self.o.zeros.borrow();
                            select_expanded(&a, i, &zeros).eq(select_expanded(&b, i, &zeros))
                        } else {
                            // A narrow integer's word holds only its bytes: compare what a read
                            // sees (the initial words' other bits are seen by no read). Reads look
                            // through the stores into the original's escaped objects that the
                            // path condition states apart from the index (the original escapes
                            // only on the path, never in a guard's exit).
                            let apart = &self.o.apart;
                            let (x, y) = (select_apart(&a, i, apart), select_apart(&b, i, apart));
                            match layout.word_descr(&key) {
                                Some(d) => layout.extend(d, x).eq(layout.extend(d, y)),
                                None => x.eq(y),
                            }
                        });
                    }
                }
            }
            if same.is_empty() && skipped > 0 {
                continue;
            }
            let claim = if same.is_empty() { a.eq(&b) } else { Bool::and(&same) };
            self.prove(&claim, || format!("heap {key} differs {when}"), None)?;
        }
        Ok(())
    }
}
