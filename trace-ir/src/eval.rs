//! The evaluation function of every pure op: the one place where the arithmetic of the IR is
//! written down. The reference interpreter (`trace-interp`) and the optimizer's constant
//! folder both call it, so the two cannot disagree.
//!
//! # Value representation
//!
//! Every operand and result is a `u64` holding the op's 64 bits:
//! - integers as two's complement (`x as u64`; booleans are 0 or 1),
//! - floats as their IEEE-754 bits (`f.to_bits()`),
//! - references as addresses (0 is null).
//!
//! # Semantics (see also the one-line docs in the opcode table)
//!
//! | op | result |
//! |---|---|
//! | `int_add`, `int_sub`, `int_mul`, `int_neg` | wrapping 64-bit |
//! | `int_floordiv` | quotient truncated toward zero (C); `MININT / -1` wraps to `MININT` |
//! | `int_mod` | remainder with the dividend's sign (C); `MININT % -1` is 0 |
//! | `int_pydiv` | Python floor division; `MININT // -1` wraps to `MININT` |
//! | `int_pymod` | Python modulo (sign of the divisor); `MININT % -1` is 0 |
//! | `int_lshift`, `int_rshift`, `uint_rshift` | shift by 0..=63; `int_rshift` arithmetic, `uint_rshift` logical |
//! | `uint_mul_high` | high 64 bits of the unsigned 128-bit product |
//! | comparisons, `int_is_true`, `int_is_zero`, `ptr_*`, `instance_ptr_*`, `float_<cmp>` | 0 or 1 |
//! | `int_signext(x, n)` | the low `n` bytes of `x`, sign-extended (`n` in 1, 2, 4, 8) |
//! | `int_force_ge_zero` | `max(x, 0)` |
//! | `float_sqrt` | the correctly rounded square root; a NaN operand quieted, a negative one (not `-0.0`) gives [`DEFAULT_NAN`] (x86-64 `sqrtsd`) |
//! | `float_*` | IEEE-754 double arithmetic; comparisons are false when unordered, except `float_ne` (true); NaN results follow x86-64 SSE (the first NaN operand, quieted, else [`DEFAULT_NAN`]) |
//! | `cast_int_to_float` | nearest double of the signed integer |
//! | `cast_float_to_int` | truncation toward zero, saturating at MININT/MAXINT; NaN gives 0 |
//! | `convert_float_bytes_to_longlong`, `convert_longlong_bytes_to_float`, `same_as_*`, `cast_ptr_to_int`, `cast_int_to_ptr` | the same bits |
//!
//! # Invalid operations
//!
//! Where the IR leaves the result undefined (the `PARTIAL` flag in the opcode table), the
//! function returns [`EvalError::Invalid`] instead of a value: a shift amount outside
//! `0..=63`, a zero divisor of `int_floordiv`/`int_mod`/`int_pydiv`/`int_pymod`, and
//! `int_signext` with `n` not in {1, 2, 4, 8}. This matches the `valid_if` preconditions of
//! rule synthesis. A constant folder must then leave the op alone; the interpreter reports the
//! invalid operation. Nothing here panics or overflows.
//!
//! The overflow-checking ops have their own function, [`eval_ovf`], because they produce a
//! flag as well as a value.

use crate::opcode::{OpFlags, Opcode};
use std::fmt;

/// Why an op could not be evaluated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// The operands are outside the op's domain (shift amount out of range, zero divisor,
    /// bad `int_signext` width): the result is undefined.
    Invalid(&'static str),
    /// The opcode is not one this function evaluates (not pure, or for [`eval_ovf`] not an
    /// `_ovf` op).
    Unsupported(Opcode),
    /// The number of operands does not match the opcode.
    Arity {
        /// The opcode.
        opcode: Opcode,
        /// The number of operands given.
        got: usize,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Invalid(why) => write!(f, "invalid operation: {why}"),
            EvalError::Unsupported(op) => write!(f, "{op} is not evaluated by this function"),
            EvalError::Arity { opcode, got } => {
                write!(f, "{opcode} takes {} operand(s), got {got}", opcode.fixed_arity())
            }
        }
    }
}

impl std::error::Error for EvalError {}

#[inline]
fn b(c: bool) -> u64 {
    c as u64
}

#[inline]
fn f(x: u64) -> f64 {
    f64::from_bits(x)
}

#[inline]
fn fb(x: f64) -> u64 {
    x.to_bits()
}

/// The x86-64 default NaN (the "real indefinite"): what SSE produces for an invalid
/// operation on non-NaN operands (`inf - inf`, `0 / 0`, `0 * inf`).
pub const DEFAULT_NAN: u64 = 0xfff8_0000_0000_0000;

