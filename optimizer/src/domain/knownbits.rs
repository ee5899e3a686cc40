//! The knownbits (tristate) abstract domain: for every bit, known 0, known 1 or unknown.
//!
//! Representation (after the eBPF tristate numbers): two words `ones` and
//! `unknowns`. A bit is `?` if set in `unknowns`, `1` if set in `ones`, else `0`; a bit set
//! in both is illegal (`ones & unknowns == 0` is the well-formedness invariant that every
//! constructor and transfer function keeps). The set represented is
//! `{ x | x & !unknowns == ones }`.
//!
//! Every function is generic over [`Word`] and branch-free on data (it uses `select`), so
//! `verify` proves this exact code with Z3. Functions whose Rust control flow depends on a
//! non-data parameter (a loop over the `BITS` shift amounts, the byte count of `signext`)
//! say so; for Z3 they unroll into one formula.
//!
//! Text form (u64 only, [`core::fmt::Display`] / [`core::str::FromStr`]): most significant
//! bit first, e.g. `1?01`; leading known zeros are omitted (`0` if everything is 0), leading
//! known ones are written `...1` and leading unknowns `...?` (so `...?1` is "odd").

use super::word::{Word, WordBool};

/// A knownbits abstract value over the word type `W`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KnownBits<W> {
    /// Bits known to be 1. Must not overlap `unknowns`.
    pub ones: W,
    /// Bits whose value is unknown.
    pub unknowns: W,
}

/// The bool type of `W`.
type B<W> = <W as Word>::Bool;

fn sel<W: Word>(c: &B<W>, a: &KnownBits<W>, b: &KnownBits<W>) -> KnownBits<W> {
    KnownBits {
        ones: W::select(c, &a.ones, &b.ones),
        unknowns: W::select(c, &a.unknowns, &b.unknowns),
    }
}

impl<W: Word> KnownBits<W> {
    // ------------------------------------------------------------------ construction

    /// A value from its two fields. The caller keeps `ones & unknowns == 0`.
    pub fn new(ones: W, unknowns: W) -> Self {
        KnownBits { ones, unknowns }
    }

    /// The singleton `{c}`: all bits known.
    pub fn from_constant(c: W) -> Self {
        KnownBits {
            ones: c,
            unknowns: W::zero(),
        }
    }

    /// All bits unknown (the top element).
    pub fn unknown() -> Self {
        KnownBits {
            ones: W::zero(),
            unknowns: W::ones(),
        }
    }

    /// A boolean result (`0` or `1`): `1` if `known_true`, `0` if `known_false`, else `?`.
    /// If both hold (no concrete member), the result is `1`.
    pub fn from_bool_knowledge(known_true: &B<W>, known_false: &B<W>) -> Self {
        KnownBits {
            ones: W::from_word_bool(known_true),
            unknowns: W::select(&known_true.or(known_false), &W::zero(), &W::one()),
        }
    }

    /// Selects `a` if `c`, else `b` (field-wise [`Word::select`]).
    pub fn select(c: &B<W>, a: &Self, b: &Self) -> Self {
        sel(c, a, b)
    }

    // ------------------------------------------------------------------ queries

    /// Mask of the known bits.
    pub fn knowns(&self) -> W {
        self.unknowns.not()
    }

    /// Mask of the bits known to be 0.
    pub fn known_zeros(&self) -> W {
        self.unknowns.or(&self.ones).not()
    }

    /// Mask of the bits known to be 1 (same as `ones`).
    pub fn known_ones(&self) -> W {
        self.ones.clone()
    }

    /// Whether the invariant `ones & unknowns == 0` holds.
    pub fn is_well_formed(&self) -> B<W> {
        self.ones.and(&self.unknowns).equals(&W::zero())
    }

    /// Whether all bits are known (the value is a singleton).
    pub fn is_constant(&self) -> B<W> {
        self.unknowns.equals(&W::zero())
    }

    /// The value if [`Self::is_constant`] (otherwise the known ones, unknowns as 0).
    pub fn constant_value(&self) -> W {
        self.ones.clone()
    }

