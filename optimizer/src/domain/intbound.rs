//! `IntBound`: the reduced product of [`KnownBits`] and [`Interval`], the abstract value the
//! optimizer keeps for every integer.
//!
//! Every operation computes both components and then [`IntBound::reduce`]s: the interval
//! teaches knownbits (the common prefix of `lower` and `upper` when they have the same sign),
//! knownbits teach the interval (the smallest and largest signed members), for a fixed number
//! of rounds. Constants are singletons in both. Contradictory knowledge (after a `make_*`)
//! yields an empty value ([`IntBound::is_empty`]): the condition cannot hold.
//!
//! Generic over [`Word`] and branch-free on data, so `verify` proves this code with Z3.

use super::interval::Interval;
use super::knownbits::KnownBits;
use super::word::{Word, WordBool};

/// The bool type of `W`.
type B<W> = <W as Word>::Bool;

/// Knownbits × signed interval, kept reduced.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntBound<W> {
    /// The known bits.
    pub bits: KnownBits<W>,
    /// The signed range.
    pub range: Interval<W>,
}

/// How many rounds [`IntBound::reduce`] runs (each round: interval → bits → interval).
pub const REDUCE_ROUNDS: u32 = 2;

macro_rules! binop {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub fn $name(&self, other: &Self) -> Self {
            Self::from_parts(self.bits.$name(&other.bits), self.range.$name(&other.range))
        }
    };
}

macro_rules! ovfop {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub fn $name(&self, other: &Self) -> (Self, B<W>) {
            let (r, ok) = self.range.$name(&other.range);
            (Self::from_parts(self.bits.$name(&other.bits), r), ok)
        }
    };
}

macro_rules! make {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub fn $name(&mut self, other: &Self) {
            let mut r = self.range.clone();
            r.$name(&other.range);
            *self = Self::from_parts(self.bits.clone(), r);
        }
    };
}

impl<W: Word> IntBound<W> {
    // ------------------------------------------------------------------ construction

    /// Combines the parts and reduces them.
    pub fn from_parts(bits: KnownBits<W>, range: Interval<W>) -> Self {
        IntBound { bits, range }.reduce()
    }

    /// Nothing known.
    pub fn unbounded() -> Self {
        IntBound {
            bits: KnownBits::unknown(),
            range: Interval::unbounded(),
        }
    }

    /// The singleton `{c}`.
    pub fn from_constant(c: W) -> Self {
        IntBound {
            bits: KnownBits::from_constant(c.clone()),
            range: Interval::from_constant(c),
        }
    }

    /// `0..=MAX`.
    pub fn nonnegative() -> Self {
        Self::from_parts(KnownBits::unknown(), Interval::nonnegative())
    }

    /// `0..=1`.
    pub fn boolean() -> Self {
        Self::from_parts(KnownBits::unknown(), Interval::boolean())
    }

    /// `lower..=upper` (signed).
    pub fn from_range(lower: W, upper: W) -> Self {
        Self::from_parts(KnownBits::unknown(), Interval::new(lower, upper))
    }

    /// From known bits.
    pub fn from_knownbits(bits: KnownBits<W>) -> Self {
        Self::from_parts(bits, Interval::unbounded())
    }

    /// Selects `a` if `c`, else `b`.
    pub fn select(c: &B<W>, a: &Self, b: &Self) -> Self {
        IntBound {
            bits: KnownBits::select(c, &a.bits, &b.bits),
            range: Interval::select(c, &a.range, &b.range),
        }
    }

    // ------------------------------------------------------------------ reduction

    /// Knownbits from the interval: the common prefix of `lower` and `upper` if they have the
    /// same sign (then every member between them shares that prefix).
    pub fn bits_from_range(range: &Interval<W>) -> KnownBits<W> {
        let differing = range.lower.xor(&range.upper).smear_right();
        let prefix = KnownBits {
            ones: range.lower.and(&differing.not()),
            unknowns: differing,
        };
        KnownBits::select(&range.is_same_sign(), &prefix, &KnownBits::unknown())
    }

