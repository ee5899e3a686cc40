//! Emission: the code buffer with the events the symbolic checker replays, the operand and
//! condition types of the instruction helpers, and every hand-encoded instruction (frame
//! moves, register moves, constant loads, `rel32` jumps, NOP padding), each checked against
//! the bytes dynasm assembles for it in the tests below.

use super::frame::Unwind;
use super::regs::Reg;
use super::{internal, R};
use crate::asm::CodeBuf;
use crate::checker::{Event, Val};
use crate::pmove::Loc;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};
use std::cell::RefCell;
use trace_ir::Opcode;

/// Whether code generation records events for the symbolic checker.
pub(super) const CHECK: bool = cfg!(any(test, feature = "checker"));

/// Whether `v` fits a sign-extended 32-bit immediate or displacement.
pub(super) fn fits_i32(v: i64) -> bool {
    v >= i32::MIN as i64 && v <= i32::MAX as i64
}

/// The code being generated and, when [`CHECK`], the events the symbolic checker replays
/// (every move, definition and clobber as it is emitted, every read the allocator claims).
pub(super) struct Emitter {
    /// The code buffer `dynasm!` assembles into.
    pub(super) asm: CodeBuf,
    /// The events for the checker (interior mutability: reads are recorded by queries).
    events: RefCell<Vec<Event>>,
    /// How to unwind the code: a step at each code offset where the rule changes (recorded
    /// when `unwind_on`: only debug information uses them).
    unwind: Vec<(u32, Unwind)>,
    /// Whether to record [`Emitter::unwind`].
    unwind_on: bool,
    /// The CFA's distance from `rsp` at the end of the code emitted so far (8 at a
    /// function's entry: the return address).
    cfa: u32,
}

/// An operand of an integer ALU instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Opnd {
    /// A register.
    Reg(Reg),
    /// A frame word (its displacement from `rbp`).
    Mem(i32),
    /// A sign-extended 32-bit immediate.
    Imm(i32),
}

/// A condition code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub(super) enum Cond {
    E,
    Ne,
    L,
    Le,
    G,
    Ge,
    B,
    Be,
    A,
    Ae,
    O,
    No,
}

impl Cond {
    /// The condition's encoding (the low nibble of `jcc`, `setcc`, `cmovcc`).
    pub(super) fn code(self) -> u8 {
        use Cond::*;
        match self {
            O => 0x0,
            No => 0x1,
            B => 0x2,
            Ae => 0x3,
            E => 0x4,
            Ne => 0x5,
            Be => 0x6,
            A => 0x7,
            L => 0xc,
            Ge => 0xd,
            Le => 0xe,
            G => 0xf,
        }
    }
    /// The opposite condition.
    pub(super) fn negate(self) -> Cond {
        use Cond::*;
        match self {
            E => Ne,
            Ne => E,
            L => Ge,
            Ge => L,
            Le => G,
            G => Le,
            B => Ae,
            Ae => B,
            Be => A,
            A => Be,
            O => No,
            No => O,
        }
    }
    /// The condition with the operands swapped (`a < b` == `b > a`).
    pub(super) fn swap(self) -> Cond {
        use Cond::*;
        match self {
            L => G,
            G => L,
            Le => Ge,
            Ge => Le,
            B => A,
            A => B,
            Be => Ae,
            Ae => Be,
            c => c,
        }
    }
    /// The condition under which a comparison op is true.
    pub(super) fn of_cmp(opc: Opcode) -> Option<Cond> {
        use Opcode::*;
        Some(match opc {
            IntLt => Cond::L,
            IntLe => Cond::Le,
            IntGt => Cond::G,
            IntGe => Cond::Ge,
            IntEq | PtrEq | InstancePtrEq => Cond::E,
            IntNe | PtrNe | InstancePtrNe => Cond::Ne,
            UintLt => Cond::B,
            UintLe => Cond::Be,
            UintGt => Cond::A,
            UintGe => Cond::Ae,
            _ => return None,
        })
    }
}

impl Emitter {
    /// An emitter writing into `asm`, recording checker events into `events` (cleared).
    pub(super) fn new(asm: CodeBuf, mut events: Vec<Event>) -> Emitter {
        events.clear();
        Emitter {
            asm,
            events: RefCell::new(events),
            unwind: Vec::new(),
            unwind_on: false,
            cfa: 8,
        }
    }

