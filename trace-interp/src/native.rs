//! Native runs against the interpreter: the interpreter's heap and call model as the
//! backend's [`Runtime`] (Hooks mode), and a native [`Exit`] as an interpreter [`Outcome`], so
//! that compiled code and the interpreter can be compared on the same heap.

use crate::{ModelHeap, Outcome, RtValue};
use backend_x86_64::{Exit, ExitRequest, ExitValue, HookReply, HookRequest, Runtime};
use trace_ir::Kind;

/// The interpreter's heap and call model as a runtime (Hooks mode): every hooked op runs
/// through the interpreter's own code on the model's state ([`ModelHeap::exec`],
/// [`ModelHeap::check_guard`]), and failing guards rebuild their virtual objects in the
/// model ([`ModelHeap::guard_failed`]), so native code and the interpreter see the same
/// addresses, values, calls and exception state. [`Runtime::alloc`] and
/// [`Runtime::alloc_array`] are not used in Hooks mode (allocation ops go through
/// [`Runtime::exec`]) and return 0 (an invalid operation in Direct mode, whose code would
/// dereference the model's addresses).
impl Runtime for ModelHeap<'_> {
    fn alloc(&mut self, _size: u64, _class: u64) -> u64 {
        0
    }
    fn alloc_array(&mut self, _size: u64, _len: u64) -> u64 {
        0
    }
    fn exec(&mut self, req: &HookRequest<'_>) -> HookReply {
        // The model must be the one of the compiled trace.
        if self.trace().ops.get(req.op.index()).map(|o| o.opcode) != Some(req.opcode) {
            return HookReply::Invalid;
        }
        if req.opcode.is_guard() {
            match self.check_guard(req.op, req.args) {
                Ok(Some(v)) => HookReply::Value(v),
                Ok(None) => HookReply::GuardFails,
                Err(_) => HookReply::Invalid,
            }
        } else {
            match ModelHeap::exec(self, req.op, req.args) {
                Ok(v) => HookReply::Value(v),
                Err(_) => HookReply::Invalid,
            }
        }
    }
    fn guard_exit(&mut self, req: &ExitRequest<'_>) -> Option<Vec<u64>> {
        match self.guard_failed(req.guard, req.words) {
            Outcome::GuardFailed { values, .. } => Some(values.iter().map(|v| v.bits()).collect()),
            // A malformed guard: report its words as they are (no virtual can be rebuilt).
            _ => Some(req.words.to_vec()),
        }
    }
}

/// A native exit as the reference interpreter's [`Outcome`]: each value keeps the kind the
/// exit gives it (the interpreter reports a hole as integer 0), so a native run can be
/// compared with
/// [`crate::outcomes_equivalent`] (with the heap of a `ModelHeap` run in Hooks
/// mode). An invalid exit has no reason text beyond "native code".
pub fn exit_outcome(exit: &Exit) -> Outcome {
    // The interpreter reports a hole as integer 0.
    let typed = |values: &[ExitValue]| -> Vec<RtValue> {
        values
            .iter()
            .map(|&v| RtValue::from_bits(if v == ExitValue::Hole { Kind::Int } else { v.kind() }, v.bits()))
            .collect()
    };
    match exit {
        Exit::Finish { values } => Outcome::Finish(typed(values)),
        Exit::ExternalJump { target, values } => Outcome::ExternalJump {
            target: *target,
            values: typed(values),
        },
        Exit::Guard {
            guard,
            resume_key,
            values,
        } => Outcome::GuardFailed {
            guard: *guard,
            resume_key: *resume_key,
            values: typed(values),
        },
        Exit::Invalid { op } => Outcome::Invalid {
            op: Some(*op),
            reason: "invalid operation in native code".into(),
            promise: false,
        },
    }
}