    /// One reduction round. Total on any input; keeps every common member.
    fn reduce_once(&self) -> Self {
        // interval -> bits
        let from_range = Self::bits_from_range(&self.range);
        let conflict = self.bits.known_disagrees(&from_range);
        let bits = self.bits.intersect(&from_range);
        // bits -> interval
        let range = self.range.intersect(&Interval {
            lower: bits.signed_min(),
            upper: bits.signed_max(),
        });
        let range = Interval::select(&conflict, &Interval::empty(), &range);
        IntBound { bits, range }
    }

    /// Tightens each component from the other ([`REDUCE_ROUNDS`] rounds).
    pub fn reduce(&self) -> Self {
        let mut r = self.reduce_once();
        for _ in 1..REDUCE_ROUNDS {
            r = r.reduce_once();
        }
        r
    }

    // ------------------------------------------------------------------ queries

    /// Whether `v` is a member.
    pub fn contains(&self, v: &W) -> B<W> {
        self.bits.contains(v).and(&self.range.contains(v))
    }

    /// Whether no value is possible (a contradiction was learned).
    pub fn is_empty(&self) -> B<W> {
        self.range.is_empty()
    }

    /// Whether the value is a single constant.
    pub fn is_constant(&self) -> B<W> {
        self.bits.is_constant().or(&self.range.is_constant())
    }

    /// The constant if [`Self::is_constant`].
    pub fn constant_value(&self) -> W {
        W::select(&self.bits.is_constant(), &self.bits.ones, &self.range.lower)
    }

    /// The signed lower bound.
    pub fn lower(&self) -> W {
        self.range.lower.clone()
    }

    /// The signed upper bound.
    pub fn upper(&self) -> W {
        self.range.upper.clone()
    }

    /// Whether every member is 0 or 1.
    pub fn is_bool(&self) -> B<W> {
        self.range.is_subset_of(&Interval::boolean()).or(&self.bits.is_bool())
    }

    /// Whether every member is `>= 0`.
    pub fn known_nonnegative(&self) -> B<W> {
        self.range.known_nonnegative()
    }

    /// Whether every member is `< 0`.
    pub fn known_negative(&self) -> B<W> {
        self.range.known_negative()
    }

    /// Whether `self < other` for all members.
    pub fn known_lt(&self, other: &Self) -> B<W> {
        self.range.known_lt(&other.range)
    }

    /// Whether `self <= other` for all members.
    pub fn known_le(&self, other: &Self) -> B<W> {
        self.range.known_le(&other.range)
    }

    /// Whether `self > other` for all members.
    pub fn known_gt(&self, other: &Self) -> B<W> {
        self.range.known_gt(&other.range)
    }

    /// Whether `self >= other` for all members.
    pub fn known_ge(&self, other: &Self) -> B<W> {
        self.range.known_ge(&other.range)
    }

    /// Whether `self != other` for all members (disjoint ranges or disagreeing bits).
    pub fn known_ne(&self, other: &Self) -> B<W> {
        self.range
            .known_ne(&other.range)
            .or(&self.bits.known_disagrees(&other.bits))
    }

    /// Whether `self <u other` for all members.
    pub fn known_ult(&self, other: &Self) -> B<W> {
        self.range.known_ult(&other.range)
    }

    /// Whether `self <=u other` for all members.
    pub fn known_ule(&self, other: &Self) -> B<W> {
        self.range.known_ule(&other.range)
    }

    /// Whether all members are `>= c`.
    pub fn known_ge_const(&self, c: &W) -> B<W> {
        c.sle(&self.range.lower)
    }

    /// Whether all members are `> c`.
    pub fn known_gt_const(&self, c: &W) -> B<W> {
        c.slt(&self.range.lower)
    }

