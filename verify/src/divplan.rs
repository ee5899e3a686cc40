//! Z3 proofs of the op sequences that replace a division or modulo by a constant
//! (`optimizer::divconst`): that a sequence computes `op(x, c)` for every dividend `x`.
//!
//! - Sequences without a multiply-high (powers of two, `MININT`) are proven on 64-bit words
//!   with the shared op semantics ([`crate::semantics::op_semantics`]).
//! - Multiply-high sequences defeat bit-blasting (a 128-bit product against a divider), so
//!   they are proven in linear integer arithmetic: each op is translated to its integer
//!   meaning on a term congruent modulo `2^64` to the word (`uint_mul_high(a, M)` is
//!   `floor(a * M / 2^64)` of the word's unsigned value, `uint_rshift(a, s)` is
//!   `floor(a / 2^s)`, additions and products by constants stay exact, ...), separately for
//!   a negative and a non-negative dividend (so the sign word `x >> 63` is a constant, which
//!   is proven too, and the `xor`s with it are linear), and compared modulo `2^64` with the
//!   integer definition of the division. The translation is checked against
//!   `trace_ir::eval` on random words ([`int_op_on_words`], in `verify/tests/divconst_proofs.rs`).
//!
//! The translation validator proves the sequence of each division by a constant it meets
//! with [`prove_plan`] before it uses the sequence as the division's meaning.

use optimizer::divconst::{plan, Arg, Plan, Step};
use trace_ir::{eval_pure, Opcode};
use z3::ast::{Ast, Bool, Int, BV};
use z3::{Params, SatResult, Solver};

use crate::semantics::op_semantics;

const TIMEOUT_MS: u32 = 60_000;

fn solver(logic: &str) -> Solver {
    let s = Solver::new_for_logic(logic).unwrap_or_default();
    let mut p = Params::new();
    p.set_u32("timeout", TIMEOUT_MS);
    s.set_params(&p);
    s
}

fn unsat(s: &Solver, what: &str) -> Result<(), String> {
    match s.check() {
        SatResult::Unsat => Ok(()),
        SatResult::Sat => Err(format!("{what}: counterexample {:?}", s.get_model())),
        SatResult::Unknown => Err(format!("{what}: Z3 gave up ({:?})", s.get_reason_unknown())),
    }
}

/// `plan(op, c, false)` (the sequence for any dividend), once [`prove_plan`] has proven it;
/// `None` when there is none or the proof fails. Proofs are remembered for the process.
pub fn proven_plan(op: Opcode, c: i64) -> Option<Plan> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static PROVEN: Mutex<Option<HashMap<(Opcode, i64), bool>>> = Mutex::new(None);
    let p = plan(op, c, false)?;
    let known = PROVEN.lock().ok()?.as_ref().and_then(|m| m.get(&(op, c)).copied());
    let ok = match known {
        Some(ok) => ok,
        None => {
            let ok = prove_steps(op, c, &p, false).is_ok();
            PROVEN.lock().ok()?.get_or_insert_with(HashMap::new).insert((op, c), ok);
            ok
        }
    };
    ok.then_some(p)
}

/// That `plan(op, c, nonneg)` exists and computes `op(x, c)` for every `x` (every
/// non-negative `x` when `nonneg`), every op of it valid.
pub fn prove_plan(op: Opcode, c: i64, nonneg: bool) -> Result<(), String> {
    let p = plan(op, c, nonneg).ok_or_else(|| format!("{op} by {c}: no plan"))?;
    prove_steps(op, c, &p, nonneg)
}

/// That the sequence `steps` computes `op(x, c)` for every `x` (every non-negative `x` when
/// `nonneg`): on words when it has no `uint_mul_high`, else in integer arithmetic.
pub fn prove_steps(op: Opcode, c: i64, steps: &[Step], nonneg: bool) -> Result<(), String> {
    if steps.is_empty() {
        return Err(format!("{op} by {c}: empty sequence"));
    }
    if steps.iter().any(|s| s.opcode == Opcode::UintMulHigh) {
        prove_in_integers(op, c, steps, nonneg)
    } else {
        prove_on_words(op, c, steps, nonneg)
    }
}

fn run_bv(p: &[Step], x: &BV) -> (BV, Vec<Bool>) {
    let mut vals: Vec<BV> = Vec::new();
    let mut valid = Vec::new();
    for st in p {
        let args: Vec<BV> = st.args[..st.opcode.fixed_arity()]
            .iter()
            .map(|&a| match a {
                Arg::X => x.clone(),
                Arg::Step(i) => vals[i as usize].clone(),
                Arg::Const(c) => BV::from_i64(c, 64),
            })
            .collect();
        let (v, ok) = op_semantics(st.opcode, &args).expect("sequences use integer ops");
        vals.push(v);
        valid.push(ok);
    }
    (vals.pop().expect("plans are not empty"), valid)
}

