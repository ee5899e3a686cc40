//! Abstract integer domains (knownbits × interval), generic over [`Word`] so that the code
//! that runs in the optimizer is the code that `verify` proves with Z3.
//!
//! - [`word`]: the [`Word`] trait (`u64` in production, `u8`/`u16`/`u32` for exhaustive
//!   checks, Z3 bit-vectors in `verify`). Domain code never branches on data; it `select`s.
//! - [`knownbits`]: [`KnownBits`] (`ones`, `unknowns`; text form `...?01?`).
//! - [`interval`]: [`Interval`] (signed `lower..=upper`; empty if `lower > upper`).
//! - [`intbound`]: [`IntBound`], the reduced product the optimizer keeps per integer value.
//!
//! # What the optimizer calls (`IntBound<u64>`, written `IntBound` below)
//!
//! Construction: `IntBound::unbounded()`, `from_constant(u64)`, `from_i64(i64)`,
//! `nonnegative()`, `boolean()`, `from_range_i64(lo, hi)`, `from_knownbits(kb)`.
//!
//! Forward transfer functions, one per integer op (`a.op(&b)` returns a new `IntBound`):
//!
//! | op | call | op | call |
//! |----|------|----|------|
//! | `int_add` | `a.add(&b)` | `int_sub` | `a.sub(&b)` |
//! | `int_mul` | `a.mul(&b)` | `int_neg` | `a.neg()` |
//! | `int_and` | `a.and(&b)` | `int_or` | `a.or(&b)` |
//! | `int_xor` | `a.xor(&b)` | `int_invert` | `a.invert()` |
//! | `int_lshift` | `a.lshift(&b)` | `int_rshift` | `a.rshift(&b)` |
//! | `uint_rshift` | `a.uint_rshift(&b)` | `uint_mul_high` | `a.uint_mul_high(&b)` |
//! | `int_floordiv` | `a.floordiv(&b)` | `int_mod` | `a.modulo(&b)` |
//! | `int_pydiv` | `a.pydiv(&b)` | `int_pymod` | `a.pymod(&b)` |
//! | `int_eq`/`int_ne` | `a.eq(&b)` / `a.ne(&b)` | `int_lt`/`int_le` | `a.lt(&b)` / `a.le(&b)` |
//! | `int_gt`/`int_ge` | `a.gt(&b)` / `a.ge(&b)` | `uint_lt`/`uint_le` | `a.ult(&b)` / `a.ule(&b)` |
//! | `uint_gt`/`uint_ge` | `a.ugt(&b)` / `a.uge(&b)` | `int_is_true` | `a.is_true()` |
//! | `int_is_zero` | `a.is_zero()` | `int_force_ge_zero` | `a.force_ge_zero()` |
//! | `int_signext(x, n)` | `a.signext(n as u32)` | | |
//! | `int_add_ovf` | `a.add_ovf(&b) -> (IntBound, bool)` | `int_sub_ovf` | `a.sub_ovf(&b)` |
//! | `int_mul_ovf` | `a.mul_ovf(&b)` | | |
//!
//! The `_ovf` functions return the result assuming no overflow and `true` if overflow is
//! impossible (then the op may become the plain op and its `guard_no_overflow` goes away).
//! Shift amounts outside `0..64` are invalid (the result is then unspecified); division by
//! zero is invalid.
//!
//! Queries: `get_constant() -> Option<i64>`, `is_constant()`, `lower()`/`upper()` (as
//! `u64` bits) and `lower_i64()`/`upper_i64()`, `contains(&u64)`/`contains_i64`,
//! `is_empty()`, `is_bool()`, `known_nonnegative()`, `known_negative()`,
//! `known_lt/le/gt/ge/ne/ult/ule(&b)`, `known_ge_const/gt/le/lt_const(&c)`,
//! `is_and_identity(&b)`, `is_or_identity(&b)`, `known_zeros()`, `known_ones()`, `knowns()`,
//! `is_subset_of(&b)`, and the parts `a.bits` ([`KnownBits`]) and `a.range` ([`Interval`]).
//!
//! Backward functions (learning from guards; check `is_empty()` afterwards: empty means the
//! guard always fails): `a.make_lt(&b)`, `make_le`, `make_gt`, `make_ge`, `make_eq`,
//! `make_ne`, `make_ult`, `make_ule`, `make_ugt`, `make_uge`, `make_nonnegative()`,
//! `make_nonzero()`, `make_zero()`; both sides at once:
//! `IntBound::learn_cmp(Cmp::Lt, truth, &a, &b) -> (a', b')`. From op results:
//! `IntBound::backward_add(&a, &b, &res) -> (a', b')` (wrapping, sound), `backward_sub`,
//! `backward_add_ovf` / `backward_sub_ovf` (only after `guard_no_overflow`),
//! `backward_mul_ovf_const(&a, &b, &res) -> a'` (only `_ovf`, `b` constant > 0),
//! `backward_neg(&a, &res)`, `backward_invert(&a, &res)`. Lattice: `intersect`, `join`.

#![deny(missing_docs)]

pub mod intbound;
pub mod interval;
pub mod knownbits;
pub mod word;

#[cfg(test)]
mod tests;

pub use intbound::{Cmp, IntBound};
pub use interval::Interval;
pub use knownbits::KnownBits;
pub use word::{Word, WordBool};