    /// Whether all members are `<= c`.
    pub fn known_le_const(&self, c: &W) -> B<W> {
        self.range.upper.sle(c)
    }

    /// Whether all members are `< c`.
    pub fn known_lt_const(&self, c: &W) -> B<W> {
        self.range.upper.slt(c)
    }

    /// Whether every member of `self` is a member of `other`.
    pub fn is_subset_of(&self, other: &Self) -> B<W> {
        self.bits
            .is_subset_of(&other.bits)
            .and(&self.range.is_subset_of(&other.range))
    }

    /// True if `n1 & n2 == n1` for all members (`int_and(x, y)` can become `x`).
    pub fn is_and_identity(&self, other: &Self) -> B<W> {
        self.bits.is_and_identity(&other.bits)
    }

    /// True if `n1 | n2 == n1` for all members (`int_or(x, y)` can become `x`).
    pub fn is_or_identity(&self, other: &Self) -> B<W> {
        self.bits.is_or_identity(&other.bits)
    }

    /// Mask of bits known 0.
    pub fn known_zeros(&self) -> W {
        self.bits.known_zeros()
    }

    /// Mask of bits known 1.
    pub fn known_ones(&self) -> W {
        self.bits.known_ones()
    }

    /// Mask of known bits.
    pub fn knowns(&self) -> W {
        self.bits.knowns()
    }

    // ------------------------------------------------------------------ lattice

    /// The intersection (may be empty: check [`Self::is_empty`]).
    pub fn intersect(&self, other: &Self) -> Self {
        let conflict = self.bits.known_disagrees(&other.bits);
        let r = Self::from_parts(self.bits.intersect(&other.bits), self.range.intersect(&other.range));
        let range = Interval::select(&conflict, &Interval::empty(), &r.range);
        IntBound { bits: r.bits, range }
    }

    /// Over-approximates the union (for non-empty inputs).
    pub fn join(&self, other: &Self) -> Self {
        Self::from_parts(self.bits.join(&other.bits), self.range.join(&other.range))
    }

    // ------------------------------------------------------------------ forward ops

    binop!(/** `int_add` (wrapping). */ add);
    binop!(/** `int_sub` (wrapping). */ sub);
    binop!(/** `int_mul` (wrapping). */ mul);
    binop!(/** `int_and`. */ and);
    binop!(/** `int_or`. */ or);
    binop!(/** `int_xor`. */ xor);
    binop!(/** `uint_mul_high`. */ uint_mul_high);
    binop!(/** `int_floordiv` (C, truncating; a zero divisor is invalid). */ floordiv);
    binop!(/** `int_mod` (C remainder; a zero divisor is invalid). */ modulo);
    binop!(/** `int_pydiv` (Python floor division; a zero divisor is invalid). */ pydiv);
    binop!(/** `int_pymod` (Python modulo; a zero divisor is invalid). */ pymod);
    binop!(/** `int_eq` (0/1). */ eq);
    binop!(/** `int_ne` (0/1). */ ne);
    binop!(/** `int_lt` (0/1). */ lt);
    binop!(/** `int_le` (0/1). */ le);
    binop!(/** `int_gt` (0/1). */ gt);
    binop!(/** `int_ge` (0/1). */ ge);
    binop!(/** `uint_lt` (0/1). */ ult);
    binop!(/** `uint_le` (0/1). */ ule);
    binop!(/** `uint_gt` (0/1). */ ugt);
    binop!(/** `uint_ge` (0/1). */ uge);
    ovfop!(/** `int_add_ovf`: result if no overflow, and whether overflow is impossible. */ add_ovf);
    ovfop!(/** `int_sub_ovf`: result if no overflow, and whether overflow is impossible. */ sub_ovf);
    ovfop!(/** `int_mul_ovf`: result if no overflow, and whether overflow is impossible. */ mul_ovf);

