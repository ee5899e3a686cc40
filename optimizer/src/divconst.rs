//! Division and modulo by a constant as shifts, masks and a multiply-high: the op sequence
//! that replaces `int_floordiv`, `int_mod`, `int_pydiv` or `int_pymod` of `x` by a constant
//! divisor, which the backend emits without `idiv`.
//!
//! [`plan`] returns the sequence as data ([`Step`]s over `x` and constants), so that what the
//! optimizer emits is what `verify/tests/divconst_proofs.rs` proves with Z3 (for every divisor
//! class: ±2^k, the multiply-high divisors, their extremes) and what the property tests run
//! on `trace_ir::eval`.
//!
//! - A power of two `2^k` (`k` in 1..=62): Python floor division is the arithmetic shift
//!   `x >> k` and Python modulo the mask `x & (2^k - 1)`; C's truncating division first adds
//!   `2^k - 1` to a negative `x` (`(x + ((x >> 63) >>u (64 - k))) >> k`), and C's remainder
//!   is `x` minus that quotient shifted back.
//! - Any other divisor `c >= 3`: the quotient of `n` in `0..=2^63` (as an unsigned word) is
//!   `uint_mul_high(n, M) >>u s` for the magic pair ([`magic`]) of Granlund and Montgomery;
//!   Python's floor division applies it to `x ^ (x >> 63)` and flips the result back
//!   (`floor(x / c) == ~floor(~x / c)`), C's truncating division to `|x|` and negates the
//!   result back; the remainders are `x - q * c`.
//! - A negative divisor, for C's operations only: `x / -c == -(x / c)` and
//!   `x % -c == x % c`; `x / MININT` is `x == MININT`.
//!
//! Divisors 0, 1 and -1, Python operations by a negative divisor, and `int_mod(x, MININT)`
//! have no plan (`None`): the peephole rules handle 1 and -1, the others stay divisions.
//! When `x` is known non-negative the sign corrections are left out.

use smallvec::SmallVec;
use trace_ir::Opcode;

/// An operand of a [`Step`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// The dividend.
    X,
    /// The result of an earlier step (its index in the plan).
    Step(u8),
    /// A constant.
    Const(i64),
}

/// One pure integer op of a plan: `opcode(args[0], args[1])` (unary ops ignore `args[1]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The op.
    pub opcode: Opcode,
    /// Its operands.
    pub args: [Arg; 2],
}

/// The steps of a plan; the last one's result is the quotient or remainder.
pub type Plan = SmallVec<[Step; 10]>;

/// The magic pair `(M, s)` of the divisor `c` (`3 <= c`, not a power of two): for every `n` in
/// `0..=2^63`, `floor(n / c) == floor(n * M / 2^(64 + s))`, with `M < 2^64`. The smallest such
/// `s` is chosen. `None` for other divisors.
///
/// With `M = ceil(2^(64+s) / c)` and `e = M * c - 2^(64+s)` (`0 < e <= c`), writing
/// `n = q * c + r`: `n * M / 2^(64+s) = q + r / c + n * e / (c * 2^(64+s))`, below `q + 1`
/// whenever `n * e < 2^(64+s)`; that is checked for the largest `n`, `2^63`.
pub fn magic(c: i64) -> Option<(u64, u32)> {
    if c < 3 || c & (c - 1) == 0 {
        return None;
    }
    let c = c as u128;
    let nmax: u128 = 1 << 63;
    for s in 0..64u32 {
        let p: u128 = 1 << (64 + s);
        let m = p.div_ceil(c);
        if m >> 64 != 0 {
            return None;
        }
        let e = m * c - p;
        if nmax * e < p {
            return Some((m as u64, s));
        }
    }
    None
}

struct Builder {
    steps: Plan,
}

impl Builder {
    fn op(&mut self, opcode: Opcode, a: Arg, b: Arg) -> Arg {
        self.steps.push(Step { opcode, args: [a, b] });
        Arg::Step(self.steps.len() as u8 - 1)
    }
    fn un(&mut self, opcode: Opcode, a: Arg) -> Arg {
        self.op(opcode, a, Arg::Const(0))
    }
}

