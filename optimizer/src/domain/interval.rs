//! The signed interval domain `lower <= x <= upper`, with forward and backward functions.
//!
//! Generic over [`Word`] and branch-free on data (`select` only), so `verify` proves this
//! exact code. Wrapping ops return the full range whenever the result could wrap in a way
//! that breaks contiguity (PyPy's `int_add(x, 10) < 15` bug); `_ovf` ops return
//! the range assuming no overflow plus a flag "overflow is impossible".
//!
//! An interval with `lower > upper` is **empty**: the backward `make_*` functions produce it
//! when a condition cannot hold (the guard always fails). Forward functions on an empty
//! input return some value (any result is sound for an empty set).
//!
//! Naming (PyPy `intutils.py`): `known_*` are queries, `make_*` mutate `self` with what a
//! condition teaches, `backward_*` return refined argument bounds from a result bound.

use super::knownbits::py_div;
use super::word::{Word, WordBool};

/// The bool type of `W`.
type B<W> = <W as Word>::Bool;

/// A signed interval over the word type `W`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Interval<W> {
    /// Smallest possible value (signed).
    pub lower: W,
    /// Largest possible value (signed).
    pub upper: W,
}

fn sel<W: Word>(c: &B<W>, a: &Interval<W>, b: &Interval<W>) -> Interval<W> {
    Interval {
        lower: W::select(c, &a.lower, &b.lower),
        upper: W::select(c, &a.upper, &b.upper),
    }
}

fn bmin<W: Word>(v: [&W; 4]) -> W {
    v[0].smin(v[1]).smin(&v[2].smin(v[3]))
}

fn bmax<W: Word>(v: [&W; 4]) -> W {
    v[0].smax(v[1]).smax(&v[2].smax(v[3]))
}

fn c<W: Word>(v: u64) -> W {
    W::from_u64(v)
}

impl<W: Word> Interval<W> {
    // ------------------------------------------------------------------ construction

    /// `lower..=upper`.
    pub fn new(lower: W, upper: W) -> Self {
        Interval { lower, upper }
    }

    /// The full range (top).
    pub fn unbounded() -> Self {
        Interval {
            lower: W::min_signed(),
            upper: W::max_signed(),
        }
    }

    /// The singleton `{v}`.
    pub fn from_constant(v: W) -> Self {
        Interval {
            lower: v.clone(),
            upper: v,
        }
    }

    /// `0..=MAX`.
    pub fn nonnegative() -> Self {
        Interval {
            lower: W::zero(),
            upper: W::max_signed(),
        }
    }

    /// `0..=1`.
    pub fn boolean() -> Self {
        Interval {
            lower: W::zero(),
            upper: W::one(),
        }
    }

    /// The empty interval.
    pub fn empty() -> Self {
        Interval {
            lower: W::max_signed(),
            upper: W::min_signed(),
        }
    }

    /// Selects `a` if `cond`, else `b`.
    pub fn select(cond: &B<W>, a: &Self, b: &Self) -> Self {
        sel(cond, a, b)
    }

    /// A boolean result: `1` if `known_true`, `0` if `known_false`, else `0..=1`.
    pub fn from_bool_knowledge(known_true: &B<W>, known_false: &B<W>) -> Self {
        Interval {
            lower: W::from_word_bool(known_true),
            upper: W::select(known_false, &W::zero(), &W::one()),
        }
    }

    /// The interval of the unsigned range `ulo..=uhi` (unsigned `ulo <= uhi`): exact if both
    /// ends have the same sign bit, otherwise the full range.
    pub fn from_unsigned_range(ulo: &W, uhi: &W) -> Self {
        let same = ulo.is_negative().iff(&uhi.is_negative());
        sel(
            &same,
            &Interval {
                lower: ulo.clone(),
                upper: uhi.clone(),
            },
            &Self::unbounded(),
        )
    }

    // ------------------------------------------------------------------ queries

    /// Whether no value is possible.
    pub fn is_empty(&self) -> B<W> {
        self.upper.slt(&self.lower)
    }

