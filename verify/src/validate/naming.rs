//! Naming fresh objects across the two traces: by escape order and shape, or paired by role.

use std::collections::{BTreeSet, HashSet};

use z3::ast::{Array, Ast, Dynamic, BV};
use z3::DeclKind;

use super::memory::{address_and_offset, byte_index, holds_bytes, select, select_expanded, BYTES};
use super::side::{LocalObj, Side};
use super::validator::Validator;

/// How escaped fresh objects are named on both sides (see [`esc_addr`]). The traces are
/// equivalent if they are under any one naming, since fresh objects are interchangeable; the
/// validator tries these in order until one proves the traces equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Naming {
    /// The `k`-th object of each shape and constant length to escape.
    ShapeAndLength,
    /// The `k`-th object of each shape to escape (arrays whose length one side knows only
    /// symbolically).
    Shape,
    /// The `k`-th object of each class (or of no class) to escape.
    Order,
    /// By role: each side's objects get their own addresses, and an object of the original
    /// and one of the optimized trace not yet paired become one object (equal addresses) where
    /// they meet in corresponding places of a sync point: the same call argument, fail
    /// argument, `finish`/`jump`/`label` operand or heap location ([`Validator::try_pair`]).
    /// For traces that escape different numbers of objects of a shape (one side escapes a
    /// temporary object the other keeps virtual, or allocates more).
    Role,
}

impl Naming {
    /// Whether this naming can match escaped objects (of these shapes, each with whether its
    /// length was constant) differently from the naming tried before it. Namings that only
    /// rename the addresses consistently on both sides give the same verdict.
    pub(super) fn differs(self, shapes: &BTreeSet<(String, bool)>) -> bool {
        match self {
            Naming::ShapeAndLength => true,
            Naming::Shape => shapes.iter().any(|(_, constant_len)| *constant_len),
            Naming::Order => shapes.iter().map(|(shape, _)| shape).collect::<BTreeSet<_>>().len() > 1,
            Naming::Role => !shapes.is_empty(),
        }
    }
}

/// The address of the `k`-th object of `shape` to escape on a side (`shape` as the [`Naming`]
/// has it: with a constant array length, without, or empty). Numbering per shape (not overall)
/// keeps the addresses of both traces matched when the optimizer makes objects of different
/// shapes escape in another order.
pub(super) fn esc_addr(shape: &str, k: usize) -> BV {
    BV::new_const(format!("esc{k}:{shape}"), 64)
}

/// The addresses `mine` gave objects that `other` has no object of at that address yet: the
/// `k`-th escape of a shape, for `k` at or above `other`'s count of that shape; under
/// [`Naming::Role`], the objects not paired yet.
pub(super) fn one_sided(mine: &Side, other: &Side) -> Vec<BV> {
    if mine.naming == Naming::Role {
        return mine
            .esc_addrs
            .iter()
            .zip(&mine.paired)
            .filter(|(_, &p)| !p)
            .map(|(a, _)| a.clone())
            .collect();
    }
    let mut out = Vec::new();
    for (shape, &n) in &mine.escapes {
        let from = other.escapes.get(shape).copied().unwrap_or(0);
        out.extend((from..n).map(|k| esc_addr(shape, k)));
    }
    out
}

impl<'t> Validator<'t> {
    /// Under [`Naming::Role`]: when `a` (original) and `b` (optimized) are the addresses of
    /// fresh objects of one shape that are not paired yet, met in corresponding places, pair
    /// them: assume their addresses equal (fresh objects are interchangeable, so this only
    /// chooses which runs of the traces are compared). Kept one-to-one; never done when it
    /// would contradict the path condition (then the places differ, as they should). Returns
    /// whether a pair was made.
    pub(super) fn try_pair(&mut self, a: &BV, b: &BV) -> bool {
        if self.o.naming != Naming::Role || self.tentative {
            return false;
        }
        let (a, b) = (a.simplify(), b.simplify());
        let Some(i) = self.o.esc_addrs.iter().position(|x| x.ast_eq(&a)) else {
            return false;
        };
        let Some(j) = self.p.esc_addrs.iter().position(|x| x.ast_eq(&b)) else {
            return false;
        };
        if self.o.paired[i] || self.p.paired[j] || self.o.esc_shape_of[i] != self.p.esc_shape_of[j] {
            return false;
        }
        self.drain_escape_facts();
        let same = a.eq(&b);
        match self.satisfiable(&same) {
            Some(true) => {}
            Some(false) => return false,
            None => {
                // Not paired: a difference found later may be this choice's, not the traces'.
                self.pairing_undecided = true;
                return false;
            }
        }
        self.assume(same.clone(), false);
        self.pair_facts.push(same);
        self.pairs.push((a, b));
        self.o.paired[i] = true;
        self.p.paired[j] = true;
        true
    }