    /// `int_neg` (wrapping).
    pub fn neg(&self) -> Self {
        Self::from_parts(self.bits.neg(), self.range.neg())
    }

    /// `int_invert`.
    pub fn invert(&self) -> Self {
        Self::from_parts(self.bits.invert(), self.range.invert())
    }

    /// `int_is_true`: `x != 0`.
    pub fn is_true(&self) -> Self {
        Self::from_parts(self.bits.is_true(), self.range.is_true())
    }

    /// `int_is_zero`: `x == 0`.
    pub fn is_zero(&self) -> Self {
        Self::from_parts(self.bits.is_zero(), self.range.is_zero())
    }

    /// `int_force_ge_zero`: `max(x, 0)`.
    pub fn force_ge_zero(&self) -> Self {
        Self::from_parts(self.bits.force_ge_zero(), self.range.force_ge_zero())
    }

    /// `int_signext(x, nbytes)` with the constant byte count `nbytes` (1, 2, 4, 8).
    pub fn signext(&self, nbytes: u32) -> Self {
        Self::from_parts(self.bits.signext(nbytes), self.range.signext(nbytes))
    }

    /// `int_lshift(x, amount)`; amounts outside `0..BITS` are invalid (any result allowed).
    pub fn lshift(&self, amount: &Self) -> Self {
        let bits = self
            .bits
            .lshift_bounded(&amount.bits, &amount.range.lower, &amount.range.upper);
        Self::from_parts(bits, self.range.lshift(&amount.range))
    }

    /// `int_rshift(x, amount)` (arithmetic); amounts outside `0..BITS` are invalid.
    pub fn rshift(&self, amount: &Self) -> Self {
        let bits = self
            .bits
            .rshift_bounded(&amount.bits, &amount.range.lower, &amount.range.upper);
        Self::from_parts(bits, self.range.rshift(&amount.range))
    }

    /// `uint_rshift(x, amount)` (logical); amounts outside `0..BITS` are invalid.
    pub fn uint_rshift(&self, amount: &Self) -> Self {
        let bits = self
            .bits
            .uint_rshift_bounded(&amount.bits, &amount.range.lower, &amount.range.upper);
        Self::from_parts(bits, self.range.uint_rshift(&amount.range))
    }

    // ------------------------------------------------------------------ backward: conditions

    make!(/** Learn `self < other`. */ make_lt);
    make!(/** Learn `self <= other`. */ make_le);
    make!(/** Learn `self > other`. */ make_gt);
    make!(/** Learn `self >= other`. */ make_ge);
    make!(/** Learn `self != other`. */ make_ne);
    make!(/** Learn `self <u other`. */ make_ult);
    make!(/** Learn `self <=u other`. */ make_ule);
    make!(/** Learn `self >u other`. */ make_ugt);
    make!(/** Learn `self >=u other`. */ make_uge);

    /// Learn `self == other`.
    pub fn make_eq(&mut self, other: &Self) {
        *self = self.intersect(other);
    }

    /// Learn `self >= 0`.
    pub fn make_nonnegative(&mut self) {
        let mut r = self.range.clone();
        r.make_nonnegative();
        *self = Self::from_parts(self.bits.clone(), r);
    }

    /// Learn that `int_is_true(self)` is 1 (`self != 0`).
    pub fn make_nonzero(&mut self) {
        self.make_ne(&Self::from_constant(W::zero()));
    }

    /// Learn that `int_is_true(self)` is 0 (`self == 0`).
    pub fn make_zero(&mut self) {
        self.make_eq(&Self::from_constant(W::zero()));
    }

