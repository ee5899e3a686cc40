//! The working values of the pass: the arena of output ops and what is known about each
//! (`Info`), the constants of the output, the union-find that records equalities, and the
//! map from input ops to working values (see the module documentation of [`super`]).

use super::{Pass, F_FRESH, F_NONNULL, NO_VIRT};
use crate::domain::IntBound;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{Const, Kind, Op, OpRef, Value, ValueData, WordFacts};
use trace_ir::{ConstPool, UnionFind};

/// What the pass knows about one arena op.
#[derive(Clone, Debug)]
pub(super) struct Info {
    pub(super) bound: IntBound<u64>,
    pub(super) class: Option<i64>,
    pub(super) virt: u32,
    pub(super) flags: u8,
}

impl Default for Info {
    fn default() -> Self {
        Info {
            bound: IntBound::unbounded(),
            class: None,
            virt: NO_VIRT,
            flags: 0,
        }
    }
}

/// The working values (the tables are reused from trace to trace by [`crate::Optimizer`]).
#[derive(Default)]
pub(crate) struct Values {
    /// The arena of working ops (`Pass::emit` and `Pass::push_arena` append).
    pub ops: Vec<Op>,
    /// Per arena op knowledge.
    pub info: Vec<Info>,
    /// Emission order (arena ops).
    pub order: Vec<OpRef>,
    /// Constant pool of the output.
    pub consts: ConstPool,
    /// Unnamed constants interned so far.
    pub const_cache: FxHashMap<Const, Value>,
    pub uf: UnionFind,
    /// Input op -> working value.
    pub map: Vec<Value>,
    /// The classes of pointer constants, from `record_exact_class` and passed class guards.
    pub const_classes: FxHashMap<Value, i64>,
}

impl Clone for Values {
    fn clone(&self) -> Values {
        let mut v = Values::default();
        v.clone_from(self);
        v
    }

    /// Field by field, keeping this value's allocations (a resumed run keeps its reserve).
    fn clone_from(&mut self, o: &Values) {
        self.ops.clone_from(&o.ops);
        self.info.clone_from(&o.info);
        self.order.clone_from(&o.order);
        self.consts.clone_from(&o.consts);
        self.const_cache.clone_from(&o.const_cache);
        self.uf.clone_from(&o.uf);
        self.map.clone_from(&o.map);
        self.const_classes.clone_from(&o.const_classes);
    }
}

impl Values {
    /// Empty tables sized for a trace of `n` ops with the constants `consts`.
    pub fn reset(&mut self, n: usize, consts: &ConstPool) {
        self.ops.clear();
        self.ops.reserve(n + 8);
        self.info.clear();
        self.info.reserve(n + 8);
        self.order.clear();
        self.order.reserve(n + 8);
        self.uf.clear(n + 8);
        self.map.clear();
        self.map.resize(n, Value::op(OpRef::new(0)));
        self.const_cache.clear();
        self.const_cache.reserve(64);
        self.const_classes.clear();
        self.consts.clone_from(consts);
    }
}

impl<'a> Pass<'a> {
    /// The working value of an input operand.
    #[inline]
    pub(super) fn get(&mut self, v: Value) -> Value {
        match v.data() {
            ValueData::Const(_) => v,
            ValueData::Op(o) => self.v.uf.find(self.v.map[o.index()]),
        }
    }

    #[inline]
    pub(super) fn find(&mut self, v: Value) -> Value {
        self.v.uf.find(v)
    }

    pub(super) fn push_arena(&mut self, op: Op) -> OpRef {
        let r = OpRef::new(self.v.ops.len());
        self.v.ops.push(op);
        self.v.info.push(Info::default());
        self.v.uf.grow(self.v.ops.len());
        self.note_pushed();
        r
    }

    pub(super) fn emit(&mut self, op: Op) -> Value {
        let r = self.push_arena(op);
        self.v.order.push(r);
        Value::op(r)
    }

    pub(super) fn const_val(&self, v: Value) -> Option<Const> {
        v.as_const().map(|c| self.v.consts.get(c))
    }

    pub(super) fn const_i64(&self, v: Value) -> Option<i64> {
        match self.const_val(v) {
            Some(Const::Int(i)) => Some(i),
            _ => None,
        }
    }

    pub(super) fn make_int(&mut self, c: i64) -> Value {
        self.make_const(Const::Int(c))
    }

    /// Intern a constant (a local cache in front of the pool, whose index hashes strings).
    pub(super) fn make_const(&mut self, c: Const) -> Value {
        if let Some(&v) = self.v.const_cache.get(&c) {
            return v;
        }
        let v = Value::constant(self.v.consts.intern(c));
        self.v.const_cache.insert(c, v);
        v
    }

