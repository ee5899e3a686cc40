//! PyPy's oopspec indexes (`OS=n` on a call descriptor: what the called function is) and the
//! pure op a call with such an index computes.
//!
//! The numbers are PyPy's (`rpython/jit/codewriter/effectinfo.py`, `EffectInfo.OS_*`). A
//! call whose descriptor names one of the [`pure_call_opcode`] indexes, with that index's
//! signature and an effect that cannot raise, *is* that pure op: the reference interpreter
//! evaluates it with [`crate::eval::eval_pure`], the translation validator models it as the
//! op, and the optimizer replaces it by the op (so the backend emits `sqrtsd` for a square
//! root instead of a call).

use crate::descr::CallDescr;
use crate::opcode::{Kind, Opcode};

/// `ll_arraycopy(src, dst, src_start, dst_start, length)`: see [`is_array_copy`].
pub const OS_ARRAYCOPY: u32 = 1;

/// Python signed floor division, `ll_int_py_div` (`int_pydiv`).
pub const OS_INT_PY_DIV: u32 = 12;
/// Unsigned division, `ll_int_udiv` (no IR op: the call stays a call).
pub const OS_INT_UDIV: u32 = 13;
/// Python signed modulo, `ll_int_py_mod` (`int_pymod`).
pub const OS_INT_PY_MOD: u32 = 14;
/// Unsigned modulo, `ll_int_umod` (no IR op: the call stays a call).
pub const OS_INT_UMOD: u32 = 15;
/// `math.sqrt` on a float (`float_sqrt`).
pub const OS_MATH_SQRT: u32 = 100;
/// The CPU's time-stamp counter (not pure: the call stays a call).
pub const OS_MATH_READ_TIMESTAMP: u32 = 101;

/// The pure op that a call `opcode(func, args...)` with descriptor `cd` computes, if any:
/// `cd.oopspec` is [`OS_MATH_SQRT`] (one float argument, a float result: `float_sqrt`),
/// [`OS_INT_PY_DIV`] or [`OS_INT_PY_MOD`] (two integer arguments, an integer result:
/// `int_pydiv`, `int_pymod`); the call is a plain or elidable call (`call_*`,
/// `call_pure_*`) whose effect cannot raise; and it has `1 + cd.args.len()` operands
/// (`nargs`, the function included). The op's operands are the call's after the function.
///
/// ```
/// use trace_ir::{oopspec::{pure_call_opcode, OS_MATH_SQRT}, CallDescr, CallEffect, Kind, Opcode};
/// let cd = CallDescr { result: Kind::Float, result_size: 8, args: vec![Kind::Float],
///     effect: CallEffect::ElidableCannotRaise, oopspec: Some(OS_MATH_SQRT) };
/// assert_eq!(pure_call_opcode(Opcode::CallF, &cd, 2), Some(Opcode::FloatSqrt));
/// assert_eq!(pure_call_opcode(Opcode::CallMayForceF, &cd, 2), None);
/// ```
pub fn pure_call_opcode(opcode: Opcode, cd: &CallDescr, nargs: usize) -> Option<Opcode> {
    use Kind::{Float, Int};
    let os = cd.oopspec?;
    if !matches!(
        opcode,
        Opcode::CallI | Opcode::CallF | Opcode::CallPureI | Opcode::CallPureF
    ) || cd.effect.can_raise()
        || nargs != cd.args.len() + 1
        || opcode.result_kind() != cd.result
    {
        return None;
    }
    let (op, args, result): (Opcode, &[Kind], Kind) = match os {
        OS_MATH_SQRT => (Opcode::FloatSqrt, &[Float], Float),
        OS_INT_PY_DIV => (Opcode::IntPyDiv, &[Int, Int], Int),
        OS_INT_PY_MOD => (Opcode::IntPyMod, &[Int, Int], Int),
        _ => return None,
    };
    (cd.args == args && cd.result == result).then_some(op)
}

/// Whether the call `opcode(func, src, dst, src_start, dst_start, length)` with descriptor
/// `cd` and `nargs` operands (the function included) is RPython's `ll_arraycopy`: oopspec
/// [`OS_ARRAYCOPY`], a `call_n` of signature `(r, r, i, i, i)` with effect `EF=2` (cannot
/// raise, may write the heap). It
/// copies `length` items of `src` from `src_start` on into `dst` from `dst_start` on, as a
/// move (all items read before any is written), and does nothing else: it keeps no reference
/// to the arrays and writes no other memory. Where both arrays were allocated by the trace
/// with one item layout, the reference interpreter performs the copy itself and the optimizer
/// may copy between virtual arrays; otherwise the call is an ordinary call that may write the
/// heap (docs/memory-model.md).
pub fn is_array_copy(opcode: Opcode, cd: &CallDescr, nargs: usize) -> bool {
    use Kind::{Int, Ref};
    cd.oopspec == Some(OS_ARRAYCOPY)
        && opcode == Opcode::CallN
        && cd.effect == crate::descr::CallEffect::CannotRaise
        && nargs == 6
        && cd.args == [Ref, Ref, Int, Int, Int]
        && cd.result == Kind::Void
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descr::CallEffect;

    fn descr(args: Vec<Kind>, result: Kind, effect: CallEffect, os: u32) -> CallDescr {
        CallDescr {
            result,
            result_size: 8,
            args,
            effect,
            oopspec: Some(os),
        }
    }

    #[test]
    fn pure_oopspecs_map_to_their_ops_only_with_their_signature() {
        use CallEffect::*;
        use Kind::*;
        let sqrt = descr(vec![Float], Float, CannotRaise, OS_MATH_SQRT);
        assert_eq!(pure_call_opcode(Opcode::CallF, &sqrt, 2), Some(Opcode::FloatSqrt));
        assert_eq!(pure_call_opcode(Opcode::CallPureF, &sqrt, 2), Some(Opcode::FloatSqrt));
        assert_eq!(pure_call_opcode(Opcode::CallF, &sqrt, 3), None, "operand count");
        assert_eq!(pure_call_opcode(Opcode::CallI, &sqrt, 2), None, "result kind");
        let div = descr(vec![Int, Int], Int, ElidableCannotRaise, OS_INT_PY_DIV);
        assert_eq!(pure_call_opcode(Opcode::CallI, &div, 3), Some(Opcode::IntPyDiv));
        let m = descr(vec![Int, Int], Int, ElidableCannotRaise, OS_INT_PY_MOD);
        assert_eq!(pure_call_opcode(Opcode::CallPureI, &m, 3), Some(Opcode::IntPyMod));
        let raising = descr(vec![Float], Float, CanRaise, OS_MATH_SQRT);
        assert_eq!(pure_call_opcode(Opcode::CallF, &raising, 2), None, "may raise");
        let wrong_sig = descr(vec![Int], Float, CannotRaise, OS_MATH_SQRT);
        assert_eq!(pure_call_opcode(Opcode::CallF, &wrong_sig, 2), None, "argument kinds");
        for os in [OS_INT_UDIV, OS_INT_UMOD, OS_MATH_READ_TIMESTAMP, 0] {
            let d = descr(vec![Int, Int], Int, ElidableCannotRaise, os);
            assert_eq!(pure_call_opcode(Opcode::CallI, &d, 3), None, "OS={os}");
        }
        let none = CallDescr {
            oopspec: None,
            ..sqrt.clone()
        };
        assert_eq!(pure_call_opcode(Opcode::CallF, &none, 2), None);
    }
}
