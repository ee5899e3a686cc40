//! Z3 proofs of the abstract domains: the optimizer's generic domain code, run on Z3 bit-vectors.
//!
//! Every obligation is "for all abstract inputs and all their members, the concrete result is
//! a member of the abstract result" (or a variant: backward functions keep the members that
//! satisfy the condition; constants map to constants; reduction loses nothing). The concrete
//! semantics here are written with Z3's own operators (`bvsdiv`, `bvsmod`, `sign_ext`, ...),
//! independently of the domain code. A timeout is a failure: there are no skipped proofs.
//!
//! Widths: 64 bits for everything except multiplication-like and division ops (`int_mul`,
//! `int_mul_ovf`, `uint_mul_high`, the four divisions, `backward_mul_ovf_const`), whose 64-bit
//! queries do not finish in reasonable time: those are proven at 32 and 16 bits and at 8 bits
//! (a Z3 proof at 8 bits covers every input, i.e. it is an exhaustive check).

use optimizer::domain::{Cmp, IntBound, Interval, KnownBits, Word, WordBool};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use verify::z3word::{Z3Bool, Z3Word};
use z3::ast::{Bool, BV};
use z3::{Params, SatResult, Solver};

/// Per-query timeout. Reaching it fails the test.
fn timeout_ms() -> u32 {
    std::env::var("DOMAIN_PROOF_TIMEOUT_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(60_000)
}

type Z<const N: u32> = Z3Word<N>;
type IB<const N: u32> = IntBound<Z3Word<N>>;

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
    let ib = IntBound { bits: KnownBits::new(v("ones"), v("unknowns")), range: Interval::new(v("lower"), v("upper")) };
    Sym { name: name.to_string(), ib, x: v("member") }
}

impl<const N: u32> Sym<N> {
    /// Well-formed and `x` is a member.
    fn pre(&self) -> Bool {
        self.ib.bits.is_well_formed().and(&self.ib.contains(&self.x)).0
    }
}

fn and(bs: &[&Bool]) -> Bool {
    Bool::and(&bs.iter().map(|b| (*b).clone()).collect::<Vec<_>>())
}

// ------------------------------------------------------------------ counterexamples

/// Something to print from a counterexample model.
enum Shown<const N: u32> {
    Bound(String, IB<N>),
    Value(String, BV),
}

fn signed(v: u64, n: u32) -> i64 {
    if n >= 64 { v as i64 } else { ((v << (64 - n)) as i64) >> (64 - n) }
}

