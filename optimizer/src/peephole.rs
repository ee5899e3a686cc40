//! The rule hook: where peephole rules (generated from `optimizer/rules/*.rules` at build
//! time) run inside the single pass.
//!
//! # Contract
//!
//! The pass calls [`apply`] for every pure integer op that survived constant folding and the
//! abstract-value step, with its operands already replaced by their representatives, *before*
//! CSE. A rule either returns an existing value (an operand, a constant, a value made by
//! [`RuleEnv::emit`]) that is equal to `opcode(args)` for every input, or declines (`None`).
//!
//! - [`RuleEnv::bound`] gives the abstract value ([`IntBound`]) of an integer value at this
//!   point of the trace (constants are singletons); `check` conditions of rules ask it.
//! - [`RuleEnv::def`] gives the defining *pure* op of a value in the output (for nested
//!   patterns such as `int_sub(int_add(x, y), y)`), with representatives as operands. Values
//!   defined by anything else (inputs, label parameters, heap reads, calls) have no
//!   definition, so a rule never looks through a label parameter. An `_ovf` op whose
//!   `guard_no_overflow` passed is presented as its plain op (`int_add_ovf` as `int_add`: the
//!   value is the same); an `_ovf` op itself is never given to the rules (seed 004's fourth
//!   miscompilation rewrote `int_sub_ovf(int_add(a, b), b)` to `a`).
//! - [`RuleEnv::emit`] creates a new pure op; it is itself optimized (folded, rules, CSE), so
//!   it may return an existing value. Rules must make the trace no worse (the right side has no
//!   more ops than the left side matched), so rewriting terminates; the pass also bounds the
//!   nesting depth of `emit`.
//! - Commutativity: the pass does not try both operand orders; generated matchers handle
//!   commutative ops (the `COMMUTATIVE` flag of the opcode table) themselves.
//!
//! The name returned with a result is the rule's name; the pass counts firings per name in
//! [`crate::Stats::rules`].
//!
//! # Where the generated code goes
//!
//! When `optimizer/build.rs` exists and emits `cargo:rustc-cfg=tracejit_generated_rules`, this
//! module includes `$OUT_DIR/generated_rules.rs`, which must define
//! `fn apply_generated(env: &mut dyn RuleEnv, opcode: Opcode, args: &[Value]) -> Option<(&'static str, Value)>`
//! (and may define anything else it needs, e.g. `pub const RULE_NAMES: &[&str]`). Without it,
//! a few hand-written rules ([`hand_rules`]) stand in so the hook is exercised.

use crate::domain::IntBound;
use smallvec::SmallVec;
use trace_ir::{Opcode, Value};

/// What rules may ask and do. Implemented by the pass.
pub trait RuleEnv {
    /// The abstract value of an integer value (constants: singletons).
    fn bound(&self, v: Value) -> IntBound<u64>;
    /// The integer constant behind `v`, if it is one.
    fn const_int(&self, v: Value) -> Option<i64>;
    /// The defining pure op of `v` in the output (opcode and representative operands), for
    /// nested patterns. `None` for constants and values not defined by a pure op.
    fn def(&self, v: Value) -> Option<(Opcode, SmallVec<[Value; 3]>)>;
    /// The integer constant `c` as a value.
    fn make_const(&mut self, c: i64) -> Value;
    /// A new pure op `opcode(args)`, itself optimized (folded, CSE'd, rules applied).
    fn emit(&mut self, opcode: Opcode, args: &[Value]) -> Value;
}

/// Try the rules for `opcode(args)`; on success return the rule's name and the replacement.
pub fn apply(env: &mut dyn RuleEnv, opcode: Opcode, args: &[Value]) -> Option<(&'static str, Value)> {
    apply_generated(env, opcode, args)
}

#[cfg(tracejit_generated_rules)]
include!(concat!(env!("OUT_DIR"), "/generated_rules.rs"));

#[cfg(not(tracejit_generated_rules))]
fn apply_generated(env: &mut dyn RuleEnv, opcode: Opcode, args: &[Value]) -> Option<(&'static str, Value)> {
    hand_rules(env, opcode, args)
}