/// NaN results of binary float arithmetic, made deterministic with x86-64 SSE's rule (Rust
/// leaves NaN payloads unspecified): a NaN operand propagates, the first one winning, quieted;
/// a NaN made from non-NaN operands is [`DEFAULT_NAN`].
#[inline]
fn float_arith(x: u64, y: u64, r: f64) -> u64 {
    if !r.is_nan() {
        r.to_bits()
    } else if f(x).is_nan() {
        x | (1 << 51)
    } else if f(y).is_nan() {
        y | (1 << 51)
    } else {
        DEFAULT_NAN
    }
}

/// `float_sqrt` as x86-64 `sqrtsd` computes it (Rust leaves NaN payloads unspecified): a NaN
/// operand is returned quieted; a negative operand other than `-0.0` (including `-inf`) gives
/// [`DEFAULT_NAN`]; otherwise the correctly rounded square root (`sqrt(-0.0)` is `-0.0`).
pub fn float_sqrt(x: u64) -> u64 {
    let v = f(x);
    if v.is_nan() {
        x | (1 << 51)
    } else if v < 0.0 {
        DEFAULT_NAN
    } else {
        v.sqrt().to_bits()
    }
}

fn shift_amount(s: u64) -> Result<u32, EvalError> {
    // The amount is a signed integer; valid only in 0..=63.
    if s < 64 {
        Ok(s as u32)
    } else {
        Err(EvalError::Invalid("shift amount outside 0..=63"))
    }
}

fn nonzero(d: i64) -> Result<i64, EvalError> {
    if d == 0 {
        Err(EvalError::Invalid("division by zero"))
    } else {
        Ok(d)
    }
}

/// Python floor division `a // b` on 64-bit integers, `b != 0`; `MININT // -1` wraps.
pub fn py_div(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    let r = a.wrapping_rem(b);
    // Truncation rounded toward zero; floor differs when the remainder is nonzero and the
    // signs of remainder and divisor differ.
    if r != 0 && ((r < 0) != (b < 0)) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

/// Python modulo `a % b` on 64-bit integers (sign of the divisor), `b != 0`.
pub fn py_mod(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r.wrapping_add(b)
    } else {
        r
    }
}

/// Float to integer as `cast_float_to_int` does: truncate toward zero, saturate, NaN gives 0.
pub fn float_to_int(x: f64) -> i64 {
    // Rust's `as` is exactly this (saturating, NaN → 0) since 1.45.
    x as i64
}

