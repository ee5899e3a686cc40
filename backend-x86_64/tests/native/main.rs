//! The backend's tests against the reference interpreter, by topic (each file opens with what it covers). The shared
//! helpers below compile and run traces and compare native exits with the reference
//! interpreter's outcomes.

// dynasm's expansion converts dynamic register numbers with `.into()`, even from `u8`.
#![allow(clippy::useless_conversion)]

mod api;
mod bridges;
mod calls;
mod exits;
mod heap;
mod hooks;
mod loops;
mod ops;
mod random;
mod selection;

use backend_x86_64::*;
use proptest::prelude::*;
use trace_interp::native::exit_outcome;
use trace_interp::random::{random_trace, RandomConfig, SPECIAL_INTS};
use trace_interp::{self as interp, Outcome, RtValue, RunConfig};
use trace_ir::descr::{Descr, FieldDescr};
use trace_ir::eval::eval_pure;
use trace_ir::{Kind, Opcode, Trace, TraceBuilder};

fn opts() -> CompileOptions {
    CompileOptions::default()
}
fn tight() -> CompileOptions {
    CompileOptions {
        memory: MemoryAccess::Direct,
        int_regs: 3,
        float_regs: 2,
        log_asm: false,
        perf_map: false,
        gdb_jit: false,
        jitdump: None,
    }
}

/// Running compiled code in these tests.
trait RunTest {
    /// [`CompiledTrace::run`], for the traces of these tests.
    fn run_test(&self, inputs: &[u64], rt: &mut dyn Runtime) -> Result<Exit, RunError>;
}

impl RunTest for CompiledTrace {
    fn run_test(&self, inputs: &[u64], rt: &mut dyn Runtime) -> Result<Exit, RunError> {
        // SAFETY: the traces of these tests keep the run's contract: in Direct mode they
        // read and write only objects they allocate, buffers the test owns for the whole
        // run (reference inputs, raw addresses), and call `extern "sysv64"` functions of
        // the test with the signatures of their call descriptors; in Hooks mode every
        // access and call goes to the runtime the test passes, whose `exec` serves it from
        // the interpreter's model or from those same buffers.
        unsafe { self.run(inputs, rt) }
    }
}

/// Integer exit values.
fn ints(v: &[i64]) -> Vec<ExitValue> {
    v.iter().map(|&i| ExitValue::Int(i)).collect()
}

fn run_native(t: &Trace, inputs: &[u64], o: &CompileOptions) -> Exit {
    let c = compile(t, o).unwrap_or_else(|e| panic!("compile failed: {e}\n{}", trace_ir::text::print_trace(t)));
    c.run_test(inputs, &mut SimpleHeap::new()).unwrap()
}

/// Native exit vs interpreter outcome, for traces without references in their exits.
fn same(t: &Trace, native: &Exit, int: &Outcome) -> Result<(), String> {
    let bits = |v: &[RtValue]| {
        v.iter()
            .map(|x| ExitValue::from_bits(x.kind(), x.bits()))
            .collect::<Vec<_>>()
    };
    let ok = match (native, int) {
        (Exit::Finish { values }, Outcome::Finish(w)) => *values == bits(w),
        (
            Exit::Guard {
                guard,
                resume_key,
                values,
            },
            Outcome::GuardFailed {
                guard: g,
                resume_key: k,
                values: w,
            },
        ) => guard == g && resume_key == k && *values == bits(w),
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => true,
        (Exit::ExternalJump { target, values }, Outcome::ExternalJump { target: t, values: w }) => {
            target == t && *values == bits(w)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "native {native:?} vs interpreter {int}\n{}",
            trace_ir::text::print_trace(t)
        ))
    }
}

/// A signed 8-byte integer field at `offset`, named after it.
fn int_field(b: &mut TraceBuilder, offset: i64) -> trace_ir::DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: format!("f{offset}").into(),
        offset,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }))
}
