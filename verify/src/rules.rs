//! Z3 proofs of the peephole rules (`optimizer/rules/*.rules`, checked by `rule-dsl`).
//!
//! For a rule `name: pattern, check..., => target` the prover builds:
//! - a 64-bit variable per pattern variable (`C`-variables too: a constant is just a value);
//! - the pattern's value with [`crate::semantics::op_semantics`], assuming the `valid_if` of
//!   every pattern op (an op that is invalid has no defined result to preserve);
//! - for every pattern variable a *symbolic abstract value* `IntBound<Z3Word<64>>` (four free
//!   words: known ones, unknown bits, lower, upper), constrained to be well formed and to
//!   contain the variable's value. `check` conditions and assignments run the optimizer's own
//!   `IntBound` query code on these (the same generic source that runs on `u64` in the
//!   optimizer: no transcription), so a check means exactly what it means at runtime;
//! - the target's value, and the `valid_if` of every target op, which must be *proven*.
//!
//! The rule is correct when `assumptions ⇒ valid_if(target) ∧ target == pattern` is valid (its
//! negation is unsatisfiable). Otherwise [`prove_rule`] returns a [`Counterexample`]: the
//! variables' values (and abstract values), and the values of the pattern and the target.
//! [`prove_rule`] also checks that the assumptions are satisfiable at all: a rule whose checks
//! can never hold is an error ("cannot ever apply"). A timeout or `unknown` is an error too:
//! there is no way to skip a proof.
//!
//! Integer operators of rule expressions are encoded here generically over `Word`, with the
//! total semantics of `rule_dsl::rt` (shift amounts outside `0..64`); the tests cross-check
//! the encoding against `rule_dsl::rt` on random values.

use crate::semantics::{bv, op_semantics, WIDTH};
use crate::z3word::{Z3Bool, Z3Word};
use optimizer::domain::{IntBound, Interval, KnownBits, Word, WordBool};
use rule_dsl::{BinOp, CheckedRule, Func, Pattern, TExpr, TStep, TTarget, UnOp};
use std::collections::HashMap;
use std::fmt;
use z3::ast::{Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

/// A 64-bit Z3 word.
pub type W = Z3Word<64>;

/// How long one solver call may take before the proof fails as `unknown`.
pub const TIMEOUT_MS: u32 = 120_000;

/// How long the direct proof of a rule with `C`-variables may take before the prover
/// switches to a case split on the first `C`-variable's value.
pub const DIRECT_BUDGET_MS: u32 = 2_500;

/// The value of a pattern variable in a counterexample, with its abstract value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarValue {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: i64,
    /// Its abstract value in the counterexample: `(lower, upper, known ones, unknown bits)`.
    pub bound: (i64, i64, u64, u64),
}

/// Why a rule is wrong: input values under which the target differs from the pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The rule's name.
    pub rule: String,
    /// Its file and line.
    pub location: String,
    /// Values of all pattern variables.
    pub vars: Vec<VarValue>,
    /// The pattern as written and its Z3 formula.
    pub source: (String, String),
    /// The pattern's value.
    pub source_value: i64,
    /// The target as written and its Z3 formula.
    pub target: (String, String),
    /// The target's value (`None` when a target op is invalid for these values).
    pub target_value: Option<i64>,
    /// Whether the checks use abstract values (then their values are printed too).
    pub uses_bounds: bool,
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Could not prove correctness of rule '{}'", self.rule)?;
        writeln!(f, "in {}", self.location)?;
        writeln!(f, "counterexample given by Z3:")?;
        writeln!(f, "counterexample values:")?;
        for v in &self.vars {
            write!(f, "{}: {}", v.name, v.value)?;
            if self.uses_bounds {
                let (lo, hi, ones, unk) = v.bound;
                write!(
                    f,
                    "    (abstract value: {lo}..={hi}, known ones {ones:#x}, unknown bits {unk:#x})"
                )?;
            }
            writeln!(f)?;
        }
        writeln!(f, "operation {} with Z3 formula {}", self.source.0, self.source.1)?;
        writeln!(f, "has counterexample result value: {}", self.source_value)?;
        writeln!(f, "BUT")?;
        writeln!(
            f,
            "target expression: {} with Z3 formula {}",
            self.target.0, self.target.1
        )?;
        match self.target_value {
            Some(v) => write!(f, "has counterexample value: {v}"),
            None => write!(f, "is not defined for these values (a target op's valid_if is false)"),
        }
    }
}