    /// Whether `v` is a member.
    pub fn contains(&self, v: &W) -> B<W> {
        self.lower.sle(v).and(&v.sle(&self.upper))
    }

    /// Whether the interval is the singleton.
    pub fn is_constant(&self) -> B<W> {
        self.lower.equals(&self.upper)
    }

    /// Whether every member of `self` is in `other`.
    pub fn is_subset_of(&self, other: &Self) -> B<W> {
        other.lower.sle(&self.lower).and(&self.upper.sle(&other.upper))
    }

    /// Whether all members are `>= 0`.
    pub fn known_nonnegative(&self) -> B<W> {
        self.lower.is_negative().not()
    }

    /// Whether all members are `< 0`.
    pub fn known_negative(&self) -> B<W> {
        self.upper.is_negative()
    }

    /// Whether every member of `self` is `<` every member of `other`.
    pub fn known_lt(&self, other: &Self) -> B<W> {
        self.upper.slt(&other.lower)
    }

    /// Whether every member of `self` is `<=` every member of `other`.
    pub fn known_le(&self, other: &Self) -> B<W> {
        self.upper.sle(&other.lower)
    }

    /// Whether every member of `self` is `>` every member of `other`.
    pub fn known_gt(&self, other: &Self) -> B<W> {
        other.known_lt(self)
    }

    /// Whether every member of `self` is `>=` every member of `other`.
    pub fn known_ge(&self, other: &Self) -> B<W> {
        other.known_le(self)
    }

    /// Whether the two intervals share no member.
    pub fn known_ne(&self, other: &Self) -> B<W> {
        self.known_lt(other).or(&self.known_gt(other))
    }

    /// Whether both ends have the same sign (then the unsigned range is `lower..=upper`).
    pub fn is_same_sign(&self) -> B<W> {
        self.lower.is_negative().iff(&self.upper.is_negative())
    }

    /// The smallest member as unsigned (0 if the interval crosses the sign boundary).
    pub fn unsigned_min(&self) -> W {
        W::select(&self.is_same_sign(), &self.lower, &W::zero())
    }

    /// The largest member as unsigned (all ones if the interval crosses the sign boundary).
    pub fn unsigned_max(&self) -> W {
        W::select(&self.is_same_sign(), &self.upper, &W::ones())
    }

    /// Whether every member of `self` is unsigned-`<` every member of `other`.
    pub fn known_ult(&self, other: &Self) -> B<W> {
        self.unsigned_max().ult(&other.unsigned_min())
    }

    /// Whether every member of `self` is unsigned-`<=` every member of `other`.
    pub fn known_ule(&self, other: &Self) -> B<W> {
        self.unsigned_max().ule(&other.unsigned_min())
    }

    // ------------------------------------------------------------------ lattice

    /// The intersection (may be empty).
    pub fn intersect(&self, other: &Self) -> Self {
        Interval {
            lower: self.lower.smax(&other.lower),
            upper: self.upper.smin(&other.upper),
        }
    }

    /// The smallest interval containing both (for non-empty inputs).
    pub fn join(&self, other: &Self) -> Self {
        Interval {
            lower: self.lower.smin(&other.lower),
            upper: self.upper.smax(&other.upper),
        }
    }

    /// Intersects with the unsigned range `ulo..=uhi`, where that is expressible.
    fn intersect_unsigned(&self, ulo: &W, uhi: &W) -> Self {
        // if self does not cross the sign boundary, its unsigned range is lower..=upper
        let as_unsigned = Interval {
            lower: self.lower.umax(ulo),
            upper: self.upper.umin(uhi),
        };
        // an unsigned-empty result: make it signed-empty
        let as_unsigned = sel(&as_unsigned.upper.ult(&as_unsigned.lower), &Self::empty(), &as_unsigned);
        let other = self.intersect(&Self::from_unsigned_range(ulo, uhi));
        let other = sel(&uhi.ult(ulo), &Self::empty(), &other);
        sel(&self.is_same_sign(), &as_unsigned, &other)
    }

    // ------------------------------------------------------------------ forward: arithmetic