fn prove_on_words(op: Opcode, c: i64, p: &[Step], nonneg: bool) -> Result<(), String> {
    let x = BV::new_const("x", 64);
    let (r, valid) = run_bv(p, &x);
    let (spec, _) = op_semantics(op, &[x.clone(), BV::from_i64(c, 64)]).map_err(|e| e.to_string())?;
    let s = solver("QF_BV");
    if nonneg {
        s.assert(x.bvsge(BV::from_i64(0, 64)));
    }
    s.assert(Bool::and(&[r.eq(&spec), Bool::and(&valid)]).not());
    unsat(&s, &format!("{op} by {c} (x_nonneg {nonneg})"))
}

fn int(v: i128) -> Int {
    Int::from_i128(v)
}

fn pow2(k: u32) -> Int {
    Int::from_u128(1u128 << k)
}

/// The signed value of the unsigned value `a` of a word.
fn signed(a: &Int) -> Int {
    a.ge(pow2(63)).ite(&(a.clone() - pow2(64)), a)
}

/// A value during the translation: a known word, or an integer term congruent modulo `2^64`
/// to the word's value, with bounds `lo..=hi` of the term (tracked so that the translation
/// reduces modulo `2^64` by subtracting a known multiple wherever it can, which keeps the
/// queries linear without case splits).
#[derive(Clone)]
enum V {
    Word(u64),
    Term(Int, i128, i128),
}

const W: i128 = 1 << 64;

impl V {
    /// The term with its bounds (a word as its signed value).
    fn parts(&self) -> (Int, i128, i128) {
        match self {
            V::Word(w) => {
                let v = *w as i64 as i128;
                (int(v), v, v)
            }
            V::Term(t, lo, hi) => (t.clone(), *lo, *hi),
        }
    }
    /// The word's unsigned value, as a term in `0..2^64` with its bounds.
    fn canonical(&self) -> (Int, i128, i128) {
        if let V::Word(w) = self {
            let v = *w as i128;
            return (int(v), v, v);
        }
        let (t, lo, hi) = self.parts();
        let k = lo.div_euclid(W);
        if hi.div_euclid(W) == k {
            (t - int(k * W), lo - k * W, hi - k * W)
        } else {
            (t.modulo(pow2(64)), 0, W - 1)
        }
    }
}

/// The integer meaning of `opcode(a, b)`; `None` for the ops and operand shapes this
/// translation does not cover (a variable multiplier, shift amount or mask, a mask that is
/// not `2^k - 1`, a `xor` with a word other than `0`/`-1`). Known words fold with
/// `trace_ir::eval`.
fn int_op(opcode: Opcode, a: &V, b: &V) -> Option<V> {
    use Opcode::*;
    if let (V::Word(x), V::Word(y)) = (a, b) {
        let args = [*x, *y];
        return eval_pure(opcode, &args[..opcode.fixed_arity()]).ok().map(V::Word);
    }
    let word_b = match b {
        V::Word(w) => Some(*w),
        V::Term(..) => None,
    };
    let (ta, la, ha) = a.parts();
    let (tb, lb, hb) = b.parts();
    let term = |t: Int, lo: i128, hi: i128| Some(V::Term(t, lo, hi));
    match opcode {
        IntAdd => term(ta + tb, la.checked_add(lb)?, ha.checked_add(hb)?),
        IntSub => term(ta - tb, la.checked_sub(hb)?, ha.checked_sub(lb)?),
        IntNeg => term(-ta, -ha, -la),
        IntMul => {
            let c = word_b? as i64 as i128;
            let (p, q) = (la.checked_mul(c)?, ha.checked_mul(c)?);
            term(ta * int(c), p.min(q), p.max(q))
        }
        UintMulHigh => {
            let m = word_b? as u128;
            let (t, lo, hi) = a.canonical();
            let f = |v: i128| ((v as u128 * m) >> 64) as i128;
            term((t * Int::from_u128(m)).div(pow2(64)), f(lo), f(hi))
        }
        UintRshift => {
            let s = u32::try_from(word_b?).ok().filter(|&s| s < 64)?;
            let (t, lo, hi) = a.canonical();
            term(t.div(pow2(s)), lo >> s, hi >> s)
        }
        IntRshift => {
            let s = u32::try_from(word_b?).ok().filter(|&s| s < 64)?;
            let (t, lo, hi) = a.canonical();
            let h = 1i128 << 63;
            let (sv, slo, shi) = if hi < h {
                (t, lo, hi)
            } else if lo >= h {
                (t - pow2(64), lo - W, hi - W)
            } else {
                (signed(&t), -h, h - 1)
            };
            term(sv.div(pow2(s)), slo >> s, shi >> s)
        }
        IntXor => match word_b? {
            0 => Some(a.clone()),
            u64::MAX => term(int(-1) - ta, -1 - ha, -1 - la),
            _ => None,
        },
        IntAnd => {
            let m = word_b?;
            if m.wrapping_add(1) & m != 0 || m == u64::MAX {
                return None;
            }
            term(ta.modulo(Int::from_u128(m as u128 + 1)), 0, m as i128)
        }
        _ => None,
    }
}

