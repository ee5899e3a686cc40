//! What a run is given (inputs aside) and what it gives back.

use crate::heap::Heap;
use crate::RtValue;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use trace_ir::entity::{GuardId, OpRef};

/// A function the embedder supplies for calls to one function address.
pub type HostFn = Arc<dyn Fn(&[RtValue]) -> RtValue + Send + Sync>;

/// How the class of an external object is decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum ClassPolicy {
    /// The first class check on the object (`guard_class`, `guard_nonnull_class`,
    /// `guard_subclass`; `guard_gc_type` for the GC type) passes and fixes the class; later
    /// checks compare against it. This lets real traces run past their type checks.
    #[default]
    FirstCheckDecides,
    /// The class is derived from the address (so class checks on external objects fail
    /// unless the constant happens to be that class).
    FromAddress,
}

/// How to run a trace.
#[derive(Clone)]
pub struct RunConfig {
    /// Maximum number of back-edge jumps before the run stops with `IterationLimit`.
    pub max_iterations: u64,
    /// Whether the trace has been invalidated (`guard_not_invalidated` fails).
    pub invalidated: bool,
    /// Functions supplied by the embedder, by function address.
    pub functions: HashMap<u64, HostFn>,
    /// How external objects get their class.
    pub class_policy: ClassPolicy,
    /// Initial contents of external memory: `(address, byte offset) -> value` (see
    /// [`crate::heap::Heap::preset`]); [`crate::guided::guided_inputs`] fills it in.
    pub preset: HashMap<(u64, i64), RtValue>,
    /// Stop the run at a guard as if it failed: the first guard with this resume key reached
    /// after this many loop-header entries (see [`StopAt`]). `None`: guards fail only when
    /// their condition does not hold.
    pub stop_at: Option<StopAt>,
}

/// Where [`RunConfig::stop_at`] stops a run: the state a run leaves at a guard it would have
/// passed, to compare with a trace that exits there earlier (see
/// [`crate::runs_equivalent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopAt {
    /// [`RunResult::loop_entries`] when the guard is reached.
    pub loop_entries: u64,
    /// The guard's resume key.
    pub resume_key: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            max_iterations: 1000,
            invalidated: false,
            functions: HashMap::new(),
            class_policy: ClassPolicy::default(),
            preset: HashMap::new(),
            stop_at: None,
        }
    }
}

impl fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fns: Vec<u64> = self.functions.keys().copied().collect();
        fns.sort_unstable();
        f.debug_struct("RunConfig")
            .field("max_iterations", &self.max_iterations)
            .field("invalidated", &self.invalidated)
            .field("functions", &fns)
            .field("class_policy", &self.class_policy)
            .field("preset", &self.preset.len())
            .field("stop_at", &self.stop_at)
            .finish()
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// `finish(values)` was reached.
    Finish(Vec<RtValue>),
    /// A guard failed.
    GuardFailed {
        /// The guard's stable id.
        guard: GuardId,
        /// The guard's resume key.
        resume_key: u64,
        /// Its fail arguments (virtuals rebuilt, holes as `Int(0)`).
        values: Vec<RtValue>,
    },
    /// A `jump` to another loop (`<LoopN>`, N >= 0) was reached.
    ExternalJump {
        /// The target loop number, when the descriptor names one.
        target: Option<i64>,
        /// The jump's operands.
        values: Vec<RtValue>,
    },
    /// An operation with undefined behaviour was reached (or the trace is malformed): the
    /// run has no defined outcome, and any behaviour of another implementation (an optimized
    /// trace, native code) is allowed from there.
    Invalid {
        /// The op, when the problem is at one.
        op: Option<OpRef>,
        /// What was wrong.
        reason: String,
        /// Whether the op broke a promise of the memory model (the type-based aliasing rule,
        /// a hint, an immutable word written) rather than reaching an operation native code
        /// checks too (a null or out-of-bounds access, a division by zero, ...): native code
        /// does not detect broken promises.
        promise: bool,
    },
    /// The loop ran `max_iterations` times without leaving.
    IterationLimit,
}

impl Outcome {
    /// The exit values (`finish`, guard failure, external jump), if any.
    pub fn values(&self) -> Option<&[RtValue]> {
        match self {
            Outcome::Finish(v) | Outcome::GuardFailed { values: v, .. } | Outcome::ExternalJump { values: v, .. } => {
                Some(v)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |vs: &[RtValue]| vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
        match self {
            Outcome::Finish(v) => write!(f, "finish({})", list(v)),
            Outcome::GuardFailed {
                guard,
                resume_key,
                values,
            } => {
                write!(f, "{guard} failed (resume key {resume_key}) [{}]", list(values))
            }
            Outcome::ExternalJump { target, values } => match target {
                Some(t) => write!(f, "jump to Loop{t} ({})", list(values)),
                None => write!(f, "jump out ({})", list(values)),
            },
            Outcome::Invalid {
                op: Some(op), reason, ..
            } => write!(f, "invalid at {op}: {reason}"),
            Outcome::Invalid { op: None, reason, .. } => write!(f, "invalid: {reason}"),
            Outcome::IterationLimit => f.write_str("iteration limit reached"),
        }
    }
}

/// A heap-writing call as the outside world saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// The function address (or call_assembler id).
    pub func: u64,
    /// The arguments as canonical words (allocated objects as an anonymous tag).
    pub args: Vec<u64>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The heap at the end (allocated objects, external writes, raw memory, epoch).
    pub heap: Heap,
    /// Heap-writing calls, in order.
    pub calls: Vec<CallRecord>,
    /// The pending exception at the end, as (class, value).
    pub exception: Option<(i64, u64)>,
    /// Back-edge jumps taken.
    pub iterations: u64,
    /// Times control reached a loop header: a `label` entered (from above or by a jump) or
    /// a jump to the trace's start. A trace and its peeled form count alike.
    pub loop_entries: u64,
    /// Ops executed (inputs and label parameters not counted).
    pub steps: u64,
}