fn kb_text(ones: u64, unknowns: u64, n: u32) -> String {
    if n == 64 {
        return KnownBits::new(ones, unknowns).to_string();
    }
    (0..n).rev().map(|i| if unknowns >> i & 1 == 1 { '?' } else if ones >> i & 1 == 1 { '1' } else { '0' }).collect()
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

/// Proves `pre => goal`; on failure returns the counterexample (abstract and concrete values).
fn prove<const N: u32>(pre: &Bool, goal: &Bool, shown: &[Shown<N>]) -> Result<(), String> {
    let solver = Solver::new_for_logic("QF_BV").expect("QF_BV solver");
    let mut p = Params::new();
    p.set_u32("timeout", timeout_ms());
    solver.set_params(&p);
    solver.assert(pre);
    solver.assert(goal.not());
    match solver.check() {
        SatResult::Unsat => Ok(()),
        SatResult::Sat => {
            let model = solver.get_model().expect("model");
            Err(format!("counterexample at {N} bits:\n{}", describe(&model, shown)))
        }
        SatResult::Unknown => Err(format!("no proof (timeout or unknown: {:?})", solver.get_reason_unknown())),
    }
}

fn shown_inputs<const N: u32>(syms: &[&Sym<N>]) -> Vec<Shown<N>> {
    let mut v = Vec::new();
    for s in syms {
        v.push(Shown::Bound(format!("abstract {}", s.name), s.ib.clone()));
        v.push(Shown::Value(format!("member of {}", s.name), s.x.0.clone()));
    }
    v
}

// ------------------------------------------------------------------ the op tables

type Bin<const N: u32> = fn(&IB<N>, &IB<N>) -> IB<N>;
/// Concrete semantics: (result, inputs valid).
type BinSem = fn(&BV, &BV) -> (BV, Bool);
type Un<const N: u32> = fn(&IB<N>) -> IB<N>;
type UnSem = fn(&BV) -> BV;

fn t() -> Bool {
    Bool::from_bool(true)
}

fn b01(b: Bool) -> BV {
    let n = 0; // width taken from the comparison operands by the caller
    let _ = n;
    b.ite(&BV::from_u64(1, WIDTH.with(|w| *w.borrow())), &BV::from_u64(0, WIDTH.with(|w| *w.borrow())))
}

thread_local! {
    /// The width of the obligation being built on this thread (for `b01`).
    static WIDTH: std::cell::RefCell<u32> = const { std::cell::RefCell::new(64) };
}

fn width_of(x: &BV) -> u32 {
    let w = x.get_size();
    WIDTH.with(|c| *c.borrow_mut() = w);
    w
}

fn nonzero(y: &BV) -> Bool {
    y.eq(BV::from_u64(0, width_of(y))).not()
}

fn shift_ok(y: &BV) -> Bool {
    let n = width_of(y);
    y.bvult(BV::from_u64(u64::from(n), n))
}

/// `(name, heavy, abstract, concrete)`; heavy ops are proven at 32/16/8 bits instead of 64.
fn binops<const N: u32>() -> Vec<(&'static str, bool, Bin<N>, BinSem)> {
    vec![
        ("add", false, IB::<N>::add, |x, y| (x.bvadd(y), t())),
        ("sub", false, IB::<N>::sub, |x, y| (x.bvsub(y), t())),
        ("mul", true, IB::<N>::mul, |x, y| (x.bvmul(y), t())),
        ("and", false, IB::<N>::and, |x, y| (x.bvand(y), t())),
        ("or", false, IB::<N>::or, |x, y| (x.bvor(y), t())),
        ("xor", false, IB::<N>::xor, |x, y| (x.bvxor(y), t())),
        ("uint_mul_high", true, IB::<N>::uint_mul_high, |x, y| {
            let n = width_of(x);
            (x.zero_ext(n).bvmul(y.zero_ext(n)).extract(2 * n - 1, n), t())
        }),
        ("floordiv", true, IB::<N>::floordiv, |x, y| (x.bvsdiv(y), nonzero(y))),
        ("mod", true, IB::<N>::modulo, |x, y| (x.bvsrem(y), nonzero(y))),
        ("pydiv", true, IB::<N>::pydiv, |x, y| {
            // (x - x mod y) / y is exact; computed at n+1 bits so that nothing wraps early
            let n = x.get_size();
            let (xw, yw) = (x.sign_ext(1), y.sign_ext(1));
            (xw.bvsub(xw.bvsmod(&yw)).bvsdiv(&yw).extract(n - 1, 0), nonzero(y))
        }),
        ("pymod", true, IB::<N>::pymod, |x, y| (x.bvsmod(y), nonzero(y))),
        ("eq", false, IB::<N>::eq, |x, y| { width_of(x); (b01(x.eq(y)), t()) }),
        ("ne", false, IB::<N>::ne, |x, y| { width_of(x); (b01(x.eq(y).not()), t()) }),
        ("lt", false, IB::<N>::lt, |x, y| { width_of(x); (b01(x.bvslt(y)), t()) }),
        ("le", false, IB::<N>::le, |x, y| { width_of(x); (b01(x.bvsle(y)), t()) }),
        ("gt", false, IB::<N>::gt, |x, y| { width_of(x); (b01(x.bvsgt(y)), t()) }),
        ("ge", false, IB::<N>::ge, |x, y| { width_of(x); (b01(x.bvsge(y)), t()) }),
        ("uint_lt", false, IB::<N>::ult, |x, y| { width_of(x); (b01(x.bvult(y)), t()) }),
        ("uint_le", false, IB::<N>::ule, |x, y| { width_of(x); (b01(x.bvule(y)), t()) }),
        ("uint_gt", false, IB::<N>::ugt, |x, y| { width_of(x); (b01(x.bvugt(y)), t()) }),
        ("uint_ge", false, IB::<N>::uge, |x, y| { width_of(x); (b01(x.bvuge(y)), t()) }),
        ("lshift", false, IB::<N>::lshift, |x, y| (x.bvshl(y), shift_ok(y))),
        ("rshift", false, IB::<N>::rshift, |x, y| (x.bvashr(y), shift_ok(y))),
        ("uint_rshift", false, IB::<N>::uint_rshift, |x, y| (x.bvlshr(y), shift_ok(y))),
    ]
}

fn signext_sem(x: &BV, nbytes: u32) -> BV {
    let n = x.get_size();
    let bits = nbytes * 8;
    if bits >= n { x.clone() } else { x.extract(bits - 1, 0).sign_ext(n - bits) }
}

fn unops<const N: u32>() -> Vec<(&'static str, Un<N>, UnSem)> {
    vec![
        ("neg", IB::<N>::neg, |x| x.bvneg()),
        ("invert", IB::<N>::invert, |x| x.bvnot()),
        ("is_true", IB::<N>::is_true, |x| { let n = width_of(x); b01(x.eq(BV::from_u64(0, n)).not()) }),
        ("is_zero", IB::<N>::is_zero, |x| { let n = width_of(x); b01(x.eq(BV::from_u64(0, n))) }),
        ("force_ge_zero", IB::<N>::force_ge_zero, |x| {
            let z = BV::from_u64(0, x.get_size());
            x.bvslt(&z).ite(&z, x)
        }),
        ("signext(1)", |a| a.signext(1), |x| signext_sem(x, 1)),
        ("signext(2)", |a| a.signext(2), |x| signext_sem(x, 2)),
        ("signext(4)", |a| a.signext(4), |x| signext_sem(x, 4)),
        ("signext(8)", |a| a.signext(8), |x| signext_sem(x, 8)),
    ]
}

/// Signed overflow of `x op y` computed at `N + 1` bits (independent of the domain code).
fn fits_signed(wide: &BV, n: u32) -> Bool {
    wide.extract(n - 1, 0).sign_ext(wide.get_size() - n).eq(wide)
}

type Ovf<const N: u32> = fn(&IB<N>, &IB<N>) -> (IB<N>, Z3Bool);

fn ovfops<const N: u32>() -> Vec<(&'static str, bool, Ovf<N>, BinSem)> {
    vec![
        ("add_ovf", false, IB::<N>::add_ovf, |x, y| {
            let n = x.get_size();
            (x.bvadd(y), fits_signed(&x.sign_ext(1).bvadd(y.sign_ext(1)), n))
        }),
        ("sub_ovf", false, IB::<N>::sub_ovf, |x, y| {
            let n = x.get_size();
            (x.bvsub(y), fits_signed(&x.sign_ext(1).bvsub(y.sign_ext(1)), n))
        }),
        ("mul_ovf", true, IB::<N>::mul_ovf, |x, y| {
            let n = x.get_size();
            (x.bvmul(y), fits_signed(&x.sign_ext(n).bvmul(y.sign_ext(n)), n))
        }),
    ]
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

const CMPS: [Cmp; 10] = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne, Cmp::Ult, Cmp::Ule, Cmp::Ugt, Cmp::Uge];

// ------------------------------------------------------------------ obligations

/// One proof obligation: a domain function, a property, a width.
struct Obligation {
    function: String,
    property: &'static str,
    width: u32,
    run: Box<dyn Fn() -> Result<(), String> + Send + Sync>,
}

fn ob(function: String, property: &'static str, width: u32, run: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Obligation {
    Obligation { function, property, width, run: Box::new(run) }
}

/// All obligations at width `N`; `heavy` selects the multiplication/division group.
fn obligations<const N: u32>(heavy: bool, out: &mut Vec<Obligation>) {
    for (i, (name, h, _, _)) in binops::<N>().into_iter().enumerate() {
        if h != heavy {
            continue;
        }
        out.push(ob(format!("IntBound::{name}"), "sound", N, move || {
            let (_, _, f, sem) = binops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, valid) = sem(&a.x.0, &b.x.0);
            let res = f(&a.ib, &b.ib);
            let mut shown = shown_inputs(&[&a, &b]);
            shown.push(Shown::Value("concrete result".into(), r.clone()));
            shown.push(Shown::Bound("abstract result".into(), res.clone()));
            prove::<N>(&and(&[&a.pre(), &b.pre(), &valid]), &res.contains(&Z3Word(r)).0, &shown)
        }));
        out.push(ob(format!("IntBound::{name}"), "constants fold", N, move || {
            let (_, _, f, sem) = binops::<N>().swap_remove(i);
            let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
            let (r, valid) = sem(&x.0, &y.0);
            let res = f(&IntBound::from_constant(x.clone()), &IntBound::from_constant(y.clone()));
            let goal = res.is_constant().and(&res.constant_value().equals(&Z3Word(r))).0;
            let shown = vec![Shown::Value("x".into(), x.0.clone()), Shown::Value("y".into(), y.0.clone()), Shown::Bound("abstract result".into(), res)];
            prove::<N>(&valid, &goal, &shown)
        }));
    }
    for (i, (name, h, _, _)) in ovfops::<N>().into_iter().enumerate() {
        if h != heavy {
            continue;
        }
        out.push(ob(format!("IntBound::{name}"), "sound if no overflow; no_ovf flag sound", N, move || {
            let (_, _, f, sem) = ovfops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, fits) = sem(&a.x.0, &b.x.0);
            let (res, ok) = f(&a.ib, &b.ib);
            let mut shown = shown_inputs(&[&a, &b]);
            shown.push(Shown::Value("concrete result".into(), r.clone()));
            shown.push(Shown::Bound("abstract result".into(), res.clone()));
            let pre = and(&[&a.pre(), &b.pre()]);
            let goal = and(&[&fits.implies(&res.contains(&Z3Word(r)).0), &ok.0.implies(&fits)]);
            prove::<N>(&pre, &goal, &shown)
        }));
    }
    if heavy {
        out.push(ob("IntBound::backward_mul_ovf_const".into(), "sound", N, || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let prod = a.x.0.bvmul(&b.x.0);
            let fits = fits_signed(&a.x.0.sign_ext(N).bvmul(b.x.0.sign_ext(N)), N);
            let na = IntBound::backward_mul_ovf_const(&a.ib, &b.ib, &r.ib);
            let pre = and(&[&a.pre(), &b.pre(), &r.pre(), &r.x.0.eq(&prod), &fits]);
            prove::<N>(&pre, &na.contains(&a.x).0, &shown_inputs(&[&a, &b, &r]))
        }));
        return;
    }
    for (i, (name, _, _)) in unops::<N>().into_iter().enumerate() {
        out.push(ob(format!("IntBound::{name}"), "sound", N, move || {
            let (_, f, sem) = unops::<N>().swap_remove(i);
            let a = sym::<N>("a");
            let r = sem(&a.x.0);
            let res = f(&a.ib);
            let mut shown = shown_inputs(&[&a]);
            shown.push(Shown::Value("concrete result".into(), r.clone()));
            shown.push(Shown::Bound("abstract result".into(), res.clone()));
            prove::<N>(&a.pre(), &res.contains(&Z3Word(r)).0, &shown)
        }));
        out.push(ob(format!("IntBound::{name}"), "constants fold", N, move || {
            let (_, f, sem) = unops::<N>().swap_remove(i);
            let x = Z3Word::<N>::var("x");
            let r = sem(&x.0);
            let res = f(&IntBound::from_constant(x.clone()));
            let goal = res.is_constant().and(&res.constant_value().equals(&Z3Word(r))).0;
            prove::<N>(&t(), &goal, &[Shown::Value("x".into(), x.0.clone()), Shown::Bound("abstract result".into(), res)])
        }));
    }
    // the reduced product and the lattice operations never lose a value
    out.push(ob("IntBound::reduce".into(), "keeps members", N, || {
        let a = sym::<N>("a");
        prove::<N>(&a.pre(), &a.ib.reduce().contains(&a.x).0, &shown_inputs(&[&a]))
    }));
    out.push(ob("IntBound::intersect".into(), "keeps common members", N, || {
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let pre = and(&[&a.pre(), &b.pre(), &a.x.0.eq(&b.x.0)]);
        let i = a.ib.intersect(&b.ib);
        prove::<N>(&pre, &i.contains(&a.x).and(&i.is_empty().not()).0, &shown_inputs(&[&a, &b]))
    }));
    out.push(ob("IntBound::join".into(), "keeps members of both", N, || {
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let j = a.ib.join(&b.ib);
        prove::<N>(&and(&[&a.pre(), &b.pre()]), &j.contains(&a.x).and(&j.contains(&b.x)).0, &shown_inputs(&[&a, &b]))
    }));
    // queries
    out.push(ob("IntBound::known_* / is_*_identity".into(), "queries sound", N, || {
        let (a, b) = (sym::<N>("a"), sym::<N>("b"));
        let (x, y) = (&a.x, &b.x);
        let (p, q) = (&a.ib, &b.ib);
        let goals = [
            p.known_lt(q).implies(&x.slt(y)),
            p.known_le(q).implies(&x.sle(y)),
            p.known_gt(q).implies(&x.sgt(y)),
            p.known_ge(q).implies(&x.sge(y)),
            p.known_ne(q).implies(&x.not_equals(y)),
            p.known_ult(q).implies(&x.ult(y)),
            p.known_ule(q).implies(&x.ule(y)),
            p.known_nonnegative().implies(&x.sge(&Word::zero())),
            p.known_negative().implies(&x.slt(&Word::zero())),
            p.is_bool().implies(&x.ule(&Word::one())),
            p.is_constant().implies(&x.equals(&p.constant_value())),
            p.is_and_identity(q).implies(&x.and(y).equals(x)),
            p.is_or_identity(q).implies(&x.or(y).equals(x)),
            p.known_ge_const(&y.clone()).implies(&x.sge(y)),
            p.known_lt_const(&y.clone()).implies(&x.slt(y)),
            p.is_empty().not(),
        ];
        let g: Vec<Bool> = goals.iter().map(|g| g.0.clone()).collect();
        prove::<N>(&and(&[&a.pre(), &b.pre()]), &Bool::and(&g), &shown_inputs(&[&a, &b]))
    }));
    // backward: conditions
    for cmp in CMPS {
        for truth in [true, false] {
            out.push(ob(format!("IntBound::learn_cmp({cmp:?}, {truth}) / make_*"), "keeps members satisfying the condition", N, move || {
                let (a, b) = (sym::<N>("a"), sym::<N>("b"));
                let holds = cmp_sem(cmp, &a.x.0, &b.x.0);
                let holds = if truth { holds } else { holds.not() };
                let (na, nb) = IntBound::learn_cmp(cmp, truth, &a.ib, &b.ib);
                let goal = na.contains(&a.x).and(&nb.contains(&b.x)).and(&na.is_empty().not()).0;
                prove::<N>(&and(&[&a.pre(), &b.pre(), &holds]), &goal, &shown_inputs(&[&a, &b]))
            }));
        }
    }
    out.push(ob("IntBound::make_nonnegative/make_nonzero/make_zero".into(), "keeps members satisfying the condition", N, || {
        let a = sym::<N>("a");
        let z = Word::zero();
        let (mut p, mut q, mut r) = (a.ib.clone(), a.ib.clone(), a.ib.clone());
        p.make_nonnegative();
        q.make_nonzero();
        r.make_zero();
        let goal = and(&[
            &a.x.sge(&z).implies(&p.contains(&a.x)).0,
            &a.x.not_equals(&z).implies(&q.contains(&a.x)).0,
            &a.x.equals(&z).implies(&r.contains(&a.x)).0,
        ]);
        prove::<N>(&a.pre(), &goal, &shown_inputs(&[&a]))
    }));
    // backward: op results
    type Back<const N: u32> = fn(&IB<N>, &IB<N>, &IB<N>) -> (IB<N>, IB<N>);
    let backs: Vec<(&'static str, Back<N>, BinSem)> = vec![
        ("backward_add", IB::<N>::backward_add, |x, y| (x.bvadd(y), t())),
        ("backward_sub", IB::<N>::backward_sub, |x, y| (x.bvsub(y), t())),
        ("backward_add_ovf", IB::<N>::backward_add_ovf, |x, y| {
            let n = x.get_size();
            (x.bvadd(y), fits_signed(&x.sign_ext(1).bvadd(y.sign_ext(1)), n))
        }),
        ("backward_sub_ovf", IB::<N>::backward_sub_ovf, |x, y| {
            let n = x.get_size();
            (x.bvsub(y), fits_signed(&x.sign_ext(1).bvsub(y.sign_ext(1)), n))
        }),
    ];
    for (name, f, sem) in backs {
        out.push(ob(format!("IntBound::{name}"), "keeps members", N, move || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let (v, valid) = sem(&a.x.0, &b.x.0);
            let (na, nb) = f(&a.ib, &b.ib, &r.ib);
            let pre = and(&[&a.pre(), &b.pre(), &r.pre(), &r.x.0.eq(&v), &valid]);
            prove::<N>(&pre, &na.contains(&a.x).and(&nb.contains(&b.x)).0, &shown_inputs(&[&a, &b, &r]))
        }));
    }
    out.push(ob("IntBound::backward_neg/backward_invert".into(), "keeps members", N, || {
        let (a, r) = (sym::<N>("a"), sym::<N>("res"));
        let n = IntBound::backward_neg(&a.ib, &r.ib);
        let i = IntBound::backward_invert(&a.ib, &r.ib);
        let goal = and(&[
            &r.x.0.eq(a.x.0.bvneg()).implies(&n.contains(&a.x).0),
            &r.x.0.eq(a.x.0.bvnot()).implies(&i.contains(&a.x).0),
        ]);
        prove::<N>(&and(&[&a.pre(), &r.pre()]), &goal, &shown_inputs(&[&a, &r]))
    }));
}