    /// Whether the concrete `value` is a member.
    pub fn contains(&self, value: &W) -> B<W> {
        value.and(&self.knowns()).equals(&self.ones)
    }

    /// Whether every member of `self` is a member of `other`.
    pub fn is_subset_of(&self, other: &Self) -> B<W> {
        // every bit known in other is known in self with the same value
        let other_known = other.knowns();
        self.unknowns
            .and(&other_known)
            .equals(&W::zero())
            .and(&self.ones.and(&other_known).equals(&other.ones))
    }

    /// True if `n1 & n2 == n1` for every `n1` in `self` and `n2` in `other`.
    pub fn is_and_identity(&self, other: &Self) -> B<W> {
        self.known_zeros().or(&other.ones).equals(&W::ones())
    }

    /// True if `n1 | n2 == n1` for every `n1` in `self` and `n2` in `other`.
    pub fn is_or_identity(&self, other: &Self) -> B<W> {
        self.ones.or(&other.known_zeros()).equals(&W::ones())
    }

    /// Whether both have a known bit where they disagree (no common member).
    pub fn known_disagrees(&self, other: &Self) -> B<W> {
        let both = self.knowns().and(&other.knowns());
        self.ones.xor(&other.ones).and(&both).not_equals(&W::zero())
    }

    /// Whether the sign bit is known 0.
    pub fn known_nonnegative(&self) -> B<W> {
        self.ones.or(&self.unknowns).is_negative().not()
    }

    /// Whether the sign bit is known 1.
    pub fn known_negative(&self) -> B<W> {
        self.ones.is_negative()
    }

    /// Whether every member is 0 or 1.
    pub fn is_bool(&self) -> B<W> {
        self.ones.or(&self.unknowns).ule(&W::one())
    }

    /// The smallest member, signed.
    pub fn signed_min(&self) -> W {
        self.ones.or(&self.unknowns.and(&W::min_signed()))
    }

    /// The largest member, signed.
    pub fn signed_max(&self) -> W {
        self.ones.or(&self.unknowns.and(&W::max_signed()))
    }

    /// The smallest member, unsigned.
    pub fn unsigned_min(&self) -> W {
        self.ones.clone()
    }

    /// The largest member, unsigned.
    pub fn unsigned_max(&self) -> W {
        self.ones.or(&self.unknowns)
    }

    // ------------------------------------------------------------------ lattice

    /// The smallest knownbits containing both (set union, over-approximated).
    pub fn join(&self, other: &Self) -> Self {
        let ones = self.ones.and(&other.ones);
        let unknowns = self.unknowns.or(&other.unknowns).or(&self.ones.xor(&other.ones));
        KnownBits { ones, unknowns }
    }

    /// The intersection. If the two [`Self::known_disagrees`], the result is meaningless
    /// (the caller must check); it is well-formed anyway.
    pub fn intersect(&self, other: &Self) -> Self {
        let unknowns = self.unknowns.and(&other.unknowns);
        let ones = self.ones.or(&other.ones).and(&unknowns.not());
        KnownBits { ones, unknowns }
    }

    // ------------------------------------------------------------------ bitwise

    /// `~x`.
    pub fn invert(&self) -> Self {
        KnownBits {
            ones: self.known_zeros(),
            unknowns: self.unknowns.clone(),
        }
    }

    /// `x & y`.
    pub fn and(&self, other: &Self) -> Self {
        let ones = self.ones.and(&other.ones);
        let maybe = self.ones.or(&self.unknowns).and(&other.ones.or(&other.unknowns));
        KnownBits {
            unknowns: maybe.and(&ones.not()),
            ones,
        }
    }

    /// `x | y`.
    pub fn or(&self, other: &Self) -> Self {
        let ones = self.ones.or(&other.ones);
        let unknowns = self.unknowns.or(&other.unknowns).and(&ones.not());
        KnownBits { ones, unknowns }
    }

    /// `x ^ y`.
    pub fn xor(&self, other: &Self) -> Self {
        let unknowns = self.unknowns.or(&other.unknowns);
        let ones = self.ones.xor(&other.ones).and(&unknowns.not());
        KnownBits { ones, unknowns }
    }

    // ------------------------------------------------------------------ backward: bitwise