/// A few hand-written rules that exercise the hook until the generated rules exist:
///
/// - `sub_x_x`: `int_sub(x, x) -> 0`
/// - `add_zero`: `int_add(x, 0) -> x` (either order)
/// - `mul_pow2`: `int_mul(x, 2**k) -> int_lshift(x, k)` for `1 <= k <= 62` (either order)
/// - `sub_add_cancel`: `int_sub(int_add(x, y), y) -> x` (wrapping arithmetic only; never across
///   an `_ovf` op, see seed 004's fourth miscompilation)
/// - `xor_x_x`: `int_xor(x, x) -> 0`
pub fn hand_rules(env: &mut dyn RuleEnv, opcode: Opcode, args: &[Value]) -> Option<(&'static str, Value)> {
    match opcode {
        Opcode::IntSub => {
            let (x, y) = (args[0], args[1]);
            if x == y {
                return Some(("sub_x_x", env.make_const(0)));
            }
            if let Some((Opcode::IntAdd, inner)) = env.def(x) {
                if inner[1] == y {
                    return Some(("sub_add_cancel", inner[0]));
                }
                if inner[0] == y {
                    return Some(("sub_add_cancel", inner[1]));
                }
            }
            None
        }
        Opcode::IntXor if args[0] == args[1] => Some(("xor_x_x", env.make_const(0))),
        Opcode::IntAdd => {
            for (x, c) in [(args[0], args[1]), (args[1], args[0])] {
                if env.const_int(c) == Some(0) {
                    return Some(("add_zero", x));
                }
            }
            None
        }
        Opcode::IntMul => {
            for (x, c) in [(args[0], args[1]), (args[1], args[0])] {
                if let Some(c) = env.const_int(c) {
                    if c > 1 && (c as u64).is_power_of_two() {
                        let k = env.make_const(c.trailing_zeros() as i64);
                        return Some(("mul_pow2", env.emit(Opcode::IntLshift, &[x, k])));
                    }
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_ir::{ConstRef, OpRef};

    /// A minimal environment: values `op0..` are unknown, constants are interned here, `emit`
    /// records the op it was asked for.
    #[derive(Default)]
    struct Env {
        consts: Vec<i64>,
        defs: Vec<(Value, Opcode, SmallVec<[Value; 3]>)>,
        emitted: Vec<(Opcode, Vec<Value>)>,
    }

    impl RuleEnv for Env {
        fn bound(&self, v: Value) -> IntBound<u64> {
            match self.const_int(v) {
                Some(c) => IntBound::from_i64(c),
                None => IntBound::unbounded(),
            }
        }
        fn const_int(&self, v: Value) -> Option<i64> {
            v.as_const().map(|c| self.consts[c.index()])
        }
        fn def(&self, v: Value) -> Option<(Opcode, SmallVec<[Value; 3]>)> {
            self.defs.iter().find(|d| d.0 == v).map(|d| (d.1, d.2.clone()))
        }
        fn make_const(&mut self, c: i64) -> Value {
            let i = self.consts.iter().position(|&x| x == c).unwrap_or_else(|| {
                self.consts.push(c);
                self.consts.len() - 1
            });
            Value::constant(ConstRef::new(i))
        }
        fn emit(&mut self, opcode: Opcode, args: &[Value]) -> Value {
            self.emitted.push((opcode, args.to_vec()));
            Value::op(OpRef::new(1000 + self.emitted.len()))
        }
    }

    fn op(i: usize) -> Value {
        Value::op(OpRef::new(i))
    }

    #[test]
    fn hand_rules_fire() {
        let mut e = Env::default();
        let zero = e.make_const(0);
        let eight = e.make_const(8);
        let (name, v) = hand_rules(&mut e, Opcode::IntSub, &[op(1), op(1)]).unwrap();
        assert_eq!((name, e.const_int(v)), ("sub_x_x", Some(0)));
        assert_eq!(
            hand_rules(&mut e, Opcode::IntAdd, &[zero, op(2)]),
            Some(("add_zero", op(2)))
        );
        assert_eq!(
            hand_rules(&mut e, Opcode::IntXor, &[op(3), op(3)]).map(|r| r.0),
            Some("xor_x_x")
        );
        let (name, _) = hand_rules(&mut e, Opcode::IntMul, &[op(4), eight]).unwrap();
        assert_eq!(name, "mul_pow2");
        let three = e.make_const(3);
        assert_eq!(e.emitted, vec![(Opcode::IntLshift, vec![op(4), three])]);
        e.defs
            .push((op(5), Opcode::IntAdd, SmallVec::from_slice(&[op(1), op(2)])));
        assert_eq!(
            hand_rules(&mut e, Opcode::IntSub, &[op(5), op(2)]),
            Some(("sub_add_cancel", op(1)))
        );
        assert_eq!(
            hand_rules(&mut e, Opcode::IntSub, &[op(5), op(1)]),
            Some(("sub_add_cancel", op(2)))
        );
    }

    #[test]
    fn hand_rules_decline() {
        let mut e = Env::default();
        let six = e.make_const(6);
        let one = e.make_const(1);
        assert_eq!(hand_rules(&mut e, Opcode::IntMul, &[op(1), six]), None);
        assert_eq!(hand_rules(&mut e, Opcode::IntMul, &[op(1), one]), None);
        assert_eq!(hand_rules(&mut e, Opcode::IntSub, &[op(1), op(2)]), None);
        // an _ovf op is never given a definition, so nothing looks through it
        assert_eq!(hand_rules(&mut e, Opcode::IntSubOvf, &[op(5), op(2)]), None);
        assert!(e.emitted.is_empty());
    }
}
