//! The random trace generator (as in translation validation of PyPy's optimizer): every input gets a concrete example value,
//! every op is executed by the reference interpreter as soon as it is generated, and only
//! guards that hold for those example values are emitted, so the trace runs to its end on the
//! example inputs.
//!
//! ```
//! use trace_interp::random::{random_trace, RandomConfig};
//! use trace_interp::{run, RunConfig};
//! let (trace, inputs) = random_trace(&RandomConfig::default(), 7);
//! trace_ir::verify(&trace).unwrap();
//! let r = run(&trace, &inputs, &RunConfig::default());
//! assert!(trace_interp::random::is_expected_exit(&trace, &r.outcome));
//! ```
//!
//! # Shape
//!
//! ```text
//! [inputs]                    ints (special values), refs (external objects, sometimes the
//!                             same one twice, or null), floats
//! preamble ops                integer/overflow/float/heap/call ops, guards
//! label(i, n, params...)      optional loop (RandomConfig::loops)
//!   guard_true(int_lt(i, n))  the loop's exit: fails after `n - i` iterations
//!   body ops                  only on label parameters, body values and constants
//!   jump(int_add(i, 1), n, ...)
//! finish(...)                 (straight-line traces)
//! ```
//!
//! Inside a loop body, guards are only placed on values that are the same in every iteration
//! (computed by pure ops from loop-invariant parameters), shift amounts are masked, divisors
//! are made non-zero, and array indices are constants or masked by the (power-of-two) length,
//! so later iterations stay valid. If a generated loop nevertheless does not leave through its
//! exit guard on the example inputs (say an overflow guard fails in a later iteration), the
//! generator retries with a derived seed, and finally falls back to a straight-line trace; the
//! result is a deterministic function of `(cfg, seed)`.
//!
//! Run generated traces with [`RunConfig::default()`] (the class policy matters: a class
//! guard on an external object is generated expecting the first check to decide the class).

use crate::heap::{external_address, ObjKind};
use crate::rng::{mix64, Rng};
use crate::{self as interp, Outcome, RtValue, RunConfig, State};
use smallvec::SmallVec;
use trace_ir::descr::{ArrayDescr, CallDescr, CallEffect, Descr, FieldDescr, SizeDescr};
use trace_ir::entity::{DescrRef, GuardId, GuardRef, OpRef, Value};
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::trace::{Aliasing, Const, FailArg, GuardData, Op, Trace};

/// What to generate. Weights are relative (0 disables a category).
#[derive(Clone, Debug)]
pub struct RandomConfig {
    /// Number of ops to generate (not counting inputs; a loop body counts in it).
    pub length: usize,
    /// Maximum number of integer inputs (at least one is always present).
    pub max_int_inputs: usize,
    /// Maximum number of reference inputs.
    pub max_ref_inputs: usize,
    /// Maximum number of float inputs (used only when `floats > 0`).
    pub max_float_inputs: usize,
    /// Weight of pure integer ops.
    pub int_ops: u32,
    /// Weight of `int_*_ovf` ops (each followed by its overflow guard).
    pub ovf_ops: u32,
    /// Weight of extra guards (`guard_true`/`false` on comparisons, `guard_value`, pointer guards).
    pub guards: u32,
    /// Weight of heap ops (allocations, field and array accesses).
    pub heap: u32,
    /// Weight of calls.
    pub calls: u32,
    /// Weight of float ops.
    pub floats: u32,
    /// Weight of accesses through views: field and array descriptors of other widths,
    /// signedness or kinds over the bytes of the trace's fields and arrays, and a mutable
    /// view of an immutable field (see `docs/memory-model.md`).
    pub views: u32,
    /// Weight of hints that are promises (`assert_not_none`, `record_exact_class`); true on
    /// the example inputs, possibly broken on others.
    pub hints: u32,
    /// The memory model of the generated traces; `None`: type-based for about a third of the
    /// seeds, byte views otherwise.
    pub aliasing: Option<Aliasing>,
    /// Whether to generate a `label`/`jump` loop (in about half of the traces).
    pub loops: bool,
    /// Maximum loop iterations on the example inputs.
    pub max_iterations: u32,
}

impl Default for RandomConfig {
    fn default() -> Self {
        RandomConfig {
            length: 30,
            max_int_inputs: 4,
            max_ref_inputs: 2,
            max_float_inputs: 2,
            int_ops: 10,
            ovf_ops: 3,
            guards: 4,
            heap: 5,
            calls: 2,
            floats: 2,
            views: 2,
            hints: 1,
            aliasing: None,
            loops: true,
            max_iterations: 6,
        }
    }
}

impl RandomConfig {
    /// Traces that touch only memory they allocate and call nothing (no reference inputs, no
    /// calls): native code in Direct mode runs them on real memory, views included.
    pub fn self_contained() -> RandomConfig {
        RandomConfig {
            max_ref_inputs: 0,
            calls: 0,
            heap: 8,
            views: 4,
            ..RandomConfig::default()
        }
    }

    /// Only integer, overflow and guard ops on integer inputs, straight-line (the traces of
    /// translation validation).
    pub fn integers_only() -> RandomConfig {
        RandomConfig {
            max_ref_inputs: 0,
            heap: 0,
            calls: 0,
            floats: 0,
            views: 0,
            hints: 0,
            loops: false,
            ..RandomConfig::default()
        }
    }
}