type KBin<const N: u32> = fn(&KnownBits<Z<N>>, &KnownBits<Z<N>>) -> KnownBits<Z<N>>;
type IBin<const N: u32> = fn(&Interval<Z<N>>, &Interval<Z<N>>) -> Interval<Z<N>>;
type KUn<const N: u32> = fn(&KnownBits<Z<N>>) -> KnownBits<Z<N>>;
type IUn<const N: u32> = fn(&Interval<Z<N>>) -> Interval<Z<N>>;

/// The component functions behind each row of [`binops`] (same order).
fn comp_binops<const N: u32>() -> Vec<(KBin<N>, IBin<N>)> {
    macro_rules! row {
        ($m:ident) => {
            (KnownBits::<Z<N>>::$m as KBin<N>, Interval::<Z<N>>::$m as IBin<N>)
        };
    }
    vec![
        row!(add), row!(sub), row!(mul), row!(and), row!(or), row!(xor), row!(uint_mul_high),
        row!(floordiv), row!(modulo), row!(pydiv), row!(pymod), row!(eq), row!(ne), row!(lt),
        row!(le), row!(gt), row!(ge), row!(ult), row!(ule), row!(ugt), row!(uge), row!(lshift),
        row!(rshift), row!(uint_rshift),
    ]
}