    /// `int_add` (wrapping). Exact bounds when both end sums wrap the same way (or not at
    /// all), the full range otherwise.
    pub fn add(&self, other: &Self) -> Self {
        let lo = self.lower.add(&other.lower);
        let hi = self.upper.add(&other.upper);
        let lo_ovf = self.lower.sadd_overflows(&other.lower);
        let hi_ovf = self.upper.sadd_overflows(&other.upper);
        // an overflow of the lower sum is upward iff the summands are non-negative
        let lo_up = lo_ovf.and(&self.lower.is_negative().not());
        let hi_up = hi_ovf.and(&self.upper.is_negative().not());
        let lo_down = lo_ovf.and(&lo_up.not());
        let hi_down = hi_ovf.and(&hi_up.not());
        let same = lo_up.iff(&hi_up).and(&lo_down.iff(&hi_down));
        sel(&same, &Interval { lower: lo, upper: hi }, &Self::unbounded())
    }

    /// `int_sub` (wrapping), like [`Self::add`].
    pub fn sub(&self, other: &Self) -> Self {
        let lo = self.lower.sub(&other.upper);
        let hi = self.upper.sub(&other.lower);
        let lo_ovf = self.lower.ssub_overflows(&other.upper);
        let hi_ovf = self.upper.ssub_overflows(&other.lower);
        let lo_up = lo_ovf.and(&self.lower.is_negative().not());
        let hi_up = hi_ovf.and(&self.upper.is_negative().not());
        let lo_down = lo_ovf.and(&lo_up.not());
        let hi_down = hi_ovf.and(&hi_up.not());
        let same = lo_up.iff(&hi_up).and(&lo_down.iff(&hi_down));
        sel(&same, &Interval { lower: lo, upper: hi }, &Self::unbounded())
    }

    /// `int_neg` (wrapping: `-MIN == MIN`).
    pub fn neg(&self) -> Self {
        Self::from_constant(W::zero()).sub(self)
    }

    /// `int_invert`: `~x`, exact.
    pub fn invert(&self) -> Self {
        Interval {
            lower: self.upper.not(),
            upper: self.lower.not(),
        }
    }

    /// `int_mul` (wrapping): the corner products if none of them overflows, else full.
    pub fn mul(&self, other: &Self) -> Self {
        let (r, ok) = self.mul_ovf(other);
        sel(&ok, &r, &Self::unbounded())
    }

    /// `int_add_ovf`: the result assuming no overflow, and whether overflow is impossible.
    pub fn add_ovf(&self, other: &Self) -> (Self, B<W>) {
        let ok = self
            .lower
            .sadd_overflows(&other.lower)
            .not()
            .and(&self.upper.sadd_overflows(&other.upper).not());
        (
            Interval {
                lower: self.lower.sadd_sat(&other.lower),
                upper: self.upper.sadd_sat(&other.upper),
            },
            ok,
        )
    }

    /// `int_sub_ovf`: the result assuming no overflow, and whether overflow is impossible.
    pub fn sub_ovf(&self, other: &Self) -> (Self, B<W>) {
        let ok = self
            .lower
            .ssub_overflows(&other.upper)
            .not()
            .and(&self.upper.ssub_overflows(&other.lower).not());
        (
            Interval {
                lower: self.lower.ssub_sat(&other.upper),
                upper: self.upper.ssub_sat(&other.lower),
            },
            ok,
        )
    }

    /// `int_mul_ovf`: the result assuming no overflow (the corner products, or full if a
    /// corner overflows), and whether overflow is impossible (no corner overflows).
    pub fn mul_ovf(&self, other: &Self) -> (Self, B<W>) {
        let (a, b, c_, d) = (&self.lower, &self.upper, &other.lower, &other.upper);
        let p = [a.mul(c_), a.mul(d), b.mul(c_), b.mul(d)];
        let ok = a
            .smul_overflows(c_)
            .or(&a.smul_overflows(d))
            .or(&b.smul_overflows(c_))
            .or(&b.smul_overflows(d))
            .not();
        let r = Interval {
            lower: bmin([&p[0], &p[1], &p[2], &p[3]]),
            upper: bmax([&p[0], &p[1], &p[2], &p[3]]),
        };
        (sel(&ok, &r, &Self::unbounded()), ok)
    }