/// Special integers mixed into inputs and constants.
pub const SPECIAL_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    -2,
    3,
    7,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    63,
    64,
    100,
    255,
    256,
    -256,
    1000,
    (1 << 31) - 1,
    1 << 31,
    -(1 << 31),
    (1 << 32) - 1,
    1 << 32,
    (1 << 62) - 1,
    1 << 62,
    i64::MAX,
    i64::MAX - 1,
    i64::MIN,
    i64::MIN + 1,
];

/// Random inputs of the kinds `t` takes: special integers (see [`special_int`]), small
/// finite floats, and deterministic external references.
pub fn random_inputs(rng: &mut Rng, t: &Trace) -> Vec<RtValue> {
    t.input_kinds()
        .into_iter()
        .map(|k| match k {
            Kind::Float => RtValue::float(rng.range_i64(-1000, 1000) as f64 / 8.0),
            Kind::Ref => RtValue::Ref(external_address(rng.next_u64())),
            _ => RtValue::Int(special_int(rng)),
        })
        .collect()
}

/// A random integer: a special value, a power of two or its neighbour, a small number, or
/// any 64-bit value.
pub fn special_int(rng: &mut Rng) -> i64 {
    match rng.below(4) {
        0 => *rng.pick(SPECIAL_INTS),
        1 => {
            let p = 1i64.wrapping_shl(rng.below(64) as u32);
            p.wrapping_add(rng.range_i64(-1, 1))
        }
        2 => rng.range_i64(-20, 20),
        _ => rng.next_u64() as i64,
    }
}

/// NaNs with payloads (quiet and signaling, both signs): their bits become visible through
/// `convert_float_bytes_to_longlong` and stores.
const PAYLOAD_NANS: &[u64] = &[
    0x7ff8_0000_0000_0001,
    0xfff8_0000_dead_beef,
    0x7ff0_0000_0000_0001,
    0xfff4_0000_0000_0000,
];

fn special_float(rng: &mut Rng) -> f64 {
    if rng.chance(1, 8) {
        return f64::from_bits(*rng.pick(PAYLOAD_NANS));
    }
    *rng.pick(&[
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        3.25,
        1e10,
        -2.5e-3,
        1e300,
        f64::INFINITY,
        f64::NAN,
        7.0,
    ])
}

/// Whether `outcome` is the exit a generated trace must reach on its example inputs: `finish`
/// for a straight-line trace, the loop's exit guard (the first guard after the label) for a
/// loop.
pub fn is_expected_exit(trace: &Trace, outcome: &Outcome) -> bool {
    match (expected_exit_guard(trace), outcome) {
        (None, Outcome::Finish(_)) => true,
        (Some(g), Outcome::GuardFailed { guard, .. }) => g == *guard,
        _ => false,
    }
}

/// The id of the loop's exit guard (first guard after the last label), if the trace loops.
pub fn expected_exit_guard(trace: &Trace) -> Option<GuardId> {
    if trace.ops.last()?.opcode != Opcode::Jump {
        return None;
    }
    let l = trace.last_label()?;
    trace.ops[l.index()..]
        .iter()
        .find_map(|op| op.guard.map(|g| trace.guard(g).id))
}

/// A random trace and example inputs on which it runs to its end (see the module
/// documentation). Deterministic in `(cfg, seed)`; the trace always passes
/// [`trace_ir::verify::verify`].
pub fn random_trace(cfg: &RandomConfig, seed: u64) -> (Trace, Vec<RtValue>) {
    for attempt in 0..8u64 {
        let s = if attempt == 0 {
            seed
        } else {
            mix64(seed ^ attempt.wrapping_mul(0x9e37_79b9))
        };
        let (t, inputs) = Gen::new(cfg, s, cfg.loops).generate();
        if trace_ir::verify::verify(&t).is_ok() {
            let r = interp::run(&t, &inputs, &RunConfig::default());
            if is_expected_exit(&t, &r.outcome) {
                return (t, inputs);
            }
        }
    }
    // Straight-line generation executes every op as it is emitted, so it always succeeds.
    Gen::new(cfg, seed, false).generate()
}

#[derive(Copy, Clone)]
struct Live {
    v: Value,
    kind: Kind,
    /// May differ between loop iterations.
    variant: bool,
}

struct Descrs {
    size_plain: DescrRef,
    size_vt: DescrRef,
    size_vt2: DescrRef,
    f_int: DescrRef,
    f_int4: DescrRef,
    f_u1: DescrRef,
    f_ref: DescrRef,
    f_float: DescrRef,
    f_imm: DescrRef,
    a_int: DescrRef,
    a_ref: DescrRef,
    a_u1: DescrRef,
    /// Field views: the low half of `inst_a`, the second byte of `inst_b`, `inst_f` as an
    /// integer, `inst_a` as a float, `inst_k` (immutable) as a mutable field. (No view of a
    /// reference field: its bytes are an address, which the runs of one program need not
    /// share.)
    v_a4: DescrRef,
    v_b1: DescrRef,
    v_fi: DescrRef,
    v_af: DescrRef,
    v_k: DescrRef,
    /// Array views: other widths, signedness and kinds over the same items.
    v_s1: DescrRef,
    v_u2: DescrRef,
    v_u8: DescrRef,
    v_f8: DescrRef,
    c_pure: DescrRef,
    c_write: DescrRef,
    c_raise_n: DescrRef,
    c_float: DescrRef,
    c_ref: DescrRef,
    c_force: DescrRef,
    c_cond: DescrRef,
}