    /// `r = x & y` with `y` in `other` and `r` in `res`: what `x` must be. A bit known 1 in
    /// `res` is 1 in `x`; a bit known 0 in `res` where `y` is known 1 is 0 in `x`; every other
    /// bit is unknown (intersect the result with what is already known of `x`). Used after a
    /// guard on `x & C`: `guard_true(int_eq(int_and(x, 7), 0))` makes `x`'s low 3 bits 0.
    pub fn backward_and(other: &Self, res: &Self) -> Self {
        let ones = res.ones.clone();
        let zeros = res.known_zeros().and(&other.ones);
        KnownBits {
            unknowns: ones.or(&zeros).not(),
            ones,
        }
    }

    /// `r = x ^ y` with `y` in `other` and `r` in `res`: what `x` must be, `res ^ other`
    /// (`x == r ^ y`: a bit known in both is known in `x`). Used after a guard on `x ^ C`.
    pub fn backward_xor(other: &Self, res: &Self) -> Self {
        res.xor(other)
    }

    /// `r = x | y` with `y` in `other` and `r` in `res`: what `x` must be. A bit known 0 in
    /// `res` is 0 in `x`; a bit known 1 in `res` where `y` is known 0 is 1 in `x`; every other
    /// bit is unknown.
    pub fn backward_or(other: &Self, res: &Self) -> Self {
        let zeros = res.known_zeros();
        let ones = res.ones.and(&other.known_zeros());
        KnownBits {
            unknowns: ones.or(&zeros).not(),
            ones,
        }
    }

    // ------------------------------------------------------------------ arithmetic

    /// `x + y` (wrapping), the tristate formula (optimal).
    pub fn add(&self, other: &Self) -> Self {
        let sum_ones = self.ones.add(&other.ones);
        let sum_unknowns = self.unknowns.add(&other.unknowns);
        let all_carries = sum_ones.add(&sum_unknowns);
        let ones_carries = all_carries.xor(&sum_ones);
        let unknowns = self.unknowns.or(&other.unknowns).or(&ones_carries);
        KnownBits {
            ones: sum_ones.and(&unknowns.not()),
            unknowns,
        }
    }

    /// `x - y` (wrapping), the tristate formula (optimal).
    pub fn sub(&self, other: &Self) -> Self {
        let diff_ones = self.ones.sub(&other.ones);
        let borrows = diff_ones.add(&self.unknowns).xor(&diff_ones.sub(&other.unknowns));
        let unknowns = self.unknowns.or(&other.unknowns).or(&borrows);
        KnownBits {
            ones: diff_ones.and(&unknowns.not()),
            unknowns,
        }
    }

    /// `-x` (wrapping): `~x + 1`.
    pub fn neg(&self) -> Self {
        self.invert().add(&Self::from_constant(W::one()))
    }

    /// `x * y` (wrapping). Knows the low bits up to the lowest unknown bit of either argument
    /// (they only depend on the operands' low bits), and the trailing zeros: the result has at
    /// least `tz(x) + tz(y)` trailing zeros. Constants fold exactly.
    pub fn mul(&self, other: &Self) -> Self {
        // low bits known in both: below the lowest unknown bit of either
        let exact_mask = self.unknowns.or(&other.unknowns).lowest_bit().sub(&W::one());
        // lowest possibly-one bit of each; their product is 2^(tz(x)+tz(y)) (or 0)
        let pa = self.ones.or(&self.unknowns).lowest_bit();
        let pb = other.ones.or(&other.unknowns).lowest_bit();
        let zero_mask = pa.mul(&pb).sub(&W::one());
        let ones = self.ones.mul(&other.ones).and(&exact_mask);
        let unknowns = exact_mask.or(&zero_mask).not();
        KnownBits {
            ones: ones.and(&unknowns.not()),
            unknowns,
        }
    }

    /// `int_add_ovf`: the result when no overflow happened (equal to the wrapping sum).
    pub fn add_ovf(&self, other: &Self) -> Self {
        self.add(other)
    }

    /// `int_sub_ovf`: the result when no overflow happened (equal to the wrapping difference).
    pub fn sub_ovf(&self, other: &Self) -> Self {
        self.sub(other)
    }

