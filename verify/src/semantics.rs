//! The Z3 semantics of every integer operation of the trace IR: one formula per op plus its
//! `valid_if` precondition, and the overflow flag of the `_ovf` ops (the op overflows exactly
//! when the sign-extended double-width result differs from the sign-extension of the wrapped
//! result; for `int_mul_ovf` an equivalent formula with a smaller circuit, [`mul_no_overflow`],
//! proven equal to the sign-extension encoding at small widths).
//!
//! These are the meanings the rule proofs ([`crate::rules`]) and the translation validator
//! reason about. They are cross-checked against `trace_ir::eval::eval_pure` /
//! `trace_ir::eval::eval_ovf` (the reference interpreter's evaluation) on random and special
//! values in this module's tests, so the two definitions cannot drift apart.
//!
//! `int_rshift` is the *arithmetic* shift, and `int_pydiv` / `int_pymod` use Z3's `bvsmod`
//! (remainder with the divisor's sign, which is Python's `%`).
//!
//! Formulas are built in Z3's thread-local context (z3 0.22): build and solve on one thread.

use std::fmt;
use trace_ir::Opcode;
use z3::ast::{Bool, BV};

/// Width of the IR's integers.
pub const WIDTH: u32 = 64;

/// [`op_semantics`] was asked about an op it has no formula for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SemanticsError {
    /// Not an integer op (floats, references, heap, calls, guards...).
    Unsupported(Opcode),
    /// Wrong number of operands.
    Arity {
        /// The op.
        opcode: Opcode,
        /// Operands given.
        got: usize,
    },
}

impl fmt::Display for SemanticsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SemanticsError::Unsupported(op) => write!(f, "no Z3 semantics for `{op}` (not an integer operation)"),
            SemanticsError::Arity { opcode, got } => {
                write!(f, "`{opcode}` takes {} operand(s), got {got}", opcode.fixed_arity())
            }
        }
    }
}

impl std::error::Error for SemanticsError {}

/// The integer ops [`op_semantics`] covers (every op of the table with integer operands and
/// an integer result that computes something: arithmetic, bitwise, shifts, comparisons,
/// division, `_ovf`, `int_signext`, `int_force_ge_zero`, `int_select`, `same_as_i`).
pub const INTEGER_OPS: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntLshift,
    Opcode::IntRshift,
    Opcode::UintRshift,
    Opcode::UintMulHigh,
    Opcode::IntLt,
    Opcode::IntLe,
    Opcode::IntEq,
    Opcode::IntNe,
    Opcode::IntGt,
    Opcode::IntGe,
    Opcode::UintLt,
    Opcode::UintLe,
    Opcode::UintGt,
    Opcode::UintGe,
    Opcode::IntIsTrue,
    Opcode::IntIsZero,
    Opcode::IntNeg,
    Opcode::IntInvert,
    Opcode::IntSignext,
    Opcode::IntForceGeZero,
    Opcode::IntSelect,
    Opcode::IntAddOvf,
    Opcode::IntSubOvf,
    Opcode::IntMulOvf,
    Opcode::SameAsI,
];

/// The 64-bit constant `v`.
pub fn bv(v: i64) -> BV {
    BV::from_i64(v, WIDTH)
}

/// `1` if `c` else `0`, as a 64-bit word (how the IR represents booleans).
pub fn cond(c: &Bool) -> BV {
    c.ite(&bv(1), &bv(0))
}

fn shift_ok(amount: &BV) -> Bool {
    // 0 <= amount < 64 as a signed integer is the same as amount <u 64.
    amount.bvult(bv(i64::from(WIDTH)))
}