struct Gen<'c> {
    cfg: &'c RandomConfig,
    rng: Rng,
    t: Trace,
    st: State,
    run_cfg: RunConfig,
    live: Vec<Live>,
    next_guard: u32,
    /// Per op: whether its value may differ between loop iterations.
    variant: Vec<bool>,
    d: Descrs,
    loops: bool,
    /// The loop being generated: (counter param, limit param, params to re-assign at the jump).
    in_loop: Option<LoopInfo>,
}

struct LoopInfo {
    counter: Value,
    limit: Value,
    /// Every label parameter and whether it is loop-variant.
    params: Vec<(Value, Kind, bool)>,
}

fn field(name: &str, offset: i64, size: u8, signed: bool, kind: Kind, immutable: bool) -> Descr {
    Descr::Field(FieldDescr {
        name: name.into(),
        offset,
        size,
        signed,
        kind,
        immutable,
    })
}

fn array(item_size: u8, signed: bool, kind: Kind) -> Descr {
    Descr::Array(ArrayDescr {
        item_size,
        signed,
        kind,
        base_offset: 16,
        len_offset: 8,
    })
}

fn call(result: Kind, args: &[Kind], effect: CallEffect) -> Descr {
    Descr::Call(CallDescr {
        result,
        result_size: if result == Kind::Void { 0 } else { 8 },
        args: args.to_vec(),
        effect,
        oopspec: None,
    })
}

const FUNCS: &[i64] = &[0x1000_1230, 0x1000_4560, 0x1000_7890];