/// Why a rule could not be proven.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofError {
    /// The rule is wrong.
    Counterexample(Box<Counterexample>),
    /// The rule's conditions can never hold together.
    NeverApplies {
        /// The rule.
        rule: String,
        /// Its file and line.
        location: String,
        /// The unsatisfiable condition.
        condition: String,
    },
    /// Z3 gave up (timeout or `unknown`).
    Unknown {
        /// The rule.
        rule: String,
        /// Z3's reason.
        reason: String,
    },
    /// The rule uses something the prover cannot encode.
    Encoding {
        /// The rule.
        rule: String,
        /// What.
        message: String,
    },
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofError::Counterexample(c) => write!(f, "{c}"),
            ProofError::NeverApplies { rule, location, condition } => write!(
                f,
                "Rule '{rule}' cannot ever apply\nin {location}\nZ3 did not manage to find values for the variables such that the following condition becomes true:\n{condition}"
            ),
            ProofError::Unknown { rule, reason } => write!(f, "Z3 could not decide rule '{rule}': {reason}"),
            ProofError::Encoding { rule, message } => write!(f, "cannot encode rule '{rule}': {message}"),
        }
    }
}

impl std::error::Error for ProofError {}

#[derive(Clone)]
enum Val {
    Int(W),
    Bool(Z3Bool),
}

/// The Z3 encoding of one rule.
struct Encoding<'r> {
    rule: &'r CheckedRule,
    vars: HashMap<String, BV>,
    bounds: HashMap<String, IntBound<W>>,
    assigned: HashMap<String, Val>,
    /// valid_if of the pattern ops, well-formedness and containment of abstract values, checks.
    assumptions: Vec<Bool>,
    uses_bounds: bool,
}

fn w(b: &BV) -> W {
    Z3Word(b.clone())
}

fn wconst(v: i64) -> W {
    W::from_i64(v)
}

