//! Moves between locations: one move of any kind, and parallel moves (label entry, the
//! loop's back edge, call arguments).

use super::emit::{fits_i32, Emitter};
use super::frame::TEMP_DISP;
use super::regs::{Reg, R11};
use crate::checker::Event;
use crate::pmove::{sequentialize_into, Loc};
use dynasmrt::{dynasm, DynasmApi};

/// Whether [`Emitter::mov`] of `src` into `dst` goes through the scratch register `r11`:
/// frame to frame, a 64-bit immediate into a slot, a non-zero immediate into an XMM
/// register. (Kept beside `mov`'s cases: a parallel move breaks cycles through `r11` only
/// when no move of its set uses it.)
fn mov_uses_r11(dst: Loc, src: Loc) -> bool {
    match (dst, src) {
        (Loc::Mem(_), Loc::Mem(_)) => true,
        (Loc::Mem(_), Loc::Imm(v)) => !fits_i32(v as i64),
        (Loc::Reg(r), Loc::Imm(v)) => Reg::new(r).is_xmm() && v != 0,
        _ => false,
    }
}

impl Emitter {
    /// One move between any two locations (`Mem <- Mem` goes through `r11`, see
    /// [`mov_uses_r11`]). Never changes the flags (a fused guard may follow).
    pub(super) fn mov(&mut self, dst: Loc, src: Loc) {
        self.record(Event::Move { dst, src });
        let reg = Reg::new;
        match (dst, src) {
            _ if dst == src => {}
            (Loc::Reg(d), Loc::Reg(s)) => match (reg(d).is_xmm(), reg(s).is_xmm()) {
                (false, false) => self.mov_gpr(reg(d), reg(s)),
                (true, true) => dynasm!(self.asm ; .arch x64 ; movaps Rx(reg(d).xmm()), Rx(reg(s).xmm())),
                (true, false) => dynasm!(self.asm ; .arch x64 ; movq Rx(reg(d).xmm()), Rq(s)),
                (false, true) => dynasm!(self.asm ; .arch x64 ; movq Rq(d), Rx(reg(s).xmm())),
            },
            (Loc::Reg(d), Loc::Mem(m)) => self.load_frame(reg(d), m),
            (Loc::Reg(d), Loc::Imm(v)) => {
                let d = reg(d);
                if d.is_xmm() {
                    if v == 0 {
                        dynasm!(self.asm ; .arch x64 ; xorps Rx(d.xmm()), Rx(d.xmm()))
                    } else {
                        self.mov_imm_r11(v);
                        dynasm!(self.asm ; .arch x64 ; movq Rx(d.xmm()), r11)
                    }
                } else {
                    // Zero too: not `xor`, moves must not disturb the flags (fused guards).
                    self.mov_gpr_imm(d, v)
                }
            }
            (Loc::Mem(m), Loc::Reg(s)) => self.store_frame(m, reg(s)),
            (Loc::Mem(m), Loc::Mem(s)) => match (i8::try_from(s), i8::try_from(m)) {
                (Ok(s), Ok(m)) => dynasm!(self.asm ; .arch x64 ; mov r11, [BYTE rbp + s] ; mov [BYTE rbp + m], r11),
                (Ok(s), Err(_)) => dynasm!(self.asm ; .arch x64 ; mov r11, [BYTE rbp + s] ; mov [rbp + m], r11),
                (Err(_), Ok(m)) => dynasm!(self.asm ; .arch x64 ; mov r11, [rbp + s] ; mov [BYTE rbp + m], r11),
                (Err(_), Err(_)) => dynasm!(self.asm ; .arch x64 ; mov r11, [rbp + s] ; mov [rbp + m], r11),
            },
            (Loc::Mem(m), Loc::Imm(v)) => {
                if fits_i32(v as i64) {
                    let v = v as i64 as i32;
                    match i8::try_from(m) {
                        Ok(b) => dynasm!(self.asm ; .arch x64 ; mov QWORD [BYTE rbp + b], v),
                        Err(_) => dynasm!(self.asm ; .arch x64 ; mov QWORD [rbp + m], v),
                    }
                } else {
                    self.mov_imm_r11(v);
                    self.store_frame(m, R11);
                }
            }
            (Loc::Imm(_), _) => unreachable!("move into an immediate"),
        }
    }
}

/// Parallel moves, with their working memory (reused across moves and traces).
#[derive(Default)]
pub(super) struct ParallelMoves {
    /// The moves not emitted yet (see [`sequentialize_into`]).
    pending: Vec<(Loc, Loc)>,
    /// The sequence of single moves.
    seq: Vec<(Loc, Loc)>,
}

impl ParallelMoves {
    /// Perform `moves` (`(dst, src)`) as if simultaneously. A cycle is broken through the
    /// scratch register `r11` unless one of the moves needs `r11` itself (frame to frame,
    /// a 64-bit immediate into a slot or an XMM register), then through the frame's
    /// parallel-move temporary.
    pub(super) fn emit(&mut self, em: &mut Emitter, moves: &[(Loc, Loc)]) {
        let temp = if moves.iter().any(|&(d, s)| mov_uses_r11(d, s)) {
            Loc::Mem(TEMP_DISP)
        } else {
            R11.loc()
        };
        self.seq.clear();
        sequentialize_into(moves, temp, &mut self.pending, &mut self.seq);
        for &(d, s) in &self.seq {
            em.mov(d, s);
        }
    }
}