impl<'c> Gen<'c> {
    fn new(cfg: &'c RandomConfig, seed: u64, loops: bool) -> Gen<'c> {
        let mut t = Trace::default();
        t.info.name = format!("random trace {seed}");
        let mut md = |d: Descr| t.make_descr(d);
        let d = Descrs {
            size_plain: md(Descr::Size(SizeDescr { size: 48, vtable: None })),
            size_vt: md(Descr::Size(SizeDescr {
                size: 48,
                vtable: Some(0x7000_1000),
            })),
            size_vt2: md(Descr::Size(SizeDescr { size: 56, vtable: None })),
            f_int: md(field("T.inst_a", 8, 8, true, Kind::Int, false)),
            f_int4: md(field("T.inst_b", 16, 4, true, Kind::Int, false)),
            f_u1: md(field("T.inst_c", 20, 1, false, Kind::Int, false)),
            f_ref: md(field("T.inst_p", 24, 8, false, Kind::Ref, false)),
            f_float: md(field("T.inst_f", 32, 8, false, Kind::Float, false)),
            f_imm: md(field("T.inst_k", 40, 8, true, Kind::Int, true)),
            a_int: md(array(8, true, Kind::Int)),
            a_ref: md(array(8, false, Kind::Ref)),
            a_u1: md(array(1, false, Kind::Int)),
            v_a4: md(field("T.view_a", 8, 4, true, Kind::Int, false)),
            v_b1: md(field("T.view_b", 17, 1, false, Kind::Int, false)),
            v_fi: md(field("T.view_f", 32, 8, true, Kind::Int, false)),
            v_af: md(field("T.view_af", 8, 8, false, Kind::Float, false)),
            v_k: md(field("T.view_k", 40, 8, true, Kind::Int, false)),
            v_s1: md(array(1, true, Kind::Int)),
            v_u2: md(array(2, false, Kind::Int)),
            v_u8: md(array(8, false, Kind::Int)),
            v_f8: md(array(8, false, Kind::Float)),
            c_pure: md(call(
                Kind::Int,
                &[Kind::Int, Kind::Int],
                CallEffect::ElidableCannotRaise,
            )),
            c_write: md(call(Kind::Int, &[Kind::Int], CallEffect::CannotRaise)),
            c_raise_n: md(call(Kind::Void, &[Kind::Ref], CallEffect::CanRaise)),
            c_float: md(call(Kind::Float, &[Kind::Float], CallEffect::ElidableCannotRaise)),
            c_ref: md(call(Kind::Ref, &[Kind::Int], CallEffect::ElidableCanRaise)),
            c_force: md(call(Kind::Int, &[Kind::Int], CallEffect::ForcesVirtualOrVirtualizable)),
            c_cond: md(call(Kind::Void, &[Kind::Int], CallEffect::CannotRaise)),
        };
        let mut rng = Rng::new(seed);
        t.aliasing = cfg.aliasing.unwrap_or_else(|| {
            if rng.chance(1, 3) {
                Aliasing::TypeBased
            } else {
                Aliasing::Bytes
            }
        });
        Gen {
            cfg,
            rng,
            t,
            st: State::default(),
            run_cfg: RunConfig::default(),
            live: Vec::new(),
            variant: Vec::new(),
            next_guard: 0,
            d,
            loops,
            in_loop: None,
        }
    }

    fn ex(&self, v: Value) -> RtValue {
        match v.as_op() {
            Some(o) => self.st.vals[o.index()],
            None => RtValue::from_const(self.t.consts.get(v.as_const().expect("a value is an op or a constant"))),
        }
    }

    fn is_variant(&self, v: Value) -> bool {
        v.as_op().is_some_and(|o| self.variant[o.index()])
    }

    fn konst(&mut self, c: Const) -> Value {
        self.t.make_const(c)
    }

    fn make_inputs(&mut self) -> Vec<RtValue> {
        let n_int = 1 + self.rng.index(self.cfg.max_int_inputs.max(1));
        let n_ref = self.rng.index(self.cfg.max_ref_inputs + 1);
        let n_float = if self.cfg.floats > 0 {
            self.rng.index(self.cfg.max_float_inputs + 1)
        } else {
            0
        };
        let mut kinds: Vec<Kind> = std::iter::repeat_n(Kind::Int, n_int)
            .chain(std::iter::repeat_n(Kind::Ref, n_ref))
            .chain(std::iter::repeat_n(Kind::Float, n_float))
            .collect();
        for i in (1..kinds.len()).rev() {
            let j = self.rng.index(i + 1);
            kinds.swap(i, j);
        }
        let mut inputs: Vec<RtValue> = Vec::new();
        for k in kinds {
            let earlier_ref = inputs
                .iter()
                .copied()
                .rfind(|v| matches!(v, RtValue::Ref(a) if *a != 0));
            let v = match k {
                Kind::Int => RtValue::Int(special_int(&mut self.rng)),
                // Aliasing inputs: two references to one external object.
                Kind::Ref if earlier_ref.is_some() && self.rng.chance(1, 3) => earlier_ref.unwrap_or(RtValue::Ref(0)),
                Kind::Ref if self.rng.chance(1, 6) => RtValue::Ref(0),
                Kind::Ref => RtValue::Ref(external_address(self.rng.next_u64())),
                _ => RtValue::float(special_float(&mut self.rng)),
            };
            let r = OpRef::new(self.t.ops.len());
            self.t.ops.push(Op::new(Opcode::input_for(k).expect("not void"), &[]));
            self.st.vals.push(v);
            self.variant.push(false);
            self.live.push(Live {
                v: Value::op(r),
                kind: k,
                variant: false,
            });
            inputs.push(v);
        }
        self.t.num_inputs = inputs.len();
        inputs
    }

    /// Append `op`, execute it; on failure (an invalid operation or a failing guard) take it
    /// back and return `None`.
    fn emit(&mut self, op: Op) -> Option<Value> {
        let pc = self.t.ops.len();
        let variant = self.in_loop.is_some()
            && (op.args.iter().any(|&a| self.is_variant(a)) || !(op.opcode.is_pure() || op.opcode.is_guard()));
        let kind = op.opcode.result_kind();
        let has_guard = op.guard.is_some();
        self.t.ops.push(op);
        self.st.vals.push(RtValue::Int(0));
        self.variant.push(variant);
        match interp::step_op(&self.t, &self.run_cfg, &mut self.st, pc) {
            Ok(_) => {
                let v = Value::op(OpRef::new(pc));
                if kind != Kind::Void {
                    self.live.push(Live { v, kind, variant });
                }
                Some(v)
            }
            Err(_) => {
                self.t.ops.pop();
                self.st.vals.pop();
                self.variant.pop();
                if has_guard {
                    self.t.guards.pop();
                }
                None
            }
        }
    }

    fn op(&mut self, opc: Opcode, args: &[Value], descr: Option<DescrRef>) -> Option<Value> {
        let mut op = Op::new(opc, args);
        op.descr = descr;
        self.emit(op)
    }

    fn fail_args(&mut self) -> Vec<FailArg> {
        let n = self.rng.index(6.min(self.live.len() + 1));
        let mut fa: Vec<FailArg> = (0..n).map(|_| FailArg::Value(self.rng.pick(&self.live).v)).collect();
        // Allocated objects in fail arguments: once the optimizer makes them virtual, the exit
        // has to rebuild them.
        if self.rng.chance(1, 2) {
            if let Some(p) = self.pick_live(Kind::Ref, |g, l| g.st.heap.is_allocated(g.ex(l.v).bits())) {
                fa.push(FailArg::Value(p));
            }
        }
        fa
    }

    fn guard(&mut self, opc: Opcode, args: &[Value]) -> bool {
        let fail_args = self.fail_args();
        let id = GuardId(self.next_guard);
        self.t.guards.push(GuardData {
            id,
            resume_key: 1000 + id.0 as u64,
            fail_args,
            virtuals: Vec::new(),
        });
        let mut op = Op::new(opc, args);
        op.guard = Some(GuardRef::new(self.t.guards.len() - 1));
        if self.emit(op).is_some() {
            self.next_guard += 1;
            true
        } else {
            false
        }
    }

    /// A live value of `kind` satisfying `ok`, if any.
    fn pick_live(&mut self, kind: Kind, ok: impl Fn(&Self, &Live) -> bool) -> Option<Value> {
        let cands: Vec<Value> = self
            .live
            .iter()
            .filter(|l| l.kind == kind && ok(self, l))
            .map(|l| l.v)
            .collect();
        if cands.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&cands))
        }
    }

    fn int_arg(&mut self) -> Value {
        if self.rng.chance(3, 10) {
            let c = special_int(&mut self.rng);
            return self.konst(Const::Int(c));
        }
        match self.pick_live(Kind::Int, |_, _| true) {
            Some(v) => v,
            None => {
                let c = special_int(&mut self.rng);
                self.konst(Const::Int(c))
            }
        }
    }

    fn invariant_int(&mut self) -> Option<Value> {
        self.pick_live(Kind::Int, |_, l| !l.variant)
    }

    fn float_arg(&mut self) -> Value {
        match self.pick_live(Kind::Float, |_, _| true) {
            Some(v) if self.rng.chance(3, 4) => v,
            _ => {
                let f = special_float(&mut self.rng);
                self.konst(Const::float(f))
            }
        }
    }

    fn ref_arg(&mut self) -> Value {
        // Prefer objects of the trace, so stores nest allocations into each other.
        if self.rng.chance(1, 2) {
            if let Some(p) = self.pick_live(Kind::Ref, |g, l| g.st.heap.is_allocated(g.ex(l.v).bits())) {
                return p;
            }
        }
        match self.pick_live(Kind::Ref, |_, _| true) {
            Some(v) => v,
            None => self.konst(Const::Ref(0)),
        }
    }

    /// A non-null reference to a struct (allocated struct or external object).
    fn struct_ref(&mut self) -> Option<Value> {
        self.pick_live(Kind::Ref, |g, l| {
            let a = g.ex(l.v).bits();
            a != 0
                && g.st
                    .heap
                    .objects
                    .get(&a)
                    .is_none_or(|o| matches!(o.kind, ObjKind::Struct { .. }))
        })
    }

    /// A reference to an allocated array and its length and descriptor.
    fn array_ref(&mut self) -> Option<(Value, u64, DescrRef)> {
        let v = self.pick_live(Kind::Ref, |g, l| {
            let a = g.ex(l.v).bits();
            g.st.heap
                .objects
                .get(&a)
                .is_some_and(|o| matches!(o.kind, ObjKind::Array { .. }))
                && g.array_descr_of(a).is_some()
        })?;
        let a = self.ex(v).bits();
        let len = self.st.heap.objects.get(&a)?.length()?;
        Some((v, len, self.array_descr_of(a)?))
    }

    /// The descriptor an allocated array was created with (found from its allocating op).
    fn array_descr_of(&self, addr: u64) -> Option<DescrRef> {
        self.t.ops.iter().enumerate().rev().find_map(|(i, op)| {
            (matches!(op.opcode, Opcode::NewArray | Opcode::NewArrayClear) && self.st.vals[i].bits() == addr)
                .then_some(op.descr)
                .flatten()
        })
    }

    /// An index valid for every array of length `len` (a power of two): a constant, or a
    /// live integer masked by `len - 1`.
    fn index_for(&mut self, len: u64) -> Option<Value> {
        if len == 0 {
            return None;
        }
        if self.rng.chance(1, 2) || !len.is_power_of_two() {
            let i = self.rng.below(len) as i64;
            return Some(self.konst(Const::Int(i)));
        }
        let x = self.int_arg();
        let m = self.konst(Const::Int(len as i64 - 1));
        self.op(Opcode::IntAnd, &[x, m], None)
    }

    fn generate(mut self) -> (Trace, Vec<RtValue>) {
        let inputs = self.make_inputs();
        let total = self.cfg.length.max(1);
        let loop_at = (self.loops && self.rng.chance(1, 2)).then(|| total / 4 + self.rng.index(total / 3 + 1));
        let mut count = 0;
        let mut tries = 0;
        while count < total && tries < total * 20 {
            tries += 1;
            if Some(count) == loop_at && self.in_loop.is_none() {
                self.start_loop();
            }
            if self.random_op() {
                count += 1;
            }
        }
        if self.in_loop.is_some() {
            self.end_loop();
        } else {
            let n = self.rng.index(5.min(self.live.len() + 1));
            let vals: Vec<Value> = (0..n).map(|_| self.rng.pick(&self.live).v).collect();
            self.t.ops.push(Op::new(Opcode::Finish, &vals));
        }
        (self.t, inputs)
    }

    fn random_op(&mut self) -> bool {
        let c = self.cfg;
        match self.rng.weighted(&[
            c.int_ops, c.ovf_ops, c.guards, c.heap, c.calls, c.floats, c.views, c.hints,
        ]) {
            Some(0) | None => self.int_op(),
            Some(1) => self.ovf_op(),
            Some(2) => self.guard_op(),
            Some(3) => self.heap_op(),
            Some(4) => self.call_op(),
            Some(5) => self.float_op(),
            Some(6) => self.view_op(),
            _ => self.hint_op(),
        }
    }

    fn int_op(&mut self) -> bool {
        use Opcode::*;
        const BIN: &[Opcode] = &[
            IntAdd,
            IntSub,
            IntMul,
            IntAnd,
            IntOr,
            IntXor,
            IntLt,
            IntLe,
            IntEq,
            IntNe,
            IntGt,
            IntGe,
            UintLt,
            UintLe,
            UintGt,
            UintGe,
            UintMulHigh,
            IntLshift,
            IntRshift,
            UintRshift,
            IntFloorDiv,
            IntMod,
            IntPyDiv,
            IntPyMod,
        ];
        const UN: &[Opcode] = &[
            IntIsTrue,
            IntIsZero,
            IntNeg,
            IntInvert,
            IntForceGeZero,
            SameAsI,
            IntSignext,
        ];
        if self.rng.chance(1, 4) {
            let opc = *self.rng.pick(UN);
            let x = self.int_arg();
            let args = if opc == IntSignext {
                let n = *self.rng.pick(&[1i64, 2, 4, 8]);
                vec![x, self.konst(Const::Int(n))]
            } else {
                vec![x]
            };
            return self.op(opc, &args, None).is_some();
        }
        let opc = *self.rng.pick(BIN);
        let x = self.int_arg();
        let y = match opc {
            IntLshift | IntRshift | UintRshift => {
                let y = self.int_arg();
                let ok = !self.is_variant(y) && (0..64).contains(&(self.ex(y).bits() as i64));
                if ok {
                    y
                } else if self.rng.chance(1, 2) {
                    let s = self.rng.below(64) as i64;
                    self.konst(Const::Int(s))
                } else {
                    let m = self.konst(Const::Int(63));
                    match self.op(IntAnd, &[y, m], None) {
                        Some(v) => v,
                        None => return false,
                    }
                }
            }
            IntFloorDiv | IntMod | IntPyDiv | IntPyMod => {
                let y = self.int_arg();
                if !self.is_variant(y) && self.ex(y).bits() != 0 {
                    y
                } else {
                    let one = self.konst(Const::Int(1));
                    match self.op(IntOr, &[y, one], None) {
                        Some(v) => v,
                        None => return false,
                    }
                }
            }
            _ => self.int_arg(),
        };
        let Some(r) = self.op(opc, &[x, y], None) else {
            return false;
        };
        if opc.has(trace_ir::opcode::OpFlags::BOOL_RESULT) && !self.is_variant(r) && self.rng.chance(1, 2) {
            let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
            self.guard(g, &[r]);
        }
        true
    }

    fn ovf_op(&mut self) -> bool {
        let opc = *self
            .rng
            .pick(&[Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf]);
        let (x, y) = (self.int_arg(), self.int_arg());
        if self.op(opc, &[x, y], None).is_none() {
            return false;
        }
        let g = if self.st.ovf {
            Opcode::GuardOverflow
        } else {
            Opcode::GuardNoOverflow
        };
        if !self.guard(g, &[]) {
            // Never expected: the guard is chosen from the flag. Keep the trace well-formed.
            self.t.ops.pop();
            self.st.vals.pop();
            self.variant.pop();
            self.live.pop();
            return false;
        }
        true
    }

    fn guard_op(&mut self) -> bool {
        use Opcode::*;
        match self.rng.below(6) {
            0 | 1 => {
                let Some(x) = self.invariant_int() else { return false };
                let g = if self.ex(x).bits() != 0 { GuardTrue } else { GuardFalse };
                self.guard(g, &[x])
            }
            2 => {
                let Some(x) = self.invariant_int() else { return false };
                let c = self.konst(Const::Int(self.ex(x).bits() as i64));
                self.guard(GuardValue, &[x, c])
            }
            3 => {
                let Some(p) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let g = if self.ex(p).bits() != 0 {
                    GuardNonnull
                } else {
                    GuardIsnull
                };
                self.guard(g, &[p])
            }
            4 => {
                let Some(p) = self.pick_live(Kind::Ref, |g, l| !l.variant && g.ex(l.v).bits() != 0) else {
                    return false;
                };
                let a = self.ex(p).bits();
                let class = match self.st.heap.objects.get(&a) {
                    Some(o) if o.class != 0 => o.class,
                    Some(_) => return false,
                    None => match self.st.heap.external.get(&a).and_then(|e| e.class) {
                        Some(c) => c,
                        None => *self.rng.pick(&[0x7000_1000u64, 0x7000_2000]),
                    },
                };
                let c = self.konst(Const::Int(class as i64));
                let g = if self.rng.chance(1, 2) {
                    GuardClass
                } else {
                    GuardNonnullClass
                };
                self.guard(g, &[p, c])
            }
            _ => {
                let Some(p) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let Some(q) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let opc = *self.rng.pick(&[PtrEq, PtrNe, InstancePtrEq, InstancePtrNe]);
                let Some(r) = self.op(opc, &[p, q], None) else {
                    return false;
                };
                let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
                self.guard(g, &[r])
            }
        }
    }

    fn heap_op(&mut self) -> bool {
        use Opcode::*;
        let d = &self.d;
        let (f_int, f_int4, f_u1, f_ref, f_float, f_imm) = (d.f_int, d.f_int4, d.f_u1, d.f_ref, d.f_float, d.f_imm);
        let (a_int, a_ref, a_u1) = (d.a_int, d.a_ref, d.a_u1);
        let (size_plain, size_vt, size_vt2) = (d.size_plain, d.size_vt, d.size_vt2);
        match self.rng.below(9) {
            0 => {
                let (opc, sd) =
                    *self
                        .rng
                        .pick(&[(New, size_plain), (NewWithVtable, size_vt), (NewWithVtable, size_vt2)]);
                let Some(p) = self.op(opc, &[], Some(sd)) else {
                    return false;
                };
                if opc == NewWithVtable && self.rng.chance(1, 2) {
                    let x = self.int_arg();
                    self.op(SetfieldGc, &[p, x], Some(f_imm));
                }
                true
            }
            1 => {
                let opc = *self.rng.pick(&[NewArray, NewArrayClear]);
                let ad = *self.rng.pick(&[a_int, a_ref, a_u1]);
                let len = *self.rng.pick(&[1i64, 2, 4, 8]);
                let n = self.konst(Const::Int(len));
                self.op(opc, &[n], Some(ad)).is_some()
            }
            2 | 3 => {
                let Some(p) = self.struct_ref() else { return false };
                let fd = *self.rng.pick(&[f_int, f_int4, f_u1, f_ref, f_float]);
                let v = match self.t.descr(fd).as_field().map(|f| f.kind) {
                    Some(Kind::Ref) => self.ref_arg(),
                    Some(Kind::Float) => self.float_arg(),
                    _ => self.int_arg(),
                };
                self.op(SetfieldGc, &[p, v], Some(fd)).is_some()
            }
            4 | 5 => {
                let Some(p) = self.struct_ref() else { return false };
                let fd = *self.rng.pick(&[f_int, f_int4, f_u1, f_ref, f_float, f_imm]);
                let opc = match self.t.descr(fd).as_field().map(|f| f.kind) {
                    Some(Kind::Ref) => GetfieldGcR,
                    Some(Kind::Float) => GetfieldGcF,
                    _ => GetfieldGcI,
                };
                self.op(opc, &[p], Some(fd)).is_some()
            }
            6 => {
                let Some((a, len, ad)) = self.array_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let v = match self.t.descr(ad).as_array().map(|x| x.kind) {
                    Some(Kind::Ref) => self.ref_arg(),
                    _ => self.int_arg(),
                };
                self.op(SetarrayitemGc, &[a, i, v], Some(ad)).is_some()
            }
            7 => {
                let Some((a, len, ad)) = self.array_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let opc = match self.t.descr(ad).as_array().map(|x| x.kind) {
                    Some(Kind::Ref) => GetarrayitemGcR,
                    _ => GetarrayitemGcI,
                };
                self.op(opc, &[a, i], Some(ad)).is_some()
            }
            _ => {
                let Some((a, _, ad)) = self.array_ref() else {
                    return false;
                };
                self.op(ArraylenGc, &[a], Some(ad)).is_some()
            }
        }
    }

    /// An access through a view (see [`RandomConfig::views`]): a field view of a struct, or
    /// an item of an allocated array read or written through another array descriptor.
    fn view_op(&mut self) -> bool {
        use Opcode::*;
        let d = &self.d;
        let fields = [d.v_a4, d.v_b1, d.v_fi, d.v_af, d.v_k];
        let arrays = [d.v_s1, d.v_u2, d.v_u8, d.v_f8, d.a_int, d.a_u1];
        let a_ref = d.a_ref;
        let write = self.rng.chance(1, 2);
        if self.rng.chance(1, 2) {
            let Some(p) = self.struct_ref() else { return false };
            let fd = *self.rng.pick(&fields);
            let kind = self.t.descr(fd).value_kind().unwrap_or(Kind::Int);
            return if write {
                let v = if kind == Kind::Float {
                    self.float_arg()
                } else {
                    self.int_arg()
                };
                self.op(SetfieldGc, &[p, v], Some(fd)).is_some()
            } else {
                let opc = if kind == Kind::Float { GetfieldGcF } else { GetfieldGcI };
                self.op(opc, &[p], Some(fd)).is_some()
            };
        }
        let Some((a, len, alloc)) = self.array_ref() else {
            return false;
        };
        // the bytes of a reference are an address (and an integer written over one would be
        // dereferenced by native code)
        if alloc == a_ref {
            return false;
        }
        let ad = *self.rng.pick(&arrays);
        let (Some(alloc_d), Some(view)) = (self.t.descr(alloc).as_array(), self.t.descr(ad).as_array()) else {
            return false;
        };
        // within the allocation's bytes, and below its length (native code checks the index
        // against the length word)
        let items = (len * alloc_d.item_size as u64 / view.item_size as u64).min(len);
        let kind = view.kind;
        let Some(i) = self.index_for(items) else { return false };
        if write {
            let v = if kind == Kind::Float {
                self.float_arg()
            } else {
                self.int_arg()
            };
            self.op(SetarrayitemGc, &[a, i, v], Some(ad)).is_some()
        } else {
            let opc = if kind == Kind::Float {
                GetarrayitemGcF
            } else {
                GetarrayitemGcI
            };
            self.op(opc, &[a, i], Some(ad)).is_some()
        }
    }

    /// A hint that is a promise, true on the example inputs: `assert_not_none` of a non-null
    /// reference, or `record_exact_class` of an object's class (deciding it for an external
    /// object, as a first class check would).
    fn hint_op(&mut self) -> bool {
        let Some(p) = self.pick_live(Kind::Ref, |g, l| !l.variant && g.ex(l.v).bits() != 0) else {
            return false;
        };
        if self.rng.chance(1, 2) {
            return self.op(Opcode::AssertNotNone, &[p], None).is_some();
        }
        let a = self.ex(p).bits();
        let class = match self.st.heap.objects.get(&a) {
            Some(o) if o.class != 0 => o.class,
            Some(_) => return false,
            None => match self.st.heap.external.get(&a).and_then(|e| e.class) {
                Some(c) => c,
                None => *self.rng.pick(&[0x7000_1000u64, 0x7000_2000]),
            },
        };
        let c = self.konst(Const::Int(class as i64));
        self.op(Opcode::RecordExactClass, &[p, c], None).is_some()
    }

    fn call_op(&mut self) -> bool {
        use Opcode::*;
        let f = *self.rng.pick(FUNCS);
        let func = self.konst(Const::Int(f));
        let d = &self.d;
        let (c_pure, c_write, c_raise_n, c_float, c_ref, c_force, c_cond) = (
            d.c_pure,
            d.c_write,
            d.c_raise_n,
            d.c_float,
            d.c_ref,
            d.c_force,
            d.c_cond,
        );
        match self.rng.below(7) {
            0 => {
                let (x, y) = (self.int_arg(), self.int_arg());
                let opc = if self.rng.chance(1, 2) { CallPureI } else { CallI };
                self.op(opc, &[func, x, y], Some(c_pure)).is_some()
            }
            1 => {
                let x = self.int_arg();
                self.op(CallI, &[func, x], Some(c_write)).is_some()
            }
            2 => {
                let p = self.ref_arg();
                if self.op(CallN, &[func, p], Some(c_raise_n)).is_none() {
                    return false;
                }
                self.guard(GuardNoException, &[]);
                true
            }
            3 if self.cfg.floats > 0 => {
                let x = self.float_arg();
                self.op(CallF, &[func, x], Some(c_float)).is_some()
            }
            4 => {
                let x = self.int_arg();
                if self.op(CallR, &[func, x], Some(c_ref)).is_none() {
                    return false;
                }
                self.guard(GuardNoException, &[]);
                true
            }
            5 => {
                let x = self.int_arg();
                if self.op(CallMayForceI, &[func, x], Some(c_force)).is_none() {
                    return false;
                }
                self.guard(GuardNotForced, &[]);
                true
            }
            _ => {
                let (c, x) = (self.int_arg(), self.int_arg());
                self.op(CondCallN, &[c, func, x], Some(c_cond)).is_some()
            }
        }
    }

    fn float_op(&mut self) -> bool {
        use Opcode::*;
        if self.rng.chance(1, 6) {
            // The same op with its operands both ways round, bits made visible: NaN payloads
            // tell them apart.
            let opc = *self.rng.pick(&[FloatAdd, FloatMul]);
            let (x, y) = (self.float_arg(), self.float_arg());
            for args in [[x, y], [y, x]] {
                let Some(r) = self.op(opc, &args, None) else {
                    return false;
                };
                self.op(ConvertFloatBytesToLonglong, &[r], None);
            }
            return true;
        }
        match self.rng.below(6) {
            0 | 1 => {
                let opc = *self.rng.pick(&[FloatAdd, FloatSub, FloatMul, FloatTrueDiv]);
                let (x, y) = (self.float_arg(), self.float_arg());
                self.op(opc, &[x, y], None).is_some()
            }
            2 => {
                let opc = *self
                    .rng
                    .pick(&[FloatNeg, FloatAbs, SameAsF, CastFloatToInt, ConvertFloatBytesToLonglong]);
                let x = self.float_arg();
                self.op(opc, &[x], None).is_some()
            }
            3 => {
                let opc = *self.rng.pick(&[CastIntToFloat, ConvertLonglongBytesToFloat]);
                let x = self.int_arg();
                self.op(opc, &[x], None).is_some()
            }
            _ => {
                let opc = *self.rng.pick(&[FloatLt, FloatLe, FloatEq, FloatNe, FloatGt, FloatGe]);
                let (x, y) = (self.float_arg(), self.float_arg());
                let Some(r) = self.op(opc, &[x, y], None) else {
                    return false;
                };
                if !self.is_variant(r) {
                    let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
                    self.guard(g, &[r]);
                }
                true
            }
        }
    }

    fn start_loop(&mut self) {
        let start = self.rng.range_i64(0, 3);
        let iters = 1 + self.rng.below(self.cfg.max_iterations.max(1) as u64) as i64;
        let i0 = self.konst(Const::Int(start));
        let n = self.konst(Const::Int(start + iters));
        let mut args: Vec<(Value, Kind, bool)> = vec![(i0, Kind::Int, true), (n, Kind::Int, false)];
        for _ in 0..self.rng.below(4) {
            let l = *self.rng.pick(&self.live);
            args.push((l.v, l.kind, false));
        }
        for _ in 0..1 + self.rng.below(2) {
            let x = self.int_arg();
            args.push((x, Kind::Int, true));
        }
        if self.rng.chance(1, 2) {
            if let Some(p) = self.struct_ref() {
                args.push((p, Kind::Ref, true));
            }
        }
        let label_pc = self.t.ops.len();
        let vals: Vec<Value> = args.iter().map(|a| a.0).collect();
        self.t.ops.push(Op::new(Opcode::Label, &vals));
        self.st.vals.push(RtValue::Int(0));
        self.variant.push(false);
        self.live.clear();
        let mut params = Vec::new();
        for &(_, kind, variant) in &args {
            let r = OpRef::new(self.t.ops.len());
            self.t
                .ops
                .push(Op::new(Opcode::input_for(kind).expect("not void"), &[]));
            self.st.vals.push(RtValue::Int(0));
            self.variant.push(variant);
            let v = Value::op(r);
            self.live.push(Live { v, kind, variant });
            params.push((v, kind, variant));
        }
        let in_loop = LoopInfo {
            counter: params[0].0,
            limit: params[1].0,
            params,
        };
        self.in_loop = Some(in_loop);
        let stepped = interp::step_op(&self.t, &self.run_cfg, &mut self.st, label_pc);
        debug_assert!(stepped.is_ok());
        let (counter, limit) = (
            self.in_loop.as_ref().map(|l| l.counter),
            self.in_loop.as_ref().map(|l| l.limit),
        );
        if let (Some(i), Some(n)) = (counter, limit) {
            if let Some(c) = self.op(Opcode::IntLt, &[i, n], None) {
                self.guard(Opcode::GuardTrue, &[c]);
            }
        }
    }

    fn end_loop(&mut self) {
        let Some(info) = self.in_loop.take() else { return };
        let one = self.konst(Const::Int(1));
        // Build the jump without executing it (that would start the next iteration).
        let i2 = self
            .op(Opcode::IntAdd, &[info.counter, one], None)
            .unwrap_or(info.counter);
        let mut vals: SmallVec<[Value; 8]> = SmallVec::new();
        for (k, &(p, kind, variant)) in info.params.iter().enumerate() {
            let v = match (k, variant) {
                (0, _) => i2,
                (_, false) => p,
                (_, true) if kind == Kind::Ref => {
                    // Same shape as the parameter, so body ops stay valid next time.
                    let shape = |g: &Self, v: Value| {
                        let a = g.ex(v).bits();
                        g.st.heap.objects.get(&a).map(|o| (o.kind.clone(), o.class))
                    };
                    let want = shape(self, p);
                    self.pick_live(Kind::Ref, |g, l| want.is_some() && shape(g, l.v) == want)
                        .unwrap_or(p)
                }
                (_, true) => self.pick_live(kind, |_, _| true).unwrap_or(p),
            };
            vals.push(v);
        }
        self.t.ops.push(Op::new(Opcode::Jump, &vals));
    }
}
