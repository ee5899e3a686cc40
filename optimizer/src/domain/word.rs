//! The `Word` trait: fixed-width machine words the abstract domains are written over.
//!
//! Every domain function is generic over [`Word`], so the same source runs in the optimizer
//! (`u64`, with `bool` as [`Word::Bool`]) and is proven by Z3 in `verify` (a wrapper around
//! `z3::ast::BV`). Domain code therefore never branches on data: it uses [`Word::select`]
//! and [`WordBool::select`]. Loops whose trip count depends only on [`Word::BITS`] are fine
//! (they unroll to the same formula for Z3).
//!
//! Instances here: `u64` (production), and `u8`, `u16`, `u32` (for exhaustive checks at small
//! widths). All arithmetic wraps (two's complement); signed views reinterpret the bits.

use core::fmt::Debug;

/// A boolean of a [`Word`]: `bool` for machine words, a Z3 `Bool` for bit-vectors.
pub trait WordBool: Clone + Debug {
    /// The constant `b`.
    fn from_bool(b: bool) -> Self;
    /// Logical and.
    fn and(&self, other: &Self) -> Self;
    /// Logical or.
    fn or(&self, other: &Self) -> Self;
    /// Logical not.
    fn not(&self) -> Self;
    /// `if self { a } else { b }` on booleans.
    fn select(&self, a: &Self, b: &Self) -> Self {
        self.and(a).or(&self.not().and(b))
    }
    /// `self => other`.
    fn implies(&self, other: &Self) -> Self {
        self.not().or(other)
    }
    /// Boolean equality.
    fn iff(&self, other: &Self) -> Self {
        self.select(other, &other.not())
    }
}

impl WordBool for bool {
    #[inline]
    fn from_bool(b: bool) -> Self {
        b
    }
    #[inline]
    fn and(&self, other: &Self) -> Self {
        *self && *other
    }
    #[inline]
    fn or(&self, other: &Self) -> Self {
        *self || *other
    }
    #[inline]
    fn not(&self) -> Self {
        !*self
    }
    #[inline]
    fn select(&self, a: &Self, b: &Self) -> Self {
        if *self {
            *a
        } else {
            *b
        }
    }
}

/// A fixed-width two's complement machine word.
///
/// Contract for implementations (the Z3 instance must model exactly this):
/// - all arithmetic wraps modulo `2^BITS`;
/// - shift amounts are words and must be `< BITS` (unsigned); for larger amounts the result
///   is unspecified (instances may differ), and domain code only shifts by in-range amounts;
/// - [`Word::sdiv`] / [`Word::srem`] truncate toward zero (C semantics), `MIN / -1` wraps to
///   `MIN` and `MIN % -1 == 0`; for a zero divisor the result is unspecified but the call
///   never panics (domain code only uses it under a `select` that discards that case).
pub trait Word: Clone + Debug {
    /// The boolean type comparisons return.
    type Bool: WordBool;
    /// The width in bits.
    const BITS: u32;

