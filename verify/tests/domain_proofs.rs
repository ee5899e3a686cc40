//! Z3 proofs of the abstract domains: the optimizer's generic domain code, run on Z3 bit-vectors.
//!
//! The code proven is the code that runs: every obligation instantiates the generic functions
//! of `optimizer::domain` on [`Z3Word`] (or, for the exhaustive 8-bit check, on `u8`). The
//! concrete semantics are written with Z3's own operators (`bvsdiv`, `bvsmod`, `sign_ext`, ...)
//! or plain `i8`/`u8` arithmetic, independently of the domain code. A timeout is a failure;
//! nothing is skipped. Every conjunction in a goal is split into separate queries (one solver
//! each, formula simplified first), and every query's time is printed.
//!
//! # How `IntBound` is covered: proof by composition
//!
//! Every `IntBound` transfer function is literally `IntBound::from_parts(k, i)` (that is,
//! `IntBound { bits: k, range: i }.reduce()`) where `k` is a `KnownBits` function and `i` an
//! `Interval` function of the operands' components (see `optimizer/src/domain/intbound.rs`).
//! Membership in an `IntBound` is membership in both components. So, at a width `N`:
//!
//! 1. component soundness (groups `knownbits_*`, `interval_*`): for members `x ∈ a`, `y ∈ b`
//!    of the components, the concrete result is in `k` (and `k` is well-formed) and in `i`;
//! 2. the reduce lemma (group `intbound_lemmas`): for well-formed bits and a member `x`,
//!    `x ∈ reduce(v)`, the reduced bits are well-formed and know no fewer bits;
//!
//! give soundness of `IntBound::op` at width `N`. Constants fold: the knownbits function
//! folds two constants to the constant result (proven per op), `reduce` keeps it known (2.),
//! and the lemma "bits all known and `x` a member ⇒ `is_constant` and `constant_value == x`".
//! The backward functions compose the same way: `backward_add(a, b, res)` is
//! `a ∩ from_parts(res.bits - b.bits, Interval::backward_add(..))` (knownbits `sub`
//! soundness, the interval lemma, reduce, and the `intersect` lemma); `make_*` is
//! `from_parts(bits, Interval::make_*)`, `make_eq`/`make_zero` are `intersect`,
//! `make_nonzero` is `make_ne` with `from_constant(0)` (lemma: it contains 0);
//! `learn_cmp` calls `make_*`; `backward_neg`/`backward_invert` are `a ∩ res.neg()` /
//! `a ∩ res.invert()` (both involutions); `intersect` is `from_parts` of the component
//! intersections, emptied on `known_disagrees` (lemma: a common member means no
//! disagreement); `join` is `from_parts` of the component joins. Non-emptiness after
//! learning a true condition follows from membership (interval lemma: a member ⇒ not empty).
//!
//! As an end-to-end cross-check that does not rely on the composition argument, group
//! `exhaustive_intbound_8bit` runs every `IntBound` function on `u8` words (the same generic
//! code) for a fixed set of 90 abstract values (constants, ranges, random bits, raw and
//! reduced) and checks ALL pairs of their concrete members (triples for the backward
//! functions over a subset), and all 65536 pairs of constants for constant folding.
//!
//! # Widths (each group prints what it proved at which width)
//!
//! - 64 bits: every knownbits and interval function except those below; the reduce,
//!   constant and query lemmas of `IntBound` (also at 32, 16 and 8 bits); the interval
//!   `backward_add/sub(_ovf)` by composition of the proven `add/sub(_ovf)` and `intersect`
//!   (and directly at 16 bits as a cross-check).
//! - shifts: interval `lshift`, `rshift`, `uint_rshift` at 32, 16 and 8 bits; the bounded
//!   knownbits shifts `IntBound` calls at 32 bits by a case split on the concrete shift
//!   amount (groups `knownbits shifts 32`: one query per amount `0..32`, and a query that
//!   these are all the valid amounts; the join over a symbolic amount does not finish in one
//!   query at 32 bits) and at 16 and 8 bits in one query (at 8 bits a proof is an exhaustive
//!   check). Not at 64 bits (the per-amount queries already take 0.5-5 s each at 32 bits,
//!   45-130 s per shift on the loaded machine). Plus the exhaustive 8-bit `IntBound` check.
//!   So `IntBound::{shifts}` are proven by composition at 32, 16 and 8 bits.
//! - multiplication/division, knownbits: `uint_mul_high`, `floordiv`, `modulo`, `pydiv` at
//!   64, 32, 16 and 8 bits, `pymod` at 32, 16 and 8, `mul` constant folding at 64/32/16/8;
//!   `mul` and `mul_ovf` soundness at 64, 32 and 16 bits by lemma instantiation (group `mul
//!   knownbits`: "the low bits of a product depend only on the operands' low bits" and
//!   "trailing zeros add up", each proven by a case split on a mask or power of two, after
//!   which the product circuit collapses by constant propagation) and directly at 8 bits; plus
//!   the exhaustive 8-bit check.
//! - multiplication, interval (`mul`, `mul_ovf`, `uint_mul_high`): 64, 32, 16 and 8 bits by
//!   lemma instantiation (next section), group `mul/div interval`.
//! - remainder, interval (`modulo`, `pymod`): by lemma instantiation from the remainder
//!   bounds (`|srem(x, y)| < |y|`, sign of `x`, `|srem| <= |x|`, and the `smod` bounds),
//!   which are proven by bit-blasting with a case split on the signs at 16 bits, and from the
//!   division definition (next point) at 32 and 64 bits (group `div lemmas`); directly at 8.
//! - division, interval (`floordiv`, `pydiv`, `backward_mul_ovf_const`): 64, 32 and 16 bits
//!   from the division lemmas (group `div lemmas`, section "Division by its definition"
//!   below), directly at 8 bits, plus the exhaustive 8-bit check. For a non-constant divisor,
//!   `floordiv`/`pydiv` return the full range (proven at 64 bits); `backward_mul_ovf_const`
//!   is `a` unless `b` is a constant `> 0`, and otherwise `a ∩` its result for an unbounded
//!   `a` (proven at 64 bits, divisions abstracted).
//! - so, by composition, `IntBound::{mul, mul_ovf, uint_mul_high, floordiv, pydiv}` and
//!   `backward_mul_ovf_const` are proven at 64, 32 and 16 bits, `IntBound::{modulo, pymod}`
//!   at 32 (knownbits `pymod` is not proven at 64: ~18 s), 16 and 8.
//! - exhaustive 8-bit checks (group `exhaustive 8-bit intervals`): the interval functions
//!   `modulo`, `pymod` on ALL 1,082,146,816 pairs of non-empty 8-bit intervals (`mul_ovf`,
//!   `mul`, `uint_mul_high` passed the same check and are left out of it since they are
//!   proven at every width), `floordiv`/`pydiv` on all pairs with a constant divisor,
//!   `backward_mul_ovf_const` for all constant `b > 0` and all `res` (with an unbounded `a`, see
//!   above): the exact min/max of the concrete results over each box comes from a recurrence,
//!   so each pair costs one transfer call. And `exhaustive_intbound_8bit` as described above.
//!
//! # Division by its definition (group `div lemmas`)
//!
//! Bit-blasted dividers do not finish: not the monotonicity of `sdiv` in the dividend, not
//! the identity `sdiv(x, d) * d + srem(x, d) == x`, not even `urem(x, y) <u y` at 32 bits.
//! So above 8 bits division is taken by its definition, which is SMT-LIB's definition of
//! `bvsdiv`/`bvsrem`: for `d != 0` (and not `MIN / -1`, whose quotient `MIN` is a separate,
//! bit-blasted lemma) `x == sdiv(x, d) * d + srem(x, d)` exactly (at `2N` bits), the
//! remainder has the sign of `x` or is 0, and `|srem(x, d)| < |d|`. That lemma is proven of
//! Z3's own operators by bit-blasting at 8 bits (where every domain function is also proven
//! directly and checked exhaustively); at 16, 32 and 64 bits it is the one assumption of
//! these proofs. From instances of it, of the product lemmas of the next section and of ring
//! identities, with quotients, remainders and products abstracted as uninterpreted
//! functions, Z3 proves: `py_div(x, d)` is floor division (`p*d <= x < p*d + d` for `d > 0`,
//! mirrored for `d < 0`) and the largest such `p` (`z*d <= x => z <= p`); `sdiv(x, d)` is
//! the same toward zero (the floor for `x >= 0`, the ceiling, smallest, for `x < 0`); `sdiv`
//! and `py_div` are monotone in the dividend for `d > 0` and antitone for `d < -1`; the
//! remainder bounds; `smod` from `srem` (bit-blasted, at every width). The interval
//! functions are then proven from instances of those.
//!
//! # Products by lemma instantiation (group `mul/div interval`)
//!
//! Bit-blasted multipliers cannot compare products of different operands (monotonicity of
//! `x*c` does not finish even at 12 bits). So the interval multiplication functions are proven
//! in two layers, at each width `N`:
//!
//! 1. Lemmas about Z3's `bvmul`, each proven for all values of its variables: ring identities
//!    (`e*f == -((-e)*f)`, `e*g - f*g == (e-f)*g`, ...) by Z3's simplifier alone (sum of
//!    monomials: the negated identity simplifies to `false`); bounds of products whose
//!    operands have known-zero top bits (`e <u 2^a & f <u 2^b => e*f <u 2^(a+b)`), a product
//!    with the constant `2^(N-1)`, and "the N-bit product is the low half of the exact 2N-bit
//!    one", by bit-blasting (these are structural, so they finish at 64 bits); and from
//!    instances of those, the bound `|sext(u)*sext(v)| <= 2^(2N-2)` and monotonicity in each
//!    factor (signed, `x <= y => x*c <= y*c` for `c >= 0`, reversed for `c < 0`; unsigned with
//!    one bit of headroom).
//! 2. The domain function runs on [`Z3Word`] (the code that runs), and its soundness goal is
//!    proven together with instances of the lemmas for the terms involved (for `mul_ovf`:
//!    `x*y` between `lower(a)*y` and `upper(a)*y`, each of those between the corner products,
//!    and the N-bit products as the low halves of the exact ones).
//!
//! In the queries that use lemma instances, every product (and remainder) node is replaced
//! by an uninterpreted function of its operands (`abstract_products`). That is sound: an
//! instance of a valid lemma is valid, and a counterexample with the real `bvmul` would also
//! be a model of the abstract query, in which only congruence is assumed of the function.
//! What remains is comparisons and additions, which bit-blast easily.

