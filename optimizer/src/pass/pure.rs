//! Pure ops: constant folding, the abstract value of integer ops (`IntBound`), the peephole
//! rules (through [`RuleEnv`]), division by a constant ([`divconst`]), and
//! common-subexpression elimination.

use super::{Pass, F_OVF_CHECKED, MAX_DEPTH};
use crate::divconst::{self, Arg};
use crate::domain::IntBound;
use crate::fold::fold_pure;
use crate::peephole::{self, RuleEnv};
use crate::Reason;
use smallvec::SmallVec;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{ConstRef, DescrRef, Kind, Op, OpFlags, OpRef, Opcode, Value};

/// `f` applied to each operand, without the generic `Extend` path of `SmallVec` (this runs for
/// every op, several times).
#[inline]
pub(super) fn map_args(src: &[Value], mut f: impl FnMut(Value) -> Value) -> SmallVec<[Value; 3]> {
    if src.len() <= 3 {
        let mut buf = [Value::constant(ConstRef::new(0)); 3];
        for (slot, &a) in buf.iter_mut().zip(src) {
            *slot = f(a);
        }
        SmallVec::from_buf_and_len(buf, src.len())
    } else {
        src.iter().map(|&a| f(a)).collect()
    }
}

/// CSE key: opcode, descriptor and operands (commutative operands sorted).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) struct Key {
    pub(super) opcode: Opcode,
    pub(super) descr: Option<DescrRef>,
    pub(super) args: SmallVec<[Value; 3]>,
}

impl Key {
    pub(super) fn new(opcode: Opcode, args: &[Value], descr: Option<DescrRef>) -> Key {
        let mut args: SmallVec<[Value; 3]> = SmallVec::from_slice(args);
        if opcode.is_commutative() && args.len() == 2 && args[1] < args[0] {
            args.swap(0, 1);
        }
        Key { opcode, descr, args }
    }
}

/// The tables of common-subexpression elimination (reused from trace to trace).
#[derive(Default)]
pub(crate) struct Cse {
    /// Pure ops, elidable and loop-invariant calls, immutable reads, array lengths.
    pub pure: FxHashMap<Key, Value>,
    /// `_ovf` ops whose overflow guard passed.
    pub ovf: FxHashMap<Key, Value>,
    /// In a peeled loop's body: what the peeled iteration computed on operands the body's
    /// parameters always equal (keyed by those parameters; see `Pass::pure_across_label`).
    pub preamble: FxHashMap<Key, Value>,
    /// The body label `preamble` is about, and its invariant parameters with their
    /// positions.
    pub(super) body: Option<(OpRef, FxHashMap<Value, usize>)>,
    /// The results of `preamble` the body uses, which the label is to carry
    /// ([`super::invariant`]).
    pub(super) used: Vec<super::invariant::Used>,
}

impl Clone for Cse {
    fn clone(&self) -> Cse {
        let mut c = Cse::default();
        c.clone_from(self);
        c
    }

    /// Field by field, keeping this value's allocations.
    fn clone_from(&mut self, o: &Cse) {
        self.pure.clone_from(&o.pure);
        self.ovf.clone_from(&o.ovf);
        self.preamble.clone_from(&o.preamble);
        self.body.clone_from(&o.body);
        self.used.clone_from(&o.used);
    }
}

impl Cse {
    /// Empty tables for a trace of `n` ops.
    pub fn reset(&mut self, n: usize) {
        self.pure.clear();
        self.pure.reserve(n / 2);
        self.ovf.clear();
        self.preamble.clear();
        self.body = None;
        self.used.clear();
    }
}

impl<'a> Pass<'a> {
    /// The value CSE knows for `key`: computed before, or (in a peeled loop's body) by the
    /// peeled iteration on the same invariant operands, which the body then depends on
    /// (through a label parameter, when a trace entering the body can compute it too).
    pub(super) fn cse_get(&mut self, key: &Key) -> Option<Value> {
        if let Some(&v) = self.cse.pure.get(key) {
            return Some(v);
        }
        if self.cse.preamble.is_empty() {
            return None;
        }
        let v = *self.cse.preamble.get(key)?;
        self.use_preamble(key, v)
    }
}