    /// The constant `v` truncated to `BITS` bits.
    fn from_u64(v: u64) -> Self;
    /// The constant `v` truncated to `BITS` bits (two's complement).
    fn from_i64(v: i64) -> Self {
        Self::from_u64(v as u64)
    }
    /// Wrapping addition.
    fn add(&self, o: &Self) -> Self;
    /// Wrapping subtraction.
    fn sub(&self, o: &Self) -> Self;
    /// Wrapping multiplication.
    fn mul(&self, o: &Self) -> Self;
    /// The high `BITS` bits of the unsigned `2*BITS`-bit product.
    fn umul_high(&self, o: &Self) -> Self;
    /// Whether the signed product `self * o` does not fit in `BITS` bits.
    fn smul_overflows(&self, o: &Self) -> Self::Bool;
    /// Signed division truncating toward zero (see the trait doc for edge cases).
    fn sdiv(&self, o: &Self) -> Self;
    /// Signed remainder with the sign of the dividend (see the trait doc for edge cases).
    fn srem(&self, o: &Self) -> Self;
    /// Bitwise and.
    fn and(&self, o: &Self) -> Self;
    /// Bitwise or.
    fn or(&self, o: &Self) -> Self;
    /// Bitwise xor.
    fn xor(&self, o: &Self) -> Self;
    /// Bitwise not.
    fn not(&self) -> Self;
    /// Wrapping negation.
    fn neg(&self) -> Self;
    /// Left shift; `amount < BITS` required.
    fn shl(&self, amount: &Self) -> Self;
    /// Logical right shift; `amount < BITS` required.
    fn lshr(&self, amount: &Self) -> Self;
    /// Arithmetic right shift; `amount < BITS` required.
    fn ashr(&self, amount: &Self) -> Self;
    /// Equality.
    fn equals(&self, o: &Self) -> Self::Bool;
    /// Signed `<`.
    fn slt(&self, o: &Self) -> Self::Bool;
    /// Signed `<=`.
    fn sle(&self, o: &Self) -> Self::Bool;
    /// Unsigned `<`.
    fn ult(&self, o: &Self) -> Self::Bool;
    /// Unsigned `<=`.
    fn ule(&self, o: &Self) -> Self::Bool;
    /// `if c { a } else { b }`.
    fn select(c: &Self::Bool, a: &Self, b: &Self) -> Self;

    // ---- provided helpers (all built from the primitives above) ----

    /// Inequality.
    fn not_equals(&self, o: &Self) -> Self::Bool {
        self.equals(o).not()
    }
    /// Signed `>`.
    fn sgt(&self, o: &Self) -> Self::Bool {
        o.slt(self)
    }
    /// Signed `>=`.
    fn sge(&self, o: &Self) -> Self::Bool {
        o.sle(self)
    }
    /// Unsigned `>`.
    fn ugt(&self, o: &Self) -> Self::Bool {
        o.ult(self)
    }
    /// Unsigned `>=`.
    fn uge(&self, o: &Self) -> Self::Bool {
        o.ule(self)
    }
    /// The constant 0.
    fn zero() -> Self {
        Self::from_u64(0)
    }
    /// The constant 1.
    fn one() -> Self {
        Self::from_u64(1)
    }
    /// The constant with all bits set (-1).
    fn ones() -> Self {
        Self::from_i64(-1)
    }
    /// The smallest signed value (only the sign bit set).
    fn min_signed() -> Self {
        Self::one().shl(&Self::from_u64(u64::from(Self::BITS - 1)))
    }
    /// The largest signed value.
    fn max_signed() -> Self {
        Self::min_signed().not()
    }
    /// 1 if `b` else 0.
    fn from_word_bool(b: &Self::Bool) -> Self {
        Self::select(b, &Self::one(), &Self::zero())
    }
    /// Whether the sign bit is set.
    fn is_negative(&self) -> Self::Bool {
        self.slt(&Self::zero())
    }
    /// Signed minimum.
    fn smin(&self, o: &Self) -> Self {
        Self::select(&self.slt(o), self, o)
    }
    /// Signed maximum.
    fn smax(&self, o: &Self) -> Self {
        Self::select(&self.slt(o), o, self)
    }
    /// Unsigned minimum.
    fn umin(&self, o: &Self) -> Self {
        Self::select(&self.ult(o), self, o)
    }
    /// Unsigned maximum.
    fn umax(&self, o: &Self) -> Self {
        Self::select(&self.ult(o), o, self)
    }
    /// Whether the signed sum `self + o` overflows.
    fn sadd_overflows(&self, o: &Self) -> Self::Bool {
        let r = self.add(o);
        self.xor(&r).and(&o.xor(&r)).is_negative()
    }
    /// Whether the signed difference `self - o` overflows.
    fn ssub_overflows(&self, o: &Self) -> Self::Bool {
        let r = self.sub(o);
        self.xor(o).and(&self.xor(&r)).is_negative()
    }
    /// Saturating signed addition.
    fn sadd_sat(&self, o: &Self) -> Self {
        let sat = Self::select(&self.is_negative(), &Self::min_signed(), &Self::max_signed());
        Self::select(&self.sadd_overflows(o), &sat, &self.add(o))
    }
    /// Saturating signed subtraction.
    fn ssub_sat(&self, o: &Self) -> Self {
        let sat = Self::select(&self.is_negative(), &Self::min_signed(), &Self::max_signed());
        Self::select(&self.ssub_overflows(o), &sat, &self.sub(o))
    }
    /// The lowest set bit (`0` if none): `x & -x`.
    fn lowest_bit(&self) -> Self {
        self.and(&self.neg())
    }
    /// All bits at and below the highest set bit are set (`0` stays `0`).
    fn smear_right(&self) -> Self {
        let mut v = self.clone();
        let mut s = 1u32;
        while s < Self::BITS {
            v = v.or(&v.lshr(&Self::from_u64(u64::from(s))));
            s *= 2;
        }
        v
    }
}