    /// What `a OP b == 1` (`truth`) or `== 0` teaches about `a` and `b` for a comparison
    /// (`cmp` is one of the [`Cmp`] kinds): returns the refined `(a, b)`. Negations map to the
    /// complementary comparison (`!(a < b)` is `a >= b`).
    pub fn learn_cmp(cmp: Cmp, truth: bool, a: &Self, b: &Self) -> (Self, Self) {
        let cmp = if truth { cmp } else { cmp.negate() };
        let (mut na, mut nb) = (a.clone(), b.clone());
        match cmp {
            Cmp::Lt => {
                na.make_lt(b);
                nb.make_gt(a);
            }
            Cmp::Le => {
                na.make_le(b);
                nb.make_ge(a);
            }
            Cmp::Gt => {
                na.make_gt(b);
                nb.make_lt(a);
            }
            Cmp::Ge => {
                na.make_ge(b);
                nb.make_le(a);
            }
            Cmp::Eq => {
                na.make_eq(b);
                nb.make_eq(a);
            }
            Cmp::Ne => {
                na.make_ne(b);
                nb.make_ne(a);
            }
            Cmp::Ult => {
                na.make_ult(b);
                nb.make_ugt(a);
            }
            Cmp::Ule => {
                na.make_ule(b);
                nb.make_uge(a);
            }
            Cmp::Ugt => {
                na.make_ugt(b);
                nb.make_ult(a);
            }
            Cmp::Uge => {
                na.make_uge(b);
                nb.make_ule(a);
            }
        }
        (na, nb)
    }

    // ------------------------------------------------------------------ backward: op results

    /// `r = int_add(a, b)` (wrapping) with `r` in `res`: refined `(a, b)`.
    pub fn backward_add(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let (ra, rb) = Interval::backward_add(&a.range, &b.range, &res.range);
        let ka = res.bits.sub(&b.bits);
        let kb = res.bits.sub(&a.bits);
        (
            a.intersect(&Self::from_parts(ka, ra)),
            b.intersect(&Self::from_parts(kb, rb)),
        )
    }

    /// `r = int_sub(a, b)` (wrapping) with `r` in `res`: refined `(a, b)`.
    pub fn backward_sub(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let (ra, rb) = Interval::backward_sub(&a.range, &b.range, &res.range);
        let ka = res.bits.add(&b.bits);
        let kb = a.bits.sub(&res.bits);
        (
            a.intersect(&Self::from_parts(ka, ra)),
            b.intersect(&Self::from_parts(kb, rb)),
        )
    }

    /// `r = int_add_ovf(a, b)` after `guard_no_overflow`, `r` in `res`: refined `(a, b)`.
    pub fn backward_add_ovf(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let (ra, rb) = Interval::backward_add_ovf(&a.range, &b.range, &res.range);
        let (wa, wb) = Self::backward_add(a, b, res);
        (
            wa.intersect(&Self::from_parts(KnownBits::unknown(), ra)),
            wb.intersect(&Self::from_parts(KnownBits::unknown(), rb)),
        )
    }

    /// `r = int_sub_ovf(a, b)` after `guard_no_overflow`, `r` in `res`: refined `(a, b)`.
    pub fn backward_sub_ovf(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        let (ra, rb) = Interval::backward_sub_ovf(&a.range, &b.range, &res.range);
        let (wa, wb) = Self::backward_sub(a, b, res);
        (
            wa.intersect(&Self::from_parts(KnownBits::unknown(), ra)),
            wb.intersect(&Self::from_parts(KnownBits::unknown(), rb)),
        )
    }

    /// `r = int_mul_ovf(a, b)` after `guard_no_overflow`, `r` in `res`, `b` a constant `> 0`:
    /// refined `a` (unchanged otherwise). Never use this for wrapping `int_mul`.
    pub fn backward_mul_ovf_const(a: &Self, b: &Self, res: &Self) -> Self {
        let ra = Interval::backward_mul_ovf_const(&a.range, &b.range, &res.range);
        a.intersect(&Self::from_parts(KnownBits::unknown(), ra))
    }

