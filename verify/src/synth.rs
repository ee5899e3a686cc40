//! Rule synthesis: for every binary integer op, ask Z3 for the simple rewrites
//! `op(x, x) -> x`, `op(x, x) -> C2`, `op(x, C) -> x`, `op(C, x) -> x`, `op(x, C) -> C2`,
//! `op(C, x) -> C2`, and strength reductions `op(x, C) -> u(x)`, `op(C, x) -> u(x)` for the
//! unary ops `int_is_true`, `int_is_zero`, `int_neg`, `int_invert`.
//!
//! Constants are synthesized with exists-forall queries: "is there a `C` such that for every
//! `x` where the op is defined (`valid_if`), the rewrite holds", plus "and the op is defined
//! for some `x`" (so `int_pydiv(x, 0) -> x` is not "found" vacuously). The precondition is an
//! implication, as in the rule proofs: `uint_rshift(x, x) -> 0` is found because every *valid*
//! amount gives 0. Each pattern asks for up to [`MAX_RESULTS`] different constants.
//!
//! Each found rule is then checked against the optimizer: it is `covered` if
//! `optimizer::optimize` removes the op from a one-op trace (`finish(op(x, C))`), else
//! `MISSING`.

use crate::semantics::{bv, op_semantics, WIDTH};
use optimizer::{optimize, Options};
use std::fmt;
use trace_ir::{Kind, Opcode, TraceBuilder, Value};
use z3::ast::{forall_const, Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

/// The binary ops searched: arithmetic, bitwise, comparisons, shifts, `uint_mul_high`, and the
/// Python and C division ops.
pub const BINARY_OPS: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntEq,
    Opcode::IntNe,
    Opcode::IntLt,
    Opcode::IntLe,
    Opcode::IntGt,
    Opcode::IntGe,
    Opcode::UintLt,
    Opcode::UintLe,
    Opcode::UintGt,
    Opcode::UintGe,
    Opcode::IntLshift,
    Opcode::IntRshift,
    Opcode::UintRshift,
    Opcode::UintMulHigh,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
];

/// The unary ops strength reductions may produce.
pub const UNARY_OPS: &[Opcode] = &[Opcode::IntIsTrue, Opcode::IntIsZero, Opcode::IntNeg, Opcode::IntInvert];

/// How many different constants each pattern asks for.
pub const MAX_RESULTS: usize = 4;

/// Timeout of one exists-forall query.
pub const QUERY_TIMEOUT_MS: u32 = 10_000;

/// The left side of a synthesized rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lhs {
    /// `op(x, x)`.
    Same(Opcode),
    /// `op(x, c)`.
    ConstRight(Opcode, i64),
    /// `op(c, x)`.
    ConstLeft(Opcode, i64),
}

/// The right side of a synthesized rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rhs {
    /// `x`.
    X,
    /// A constant.
    Const(i64),
    /// A unary op of `x`.
    Unary(Opcode),
}

/// A rule found by [`synthesize`], and whether the optimizer does it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Left side.
    pub lhs: Lhs,
    /// Right side.
    pub rhs: Rhs,
    /// Whether `optimize` removes the op from a one-op trace.
    pub covered: bool,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lhs = match self.lhs {
            Lhs::Same(op) => format!("{op}(x, x)"),
            Lhs::ConstRight(op, c) => format!("{op}(x, {c})"),
            Lhs::ConstLeft(op, c) => format!("{op}({c}, x)"),
        };
        let rhs = match self.rhs {
            Rhs::X => "x".to_string(),
            Rhs::Const(c) => c.to_string(),
            Rhs::Unary(u) => format!("{u}(x)"),
        };
        write!(
            f,
            "{lhs} -> {rhs}    {}",
            if self.covered { "covered" } else { "MISSING" }
        )
    }
}

fn solver() -> Solver {
    let s = Solver::new();
    let mut p = Params::new();
    p.set_u32("timeout", QUERY_TIMEOUT_MS);
    s.set_params(&p);
    s
}