/// The component functions behind each row of [`unops`] (same order).
fn comp_unops<const N: u32>() -> Vec<(KUn<N>, IUn<N>)> {
    vec![
        (KnownBits::neg, Interval::neg),
        (KnownBits::invert, Interval::invert),
        (KnownBits::is_true, Interval::is_true),
        (KnownBits::is_zero, Interval::is_zero),
        (KnownBits::force_ge_zero, Interval::force_ge_zero),
        (|a| a.signext(1), |a| a.signext(1)),
        (|a| a.signext(2), |a| a.signext(2)),
        (|a| a.signext(4), |a| a.signext(4)),
        (|a| a.signext(8), |a| a.signext(8)),
    ]
}

fn kb_shown<const N: u32>(name: &str, k: &KnownBits<Z<N>>) -> Shown<N> {
    Shown::Bound(name.into(), IntBound { bits: k.clone(), range: Interval::unbounded() })
}

fn iv_shown<const N: u32>(name: &str, i: &Interval<Z<N>>) -> Shown<N> {
    Shown::Bound(name.into(), IntBound { bits: KnownBits::unknown(), range: i.clone() })
}

/// Component-level obligations: every KnownBits and Interval transfer and backward function,
/// at width `N` (`heavy` selects the multiplication/division group).
fn component_obligations<const N: u32>(heavy: bool, out: &mut Vec<Obligation>) {
    for (i, (name, h, _, _)) in binops::<N>().into_iter().enumerate() {
        if h != heavy {
            continue;
        }
        out.push(ob(format!("KnownBits::{name}"), "sound", N, move || {
            let (_, _, _, sem) = binops::<N>().swap_remove(i);
            let (f, _) = comp_binops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, valid) = sem(&a.x.0, &b.x.0);
            let res = f(&a.ib.bits, &b.ib.bits);
            let pre = and(&[&a.ib.bits.is_well_formed().0, &a.ib.bits.contains(&a.x).0, &b.ib.bits.is_well_formed().0, &b.ib.bits.contains(&b.x).0, &valid]);
            let shown = vec![kb_shown("a", &a.ib.bits), Shown::Value("x".into(), a.x.0.clone()), kb_shown("b", &b.ib.bits), Shown::Value("y".into(), b.x.0.clone()), Shown::Value("concrete result".into(), r.clone()), kb_shown("abstract result", &res)];
            prove::<N>(&pre, &res.contains(&Z3Word(r)).and(&res.is_well_formed()).0, &shown)
        }));
        out.push(ob(format!("KnownBits::{name}"), "constants fold", N, move || {
            let (_, _, _, sem) = binops::<N>().swap_remove(i);
            let (f, _) = comp_binops::<N>().swap_remove(i);
            let (x, y) = (Z3Word::<N>::var("x"), Z3Word::<N>::var("y"));
            let (r, valid) = sem(&x.0, &y.0);
            let res = f(&KnownBits::from_constant(x.clone()), &KnownBits::from_constant(y.clone()));
            let shown = vec![Shown::Value("x".into(), x.0.clone()), Shown::Value("y".into(), y.0.clone()), kb_shown("abstract result", &res)];
            prove::<N>(&valid, &res.is_constant().and(&res.constant_value().equals(&Z3Word(r))).0, &shown)
        }));
        out.push(ob(format!("Interval::{name}"), "sound", N, move || {
            let (_, _, _, sem) = binops::<N>().swap_remove(i);
            let (_, f) = comp_binops::<N>().swap_remove(i);
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, valid) = sem(&a.x.0, &b.x.0);
            let res = f(&a.ib.range, &b.ib.range);
            let pre = and(&[&a.ib.range.contains(&a.x).0, &b.ib.range.contains(&b.x).0, &valid]);
            let shown = vec![iv_shown("a", &a.ib.range), Shown::Value("x".into(), a.x.0.clone()), iv_shown("b", &b.ib.range), Shown::Value("y".into(), b.x.0.clone()), Shown::Value("concrete result".into(), r.clone()), iv_shown("abstract result", &res)];
            prove::<N>(&pre, &res.contains(&Z3Word(r)).0, &shown)
        }));
    }
    for (i, (name, h, _, _)) in ovfops::<N>().into_iter().enumerate() {
        if h != heavy {
            continue;
        }
        out.push(ob(format!("Interval::{name}"), "sound if no overflow; no_ovf flag sound", N, move || {
            let (_, _, _, sem) = ovfops::<N>().swap_remove(i);
            let f = [Interval::<Z<N>>::add_ovf, Interval::<Z<N>>::sub_ovf, Interval::<Z<N>>::mul_ovf][i];
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let (r, fits) = sem(&a.x.0, &b.x.0);
            let (res, ok) = f(&a.ib.range, &b.ib.range);
            let pre = and(&[&a.ib.range.contains(&a.x).0, &b.ib.range.contains(&b.x).0]);
            let goal = and(&[&fits.implies(&res.contains(&Z3Word(r)).0), &ok.0.implies(&fits)]);
            prove::<N>(&pre, &goal, &[iv_shown("a", &a.ib.range), Shown::Value("x".into(), a.x.0.clone()), iv_shown("b", &b.ib.range), Shown::Value("y".into(), b.x.0.clone()), iv_shown("abstract result", &res)])
        }));
    }
    if heavy {
        out.push(ob("Interval::backward_mul_ovf_const".into(), "keeps members", N, || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let prod = a.x.0.bvmul(&b.x.0);
            let fits = fits_signed(&a.x.0.sign_ext(N).bvmul(b.x.0.sign_ext(N)), N);
            let na = Interval::backward_mul_ovf_const(&a.ib.range, &b.ib.range, &r.ib.range);
            let pre = and(&[&a.ib.range.contains(&a.x).0, &b.ib.range.contains(&b.x).0, &r.ib.range.contains(&r.x).0, &r.x.0.eq(&prod), &fits]);
            prove::<N>(&pre, &na.contains(&a.x).0, &[iv_shown("a", &a.ib.range), iv_shown("b", &b.ib.range), iv_shown("res", &r.ib.range), Shown::Value("x".into(), a.x.0.clone()), Shown::Value("y".into(), b.x.0.clone())])
        }));
        return;
    }
    for (i, (name, _, _)) in unops::<N>().into_iter().enumerate() {
        out.push(ob(format!("KnownBits::{name} / Interval::{name}"), "sound, constants fold", N, move || {
            let (_, _, sem) = unops::<N>().swap_remove(i);
            let (fk, fi) = comp_unops::<N>().swap_remove(i);
            let a = sym::<N>("a");
            let r = Z3Word(sem(&a.x.0));
            let (rk, ri) = (fk(&a.ib.bits), fi(&a.ib.range));
            let c = fk(&KnownBits::from_constant(a.x.clone()));
            let goal = and(&[
                &a.ib.bits.contains(&a.x).implies(&rk.contains(&r)).0,
                &a.ib.range.contains(&a.x).implies(&ri.contains(&r)).0,
                &c.is_constant().and(&c.constant_value().equals(&r)).0,
            ]);
            prove::<N>(&a.ib.bits.is_well_formed().0, &goal, &[kb_shown("a bits", &a.ib.bits), iv_shown("a range", &a.ib.range), Shown::Value("x".into(), a.x.0.clone()), kb_shown("result bits", &rk), iv_shown("result range", &ri)])
        }));
    }
    for cmp in CMPS {
        out.push(ob(format!("Interval::make_* for {cmp:?}"), "keeps members satisfying the condition", N, move || {
            let (a, b) = (sym::<N>("a"), sym::<N>("b"));
            let holds = cmp_sem(cmp, &a.x.0, &b.x.0);
            let (mut na, mut nb) = (a.ib.range.clone(), b.ib.range.clone());
            let (p, q) = (&a.ib.range, &b.ib.range);
            match cmp {
                Cmp::Lt => { na.make_lt(q); nb.make_gt(p); }
                Cmp::Le => { na.make_le(q); nb.make_ge(p); }
                Cmp::Gt => { na.make_gt(q); nb.make_lt(p); }
                Cmp::Ge => { na.make_ge(q); nb.make_le(p); }
                Cmp::Eq => { na.make_eq(q); nb.make_eq(p); }
                Cmp::Ne => { na.make_ne(q); nb.make_ne(p); }
                Cmp::Ult => { na.make_ult(q); nb.make_ugt(p); }
                Cmp::Ule => { na.make_ule(q); nb.make_uge(p); }
                Cmp::Ugt => { na.make_ugt(q); nb.make_ult(p); }
                Cmp::Uge => { na.make_uge(q); nb.make_ule(p); }
            }
            let pre = and(&[&p.contains(&a.x).0, &q.contains(&b.x).0, &holds]);
            prove::<N>(&pre, &na.contains(&a.x).and(&nb.contains(&b.x)).0, &[iv_shown("a", p), iv_shown("b", q), Shown::Value("x".into(), a.x.0.clone()), Shown::Value("y".into(), b.x.0.clone()), iv_shown("new a", &na), iv_shown("new b", &nb)])
        }));
    }
    type IBack<const N: u32> = fn(&Interval<Z<N>>, &Interval<Z<N>>, &Interval<Z<N>>) -> (Interval<Z<N>>, Interval<Z<N>>);
    let backs: Vec<(&'static str, IBack<N>, BinSem)> = vec![
        ("backward_add", Interval::<Z<N>>::backward_add, |x, y| (x.bvadd(y), t())),
        ("backward_sub", Interval::<Z<N>>::backward_sub, |x, y| (x.bvsub(y), t())),
        ("backward_add_ovf", Interval::<Z<N>>::backward_add_ovf, |x, y| {
            let n = x.get_size();
            (x.bvadd(y), fits_signed(&x.sign_ext(1).bvadd(y.sign_ext(1)), n))
        }),
        ("backward_sub_ovf", Interval::<Z<N>>::backward_sub_ovf, |x, y| {
            let n = x.get_size();
            (x.bvsub(y), fits_signed(&x.sign_ext(1).bvsub(y.sign_ext(1)), n))
        }),
    ];
    for (name, f, sem) in backs {
        out.push(ob(format!("Interval::{name}"), "keeps members", N, move || {
            let (a, b, r) = (sym::<N>("a"), sym::<N>("b"), sym::<N>("res"));
            let (v, valid) = sem(&a.x.0, &b.x.0);
            let (na, nb) = f(&a.ib.range, &b.ib.range, &r.ib.range);
            let pre = and(&[&a.ib.range.contains(&a.x).0, &b.ib.range.contains(&b.x).0, &r.ib.range.contains(&r.x).0, &r.x.0.eq(&v), &valid]);
            prove::<N>(&pre, &na.contains(&a.x).and(&nb.contains(&b.x)).0, &[iv_shown("a", &a.ib.range), iv_shown("b", &b.ib.range), iv_shown("res", &r.ib.range), Shown::Value("x".into(), a.x.0.clone()), Shown::Value("y".into(), b.x.0.clone())])
        }));
    }
    out.push(ob("Interval::backward_neg / backward_invert".into(), "keeps members", N, || {
        let (a, r) = (sym::<N>("a"), sym::<N>("res"));
        let n = Interval::backward_neg(&a.ib.range, &r.ib.range);
        let i = Interval::backward_invert(&a.ib.range, &r.ib.range);
        let pre = and(&[&a.ib.range.contains(&a.x).0, &r.ib.range.contains(&r.x).0]);
        let goal = and(&[&r.x.0.eq(a.x.0.bvneg()).implies(&n.contains(&a.x).0), &r.x.0.eq(a.x.0.bvnot()).implies(&i.contains(&a.x).0)]);
        prove::<N>(&pre, &goal, &[iv_shown("a", &a.ib.range), iv_shown("res", &r.ib.range), Shown::Value("x".into(), a.x.0.clone())])
    }));
    out.push(ob("IntBound::reduce (from_parts)".into(), "keeps members", N, || {
        let a = sym::<N>("a");
        prove::<N>(&a.pre(), &a.ib.reduce().contains(&a.x).0, &shown_inputs(&[&a]))
    }));
}