impl<'r> Encoding<'r> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, ProofError> {
        Err(ProofError::Encoding {
            rule: self.rule.name().to_string(),
            message: message.into(),
        })
    }

    fn new(rule: &'r CheckedRule) -> Result<Self, ProofError> {
        let mut e = Encoding {
            rule,
            vars: HashMap::new(),
            bounds: HashMap::new(),
            assigned: HashMap::new(),
            assumptions: Vec::new(),
            uses_bounds: false,
        };
        for v in &rule.vars {
            let x = BV::new_const(v.name.as_str(), WIDTH);
            let b = IntBound {
                bits: KnownBits {
                    ones: W::var(&format!("{}.ones", v.name)),
                    unknowns: W::var(&format!("{}.unknowns", v.name)),
                },
                range: Interval {
                    lower: W::var(&format!("{}.lower", v.name)),
                    upper: W::var(&format!("{}.upper", v.name)),
                },
            };
            e.assumptions.push(b.bits.is_well_formed().0);
            e.assumptions.push(b.contains(&w(&x)).0);
            e.vars.insert(v.name.clone(), x);
            e.bounds.insert(v.name.clone(), b);
        }
        Ok(e)
    }

    fn pattern(&mut self, p: &Pattern) -> Result<BV, ProofError> {
        Ok(match p {
            Pattern::Var(n, _) | Pattern::ConstVar(n, _) => self.vars[n].clone(),
            Pattern::Lit(c, _) => bv(*c),
            Pattern::Op(op, args, _) => {
                let args = args.iter().map(|a| self.pattern(a)).collect::<Result<Vec<_>, _>>()?;
                let (r, valid) = op_semantics(*op, &args).or_else(|e| self.err(e.to_string()))?;
                self.assumptions.push(valid);
                r
            }
        })
    }

    fn int(&mut self, e: &TExpr) -> Result<W, ProofError> {
        match self.eval(e)? {
            Val::Int(v) => Ok(v),
            Val::Bool(_) => self.err("expected an int, found a bool"),
        }
    }

    fn boolean(&mut self, e: &TExpr) -> Result<Z3Bool, ProofError> {
        match self.eval(e)? {
            Val::Bool(v) => Ok(v),
            Val::Int(_) => self.err("expected a bool, found an int"),
        }
    }

    fn bound(&mut self, e: &TExpr) -> Result<IntBound<W>, ProofError> {
        match e {
            TExpr::Bound(n) => {
                self.uses_bounds = true;
                Ok(self.bounds[n].clone())
            }
            _ => self.err("a query needs a pattern variable as receiver"),
        }
    }

    fn eval(&mut self, e: &TExpr) -> Result<Val, ProofError> {
        Ok(match e {
            TExpr::Const(c) => Val::Int(wconst(*c)),
            TExpr::IntVar(n) | TExpr::BoolVar(n) => {
                if let Some(v) = self.assigned.get(n) {
                    v.clone()
                } else if let Some(x) = self.vars.get(n) {
                    Val::Int(w(x))
                } else {
                    return self.err(format!("unbound name `{n}`"));
                }
            }
            TExpr::Bound(_) => return self.err("an abstract value is not a value"),
            TExpr::Un(op, a) => match op {
                UnOp::Neg => Val::Int(self.int(a)?.neg()),
                UnOp::Invert => Val::Int(self.int(a)?.not()),
                UnOp::Not => Val::Bool(self.boolean(a)?.not()),
            },
            TExpr::Bin(op, a, b) => {
                if op.is_logical() {
                    let (a, b) = (self.boolean(a)?, self.boolean(b)?);
                    Val::Bool(if *op == BinOp::LogAnd { a.and(&b) } else { a.or(&b) })
                } else {
                    let (a, b) = (self.int(a)?, self.int(b)?);
                    if op.is_comparison() {
                        Val::Bool(compare(*op, &a, &b))
                    } else {
                        Val::Int(int_binop(*op, &a, &b))
                    }
                }
            }
            TExpr::Func(f, a) => {
                let a = self.int(a)?;
                Val::Int(func(*f, &a))
            }
            TExpr::Query(q, recv, args) => {
                let b = self.bound(recv)?;
                let int_arg = |s: &mut Self| -> Result<W, ProofError> {
                    match args.first() {
                        Some(a) => s.int(a),
                        None => s.err(format!("`{}` needs an argument", q.name)),
                    }
                };
                let bound_arg = |s: &mut Self| -> Result<IntBound<W>, ProofError> {
                    match args.first() {
                        Some(a) => s.bound(a),
                        None => s.err(format!("`{}` needs an argument", q.name)),
                    }
                };
                match q.name {
                    "lower" => Val::Int(b.lower()),
                    "upper" => Val::Int(b.upper()),
                    "known_zeros" => Val::Int(b.known_zeros()),
                    "known_ones" => Val::Int(b.known_ones()),
                    "knowns" => Val::Int(b.knowns()),
                    "is_bool" => Val::Bool(b.is_bool()),
                    "is_constant" => Val::Bool(b.is_constant()),
                    "known_nonnegative" => Val::Bool(b.known_nonnegative()),
                    "known_negative" => Val::Bool(b.known_negative()),
                    "known_ge_const" => Val::Bool(b.known_ge_const(&int_arg(self)?)),
                    "known_gt_const" => Val::Bool(b.known_gt_const(&int_arg(self)?)),
                    "known_le_const" => Val::Bool(b.known_le_const(&int_arg(self)?)),
                    "known_lt_const" => Val::Bool(b.known_lt_const(&int_arg(self)?)),
                    "known_lt" => Val::Bool(b.known_lt(&bound_arg(self)?)),
                    "known_le" => Val::Bool(b.known_le(&bound_arg(self)?)),
                    "known_gt" => Val::Bool(b.known_gt(&bound_arg(self)?)),
                    "known_ge" => Val::Bool(b.known_ge(&bound_arg(self)?)),
                    "known_ne" => Val::Bool(b.known_ne(&bound_arg(self)?)),
                    "known_ult" => Val::Bool(b.known_ult(&bound_arg(self)?)),
                    "known_ule" => Val::Bool(b.known_ule(&bound_arg(self)?)),
                    "is_and_identity" => Val::Bool(b.is_and_identity(&bound_arg(self)?)),
                    "is_or_identity" => Val::Bool(b.is_or_identity(&bound_arg(self)?)),
                    other => return self.err(format!("query `{other}` has no Z3 encoding")),
                }
            }
        })
    }

    fn target(&mut self, t: &TTarget, valid: &mut Vec<Bool>) -> Result<BV, ProofError> {
        Ok(match t {
            TTarget::Var(n) => self.vars[n].clone(),
            TTarget::Const(e) => self.int(e)?.0,
            TTarget::Op(op, args) => {
                let args = args
                    .iter()
                    .map(|a| self.target(a, valid))
                    .collect::<Result<Vec<_>, _>>()?;
                let (r, ok) = op_semantics(*op, &args).or_else(|e| self.err(e.to_string()))?;
                valid.push(ok);
                r
            }
        })
    }
}

