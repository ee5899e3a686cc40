//! The type checker: resolves names, checks ops, arities and types, and produces
//! [`CheckedRule`]s, the form the code generator and the prover consume.
//!
//! Types of expressions: `int` (a 64-bit word), `bool`, and `bound` (the abstract value,
//! `IntBound`, of a pattern variable). A plain pattern variable `x` is a `bound` in
//! expressions (use `x.lower`, `x.known_ge_const(0)`, ...); a `C`-variable is an `int` (its
//! constant value) and also a `bound` where one is expected (`C.known_...`).

use crate::ast::*;
use crate::parser::{is_const_var, named_constant};
use crate::{rt, RuleError};
use std::collections::HashMap;
use trace_ir::{Kind, Opcode};

/// The type of an expression.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A 64-bit word.
    Int,
    /// A boolean.
    Bool,
    /// The abstract value of a pattern variable.
    Bound,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Bool => "bool",
            Ty::Bound => "bound",
        }
    }
}

/// A query on an abstract value (`IntBound`), usable in `check` lines and assignments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The name in rule files (also the `IntBound` method name).
    pub name: &'static str,
    /// Argument types (besides the receiver).
    pub args: &'static [Ty],
    /// Result type.
    pub result: Ty,
    /// Written as an attribute (`x.lower`) rather than a method call.
    pub attribute: bool,
}

/// Every query the rule language knows; each is an `IntBound<W>` method of the same name.
pub const QUERIES: &[Query] = &[
    Query {
        name: "lower",
        args: &[],
        result: Ty::Int,
        attribute: true,
    },
    Query {
        name: "upper",
        args: &[],
        result: Ty::Int,
        attribute: true,
    },
    Query {
        name: "known_zeros",
        args: &[],
        result: Ty::Int,
        attribute: false,
    },
    Query {
        name: "known_ones",
        args: &[],
        result: Ty::Int,
        attribute: false,
    },
    Query {
        name: "knowns",
        args: &[],
        result: Ty::Int,
        attribute: false,
    },
    Query {
        name: "is_bool",
        args: &[],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "is_constant",
        args: &[],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_nonnegative",
        args: &[],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_negative",
        args: &[],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_ge_const",
        args: &[Ty::Int],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_gt_const",
        args: &[Ty::Int],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_le_const",
        args: &[Ty::Int],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_lt_const",
        args: &[Ty::Int],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_lt",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_le",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_gt",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_ge",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_ne",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_ult",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "known_ule",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "is_and_identity",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
    Query {
        name: "is_or_identity",
        args: &[Ty::Bound],
        result: Ty::Bool,
        attribute: false,
    },
];

/// Helper functions on integers (defined in [`crate::rt`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Func {
    /// Index of the highest set bit, `-1` for 0.
    HighestBit,
    /// Index of the lowest set bit, `-1` for 0.
    LowestBit,
}

impl Func {
    /// The name in rule files (and in [`crate::rt`]).
    pub fn name(self) -> &'static str {
        match self {
            Func::HighestBit => "highest_bit",
            Func::LowestBit => "lowest_bit",
        }
    }
    fn from_name(n: &str) -> Option<Func> {
        match n {
            "highest_bit" => Some(Func::HighestBit),
            "lowest_bit" => Some(Func::LowestBit),
            _ => None,
        }
    }
}

/// A type-checked expression with resolved names.
#[derive(Clone, Debug, PartialEq)]
pub enum TExpr {
    /// A constant.
    Const(i64),
    /// An integer name: a `C`-variable's value or an assigned integer.
    IntVar(String),
    /// An assigned boolean.
    BoolVar(String),
    /// The abstract value of a pattern variable.
    Bound(String),
    /// A unary operation (`Neg`, `Invert` on ints; `Not` on bools).
    Un(UnOp, Box<TExpr>),
    /// A binary operation (arithmetic, comparison or logical).
    Bin(BinOp, Box<TExpr>, Box<TExpr>),
    /// A query on an abstract value (the receiver is a [`TExpr::Bound`]).
    Query(Query, Box<TExpr>, Vec<TExpr>),
    /// A helper function.
    Func(Func, Box<TExpr>),
}

/// A type-checked step.
#[derive(Clone, Debug, PartialEq)]
pub enum TStep {
    /// A condition.
    Check(TExpr),
    /// An assignment of an int or bool.
    Assign(String, TExpr, Ty),
}

/// A type-checked target.
#[derive(Clone, Debug, PartialEq)]
pub enum TTarget {
    /// An existing value matched by a pattern variable.
    Var(String),
    /// A constant computed by an integer expression.
    Const(TExpr),
    /// A new op.
    Op(Opcode, Vec<TTarget>),
}