    /// `r = int_and(a, b)`, `r` in `res`: refined `(a, b)` (knownbits only:
    /// [`KnownBits::backward_and`] each way).
    pub fn backward_and(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        (
            a.intersect(&Self::from_knownbits(KnownBits::backward_and(&b.bits, &res.bits))),
            b.intersect(&Self::from_knownbits(KnownBits::backward_and(&a.bits, &res.bits))),
        )
    }

    /// `r = int_or(a, b)`, `r` in `res`: refined `(a, b)` (knownbits only:
    /// [`KnownBits::backward_or`] each way).
    pub fn backward_or(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        (
            a.intersect(&Self::from_knownbits(KnownBits::backward_or(&b.bits, &res.bits))),
            b.intersect(&Self::from_knownbits(KnownBits::backward_or(&a.bits, &res.bits))),
        )
    }

    /// `r = int_xor(a, b)`, `r` in `res`: refined `(a, b)` (knownbits only:
    /// [`KnownBits::backward_xor`] each way).
    pub fn backward_xor(a: &Self, b: &Self, res: &Self) -> (Self, Self) {
        (
            a.intersect(&Self::from_knownbits(KnownBits::backward_xor(&b.bits, &res.bits))),
            b.intersect(&Self::from_knownbits(KnownBits::backward_xor(&a.bits, &res.bits))),
        )
    }

    /// `r = int_neg(a)`, `r` in `res`: refined `a`.
    pub fn backward_neg(a: &Self, res: &Self) -> Self {
        a.intersect(&res.neg())
    }

    /// `r = int_invert(a)`, `r` in `res`: refined `a`.
    pub fn backward_invert(a: &Self, res: &Self) -> Self {
        a.intersect(&res.invert())
    }
}

/// A comparison kind, for [`IntBound::learn_cmp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// signed `<`
    Lt,
    /// signed `<=`
    Le,
    /// signed `>`
    Gt,
    /// signed `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// unsigned `<`
    Ult,
    /// unsigned `<=`
    Ule,
    /// unsigned `>`
    Ugt,
    /// unsigned `>=`
    Uge,
}

impl Cmp {
    /// The comparison that holds exactly when `self` does not.
    pub fn negate(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
            Cmp::Ult => Cmp::Uge,
            Cmp::Ule => Cmp::Ugt,
            Cmp::Ugt => Cmp::Ule,
            Cmp::Uge => Cmp::Ult,
        }
    }
}

impl IntBound<u64> {
    /// The singleton `{c}` for a signed constant.
    pub fn from_i64(c: i64) -> Self {
        Self::from_constant(c as u64)
    }

    /// `lower..=upper` from signed bounds.
    pub fn from_range_i64(lower: i64, upper: i64) -> Self {
        Self::from_range(lower as u64, upper as u64)
    }

    /// The constant, if the value is a singleton.
    pub fn get_constant(&self) -> Option<i64> {
        if self.is_constant() {
            Some(self.constant_value() as i64)
        } else {
            None
        }
    }

    /// The signed lower bound as `i64`.
    pub fn lower_i64(&self) -> i64 {
        self.range.lower as i64
    }

    /// The signed upper bound as `i64`.
    pub fn upper_i64(&self) -> i64 {
        self.range.upper as i64
    }

    /// Whether the signed `v` is a member.
    pub fn contains_i64(&self, v: i64) -> bool {
        self.contains(&(v as u64))
    }
}

impl core::fmt::Display for IntBound<u64> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if let Some(c) = self.get_constant() {
            return write!(f, "{c}");
        }
        let (lo, hi) = (self.lower_i64(), self.upper_i64());
        if lo > hi {
            return write!(f, "(empty)");
        }
        let l = if lo == i64::MIN {
            "MININT".to_string()
        } else {
            lo.to_string()
        };
        let h = if hi == i64::MAX {
            "MAXINT".to_string()
        } else {
            hi.to_string()
        };
        write!(f, "[{l}, {h}] {}", self.bits)
    }
}
