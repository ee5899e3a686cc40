//! The interpreter's heap and call model as a service for native code: [`ModelHeap`]
//! executes single heap, call, allocation, exception and type-check ops of a trace on the
//! model's state, exactly as [`super::run`] would, so that a backend can hand those ops to it
//! (the x86-64 backend's `MemoryAccess::Hooks` mode) and compare the whole run with the
//! interpreter's afterwards.
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode, OpRef};
//! use trace_ir::descr::{Descr, FieldDescr};
//! use trace_ir::interp::{ModelHeap, RunConfig, RtValue};
//! let mut b = TraceBuilder::new();
//! let p = b.input(Kind::Ref);
//! let f = b.descr(Descr::Field(FieldDescr {
//!     name: "x".into(), offset: 8, size: 8, signed: true, kind: Kind::Int, immutable: false,
//! }));
//! let x = b.op_with_descr(Opcode::GetfieldGcI, &[p], f);
//! b.finish_with(&[x]);
//! let t = b.finish().unwrap();
//! let cfg = RunConfig::default();
//! let mut m = ModelHeap::new(&t, &cfg);
//! let addr = 0x5000_0000_1008;
//! let a = m.exec(OpRef::new(1), &[addr]).unwrap();
//! // The same read in the interpreter gives the same derived value.
//! let r = trace_ir::interp::run(&t, &[RtValue::Ref(addr)], &cfg);
//! assert_eq!(r.outcome.values().unwrap()[0].bits(), a);
//! ```
//!
//! The caller passes each op's operand values as 64-bit words (floats as IEEE bits,
//! references as addresses); the model gives them the kinds the trace says. Values the model
//! returns (allocated objects' addresses included) are the interpreter's, so a run through the
//! model ends in the same heap state as [`super::run`] on the same inputs, and
//! [`ModelHeap::into_result`] packs it as a [`RunResult`] for
//! [`super::outcomes_equivalent`].

use super::{Heap, Machine, Outcome, RtValue, RunConfig, RunResult, State};
use crate::entity::{GuardId, OpRef, Value, ValueData};
use crate::opcode::Kind;
use crate::trace::{FailArg, Trace};

/// The interpreter's state for one run of `trace`, driven op by op from outside (see the
/// module documentation).
#[derive(Debug)]
pub struct ModelHeap<'t> {
    trace: &'t Trace,
    cfg: RunConfig,
    st: State,
}

impl<'t> ModelHeap<'t> {
    /// A fresh state for a run of `trace` under `cfg` (its functions, class policy and preset
    /// memory apply as in [`super::run`]).
    pub fn new(trace: &'t Trace, cfg: &RunConfig) -> ModelHeap<'t> {
        let mut st = State {
            vals: vec![RtValue::Int(0); trace.ops.len()],
            ..State::default()
        };
        st.heap.preset = cfg.preset.clone();
        ModelHeap {
            trace,
            cfg: cfg.clone(),
            st,
        }
    }

    /// The trace this model runs.
    pub fn trace(&self) -> &'t Trace {
        self.trace
    }

    /// The heap so far.
    pub fn heap(&self) -> &Heap {
        &self.st.heap
    }

    /// The pending exception so far, as (class, value).
    pub fn exception(&self) -> Option<(i64, u64)> {
        self.st.exception
    }

    fn invalid(op: OpRef, reason: &str) -> Outcome {
        Outcome::Invalid {
            op: Some(op),
            reason: reason.to_string(),
        }
    }

    /// Give the operands of the op at `op` the values `args` (one word per operand, in order).
    fn set_args(&mut self, op: OpRef, args: &[u64]) -> Result<(), Outcome> {
        let t = self.trace;
        let Some(o) = t.ops.get(op.index()) else {
            return Err(Self::invalid(op, "no such op"));
        };
        if o.args.len() != args.len() {
            return Err(Self::invalid(op, "wrong number of operand values"));
        }
        for (&v, &w) in o.args.iter().zip(args) {
            self.set_value(v, w);
        }
        Ok(())
    }