/// Evaluate a pure op on its operands' bits (see the module documentation for the
/// representation and semantics).
///
/// Returns [`EvalError::Invalid`] when the result is undefined for these operands,
/// [`EvalError::Unsupported`] for an opcode without the `PURE` flag, and
/// [`EvalError::Arity`] for a wrong number of operands. Never panics.
///
/// ```
/// use trace_ir::{eval::{eval_pure, EvalError}, Opcode};
/// assert_eq!(eval_pure(Opcode::IntAdd, &[u64::MAX, 2]), Ok(1));
/// assert_eq!(eval_pure(Opcode::IntPyDiv, &[(-7i64) as u64, 2]), Ok((-4i64) as u64));
/// assert!(matches!(eval_pure(Opcode::IntLshift, &[1, 64]), Err(EvalError::Invalid(_))));
/// ```
pub fn eval_pure(opcode: Opcode, args: &[u64]) -> Result<u64, EvalError> {
    use Opcode::*;
    if !opcode.has(OpFlags::PURE) {
        return Err(EvalError::Unsupported(opcode));
    }
    if args.len() != opcode.fixed_arity() || opcode.is_variadic() {
        return Err(EvalError::Arity {
            opcode,
            got: args.len(),
        });
    }
    let x = args[0];
    let y = args.get(1).copied().unwrap_or(0);
    let (xi, yi) = (x as i64, y as i64);
    Ok(match opcode {
        IntAdd => x.wrapping_add(y),
        IntSub => x.wrapping_sub(y),
        IntMul => x.wrapping_mul(y),
        IntFloorDiv => xi.wrapping_div(nonzero(yi)?) as u64,
        IntMod => xi.wrapping_rem(nonzero(yi)?) as u64,
        IntPyDiv => py_div(xi, nonzero(yi)?) as u64,
        IntPyMod => py_mod(xi, nonzero(yi)?) as u64,
        IntAnd => x & y,
        IntOr => x | y,
        IntXor => x ^ y,
        IntLshift => x << shift_amount(y)?,
        IntRshift => (xi >> shift_amount(y)?) as u64,
        UintRshift => x >> shift_amount(y)?,
        UintMulHigh => ((x as u128 * y as u128) >> 64) as u64,
        IntLt => b(xi < yi),
        IntLe => b(xi <= yi),
        IntEq => b(x == y),
        IntNe => b(x != y),
        IntGt => b(xi > yi),
        IntGe => b(xi >= yi),
        UintLt => b(x < y),
        UintLe => b(x <= y),
        UintGt => b(x > y),
        UintGe => b(x >= y),
        IntIsTrue => b(x != 0),
        IntIsZero => b(x == 0),
        IntNeg => xi.wrapping_neg() as u64,
        IntInvert => !x,
        IntSignext => match y {
            1 => x as i8 as i64 as u64,
            2 => x as i16 as i64 as u64,
            4 => x as i32 as i64 as u64,
            8 => x,
            _ => return Err(EvalError::Invalid("int_signext width not in 1, 2, 4, 8")),
        },
        IntForceGeZero => xi.max(0) as u64,
        IntSelect => {
            if x != 0 {
                y
            } else {
                args[2]
            }
        }
        SameAsI | SameAsR | SameAsF => x,
        PtrEq | InstancePtrEq => b(x == y),
        PtrNe | InstancePtrNe => b(x != y),
        CastPtrToInt | CastIntToPtr => x,
        FloatAdd => float_arith(x, y, f(x) + f(y)),
        FloatSub => float_arith(x, y, f(x) - f(y)),
        FloatMul => float_arith(x, y, f(x) * f(y)),
        FloatTrueDiv => float_arith(x, y, f(x) / f(y)),
        FloatNeg => x ^ (1 << 63),
        FloatAbs => x & !(1 << 63),
        FloatSqrt => float_sqrt(x),
        FloatLt => b(f(x) < f(y)),
        FloatLe => b(f(x) <= f(y)),
        FloatEq => b(f(x) == f(y)),
        FloatNe => b(f(x) != f(y)),
        FloatGt => b(f(x) > f(y)),
        FloatGe => b(f(x) >= f(y)),
        CastIntToFloat => fb(xi as f64),
        CastFloatToInt => float_to_int(f(x)) as u64,
        ConvertFloatBytesToLonglong | ConvertLonglongBytesToFloat => x,
        other => return Err(EvalError::Unsupported(other)),
    })
}

/// Whether the pure op `opcode` is defined ([`eval_pure`] gives no [`EvalError::Invalid`])
/// for every value of its operands that `args` leaves open (`None`), the others being the
/// given constants: a division or modulo by a non-zero constant, a shift by a constant
/// amount in `0..=63`, `int_signext` to a constant width of 1, 2, 4 or 8 bytes, and any
/// other op [`eval_pure`] evaluates. Such an op may be computed where its result is not
/// needed yet (hoisted, or redone where a second trace enters a loop body).
///
/// ```
/// use trace_ir::{eval::defined_everywhere, Opcode};
/// assert!(defined_everywhere(Opcode::IntMod, &[None, Some(7)]));
/// assert!(!defined_everywhere(Opcode::IntMod, &[None, None]));
/// assert!(!defined_everywhere(Opcode::IntLshift, &[Some(1), Some(64)]));
/// ```
pub fn defined_everywhere(opcode: Opcode, args: &[Option<u64>]) -> bool {
    use Opcode::*;
    if args.len() != opcode.fixed_arity() || opcode.is_variadic() {
        return false;
    }
    let second = args.get(1).copied().flatten();
    match opcode {
        IntFloorDiv | IntMod | IntPyDiv | IntPyMod => second.is_some_and(|d| d != 0),
        IntLshift | IntRshift | UintRshift => second.is_some_and(|s| s < 64),
        IntSignext => second.is_some_and(|w| matches!(w, 1 | 2 | 4 | 8)),
        // Every other op `eval_pure` supports is total: evaluate it once to ask.
        _ => eval_pure(opcode, &vec![0; args.len()]).is_ok(),
    }
}