/// Runs obligations on 2 threads; returns (function, property, width, time, result).
fn run_all(obs: Vec<Obligation>) -> Vec<(String, &'static str, u32, Duration, Result<(), String>)> {
    let queue = Mutex::new(obs.into_iter().collect::<Vec<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(o) = queue.lock().unwrap().pop() else { break };
                let start = Instant::now();
                let r = (o.run)();
                eprintln!("{} {} [{}] at {} bits ({:.2}s)", if r.is_ok() { "proved" } else { "FAILED" }, o.function, o.property, o.width, start.elapsed().as_secs_f64());
                results.lock().unwrap().push((o.function, o.property, o.width, start.elapsed(), r));
            });
        }
    });
    results.into_inner().unwrap()
}

#[test]
fn prove_all_domain_functions() {
    let mut obs = Vec::new();
    // the components at full width (and the heavy group at 32/16/8 bits) ...
    component_obligations::<64>(false, &mut obs);
    component_obligations::<32>(true, &mut obs);
    component_obligations::<16>(true, &mut obs);
    component_obligations::<8>(true, &mut obs);
    // ... and every IntBound function end to end (reduction included) at 8 bits, where a
    // Z3 proof covers all inputs.
    obligations::<8>(false, &mut obs);
    obligations::<8>(true, &mut obs);
    if let Ok(f) = std::env::var("DOMAIN_PROOF_FILTER") {
        obs.retain(|o| format!("{} {} {}", o.function, o.property, o.width).contains(&f));
    }
    let n = obs.len();
    let mut results = run_all(obs);
    results.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
    let mut failed = 0;
    let mut functions = std::collections::BTreeSet::new();
    for (f, p, w, d, r) in &results {
        functions.insert(f.clone());
        match r {
            Ok(()) => println!("proved  {f} [{p}] at {w} bits ({:.2}s)", d.as_secs_f64()),
            Err(e) => {
                failed += 1;
                println!("FAILED  {f} [{p}] at {w} bits ({:.2}s): {e}", d.as_secs_f64());
            }
        }
    }
    println!("proved {} of {n} obligations covering {} domain functions", n - failed, functions.len());
    assert_eq!(failed, 0, "{failed} proof obligations failed");
}