/// The result of `opcode(args)` and the condition under which it is defined (`valid_if`).
///
/// For the `_ovf` ops the result is the wrapped value and `valid_if` is true; their overflow
/// flag is [`no_overflow`].
pub fn op_semantics(opcode: Opcode, args: &[BV]) -> Result<(BV, Bool), SemanticsError> {
    use Opcode::*;
    if !INTEGER_OPS.contains(&opcode) {
        return Err(SemanticsError::Unsupported(opcode));
    }
    if args.len() != opcode.fixed_arity() {
        return Err(SemanticsError::Arity {
            opcode,
            got: args.len(),
        });
    }
    let a = &args[0];
    let b = args.get(1).cloned().unwrap_or_else(|| bv(0));
    let t = Bool::from_bool(true);
    let zero = bv(0);
    Ok(match opcode {
        IntAdd | IntAddOvf => (a.bvadd(&b), t),
        IntSub | IntSubOvf => (a.bvsub(&b), t),
        IntMul | IntMulOvf => (a.bvmul(&b), t),
        IntFloorDiv => (a.bvsdiv(&b), b.eq(&zero).not()),
        IntMod => (a.bvsrem(&b), b.eq(&zero).not()),
        IntPyDiv => {
            // Truncating quotient, minus one when the remainder is non-zero and its sign
            // differs from the divisor's (floor division).
            let q = a.bvsdiv(&b);
            let r = a.bvsrem(&b);
            let adjust = Bool::and(&[r.eq(&zero).not(), r.bvxor(&b).bvslt(&zero)]);
            (adjust.ite(&q.bvsub(bv(1)), &q), b.eq(&zero).not())
        }
        IntPyMod => (a.bvsmod(&b), b.eq(&zero).not()),
        IntAnd => (a.bvand(&b), t),
        IntOr => (a.bvor(&b), t),
        IntXor => (a.bvxor(&b), t),
        IntLshift => (a.bvshl(&b), shift_ok(&b)),
        IntRshift => (a.bvashr(&b), shift_ok(&b)),
        UintRshift => (a.bvlshr(&b), shift_ok(&b)),
        UintMulHigh => {
            let p = a.zero_ext(WIDTH).bvmul(b.zero_ext(WIDTH));
            (p.extract(2 * WIDTH - 1, WIDTH), t)
        }
        IntLt => (cond(&a.bvslt(&b)), t),
        IntLe => (cond(&a.bvsle(&b)), t),
        IntEq => (cond(&a.eq(&b)), t),
        IntNe => (cond(&a.eq(&b).not()), t),
        IntGt => (cond(&a.bvsgt(&b)), t),
        IntGe => (cond(&a.bvsge(&b)), t),
        UintLt => (cond(&a.bvult(&b)), t),
        UintLe => (cond(&a.bvule(&b)), t),
        UintGt => (cond(&a.bvugt(&b)), t),
        UintGe => (cond(&a.bvuge(&b)), t),
        IntIsTrue => (cond(&a.eq(&zero).not()), t),
        IntIsZero => (cond(&a.eq(&zero)), t),
        IntNeg => (a.bvneg(), t),
        IntInvert => (a.bvnot(), t),
        IntSignext => {
            let ext = |bytes: u32| a.extract(bytes * 8 - 1, 0).sign_ext(WIDTH - bytes * 8);
            let r = b
                .eq(bv(1))
                .ite(&ext(1), &b.eq(bv(2)).ite(&ext(2), &b.eq(bv(4)).ite(&ext(4), a)));
            let ok = Bool::or(&[b.eq(bv(1)), b.eq(bv(2)), b.eq(bv(4)), b.eq(bv(8))]);
            (r, ok)
        }
        IntForceGeZero => (a.bvslt(&zero).ite(&zero, a), t),
        IntSelect => (a.eq(&zero).not().ite(&b, &args[2]), t),
        SameAsI => (a.clone(), t),
        other => return Err(SemanticsError::Unsupported(other)),
    })
}

/// For an `_ovf` op, the condition "did not overflow" (what `guard_no_overflow` checks);
/// `None` for other ops. Addition and subtraction compare the wrapped result with the
/// double-width result of the sign-extended operands; multiplication uses
/// [`mul_no_overflow`], the same condition with a smaller circuit.
pub fn no_overflow(opcode: Opcode, a: &BV, b: &BV) -> Option<Bool> {
    let (wa, wb) = (a.sign_ext(WIDTH), b.sign_ext(WIDTH));
    let (wide, wrapped) = match opcode {
        Opcode::IntAddOvf => (wa.bvadd(&wb), a.bvadd(b)),
        Opcode::IntSubOvf => (wa.bvsub(&wb), a.bvsub(b)),
        Opcode::IntMulOvf => return Some(mul_no_overflow(a, b)),
        _ => return None,
    };
    Some(wrapped.sign_ext(WIDTH).eq(&wide))
}

