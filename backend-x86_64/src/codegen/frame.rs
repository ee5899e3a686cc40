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

impl Emitter {
    /// Save the callee-saved registers, align the stack, frame base in `rbp` (from `rdi`).
    pub(super) fn prologue(&mut self) {
        dynasm!(self.asm
            ; .arch x64
            ; push rbp ; push rbx ; push r12 ; push r13 ; push r14 ; push r15
            ; sub rsp, 8
            ; mov rbp, rdi
        );
    }

    /// Undo the prologue and return (the exit code is in `eax`).
    pub(super) fn epilogue(&mut self) {
        dynasm!(self.asm
            ; .arch x64
            ; add rsp, 8
            ; pop r15 ; pop r14 ; pop r13 ; pop r12 ; pop rbx ; pop rbp
            ; ret
        );
    }
}
