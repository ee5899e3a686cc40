//! Instruction selection of float ops (SSE2, XMM registers).

use crate::codegen::emit::Opnd;
use crate::codegen::regs::RegSet;
use crate::codegen::{Gen, R};
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi};
use trace_ir::{Kind, Opcode, Value};

impl Gen<'_> {
    /// `float_add`, `float_sub`, `float_mul`, `float_truediv`.
    pub(super) fn float_binary(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let s = self.fopnd(a(1))?;
        let d = self.copy_to_new(a(0), Kind::Float)?;
        let dx = d.xmm();
        macro_rules! fop {
            ($ins:ident) => {
                match s {
                    Opnd::Reg(s) => dynasm!(self.em.asm ; .arch x64 ; $ins Rx(dx), Rx(s.xmm())),
                    Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; $ins Rx(dx), QWORD [rbp + m]),
                    Opnd::Imm(_) => unreachable!(),
                }
            };
        }
        match opc {
            FloatAdd => fop!(addsd),
            FloatSub => fop!(subsd),
            FloatMul => fop!(mulsd),
            _ => fop!(divsd),
        }
        self.def(d);
        Ok(())
    }

    /// `float_sqrt`: `sqrtsd` (NaN quieted, negative operands give the default NaN, as
    /// `trace_ir::eval` says).
    pub(super) fn float_sqrt(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let s = self.fopnd(t.ops[at].args[0])?;
        let d = self.alloc_reg(Kind::Float, RegSet::EMPTY)?;
        let dx = d.xmm();
        match s {
            Opnd::Reg(s) => dynasm!(self.em.asm ; .arch x64 ; sqrtsd Rx(dx), Rx(s.xmm())),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; sqrtsd Rx(dx), QWORD [rbp + m]),
            Opnd::Imm(_) => unreachable!(),
        }
        self.def(d);
        Ok(())
    }

    /// `float_neg`, `float_abs`: the sign bit flipped or cleared.
    pub(super) fn float_neg_abs(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let d = self.copy_to_new(a(0), Kind::Float)?;
        let dx = d.xmm();
        if opc == FloatNeg {
            dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD i64::MIN ; movq xmm15, r11 ; xorpd Rx(dx), xmm15);
        } else {
            dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD i64::MAX ; movq xmm15, r11 ; andpd Rx(dx), xmm15);
        }
        self.def(d);
        Ok(())
    }

    /// Float comparisons, materialized as 0/1.
    pub(super) fn float_compare(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        // lt/le are gt/ge with swapped operands; ucomisd sets CF/ZF like an unsigned
        // compare and PF when unordered (then CF = ZF = 1: `a`/`ae` are false).
        let (p, q) = if matches!(opc, FloatLt | FloatLe) {
            (a(1), a(0))
        } else {
            (a(0), a(1))
        };
        let rp = self.load(p)?;
        let s = self.fopnd(q)?;
        let d = self.alloc_reg(Kind::Int, RegSet::EMPTY)?;
        dynasm!(self.em.asm ; .arch x64 ; xor r11d, r11d);
        match s {
            Opnd::Reg(s) => dynasm!(self.em.asm ; .arch x64 ; ucomisd Rx(rp.xmm()), Rx(s.xmm())),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; ucomisd Rx(rp.xmm()), QWORD [rbp + m]),
            Opnd::Imm(_) => unreachable!(),
        }
        match opc {
            FloatLt | FloatGt => dynasm!(self.em.asm ; .arch x64 ; seta r11b ; mov Rq(d), r11),
            FloatLe | FloatGe => dynasm!(self.em.asm ; .arch x64 ; setae r11b ; mov Rq(d), r11),
            FloatEq => dynasm!(self.em.asm ; .arch x64 ; setnp r11b ; mov Rd(d), 0 ; cmove Rq(d), r11),
            _ => dynasm!(self.em.asm ; .arch x64 ; setp r11b ; mov Rd(d), 1 ; cmove Rq(d), r11),
        }
        self.def(d);
        Ok(())
    }

    /// `cast_int_to_float`.
    pub(super) fn cast_int_to_float(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let r = self.load(a(0))?;
        let d = self.alloc_reg(Kind::Float, RegSet::EMPTY)?;
        dynasm!(self.em.asm ; .arch x64 ; cvtsi2sd Rx(d.xmm()), Rq(r));
        self.def(d);
        Ok(())
    }

    /// `cast_float_to_int`, saturating.
    pub(super) fn cast_float_to_int(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        // cvttsd2si gives MININT for NaN and out-of-range values; fix up to the
        // saturating semantics (NaN -> 0, too large -> MAXINT).
        let r = self.load(a(0))?;
        let d = self.alloc_reg(Kind::Int, RegSet::EMPTY)?;
        let rx = r.xmm();
        let done = self.em.asm.new_dynamic_label();
        let nan = self.em.asm.new_dynamic_label();
        dynasm!(self.em.asm
            ; .arch x64
            ; cvttsd2si Rq(d), Rx(rx)
            ; mov r11, QWORD i64::MIN
            ; cmp Rq(d), r11
            ; jne =>done
            ; ucomisd Rx(rx), Rx(rx)
            ; jp =>nan
            ; xorpd xmm15, xmm15
            ; ucomisd Rx(rx), xmm15
            ; jbe =>done
            ; lea Rq(d), [r11 - 1]
            ; jmp =>done
            ; =>nan
            ; xor Rd(d), Rd(d)
            ; =>done
        );
        self.def(d);
        Ok(())
    }

    /// Bit casts between floats and integers.
    pub(super) fn convert_bytes(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let kind = opc.result_kind();
        let src = self.loc(a(0))?;
        let d = self.alloc_reg(kind, RegSet::EMPTY)?;
        self.em.mov(d.loc(), src);
        self.def(d);
        Ok(())
    }
}
