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

    /// Casts between pointers and integers, and bit conversions between floats and integers:
    /// the same bits.
    pub(super) fn reinterpret(&mut self, r: OpRef, op: &Op) -> R<()> {
        let a = self.bv_of(op.args[0])?;
        self.set(r, Sym::Bv(a));
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

    /// Other pure ops: float ops with constant operands folded by the interpreter's `eval_pure`,
    /// other float ops uninterpreted, integer ops by [`op_semantics`] or their abstraction (a
    /// precondition such as a shift amount in range goes to `t.valid`).
    pub(super) fn pure_op(&mut self, orig: bool, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let s = if orig { &mut self.o } else { &mut self.p };
        let trace = s.trace;
        let opc = op.opcode;
        let flags = opc.flags();
        let mut args = Vec::with_capacity(op.args.len());
        for &a in &op.args {
            args.push(s.bv_of(a)?);
        }
        // Fold constants with the interpreter's evaluation function.
        let consts: Option<Vec<u64>> = args.iter().map(|a| a.simplify().as_u64()).collect();
        let is_float = op.args.iter().any(|&a| trace.kind_of(a) == Kind::Float) || opc.result_kind() == Kind::Float;
        if let (Some(cs), true) = (&consts, is_float) {
            match eval_pure(opc, cs) {
                Ok(v) => {
                    s.set(r, Sym::Bv(bv(v)));
                    return Ok(());
                }
                Err(e) => return unsupported(format!("{opc}: {e}")),
            }
        }
        if is_float {
            self.float_uf = true;
            let s = if orig { &mut self.o } else { &mut self.p };
            let v = if flags.contains(OpFlags::BOOL_RESULT) {
                bool_to_bv(&uf_bool(opc.name(), &args))
            } else {
                uf_bv(opc.name(), &args)
            };
            s.vals[r.index()] = Some(Sym::Bv(v));
            return Ok(());
        }
        if matches!(
            opc,
            Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod
        ) {
            if let Some(plan) = args[1].simplify().as_u64().and_then(|c| proven_plan(opc, c as i64)) {
                let v = self.plan_value(&plan, &args[0])?;
                let s = if orig { &mut self.o } else { &mut self.p };
                s.set(r, Sym::Bv(v));
                return Ok(());
            }
        }
        let abstracted = self.abs.value(opc, &args);
        let (v, valid) = match abstracted.map(Ok).unwrap_or_else(|| op_semantics(opc, &args)) {
            Ok(x) => x,
            Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
        };
        if valid.simplify().as_bool() != Some(true) {
            t.valid = Some(valid);
        }
        s.set(r, Sym::Bv(v));
        Ok(())
    }
}