/// What a rule's result is; rules with `Value` or `Constant` results are tried first.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResultKind {
    /// An existing value (a pattern variable).
    Value,
    /// A constant.
    Constant,
    /// A new op.
    NewOp,
}

/// A pattern variable.
#[derive(Clone, Debug, PartialEq)]
pub struct PatVar {
    /// Its name.
    pub name: String,
    /// Whether it is a `C`-variable (matches constants only).
    pub is_const: bool,
}

/// A rule that passed the type checker.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedRule {
    /// The rule as parsed (name, position, documentation, pattern).
    pub rule: Rule,
    /// The opcode of the pattern's root.
    pub root: Opcode,
    /// The pattern variables in order of first occurrence.
    pub vars: Vec<PatVar>,
    /// Checks and assignments, resolved.
    pub steps: Vec<TStep>,
    /// The target, resolved.
    pub target: TTarget,
    /// What the result is.
    pub result: ResultKind,
}

impl CheckedRule {
    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.rule.name
    }
}

/// Evaluates a constant expression (literals, named constants, integer operators).
pub fn eval_const(e: &Expr) -> Option<i64> {
    Some(match &e.kind {
        ExprKind::Int(v) => *v,
        ExprKind::Name(n) => named_constant(n)?,
        ExprKind::Unary(UnOp::Neg, a) => eval_const(a)?.wrapping_neg(),
        ExprKind::Unary(UnOp::Invert, a) => !eval_const(a)?,
        ExprKind::Binary(op, a, b) => eval_int_binop(*op, eval_const(a)?, eval_const(b)?)?,
        ExprKind::Call(f, args) if args.len() == 1 => eval_func(Func::from_name(f)?, eval_const(&args[0])?),
        _ => return None,
    })
}

/// The integer binary operators (`None` for comparisons and logical operators).
pub fn eval_int_binop(op: BinOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => rt::shl(a, b),
        BinOp::Ashr => rt::ashr(a, b),
        BinOp::Lshr => rt::lshr(a, b),
        _ => return None,
    })
}

/// The comparison operators (`None` for other operators).
pub fn eval_cmp(op: BinOp, a: i64, b: i64) -> Option<bool> {
    let (ua, ub) = (a as u64, b as u64);
    Some(match op {
        BinOp::Eq => a == b,
        BinOp::Ne => a != b,
        BinOp::Lt => a < b,
        BinOp::Le => a <= b,
        BinOp::Gt => a > b,
        BinOp::Ge => a >= b,
        BinOp::Ult => ua < ub,
        BinOp::Ule => ua <= ub,
        BinOp::Ugt => ua > ub,
        BinOp::Uge => ua >= ub,
        _ => return None,
    })
}

/// The helper functions.
pub fn eval_func(f: Func, a: i64) -> i64 {
    match f {
        Func::HighestBit => rt::highest_bit(a),
        Func::LowestBit => rt::lowest_bit(a),
    }
}

/// Whether `op` may appear in a rule: a pure op on integers producing an integer.
pub fn is_rule_op(op: Opcode) -> bool {
    op.is_pure()
        && !op.is_variadic()
        && op.result_kind() == Kind::Int
        && (0..op.fixed_arity()).all(|i| op.arg_kind(i) == Some(Kind::Int))
}

struct Checker<'a> {
    rule: &'a Rule,
    vars: Vec<PatVar>,
    assigned: HashMap<String, Ty>,
}

fn count_ops_pattern(p: &Pattern) -> usize {
    match p {
        Pattern::Op(_, args, _) => 1 + args.iter().map(count_ops_pattern).sum::<usize>(),
        _ => 0,
    }
}

fn count_ops_target(t: &TTarget) -> usize {
    match t {
        TTarget::Op(_, args) => 1 + args.iter().map(count_ops_target).sum::<usize>(),
        _ => 0,
    }
}

impl<'a> Checker<'a> {
    fn err<T>(&self, pos: Pos, msg: impl Into<String>) -> Result<T, RuleError> {
        Err(RuleError::new(
            &self.rule.file,
            pos,
            format!("rule `{}`: {}", self.rule.name, msg.into()),
        ))
    }

    fn check_op(&self, op: Opcode, n: usize, pos: Pos) -> Result<(), RuleError> {
        if !is_rule_op(op) {
            return self.err(
                pos,
                format!(
                    "`{}` is not a pure integer operation and cannot appear in a rule",
                    op.name()
                ),
            );
        }
        if !op.arity_ok(n) {
            return self.err(
                pos,
                format!("`{}` takes {} arguments, found {}", op.name(), op.fixed_arity(), n),
            );
        }
        Ok(())
    }