    fn set_value(&mut self, v: Value, bits: u64) {
        if let ValueData::Op(o) = v.data() {
            if let Some(slot) = self.st.vals.get_mut(o.index()) {
                *slot = RtValue::from_bits(self.trace.kind_of(v), bits);
            }
        }
    }

    /// Execute the op at `op` (a heap access, allocation, call, exception op or hint; not a
    /// guard, label, jump or finish) with operand values `args`. Returns its result's bits (0
    /// when it has none), or how the run stops there (an [`Outcome::Invalid`]).
    pub fn exec(&mut self, op: OpRef, args: &[u64]) -> Result<u64, Outcome> {
        let t = self.trace;
        self.set_args(op, args)?;
        let opc = t.ops[op.index()].opcode;
        if opc.is_guard() || opc.has(crate::opcode::OpFlags::FINAL) || opc.is_input() || opc == crate::Opcode::Label {
            return Err(Self::invalid(op, "not an op the model executes alone"));
        }
        let mut m = Machine {
            trace: t,
            cfg: &self.cfg,
            st: std::mem::take(&mut self.st),
        };
        let r = m.step(op.index());
        self.st = m.st;
        r?;
        Ok(if opc.result_kind() == Kind::Void {
            0
        } else {
            self.st.vals[op.index()].bits()
        })
    }

    /// Evaluate the condition of the guard at `op` with operand values `args`: `Some(result)`
    /// when it holds (`result` is `guard_exception`'s exception value, 0 for other guards),
    /// `None` when it fails (then call [`ModelHeap::guard_failed`]), or how the run stops
    /// there.
    pub fn check_guard(&mut self, op: OpRef, args: &[u64]) -> Result<Option<u64>, Outcome> {
        let t = self.trace;
        self.set_args(op, args)?;
        let opc = t.ops[op.index()].opcode;
        if !opc.is_guard() {
            return Err(Self::invalid(op, "not a guard"));
        }
        let mut m = Machine {
            trace: t,
            cfg: &self.cfg,
            st: std::mem::take(&mut self.st),
        };
        let r = m.guard_holds(op);
        self.st = m.st;
        Ok(match r? {
            true if opc.result_kind() != Kind::Void => Some(self.st.vals[op.index()].bits()),
            true => Some(0),
            false => None,
        })
    }

    /// The guard with id `guard` failed: `words` are the values of its `FailArg::Value`
    /// entries in order (first the fail arguments, then the fields of each virtual object of
    /// its resume data, in order). Rebuilds the virtual objects in the model's heap, as the
    /// interpreter does, and returns the exit ([`Outcome::GuardFailed`] with the fail
    /// arguments, or [`Outcome::Invalid`] for a malformed guard).
    pub fn guard_failed(&mut self, guard: GuardId, words: &[u64]) -> Outcome {
        let t = self.trace;
        let Some(at) = t.ops.iter().position(|o| {
            o.guard
                .is_some_and(|g| g.index() < t.guards.len() && t.guard(g).id == guard)
        }) else {
            return Outcome::Invalid {
                op: None,
                reason: format!("no guard {guard} in the trace"),
            };
        };
        let Some(g) = t.ops[at].guard else {
            return Self::invalid(OpRef::new(at), "guard without resume data");
        };
        let gd = t.guard(g);
        let mut values = words.iter().copied();
        let fields = gd.virtuals.iter().flat_map(|v| v.fields.iter().map(|(_, fa)| fa));
        for fa in gd.fail_args.iter().chain(fields) {
            if let FailArg::Value(v) = fa {
                let Some(w) = values.next() else {
                    return Self::invalid(OpRef::new(at), "too few exit values");
                };
                self.set_value(*v, w);
            }
        }
        let mut m = Machine {
            trace: t,
            cfg: &self.cfg,
            st: std::mem::take(&mut self.st),
        };
        let out = m.fail(OpRef::new(at));
        self.st = m.st;
        out
    }

    /// The whole run as the interpreter would report it, ending with `outcome` (iteration and
    /// step counts are not tracked and are 0).
    pub fn into_result(self, outcome: Outcome) -> RunResult {
        RunResult {
            outcome,
            heap: self.st.heap,
            calls: self.st.calls,
            exception: self.st.exception,
            iterations: 0,
            steps: 0,
        }
    }
}