use optimizer::domain::{Cmp, IntBound, Interval, KnownBits, Word, WordBool};
use std::time::Instant;
use verify::z3word::{Z3Bool, Z3Word};
use z3::ast::{Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

/// Per-query timeout (generous so that load does not make it flake; every query here takes
/// a few seconds at most on an idle machine). Reaching it fails the test.
fn timeout_ms() -> u32 {
    std::env::var("DOMAIN_PROOF_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60_000)
}

type Z<const N: u32> = Z3Word<N>;
type IB<const N: u32> = IntBound<Z3Word<N>>;
type KB<const N: u32> = KnownBits<Z3Word<N>>;
type IV<const N: u32> = Interval<Z3Word<N>>;

// ------------------------------------------------------------------ symbolic values

/// A symbolic abstract value (all fields free) with a symbolic member.
#[derive(Clone)]
struct Sym<const N: u32> {
    name: String,
    ib: IB<N>,
    x: Z<N>,
}

fn sym<const N: u32>(name: &str) -> Sym<N> {
    let v = |f: &str| Z3Word::<N>::var(&format!("{name}.{f}"));
    let ib = IntBound {
        bits: KnownBits::new(v("ones"), v("unknowns")),
        range: Interval::new(v("lower"), v("upper")),
    };
    Sym {
        name: name.to_string(),
        ib,
        x: v("member"),
    }
}

impl<const N: u32> Sym<N> {
    /// Well-formed and `x` is a member.
    fn pre(&self) -> Bool {
        self.ib.bits.is_well_formed().and(&self.ib.contains(&self.x)).0
    }
    /// Well-formed bits and `x` a member of the bits.
    fn kpre(&self) -> Bool {
        self.ib.bits.is_well_formed().and(&self.ib.bits.contains(&self.x)).0
    }
    /// `x` a member of the interval.
    fn ipre(&self) -> Bool {
        self.ib.range.contains(&self.x).0
    }
}

fn and(bs: &[&Bool]) -> Bool {
    Bool::and(&bs.iter().map(|b| (*b).clone()).collect::<Vec<_>>())
}

fn t() -> Bool {
    Bool::from_bool(true)
}

// ------------------------------------------------------------------ counterexamples

/// Something to print from a counterexample model.
enum Shown<const N: u32> {
    Bound(String, IB<N>),
    Value(String, BV),
}

fn signed(v: u64, n: u32) -> i64 {
    if n >= 64 {
        v as i64
    } else {
        ((v << (64 - n)) as i64) >> (64 - n)
    }
}

fn kb_text(ones: u64, unknowns: u64, n: u32) -> String {
    (0..n)
        .rev()
        .map(|i| {
            if unknowns >> i & 1 == 1 {
                '?'
            } else if ones >> i & 1 == 1 {
                '1'
            } else {
                '0'
            }
        })
        .collect()
}

fn describe<const N: u32>(model: &z3::Model, shown: &[Shown<N>]) -> String {
    let ev = |b: &BV| model.eval(b, true).and_then(|v| v.as_u64()).unwrap_or(0);
    let mut out = String::new();
    for s in shown {
        match s {
            Shown::Bound(name, ib) => {
                let (o, u) = (ev(&ib.bits.ones.0), ev(&ib.bits.unknowns.0));
                let (l, h) = (signed(ev(&ib.range.lower.0), N), signed(ev(&ib.range.upper.0), N));
                out += &format!("    {name} = [{l}, {h}] bits {}\n", kb_text(o, u, N));
            }
            Shown::Value(name, v) => {
                let v = ev(v);
                out += &format!("    {name} = {} ({v:#x})\n", signed(v, N));
            }
        }
    }
    out
}

fn make_solver() -> Solver {
    // bit-vector problems: simplify, eliminate equations, bit-blast, SAT
    let tactic = z3::Tactic::new("simplify")
        .and_then(&z3::Tactic::new("propagate-values"))
        .and_then(&z3::Tactic::new("solve-eqs"))
        .and_then(&z3::Tactic::new("simplify"))
        .and_then(&z3::Tactic::new("bit-blast"))
        .and_then(&z3::Tactic::new("sat"));
    let solver = match std::env::var("DOMAIN_PROOF_SOLVER").as_deref() {
        Ok("qfbv") => Solver::new_for_logic("QF_BV").expect("QF_BV solver"),
        Ok("qfbv-tactic") => z3::Tactic::new("qfbv").solver(),
        _ => tactic.solver(),
    };
    let mut p = Params::new();
    p.set_u32("timeout", timeout_ms());
    solver.set_params(&p);
    solver
}

/// Splits a goal into conjuncts (`a & b`, `p => a & b`), each proven by its own query.
fn split_goal(goal: &Bool, out: &mut Vec<Bool>) {
    if let Ok(d) = goal.safe_decl() {
        let name = d.name();
        let ch = goal.children();
        if name == "and" {
            for c in ch {
                split_goal(&c.as_bool().expect("bool"), out);
            }
            return;
        }
        if name == "=>" && ch.len() == 2 {
            let p = ch[0].as_bool().expect("bool");
            let mut sub = Vec::new();
            split_goal(&ch[1].as_bool().expect("bool"), &mut sub);
            if sub.len() > 1 {
                out.extend(sub.iter().map(|g| p.implies(g)));
                return;
            }
        }
    }
    out.push(goal.clone());
}

/// Proves `pre => goal` (one query per conjunct of `goal`); on failure returns the
/// counterexample (abstract and concrete values) or the timeout.
fn prove<const N: u32>(pre: &Bool, goal: &Bool, shown: &[Shown<N>]) -> Result<(), String> {
    prove_cases::<N>(pre, &[], goal, shown)
}

/// Like [`prove`], with a case split: each conjunct is proven under `c` and under `!c` for
/// every `c` in `cases` (all combinations), which together cover every input.
fn prove_cases<const N: u32>(pre: &Bool, cases: &[Bool], goal: &Bool, shown: &[Shown<N>]) -> Result<(), String> {
    let mut pres = vec![pre.clone()];
    for c in cases {
        pres = pres
            .iter()
            .flat_map(|p| [Bool::and(&[p.clone(), c.clone()]), Bool::and(&[p.clone(), c.not()])])
            .collect();
    }
    for pre in &pres {
        prove_split::<N>(pre, goal, shown)?;
    }
    Ok(())
}

fn prove_split<const N: u32>(pre: &Bool, goal: &Bool, shown: &[Shown<N>]) -> Result<(), String> {
    prove_split_with::<N>(make_solver, pre, goal, shown)
}

/// Z3's `qfbv` tactic as a solver, with the timeout.
fn qfbv_solver() -> Solver {
    let solver = z3::Tactic::new("qfbv").solver();
    let mut p = Params::new();
    p.set_u32("timeout", timeout_ms());
    solver.set_params(&p);
    solver
}

/// [`prove_split`] with the solver made by `make`.
fn prove_split_with<const N: u32>(
    make: fn() -> Solver,
    pre: &Bool,
    goal: &Bool,
    shown: &[Shown<N>],
) -> Result<(), String> {
    let mut parts = Vec::new();
    split_goal(goal, &mut parts);
    for g in &parts {
        let solver = make();
        solver.assert(Bool::and(&[pre.clone(), g.not()]).simplify());
        match solver.check() {
            SatResult::Unsat => {}
            SatResult::Sat => {
                let model = solver.get_model().expect("model");
                let mut g = g.to_string();
                g.truncate(300);
                return Err(format!(
                    "counterexample at {N} bits to conjunct `{g}`:\n{}",
                    describe(&model, shown)
                ));
            }
            SatResult::Unknown => {
                return Err(format!(
                    "no proof (timeout or unknown: {:?})",
                    solver.get_reason_unknown()
                ))
            }
        }
    }
    Ok(())
}

fn shown_inputs<const N: u32>(syms: &[&Sym<N>]) -> Vec<Shown<N>> {
    let mut v = Vec::new();
    for s in syms {
        v.push(Shown::Bound(format!("abstract {}", s.name), s.ib.clone()));
        v.push(Shown::Value(format!("member of {}", s.name), s.x.0.clone()));
    }
    v
}

fn kb_shown<const N: u32>(name: &str, k: &KB<N>) -> Shown<N> {
    Shown::Bound(
        name.into(),
        IntBound {
            bits: k.clone(),
            range: Interval::unbounded(),
        },
    )
}

fn iv_shown<const N: u32>(name: &str, i: &IV<N>) -> Shown<N> {
    Shown::Bound(
        name.into(),
        IntBound {
            bits: KnownBits::unknown(),
            range: i.clone(),
        },
    )
}

// ------------------------------------------------------------------ concrete semantics

/// Concrete semantics: (result, inputs valid).
type BinSem = fn(&BV, &BV) -> (BV, Bool);
type UnSem = fn(&BV) -> BV;

fn b01(b: Bool, n: u32) -> BV {
    b.ite(&BV::from_u64(1, n), &BV::from_u64(0, n))
}

fn nonzero(y: &BV) -> Bool {
    y.eq(BV::from_u64(0, y.get_size())).not()
}

fn shift_ok(y: &BV) -> Bool {
    let n = y.get_size();
    y.bvult(BV::from_u64(u64::from(n), n))
}

/// Signed overflow check: whether the `wide` result fits in `n` bits.
fn fits_signed(wide: &BV, n: u32) -> Bool {
    wide.extract(n - 1, 0).sign_ext(wide.get_size() - n).eq(wide)
}

fn add_fits(x: &BV, y: &BV) -> Bool {
    fits_signed(&x.sign_ext(1).bvadd(y.sign_ext(1)), x.get_size())
}

fn sub_fits(x: &BV, y: &BV) -> Bool {
    fits_signed(&x.sign_ext(1).bvsub(y.sign_ext(1)), x.get_size())
}

fn mul_fits(x: &BV, y: &BV) -> Bool {
    let n = x.get_size();
    fits_signed(&x.sign_ext(n).bvmul(y.sign_ext(n)), n)
}

fn cmp_sem(c: Cmp, x: &BV, y: &BV) -> Bool {
    match c {
        Cmp::Lt => x.bvslt(y),
        Cmp::Le => x.bvsle(y),
        Cmp::Gt => x.bvsgt(y),
        Cmp::Ge => x.bvsge(y),
        Cmp::Eq => x.eq(y),
        Cmp::Ne => x.eq(y).not(),
        Cmp::Ult => x.bvult(y),
        Cmp::Ule => x.bvule(y),
        Cmp::Ugt => x.bvugt(y),
        Cmp::Uge => x.bvuge(y),
    }
}

const CMPS: [Cmp; 10] = [
    Cmp::Lt,
    Cmp::Le,
    Cmp::Gt,
    Cmp::Ge,
    Cmp::Eq,
    Cmp::Ne,
    Cmp::Ult,
    Cmp::Ule,
    Cmp::Ugt,
    Cmp::Uge,
];

fn signext_sem(x: &BV, nbytes: u32) -> BV {
    let n = x.get_size();
    let bits = nbytes * 8;
    if bits >= n {
        x.clone()
    } else {
        x.extract(bits - 1, 0).sign_ext(n - bits)
    }
}

// ------------------------------------------------------------------ the op tables

type KBin<const N: u32> = fn(&KB<N>, &KB<N>) -> KB<N>;
type IBin<const N: u32> = fn(&IV<N>, &IV<N>) -> IV<N>;
type KUn<const N: u32> = fn(&KB<N>) -> KB<N>;
type IUn<const N: u32> = fn(&IV<N>) -> IV<N>;

/// Which group proves an op's components (see the module doc for the widths).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Proven at 64 bits.
    Light,
    /// Shifts by a symbolic amount (barrel shifters, joins over all amounts).
    Shift,
    /// Multiplication and division.
    MulDiv,
}
use Class::*;

/// A binary op: name, class, knownbits function, interval function (`None`
/// for shifts, whose `IntBound` version calls the bounded knownbits shift, proven separately),
/// semantics.
struct BinRow<const N: u32> {
    name: &'static str,
    class: Class,
    k: KBin<N>,
    i: IBin<N>,
    sem: BinSem,
}

fn binops<const N: u32>() -> Vec<BinRow<N>> {
    macro_rules! row {
        ($name:literal, $heavy:expr, $m:ident, $sem:expr) => {
            BinRow {
                name: $name,
                class: $heavy,
                k: KnownBits::<Z<N>>::$m,
                i: Interval::<Z<N>>::$m,
                sem: $sem,
            }
        };
    }
    vec![
        row!("add", Light, add, |x, y| (x.bvadd(y), t())),
        row!("sub", Light, sub, |x, y| (x.bvsub(y), t())),
        row!("and", Light, and, |x, y| (x.bvand(y), t())),
        row!("or", Light, or, |x, y| (x.bvor(y), t())),
        row!("xor", Light, xor, |x, y| (x.bvxor(y), t())),
        row!("eq", Light, eq, |x, y| (b01(x.eq(y), x.get_size()), t())),
        row!("ne", Light, ne, |x, y| (b01(x.eq(y).not(), x.get_size()), t())),
        row!("lt", Light, lt, |x, y| (b01(x.bvslt(y), x.get_size()), t())),
        row!("le", Light, le, |x, y| (b01(x.bvsle(y), x.get_size()), t())),
        row!("gt", Light, gt, |x, y| (b01(x.bvsgt(y), x.get_size()), t())),
        row!("ge", Light, ge, |x, y| (b01(x.bvsge(y), x.get_size()), t())),
        row!("uint_lt", Light, ult, |x, y| (b01(x.bvult(y), x.get_size()), t())),
        row!("uint_le", Light, ule, |x, y| (b01(x.bvule(y), x.get_size()), t())),
        row!("uint_gt", Light, ugt, |x, y| (b01(x.bvugt(y), x.get_size()), t())),
        row!("uint_ge", Light, uge, |x, y| (b01(x.bvuge(y), x.get_size()), t())),
        row!("lshift", Shift, lshift, |x, y| (x.bvshl(y), shift_ok(y))),
        row!("rshift", Shift, rshift, |x, y| (x.bvashr(y), shift_ok(y))),
        row!("uint_rshift", Shift, uint_rshift, |x, y| (x.bvlshr(y), shift_ok(y))),
        row!("mul", MulDiv, mul, |x, y| (x.bvmul(y), t())),
        row!("uint_mul_high", MulDiv, uint_mul_high, |x, y| {
            let n = x.get_size();
            (x.zero_ext(n).bvmul(y.zero_ext(n)).extract(2 * n - 1, n), t())
        }),
        row!("floordiv", MulDiv, floordiv, |x, y| (x.bvsdiv(y), nonzero(y))),
        row!("mod", MulDiv, modulo, |x, y| (x.bvsrem(y), nonzero(y))),
        row!("pydiv", MulDiv, pydiv, |x, y| {
            // floor division: the truncated quotient, minus 1 if the remainder is nonzero and
            // its sign differs from the divisor's
            let n = x.get_size();
            let (q, r) = (x.bvsdiv(y), x.bvsrem(y));
            let z = BV::from_u64(0, n);
            let adjust = Bool::and(&[r.eq(&z).not(), r.bvslt(&z).eq(y.bvslt(&z)).not()]);
            (adjust.ite(&q.bvsub(BV::from_u64(1, n)), &q), nonzero(y))
        }),
        row!("pymod", MulDiv, pymod, |x, y| (x.bvsmod(y), nonzero(y))),
    ]
}

fn unops<const N: u32>() -> Vec<(&'static str, KUn<N>, IUn<N>, UnSem)> {
    vec![
        ("neg", KnownBits::neg, Interval::neg, |x| x.bvneg()),
        ("invert", KnownBits::invert, Interval::invert, |x| x.bvnot()),
        ("is_true", KnownBits::is_true, Interval::is_true, |x| {
            b01(nonzero(x), x.get_size())
        }),
        ("is_zero", KnownBits::is_zero, Interval::is_zero, |x| {
            b01(nonzero(x).not(), x.get_size())
        }),
        (
            "force_ge_zero",
            KnownBits::force_ge_zero,
            Interval::force_ge_zero,
            |x| {
                let z = BV::from_u64(0, x.get_size());
                x.bvslt(&z).ite(&z, x)
            },
        ),
        ("signext(1)", |a| a.signext(1), |a| a.signext(1), |x| signext_sem(x, 1)),
        ("signext(2)", |a| a.signext(2), |a| a.signext(2), |x| signext_sem(x, 2)),
        ("signext(4)", |a| a.signext(4), |a| a.signext(4), |x| signext_sem(x, 4)),
        ("signext(8)", |a| a.signext(8), |a| a.signext(8), |x| signext_sem(x, 8)),
    ]
}

type KOvf<const N: u32> = fn(&KB<N>, &KB<N>) -> KB<N>;
type IOvf<const N: u32> = fn(&IV<N>, &IV<N>) -> (IV<N>, Z3Bool);

/// `(name, heavy, knownbits fn, interval fn, wrapping result, fits)`.
#[allow(clippy::type_complexity)]
fn ovfops<const N: u32>() -> Vec<(
    &'static str,
    Class,
    KOvf<N>,
    IOvf<N>,
    fn(&BV, &BV) -> BV,
    fn(&BV, &BV) -> Bool,
)> {
    vec![
        (
            "add_ovf",
            Light,
            KnownBits::add_ovf,
            Interval::add_ovf,
            |x, y| x.bvadd(y),
            add_fits,
        ),
        (
            "sub_ovf",
            Light,
            KnownBits::sub_ovf,
            Interval::sub_ovf,
            |x, y| x.bvsub(y),
            sub_fits,
        ),
        (
            "mul_ovf",
            MulDiv,
            KnownBits::mul_ovf,
            Interval::mul_ovf,
            |x, y| x.bvmul(y),
            mul_fits,
        ),
    ]
}

// ------------------------------------------------------------------ obligations

/// One proof obligation: a domain function, a property, a width.
struct Obligation {
    function: String,
    property: &'static str,
    width: u32,
    run: Box<dyn Fn() -> Result<(), String>>,
}

fn ob(
    out: &mut Vec<Obligation>,
    function: String,
    property: &'static str,
    width: u32,
    run: impl Fn() -> Result<(), String> + 'static,
) {
    out.push(Obligation {
        function,
        property,
        width,
        run: Box::new(run),
    });
}

/// Runs a group's obligations on this thread (the test harness runs the groups in parallel),
/// prints each with its time and the group's totals, and fails naming the failed ones.
fn run_group(group: &str, mut obs: Vec<Obligation>) {
    if let Ok(f) = std::env::var("DOMAIN_PROOF_FILTER") {
        obs.retain(|o| format!("{} {} {}", o.function, o.property, o.width).contains(&f));
    }
    let start = Instant::now();
    let n = obs.len();
    let mut failed = Vec::new();
    let mut functions = std::collections::BTreeMap::<String, std::collections::BTreeSet<u32>>::new();
    for o in &obs {
        let t0 = Instant::now();
        let r = (o.run)();
        let d = t0.elapsed().as_secs_f64();
        match r {
            Ok(()) => {
                println!(
                    "[{group}] proved  {} [{}] at {} bits ({d:.2}s)",
                    o.function, o.property, o.width
                );
                functions.entry(o.function.clone()).or_default().insert(o.width);
            }
            Err(e) => {
                println!(
                    "[{group}] FAILED  {} [{}] at {} bits ({d:.2}s): {e}",
                    o.function, o.property, o.width
                );
                failed.push(format!("{} [{}] at {} bits", o.function, o.property, o.width));
            }
        }
    }
    // lemmas (about Z3 products, used by the proofs) are not domain functions
    let lemmas = functions.keys().filter(|f| f.starts_with("lemma ")).count();
    functions.retain(|f, _| !f.starts_with("lemma "));
    let mut by_width = std::collections::BTreeMap::<String, usize>::new();
    for ws in functions.values() {
        let key = ws.iter().rev().map(|w| w.to_string()).collect::<Vec<_>>().join("+");
        *by_width.entry(key).or_default() += 1;
    }
    println!(
        "[{group}] proved {} of {n} obligations: {} domain functions proven (by width: {by_width:?}){} in {:.1}s",
        n - failed.len(),
        functions.len(),
        if lemmas > 0 {
            format!(", {lemmas} product lemmas")
        } else {
            String::new()
        },
        start.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "[{group}] {} proof obligations failed: {failed:#?}",
        failed.len()
    );
}

/// KnownBits obligations at width `N` (`heavy`: the multiplication/division group only).
fn knownbits_obligations<const N: u32>(class: Class, out: &mut Vec<Obligation>) {
    for (i, row) in binops::<N>().into_iter().enumerate() {
        // IntBound calls the bounded knownbits shifts (proven below); the plain ones are the
        // bounded ones with the range `0..=BITS-1`, which every valid amount is in
        if row.class != class || row.name.ends_with("shift") {
            continue;
        }
        let name = row.name;
        ob(out, format!("KnownBits::{name}"), "sound, well-formed", N, move || {
            let row = binops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, valid) = (row.sem)(&a.x.0, &b.x.0);
            let res = (row.k)(&a.ib.bits, &b.ib.bits);
            let pre = and(&[&a.kpre(), &b.kpre(), &valid]);
            let shown = vec![
                kb_shown("a", &a.ib.bits),
                Shown::Value("x".into(), a.x.0.clone()),
                kb_shown("b", &b.ib.bits),
                Shown::Value("y".into(), b.x.0.clone()),
                Shown::Value("concrete result".into(), r.clone()),
                kb_shown("abstract result", &res),
            ];
            // mul/div: split on "both constant" (then the members are the known values)
            let cases = if row.class == MulDiv {
                vec![a.ib.bits.is_constant().and(&b.ib.bits.is_constant()).0]
            } else {
                vec![]
            };
            prove_cases::<N>(
                &pre,
                &cases,
                &res.contains(&Z3Word(r)).and(&res.is_well_formed()).0,
                &shown,
            )
        });
        ob(out, format!("KnownBits::{name}"), "constants fold", N, move || {
            let row = binops::<N>().swap_remove(i);
            let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
            let (r, valid) = (row.sem)(&x.0, &y.0);
            let res = (row.k)(
                &KnownBits::from_constant(x.clone()),
                &KnownBits::from_constant(y.clone()),
            );
            let shown = vec![
                Shown::Value("x".into(), x.0.clone()),
                Shown::Value("y".into(), y.0.clone()),
                kb_shown("abstract result", &res),
            ];
            prove::<N>(
                &valid,
                &res.is_constant().and(&res.constant_value().equals(&Z3Word(r))).0,
                &shown,
            )
        });
    }
    for (i, (name, h, _, _, _, _)) in ovfops::<N>().into_iter().enumerate() {
        if h != class {
            continue;
        }
        ob(
            out,
            format!("KnownBits::{name}"),
            "sound (wrapping result), well-formed, constants fold",
            N,
            move || {
                let (_, _, f, _, sem, _) = ovfops::<N>().swap_remove(i);
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let r = Z3Word(sem(&a.x.0, &b.x.0));
                let res = f(&a.ib.bits, &b.ib.bits);
                let c = f(
                    &KnownBits::from_constant(a.x.clone()),
                    &KnownBits::from_constant(b.x.clone()),
                );
                let goal = and(&[
                    &and(&[&a.kpre(), &b.kpre()]).implies(res.contains(&r).and(&res.is_well_formed()).0),
                    &c.is_constant().and(&c.constant_value().equals(&r)).0,
                ]);
                prove::<N>(
                    &t(),
                    &goal,
                    &[
                        kb_shown("a", &a.ib.bits),
                        kb_shown("b", &b.ib.bits),
                        kb_shown("result", &res),
                    ],
                )
            },
        );
    }
    if class == Light {
        knownbits_light_obligations::<N>(out);
    }
    if class != Shift {
        return;
    }
    // the bounded shifts that IntBound calls (amount range from the interval)
    type Shift<const N: u32> = fn(&KB<N>, &KB<N>, &Z<N>, &Z<N>) -> KB<N>;
    type Case<const N: u32> = (&'static str, Shift<N>, fn(&BV, &BV) -> BV);
    let shifts: Vec<Case<N>> = vec![
        ("lshift_bounded", KnownBits::lshift_bounded, |x, y| x.bvshl(y)),
        ("rshift_bounded", KnownBits::rshift_bounded, |x, y| x.bvashr(y)),
        ("uint_rshift_bounded", KnownBits::uint_rshift_bounded, |x, y| {
            x.bvlshr(y)
        }),
    ];
    for (name, f, sem) in shifts {
        ob(out, format!("KnownBits::{name}"), "sound, well-formed", N, move || {
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (lo, hi) = (&b.ib.range.lower, &b.ib.range.upper);
            let r = Z3Word(sem(&a.x.0, &b.x.0));
            let res = f(&a.ib.bits, &b.ib.bits, lo, hi);
            let pre = and(&[&a.kpre(), &b.kpre(), &b.ipre(), &shift_ok(&b.x.0)]);
            prove::<N>(
                &pre,
                &res.contains(&r).and(&res.is_well_formed()).0,
                &[
                    kb_shown("a", &a.ib.bits),
                    kb_shown("amount", &b.ib.bits),
                    iv_shown("amount range", &b.ib.range),
                    kb_shown("result", &res),
                ],
            )
        });
        ob(out, format!("KnownBits::{name}"), "constants fold", N, move || {
            let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
            let r = Z3Word(sem(&x.0, &y.0));
            let res = f(
                &KnownBits::from_constant(x.clone()),
                &KnownBits::from_constant(y.clone()),
                &y,
                &y,
            );
            prove::<N>(
                &shift_ok(&y.0),
                &res.is_constant().and(&res.constant_value().equals(&r)).0,
                &[
                    Shown::Value("x".into(), x.0.clone()),
                    Shown::Value("y".into(), y.0.clone()),
                    kb_shown("result", &res),
                ],
            )
        });
    }
}

/// KnownBits obligations outside the multiplication/division/shift group.
fn knownbits_light_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    for (i, (name, _, _, _)) in unops::<N>().into_iter().enumerate() {
        ob(
            out,
            format!("KnownBits::{name}"),
            "sound, well-formed, constants fold",
            N,
            move || {
                let (_, f, _, sem) = unops::<N>().swap_remove(i);
                let a = sym::<N>("a");
                let r = Z3Word(sem(&a.x.0));
                let res = f(&a.ib.bits);
                let c = f(&KnownBits::from_constant(a.x.clone()));
                let goal = and(&[
                    &a.kpre().implies(res.contains(&r).and(&res.is_well_formed()).0),
                    &c.is_constant().and(&c.constant_value().equals(&r)).0,
                ]);
                prove::<N>(
                    &t(),
                    &goal,
                    &[
                        kb_shown("a", &a.ib.bits),
                        Shown::Value("x".into(), a.x.0.clone()),
                        kb_shown("result", &res),
                    ],
                )
            },
        );
    }
    ob(
        out,
        "KnownBits::intersect".into(),
        "a common member: kept, well-formed, no known disagreement",
        N,
        || {
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let i = a.ib.bits.intersect(&b.ib.bits);
            let pre = and(&[&a.kpre(), &b.kpre(), &a.x.0.eq(&b.x.0)]);
            let goal = and(&[
                &i.contains(&a.x).0,
                &i.is_well_formed().0,
                &a.ib.bits.known_disagrees(&b.ib.bits).not().0,
            ]);
            prove::<N>(
                &pre,
                &goal,
                &[
                    kb_shown("a", &a.ib.bits),
                    kb_shown("b", &b.ib.bits),
                    Shown::Value("x".into(), a.x.0.clone()),
                ],
            )
        },
    );
    ob(
        out,
        "KnownBits::join".into(),
        "keeps members of both, well-formed",
        N,
        || {
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let j = a.ib.bits.join(&b.ib.bits);
            let wf = and(&[&a.ib.bits.is_well_formed().0, &b.ib.bits.is_well_formed().0]);
            let goal = and(&[
                &a.kpre().implies(&j.contains(&a.x).0),
                &b.kpre().implies(&j.contains(&b.x).0),
                &j.is_well_formed().0,
            ]);
            prove::<N>(&wf, &goal, &[kb_shown("a", &a.ib.bits), kb_shown("b", &b.ib.bits)])
        },
    );
    ob(
        out,
        "KnownBits::from_constant / unknown".into(),
        "contain their members, well-formed",
        N,
        || {
            let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
            let c = KnownBits::from_constant(x.clone());
            let u = KB::<N>::unknown();
            let goal = and(&[
                &c.contains(&x).0,
                &c.is_well_formed().0,
                &u.contains(&y).0,
                &u.is_well_formed().0,
            ]);
            prove::<N>(&t(), &goal, &[])
        },
    );
}