// ------------------------------------------------------------------ precision search

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// A random knownbits value mixing seed 003's special integers with random ones.
fn random_kb(s: &mut u64) -> KnownBits<u64> {
    let specials = [0u64, 1, 2, 7, 8, 255, 256, 1 << 63, (1 << 63) - 1, u64::MAX, u64::MAX - 7];
    let r = xorshift(s);
    let x = if r % 3 == 0 { specials[(r >> 8) as usize % specials.len()] } else { xorshift(s) };
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

/// Seed 003's precision search, quantifier-free: a strictly better result would know a bit
/// that `result` leaves unknown, i.e. a bit that is the same for all members. For every
/// unknown bit of `result`, Z3 must find two pairs of members whose results differ there.
/// Returns the first such bit that is in fact constant (an imprecision), if any.
fn find_better_bit(k1: &KnownBits<u64>, k2: &KnownBits<u64>, result: &KnownBits<u64>, op: fn(&BV, &BV) -> BV) -> Result<Option<u32>, String> {
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
    let ops: Vec<(&str, KOp, fn(&BV, &BV) -> BV)> = vec![
        ("and", KnownBits::and, |x, y| x.bvand(y)),
        ("or", KnownBits::or, |x, y| x.bvor(y)),
        ("xor", KnownBits::xor, |x, y| x.bvxor(y)),
        ("add", KnownBits::add, |x, y| x.bvadd(y)),
        ("sub", KnownBits::sub, |x, y| x.bvsub(y)),
        ("neg", |a, _| a.neg(), |x, _| x.bvneg()),
        ("invert", |a, _| a.invert(), |x, _| x.bvnot()),
    ];
    let samples: u64 = std::env::var("PRECISION_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
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
                Ok(Some(bit)) => problems.push(format!("{name}({k1}, {k2}) = {r}: bit {bit} is constant over all members")),
                Err(e) => problems.push(format!("{name}({k1}, {k2}): {e}")),
            }
        }
    }
    println!("precision search: {checked} random inputs over {} ops, {} imprecise", ops.len(), problems.len());
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
fn prove_kb_binop<const N: u32>(f: fn(&KnownBits<Z<N>>, &KnownBits<Z<N>>) -> KnownBits<Z<N>>, op: fn(&BV, &BV) -> BV) -> Result<(), String> {
    let (a, b) = (sym::<N>("a"), sym::<N>("b"));
    let res = f(&a.ib.bits, &b.ib.bits);
    let r = op(&a.x.0, &b.x.0);
    let pre = and(&[&a.pre(), &b.pre()]);
    let mut shown = shown_inputs(&[&a, &b]);
    shown.push(Shown::Value("concrete result".into(), r.clone()));
    shown.push(Shown::Bound("abstract result (bits)".into(), IntBound { bits: res.clone(), range: Interval::unbounded() }));
    prove::<N>(&pre, &res.contains(&Z3Word(r)).0, &shown)
}

#[test]
fn mutation_dropped_carry_is_rejected() {
    prove_kb_binop::<64>(KnownBits::add, |x, y| x.bvadd(y)).expect("the real add is sound");
    let err = prove_kb_binop::<64>(add_dropping_carries, |x, y| x.bvadd(y)).expect_err("the broken add must be rejected");
    println!("broken add rejected with {err}");
    assert!(err.contains("counterexample"), "{err}");
}
