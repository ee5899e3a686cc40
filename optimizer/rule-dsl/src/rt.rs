//! Runtime helpers of rule expressions: the integer operators of `check` lines and
//! assignments whose Rust spelling is not a single operator.
//!
//! This file is the one definition of these operators: `rule-dsl` uses it to evaluate
//! constant expressions at rule-compile time, and the code generator pastes the same source
//! into the generated matcher, so the two cannot disagree. `verify` encodes the same
//! definitions with Z3 (and cross-checks them against this file in a test).
//!
//! All operators are total on 64-bit two's complement words: shift amounts outside `0..64`
//! give `0` (`<<`, `>>u`) or the sign fill (`>>`), as in SMT-LIB.

/// `a << b`; `0` when `b` is outside `0..64` (unsigned).
#[allow(dead_code)]
pub fn shl(a: i64, b: i64) -> i64 {
    if (b as u64) < 64 {
        a.wrapping_shl(b as u32)
    } else {
        0
    }
}

/// `a >> b` (arithmetic); the sign fill when `b` is outside `0..64` (unsigned).
#[allow(dead_code)]
pub fn ashr(a: i64, b: i64) -> i64 {
    if (b as u64) < 64 {
        a >> (b as u32)
    } else if a < 0 {
        -1
    } else {
        0
    }
}

/// `a >>u b` (logical); `0` when `b` is outside `0..64` (unsigned).
#[allow(dead_code)]
pub fn lshr(a: i64, b: i64) -> i64 {
    if (b as u64) < 64 {
        ((a as u64) >> (b as u32)) as i64
    } else {
        0
    }
}

/// The index of the highest set bit of `a` (as an unsigned word); `-1` for `0`.
#[allow(dead_code)]
pub fn highest_bit(a: i64) -> i64 {
    if a == 0 {
        -1
    } else {
        63 - i64::from((a as u64).leading_zeros())
    }
}

/// The index of the lowest set bit of `a`; `-1` for `0`.
#[allow(dead_code)]
pub fn lowest_bit(a: i64) -> i64 {
    if a == 0 {
        -1
    } else {
        i64::from(a.trailing_zeros())
    }
}
