//! What a run produces: the program's output, counters, per-trace statistics, runtime errors.

use crate::lang::parser::Pos;
use driver::{DriverStats, TraceReport};
use std::fmt;
use std::time::Duration;
use trace_ir::{OpFlags, Opcode, Trace};

/// A runtime error of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runtime error at {}: {}", self.pos, self.message)
    }
}

impl std::error::Error for RuntimeError {}

/// What happened to one compiled loop trace.
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    /// Source line of the loop.
    pub line: u32,
    /// Ops of the recorded trace (not counting inputs and label parameters).
    pub ops_recorded: usize,
    /// Ops after optimization (equal to `ops_recorded` when not optimized).
    pub ops_final: usize,
    /// Guards of the recorded trace.
    pub guards_recorded: usize,
    /// Guards after optimization.
    pub guards_final: usize,
    /// Allocations of the recorded trace.
    pub allocs_recorded: usize,
    /// Allocations after optimization.
    pub allocs_final: usize,
    /// Allocations the optimizer removed (stayed virtual).
    pub virtuals_removed: usize,
    /// Time spent in the optimizer.
    pub optimize_time: Duration,
    /// Time spent compiling (backend or runner setup).
    pub compile_time: Duration,
    /// The trace as recorded.
    pub recorded: Trace,
    /// The trace that was compiled (the optimized one in [`Mode::JitOptimized`](super::Mode::JitOptimized)).
    pub compiled: Trace,
}

/// The ops of `t` whose opcode satisfies `f`.
fn count_ops(t: &Trace, f: impl Fn(Opcode) -> bool) -> usize {
    t.ops.iter().filter(|o| f(o.opcode)).count()
}

impl TraceStats {
    /// The statistics of the loop at `line` from the driver's report.
    pub fn new(line: u32, r: TraceReport<usize>) -> TraceStats {
        let guards = |t: &Trace| count_ops(t, |o| o.is_guard());
        let allocs = |t: &Trace| count_ops(t, |o| o.has(OpFlags::ALLOC));
        TraceStats {
            line,
            ops_recorded: r.recorded.num_real_ops(),
            ops_final: r.compiled.num_real_ops(),
            guards_recorded: guards(&r.recorded),
            guards_final: guards(&r.compiled),
            allocs_recorded: allocs(&r.recorded),
            allocs_final: allocs(&r.compiled),
            virtuals_removed: r.optimizer.map_or(0, |s| s.virtuals_removed),
            optimize_time: r.optimize_time,
            compile_time: r.compile_time,
            recorded: r.recorded,
            compiled: r.compiled,
        }
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Every loop trace compiled, in order.
    pub traces: Vec<TraceStats>,
    /// The JIT driver's counters: loops, bridges, aborted recordings, retraces, entries
    /// into compiled code, exits (all, and after warm-up), compile times.
    pub driver: DriverStats,
    /// Loop headers the interpreter passed (in interpreter mode: the iterations of all
    /// loops; compiled code passes headers without the interpreter).
    pub header_passes: u64,
    /// Objects allocated (by the interpreter, compiled code and exits).
    pub allocations: u64,
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// What the program printed.
    pub output: String,
    /// Counters.
    pub stats: RunStats,
}
