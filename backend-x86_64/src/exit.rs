//! What a run reports when it leaves native code: the exit, its typed values, and the
//! table of value kinds per exit that types them.

use std::fmt;
use trace_ir::{GuardId, Kind, OpRef};

/// One value an exit reports, typed as the trace types it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExitValue {
    /// An integer.
    Int(i64),
    /// A float, as its IEEE bits (NaN payloads kept exactly; see [`ExitValue::as_f64`]).
    Float(u64),
    /// A reference: an address, 0 for null (a virtual object rebuilt at the exit too).
    Ref(u64),
    /// No value: a hole in the guard's resume data (the interpreter does not need it there).
    Hole,
}

impl ExitValue {
    /// The value of `kind` with these bits (`Void` gives a hole).
    pub fn from_bits(kind: Kind, bits: u64) -> ExitValue {
        match kind {
            Kind::Int => ExitValue::Int(bits as i64),
            Kind::Float => ExitValue::Float(bits),
            Kind::Ref => ExitValue::Ref(bits),
            Kind::Void => ExitValue::Hole,
        }
    }
    /// The value as one 64-bit word: integers as two's complement, floats as IEEE bits,
    /// references as addresses, a hole as 0.
    pub fn bits(self) -> u64 {
        match self {
            ExitValue::Int(v) => v as u64,
            ExitValue::Float(b) | ExitValue::Ref(b) => b,
            ExitValue::Hole => 0,
        }
    }
    /// The value's kind (`Void` for a hole).
    pub fn kind(self) -> Kind {
        match self {
            ExitValue::Int(_) => Kind::Int,
            ExitValue::Float(_) => Kind::Float,
            ExitValue::Ref(_) => Kind::Ref,
            ExitValue::Hole => Kind::Void,
        }
    }
    /// The float, for a `Float` value.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            ExitValue::Float(b) => Some(f64::from_bits(b)),
            _ => None,
        }
    }
}

/// How a run of compiled code ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `finish` was reached: its operands.
    Finish {
        /// The operands of `finish`.
        values: Vec<ExitValue>,
    },
    /// A guard failed.
    Guard {
        /// The guard's stable id.
        guard: GuardId,
        /// The embedder's resume key of the guard.
        resume_key: u64,
        /// The fail arguments, in order: values, virtual objects rebuilt through the
        /// [`crate::Runtime`] (as references), and holes.
        values: Vec<ExitValue>,
    },
    /// A `jump` to another compiled loop (`<LoopN>`, N >= 0) was reached: the embedder
    /// continues there with these values.
    ExternalJump {
        /// The target loop number, when the descriptor names one.
        target: Option<i64>,
        /// The jump's operands.
        values: Vec<ExitValue>,
    },
    /// An invalid operation (see the crate documentation) at this op.
    Invalid {
        /// The op.
        op: OpRef,
    },
}

impl Exit {
    /// The exit's values as 64-bit words ([`ExitValue::bits`]; empty for `Invalid`).
    pub fn words(&self) -> Vec<u64> {
        match self {
            Exit::Finish { values } | Exit::Guard { values, .. } | Exit::ExternalJump { values, .. } => {
                values.iter().map(|v| v.bits()).collect()
            }
            Exit::Invalid { .. } => Vec::new(),
        }
    }
}

/// Why [`crate::CompiledTrace::run`] refused to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The number of inputs differs from the trace's.
    InputCount {
        /// Inputs the trace has.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::InputCount { expected, got } => write!(f, "the trace takes {expected} inputs, got {got}"),
        }
    }
}

impl std::error::Error for RunError {}

/// The kinds of each exit's values, by exit code: a guard's fail arguments (`Void` for a
/// hole, `Ref` for a virtual object), the operands of `finish` or of a `jump` out of the
/// tree; nothing for an invalid-operation exit. Code generation records them exit by exit
/// ([`ExitKinds::push_kind`], [`ExitKinds::end_exit`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct ExitKinds {
    kinds: Vec<Kind>,
    /// Where each exit's kinds end in `kinds` (they start where the exit before ends, at 0
    /// for the first).
    end: Vec<u32>,
}

impl ExitKinds {
    /// The kinds of the values of exit `code`.
    pub(crate) fn of(&self, code: usize) -> &[Kind] {
        let start = if code == 0 { 0 } else { self.end[code - 1] };
        &self.kinds[start as usize..self.end[code] as usize]
    }

    /// The next value kind of the exit being recorded.
    #[inline]
    pub(crate) fn push_kind(&mut self, kind: Kind) {
        self.kinds.push(kind);
    }

    /// The exit being recorded has all its kinds: the next kinds are the next exit's.
    #[inline]
    pub(crate) fn end_exit(&mut self) {
        self.end.push(self.kinds.len() as u32);
    }

    /// Add the exits of `other` after these.
    pub(crate) fn append(&mut self, other: &ExitKinds) {
        let base = self.kinds.len() as u32;
        self.kinds.extend_from_slice(&other.kinds);
        self.end.extend(other.end.iter().map(|e| e + base));
    }

    /// No exit.
    pub(crate) fn clear(&mut self) {
        self.kinds.clear();
        self.end.clear();
    }
}