/// The comparison operators of rule expressions on words.
pub fn compare<V: Word>(op: BinOp, a: &V, b: &V) -> V::Bool {
    match op {
        BinOp::Eq => a.equals(b),
        BinOp::Ne => a.not_equals(b),
        BinOp::Lt => a.slt(b),
        BinOp::Le => a.sle(b),
        BinOp::Gt => a.sgt(b),
        BinOp::Ge => a.sge(b),
        BinOp::Ult => a.ult(b),
        BinOp::Ule => a.ule(b),
        BinOp::Ugt => a.ugt(b),
        // The remaining operators are not comparisons; the type checker never passes them.
        _ => a.uge(b),
    }
}

/// The integer operators of rule expressions on words, with `rule_dsl::rt`'s total shifts.
pub fn int_binop<V: Word>(op: BinOp, a: &V, b: &V) -> V {
    let in_range = b.ult(&V::from_u64(u64::from(V::BITS)));
    match op {
        BinOp::Add => a.add(b),
        BinOp::Sub => a.sub(b),
        BinOp::Mul => a.mul(b),
        BinOp::And => a.and(b),
        BinOp::Or => a.or(b),
        BinOp::Xor => a.xor(b),
        BinOp::Shl => V::select(&in_range, &a.shl(b), &V::zero()),
        BinOp::Ashr => {
            let fill = V::select(&a.is_negative(), &V::ones(), &V::zero());
            V::select(&in_range, &a.ashr(b), &fill)
        }
        // Lshr (the type checker passes only integer operators here).
        _ => V::select(&in_range, &a.lshr(b), &V::zero()),
    }
}

/// The helper functions of rule expressions on words (`rule_dsl::rt`).
pub fn func<V: Word>(f: Func, a: &V) -> V {
    let mut r = V::ones();
    let bits: Vec<u32> = match f {
        Func::HighestBit => (0..V::BITS).collect(),
        Func::LowestBit => (0..V::BITS).rev().collect(),
    };
    for i in bits {
        let bit = a.and(&V::one().shl(&V::from_u64(u64::from(i))));
        r = V::select(&bit.not_equals(&V::zero()), &V::from_u64(u64::from(i)), &r);
    }
    r
}

