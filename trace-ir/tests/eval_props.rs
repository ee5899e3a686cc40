//! `eval_pure` and `eval_ovf` against Rust's own arithmetic: for every PURE op of the opcode
//! table, an independent expression written here (wider integer types, Euclidean division,
//! explicit masks) on special and random values. The test fails if a PURE op has no check.

use proptest::prelude::*;
use trace_ir::eval::{eval_ovf, eval_pure, EvalError};
use trace_ir::{OpFlags, Opcode};

/// The expected result of `op(a, b)` (unary ops ignore `b`; `int_select` is `op(a, b, !b)`): `Some(Ok(bits))`,
/// `Some(Err(()))` when the op is invalid for these operands, `None` when this test has no
/// expression for the op.
fn reference(op: Opcode, a: u64, b: u64) -> Option<Result<u64, ()>> {
    use Opcode::*;
    let (ai, bi) = (a as i64 as i128, b as i64 as i128);
    let (fa, fb) = (f64::from_bits(a), f64::from_bits(b));
    let bool_ = |c: bool| Ok(if c { 1 } else { 0 });
    let floor_div = |x: i128, y: i128| if y > 0 { x.div_euclid(y) } else { (-x).div_euclid(-y) };
    use std::cmp::Ordering::*;
    Some(match op {
        IntAdd => Ok((ai + bi) as u64),
        IntSub => Ok((ai - bi) as u64),
        IntMul => Ok((a as u128 * b as u128) as u64),
        IntFloorDiv => {
            if bi == 0 {
                Err(())
            } else {
                Ok((ai / bi) as u64)
            }
        } // i128: no overflow; truncation wraps MININT/-1
        IntMod => {
            if bi == 0 {
                Err(())
            } else {
                Ok((ai % bi) as u64)
            }
        }
        IntPyDiv => {
            if bi == 0 {
                Err(())
            } else {
                Ok(floor_div(ai, bi) as u64)
            }
        }
        IntPyMod => {
            if bi == 0 {
                Err(())
            } else {
                Ok((ai - bi * floor_div(ai, bi)) as u64)
            }
        }
        IntAnd => Ok(a & b),
        IntOr => Ok(a | b),
        IntXor => Ok(a ^ b),
        IntLshift => {
            if b > 63 {
                Err(())
            } else {
                Ok(((a as u128) << b) as u64)
            }
        }
        IntRshift => {
            if b > 63 {
                Err(())
            } else {
                Ok((ai >> b) as u64)
            }
        }
        UintRshift => {
            if b > 63 {
                Err(())
            } else {
                Ok(((a as u128) >> b) as u64)
            }
        }
        UintMulHigh => Ok(((a as u128 * b as u128) >> 64) as u64),
        IntLt => bool_(ai < bi),
        IntLe => bool_(ai <= bi),
        IntEq => bool_(a == b),
        IntNe => bool_(a != b),
        IntGt => bool_(ai > bi),
        IntGe => bool_(ai >= bi),
        UintLt => bool_(a < b),
        UintLe => bool_(a <= b),
        UintGt => bool_(a > b),
        UintGe => bool_(a >= b),
        IntIsTrue => bool_(a != 0),
        IntIsZero => bool_(a == 0),
        IntNeg => Ok((-ai) as u64),
        IntInvert => Ok(a ^ u64::MAX),
        IntSignext => match b {
            1 | 2 | 4 | 8 => {
                let bits = 8 * b as u32;
                let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let low = a & mask;
                let sign = (low >> (bits - 1)) & 1 == 1;
                Ok(if sign { low | !mask } else { low })
            }
            _ => Err(()),
        },
        IntForceGeZero => Ok(if ai < 0 { 0 } else { a }),
        // (Its third operand is `!b` in these checks.)
        IntSelect => Ok(if a != 0 { b } else { !b }),
        SameAsI | SameAsR | SameAsF => Ok(a),
        PtrEq | InstancePtrEq => bool_(a == b),
        PtrNe | InstancePtrNe => bool_(a != b),
        CastPtrToInt | CastIntToPtr => Ok(a),
        FloatAdd => Ok(sse(a, b, fa + fb)),
        FloatSub => Ok(sse(a, b, fa - fb)),
        FloatMul => Ok(sse(a, b, fa * fb)),
        FloatTrueDiv => Ok(sse(a, b, fa / fb)),
        FloatNeg => Ok((-fa).to_bits()),
        FloatAbs => Ok(fa.abs().to_bits()),
        FloatSqrt => Ok(sse(a, a, fa.sqrt())),
        FloatLt => bool_(fa.partial_cmp(&fb) == Some(Less)),
        FloatLe => bool_(matches!(fa.partial_cmp(&fb), Some(Less | Equal))),
        FloatEq => bool_(fa.partial_cmp(&fb) == Some(Equal)),
        FloatNe => bool_(fa.partial_cmp(&fb) != Some(Equal)),
        FloatGt => bool_(fa.partial_cmp(&fb) == Some(Greater)),
        FloatGe => bool_(matches!(fa.partial_cmp(&fb), Some(Greater | Equal))),
        CastIntToFloat => Ok((a as i64 as f64).to_bits()),
        CastFloatToInt => Ok(if fa.is_nan() {
            0
        } else if fa >= 9223372036854775808.0 {
            i64::MAX as u64
        } else if fa <= -9223372036854775808.0 {
            i64::MIN as u64
        } else {
            fa.trunc() as i128 as i64 as u64
        }),
        ConvertFloatBytesToLonglong | ConvertLonglongBytesToFloat => Ok(a),
        _ => return None,
    })
}

