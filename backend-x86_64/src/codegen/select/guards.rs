//! Instruction selection of guards, of `force_token` (a constant in this backend) and of
//! virtual references.

use crate::codegen::emit::{fits_i32, Cond, Opnd};
use crate::codegen::fusion::Fusion;
use crate::codegen::loops::LoopTop;
use crate::codegen::regs::{Reg, RegSet, R11, RAX};
use crate::codegen::{bad, Gen, R};
use crate::pmove::Loc;
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi};
use trace_ir::abi::VirtualRefLayout;
use trace_ir::{Kind, Opcode, Value};

impl Gen<'_> {
    /// `guard_true`, `guard_false`: on the flags of a fused comparison, or a test of the value.
    pub(super) fn guard_bool(&mut self, at: usize, fusion: Fusion) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let exit_if_true = opc == GuardFalse;
        match fusion.flags() {
            Some(c) => {
                let exit_if = if exit_if_true { c } else { c.negate() };
                self.guard_exit(exit_if, None)?;
                self.learn_in_bounds(at - 1, opc == GuardTrue);
                if let Fusion::LoopTest { x: rx, y: s, .. } = fusion {
                    // The loop's first test: rotate (see `LoopTop`). The body starts on
                    // a 64-byte boundary (the NOPs run once per entry).
                    let stub = self.r.exits.num_stubs() - 1;
                    let body = self.em.asm.new_dynamic_label();
                    self.em.align_with_nops(64);
                    dynasm!(self.em.asm ; .arch x64 ; =>body);
                    self.loops.top = Some(LoopTop {
                        x: rx,
                        y: s,
                        exit_if,
                        stub,
                        body,
                    });
                }
            }
            None => {
                match self.opnd(a(0))? {
                    Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; test Rq(r), Rq(r)),
                    Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; cmp QWORD [rbp + m], 0),
                    Opnd::Imm(i) => dynasm!(self.em.asm ; .arch x64 ; mov r11d, i ; test r11, r11),
                }
                self.guard_exit(if exit_if_true { Cond::Ne } else { Cond::E }, None)?;
            }
        }
        Ok(())
    }

    /// `guard_no_overflow`, `guard_overflow`: on the flags of the `_ovf` op.
    pub(super) fn guard_overflow(&mut self, at: usize, fusion: Fusion) -> R<()> {
        let c = fusion
            .flags()
            .ok_or_else(|| bad("overflow guard without a preceding _ovf op"))?;
        let undo = match fusion {
            Fusion::Overflow(undo) => undo,
            _ => None,
        };
        let exit_if = if self.t.ops[at].opcode == Opcode::GuardNoOverflow {
            c
        } else {
            c.negate()
        };
        self.guard_exit(exit_if, undo)?;
        Ok(())
    }

    /// `guard_value`.
    pub(super) fn guard_value(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        if t.kind_of(a(0)) == Kind::Float || t.kind_of(a(1)) == Kind::Float {
            // Compare the bits.
            let r = self.alloc_reg(Kind::Int, RegSet::EMPTY)?;
            let s0 = self.loc(a(0))?;
            self.em.mov(r.loc(), s0);
            let s1 = self.loc(a(1))?;
            match s1 {
                Loc::Reg(q) => dynasm!(self.em.asm ; .arch x64 ; movq r11, Rx(Reg::new(q).xmm())),
                other => self.em.mov(R11.loc(), other),
            }
            dynasm!(self.em.asm ; .arch x64 ; cmp Rq(r), r11);
        } else {
            let (p, q) = if a(0).is_const() { (a(1), a(0)) } else { (a(0), a(1)) };
            let r = self.load(p)?;
            let s = self.opnd(q)?;
            self.em.cmp(r, s);
        }
        self.guard_exit(Cond::Ne, None)?;
        Ok(())
    }

    /// `guard_nonnull`, `guard_isnull`.
    pub(super) fn guard_null(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        match self.opnd(a(0))? {
            Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; test Rq(r), Rq(r)),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; cmp QWORD [rbp + m], 0),
            Opnd::Imm(i) => dynasm!(self.em.asm ; .arch x64 ; mov r11d, i ; test r11, r11),
        }
        self.guard_exit(if opc == GuardNonnull { Cond::E } else { Cond::Ne }, None)?;
        if opc == GuardNonnull {
            self.r.heap.make_nonnull(a(0));
        }
        Ok(())
    }

    /// `guard_class`, `guard_nonnull_class`, `guard_subclass`.
    pub(super) fn guard_class(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        // No class hierarchy is modelled (as in the interpreter): `guard_subclass`
        // checks for the exact class.
        let r = self.load(a(0))?;
        if opc != GuardNonnullClass {
            // A class check on null is an invalid operation (as in the interpreter).
            self.null_check(a(0), r);
        }
        if opc == GuardNonnullClass {
            dynasm!(self.em.asm ; .arch x64 ; test Rq(r), Rq(r));
            // Both branches share one stub: nothing moves between them.
            self.guard_exit(Cond::E, None)?;
            self.r.heap.make_nonnull(a(0));
        }
        match self.loc(a(1))? {
            Loc::Imm(v) if fits_i32(v as i64) => {
                let v = v as i64 as i32;
                dynasm!(self.em.asm ; .arch x64 ; cmp QWORD [Rq(r)], v)
            }
            other => {
                self.em.mov(R11.loc(), other);
                dynasm!(self.em.asm ; .arch x64 ; cmp r11, QWORD [Rq(r)])
            }
        }
        if opc == GuardNonnullClass {
            self.jcc_stub(Cond::Ne, self.r.exits.num_stubs() - 1);
        } else {
            self.guard_exit(Cond::Ne, None)?;
        }
        Ok(())
    }

    /// `force_token`.
    pub(super) fn force_token(&mut self) -> R<()> {
        // A fixed token, the interpreter's.
        let d = self.alloc_reg(Kind::Ref, RegSet::EMPTY)?;
        self.em.mov(d.loc(), Loc::Imm(trace_ir::abi::FORCE_TOKEN));
        self.def(d);
        Ok(())
    }

    /// `virtual_ref`: a new `JitVirtualRef` (`trace_ir::abi::VirtualRefLayout`) holding the
    /// force token; its `forced` field is null as allocated (the runtime's memory is zeroed).
    pub(super) fn virtual_ref(&mut self, at: usize) -> R<()> {
        let l = VirtualRefLayout::get();
        self.allocate_object(at, &l.size, trace_ir::abi::default_class(&l.size))?;
        let (base, disp) = self.mem_operand(RAX, l.token.offset);
        self.em.mov_imm_r11(trace_ir::abi::FORCE_TOKEN);
        self.em.store_mem(base, disp, R11, 8);
        Ok(())
    }

    /// `virtual_ref_finish(r, p)`: `p` into `forced` unless it is null, then null into the
    /// token.
    pub(super) fn virtual_ref_finish(&mut self, at: usize) -> R<()> {
        let l = VirtualRefLayout::get();
        let args: &[Value] = &self.t.ops[at].args;
        let (r, p) = (args[0], args[1]);
        let base = self.load(r)?;
        self.null_check(r, base);
        let v = self.load(p)?;
        let (b, disp) = self.mem_operand(base, l.forced.offset);
        let skip = self.em.asm.new_dynamic_label();
        dynasm!(self.em.asm ; .arch x64 ; test Rq(v), Rq(v) ; jz =>skip);
        self.em.store_mem(b, disp, v, 8);
        dynasm!(self.em.asm ; .arch x64 ; =>skip);
        let (b, disp) = self.mem_operand(base, l.token.offset);
        dynasm!(self.em.asm ; .arch x64 ; mov QWORD [Rq(b) + disp], 0);
        Ok(())
    }
}
