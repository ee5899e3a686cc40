//! The builder an interpreter uses to record a trace.
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! let mut b = TraceBuilder::new();
//! let i = b.input(Kind::Int);
//! let n = b.input(Kind::Int);
//! let [i, n] = b.label(&[i, n])[..] else { unreachable!() };
//! let lt = b.op(Opcode::IntLt, &[i, n]);
//! b.guard(Opcode::GuardTrue, &[lt], &[i, n], 7);
//! let one = b.const_int(1);
//! let i2 = b.op(Opcode::IntAdd, &[i, one]);
//! b.jump(&[i2, n]);
//! let trace = b.build().unwrap();
//! assert_eq!(trace.num_real_ops(), 5);
//! ```
//!
//! Mistakes come back from [`TraceBuilder::build`] as errors, never as panics:
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! let mut b = TraceBuilder::new();
//! let x = b.input(Kind::Void); // no value is void
//! b.finish(&[x]);
//! let err = b.build().unwrap_err();
//! assert!(err.to_string().contains("void"), "{err}");
//! ```

use crate::descr::Descr;
use crate::entity::{DescrRef, GuardId, GuardRef, OpRef, Value};
use crate::opcode::{Kind, Opcode};
use crate::trace::{Const, FailArg, GuardData, Op, Trace};
use crate::verify::{verify, VerifyError};

/// Records a trace op by op. Mistakes (a void input, wrong arity, kinds, use before
/// definition) are reported by [`TraceBuilder::build`], which runs the verifier; the first
/// mistake the builder itself sees (before verification) is the one reported.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    trace: Trace,
    next_guard_id: u32,
    /// The first mistake seen while recording, reported by `build`.
    error: Option<VerifyError>,
}

