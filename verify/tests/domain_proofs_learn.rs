//! Z3 proofs of the backward bitwise functions the optimizer learns from guards with:
//! `KnownBits::backward_and/backward_or/backward_xor` and the `IntBound` ones.
//!
//! This file extends `domain_proofs.rs` (kept separate while that file is being edited): as
//! there, the code proven is the code that runs, the optimizer's generic domain functions
//! instantiated on [`Z3Word`]; the concrete semantics are Z3's own `bvand`/`bvor`. Every
//! counterexample or a timeout fails the test.
//!
//! Obligations, for well-formed abstract values and concrete members `x ∈ a`, `y ∈ b`:
//! - `KnownBits::backward_and(b, res)` with `x & y ∈ res` is well-formed and contains `x`;
//!   `KnownBits::backward_or(b, res)` with `x | y ∈ res` and `backward_xor` with `x ^ y ∈ res`
//!   likewise. Proven at 64 and 8 bits.
//! - `IntBound::backward_and(a, b, res)` with `x & y ∈ res` returns `(na, nb)` with `x ∈ na`
//!   and `y ∈ nb`, both with well-formed bits; `backward_or` and `backward_xor` likewise. Proven
//!   directly at 16 and 8 bits (at 64 bits the reduction rounds take about a minute per query).
//!   At 64 bits it follows by composition, as the other backward functions in
//!   `domain_proofs.rs`: `IntBound::backward_and(a, b, res)` is
//!   `a ∩ from_parts(KnownBits::backward_and(b.bits, res.bits), unbounded)`, so the knownbits
//!   soundness above, the reduce lemma and the intersect lemma (both proven at 64 bits in
//!   `domain_proofs.rs`, group `intbound_lemmas`) give membership.
//!
//! Precision (that `x & 7 == 0` teaches the low three bits of `x`) is tested on concrete
//! values in `optimizer/src/domain/tests.rs`.