    /// This emitter, recording unwind steps when `on`.
    pub(super) fn with_unwind(mut self, on: bool) -> Emitter {
        self.unwind_on = on;
        self
    }

    /// The code buffer, the events recorded and the unwind steps.
    pub(super) fn finish(self) -> (CodeBuf, Vec<Event>, Vec<(u32, Unwind)>) {
        (self.asm, self.events.into_inner(), self.unwind)
    }

    /// The instruction just emitted moved `rsp` down by `bytes` (up when negative).
    pub(super) fn sp_moved(&mut self, bytes: i32) {
        self.set_cfa(self.cfa.wrapping_add_signed(bytes));
    }

    /// From the end of the code emitted so far, the CFA is `rsp + cfa`.
    pub(super) fn set_cfa(&mut self, cfa: u32) {
        self.cfa = cfa;
        self.unwind_step(Unwind::Cfa(cfa));
    }

    /// Record `step` at the end of the code emitted so far.
    pub(super) fn unwind_step(&mut self, step: Unwind) {
        if self.unwind_on {
            self.unwind.push((self.asm.offset().0 as u32, step));
        }
    }

    /// Drop the events recorded so far (a bridge's entry: the checker starts after it).
    pub(super) fn forget_events(&mut self) {
        self.events.get_mut().clear();
    }

