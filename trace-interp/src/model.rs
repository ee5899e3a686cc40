//! The interpreter's heap and call model as a service for native code: [`ModelHeap`]
//! executes single heap, call, allocation, exception and type-check ops of a trace on the
//! model's state, exactly as [`crate::run`] would, so that a backend can hand those ops to it
//! (the x86-64 backend's `MemoryAccess::Hooks` mode) and compare the whole run with the
//! interpreter's afterwards.
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode, OpRef};
//! use trace_ir::descr::{Descr, FieldDescr};
//! use trace_interp::{ModelHeap, RunConfig, RtValue};
//! let mut b = TraceBuilder::new();
//! let p = b.input(Kind::Ref);
//! let f = b.descr(Descr::Field(FieldDescr {
//!     name: "x".into(), offset: 8, size: 8, signed: true, kind: Kind::Int, immutable: false,
//! }));
//! let x = b.op_with_descr(Opcode::GetfieldGcI, &[p], f);
//! b.finish(&[x]);
//! let t = b.build().unwrap();
//! let cfg = RunConfig::default();
//! let mut m = ModelHeap::new(&t, &cfg);
//! let addr = 0x5000_0000_1008;
//! let a = m.exec(OpRef::new(1), &[addr]).unwrap();
//! // The same read in the interpreter gives the same derived value.
//! let r = trace_interp::run(&t, &[RtValue::Ref(addr)], &cfg);
//! assert_eq!(r.outcome.values().unwrap()[0].bits(), a);
//! ```
//!
//! The caller passes each op's operand values as 64-bit words (floats as IEEE bits,
//! references as addresses); the model gives them the kinds the trace says. Values the model
//! returns (allocated objects' addresses included) are the interpreter's, so a run through the
//! model ends in the same heap state as [`crate::run`] on the same inputs, and
//! [`ModelHeap::into_result`] packs it as a [`RunResult`] for
//! [`crate::outcomes_equivalent`].

use crate::machine::Machine;
use crate::{Heap, Outcome, RtValue, RunConfig, RunResult, State};
use trace_ir::entity::{GuardId, OpRef, Value, ValueData};
use trace_ir::opcode::Kind;
use trace_ir::trace::Trace;
use trace_ir::Opcode;

/// The interpreter's state for one run of `trace`, driven op by op from outside (see the
/// module documentation). Ops are named by their index in `trace`: a native run must use
/// the model of the very trace it compiled (a fresh one per run).
#[derive(Debug)]
pub struct ModelHeap<'t> {
    trace: &'t Trace,
    cfg: RunConfig,
    st: State,
}

