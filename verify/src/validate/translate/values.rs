//! Translation of the ops on values: copies, overflow ops, pointer comparisons, casts, and the
//! pure integer and float ops.

use trace_ir::eval::eval_pure;
use trace_ir::{Kind, Op, OpFlags, OpRef, Opcode};
use z3::ast::{Ast, Bool};

use crate::divplan::proven_plan;
use crate::semantics::op_semantics;
use optimizer::divconst::{Arg, Step};
use z3::ast::BV;

use super::{ovf_semantics, Translated};
use crate::validate::abstraction::ordered as ordered_operands;
use crate::validate::side::{Side, Sym};
use crate::validate::terms::{bool_to_bv, bv, uf_bool, uf_bv};
use crate::validate::validator::Validator;
use crate::validate::{unsupported, R};

impl<'t> Side<'t> {
    /// `same_as_*`: the operand's value.
    pub(super) fn same_as(&mut self, r: OpRef, op: &Op) -> R<()> {
        let v = self.value(op.args[0])?;
        self.set(r, v);
        Ok(())
    }

    /// `ptr_eq`, `ptr_ne`, `instance_ptr_eq`, `instance_ptr_ne`: tracked objects are equal only to
    /// themselves, and never to a pointer.
    pub(super) fn ptr_cmp(&mut self, r: OpRef, op: &Op) -> R<()> {
        let opc = op.opcode;
        let a = self.value(op.args[0])?;
        let b = self.value(op.args[1])?;
        let eq = match (self.tracked(&a), self.tracked(&b)) {
            (None, None) => self.escape(&a).eq(self.escape(&b)),
            (Some(x), Some(y)) => Bool::from_bool(x == y),
            _ => Bool::from_bool(false),
        };
        let res = if matches!(opc, Opcode::PtrEq | Opcode::InstancePtrEq) {
            eq
        } else {
            eq.not()
        };
        self.set(r, Sym::Bv(bool_to_bv(&res)));
        Ok(())
    }
}

impl<'t> Validator<'t> {
    /// `int_add_ovf`, `int_sub_ovf`, `int_mul_ovf`: the wrapped result, and the side's "no overflow"
    /// flag for the next `guard_no_overflow`/`guard_overflow`.
    pub(super) fn ovf_op(&mut self, orig: bool, r: OpRef, op: &Op) -> R<()> {
        let s = if orig { &mut self.o } else { &mut self.p };
        let opc = op.opcode;
        let a = s.bv_of(op.args[0])?;
        let b = s.bv_of(op.args[1])?;
        let (res, no_ovf) = match (
            self.abs.value(opc, &[a.clone(), b.clone()]),
            self.abs.no_overflow(opc, &a, &b),
        ) {
            (Some((res, _)), Some(no_ovf)) => (res, no_ovf),
            _ => ovf_semantics(opc, &a, &b)?,
        };
        s.no_ovf = Some(no_ovf);
        s.set(r, Sym::Bv(res));
        Ok(())
    }

    /// A division by a constant as the value of its sequence (`optimizer::divconst`, proven
    /// by [`proven_plan`]): the same terms as the shifts and multiply-high the optimizer
    /// emits for it.
    fn plan_value(&mut self, plan: &[Step], x: &BV) -> R<BV> {
        let mut vals: Vec<BV> = Vec::with_capacity(plan.len());
        for st in plan {
            let args: Vec<BV> = st.args[..st.opcode.fixed_arity()]
                .iter()
                .map(|&a| match a {
                    Arg::X => x.clone(),
                    Arg::Step(i) => vals[i as usize].clone(),
                    Arg::Const(c) => bv(c as u64),
                })
                .collect();
            let v = match self
                .abs
                .value(st.opcode, &args)
                .map(Ok)
                .unwrap_or_else(|| op_semantics(st.opcode, &args))
            {
                Ok((v, _)) => v,
                Err(e) => return unsupported(format!("{}: no Z3 semantics ({e})", st.opcode)),
            };
            vals.push(v);
        }
        match vals.pop() {
            Some(v) => Ok(v),
            None => unsupported("an empty division sequence".to_string()),
        }
    }

    /// Other pure ops: their value by [`Validator::pure_value`] (a precondition such as a
    /// shift amount in range goes to `t.valid`).
    pub(super) fn pure_op(&mut self, orig: bool, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let s = if orig { &mut self.o } else { &mut self.p };
        let trace = s.trace;
        let mut args = Vec::with_capacity(op.args.len());
        for &a in &op.args {
            args.push(s.bv_of(a)?);
        }
        let is_float =
            op.args.iter().any(|&a| trace.kind_of(a) == Kind::Float) || op.opcode.result_kind() == Kind::Float;
        let (v, valid) = self.pure_value(op.opcode, &args, is_float)?;
        if valid.simplify().as_bool() != Some(true) {
            t.valid = Some(valid);
        }
        let s = if orig { &mut self.o } else { &mut self.p };
        s.set(r, Sym::Bv(v));
        Ok(())
    }

    /// The value of the pure op `opc(args)` (`is_float`: an operand or the result is a
    /// float) and the condition under which it is defined: casts and bit conversions the
    /// same bits, float ops with constant operands
    /// folded by the interpreter's `eval_pure`, other float ops uninterpreted, integer ops
    /// by [`op_semantics`] or their abstraction, a division by a constant by its proven plan.
    pub(in crate::validate) fn pure_value(&mut self, opc: Opcode, args: &[BV], is_float: bool) -> R<(BV, Bool)> {
        let flags = opc.flags();
        let defined = Bool::from_bool(true);
        // Casts between pointers and integers, and bit conversions between floats and
        // integers: the same bits.
        if matches!(
            opc,
            Opcode::CastPtrToInt
                | Opcode::CastIntToPtr
                | Opcode::ConvertFloatBytesToLonglong
                | Opcode::ConvertLonglongBytesToFloat
        ) {
            return Ok((args[0].clone(), defined));
        }
        // Fold constants with the interpreter's evaluation function.
        let consts: Option<Vec<u64>> = args.iter().map(|a| a.simplify().as_u64()).collect();
        if let (Some(cs), true) = (&consts, is_float) {
            return match eval_pure(opc, cs) {
                Ok(v) => Ok((bv(v), defined)),
                Err(e) => unsupported(format!("{opc}: {e}")),
            };
        }
        if is_float {
            self.float_uf = true;
            // (`float_eq`/`float_ne` with their operands either way round are one term.)
            let ordered;
            let args = match args {
                [a, b] if opc.is_commutative() => {
                    let (a, b) = ordered_operands(a, b);
                    ordered = [a, b];
                    &ordered[..]
                }
                _ => args,
            };
            let v = if flags.contains(OpFlags::BOOL_RESULT) {
                bool_to_bv(&uf_bool(opc.name(), args))
            } else {
                uf_bv(opc.name(), args)
            };
            return Ok((v, defined));
        }
        if matches!(
            opc,
            Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod
        ) {
            if let Some(plan) = args[1].simplify().as_u64().and_then(|c| proven_plan(opc, c as i64)) {
                return Ok((self.plan_value(&plan, &args[0])?, defined));
            }
        }
        let abstracted = self.abs.value(opc, args);
        match abstracted.map(Ok).unwrap_or_else(|| op_semantics(opc, args)) {
            Ok(x) => Ok(x),
            Err(e) => unsupported(format!("{opc}: no Z3 semantics ({e})")),
        }
    }
}
