//! Instruction selection of integer ops: ALU, unary ops, copies, shifts, division,
//! sign extension and comparisons.

use crate::codegen::emit::{fits_i32, Cond, Opnd};
use crate::codegen::fusion::{Fusion, Undo};
use crate::codegen::regs::{Reg, R11, RAX, RCX, RDX};
use crate::codegen::{Gen, R};
use crate::pmove::Loc;
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi};
use trace_ir::{Kind, OpRef, Opcode, Value};

/// What an ALU op leaves for the next op: the overflow flag for an `_ovf` op's guard.
fn overflow_fusion(opc: Opcode) -> Fusion {
    if opc.is_ovf() {
        Fusion::Overflow(None)
    } else {
        Fusion::None
    }
}

impl Gen<'_> {
    /// `add`, `sub`, `and`, `or`, `xor`, `mul` and their `_ovf` forms: the special forms
    /// below when they apply, else `d = copy of x; d op= y`.
    pub(super) fn int_binary(&mut self, at: usize) -> R<Fusion> {
        use Opcode::*;
        let t = self.t;
        let opc = t.ops[at].opcode;
        let (mut x, mut y) = self.binary_operands(at);
        if opc == IntAnd && !x.is_const() {
            // Only tested for zero: `test`, no result.
            if let Some(fusion) = self.and_test(at, x, y)? {
                return Ok(fusion);
            }
            if let Some(c @ (0xff | 0xffff | 0xffff_ffff)) = t.const_int(y) {
                self.and_mask(x, c)?;
                return Ok(Fusion::None);
            }
        }
        if opc == IntMulOvf && !x.is_const() {
            if let Some(c) = t.const_int(y).filter(|&c| c > 1 && c.count_ones() == 1) {
                let overflows = self.shl_checked(x, c.trailing_zeros() as i8)?;
                return Ok(Fusion::Cmp(overflows));
            }
        }
        if matches!(opc, IntMul | IntMulOvf) && !x.is_const() {
            if let Some(c) = t.const_int(y).filter(|&c| fits_i32(c)) {
                self.mul_imm(x, c as i32)?;
                return Ok(overflow_fusion(opc));
            }
        }
        if matches!(opc, IntAdd | IntSub) && self.add_as_lea(opc, x, y)? {
            return Ok(Fusion::None);
        }
        if matches!(opc, IntAddOvf | IntSubOvf) {
            if opc == IntAddOvf && !self.undoable(x) && self.undoable(y) {
                std::mem::swap(&mut x, &mut y);
            }
            if let Some(fusion) = self.ovf_in_place(at, x, y)? {
                return Ok(fusion);
            }
        }
        let s = self.opnd(y)?;
        let d = self.copy_to_new(x, Kind::Int)?;
        self.em.alu(opc, d, s);
        self.def(d);
        Ok(overflow_fusion(opc))
    }

    /// The operands of the binary op at `at` in the order it computes them: a constant
    /// second; for a commutative op, the operand that dies here first (it is overwritten,
    /// not a copy of the one that lives on).
    fn binary_operands(&self, at: usize) -> (Value, Value) {
        let op = &self.t.ops[at];
        let (mut x, mut y) = (op.args[0], op.args[1]);
        if op.opcode.is_commutative() && x.is_const() && !y.is_const() {
            std::mem::swap(&mut x, &mut y);
        }
        if op.opcode.is_commutative() {
            if let (Some(xo), Some(yo)) = (x.as_op(), y.as_op()) {
                let (xo, yo) = (xo.index(), yo.index());
                if self.r.ra.reg_of(xo).is_some()
                    && self.r.ra.reg_of(yo).is_some()
                    && self.live_after(xo)
                    && !self.live_after(yo)
                {
                    std::mem::swap(&mut x, &mut y);
                }
            }
        }
        (x, y)
    }

    /// `int_and(x, c)` with the mask of the low 8, 16 or 32 bits: a zero-extending move
    /// into any register (no copy of `x`).
    fn and_mask(&mut self, x: Value, c: i64) -> R<()> {
        let (mut d, s) = self.three_operand(x, Kind::Int)?;
        if let (0xffff_ffff, Opnd::Reg(r)) = (c, s) {
            // `mov r32, r32` into another register is a renaming the processor does without
            // an execution cycle; into the same register it is not: a free one, if any.
            if d == r {
                let free = self
                    .r
                    .ra
                    .gpr_order()
                    .iter()
                    .copied()
                    .find(|&g| g != r && self.r.ra.is_free(g));
                if let Some(f) = free {
                    self.r.ra.pin(f);
                    d = f;
                }
            }
        }
        match (c, s) {
            (0xff, Opnd::Reg(r)) => dynasm!(self.em.asm ; .arch x64 ; movzx Rd(d), Rb(r)),
            (0xff, Opnd::Mem(m)) => dynasm!(self.em.asm ; .arch x64 ; movzx Rd(d), BYTE [rbp + m]),
            (0xffff, Opnd::Reg(r)) => dynasm!(self.em.asm ; .arch x64 ; movzx Rd(d), Rw(r)),
            (0xffff, Opnd::Mem(m)) => dynasm!(self.em.asm ; .arch x64 ; movzx Rd(d), WORD [rbp + m]),
            (_, Opnd::Reg(r)) => dynasm!(self.em.asm ; .arch x64 ; mov Rd(d), Rd(r)),
            (_, Opnd::Mem(m)) => dynasm!(self.em.asm ; .arch x64 ; mov Rd(d), DWORD [rbp + m]),
            (_, Opnd::Imm(_)) => unreachable!("three_operand gives a register or a slot"),
        }
        self.def(d);
        Ok(())
    }

    /// `x * c` as `imul d, x, imm`: no copy of `x`.
    fn mul_imm(&mut self, x: Value, c: i32) -> R<()> {
        let (d, s) = self.three_operand(x, Kind::Int)?;
        match (i8::try_from(c), s) {
            (Ok(b), Opnd::Reg(r)) => dynasm!(self.em.asm ; .arch x64 ; imul Rq(d), Rq(r), BYTE b),
            (Ok(b), Opnd::Mem(m)) => dynasm!(self.em.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m], BYTE b),
            (Err(_), Opnd::Reg(r)) => dynasm!(self.em.asm ; .arch x64 ; imul Rq(d), Rq(r), c),
            (Err(_), Opnd::Mem(m)) => dynasm!(self.em.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m], c),
            (_, Opnd::Imm(_)) => unreachable!("three_operand gives a register or a slot"),
        }
        self.def(d);
        Ok(())
    }

    /// `int_mul_ovf(x, 2^k)` (`1 <= k <= 62`) as `d = x << k`, a one-cycle shift on the
    /// result's path (where `imul` takes three), with the overflow test beside it; returns
    /// the condition under which it overflows (for the overflow guard). With `x` still in a
    /// register after the shift: the product fits iff shifting it back gives `x`
    /// (`(d >> k) != x` overflows: two operations besides the shift). Overwriting `x`: the
    /// product fits iff the top `k + 1` bits of `x` are equal, i.e. `(x >> (63 - k)) + 1` is
    /// 0 or 1 (`above` 1 overflows), computed before the shift.
    fn shl_checked(&mut self, x: Value, k: i8) -> R<Cond> {
        let (d, s) = self.three_operand(x, Kind::Int)?;
        if let Opnd::Reg(r) = s {
            if r != d {
                dynasm!(self.em.asm ; .arch x64
                    ; mov Rq(d), Rq(r) ; shl Rq(d), k
                    ; mov r11, Rq(d) ; sar r11, k ; cmp r11, Rq(r));
                self.def(d);
                return Ok(Cond::Ne);
            }
        }
        let top = 63 - k;
        match s {
            Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; mov r11, Rq(r)),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD [rbp + m]),
            Opnd::Imm(_) => unreachable!("three_operand gives a register or a slot"),
        }
        dynasm!(self.em.asm ; .arch x64 ; sar r11, top ; add r11, 1);
        match s {
            Opnd::Reg(r) if r == d => {}
            Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; mov Rq(d), Rq(r)),
            Opnd::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; mov Rq(d), QWORD [rbp + m]),
            Opnd::Imm(_) => unreachable!("three_operand gives a register or a slot"),
        }
        dynasm!(self.em.asm ; .arch x64 ; shl Rq(d), k ; cmp r11, 1);
        self.def(d);
        Ok(Cond::A)
    }

    /// `lea` for add/sub of a constant or add of two registers into a different register,
    /// when `x` (in a register) lives on or the loop's jump wants the result elsewhere.
    /// Returns whether it applied.
    fn add_as_lea(&mut self, opc: Opcode, x: Value, y: Value) -> R<bool> {
        let Some(xo) = x.as_op().map(|o| o.index()) else {
            return Ok(false);
        };
        let Some(rx) = self.r.ra.reg_of(xo) else {
            return Ok(false);
        };
        let elsewhere = self.live_after(xo) || self.jump_hint(Kind::Int).is_some();
        if let Some(c) = self.t.const_int(y) {
            let c = if opc == Opcode::IntSub {
                c.checked_neg()
            } else {
                Some(c)
            };
            let Some(c) = c.filter(|&c| fits_i32(c) && elsewhere) else {
                return Ok(false);
            };
            self.use_reg(rx, xo);
            let d = self.alloc_result(Kind::Int)?;
            let c = c as i32;
            dynasm!(self.em.asm ; .arch x64 ; lea Rq(d), [Rq(rx) + c]);
            self.def(d);
            return Ok(true);
        }
        let (Opcode::IntAdd, Loc::Reg(ry), true) = (opc, self.loc(y)?, elsewhere) else {
            return Ok(false);
        };
        let ry = Reg::new(ry);
        self.use_reg(rx, xo);
        self.r.ra.pin(ry);
        let d = self.alloc_result(Kind::Int)?;
        dynasm!(self.em.asm ; .arch x64 ; lea Rq(d), [Rq(rx) + Rq(ry)]);
        self.def(d);
        Ok(true)
    }

    /// The `_ovf` add/sub at `at` overwrites `x` in place when only the overflow guard's
    /// exit still reports it (the exit recomputes it, see [`Undo`]) and `y` is an
    /// immediate, a register or a slot. Returns the fusion for the guard when it applied.
    fn ovf_in_place(&mut self, at: usize, x: Value, y: Value) -> R<Option<Fusion>> {
        if !self.undoable(x) || x == y {
            return Ok(None);
        }
        let opc = self.t.ops[at].opcode;
        let xo = x.as_op().unwrap().index();
        let s = match self.loc(y)? {
            Loc::Imm(b) if fits_i32(b as i64) => Opnd::Imm(b as i64 as i32),
            Loc::Imm(_) => return Ok(None),
            Loc::Reg(r) => {
                let r = Reg::new(r);
                self.r.ra.pin(r);
                Opnd::Reg(r)
            }
            Loc::Mem(m) => Opnd::Mem(m),
        };
        let rx = self.r.ra.reg_of(xo).unwrap();
        self.em.record_use(rx.loc(), xo, self.pos);
        self.r.ra.release(rx);
        self.r.ra.pin(rx);
        self.em.alu(opc, rx, s);
        self.def(rx);
        Ok(Some(Fusion::Overflow(Some(Undo {
            val: xo,
            reg: rx,
            at,
            inverse: if opc == Opcode::IntAddOvf {
                Opcode::IntSub
            } else {
                Opcode::IntAdd
            },
            y: s,
            y_val: y,
        }))))
    }

    /// `int_neg`, `int_invert`.
    pub(super) fn int_neg_invert(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let d = self.copy_to_new(a(0), Kind::Int)?;
        if opc == IntNeg {
            dynasm!(self.em.asm ; .arch x64 ; neg Rq(d));
        } else {
            dynasm!(self.em.asm ; .arch x64 ; not Rq(d));
        }
        self.def(d);
        Ok(())
    }

    /// `same_as_*` and pointer casts: a copy.
    pub(super) fn int_copy(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let kind = opc.result_kind();
        let d = self.copy_to_new(a(0), kind)?;
        self.def(d);
        Ok(())
    }

    /// `int_force_ge_zero`.
    pub(super) fn int_force_ge_zero(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let d = self.copy_to_new(a(0), Kind::Int)?;
        dynasm!(self.em.asm ; .arch x64 ; xor r11d, r11d ; test Rq(d), Rq(d) ; cmovl Rq(d), r11);
        self.def(d);
        Ok(())
    }

    /// `int_select(c, a, b)`: `d = b; test c, c; cmovne d, a`. The condition and `a` are in
    /// registers before `d` is chosen (`d` may be the register of `b`, which may be either
    /// of them when it dies here).
    pub(super) fn int_select(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let args: &[Value] = &t.ops[at].args;
        let rc = self.load(args[0])?;
        let ra = self.load(args[1])?;
        let d = self.copy_to_new(args[2], Kind::Int)?;
        dynasm!(self.em.asm ; .arch x64 ; test Rq(rc), Rq(rc) ; cmovne Rq(d), Rq(ra));
        self.def(d);
        Ok(())
    }

    /// `uint_mul_high`: `mul`, the high half in `rdx`.
    pub(super) fn uint_mul_high(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        self.take_reg(RAX)?;
        self.take_reg(RDX)?;
        let (x, y) = if a(0).is_const() { (a(1), a(0)) } else { (a(0), a(1)) };
        let sx = self.loc(x)?;
        self.em.mov(RAX.loc(), sx);
        match self.loc(y)? {
            Loc::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; mul Rq(r)),
            Loc::Mem(m) => dynasm!(self.em.asm ; .arch x64 ; mul QWORD [rbp + m]),
            Loc::Imm(v) => {
                self.em.mov_imm_r11(v);
                dynasm!(self.em.asm ; .arch x64 ; mul r11)
            }
        }
        self.em.clobber(&[RAX, RDX]);
        self.def(RDX);
        Ok(())
    }

    /// Integer and pointer comparisons.
    pub(super) fn int_compare(&mut self, at: usize, fusion: Fusion) -> R<Fusion> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let mut c = Cond::of_cmp(opc).unwrap();
        if let Fusion::AndTest { and } = fusion {
            // `int_ne(and, 0)` / `int_eq(and, 0)`: the `test` of the `int_and` set the flags
            // (see `and_test`).
            debug_assert!(op.args.contains(&Value::op(OpRef::new(and))));
            return Ok(Fusion::Cmp(c));
        }
        let (mut x, mut y) = (a(0), a(1));
        if x.is_const() && !y.is_const() {
            std::mem::swap(&mut x, &mut y);
            c = c.swap();
        }
        let before = self.em.asm.offset().0;
        let rx = self.load(x)?;
        let s = self.opnd(y)?;
        let bare = self.em.asm.offset().0 == before;
        let fusion = self.bool_result(at, |g| g.em.cmp(rx, s), c)?;
        Ok(match fusion {
            Fusion::Cmp(cond) if bare && self.loops.is_first(at) => Fusion::LoopTest { cond, x: rx, y: s },
            other => other,
        })
    }

    /// `int_is_true`, `int_is_zero`.
    pub(super) fn int_is_true_zero(&mut self, at: usize, fusion: Fusion) -> R<Fusion> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let c = if opc == IntIsTrue { Cond::Ne } else { Cond::E };
        if let Fusion::AndTest { and } = fusion {
            debug_assert_eq!(a(0), Value::op(OpRef::new(and)));
            return Ok(Fusion::Cmp(c));
        }
        let rx = self.load(a(0))?;
        self.bool_result(at, |g| dynasm!(g.em.asm ; .arch x64 ; test Rq(rx), Rq(rx)), c)
    }

    pub(super) fn shift(&mut self, opc: Opcode, v: Value, amount: Value) -> R<()> {
        if let Some(c) = self.t.const_int(amount) {
            let d = self.copy_to_new(v, Kind::Int)?;
            if (0..64).contains(&c) {
                let c = c as i8;
                match opc {
                    Opcode::IntLshift => dynasm!(self.em.asm ; .arch x64 ; shl Rq(d), c),
                    Opcode::IntRshift => dynasm!(self.em.asm ; .arch x64 ; sar Rq(d), c),
                    _ => dynasm!(self.em.asm ; .arch x64 ; shr Rq(d), c),
                }
            } else {
                let inv = self.invalid_exit();
                self.jmp_stub(inv);
            }
            self.def(d);
            return Ok(());
        }
        self.take_reg(RCX)?;
        let s = self.loc(amount)?;
        self.em.mov(RCX.loc(), s);
        let inv = self.invalid_exit();
        dynasm!(self.em.asm ; .arch x64 ; cmp rcx, 63);
        self.jcc_stub(Cond::A, inv);
        let d = self.copy_to_new(v, Kind::Int)?;
        match opc {
            Opcode::IntLshift => dynasm!(self.em.asm ; .arch x64 ; shl Rq(d), cl),
            Opcode::IntRshift => dynasm!(self.em.asm ; .arch x64 ; sar Rq(d), cl),
            _ => dynasm!(self.em.asm ; .arch x64 ; shr Rq(d), cl),
        }
        self.def(d);
        Ok(())
    }

    /// Division and remainder (C and Python flavours). Never traps: a zero divisor is an
    /// invalid operation, and `MININT / -1` wraps (quotient MININT, remainder 0).
    pub(super) fn divide(&mut self, opc: Opcode, v: Value, divisor: Value) -> R<()> {
        self.take_reg(RAX)?;
        self.take_reg(RDX)?;
        let sv = self.loc(v)?;
        let sd = self.loc(divisor)?;
        self.em.mov(RAX.loc(), sv);
        self.em.mov(R11.loc(), sd);
        let inv = self.invalid_exit();
        let minus_one = self.em.asm.new_dynamic_label();
        let done = self.em.asm.new_dynamic_label();
        dynasm!(self.em.asm ; .arch x64 ; test r11, r11);
        self.jcc_stub(Cond::E, inv);
        dynasm!(self.em.asm
            ; .arch x64
            ; cmp r11, -1
            ; je =>minus_one
            ; cqo
            ; idiv r11
        );
        match opc {
            Opcode::IntPyDiv => {
                // Floor: subtract one when the remainder is non-zero and its sign differs
                // from the divisor's.
                dynasm!(self.em.asm
                    ; .arch x64
                    ; test rdx, rdx
                    ; jz =>done
                    ; xor rdx, r11
                    ; jns =>done
                    ; sub rax, 1
                    ; jmp =>done
                );
            }
            Opcode::IntPyMod => {
                let adjust = self.em.asm.new_dynamic_label();
                dynasm!(self.em.asm
                    ; .arch x64
                    ; test rdx, rdx
                    ; jz =>done
                    ; xor r11, rdx
                    ; js =>adjust
                    ; jmp =>done
                    ; =>adjust
                    ; xor r11, rdx
                    ; add rdx, r11
                    ; jmp =>done
                );
            }
            _ => dynasm!(self.em.asm ; .arch x64 ; jmp =>done),
        }
        dynasm!(self.em.asm
            ; .arch x64
            ; =>minus_one
            ; neg rax
            ; xor edx, edx
            ; =>done
        );
        self.em.clobber(&[RAX, RDX]);
        let r = if matches!(opc, Opcode::IntFloorDiv | Opcode::IntPyDiv) {
            RAX
        } else {
            RDX
        };
        self.def(r);
        Ok(())
    }

    /// Sign-extend the low `n` bytes (n in 1, 2, 4, 8; anything else is invalid).
    pub(super) fn signext(&mut self, v: Value, n: Value) -> R<()> {
        if let Some(c) = self.t.const_int(n) {
            let d = self.copy_to_new(v, Kind::Int)?;
            match c {
                1 => dynasm!(self.em.asm ; .arch x64 ; movsx Rq(d), Rb(d)),
                2 => dynasm!(self.em.asm ; .arch x64 ; movsx Rq(d), Rw(d)),
                4 => dynasm!(self.em.asm ; .arch x64 ; movsxd Rq(d), Rd(d)),
                8 => {}
                _ => {
                    let inv = self.invalid_exit();
                    self.jmp_stub(inv);
                }
            }
            self.def(d);
            return Ok(());
        }
        self.take_reg(RCX)?;
        let s = self.loc(n)?;
        self.em.mov(RCX.loc(), s);
        let inv = self.invalid_exit();
        let ok = self.em.asm.new_dynamic_label();
        // Valid: n in {1, 2, 4, 8}; then shift left and back by 64 - 8n.
        dynasm!(self.em.asm
            ; .arch x64
            ; cmp rcx, 1 ; je =>ok
            ; cmp rcx, 2 ; je =>ok
            ; cmp rcx, 4 ; je =>ok
            ; cmp rcx, 8
        );
        self.jcc_stub(Cond::Ne, inv);
        dynasm!(self.em.asm
            ; .arch x64
            ; =>ok
            ; shl ecx, 3
            ; neg ecx
            ; add ecx, 64
        );
        self.em.clobber(&[RCX]);
        let d = self.copy_to_new(v, Kind::Int)?;
        // A shift by 64 is a shift by 0 on x86 (the count is masked), which is what n = 8 needs.
        dynasm!(self.em.asm ; .arch x64 ; shl Rq(d), cl ; sar Rq(d), cl);
        self.def(d);
        Ok(())
    }
}