/// x86-64 SSE NaN rule: first NaN operand quieted, else the default NaN (sign bit set).
fn sse(a: u64, b: u64, r: f64) -> u64 {
    let is_nan = |x: u64| (x >> 52) & 0x7ff == 0x7ff && x & ((1 << 52) - 1) != 0;
    match (r.is_nan(), is_nan(a), is_nan(b)) {
        (false, _, _) => r.to_bits(),
        (true, true, _) => a | 0x0008_0000_0000_0000,
        (true, false, true) => b | 0x0008_0000_0000_0000,
        (true, false, false) => 0xfff8_0000_0000_0000,
    }
}

fn pure_ops() -> Vec<Opcode> {
    Opcode::ALL.iter().copied().filter(|op| op.has(OpFlags::PURE)).collect()
}

const SPECIAL: &[u64] = &[
    0,
    1,
    2,
    3,
    7,
    8,
    63,
    64,
    65,
    255,
    256,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0x8000_0000_0000_0001,
    u64::MAX,
    u64::MAX - 1,
    (-2i64) as u64,
    (-7i64) as u64,
    (-64i64) as u64,
    (-128i64) as u64,
    0x80,
    0x8000,
    0xff80,
    // float bits: 0.0, -0.0, 1.0, -1.5, inf, -inf, NaN, 2^63, -2^63, 1e300, tiny
    0x3ff0_0000_0000_0000,
    0xbff8_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x43e0_0000_0000_0000,
    0xc3e0_0000_0000_0000,
    0x7e37_e43c_8800_759c,
    1,
    // 2.0, 0.25, a signalling NaN with the sign set, the smallest subnormal, -1e-300
    0x4000_0000_0000_0000,
    0x3fd0_0000_0000_0000,
    0xfff4_0000_0000_0001,
    0x0000_0000_0000_0001,
    0x81c8_0000_0000_0000,
];

fn check(op: Opcode, a: u64, b: u64) {
    let args: Vec<u64> = match op.fixed_arity() {
        1 => vec![a],
        2 => vec![a, b],
        _ => vec![a, b, !b],
    };
    let got = eval_pure(op, &args);
    let want = reference(op, a, b).unwrap_or_else(|| panic!("no reference expression for {op}"));
    match (got, want) {
        (Ok(g), Ok(w)) => assert_eq!(g, w, "{op}({a:#x}, {b:#x})"),
        (Err(EvalError::Invalid(_)), Err(())) => {
            assert!(
                op.has(OpFlags::PARTIAL),
                "{op} is invalid for some operands but not PARTIAL"
            )
        }
        (g, w) => panic!("{op}({a:#x}, {b:#x}): eval gives {g:?}, expected {w:?}"),
    }
}

