//! The frame: the block of 64-bit words native code works in, and where each word is.
//!
//! Native code keeps a pointer to a frame of 64-bit words (allocated by
//! [`crate::CompiledTrace::run`]) in `rbp`:
//!
//! ```text
//!  rbp + 0                    runtime context pointer (for allocation trampolines)
//!  rbp + 8                    parallel-move temporary
//!  rbp + 16 ...               exit buffer: `exit_len` words (fail arguments, virtual fields,
//!                             finish values)
//!  rbp + 16 + 8*exit_len ...  spill slots; slot i < num_inputs holds trace input i
//!  ...                        each bridge's exit buffer and spill slots, after the words
//!                             of the traces compiled before it
//! ```
//!
//! A bridge runs in the frame of its tree's root: its words come after every word of the
//! loop and of the bridges attached before it (its layout's `exit_at`), so the words a
//! guard left its exit values in, and the slots of the loop a bridge jumps back to, are
//! never overwritten by another trace's code.
//!
//! The compiled function (`extern "sysv64" fn(frame: *mut u64) -> u64`, the exit code)
//! saves `rbp` and the callee-saved registers the allocator uses, keeps `rsp` 16-byte
//! aligned for calls, and returns the exit code in `eax` through one epilogue.
//!
//! `rbp` is the frame pointer of the trace's frame, not of the machine stack, so a
//! debugger needs call frame information to unwind through compiled code: when asked
//! (`CompileOptions::gdb_jit`), the emitter records an [`Unwind`] step after each
//! instruction that moves `rsp` or saves a register
//! (the prologue's pushes, the pushes of stack arguments around a call, the epilogue's
//! pops), and `debuginfo` turns them into DWARF CFI. In the body, between calls, the
//! caller's stack pointer (the CFA) is `rsp + BODY_CFA`.

use super::emit::Emitter;
use dynasmrt::{dynasm, DynasmApi};

/// Frame words before the exit buffer.
pub(crate) const FRAME_HEADER: usize = 2;
/// The displacement of the parallel-move temporary.
pub(super) const TEMP_DISP: i32 = 8;

/// Where the words of a trace's frame are: the exit buffer's place and size fix where the
/// spill slots start.
#[derive(Copy, Clone, Debug)]
pub(super) struct FrameLayout {
    /// The frame word the exit buffer starts at ([`FRAME_HEADER`] for a root trace).
    pub(super) exit_at: usize,
    /// Words in the exit buffer.
    pub(super) exit_len: usize,
}

impl Default for FrameLayout {
    /// A root trace's layout with an empty exit buffer.
    fn default() -> FrameLayout {
        FrameLayout {
            exit_at: FRAME_HEADER,
            exit_len: 0,
        }
    }
}

impl FrameLayout {
    /// The displacement of exit-buffer word `i`.
    #[inline]
    pub(super) fn exit_disp(self, i: usize) -> i32 {
        (8 * (self.exit_at + i)) as i32
    }

    /// The frame word of exit-buffer word `i`.
    #[inline]
    pub(super) fn exit_word(self, i: usize) -> usize {
        self.exit_at + i
    }

    /// The frame word of spill slot `s`.
    #[inline]
    pub(super) fn slot_word(self, s: u32) -> usize {
        self.exit_at + self.exit_len + s as usize
    }

    /// The displacement of spill slot `s`.
    #[inline]
    pub(super) fn slot_disp(self, s: u32) -> i32 {
        (8 * self.slot_word(s)) as i32
    }

    /// The frame's size in words with `nslots` spill slots.
    pub(super) fn words(self, nslots: u32) -> usize {
        self.slot_word(nslots)
    }
}

/// A change of how to unwind compiled code, from the end of the instruction it follows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unwind {
    /// The caller's stack pointer (the CFA) is `rsp + n`.
    Cfa(u32),
    /// The caller's value of the register with this DWARF number is saved at `CFA - n`.
    Saved(u16, u32),
}

/// The CFA's distance from `rsp` in the body: the return address, six saved registers and
/// the alignment word.
pub(crate) const BODY_CFA: u32 = 64;

/// The registers the prologue saves, in push order, with their DWARF numbers (x86-64
/// psABI: rbx 3, rbp 6, r12..r15 12..15).
const SAVED: [(u16, u32); 6] = [(6, 16), (3, 24), (12, 32), (13, 40), (14, 48), (15, 56)];

impl Emitter {
    /// Save the callee-saved registers, align the stack, frame base in `rbp` (from `rdi`).
    pub(super) fn prologue(&mut self) {
        dynasm!(self.asm ; .arch x64 ; push rbp);
        self.saved(0);
        dynasm!(self.asm ; .arch x64 ; push rbx);
        self.saved(1);
        dynasm!(self.asm ; .arch x64 ; push r12);
        self.saved(2);
        dynasm!(self.asm ; .arch x64 ; push r13);
        self.saved(3);
        dynasm!(self.asm ; .arch x64 ; push r14);
        self.saved(4);
        dynasm!(self.asm ; .arch x64 ; push r15);
        self.saved(5);
        dynasm!(self.asm ; .arch x64 ; sub rsp, 8);
        self.sp_moved(8);
        dynasm!(self.asm ; .arch x64 ; mov rbp, rdi);
    }

    /// The unwind state of code entered with the prologue already run (a bridge): the body's
    /// CFA and every saved register.
    pub(super) fn body_unwind_state(&mut self) {
        self.set_cfa(BODY_CFA);
        for (reg, at) in SAVED {
            self.unwind_step(Unwind::Saved(reg, at));
        }
    }

    /// After the prologue's push number `k`: the CFA moved and register `k` is saved.
    fn saved(&mut self, k: usize) {
        self.sp_moved(8);
        let (reg, at) = SAVED[k];
        self.unwind_step(Unwind::Saved(reg, at));
    }

    /// Undo the prologue and return (the exit code is in `eax`). The code after the `ret`
    /// (exit stubs) runs in the body's frame again.
    pub(super) fn epilogue(&mut self) {
        dynasm!(self.asm ; .arch x64 ; add rsp, 8);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop r15);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop r14);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop r13);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop r12);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop rbx);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; pop rbp);
        self.sp_moved(-8);
        dynasm!(self.asm ; .arch x64 ; ret);
        self.set_cfa(BODY_CFA);
    }
}
