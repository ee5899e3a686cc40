//! Constant folding: the thin layer between the pass and `trace_ir::eval`, the one evaluation
//! function of the IR (never a second copy of the semantics here).

use trace_ir::eval::{eval_ovf, eval_pure};
use trace_ir::{Const, Kind, Opcode};

/// Fold `opcode` applied to constant operands, given as their bits ([`Const::bits`]). `None`
/// when the op is not evaluable (not pure) or its evaluation is invalid (shift out of range,
/// zero divisor): the op is then kept.
pub(crate) fn fold_pure(opcode: Opcode, bits: &[u64]) -> Option<Const> {
    let r = eval_pure(opcode, bits).ok()?;
    Some(match opcode.result_kind() {
        Kind::Int => Const::Int(r as i64),
        Kind::Float => Const::Float(r),
        Kind::Ref => Const::Ref(r),
        Kind::Void => return None,
    })
}

/// Fold an `_ovf` op on two integer constants: `(wrapped result, overflowed)`.
pub(crate) fn fold_ovf(opcode: Opcode, a: i64, b: i64) -> Option<(i64, bool)> {
    eval_ovf(opcode, a, b).ok()
}