    /// `int_mul_ovf`: the result when no overflow happened (equal to the wrapping product).
    pub fn mul_ovf(&self, other: &Self) -> Self {
        self.mul(other)
    }

    /// `uint_mul_high`: the high word of the unsigned double-width product. Exact for two
    /// constants; if `x` or `y` is known to be 0 or 1, the result is 0; otherwise unknown.
    pub fn uint_mul_high(&self, other: &Self) -> Self {
        let both_const = self.is_constant().and(&other.is_constant());
        let small = self
            .unsigned_max()
            .ule(&W::one())
            .or(&other.unsigned_max().ule(&W::one()));
        let c = Self::from_constant(self.ones.umul_high(&other.ones));
        let r = sel(&small, &Self::from_constant(W::zero()), &Self::unknown());
        sel(&both_const, &c, &r)
    }

    /// `int_floordiv` (C division, truncating): exact for constants with a nonzero divisor,
    /// otherwise unknown. A zero divisor is invalid (any result is allowed).
    pub fn floordiv(&self, other: &Self) -> Self {
        self.const_fold2(other, |a, b| a.sdiv(b))
    }

    /// `int_mod` (C remainder, sign of the dividend): exact for constants, otherwise unknown.
    pub fn modulo(&self, other: &Self) -> Self {
        self.const_fold2(other, |a, b| a.srem(b))
    }

    /// `int_pydiv` (Python floor division): exact for constants, otherwise unknown.
    pub fn pydiv(&self, other: &Self) -> Self {
        self.const_fold2(other, py_div)
    }

    /// `int_pymod` (Python modulo, sign of the divisor): exact for constants, otherwise unknown.
    pub fn pymod(&self, other: &Self) -> Self {
        self.const_fold2(other, py_mod)
    }

    fn const_fold2(&self, other: &Self, f: impl Fn(&W, &W) -> W) -> Self {
        let both_const = self.is_constant().and(&other.is_constant());
        sel(
            &both_const,
            &Self::from_constant(f(&self.ones, &other.ones)),
            &Self::unknown(),
        )
    }

    // ------------------------------------------------------------------ shifts

    /// The join of `f(self, i)` over every shift amount `i` in `0..BITS` that `amount` may
    /// be and that lies in the signed range `amin..=amax`. Control flow: a loop over the
    /// `BITS` amounts (not over data); for Z3 it unrolls into one formula. If no amount is
    /// possible the result is all unknown.
    fn shift_join(&self, amount: &Self, amin: &W, amax: &W, f: impl Fn(&Self, &W) -> Self) -> Self {
        let mut acc = Self::unknown();
        let mut any = B::<W>::from_bool(false);
        for i in 0..W::BITS {
            let iw = W::from_u64(u64::from(i));
            let possible = amount.contains(&iw).and(&amin.sle(&iw)).and(&iw.sle(amax));
            let s = f(self, &iw);
            let joined = sel(&any, &acc.join(&s), &s);
            acc = sel(&possible, &joined, &acc);
            any = any.or(&possible);
        }
        acc
    }

    /// `x << amount` for amounts in `amount` and in `amin..=amax` (amounts outside
    /// `0..BITS` are invalid and ignored).
    pub fn lshift_bounded(&self, amount: &Self, amin: &W, amax: &W) -> Self {
        self.shift_join(amount, amin, amax, |k, i| KnownBits {
            ones: k.ones.shl(i),
            unknowns: k.unknowns.shl(i),
        })
    }

    /// `x >> amount` (arithmetic) for amounts in `amount` and in `amin..=amax`.
    pub fn rshift_bounded(&self, amount: &Self, amin: &W, amax: &W) -> Self {
        self.shift_join(amount, amin, amax, |k, i| KnownBits {
            ones: k.ones.ashr(i),
            unknowns: k.unknowns.ashr(i),
        })
    }

    /// `x >>> amount` (logical) for amounts in `amount` and in `amin..=amax`.
    pub fn uint_rshift_bounded(&self, amount: &Self, amin: &W, amax: &W) -> Self {
        self.shift_join(amount, amin, amax, |k, i| KnownBits {
            ones: k.ones.lshr(i),
            unknowns: k.unknowns.lshr(i),
        })
    }