    /// `uint_mul_high`: monotone in both unsigned arguments.
    pub fn uint_mul_high(&self, other: &Self) -> Self {
        let lo = self.unsigned_min().umul_high(&other.unsigned_min());
        let hi = self.unsigned_max().umul_high(&other.unsigned_max());
        Self::from_unsigned_range(&lo, &hi)
    }

    /// `int_floordiv` (C, truncating). With a known constant divisor `d`: monotone bounds
    /// for `d > 0` and `d < -1`, negation for `d == -1`; otherwise the full range. A zero
    /// divisor is invalid.
    pub fn floordiv(&self, other: &Self) -> Self {
        self.div_by_const(other, |a, b| a.sdiv(b))
    }

    /// `int_pydiv` (Python floor division), like [`Self::floordiv`].
    pub fn pydiv(&self, other: &Self) -> Self {
        self.div_by_const(other, py_div)
    }

    fn div_by_const(&self, other: &Self, f: impl Fn(&W, &W) -> W) -> Self {
        let d = &other.lower;
        let lo = f(&self.lower, d);
        let hi = f(&self.upper, d);
        let pos = Interval {
            lower: lo.clone(),
            upper: hi.clone(),
        };
        let negd = Interval { lower: hi, upper: lo };
        let is_const = other.is_constant();
        let r = sel(
            &d.sgt(&W::zero()),
            &pos,
            &sel(
                &d.slt(&W::ones()),
                &negd,
                &sel(&d.equals(&W::ones()), &self.neg(), &Self::unbounded()),
            ),
        );
        sel(&is_const, &r, &Self::unbounded())
    }

    /// `int_mod` (C remainder, sign of the dividend): `|r| <= |x|` with the sign of `x`, and
    /// `|r| < |d|` for a known divisor range not containing `MIN`.
    pub fn modulo(&self, other: &Self) -> Self {
        // |r| <= |x|, same sign as x (or 0)
        let base = Interval {
            lower: self.lower.smin(&W::zero()),
            upper: self.upper.smax(&W::zero()),
        };
        let m = self.divisor_magnitude_bound(other);
        base.intersect(&Interval {
            lower: m.neg(),
            upper: m,
        })
    }

    /// `int_pymod` (Python modulo, sign of the divisor).
    pub fn pymod(&self, other: &Self) -> Self {
        let m = self.divisor_magnitude_bound(other);
        let pos = Interval {
            lower: W::zero(),
            upper: m.clone(),
        };
        let neg = Interval {
            lower: m.neg(),
            upper: W::zero(),
        };
        sel(
            &other.known_nonnegative(),
            &pos,
            &sel(
                &other.known_negative(),
                &neg,
                &Interval {
                    lower: m.neg(),
                    upper: m,
                },
            ),
        )
    }

    /// `max(|d|) - 1` over the divisor range (or `MAX` if the range contains `MIN`).
    fn divisor_magnitude_bound(&self, other: &Self) -> W {
        let has_min = other.lower.equals(&W::min_signed());
        let mag = other
            .lower
            .neg()
            .smax(&other.upper)
            .smax(&other.upper.neg())
            .smax(&other.lower);
        W::select(&has_min, &W::max_signed(), &mag.sub(&W::one()).smax(&W::zero()))
    }

    // ------------------------------------------------------------------ forward: bitwise

    /// `int_and`: for a non-negative argument, `0..=its upper`.
    pub fn and(&self, other: &Self) -> Self {
        let a_nn = self.known_nonnegative();
        let b_nn = other.known_nonnegative();
        let both = Interval {
            lower: W::zero(),
            upper: self.upper.smin(&other.upper),
        };
        let only_a = Interval {
            lower: W::zero(),
            upper: self.upper.clone(),
        };
        let only_b = Interval {
            lower: W::zero(),
            upper: other.upper.clone(),
        };
        // both negative: the result is negative and <= min(upper)
        let both_neg = Interval {
            lower: W::min_signed(),
            upper: self.upper.smin(&other.upper),
        };
        let neg = self.known_negative().and(&other.known_negative());
        sel(
            &a_nn.and(&b_nn),
            &both,
            &sel(
                &a_nn,
                &only_a,
                &sel(&b_nn, &only_b, &sel(&neg, &both_neg, &Self::unbounded())),
            ),
        )
    }

