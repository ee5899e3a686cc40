//! Native execution of loops through `backend_x86_64` (not available yet: the backend's
//! `compile` has not landed; [`native_compiler`] reports that at compile time).

use crate::lang::vm::{Compiler, LogFlags};
use crate::jit::exec::LoopCode;
use trace_ir::Trace;

struct Unavailable;

impl Compiler for Unavailable {
    fn compile(&mut self, _trace: Trace, _log: &LogFlags) -> Result<Box<dyn LoopCode>, String> {
        Err("the x86-64 backend is not available yet".into())
    }
}

/// The compiler producing native code.
pub fn native_compiler() -> Box<dyn Compiler> {
    Box::new(Unavailable)
}