/// The plan replacing `opcode(x, c)` (`opcode` one of `int_floordiv`, `int_mod`,
/// `int_pydiv`, `int_pymod`), given whether `x` is known to be non-negative; `None` when this
/// divisor has none (see the module documentation).
pub fn plan(opcode: Opcode, c: i64, x_nonneg: bool) -> Option<Plan> {
    use Arg::{Const, X};
    use Opcode::*;
    let c_is_trunc = match opcode {
        IntFloorDiv | IntMod => true,
        IntPyDiv | IntPyMod => false,
        _ => return None,
    };
    if matches!(c, -1..=1) || (c < 0 && !c_is_trunc) {
        return None;
    }
    let mut b = Builder { steps: Plan::new() };
    if c == i64::MIN {
        if opcode != IntFloorDiv {
            return None;
        }
        b.op(IntEq, X, Const(i64::MIN));
        return Some(b.steps);
    }
    let d = c.unsigned_abs() as i64;
    let negate = c < 0 && opcode == IntFloorDiv;
    let quotient_only = matches!(opcode, IntFloorDiv | IntPyDiv);
    let q = if d & (d - 1) == 0 {
        let k = d.trailing_zeros() as i64;
        match opcode {
            IntPyDiv => b.op(IntRshift, X, Const(k)),
            IntPyMod => b.op(IntAnd, X, Const(d - 1)),
            _ if x_nonneg => {
                if opcode == IntMod {
                    b.op(IntAnd, X, Const(d - 1))
                } else {
                    b.op(UintRshift, X, Const(k))
                }
            }
            _ => {
                let t = b.op(IntRshift, X, Const(63));
                let bias = b.op(UintRshift, t, Const(64 - k));
                let y = b.op(IntAdd, X, bias);
                if opcode == IntMod {
                    let m = b.op(IntAnd, y, Const(-d));
                    b.op(IntSub, X, m)
                } else {
                    b.op(IntRshift, y, Const(k))
                }
            }
        }
    } else {
        let (m, s) = magic(d)?;
        let unsigned_quotient = |b: &mut Builder, n: Arg| {
            let h = b.op(UintMulHigh, n, Const(m as i64));
            if s == 0 {
                h
            } else {
                b.op(UintRshift, h, Const(s as i64))
            }
        };
        let q = if x_nonneg {
            unsigned_quotient(&mut b, X)
        } else if c_is_trunc {
            // |x| (MININT as the unsigned 2^63), its quotient, negated back when x < 0.
            let t = b.op(IntRshift, X, Const(63));
            let xt = b.op(IntXor, X, t);
            let a = b.op(IntSub, xt, t);
            let u = unsigned_quotient(&mut b, a);
            let ut = b.op(IntXor, u, t);
            b.op(IntSub, ut, t)
        } else {
            // floor(x / c) == ~floor(~x / c), and ~x >= 0 when x < 0.
            let t = b.op(IntRshift, X, Const(63));
            let n = b.op(IntXor, X, t);
            let u = unsigned_quotient(&mut b, n);
            b.op(IntXor, u, t)
        };
        if quotient_only {
            q
        } else {
            let p = b.op(IntMul, q, Const(d));
            b.op(IntSub, X, p)
        }
    };
    if negate {
        b.un(IntNeg, q);
    }
    Some(b.steps)
}