    /// `int_or`: for non-negative arguments, `max(lowers)..=` the all-ones mask covering both.
    pub fn or(&self, other: &Self) -> Self {
        let nn = self.known_nonnegative().and(&other.known_nonnegative());
        let mask = self.upper.or(&other.upper).smear_right();
        let r = Interval {
            lower: self.lower.smax(&other.lower),
            upper: mask,
        };
        sel(&nn, &r, &Self::unbounded())
    }

    /// `int_xor`: for non-negative arguments, `0..=` the all-ones mask covering both.
    pub fn xor(&self, other: &Self) -> Self {
        let nn = self.known_nonnegative().and(&other.known_nonnegative());
        let mask = self.upper.or(&other.upper).smear_right();
        sel(
            &nn,
            &Interval {
                lower: W::zero(),
                upper: mask,
            },
            &Self::unbounded(),
        )
    }

    // ------------------------------------------------------------------ forward: shifts

    /// Clips a shift-amount range to `0..=BITS-1` (other amounts are invalid).
    fn shift_amounts(amount: &Self) -> (W, W) {
        let lo = amount.lower.smax(&W::zero());
        let hi = amount.upper.smin(&c(u64::from(W::BITS - 1)));
        (lo, hi)
    }

    /// `int_lshift`: corner values if the largest shift overflows neither bound, else full.
    /// Amounts outside `0..BITS` are invalid.
    pub fn lshift(&self, amount: &Self) -> Self {
        let (smin, smax) = Self::shift_amounts(amount);
        let lo_max = self.lower.shl(&smax);
        let hi_max = self.upper.shl(&smax);
        let ok = lo_max
            .ashr(&smax)
            .equals(&self.lower)
            .and(&hi_max.ashr(&smax).equals(&self.upper));
        let lo_min = self.lower.shl(&smin);
        let hi_min = self.upper.shl(&smin);
        let r = Interval {
            lower: bmin([&lo_min, &lo_max, &hi_min, &hi_max]),
            upper: bmax([&lo_min, &lo_max, &hi_min, &hi_max]),
        };
        sel(&ok, &r, &Self::unbounded())
    }

    /// `int_rshift` (arithmetic). Amounts outside `0..BITS` are invalid.
    pub fn rshift(&self, amount: &Self) -> Self {
        let (smin, smax) = Self::shift_amounts(amount);
        let l1 = self.lower.ashr(&smin);
        let l2 = self.lower.ashr(&smax);
        let h1 = self.upper.ashr(&smin);
        let h2 = self.upper.ashr(&smax);
        Interval {
            lower: l1.smin(&l2),
            upper: h1.smax(&h2),
        }
    }

    /// `uint_rshift` (logical): monotone on the unsigned range. Amounts outside `0..BITS` are
    /// invalid.
    pub fn uint_rshift(&self, amount: &Self) -> Self {
        let (smin, smax) = Self::shift_amounts(amount);
        let lo = self.unsigned_min().lshr(&smax);
        let hi = self.unsigned_max().lshr(&smin);
        Self::from_unsigned_range(&lo, &hi)
    }

    // ------------------------------------------------------------------ forward: misc

    /// `int_signext(x, nbytes)`: identity if `x` fits in `nbytes` signed bytes, otherwise
    /// that range. `nbytes` is an op parameter (Rust `if` on it, not on data).
    pub fn signext(&self, nbytes: u32) -> Self {
        let bits = nbytes.saturating_mul(8);
        if bits >= W::BITS || bits == 0 {
            return self.clone();
        }
        let hi = W::one().shl(&c(u64::from(bits - 1))).sub(&W::one());
        let range = Interval {
            lower: hi.not(),
            upper: hi,
        };
        sel(&self.is_subset_of(&range), self, &range)
    }