    fn pattern(&mut self, p: &Pattern) -> Result<(), RuleError> {
        match p {
            Pattern::Var(n, pos) | Pattern::ConstVar(n, pos) => {
                if matches!(n.as_str(), "check" | "and" | "or" | "not") || Func::from_name(n).is_some() {
                    return self.err(*pos, format!("`{n}` is reserved and cannot name a pattern variable"));
                }
                if !self.vars.iter().any(|v| &v.name == n) {
                    self.vars.push(PatVar {
                        name: n.clone(),
                        is_const: matches!(p, Pattern::ConstVar(..)),
                    });
                }
                Ok(())
            }
            Pattern::Lit(..) => Ok(()),
            Pattern::Op(op, args, pos) => {
                self.check_op(*op, args.len(), *pos)?;
                for a in args {
                    self.pattern(a)?;
                }
                Ok(())
            }
        }
    }

    fn var(&self, n: &str) -> Option<&PatVar> {
        self.vars.iter().find(|v| v.name == n)
    }

    /// Resolves `e`, returning its type; `want_bound` resolves `C`-variables to bounds.
    fn expr(&self, e: &Expr, want_bound: bool) -> Result<(TExpr, Ty), RuleError> {
        Ok(match &e.kind {
            ExprKind::Int(v) => (TExpr::Const(*v), Ty::Int),
            ExprKind::Name(n) => {
                if let Some(c) = named_constant(n) {
                    (TExpr::Const(c), Ty::Int)
                } else if let Some(v) = self.var(n) {
                    if v.is_const && !want_bound {
                        (TExpr::IntVar(n.clone()), Ty::Int)
                    } else {
                        (TExpr::Bound(n.clone()), Ty::Bound)
                    }
                } else if let Some(&ty) = self.assigned.get(n) {
                    match ty {
                        Ty::Bool => (TExpr::BoolVar(n.clone()), Ty::Bool),
                        _ => (TExpr::IntVar(n.clone()), Ty::Int),
                    }
                } else if is_const_var(n) {
                    return self.err(
                        e.pos,
                        format!("`{n}` is not bound (by the pattern or an earlier assignment)"),
                    );
                } else {
                    return self.err(e.pos, format!("unknown name `{n}`"));
                }
            }
            ExprKind::Unary(op, a) => {
                let (ta, ty) = self.expr(a, false)?;
                let want = if *op == UnOp::Not { Ty::Bool } else { Ty::Int };
                self.expect_ty(a, ty, want)?;
                (TExpr::Un(*op, Box::new(ta)), want)
            }
            ExprKind::Binary(op, a, b) => {
                let (ta, tya) = self.expr(a, false)?;
                let (tb, tyb) = self.expr(b, false)?;
                let (want, res) = if op.is_logical() {
                    (Ty::Bool, Ty::Bool)
                } else if op.is_comparison() {
                    (Ty::Int, Ty::Bool)
                } else {
                    (Ty::Int, Ty::Int)
                };
                self.expect_ty(a, tya, want)?;
                self.expect_ty(b, tyb, want)?;
                (TExpr::Bin(*op, Box::new(ta), Box::new(tb)), res)
            }
            ExprKind::Call(f, args) => {
                let Some(func) = Func::from_name(f) else {
                    if Opcode::from_name(f).is_some() {
                        return self.err(
                            e.pos,
                            format!("operation `{f}` cannot be used in an expression (only in patterns and targets)"),
                        );
                    }
                    return self.err(
                        e.pos,
                        format!("unknown function `{f}` (known: highest_bit, lowest_bit)"),
                    );
                };
                if args.len() != 1 {
                    return self.err(e.pos, format!("`{f}` takes 1 argument, found {}", args.len()));
                }
                let (ta, ty) = self.expr(&args[0], false)?;
                self.expect_ty(&args[0], ty, Ty::Int)?;
                (TExpr::Func(func, Box::new(ta)), Ty::Int)
            }
            ExprKind::Method(recv, name, args) => self.query(e, recv, name, Some(args))?,
            ExprKind::Attr(recv, name) => self.query(e, recv, name, None)?,
        })
    }