impl<'t> ModelHeap<'t> {
    /// A fresh state for a run of `trace` under `cfg` (its functions, class policy and preset
    /// memory apply as in [`crate::run`]).
    pub fn new(trace: &'t Trace, cfg: &RunConfig) -> ModelHeap<'t> {
        ModelHeap {
            trace,
            cfg: cfg.clone(),
            st: State::new(trace, cfg),
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
            promise: false,
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
        if opc.is_guard() || opc.has(trace_ir::opcode::OpFlags::FINAL) || opc.is_input() || opc == Opcode::Label {
            return Err(Self::invalid(op, "not an op the model executes alone"));
        }
        let mut m = Machine::new(t, &self.cfg, std::mem::take(&mut self.st));
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
        let mut m = Machine::new(t, &self.cfg, std::mem::take(&mut self.st));
        let r = m.guard_holds(op);
        self.st = m.st;
        Ok(match r? {
            true if opc.result_kind() != Kind::Void => Some(self.st.vals[op.index()].bits()),
            true => Some(0),
            false => None,
        })
    }

    /// The guard with id `guard` failed: `words` are the values of its `FailArg::Value`
    /// entries in order ([`trace_ir::GuardData::for_each_entry`]). Rebuilds the virtual
    /// objects in the model's heap and performs the guard's writes, as the interpreter does,
    /// and returns the exit ([`Outcome::GuardFailed`] with the fail
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
                promise: false,
            };
        };
        let Some(g) = t.ops[at].guard else {
            return Self::invalid(OpRef::new(at), "guard without resume data");
        };
        let gd = t.guard(g);
        let mut values = words.iter().copied();
        let mut read = Vec::new();
        gd.for_each_value(|v| read.push(v));
        for v in read {
            let Some(w) = values.next() else {
                return Self::invalid(OpRef::new(at), "too few exit values");
            };
            self.set_value(v, w);
        }
        let mut m = Machine::new(t, &self.cfg, std::mem::take(&mut self.st));
        let out = m.fail(OpRef::new(at));
        self.st = m.st;
        out
    }

    /// The whole run as the interpreter would report it, ending with `outcome` (iteration, loop
    /// entry and step counts are not tracked and are 0).
    pub fn into_result(self, outcome: Outcome) -> RunResult {
        RunResult {
            outcome,
            heap: self.st.heap,
            calls: self.st.calls,
            exception: self.st.exception,
            iterations: 0,
            loop_entries: 0,
            steps: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{random_trace, RandomConfig};
    use trace_ir::trace::Const;
    use trace_ir::Opcode;

    /// Drive `trace` (straight-line) op by op from outside, as native code does: values are
    /// kept here and passed in as words; every op other than `finish` goes to the model.
    fn drive(trace: &Trace, inputs: &[RtValue], cfg: &RunConfig) -> RunResult {
        let mut vals: Vec<u64> = vec![0; trace.ops.len()];
        for (i, v) in inputs.iter().enumerate() {
            vals[i] = v.bits();
        }
        let word = |vals: &[u64], v: Value| match v.data() {
            ValueData::Op(o) => vals[o.index()],
            ValueData::Const(c) => match trace.consts.get(c) {
                Const::Int(i) => i as u64,
                Const::Float(b) | Const::Ref(b) => b,
            },
        };
        let mut m = ModelHeap::new(trace, cfg);
        for pc in trace.num_inputs..trace.ops.len() {
            let op = &trace.ops[pc];
            let args: Vec<u64> = op.args.iter().map(|&v| word(&vals, v)).collect();
            let at = OpRef::new(pc);
            if op.opcode == Opcode::Finish {
                let values = op
                    .args
                    .iter()
                    .zip(&args)
                    .map(|(&v, &w)| RtValue::from_bits(trace.kind_of(v), w))
                    .collect();
                return m.into_result(Outcome::Finish(values));
            }
            let step = if op.opcode.is_guard() {
                m.check_guard(at, &args)
            } else {
                m.exec(at, &args).map(Some)
            };
            match step {
                Ok(Some(v)) => vals[pc] = v,
                Ok(None) => {
                    let gd = trace.guard(op.guard.unwrap());
                    let mut words: Vec<u64> = Vec::new();
                    gd.for_each_value(|v| words.push(word(&vals, v)));
                    let out = m.guard_failed(gd.id, &words);
                    return m.into_result(out);
                }
                Err(stop) => return m.into_result(stop),
            }
        }
        m.into_result(Outcome::Invalid {
            op: None,
            reason: "ran past the end".into(),
            promise: false,
        })
    }

    /// Random straight-line traces (external objects, heap ops, calls, allocations) and
    /// their failing guards' virtual objects: driving the model from outside gives exactly
    /// the interpreter's run (same addresses, heap, calls, exception state).
    #[test]
    fn driving_the_model_op_by_op_is_running_the_interpreter() {
        let cfg = RandomConfig {
            loops: false,
            heap: 10,
            calls: 4,
            ..RandomConfig::default()
        };
        let mut guard_exits = 0;
        for seed in 0..600 {
            let (t, inputs) = random_trace(&cfg, seed);
            // Vary the inputs so that guards fail too.
            let mut rng = crate::rng::Rng::new(seed);
            for inp in [inputs.clone(), crate::random::random_inputs(&mut rng, &t)] {
                let want = crate::run(&t, &inp, &RunConfig::default());
                let got = drive(&t, &inp, &RunConfig::default());
                assert_eq!(got.outcome, want.outcome, "seed {seed}");
                assert_eq!(got.heap, want.heap, "seed {seed}");
                assert_eq!(got.calls, want.calls, "seed {seed}");
                assert_eq!(got.exception, want.exception, "seed {seed}");
                if matches!(want.outcome, Outcome::GuardFailed { .. }) {
                    guard_exits += 1;
                }
            }
        }
        assert!(guard_exits > 100, "only {guard_exits} guard exits");
    }

    /// Guards, finals and labels are not executed by `exec`; a wrong operand count or a
    /// guard id the trace lacks is an invalid outcome, never a panic.
    #[test]
    fn misuse_is_reported() {
        let mut b = trace_ir::TraceBuilder::new();
        let i = b.input(Kind::Int);
        b.guard(Opcode::GuardTrue, &[i], &[i], 0);
        b.finish(&[i]);
        let t = b.build().unwrap();
        let mut m = ModelHeap::new(&t, &RunConfig::default());
        assert!(matches!(m.exec(OpRef::new(1), &[1]), Err(Outcome::Invalid { .. })));
        assert!(matches!(m.exec(OpRef::new(2), &[1]), Err(Outcome::Invalid { .. })));
        assert!(matches!(
            m.check_guard(OpRef::new(1), &[]),
            Err(Outcome::Invalid { .. })
        ));
        assert!(matches!(
            m.check_guard(OpRef::new(9), &[1]),
            Err(Outcome::Invalid { .. })
        ));
        assert_eq!(m.check_guard(OpRef::new(1), &[1]), Ok(Some(0)));
        assert_eq!(m.check_guard(OpRef::new(1), &[0]), Ok(None));
        assert!(matches!(m.guard_failed(GuardId(7), &[]), Outcome::Invalid { .. }));
        assert!(matches!(m.guard_failed(GuardId(0), &[]), Outcome::Invalid { .. }));
        assert_eq!(
            m.guard_failed(GuardId(0), &[5]),
            Outcome::GuardFailed {
                guard: GuardId(0),
                resume_key: 0,
                values: vec![RtValue::Int(5)]
            }
        );
    }
}