    /// `int_force_ge_zero(x)`: `max(x, 0)`.
    pub fn force_ge_zero(&self) -> Self {
        Interval {
            lower: self.lower.smax(&W::zero()),
            upper: self.upper.smax(&W::zero()),
        }
    }

    /// `int_is_true(x)`.
    pub fn is_true(&self) -> Self {
        let zero = Self::from_constant(W::zero());
        Self::from_bool_knowledge(&self.contains(&W::zero()).not(), &self.is_subset_of(&zero))
    }

    /// `int_is_zero(x)`.
    pub fn is_zero(&self) -> Self {
        let zero = Self::from_constant(W::zero());
        Self::from_bool_knowledge(&self.is_subset_of(&zero), &self.contains(&W::zero()).not())
    }

    // ------------------------------------------------------------------ forward: comparisons

    /// `int_eq`.
    pub fn eq(&self, other: &Self) -> Self {
        let t = self
            .is_constant()
            .and(&other.is_constant())
            .and(&self.lower.equals(&other.lower));
        Self::from_bool_knowledge(&t, &self.known_ne(other))
    }

    /// `int_ne`.
    pub fn ne(&self, other: &Self) -> Self {
        let f = self
            .is_constant()
            .and(&other.is_constant())
            .and(&self.lower.equals(&other.lower));
        Self::from_bool_knowledge(&self.known_ne(other), &f)
    }

    /// `int_lt`.
    pub fn lt(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(&self.known_lt(other), &self.known_ge(other))
    }

    /// `int_le`.
    pub fn le(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(&self.known_le(other), &self.known_gt(other))
    }

    /// `int_gt`.
    pub fn gt(&self, other: &Self) -> Self {
        other.lt(self)
    }

    /// `int_ge`.
    pub fn ge(&self, other: &Self) -> Self {
        other.le(self)
    }

    /// `uint_lt`.
    pub fn ult(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(&self.known_ult(other), &other.known_ule(self))
    }

    /// `uint_le`.
    pub fn ule(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(&self.known_ule(other), &other.known_ult(self))
    }

    /// `uint_gt`.
    pub fn ugt(&self, other: &Self) -> Self {
        other.ult(self)
    }

    /// `uint_ge`.
    pub fn uge(&self, other: &Self) -> Self {
        other.ule(self)
    }

    // ------------------------------------------------------------------ backward: conditions

    /// Learn `self < other`.
    pub fn make_lt(&mut self, other: &Self) {
        let impossible = other.upper.equals(&W::min_signed());
        let r = Interval {
            lower: self.lower.clone(),
            upper: self.upper.smin(&other.upper.sub(&W::one())),
        };
        *self = sel(&impossible, &Self::empty(), &r);
    }

    /// Learn `self <= other`.
    pub fn make_le(&mut self, other: &Self) {
        self.upper = self.upper.smin(&other.upper);
    }

    /// Learn `self > other`.
    pub fn make_gt(&mut self, other: &Self) {
        let impossible = other.lower.equals(&W::max_signed());
        let r = Interval {
            lower: self.lower.smax(&other.lower.add(&W::one())),
            upper: self.upper.clone(),
        };
        *self = sel(&impossible, &Self::empty(), &r);
    }

    /// Learn `self >= other`.
    pub fn make_ge(&mut self, other: &Self) {
        self.lower = self.lower.smax(&other.lower);
    }

    /// Learn `self == other`.
    pub fn make_eq(&mut self, other: &Self) {
        *self = self.intersect(other);
    }

    /// Learn `self != other` (useful when `other` is a constant at an end of `self`).
    pub fn make_ne(&mut self, other: &Self) {
        let cst = other.is_constant();
        let v = &other.lower;
        let at_lo = cst.and(&self.lower.equals(v));
        let at_hi = cst.and(&self.upper.equals(v));
        let singleton = at_lo.and(&at_hi);
        let r = Interval {
            lower: W::select(&at_lo, &self.lower.add(&W::one()), &self.lower),
            upper: W::select(&at_hi, &self.upper.sub(&W::one()), &self.upper),
        };
        *self = sel(&singleton, &Self::empty(), &r);
    }

