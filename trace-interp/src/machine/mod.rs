//! The machine that runs a trace: its state, the entry points, and how an op reads its
//! operands and descriptors. What each op does is in [`step`]; heap access in [`memory`];
//! guards, exits, loops and calls in [`control`].

mod control;
mod memory;
mod step;

use crate::heap::{self, Heap, ObjKind, View};
use crate::{CallRecord, ClassPolicy, Outcome, RtValue, RunConfig, RunResult};
use std::collections::HashMap;
use trace_ir::abi::{default_class, hash_words, string_hash, VirtualRefLayout, FORCE_TOKEN, MAX_COPY_LEN};
use trace_ir::descr::{
    ArrayDescr, CallEffect, Descr, FieldDescr, SizeDescr, DEFAULT_ARRAY_BASE, MAX_ALLOC_BYTES, STR_CHARS_OFFSET,
    STR_LEN_OFFSET,
};
use trace_ir::entity::{OpRef, Value, ValueData};
use trace_ir::eval::{eval_ovf, eval_pure};
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::trace::{FailArg, GuardData, Trace, VirtualField, VirtualKind};
use trace_ir::verify::{jump_target, JumpTarget};

mod tree;
pub use tree::run_tree;
pub(crate) use tree::TreeStep;

/// Canonical word of a call argument: allocated objects lose their address.
/// What calling `func` on `args` returns in a run of `cfg` whose memory is `heap`, as a
/// value of `kind`, when nothing in the run said so yet: the embedder's function
/// ([`RunConfig::functions`]) if it gave one, else a value derived from the function and the
/// arguments (the same for the same ones: `canonical` names each object).
pub fn call_value(cfg: &RunConfig, heap: &Heap, func: u64, args: &[RtValue], kind: Kind) -> RtValue {
    match cfg.functions.get(&func) {
        Some(f) => f(args).with_kind(kind),
        None => {
            let mut words = vec![0xca11, func];
            words.extend(args.iter().map(|&v| canonical(heap, v)));
            heap::derived_value(kind, hash_words(&words))
        }
    }
}

pub(crate) fn canonical(heap: &Heap, v: RtValue) -> u64 {
    match v {
        RtValue::Ref(a) if heap.is_allocated(a) => 0xa110_c000_0000_0000,
        other => other.bits(),
    }
}

pub(crate) fn narrow(v: RtValue, size: u8, signed: bool) -> RtValue {
    match v {
        RtValue::Int(i) if size < 8 => {
            let bits = size as u32 * 8;
            let shift = 64 - bits;
            let x = if signed {
                (i << shift) >> shift
            } else {
                ((i as u64) << shift >> shift) as i64
            };
            RtValue::Int(x)
        }
        other => other,
    }
}

/// Why execution stopped inside an op.
pub(crate) type Stop = Outcome;

pub(crate) fn invalid(op: OpRef, reason: impl Into<String>) -> Stop {
    Outcome::Invalid {
        op: Some(op),
        reason: reason.into(),
        promise: false,
    }
}

/// The op at `op` broke a promise of the memory model (see [`Outcome::Invalid`]).
pub(crate) fn broken(op: OpRef, reason: impl Into<String>) -> Stop {
    Outcome::Invalid {
        op: Some(op),
        reason: reason.into(),
        promise: true,
    }
}

/// The mutable state of a run (kept apart from the trace so that the random trace generator
/// can execute a trace op by op while it builds it).
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    pub(crate) vals: Vec<RtValue>,
    pub(crate) heap: Heap,
    pub(crate) calls: Vec<CallRecord>,
    pub(crate) ovf: bool,
    pub(crate) exception: Option<(i64, u64)>,
    pub(crate) iterations: u64,
    pub(crate) loop_entries: u64,
    pub(crate) steps: u64,
    /// When `Some`: for each op that read initial external memory, the view it read
    /// (address, byte offset).
    pub(crate) provenance: Option<HashMap<usize, (u64, i64)>>,
    /// What calls returned, or `record_known_result` said they return, by function and
    /// arguments (as [`canonical`] names them): a function gives one result per arguments
    /// in a run.
    pub(crate) results: HashMap<(u64, Vec<u64>), RtValue>,
}

impl State {
    /// The state at the start of a run of `trace` under `cfg`.
    pub(crate) fn new(trace: &Trace, cfg: &RunConfig) -> State {
        let mut st = State {
            vals: vec![RtValue::Int(0); trace.ops.len()],
            ..State::default()
        };
        st.heap.preset = cfg.preset.clone();
        st.heap.taken = trace
            .consts
            .iter()
            .filter(|c| c.kind() == Kind::Ref)
            .map(|c| c.bits())
            .collect();
        st
    }
}

/// A run in progress: the trace, its configuration and its state.
pub(crate) struct Machine<'a> {
    pub(crate) trace: &'a Trace,
    pub(crate) cfg: &'a RunConfig,
    pub(crate) st: State,
    /// When the trace is one of a tree: the tree's links, and where the run goes on after
    /// this trace (a bridge or another trace's label), set where it leaves.
    pub(crate) tree: Option<TreeStep<'a>>,
}

impl<'a> Machine<'a> {
    /// A machine running `trace` alone.
    pub(crate) fn new(trace: &'a Trace, cfg: &'a RunConfig, st: State) -> Machine<'a> {
        Machine {
            trace,
            cfg,
            st,
            tree: None,
        }
    }
}