/// Evaluate an overflow-checking op (`int_add_ovf`, `int_sub_ovf`, `int_mul_ovf`): the
/// wrapped 64-bit result and whether the operation overflowed.
///
/// The encoding of translation validation: the op overflows exactly when the infinitely precise result of the
/// operation does not fit in a signed 64-bit integer (the sign-extended 128-bit result differs
/// from the sign-extension of the wrapped result). Any other opcode gives
/// [`EvalError::Unsupported`].
///
/// ```
/// use trace_ir::{eval::eval_ovf, Opcode};
/// assert_eq!(eval_ovf(Opcode::IntAddOvf, i64::MAX, 1), Ok((i64::MIN, true)));
/// assert_eq!(eval_ovf(Opcode::IntMulOvf, -3, 4), Ok((-12, false)));
/// ```
pub fn eval_ovf(opcode: Opcode, a: i64, b: i64) -> Result<(i64, bool), EvalError> {
    let wide: i128 = match opcode {
        Opcode::IntAddOvf => a as i128 + b as i128,
        Opcode::IntSubOvf => a as i128 - b as i128,
        Opcode::IntMulOvf => a as i128 * b as i128,
        other => return Err(EvalError::Unsupported(other)),
    };
    let wrapped = wide as i64;
    Ok((wrapped, wrapped as i128 != wide))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, Just, Strategy};

    proptest::proptest! {
        /// An op `defined_everywhere` calls defined is: whatever the open operands are, with
        /// the given constants, `eval_pure` gives no `Invalid`; and one it calls undefined
        /// with every operand open has operands where it is.
        #[test]
        fn defined_everywhere_is_eval_pures_domain(
            which in 0..Opcode::ALL.len(),
            consts in proptest::collection::vec(proptest::prop_oneof![
                Just(None),
                (0u64..70).prop_map(Some),
                any::<u64>().prop_map(Some),
            ], 3),
            open in proptest::collection::vec(proptest::prop_oneof![
                0u64..70, Just(0u64), any::<u64>()
            ], 3),
        ) {
            let op = Opcode::ALL[which];
            let n = op.fixed_arity();
            if op.is_pure() && !op.is_variadic() && n <= 3 {
                let pattern = &consts[..n];
                let vals: Vec<u64> = (0..n).map(|i| pattern[i].unwrap_or(open[i])).collect();
                if defined_everywhere(op, pattern) {
                    proptest::prop_assert!(!matches!(eval_pure(op, &vals), Err(EvalError::Invalid(_))), "{op} {vals:?}");
                }
            }
        }
    }

    #[test]
    fn ops_undefined_somewhere_are_not_defined_everywhere() {
        for (op, args) in [
            (Opcode::IntFloorDiv, [1u64, 0]),
            (Opcode::IntPyMod, [1, 0]),
            (Opcode::IntLshift, [1, 64]),
            (Opcode::UintRshift, [1, u64::MAX]),
            (Opcode::IntSignext, [1, 3]),
        ] {
            assert!(matches!(eval_pure(op, &args), Err(EvalError::Invalid(_))));
            assert!(!defined_everywhere(op, &[None, None]), "{op}");
            assert!(!defined_everywhere(op, &[None, Some(args[1])]), "{op}");
        }
        assert!(defined_everywhere(Opcode::IntAdd, &[None, None]));
        assert!(defined_everywhere(Opcode::FloatTrueDiv, &[None, None]));
        assert!(!defined_everywhere(Opcode::GuardTrue, &[None]));
    }

    #[test]
    fn corner_cases_do_not_panic() {
        let min = i64::MIN as u64;
        let m1 = u64::MAX;
        assert_eq!(eval_pure(Opcode::IntFloorDiv, &[min, m1]), Ok(min));
        assert_eq!(eval_pure(Opcode::IntMod, &[min, m1]), Ok(0));
        assert_eq!(eval_pure(Opcode::IntPyDiv, &[min, m1]), Ok(min));
        assert_eq!(eval_pure(Opcode::IntPyMod, &[min, m1]), Ok(0));
        assert!(matches!(eval_pure(Opcode::IntMod, &[5, 0]), Err(EvalError::Invalid(_))));
        assert!(matches!(
            eval_pure(Opcode::IntRshift, &[5, m1]),
            Err(EvalError::Invalid(_))
        ));
        assert!(matches!(
            eval_pure(Opcode::IntSignext, &[5, 3]),
            Err(EvalError::Invalid(_))
        ));
        assert_eq!(
            eval_pure(Opcode::IntAdd, &[1]),
            Err(EvalError::Arity {
                opcode: Opcode::IntAdd,
                got: 1
            })
        );
        assert_eq!(
            eval_pure(Opcode::GuardTrue, &[1]),
            Err(EvalError::Unsupported(Opcode::GuardTrue))
        );
        assert_eq!(eval_pure(Opcode::CastFloatToInt, &[f64::NAN.to_bits()]), Ok(0));
        assert_eq!(
            eval_pure(Opcode::CastFloatToInt, &[1e300f64.to_bits()]),
            Ok(i64::MAX as u64)
        );
    }
}