/// Signed multiplication of `a` and `b` (both `n` bits wide) does not overflow: the signed
/// high half of the double-width product is the sign extension of the low half. The signed
/// high half is computed from the *unsigned* product of the zero-extended operands (minus
/// `b` when `a < 0`, minus `a` when `b < 0`), which bit-blasts to about half the gates of
/// the product of sign-extended operands (the sign-extension encoding, to which it is proven
/// equivalent at 6 and 8 bits in this module's tests and checked against the interpreter
/// at 64).
pub fn mul_no_overflow(a: &BV, b: &BV) -> Bool {
    let n = a.get_size();
    let p = a.zero_ext(n).bvmul(b.zero_ext(n));
    let (hi, lo) = (p.extract(2 * n - 1, n), p.extract(n - 1, 0));
    let zero = BV::from_u64(0, n);
    let hi = hi
        .bvsub(a.bvslt(&zero).ite(b, &zero))
        .bvsub(b.bvslt(&zero).ite(a, &zero));
    hi.eq(lo.bvashr(BV::from_u64(u64::from(n) - 1, n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_interp::rng::Rng;
    use trace_ir::eval::{eval_ovf, eval_pure, EvalError};
    use z3::ast::Ast;

    const SPECIAL: &[i64] = &[
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        8,
        63,
        64,
        65,
        127,
        128,
        -128,
        255,
        1 << 31,
        -(1 << 31),
        i64::MAX,
        i64::MIN,
        i64::MAX - 1,
        i64::MIN + 1,
    ];

    fn value(r: &mut Rng) -> i64 {
        let x = r.next_u64();
        match x % 4 {
            0 => SPECIAL[(x >> 8) as usize % SPECIAL.len()],
            1 => ((x >> 8) % 130) as i64 - 65,
            _ => r.next_u64() as i64,
        }
    }

    /// Evaluates `opcode` on constants with Z3 (simplification of a ground formula).
    fn z3_eval(opcode: Opcode, args: &[i64]) -> (Option<i64>, bool) {
        let bvs: Vec<BV> = args.iter().map(|&a| bv(a)).collect();
        let (r, ok) = op_semantics(opcode, &bvs).unwrap();
        (
            r.simplify().as_u64().map(|v| v as i64),
            ok.simplify().as_bool().expect("ground valid_if"),
        )
    }

    #[test]
    fn agrees_with_the_reference_evaluation_on_random_values() {
        let mut rng = Rng::new(0x5eed_0001);
        for &op in INTEGER_OPS {
            for i in 0..120 {
                let a = value(&mut rng);
                let mut b = value(&mut rng);
                if op == Opcode::IntSignext && i % 2 == 0 {
                    b = [1, 2, 4, 8][i % 4];
                }
                if matches!(op, Opcode::IntLshift | Opcode::IntRshift | Opcode::UintRshift) && i % 2 == 0 {
                    b = (b as u64 % 64) as i64;
                }
                let args: Vec<i64> = match op.fixed_arity() {
                    1 => vec![a],
                    2 => vec![a, b],
                    // (`int_select`: the condition zero or not in turn.)
                    _ => vec![if i % 3 == 0 { 0 } else { a }, b, value(&mut rng)],
                };
                let (z, ok) = z3_eval(op, &args);
                let z = z.expect("ground result");
                if op.ovf_to_wrapping().is_some() {
                    let (r, ovf) = eval_ovf(op, a, b).unwrap();
                    assert_eq!(z, r, "{op}({a}, {b})");
                    assert!(ok);
                    let flag = no_overflow(op, &bv(a), &bv(b)).unwrap().simplify().as_bool().unwrap();
                    assert_eq!(flag, !ovf, "overflow flag of {op}({a}, {b})");
                    continue;
                }
                let uargs: Vec<u64> = args.iter().map(|&x| x as u64).collect();
                match eval_pure(op, &uargs) {
                    Ok(r) => {
                        assert!(ok, "{op}{args:?}: the interpreter evaluates it but valid_if is false");
                        assert_eq!(z, r as i64, "{op}{args:?}");
                    }
                    Err(EvalError::Invalid(_)) => {
                        assert!(!ok, "{op}{args:?}: invalid in the interpreter, valid_if true")
                    }
                    Err(e) => panic!("{op}{args:?}: {e}"),
                }
            }
        }
    }

    #[test]
    fn mul_no_overflow_is_the_sign_extension_encoding() {
        // Proven for all operands at small widths (the formula is width-generic).
        for n in [6, 8] {
            let (a, b) = (BV::new_const("a", n), BV::new_const("b", n));
            let wide = a.sign_ext(n).bvmul(b.sign_ext(n));
            let sign_extended_product_fits = a.bvmul(&b).sign_ext(n).eq(&wide);
            let solver = z3::Solver::new();
            solver.assert(mul_no_overflow(&a, &b).iff(&sign_extended_product_fits).not());
            assert_eq!(solver.check(), z3::SatResult::Unsat, "width {n}");
        }
        // And exhaustively against the definition at 8 bits.
        for x in -128i64..128 {
            for y in [
                -128i64, -127, -65, -64, -17, -3, -2, -1, 0, 1, 2, 3, 11, 16, 63, 64, 127,
            ] {
                let ok = mul_no_overflow(&BV::from_i64(x, 8), &BV::from_i64(y, 8))
                    .simplify()
                    .as_bool()
                    .unwrap();
                assert_eq!(ok, (-128..128).contains(&(x * y)), "{x} * {y}");
            }
        }
    }

    #[test]
    fn every_pure_integer_op_has_semantics() {
        for &op in Opcode::ALL {
            let int_op = op.result_kind() == trace_ir::Kind::Int
                && !op.is_variadic()
                && op.fixed_arity() > 0
                && (0..op.fixed_arity()).all(|i| op.arg_kind(i) == Some(trace_ir::Kind::Int))
                && (op.is_pure() || op.is_ovf());
            assert_eq!(int_op, INTEGER_OPS.contains(&op), "{op}");
        }
        assert!(op_semantics(Opcode::FloatAdd, &[bv(0), bv(0)]).is_err());
        assert!(matches!(
            op_semantics(Opcode::IntAdd, &[bv(0)]),
            Err(SemanticsError::Arity { .. })
        ));
    }
}