/// A rule's target, printed in rule syntax.
pub fn target_to_string(t: &TTarget) -> String {
    match t {
        TTarget::Var(n) => n.clone(),
        TTarget::Const(e) => expr_to_string(e),
        TTarget::Op(op, args) => format!(
            "{}({})",
            op.name(),
            args.iter().map(target_to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// An expression, printed in rule syntax (fully parenthesized).
pub fn expr_to_string(e: &TExpr) -> String {
    match e {
        TExpr::Const(c) => c.to_string(),
        TExpr::IntVar(n) | TExpr::BoolVar(n) | TExpr::Bound(n) => n.clone(),
        TExpr::Un(op, a) => {
            let s = match op {
                UnOp::Neg => "-",
                UnOp::Invert => "~",
                UnOp::Not => "not ",
            };
            format!("{s}{}", expr_to_string(a))
        }
        TExpr::Bin(op, a, b) => format!("({} {} {})", expr_to_string(a), op.symbol(), expr_to_string(b)),
        TExpr::Func(f, a) => format!("{}({})", f.name(), expr_to_string(a)),
        TExpr::Query(q, r, args) => {
            if q.attribute {
                format!("{}.{}", expr_to_string(r), q.name)
            } else {
                format!(
                    "{}.{}({})",
                    expr_to_string(r),
                    q.name,
                    args.iter().map(expr_to_string).collect::<Vec<_>>().join(", ")
                )
            }
        }
    }
}

fn solver(timeout_ms: u32) -> Solver {
    let s = if std::env::var_os("RULES_PLAIN_SOLVER").is_some() {
        Solver::new()
    } else {
        Solver::new_for_logic("QF_BV").unwrap_or_default()
    };
    let mut p = Params::new();
    p.set_u32("timeout", timeout_ms);
    s.set_params(&p);
    s
}

fn location(rule: &CheckedRule) -> String {
    format!("{} line {}", rule.rule.file, rule.rule.pos.line)
}

/// Proves one rule (see the module documentation): `Ok(())` when it is correct and can apply.
pub fn prove_rule(rule: &CheckedRule) -> Result<(), ProofError> {
    let mut enc = Encoding::new(rule)?;
    let source = enc.pattern(&rule.rule.pattern)?;
    for s in &rule.steps {
        match s {
            TStep::Check(e) => {
                let c = enc.boolean(e)?;
                enc.assumptions.push(c.0);
            }
            TStep::Assign(n, e, _) => {
                let v = enc.eval(e)?;
                enc.assigned.insert(n.clone(), v);
            }
        }
    }
    let mut target_valid = Vec::new();
    let target = enc.target(&rule.target, &mut target_valid)?;
    let assumptions = Bool::and(&enc.assumptions);

    // 1. The conditions can hold.
    let s = solver(TIMEOUT_MS);
    s.assert(&assumptions);
    match s.check() {
        SatResult::Sat => {}
        SatResult::Unsat => {
            return Err(ProofError::NeverApplies {
                rule: rule.name().to_string(),
                location: location(rule),
                condition: assumptions.simplify().to_string(),
            })
        }
        SatResult::Unknown => {
            return Err(ProofError::Unknown {
                rule: rule.name().to_string(),
                reason: s.get_reason_unknown().unwrap_or_default(),
            })
        }
    }

    // 2. Under them, the target is defined and equal to the pattern. Try directly with a
    // short budget; if Z3 needs longer, split the proof on the value of the first
    // `C`-variable (an exhaustive partition, see [`split_cases`]): with a constant in
    // place, shifts and divisions by it become cheap.
    let target_ok = Bool::and(&target_valid);
    let goal = Bool::and(&[target_ok.clone(), target.eq(&source)]);
    let split_var = rule.vars.iter().find(|v| v.is_const).map(|v| enc.vars[&v.name].clone());
    let first_budget = if split_var.is_some() {
        DIRECT_BUDGET_MS
    } else {
        TIMEOUT_MS
    };
    let s = solver(first_budget);
    s.assert(&assumptions);
    s.assert(goal.not());
    let result = s.check();
    if let (SatResult::Unknown, Some(c)) = (&result, &split_var) {
        for case in split_cases(c) {
            // A fresh solver per case, so that Z3's preprocessing substitutes the constant.
            let s2 = solver(TIMEOUT_MS);
            s2.assert(&assumptions);
            s2.assert(goal.not());
            s2.assert(&case);
            match s2.check() {
                SatResult::Unsat => continue,
                other => return finish(rule, &enc, &s2, other, &source, &target, &target_ok),
            }
        }
        return Ok(());
    }
    finish(rule, &enc, &s, result, &source, &target, &target_ok)
}

/// An exhaustive partition of the values of a 64-bit word `c`, for case splits: `c == v` for
/// each `v` in `0..64`, `c == 1 << k` for each `k` in `6..64`, and all other values. Every
/// word satisfies exactly one case (`split_cases_are_a_partition` checks it with Z3).
pub fn split_cases(c: &BV) -> Vec<Bool> {
    let mut cases: Vec<Bool> = (0..64).map(|v| c.eq(bv(v))).collect();
    let mut rest = vec![c.bvuge(bv(64))];
    for k in 6..64 {
        let p = bv(1i64 << k);
        cases.push(c.eq(&p));
        rest.push(c.eq(&p).not());
    }
    cases.push(Bool::and(&rest));
    cases
}

fn finish(
    rule: &CheckedRule,
    enc: &Encoding<'_>,
    s: &Solver,
    result: SatResult,
    source: &BV,
    target: &BV,
    target_ok: &Bool,
) -> Result<(), ProofError> {
    match result {
        SatResult::Unsat => Ok(()),
        SatResult::Unknown => Err(ProofError::Unknown {
            rule: rule.name().to_string(),
            reason: s.get_reason_unknown().unwrap_or_default(),
        }),
        SatResult::Sat => {
            let Some(m) = s.get_model() else {
                return Err(ProofError::Unknown {
                    rule: rule.name().to_string(),
                    reason: "no model".into(),
                });
            };
            let val = |b: &BV| m.eval(b, true).and_then(|v| v.as_u64()).unwrap_or(0);
            let vars = rule
                .vars
                .iter()
                .map(|v| {
                    let b = &enc.bounds[&v.name];
                    VarValue {
                        name: v.name.clone(),
                        value: val(&enc.vars[&v.name]) as i64,
                        bound: (
                            val(&b.range.lower.0) as i64,
                            val(&b.range.upper.0) as i64,
                            val(&b.bits.ones.0),
                            val(&b.bits.unknowns.0),
                        ),
                    }
                })
                .collect();
            let valid_now = m.eval(target_ok, true).and_then(|b| b.as_bool()).unwrap_or(false);
            Err(ProofError::Counterexample(Box::new(Counterexample {
                rule: rule.name().to_string(),
                location: location(rule),
                vars,
                source: (rule.rule.pattern.to_string(), source.simplify().to_string()),
                source_value: val(source) as i64,
                target: (target_to_string(&rule.target), target.simplify().to_string()),
                target_value: valid_now.then(|| val(target) as i64),
                uses_bounds: enc.uses_bounds,
            })))
        }
    }
}

/// Loads the rule files of `dir` (every `*.rules`, sorted by name), as `optimizer/build.rs`
/// does, naming them `optimizer/rules/<file>`.
pub fn load_rule_dir(dir: &std::path::Path) -> Result<Vec<CheckedRule>, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rules"))
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for p in paths {
        let src = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        files.push((
            format!(
                "optimizer/rules/{}",
                p.file_name().unwrap_or_default().to_string_lossy()
            ),
            src,
        ));
    }
    rule_dsl::load(&files).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rule_dsl::check::{eval_cmp, eval_int_binop};
    use rule_dsl::rt;
    use trace_interp::rng::Rng;

    #[test]
    fn expression_encoding_agrees_with_the_runtime_helpers() {
        let mut r = Rng::new(7);
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
            BinOp::Shl,
            BinOp::Ashr,
            BinOp::Lshr,
        ];
        let cmps = [
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::Ult,
            BinOp::Ule,
            BinOp::Ugt,
            BinOp::Uge,
        ];
        for i in 0..300 {
            let a = if i % 3 == 0 {
                r.range_i64(-70, 70)
            } else {
                r.next_u64() as i64
            };
            let b = if i % 2 == 0 {
                r.range_i64(-3, 70)
            } else {
                r.next_u64() as i64
            };
            for op in ops {
                let z = int_binop(op, &wconst(a), &wconst(b))
                    .0
                    .simplify()
                    .as_u64()
                    .map(|v| v as i64);
                assert_eq!(z, eval_int_binop(op, a, b), "{a} {} {b}", op.symbol());
            }
            for op in cmps {
                let z = compare(op, &wconst(a), &wconst(b)).0.simplify().as_bool();
                assert_eq!(z, eval_cmp(op, a, b), "{a} {} {b}", op.symbol());
            }
            for (f, g) in [
                (Func::HighestBit, rt::highest_bit as fn(i64) -> i64),
                (Func::LowestBit, rt::lowest_bit),
            ] {
                assert_eq!(
                    func(f, &wconst(a)).0.simplify().as_u64().map(|v| v as i64),
                    Some(g(a)),
                    "{}({a})",
                    f.name()
                );
            }
        }
        // And the u64 instance of the same generic code agrees too.
        assert_eq!(int_binop(BinOp::Shl, &1u64, &64u64), 0);
        assert_eq!(int_binop(BinOp::Ashr, &(-5i64 as u64), &99u64), u64::MAX);
    }

    #[test]
    fn split_cases_are_a_partition() {
        // For every word exactly one case holds: the number of true cases is always 1.
        let c = BV::new_const("c", WIDTH);
        let cases = split_cases(&c);
        let count = cases.iter().fold(bv(0), |acc, k| acc.bvadd(k.ite(&bv(1), &bv(0))));
        let s = solver(TIMEOUT_MS);
        s.assert(count.eq(bv(1)).not());
        assert_eq!(s.check(), SatResult::Unsat);
    }

    #[test]
    fn every_query_has_an_encoding() {
        for q in rule_dsl::QUERIES {
            let src = match (q.attribute, q.args) {
                (true, _) => format!(
                    "r: int_add(x, y)\n    check x.{} == x.{}\n    => int_add(x, y)\n",
                    q.name, q.name
                ),
                (false, []) if q.result == rule_dsl::Ty::Bool => format!(
                    "r: int_add(x, y)\n    check x.{}() or not x.{}()\n    => int_add(x, y)\n",
                    q.name, q.name
                ),
                (false, []) => format!(
                    "r: int_add(x, y)\n    check x.{}() == x.{}()\n    => int_add(x, y)\n",
                    q.name, q.name
                ),
                (false, [rule_dsl::Ty::Int]) => format!(
                    "r: int_add(x, y)\n    check x.{}(0) or not x.{}(0)\n    => int_add(x, y)\n",
                    q.name, q.name
                ),
                (false, _) => format!(
                    "r: int_add(x, y)\n    check x.{}(y) or not x.{}(y)\n    => int_add(x, y)\n",
                    q.name, q.name
                ),
            };
            let rules = rule_dsl::load_str(&src, "q.rules").unwrap_or_else(|e| panic!("{e}"));
            prove_rule(&rules[0]).unwrap_or_else(|e| panic!("{}: {e}", q.name));
        }
    }
}
