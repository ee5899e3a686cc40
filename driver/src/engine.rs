//! How a driver runs compiled code: the [`Engine`] trait, and [`Native`], x86-64 code from
//! `backend_x86_64`.

use backend_x86_64::{CompileOptions, CompiledTrace, Compiler, Exit, Runtime};
use trace_ir::{GuardId, Trace};

/// An engine's error: why it could not compile, attach or run (shown to the embedder).
pub type EngineError = Box<dyn std::error::Error + Send + Sync>;

/// What turns the driver's traces into code and runs it.
///
/// The driver optimizes, keeps the traces and decides when to record; the engine only
/// compiles, attaches bridges, runs and (when it can) counts guard failures. [`Native`] is
/// the engine of the library; an embedder may bring its own (a trace interpreter working on
/// its memory, for instance, to check its recorder without the backend).
///
/// Invariants the driver keeps: `attach_bridge` is only called when
/// [`Engine::supports_bridges`], with code this engine compiled and a guard of one of its
/// traces (the loop or a bridge attached before); `run` is only given code this engine
/// compiled, with one word per input of the loop trace.
pub trait Engine {
    /// A compiled loop with its bridges.
    type Code;
    /// What the code needs from the embedder while it runs (its memory, its allocator).
    type Runtime: ?Sized;

    /// Compile the loop `trace` (optimized or not).
    fn compile(&mut self, trace: &Trace) -> Result<Self::Code, EngineError>;

    /// Whether [`Engine::attach_bridge`] works. An engine without bridges gets its loops
    /// recorded again when a guard fails too often ([`crate::DriverConfig::retrace_after`]).
    fn supports_bridges(&self) -> bool {
        false
    }

    /// Attach `bridge` to `guard` of `code`: from then on the guard's failures go on in the
    /// bridge.
    fn attach_bridge(&mut self, code: &mut Self::Code, guard: GuardId, bridge: &Trace) -> Result<(), EngineError> {
        let _ = (code, bridge);
        Err(format!("this engine attaches no bridges (to {guard})").into())
    }

    /// How often `guard` of `code` has failed, when the engine counts it (the driver records
    /// a bridge from a guard that failed [`crate::DriverConfig::hot_guard`] times).
    fn guard_failures(&self, code: &Self::Code, guard: GuardId) -> Option<u64> {
        let _ = (code, guard);
        None
    }

    /// Run `code` on `inputs` until it leaves.
    ///
    /// # Safety
    /// The engine's contract for running its code on `rt` (for [`Native`], that of
    /// [`CompiledTrace::run`]).
    unsafe fn run(
        &mut self,
        code: &mut Self::Code,
        inputs: &[u64],
        rt: &mut Self::Runtime,
    ) -> Result<Exit, EngineError>;
}

/// x86-64 code from `backend_x86_64`, with bridges and guard-failure counters; one
/// compilation context for all traces.
#[derive(Default)]
pub struct Native {
    compiler: Compiler,
    options: CompileOptions,
}

impl Native {
    /// An engine compiling loops and bridges with `options`.
    pub fn new(options: CompileOptions) -> Native {
        Native {
            compiler: Compiler::new(),
            options,
        }
    }
}

impl Engine for Native {
    type Code = CompiledTrace;
    type Runtime = dyn Runtime + 'static;

    fn compile(&mut self, trace: &Trace) -> Result<CompiledTrace, EngineError> {
        Ok(self.compiler.compile(trace, &self.options)?)
    }

    fn supports_bridges(&self) -> bool {
        true
    }

    fn attach_bridge(&mut self, code: &mut CompiledTrace, guard: GuardId, bridge: &Trace) -> Result<(), EngineError> {
        Ok(self.compiler.attach_bridge(code, guard, bridge, &self.options)?)
    }

    fn guard_failures(&self, code: &CompiledTrace, guard: GuardId) -> Option<u64> {
        code.guard_failures(guard)
    }

    unsafe fn run(
        &mut self,
        code: &mut CompiledTrace,
        inputs: &[u64],
        rt: &mut (dyn Runtime + 'static),
    ) -> Result<Exit, EngineError> {
        // SAFETY: this function's contract is the run's.
        Ok(unsafe { code.run(inputs, rt) }?)
    }
}
