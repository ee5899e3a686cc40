//! What the driver tells its embedder: errors, counters, what each compilation did, and
//! where a bridge recording starts.

use crate::engine::EngineError;
use std::fmt;
use std::time::Duration;
use trace_ir::{GuardId, Trace, TraceBuilder, Value};

/// Why the driver could not do what it was asked.
#[derive(Debug)]
pub enum DriverError {
    /// The call does not fit the driver's state (say, `run` of a location that has no code,
    /// or `finish_recording` with no recording in progress).
    State(String),
    /// The recording has more ops than [`crate::DriverConfig::max_trace_ops`].
    TooLong {
        /// Ops of the trace.
        ops: usize,
        /// The limit.
        max: usize,
    },
    /// The optimizer refused the trace.
    Optimize(optimizer::OptError),
    /// The engine could not compile the trace or attach the bridge.
    Compile(EngineError),
    /// Compiled code refused to run.
    Run(EngineError),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::State(m) => write!(f, "driver: {m}"),
            DriverError::TooLong { ops, max } => write!(f, "driver: the trace has {ops} ops, more than {max}"),
            DriverError::Optimize(e) => write!(f, "driver: the optimizer refused the trace: {e}"),
            DriverError::Compile(e) => write!(f, "driver: cannot compile: {e}"),
            DriverError::Run(e) => write!(f, "driver: compiled code failed: {e}"),
        }
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriverError::Optimize(e) => Some(e),
            DriverError::Compile(e) | DriverError::Run(e) => Some(e.as_ref()),
            DriverError::State(_) | DriverError::TooLong { .. } => None,
        }
    }
}

/// What a bridge recording starts from (see [`crate::Driver::bridge_to_record`]).
#[derive(Debug)]
pub struct BridgeStart {
    /// The guard the bridge leaves from.
    pub guard: GuardId,
    /// A builder with the bridge's inputs (the guard's exit words) and the guard's virtual
    /// objects rebuilt; guard ids continue after the tree's.
    pub builder: TraceBuilder,
    /// The value of each fail argument of the guard in the builder (`None` for a hole), in
    /// order: what the interpreter's resumed state holds in the places they fill.
    pub fail_values: Vec<Option<Value>>,
    /// The `TargetToken` the bridge's final `jump` names (the loop's header; see
    /// [`crate::Driver::close_jump`]; the optimizer may send it into the loop's peeled body).
    pub target: u64,
}

/// What one successful [`crate::Driver::finish_recording`] did: a loop compiled, or a bridge
/// attached.
#[derive(Clone, Debug)]
pub struct TraceReport<K> {
    /// The location of the loop.
    pub key: K,
    /// For a bridge: the guard it leaves from.
    pub bridge_of: Option<GuardId>,
    /// The trace as recorded (a loop's last label carrying its `TargetToken`).
    pub recorded: Trace,
    /// The trace the engine compiled (the optimized one when
    /// [`crate::DriverConfig::optimize`]; for a bridge merged into its loop, the merged loop).
    pub compiled: Trace,
    /// Whether the bridge was merged into its loop (`optimizer::ifconv`): the engine
    /// compiled the loop again, with the bridge's path in it, instead of attaching it.
    pub merged: bool,
    /// What the optimizer did (`None` without the optimizer).
    pub optimizer: Option<optimizer::Stats>,
    /// Time spent in the optimizer.
    pub optimize_time: Duration,
    /// Time spent in the engine (compiling the loop, or attaching the bridge).
    pub compile_time: Duration,
}

/// Counters of a driver's work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Loops compiled (a loop recorded again counts again).
    pub loops: u32,
    /// Bridges compiled and attached, or merged into their loop.
    pub bridges: u32,
    /// Of those, the bridges merged into their loop ([`crate::DriverConfig::if_convert`]).
    pub merged: u32,
    /// Recordings abandoned.
    pub aborts: u32,
    /// Compiled loops thrown away to be recorded again (engines without bridges).
    pub retraces: u32,
    /// Runs of compiled code.
    pub entries: u64,
    /// Exits through guards.
    pub exits: u64,
    /// Exits through guards since the last loop or bridge was compiled: the exits of the
    /// warmed-up program.
    pub exits_after_warmup: u64,
    /// Time spent optimizing and compiling loops.
    pub loop_time: Duration,
    /// Time spent optimizing and attaching bridges.
    pub bridge_time: Duration,
}
