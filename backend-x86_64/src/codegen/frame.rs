//! The frame: the block of 64-bit words native code works in, and where each word is.
//!
//! # Frame
//! Native code keeps a pointer to a frame of 64-bit words (allocated by
//! [`crate::CompiledTrace::run`]) in `rbp`:
//!
//! ```text
//!  rbp + 0                    runtime context pointer (for allocation trampolines)
//!  rbp + 8                    parallel-move temporary
//!  rbp + 16 ...               exit buffer: `exit_len` words (fail arguments, virtual fields,
//!                             finish values)
//!  rbp + 16 + 8*exit_len ...  spill slots; slot i < num_inputs holds trace input i
//! ```

use super::*;

/// Frame words before the exit buffer.
pub(crate) const FRAME_HEADER: usize = 2;
pub(super) const TEMP_DISP: i32 = 8;

impl Gen<'_> {
    pub(super) fn exit_disp(&self, i: usize) -> i32 {
        (8 * (FRAME_HEADER + i)) as i32
    }
    pub(super) fn slot_disp(&self, s: u32) -> i32 {
        (8 * (FRAME_HEADER + self.exit_len + s as usize)) as i32
    }
    pub(super) fn new_slot(&mut self) -> u32 {
        let s = self.nslots;
        self.nslots += 1;
        self.slot_valid.push(false);
        s
    }
}
