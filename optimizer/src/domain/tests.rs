//! Unit and property tests for the abstract domains (64-bit, plus exhaustive 8-bit checks).

use super::knownbits::{py_div, py_mod};
use super::*;
use proptest::prelude::*;

type IB = IntBound<u64>;
type KB = KnownBits<u64>;

fn kb(s: &str) -> KB {
    s.parse().unwrap()
}

// ---------------------------------------------------------------- concrete semantics

/// Concrete semantics of the binary ops (`None`: invalid, e.g. division by zero).
/// A binary op: its name, its abstract transfer function and its concrete semantics.
type BinCase = (&'static str, fn(&IB, &IB) -> IB, fn(i64, i64) -> Option<i64>);

fn concrete_binops() -> Vec<BinCase> {
    fn b(x: bool) -> Option<i64> {
        Some(x as i64)
    }
    vec![
        ("add", IB::add, |x, y| Some(x.wrapping_add(y))),
        ("sub", IB::sub, |x, y| Some(x.wrapping_sub(y))),
        ("mul", IB::mul, |x, y| Some(x.wrapping_mul(y))),
        ("and", IB::and, |x, y| Some(x & y)),
        ("or", IB::or, |x, y| Some(x | y)),
        ("xor", IB::xor, |x, y| Some(x ^ y)),
        ("uint_mul_high", IB::uint_mul_high, |x, y| {
            Some(((x as u64 as u128 * y as u64 as u128) >> 64) as i64)
        }),
        ("floordiv", IB::floordiv, |x, y| {
            if y == 0 {
                None
            } else {
                Some(x.wrapping_div(y))
            }
        }),
        (
            "mod",
            IB::modulo,
            |x, y| if y == 0 { None } else { Some(x.wrapping_rem(y)) },
        ),
        ("pydiv", IB::pydiv, |x, y| {
            if y == 0 {
                None
            } else {
                Some(py_div(&(x as u64), &(y as u64)) as i64)
            }
        }),
        ("pymod", IB::pymod, |x, y| {
            if y == 0 {
                None
            } else {
                Some(py_mod(&(x as u64), &(y as u64)) as i64)
            }
        }),
        ("eq", IB::eq, |x, y| b(x == y)),
        ("ne", IB::ne, |x, y| b(x != y)),
        ("lt", IB::lt, |x, y| b(x < y)),
        ("le", IB::le, |x, y| b(x <= y)),
        ("gt", IB::gt, |x, y| b(x > y)),
        ("ge", IB::ge, |x, y| b(x >= y)),
        ("ult", IB::ult, |x, y| b((x as u64) < (y as u64))),
        ("ule", IB::ule, |x, y| b((x as u64) <= (y as u64))),
        ("ugt", IB::ugt, |x, y| b((x as u64) > (y as u64))),
        ("uge", IB::uge, |x, y| b((x as u64) >= (y as u64))),
        ("lshift", IB::lshift, |x, y| {
            if (0..64).contains(&y) {
                Some(x << y)
            } else {
                None
            }
        }),
        ("rshift", IB::rshift, |x, y| {
            if (0..64).contains(&y) {
                Some(x >> y)
            } else {
                None
            }
        }),
        ("uint_rshift", IB::uint_rshift, |x, y| {
            if (0..64).contains(&y) {
                Some(((x as u64) >> y) as i64)
            } else {
                None
            }
        }),
    ]
}

/// A unary op: its name, its abstract transfer function and its concrete semantics.
type UnCase = (&'static str, fn(&IB) -> IB, fn(i64) -> i64);

fn concrete_unops() -> Vec<UnCase> {
    vec![
        ("neg", IB::neg, |x| x.wrapping_neg()),
        ("invert", IB::invert, |x| !x),
        ("is_true", IB::is_true, |x| (x != 0) as i64),
        ("is_zero", IB::is_zero, |x| (x == 0) as i64),
        ("force_ge_zero", IB::force_ge_zero, |x| x.max(0)),
        ("signext1", |a| a.signext(1), |x| x as i8 as i64),
        ("signext2", |a| a.signext(2), |x| x as i16 as i64),
        ("signext4", |a| a.signext(4), |x| x as i32 as i64),
        ("signext8", |a| a.signext(8), |x| x),
    ]
}

// ---------------------------------------------------------------- strategies

/// The special integers of the knownbits domain's tests: small numbers, powers of two, powers of two minus one,
/// their negations and inversions, MININT and MAXINT; mixed with uniform integers.
fn special_int() -> impl Strategy<Value = u64> {
    let base = prop_oneof![
        (-20i64..20).prop_map(|x| x as u64),
        (0u32..64).prop_map(|i| 1u64 << i),
        (0u32..64).prop_map(|i| (1u64 << i) - 1),
        Just(i64::MIN as u64),
        Just(i64::MAX as u64),
    ];
    prop_oneof![
        2 => base.clone(),
        1 => base.clone().prop_map(|x| x.wrapping_neg()),
        1 => base.prop_map(|x| !x),
        2 => any::<u64>(),
    ]
}

/// How to widen a concrete value into an abstract value containing it.
#[derive(Clone, Debug)]
struct Widen {
    forget: u64,
    below: u64,
    above: u64,
}

fn widen() -> impl Strategy<Value = Widen> {
    let mask = prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        special_int(),
        any::<u64>(),
        (0u32..64).prop_map(|i| u64::MAX << i)
    ];
    let delta = prop_oneof![Just(0u64), 0u64..10, special_int(), Just(u64::MAX)];
    (mask, delta.clone(), delta).prop_map(|(forget, below, above)| Widen { forget, below, above })
}

/// An abstract value containing `x` (not necessarily reduced, to test arbitrary inputs).
fn widen_around(x: u64, w: &Widen) -> IB {
    let xi = x as i64;
    let lower = xi.saturating_sub(w.below as i64 & i64::MAX) as u64;
    let upper = xi.saturating_add(w.above as i64 & i64::MAX) as u64;
    let bits = KnownBits::new(x & !w.forget, w.forget);
    IntBound {
        bits,
        range: Interval::new(lower, upper),
    }
}

fn member() -> impl Strategy<Value = (IB, u64)> {
    (special_int(), widen()).prop_map(|(x, w)| (widen_around(x, &w), x))
}

fn shift_member() -> impl Strategy<Value = (IB, u64)> {
    (0u64..64, widen()).prop_map(|(x, w)| {
        let mut b = widen_around(
            x,
            &Widen {
                below: w.below % 70,
                above: w.above % 70,
                ..w
            },
        );
        if w.forget & 1 == 0 {
            b = b.reduce();
        }
        (b, x)
    })
}

fn check(name: &str, args: &[&IB], concrete: &[u64], res: &IB, r: u64) {
    assert!(
        res.contains(&r),
        "{name} unsound: args {:?} concrete {:?} -> {} ({r:#x}) not in {} / {:?}",
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        concrete.iter().map(|&c| c as i64).collect::<Vec<_>>(),
        r as i64,
        res,
        res
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn prop_binops_sound((a, x) in member(), (b, y) in member(), (s, sy) in shift_member()) {
        for (name, f, c) in concrete_binops() {
            let shift = name.contains("shift");
            let (b, y) = if shift { (&s, sy) } else { (&b, y) };
            if let Some(r) = c(x as i64, y as i64) {
                check(name, &[&a, b], &[x, y], &f(&a, b), r as u64);
                // reduced inputs too
                check(name, &[&a, b], &[x, y], &f(&a.reduce(), &b.reduce()), r as u64);
            }
        }
    }

    #[test]
    fn prop_unops_sound((a, x) in member()) {
        for (name, f, c) in concrete_unops() {
            check(name, &[&a], &[x], &f(&a), c(x as i64) as u64);
        }
        prop_assert!(a.reduce().contains(&x), "reduce lost {x:#x}: {a:?}");
    }

    #[test]
    fn prop_ovf_sound((a, x) in member(), (b, y) in member()) {
        let (xi, yi) = (x as i64, y as i64);
        type OvfCase = (&'static str, fn(&IB, &IB) -> (IB, bool), Option<i64>);
        let cases: [OvfCase; 3] = [
            ("add_ovf", IB::add_ovf, xi.checked_add(yi)),
            ("sub_ovf", IB::sub_ovf, xi.checked_sub(yi)),
            ("mul_ovf", IB::mul_ovf, xi.checked_mul(yi)),
        ];
        for (name, f, r) in cases {
            let (res, no_ovf) = f(&a, &b);
            match r {
                Some(r) => check(name, &[&a, &b], &[x, y], &res, r as u64),
                None => prop_assert!(!no_ovf, "{name}: claimed no overflow for {xi}, {yi} in {a}, {b}"),
            }
        }
    }

    #[test]
    fn prop_backward_cmp_sound((a, x) in member(), (b, y) in member()) {
        let (xi, yi, xu, yu) = (x as i64, y as i64, x, y);
        for (cmp, holds) in [
            (Cmp::Lt, xi < yi), (Cmp::Le, xi <= yi), (Cmp::Gt, xi > yi), (Cmp::Ge, xi >= yi),
            (Cmp::Eq, x == y), (Cmp::Ne, x != y),
            (Cmp::Ult, xu < yu), (Cmp::Ule, xu <= yu), (Cmp::Ugt, xu > yu), (Cmp::Uge, xu >= yu),
        ] {
            let (na, nb) = IB::learn_cmp(cmp, holds, &a, &b);
            prop_assert!(na.contains(&x) && nb.contains(&y) && !na.is_empty() && !nb.is_empty(),
                "learn_cmp({cmp:?}, {holds}) lost {xi}/{yi}: {a} {b} -> {na} {nb}");
        }
        let mut z = a.clone();
        if x != 0 { z.make_nonzero(); } else { z.make_zero(); }
        prop_assert!(z.contains(&x));
        let mut z = a.clone();
        if xi >= 0 { z.make_nonnegative(); prop_assert!(z.contains(&x)); }
        // intersect with something containing x
        let i = a.intersect(&b.join(&IB::from_constant(x)));
        prop_assert!(i.contains(&x));
    }

    #[test]
    fn prop_backward_ops_sound((a, x) in member(), (b, y) in member(), w in widen()) {
        let check2 = |name: &str, (na, nb): (IB, IB)| {
            assert!(na.contains(&x) && nb.contains(&y), "{name} lost {}/{}: {a} {b} -> {na} {nb}", x as i64, y as i64);
        };
        let r = x.wrapping_add(y);
        let res = widen_around(r, &w);
        check2("backward_add", IB::backward_add(&a, &b, &res));
        let r = x.wrapping_sub(y);
        let res = widen_around(r, &w);
        check2("backward_sub", IB::backward_sub(&a, &b, &res));
        prop_assert!(IB::backward_neg(&a, &widen_around(x.wrapping_neg(), &w)).contains(&x));
        prop_assert!(IB::backward_invert(&a, &widen_around(!x, &w)).contains(&x));
        if let Some(r) = (x as i64).checked_add(y as i64) {
            check2("backward_add_ovf", IB::backward_add_ovf(&a, &b, &widen_around(r as u64, &w)));
        }
        if let Some(r) = (x as i64).checked_sub(y as i64) {
            check2("backward_sub_ovf", IB::backward_sub_ovf(&a, &b, &widen_around(r as u64, &w)));
        }
        // constant multiplier
        let d = IB::from_constant(y);
        if let Some(r) = (x as i64).checked_mul(y as i64) {
            prop_assert!(IB::backward_mul_ovf_const(&a, &d, &widen_around(r as u64, &w)).contains(&x));
        }
    }

    #[test]
    fn prop_backward_bitwise_sound((a, x) in member(), (b, y) in member(), w in widen()) {
        // knownbits alone: well-formed, and x / y stay members, for a widened and an exact result
        for (name, r, f) in [
            ("and", x & y, KB::backward_and as fn(&KB, &KB) -> KB),
            ("or", x | y, KB::backward_or),
            ("xor", x ^ y, KB::backward_xor),
        ] {
            for res in [widen_around(r, &w).bits, KB::from_constant(r)] {
                for (other, v) in [(&b.bits, x), (&a.bits, y)] {
                    let k = f(other, &res);
                    prop_assert!(k.ones & k.unknowns == 0, "backward_{name} ill-formed: {k:?}");
                    prop_assert!(k.contains(&v), "backward_{name} lost {v:#x}: other {other} res {res} -> {k}");
                }
            }
        }
        // IntBound, both operands
        let check2 = |name: &str, (na, nb): (IB, IB)| {
            assert!(na.contains(&x) && nb.contains(&y), "{name} lost {}/{}: {a} {b} -> {na} {nb}", x as i64, y as i64);
        };
        check2("backward_and", IB::backward_and(&a, &b, &widen_around(x & y, &w)));
        check2("backward_and exact", IB::backward_and(&a, &b, &IB::from_constant(x & y)));
        check2("backward_or", IB::backward_or(&a, &b, &widen_around(x | y, &w)));
        check2("backward_or exact", IB::backward_or(&a, &b, &IB::from_constant(x | y)));
        check2("backward_xor", IB::backward_xor(&a, &b, &widen_around(x ^ y, &w)));
        check2("backward_xor exact", IB::backward_xor(&a, &b, &IB::from_constant(x ^ y)));
    }

    #[test]
    fn prop_constants_fold(x in special_int(), y in special_int(), s in 0u64..64) {
        let (a, b, sh) = (IB::from_constant(x), IB::from_constant(y), IB::from_constant(s));
        for (name, f, c) in concrete_binops() {
            let b = if name.contains("shift") { &sh } else { &b };
            let y = b.constant_value();
            if let Some(r) = c(x as i64, y as i64) {
                prop_assert_eq!(f(&a, b).get_constant(), Some(r), "{} {} {}", name, x as i64, y as i64);
            }
        }
        for (name, f, c) in concrete_unops() {
            prop_assert_eq!(f(&a).get_constant(), Some(c(x as i64)), "{}", name);
        }
    }

    #[test]
    fn prop_knownbits_print_parse(x in any::<u64>(), forget in any::<u64>()) {
        let k = KnownBits::new(x & !forget, forget);
        let s = k.to_string();
        prop_assert_eq!(s.parse::<KB>().unwrap(), k);
    }
}

// ---------------------------------------------------------------- examples

#[test]
fn knownbits_str() {
    assert_eq!(KB::from_constant(0).to_string(), "0");
    assert_eq!(KB::from_constant(5).to_string(), "101");
    assert_eq!(KB::new(5, 0b10).to_string(), "1?1");
    assert_eq!(KB::new(!0b1111, 0b10).to_string(), "...100?0");
    assert_eq!(KB::new(1, !0b1).to_string(), "...?1");
    assert_eq!(KB::unknown().to_string(), "...?");
    assert_eq!(KB::from_constant(u64::MAX).to_string(), "...1");
    assert!("12".parse::<KB>().is_err());
}

#[test]
fn knownbits_contains() {
    let k1 = kb("1?1");
    assert!(k1.contains(&0b111) && k1.contains(&0b101));
    assert!(!k1.contains(&0b110) && !k1.contains(&0b011));
    let k2 = kb("...?1");
    for i in -101i64..100 {
        assert_eq!(k2.contains(&(i as u64)), i & 1 != 0);
    }
}

#[test]
fn knownbits_examples() {
    assert_eq!(kb("01?01?01?").invert().to_string(), "...10?10?10?");
    assert_eq!(kb("...?").invert().to_string(), "...?");
    assert_eq!(kb("01?01?01?").or(&kb("000111???")).to_string(), "1?111?1?");
    assert_eq!(kb("0?10?10?10").add(&kb("0???111000")).to_string(), "?????01?10");
    assert_eq!(kb("0?10?10?10").sub(&kb("0???111000")).to_string(), "...?11?10");
    assert_eq!(
        kb("...1?10?10?10").sub(&kb("...10000???111000")).to_string(),
        "111?????11?10"
    );
    assert_eq!(kb("...?").eq(&kb("...?")).to_string(), "?");
    assert_eq!(KB::from_constant(10).eq(&KB::from_constant(10)).to_string(), "1");
    assert_eq!(KB::from_constant(10).eq(&KB::from_constant(20)).to_string(), "0");
    // alignment: (x & ~7) + 16 is a multiple of 8
    let aligned = KB::unknown().and(&KB::from_constant(!7)).add(&KB::from_constant(16));
    assert_eq!(aligned.and(&KB::from_constant(7)).get_constant(), Some(0));
    // x | 1 has the low bit set
    assert_eq!(
        KB::unknown()
            .or(&KB::from_constant(1))
            .and(&KB::from_constant(1))
            .get_constant(),
        Some(1)
    );
    // is_and_identity: (x & 15) & (y | 15) == x & 15
    let a = KB::unknown().and(&KB::from_constant(15));
    let b = KB::unknown().or(&KB::from_constant(15));
    assert!(a.is_and_identity(&b));
    assert!(!b.is_and_identity(&a));
    assert!(b.is_or_identity(&KB::from_constant(15)));
    // mul: trailing zeros
    assert_eq!(kb("...?000").mul(&kb("...?00")).to_string(), "...?00000");
    assert_eq!(kb("...?1").mul(&kb("...?1")).to_string(), "...?1");
    // shifts
    assert_eq!(kb("1?").lshift(&KB::from_constant(4)).to_string(), "1?0000");
    assert_eq!(kb("...?1").lshift(&kb("1?")).to_string(), "...?00");
    assert_eq!(kb("11").lshift(&kb("1?")).to_string(), "?1?00");
    assert_eq!(KB::new(1 << 63, 0).rshift(&KB::from_constant(62)).to_string(), "...10");
    assert_eq!(
        KB::new(1 << 63, 0).uint_rshift(&KB::from_constant(62)).to_string(),
        "10"
    );
    assert_eq!(kb("1?????").signext(1).to_string(), "1?????");
    assert_eq!(kb("1?0000000").signext(1).to_string(), "...?0000000");
}

#[test]
fn intbound_reduction() {
    let b = IB::from_range_i64(0, 255);
    assert_eq!(b.known_zeros(), !0xff);
    let b = IB::from_range_i64(16, 31);
    assert_eq!(b.bits.to_string(), "1????");
    let b = IB::from_knownbits(kb("1?0"));
    assert_eq!((b.lower_i64(), b.upper_i64()), (4, 6));
    let b = IB::from_knownbits(kb("...?0?0"));
    assert_eq!((b.lower_i64(), b.upper_i64()), (i64::MIN, i64::MAX - 5));
    assert_eq!(IB::from_range_i64(7, 7).bits.get_constant(), Some(7));
    assert_eq!(IB::from_knownbits(KB::from_constant(7)).get_constant(), Some(7));
    // x & 0xff is in [0, 255]
    let b = IB::unbounded().and(&IB::from_i64(0xff));
    assert_eq!((b.lower_i64(), b.upper_i64()), (0, 255));
    assert!(IB::unbounded().lt(&IB::unbounded()).is_bool());
}

#[test]
fn intbound_pypy_bugs() {
    // int_add(x, 10) < 15 does not imply x < 5 (wrapping): MAXINT + 10 < 15.
    let x = IB::unbounded();
    let ten = IB::from_i64(10);
    let r = x.add(&ten);
    let (r2, _) = IB::learn_cmp(Cmp::Lt, true, &r, &IB::from_i64(15));
    let (x2, _) = IB::backward_add(&x, &ten, &r2);
    assert!(x2.contains_i64(i64::MAX));
    // with int_add_ovf it does
    let (r, _) = x.add_ovf(&ten);
    let (r2, _) = IB::learn_cmp(Cmp::Lt, true, &r, &IB::from_i64(15));
    let (x2, _) = IB::backward_add_ovf(&x, &ten, &r2);
    assert!(x2.known_lt_const(&5) && !x2.contains_i64(i64::MAX));
    // -MININT == MININT
    let n = IB::from_range_i64(i64::MIN, -5).neg();
    assert!(n.contains_i64(i64::MIN) && n.contains_i64(5));
    assert!(IB::from_i64(i64::MIN).neg().get_constant() == Some(i64::MIN));
    // 12 == int_mul(x, 12) does not mean x == 1 (0x8000000000000001 * 12 == 12)
    let r = IB::unbounded().mul(&IB::from_i64(12));
    let mut r = r.clone();
    r.make_eq(&IB::from_i64(12));
    assert!(r.get_constant() == Some(12));
    let x = IB::backward_mul_ovf_const(&IB::unbounded(), &IB::from_i64(12), &r);
    assert_eq!(x.get_constant(), Some(1)); // only valid because this is int_mul_ovf
    let (_, no_ovf) = IB::unbounded().mul_ovf(&IB::from_i64(12));
    assert!(!no_ovf);
    // contradiction: x < MININT
    let mut x = IB::unbounded();
    x.make_lt(&IB::from_i64(i64::MIN));
    assert!(x.is_empty());
    let mut x = IB::from_i64(3);
    x.make_ne(&IB::from_i64(3));
    assert!(x.is_empty());
}

#[test]
fn intbound_ovf_removal() {
    let a = IB::from_range_i64(0, 100);
    let b = IB::from_range_i64(-5, 5);
    let (r, ok) = a.add_ovf(&b);
    assert!(ok);
    assert_eq!((r.lower_i64(), r.upper_i64()), (-5, 105));
    let (_, ok) = IB::nonnegative().add_ovf(&IB::from_i64(1));
    assert!(!ok);
    let (r, ok) = a.mul_ovf(&b);
    assert!(ok);
    assert_eq!((r.lower_i64(), r.upper_i64()), (-500, 500));
}

/// Exhaustive soundness of every binary transfer function at 8 bits, for all pairs of
/// knownbits-only abstract values with at most 3 unknown bits each and all their members,
/// and for all pairs of small intervals.
#[test]
fn exhaustive_8bit_binops() {
    type I8b = IntBound<u8>;
    type Case = (&'static str, fn(&I8b, &I8b) -> I8b, fn(u8, u8) -> Option<u8>);
    let ops: Vec<Case> = vec![
        ("add", I8b::add, |x, y| Some(x.wrapping_add(y))),
        ("sub", I8b::sub, |x, y| Some(x.wrapping_sub(y))),
        ("mul", I8b::mul, |x, y| Some(x.wrapping_mul(y))),
        ("and", I8b::and, |x, y| Some(x & y)),
        ("or", I8b::or, |x, y| Some(x | y)),
        ("xor", I8b::xor, |x, y| Some(x ^ y)),
        ("uint_mul_high", I8b::uint_mul_high, |x, y| {
            Some(((x as u16 * y as u16) >> 8) as u8)
        }),
        ("lt", I8b::lt, |x, y| Some(((x as i8) < (y as i8)) as u8)),
        ("ult", I8b::ult, |x, y| Some((x < y) as u8)),
        ("lshift", I8b::lshift, |x, y| (y < 8).then(|| x << y)),
        ("rshift", I8b::rshift, |x, y| (y < 8).then(|| ((x as i8) >> y) as u8)),
        ("uint_rshift", I8b::uint_rshift, |x, y| (y < 8).then(|| x >> y)),
        ("floordiv", I8b::floordiv, |x, y| {
            (y != 0).then(|| (x as i8).wrapping_div(y as i8) as u8)
        }),
        ("mod", I8b::modulo, |x, y| {
            (y != 0).then(|| (x as i8).wrapping_rem(y as i8) as u8)
        }),
    ];
    // knownbits with <= 2 unknown bits
    let mut kbs = Vec::new();
    for unknowns in 0u16..256 {
        if unknowns.count_ones() <= 2 {
            for ones in 0u16..256 {
                if ones & unknowns == 0 && (ones % 7 == 0 || !(9..=250).contains(&ones)) {
                    kbs.push(I8b::from_knownbits(KnownBits::new(ones as u8, unknowns as u8)));
                }
            }
        }
    }
    // intervals with small width
    for lo in (-128i16..128).step_by(5) {
        for w in [0i16, 1, 3, 17] {
            let hi = (lo + w).min(127);
            kbs.push(I8b::from_range(lo as u8, hi as u8));
        }
    }
    let members: Vec<Vec<u8>> = kbs
        .iter()
        .map(|b| (0..=255u8).filter(|v| b.contains(v)).collect())
        .collect();
    for (name, f, c) in &ops {
        for (i, a) in kbs.iter().enumerate().step_by(3) {
            for (j, b) in kbs.iter().enumerate().step_by(5) {
                let r = f(a, b);
                for &x in &members[i] {
                    for &y in &members[j] {
                        if let Some(v) = c(x, y) {
                            assert!(
                                r.contains(&v),
                                "{name} at 8 bits: {x} {y} -> {v} not in {r:?} ({a:?}, {b:?})"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn backward_and_learns_alignment() {
    // x & 7 == 0: the low three bits of x are 0, the others stay unknown
    let k = KB::backward_and(&KB::from_constant(7), &KB::from_constant(0));
    assert_eq!(k.to_string(), "...?000");
    // x & 0xf0 == 0x30: bits 4..8 are 0011, bit 0 unknown (mask 0 there)
    let k = KB::backward_and(&kb("11110000"), &kb("110000"));
    assert_eq!(k.to_string(), "...?0011????");
    // a known one of the result is a one of x whatever the mask
    let k = KB::backward_and(&KB::unknown(), &kb("...?1"));
    assert_eq!(k.to_string(), "...?1");
    // x | 1 == 5 (so x is 4 or 5): bit 2 is 1, bit 1 and the high bits 0, bit 0 unknown
    let k = KB::backward_or(&KB::from_constant(1), &KB::from_constant(5));
    assert_eq!(k.to_string(), "10?");
    let (x, _) = IB::backward_and(&IB::unbounded(), &IB::from_constant(7), &IB::from_constant(0));
    assert_eq!(x.known_zeros() & 7, 7);
    // x ^ 6 == 3: x is 5, exactly
    let (x, _) = IB::backward_xor(&IB::unbounded(), &IB::from_constant(6), &IB::from_constant(3));
    assert_eq!(x.get_constant(), Some(5));
    // (x ^ y) ends in 01 and y ends in 11: x ends in 10
    let k = KB::backward_xor(&kb("...?11"), &kb("...?01"));
    assert_eq!(k.to_string(), "...?10");
}