    /// Index `i` as the original and as the optimized side name it: each paired address
    /// replaced by its partner's.
    fn paired_index(&self, i: &BV) -> (BV, BV) {
        if self.pairs.is_empty() {
            return (i.clone(), i.clone());
        }
        let to_o: Vec<(&BV, &BV)> = self.pairs.iter().map(|(a, b)| (b, a)).collect();
        let to_p: Vec<(&BV, &BV)> = self.pairs.iter().map(|(a, b)| (a, b)).collect();
        (i.substitute(&to_o).simplify(), i.substitute(&to_p).simplify())
    }

    /// Under [`Naming::Role`]: pair fresh objects of both sides that a heap word both sides
    /// wrote holds (the same field of the same object is a corresponding place), until no new
    /// pair is found (pairing objects pairs their fields' places). Where no word holds a fresh
    /// object on both sides, a word whose value involves exactly one fresh object not yet
    /// paired on each side (an item at an index the sides compute alike, say) pairs those.
    pub(super) fn pair_heap_values(&mut self, keys: &BTreeSet<String>) {
        if self.o.naming != Naming::Role {
            return;
        }
        loop {
            let values = self.heap_values(keys);
            let mut found = false;
            for (x, y) in &values {
                found |= self.try_pair(x, y);
            }
            if !found {
                for (x, y) in &values {
                    // (An address both words hold is the same object on both sides already.)
                    if let (Some(a), Some(b)) = (self.o.sole_unpaired_in(x, y), self.p.sole_unpaired_in(y, x)) {
                        if self.try_pair(&a, &b) {
                            found = true;
                            break;
                        }
                    }
                }
            }
            if !found {
                return;
            }
        }
    }

    /// The values (original, optimized) of the heap words either side wrote, read at the same
    /// place: for the byte memory, the words all of whose eight bytes one side wrote.
    fn heap_values(&mut self, keys: &BTreeSet<String>) -> Vec<(BV, BV)> {
        let mut out = Vec::new();
        for key in keys {
            if holds_bytes(key) {
                if key == BYTES {
                    out.extend(self.byte_words());
                }
                continue;
            }
            let bits = self
                .o
                .bits
                .get(key)
                .or_else(|| self.p.bits.get(key))
                .copied()
                .unwrap_or(64);
            let a = self.o.array(key, bits);
            let b = self.p.array(key, bits);
            if a.ast_eq(&b) {
                continue;
            }
            let mut seen = HashSet::new();
            let indices: Vec<BV> = [&self.o, &self.p]
                .iter()
                .flat_map(|s| s.written_at.get(key).into_iter().flatten())
                .filter(|i| seen.insert((*i).clone()))
                .cloned()
                .collect();
            for i in indices {
                // The index as each side names it: the objects paired so far have an
                // address per side.
                let (io, ip) = self.paired_index(&i);
                out.push((select(&a, &io), select(&b, &ip)));
            }
        }
        out
    }

