//! Division and modulo by a constant (`optimizer::divconst`): the op sequences the optimizer
//! emits, proven by Z3 (`verify::divplan`) equal to the division they replace, for every
//! dividend, for divisors covering each kind of sequence and its extremes; the integer
//! translation the multiply-high proofs use checked against `trace_ir::eval`; a wrong
//! sequence refused.

use optimizer::divconst::{magic, plan, Arg, Step};
use trace_ir::{eval_pure, Opcode};
use verify::divplan::{int_op_on_words, prove_plan, prove_steps};

const OPS: [Opcode; 4] = [Opcode::IntFloorDiv, Opcode::IntMod, Opcode::IntPyDiv, Opcode::IntPyMod];

#[test]
fn power_of_two_and_minint_plans_are_proven_on_words() {
    let mut n = 0;
    for k in [1, 2, 3, 5, 8, 16, 31, 32, 33, 48, 61, 62] {
        for c in [1i64 << k, -(1i64 << k)] {
            for op in OPS {
                for nonneg in [false, true] {
                    if plan(op, c, nonneg).is_some() {
                        prove_plan(op, c, nonneg).unwrap_or_else(|e| panic!("{e}"));
                        n += 1;
                    }
                }
            }
        }
    }
    prove_plan(Opcode::IntFloorDiv, i64::MIN, false).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("proved {} power-of-two and MININT plans on 64-bit words", n + 1);
    assert!(n >= 12 * 2 * 4, "only {n} plans");
}

/// Divisors of the multiply-high plans: small, decimal, just around powers of two, primes,
/// and the largest.
fn magic_divisors() -> Vec<i64> {
    let mut v = vec![
        3,
        5,
        6,
        7,
        9,
        10,
        11,
        12,
        13,
        25,
        100,
        125,
        641,
        1000,
        10_000,
        1_000_000_007,
    ];
    for k in [2u32, 5, 16, 31, 32, 33, 61, 62] {
        v.extend([(1i64 << k) - 1, (1i64 << k) + 1]);
    }
    v.extend([i64::MAX / 3, i64::MAX - 1, i64::MAX]);
    v.sort();
    v.dedup();
    v.retain(|&c| magic(c).is_some());
    v
}

#[test]
fn multiply_high_plans_are_proven_in_integers() {
    let mut n = 0;
    for c in magic_divisors() {
        for op in OPS {
            for nonneg in [false, true] {
                prove_plan(op, c, nonneg).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
                if op == Opcode::IntFloorDiv || op == Opcode::IntMod {
                    prove_plan(op, -c, nonneg).unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
            }
        }
    }
    eprintln!("proved {n} multiply-high plans in integer arithmetic");
    assert!(n >= 30 * 12, "only {n} plans");
}

#[test]
fn the_integer_translation_agrees_with_eval() {
    use Opcode::*;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Each op with the shape of its second operand, made from a random word.
    type Shape = (Opcode, fn(u64) -> u64);
    let shapes: [Shape; 9] = [
        (IntAdd, |r| r),
        (IntSub, |r| r),
        (IntNeg, |r| r),
        (IntMul, |r| r),
        (UintMulHigh, |r| r),
        (UintRshift, |r| r % 64),
        (IntRshift, |r| r % 64),
        (IntXor, |r| if r & 1 == 0 { 0 } else { u64::MAX }),
        (IntAnd, |r| (1u64 << (r % 64)).wrapping_sub(1)),
    ];
    for _ in 0..300 {
        let x = match next() % 4 {
            0 => next() >> (next() % 64),
            1 => 1 << 63,
            _ => next(),
        };
        for (opc, shape) in shapes {
            let y = shape(next());
            let want = eval_pure(opc, &[x, y][..opc.fixed_arity()]).unwrap();
            assert_eq!(int_op_on_words(opc, x, y), Some(want), "{opc}({x:#x}, {y:#x})");
        }
    }
    // Shapes outside the translation are refused, not approximated.
    assert_eq!(int_op_on_words(IntXor, 5, 3), None);
    assert_eq!(int_op_on_words(IntAnd, 5, 6), None);
}

#[test]
fn a_wrong_sequence_is_refused() {
    // The pair of 7 used to divide by 9.
    let (m, s) = magic(7).unwrap();
    let p = [
        Step {
            opcode: Opcode::UintMulHigh,
            args: [Arg::X, Arg::Const(m as i64)],
        },
        Step {
            opcode: Opcode::UintRshift,
            args: [Arg::Step(0), Arg::Const(s as i64)],
        },
    ];
    assert!(prove_steps(Opcode::IntPyDiv, 7, &p, true).is_ok());
    let e = prove_steps(Opcode::IntPyDiv, 9, &p, true).unwrap_err();
    assert!(e.contains("counterexample"), "{e}");
    // The non-negative sequence used for any dividend.
    let e = prove_steps(Opcode::IntPyDiv, 7, &p, false).unwrap_err();
    assert!(e.contains("counterexample"), "{e}");
    // C's division by 8 as Python's shift.
    let shift = [Step {
        opcode: Opcode::IntRshift,
        args: [Arg::X, Arg::Const(3)],
    }];
    assert!(prove_steps(Opcode::IntPyDiv, 8, &shift, false).is_ok());
    let e = prove_steps(Opcode::IntFloorDiv, 8, &shift, false).unwrap_err();
    assert!(e.contains("counterexample"), "{e}");
}