impl TraceBuilder {
    /// An empty builder.
    pub fn new() -> TraceBuilder {
        TraceBuilder::default()
    }
    /// Number the guards from `first` on (ids count up from 0 by default): a bridge's
    /// guards need ids its tree does not use yet.
    pub fn guard_ids_from(&mut self, first: u32) -> &mut Self {
        self.next_guard_id = first;
        self
    }
    /// Choose how accesses through different descriptors alias ([`crate::Aliasing`]; the
    /// default is [`crate::Aliasing::Bytes`]).
    pub fn aliasing(&mut self, aliasing: crate::Aliasing) -> &mut Self {
        self.trace.aliasing = aliasing;
        self
    }
    /// Name the trace (shown in messages, the disassembly, perf maps and debuggers).
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.trace.info.name = name.into();
        self
    }
    /// Add a trace input of `kind`. Inputs must be added before any other op. A `Void`
    /// input is a mistake that [`TraceBuilder::build`] reports (an integer input stands in
    /// for it meanwhile).
    pub fn input(&mut self, kind: Kind) -> Value {
        let opcode = self.input_opcode(kind, "a trace input cannot be void");
        let r = self.push(Op::new(opcode, &[]));
        if self.trace.num_inputs == r.index() {
            self.trace.num_inputs += 1;
        }
        Value::op(r)
    }
    /// An integer constant.
    pub fn const_int(&mut self, v: i64) -> Value {
        self.trace.make_const(Const::Int(v))
    }
    /// A float constant.
    pub fn const_float(&mut self, v: f64) -> Value {
        self.trace.make_const(Const::float(v))
    }
    /// A constant of any kind.
    pub fn constant(&mut self, c: Const) -> Value {
        self.trace.make_const(c)
    }
    /// A pointer constant (0 is null).
    pub fn const_ref(&mut self, addr: u64) -> Value {
        self.trace.make_const(Const::Ref(addr))
    }
    /// Add a descriptor (an equal one is reused).
    pub fn descr(&mut self, d: Descr) -> DescrRef {
        self.trace.make_descr(d)
    }
    /// Append a raw op; returns its reference.
    pub fn push(&mut self, op: Op) -> OpRef {
        self.trace.ops.push(op);
        OpRef::new(self.trace.ops.len() - 1)
    }
    /// Append an op without descriptor; returns its result (meaningless for void ops).
    pub fn op(&mut self, opcode: Opcode, args: &[Value]) -> Value {
        Value::op(self.push(Op::new(opcode, args)))
    }
    /// Append an op with a descriptor.
    pub fn op_with_descr(&mut self, opcode: Opcode, args: &[Value], descr: DescrRef) -> Value {
        let mut op = Op::new(opcode, args);
        op.descr = Some(descr);
        Value::op(self.push(op))
    }
    /// Append a guard with its fail arguments and the embedder's resume key; returns the
    /// guard's stable id (the one an exit reports).
    pub fn guard(&mut self, opcode: Opcode, args: &[Value], fail_args: &[Value], resume_key: u64) -> GuardId {
        self.guard_op(opcode, args, fail_args, resume_key).1
    }
    /// Like [`TraceBuilder::guard`], returning the guard's op (for guards with a result,
    /// such as `guard_exception`) as well as its id.
    pub fn guard_op(
        &mut self,
        opcode: Opcode,
        args: &[Value],
        fail_args: &[Value],
        resume_key: u64,
    ) -> (Value, GuardId) {
        let id = GuardId(self.next_guard_id);
        self.next_guard_id += 1;
        self.trace.guards.push(GuardData {
            id,
            resume_key,
            fail_args: fail_args.iter().map(|&v| FailArg::Value(v)).collect(),
            virtuals: Vec::new(),
            writes: Vec::new(),
        });
        let mut op = Op::new(opcode, args);
        op.guard = Some(GuardRef::new(self.trace.guards.len() - 1));
        (Value::op(self.push(op)), id)
    }
    /// Append a loop header; returns its parameters, which stand for the loop-carried
    /// values inside the loop.
    pub fn label(&mut self, args: &[Value]) -> Vec<Value> {
        let kinds: Vec<Kind> = args.iter().map(|&a| self.kind_of(a)).collect();
        self.op(Opcode::Label, args);
        kinds
            .into_iter()
            .map(|k| {
                let opcode = self.input_opcode(k, "a label operand cannot be void");
                self.op(opcode, &[])
            })
            .collect()
    }
    /// The input opcode for `kind`; for `Void`, records `mistake` at the next op and
    /// answers an integer input.
    fn input_opcode(&mut self, kind: Kind, mistake: &str) -> Opcode {
        Opcode::input_for(kind).unwrap_or_else(|| {
            let op = OpRef::new(self.trace.ops.len());
            self.error.get_or_insert(VerifyError {
                op: Some(op),
                message: mistake.to_string(),
            });
            Opcode::InputI
        })
    }
    /// End the trace with a jump back to the label (or the trace start).
    pub fn jump(&mut self, args: &[Value]) {
        self.op(Opcode::Jump, args);
    }
    /// End the trace with a `finish` op returning `args` (see [`TraceBuilder::build`] for
    /// getting the recorded trace).
    pub fn finish(&mut self, args: &[Value]) {
        self.op(Opcode::Finish, args);
    }
    /// The kind of a value recorded so far (`Void` for void ops and unknown values).
    pub fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            crate::entity::ValueData::Op(o) if o.index() < self.trace.ops.len() => self.trace.kind_of(v),
            crate::entity::ValueData::Const(c) if c.index() < self.trace.consts.len() => self.trace.kind_of(v),
            _ => Kind::Void,
        }
    }
    /// The trace recorded so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }
    /// Verify and return the recorded trace: the first recording mistake or verifier
    /// finding is the error.
    pub fn build(self) -> Result<Trace, VerifyError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        verify(&self.trace)?;
        Ok(self.trace)
    }
    /// Return the recorded trace without verifying it (for tests of verifiers and of
    /// error paths; a recording mistake leaves its stand-in op in the trace).
    pub fn build_unverified(self) -> Trace {
        self.trace
    }
}