use optimizer::domain::{IntBound, Interval, KnownBits, Word, WordBool};
use verify::z3word::Z3Word;
use z3::ast::{Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

type Z<const N: u32> = Z3Word<N>;
type IB<const N: u32> = IntBound<Z3Word<N>>;
type KB<const N: u32> = KnownBits<Z3Word<N>>;

/// Per-query timeout; reaching it fails the test (each query takes well under a second idle).
const TIMEOUT_MS: u32 = 60_000;

/// A symbolic `IntBound` (all fields free) named `name`.
fn sym_ib<const N: u32>(name: &str) -> IB<N> {
    let v = |f: &str| Z::<N>::var(&format!("{name}.{f}"));
    IntBound {
        bits: KnownBits::new(v("ones"), v("unknowns")),
        range: Interval::new(v("lower"), v("upper")),
    }
}

/// Proves `pre => goal`: `Err` with the model (or the solver's reason) otherwise.
fn prove(what: &str, pre: &Bool, goal: &Bool) -> Result<(), String> {
    // bit-vector problems: simplify, eliminate equations, bit-blast, SAT (as domain_proofs.rs)
    let tactic = z3::Tactic::new("simplify")
        .and_then(&z3::Tactic::new("propagate-values"))
        .and_then(&z3::Tactic::new("solve-eqs"))
        .and_then(&z3::Tactic::new("simplify"))
        .and_then(&z3::Tactic::new("bit-blast"))
        .and_then(&z3::Tactic::new("sat"));
    let solver: Solver = tactic.solver();
    let t = std::time::Instant::now();
    let mut p = Params::new();
    p.set_u32("timeout", TIMEOUT_MS);
    solver.set_params(&p);
    solver.assert(Bool::and(&[pre.clone(), goal.not()]).simplify());
    let r = solver.check();
    eprintln!("  {what}: {:?} in {:.2} s", r, t.elapsed().as_secs_f64());
    match r {
        SatResult::Unsat => Ok(()),
        SatResult::Sat => Err(format!(
            "{what}: counterexample\n{}",
            solver.get_model().map(|m| m.to_string()).unwrap_or_default()
        )),
        SatResult::Unknown => Err(format!("{what}: no proof ({:?})", solver.get_reason_unknown())),
    }
}

fn bits_pre<const N: u32>(k: &KB<N>, x: &Z<N>) -> Bool {
    k.is_well_formed().and(&k.contains(x)).0
}

/// Knownbits: the backward function keeps `x` and is well-formed.
fn knownbits_backward<const N: u32>(
    name: &str,
    f: fn(&KB<N>, &KB<N>) -> KB<N>,
    op: fn(&BV, &BV) -> BV,
) -> Result<(), String> {
    let (x, y) = (Z::<N>::var("x"), Z::<N>::var("y"));
    let other = KnownBits::new(Z::<N>::var("b.ones"), Z::<N>::var("b.unknowns"));
    let res = KnownBits::new(Z::<N>::var("r.ones"), Z::<N>::var("r.unknowns"));
    let r = Z3Word::<N>(op(&x.0, &y.0));
    let pre = Bool::and(&[bits_pre(&other, &y), bits_pre(&res, &r)]);
    let k = f(&other, &res);
    let what = format!("KnownBits::{name} at {N} bits");
    prove(&format!("{what}: well-formed"), &pre, &k.is_well_formed().0)?;
    prove(&format!("{what}: keeps x"), &pre, &k.contains(&x).0)
}

/// IntBound: both refined operands keep their members and have well-formed bits.
fn intbound_backward<const N: u32>(
    name: &str,
    f: fn(&IB<N>, &IB<N>, &IB<N>) -> (IB<N>, IB<N>),
    op: fn(&BV, &BV) -> BV,
) -> Result<(), String> {
    let (a, b, res) = (sym_ib::<N>("a"), sym_ib::<N>("b"), sym_ib::<N>("r"));
    let (x, y) = (Z::<N>::var("x"), Z::<N>::var("y"));
    let r = Z3Word::<N>(op(&x.0, &y.0));
    let member = |v: &IB<N>, m: &Z<N>| v.bits.is_well_formed().and(&v.contains(m)).0;
    let pre = Bool::and(&[member(&a, &x), member(&b, &y), member(&res, &r)]);
    let (na, nb) = f(&a, &b, &res);
    let what = format!("IntBound::{name} at {N} bits");
    prove(&format!("{what}: keeps x"), &pre, &na.contains(&x).0)?;
    prove(&format!("{what}: keeps y"), &pre, &nb.contains(&y).0)?;
    prove(&format!("{what}: well-formed a"), &pre, &na.bits.is_well_formed().0)?;
    prove(&format!("{what}: well-formed b"), &pre, &nb.bits.is_well_formed().0)
}

fn bvand(x: &BV, y: &BV) -> BV {
    x.bvand(y)
}

fn bvor(x: &BV, y: &BV) -> BV {
    x.bvor(y)
}

fn bvxor(x: &BV, y: &BV) -> BV {
    x.bvxor(y)
}

fn knownbits_at<const N: u32>() -> Vec<String> {
    let results = [
        knownbits_backward::<N>("backward_and", KnownBits::backward_and, bvand),
        knownbits_backward::<N>("backward_or", KnownBits::backward_or, bvor),
        knownbits_backward::<N>("backward_xor", KnownBits::backward_xor, bvxor),
    ];
    results.into_iter().filter_map(Result::err).collect()
}

fn intbound_at<const N: u32>() -> Vec<String> {
    let results = [
        intbound_backward::<N>("backward_and", IntBound::backward_and, bvand),
        intbound_backward::<N>("backward_or", IntBound::backward_or, bvor),
        intbound_backward::<N>("backward_xor", IntBound::backward_xor, bvxor),
    ];
    results.into_iter().filter_map(Result::err).collect()
}

#[test]
fn knownbits_backward_bitwise_sound_64_8() {
    let mut failures = knownbits_at::<64>();
    failures.extend(knownbits_at::<8>());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn intbound_backward_bitwise_sound_16_8() {
    let mut failures = intbound_at::<16>();
    failures.extend(intbound_at::<8>());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The proofs can fail: a wrong backward `and` (known 0 of the result taken as 0 of `x`,
/// ignoring the mask) has a counterexample.
#[test]
fn a_wrong_backward_and_is_refuted() {
    fn wrong<W: Word>(_other: &KnownBits<W>, res: &KnownBits<W>) -> KnownBits<W> {
        res.clone()
    }
    assert!(knownbits_backward::<16>("wrong_backward_and", wrong::<Z<16>>, bvand).is_err());
    // sanity of the helper itself: a true goal is proven
    assert!(prove("true", &Bool::from_bool(true), &Bool::from_bool(true)).is_ok());
}