    /// The events recorded so far.
    pub(super) fn events(&self) -> std::cell::Ref<'_, Vec<Event>> {
        self.events.borrow()
    }

    // ------------------------------------------------------------------------------------
    // Checker events
    // ------------------------------------------------------------------------------------

    /// Record `e` for the checker (nothing unless [`CHECK`]).
    #[inline]
    pub(super) fn record(&self, e: Event) {
        if CHECK {
            self.events.borrow_mut().push(e);
        }
    }
    /// The op at `at` reads value `v` (an op index) from `loc`.
    #[inline]
    pub(super) fn record_use(&self, loc: Loc, v: usize, at: usize) {
        self.record(Event::Use {
            loc,
            val: Val::Op(v as u32),
            at: at as u32,
        });
    }
    /// At the op at `at`, `loc` must hold `val` (checked by the checker).
    #[inline]
    pub(super) fn expect(&self, loc: Loc, val: Val, at: usize) {
        self.record(Event::Expect {
            loc,
            val,
            at: at as u32,
        });
    }
    /// The instruction just emitted overwrote `regs`.
    pub(super) fn clobber(&self, regs: &[Reg]) {
        for &r in regs {
            self.record(Event::Clobber { reg: r.number() });
        }
    }

    // ------------------------------------------------------------------------------------
    // Hand-encoded instructions
    // ------------------------------------------------------------------------------------

    /// Pad the code to a multiple of `align` bytes: with one of the recommended multi-byte
    /// NOPs (Intel SDM, "NOP") when one is enough, else with a short jump over `int3`s.
    pub(super) fn align_with_nops(&mut self, align: usize) {
        const NOPS: [&[u8]; 9] = [
            &[0x90],
            &[0x66, 0x90],
            &[0x0f, 0x1f, 0x00],
            &[0x0f, 0x1f, 0x40, 0x00],
            &[0x0f, 0x1f, 0x44, 0x00, 0x00],
            &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
            &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
            &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
            &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        ];
        let mut pad = (align - self.asm.offset().0 % align) % align;
        if pad > NOPS.len() {
            // More than one NOP: `jmp rel8` over the padding (one taken jump instead of a
            // run of NOPs for code entering from above, e.g. a bridge entering a loop).
            self.asm.put(0xeb | ((pad - 2) as u128) << 8, 2);
            for _ in 2..pad {
                self.asm.put(0xcc, 1);
            }
            return;
        }
        while pad > 0 {
            let n = pad.min(NOPS.len());
            self.asm.extend(NOPS[n - 1]);
            pad -= n;
        }
    }

    /// `d <- [rbp + m]`. Frame words within 127 bytes of `rbp` (header, exit buffer, the
    /// first slots) take the 8-bit displacement form, 3 bytes shorter. Hand-encoded (see
    /// [`Emitter::frame_insn`]): the allocator's most frequent instructions.
    #[inline]
    pub(super) fn load_frame(&mut self, d: Reg, m: i32) {
        // mov r64, [rbp + m] (8B /r); movsd xmm, [rbp + m] (F2 0F 10 /r)
        self.frame_move(d, m, 0x8b, 0x10);
    }

    /// `[rbp + m] <- s`, with the short displacement form when it fits.
    #[inline]
    pub(super) fn store_frame(&mut self, m: i32, s: Reg) {
        // mov [rbp + m], r64 (89 /r); movsd [rbp + m], xmm (F2 0F 11 /r)
        self.frame_move(s, m, 0x89, 0x11);
    }

    /// A 64-bit move between register `r` and `[rbp + m]`: `mov` with opcode `gpr_op`
    /// (REX.W, REX.R for r8-r15) or `movsd` with `0F xmm_op` (F2, REX.R for xmm8-xmm15 only).
    fn frame_move(&mut self, r: Reg, m: i32, gpr_op: u8, xmm_op: u8) {
        if r.is_xmm() {
            let x = r.xmm();
            match x >= 8 {
                true => self.frame_insn(u32::from_le_bytes([0xf2, 0x44, 0x0f, xmm_op]), 4, x, m),
                false => self.frame_insn(u32::from_le_bytes([0xf2, 0x0f, xmm_op, 0]), 3, x, m),
            }
        } else {
            let n = r.number();
            self.frame_insn(u32::from_le_bytes([0x48 | (n >> 3) << 2, gpr_op, 0, 0]), 2, n, m);
        }
    }

    /// An instruction whose memory operand is `[rbp + m]`: the `head_len` bytes of `head`
    /// (prefixes, REX, opcode; little-endian), the ModRM byte for register field `reg` (its
    /// low 3 bits; REX.R is in `head`) with base `rbp` and an 8- or 32-bit displacement, then
    /// the displacement. One append instead of dynasm's push per byte; the encodings are the
    /// ones dynasm produced (the code bytes of the compile benchmark's traces are unchanged).
    #[inline]
    fn frame_insn(&mut self, head: u32, head_len: usize, reg: u8, m: i32) {
        let (modrm, len) = match i8::try_from(m) {
            Ok(d) => ((0x45 | (reg & 7) << 3) as u64 | (d as u8 as u64) << 8, 2),
            Err(_) => ((0x85 | (reg & 7) << 3) as u64 | (m as u32 as u64) << 8, 5),
        };
        self.asm
            .put(head as u128 | (modrm as u128) << (8 * head_len), head_len + len);
    }

    /// `mov d, s` between general-purpose registers (`REX.W 89 /r`), hand-encoded as
    /// dynasm encodes it (`encoding_tests`): after the frame moves, the most frequent
    /// instruction.
    #[inline]
    pub(super) fn mov_gpr(&mut self, d: Reg, s: Reg) {
        let (d, s) = (d.number(), s.number());
        let rex = 0x48 | (s >> 3) << 2 | d >> 3;
        let modrm = 0xc0 | (s & 7) << 3 | (d & 7);
        self.asm.put(u32::from_le_bytes([rex, 0x89, modrm, 0]) as u128, 3);
    }

    /// General-purpose register `d` <- the 64-bit constant `v`, in the shortest form:
    /// `mov r32, imm32` (`B8+r`, zero-extending) up to `u32::MAX`, `mov r64, simm32`
    /// (`REX.W C7 /0`) for small negative values, else `mov r64, imm64` (`REX.W B8+r`).
    /// Hand-encoded as dynasm encodes them (`encoding_tests`), but for the REX prefix dynasm
    /// puts on every `mov r32, imm32` with a register chosen at run time: here only when
    /// the register needs it.
    #[inline]
    pub(super) fn mov_gpr_imm(&mut self, d: Reg, v: u64) {
        let (lo, b) = (d.number() & 7, d.number() >> 3);
        if v <= u32::MAX as u64 {
            // An optional REX.B, then B8+r and the immediate.
            let (head, n) = if b != 0 {
                (0x41 | (0xb8 | lo as u32) << 8, 2)
            } else {
                (0xb8 | lo as u32, 1)
            };
            self.asm.put(head as u128 | (v as u128) << (8 * n), n + 4);
        } else if fits_i32(v as i64) {
            let head = u32::from_le_bytes([0x48 | b, 0xc7, 0xc0 | lo, 0]);
            self.asm.put(head as u128 | (v as u32 as u128) << 24, 7);
        } else {
            self.asm.put(
                u16::from_le_bytes([0x48 | b, 0xb8 | lo]) as u128 | (v as u128) << 16,
                10,
            );
        }
    }

    /// `[rbp + m] <- r`: [`Emitter::mov`] of a register into the frame, without its dispatch
    /// (spills, exit stubs).
    #[inline]
    pub(super) fn store(&mut self, m: i32, r: Reg) {
        self.record(Event::Move {
            dst: Loc::Mem(m),
            src: r.loc(),
        });
        self.store_frame(m, r);
    }

    /// `r11 <- v`, in the shortest form dynasm offers.
    pub(super) fn mov_imm_r11(&mut self, v: u64) {
        if fits_i32(v as i64) {
            dynasm!(self.asm ; .arch x64 ; mov r11, v as i64 as i32)
        } else {
            dynasm!(self.asm ; .arch x64 ; mov r11, QWORD v as i64)
        }
    }

    /// A jump (`opcode`, at most two bytes) with 32-bit displacement `rel`, in one append.
    pub(super) fn rel32_insn(&mut self, opcode: &[u8], rel: i32) {
        let (head, n) = match *opcode {
            [a] => (a as u128, 1),
            [a, b] => (a as u128 | (b as u128) << 8, 2),
            _ => unreachable!("jump opcodes are one or two bytes"),
        };
        self.asm.put(head | (rel as u32 as u128) << (8 * n), n + 4);
    }

    /// `jcc rel32` (`0F 80+cc`) with a zero displacement, to be patched; returns the code
    /// offset of the displacement.
    pub(super) fn jcc_rel32_to_patch(&mut self, c: Cond) -> u32 {
        let at = self.asm.offset().0 + 2;
        self.rel32_insn(&[0x0f, 0x80 | c.code()], 0);
        at as u32
    }

    /// `jmp rel32` (`E9`) with a zero displacement, to be patched; returns the code offset
    /// of the displacement.
    pub(super) fn jmp_rel32_to_patch(&mut self) -> u32 {
        let at = self.asm.offset().0 + 1;
        self.rel32_insn(&[0xe9], 0);
        at as u32
    }

    // ------------------------------------------------------------------------------------
    // Instructions assembled by dynasm
    // ------------------------------------------------------------------------------------

    /// `jcc` to a label.
    pub(super) fn jcc(&mut self, c: Cond, l: DynamicLabel) {
        match c {
            Cond::E => dynasm!(self.asm ; .arch x64 ; je =>l),
            Cond::Ne => dynasm!(self.asm ; .arch x64 ; jne =>l),
            Cond::L => dynasm!(self.asm ; .arch x64 ; jl =>l),
            Cond::Le => dynasm!(self.asm ; .arch x64 ; jle =>l),
            Cond::G => dynasm!(self.asm ; .arch x64 ; jg =>l),
            Cond::Ge => dynasm!(self.asm ; .arch x64 ; jge =>l),
            Cond::B => dynasm!(self.asm ; .arch x64 ; jb =>l),
            Cond::Be => dynasm!(self.asm ; .arch x64 ; jbe =>l),
            Cond::A => dynasm!(self.asm ; .arch x64 ; ja =>l),
            Cond::Ae => dynasm!(self.asm ; .arch x64 ; jae =>l),
            Cond::O => dynasm!(self.asm ; .arch x64 ; jo =>l),
            Cond::No => dynasm!(self.asm ; .arch x64 ; jno =>l),
        }
    }

    /// `r11b = cond`.
    pub(super) fn setcc_r11(&mut self, c: Cond) {
        match c {
            Cond::E => dynasm!(self.asm ; .arch x64 ; sete r11b),
            Cond::Ne => dynasm!(self.asm ; .arch x64 ; setne r11b),
            Cond::L => dynasm!(self.asm ; .arch x64 ; setl r11b),
            Cond::Le => dynasm!(self.asm ; .arch x64 ; setle r11b),
            Cond::G => dynasm!(self.asm ; .arch x64 ; setg r11b),
            Cond::Ge => dynasm!(self.asm ; .arch x64 ; setge r11b),
            Cond::B => dynasm!(self.asm ; .arch x64 ; setb r11b),
            Cond::Be => dynasm!(self.asm ; .arch x64 ; setbe r11b),
            Cond::A => dynasm!(self.asm ; .arch x64 ; seta r11b),
            Cond::Ae => dynasm!(self.asm ; .arch x64 ; setae r11b),
            Cond::O => dynasm!(self.asm ; .arch x64 ; seto r11b),
            Cond::No => dynasm!(self.asm ; .arch x64 ; setno r11b),
        }
    }

    /// `op dst, src` for a two-operand integer ALU instruction.
    pub(super) fn alu(&mut self, opc: Opcode, d: Reg, s: Opnd) {
        // Displacements and immediates that fit 8 bits take the short forms.
        macro_rules! alu {
            ($ins:ident) => {
                match s {
                    Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), Rq(s)),
                    Opnd::Mem(m) => match i8::try_from(m) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), QWORD [BYTE rbp + b]),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), QWORD [rbp + m]),
                    },
                    Opnd::Imm(i) => match i8::try_from(i) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), BYTE b),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; $ins Rq(d), i),
                    },
                }
            };
        }
        match opc {
            Opcode::IntAdd | Opcode::IntAddOvf => alu!(add),
            Opcode::IntSub | Opcode::IntSubOvf => alu!(sub),
            Opcode::IntAnd => alu!(and),
            Opcode::IntOr => alu!(or),
            Opcode::IntXor => alu!(xor),
            Opcode::IntMul | Opcode::IntMulOvf => match s {
                Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(s)),
                Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), QWORD [rbp + m]),
                Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; imul Rq(d), Rq(d), i),
            },
            _ => unreachable!("not an ALU op: {opc}"),
        }
    }

    /// `cmp a, b` where `a` is a register.
    pub(super) fn cmp(&mut self, a: Reg, b: Opnd) {
        match b {
            Opnd::Reg(s) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), Rq(s)),
            Opnd::Mem(m) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), QWORD [rbp + m]),
            Opnd::Imm(i) => dynasm!(self.asm ; .arch x64 ; cmp Rq(a), i),
        }
    }

    /// Load `size` bytes at `[base + disp]` into `d`, sign- or zero-extending.
    pub(super) fn load_mem(&mut self, d: Reg, base: Reg, disp: i32, size: u8, signed: bool) {
        if d.is_xmm() {
            dynasm!(self.asm ; .arch x64 ; movsd Rx(d.xmm()), QWORD [Rq(base) + disp]);
            return;
        }
        match (size, signed) {
            (1, true) => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), BYTE [Rq(base) + disp]),
            (1, false) => dynasm!(self.asm ; .arch x64 ; movzx Rq(d), BYTE [Rq(base) + disp]),
            (2, true) => dynasm!(self.asm ; .arch x64 ; movsx Rq(d), WORD [Rq(base) + disp]),
            (2, false) => dynasm!(self.asm ; .arch x64 ; movzx Rq(d), WORD [Rq(base) + disp]),
            (4, true) => dynasm!(self.asm ; .arch x64 ; movsxd Rq(d), DWORD [Rq(base) + disp]),
            (4, false) => dynasm!(self.asm ; .arch x64 ; mov Rd(d), DWORD [Rq(base) + disp]),
            _ => dynasm!(self.asm ; .arch x64 ; mov Rq(d), QWORD [Rq(base) + disp]),
        }
    }

    /// Store the low `size` bytes of `v` at `[base + disp]`.
    pub(super) fn store_mem(&mut self, base: Reg, disp: i32, v: Reg, size: u8) {
        if v.is_xmm() {
            dynasm!(self.asm ; .arch x64 ; movsd QWORD [Rq(base) + disp], Rx(v.xmm()));
            return;
        }
        match size {
            1 => dynasm!(self.asm ; .arch x64 ; mov BYTE [Rq(base) + disp], Rb(v)),
            2 => dynasm!(self.asm ; .arch x64 ; mov WORD [Rq(base) + disp], Rw(v)),
            4 => dynasm!(self.asm ; .arch x64 ; mov DWORD [Rq(base) + disp], Rd(v)),
            _ => dynasm!(self.asm ; .arch x64 ; mov QWORD [Rq(base) + disp], Rq(v)),
        }
    }

    /// Push one 8-byte stack argument (a float as its bits).
    pub(super) fn push_arg(&mut self, src: Loc) {
        match src {
            Loc::Reg(r) if Reg::new(r).is_xmm() => {
                let r = Reg::new(r);
                dynasm!(self.asm ; .arch x64 ; sub rsp, 8);
                self.sp_moved(8);
                dynasm!(self.asm ; .arch x64 ; movsd QWORD [rsp], Rx(r.xmm()));
                return;
            }
            Loc::Reg(r) => dynasm!(self.asm ; .arch x64 ; push Rq(r)),
            Loc::Mem(m) => dynasm!(self.asm ; .arch x64 ; push QWORD [rbp + m]),
            // `push imm32` sign-extends to 64 bits.
            Loc::Imm(v) if fits_i32(v as i64) => {
                let v = v as i64 as i32;
                dynasm!(self.asm ; .arch x64 ; push v)
            }
            Loc::Imm(v) => {
                self.mov_imm_r11(v);
                dynasm!(self.asm ; .arch x64 ; push r11)
            }
        }
        self.sp_moved(8);
    }
}