    /// `int_lshift(x, amount)`; amounts outside `0..BITS` are invalid. Exact for a constant
    /// amount; otherwise the join over the possible amounts.
    pub fn lshift(&self, amount: &Self) -> Self {
        self.lshift_bounded(amount, &W::zero(), &W::from_u64(u64::from(W::BITS - 1)))
    }

    /// `int_rshift(x, amount)` (arithmetic); amounts outside `0..BITS` are invalid.
    pub fn rshift(&self, amount: &Self) -> Self {
        self.rshift_bounded(amount, &W::zero(), &W::from_u64(u64::from(W::BITS - 1)))
    }

    /// `uint_rshift(x, amount)` (logical); amounts outside `0..BITS` are invalid.
    pub fn uint_rshift(&self, amount: &Self) -> Self {
        self.uint_rshift_bounded(amount, &W::zero(), &W::from_u64(u64::from(W::BITS - 1)))
    }

    // ------------------------------------------------------------------ misc unary

    /// `int_signext(x, nbytes)`: sign-extend the low `nbytes` bytes. `nbytes` is an op
    /// parameter, not data (the Rust `if` on it is fine for Z3); `nbytes * 8 >= BITS` is the
    /// identity.
    pub fn signext(&self, nbytes: u32) -> Self {
        let bits = nbytes.saturating_mul(8);
        if bits >= W::BITS || bits == 0 {
            return self.clone();
        }
        let s = W::from_u64(u64::from(W::BITS - bits));
        KnownBits {
            ones: self.ones.shl(&s).ashr(&s),
            unknowns: self.unknowns.shl(&s).ashr(&s),
        }
    }

    /// `int_force_ge_zero(x)`: `x < 0 ? 0 : x`.
    pub fn force_ge_zero(&self) -> Self {
        let sign = W::min_signed();
        let pos = KnownBits {
            ones: self.ones.and(&sign.not()),
            unknowns: self.unknowns.and(&sign.not()),
        };
        let zero = Self::from_constant(W::zero());
        let either = pos.join(&zero);
        sel(
            &self.known_negative(),
            &zero,
            &sel(&self.known_nonnegative(), self, &either),
        )
    }

    // ------------------------------------------------------------------ comparisons

    /// `int_eq(x, y)`: 0 or 1.
    pub fn eq(&self, other: &Self) -> Self {
        let known_true = self
            .is_constant()
            .and(&other.is_constant())
            .and(&self.ones.equals(&other.ones));
        Self::from_bool_knowledge(&known_true, &self.known_disagrees(other))
    }

    /// `int_ne(x, y)`: 0 or 1.
    pub fn ne(&self, other: &Self) -> Self {
        let known_false = self
            .is_constant()
            .and(&other.is_constant())
            .and(&self.ones.equals(&other.ones));
        Self::from_bool_knowledge(&self.known_disagrees(other), &known_false)
    }

    /// `int_lt(x, y)` (signed).
    pub fn lt(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(
            &self.signed_max().slt(&other.signed_min()),
            &self.signed_min().sge(&other.signed_max()),
        )
    }

    /// `int_le(x, y)` (signed).
    pub fn le(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(
            &self.signed_max().sle(&other.signed_min()),
            &self.signed_min().sgt(&other.signed_max()),
        )
    }

    /// `int_gt(x, y)` (signed).
    pub fn gt(&self, other: &Self) -> Self {
        other.lt(self)
    }

    /// `int_ge(x, y)` (signed).
    pub fn ge(&self, other: &Self) -> Self {
        other.le(self)
    }

    /// `uint_lt(x, y)`.
    pub fn ult(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(
            &self.unsigned_max().ult(&other.unsigned_min()),
            &self.unsigned_min().uge(&other.unsigned_max()),
        )
    }

    /// `uint_le(x, y)`.
    pub fn ule(&self, other: &Self) -> Self {
        Self::from_bool_knowledge(
            &self.unsigned_max().ule(&other.unsigned_min()),
            &self.unsigned_min().ugt(&other.unsigned_max()),
        )
    }