/// Execute the single op at `pc` of `trace` on `st` (whose `vals` must cover every op);
/// returns the next pc, or how the run stops there.
#[cfg(feature = "random")]
pub(crate) fn step_op(trace: &Trace, cfg: &RunConfig, st: &mut State, pc: usize) -> Result<usize, Outcome> {
    let mut m = Machine::new(trace, cfg, std::mem::take(st));
    let r = m.step(pc);
    *st = m.st;
    r
}

/// Run `trace` on `inputs` (one per trace input, in order; a value of the wrong kind is
/// reinterpreted by its bits as the input's kind). Never panics, even on traces that do not
/// verify: problems become [`Outcome::Invalid`].
pub fn run(trace: &Trace, inputs: &[RtValue], cfg: &RunConfig) -> RunResult {
    run_recording(trace, inputs, cfg, false).0
}

/// [`run`], optionally recording which ops read initial external memory (for the guided
/// input search); also returns the final values of all ops.
pub(crate) fn run_recording(
    trace: &Trace,
    inputs: &[RtValue],
    cfg: &RunConfig,
    record: bool,
) -> (RunResult, Vec<RtValue>, HashMap<usize, (u64, i64)>) {
    let mut st = State::new(trace, cfg);
    if record {
        st.provenance = Some(HashMap::new());
    }
    let mut m = Machine::new(trace, cfg, st);
    let outcome = m.execute(inputs);
    let mut st = m.st;
    let vals = std::mem::take(&mut st.vals);
    let prov = st.provenance.take().unwrap_or_default();
    (
        RunResult {
            outcome,
            heap: st.heap,
            calls: st.calls,
            exception: st.exception,
            iterations: st.iterations,
            loop_entries: st.loop_entries,
            steps: st.steps,
        },
        vals,
        prov,
    )
}

/// The op has no meaning in the interpreter (an op the dispatch does not know).
pub(crate) fn not_handled(at: OpRef, opc: Opcode) -> Stop {
    invalid(at, format!("{opc} is not handled by the interpreter"))
}

impl<'a> Machine<'a> {
    pub(crate) fn execute(&mut self, inputs: &[RtValue]) -> Outcome {
        let t = self.trace;
        if inputs.len() != t.num_inputs || t.num_inputs > t.ops.len() {
            return Outcome::Invalid {
                op: None,
                reason: format!("the trace has {} inputs, {} values given", t.num_inputs, inputs.len()),
                promise: false,
            };
        }
        for (i, &v) in inputs.iter().enumerate() {
            self.st.vals[i] = v.with_kind(t.ops[i].opcode.result_kind());
        }
        self.execute_from(t.num_inputs)
    }

    /// Run from the op at `pc` on.
    pub(crate) fn execute_from(&mut self, mut pc: usize) -> Outcome {
        let t = self.trace;
        loop {
            if pc >= t.ops.len() {
                return Outcome::Invalid {
                    op: None,
                    reason: "execution ran past the last op".into(),
                    promise: false,
                };
            }
            match self.step(pc) {
                Ok(next) => pc = next,
                Err(stop) => return stop,
            }
        }
    }

    pub(crate) fn get(&self, at: OpRef, v: Value) -> Result<RtValue, Stop> {
        match v.data() {
            ValueData::Op(o) if o.index() < self.st.vals.len() => Ok(self.st.vals[o.index()]),
            ValueData::Const(c) if c.index() < self.trace.consts.len() => {
                Ok(RtValue::from_const(self.trace.consts.get(c)))
            }
            _ => Err(invalid(at, format!("operand {v:?} does not exist"))),
        }
    }

    pub(crate) fn arg(&self, at: OpRef, i: usize) -> Result<RtValue, Stop> {
        match self.trace.op(at).args.get(i) {
            Some(&v) => self.get(at, v),
            None => Err(invalid(at, format!("missing operand {}", i + 1))),
        }
    }

    pub(crate) fn args(&self, at: OpRef) -> Result<Vec<RtValue>, Stop> {
        self.trace.op(at).args.iter().map(|&v| self.get(at, v)).collect()
    }

    pub(crate) fn int_arg(&self, at: OpRef, i: usize) -> Result<i64, Stop> {
        Ok(self.arg(at, i)?.bits() as i64)
    }

    pub(crate) fn descr(&self, at: OpRef) -> Result<&'a Descr, Stop> {
        let t = self.trace;
        match t.op(at).descr {
            Some(d) if d.index() < t.descrs.len() => Ok(t.descr(d)),
            _ => Err(invalid(at, "missing descriptor")),
        }
    }

    pub(crate) fn field_descr(&self, at: OpRef) -> Result<&'a FieldDescr, Stop> {
        self.descr(at)?
            .as_field()
            .ok_or_else(|| invalid(at, "expected a field descriptor"))
    }

    pub(crate) fn array_descr(&self, at: OpRef) -> Result<&'a ArrayDescr, Stop> {
        self.descr(at)?
            .as_array()
            .ok_or_else(|| invalid(at, "expected an array descriptor"))
    }

    pub(crate) fn size_descr(&self, at: OpRef) -> Result<&'a SizeDescr, Stop> {
        self.descr(at)?
            .as_size()
            .ok_or_else(|| invalid(at, "expected a size descriptor"))
    }

    /// The interior descriptor's item size and field.
    pub(crate) fn interior_descr(&self, at: OpRef) -> Result<(i64, &'a FieldDescr), Stop> {
        match self.descr(at)? {
            Descr::Interior(d) => Ok((d.item_size, &d.field)),
            _ => Err(invalid(at, "expected an interior field descriptor")),
        }
    }

    pub(crate) fn set(&mut self, at: OpRef, v: RtValue) {
        let kind = self.trace.op(at).opcode.result_kind();
        self.st.vals[at.index()] = v.with_kind(kind);
    }
}
