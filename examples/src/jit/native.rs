//! Native execution of loops: traces compiled to x86-64 by `backend_x86_64`, running on the
//! interpreter's heap, with the interpreter's arena as the backend's [`Runtime`].

use crate::jit::exec::{LoopCode, LoopExit};
use crate::lang::heap::Heap;
use crate::lang::vm::{Compiler, LogFlags};
use backend_x86_64::{CompileOptions, CompiledTrace, Exit, Runtime};
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

/// A loop compiled to machine code.
pub struct NativeLoop {
    code: CompiledTrace,
}

impl LoopCode for NativeLoop {
    fn run(&mut self, inputs: &[u64], heap: &mut Heap) -> Result<LoopExit, String> {
        // SAFETY: the loop was recorded by this interpreter: its references are objects of
        // `heap` laid out as the recorded descriptors say, and it calls no function.
        match unsafe { self.code.run(inputs, heap) }.map_err(|e| e.to_string())? {
            Exit::Guard {
                guard,
                resume_key,
                values,
            } => Ok(LoopExit {
                guard,
                resume_key,
                values: values.iter().map(|v| v.bits()).collect(),
            }),
            Exit::Finish { .. } => Err("the loop finished instead of leaving through a guard".into()),
            Exit::Invalid { op } => Err(format!("invalid operation at {op}")),
            #[allow(unreachable_patterns)]
            other => Err(format!("unexpected exit {other:?}")),
        }
    }

    fn supports_bridges(&self) -> bool {
        true
    }

    fn guard_failures(&self, guard: GuardId) -> Option<u64> {
        self.code.guard_failures(guard)
    }

    fn attach_bridge(&mut self, guard: GuardId, bridge: &Trace) -> Result<(), String> {
        self.code
            .attach_bridge(guard, bridge, &CompileOptions::default())
            .map_err(|e| e.to_string())
    }
}

/// The backend with one compilation context for all of a run's traces.
#[derive(Default)]
struct NativeCompiler {
    backend: backend_x86_64::Compiler,
}

impl Compiler for NativeCompiler {
    fn compile(&mut self, trace: Trace, log: &LogFlags) -> Result<Box<dyn LoopCode>, String> {
        let opts = CompileOptions {
            log_asm: log.asm,
            ..CompileOptions::from_env()
        };
        let code = self.backend.compile(&trace, &opts).map_err(|e| e.to_string())?;
        Ok(Box::new(NativeLoop { code }))
    }
}

/// The compiler producing native code.
pub fn native_compiler() -> Box<dyn Compiler> {
    Box::new(NativeCompiler::default())
}