/// Run a plan on `x` with `trace_ir::eval`: the value the emitted ops compute. `None` when a
/// step is invalid (never, for a plan of [`plan`]: the property tests check it).
pub fn run(plan: &[Step], x: i64) -> Option<i64> {
    let mut vals: SmallVec<[u64; 10]> = SmallVec::new();
    for st in plan {
        let get = |a: Arg| match a {
            Arg::X => x as u64,
            Arg::Step(i) => vals[i as usize],
            Arg::Const(c) => c as u64,
        };
        let args = [get(st.args[0]), get(st.args[1])];
        let n = st.opcode.fixed_arity();
        vals.push(trace_ir::eval_pure(st.opcode, &args[..n]).ok()?);
    }
    vals.last().map(|&v| v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use trace_ir::eval_pure;
    use trace_ir::Opcode::*;

    const OPS: [Opcode; 4] = [IntFloorDiv, IntMod, IntPyDiv, IntPyMod];

    /// Divisors every test runs: small, powers of two and their neighbours, decimal, extremes.
    fn divisors() -> Vec<i64> {
        let mut v: Vec<i64> = (-20..=20).collect();
        for k in 1..63 {
            let p = 1i64 << k;
            v.extend([p, p - 1, p + 1, -p, -p + 1, -p - 1]);
        }
        v.extend([
            100,
            1000,
            10_000,
            1_000_000_007,
            641,
            6_700_417,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ]);
        v.extend([i64::MAX / 3, i64::MAX / 7, (1 << 62) + 3, -(1 << 62) - 3]);
        v
    }

    const DIVIDENDS: &[i64] = &[
        0,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        7,
        -7,
        100,
        -100,
        i64::MAX,
        i64::MIN,
        i64::MAX - 1,
        i64::MIN + 1,
        1 << 62,
        -(1 << 62),
        (1 << 62) - 1,
        -(1 << 62) + 1,
    ];

    fn check(op: Opcode, x: i64, c: i64) {
        for nonneg in [false, true] {
            if nonneg && x < 0 {
                continue;
            }
            if let Some(p) = plan(op, c, nonneg) {
                let want = eval_pure(op, &[x as u64, c as u64]).map(|v| v as i64).ok();
                assert_eq!(run(&p, x), want, "{op}({x}, {c}), x_nonneg {nonneg}, plan {p:?}");
            }
        }
    }

    #[test]
    fn magic_pairs_exist_for_every_divisor_that_is_not_a_power_of_two() {
        for c in divisors() {
            let expect = c >= 3 && c & (c - 1) != 0;
            assert_eq!(magic(c).is_some(), expect, "{c}");
        }
        // ceil(2^65 / 3) and ceil(2^65 / 7): s = 0 is too short for dividends up to 2^63
        // (2^64 mod 3 = 1, 2^64 mod 7 = 2).
        assert_eq!(magic(3), Some((0xaaaa_aaaa_aaaa_aaab, 1)));
        assert_eq!(magic(7), Some((0x4924_9249_2492_4925, 1)));
    }

    #[test]
    fn plans_exist_exactly_for_the_documented_divisors() {
        for op in OPS {
            for c in divisors() {
                let trunc = matches!(op, IntFloorDiv | IntMod);
                let expect = !matches!(c, -1..=1) && (c > 0 || trunc) && !(op == IntMod && c == i64::MIN);
                assert_eq!(plan(op, c, false).is_some(), expect, "{op} by {c}");
            }
        }
    }

    #[test]
    fn plans_agree_with_eval_on_special_values() {
        for op in OPS {
            for c in divisors() {
                for &x in DIVIDENDS {
                    check(op, x, c);
                }
            }
        }
    }

    #[test]
    fn plans_never_use_a_division() {
        for op in OPS {
            for c in divisors() {
                for nonneg in [false, true] {
                    for st in plan(op, c, nonneg).unwrap_or_default() {
                        assert!(
                            !matches!(st.opcode, IntFloorDiv | IntMod | IntPyDiv | IntPyMod),
                            "{op} by {c}"
                        );
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn plans_agree_with_eval(x in any::<i64>(), c in any::<i64>(), small in -1000i64..1000, k in 1u32..63) {
            for op in OPS {
                check(op, x, c);
                check(op, x, small);
                check(op, x, 1 << k);
                check(op, x, -(1 << k));
                check(op, x, (1 << k) - 1);
                check(op, x, (1i64 << k).wrapping_add(1));
            }
        }
    }
}