/// Finds up to [`MAX_RESULTS`] assignments of `consts` such that `valid(x) => eq(x)` for all
/// `x` and `valid(x0)` for some `x0`.
fn find_consts(x: &BV, consts: &[&BV], valid: &Bool, eq: &Bool) -> Vec<Vec<i64>> {
    let x0 = BV::fresh_const("x0", WIDTH);
    let valid_at_x0 = valid.substitute(&[(x, &x0)]);
    let body = valid.implies(eq);
    let mut cond = Bool::and(&[forall_const(&[x], &[], &body), valid_at_x0]);
    let mut out = Vec::new();
    for _ in 0..MAX_RESULTS {
        let s = solver();
        s.assert(&cond);
        if s.check() != SatResult::Sat {
            break;
        }
        let Some(m) = s.get_model() else { break };
        let vals: Vec<i64> = consts
            .iter()
            .map(|c| m.eval(*c, true).and_then(|v| v.as_u64()).unwrap_or(0) as i64)
            .collect();
        let differs: Vec<Bool> = consts.iter().zip(&vals).map(|(c, &v)| BV::eq(c, bv(v)).not()).collect();
        cond = Bool::and(&[cond, Bool::or(&differs)]);
        out.push(vals);
    }
    out
}

/// Whether `optimize` removes `opcode` from the trace `finish(opcode(a, b))` (with `x` an input).
pub fn optimizer_covers(lhs: Lhs) -> bool {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let (op, args): (Opcode, [Value; 2]) = match lhs {
        Lhs::Same(op) => (op, [x, x]),
        Lhs::ConstRight(op, c) => (op, [x, b.const_int(c)]),
        Lhs::ConstLeft(op, c) => (op, [b.const_int(c), x]),
    };
    let r = b.op(op, &args);
    b.finish(&[r]);
    let Ok(trace) = b.build() else { return false };
    match optimize(&trace, &Options::default()) {
        Ok(out) => !out.trace.ops.iter().any(|o| o.opcode == op),
        Err(_) => false,
    }
}

/// Runs the synthesis for `ops` (see the module documentation).
pub fn synthesize(ops: &[Opcode]) -> Vec<Found> {
    let x = BV::new_const("x", WIDTH);
    let c = BV::new_const("c", WIDTH);
    let c2 = BV::new_const("c2", WIDTH);
    let mut found: Vec<(Lhs, Rhs)> = Vec::new();
    for &op in ops {
        // op(x, x) -> x, op(x, x) -> C2
        if let Ok((r, valid)) = op_semantics(op, &[x.clone(), x.clone()]) {
            if !find_consts(&x, &[], &valid, &r.eq(&x)).is_empty() {
                found.push((Lhs::Same(op), Rhs::X));
            } else {
                for v in find_consts(&x, &[&c2], &valid, &r.eq(&c2)) {
                    found.push((Lhs::Same(op), Rhs::Const(v[0])));
                }
            }
        }
        for right in [true, false] {
            let args = if right {
                [x.clone(), c.clone()]
            } else {
                [c.clone(), x.clone()]
            };
            let lhs = |k: i64| {
                if right {
                    Lhs::ConstRight(op, k)
                } else {
                    Lhs::ConstLeft(op, k)
                }
            };
            let Ok((r, valid)) = op_semantics(op, &args) else {
                continue;
            };
            let mut seen: Vec<i64> = Vec::new();
            for v in find_consts(&x, &[&c], &valid, &r.eq(&x)) {
                seen.push(v[0]);
                found.push((lhs(v[0]), Rhs::X));
            }
            for v in find_consts(&x, &[&c, &c2], &valid, &r.eq(&c2)) {
                if !seen.contains(&v[0]) {
                    seen.push(v[0]);
                    found.push((lhs(v[0]), Rhs::Const(v[1])));
                }
            }
            for &u in UNARY_OPS {
                let Ok((ru, _)) = op_semantics(u, std::slice::from_ref(&x)) else {
                    continue;
                };
                for v in find_consts(&x, &[&c], &valid, &r.eq(&ru)) {
                    if !seen.contains(&v[0]) {
                        seen.push(v[0]);
                        found.push((lhs(v[0]), Rhs::Unary(u)));
                    }
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(lhs, rhs)| Found {
            lhs,
            rhs,
            covered: optimizer_covers(lhs),
        })
        .collect()
}