#[test]
fn every_pure_op_has_a_reference_expression() {
    let ops = pure_ops();
    assert!(ops.len() > 50, "suspiciously few PURE ops: {}", ops.len());
    let missing: Vec<&str> = ops
        .iter()
        .filter(|&&op| reference(op, 1, 1).is_none())
        .map(|op| op.name())
        .collect();
    assert!(missing.is_empty(), "PURE ops without a check in this test: {missing:?}");
    // And eval_pure refuses everything that is not PURE.
    for &op in Opcode::ALL {
        if !op.has(OpFlags::PURE) {
            assert_eq!(eval_pure(op, &[1, 1]), Err(EvalError::Unsupported(op)));
        }
    }
}

#[test]
fn all_pure_ops_on_all_pairs_of_special_values() {
    for op in pure_ops() {
        for &a in SPECIAL {
            for &b in SPECIAL {
                check(op, a, b);
            }
        }
    }
}

/// `float_sqrt` against the processor's own `sqrtsd` (the instruction the backend emits):
/// every special value, and random bits.
#[cfg(target_arch = "x86_64")]
#[test]
fn float_sqrt_is_the_processors_sqrtsd() {
    use std::arch::x86_64::{_mm_cvtsd_f64, _mm_set_sd, _mm_sqrt_sd, _mm_undefined_pd};
    let hw = |x: u64| {
        // SAFETY: SSE2 is part of the x86-64 baseline; the intrinsics touch registers only.
        unsafe { _mm_cvtsd_f64(_mm_sqrt_sd(_mm_undefined_pd(), _mm_set_sd(f64::from_bits(x)))) }.to_bits()
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let random = std::iter::from_fn(|| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        Some(state)
    });
    for x in SPECIAL.iter().copied().chain(random.take(100_000)) {
        assert_eq!(eval_pure(Opcode::FloatSqrt, &[x]), Ok(hw(x)), "float_sqrt({x:#x})");
    }
}

#[test]
fn ovf_ops_on_special_values() {
    for &a in SPECIAL {
        for &b in SPECIAL {
            let (x, y) = (a as i64, b as i64);
            assert_eq!(
                eval_ovf(Opcode::IntAddOvf, x, y),
                Ok((x.wrapping_add(y), x.checked_add(y).is_none()))
            );
            assert_eq!(
                eval_ovf(Opcode::IntSubOvf, x, y),
                Ok((x.wrapping_sub(y), x.checked_sub(y).is_none()))
            );
            assert_eq!(
                eval_ovf(Opcode::IntMulOvf, x, y),
                Ok((x.wrapping_mul(y), x.checked_mul(y).is_none()))
            );
        }
    }
    assert_eq!(
        eval_ovf(Opcode::IntAdd, 1, 2),
        Err(EvalError::Unsupported(Opcode::IntAdd))
    );
}

#[test]
fn arity_errors_are_reported() {
    for op in pure_ops() {
        let n = op.fixed_arity();
        let args = vec![1u64; n + 1];
        assert!(matches!(eval_pure(op, &args), Err(EvalError::Arity { .. })), "{op}");
        assert!(matches!(eval_pure(op, &[]), Err(EvalError::Arity { .. })), "{op}");
    }
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        proptest::sample::select(SPECIAL.to_vec()),
        any::<u64>(),
        (-70i64..70).prop_map(|x| x as u64),
        (0u32..64, -1i64..=1).prop_map(|(s, d)| (1u64 << s).wrapping_add(d as u64)),
        any::<f64>().prop_map(f64::to_bits),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn pure_ops_match_rust_arithmetic(a in value(), b in value()) {
        for op in pure_ops() {
            check(op, a, b);
        }
    }

    #[test]
    fn ovf_ops_match_checked_arithmetic(a in value(), b in value()) {
        let (x, y) = (a as i64, b as i64);
        prop_assert_eq!(eval_ovf(Opcode::IntAddOvf, x, y), Ok((x.wrapping_add(y), x.checked_add(y).is_none())));
        prop_assert_eq!(eval_ovf(Opcode::IntSubOvf, x, y), Ok((x.wrapping_sub(y), x.checked_sub(y).is_none())));
        prop_assert_eq!(eval_ovf(Opcode::IntMulOvf, x, y), Ok((x.wrapping_mul(y), x.checked_mul(y).is_none())));
    }
}