macro_rules! impl_word_prim {
    ($u:ty, $s:ty, $wide:ty) => {
        impl Word for $u {
            type Bool = bool;
            const BITS: u32 = <$u>::BITS;
            #[inline]
            fn from_u64(v: u64) -> Self {
                v as $u
            }
            #[inline]
            fn add(&self, o: &Self) -> Self {
                self.wrapping_add(*o)
            }
            #[inline]
            fn sub(&self, o: &Self) -> Self {
                self.wrapping_sub(*o)
            }
            #[inline]
            fn mul(&self, o: &Self) -> Self {
                self.wrapping_mul(*o)
            }
            #[inline]
            fn umul_high(&self, o: &Self) -> Self {
                ((*self as $wide * *o as $wide) >> <$u>::BITS) as $u
            }
            #[inline]
            fn smul_overflows(&self, o: &Self) -> bool {
                (*self as $s).checked_mul(*o as $s).is_none()
            }
            #[inline]
            fn sdiv(&self, o: &Self) -> Self {
                if *o == 0 {
                    0
                } else {
                    (*self as $s).wrapping_div(*o as $s) as $u
                }
            }
            #[inline]
            fn srem(&self, o: &Self) -> Self {
                if *o == 0 {
                    *self
                } else {
                    (*self as $s).wrapping_rem(*o as $s) as $u
                }
            }
            #[inline]
            fn and(&self, o: &Self) -> Self {
                *self & *o
            }
            #[inline]
            fn or(&self, o: &Self) -> Self {
                *self | *o
            }
            #[inline]
            fn xor(&self, o: &Self) -> Self {
                *self ^ *o
            }
            #[inline]
            fn not(&self) -> Self {
                !*self
            }
            #[inline]
            fn neg(&self) -> Self {
                self.wrapping_neg()
            }
            #[inline]
            fn shl(&self, amount: &Self) -> Self {
                self.wrapping_shl(*amount as u32)
            }
            #[inline]
            fn lshr(&self, amount: &Self) -> Self {
                self.wrapping_shr(*amount as u32)
            }
            #[inline]
            fn ashr(&self, amount: &Self) -> Self {
                (*self as $s).wrapping_shr(*amount as u32) as $u
            }
            #[inline]
            fn equals(&self, o: &Self) -> bool {
                *self == *o
            }
            #[inline]
            fn slt(&self, o: &Self) -> bool {
                (*self as $s) < (*o as $s)
            }
            #[inline]
            fn sle(&self, o: &Self) -> bool {
                (*self as $s) <= (*o as $s)
            }
            #[inline]
            fn ult(&self, o: &Self) -> bool {
                *self < *o
            }
            #[inline]
            fn ule(&self, o: &Self) -> bool {
                *self <= *o
            }
            #[inline]
            fn select(c: &bool, a: &Self, b: &Self) -> Self {
                if *c {
                    *a
                } else {
                    *b
                }
            }
        }
    };
}

impl_word_prim!(u8, i8, u16);
impl_word_prim!(u16, i16, u32);
impl_word_prim!(u32, i32, u64);
impl_word_prim!(u64, i64, u128);