    /// `uint_gt(x, y)`.
    pub fn ugt(&self, other: &Self) -> Self {
        other.ult(self)
    }

    /// `uint_ge(x, y)`.
    pub fn uge(&self, other: &Self) -> Self {
        other.ule(self)
    }

    /// `int_is_true(x)`: `x != 0`.
    pub fn is_true(&self) -> Self {
        let nonzero = self.ones.not_equals(&W::zero());
        let zero = self.unsigned_max().equals(&W::zero());
        Self::from_bool_knowledge(&nonzero, &zero)
    }

    /// `int_is_zero(x)`: `x == 0`.
    pub fn is_zero(&self) -> Self {
        let nonzero = self.ones.not_equals(&W::zero());
        let zero = self.unsigned_max().equals(&W::zero());
        Self::from_bool_knowledge(&zero, &nonzero)
    }
}

/// Python floor division built from [`Word::sdiv`]/[`Word::srem`] (`b != 0` required).
pub fn py_div<W: Word>(a: &W, b: &W) -> W {
    let q = a.sdiv(b);
    let r = a.srem(b);
    let adjust = r
        .not_equals(&W::zero())
        .and(&r.is_negative().iff(&b.is_negative()).not());
    W::select(&adjust, &q.sub(&W::one()), &q)
}

/// Python modulo (sign of the divisor) built from [`Word::srem`] (`b != 0` required).
pub fn py_mod<W: Word>(a: &W, b: &W) -> W {
    let r = a.srem(b);
    let adjust = r
        .not_equals(&W::zero())
        .and(&r.is_negative().iff(&b.is_negative()).not());
    W::select(&adjust, &r.add(b), &r)
}

impl KnownBits<u64> {
    /// The value if all bits are known.
    pub fn get_constant(&self) -> Option<u64> {
        if self.unknowns == 0 {
            Some(self.ones)
        } else {
            None
        }
    }
}

impl core::fmt::Display for KnownBits<u64> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut res = Vec::new();
        let (mut ones, mut unknowns) = (self.ones as i64, self.unknowns as i64);
        loop {
            if ones == 0 && unknowns == 0 {
                break;
            }
            if ones == -1 && unknowns == 0 {
                res.push(b'1');
                res.extend_from_slice(b"...");
                break;
            }
            if unknowns == -1 {
                res.push(b'?');
                res.extend_from_slice(b"...");
                break;
            }
            res.push(if unknowns & 1 != 0 {
                b'?'
            } else if ones & 1 != 0 {
                b'1'
            } else {
                b'0'
            });
            ones >>= 1;
            unknowns >>= 1;
        }
        if res.is_empty() {
            res.push(b'0');
        }
        res.reverse();
        f.write_str(core::str::from_utf8(&res).expect("ascii"))
    }
}

/// Error parsing the text form of a [`KnownBits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseKnownBitsError(pub String);

impl core::fmt::Display for ParseKnownBitsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid knownbits: {}", self.0)
    }
}

impl core::str::FromStr for KnownBits<u64> {
    type Err = ParseKnownBitsError;

    /// Parses `[...0|...1|...?]` followed by `0`, `1`, `?` digits, most significant first.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (mut ones, mut unknowns, rest) = if let Some(r) = s.strip_prefix("...?") {
            (0u64, u64::MAX, r)
        } else if let Some(r) = s.strip_prefix("...1") {
            (u64::MAX, 0, r)
        } else if let Some(r) = s.strip_prefix("...0") {
            (0, 0, r)
        } else {
            (0, 0, s)
        };
        if rest.is_empty() && rest.len() == s.len() {
            return Err(ParseKnownBitsError(s.to_string()));
        }
        if rest.len() > 64 {
            return Err(ParseKnownBitsError(format!("{s}: more than 64 digits")));
        }
        for c in rest.bytes() {
            ones <<= 1;
            unknowns <<= 1;
            match c {
                b'1' => ones |= 1,
                b'?' => unknowns |= 1,
                b'0' => {}
                _ => return Err(ParseKnownBitsError(s.to_string())),
            }
        }
        Ok(KnownBits { ones, unknowns })
    }
}