/// Interval obligations at width `N` (`heavy`: the multiplication/division group only).
fn interval_obligations<const N: u32>(class: Class, out: &mut Vec<Obligation>) {
    for (i, row) in binops::<N>().into_iter().enumerate() {
        if row.class != class {
            continue;
        }
        let name = row.name;
        ob(out, format!("Interval::{name}"), "sound", N, move || {
            let row = binops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, valid) = (row.sem)(&a.x.0, &b.x.0);
            let res = (row.i)(&a.ib.range, &b.ib.range);
            let pre = and(&[&a.ipre(), &b.ipre(), &valid]);
            let shown = vec![
                iv_shown("a", &a.ib.range),
                Shown::Value("x".into(), a.x.0.clone()),
                iv_shown("b", &b.ib.range),
                Shown::Value("y".into(), b.x.0.clone()),
                Shown::Value("concrete result".into(), r.clone()),
                iv_shown("abstract result", &res),
            ];
            // add/sub: split on the overflows of the end sums and of the concrete sum
            let (p, q) = (&a.ib.range, &b.ib.range);
            let cases = match row.name {
                "add" => vec![
                    p.lower.sadd_overflows(&q.lower).0,
                    p.upper.sadd_overflows(&q.upper).0,
                    a.x.sadd_overflows(&b.x).0,
                ],
                "sub" => vec![
                    p.lower.ssub_overflows(&q.upper).0,
                    p.upper.ssub_overflows(&q.lower).0,
                    a.x.ssub_overflows(&b.x).0,
                ],
                _ => vec![],
            };
            prove_cases::<N>(&pre, &cases, &res.contains(&Z3Word(r)).0, &shown)
        });
    }
    for (i, (name, h, _, _, _, _)) in ovfops::<N>().into_iter().enumerate() {
        if h != class {
            continue;
        }
        ob(
            out,
            format!("Interval::{name}"),
            "sound if no overflow; no_ovf flag sound",
            N,
            move || {
                let (_, _, _, f, sem, fits) = ovfops::<N>().swap_remove(i);
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let r = sem(&a.x.0, &b.x.0);
                let fits = fits(&a.x.0, &b.x.0);
                let (res, ok) = f(&a.ib.range, &b.ib.range);
                let pre = and(&[&a.ipre(), &b.ipre()]);
                let goal = and(&[&fits.implies(&res.contains(&Z3Word(r)).0), &ok.0.implies(&fits)]);
                prove::<N>(
                    &pre,
                    &goal,
                    &[
                        iv_shown("a", &a.ib.range),
                        Shown::Value("x".into(), a.x.0.clone()),
                        iv_shown("b", &b.ib.range),
                        Shown::Value("y".into(), b.x.0.clone()),
                        iv_shown("abstract result", &res),
                    ],
                )
            },
        );
    }
    if class == MulDiv {
        ob(
            out,
            "Interval::backward_mul_ovf_const".into(),
            "keeps members",
            N,
            || {
                let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
                let na = Interval::backward_mul_ovf_const(&a.ib.range, &b.ib.range, &r.ib.range);
                let pre = and(&[
                    &a.ipre(),
                    &b.ipre(),
                    &r.ipre(),
                    &r.x.0.eq(a.x.0.bvmul(&b.x.0)),
                    &mul_fits(&a.x.0, &b.x.0),
                ]);
                prove::<N>(
                    &pre,
                    &na.contains(&a.x).0,
                    &[
                        iv_shown("a", &a.ib.range),
                        iv_shown("b", &b.ib.range),
                        iv_shown("res", &r.ib.range),
                        Shown::Value("x".into(), a.x.0.clone()),
                        Shown::Value("y".into(), b.x.0.clone()),
                    ],
                )
            },
        );
    }
    if class != Light {
        return;
    }
    for (i, (name, _, _, _)) in unops::<N>().into_iter().enumerate() {
        ob(out, format!("Interval::{name}"), "sound", N, move || {
            let (_, _, f, sem) = unops::<N>().swap_remove(i);
            let a = sym::<N>("a");
            let r = Z3Word(sem(&a.x.0));
            let res = f(&a.ib.range);
            prove::<N>(
                &a.ipre(),
                &res.contains(&r).0,
                &[
                    iv_shown("a", &a.ib.range),
                    Shown::Value("x".into(), a.x.0.clone()),
                    iv_shown("result", &res),
                ],
            )
        });
    }
    for cmp in CMPS {
        ob(
            out,
            format!("Interval::make_* for {cmp:?}"),
            "keeps members satisfying the condition",
            N,
            move || {
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let holds = cmp_sem(cmp, &a.x.0, &b.x.0);
                let (mut na, mut nb) = (a.ib.range.clone(), b.ib.range.clone());
                let (p, q) = (&a.ib.range, &b.ib.range);
                match cmp {
                    Cmp::Lt => {
                        na.make_lt(q);
                        nb.make_gt(p);
                    }
                    Cmp::Le => {
                        na.make_le(q);
                        nb.make_ge(p);
                    }
                    Cmp::Gt => {
                        na.make_gt(q);
                        nb.make_lt(p);
                    }
                    Cmp::Ge => {
                        na.make_ge(q);
                        nb.make_le(p);
                    }
                    Cmp::Eq => {
                        na.make_eq(q);
                        nb.make_eq(p);
                    }
                    Cmp::Ne => {
                        na.make_ne(q);
                        nb.make_ne(p);
                    }
                    Cmp::Ult => {
                        na.make_ult(q);
                        nb.make_ugt(p);
                    }
                    Cmp::Ule => {
                        na.make_ule(q);
                        nb.make_uge(p);
                    }
                    Cmp::Ugt => {
                        na.make_ugt(q);
                        nb.make_ult(p);
                    }
                    Cmp::Uge => {
                        na.make_uge(q);
                        nb.make_ule(p);
                    }
                }
                let pre = and(&[&a.ipre(), &b.ipre(), &holds]);
                prove::<N>(
                    &pre,
                    &na.contains(&a.x).and(&nb.contains(&b.x)).0,
                    &[
                        iv_shown("a", p),
                        iv_shown("b", q),
                        Shown::Value("x".into(), a.x.0.clone()),
                        Shown::Value("y".into(), b.x.0.clone()),
                        iv_shown("new a", &na),
                        iv_shown("new b", &nb),
                    ],
                )
            },
        );
    }
    ob(
        out,
        "Interval::make_nonnegative".into(),
        "keeps members satisfying the condition",
        N,
        || {
            let a = sym::<N>("a");
            let mut p = a.ib.range.clone();
            p.make_nonnegative();
            prove::<N>(
                &and(&[&a.ipre(), &a.x.sge(&Word::zero()).0]),
                &p.contains(&a.x).0,
                &[iv_shown("a", &a.ib.range)],
            )
        },
    );
    ob(
        out,
        "Interval::backward_neg / backward_invert".into(),
        "keeps members",
        N,
        || {
            let (a, r) = (sym::<N>("a"), sym::<N>("res"));
            let n = Interval::backward_neg(&a.ib.range, &r.ib.range);
            let i = Interval::backward_invert(&a.ib.range, &r.ib.range);
            let pre = and(&[&a.ipre(), &r.ipre()]);
            let goal = and(&[
                &r.x.0.eq(a.x.0.bvneg()).implies(&n.contains(&a.x).0),
                &r.x.0.eq(a.x.0.bvnot()).implies(&i.contains(&a.x).0),
            ]);
            prove::<N>(
                &pre,
                &goal,
                &[
                    iv_shown("a", &a.ib.range),
                    iv_shown("res", &r.ib.range),
                    Shown::Value("x".into(), a.x.0.clone()),
                ],
            )
        },
    );
    ob(out, "Interval::intersect".into(), "keeps common members", N, || {
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let i = a.ib.range.intersect(&b.ib.range);
        prove::<N>(
            &and(&[&a.ipre(), &b.ipre(), &a.x.0.eq(&b.x.0)]),
            &i.contains(&a.x).0,
            &[iv_shown("a", &a.ib.range), iv_shown("b", &b.ib.range)],
        )
    });
    ob(out, "Interval::join".into(), "keeps members of both", N, || {
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let j = a.ib.range.join(&b.ib.range);
        prove::<N>(
            &and(&[&a.ipre(), &b.ipre()]),
            &j.contains(&a.x).and(&j.contains(&b.x)).0,
            &[iv_shown("a", &a.ib.range), iv_shown("b", &b.ib.range)],
        )
    });
    ob(
        out,
        "Interval::contains / is_empty / from_constant / unbounded".into(),
        "a member means non-empty; constants and unbounded contain their members",
        N,
        || {
            let a = sym::<N>("a");
            let y = Z3Word::<N>::var("y");
            let goal = and(&[
                &a.ipre().implies(&a.ib.range.is_empty().not().0),
                &Interval::from_constant(y.clone()).contains(&y).0,
                &IV::<N>::unbounded().contains(&y).0,
            ]);
            prove::<N>(&t(), &goal, &[iv_shown("a", &a.ib.range)])
        },
    );
}

/// Direct proofs of the interval backward functions of op results. At 64 bits they follow by
/// composition (see the module doc: `backward_add(a, b, res)` is `(a ∩ res.sub(b),
/// b ∩ res.sub(a))`, `backward_sub` is `(a ∩ res.add(b), b ∩ a.sub(res))`, the `_ovf` ones
/// the same with `sub_ovf`/`add_ovf`, whose "sound if no overflow" is proven, and the exact
/// math `x = r - y` does not overflow when `x + y = r` did not); as a cross-check they are
/// also proven directly at width `N`.
fn interval_backward_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    type IBack<const N: u32> = fn(&IV<N>, &IV<N>, &IV<N>) -> (IV<N>, IV<N>);
    let backs: Vec<(&'static str, IBack<N>, BinSem)> = vec![
        ("backward_add", Interval::backward_add, |x, y| (x.bvadd(y), t())),
        ("backward_sub", Interval::backward_sub, |x, y| (x.bvsub(y), t())),
        ("backward_add_ovf", Interval::backward_add_ovf, |x, y| {
            (x.bvadd(y), add_fits(x, y))
        }),
        ("backward_sub_ovf", Interval::backward_sub_ovf, |x, y| {
            (x.bvsub(y), sub_fits(x, y))
        }),
    ];
    for (name, f, sem) in backs {
        ob(out, format!("Interval::{name}"), "keeps members", N, move || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let (v, valid) = sem(&a.x.0, &b.x.0);
            let (na, nb) = f(&a.ib.range, &b.ib.range, &r.ib.range);
            let pre = and(&[&a.ipre(), &b.ipre(), &r.ipre(), &r.x.0.eq(&v), &valid]);
            prove::<N>(
                &pre,
                &na.contains(&a.x).and(&nb.contains(&b.x)).0,
                &[
                    iv_shown("a", &a.ib.range),
                    iv_shown("b", &b.ib.range),
                    iv_shown("res", &r.ib.range),
                    Shown::Value("x".into(), a.x.0.clone()),
                    Shown::Value("y".into(), b.x.0.clone()),
                ],
            )
        });
    }
}

/// IntBound-level lemmas used by the composition argument, at width `N`.
fn intbound_lemmas<const N: u32>(out: &mut Vec<Obligation>) {
    ob(
        out,
        "IntBound::reduce / from_parts".into(),
        "keeps members, bits stay well-formed, no known bit lost",
        N,
        || {
            let a = sym::<N>("a");
            let r = a.ib.reduce();
            let goal = and(&[
                &r.contains(&a.x).0,
                &r.bits.is_well_formed().0,
                &r.bits.unknowns.and(&a.ib.bits.unknowns.not()).equals(&Word::zero()).0,
            ]);
            prove::<N>(&a.pre(), &goal, &shown_inputs(&[&a]))
        },
    );
    ob(
        out,
        "IntBound::is_constant / constant_value".into(),
        "all bits known and a member: that constant",
        N,
        || {
            let a = sym::<N>("a");
            let goal = a.ib.is_constant().and(&a.ib.constant_value().equals(&a.x)).0;
            prove::<N>(
                &and(&[&a.pre(), &a.ib.bits.is_constant().0]),
                &goal,
                &shown_inputs(&[&a]),
            )
        },
    );
    ob(
        out,
        "IntBound::from_constant".into(),
        "contains its value, bits well-formed and constant",
        N,
        || {
            let x = Z3Word::<N>::var("x");
            let c = IntBound::from_constant(x.clone());
            let goal = and(&[&c.contains(&x).0, &c.bits.is_well_formed().0, &c.bits.is_constant().0]);
            prove::<N>(&t(), &goal, &[])
        },
    );
}

/// IntBound queries (no reduction involved), proven directly at width `N`.
fn intbound_queries<const N: u32>(out: &mut Vec<Obligation>) {
    type Q<const N: u32> = fn(&IB<N>, &IB<N>, &Z<N>, &Z<N>) -> Z3Bool;
    let queries: Vec<(&'static str, Q<N>)> = vec![
        ("known_lt", |p, q, x, y| p.known_lt(q).implies(&x.slt(y))),
        ("known_le", |p, q, x, y| p.known_le(q).implies(&x.sle(y))),
        ("known_gt", |p, q, x, y| p.known_gt(q).implies(&x.sgt(y))),
        ("known_ge", |p, q, x, y| p.known_ge(q).implies(&x.sge(y))),
        ("known_ne", |p, q, x, y| p.known_ne(q).implies(&x.not_equals(y))),
        ("known_ult", |p, q, x, y| p.known_ult(q).implies(&x.ult(y))),
        ("known_ule", |p, q, x, y| p.known_ule(q).implies(&x.ule(y))),
        ("known_nonnegative", |p, _, x, _| {
            p.known_nonnegative().implies(&x.sge(&Word::zero()))
        }),
        ("known_negative", |p, _, x, _| {
            p.known_negative().implies(&x.slt(&Word::zero()))
        }),
        ("is_bool", |p, _, x, _| p.is_bool().implies(&x.ule(&Word::one()))),
        ("is_constant", |p, _, x, _| {
            p.is_constant().implies(&x.equals(&p.constant_value()))
        }),
        ("is_and_identity", |p, q, x, y| {
            p.is_and_identity(q).implies(&x.and(y).equals(x))
        }),
        ("is_or_identity", |p, q, x, y| {
            p.is_or_identity(q).implies(&x.or(y).equals(x))
        }),
        ("known_ge_const", |p, _, x, y| p.known_ge_const(y).implies(&x.sge(y))),
        ("known_gt_const", |p, _, x, y| p.known_gt_const(y).implies(&x.sgt(y))),
        ("known_le_const", |p, _, x, y| p.known_le_const(y).implies(&x.sle(y))),
        ("known_lt_const", |p, _, x, y| p.known_lt_const(y).implies(&x.slt(y))),
        ("is_subset_of", |p, q, x, _| p.is_subset_of(q).implies(&q.contains(x))),
        ("is_empty", |p, _, _, _| p.is_empty().not()),
    ];
    for (name, f) in queries {
        ob(out, format!("IntBound::{name}"), "query sound", N, move || {
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let g = f(&a.ib, &b.ib, &a.x, &b.x);
            prove::<N>(&and(&[&a.pre(), &b.pre()]), &g.0, &shown_inputs(&[&a, &b]))
        });
    }
}

#[test]
fn knownbits_components_64() {
    let mut obs = Vec::new();
    knownbits_obligations::<64>(Light, &mut obs);
    run_group("knownbits 64", obs);
}

#[test]
fn interval_components_64() {
    let mut obs = Vec::new();
    interval_obligations::<64>(Light, &mut obs);
    run_group("interval 64", obs);
}

#[test]
fn intbound_lemmas_and_queries() {
    let mut obs = Vec::new();
    intbound_lemmas::<64>(&mut obs);
    intbound_lemmas::<32>(&mut obs);
    intbound_lemmas::<16>(&mut obs);
    intbound_lemmas::<8>(&mut obs);
    intbound_queries::<64>(&mut obs);
    run_group("intbound lemmas", obs);
}

/// The knownbits multiplication/division functions: at 64 (except `pymod`, ~18 s), 32 and
/// 16 bits, split on "both operands constant"; except the soundness of `mul`/`mul_ovf` (the
/// low-bits-of-a-product argument, which direct bit-blasting does not finish beyond 8 bits:
/// proven by lemmas in `mul_knownbits_by_lemmas_64_32_16`), proven directly at 8 bits; and
/// all of them at 8 bits (so that the
/// `IntBound` division functions compose at 8 bits with the interval ones). The interval
/// functions are in `mul_div_interval_by_lemmas_64_32_16`.
#[test]
fn mul_div_knownbits_64_32_16_8() {
    let product_soundness = |o: &Obligation| {
        (o.function == "KnownBits::mul" && o.property != "constants fold") || o.function == "KnownBits::mul_ovf"
    };
    let mut obs = Vec::new();
    knownbits_obligations::<64>(MulDiv, &mut obs);
    obs.retain(|o| o.function != "KnownBits::pymod");
    knownbits_obligations::<32>(MulDiv, &mut obs);
    knownbits_obligations::<16>(MulDiv, &mut obs);
    obs.retain(|o| !product_soundness(o));
    let mut obs8 = Vec::new();
    knownbits_obligations::<8>(MulDiv, &mut obs8);
    obs.extend(obs8);
    run_group("mul/div knownbits", obs);
}

#[test]
fn shift_components_32_16_8() {
    let mut obs = Vec::new();
    interval_obligations::<32>(Shift, &mut obs);
    interval_obligations::<16>(Shift, &mut obs);
    knownbits_obligations::<16>(Shift, &mut obs);
    interval_backward_obligations::<16>(&mut obs);
    // and at 8 bits, where a proof covers every input as an exhaustive check would
    interval_obligations::<8>(Shift, &mut obs);
    knownbits_obligations::<8>(Shift, &mut obs);
    run_group("shifts 32/16/8", obs);
}

// ------------------------------------------------------------------ exhaustive 8-bit check

type I8B = IntBound<u8>;

/// A fixed set of abstract 8-bit values (not necessarily reduced): constants, small and wide
/// ranges around 0 and the ends, with unknown, partly known and contradictory-free bits.
fn abstract_values_8bit() -> Vec<I8B> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let ends: [i8; 14] = [-128, -127, -100, -9, -2, -1, 0, 1, 2, 3, 7, 64, 126, 127];
    let mut out = Vec::new();
    // constants
    for c in [-128i8, -7, -3, -2, -1, 0, 1, 2, 3, 5, 8, 127] {
        out.push(I8B::from_constant(c as u8));
    }
    // ranges with all bits unknown
    for (i, &l) in ends.iter().enumerate() {
        for (j, &h) in ends.iter().enumerate().skip(i) {
            if (i + j) % 3 == 0 || out.len() < 40 {
                out.push(IntBound {
                    bits: KnownBits::unknown(),
                    range: Interval::new(l as u8, h as u8),
                });
            }
        }
    }
    // random bits and ranges (raw and reduced)
    while out.len() < 90 {
        let r = xorshift(&mut seed);
        let unknowns = (r as u8) | (r >> 8) as u8;
        let ones = (r >> 16) as u8 & !unknowns;
        let (mut l, mut h) = ((r >> 24) as i8, (r >> 32) as i8);
        if l > h {
            std::mem::swap(&mut l, &mut h);
        }
        let v = IntBound {
            bits: KnownBits::new(ones, unknowns),
            range: Interval::new(l as u8, h as u8),
        };
        let v = if r >> 40 & 1 == 1 { v.reduce() } else { v };
        if (0..=255u8).any(|x| v.contains(&x)) {
            out.push(v);
        }
    }
    out
}

fn members(v: &I8B) -> Vec<u8> {
    (0..=255u8).filter(|x| v.contains(x)).collect()
}

fn py_div8(x: u8, y: u8) -> u8 {
    // floor division; exact in f64 for 8-bit operands; -128 / -1 wraps to -128
    let (x, y) = (i32::from(x as i8), i32::from(y as i8));
    (x as f64 / y as f64).floor() as i32 as u8
}

fn py_mod8(x: u8, y: u8) -> u8 {
    let (x, y) = (i32::from(x as i8), i32::from(y as i8));
    let f = (x as f64 / y as f64).floor() as i32;
    (x - f * y) as u8
}

fn b8(b: bool) -> u8 {
    u8::from(b)
}

/// Concrete 8-bit semantics: `None` if the inputs are invalid for the op.
type Sem8 = fn(u8, u8) -> Option<u8>;

#[allow(clippy::type_complexity)]
fn binops_8bit() -> Vec<(&'static str, fn(&I8B, &I8B) -> I8B, Sem8)> {
    vec![
        ("add", I8B::add, |x, y| Some(x.wrapping_add(y))),
        ("sub", I8B::sub, |x, y| Some(x.wrapping_sub(y))),
        ("mul", I8B::mul, |x, y| Some(x.wrapping_mul(y))),
        ("and", I8B::and, |x, y| Some(x & y)),
        ("or", I8B::or, |x, y| Some(x | y)),
        ("xor", I8B::xor, |x, y| Some(x ^ y)),
        ("uint_mul_high", I8B::uint_mul_high, |x, y| {
            Some(((u16::from(x) * u16::from(y)) >> 8) as u8)
        }),
        ("floordiv", I8B::floordiv, |x, y| {
            (y != 0).then(|| (x as i8).wrapping_div(y as i8) as u8)
        }),
        ("mod", I8B::modulo, |x, y| {
            (y != 0).then(|| (x as i8).wrapping_rem(y as i8) as u8)
        }),
        ("pydiv", I8B::pydiv, |x, y| (y != 0).then(|| py_div8(x, y))),
        ("pymod", I8B::pymod, |x, y| (y != 0).then(|| py_mod8(x, y))),
        ("eq", I8B::eq, |x, y| Some(b8(x == y))),
        ("ne", I8B::ne, |x, y| Some(b8(x != y))),
        ("lt", I8B::lt, |x, y| Some(b8((x as i8) < (y as i8)))),
        ("le", I8B::le, |x, y| Some(b8((x as i8) <= (y as i8)))),
        ("gt", I8B::gt, |x, y| Some(b8((x as i8) > (y as i8)))),
        ("ge", I8B::ge, |x, y| Some(b8((x as i8) >= (y as i8)))),
        ("uint_lt", I8B::ult, |x, y| Some(b8(x < y))),
        ("uint_le", I8B::ule, |x, y| Some(b8(x <= y))),
        ("uint_gt", I8B::ugt, |x, y| Some(b8(x > y))),
        ("uint_ge", I8B::uge, |x, y| Some(b8(x >= y))),
        ("lshift", I8B::lshift, |x, y| (y < 8).then(|| x << y)),
        ("rshift", I8B::rshift, |x, y| (y < 8).then(|| ((x as i8) >> y) as u8)),
        ("uint_rshift", I8B::uint_rshift, |x, y| (y < 8).then(|| x >> y)),
    ]
}

fn cmp8(c: Cmp, x: u8, y: u8) -> bool {
    let (sx, sy) = (x as i8, y as i8);
    match c {
        Cmp::Lt => sx < sy,
        Cmp::Le => sx <= sy,
        Cmp::Gt => sx > sy,
        Cmp::Ge => sx >= sy,
        Cmp::Eq => x == y,
        Cmp::Ne => x != y,
        Cmp::Ult => x < y,
        Cmp::Ule => x <= y,
        Cmp::Ugt => x > y,
        Cmp::Uge => x >= y,
    }
}

