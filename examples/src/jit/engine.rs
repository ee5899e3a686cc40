//! The engines that run the interpreter's loops (`Config::engine`): native code from
//! `backend_x86_64`, or the [`TraceRunner`] on the same heap; and the heap as the backend's
//! `Runtime`.

use super::runner::TraceRunner;
use crate::lang::heap::Heap;
use backend_x86_64::{CompiledTrace, Runtime};
use driver::{EngineError, Exit, Native};
use trace_ir::{GuardId, Trace};

/// The arena is the allocator of native code: `new_with_vtable` in a trace and the rebuilding
/// of virtual objects at an exit both allocate here (the backend writes class and length
/// words itself).
impl Runtime for Heap {
    fn alloc(&mut self, size: u64, _class: u64) -> u64 {
        Heap::alloc(self, size as usize)
    }
    fn alloc_array(&mut self, size: u64, _len: u64) -> u64 {
        Heap::alloc(self, size as usize)
    }
}

/// The driver's engine in the example interpreter.
pub enum Executor {
    /// Loops run in the [`TraceRunner`] (no bridges).
    Runner,
    /// Loops and bridges compiled to x86-64.
    Native(Box<Native>),
}

/// A loop compiled by an [`Executor`].
pub enum LoopCode {
    /// For the trace runner.
    Runner(Box<TraceRunner>),
    /// Machine code.
    Native(Box<CompiledTrace>),
}

impl driver::Engine for Executor {
    type Code = LoopCode;
    type Runtime = Heap;

    fn compile(&mut self, trace: &Trace) -> Result<LoopCode, EngineError> {
        match self {
            Executor::Runner => Ok(LoopCode::Runner(Box::new(TraceRunner::new(trace.clone())))),
            Executor::Native(n) => Ok(LoopCode::Native(Box::new(n.compile(trace)?))),
        }
    }

    fn supports_bridges(&self) -> bool {
        matches!(self, Executor::Native(_))
    }

    fn attach_bridge(&mut self, code: &mut LoopCode, guard: GuardId, bridge: &Trace) -> Result<(), EngineError> {
        match (self, code) {
            (Executor::Native(n), LoopCode::Native(c)) => n.attach_bridge(c, guard, bridge),
            _ => Err(format!("the trace runner attaches no bridges (to {guard})").into()),
        }
    }

    fn guard_failures(&self, code: &LoopCode, guard: GuardId) -> Option<u64> {
        match (self, code) {
            (Executor::Native(n), LoopCode::Native(c)) => n.guard_failures(c, guard),
            _ => None,
        }
    }

    /// # Safety
    /// The loop was recorded by this interpreter: its references are objects of `heap` laid
    /// out as the recorded descriptors say, and it calls only `recorder::sqrt_f64`.
    unsafe fn run(&mut self, code: &mut LoopCode, inputs: &[u64], heap: &mut Heap) -> Result<Exit, EngineError> {
        match (self, code) {
            (Executor::Runner, LoopCode::Runner(r)) => Ok(r.run(inputs, heap)?),
            // SAFETY: this function's contract.
            (Executor::Native(n), LoopCode::Native(c)) => unsafe { n.run(c, inputs, heap) },
            _ => Err("code of another engine".into()),
        }
    }
}
