//! Translation of elidable and loop-invariant calls, hints and frame ops.

use trace_ir::{Kind, Op, OpRef};
use z3::ast::Bool;

use super::Translated;
use crate::validate::layout::descr_key;
use crate::validate::side::{Side, Sym};
use crate::validate::terms::{bv, class_of, uf_bv, zero};
use crate::validate::R;

impl<'t> Side<'t> {
    /// An elidable or loop-invariant call: an uninterpreted function of its descriptor and
    /// arguments (no sync point).
    pub(super) fn elidable_call(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let mut args = Vec::new();
        for &a in &op.args {
            args.push(self.bv_of(a)?);
        }
        let name = format!("call[{}]", descr_key(trace, r));
        let v = uf_bv(&name, &args);
        if opc.result_kind() != Kind::Void {
            self.set(r, Sym::Bv(v));
        }
        Ok(())
    }

    /// `record_exact_class(p, C)`, a promise assumed on the original: `p` is not null and has
    /// class `C`.
    pub(super) fn record_exact_class(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        // A promise: on the original, the object is not null and has that class.
        if orig {
            let x = self.value(op.args[0])?;
            let c = self.bv_of(op.args[1])?;
            t.fact = Some(match self.tracked(&x) {
                Some(id) => self.objs[id]
                    .class
                    .clone()
                    .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)]))
                    .eq(&c),
                None => {
                    let p = self.escape(&x);
                    Bool::and(&[p.eq(zero()).not(), class_of(&p).eq(&c)])
                }
            });
        }
        Ok(())
    }

    /// `assert_not_none(p)`, a promise assumed on the original: `p` is not null.
    pub(super) fn assert_not_none(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        let x = self.value(op.args[0])?;
        if self.tracked(&x).is_none() {
            let p = self.escape(&x);
            if orig {
                t.fact = Some(p.eq(zero()).not());
            }
        }
        Ok(())
    }

    /// `virtual_ref`: the operand itself.
    pub(super) fn virtual_ref(&mut self, r: OpRef, op: &Op) -> R<()> {
        let v = self.value(op.args[0])?;
        self.set(r, v);
        Ok(())
    }
}