/// The displacement of a jump whose instruction ends at code offset `end` to offset `to`.
#[inline]
pub(super) fn rel32(end: usize, to: usize) -> R<i32> {
    i32::try_from(to as i64 - end as i64).map_err(|_| internal("jump out of 32-bit range".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code `f` emits, labels resolved.
    fn code(f: impl FnOnce(&mut Emitter)) -> Vec<u8> {
        let mut em = Emitter::new(CodeBuf::with_capacity(64, 4, 4), Vec::new());
        f(&mut em);
        em.finish().0.finalize().unwrap()
    }

    /// A jump (`jcc` with `c`, else `jmp`) assembled by dynasm after `before` bytes, to a
    /// label at the start of the code (`back`) or after `after` more bytes.
    fn dynasm_jump(c: Option<Cond>, before: usize, after: usize, back: bool) -> Vec<u8> {
        code(|em| {
            let start = em.asm.new_dynamic_label();
            dynasm!(em.asm ; .arch x64 ; =>start);
            em.asm.extend(vec![0x90; before]);
            let end = em.asm.new_dynamic_label();
            let l = if back { start } else { end };
            match c {
                Some(c) => em.jcc(c, l),
                None => dynasm!(em.asm ; .arch x64 ; jmp =>l),
            }
            em.asm.extend(vec![0x90; after]);
            dynasm!(em.asm ; .arch x64 ; =>end);
        })
    }

    /// The same jump hand-encoded, its displacement patched as the stub placement does.
    fn hand_jump(c: Option<Cond>, before: usize, after: usize, back: bool) -> Vec<u8> {
        let mut at = 0;
        let mut bytes = code(|em| {
            em.asm.extend(vec![0x90; before]);
            at = match c {
                Some(c) => em.jcc_rel32_to_patch(c),
                None => em.jmp_rel32_to_patch(),
            } as usize;
            em.asm.extend(vec![0x90; after]);
        });
        let target = if back { 0 } else { bytes.len() };
        let rel = rel32(at + 4, target).unwrap();
        bytes[at..at + 4].copy_from_slice(&rel.to_le_bytes());
        bytes
    }

    /// The hand-encoded `jcc rel32` and `jmp rel32`, patched, are the bytes dynasm
    /// assembles for a jump to a label there, for every condition, forwards and backwards.
    #[test]
    fn hand_encoded_rel32_jumps_are_dynasm_bytes() {
        use Cond::*;
        let conds = [E, Ne, L, Le, G, Ge, B, Be, A, Ae, O, No];
        for c in conds.into_iter().map(Some).chain([None]) {
            for (before, after) in [(0, 0), (0, 200), (300, 0), (5, 7)] {
                for back in [false, true] {
                    assert_eq!(
                        hand_jump(c, before, after, back),
                        dynasm_jump(c, before, after, back),
                        "{c:?} after {before} bytes, {after} bytes before the end, back: {back}"
                    );
                }
            }
        }
    }

    /// The bytes dynasm assembles in `f`.
    fn bytes(f: impl FnOnce(&mut dynasmrt::VecAssembler<dynasmrt::x64::X64Relocation>)) -> Vec<u8> {
        let mut a = dynasmrt::VecAssembler::new(0);
        f(&mut a);
        a.finalize().unwrap()
    }

    /// Byte stores from a dynamically chosen `rsi`/`rdi` need a REX prefix (without one the
    /// encoding names `dh`/`bh`): the backend relies on dynasm emitting it.
    #[test]
    fn byte_register_encodings_carry_rex() {
        use dynasmrt::{dynasm, DynasmApi};
        let (rsi, rbx) = (6u8, 3u8);
        assert_eq!(
            bytes(|a| dynasm!(a ; .arch x64 ; mov BYTE [Rq(rbx) + 1], Rb(rsi))),
            vec![0x40, 0x88, 0x74, 0x23, 0x01]
        );
        assert_eq!(
            bytes(|a| dynasm!(a ; .arch x64 ; movsx Rq(rsi), Rb(rsi))),
            vec![0x48, 0x0f, 0xbe, 0xf6]
        );
        assert_eq!(
            bytes(|a| dynasm!(a ; .arch x64 ; movzx Rq(rsi), r11b)),
            vec![0x49, 0x0f, 0xb6, 0xf3]
        );
        // shl rbx, cl / sar rbx, 5
        assert_eq!(
            bytes(|a| dynasm!(a ; .arch x64 ; shl Rq(rbx), cl)),
            vec![0x48, 0xd3, 0xe3]
        );
        assert_eq!(
            bytes(|a| dynasm!(a ; .arch x64 ; sar Rq(rbx), 5)),
            vec![0x48, 0xc1, 0xfb, 0x05]
        );
    }

    /// A condition's encoding and its negation differ in the lowest bit only (x86 pairs
    /// each condition with its opposite), and swapping the operands twice is the identity.
    #[test]
    fn conditions_pair_with_their_negations() {
        use Cond::*;
        for c in [E, Ne, L, Le, G, Ge, B, Be, A, Ae, O, No] {
            assert_eq!(c.negate().code(), c.code() ^ 1, "{c:?}");
            assert_eq!(c.negate().negate(), c);
            assert_eq!(c.swap().swap(), c);
        }
    }
}

#[cfg(all(test, feature = "disasm"))]
mod encoding_tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};

    /// The instructions in `bytes`, as Intel syntax text.
    fn decode(bytes: &[u8]) -> Vec<String> {
        let mut dec = Decoder::new(64, bytes, DecoderOptions::NONE);
        let mut fmt = IntelFormatter::new();
        let mut out = Vec::new();
        while dec.can_decode() {
            let ins = dec.decode();
            assert!(!ins.is_invalid(), "undecodable bytes {bytes:02x?}");
            let mut text = String::new();
            fmt.format(&ins, &mut text);
            out.push(text);
        }
        out
    }

    /// The hand-encoded register moves are the bytes dynasm assembles for them, and the
    /// constant loads decode to the instructions it assembles (one byte shorter for
    /// `mov r32, imm32` into the first eight registers), for every pair of general-purpose
    /// registers and constants at every boundary of the three forms.
    #[test]
    fn hand_encoded_register_moves_are_dynasm_bytes() {
        let mut g = Emitter::new(CodeBuf::with_capacity(64, 0, 0), Vec::new());
        for d in (0..16u8).map(Reg::new) {
            for s in (0..16u8).map(Reg::new) {
                g.mov_gpr(d, s);
                let hand = g.asm.take();
                dynasm!(g.asm ; .arch x64 ; mov Rq(d), Rq(s));
                assert_eq!(hand, g.asm.take(), "mov {d}, {s}");
            }
            let imms = [
                0u64,
                1,
                0x7f,
                0x80,
                0x7fff_ffff,
                0x8000_0000,
                u32::MAX as u64,
                1 << 32,
                -1i64 as u64,
                i32::MIN as i64 as u64,
                i32::MIN as i64 as u64 - 1,
                0x1234_5678_9abc_def0,
                u64::MAX - 0x8000_0000,
            ];
            for v in imms {
                g.mov_gpr_imm(d, v);
                let hand = g.asm.take();
                if v <= u32::MAX as u64 {
                    dynasm!(g.asm ; .arch x64 ; mov Rd(d), v as u32 as i32);
                } else if fits_i32(v as i64) {
                    dynasm!(g.asm ; .arch x64 ; mov Rq(d), v as i64 as i32);
                } else {
                    dynasm!(g.asm ; .arch x64 ; mov Rq(d), QWORD v as i64);
                }
                let reference = g.asm.take();
                // dynasm puts a REX prefix on every `mov r32, imm32` with a register chosen at
                // run time; the hand encoding only when the register needs one (r8d-r15d).
                let (h, r) = (decode(&hand), decode(&reference));
                assert_eq!(h.len(), 1, "{hand:02x?}");
                assert_eq!(h, r, "mov {d}, {v:#x}: {hand:02x?} vs {reference:02x?}");
                assert_eq!(
                    hand.len() + usize::from(v <= u32::MAX as u64 && d.number() < 8),
                    reference.len()
                );
            }
        }
    }

    /// The hand-encoded frame loads and stores decode to the instructions dynasm assembles
    /// for them, for every register and displacements on both sides of the 8-bit form.
    #[test]
    fn hand_encoded_frame_moves_decode_as_dynasm_assembles_them() {
        let mut g = Emitter::new(CodeBuf::with_capacity(64, 0, 0), Vec::new());
        for r in (0..32u8).filter(|&r| r != 4 && r != 5 && r != 11).map(Reg::new) {
            for m in [0, 8, -8, 120, 127, -128, 128, -129, 4096, 1 << 20, -(1 << 20)] {
                let _ = g.asm.take();
                g.load_frame(r, m);
                g.store_frame(m, r);
                let hand = g.asm.take();
                match (r.is_xmm(), i8::try_from(m)) {
                    (true, Ok(b)) => dynasm!(g.asm ; .arch x64
                        ; movsd Rx(r.xmm()), QWORD [BYTE rbp + b] ; movsd QWORD [BYTE rbp + b], Rx(r.xmm())),
                    (true, Err(_)) => dynasm!(g.asm ; .arch x64
                        ; movsd Rx(r.xmm()), QWORD [rbp + m] ; movsd QWORD [rbp + m], Rx(r.xmm())),
                    (false, Ok(b)) => dynasm!(g.asm ; .arch x64
                        ; mov Rq(r), QWORD [BYTE rbp + b] ; mov QWORD [BYTE rbp + b], Rq(r)),
                    (false, Err(_)) => dynasm!(g.asm ; .arch x64
                        ; mov Rq(r), QWORD [rbp + m] ; mov QWORD [rbp + m], Rq(r)),
                }
                let reference = g.asm.take();
                let (h, d) = (decode(&hand), decode(&reference));
                assert_eq!(h.len(), 2, "{hand:02x?}");
                assert_eq!(h, d, "register {r}, displacement {m}: {hand:02x?} vs {reference:02x?}");
                assert!(hand.len() <= reference.len());
            }
        }
    }

    /// The padding from every offset reaches the next 64-byte boundary: one `nop` of the
    /// recommended form for its length, or a `jmp` to the boundary over `int3`s.
    #[test]
    fn padding_is_one_nop_or_a_jump_to_the_boundary() {
        for start in 0..64usize {
            let mut em = Emitter::new(CodeBuf::with_capacity(128, 0, 0), Vec::new());
            em.asm.extend(vec![0xccu8; start]);
            em.align_with_nops(64);
            let bytes = em.asm.take();
            assert_eq!(bytes.len() % 64, 0);
            let pad = &bytes[start..];
            if pad.is_empty() {
                continue;
            }
            let mut dec = Decoder::with_ip(64, pad, start as u64, DecoderOptions::NONE);
            let first = dec.decode();
            match first.mnemonic() {
                iced_x86::Mnemonic::Nop => assert_eq!(first.len(), pad.len(), "padding from {start}: {pad:02x?}"),
                iced_x86::Mnemonic::Jmp => {
                    assert_eq!(first.near_branch_target(), bytes.len() as u64, "padding from {start}");
                    assert!(
                        pad[first.len()..].iter().all(|&b| b == 0xcc),
                        "padding from {start}: {pad:02x?}"
                    );
                }
                other => panic!("padding from {start}: {other:?} in {pad:02x?}"),
            }
        }
    }
}