    pub(super) fn zero_of(&mut self, kind: Kind) -> Value {
        self.make_const(match kind {
            Kind::Float => Const::Float(0),
            Kind::Ref => Const::Ref(0),
            _ => Const::Int(0),
        })
    }

    pub(super) fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            ValueData::Op(o) => self.v.ops[o.index()].opcode.result_kind(),
            ValueData::Const(c) => self.v.consts.get(c).kind(),
        }
    }

    /// The abstract value of an integer working value.
    pub(super) fn bound_of(&self, v: Value) -> IntBound<u64> {
        match v.data() {
            ValueData::Const(c) => match self.v.consts.get(c) {
                Const::Int(i) => IntBound::from_i64(i),
                _ => IntBound::unbounded(),
            },
            ValueData::Op(o) => self.v.info[o.index()].bound.clone(),
        }
    }

    /// Whether nothing is known about the integer value `v`.
    pub(super) fn is_top(&self, v: Value) -> bool {
        match v.as_op() {
            Some(o) => {
                let b = &self.v.info[o.index()].bound;
                b.bits.unknowns == u64::MAX && b.range.lower == i64::MIN as u64 && b.range.upper == i64::MAX as u64
            }
            None => false,
        }
    }

    pub(super) fn virt_of(&self, v: Value) -> Option<u32> {
        let o = v.as_op()?;
        let id = self.v.info[o.index()].virt;
        (id != NO_VIRT).then_some(id)
    }

    pub(super) fn is_virtual(&self, v: Value) -> bool {
        self.virt_of(v).is_some()
    }

    pub(super) fn known_nonnull(&self, v: Value) -> bool {
        match v.data() {
            ValueData::Const(c) => self.v.consts.get(c).bits() != 0,
            ValueData::Op(o) => {
                let i = &self.v.info[o.index()];
                i.virt != NO_VIRT || i.flags & F_NONNULL != 0
            }
        }
    }

    /// Whether two references may be the same object.
    pub(super) fn may_alias(info: &[Info], a: Value, b: Value) -> bool {
        a == b || !Self::fresh_apart(info, a, b)
    }

    /// Whether `a` and `b` are different objects because one is an allocation of this trace
    /// and the other a constant or a value that existed before the allocation (an arena op
    /// made earlier in the pass, which follows the trace's order; a label parameter holds an
    /// earlier iteration's value): a fresh object is at no constant's address
    /// (docs/memory-model.md) and at no address a value already held. Two allocations are
    /// always apart. `a` and `b` are representatives, and not the same value.
    pub(super) fn fresh_apart(info: &[Info], a: Value, b: Value) -> bool {
        let fresh = |v: Value| v.as_op().filter(|o| info[o.index()].flags & F_FRESH != 0);
        let before = |f: OpRef, o: Value| {
            o.as_op()
                .is_none_or(|o| o.index() < f.index() || fresh(Value::from(o)).is_some())
        };
        match (fresh(a), fresh(b)) {
            (Some(f), _) => before(f, b),
            (None, Some(f)) => before(f, a),
            (None, None) => false,
        }
    }

    /// From now on `v` is `c` (`v` a working value that is not a constant).
    pub(super) fn make_equal(&mut self, v: Value, c: Value) {
        let v = self.find(v);
        let c = self.find(c);
        if v == c {
            return;
        }
        let Some(o) = v.as_op() else { return };
        if self.v.info[o.index()].virt != NO_VIRT {
            return;
        }
        if let Some(i) = self.const_i64(c) {
            self.v.info[o.index()].bound = IntBound::from_i64(i);
        }
        self.v.uf.make_equal_to(o, c);
    }

    /// What is known about `v` now, as facts another trace may start from (a non-virtual
    /// value: a virtual one has no word of its own).
    pub(super) fn word_facts(&mut self, v: Value) -> WordFacts {
        let v = self.find(v);
        let mut f = WordFacts::default();
        match self.kind_of(v) {
            Kind::Int => {
                let b = self.bound_of(v);
                if b.is_empty() {
                    return f;
                }
                let (lo, hi) = (b.lower_i64(), b.upper_i64());
                if (lo, hi) != (i64::MIN, i64::MAX) {
                    f.range = Some((lo, hi));
                }
                // Bits the range implies already are not repeated.
                let known = b.bits.knowns() & !IntBound::bits_from_range(&b.range).knowns();
                if known != 0 {
                    f.bits = Some((known, b.bits.known_ones() & known));
                }
            }
            Kind::Ref => {
                f.class = self.known_class(v);
                f.nonnull = self.known_nonnull(v);
            }
            _ => {}
        }
        f
    }

    pub(super) fn set_nonnull(&mut self, v: Value) {
        if let Some(o) = v.as_op() {
            self.v.info[o.index()].flags |= F_NONNULL;
        }
    }
}