/// Every `IntBound` function, end to end (reduction included), on `IntBound<u8>` (the same
/// generic code as in production), checked for ALL pairs (triples for backward functions)
/// of concrete members of a fixed set of abstract values, and for all pairs of constants.
#[test]
fn exhaustive_intbound_8bit() {
    let start = Instant::now();
    let vals = abstract_values_8bit();
    let mems: Vec<Vec<u8>> = vals.iter().map(members).collect();
    let mut problems: Vec<String> = Vec::new();
    let mut checks = 0u64;
    let mut functions = 0;
    let report = |problems: &mut Vec<String>, what: String| {
        if problems.len() < 20 {
            problems.push(what);
        }
    };
    // forward binary ops: soundness and constant folding
    for (name, f, sem) in binops_8bit() {
        functions += 1;
        for (a, ma) in vals.iter().zip(&mems) {
            for (b, mb) in vals.iter().zip(&mems) {
                let r = f(a, b);
                for &x in ma {
                    for &y in mb {
                        checks += 1;
                        if let Some(v) = sem(x, y) {
                            if !r.contains(&v) {
                                report(
                                    &mut problems,
                                    format!("{name}: {a:?} {b:?} x={x} y={y} -> {v} not in {r:?}"),
                                );
                            }
                        }
                    }
                }
            }
        }
        for x in 0..=255u8 {
            for y in 0..=255u8 {
                if let Some(v) = sem(x, y) {
                    checks += 1;
                    let r = f(&I8B::from_constant(x), &I8B::from_constant(y));
                    if !(r.is_constant() && r.constant_value() == v) {
                        report(&mut problems, format!("{name}: constants {x} {y} -> {v}, got {r:?}"));
                    }
                }
            }
        }
    }
    // overflow ops
    type Ovf8 = fn(&I8B, &I8B) -> (I8B, bool);
    type OvfCase = (&'static str, Ovf8, fn(i8, i8) -> Option<i8>);
    let ovf: Vec<OvfCase> = vec![
        ("add_ovf", I8B::add_ovf, |x, y| x.checked_add(y)),
        ("sub_ovf", I8B::sub_ovf, |x, y| x.checked_sub(y)),
        ("mul_ovf", I8B::mul_ovf, |x, y| x.checked_mul(y)),
    ];
    for (name, f, sem) in ovf {
        functions += 1;
        for (a, ma) in vals.iter().zip(&mems) {
            for (b, mb) in vals.iter().zip(&mems) {
                let (r, no_ovf) = f(a, b);
                for &x in ma {
                    for &y in mb {
                        checks += 1;
                        match sem(x as i8, y as i8) {
                            Some(v) if !r.contains(&(v as u8)) => report(
                                &mut problems,
                                format!("{name}: {a:?} {b:?} x={x} y={y} -> {v} not in {r:?}"),
                            ),
                            None if no_ovf => report(
                                &mut problems,
                                format!("{name}: {a:?} {b:?} x={x} y={y} overflows but no_ovf"),
                            ),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    // unary ops
    type Un8 = fn(&I8B) -> I8B;
    type UnCase = (&'static str, Un8, fn(u8) -> u8);
    let un: Vec<UnCase> = vec![
        ("neg", I8B::neg, |x| x.wrapping_neg()),
        ("invert", I8B::invert, |x| !x),
        ("is_true", I8B::is_true, |x| b8(x != 0)),
        ("is_zero", I8B::is_zero, |x| b8(x == 0)),
        ("force_ge_zero", I8B::force_ge_zero, |x| (x as i8).max(0) as u8),
        ("signext(1)", |a| a.signext(1), |x| x),
    ];
    for (name, f, sem) in un {
        functions += 1;
        for (a, ma) in vals.iter().zip(&mems) {
            let r = f(a);
            for &x in ma {
                checks += 1;
                if !r.contains(&sem(x)) {
                    report(&mut problems, format!("{name}: {a:?} x={x} not in {r:?}"));
                }
            }
        }
        for x in 0..=255u8 {
            let r = f(&I8B::from_constant(x));
            if !(r.is_constant() && r.constant_value() == sem(x)) {
                report(&mut problems, format!("{name}: constant {x}, got {r:?}"));
            }
        }
    }
    // conditions, lattice
    functions += 2 * CMPS.len() + 2;
    for (a, ma) in vals.iter().zip(&mems) {
        for (b, mb) in vals.iter().zip(&mems) {
            let learned: Vec<(Cmp, bool, I8B, I8B)> = CMPS
                .iter()
                .flat_map(|&c| {
                    [true, false].map(|t| {
                        let (na, nb) = IntBound::learn_cmp(c, t, a, b);
                        (c, t, na, nb)
                    })
                })
                .collect();
            let (i, j) = (a.intersect(b), a.join(b));
            for &x in ma {
                for &y in mb {
                    checks += 1;
                    for (c, t, na, nb) in &learned {
                        let kept = na.contains(&x) && nb.contains(&y) && !na.is_empty() && !nb.is_empty();
                        if cmp8(*c, x, y) == *t && !kept {
                            report(
                                &mut problems,
                                format!("learn_cmp({c:?}, {t}): {a:?} {b:?} x={x} y={y} lost"),
                            );
                        }
                    }
                    if x == y && (!i.contains(&x) || i.is_empty()) {
                        report(&mut problems, format!("intersect: {a:?} {b:?} lost {x}"));
                    }
                    if !(j.contains(&x) && j.contains(&y)) {
                        report(&mut problems, format!("join: {a:?} {b:?} lost {x} or {y}"));
                    }
                }
            }
        }
    }
    // make_nonnegative / make_nonzero / make_zero, backward_neg / backward_invert
    functions += 5;
    for (a, ma) in vals.iter().zip(&mems) {
        let (mut p, mut q, mut r) = (a.clone(), a.clone(), a.clone());
        p.make_nonnegative();
        q.make_nonzero();
        r.make_zero();
        for &x in ma {
            checks += 1;
            if (x as i8 >= 0 && !p.contains(&x)) || (x != 0 && !q.contains(&x)) || (x == 0 && !r.contains(&x)) {
                report(&mut problems, format!("make_nonnegative/nonzero/zero: {a:?} lost {x}"));
            }
        }
        for (res, mr) in vals.iter().zip(&mems) {
            let (n, i) = (IntBound::backward_neg(a, res), IntBound::backward_invert(a, res));
            for &x in ma {
                checks += 1;
                if (mr.contains(&x.wrapping_neg()) && !n.contains(&x)) || (mr.contains(&!x) && !i.contains(&x)) {
                    report(&mut problems, format!("backward_neg/invert: {a:?} {res:?} lost {x}"));
                }
            }
        }
    }
    // backward functions of op results: triples (a, b, res) over a subset
    type Back8 = fn(&I8B, &I8B, &I8B) -> (I8B, I8B);
    type BackCase = (&'static str, Back8, fn(u8, u8) -> Option<u8>);
    let backs: Vec<BackCase> = vec![
        ("backward_add", I8B::backward_add, |x, y| Some(x.wrapping_add(y))),
        ("backward_sub", I8B::backward_sub, |x, y| Some(x.wrapping_sub(y))),
        ("backward_add_ovf", I8B::backward_add_ovf, |x, y| {
            (x as i8).checked_add(y as i8).map(|v| v as u8)
        }),
        ("backward_sub_ovf", I8B::backward_sub_ovf, |x, y| {
            (x as i8).checked_sub(y as i8).map(|v| v as u8)
        }),
    ];
    let sub: Vec<usize> = (0..vals.len()).step_by(3).collect();
    functions += backs.len() + 1;
    for (a, ma) in vals.iter().zip(&mems) {
        for &bi in &sub {
            for &ri in &sub {
                let (b, res) = (&vals[bi], &vals[ri]);
                let outs: Vec<(I8B, I8B)> = backs.iter().map(|(_, f, _)| f(a, b, res)).collect();
                let m = IntBound::backward_mul_ovf_const(a, b, res);
                for &x in ma {
                    for &y in &mems[bi] {
                        checks += 1;
                        for ((name, _, sem), (na, nb)) in backs.iter().zip(&outs) {
                            if let Some(v) = sem(x, y) {
                                if res.contains(&v) && !(na.contains(&x) && nb.contains(&y)) {
                                    report(&mut problems, format!("{name}: {a:?} {b:?} {res:?} x={x} y={y} lost"));
                                }
                            }
                        }
                        if let Some(v) = (x as i8).checked_mul(y as i8) {
                            if res.contains(&(v as u8)) && !m.contains(&x) {
                                report(
                                    &mut problems,
                                    format!("backward_mul_ovf_const: {a:?} {b:?} {res:?} x={x} y={y} lost"),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    println!(
        "[exhaustive 8-bit] {functions} IntBound functions checked end to end on u8 words: {} abstract values, {checks} member checks, {:.1}s, {} problems",
        vals.len(),
        start.elapsed().as_secs_f64(),
        problems.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

// ------------------------------------------------------------------ precision search

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// A random knownbits value mixing the special integers of the knownbits domain's article with random ones.
fn random_kb(s: &mut u64) -> KnownBits<u64> {
    let specials = [
        0u64,
        1,
        2,
        7,
        8,
        255,
        256,
        1 << 63,
        (1 << 63) - 1,
        u64::MAX,
        u64::MAX - 7,
    ];
    let r = xorshift(s);
    let x = if r.is_multiple_of(3) {
        specials[(r >> 8) as usize % specials.len()]
    } else {
        xorshift(s)
    };
    let forget = match xorshift(s) % 4 {
        0 => xorshift(s) & xorshift(s),
        1 => xorshift(s),
        2 => u64::MAX << (xorshift(s) % 64),
        _ => (1u64 << (xorshift(s) % 64)).wrapping_sub(1) & xorshift(s),
    };
    KnownBits::new(x & !forget, forget)
}

fn z3kb(k: &KnownBits<u64>) -> KnownBits<Z<64>> {
    KnownBits::new(Z3Word::from_u64(k.ones), Z3Word::from_u64(k.unknowns))
}

/// The knownbits article's precision search, quantifier-free: a strictly better result would know a bit
/// that `result` leaves unknown, i.e. a bit that is the same for all members. For every
/// unknown bit of `result`, Z3 must find two pairs of members whose results differ there.
/// Returns the first such bit that is in fact constant (an imprecision), if any.
fn find_better_bit(
    k1: &KnownBits<u64>,
    k2: &KnownBits<u64>,
    result: &KnownBits<u64>,
    op: fn(&BV, &BV) -> BV,
) -> Result<Option<u32>, String> {
    let (z1, z2) = (z3kb(k1), z3kb(k2));
    for bit in 0..64 {
        if result.unknowns >> bit & 1 == 0 {
            continue;
        }
        let v = |n: &str| Z3Word::<64>::var(&format!("{n}{bit}"));
        let (a1, b1, a2, b2) = (v("a1_"), v("b1_"), v("a2_"), v("b2_"));
        let solver = Solver::new_for_logic("QF_BV").expect("QF_BV");
        let mut p = Params::new();
        p.set_u32("timeout", timeout_ms());
        solver.set_params(&p);
        solver.assert(z1.contains(&a1).0);
        solver.assert(z2.contains(&b1).0);
        solver.assert(z1.contains(&a2).0);
        solver.assert(z2.contains(&b2).0);
        let r1 = op(&a1.0, &b1.0).extract(bit, bit);
        let r2 = op(&a2.0, &b2.0).extract(bit, bit);
        solver.assert(r1.eq(&r2).not());
        match solver.check() {
            SatResult::Sat => {}
            SatResult::Unsat => return Ok(Some(bit)),
            SatResult::Unknown => return Err(format!("timeout at bit {bit}")),
        }
    }
    Ok(None)
}

#[test]
fn precision_search_finds_nothing() {
    type KOp = fn(&KnownBits<u64>, &KnownBits<u64>) -> KnownBits<u64>;
    type KCase = (&'static str, KOp, fn(&BV, &BV) -> BV);
    let ops: Vec<KCase> = vec![
        ("and", KnownBits::and, |x, y| x.bvand(y)),
        ("or", KnownBits::or, |x, y| x.bvor(y)),
        ("xor", KnownBits::xor, |x, y| x.bvxor(y)),
        ("add", KnownBits::add, |x, y| x.bvadd(y)),
        ("sub", KnownBits::sub, |x, y| x.bvsub(y)),
        ("neg", |a, _| a.neg(), |x, _| x.bvneg()),
        ("invert", |a, _| a.invert(), |x, _| x.bvnot()),
    ];
    let samples: u64 = std::env::var("PRECISION_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut problems = Vec::new();
    let mut checked = 0;
    for (name, f, op) in &ops {
        for _ in 0..samples {
            let (k1, k2) = (random_kb(&mut seed), random_kb(&mut seed));
            let r = f(&k1, &k2);
            checked += 1;
            match find_better_bit(&k1, &k2, &r, *op) {
                Ok(None) => {}
                Ok(Some(bit)) => problems.push(format!(
                    "{name}({k1}, {k2}) = {r}: bit {bit} is constant over all members"
                )),
                Err(e) => problems.push(format!("{name}({k1}, {k2}): {e}")),
            }
        }
    }
    println!(
        "precision search: {checked} random inputs over {} ops, {} imprecise",
        ops.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

// ------------------------------------------------------------------ mutation check

/// A deliberately wrong knownbits addition: it forgets that carries out of unknown bits make
/// higher bits unknown.
fn add_dropping_carries<W: Word>(a: &KnownBits<W>, b: &KnownBits<W>) -> KnownBits<W> {
    let unknowns = a.unknowns.or(&b.unknowns);
    KnownBits::new(a.ones.add(&b.ones).and(&unknowns.not()), unknowns)
}

/// Proves knownbits soundness of a binary function with the harness used above.
fn prove_kb_binop<const N: u32>(
    f: fn(&KnownBits<Z<N>>, &KnownBits<Z<N>>) -> KnownBits<Z<N>>,
    op: fn(&BV, &BV) -> BV,
) -> Result<(), String> {
    let (a, b) = (sym::<N>("a"), sym::<N>("b"));
    let res = f(&a.ib.bits, &b.ib.bits);
    let r = op(&a.x.0, &b.x.0);
    let pre = and(&[&a.pre(), &b.pre()]);
    let mut shown = shown_inputs(&[&a, &b]);
    shown.push(Shown::Value("concrete result".into(), r.clone()));
    shown.push(Shown::Bound(
        "abstract result (bits)".into(),
        IntBound {
            bits: res.clone(),
            range: Interval::unbounded(),
        },
    ));
    prove::<N>(&pre, &res.contains(&Z3Word(r)).0, &shown)
}

#[test]
fn mutation_dropped_carry_is_rejected() {
    prove_kb_binop::<64>(KnownBits::add, |x, y| x.bvadd(y)).expect("the real add is sound");
    let err =
        prove_kb_binop::<64>(add_dropping_carries, |x, y| x.bvadd(y)).expect_err("the broken add must be rejected");
    println!("broken add rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
}

// ------------------------------------------------------------------ exhaustive 8-bit interval check

type I8 = Interval<u8>;

/// One concrete outcome of an op on 8-bit members.
#[derive(Clone, Copy)]
enum Out8 {
    /// The inputs are invalid for the op (division by zero): no constraint.
    Invalid,
    /// The `_ovf` op overflows (the flag "overflow impossible" must then be false). No op in
    /// the list uses it now: `mul_ovf`, the only `_ovf` op with an interval function checked
    /// here, is proven by Z3 at every width; the harness keeps the case for the next one.
    #[allow(dead_code)]
    Overflow,
    /// The result.
    Value(i8),
}

/// Summary of the concrete results over a box of members: min, max, whether any value, whether
/// any overflow.
#[derive(Clone, Copy)]
struct Cell {
    lo: i8,
    hi: i8,
    any: bool,
    ovf: bool,
}

const EMPTY_CELL: Cell = Cell {
    lo: i8::MAX,
    hi: i8::MIN,
    any: false,
    ovf: false,
};

impl Cell {
    fn of(o: Out8) -> Cell {
        match o {
            Out8::Invalid => EMPTY_CELL,
            Out8::Overflow => Cell {
                ovf: true,
                ..EMPTY_CELL
            },
            Out8::Value(v) => Cell {
                lo: v,
                hi: v,
                any: true,
                ovf: false,
            },
        }
    }
    fn join(self, o: Cell) -> Cell {
        Cell {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
            any: self.any | o.any,
            ovf: self.ovf | o.ovf,
        }
    }
}

/// The interval transfer function under test: the abstract result and, for `_ovf` ops, the
/// flag "overflow impossible".
type IvFn8 = fn(&I8, &I8) -> (I8, Option<bool>);

/// Checks an interval function on ALL pairs of non-empty 8-bit intervals (32,896 intervals,
/// 1,082,146,816 pairs): for each pair, the exact min/max of the concrete results over the box
/// of members is computed by the recurrence `box(la..=ua, lb..=ub) = box(la..=ua-1, lb..=ub)
/// ∪ box(la..=ua, lb..=ub-1) ∪ {f(ua, ub)}` (one row of the table kept per `ua`), so each pair
/// costs one transfer call plus O(1). Work is split over two threads by `la`. With `const_b`,
/// only the pairs whose second interval is a constant (all 256 of them). Returns the number of
/// pairs checked and up to 10 problems.
fn check_all_interval_pairs(f: IvFn8, sem: fn(i8, i8) -> Out8, const_b: bool) -> (u64, Vec<String>) {
    let worker = |parity: i32| {
        let mut problems = Vec::new();
        let mut pairs = 0u64;
        let mut prev = vec![EMPTY_CELL; 256];
        let mut cur = vec![EMPTY_CELL; 256];
        for la in (-128i32..=127).filter(|l| l.rem_euclid(2) == parity) {
            for lb in -128i32..=127 {
                prev.iter_mut().for_each(|c| *c = EMPTY_CELL);
                for ua in la..=127 {
                    let a = Interval::new(la as u8, ua as u8);
                    let mut left = EMPTY_CELL;
                    let ub_end = if const_b { lb } else { 127 };
                    for ub in lb..=ub_end {
                        let c = Cell::of(sem(ua as i8, ub as i8))
                            .join(left)
                            .join(prev[(ub + 128) as usize]);
                        cur[(ub + 128) as usize] = c;
                        left = c;
                        let b = Interval::new(lb as u8, ub as u8);
                        let (r, no_ovf) = f(&a, &b);
                        pairs += 1;
                        let bad_range = c.any && (c.lo < r.lower as i8 || c.hi > r.upper as i8);
                        let bad_flag = no_ovf == Some(true) && c.ovf;
                        if (bad_range || bad_flag) && problems.len() < 10 {
                            problems.push(format!(
                                "a=[{la}, {ua}] b=[{lb}, {ub}]: concrete results [{}, {}]{} but abstract [{}, {}] no_ovf={no_ovf:?}",
                                c.lo,
                                c.hi,
                                if c.ovf { " (some overflow)" } else { "" },
                                r.lower as i8,
                                r.upper as i8
                            ));
                        }
                    }
                    std::mem::swap(&mut prev, &mut cur);
                }
            }
        }
        (pairs, problems)
    };
    let (r0, r1) = std::thread::scope(|s| {
        let h = s.spawn(|| worker(1));
        (worker(0), h.join().expect("worker"))
    });
    let mut problems = r0.1;
    problems.extend(r1.1);
    (r0.0 + r1.0, problems)
}

fn val(v: Option<i8>) -> Out8 {
    v.map_or(Out8::Invalid, Out8::Value)
}

/// The interval division functions on ALL pairs of 8-bit intervals (see
/// [`check_all_interval_pairs`]), the same generic code on `u8` words. `floordiv`/`pydiv`
/// on all pairs with a constant divisor: for a non-constant divisor they return the full range,
/// which group `mul/div interval` proves for every input at 64 bits.
#[test]
fn exhaustive_interval_muldiv_8bit_all_pairs() {
    let start = Instant::now();
    // (name, function, semantics, only constant divisors)
    #[allow(clippy::type_complexity)]
    // `mul_ovf`, `mul` and `uint_mul_high` are not repeated here: group `mul/div interval`
    // proves them for every input at 64, 32, 16 and 8 bits (`check_all_interval_pairs`
    // found no problem in them either, in 27-41 s each).
    let fns: Vec<(&str, IvFn8, fn(i8, i8) -> Out8, bool)> = vec![
        (
            "floordiv",
            |a, b| (a.floordiv(b), None),
            |x, y| val((y != 0).then(|| x.wrapping_div(y))),
            true,
        ),
        (
            "mod",
            |a, b| (a.modulo(b), None),
            |x, y| val((y != 0).then(|| x.wrapping_rem(y))),
            false,
        ),
        (
            "pydiv",
            |a, b| (a.pydiv(b), None),
            |x, y| val((y != 0).then(|| py_div8(x as u8, y as u8) as i8)),
            true,
        ),
        (
            "pymod",
            |a, b| (a.pymod(b), None),
            |x, y| val((y != 0).then(|| py_mod8(x as u8, y as u8) as i8)),
            false,
        ),
    ];
    let filter = std::env::var("DOMAIN_PROOF_FILTER").unwrap_or_default();
    let mut problems = Vec::new();
    for (name, f, sem, const_b) in fns {
        if !format!("Interval::{name}").contains(&filter) {
            continue;
        }
        let t0 = Instant::now();
        let (pairs, p) = check_all_interval_pairs(f, sem, const_b);
        let which = if const_b {
            "pairs (any interval, constant divisor)"
        } else {
            "pairs of 8-bit intervals"
        };
        println!(
            "[exhaustive 8-bit intervals] Interval::{name}: all {pairs} {which}, {} problems ({:.1}s)",
            p.len(),
            t0.elapsed().as_secs_f64()
        );
        problems.extend(p.into_iter().map(|p| format!("{name}: {p}")));
    }
    if "Interval::backward_mul_ovf_const".contains(&filter) {
        // b = d > 0 constant, a unbounded, every res: the members x with x*d in res (no
        // overflow) must stay; for fixed (d, res.lower) their min/max follow res.upper upwards
        let t0 = Instant::now();
        let mut checked = 0u64;
        let mut p = Vec::new();
        for d in 1i8..=127 {
            // the member x with x*d == v, if any
            let mut by_product: [Option<i8>; 256] = [None; 256];
            for x in -128i8..=127 {
                if let Some(v) = x.checked_mul(d) {
                    by_product[(v as u8) as usize] = Some(x);
                }
            }
            let b = Interval::from_constant(d as u8);
            for lr in -128i32..=127 {
                let mut cell = EMPTY_CELL;
                for ur in lr..=127 {
                    cell = cell.join(Cell::of(val(by_product[(ur as i8 as u8) as usize])));
                    let res = Interval::new(lr as u8, ur as u8);
                    let m = Interval::backward_mul_ovf_const(&I8::unbounded(), &b, &res);
                    checked += 1;
                    if cell.any && (cell.lo < m.lower as i8 || cell.hi > m.upper as i8) && p.len() < 10 {
                        p.push(format!(
                            "backward_mul_ovf_const: b={d} res=[{lr}, {ur}]: members [{}, {}] not in [{}, {}]",
                            cell.lo, cell.hi, m.lower as i8, m.upper as i8
                        ));
                    }
                }
            }
        }
        println!(
            "[exhaustive 8-bit intervals] Interval::backward_mul_ovf_const: all {checked} (b constant > 0, res) with unbounded a, {} problems ({:.1}s)",
            p.len(),
            t0.elapsed().as_secs_f64()
        );
        problems.extend(p);
    }
    println!(
        "[exhaustive 8-bit intervals] done in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

// ------------------------------------------------------------------ products: lemmas and abstraction

/// A lemma: a formula over its variables, proven valid (for all values of the variables) at one
/// width before it is used. [`Lemma::at`] instantiates it by substituting terms for the
/// variables; an instance of a valid formula is valid.
struct Lemma {
    name: String,
    vars: Vec<BV>,
    body: Bool,
}

impl Lemma {
    fn at(&self, args: &[&BV]) -> Bool {
        // a lemma may have variables it does not use (then they need no argument)
        assert!(args.len() <= self.vars.len(), "{}", self.name);
        let subst: Vec<(&BV, &BV)> = self.vars.iter().zip(args.iter().copied()).collect();
        self.body.substitute(&subst)
    }
}

/// Fresh lemma variables of `width` bits.
fn lvars(prefix: &str, names: &[&str], width: u32) -> Vec<BV> {
    names
        .iter()
        .map(|n| BV::new_const(format!("lemma.{prefix}.{n}"), width))
        .collect()
}

/// `2^k` at `width` bits.
fn pow2(k: u32, width: u32) -> BV {
    BV::from_u64(1, width)
        .bvshl(BV::from_u64(u64::from(k), width))
        .simplify()
}

/// The signed product of `N`-bit words at `2N` bits, built exactly as `Z3Word::smul_overflows`
/// and `mul_fits` build it (Z3 shares equal terms, so the abstraction finds the same node).
fn sprod(u: &BV, v: &BV) -> BV {
    let n = u.get_size();
    u.sign_ext(n).bvmul(v.sign_ext(n))
}

/// The unsigned product at `2N` bits, built as `Z3Word::umul_high` builds it.
fn uprod(u: &BV, v: &BV) -> BV {
    let n = u.get_size();
    u.zero_ext(n).bvmul(v.zero_ext(n))
}

/// The unsigned product at `2N + 1` bits (one bit of headroom for differences).
fn uprod1(u: &BV, v: &BV) -> BV {
    let n = u.get_size();
    u.zero_ext(n + 1).bvmul(v.zero_ext(n + 1))
}

/// Proves a ring identity (`lhs == rhs` for all values) by Z3's simplifier alone: with
/// sum-of-monomials normalisation both sides become the same polynomial, so the negated
/// identity simplifies to `false` (no bit-blasting; bit-blasted multipliers do not finish).
fn prove_ring_identity(identity: &Bool) -> Result<(), String> {
    let mut p = Params::new();
    p.set_bool("som", true);
    let g = z3::Goal::new(false, false, false);
    g.assert(&identity.not());
    let r = z3::Tactic::new("simplify")
        .with(&p)
        .apply(&g, None)
        .map_err(|e| format!("simplify failed: {e}"))?;
    let subs: Vec<_> = r.list_subgoals().collect();
    if subs.len() == 1 && subs[0].is_decided_unsat() {
        Ok(())
    } else {
        let mut s = identity.to_string();
        s.truncate(300);
        Err(format!("the simplifier does not reduce the identity `{s}` to true"))
    }
}

/// The operators [`abstract_products`] replaces.
const ABSTRACTED: [&str; 4] = ["bvmul", "bvsrem", "bvsmod", "bvsdiv"];

/// Replaces every multiplication, division and remainder node of `f` by an application of an
/// uninterpreted function (one per operator and bit width), innermost first (a product of a
/// quotient becomes a function of a function). Sound for proving: a counterexample with the
/// real operators is also a model of the abstract formula (congruence is all the solver may
/// assume of the functions).
fn abstract_products(f: &Bool) -> Bool {
    use std::collections::{HashMap, HashSet};
    use z3::ast::Dynamic;
    fn is_abstracted(e: &Dynamic) -> bool {
        e.is_app() && ABSTRACTED.contains(&e.decl().name().as_str())
    }
    /// The outermost abstracted nodes of `e` (not looking inside them).
    fn outermost(e: &Dynamic, seen: &mut HashSet<Dynamic>, out: &mut Vec<Dynamic>) {
        if !seen.insert(e.clone()) {
            return;
        }
        if is_abstracted(e) {
            out.push(e.clone());
            return;
        }
        for c in e.children() {
            outermost(&c, seen, out);
        }
    }
    /// `e` with its abstracted nodes replaced.
    fn abstract_term(e: &Dynamic, memo: &mut HashMap<Dynamic, Dynamic>) -> Dynamic {
        let mut nodes = Vec::new();
        outermost(e, &mut HashSet::new(), &mut nodes);
        let apps: Vec<Dynamic> = nodes.iter().map(|n| abstract_node(n, memo)).collect();
        let subst: Vec<(&Dynamic, &Dynamic)> = nodes.iter().zip(apps.iter()).collect();
        e.substitute(&subst)
    }
    /// The function application standing for abstracted node `n`.
    fn abstract_node(n: &Dynamic, memo: &mut HashMap<Dynamic, Dynamic>) -> Dynamic {
        if let Some(a) = memo.get(n) {
            return a.clone();
        }
        let ch: Vec<Dynamic> = n.children().iter().map(|c| abstract_term(c, memo)).collect();
        let w = n.as_bv().expect("a bit-vector operator").get_size();
        let sort = z3::Sort::bitvector(w);
        let op = n.decl().name();
        let fun = z3::FuncDecl::new(format!("abstract_{op}{w}"), &[&sort, &sort], &sort);
        let app = fun.apply(&[&ch[0], &ch[1]]);
        memo.insert(n.clone(), app.clone());
        app
    }
    let r = abstract_term(&Dynamic::from_ast(f), &mut HashMap::new())
        .as_bool()
        .expect("a formula");
    let text = r.to_string();
    for op in ABSTRACTED {
        assert!(!text.contains(&format!("({op} ")), "an `{op}` node was not abstracted");
    }
    r
}

/// Proves `pre => goal` from lemma instances, with every product abstracted
/// ([`abstract_products`]); one query per conjunct of `goal`.
fn prove_abstract<const N: u32>(pre: &Bool, instances: &[Bool], goal: &Bool, shown: &[Shown<N>]) -> Result<(), String> {
    let mut parts = Vec::new();
    split_goal(goal, &mut parts);
    let mut hyp = vec![pre.clone()];
    hyp.extend(instances.iter().cloned());
    let hyp = Bool::and(&hyp);
    for g in &parts {
        let f = abstract_products(&Bool::and(&[hyp.clone(), g.not()]));
        let solver = Solver::new();
        let mut p = Params::new();
        p.set_u32("timeout", timeout_ms());
        solver.set_params(&p);
        solver.assert(&f);
        match solver.check() {
            SatResult::Unsat => {}
            SatResult::Sat => {
                let model = solver.get_model().expect("model");
                // with the real operators, is the model's input a counterexample?
                let real = model
                    .eval(&Bool::and(&[pre.clone(), g.not()]), true)
                    .and_then(|b| b.as_bool())
                    .unwrap_or(false);
                let mut g = g.to_string();
                g.truncate(300);
                let what = if real {
                    "counterexample (confirmed with the real operators)"
                } else {
                    "abstract counterexample (spurious with the real operators: the lemma instances do not suffice)"
                };
                return Err(format!("{what} at {N} bits to `{g}`:\n{}", describe(&model, shown)));
            }
            SatResult::Unknown => {
                return Err(format!(
                    "no proof (timeout or unknown: {:?})",
                    solver.get_reason_unknown()
                ))
            }
        }
    }
    Ok(())
}

/// How a lemma is proven.
enum By {
    /// Z3's simplifier (ring identities; [`prove_ring_identity`]).
    Ring,
    /// Bit-blasting ([`prove`]): bounds of products whose operands have known-zero top bits,
    /// products with a power-of-two operand, low bits of a product.
    BitBlast,
    /// From instances of the lemmas named, products abstracted ([`prove_abstract`]).
    Instances(Vec<Bool>),
}

/// The multiplication lemmas at width `N` (products of `2N`- or `2N+1`-bit terms). The names
/// and statements are printed with each proof.
struct MulLemmas {
    /// `e*f == -((-e)*f)` (2N bits).
    neg1: Lemma,
    /// `e*f == -(e*(-f))`.
    neg2: Lemma,
    /// `e*g - f*g == (e-f)*g`.
    dist1: Lemma,
    /// `g*e - g*f == g*(e-f)`.
    dist2: Lemma,
    /// `e*g - f*g == (e-f)*g` at 2N+1 bits.
    dist1w: Lemma,
    /// `g*e - g*f == g*(e-f)` at 2N+1 bits.
    dist2w: Lemma,
    /// `e <u 2^(N-1) & f <u 2^(N-1) => e*f <u 2^(2N-2)`.
    st_nm1_nm1: Lemma,
    /// `e <u 2^N & f <u 2^(N-1) => e*f <u 2^(2N-1)`.
    st_n_nm1: Lemma,
    /// `e <u 2^(N-1) & f <u 2^N => e*f <u 2^(2N-1)`.
    st_nm1_n: Lemma,
    /// `e <u 2^N & f <u 2^N => e*f <u 2^(2N)` at 2N+1 bits.
    st_n_n_w: Lemma,
    /// `e * 2^(N-1) == e << (N-1)` and `2^(N-1) * e == e << (N-1)`.
    pow: Lemma,
    /// `bvmul(u, v) == low N bits of sprod(u, v)` (u, v N bits).
    low: Lemma,
    /// `uprod(u, v) == low 2N bits of uprod1(u, v)`.
    ulow: Lemma,
    /// `-2^(2N-2) <= sprod(u, v) <= 2^(2N-2)` (signed).
    bound: Lemma,
    /// `u1 <= u2 => (v >= 0 => sprod(u1,v) <= sprod(u2,v)) & (v < 0 => sprod(u1,v) >= sprod(u2,v))`.
    mono1: Lemma,
    /// `v1 <= v2 => (u >= 0 => sprod(u,v1) <= sprod(u,v2)) & (u < 0 => sprod(u,v1) >= sprod(u,v2))`.
    mono2: Lemma,
    /// `u1 <=u u2 => uprod(u1, v) <=u uprod(u2, v)`.
    umono1: Lemma,
    /// `v1 <=u v2 => uprod(u, v1) <=u uprod(u, v2)`.
    umono2: Lemma,
}

fn lemma(name: &str, vars: Vec<BV>, body: Bool) -> Lemma {
    Lemma {
        name: name.into(),
        vars,
        body,
    }
}

fn mul_lemmas<const N: u32>() -> MulLemmas {
    let w = 2 * N;
    let v2 = |names: &[&str], pfx: &str| lvars(&format!("{pfx}{N}"), names, w);
    let ring = |pfx: &str, width: u32, f: &dyn Fn(&BV, &BV, &BV) -> Bool| {
        let v = lvars(&format!("{pfx}{N}"), &["e", "f", "g"], width);
        let body = f(&v[0], &v[1], &v[2]);
        lemma(pfx, v, body)
    };
    let st = |pfx: &str, a: u32, b: u32, width: u32| {
        let v = lvars(&format!("{pfx}{N}"), &["e", "f"], width);
        let body = Bool::and(&[v[0].bvult(pow2(a, width)), v[1].bvult(pow2(b, width))])
            .implies(v[0].bvmul(&v[1]).bvult(pow2(a + b, width)));
        lemma(pfx, v, body)
    };
    let pw = {
        let v = v2(&["e"], "pow");
        let c = pow2(N - 1, w);
        let sh = v[0].bvshl(BV::from_u64(u64::from(N - 1), w));
        let body = Bool::and(&[v[0].bvmul(&c).eq(&sh), c.bvmul(&v[0]).eq(&sh)]);
        lemma("pow", v, body)
    };
    let low = {
        let v = lvars(&format!("low{N}"), &["u", "v"], N);
        let body = v[0].bvmul(&v[1]).eq(sprod(&v[0], &v[1]).extract(N - 1, 0));
        lemma("low", v, body)
    };
    let ulow = {
        let v = lvars(&format!("ulow{N}"), &["u", "v"], N);
        let body = uprod(&v[0], &v[1]).eq(uprod1(&v[0], &v[1]).extract(w - 1, 0));
        lemma("ulow", v, body)
    };
    let bound = {
        let v = lvars(&format!("bound{N}"), &["u", "v"], N);
        let t = pow2(w - 2, w);
        let p = sprod(&v[0], &v[1]);
        let body = Bool::and(&[t.bvneg().bvsle(&p), p.bvsle(&t)]);
        lemma("bound", v, body)
    };
    let z = BV::from_u64(0, N);
    let mono1 = {
        let v = lvars(&format!("mono1_{N}"), &["u1", "u2", "v"], N);
        let (a, b) = (sprod(&v[0], &v[2]), sprod(&v[1], &v[2]));
        let body = v[0].bvsle(&v[1]).implies(Bool::and(&[
            v[2].bvsge(&z).implies(a.bvsle(&b)),
            v[2].bvslt(&z).implies(a.bvsge(&b)),
        ]));
        lemma("mono1", v, body)
    };
    let mono2 = {
        let v = lvars(&format!("mono2_{N}"), &["u", "v1", "v2"], N);
        let (a, b) = (sprod(&v[0], &v[1]), sprod(&v[0], &v[2]));
        let body = v[1].bvsle(&v[2]).implies(Bool::and(&[
            v[0].bvsge(&z).implies(a.bvsle(&b)),
            v[0].bvslt(&z).implies(a.bvsge(&b)),
        ]));
        lemma("mono2", v, body)
    };
    let umono1 = {
        let v = lvars(&format!("umono1_{N}"), &["u1", "u2", "v"], N);
        let body = v[0]
            .bvule(&v[1])
            .implies(uprod(&v[0], &v[2]).bvule(uprod(&v[1], &v[2])));
        lemma("umono1", v, body)
    };
    let umono2 = {
        let v = lvars(&format!("umono2_{N}"), &["u", "v1", "v2"], N);
        let body = v[1]
            .bvule(&v[2])
            .implies(uprod(&v[0], &v[1]).bvule(uprod(&v[0], &v[2])));
        lemma("umono2", v, body)
    };
    MulLemmas {
        neg1: ring("neg1", w, &|e, f, _| e.bvmul(f).eq(e.bvneg().bvmul(f).bvneg())),
        neg2: ring("neg2", w, &|e, f, _| e.bvmul(f).eq(e.bvmul(f.bvneg()).bvneg())),
        dist1: ring("dist1", w, &|e, f, g| {
            e.bvmul(g).bvsub(f.bvmul(g)).eq(e.bvsub(f).bvmul(g))
        }),
        dist2: ring("dist2", w, &|e, f, g| {
            g.bvmul(e).bvsub(g.bvmul(f)).eq(g.bvmul(e.bvsub(f)))
        }),
        dist1w: ring("dist1w", w + 1, &|e, f, g| {
            e.bvmul(g).bvsub(f.bvmul(g)).eq(e.bvsub(f).bvmul(g))
        }),
        dist2w: ring("dist2w", w + 1, &|e, f, g| {
            g.bvmul(e).bvsub(g.bvmul(f)).eq(g.bvmul(e.bvsub(f)))
        }),
        st_nm1_nm1: st("st_nm1_nm1", N - 1, N - 1, w),
        st_n_nm1: st("st_n_nm1", N, N - 1, w),
        st_nm1_n: st("st_nm1_n", N - 1, N, w),
        st_n_n_w: st("st_n_n_w", N, N, w + 1),
        pow: pw,
        low,
        ulow,
        bound,
        mono1,
        mono2,
        umono1,
        umono2,
    }
}

impl MulLemmas {
    /// Instances proving [`MulLemmas::bound`] for `(u, v)` (N-bit): the four sign
    /// combinations, reduced to products of non-negative operands below `2^(N-1)`, or with the
    /// power-of-two operand `-MIN`.
    fn bound_proof(&self, u: &BV, v: &BV) -> Vec<Bool> {
        let n = u.get_size();
        let (su, sv) = (u.sign_ext(n), v.sign_ext(n));
        let (nu, nv) = (su.bvneg(), sv.bvneg());
        let mut out = vec![
            self.neg1.at(&[&su, &sv]),
            self.neg2.at(&[&su, &sv]),
            self.neg1.at(&[&su, &nv]),
            self.neg2.at(&[&nu, &sv]),
        ];
        for (e, f) in [(&su, &sv), (&nu, &sv), (&su, &nv), (&nu, &nv)] {
            out.push(self.st_nm1_nm1.at(&[e, f]));
        }
        for e in [&su, &sv, &nu, &nv] {
            out.push(self.pow.at(&[e]));
        }
        out
    }

    /// Instances proving [`MulLemmas::mono1`] for `(u1, u2, v)`.
    fn mono1_proof(&self, u1: &BV, u2: &BV, v: &BV) -> Vec<Bool> {
        let n = u1.get_size();
        let (s1, s2, sv) = (u1.sign_ext(n), u2.sign_ext(n), v.sign_ext(n));
        let nv = sv.bvneg();
        let e = s2.bvsub(&s1);
        vec![
            self.bound.at(&[u1, v]),
            self.bound.at(&[u2, v]),
            self.dist1.at(&[&s2, &s1, &sv]),
            self.st_n_nm1.at(&[&e, &sv]),
            self.neg2.at(&[&e, &sv]),
            self.st_n_nm1.at(&[&e, &nv]),
            self.pow.at(&[&e]),
        ]
    }

    /// Instances proving [`MulLemmas::mono2`] for `(u, v1, v2)`.
    fn mono2_proof(&self, u: &BV, v1: &BV, v2: &BV) -> Vec<Bool> {
        let n = u.get_size();
        let (su, s1, s2) = (u.sign_ext(n), v1.sign_ext(n), v2.sign_ext(n));
        let nu = su.bvneg();
        let e = s2.bvsub(&s1);
        vec![
            self.bound.at(&[u, v1]),
            self.bound.at(&[u, v2]),
            self.dist2.at(&[&s2, &s1, &su]),
            self.st_nm1_n.at(&[&su, &e]),
            self.neg1.at(&[&su, &e]),
            self.st_nm1_n.at(&[&nu, &e]),
            self.pow.at(&[&e]),
        ]
    }

    /// Instances proving [`MulLemmas::umono1`] for `(u1, u2, v)` (at 2N+1 bits, then the low
    /// 2N bits).
    fn umono1_proof(&self, u1: &BV, u2: &BV, v: &BV) -> Vec<Bool> {
        let n = u1.get_size();
        let (z1, z2, zv) = (u1.zero_ext(n + 1), u2.zero_ext(n + 1), v.zero_ext(n + 1));
        let e = z2.bvsub(&z1);
        vec![
            self.dist1w.at(&[&z2, &z1, &zv]),
            self.st_n_n_w.at(&[&e, &zv]),
            self.st_n_n_w.at(&[&z1, &zv]),
            self.st_n_n_w.at(&[&z2, &zv]),
            self.ulow.at(&[u1, v]),
            self.ulow.at(&[u2, v]),
        ]
    }

    /// Instances proving [`MulLemmas::umono2`] for `(u, v1, v2)`.
    fn umono2_proof(&self, u: &BV, v1: &BV, v2: &BV) -> Vec<Bool> {
        let n = u.get_size();
        let (zu, z1, z2) = (u.zero_ext(n + 1), v1.zero_ext(n + 1), v2.zero_ext(n + 1));
        let e = z2.bvsub(&z1);
        vec![
            self.dist2w.at(&[&z2, &z1, &zu]),
            self.st_n_n_w.at(&[&zu, &e]),
            self.st_n_n_w.at(&[&zu, &z1]),
            self.st_n_n_w.at(&[&zu, &z2]),
            self.ulow.at(&[u, v1]),
            self.ulow.at(&[u, v2]),
        ]
    }
}

/// Proves one lemma at width `N`.
fn prove_lemma<const N: u32>(l: &Lemma, by: By) -> Result<(), String> {
    match by {
        By::Ring => prove_ring_identity(&l.body),
        By::BitBlast => prove::<N>(&t(), &l.body, &[]),
        By::Instances(inst) => prove_abstract::<N>(&t(), &inst, &l.body, &[]),
    }
}

/// The lemma obligations at width `N` (primitive ones first, then the derived ones).
fn mul_lemma_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    type Pick = fn(&MulLemmas) -> (&Lemma, By);
    let picks: Vec<(&'static str, Pick)> = vec![
        ("neg1", |m| (&m.neg1, By::Ring)),
        ("neg2", |m| (&m.neg2, By::Ring)),
        ("dist1", |m| (&m.dist1, By::Ring)),
        ("dist2", |m| (&m.dist2, By::Ring)),
        ("dist1 (2N+1 bits)", |m| (&m.dist1w, By::Ring)),
        ("dist2 (2N+1 bits)", |m| (&m.dist2w, By::Ring)),
        ("product bound (N-1)x(N-1) bits", |m| (&m.st_nm1_nm1, By::BitBlast)),
        ("product bound N x (N-1) bits", |m| (&m.st_n_nm1, By::BitBlast)),
        ("product bound (N-1) x N bits", |m| (&m.st_nm1_n, By::BitBlast)),
        ("product bound N x N bits (2N+1)", |m| (&m.st_n_n_w, By::BitBlast)),
        ("times 2^(N-1)", |m| (&m.pow, By::BitBlast)),
        ("low bits of the wide product", |m| (&m.low, By::BitBlast)),
        ("low bits of the unsigned wide product", |m| (&m.ulow, By::BitBlast)),
        ("signed product bound", |m| {
            let v = &m.bound.vars;
            (&m.bound, By::Instances(m.bound_proof(&v[0], &v[1])))
        }),
        ("monotone in the first factor", |m| {
            let v = &m.mono1.vars;
            (&m.mono1, By::Instances(m.mono1_proof(&v[0], &v[1], &v[2])))
        }),
        ("monotone in the second factor", |m| {
            let v = &m.mono2.vars;
            (&m.mono2, By::Instances(m.mono2_proof(&v[0], &v[1], &v[2])))
        }),
        ("unsigned: monotone in the first factor", |m| {
            let v = &m.umono1.vars;
            (&m.umono1, By::Instances(m.umono1_proof(&v[0], &v[1], &v[2])))
        }),
        ("unsigned: monotone in the second factor", |m| {
            let v = &m.umono2.vars;
            (&m.umono2, By::Instances(m.umono2_proof(&v[0], &v[1], &v[2])))
        }),
    ];
    for (name, pick) in picks {
        ob(out, format!("lemma {name}"), "valid", N, move || {
            let m = mul_lemmas::<N>();
            let (l, by) = pick(&m);
            prove_lemma::<N>(l, by)
        });
    }
}

/// The interval multiplication functions at width `N`, by lemma instantiation: the generic
/// code runs on [`Z3Word`] as everywhere else; the goal is then proven from instances of the
/// (separately proven) monotonicity and low-bits lemmas, with the products abstracted.
fn interval_mul_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    /// Instances: `x*y` lies between the corner products (signed), and the N-bit products are
    /// the low bits of the exact ones.
    fn corner_instances<const N: u32>(m: &MulLemmas, a: &Sym<N>, b: &Sym<N>) -> Vec<Bool> {
        let (la, ua, x) = (&a.ib.range.lower.0, &a.ib.range.upper.0, &a.x.0);
        let (lb, ub, y) = (&b.ib.range.lower.0, &b.ib.range.upper.0, &b.x.0);
        vec![
            m.mono1.at(&[la, x, y]),
            m.mono1.at(&[x, ua, y]),
            m.mono2.at(&[la, lb, y]),
            m.mono2.at(&[la, y, ub]),
            m.mono2.at(&[ua, lb, y]),
            m.mono2.at(&[ua, y, ub]),
            m.low.at(&[la, lb]),
            m.low.at(&[la, ub]),
            m.low.at(&[ua, lb]),
            m.low.at(&[ua, ub]),
            m.low.at(&[x, y]),
        ]
    }
    ob(
        out,
        "Interval::mul_ovf".into(),
        "sound if no overflow; no_ovf flag sound (by lemmas)",
        N,
        || {
            let m = mul_lemmas::<N>();
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let r = a.x.0.bvmul(&b.x.0);
            let fits = mul_fits(&a.x.0, &b.x.0);
            let (res, ok) = a.ib.range.mul_ovf(&b.ib.range);
            let goal = and(&[&fits.implies(&res.contains(&Z3Word(r)).0), &ok.0.implies(&fits)]);
            prove_abstract::<N>(
                &and(&[&a.ipre(), &b.ipre()]),
                &corner_instances(&m, &a, &b),
                &goal,
                &[
                    iv_shown("a", &a.ib.range),
                    Shown::Value("x".into(), a.x.0.clone()),
                    iv_shown("b", &b.ib.range),
                    Shown::Value("y".into(), b.x.0.clone()),
                    iv_shown("abstract result", &res),
                ],
            )
        },
    );
    ob(out, "Interval::mul".into(), "sound (by lemmas)", N, || {
        let m = mul_lemmas::<N>();
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let r = a.x.0.bvmul(&b.x.0);
        let res = a.ib.range.mul(&b.ib.range);
        prove_abstract::<N>(
            &and(&[&a.ipre(), &b.ipre()]),
            &corner_instances(&m, &a, &b),
            &res.contains(&Z3Word(r)).0,
            &[
                iv_shown("a", &a.ib.range),
                Shown::Value("x".into(), a.x.0.clone()),
                iv_shown("b", &b.ib.range),
                Shown::Value("y".into(), b.x.0.clone()),
                iv_shown("abstract result", &res),
            ],
        )
    });
    ob(out, "Interval::uint_mul_high".into(), "sound (by lemmas)", N, || {
        let m = mul_lemmas::<N>();
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let (x, y) = (&a.x.0, &b.x.0);
        let r = uprod(x, y).extract(2 * N - 1, N);
        let res = a.ib.range.uint_mul_high(&b.ib.range);
        let (umin_a, umax_a) = (a.ib.range.unsigned_min().0, a.ib.range.unsigned_max().0);
        let (umin_b, umax_b) = (b.ib.range.unsigned_min().0, b.ib.range.unsigned_max().0);
        let inst = vec![
            m.umono1.at(&[&umin_a, x, y]),
            m.umono1.at(&[x, &umax_a, y]),
            m.umono2.at(&[&umin_a, &umin_b, y]),
            m.umono2.at(&[&umax_a, y, &umax_b]),
        ];
        prove_abstract::<N>(
            &and(&[&a.ipre(), &b.ipre()]),
            &inst,
            &res.contains(&Z3Word(r)).0,
            &[
                iv_shown("a", &a.ib.range),
                Shown::Value("x".into(), a.x.0.clone()),
                iv_shown("b", &b.ib.range),
                Shown::Value("y".into(), b.x.0.clone()),
                iv_shown("abstract result", &res),
            ],
        )
    });
}

/// `floordiv`/`pydiv` by a non-constant divisor: the full range (so that the exhaustive 8-bit
/// check needs only constant divisors).
fn interval_div_nonconst_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    type Div<const N: u32> = fn(&IV<N>, &IV<N>) -> IV<N>;
    let fns: Vec<(&'static str, Div<N>)> = vec![("floordiv", Interval::floordiv), ("pydiv", Interval::pydiv)];
    for (name, f) in fns {
        ob(
            out,
            format!("Interval::{name}"),
            "non-constant divisor: the full range",
            N,
            move || {
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let res = f(&a.ib.range, &b.ib.range);
                let full = IV::<N>::unbounded();
                prove::<N>(
                    &b.ib.range.is_constant().not().0,
                    &and(&[&res.lower.0.eq(&full.lower.0), &res.upper.0.eq(&full.upper.0)]),
                    &[iv_shown("a", &a.ib.range), iv_shown("b", &b.ib.range)],
                )
            },
        );
    }
}

/// `backward_mul_ovf_const` reduces to its result for an unbounded `a`: unchanged `a` unless `b`
/// is a constant `> 0`, and otherwise `a ∩ backward_mul_ovf_const(unbounded, b, res)`, proven
/// with the divisions abstracted (the same division terms on both sides). With the proven
/// `intersect` lemma this leaves the 8-bit exhaustive check of all `(b constant, res)` with an
/// unbounded `a` (test `exhaustive_interval_muldiv_8bit_all_pairs`).
fn backward_mul_ovf_const_reduction<const N: u32>(out: &mut Vec<Obligation>) {
    ob(
        out,
        "Interval::backward_mul_ovf_const".into(),
        "= a ∩ (its result for unbounded a), = a unless b is a constant > 0",
        N,
        || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let (p, q, res) = (&a.ib.range, &b.ib.range, &r.ib.range);
            let f = Interval::backward_mul_ovf_const(p, q, res);
            let g = p.intersect(&Interval::backward_mul_ovf_const(&IV::<N>::unbounded(), q, res));
            let applies = q.is_constant().and(&q.lower.sgt(&Word::zero())).0;
            let same = |x: &IV<N>, y: &IV<N>| and(&[&x.lower.0.eq(&y.lower.0), &x.upper.0.eq(&y.upper.0)]);
            let goal = and(&[&applies.implies(same(&f, &g)), &applies.not().implies(same(&f, p))]);
            prove_abstract::<N>(
                &t(),
                &[],
                &goal,
                &[iv_shown("a", p), iv_shown("b", q), iv_shown("res", res)],
            )
        },
    );
}

/// Proves `domain => conclusion` (a lemma's body) by a case split on the value of its
/// variable `var`: the body with `var` fixed to each of `values` (bit-blasted: the constant
/// propagates through the product circuit, which then collapses), and `domain =>` `var` is one
/// of `values` (so the cases cover every assignment on which the body is not trivially true).
fn prove_lemma_by_values<const N: u32>(
    var: &BV,
    domain: &Bool,
    conclusion: &Bool,
    values: &[BV],
) -> Result<(), String> {
    for v in values {
        prove::<N>(&var.eq(v), &domain.implies(conclusion), &[])
            .map_err(|e| format!("case {var} = {}: {e}", v.simplify()))?;
    }
    let any = Bool::or(&values.iter().map(|v| var.eq(v)).collect::<Vec<_>>());
    prove::<N>(domain, &any, &[]).map_err(|e| format!("the cases do not cover the domain: {e}"))
}

/// The knownbits multiplication lemmas at width `N`, each `(lemma, split variable, domain,
/// conclusion, case values)`.
struct KbMulLemmas {
    /// `m` a low mask (`m & (m+1) == 0`) `=> (x*y) & m == ((x&m) * (y&m)) & m`: the low bits
    /// of a product depend only on the operands' low bits. Split on `m = 2^k - 1`, `k` in
    /// `0..=N`.
    low: Lemma,
    /// `p`, `q` zero or powers of two, `x & (p-1) == 0`, `y & (q-1) == 0` `=>
    /// (x*y) & (p*q - 1) == 0`: trailing zeros add up (`p == 0`: `x == 0`). Split on `p` in
    /// `{0, 2^0, ..., 2^(N-1)}`.
    tz: Lemma,
}

fn low_mask(m: &BV) -> Bool {
    m.bvand(m.bvadd(BV::from_u64(1, m.get_size())))
        .eq(BV::from_u64(0, m.get_size()))
}

fn pow2_or_zero(p: &BV) -> Bool {
    p.bvand(p.bvsub(BV::from_u64(1, p.get_size())))
        .eq(BV::from_u64(0, p.get_size()))
}

/// `(lemma, split variable, domain, conclusion, values)` of each knownbits product lemma.
type SplitLemma = (Lemma, BV, Bool, Bool, Vec<BV>);

fn kb_mul_lemma_parts<const N: u32>() -> [SplitLemma; 2] {
    let one = BV::from_u64(1, N);
    let zero = BV::from_u64(0, N);
    let low = {
        let v = lvars(&format!("kblow{N}"), &["x", "y", "m"], N);
        let (x, y, m) = (&v[0], &v[1], &v[2]);
        let domain = low_mask(m);
        let conclusion = x.bvmul(y).bvand(m).eq(x.bvand(m).bvmul(y.bvand(m)).bvand(m));
        let values = (0..=N).map(|k| pow2(k, N).bvsub(&one).simplify()).collect();
        let l = lemma("low bits of a product", v.clone(), domain.implies(&conclusion));
        (l, m.clone(), domain, conclusion, values)
    };
    let tz = {
        let v = lvars(&format!("kbtz{N}"), &["x", "y", "p", "q"], N);
        let (x, y, p, q) = (&v[0], &v[1], &v[2], &v[3]);
        let domain = pow2_or_zero(p);
        let conclusion = Bool::and(&[
            pow2_or_zero(q),
            x.bvand(p.bvsub(&one)).eq(&zero),
            y.bvand(q.bvsub(&one)).eq(&zero),
        ])
        .implies(x.bvmul(y).bvand(p.bvmul(q).bvsub(&one)).eq(&zero));
        let values = std::iter::once(zero.clone())
            .chain((0..N).map(|k| pow2(k, N)))
            .collect();
        let l = lemma("trailing zeros of a product", v.clone(), domain.implies(&conclusion));
        (l, p.clone(), domain, conclusion, values)
    };
    [low, tz]
}

/// `KnownBits::mul` and `mul_ovf` at width `N`, by lemma instantiation: the two lemmas (each by
/// a case split, see [`KbMulLemmas`]), then the generic code on [`Z3Word`] with its products
/// abstracted and instances of the lemmas for the terms it computes (the exact low bits, below
/// the lowest unknown bit of either operand, and the trailing zeros `2^tz(a) * 2^tz(b)`).
fn knownbits_mul_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    for i in 0..2 {
        let name = kb_mul_lemma_parts::<N>()[i].0.name.clone();
        ob(out, format!("lemma {name}"), "valid (case split)", N, move || {
            let [low, tz] = kb_mul_lemma_parts::<N>();
            let (_, var, domain, conclusion, values) = if i == 0 { low } else { tz };
            prove_lemma_by_values::<N>(&var, &domain, &conclusion, &values)
        });
    }
    let fns: [(&'static str, KBin<N>); 2] = [("mul", KnownBits::mul), ("mul_ovf", KnownBits::mul_ovf)];
    for (name, f) in fns {
        ob(
            out,
            format!("KnownBits::{name}"),
            "sound (wrapping result), well-formed (by lemmas)",
            N,
            move || prove_kb_mul_by_lemmas::<N>(f),
        );
    }
    ob(out, "KnownBits::mul_ovf".into(), "constants fold", N, || {
        let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
        let res = KnownBits::mul_ovf(
            &KnownBits::from_constant(x.clone()),
            &KnownBits::from_constant(y.clone()),
        );
        prove::<N>(
            &t(),
            &res.is_constant()
                .and(&res.constant_value().equals(&Z3Word(x.0.bvmul(&y.0))))
                .0,
            &[kb_shown("result", &res)],
        )
    });
}

/// Soundness of a knownbits product function `f` from instances of the [`KbMulLemmas`].
fn prove_kb_mul_by_lemmas<const N: u32>(f: KBin<N>) -> Result<(), String> {
    let [(low, ..), (tz, ..)] = kb_mul_lemma_parts::<N>();
    let m = KbMulLemmas { low, tz };
    let (a, b) = (sym::<N>("a"), sym::<N>("b"));
    let (ka, kb) = (&a.ib.bits, &b.ib.bits);
    let (x, y) = (&a.x.0, &b.x.0);
    let res = f(ka, kb);
    // the terms `KnownBits::mul` computes: the mask of exactly known low bits and the lowest
    // possibly-set bit of each operand
    let exact = ka.unknowns.or(&kb.unknowns).lowest_bit().sub(&Z3Word::one()).0;
    let pa = ka.ones.or(&ka.unknowns).lowest_bit().0;
    let pb = kb.ones.or(&kb.unknowns).lowest_bit().0;
    let (oa, ob_) = (&ka.ones.0, &kb.ones.0);
    let inst = vec![
        m.low.at(&[x, y, &exact]),
        m.low.at(&[oa, ob_, &exact]),
        m.tz.at(&[x, y, &pa, &pb]),
        m.tz.at(&[oa, ob_, &pa, &pb]),
    ];
    let r = Z3Word(x.bvmul(y));
    prove_abstract::<N>(
        &and(&[&a.kpre(), &b.kpre()]),
        &inst,
        &res.contains(&r).and(&res.is_well_formed()).0,
        &[
            kb_shown("a", ka),
            Shown::Value("x".into(), x.clone()),
            kb_shown("b", kb),
            Shown::Value("y".into(), y.clone()),
            kb_shown("abstract result", &res),
        ],
    )
}

/// A deliberately wrong knownbits product: it claims one more exactly known low bit than the
/// operands determine (the bit at the lowest unknown position).
fn mul_one_bit_too_exact<W: Word>(a: &KnownBits<W>, b: &KnownBits<W>) -> KnownBits<W> {
    let r = a.mul(b);
    let lowest = a.unknowns.or(&b.unknowns).lowest_bit();
    let ones = r.ones.or(&a.ones.mul(&b.ones).and(&lowest));
    KnownBits::new(
        ones.and(&lowest.not().and(&r.unknowns).not()),
        r.unknowns.and(&lowest.not()),
    )
}

/// The product proof by lemmas can fail: a product claiming one bit too many is rejected (and
/// the direct 8-bit proof confirms it is wrong), and a wrong lemma (trailing zeros
/// of `x*y` below `2*p*q`) is rejected in one of its cases.
#[test]
fn mutation_kb_mul_by_lemmas_rejects_wrong_claims() {
    prove_kb_mul_by_lemmas::<64>(KnownBits::mul).expect("the real mul is sound");
    let err = prove_kb_mul_by_lemmas::<64>(mul_one_bit_too_exact).expect_err("the broken mul must be rejected");
    println!("broken mul rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
    // and it is really wrong: the direct 8-bit proof finds a real counterexample
    let err = prove_kb_binop::<8>(mul_one_bit_too_exact, |x, y| x.bvmul(y)).expect_err("wrong at 8 bits");
    assert!(err.contains("counterexample"), "{err}");
    let [_, (_, var, domain, _, values)] = kb_mul_lemma_parts::<32>();
    let v = lvars("kbtz32", &["x", "y", "p", "q"], 32);
    let (x, y, p, q) = (&v[0], &v[1], &v[2], &v[3]);
    let (one, zero) = (BV::from_u64(1, 32), BV::from_u64(0, 32));
    let wrong = Bool::and(&[
        pow2_or_zero(q),
        x.bvand(p.bvsub(&one)).eq(&zero),
        y.bvand(q.bvsub(&one)).eq(&zero),
    ])
    .implies(x.bvmul(y).bvand(p.bvmul(q).bvshl(&one).bvsub(&one)).eq(&zero));
    let err = prove_lemma_by_values::<32>(&var, &domain, &wrong, &values).expect_err("a wrong lemma must be rejected");
    println!("wrong lemma rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
}

/// The knownbits product functions `mul`, `mul_ovf` by lemmas at 64, 32 and 16 bits (at 8 bits
/// they are also proven directly, in `mul_div_knownbits_64_32_16_8`).
#[test]
fn mul_knownbits_by_lemmas_64_32_16() {
    let mut obs = Vec::new();
    knownbits_mul_obligations::<64>(&mut obs);
    knownbits_mul_obligations::<32>(&mut obs);
    knownbits_mul_obligations::<16>(&mut obs);
    run_group("mul knownbits", obs);
}

/// The interval multiplication/division functions (the lemmas, then the functions; see the
/// module doc "Widths" for which function at which width).
#[test]
fn mul_div_interval_by_lemmas_64_32_16() {
    let mut obs = Vec::new();
    mul_lemma_obligations::<64>(&mut obs);
    mul_lemma_obligations::<32>(&mut obs);
    mul_lemma_obligations::<16>(&mut obs);
    interval_mul_obligations::<64>(&mut obs);
    interval_mul_obligations::<32>(&mut obs);
    interval_mul_obligations::<16>(&mut obs);
    interval_div_nonconst_obligations::<64>(&mut obs);
    interval_rem_obligations::<16>(&mut obs);
    backward_mul_ovf_const_reduction::<64>(&mut obs);
    // at 8 bits: the products by lemmas, the divisions and remainders directly (no lemmas)
    mul_lemma_obligations::<8>(&mut obs);
    interval_mul_obligations::<8>(&mut obs);
    let mut obs8 = Vec::new();
    interval_obligations::<8>(MulDiv, &mut obs8);
    obs8.retain(|o| !["Interval::mul", "Interval::mul_ovf", "Interval::uint_mul_high"].contains(&o.function.as_str()));
    obs.extend(obs8);
    run_group("mul/div interval", obs);
}

// ------------------------------------------------------------------ division by its definition

/// The division lemmas at width `N`. Bit-blasted dividers do not finish beyond about 12 bits
/// (not even `urem(x, y) <u y` at 32), so division is taken by its definition: SMT-LIB
/// defines `bvsdiv`/`bvsrem` as the quotient truncated toward zero and the remainder with the
/// sign of the dividend, i.e. [`DivLemmas::def`]. That lemma is checked against Z3's own
/// operators by bit-blasting at 8 bits (the exhaustive 8-bit checks cover the domain
/// functions there as well); at 16, 32 and 64 bits it is the definition, assumed. Everything
/// else is proven from instances of it, of the product lemmas ([`MulLemmas`]) and of ring
/// identities, with quotients, remainders and products abstracted ([`abstract_products`]):
/// the floor-division characterisation `p*d <= x < p*d + d` of `py_div`, its Galois
/// connection `z*d <= x => z <= p`, and from those the monotonicity the interval functions
/// rely on.
struct DivLemmas {
    /// `d != 0`, not `MIN / -1` `=>` `sext(x) == sprod(sdiv(x, d), d) + sext(srem(x, d))`,
    /// the remainder has the sign of `x` (or is 0) and `|srem(x, d)| < |d|` (compared at
    /// `2N` bits).
    def: Lemma,
    /// `sdiv(MIN, -1) == MIN`, `srem(MIN, -1) == 0`: the one quotient that does not fit.
    ovf: Lemma,
    /// `d != 0 => smod(x, d)` (Python `%`) is `srem(x, d)`, plus `d` when that is non-zero
    /// and its sign differs from `d`'s.
    smod: Lemma,
    /// Ring identities at `2N` bits: `1*g == g`, `0*g == 0`, `(-1)*g == -g`, `g*1 == g`,
    /// `g*(-1) == -g`.
    unit: Lemma,
    /// `d > 0 => p*d <= x < p*d + d` for `p = py_div(x, d)` (floor division).
    floor_pos: Lemma,
    /// `d < 0`, not `MIN / -1` `=> p*d >= x > p*d + d` for `p = py_div(x, d)`.
    floor_neg: Lemma,
    /// `d > 0`, `p*d <= x < p*d + d`, `z*d <= x => z <= p` (`p`, `z` variables).
    galois_pos: Lemma,
    /// `d < 0`, `p*d >= x > p*d + d`, `z*d >= x => z <= p`.
    galois_neg: Lemma,
    /// `d > 0`, `q = sdiv(x, d)`: `q*d <= x < q*d + d` for `x >= 0`, `q*d >= x > q*d - d`
    /// for `x < 0` (truncation toward zero).
    trunc_pos: Lemma,
    /// `d < 0`, not `MIN / -1`: `q*d <= x < q*d - d` for `x >= 0`, `q*d >= x > q*d + d` for
    /// `x < 0`.
    trunc_neg: Lemma,
    /// `d > 0`, `p*d >= x > p*d - d`, `z*d >= x => z >= p`.
    galois_ceil_pos: Lemma,
    /// `d < 0`, `p*d <= x < p*d - d`, `z*d <= x => z >= p`.
    galois_ceil_neg: Lemma,
    /// `d > 0`, `x <= y => sdiv(x, d) <= sdiv(y, d)`.
    mono: Lemma,
    /// `d < -1`, `x <= y => sdiv(x, d) >= sdiv(y, d)`.
    anti: Lemma,
    /// `d > 0`, `x <= y => py_div(x, d) <= py_div(y, d)`.
    pymono: Lemma,
    /// `d < -1`, `x <= y => py_div(x, d) >= py_div(y, d)`.
    pyanti: Lemma,
}

fn py_div_bv<const N: u32>(x: &BV, d: &BV) -> BV {
    optimizer::domain::knownbits::py_div(&Z3Word::<N>(x.clone()), &Z3Word::<N>(d.clone())).0
}

fn div_lemmas<const N: u32>() -> DivLemmas {
    let w = 2 * N;
    let c = |v: i64| BV::from_i64(v, N);
    let (z, m1) = (c(0), c(-1));
    let min = BV::from_u64(1, N).bvshl(BV::from_u64(u64::from(N - 1), N)).simplify();
    let not_ovf = |x: &BV, d: &BV| Bool::and(&[x.eq(&min), d.eq(&m1)]).not();
    let def = {
        let v = lvars(&format!("divdef{N}"), &["x", "d"], N);
        let (x, d) = (&v[0], &v[1]);
        let (q, r) = (x.bvsdiv(d), x.bvsrem(d));
        let (sr, sd) = (r.sign_ext(N), d.sign_ext(N));
        let z2 = BV::from_u64(0, w);
        let body = Bool::and(&[d.eq(&z).not(), not_ovf(x, d)]).implies(Bool::and(&[
            x.sign_ext(N).eq(sprod(&q, d).bvadd(&sr)),
            x.bvsge(&z).implies(r.bvsge(&z)),
            x.bvslt(&z).implies(r.bvsle(&z)),
            sd.bvsgt(&z2)
                .implies(Bool::and(&[sd.bvneg().bvslt(&sr), sr.bvslt(&sd)])),
            sd.bvslt(&z2).implies(Bool::and(&[sd.bvslt(&sr), sr.bvslt(sd.bvneg())])),
        ]));
        lemma("division definition", v, body)
    };
    let ovf = lemma(
        "MIN / -1",
        vec![],
        Bool::and(&[min.bvsdiv(&m1).eq(&min), min.bvsrem(&m1).eq(&z)]),
    );
    let smod = {
        let v = lvars(&format!("divsmod{N}"), &["x", "d"], N);
        let (x, d) = (&v[0], &v[1]);
        let r = x.bvsrem(d);
        let adjust = Bool::and(&[r.eq(&z).not(), r.bvslt(&z).eq(d.bvslt(&z)).not()]);
        let body = d.eq(&z).not().implies(x.bvsmod(d).eq(adjust.ite(&r.bvadd(d), &r)));
        lemma("smod from srem", v, body)
    };
    let unit = {
        let v = lvars(&format!("divunit{N}"), &["g"], w);
        let g = &v[0];
        let k = |x: i64| BV::from_i64(x, w);
        let body = Bool::and(&[
            k(1).bvmul(g).eq(g),
            k(0).bvmul(g).eq(k(0)),
            k(-1).bvmul(g).eq(g.bvneg()),
            g.bvmul(k(1)).eq(g),
            g.bvmul(k(-1)).eq(g.bvneg()),
        ]);
        lemma("products with 0, 1, -1", v, body)
    };
    // floor characterisations of p = py_div(x, d)
    let floor = |name: &str, pos: bool| {
        let v = lvars(&format!("{name}{N}"), &["x", "d"], N);
        let (x, d) = (&v[0], &v[1]);
        let p = py_div_bv::<N>(x, d);
        let (pd, sx, sd) = (sprod(&p, d), x.sign_ext(N), d.sign_ext(N));
        let body = if pos {
            d.bvsgt(&z)
                .implies(Bool::and(&[pd.bvsle(&sx), sx.bvslt(pd.bvadd(&sd))]))
        } else {
            Bool::and(&[d.bvslt(&z), not_ovf(x, d)]).implies(Bool::and(&[pd.bvsge(&sx), sx.bvsgt(pd.bvadd(&sd))]))
        };
        lemma(name, v, body)
    };
    let galois = |name: &str, pos: bool| {
        let v = lvars(&format!("{name}{N}"), &["p", "x", "d", "z"], N);
        let (p, x, d, zz) = (&v[0], &v[1], &v[2], &v[3]);
        let (pd, zd, sx, sd) = (sprod(p, d), sprod(zz, d), x.sign_ext(N), d.sign_ext(N));
        let body = if pos {
            Bool::and(&[d.bvsgt(&z), pd.bvsle(&sx), sx.bvslt(pd.bvadd(&sd)), zd.bvsle(&sx)]).implies(zz.bvsle(p))
        } else {
            Bool::and(&[d.bvslt(&z), pd.bvsge(&sx), sx.bvsgt(pd.bvadd(&sd)), zd.bvsge(&sx)]).implies(zz.bvsle(p))
        };
        lemma(name, v, body)
    };
    let trunc = |name: &str, pos: bool| {
        let v = lvars(&format!("{name}{N}"), &["x", "d"], N);
        let (x, d) = (&v[0], &v[1]);
        let q = x.bvsdiv(d);
        let (qd, sx, sd) = (sprod(&q, d), x.sign_ext(N), d.sign_ext(N));
        // the remainder's side of the product: toward zero from x
        let (nonneg, neg) = if pos {
            (
                Bool::and(&[qd.bvsle(&sx), sx.bvslt(qd.bvadd(&sd))]),
                Bool::and(&[qd.bvsge(&sx), sx.bvsgt(qd.bvsub(&sd))]),
            )
        } else {
            (
                Bool::and(&[qd.bvsle(&sx), sx.bvslt(qd.bvsub(&sd))]),
                Bool::and(&[qd.bvsge(&sx), sx.bvsgt(qd.bvadd(&sd))]),
            )
        };
        let cond = if pos {
            d.bvsgt(&z)
        } else {
            Bool::and(&[d.bvslt(&z), not_ovf(x, d)])
        };
        let body = cond.implies(Bool::and(&[x.bvsge(&z).implies(&nonneg), x.bvslt(&z).implies(&neg)]));
        lemma(name, v, body)
    };
    let galois_ceil = |name: &str, pos: bool| {
        let v = lvars(&format!("{name}{N}"), &["p", "x", "d", "z"], N);
        let (p, x, d, zz) = (&v[0], &v[1], &v[2], &v[3]);
        let (pd, zd, sx, sd) = (sprod(p, d), sprod(zz, d), x.sign_ext(N), d.sign_ext(N));
        let body = if pos {
            Bool::and(&[d.bvsgt(&z), pd.bvsge(&sx), sx.bvsgt(pd.bvsub(&sd)), zd.bvsge(&sx)]).implies(zz.bvsge(p))
        } else {
            Bool::and(&[d.bvslt(&z), pd.bvsle(&sx), sx.bvslt(pd.bvsub(&sd)), zd.bvsle(&sx)]).implies(zz.bvsge(p))
        };
        lemma(name, v, body)
    };
    let order = |name: &str, f: fn(&BV, &BV) -> BV, pos: bool| {
        let v = lvars(&format!("{name}{N}"), &["x", "y", "d"], N);
        let (x, y, d) = (&v[0], &v[1], &v[2]);
        let (qx, qy) = (f(x, d), f(y, d));
        let body = if pos {
            Bool::and(&[d.bvsgt(&z), x.bvsle(y)]).implies(qx.bvsle(&qy))
        } else {
            Bool::and(&[d.bvslt(&m1), x.bvsle(y)]).implies(qx.bvsge(&qy))
        };
        lemma(name, v, body)
    };
    DivLemmas {
        def,
        ovf,
        smod,
        unit,
        floor_pos: floor("floor division, d > 0", true),
        floor_neg: floor("floor division, d < 0", false),
        galois_pos: galois("floor division is the largest, d > 0", true),
        galois_neg: galois("floor division is the largest, d < 0", false),
        trunc_pos: trunc("truncated division, d > 0", true),
        trunc_neg: trunc("truncated division, d < 0", false),
        galois_ceil_pos: galois_ceil("truncated division of x < 0 is the smallest, d > 0", true),
        galois_ceil_neg: galois_ceil("truncated division of x >= 0 is the smallest, d < 0", false),
        mono: order("sdiv monotone, d > 0", |x, d| x.bvsdiv(d), true),
        anti: order("sdiv antitone, d < -1", |x, d| x.bvsdiv(d), false),
        pymono: order("py_div monotone, d > 0", py_div_bv::<N>, true),
        pyanti: order("py_div antitone, d < -1", py_div_bv::<N>, false),
    }
}

impl DivLemmas {
    /// Facts about the products of `q`, `q + 1`, `q - 1` with `d` (`N`-bit terms).
    fn prod_facts(&self, m: &MulLemmas, q: &BV, d: &BV) -> Vec<Bool> {
        let n = q.get_size();
        let (one, m1) = (BV::from_i64(1, n), BV::from_i64(-1, n));
        let (qp, qm) = (q.bvadd(&one), q.bvsub(&one));
        let sd = d.sign_ext(n);
        vec![
            m.mono2.at(&[q, &one, d]),
            m.mono2.at(&[q, d, &m1]),
            self.unit.at(&[&q.sign_ext(n)]),
            self.unit.at(&[&sd]),
            m.bound.at(&[q, d]),
            m.bound.at(&[&qp, d]),
            m.bound.at(&[&qm, d]),
            m.dist1.at(&[&qp.sign_ext(n), &q.sign_ext(n), &sd]),
            m.dist1.at(&[&q.sign_ext(n), &qm.sign_ext(n), &sd]),
        ]
    }

    /// Instances proving [`DivLemmas::floor_pos`]/[`DivLemmas::floor_neg`] for `(x, d)`.
    fn floor_proof(&self, m: &MulLemmas, x: &BV, d: &BV) -> Vec<Bool> {
        let mut out = vec![self.def.at(&[x, d])];
        out.extend(self.prod_facts(m, &x.bvsdiv(d), d));
        out
    }

    /// Instances proving the Galois lemmas for `(p, x, d, z)`: `z` beyond `p` by one step is
    /// `p + 1` (`up`) or `p - 1`, whose product with `d` is `p*d ± d`.
    fn galois_proof(&self, m: &MulLemmas, p: &BV, d: &BV, zz: &BV, up: bool) -> Vec<Bool> {
        let n = p.get_size();
        let (one, m1) = (BV::from_i64(1, n), BV::from_i64(-1, n));
        let pp = if up { p.bvadd(&one) } else { p.bvsub(&one) };
        let sd = d.sign_ext(n);
        let (far, near) = if up { (&pp, p) } else { (p, &pp) };
        vec![
            if up {
                m.mono1.at(&[&pp, zz, d])
            } else {
                m.mono1.at(&[zz, &pp, d])
            },
            m.bound.at(&[p, d]),
            m.bound.at(&[&pp, d]),
            self.unit.at(&[&sd]),
            self.unit.at(&[&zz.sign_ext(n)]),
            m.dist1.at(&[&far.sign_ext(n), &near.sign_ext(n), &sd]),
            m.mono2.at(&[zz, &one, d]),
            m.mono2.at(&[zz, d, &m1]),
        ]
    }

    /// Instances proving [`DivLemmas::mono`] (`pos`) or [`DivLemmas::anti`] for `(x, y, d)`:
    /// the truncation lemmas for both quotients and, by the signs of `x` and `y`, the Galois
    /// lemma of the side toward zero (both `>= 0`: floor side, both `< 0`: ceiling side) or
    /// the sign of each quotient (a product with a quotient of the wrong sign overshoots).
    fn order_proof(&self, m: &MulLemmas, x: &BV, y: &BV, d: &BV, pos: bool) -> Vec<Bool> {
        let n = x.get_size();
        let (one, m1) = (BV::from_i64(1, n), BV::from_i64(-1, n));
        let (qx, qy) = (x.bvsdiv(d), y.bvsdiv(d));
        let sd = d.sign_ext(n);
        if pos {
            vec![
                self.trunc_pos.at(&[x, d]),
                self.trunc_pos.at(&[y, d]),
                self.galois_pos.at(&[&qy, y, d, &qx]),
                self.galois_ceil_pos.at(&[&qx, x, d, &qy]),
                m.mono1.at(&[&one, &qx, d]),
                m.mono1.at(&[&qy, &m1, d]),
                self.unit.at(&[&sd]),
            ]
        } else {
            vec![
                self.trunc_neg.at(&[x, d]),
                self.trunc_neg.at(&[y, d]),
                self.galois_ceil_neg.at(&[&qy, y, d, &qx]),
                self.galois_neg.at(&[&qx, x, d, &qy]),
                m.mono1.at(&[&one, &qx, d]),
                m.mono1.at(&[&qy, &m1, d]),
                m.mono1.at(&[&qx, &m1, d]),
                m.mono1.at(&[&one, &qy, d]),
                self.unit.at(&[&sd]),
            ]
        }
    }

    /// Instances proving [`DivLemmas::pymono`] (`pos`) or [`DivLemmas::pyanti`] for
    /// `(x, y, d)`: `py_div(x)*d <= x <= y` and the Galois lemma for `y` (for `d < 0`:
    /// `py_div(y)*d >= y >= x` and the Galois lemma for `x`).
    fn py_order_proof<const N: u32>(&self, x: &BV, y: &BV, d: &BV, pos: bool) -> Vec<Bool> {
        let (px, py) = (py_div_bv::<N>(x, d), py_div_bv::<N>(y, d));
        if pos {
            vec![
                self.floor_pos.at(&[x, d]),
                self.floor_pos.at(&[y, d]),
                self.galois_pos.at(&[&py, y, d, &px]),
            ]
        } else {
            vec![
                self.floor_neg.at(&[x, d]),
                self.floor_neg.at(&[y, d]),
                self.galois_neg.at(&[&px, x, d, &py]),
            ]
        }
    }
}

impl DivLemmas {
    /// Instances proving the remainder bounds ([`RemLemmas`]) for `(x, y)`: the definition
    /// (sign and size of the remainder), `MIN / -1`, `smod` from `srem`, and the products of
    /// the quotient that show `|srem(x, y)| <= |x|`.
    fn rem_proof(&self, m: &MulLemmas, x: &BV, y: &BV) -> Vec<Bool> {
        let n = x.get_size();
        let (z, one, m1) = (BV::from_i64(0, n), BV::from_i64(1, n), BV::from_i64(-1, n));
        let q = x.bvsdiv(y);
        let mut out = vec![self.def.at(&[x, y]), self.ovf.at(&[]), self.smod.at(&[x, y])];
        out.extend(self.prod_facts(m, &q, y));
        for (a, b) in [(&q, &m1), (&one, &q), (&z, &q), (&q, &z)] {
            out.push(m.mono1.at(&[a, b, y]));
        }
        out
    }
}

/// The interval division functions at width `N` from the division lemmas: `floordiv` and
/// `pydiv` (monotone for a constant divisor `> 0`, antitone below `-1`, negation for `-1`)
/// and `backward_mul_ovf_const` (the Galois connection of floor division).
fn interval_div_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    let fns: Vec<(&'static str, IBin<N>)> = vec![("floordiv", Interval::floordiv), ("pydiv", Interval::pydiv)];
    for (name, f) in fns {
        ob(
            out,
            format!("Interval::{name}"),
            "sound (from the division lemmas)",
            N,
            move || prove_interval_div::<N>(name, f),
        );
    }
    ob(
        out,
        "Interval::backward_mul_ovf_const".into(),
        "keeps members (from the division lemmas)",
        N,
        || prove_backward_mul_ovf_const::<N>(Interval::backward_mul_ovf_const),
    );
}

/// Soundness of the interval division function `f` for the op `name` (`floordiv`, `pydiv`).
fn prove_interval_div<const N: u32>(name: &str, f: IBin<N>) -> Result<(), String> {
    let row = binops::<N>()
        .into_iter()
        .find(|r| r.name == name)
        .expect("an op of the table");
    let dl = div_lemmas::<N>();
    let (a, b) = (sym::<N>("a"), sym::<N>("b"));
    let (x, y) = (&a.x.0, &b.x.0);
    let (lo, hi, d) = (&a.ib.range.lower.0, &a.ib.range.upper.0, &b.ib.range.lower.0);
    let (r, valid) = (row.sem)(x, y);
    let res = f(&a.ib.range, &b.ib.range);
    let (up, down) = if name == "floordiv" {
        (&dl.mono, &dl.anti)
    } else {
        (&dl.pymono, &dl.pyanti)
    };
    let q = x.bvsdiv(d);
    let inst = vec![
        up.at(&[lo, x, d]),
        up.at(&[x, hi, d]),
        down.at(&[lo, x, d]),
        down.at(&[x, hi, d]),
        // d == -1: the quotient is -x (the definition, and MIN / -1)
        dl.def.at(&[x, d]),
        dl.ovf.at(&[]),
        dl.unit.at(&[&q.sign_ext(N)]),
    ];
    prove_abstract::<N>(
        &and(&[&a.ipre(), &b.ipre(), &valid]),
        &inst,
        &res.contains(&Z3Word(r)).0,
        &[
            iv_shown("a", &a.ib.range),
            Shown::Value("x".into(), x.clone()),
            iv_shown("b", &b.ib.range),
            Shown::Value("y".into(), y.clone()),
            iv_shown("abstract result", &res),
        ],
    )
}

type BackwardFn<const N: u32> = fn(&IV<N>, &IV<N>, &IV<N>) -> IV<N>;

/// `f` (`backward_mul_ovf_const`) keeps every `x` with `x * y == r` (no overflow) for `r` in
/// `res`.
fn prove_backward_mul_ovf_const<const N: u32>(f: BackwardFn<N>) -> Result<(), String> {
    let (dl, ml) = (div_lemmas::<N>(), mul_lemmas::<N>());
    let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
    let (x, y) = (&a.x.0, &b.x.0);
    let na = f(&a.ib.range, &b.ib.range, &r.ib.range);
    let pre = and(&[&a.ipre(), &b.ipre(), &r.ipre(), &r.x.0.eq(x.bvmul(y)), &mul_fits(x, y)]);
    let (l, u, d) = (&r.ib.range.lower.0, &r.ib.range.upper.0, &b.ib.range.lower.0);
    let one = BV::from_i64(1, N);
    let nl = l.bvneg();
    let (pu, pnl, pl) = (py_div_bv::<N>(u, d), py_div_bv::<N>(&nl, d), py_div_bv::<N>(l, d));
    let plm = pl.bvsub(&one);
    let sd = d.sign_ext(N);
    let inst = vec![
        ml.low.at(&[x, d]),
        // x <= py_div(u, d)
        dl.floor_pos.at(&[u, d]),
        dl.galois_pos.at(&[&pu, u, d, x]),
        // x >= -py_div(-l, d), l != MIN: -x <= py_div(-l, d)
        dl.floor_pos.at(&[&nl, d]),
        dl.galois_pos.at(&[&pnl, &nl, d, &x.bvneg()]),
        ml.neg1.at(&[&x.sign_ext(N), &sd]),
        ml.mono2.at(&[x, &one, d]),
        dl.unit.at(&[&x.sign_ext(N)]),
        dl.unit.at(&[&sd]),
        // l == MIN: x >= py_div(MIN, d), else x*d <= (p-1)*d = p*d - d < MIN
        dl.floor_pos.at(&[l, d]),
        ml.mono1.at(&[x, &plm, d]),
        ml.dist1.at(&[&pl.sign_ext(N), &plm.sign_ext(N), &sd]),
        ml.bound.at(&[&plm, d]),
        ml.bound.at(&[x, d]),
    ];
    prove_abstract::<N>(
        &pre,
        &inst,
        &na.contains(&a.x).0,
        &[
            iv_shown("a", &a.ib.range),
            iv_shown("b", &b.ib.range),
            iv_shown("res", &r.ib.range),
            Shown::Value("x".into(), x.clone()),
            Shown::Value("y".into(), y.clone()),
        ],
    )
}

/// A deliberately wrong `floordiv`: one less at the top.
fn floordiv_one_too_low<W: Word>(a: &Interval<W>, b: &Interval<W>) -> Interval<W> {
    let r = a.floordiv(b);
    Interval::new(r.lower.clone(), r.upper.sub(&W::one()))
}

/// A deliberately wrong `backward_mul_ovf_const`: one less at the top.
fn backward_one_too_low<W: Word>(a: &Interval<W>, b: &Interval<W>, res: &Interval<W>) -> Interval<W> {
    let r = Interval::backward_mul_ovf_const(a, b, res);
    Interval::new(r.lower.clone(), r.upper.sub(&W::one()))
}

/// The division proofs can fail: with the lemma instances in place (the definition assumed at
/// 64 bits), a `floordiv` or `backward_mul_ovf_const` one too low at the top is rejected, and
/// so is "`sdiv` is monotone" claimed for a negative divisor.
#[test]
fn mutation_division_proofs_reject_wrong_claims() {
    prove_interval_div::<64>("floordiv", Interval::floordiv).expect("the real floordiv is sound");
    let err = prove_interval_div::<64>("floordiv", floordiv_one_too_low).expect_err("broken floordiv");
    println!("broken floordiv rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
    prove_backward_mul_ovf_const::<64>(Interval::backward_mul_ovf_const).expect("the real one is sound");
    let err = prove_backward_mul_ovf_const::<64>(backward_one_too_low).expect_err("broken backward");
    println!("broken backward_mul_ovf_const rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
    let (dl, ml) = (div_lemmas::<16>(), mul_lemmas::<16>());
    let v = &dl.mono.vars;
    let (x, y, d) = (&v[0], &v[1], &v[2]);
    let z = BV::from_u64(0, 16);
    let wrong = lemma(
        "sdiv monotone, d < 0 (wrong)",
        v.clone(),
        Bool::and(&[d.bvslt(&z), x.bvsle(y)]).implies(x.bvsdiv(d).bvsle(y.bvsdiv(d))),
    );
    let err = prove_lemma::<16>(&wrong, By::Instances(dl.order_proof(&ml, x, y, d, true))).expect_err("wrong lemma");
    assert!(err.contains("counterexample"), "{err}");
}

/// The division lemma obligations at width `N`, in proof order (the definition itself is
/// checked against Z3's operators at 8 bits only; see [`DivLemmas`]).
fn div_lemma_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    let l = div_lemmas::<N>();
    let list: [(&Lemma, &'static str); 15] = [
        (&l.ovf, "valid (bit-blasted, constants)"),
        (&l.smod, "valid (bit-blasted)"),
        (&l.unit, "valid (ring identities)"),
        (&l.floor_pos, "valid (from the definition)"),
        (&l.floor_neg, "valid (from the definition)"),
        (&l.galois_pos, "valid (from product lemmas)"),
        (&l.galois_neg, "valid (from product lemmas)"),
        (&l.mono, "valid (from the truncation lemmas)"),
        (&l.anti, "valid (from the truncation lemmas)"),
        (&l.pymono, "valid (from the floor lemmas)"),
        (&l.pyanti, "valid (from the floor lemmas)"),
        (&l.trunc_pos, "valid (from the definition)"),
        (&l.trunc_neg, "valid (from the definition)"),
        (&l.galois_ceil_pos, "valid (from product lemmas)"),
        (&l.galois_ceil_neg, "valid (from product lemmas)"),
    ];
    for (i, (lemma, property)) in list.into_iter().enumerate() {
        ob(out, format!("lemma {}", lemma.name), property, N, move || {
            prove_div_lemma::<N>(i)
        });
    }
    if N == 8 {
        ob(
            out,
            format!("lemma {}", l.def.name),
            "Z3's bvsdiv/bvsrem meet it (bit-blasted)",
            N,
            || {
                let l = div_lemmas::<N>();
                let d = &l.def.vars[1];
                prove_cases::<N>(&t(), &[d.bvslt(BV::from_u64(0, N))], &l.def.body, &[])
            },
        );
    }
}

/// Proves lemma `i` of the list in [`div_lemma_obligations`].
fn prove_div_lemma<const N: u32>(i: usize) -> Result<(), String> {
    let (l, m) = (div_lemmas::<N>(), mul_lemmas::<N>());
    let v2 = |lm: &Lemma| (lm.vars[0].clone(), lm.vars[1].clone());
    match i {
        0 => prove_lemma::<N>(&l.ovf, By::BitBlast),
        1 => {
            // one query per sign of the divisor
            let d = &l.smod.vars[1];
            prove_cases::<N>(&t(), &[d.bvslt(BV::from_u64(0, N))], &l.smod.body, &[])
        }
        2 => prove_lemma::<N>(&l.unit, By::Ring),
        3 | 4 => {
            let lm = if i == 3 { &l.floor_pos } else { &l.floor_neg };
            let (x, d) = v2(lm);
            prove_lemma::<N>(lm, By::Instances(l.floor_proof(&m, &x, &d)))
        }
        5 | 6 => {
            let lm = if i == 5 { &l.galois_pos } else { &l.galois_neg };
            let v = &lm.vars;
            prove_lemma::<N>(lm, By::Instances(l.galois_proof(&m, &v[0], &v[2], &v[3], true)))
        }
        7 | 8 => {
            let lm = if i == 7 { &l.mono } else { &l.anti };
            let v = &lm.vars;
            prove_lemma::<N>(lm, By::Instances(l.order_proof(&m, &v[0], &v[1], &v[2], i == 7)))
        }
        9 | 10 => {
            let lm = if i == 9 { &l.pymono } else { &l.pyanti };
            let v = &lm.vars;
            prove_lemma::<N>(lm, By::Instances(l.py_order_proof::<N>(&v[0], &v[1], &v[2], i == 9)))
        }
        11 | 12 => {
            let lm = if i == 11 { &l.trunc_pos } else { &l.trunc_neg };
            let (x, d) = v2(lm);
            prove_lemma::<N>(lm, By::Instances(vec![l.def.at(&[&x, &d])]))
        }
        13 | 14 => {
            let lm = if i == 13 {
                &l.galois_ceil_pos
            } else {
                &l.galois_ceil_neg
            };
            let v = &lm.vars;
            prove_lemma::<N>(lm, By::Instances(l.galois_proof(&m, &v[0], &v[2], &v[3], false)))
        }
        _ => unreachable!("division lemma {i}"),
    }
}

/// The division lemmas at 64, 32, 16 and 8 bits (the definition checked at 8).
#[test]
fn div_lemmas_64_32_16_8() {
    let mut obs = Vec::new();
    div_lemma_obligations::<64>(&mut obs);
    div_lemma_obligations::<32>(&mut obs);
    div_lemma_obligations::<16>(&mut obs);
    div_lemma_obligations::<8>(&mut obs);
    interval_div_obligations::<64>(&mut obs);
    interval_div_obligations::<32>(&mut obs);
    interval_div_obligations::<16>(&mut obs);
    interval_rem_obligations::<64>(&mut obs);
    interval_rem_obligations::<32>(&mut obs);
    run_group("div lemmas", obs);
}

/// The remainder lemmas at width `N`, proven by bit-blasting with a case split on the signs.
struct RemLemmas {
    /// `y != 0 =>` `srem(x, y)` has the sign of `x` (or is 0), `|srem| <= |x|`, `|srem| < |y|`.
    rem: Lemma,
    /// `y != 0 =>` `smod(x, y)` (Python `%`) has the sign of `y` (or is 0), `|smod| < |y|`.
    smod: Lemma,
}

fn rem_lemmas<const N: u32>() -> RemLemmas {
    let z = BV::from_u64(0, N);
    let one = BV::from_u64(1, N);
    let v = lvars(&format!("rem{N}"), &["x", "y"], N);
    let (x, y) = (&v[0], &v[1]);
    let r = x.bvsrem(y);
    let rem = y.eq(&z).not().implies(Bool::and(&[
        x.bvsge(&z).implies(Bool::and(&[z.bvsle(&r), r.bvsle(x)])),
        x.bvslt(&z).implies(Bool::and(&[x.bvsle(&r), r.bvsle(&z)])),
        y.bvsgt(&z)
            .implies(Bool::and(&[y.bvneg().bvslt(&r), r.bvsle(y.bvsub(&one))])),
        y.bvslt(&z)
            .implies(Bool::and(&[y.bvslt(&r), r.bvsle(y.bvadd(&one).bvneg())])),
    ]));
    let w = lvars(&format!("smod{N}"), &["x", "y"], N);
    let (x, y) = (&w[0], &w[1]);
    let m = x.bvsmod(y);
    let smod = y.eq(&z).not().implies(Bool::and(&[
        y.bvsgt(&z).implies(Bool::and(&[z.bvsle(&m), m.bvsle(y.bvsub(&one))])),
        y.bvslt(&z).implies(Bool::and(&[y.bvadd(&one).bvsle(&m), m.bvsle(&z)])),
    ]));
    RemLemmas {
        rem: lemma("rem", v, rem),
        smod: lemma("smod", w, smod),
    }
}

/// `Interval::modulo` and `Interval::pymod` at width `N` from the remainder lemmas.
fn interval_rem_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    type Pick = fn(&RemLemmas) -> &Lemma;
    let lemmas: Vec<(&'static str, Pick)> = vec![
        ("remainder bounds (srem)", |m| &m.rem),
        ("remainder bounds (smod)", |m| &m.smod),
    ];
    for (name, pick) in lemmas {
        ob(
            out,
            format!("lemma {name}"),
            if N <= 16 {
                "valid (bit-blasted, case split on signs)"
            } else {
                "valid (from the division definition)"
            },
            N,
            move || {
                let m = rem_lemmas::<N>();
                let l = pick(&m);
                let (x, y) = (&l.vars[0], &l.vars[1]);
                let z = BV::from_u64(0, N);
                if N <= 16 {
                    prove_cases::<N>(&t(), &[x.bvslt(&z), y.bvslt(&z)], &l.body, &[])
                } else {
                    // beyond 16 bits from the division definition (see `DivLemmas`)
                    let (dl, ml) = (div_lemmas::<N>(), mul_lemmas::<N>());
                    prove_lemma::<N>(l, By::Instances(dl.rem_proof(&ml, x, y)))
                }
            },
        );
    }
    type Rem<const N: u32> = fn(&IV<N>, &IV<N>) -> IV<N>;
    type RemCase<const N: u32> = (&'static str, Rem<N>, fn(&BV, &BV) -> BV, Pick);
    let fns: Vec<RemCase<N>> = vec![
        ("mod", Interval::modulo, |x, y| x.bvsrem(y), |m| &m.rem),
        ("pymod", Interval::pymod, |x, y| x.bvsmod(y), |m| &m.smod),
    ];
    for (name, f, sem, pick) in fns {
        ob(out, format!("Interval::{name}"), "sound (by lemmas)", N, move || {
            let m = rem_lemmas::<N>();
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let r = sem(&a.x.0, &b.x.0);
            let res = f(&a.ib.range, &b.ib.range);
            let pre = and(&[&a.ipre(), &b.ipre(), &nonzero(&b.x.0)]);
            prove_abstract::<N>(
                &pre,
                &[pick(&m).at(&[&a.x.0, &b.x.0])],
                &res.contains(&Z3Word(r)).0,
                &[
                    iv_shown("a", &a.ib.range),
                    Shown::Value("x".into(), a.x.0.clone()),
                    iv_shown("b", &b.ib.range),
                    Shown::Value("y".into(), b.x.0.clone()),
                    iv_shown("abstract result", &res),
                ],
            )
        });
    }
}

/// The bounded knownbits shifts `IntBound` calls, at width `N`, by a case split on the concrete
/// shift amount: one query per amount `0..N` (every valid amount is one of them).
fn knownbits_shift_split_obligations<const N: u32>(out: &mut Vec<Obligation>) {
    type Shift<const N: u32> = fn(&KB<N>, &KB<N>, &Z<N>, &Z<N>) -> KB<N>;
    type Case<const N: u32> = (&'static str, Shift<N>, fn(&BV, &BV) -> BV);
    let shifts: Vec<Case<N>> = vec![
        ("lshift_bounded", KnownBits::lshift_bounded, |x, y| x.bvshl(y)),
        ("rshift_bounded", KnownBits::rshift_bounded, |x, y| x.bvashr(y)),
        ("uint_rshift_bounded", KnownBits::uint_rshift_bounded, |x, y| {
            x.bvlshr(y)
        }),
    ];
    for (name, f, sem) in shifts {
        ob(
            out,
            format!("KnownBits::{name}"),
            "sound, well-formed (split on the amount)",
            N,
            move || {
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let (lo, hi) = (&b.ib.range.lower, &b.ib.range.upper);
                let r = Z3Word(sem(&a.x.0, &b.x.0));
                let res = f(&a.ib.bits, &b.ib.bits, lo, hi);
                let pre = and(&[&a.kpre(), &b.kpre(), &b.ipre(), &shift_ok(&b.x.0)]);
                let goal = res.contains(&r).0;
                let shown = [
                    kb_shown("a", &a.ib.bits),
                    kb_shown("amount", &b.ib.bits),
                    iv_shown("amount range", &b.ib.range),
                    kb_shown("result", &res),
                ];
                // well-formedness does not depend on the amount: one query
                prove_split_with::<N>(qfbv_solver, &pre, &res.is_well_formed().0, &shown)?;
                // the cases `amount == i` for i in 0..N cover every valid amount (Z3's `qfbv`
                // tactic is about 3x faster than the default pipeline on these)
                for i in 0..N {
                    let case = b.x.0.eq(BV::from_u64(u64::from(i), N));
                    prove_split_with::<N>(qfbv_solver, &and(&[&pre, &case]), &goal, &shown)?;
                }
                // and nothing else is valid
                prove::<N>(
                    &shift_ok(&b.x.0),
                    &Bool::or(
                        &(0..N)
                            .map(|i| b.x.0.eq(BV::from_u64(u64::from(i), N)))
                            .collect::<Vec<_>>(),
                    ),
                    &[],
                )
            },
        );
    }
}

/// The bounded knownbits shifts at 32 bits, one query per shift amount (the 32-way join over
/// a symbolic amount does not finish in one query at 32 bits). One test per shift, so that the
/// test harness runs them in parallel with the other groups.
fn knownbits_shift_32(name: &str) {
    let mut obs = Vec::new();
    knownbits_shift_split_obligations::<32>(&mut obs);
    obs.retain(|o| o.function == format!("KnownBits::{name}"));
    assert_eq!(obs.len(), 1, "{name}");
    run_group(&format!("knownbits shifts 32 ({name})"), obs);
}

#[test]
fn knownbits_lshift_32_split_on_amount() {
    knownbits_shift_32("lshift_bounded");
}

#[test]
fn knownbits_rshift_32_split_on_amount() {
    knownbits_shift_32("rshift_bounded");
}

#[test]
fn knownbits_uint_rshift_32_split_on_amount() {
    knownbits_shift_32("uint_rshift_bounded");
}

// ------------------------------------------------------------------ mutation check (lemma proofs)

/// A deliberately wrong `mul_ovf`: it forgets the corner `upper(a) * lower(b)`.
fn mul_ovf_missing_corner<W: Word>(a: &Interval<W>, b: &Interval<W>) -> (Interval<W>, W::Bool) {
    let p = [a.lower.mul(&b.lower), a.lower.mul(&b.upper), a.upper.mul(&b.upper)];
    let ok = a
        .lower
        .smul_overflows(&b.lower)
        .or(&a.lower.smul_overflows(&b.upper))
        .or(&a.upper.smul_overflows(&b.upper))
        .not();
    let r = Interval::new(p[0].smin(&p[1]).smin(&p[2]), p[0].smax(&p[1]).smax(&p[2]));
    (Interval::select(&ok, &r, &Interval::unbounded()), ok)
}

/// The lemma-instantiation harness can fail: the broken `mul_ovf` is rejected with a
/// counterexample (with the same lemma instances that prove the real one).
#[test]
fn mutation_missing_corner_is_rejected_by_lemma_proof() {
    let m = mul_lemmas::<16>();
    let (a, b) = (sym::<16>("a"), sym::<16>("b"));
    let (la, ua, x) = (&a.ib.range.lower.0, &a.ib.range.upper.0, &a.x.0);
    let (lb, ub, y) = (&b.ib.range.lower.0, &b.ib.range.upper.0, &b.x.0);
    let inst = vec![
        m.mono1.at(&[la, x, y]),
        m.mono1.at(&[x, ua, y]),
        m.mono2.at(&[la, lb, y]),
        m.mono2.at(&[la, y, ub]),
        m.mono2.at(&[ua, lb, y]),
        m.mono2.at(&[ua, y, ub]),
        m.low.at(&[la, lb]),
        m.low.at(&[la, ub]),
        m.low.at(&[ua, lb]),
        m.low.at(&[ua, ub]),
        m.low.at(&[x, y]),
    ];
    let run = |f: fn(&IV<16>, &IV<16>) -> (IV<16>, Z3Bool)| {
        let (res, ok) = f(&a.ib.range, &b.ib.range);
        let fits = mul_fits(x, y);
        let goal = and(&[
            &fits.implies(&res.contains(&Z3Word(x.bvmul(y))).0),
            &ok.0.implies(&fits),
        ]);
        prove_abstract::<16>(
            &and(&[&a.ipre(), &b.ipre()]),
            &inst,
            &goal,
            &[
                iv_shown("a", &a.ib.range),
                iv_shown("b", &b.ib.range),
                iv_shown("result", &res),
            ],
        )
    };
    run(Interval::mul_ovf).expect("the real mul_ovf is proven");
    let err = run(mul_ovf_missing_corner).expect_err("the broken mul_ovf must be rejected");
    println!("broken mul_ovf rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
}
