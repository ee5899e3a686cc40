//! The single forward pass.
//!
//! # Working values
//!
//! The pass builds its output in an *arena* of ops ([`Pass::ops`]) plus an *emission order*
//! ([`Pass::order`]): an op created for a virtual allocation lives in the arena from the
//! moment the input allocates it but enters the order only when (and if) it is materialized.
//! Operands in the arena are working values: arena ops or constants of the output pool (a
//! copy of the input pool, so input constants keep their `ConstRef`). Every input op maps to
//! a working value ([`Pass::map`]); a union-find over arena ops ([`Pass::uf`]) records later
//! equalities (`guard_value(x, 5)` makes `x` the constant 5 from there on), read only through
//! `find`. The final step sweeps dead pure ops backwards and renumbers the order into a fresh
//! [`Trace`].
//!
//! # Per op (the recorder expands, this pass only shrinks)
//!
//! 1. operands replaced by their representatives; constant folding through `trace_ir::eval`
//!    (an op whose evaluation is invalid is kept);
//! 2. the abstract value (`IntBound`) of every integer op; a singleton becomes a constant;
//!    `int_and`/`int_or` identities by known bits (seed 003);
//! 3. the peephole rules ([`crate::peephole`]);
//! 4. CSE of pure ops (commutative operands normalized), elidable and loop-invariant calls,
//!    immutable reads;
//! 5. guards: dropped when known to hold, otherwise emitted and learnt from (comparisons
//!    narrow both operands by the domain's backward functions; `guard_value` forwards the
//!    value to the constant; class and nullness are remembered);
//! 6. `_ovf` ops that cannot overflow become plain ops and lose their `guard_no_overflow`;
//!    after a passed `guard_no_overflow` the result's exact range is known, and it is
//!    propagated backwards to the operands only through the `_ovf` backward functions (never
//!    through wrapping `int_add`/`int_mul` results as if they could not wrap: seed 004);
//! 7. allocation removal (virtual objects, materialized at escapes, described in resume data);
//! 8. the heap cache ([`crate::heap`]); writes to non-virtual objects are delayed until
//!    something could observe them (a read of a location that may share a byte with them
//!    under the trace's memory model, [`crate::alias`]; a guard, a call or any other op with
//!    effects; the end of the trace), so a write overwritten before that is never emitted
//!    (`Reason::DeadStore`);
//! 9. a final backward sweep removing unused pure ops and heap reads.
//!
//! Hints that do nothing when executed are dropped: `quasiimmut_field` (its
//! `guard_not_invalidated` stays, repeated ones go until the next call), `virtual_ref` (its
//! result is its operand), `virtual_ref_finish`, `assert_not_none` (after recording what it
//! promises), `same_as_*`. `record_exact_class` is a promise too (`docs/memory-model.md`):
//! what it states is recorded, and it is dropped once the class was known already (the first
//! statement of an object's class stays: it decides the class of an external object for the
//! interpreter, and emits no code).
//!
//! # What the pass deliberately does not do
//!
//! - learn backwards through wrapping `int_mul`/`int_lshift` results, or through `_ovf` ops
//!   whose overflow guard did not pass (seed 004's miscompilations);
//! - forward narrow (`size < 8`) integer slots unless the value provably fits;
//! - relate two different descriptors' views of the same bytes: under byte views
//!   ([`trace_ir::Aliasing::Bytes`]) a write is observed by every overlapping view, so it is
//!   never removed as a redundant write-back (the interpreter chooses unwritten memory per
//!   view), and a value is forwarded only to a read through the descriptor that wrote it
//!   (no bit reinterpretation between kinds or widths);
//! - answer an immutable item read (`getarrayitem_gc_pure_*`) from a mutable one or the other
//!   way round (after a call the two may see different values of one item);
//! - track virtual fields whose byte ranges overlap another recorded field (such objects
//!   are materialized);
//! - keep writes pending across guards (resume data has no pending writes).
//!
//! # Loops
//!
//! At a `label` the parameters are fresh ops without any knowledge. Every virtual that is
//! still used after the label (as an operand, a label argument or in resume data) is
//! materialized before it, the heap cache and the CSE tables are cleared, and the exception
//! and invalidation flags are reset. Knowledge about values defined before the label stays
//! valid (they do not change between iterations).

use crate::alias::{Layout, Loc};
use crate::domain::{Cmp, IntBound};
use crate::fold::{fold_ovf, fold_pure};
use crate::heap::HeapCache;
use crate::peephole::{self, RuleEnv};
use crate::{OptError, Optimized, Options, Reason, Stats};
use smallvec::SmallVec;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{
    CallEffect, Const, ConstPool, ConstRef, Descr, DescrRef, FailArg, GuardData, GuardRef, Kind, Op, OpFlags, OpRef,
    Opcode, Trace, UnionFind, Value, ValueData, VirtualField, VirtualKind, VirtualObject,
};

/// No virtual object.
const NO_VIRT: u32 = u32::MAX;
/// Known non-null.
const F_NONNULL: u8 = 1;
/// An allocation of this trace (distinct from every other allocation op of the trace).
const F_FRESH: u8 = 2;
/// An `_ovf` op whose `guard_no_overflow` passed.
const F_OVF_CHECKED: u8 = 4;
/// Largest virtual array.
const MAX_VIRTUAL_ARRAY: i64 = 64;
// `Pass::removed_counts` has a slot per reason.
const _: () = assert!((Reason::Dead as usize) < 16);
/// Nesting limit of `RuleEnv::emit` and of backward propagation.
const MAX_DEPTH: u32 = 6;

/// What the pass knows about one arena op.
#[derive(Clone, Debug)]
struct Info {
    bound: IntBound<u64>,
    class: Option<i64>,
    virt: u32,
    flags: u8,
}

impl Default for Info {
    fn default() -> Self {
        Info {
            bound: IntBound::unbounded(),
            class: None,
            virt: NO_VIRT,
            flags: 0,
        }
    }
}

/// A virtual object: an allocation not (yet) emitted, with the fields written so far.
#[derive(Clone, Debug)]
struct Virtual {
    kind: VirtualKind,
    fields: Vec<(VirtualField, Value)>,
}

/// A write to a non-virtual object that is not emitted yet (see `Pass::pending`).
#[derive(Clone, Copy, Debug)]
struct PendingWrite {
    /// Where: a field, or an array item at a constant index (`index` holds it).
    loc: Loc,
    /// The index operand of an array item write.
    index: Option<Value>,
    obj: Value,
    val: Value,
}

/// `f` applied to each operand, without the generic `Extend` path of `SmallVec` (this runs for
/// every op, several times).
#[inline]
fn map_args(src: &[Value], mut f: impl FnMut(Value) -> Value) -> SmallVec<[Value; 3]> {
    if src.len() <= 3 {
        let mut buf = [Value::constant(ConstRef::new(0)); 3];
        for (slot, &a) in buf.iter_mut().zip(src) {
            *slot = f(a);
        }
        SmallVec::from_buf_and_len(buf, src.len())
    } else {
        src.iter().map(|&a| f(a)).collect()
    }
}

/// CSE key: opcode, descriptor and operands (commutative operands sorted).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Key {
    opcode: Opcode,
    descr: Option<DescrRef>,
    args: SmallVec<[Value; 3]>,
}

impl Key {
    fn new(opcode: Opcode, args: &[Value], descr: Option<DescrRef>) -> Key {
        let mut args: SmallVec<[Value; 3]> = SmallVec::from_slice(args);
        if opcode.is_commutative() && args.len() == 2 && args[1] < args[0] {
            args.swap(0, 1);
        }
        Key { opcode, descr, args }
    }
}

/// Facts about a descriptor that the pass asks often.
#[derive(Clone, Debug, Default)]
struct DescrFacts {
    /// Field: byte range, integer width and signedness, immutability.
    offset: i64,
    size: u8,
    signed: bool,
    kind: Option<Kind>,
    immutable: bool,
    is_field: bool,
}

/// The working tables of the pass, kept per thread between runs: optimizing many traces then
/// neither allocates nor pages in fresh tables for each one (STYLE.md #15: contexts are cleared,
/// not reallocated). On a loaded machine, freeing and re-faulting these pages cost more than
/// a fifth of the pass's time.
#[derive(Default)]
struct Scratch {
    ops: Vec<Op>,
    info: Vec<Info>,
    order: Vec<OpRef>,
    uf: UnionFind,
    map: Vec<Value>,
    last_use: Vec<u32>,
    cse: FxHashMap<Key, Value>,
    ovf_cse: FxHashMap<Key, Value>,
    const_cache: FxHashMap<Const, Value>,
    live: Vec<bool>,
    new_index: Vec<u32>,
    out_ops: Vec<OpRef>,
    heap: HeapCache,
    pending: Vec<PendingWrite>,
    virtuals: Vec<Virtual>,
    descr_facts: Vec<DescrFacts>,
    layout: Layout,
}

/// Tables of traces up to this many ops are kept for the next run (larger ones are freed).
const SCRATCH_KEEP_OPS: usize = 1 << 16;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

/// One frame of `materialize`'s explicit stack: the object, its recorded fields, the index
/// of the next field to write, and its kind.
type MaterializeFrame = (Value, Vec<(VirtualField, Value)>, usize, VirtualKind);

pub(crate) struct Pass<'a> {
    input: &'a Trace,
    opts: &'a Options,
    /// The arena of working ops.
    ops: Vec<Op>,
    /// Per arena op knowledge.
    info: Vec<Info>,
    /// Emission order (arena ops).
    order: Vec<OpRef>,
    /// Constant pool of the output.
    consts: ConstPool,
    /// Unnamed constants interned so far.
    const_cache: FxHashMap<Const, Value>,
    /// Resume data of emitted guards, by `GuardRef`.
    guards: Vec<GuardData>,
    uf: UnionFind,
    /// Input op -> working value.
    map: Vec<Value>,
    /// Input op -> index of its last use (operand or resume data).
    last_use: Vec<u32>,
    cse: FxHashMap<Key, Value>,
    ovf_cse: FxHashMap<Key, Value>,
    heap: HeapCache,
    /// Writes delayed until something could observe them (a read of a possibly aliasing slot,
    /// a guard, a call or any other op with effects, the end of the trace), so that a write
    /// overwritten before that is never emitted. Only with the heap cache on.
    pending: Vec<PendingWrite>,
    virtuals: Vec<Virtual>,
    descr_facts: Vec<DescrFacts>,
    /// The descriptors' bytes and which may overlap under the trace's memory model.
    layout: Layout,
    stats: Stats,
    /// The loop header's input position and what is assumed about its parameters (see
    /// [`run`]); `None` without such assumptions.
    header_facts: Option<(usize, &'a HeaderFacts)>,
    /// Removed input ops by [`Reason`] (moved into `stats` at the end).
    removed_counts: [usize; 16],
    depth: u32,
    /// No exception can be pending (a `guard_no_exception` passed since the last op that may raise).
    exc_clear: bool,
    /// A `guard_not_invalidated` passed since the last call.
    not_invalidated: bool,
    /// Scratch of `emit_guard`: virtual op -> index in the guard's resume data (empty between
    /// guards; kept only to reuse its allocation).
    resume_memo: FxHashMap<OpRef, u32>,
    /// Scratch of `resume_value`: virtuals whose description is pending.
    resume_work: Vec<(OpRef, u32)>,
    /// While a `guard_true`/`guard_false` is emitted: its condition and the constant the
    /// condition has whenever the guard fails. Resume data names that constant instead of the
    /// condition, so the comparison is not kept alive only for the exit (the backend then
    /// fuses it into the guard's jump).
    exit_subst: Option<(Value, Value)>,
    /// The tables of `finish` (the others are moved out into the fields above while the pass
    /// runs, and back at the end).
    scratch: Box<Scratch>,
}