impl<'a> Pass<'a> {
    /// Optimize the pure op `opc(args)` (working values): fold, bounds, rules, CSE, emit.
    /// `top` is true for ops of the input (counted in the statistics when removed); the
    /// plain op an `_ovf` op becomes (`top` false, outside any rule) is only explained.
    pub(super) fn pure(&mut self, opc: Opcode, args: &[Value], descr: Option<DescrRef>, top: bool) -> Value {
        let count = |p: &mut Self, r: Reason| {
            if top {
                p.removed(r)
            } else if p.depth == 0 {
                p.explain_removed(p.cur, r)
            }
        };
        if matches!(opc, Opcode::SameAsI | Opcode::SameAsR | Opcode::SameAsF) {
            count(self, Reason::Hint);
            return args[0];
        }
        // 1. constant folding
        if self.opts.fold && args.iter().all(|a| a.is_const()) {
            let mut bits: SmallVec<[u64; 3]> = SmallVec::new();
            for &a in args {
                bits.push(self.const_val(a).map_or(0, |c| c.bits()));
            }
            if let Some(c) = fold_pure(opc, &bits) {
                count(self, Reason::Folded);
                return self.make_const(c);
            }
        }
        // pointer identity (also of virtuals, which must not escape here)
        if matches!(
            opc,
            Opcode::PtrEq | Opcode::PtrNe | Opcode::InstancePtrEq | Opcode::InstancePtrNe
        ) {
            if let Some(eq) = self.known_ptr_eq(args[0], args[1]) {
                let want_eq = matches!(opc, Opcode::PtrEq | Opcode::InstancePtrEq);
                count(self, Reason::Folded);
                return self.make_int((eq == want_eq) as i64);
            }
        }
        // 2. abstract value
        let is_int = opc.result_kind() == Kind::Int;
        let mut bound = None;
        if self.opts.intbounds && is_int {
            // fast path: these ops map "nothing known" to "nothing known"
            let b = if matches!(
                opc,
                Opcode::IntAdd | Opcode::IntSub | Opcode::IntMul | Opcode::IntXor | Opcode::IntNeg | Opcode::IntInvert
            ) && args.iter().all(|&a| self.is_top(a))
            {
                IntBound::unbounded()
            } else {
                self.transfer(opc, args)
            };
            if !b.is_empty() {
                if let Some(c) = b.get_constant() {
                    count(self, Reason::BoundsConstant);
                    return self.make_int(c);
                }
                if matches!(opc, Opcode::IntAnd | Opcode::IntOr) {
                    let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                    let and = opc == Opcode::IntAnd;
                    let id = |x: &IntBound<u64>, y: &IntBound<u64>| {
                        if and {
                            x.is_and_identity(y)
                        } else {
                            x.is_or_identity(y)
                        }
                    };
                    let keep = if id(&ba, &bb) {
                        Some(args[0])
                    } else if id(&bb, &ba) {
                        Some(args[1])
                    } else {
                        None
                    };
                    if let Some(k) = keep {
                        self.fired(if and { "and_identity" } else { "or_identity" });
                        count(self, Reason::Identity);
                        return k;
                    }
                }
                bound = Some(b);
            }
        }
        // 3. peephole rules
        if self.opts.rules && self.depth < MAX_DEPTH {
            self.depth += 1;
            let r = peephole::apply(self, opc, args);
            self.depth -= 1;
            if let Some((name, v)) = r {
                self.fired(name);
                count(self, Reason::Rule);
                return self.find(v);
            }
        }
        // 4. division and modulo by a constant
        if self.opts.divconst
            && self.depth < MAX_DEPTH
            && matches!(
                opc,
                Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod
            )
        {
            if let Some(v) = self.divide_by_const(opc, args) {
                self.fired("divconst");
                count(self, Reason::Rule);
                return v;
            }
        }
        // virtual operands of any other pure op escape
        for &a in args {
            self.force(a);
        }
        // 5. CSE
        let key = if self.opts.cse {
            Some(Key::new(opc, args, descr))
        } else {
            None
        };
        if let Some(k) = &key {
            if let Some(v) = self.cse_get(k) {
                count(self, Reason::Cse);
                return self.find(v);
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if let Some(b) = bound {
            self.v.info[v.as_op().unwrap().index()].bound = b;
        }
        if let Some(k) = key {
            self.cse.pure.insert(k, v);
        }
        v
    }

    /// `opc(x, c)` by a constant `c` as the ops of [`divconst::plan`], if it has one.
    fn divide_by_const(&mut self, opc: Opcode, args: &[Value]) -> Option<Value> {
        let c = self.const_i64(args[1])?;
        let nonneg = self.bound_of(args[0]).known_nonnegative();
        let plan = divconst::plan(opc, c, nonneg)?;
        self.depth += 1;
        let mut vals: SmallVec<[Value; 10]> = SmallVec::new();
        for st in &plan {
            let mut ops: SmallVec<[Value; 2]> = SmallVec::new();
            for &a in &st.args[..st.opcode.fixed_arity()] {
                ops.push(match a {
                    Arg::X => args[0],
                    Arg::Step(i) => vals[i as usize],
                    Arg::Const(k) => self.make_int(k),
                });
            }
            let v = self.pure(st.opcode, &ops, None, false);
            vals.push(v);
        }
        self.depth -= 1;
        vals.last().copied()
    }

    /// Whether two references are known equal (`Some(true)`) or known different.
    pub(super) fn known_ptr_eq(&self, a: Value, b: Value) -> Option<bool> {
        if a == b {
            return Some(true);
        }
        if let (Some(x), Some(y)) = (self.const_val(a), self.const_val(b)) {
            return Some(x.bits() == y.bits());
        }
        let (va, vb) = (self.is_virtual(a), self.is_virtual(b));
        if va || vb {
            // a virtual is a fresh object only reachable through its own value
            return Some(false);
        }
        let null = |v: Value| self.const_val(v).map(|c| c.bits() == 0).unwrap_or(false);
        if (null(a) && self.known_nonnull(b)) || (null(b) && self.known_nonnull(a)) {
            return Some(false);
        }
        if Self::fresh_apart(&self.v.info, a, b) {
            return Some(false);
        }
        None
    }

    /// The forward transfer function of an integer op.
    pub(super) fn transfer(&self, opc: Opcode, args: &[Value]) -> IntBound<u64> {
        use Opcode::*;
        let a = |i: usize| self.bound_of(args[i]);
        match opc {
            IntAdd => a(0).add(&a(1)),
            IntSub => a(0).sub(&a(1)),
            IntMul => a(0).mul(&a(1)),
            IntAnd => a(0).and(&a(1)),
            IntOr => a(0).or(&a(1)),
            IntXor => a(0).xor(&a(1)),
            UintMulHigh => a(0).uint_mul_high(&a(1)),
            IntFloorDiv => a(0).floordiv(&a(1)),
            IntMod => a(0).modulo(&a(1)),
            IntPyDiv => a(0).pydiv(&a(1)),
            IntPyMod => a(0).pymod(&a(1)),
            IntLshift => a(0).lshift(&a(1)),
            IntRshift => a(0).rshift(&a(1)),
            UintRshift => a(0).uint_rshift(&a(1)),
            IntEq => a(0).eq(&a(1)),
            IntNe => a(0).ne(&a(1)),
            IntLt => a(0).lt(&a(1)),
            IntLe => a(0).le(&a(1)),
            IntGt => a(0).gt(&a(1)),
            IntGe => a(0).ge(&a(1)),
            UintLt => a(0).ult(&a(1)),
            UintLe => a(0).ule(&a(1)),
            UintGt => a(0).ugt(&a(1)),
            UintGe => a(0).uge(&a(1)),
            IntIsTrue => a(0).is_true(),
            IntIsZero => a(0).is_zero(),
            IntNeg => a(0).neg(),
            IntInvert => a(0).invert(),
            IntForceGeZero => a(0).force_ge_zero(),
            // One of the two operands: the one the condition picks when it is decided, else
            // their join (proven with the domains' joins).
            IntSelect => match a(0).is_true().get_constant() {
                Some(1) => a(1),
                Some(_) => a(2),
                None => a(1).join(&a(2)),
            },
            IntSignext => match self.const_i64(args[1]) {
                Some(n @ (1 | 2 | 4 | 8)) => a(0).signext(n as u32),
                _ => IntBound::unbounded(),
            },
            _ if opc.has(OpFlags::BOOL_RESULT) => IntBound::boolean(),
            _ => IntBound::unbounded(),
        }
    }
}

impl RuleEnv for Pass<'_> {
    fn bound(&self, v: Value) -> IntBound<u64> {
        self.bound_of(self.v.uf.known_find(v))
    }
    fn const_int(&self, v: Value) -> Option<i64> {
        self.const_i64(self.v.uf.known_find(v))
    }
    fn def(&self, v: Value) -> Option<(Opcode, SmallVec<[Value; 3]>)> {
        let o = self.v.uf.known_find(v).as_op()?;
        let op = &self.v.ops[o.index()];
        let opcode = if op.opcode.is_pure() {
            op.opcode
        } else if op.opcode.is_ovf() && self.v.info[o.index()].flags & F_OVF_CHECKED != 0 {
            // same value as the plain op (and it did not overflow)
            op.opcode.ovf_to_wrapping()?
        } else {
            return None;
        };
        Some((opcode, map_args(&op.args, |a| self.v.uf.known_find(a))))
    }
    fn make_const(&mut self, c: i64) -> Value {
        self.make_int(c)
    }
    fn emit(&mut self, opcode: Opcode, args: &[Value]) -> Value {
        let args = map_args(args, |a| self.v.uf.find(a));
        self.pure(opcode, &args, None, false)
    }
}