    fn query(&self, e: &Expr, recv: &Expr, name: &str, args: Option<&Vec<Expr>>) -> Result<(TExpr, Ty), RuleError> {
        let (tr, ty) = self.expr(recv, true)?;
        if ty != Ty::Bound {
            return self.err(
                recv.pos,
                format!("`.{name}` needs a pattern variable on its left, found a {}", ty.name()),
            );
        }
        let Some(q) = QUERIES.iter().find(|q| q.name == name) else {
            let known: Vec<_> = QUERIES.iter().map(|q| q.name).collect();
            return self.err(e.pos, format!("unknown query `{name}` (known: {})", known.join(", ")));
        };
        let args = match (q.attribute, args) {
            (true, None) => Vec::new(),
            (false, Some(a)) => a.clone(),
            (true, Some(_)) => {
                return self.err(
                    e.pos,
                    format!("`{name}` is an attribute: write `.{name}` without parentheses"),
                )
            }
            (false, None) => return self.err(e.pos, format!("`{name}` is a method: write `.{name}(...)`")),
        };
        if args.len() != q.args.len() {
            return self.err(
                e.pos,
                format!("`{name}` takes {} arguments, found {}", q.args.len(), args.len()),
            );
        }
        let mut targs = Vec::new();
        for (a, &want) in args.iter().zip(q.args) {
            let (ta, ty) = self.expr(a, want == Ty::Bound)?;
            self.expect_ty(a, ty, want)?;
            targs.push(ta);
        }
        Ok((TExpr::Query(*q, Box::new(tr), targs), q.result))
    }

    fn expect_ty(&self, e: &Expr, got: Ty, want: Ty) -> Result<(), RuleError> {
        if got == want {
            return Ok(());
        }
        let hint = if got == Ty::Bound && want == Ty::Int {
            " (a pattern variable is an abstract value here: use `.lower`, `.upper`, ... or a `C`-variable)"
        } else {
            ""
        };
        self.err(e.pos, format!("expected {}, found {}{hint}", want.name(), got.name()))
    }

    fn target(&self, t: &Target) -> Result<TTarget, RuleError> {
        match t {
            Target::Op(op, args, pos) => {
                self.check_op(*op, args.len(), *pos)?;
                Ok(TTarget::Op(
                    *op,
                    args.iter().map(|a| self.target(a)).collect::<Result<_, _>>()?,
                ))
            }
            Target::Expr(e) => {
                if let ExprKind::Name(n) = &e.kind {
                    if self.var(n).is_some() {
                        return Ok(TTarget::Var(n.clone()));
                    }
                }
                let (te, ty) = self.expr(e, false)?;
                self.expect_ty(e, ty, Ty::Int)?;
                Ok(TTarget::Const(te))
            }
        }
    }
}

/// Type-checks one parsed rule.
pub fn check_rule(rule: &Rule) -> Result<CheckedRule, RuleError> {
    let mut c = Checker {
        rule,
        vars: Vec::new(),
        assigned: HashMap::new(),
    };
    let Pattern::Op(root, _, _) = &rule.pattern else {
        return c.err(rule.pattern.pos(), "the pattern must be an operation");
    };
    c.pattern(&rule.pattern)?;
    let mut steps = Vec::new();
    for s in &rule.steps {
        match s {
            Step::Check(e) => {
                let (te, ty) = c.expr(e, false)?;
                c.expect_ty(e, ty, Ty::Bool)?;
                steps.push(TStep::Check(te));
            }
            Step::Assign(n, e, pos) => {
                if c.var(n).is_some() || c.assigned.contains_key(n) || named_constant(n).is_some() {
                    return c.err(*pos, format!("`{n}` is already defined"));
                }
                let (te, ty) = c.expr(e, false)?;
                if ty == Ty::Bound {
                    return c.err(e.pos, "cannot assign an abstract value; assign an int or a bool");
                }
                c.assigned.insert(n.clone(), ty);
                steps.push(TStep::Assign(n.clone(), te, ty));
            }
        }
    }
    let target = c.target(&rule.target)?;
    let result = match &target {
        TTarget::Var(_) => ResultKind::Value,
        TTarget::Const(_) => ResultKind::Constant,
        TTarget::Op(..) => ResultKind::NewOp,
    };
    let (np, nt) = (count_ops_pattern(&rule.pattern), count_ops_target(&target));
    if nt > np {
        let pos = match &rule.target {
            Target::Op(_, _, p) => *p,
            Target::Expr(e) => e.pos,
        };
        return c.err(
            pos,
            format!(
                "the target has {nt} operations but the pattern only {np}: a rule must never make the trace bigger"
            ),
        );
    }
    Ok(CheckedRule {
        rule: rule.clone(),
        root: *root,
        vars: c.vars,
        steps,
        target,
        result,
    })
}
