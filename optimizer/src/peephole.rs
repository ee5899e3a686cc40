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
//!   value is the same); an `_ovf` op itself is never given to the rules (a known
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
//! `optimizer/build.rs` compiles the rule files into `$OUT_DIR/generated_rules.rs`, included
//! here as the module `generated`: the data [`RULES`] and the matcher behind [`apply`]. The
//! rest — [`RuleInfo`], the operators of rule expressions (`rt`, the one definition that
//! `rule-dsl` evaluates at build time too), [`format_stats`] — is ordinary code of this
//! module. A rule file error fails the build: there is no fallback.

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
    generated::apply(env, opcode, args)
}

/// Static facts about one rule.
#[derive(Copy, Clone, Debug)]
pub struct RuleInfo {
    /// The rule's name (what [`apply`] returns when it fires).
    pub name: &'static str,
    /// The opcode its pattern matches.
    pub opcode: Opcode,
    /// The rule file.
    pub file: &'static str,
    /// The line of the rule in its file.
    pub line: u32,
    /// The rule's `#` comment (its identity).
    pub doc: &'static str,
}

pub use generated::RULES;

/// The operators of rule expressions whose Rust spelling is not a single operator.
#[path = "../rule-dsl/src/rt.rs"]
mod rt;

/// Two operands are the same value: the same op, or equal constants.
fn rt_same(env: &dyn RuleEnv, a: Value, b: Value) -> bool {
    a == b || matches!((env.const_int(a), env.const_int(b)), (Some(x), Some(y)) if x == y)
}

/// The rules compiled from `optimizer/rules/*.rules` by `optimizer/build.rs`.
#[allow(
    unused_variables,
    unused_parens,
    unused_labels,
    unreachable_code,
    non_snake_case,
    clippy::all
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/generated_rules.rs"));
}

/// Firing statistics per opcode, in PyPy's `jit-intbounds-stats` layout: for every opcode
/// with at least one firing, its rules (all of them, in the order they are tried) with their
/// counts. Names in `counts` that are not generated rules (conditional rewrites of the pass
/// itself) are listed under `other`.
pub fn format_stats(counts: &std::collections::BTreeMap<&'static str, usize>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut i = 0;
    while i < RULES.len() {
        let op = RULES[i].opcode;
        let group: Vec<&RuleInfo> = RULES[i..].iter().take_while(|r| r.opcode == op).collect();
        i += group.len();
        if group.iter().any(|r| counts.get(r.name).copied().unwrap_or(0) > 0) {
            let _ = writeln!(out, "{}", op.name());
            for r in group {
                let _ = writeln!(out, "    {} {}", r.name, counts.get(r.name).copied().unwrap_or(0));
            }
        }
    }
    let other: Vec<_> = counts
        .iter()
        .filter(|(n, _)| !RULES.iter().any(|r| r.name == **n))
        .collect();
    if !other.is_empty() {
        let _ = writeln!(out, "other");
        for (n, c) in other {
            let _ = writeln!(out, "    {n} {c}");
        }
    }
    out
}