/// Run the pass (see the module documentation).
pub(crate) fn run(input: &Trace, opts: &Options) -> Result<Optimized, OptError> {
    if cfg!(debug_assertions) {
        trace_ir::verify(input).map_err(OptError::BadInput)?;
    } else {
        precheck(input)?;
    }
    let Some(peeled) = opts.peel.then(|| trace_ir::peel_loop(input)).flatten() else {
        return run_once(input, opts, &HeaderFacts::default());
    };
    // Which loop parameters are invariant shows only in the output (the recorded jump passes
    // values read back from boxes, forwarded to the parameters by the pass), so a first run
    // finds them and a second one uses what the peeled iteration established about them.
    // The second output is kept only if its jump still passes them back unchanged; the
    // translation validator relies on exactly that.
    //
    // The same goes for parameters the jump masks (`trace_ir::masked_params`: the back edge
    // brings `x & C` with `C = 2^k - 1`): with an entry operand in `[0, C]` the parameter is
    // in `[0, C]` in every iteration, and the second run assumes so. The second output is
    // kept only if its jump still masks them with the same constants (the validator checks
    // the assumption by that same shape).
    let first = run_once(&peeled, opts, &HeaderFacts::default())?;
    let facts = HeaderFacts::of(&first.trace);
    if facts.is_empty() {
        return Ok(first);
    }
    let second = run_once(&peeled, opts, &facts)?;
    Ok(if facts.hold_in(&HeaderFacts::of(&second.trace)) {
        second
    } else {
        first
    })
}

/// What the second run over a peeled loop assumes about its header's parameters: which are
/// loop-invariant (they get their operand's facts, see `Pass::import_facts`) and which are
/// masked by the back edge (`[0, C]` when their entry operand is in it too).
#[derive(Default)]
pub(crate) struct HeaderFacts {
    invariant: Vec<bool>,
    masks: Vec<Option<u64>>,
}

impl HeaderFacts {
    /// What the shape of `t`'s loop (its final jump) says about its header's parameters.
    fn of(t: &Trace) -> HeaderFacts {
        HeaderFacts {
            invariant: trace_ir::invariant_params(t).map(|(_, v)| v).unwrap_or_default(),
            masks: trace_ir::masked_params(t).map(|(_, v)| v).unwrap_or_default(),
        }
    }

    fn is_empty(&self) -> bool {
        !self.invariant.contains(&true) && self.masks.iter().all(Option::is_none)
    }

    /// Whether everything assumed here still holds by the shape of `later` (the output of
    /// the run that assumed it): the same parameters invariant, the same masks.
    fn hold_in(&self, later: &HeaderFacts) -> bool {
        later.invariant.len() == self.invariant.len()
            && later.masks.len() == self.masks.len()
            && self
                .invariant
                .iter()
                .zip(&later.invariant)
                .all(|(&was, &now)| now || !was)
            && self
                .masks
                .iter()
                .zip(&later.masks)
                .all(|(was, now)| was.is_none() || now == was)
    }
}

/// One pass over `input`, assuming `facts` about the parameters of the loop header (the
/// label the final jump goes back to).
fn run_once(input: &Trace, opts: &Options, facts: &HeaderFacts) -> Result<Optimized, OptError> {
    let scratch = SCRATCH.with(|c| c.take()).unwrap_or_default();
    let mut p = Pass::new(input, opts, scratch);
    if !facts.is_empty() {
        p.header_facts = trace_ir::invariant_params(input).map(|(header, _)| (header.index(), facts));
    }
    p.run()?;
    p.finish()
}

/// The structural facts the pass relies on (release builds; debug builds run the full
/// verifier): operands defined before use, descriptors and resume data present and in range,
/// arities as in the opcode table, label parameters after labels. A violation is an error, not
/// a panic.
fn precheck(t: &Trace) -> Result<(), OptError> {
    let bad = |i: usize, m: &str| {
        Err(OptError::BadInput(trace_ir::VerifyError {
            op: Some(OpRef::new(i)),
            message: m.to_string(),
        }))
    };
    let n = t.ops.len();
    if t.num_inputs > n || t.ops[..t.num_inputs].iter().any(|o| !o.opcode.is_input()) {
        return Err(OptError::BadInput(trace_ir::VerifyError {
            op: None,
            message: "bad trace inputs".into(),
        }));
    }
    let ok_value = |v: Value, i: usize| match v.data() {
        ValueData::Op(o) => o.index() < i,
        ValueData::Const(c) => c.index() < t.consts.len(),
    };
    let mut params = 0usize;
    for (i, op) in t.ops.iter().enumerate().skip(t.num_inputs) {
        let opc = op.opcode;
        if opc.is_input() {
            if params == 0 {
                return bad(i, "input op outside the label parameters");
            }
            params -= 1;
            continue;
        }
        if params != 0 {
            return bad(i, "label is missing parameters");
        }
        let sig = opc.info().args.as_bytes();
        let variadic = sig.last() == Some(&b'*');
        let fixed = sig.len() - variadic as usize;
        if (variadic && op.args.len() < fixed) || (!variadic && op.args.len() != fixed) {
            return bad(i, "wrong number of operands");
        }
        if op.args.iter().any(|&a| !ok_value(a, i)) {
            return bad(i, "operand used before its definition");
        }
        match (opc.descr_kind(), op.descr) {
            (_, Some(d)) if d.index() >= t.descrs.len() => return bad(i, "missing descriptor"),
            (trace_ir::DescrKind::None | trace_ir::DescrKind::Any, _) => {}
            (_, None) => return bad(i, "missing descriptor"),
            _ => {}
        }
        if opc.is_guard() {
            let Some(g) = op.guard.filter(|g| g.index() < t.guards.len()) else {
                return bad(i, "guard without resume data");
            };
            let gd = t.guard(g);
            let ok_fa = |fa: &FailArg| match *fa {
                FailArg::Value(v) => ok_value(v, i),
                FailArg::Virtual(k) => (k as usize) < gd.virtuals.len(),
                FailArg::Hole => true,
            };
            let vdescr_ok = |vo: &VirtualObject| match vo.kind {
                VirtualKind::Struct { descr, .. } | VirtualKind::Array { descr, .. } => descr.index() < t.descrs.len(),
            };
            if !gd.fail_args.iter().all(ok_fa)
                || !gd
                    .virtuals
                    .iter()
                    .all(|vo| vdescr_ok(vo) && vo.fields.iter().all(|f| ok_fa(&f.1)))
            {
                return bad(i, "bad fail arguments");
            }
        }
        if opc == Opcode::Label {
            params = op.args.len();
        }
    }
    if params != 0 {
        return bad(n - 1, "trace ends inside a label's parameters");
    }
    Ok(())
}

