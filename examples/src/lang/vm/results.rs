//! What a run produces: the program's output, counters, per-trace statistics, runtime errors.

use crate::lang::parser::Pos;
use std::fmt;
use std::time::Duration;
use trace_ir::Trace;

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

/// What happened to one compiled trace.
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

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Every trace compiled, in order.
    pub traces: Vec<TraceStats>,
    /// Abandoned recordings.
    pub aborts: u32,
    /// Entries into compiled code.
    pub entries: u64,
    /// Guard failures (exits from compiled code).
    pub guard_failures: u64,
    /// Loops recorded again because a guard failed too often.
    pub retraces: u32,
    /// Loop headers the interpreter passed (in interpreter mode: the iterations of all
    /// loops; compiled code passes headers without the interpreter).
    pub header_passes: u64,
    /// Bridges compiled and attached.
    pub bridges: u32,
    /// Guard failures (exits to the interpreter) since the last trace or bridge was
    /// compiled: the exits of the warmed-up program.
    pub exits_after_warmup: u64,
    /// Time spent optimizing and compiling bridges.
    pub bridge_time: Duration,
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