    /// Learn `self <u other` (unsigned).
    pub fn make_ult(&mut self, other: &Self) {
        let m = other.unsigned_max();
        let r = self.intersect_unsigned(&W::zero(), &m.sub(&W::one()));
        *self = sel(&m.equals(&W::zero()), &Self::empty(), &r);
    }

    /// Learn `self <=u other` (unsigned).
    pub fn make_ule(&mut self, other: &Self) {
        *self = self.intersect_unsigned(&W::zero(), &other.unsigned_max());
    }

    /// Learn `self >u other` (unsigned).
    pub fn make_ugt(&mut self, other: &Self) {
        let m = other.unsigned_min();
        let r = self.intersect_unsigned(&m.add(&W::one()), &W::ones());
        *self = sel(&m.equals(&W::ones()), &Self::empty(), &r);
    }

    /// Learn `self >=u other` (unsigned).
    pub fn make_uge(&mut self, other: &Self) {
        *self = self.intersect_unsigned(&other.unsigned_min(), &W::ones());
    }

    /// Learn `x >= 0`.
    pub fn make_nonnegative(&mut self) {
        self.lower = self.lower.smax(&W::zero());
    }

    // ------------------------------------------------------------------ backward: op results

    /// `r = int_add(a, b)` (wrapping) with `r` in `res`: refined `(a, b)`. Sound under
    /// wrapping since `a = r - b` exactly and [`Self::sub`] handles wrapping.
    pub fn backward_add(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        (a.intersect(&res.sub(b)), b.intersect(&res.sub(a)))
    }

    /// `r = int_sub(a, b)` (wrapping): `a = r + b`, `b = a - r`.
    pub fn backward_sub(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        (a.intersect(&res.add(b)), b.intersect(&a.sub(res)))
    }

    /// `r = int_add_ovf(a, b)` after its `guard_no_overflow`: the math is exact, so
    /// `a in res - b` with saturation.
    /// (`res.sub_ovf(b)` is `[res.lower - b.upper, res.upper - b.lower]` saturated; written as
    /// that call so that its soundness proof composes.)
    pub fn backward_add_ovf(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let na = res.sub_ovf(b).0;
        let nb = res.sub_ovf(a).0;
        (a.intersect(&na), b.intersect(&nb))
    }

    /// `r = int_sub_ovf(a, b)` after its `guard_no_overflow`: `a in res + b`, `b in a - res`.
    /// (Written with [`Self::add_ovf`] / [`Self::sub_ovf`], the saturated end sums, so that
    /// its soundness proof composes.)
    pub fn backward_sub_ovf(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let na = res.add_ovf(b).0;
        let nb = a.sub_ovf(res).0;
        (a.intersect(&na), b.intersect(&nb))
    }

    /// `r = int_mul_ovf(a, b)` after its `guard_no_overflow`, `b` a known constant `d > 0`:
    /// `ceil(res.lower / d) <= a <= floor(res.upper / d)`. Otherwise `a` is unchanged. (Not
    /// for wrapping `int_mul`: `12 == int_mul(x, 12)` does not imply `x == 1`.)
    pub fn backward_mul_ovf_const(a: &Self, b: &Self, res: &Self) -> Self {
        let d = &b.lower;
        let applies = b.is_constant().and(&d.sgt(&W::zero()));
        // ceil(l / d) = -floor(-l / d); -l may wrap for l == MIN: then floor(l/d) <= result
        let lo = py_div(&res.lower.neg(), d).neg();
        let lo = W::select(&res.lower.equals(&W::min_signed()), &py_div(&res.lower, d), &lo);
        let hi = py_div(&res.upper, d);
        sel(&applies, &a.intersect(&Interval { lower: lo, upper: hi }), a)
    }

    /// `r = int_neg(a)`: `a = -r` (wrapping, exact).
    pub fn backward_neg(a: &Self, res: &Self) -> Self {
        a.intersect(&res.neg())
    }

    /// `r = int_invert(a)`: `a = ~r`.
    pub fn backward_invert(a: &Self, res: &Self) -> Self {
        a.intersect(&res.invert())
    }
}
