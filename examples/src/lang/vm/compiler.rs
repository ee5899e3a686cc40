//! The pluggable compiler that turns recorded traces into runnable loops, and the one per engine.

use super::config::{Engine, LogFlags};
use crate::jit::exec::{LoopCode, TraceRunner};
use trace_ir::Trace;

/// Compiles recorded traces into runnable loops: the pluggable part of the embedding.
pub trait Compiler {
    /// Turn `trace` (already optimized or not) into a runnable loop.
    fn compile(&mut self, trace: Trace, log: &LogFlags) -> Result<Box<dyn LoopCode>, String>;
}

struct RunnerCompiler;

impl Compiler for RunnerCompiler {
    fn compile(&mut self, trace: Trace, _log: &LogFlags) -> Result<Box<dyn LoopCode>, String> {
        Ok(Box::new(TraceRunner::new(trace)))
    }
}

/// The compiler for `engine`.
pub fn compiler_for(engine: Engine) -> Box<dyn Compiler> {
    match engine {
        Engine::TraceRunner => Box::new(RunnerCompiler),
        Engine::Native => crate::jit::native::native_compiler(),
    }
}