impl<'a> Pass<'a> {
    fn new(input: &'a Trace, opts: &'a Options, mut s: Box<Scratch>) -> Pass<'a> {
        let n = input.ops.len();
        s.ops.clear();
        s.ops.reserve(n + 8);
        s.info.clear();
        s.info.reserve(n + 8);
        s.order.clear();
        s.order.reserve(n + 8);
        s.uf.clear(n + 8);
        s.map.clear();
        s.map.resize(n, Value::op(OpRef::new(0)));
        s.cse.clear();
        s.cse.reserve(n / 2);
        s.ovf_cse.clear();
        s.const_cache.clear();
        s.const_cache.reserve(64);
        let mut heap = std::mem::take(&mut s.heap);
        heap.clear();
        let mut pending = std::mem::take(&mut s.pending);
        pending.clear();
        let mut virtuals = std::mem::take(&mut s.virtuals);
        virtuals.clear();
        let mut descr_facts = std::mem::take(&mut s.descr_facts);
        descr_facts.clear();
        descr_facts.extend(input.descrs.iter().map(|d| match d {
            Descr::Field(f) => DescrFacts {
                offset: f.offset,
                size: f.size.max(1),
                signed: f.signed,
                kind: Some(f.kind),
                immutable: f.immutable,
                is_field: true,
            },
            Descr::Array(a) => DescrFacts {
                size: a.item_size.max(1),
                signed: a.signed,
                kind: Some(a.kind),
                ..Default::default()
            },
            _ => DescrFacts::default(),
        }));
        let mut layout = std::mem::take(&mut s.layout);
        layout.reset(input);
        Pass {
            input,
            opts,
            header_facts: None,
            ops: std::mem::take(&mut s.ops),
            info: std::mem::take(&mut s.info),
            order: std::mem::take(&mut s.order),
            consts: input.consts.clone(),
            const_cache: std::mem::take(&mut s.const_cache),
            guards: Vec::with_capacity(input.guards.len()),
            uf: std::mem::take(&mut s.uf),
            map: std::mem::take(&mut s.map),
            last_use: std::mem::take(&mut s.last_use),
            cse: std::mem::take(&mut s.cse),
            ovf_cse: std::mem::take(&mut s.ovf_cse),
            heap,
            pending,
            virtuals,
            descr_facts,
            layout,
            stats: Stats {
                ops_in: input.num_real_ops(),
                ..Default::default()
            },
            removed_counts: [0; 16],
            depth: 0,
            exc_clear: false,
            not_invalidated: false,
            resume_memo: FxHashMap::default(),
            resume_work: Vec::new(),
            exit_subst: None,
            scratch: s,
        }
    }

    // ------------------------------------------------------------------ basics

    fn removed(&mut self, r: Reason) {
        self.removed_counts[r as usize] += 1;
    }

    fn fired(&mut self, name: &'static str) {
        *self.stats.rules.entry(name).or_default() += 1;
    }

    /// The working value of an input operand.
    #[inline]
    fn get(&mut self, v: Value) -> Value {
        match v.data() {
            ValueData::Const(_) => v,
            ValueData::Op(o) => self.uf.find(self.map[o.index()]),
        }
    }

    #[inline]
    fn find(&mut self, v: Value) -> Value {
        self.uf.find(v)
    }

    fn push_arena(&mut self, op: Op) -> OpRef {
        let r = OpRef::new(self.ops.len());
        self.ops.push(op);
        self.info.push(Info::default());
        self.uf.grow(self.ops.len());
        r
    }

    fn emit(&mut self, op: Op) -> Value {
        let r = self.push_arena(op);
        self.order.push(r);
        Value::op(r)
    }

    fn const_val(&self, v: Value) -> Option<Const> {
        v.as_const().map(|c| self.consts.get(c))
    }

    fn const_i64(&self, v: Value) -> Option<i64> {
        match self.const_val(v) {
            Some(Const::Int(i)) => Some(i),
            _ => None,
        }
    }

    fn make_int(&mut self, c: i64) -> Value {
        self.make_const(Const::Int(c))
    }

    /// Intern a constant (a local cache in front of the pool, whose index hashes strings).
    fn make_const(&mut self, c: Const) -> Value {
        if let Some(&v) = self.const_cache.get(&c) {
            return v;
        }
        let v = Value::constant(self.consts.intern(c));
        self.const_cache.insert(c, v);
        v
    }

    fn zero_of(&mut self, kind: Kind) -> Value {
        self.make_const(match kind {
            Kind::Float => Const::Float(0),
            Kind::Ref => Const::Ref(0),
            _ => Const::Int(0),
        })
    }

    fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            ValueData::Op(o) => self.ops[o.index()].opcode.result_kind(),
            ValueData::Const(c) => self.consts.get(c).kind(),
        }
    }

    /// The abstract value of an integer working value.
    fn bound_of(&self, v: Value) -> IntBound<u64> {
        match v.data() {
            ValueData::Const(c) => match self.consts.get(c) {
                Const::Int(i) => IntBound::from_i64(i),
                _ => IntBound::unbounded(),
            },
            ValueData::Op(o) => self.info[o.index()].bound.clone(),
        }
    }

    /// Whether nothing is known about the integer value `v`.
    fn is_top(&self, v: Value) -> bool {
        match v.as_op() {
            Some(o) => {
                let b = &self.info[o.index()].bound;
                b.bits.unknowns == u64::MAX && b.range.lower == i64::MIN as u64 && b.range.upper == i64::MAX as u64
            }
            None => false,
        }
    }

    fn virt_of(&self, v: Value) -> Option<u32> {
        let o = v.as_op()?;
        let id = self.info[o.index()].virt;
        (id != NO_VIRT).then_some(id)
    }

    fn is_virtual(&self, v: Value) -> bool {
        self.virt_of(v).is_some()
    }

    fn known_nonnull(&self, v: Value) -> bool {
        match v.data() {
            ValueData::Const(c) => self.consts.get(c).bits() != 0,
            ValueData::Op(o) => {
                let i = &self.info[o.index()];
                i.virt != NO_VIRT || i.flags & F_NONNULL != 0
            }
        }
    }

    fn known_class(&self, v: Value) -> Option<i64> {
        let o = v.as_op()?;
        let i = &self.info[o.index()];
        if i.virt != NO_VIRT {
            return self.virtual_class(i.virt);
        }
        i.class
    }

    fn virtual_class(&self, id: u32) -> Option<i64> {
        match self.virtuals[id as usize].kind {
            VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr,
            } => self
                .input
                .descr(descr)
                .as_size()
                .map(|s| trace_ir::interp::default_class(s) as i64),
            _ => None,
        }
    }

    /// Whether two references may be the same object.
    fn may_alias(info: &[Info], a: Value, b: Value) -> bool {
        if a == b {
            return true;
        }
        match (a.as_op(), b.as_op()) {
            (Some(x), Some(y)) => !(info[x.index()].flags & F_FRESH != 0 && info[y.index()].flags & F_FRESH != 0),
            _ => true,
        }
    }

    /// From now on `v` is `c` (`v` a working value that is not a constant).
    fn make_equal(&mut self, v: Value, c: Value) {
        let v = self.find(v);
        let c = self.find(c);
        if v == c {
            return;
        }
        let Some(o) = v.as_op() else { return };
        if self.info[o.index()].virt != NO_VIRT {
            return;
        }
        if let Some(i) = self.const_i64(c) {
            self.info[o.index()].bound = IntBound::from_i64(i);
        }
        self.uf.make_equal_to(o, c);
    }

    fn set_nonnull(&mut self, v: Value) {
        if let Some(o) = v.as_op() {
            self.info[o.index()].flags |= F_NONNULL;
        }
    }

    // ------------------------------------------------------------------ driver

    fn compute_last_use(&mut self) {
        let t = self.input;
        let mut last = std::mem::take(&mut self.last_use);
        last.clear();
        last.resize(t.ops.len(), 0);
        let mut note = |v: Value, at: usize| {
            if let Some(o) = v.as_op() {
                last[o.index()] = at as u32;
            }
        };
        for (i, op) in t.ops.iter().enumerate() {
            for &a in &op.args {
                note(a, i);
            }
            if let Some(g) = op.guard {
                let gd = t.guard(g);
                for fa in gd
                    .fail_args
                    .iter()
                    .chain(gd.virtuals.iter().flat_map(|v| v.fields.iter().map(|f| &f.1)))
                {
                    if let FailArg::Value(v) = *fa {
                        note(v, i);
                    }
                }
            }
        }
        self.last_use = last;
    }

    fn run(&mut self) -> Result<(), OptError> {
        let t = self.input;
        if t.ops.iter().any(|o| o.opcode == Opcode::Label) {
            self.compute_last_use();
        }
        for i in 0..t.num_inputs {
            let v = self.emit(Op::new(t.ops[i].opcode, &[]));
            self.map[i] = v;
        }
        let mut i = t.num_inputs;
        while i < t.ops.len() {
            let op = &t.ops[i];
            if op.opcode == Opcode::Label {
                self.label(i);
                i += 1 + op.args.len();
                continue;
            }
            if op.opcode.is_ovf() {
                self.ovf(i)?;
                i += 2;
                continue;
            }
            self.op(i)?;
            i += 1;
        }
        Ok(())
    }

    fn op(&mut self, i: usize) -> Result<(), OptError> {
        let t = self.input;
        let op = &t.ops[i];
        let opc = op.opcode;
        let args = map_args(&op.args, |a| self.get(a));
        let res = if opc.is_guard() {
            self.guard(i, op, &args)?
        } else if opc.is_pure() {
            Some(self.pure(opc, &args, op.descr, true))
        } else {
            match opc {
                Opcode::New | Opcode::NewWithVtable | Opcode::NewArray | Opcode::NewArrayClear => {
                    Some(self.alloc(op, &args))
                }
                Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF => Some(self.getfield(op, &args)),
                Opcode::SetfieldGc => {
                    self.setfield(op, &args);
                    None
                }
                Opcode::GetarrayitemGcI
                | Opcode::GetarrayitemGcR
                | Opcode::GetarrayitemGcF
                | Opcode::GetarrayitemGcPureI
                | Opcode::GetarrayitemGcPureR
                | Opcode::GetarrayitemGcPureF => Some(self.getitem(op, &args)),
                Opcode::SetarrayitemGc => {
                    self.setitem(op, &args);
                    None
                }
                Opcode::ArraylenGc => Some(self.arraylen(op, &args)),
                Opcode::Jump | Opcode::Finish => {
                    self.flush_writes();
                    for &a in &args {
                        self.force(a);
                    }
                    self.emit(Op {
                        opcode: opc,
                        descr: op.descr,
                        guard: None,
                        args,
                    });
                    None
                }
                Opcode::QuasiimmutField | Opcode::Keepalive
                    if self.opts.virtuals && args.iter().any(|&a| self.is_virtual(a)) =>
                {
                    self.removed(Reason::Hint);
                    None
                }
                // A hint that does nothing when executed: the guard_not_invalidated that
                // follows it stays (and is deduplicated until the next call).
                Opcode::QuasiimmutField if self.opts.guards => {
                    self.removed(Reason::Hint);
                    None
                }
                // `virtual_ref(p, i)` is `p` in this model; `virtual_ref_finish` does nothing.
                Opcode::VirtualRef if self.opts.virtuals => {
                    self.removed(Reason::Hint);
                    Some(args[0])
                }
                Opcode::VirtualRefFinish if self.opts.virtuals => {
                    self.removed(Reason::Hint);
                    None
                }
                Opcode::AssertNotNone if self.opts.guards => {
                    self.set_nonnull(args[0]);
                    self.removed(Reason::Hint);
                    None
                }
                Opcode::RecordExactClass if self.opts.guards => {
                    // A promise: the class is known from here on. The hint stays when it is the
                    // first word about the class: it emits no code, and it is what decides an
                    // external object's class for the interpreter (its first class check),
                    // which a later class check of another class must not decide instead.
                    let c = self.const_i64(args[1]);
                    if self.is_virtual(args[0]) || (c.is_some() && self.known_class(args[0]) == c) {
                        self.removed(Reason::Hint);
                        return Ok(());
                    }
                    if let (Some(o), Some(c)) = (args[0].as_op(), c) {
                        self.info[o.index()].class = Some(c);
                        self.info[o.index()].flags |= F_NONNULL;
                    }
                    self.emit(Op {
                        opcode: opc,
                        descr: op.descr,
                        guard: None,
                        args,
                    });
                    None
                }
                _ if opc.is_call() => self.call(op, &args),
                _ => self.generic(op, &args),
            }
        };
        if let Some(v) = res {
            self.map[i] = v;
        }
        Ok(())
    }

    /// Any op without special treatment: its virtual operands escape; heap writes and
    /// barriers forget the heap.
    fn generic(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        self.flush_writes();
        for &a in args {
            self.force(a);
        }
        let opc = op.opcode;
        let v = self.emit(Op {
            opcode: opc,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        let f = opc.flags();
        if f.intersects(OpFlags::WRITES_HEAP | OpFlags::BARRIER) {
            self.heap.clear();
        }
        if f.intersects(OpFlags::BARRIER | OpFlags::CAN_RAISE) || matches!(opc, Opcode::RestoreException) {
            self.exc_clear = false;
        }
        if f.contains(OpFlags::BARRIER) {
            self.not_invalidated = false;
        }
        if self.opts.intbounds && matches!(opc, Opcode::Strlen | Opcode::Unicodelen) {
            self.info[v.as_op().unwrap().index()].bound = IntBound::nonnegative();
        }
        if matches!(opc, Opcode::Newstr | Opcode::Newunicode) {
            self.info[v.as_op().unwrap().index()].flags |= F_FRESH | F_NONNULL;
        }
        (opc.result_kind() != Kind::Void).then_some(v)
    }

    // ------------------------------------------------------------------ pure ops

    /// Optimize the pure op `opc(args)` (working values): fold, bounds, rules, CSE, emit.
    /// `top` is true for ops of the input (counted in the statistics when removed).
    fn pure(&mut self, opc: Opcode, args: &[Value], descr: Option<DescrRef>, top: bool) -> Value {
        let count = |p: &mut Self, r: Reason| {
            if top {
                p.removed(r)
            }
        };
        if matches!(opc, Opcode::SameAsI | Opcode::SameAsR | Opcode::SameAsF) {
            count(self, Reason::Hint);
            return args[0];
        }
        // 1. constant folding
        if self.opts.fold && args.iter().all(|a| a.is_const()) {
            let mut bits: SmallVec<[u64; 3]> = SmallVec::new();
            for &a in args {
                bits.push(self.const_val(a).map_or(0, |c| c.bits()));
            }
            if let Some(c) = fold_pure(opc, &bits) {
                count(self, Reason::Folded);
                return self.make_const(c);
            }
        }
        // pointer identity (also of virtuals, which must not escape here)
        if matches!(
            opc,
            Opcode::PtrEq | Opcode::PtrNe | Opcode::InstancePtrEq | Opcode::InstancePtrNe
        ) {
            if let Some(eq) = self.known_ptr_eq(args[0], args[1]) {
                let want_eq = matches!(opc, Opcode::PtrEq | Opcode::InstancePtrEq);
                count(self, Reason::Folded);
                return self.make_int((eq == want_eq) as i64);
            }
        }
        // 2. abstract value
        let is_int = opc.result_kind() == Kind::Int;
        let mut bound = None;
        if self.opts.intbounds && is_int {
            // fast path: these ops map "nothing known" to "nothing known"
            let b = if matches!(
                opc,
                Opcode::IntAdd | Opcode::IntSub | Opcode::IntMul | Opcode::IntXor | Opcode::IntNeg | Opcode::IntInvert
            ) && args.iter().all(|&a| self.is_top(a))
            {
                IntBound::unbounded()
            } else {
                self.transfer(opc, args)
            };
            if !b.is_empty() {
                if let Some(c) = b.get_constant() {
                    count(self, Reason::BoundsConstant);
                    return self.make_int(c);
                }
                if matches!(opc, Opcode::IntAnd | Opcode::IntOr) {
                    let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                    let and = opc == Opcode::IntAnd;
                    let id = |x: &IntBound<u64>, y: &IntBound<u64>| {
                        if and {
                            x.is_and_identity(y)
                        } else {
                            x.is_or_identity(y)
                        }
                    };
                    let keep = if id(&ba, &bb) {
                        Some(args[0])
                    } else if id(&bb, &ba) {
                        Some(args[1])
                    } else {
                        None
                    };
                    if let Some(k) = keep {
                        self.fired(if and { "and_identity" } else { "or_identity" });
                        count(self, Reason::Identity);
                        return k;
                    }
                }
                bound = Some(b);
            }
        }
        // 3. peephole rules
        if self.opts.rules && self.depth < MAX_DEPTH {
            self.depth += 1;
            let r = peephole::apply(self, opc, args);
            self.depth -= 1;
            if let Some((name, v)) = r {
                self.fired(name);
                count(self, Reason::Rule);
                return self.find(v);
            }
        }
        // virtual operands of any other pure op escape
        for &a in args {
            self.force(a);
        }
        // 4. CSE
        let key = if self.opts.cse {
            Some(Key::new(opc, args, descr))
        } else {
            None
        };
        if let Some(k) = &key {
            if let Some(&v) = self.cse.get(k) {
                count(self, Reason::Cse);
                return self.find(v);
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if let Some(b) = bound {
            self.info[v.as_op().unwrap().index()].bound = b;
        }
        if let Some(k) = key {
            self.cse.insert(k, v);
        }
        v
    }

    /// Whether two references are known equal (`Some(true)`) or known different.
    fn known_ptr_eq(&self, a: Value, b: Value) -> Option<bool> {
        if a == b {
            return Some(true);
        }
        if let (Some(x), Some(y)) = (self.const_val(a), self.const_val(b)) {
            return Some(x.bits() == y.bits());
        }
        let (va, vb) = (self.is_virtual(a), self.is_virtual(b));
        if va || vb {
            // a virtual is a fresh object only reachable through its own value
            return Some(false);
        }
        let null = |v: Value| self.const_val(v).map(|c| c.bits() == 0).unwrap_or(false);
        if (null(a) && self.known_nonnull(b)) || (null(b) && self.known_nonnull(a)) {
            return Some(false);
        }
        if let (Some(x), Some(y)) = (a.as_op(), b.as_op()) {
            if self.info[x.index()].flags & F_FRESH != 0 && self.info[y.index()].flags & F_FRESH != 0 {
                return Some(false);
            }
        }
        None
    }

    /// The forward transfer function of an integer op.
    fn transfer(&self, opc: Opcode, args: &[Value]) -> IntBound<u64> {
        use Opcode::*;
        let a = |i: usize| self.bound_of(args[i]);
        match opc {
            IntAdd => a(0).add(&a(1)),
            IntSub => a(0).sub(&a(1)),
            IntMul => a(0).mul(&a(1)),
            IntAnd => a(0).and(&a(1)),
            IntOr => a(0).or(&a(1)),
            IntXor => a(0).xor(&a(1)),
            UintMulHigh => a(0).uint_mul_high(&a(1)),
            IntFloorDiv => a(0).floordiv(&a(1)),
            IntMod => a(0).modulo(&a(1)),
            IntPyDiv => a(0).pydiv(&a(1)),
            IntPyMod => a(0).pymod(&a(1)),
            IntLshift => a(0).lshift(&a(1)),
            IntRshift => a(0).rshift(&a(1)),
            UintRshift => a(0).uint_rshift(&a(1)),
            IntEq => a(0).eq(&a(1)),
            IntNe => a(0).ne(&a(1)),
            IntLt => a(0).lt(&a(1)),
            IntLe => a(0).le(&a(1)),
            IntGt => a(0).gt(&a(1)),
            IntGe => a(0).ge(&a(1)),
            UintLt => a(0).ult(&a(1)),
            UintLe => a(0).ule(&a(1)),
            UintGt => a(0).ugt(&a(1)),
            UintGe => a(0).uge(&a(1)),
            IntIsTrue => a(0).is_true(),
            IntIsZero => a(0).is_zero(),
            IntNeg => a(0).neg(),
            IntInvert => a(0).invert(),
            IntForceGeZero => a(0).force_ge_zero(),
            IntSignext => match self.const_i64(args[1]) {
                Some(n @ (1 | 2 | 4 | 8)) => a(0).signext(n as u32),
                _ => IntBound::unbounded(),
            },
            _ if opc.has(OpFlags::BOOL_RESULT) => IntBound::boolean(),
            _ => IntBound::unbounded(),
        }
    }

    // ------------------------------------------------------------------ guards

    /// Emit the guard `op` (of the input) with operands `args`, translating its resume data.
    fn emit_guard(&mut self, op: &Op, args: &[Value]) -> Value {
        // an exit observes the heap: delayed writes happen before it
        self.flush_writes();
        for &a in args {
            self.force(a);
        }
        let t = self.input;
        let gd = t.guard(op.guard.expect("verified: guards carry resume data"));
        let mut virtuals: Vec<VirtualObject> = Vec::new();
        // scratch tables kept in the pass between guards (no allocation per guard)
        let mut memo = std::mem::take(&mut self.resume_memo);
        memo.clear();
        let mut in_memo: Vec<(u32, u32)> = Vec::new();
        let mut fail_args = Vec::with_capacity(gd.fail_args.len());
        for fa in &gd.fail_args {
            let out = self.resume_arg(*fa, gd, &mut virtuals, &mut memo, &mut in_memo);
            fail_args.push(out);
        }
        if !virtuals.is_empty() {
            self.stats.guards_with_virtuals += 1;
        }
        self.resume_memo = memo;
        let g = GuardRef::new(self.guards.len());
        self.guards.push(GuardData {
            id: gd.id,
            resume_key: gd.resume_key,
            fail_args,
            virtuals,
        });
        self.emit(Op {
            opcode: op.opcode,
            descr: op.descr,
            guard: Some(g),
            args: SmallVec::from_slice(args),
        })
    }

    fn resume_arg(
        &mut self,
        fa: FailArg,
        gd: &GuardData,
        out: &mut Vec<VirtualObject>,
        memo: &mut FxHashMap<OpRef, u32>,
        in_memo: &mut Vec<(u32, u32)>,
    ) -> FailArg {
        match fa {
            FailArg::Hole => FailArg::Hole,
            FailArg::Value(v) => {
                let v = self.get(v);
                self.resume_value(v, out, memo)
            }
            FailArg::Virtual(i) => {
                if let Some(&(_, k)) = in_memo.iter().find(|m| m.0 == i) {
                    return FailArg::Virtual(k);
                }
                let k = out.len() as u32;
                in_memo.push((i, k));
                let src = &gd.virtuals[i as usize];
                out.push(VirtualObject {
                    kind: src.kind,
                    fields: Vec::new(),
                });
                let mut fields = Vec::with_capacity(src.fields.len());
                for &(f, fa) in &src.fields {
                    let x = self.resume_arg(fa, gd, out, memo, in_memo);
                    fields.push((f, x));
                }
                out[k as usize].fields = fields;
                FailArg::Virtual(k)
            }
        }
    }

    /// A working value in resume data: virtual objects are described, not materialized.
    /// Objects get their index when first seen and are described breadth first (no recursion,
    /// so long chains cannot overflow the stack); shared and cyclic structures stay so.
    fn resume_value(&mut self, v: Value, out: &mut Vec<VirtualObject>, memo: &mut FxHashMap<OpRef, u32>) -> FailArg {
        if !self.is_virtual(v) {
            return FailArg::Value(self.at_exit(v));
        }
        let mut work = std::mem::take(&mut self.resume_work);
        work.clear();
        let first = self.virtual_index(v, out, memo, &mut work);
        while let Some((o, k)) = work.pop() {
            let id = self.info[o.index()].virt as usize;
            let n = self.virtuals[id].fields.len();
            let mut fields = Vec::with_capacity(n);
            for j in 0..n {
                let (f, val) = self.virtuals[id].fields[j];
                let val = self.find(val);
                let x = if self.is_virtual(val) {
                    self.virtual_index(val, out, memo, &mut work)
                } else {
                    FailArg::Value(self.at_exit(val))
                };
                fields.push((f, x));
            }
            out[k as usize].fields = fields;
        }
        self.resume_work = work;
        first
    }

    /// The value resume data names for the non-virtual `v` at the exit of the guard being
    /// emitted (see [`Pass::exit_subst`]).
    #[inline]
    fn at_exit(&self, v: Value) -> Value {
        match self.exit_subst {
            Some((c, k)) if c == v => k,
            _ => v,
        }
    }

    /// The resume-data index of the virtual `v` (allocating it and queueing its description
    /// on first sight).
    fn virtual_index(
        &self,
        v: Value,
        out: &mut Vec<VirtualObject>,
        memo: &mut FxHashMap<OpRef, u32>,
        work: &mut Vec<(OpRef, u32)>,
    ) -> FailArg {
        let o = v.as_op().unwrap();
        if let Some(&k) = memo.get(&o) {
            return FailArg::Virtual(k);
        }
        let k = out.len() as u32;
        memo.insert(o, k);
        let id = self.info[o.index()].virt as usize;
        out.push(VirtualObject {
            kind: self.virtuals[id].kind,
            fields: Vec::new(),
        });
        work.push((o, k));
        FailArg::Virtual(k)
    }

    fn guard(&mut self, i: usize, op: &Op, args: &[Value]) -> Result<Option<Value>, OptError> {
        use Opcode::*;
        let g = self.opts.guards;
        match op.opcode {
            GuardTrue | GuardFalse => {
                let want = op.opcode == GuardTrue;
                let c = args[0];
                if g {
                    let b = self.bound_of(c);
                    let holds = if want {
                        !b.contains_i64(0)
                    } else {
                        b.get_constant() == Some(0)
                    };
                    if holds && !b.is_empty() {
                        self.removed(Reason::GuardKnown);
                        return Ok(None);
                    }
                }
                // When the guard fails, `c` is 0 (`guard_true`), or 1 (`guard_false` on a boolean).
                if g && !c.is_const() && self.kind_of(c) == Kind::Int {
                    let b = self.bound_of(c);
                    let at_exit = if want {
                        Some(0)
                    } else if !b.is_empty() && b.lower_i64() >= 0 && b.upper_i64() <= 1 {
                        Some(1)
                    } else {
                        None
                    };
                    if let Some(k) = at_exit {
                        let k = self.make_int(k);
                        self.exit_subst = Some((c, k));
                    }
                }
                self.emit_guard(op, args);
                self.exit_subst = None;
                if g {
                    self.learn_bool(c, want, 0);
                }
            }
            GuardValue => {
                let (x, c) = (args[0], args[1]);
                if g {
                    let known = x == c
                        || match (self.const_val(x), self.const_val(c)) {
                            (Some(a), Some(b)) => a == b,
                            (None, Some(Const::Int(k))) => self.bound_of(x).get_constant() == Some(k),
                            _ => false,
                        };
                    if known {
                        self.removed(Reason::GuardKnown);
                        return Ok(None);
                    }
                }
                self.force(x);
                self.force(c);
                self.emit_guard(op, args);
                if g && c.is_const() && !x.is_const() && self.kind_of(x) != Kind::Float {
                    if let Some(Const::Ref(bits)) = self.const_val(c) {
                        if bits != 0 {
                            self.set_nonnull(x);
                        }
                    }
                    self.make_equal(x, c);
                }
            }
            GuardNonnull => {
                let p = args[0];
                if g && self.known_nonnull(p) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.emit_guard(op, args);
                if g {
                    self.set_nonnull(p);
                }
            }
            GuardIsnull => {
                let p = args[0];
                if g && self.const_val(p).map(|c| c.bits() == 0).unwrap_or(false) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.force(p);
                self.emit_guard(op, args);
                if g && !p.is_const() && !self.known_nonnull(p) {
                    let null = self.make_const(Const::Ref(0));
                    self.make_equal(p, null);
                }
            }
            GuardClass | GuardNonnullClass => {
                let (p, cls) = (args[0], args[1]);
                let cls_c = self.const_i64(cls);
                if g && cls_c.is_some() && self.known_class(p) == cls_c && self.known_nonnull(p) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.force(p);
                self.emit_guard(op, args);
                if g {
                    if let Some(o) = p.as_op() {
                        self.info[o.index()].flags |= F_NONNULL;
                        if cls_c.is_some() {
                            self.info[o.index()].class = cls_c;
                        }
                    }
                }
            }
            GuardNoException => {
                if g && self.exc_clear {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.emit_guard(op, args);
                self.exc_clear = true;
            }
            GuardNotInvalidated => {
                if g && self.not_invalidated {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.emit_guard(op, args);
                self.not_invalidated = true;
            }
            GuardFutureCondition if g => {
                self.removed(Reason::GuardKnown);
                return Ok(None);
            }
            GuardNoOverflow | GuardOverflow => {
                return Err(OptError::Unsupported {
                    op: OpRef::new(i),
                    message: format!("{} does not follow an _ovf op", op.opcode),
                })
            }
            _ => {
                for &a in args {
                    self.force(a);
                }
                let v = self.emit_guard(op, args);
                if op.opcode == GuardException {
                    self.exc_clear = true;
                }
                if op.opcode.result_kind() != Kind::Void {
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    }

    /// Learn from a passed guard that `c` is non-zero (`truth`) or zero.
    fn learn_bool(&mut self, c: Value, truth: bool, depth: u32) {
        let c = self.find(c);
        let Some(o) = c.as_op() else { return };
        if depth > MAX_DEPTH {
            return;
        }
        let def = self.ops[o.index()].clone();
        if self.kind_of(c) != Kind::Int {
            return;
        }
        if truth {
            if def.opcode.has(OpFlags::BOOL_RESULT) {
                let one = self.make_int(1);
                self.make_equal(c, one);
            } else {
                let mut b = self.bound_of(c);
                b.make_nonzero();
                self.narrow(c, b, depth);
            }
        } else {
            let zero = self.make_int(0);
            self.make_equal(c, zero);
            if !def.opcode.has(OpFlags::BOOL_RESULT) {
                // e.g. `guard_false(int_and(x, 7))`: x's low three bits are 0
                self.narrow_operands(o, &IntBound::from_i64(0), depth);
            }
        }
        if !def.opcode.is_pure() {
            return;
        }
        let args = map_args(&def.args, |a| self.uf.find(a));
        use Opcode::*;
        let cmp = match def.opcode {
            IntLt => Some(Cmp::Lt),
            IntLe => Some(Cmp::Le),
            IntGt => Some(Cmp::Gt),
            IntGe => Some(Cmp::Ge),
            IntEq => Some(Cmp::Eq),
            IntNe => Some(Cmp::Ne),
            UintLt => Some(Cmp::Ult),
            UintLe => Some(Cmp::Ule),
            UintGt => Some(Cmp::Ugt),
            UintGe => Some(Cmp::Uge),
            _ => None,
        };
        if let Some(cmp) = cmp {
            self.remember_cmp(def.opcode, args[0], args[1], truth);
            let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
            let (na, nb) = IntBound::learn_cmp(cmp, truth, &ba, &bb);
            let equal = (cmp == Cmp::Eq && truth) || (cmp == Cmp::Ne && !truth);
            if equal {
                for (x, k) in [(args[0], args[1]), (args[1], args[0])] {
                    if k.is_const() {
                        self.make_equal(x, k);
                        // e.g. `int_eq(int_and(x, 7), 0)`: x's low three bits are 0
                        if let (Some(xo), Some(kc)) = (x.as_op(), self.const_i64(k)) {
                            self.narrow_operands(xo, &IntBound::from_i64(kc), depth);
                        }
                        return;
                    }
                }
            }
            self.narrow(args[0], na, depth);
            self.narrow(args[1], nb, depth);
            return;
        }
        match def.opcode {
            IntIsTrue | IntIsZero => {
                let nonzero = (def.opcode == IntIsTrue) == truth;
                if self.opts.cse {
                    let zero = self.make_int(0);
                    let (t, f) = (self.make_int(nonzero as i64), self.make_int(!nonzero as i64));
                    self.cse.insert(Key::new(IntIsTrue, &[args[0]], None), t);
                    self.cse.insert(Key::new(IntIsZero, &[args[0]], None), f);
                    self.cse.insert(Key::new(IntNe, &[args[0], zero], None), t);
                    self.cse.insert(Key::new(IntEq, &[args[0], zero], None), f);
                }
                self.learn_bool(args[0], nonzero, depth + 1)
            }
            PtrEq | PtrNe | InstancePtrEq | InstancePtrNe => {
                let eq = matches!(def.opcode, PtrEq | InstancePtrEq) == truth;
                let null = |p: &Self, v: Value| p.const_val(v).map(|c| c.bits() == 0).unwrap_or(false);
                if eq {
                    if args[1].is_const() {
                        self.make_equal(args[0], args[1]);
                    } else if args[0].is_const() {
                        self.make_equal(args[1], args[0]);
                    }
                } else if null(self, args[1]) {
                    self.set_nonnull(args[0]);
                } else if null(self, args[0]) {
                    self.set_nonnull(args[1]);
                }
            }
            _ => {}
        }
    }

    /// After a guard established `opc(a, b) == truth` for a comparison: the same comparison,
    /// its negation and their mirrored forms are known constants from here on (CSE table).
    fn remember_cmp(&mut self, opc: Opcode, a: Value, b: Value, truth: bool) {
        use Opcode::*;
        if !self.opts.cse {
            return;
        }
        let (neg, mirror) = match opc {
            IntLt => (IntGe, IntGt),
            IntLe => (IntGt, IntGe),
            IntGt => (IntLe, IntLt),
            IntGe => (IntLt, IntLe),
            IntEq => (IntNe, IntEq),
            IntNe => (IntEq, IntNe),
            UintLt => (UintGe, UintGt),
            UintLe => (UintGt, UintGe),
            UintGt => (UintLe, UintLt),
            UintGe => (UintLt, UintLe),
            _ => return,
        };
        let neg_mirror = match neg {
            IntLt => IntGt,
            IntLe => IntGe,
            IntGt => IntLt,
            IntGe => IntLe,
            UintLt => UintGt,
            UintLe => UintGe,
            UintGt => UintLt,
            UintGe => UintLe,
            other => other,
        };
        let (t, f) = (self.make_int(truth as i64), self.make_int(!truth as i64));
        self.cse.insert(Key::new(opc, &[a, b], None), t);
        self.cse.insert(Key::new(mirror, &[b, a], None), t);
        self.cse.insert(Key::new(neg, &[a, b], None), f);
        self.cse.insert(Key::new(neg_mirror, &[b, a], None), f);
    }

    /// Intersect the abstract value of `v` with `b` (knowledge from a passed guard), and
    /// propagate it backwards through the definition of `v` where the domain says it is sound.
    fn narrow(&mut self, v: Value, b: IntBound<u64>, depth: u32) {
        let v = self.find(v);
        let Some(o) = v.as_op() else { return };
        if self.kind_of(v) != Kind::Int || !self.opts.intbounds {
            return;
        }
        let cur = self.info[o.index()].bound.clone();
        let n = cur.intersect(&b);
        if n.is_empty() || n == cur {
            return;
        }
        self.info[o.index()].bound = n.clone();
        if let Some(c) = n.get_constant() {
            let k = self.make_int(c);
            self.make_equal(v, k);
        }
        self.narrow_operands(o, &n, depth);
    }

    /// `o`'s value is known to lie in `n` (from a passed guard): narrow the operands of its
    /// definition where the domain's backward functions say it is sound.
    fn narrow_operands(&mut self, o: OpRef, n: &IntBound<u64>, depth: u32) {
        if depth >= MAX_DEPTH || !self.opts.intbounds {
            return;
        }
        let n = n.clone();
        let def = self.ops[o.index()].clone();
        let args = map_args(&def.args, |a| self.uf.find(a));
        let checked = self.info[o.index()].flags & F_OVF_CHECKED != 0;
        use Opcode::*;
        match def.opcode {
            IntAdd | IntSub | IntAddOvf | IntSubOvf => {
                if matches!(def.opcode, IntAddOvf | IntSubOvf) && !checked {
                    return;
                }
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let (na, nb) = match def.opcode {
                    IntAdd => IntBound::backward_add(&ba, &bb, &n),
                    IntSub => IntBound::backward_sub(&ba, &bb, &n),
                    IntAddOvf => IntBound::backward_add_ovf(&ba, &bb, &n),
                    _ => IntBound::backward_sub_ovf(&ba, &bb, &n),
                };
                self.narrow(args[0], na, depth + 1);
                self.narrow(args[1], nb, depth + 1);
            }
            IntMulOvf if checked => {
                for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
                    if self.const_i64(y).map(|c| c > 0).unwrap_or(false) {
                        let na = IntBound::backward_mul_ovf_const(&self.bound_of(x), &self.bound_of(y), &n);
                        self.narrow(x, na, depth + 1);
                        break;
                    }
                }
            }
            IntNeg => {
                let na = IntBound::backward_neg(&self.bound_of(args[0]), &n);
                self.narrow(args[0], na, depth + 1);
            }
            IntInvert => {
                let na = IntBound::backward_invert(&self.bound_of(args[0]), &n);
                self.narrow(args[0], na, depth + 1);
            }
            IntAnd | IntOr => {
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let (na, nb) = if def.opcode == IntAnd {
                    IntBound::backward_and(&ba, &bb, &n)
                } else {
                    IntBound::backward_or(&ba, &bb, &n)
                };
                self.narrow(args[0], na, depth + 1);
                self.narrow(args[1], nb, depth + 1);
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------ overflow

    /// An `_ovf` op at input index `i` and its guard at `i + 1`.
    fn ovf(&mut self, i: usize) -> Result<(), OptError> {
        let t = self.input;
        let op = &t.ops[i];
        let gop = t
            .ops
            .get(i + 1)
            .filter(|g| matches!(g.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow));
        let Some(gop) = gop else {
            return Err(OptError::Unsupported {
                op: OpRef::new(i),
                message: format!("{} is not followed by an overflow guard", op.opcode),
            });
        };
        let no_ovf_guard = gop.opcode == Opcode::GuardNoOverflow;
        let opc = op.opcode;
        let args = map_args(&op.args, |a| self.get(a));
        let plain = opc.ovf_to_wrapping().expect("an _ovf op");
        // folding
        if self.opts.fold {
            if let (Some(a), Some(b)) = (self.const_i64(args[0]), self.const_i64(args[1])) {
                if let Some((r, overflowed)) = fold_ovf(opc, a, b) {
                    if overflowed != no_ovf_guard {
                        // the guard passes: op and guard go
                        self.removed(Reason::Folded);
                        self.removed(Reason::Overflow);
                        self.map[i] = self.make_int(r);
                        return Ok(());
                    }
                    // otherwise the guard always fails: keep both
                }
            }
        }
        let (res, cannot_overflow) = match opc {
            Opcode::IntAddOvf => self.bound_of(args[0]).add_ovf(&self.bound_of(args[1])),
            Opcode::IntSubOvf => self.bound_of(args[0]).sub_ovf(&self.bound_of(args[1])),
            _ => self.bound_of(args[0]).mul_ovf(&self.bound_of(args[1])),
        };
        if self.opts.intbounds && self.opts.ovf && cannot_overflow && no_ovf_guard {
            self.removed(Reason::Overflow);
            let v = self.pure(plain, &args, None, false);
            self.map[i] = v;
            return Ok(());
        }
        let key = Key::new(opc, &args, None);
        if self.opts.cse && no_ovf_guard {
            if let Some(&v) = self.ovf_cse.get(&key) {
                self.removed(Reason::Cse);
                self.removed(Reason::Overflow);
                self.map[i] = self.find(v);
                return Ok(());
            }
        }
        // the guard must follow the op directly: delayed writes go first
        self.flush_writes();
        let v = self.emit(Op::new(opc, &args));
        // the guard's fail arguments may name the op's own result
        self.map[i] = v;
        self.emit_guard(gop, &[]);
        if no_ovf_guard {
            let o = v.as_op().unwrap();
            if self.opts.intbounds && !res.is_empty() {
                self.info[o.index()].bound = res;
            }
            self.info[o.index()].flags |= F_OVF_CHECKED;
            if self.opts.cse {
                self.ovf_cse.insert(key, v);
            }
            if self.opts.intbounds {
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let res = self.bound_of(v);
                match opc {
                    Opcode::IntAddOvf | Opcode::IntSubOvf => {
                        let (na, nb) = if opc == Opcode::IntAddOvf {
                            IntBound::backward_add_ovf(&ba, &bb, &res)
                        } else {
                            IntBound::backward_sub_ovf(&ba, &bb, &res)
                        };
                        self.narrow(args[0], na, 1);
                        self.narrow(args[1], nb, 1);
                    }
                    _ => {
                        for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
                            if self.const_i64(y).map(|c| c > 0).unwrap_or(false) {
                                let na = IntBound::backward_mul_ovf_const(&self.bound_of(x), &self.bound_of(y), &res);
                                self.narrow(x, na, 1);
                                break;
                            }
                        }
                    }
                }
            }
        }
        // The result of an `_ovf` op is the wrapped result, whatever the flag: the plain op
        // computes the same value.
        if self.opts.cse {
            self.cse.insert(Key::new(plain, &args, None), v);
            // `int_mul(x, 2**k)` is rewritten to `int_lshift(x, k)` by the rules before its CSE
            // lookup: record that form too (found by `tracejit mine` on mmh3)
            if plain == Opcode::IntMul {
                for (x, c) in [(args[0], args[1]), (args[1], args[0])] {
                    if let Some(c) = self.const_i64(c).filter(|&c| c > 1 && c & (c - 1) == 0) {
                        let k = self.make_int(c.trailing_zeros() as i64);
                        self.cse.insert(Key::new(Opcode::IntLshift, &[x, k], None), v);
                        break;
                    }
                }
            }
        }
        self.map[i] = v;
        Ok(())
    }

    // ------------------------------------------------------------------ loops

    fn label(&mut self, i: usize) {
        self.flush_writes();
        let t = self.input;
        let op = &t.ops[i];
        // Virtuals used after the label must exist as objects: their state would otherwise be
        // that of the first iteration.
        if self.opts.virtuals && !self.virtuals.is_empty() {
            for j in 0..i {
                if self.last_use[j] as usize > i && t.ops[j].opcode.result_kind() == Kind::Ref {
                    let v = self.get(Value::op(OpRef::new(j)));
                    self.force(v);
                }
            }
        }
        let args = map_args(&op.args, |a| self.get(a));
        for &a in &args {
            self.force(a);
        }
        let label = self.emit(Op {
            opcode: Opcode::Label,
            descr: op.descr,
            guard: None,
            args,
        });
        let facts = match self.header_facts {
            Some((header, facts)) if header == i => Some(facts),
            _ => None,
        };
        for k in 0..op.args.len() {
            let p = i + 1 + k;
            let v = self.emit(Op::new(t.ops[p].opcode, &[]));
            self.map[p] = v;
            let Some(facts) = facts else { continue };
            let label = label.as_op().expect("an emitted op");
            let arg = self.find(self.ops[label.index()].args[k]);
            if facts.invariant.get(k) == Some(&true) {
                self.import_facts(v, arg);
            } else if let Some(&Some(mask)) = facts.masks.get(k) {
                self.assume_masked(v, arg, mask);
            }
        }
        self.heap.clear();
        self.cse.clear();
        self.ovf_cse.clear();
        self.exc_clear = false;
        self.not_invalidated = false;
    }

    /// Give the label parameter `param`, whose back edge brings `x & mask` (a low mask), the
    /// range `[0, mask]` when its entry operand `arg` is known to be in it: then every value
    /// it takes is (see [`run`]).
    fn assume_masked(&mut self, param: Value, arg: Value, mask: u64) {
        let (Some(p), true) = (param.as_op(), self.opts.intbounds) else {
            return;
        };
        let entry = self.bound_of(arg);
        if entry.lower_i64() >= 0 && entry.upper_i64() as u64 <= mask {
            self.info[p.index()].bound = IntBound::from_range_i64(0, mask as i64);
        }
    }

    /// Give the loop-invariant label parameter `param` what is known about the operand `arg`
    /// it always equals: its integer bounds, class and non-nullness. Not for an allocation of
    /// this trace: the parameter would have to be that very object rather than one distinct
    /// from it (the freshness flag), and the translation validator tracks such objects
    /// field by field only up to the label.
    fn import_facts(&mut self, param: Value, arg: Value) {
        let Some(p) = param.as_op() else { return };
        if arg.as_op().is_some_and(|o| self.info[o.index()].flags & F_FRESH != 0) {
            return;
        }
        if self.opts.intbounds {
            self.info[p.index()].bound = self.bound_of(arg);
        }
        match arg.data() {
            ValueData::Op(o) => {
                let (class, nonnull) = (self.info[o.index()].class, self.info[o.index()].flags & F_NONNULL);
                let info = &mut self.info[p.index()];
                info.class = class;
                info.flags |= nonnull;
            }
            ValueData::Const(c) => {
                if let Const::Ref(a) = self.consts.get(c) {
                    if a != 0 {
                        self.info[p.index()].flags |= F_NONNULL;
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ calls

    fn call(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        use Opcode::*;
        let opc = op.opcode;
        let effect = op
            .descr
            .and_then(|d| self.input.descr(d).as_call())
            .map(|c| c.effect)
            .unwrap_or(CallEffect::RandomEffects);
        let elidable = matches!(opc, CallPureI | CallPureR | CallPureF | CallPureN) && effect.is_elidable();
        let loopinv = matches!(
            opc,
            CallLoopinvariantI | CallLoopinvariantR | CallLoopinvariantF | CallLoopinvariantN
        );
        for &a in args {
            self.force(a);
        }
        let key = if self.opts.cse && (elidable || loopinv) {
            Some(Key::new(opc, args, op.descr))
        } else {
            None
        };
        if key.as_ref().map(|k| !self.cse.contains_key(k)).unwrap_or(true) {
            self.flush_writes();
        }
        if let Some(k) = &key {
            if let Some(&v) = self.cse.get(k) {
                self.removed(Reason::Cse);
                return Some(self.find(v));
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        let barrier = opc.has(OpFlags::BARRIER);
        if barrier || effect.may_write_heap() {
            if barrier {
                self.heap.clear();
            } else {
                let facts = &self.descr_facts;
                self.heap.clear_mutable(|d| facts[d.index()].immutable);
            }
            self.not_invalidated = false;
        }
        if barrier || effect.can_raise() || opc.has(OpFlags::CAN_RAISE) {
            self.exc_clear = false;
        }
        if let Some(k) = key {
            self.cse.insert(k, v);
        }
        (opc.result_kind() != Kind::Void).then_some(v)
    }

    // ------------------------------------------------------------------ allocation removal

    fn alloc(&mut self, op: &Op, args: &[Value]) -> Value {
        let opc = op.opcode;
        let descr = op.descr.expect("verified: allocations have a descriptor");
        let kind = match opc {
            Opcode::New | Opcode::NewWithVtable => Some(VirtualKind::Struct { opcode: opc, descr }),
            _ => match self.const_i64(args[0]) {
                Some(n) if (0..=MAX_VIRTUAL_ARRAY).contains(&n) => Some(VirtualKind::Array {
                    opcode: opc,
                    descr,
                    len: n as u32,
                }),
                _ => None,
            },
        };
        if self.opts.virtuals {
            if let Some(kind) = kind {
                let r = self.push_arena(Op {
                    opcode: opc,
                    descr: Some(descr),
                    guard: None,
                    args: SmallVec::from_slice(args),
                });
                self.info[r.index()].virt = self.virtuals.len() as u32;
                self.virtuals.push(Virtual {
                    kind,
                    fields: Vec::new(),
                });
                return Value::op(r);
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr: Some(descr),
            guard: None,
            args: SmallVec::from_slice(args),
        });
        self.after_alloc_emitted(v);
        v
    }

    /// Facts about an allocation just emitted (directly or by materialization).
    fn after_alloc_emitted(&mut self, v: Value) {
        let o = v.as_op().unwrap();
        let op = &self.ops[o.index()];
        let (opc, descr) = (op.opcode, op.descr);
        let len = op.args.first().copied();
        self.info[o.index()].flags |= F_FRESH | F_NONNULL;
        if opc == Opcode::NewWithVtable {
            // the class `new_with_vtable` stores (the interpreter's definition)
            self.info[o.index()].class = descr
                .and_then(|d| self.input.descr(d).as_size())
                .map(|s| trace_ir::interp::default_class(s) as i64);
        }
        if matches!(opc, Opcode::NewArray | Opcode::NewArrayClear) && self.opts.cse {
            if let Some(len) = len {
                self.cse.insert(Key::new(Opcode::ArraylenGc, &[v], descr), len);
            }
        }
    }

    /// Materialize `v` if it is virtual: emit its allocation and its field writes, recursively
    /// (fields first, each object once, so cycles end).
    fn force(&mut self, v: Value) {
        if !self.is_virtual(v) {
            return;
        }
        // An explicit stack instead of recursion, so long chains of virtuals cannot overflow
        // the thread's stack. Each frame: the object, its recorded fields, the next field.
        let mut stack: Vec<MaterializeFrame> = Vec::new();
        self.start_materializing(v, &mut stack);
        while let Some(top) = stack.last_mut() {
            let (obj, next, kind) = (top.0, top.2, top.3);
            let Some(&(f, val)) = top.1.get(next) else {
                stack.pop();
                continue;
            };
            let val = self.find(val);
            if self.is_virtual(val) {
                // the value first (fields before the store); cycles end because an object
                // stops being virtual when its allocation is emitted
                self.start_materializing(val, &mut stack);
                continue;
            }
            stack.last_mut().unwrap().2 += 1;
            match (f, kind) {
                (VirtualField::Field(d), _) => {
                    self.emit(Op {
                        opcode: Opcode::SetfieldGc,
                        descr: Some(d),
                        guard: None,
                        args: SmallVec::from_slice(&[obj, val]),
                    });
                    if self.opts.heapcache && self.fits(d, val) {
                        self.heap.remember_field(d, obj, val);
                    }
                }
                (VirtualField::Item(k), VirtualKind::Array { descr, .. }) => {
                    let idx = self.make_int(k as i64);
                    self.emit(Op {
                        opcode: Opcode::SetarrayitemGc,
                        descr: Some(descr),
                        guard: None,
                        args: SmallVec::from_slice(&[obj, idx, val]),
                    });
                    if self.opts.heapcache && self.fits(descr, val) {
                        self.heap.remember_item(descr, k as i64, obj, val);
                    }
                }
                (VirtualField::Item(_), VirtualKind::Struct { .. }) => {
                    unreachable!("items are only recorded on arrays")
                }
            }
        }
    }

    /// Emit the allocation of the virtual `v`, mark it non-virtual and push its fields.
    fn start_materializing(&mut self, v: Value, stack: &mut Vec<MaterializeFrame>) {
        let id = self.virt_of(v).expect("only virtuals are materialized");
        let o = v.as_op().unwrap();
        self.info[o.index()].virt = NO_VIRT;
        self.stats.virtuals_materialized += 1;
        self.order.push(o);
        self.after_alloc_emitted(v);
        let fields = std::mem::take(&mut self.virtuals[id as usize].fields);
        let kind = self.virtuals[id as usize].kind;
        stack.push((v, fields, 0, kind));
    }

    /// Whether storing `val` through descriptor `d` and reading it back gives `val` exactly
    /// (full-width slots, or narrow integers that provably fit).
    fn fits(&self, d: DescrRef, val: Value) -> bool {
        let f = &self.descr_facts[d.index()];
        if f.kind != Some(Kind::Int) || f.size >= 8 {
            return true;
        }
        let b = self.bound_of(val);
        let bits = 8 * f.size as u32;
        let (lo, hi) = if f.signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        !b.is_empty() && b.lower_i64() >= lo && b.upper_i64() <= hi
    }

    /// The abstract value of a value read through descriptor `d` (narrow integer slots).
    fn read_bound(&self, d: DescrRef) -> Option<IntBound<u64>> {
        let f = &self.descr_facts[d.index()];
        if f.kind != Some(Kind::Int) || f.size >= 8 {
            return None;
        }
        let bits = 8 * f.size as u32;
        Some(if f.signed {
            IntBound::from_range_i64(-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            IntBound::from_range_i64(0, (1i64 << bits) - 1)
        })
    }

    /// Whether field `d` of the struct virtual `id` can be tracked exactly (no overlap with
    /// another recorded field or with the class word of an instance).
    fn virtual_field_ok(&self, id: u32, d: DescrRef) -> bool {
        let vo = &self.virtuals[id as usize];
        let VirtualKind::Struct { opcode, .. } = vo.kind else {
            return false;
        };
        let f = &self.descr_facts[d.index()];
        if !f.is_field {
            return false;
        }
        if opcode == Opcode::NewWithVtable && f.offset < 8 {
            return false;
        }
        let overlapping = self.layout.overlapping(d);
        !vo.fields
            .iter()
            .any(|(vf, _)| matches!(vf, VirtualField::Field(o) if overlapping.contains(o)))
    }

    fn getfield(&mut self, op: &Op, args: &[Value]) -> Value {
        let obj = args[0];
        let d = op.descr.expect("verified: field ops have a descriptor");
        if let Some(id) = self.virt_of(obj) {
            if self.virtual_field_ok(id, d) {
                let found = self.virtuals[id as usize]
                    .fields
                    .iter()
                    .find(|(f, _)| *f == VirtualField::Field(d))
                    .map(|x| x.1);
                let val = match found {
                    Some(val) => Some(self.find(val)),
                    None => Some(self.zero_of(op.opcode.result_kind())),
                };
                if let Some(val) = val {
                    if self.fits(d, val) {
                        self.removed(Reason::VirtualAccess);
                        return val;
                    }
                }
            }
            self.force(obj);
        }
        if self.opts.heapcache {
            if let Some(val) = self.heap.field(d, obj) {
                self.removed(Reason::HeapCache);
                return self.find(val);
            }
        }
        let v = self.emit_load(op.opcode, Loc::field(d), args, obj);
        if self.opts.heapcache {
            self.heap.remember_field(d, obj, v);
        }
        v
    }

    /// Emit a heap load that the heap cache could not forward: delayed writes it may observe
    /// are flushed first, and the result gets the bound the descriptor's size and sign give.
    fn emit_load(&mut self, opcode: Opcode, loc: Loc, args: &[Value], obj: Value) -> Value {
        let d = loc.descr;
        self.flush_conflicting(loc, obj, None);
        let v = self.emit(Op {
            opcode,
            descr: Some(d),
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if self.opts.intbounds {
            if let Some(b) = self.read_bound(d) {
                self.info[v.as_op().unwrap().index()].bound = b;
            }
        }
        v
    }

    /// Emit every delayed write, in program order.
    fn flush_writes(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        for w in std::mem::take(&mut self.pending) {
            self.emit_write(w);
        }
    }

    fn emit_write(&mut self, w: PendingWrite) {
        let op = match w.index {
            None => Op {
                opcode: Opcode::SetfieldGc,
                descr: Some(w.loc.descr),
                guard: None,
                args: SmallVec::from_slice(&[w.obj, w.val]),
            },
            Some(idx) => Op {
                opcode: Opcode::SetarrayitemGc,
                descr: Some(w.loc.descr),
                guard: None,
                args: SmallVec::from_slice(&[w.obj, idx, w.val]),
            },
        };
        self.emit(op);
    }

    /// Emit the delayed writes that an access to `loc` of `obj` may observe or must stay
    /// ordered with (any that may share a byte with it, under the trace's memory model);
    /// `except` is a write that the access replaces.
    fn flush_conflicting(&mut self, loc: Loc, obj: Value, except: Option<usize>) {
        if self.pending.is_empty() {
            return;
        }
        let (info, layout) = (&self.info, &self.layout);
        let conflicts = |k: usize, w: &PendingWrite| {
            Some(k) != except && layout.may_overlap(w.loc, loc) && Self::may_alias(info, w.obj, obj)
        };
        if !self.pending.iter().enumerate().any(|(k, w)| conflicts(k, w)) {
            return;
        }
        // partition in place (program order kept on both sides), without allocating
        let mut flush: SmallVec<[PendingWrite; 4]> = SmallVec::new();
        let mut k = 0usize;
        self.pending.retain(|w| {
            let c = conflicts(k, w);
            k += 1;
            if c {
                flush.push(*w);
            }
            !c
        });
        for w in flush {
            self.emit_write(w);
        }
    }

    /// A write to a non-virtual object: delayed (replacing an earlier delayed write of the
    /// same slot, which is then dead) when the heap cache is on, emitted otherwise.
    fn delay_write(&mut self, w: PendingWrite) {
        if !self.opts.heapcache {
            self.emit_write(w);
            return;
        }
        let mut same = self.pending.iter().position(|p| p.loc == w.loc && p.obj == w.obj);
        if let Some(k) = same {
            // Storing a reference makes the object escape (the interpreter's model: escape is
            // sticky, and later heap-writing calls may change escaped objects), so a
            // reference store is never dropped, even when overwritten.
            let old = self.pending[k].val;
            if !old.is_const() && self.kind_of(old) == Kind::Ref {
                let w_old = self.pending.remove(k);
                self.emit_write(w_old);
                same = None;
            }
        }
        self.flush_conflicting(w.loc, w.obj, same);
        match self.pending.iter_mut().find(|p| p.loc == w.loc && p.obj == w.obj) {
            Some(p) => {
                p.val = w.val;
                self.removed(Reason::DeadStore);
            }
            None => self.pending.push(w),
        }
    }

    fn setfield(&mut self, op: &Op, args: &[Value]) {
        let (obj, val) = (args[0], args[1]);
        let d = op.descr.expect("verified: field ops have a descriptor");
        if let Some(id) = self.virt_of(obj) {
            // a narrow field truncates: track only values that fit (otherwise the object is
            // materialized and the real write does the truncation)
            if self.virtual_field_ok(id, d) && self.fits(d, val) {
                let fields = &mut self.virtuals[id as usize].fields;
                match fields.iter_mut().find(|(f, _)| *f == VirtualField::Field(d)) {
                    Some(slot) => slot.1 = val,
                    None => fields.push((VirtualField::Field(d), val)),
                }
                self.removed(Reason::VirtualAccess);
                return;
            }
        }
        self.force(obj);
        self.force(val);
        let fits = self.fits(d, val);
        if self.opts.heapcache && self.layout.alone(d) && self.heap.field(d, obj) == Some(val) {
            self.removed(Reason::RedundantWrite);
            return;
        }
        let loc = Loc::field(d);
        self.delay_write(PendingWrite {
            loc,
            index: None,
            obj,
            val,
        });
        let (info, layout) = (&self.info, &self.layout);
        self.heap.write(loc, obj, layout, |a, b| Self::may_alias(info, a, b));
        if self.opts.heapcache && fits {
            self.heap.remember_field(d, obj, val);
        }
    }

    /// The constant index of a virtual array access, if the access can be tracked.
    fn virtual_item(&self, id: u32, d: DescrRef, idx: Value) -> Option<u32> {
        let VirtualKind::Array { descr, len, .. } = self.virtuals[id as usize].kind else {
            return None;
        };
        if descr != d {
            return None;
        }
        let k = self.const_i64(idx)?;
        (0..len as i64).contains(&k).then_some(k as u32)
    }

    fn getitem(&mut self, op: &Op, args: &[Value]) -> Value {
        let (arr, idx) = (args[0], args[1]);
        let d = op.descr.expect("verified: array ops have a descriptor");
        let pure_read = matches!(
            op.opcode,
            Opcode::GetarrayitemGcPureI | Opcode::GetarrayitemGcPureR | Opcode::GetarrayitemGcPureF
        );
        if let Some(id) = self.virt_of(arr) {
            if let Some(k) = self.virtual_item(id, d, idx) {
                let found = self.virtuals[id as usize]
                    .fields
                    .iter()
                    .find(|(f, _)| *f == VirtualField::Item(k))
                    .map(|x| x.1);
                let val = match found {
                    Some(val) => self.find(val),
                    None => self.zero_of(op.opcode.result_kind()),
                };
                if self.fits(d, val) {
                    self.removed(Reason::VirtualAccess);
                    return val;
                }
            }
            self.force(arr);
        }
        let cidx = self.const_i64(idx);
        if self.opts.heapcache {
            // Immutable reads see an item as calls leave it, mutable ones as calls change it:
            // each kind is answered only from its own entries.
            let hit = match (pure_read, cidx) {
                (true, _) => self.heap.pure_item(d, arr, idx),
                (false, Some(k)) => self.heap.item(d, k, arr),
                (false, None) => None,
            };
            if let Some(val) = hit {
                self.removed(Reason::HeapCache);
                return self.find(val);
            }
        }
        let v = self.emit_load(op.opcode, Loc::item(d, cidx), args, arr);
        if self.opts.heapcache {
            match (pure_read, cidx) {
                (true, _) => self.heap.remember_pure_item(d, arr, idx, v),
                (false, Some(k)) => self.heap.remember_item(d, k, arr, v),
                (false, None) => {}
            }
        }
        v
    }

    fn setitem(&mut self, op: &Op, args: &[Value]) {
        let (arr, idx, val) = (args[0], args[1], args[2]);
        let d = op.descr.expect("verified: array ops have a descriptor");
        if let Some(id) = self.virt_of(arr) {
            let k = self.virtual_item(id, d, idx).filter(|_| self.fits(d, val));
            if let Some(k) = k {
                let fields = &mut self.virtuals[id as usize].fields;
                match fields.iter_mut().find(|(f, _)| *f == VirtualField::Item(k)) {
                    Some(slot) => slot.1 = val,
                    None => fields.push((VirtualField::Item(k), val)),
                }
                self.removed(Reason::VirtualAccess);
                return;
            }
        }
        self.force(arr);
        self.force(val);
        let cidx = self.const_i64(idx);
        let fits = self.fits(d, val);
        if self.opts.heapcache && self.layout.alone(d) {
            if let Some(k) = cidx {
                if self.heap.item(d, k, arr) == Some(val) {
                    self.removed(Reason::RedundantWrite);
                    return;
                }
            }
        }
        let loc = Loc::item(d, cidx);
        if cidx.is_some() {
            self.delay_write(PendingWrite {
                loc,
                index: Some(idx),
                obj: arr,
                val,
            });
        } else {
            self.flush_conflicting(loc, arr, None);
            self.emit(Op {
                opcode: Opcode::SetarrayitemGc,
                descr: Some(d),
                guard: None,
                args: SmallVec::from_slice(&[arr, idx, val]),
            });
        }
        let (info, layout) = (&self.info, &self.layout);
        self.heap.write(loc, arr, layout, |a, b| Self::may_alias(info, a, b));
        if self.opts.heapcache && fits {
            if let Some(k) = cidx {
                self.heap.remember_item(d, k, arr, val);
            }
        }
    }

    fn arraylen(&mut self, op: &Op, args: &[Value]) -> Value {
        let arr = args[0];
        if let Some(id) = self.virt_of(arr) {
            if let VirtualKind::Array { len, descr, .. } = self.virtuals[id as usize].kind {
                // the length word the allocation wrote, if this descriptor reads that word
                let word = |d: Option<DescrRef>| d.and_then(|d| self.input.descr(d).as_array()).map(|a| a.len_offset);
                if word(op.descr) == word(Some(descr)) {
                    self.removed(Reason::VirtualAccess);
                    return self.make_int(len as i64);
                }
            }
            self.force(arr);
        }
        let key = Key::new(Opcode::ArraylenGc, args, op.descr);
        if self.opts.cse {
            if let Some(&v) = self.cse.get(&key) {
                self.removed(Reason::Cse);
                return self.find(v);
            }
        }
        let v = self.emit(Op {
            opcode: op.opcode,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        if self.opts.intbounds {
            self.info[v.as_op().unwrap().index()].bound = IntBound::nonnegative();
        }
        if self.opts.cse {
            self.cse.insert(key, v);
        }
        v
    }

    // ------------------------------------------------------------------ output

    fn finish(mut self) -> Result<Optimized, OptError> {
        self.flush_writes();
        let n = self.ops.len();
        // 9. backward sweep: an op is needed if it has an effect or a needed op uses it.
        let mut live = std::mem::take(&mut self.scratch.live);
        live.clear();
        live.resize(n, false);
        let mark = |live: &mut Vec<bool>, v: Value| {
            if let Some(o) = v.as_op() {
                live[o.index()] = true;
            }
        };
        for &o in self.order.iter().rev() {
            let op = &self.ops[o.index()];
            let removable = self.opts.dce
                && o.index() >= self.input.num_inputs
                && op.opcode != Opcode::Label
                && is_removable(op.opcode);
            if !live[o.index()] && removable {
                continue;
            }
            live[o.index()] = true;
            for &a in &op.args {
                mark(&mut live, a);
            }
            if let Some(g) = op.guard {
                let gd = &self.guards[g.index()];
                for fa in gd
                    .fail_args
                    .iter()
                    .chain(gd.virtuals.iter().flat_map(|v| v.fields.iter().map(|f| &f.1)))
                {
                    if let FailArg::Value(v) = *fa {
                        mark(&mut live, v);
                    }
                }
            }
        }
        // label parameters are always kept (they are positional)
        let mut new_index = std::mem::take(&mut self.scratch.new_index);
        new_index.clear();
        new_index.resize(n, u32::MAX);
        let mut out_ops = std::mem::take(&mut self.scratch.out_ops);
        out_ops.clear();
        out_ops.reserve(self.order.len());
        let mut in_label_params = 0usize;
        let mut dead = 0usize;
        for &o in &self.order {
            let op = &self.ops[o.index()];
            let keep = live[o.index()] || in_label_params > 0;
            in_label_params = in_label_params.saturating_sub(1);
            if op.opcode == Opcode::Label {
                in_label_params = op.args.len();
            }
            if !keep {
                dead += 1;
                continue;
            }
            new_index[o.index()] = out_ops.len() as u32;
            out_ops.push(o);
        }
        self.removed_counts[Reason::Dead as usize] += dead;
        let remap = |v: Value| -> Result<Value, OptError> {
            match v.data() {
                ValueData::Const(_) => Ok(v),
                ValueData::Op(o) => match new_index[o.index()] {
                    u32::MAX => Err(OptError::BadOutput(trace_ir::VerifyError {
                        op: None,
                        message: format!("working op {o} used but never emitted"),
                    })),
                    k => Ok(Value::op(OpRef::new(k as usize))),
                },
            }
        };
        let mut ops = Vec::with_capacity(out_ops.len());
        for &o in &out_ops {
            let op = &self.ops[o.index()];
            let mut args = SmallVec::with_capacity(op.args.len());
            for &a in &op.args {
                args.push(remap(a)?);
            }
            ops.push(Op {
                opcode: op.opcode,
                descr: op.descr,
                guard: op.guard,
                args,
            });
        }
        let remap_fa = |fa: FailArg| -> Result<FailArg, OptError> {
            Ok(match fa {
                FailArg::Value(v) => FailArg::Value(remap(v)?),
                other => other,
            })
        };
        let mut guards = std::mem::take(&mut self.guards);
        for gd in &mut guards {
            for fa in &mut gd.fail_args {
                *fa = remap_fa(*fa)?;
            }
            for vo in &mut gd.virtuals {
                for f in &mut vo.fields {
                    f.1 = remap_fa(f.1)?;
                }
            }
        }
        let trace = Trace {
            ops,
            num_inputs: self.input.num_inputs,
            consts: std::mem::take(&mut self.consts),
            descrs: self.input.descrs.clone(),
            guards,
            info: self.input.info.clone(),
            aliasing: self.input.aliasing,
        };
        let never = self.info.iter().filter(|i| i.virt != NO_VIRT).count();
        self.stats.virtuals_removed = never;
        self.removed_counts[Reason::VirtualAlloc as usize] += never;
        for &r in Reason::ALL {
            let n = self.removed_counts[r as usize];
            if n > 0 {
                self.stats.removed.insert(r, n);
            }
        }
        self.stats.ops_out = trace.num_real_ops();
        if cfg!(debug_assertions) {
            trace_ir::verify(&trace).map_err(OptError::BadOutput)?;
        }
        if n <= SCRATCH_KEEP_OPS {
            let mut s = std::mem::take(&mut self.scratch);
            self.ops.clear();
            s.ops = std::mem::take(&mut self.ops);
            s.info = std::mem::take(&mut self.info);
            s.order = std::mem::take(&mut self.order);
            s.uf = std::mem::take(&mut self.uf);
            s.map = std::mem::take(&mut self.map);
            s.last_use = std::mem::take(&mut self.last_use);
            s.cse = std::mem::take(&mut self.cse);
            s.ovf_cse = std::mem::take(&mut self.ovf_cse);
            s.const_cache = std::mem::take(&mut self.const_cache);
            (s.live, s.new_index, s.out_ops) = (live, new_index, out_ops);
            s.heap = std::mem::take(&mut self.heap);
            s.pending = std::mem::take(&mut self.pending);
            s.virtuals = std::mem::take(&mut self.virtuals);
            s.descr_facts = std::mem::take(&mut self.descr_facts);
            s.layout = std::mem::take(&mut self.layout);
            SCRATCH.with(|c| c.set(Some(s)));
        }
        Ok(Optimized {
            trace,
            stats: self.stats,
        })
    }
}

/// Whether an unused op of this opcode may be dropped: pure ops and heap reads (a read of
/// null or out of bounds is invalid in the original trace, so dropping it changes nothing
/// defined).
fn is_removable(opc: Opcode) -> bool {
    use Opcode::*;
    opc.is_pure()
        || matches!(
            opc,
            GetfieldGcI
                | GetfieldGcR
                | GetfieldGcF
                | GetarrayitemGcI
                | GetarrayitemGcR
                | GetarrayitemGcF
                | GetarrayitemGcPureI
                | GetarrayitemGcPureR
                | GetarrayitemGcPureF
                | ArraylenGc
                | Strlen
                | Unicodelen
                | Strgetitem
                | Unicodegetitem
                | GetinteriorfieldGcI
                | GetinteriorfieldGcR
                | GetinteriorfieldGcF
        )
}

impl RuleEnv for Pass<'_> {
    fn bound(&self, v: Value) -> IntBound<u64> {
        self.bound_of(self.uf.known_find(v))
    }
    fn const_int(&self, v: Value) -> Option<i64> {
        self.const_i64(self.uf.known_find(v))
    }
    fn def(&self, v: Value) -> Option<(Opcode, SmallVec<[Value; 3]>)> {
        let o = self.uf.known_find(v).as_op()?;
        let op = &self.ops[o.index()];
        let opcode = if op.opcode.is_pure() {
            op.opcode
        } else if op.opcode.is_ovf() && self.info[o.index()].flags & F_OVF_CHECKED != 0 {
            // same value as the plain op (and it did not overflow)
            op.opcode.ovf_to_wrapping()?
        } else {
            return None;
        };
        Some((opcode, map_args(&op.args, |a| self.uf.known_find(a))))
    }
    fn make_const(&mut self, c: i64) -> Value {
        self.make_int(c)
    }
    fn emit(&mut self, opcode: Opcode, args: &[Value]) -> Value {
        let args = map_args(args, |a| self.uf.find(a));
        self.pure(opcode, &args, None, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_ir::random::{random_trace, RandomConfig};

    /// The release-build input check must accept everything the verifier accepts.
    #[test]
    fn precheck_accepts_valid_traces() {
        for seed in 0..400u64 {
            let (t, _) = random_trace(&RandomConfig::default(), seed);
            assert!(precheck(&t).is_ok(), "seed {seed}");
        }
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev/fannkuch.pypylog");
        let text = std::fs::read_to_string(dir).unwrap();
        for t in trace_ir::parse_file(&text).unwrap() {
            assert!(precheck(&t).is_ok(), "{}", t.info.name);
        }
    }

    /// ... and reject what the pass cannot handle, with an error instead of a panic.
    #[test]
    fn precheck_rejects_malformed_traces() {
        let good = trace_ir::parse_trace(
            "[i0, p1]
             i2 = int_add(i0, 1)
             i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
             guard_true(i2, descr=<Guard1>) [i3]
             finish(i3)",
        )
        .unwrap();
        assert!(precheck(&good).is_ok());
        let mut t = good.clone();
        t.ops[2].args[0] = Value::op(OpRef::new(3)); // use before definition
        assert!(precheck(&t).is_err());
        let mut t = good.clone();
        t.ops[3].descr = None; // getfield without descriptor
        assert!(precheck(&t).is_err());
        let mut t = good.clone();
        t.ops[4].guard = None; // guard without resume data
        assert!(precheck(&t).is_err());
        let mut t = good.clone();
        t.ops[2].args.pop(); // wrong arity
        assert!(precheck(&t).is_err());
        let mut t = good.clone();
        t.guards[0].fail_args[0] = FailArg::Virtual(3); // missing virtual
        assert!(precheck(&t).is_err());
        let mut t = good;
        t.ops[2].args[1] = Value::constant(trace_ir::ConstRef::new(999)); // missing constant
        assert!(precheck(&t).is_err());
    }
}