    /// [`Self::heap_values`] of the byte memory: the words (eight bytes, all written by one
    /// side) read at the same object and offset.
    fn byte_words(&mut self) -> Vec<(BV, BV)> {
        let a = self.o.array(BYTES, 128);
        let b = self.p.array(BYTES, 128);
        if a.ast_eq(&b) {
            return Vec::new();
        }
        // (address, offset) of each word all of whose bytes one side wrote: the indices are
        // built by `byte_index` from the address and offset of each write, so rebuilding them
        // finds them.
        let mut words = Vec::new();
        let mut seen = HashSet::new();
        for side in [&self.o, &self.p] {
            let Some(written) = side.written_at.get(BYTES) else {
                continue;
            };
            let bytes: HashSet<&BV> = written.iter().collect();
            for i in written {
                let Some((addr, offset)) = address_and_offset(i) else {
                    continue;
                };
                let whole = (1..8).all(|j| bytes.contains(&byte_index(Some(&addr), &offset, j)));
                if whole && seen.insert(i.clone()) {
                    words.push((addr, offset));
                }
            }
        }
        let zeros = self.o.zeros.borrow().clone();
        let mut out = Vec::new();
        for (addr, offset) in words {
            let (ao, ap) = self.paired_index(&addr);
            let word = |array: &Array, addr: &BV| {
                (0..8u64)
                    .rev()
                    .map(|j| select_expanded(array, &byte_index(Some(addr), &offset, j), &zeros))
                    .reduce(|high, low| high.concat(&low))
                    .expect("eight bytes")
                    .simplify()
            };
            out.push((word(&a, &ao), word(&b, &ap)));
        }
        out
    }
}

/// The symbols a value may be (the branches of its `ite`s, the parts it concatenates or
/// extracts), each once.
fn value_leaves(v: &BV) -> Vec<BV> {
    let mut out: Vec<BV> = Vec::new();
    let mut stack = vec![Dynamic::from_ast(v)];
    let mut seen = HashSet::new();
    while let Some(t) = stack.pop() {
        if !seen.insert(t.clone()) {
            continue;
        }
        let Ok(decl) = t.safe_decl() else { continue };
        let kids = t.children();
        match decl.kind() {
            DeclKind::Ite => stack.extend(kids.into_iter().skip(1)),
            DeclKind::Concat | DeclKind::Extract => stack.extend(kids),
            _ if kids.is_empty() => out.extend(t.as_bv()),
            _ => {}
        }
    }
    out
}

impl<'t> Side<'t> {
    /// The one fresh object of this side not paired yet whose address `v` may be (as a value:
    /// a branch of an `ite`, bytes of it concatenated) and `other` (the other side's value of
    /// the same place) may not, if exactly one is.
    fn sole_unpaired_in(&self, v: &BV, other: &BV) -> Option<BV> {
        let held_there = value_leaves(other);
        let mut found: Option<BV> = None;
        for b in value_leaves(v) {
            let unpaired = self
                .esc_addrs
                .iter()
                .zip(&self.paired)
                .any(|(a, &p)| !p && a.ast_eq(&b));
            if unpaired && !held_there.iter().any(|x| x.ast_eq(&b)) {
                match &found {
                    Some(f) if !f.ast_eq(&b) => return None,
                    _ => found = Some(b),
                }
            }
        }
        found
    }

    /// The address of the object `obj` escaping now (of constant length `len` if an array),
    /// under this side's naming: side-specific by role, otherwise [`esc_addr`] of its shape as
    /// the naming has it and its number among the escapes of that shape.
    pub(super) fn fresh_address(&mut self, obj: &LocalObj, len: Option<u64>) -> BV {
        if self.naming == Naming::Role {
            // Side-specific: paired with the other side's objects by role.
            BV::new_const(format!("esc{}:{}", self.esc_addrs.len(), self.tag), 64)
        } else {
            let shape = match (self.naming, len) {
                (Naming::ShapeAndLength, Some(n)) => format!("{}/{n}", obj.shape),
                (Naming::ShapeAndLength | Naming::Shape, _) => obj.shape.clone(),
                // (objects of different classes are never one object: their class words
                // differ, and the facts stating them would contradict each other)
                _ => obj.class.as_ref().map_or(String::new(), |c| format!("class {c}")),
            };
            let k = self.escapes.entry(shape.clone()).or_insert(0);
            let addr = esc_addr(&shape, *k);
            *k += 1;
            addr
        }
    }
}
