//! Union-find forwarding: a side table `op -> Value` that says "this op is the same as that
//! value". Read it only through [`UnionFind::find`].
//!
//! The representative of a class is a constant or an op that survives; `make_equal_to` has a
//! direction (the op forwards to the value), and resolution is bounded by the table length so
//! a cycle panics instead of hanging.

use crate::entity::{OpRef, Value, ValueData};

/// Forwarding table over the ops of one trace.
#[derive(Clone, Debug, Default)]
pub struct UnionFind {
    forwarded: Vec<Option<Value>>,
}

impl UnionFind {
    /// A table for a trace of `n` ops, with nothing forwarded.
    pub fn new(n: usize) -> UnionFind {
        UnionFind {
            forwarded: vec![None; n],
        }
    }
    /// Forget everything and resize for a trace of `n` ops (reuse between traces).
    pub fn clear(&mut self, n: usize) {
        self.forwarded.clear();
        self.forwarded.resize(n, None);
    }
    /// Make room for ops up to index `n - 1`.
    pub fn grow(&mut self, n: usize) {
        if self.forwarded.len() < n {
            self.forwarded.resize(n, None);
        }
    }
    /// The representative of `v` (path halving).
    #[inline]
    pub fn find(&mut self, v: Value) -> Value {
        // Most values are their own representative: one load decides it.
        match v.data() {
            ValueData::Op(o) if matches!(self.forwarded.get(o.index()), Some(Some(_))) => self.find_forwarded(v),
            _ => v,
        }
    }

    /// [`UnionFind::find`] of a value that is forwarded.
    #[inline(never)]
    fn find_forwarded(&mut self, v: Value) -> Value {
        let mut cur = v;
        let mut steps = 0usize;
        while let ValueData::Op(o) = cur.data() {
            let Some(next) = self.forwarded.get(o.index()).copied().flatten() else {
                break;
            };
            // Path halving: point `o` at its grandparent.
            if let ValueData::Op(n) = next.data() {
                if let Some(grand) = self.forwarded.get(n.index()).copied().flatten() {
                    self.forwarded[o.index()] = Some(grand);
                }
            }
            cur = next;
            steps += 1;
            assert!(steps <= self.forwarded.len(), "union-find cycle at {v:?}");
        }
        cur
    }
    /// The representative of `v`, without path compression.
    pub fn known_find(&self, v: Value) -> Value {
        let mut cur = v;
        let mut steps = 0usize;
        while let ValueData::Op(o) = cur.data() {
            let Some(next) = self.forwarded.get(o.index()).copied().flatten() else {
                break;
            };
            cur = next;
            steps += 1;
            assert!(steps <= self.forwarded.len(), "union-find cycle at {v:?}");
        }
        cur
    }
    /// Record that `op` is the same as `v` from now on. Panics if `op`'s class would be made
    /// to forward to itself (a cycle) or if two different constants would be unified.
    pub fn make_equal_to(&mut self, op: OpRef, v: Value) {
        let target = self.find(v);
        let me = self.find(Value::op(op));
        if me == target {
            return;
        }
        match me.data() {
            ValueData::Op(rep) => {
                self.grow(rep.index() + 1);
                self.forwarded[rep.index()] = Some(target);
            }
            ValueData::Const(_) => {
                if let ValueData::Op(t) = target.data() {
                    // The class already has a constant representative: keep it.
                    self.grow(t.index() + 1);
                    self.forwarded[t.index()] = Some(me);
                } else {
                    panic!("make_equal_to: unifying two different constants {me:?} and {target:?}");
                }
            }
        }
    }
    /// Whether `op` forwards to something.
    pub fn is_forwarded(&self, op: OpRef) -> bool {
        self.forwarded.get(op.index()).copied().flatten().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::ConstRef;

    fn op(i: usize) -> Value {
        Value::op(OpRef::new(i))
    }

    #[test]
    fn find_follows_chains() {
        let mut uf = UnionFind::new(5);
        uf.make_equal_to(OpRef::new(0), op(1));
        uf.make_equal_to(OpRef::new(1), op(2));
        assert_eq!(uf.find(op(0)), op(2));
        assert_eq!(uf.find(op(3)), op(3));
        let c = Value::constant(ConstRef::new(7));
        uf.make_equal_to(OpRef::new(2), c);
        assert_eq!(uf.find(op(0)), c);
        assert_eq!(uf.known_find(op(1)), c);
    }

    #[test]
    fn constant_representative_wins() {
        let mut uf = UnionFind::new(3);
        let c = Value::constant(ConstRef::new(0));
        uf.make_equal_to(OpRef::new(0), c);
        // Unifying the constant's class with another op keeps the constant.
        uf.make_equal_to(OpRef::new(1), op(0));
        assert_eq!(uf.find(op(1)), c);
    }

    #[test]
    #[should_panic(expected = "two different constants")]
    fn two_constants_panic() {
        let mut uf = UnionFind::new(2);
        uf.make_equal_to(OpRef::new(0), Value::constant(ConstRef::new(0)));
        uf.make_equal_to(OpRef::new(0), Value::constant(ConstRef::new(1)));
    }
}