/// The plan's result on `x`, and the obligations its translation made: the sign word
/// `int_rshift(x, 63)` is taken to be the constant of the dividend's sign (`sign`: `Some(true)`
/// when `x < 0`), and that it is must be proven with the result.
fn run_int(p: &[Step], x: &V, sign: Option<bool>) -> Option<(V, Vec<Bool>)> {
    let mut vals: Vec<V> = Vec::new();
    let mut obligations = Vec::new();
    for st in p {
        let get = |a: Arg| match a {
            Arg::X => x.clone(),
            Arg::Step(i) => vals[i as usize].clone(),
            Arg::Const(c) => V::Word(c as u64),
        };
        let b = if st.opcode.fixed_arity() == 2 {
            get(st.args[1])
        } else {
            V::Word(0)
        };
        let mut v = int_op(st.opcode, &get(st.args[0]), &b)?;
        if let (Opcode::IntRshift, [Arg::X, Arg::Const(63)], Some(neg)) = (st.opcode, st.args, sign) {
            let w = if neg { u64::MAX } else { 0 };
            obligations.push(v.parts().0.eq(int(w as i64 as i128)));
            v = V::Word(w);
        }
        vals.push(v);
    }
    Some((vals.pop()?, obligations))
}

/// That `a` and `b` are congruent modulo `2^64`, for `|a - b| <= 4 * 2^64`.
fn congruent(a: &Int, b: &Int) -> Bool {
    let d = a.clone() - b.clone();
    Bool::or(&(-4..=4).map(|k| d.eq(int(k * W))).collect::<Vec<_>>())
}

/// The integer definition of `op(x, c)` for a signed `x` (Z3's `div` and `mod` are floor
/// division and the non-negative remainder for a positive divisor; the Python ops are only
/// planned for `c > 0`).
fn int_spec(op: Opcode, x: &Int, c: i64) -> Int {
    let d = int(c.unsigned_abs() as i128);
    let trunc_d = x.lt(int(0)).ite(&-((-x.clone()).div(&d)), &x.div(&d));
    match op {
        Opcode::IntPyDiv => x.div(&d),
        // x - d * floor(x / d) is `x mod d` by the definition of `div` and `mod`.
        Opcode::IntPyMod => x.clone() - x.div(&d) * d,
        Opcode::IntFloorDiv if c < 0 => -trunc_d,
        Opcode::IntFloorDiv => trunc_d,
        _ => x.clone() - trunc_d * d,
    }
}

fn prove_in_integers(op: Opcode, c: i64, p: &[Step], nonneg: bool) -> Result<(), String> {
    if matches!(op, Opcode::IntPyDiv | Opcode::IntPyMod) && c <= 0 || c == 0 || c == i64::MIN {
        return Err(format!("{op} by {c}: no integer specification"));
    }
    for negative in [false, true] {
        if negative && nonneg {
            continue;
        }
        // x is the dividend's signed value.
        let x = Int::new_const("x");
        let (lo, hi) = if negative {
            (i64::MIN as i128, -1)
        } else {
            (0, i64::MAX as i128)
        };
        let (r, mut goal) = run_int(p, &V::Term(x.clone(), lo, hi), Some(negative))
            .ok_or_else(|| format!("{op} by {c}: an op outside the integer translation"))?;
        let s = solver("QF_LIA");
        s.assert(Bool::and(&[x.ge(int(lo)), x.le(int(hi))]));
        goal.push(congruent(&r.parts().0, &int_spec(op, &x, c)));
        s.assert(Bool::and(&goal).not());
        unsat(&s, &format!("{op} by {c} (x_nonneg {nonneg}, x < 0: {negative})"))?;
    }
    Ok(())
}

/// The integer translation of `opcode(x, y)` evaluated on words (`None` outside it): what
/// the tests compare with `trace_ir::eval`.
pub fn int_op_on_words(opcode: Opcode, x: u64, y: u64) -> Option<u64> {
    let a = V::Term(Int::from_u64(x), x as i128, x as i128);
    int_op(opcode, &a, &V::Word(y))?.canonical().0.simplify().as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_values_of_words() {
        assert_eq!(signed(&Int::from_u64(u64::MAX)).simplify().as_i64(), Some(-1));
        assert_eq!(signed(&Int::from_u64(5)).simplify().as_i64(), Some(5));
    }
}
