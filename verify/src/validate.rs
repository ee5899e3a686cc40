//! Translation validation (seed 004): prove with Z3 that an optimized trace behaves like the
//! trace it was optimized from, or find inputs on which the two differ.
//!
//! # What is compared
//!
//! Both traces are executed symbolically over the same symbolic inputs (matched by
//! position; both must have the same number of inputs). The two executions are aligned at
//! their **sync points**:
//! - guards, matched by their stable [`GuardId`];
//! - calls that are not elidable (`call_*` whose effect is not elidable, `call_may_force_*`,
//!   `call_assembler_*`), matched by their order;
//! - `label`s, matched by their order;
//! - the final `jump`/`finish`.
//!
//! At each point the validator asks Z3 to prove, under the conjunction of all guard
//! conditions passed so far (the path condition):
//! - a guard kept by the optimizer has a condition equivalent to the original's;
//! - a guard removed by the optimizer cannot fail (it is implied by the path condition);
//! - when a kept guard fails, its fail arguments are equal (virtual objects of the resume
//!   data are compared field by field against the original's objects) and so is the
//!   modelled heap;
//! - a call gets equal arguments and an equal heap; its result is the same fresh symbol on
//!   both sides;
//! - at `finish`/`jump`/`label` the operands and the heap are equal.
//!
//! The optimized trace may not add guards with ids the original does not have, and the sync
//! points must come in the same order on both sides (otherwise: `Invalid` for a new guard,
//! `Unknown` for a reordering). Operations of the optimized trace that may be undefined
//! (shift amount out of range, division by zero) must be defined wherever the original
//! trace's operations are: the original trace is assumed free of undefined operations.
//!
//! # Model
//!
//! - Integers and references are 64-bit vectors; integer ops use the one Z3 semantics of
//!   [`crate::semantics`]. Overflow ops set a per-side "no overflow" flag read by
//!   `guard_no_overflow`/`guard_overflow`.
//! - Floats are 64-bit vectors of their IEEE bits. Float operations with constant operands
//!   are folded with the reference interpreter's evaluation function
//!   ([`trace_ir::eval::eval_pure`]); others are uninterpreted functions (so equal operands
//!   give equal results, which covers CSE). A counterexample that may depend on an
//!   uninterpreted float operation is reported as `Unknown`.
//! - **Objects allocated by the trace** (`new`, `new_with_vtable`, `new_array*` with a
//!   constant length) are tracked exactly, field by field, as long as they have not
//!   escaped: their fields are not in the heap model, and a fresh object is different from
//!   every pre-existing pointer. An object escapes when it is stored into memory that is
//!   not itself a tracked object, passed to a call, cast to an integer or indexed with a
//!   non-constant index. Escaping gives it a fresh address and writes its fields into the
//!   heap model. Addresses are matched between the traces by a naming: the `k`-th object of
//!   a shape (and constant length) to escape gets the same address on both sides. Fresh
//!   objects are interchangeable, so the traces are equivalent if they are under any one
//!   naming; when the first naming gives `Invalid` and objects escaped, the validator tries
//!   the shape without the length (one side may know a length only symbolically), then
//!   plain escape order, and answers `Valid` if one of them proves the traces equal.
//!   An object only one side escaped keeps its contents over a call that may write the heap:
//!   the call cannot reach it (the heaps and the call's arguments were proven equal).
//! - **Comparing objects** (fail arguments, `finish`/`jump`/`label` operands): two tracked
//!   objects are equal when their shapes, lengths and fields are; an object one side escaped
//!   (in the current heap epoch, and only on that side) equals an object the other side
//!   still tracks when its contents in the heap do (the escape was the validator's
//!   conservative choice, e.g. an item store at a non-constant index, and nothing compared
//!   can hold its address, or that reference differs). The objects matched at one sync
//!   point form a one-to-one pairing, so one object passed twice is not equal to two equal
//!   copies.
//! - **The heap** (memory of objects the trace did not allocate, or that escaped) is one
//!   SMT array per field descriptor (per array descriptor for array items, indexed by the
//!   concatenation of base and index; per raw descriptor for raw memory). Both sides start
//!   from the same arrays; writes are `store`s, so read-after-write and possible aliasing
//!   are exact. A call that may write the heap replaces all arrays by fresh ones shared by
//!   both sides (after the heaps were proven equal). Immutable (`pure`) fields live in
//!   arrays that calls do not replace. Object classes are an uninterpreted function.
//! - **Loops**: one iteration is validated. At the k-th `label` of each side the label
//!   operands are proven equal; the label parameters then become fresh symbols shared by
//!   position, and the heap becomes fresh arrays. A parameter of the loop header that the
//!   optimized trace's final `jump` passes back unchanged is loop-invariant: on both sides it
//!   keeps its operand's value instead (sound by induction over the iterations: the jump's
//!   operands are proven equal, so the original passes that value back too). When the
//!   optimized trace has one label more than the original, the optimizer peeled the loop,
//!   and the original is peeled the same way ([`trace_ir::peel_loop`]) before the
//!   comparison. Tracked objects of the preamble that are
//!   not passed through the label may not be used after it (`Unknown` if they are).
//! - Exceptions: every call that can raise has a shared symbolic "raised" flag and value.
//!   Quasi-immutable invalidation and frame forcing are shared symbols.
//!
//! - Narrow integer fields and array items (`size=1/2/4`) read back as their low bytes,
//!   sign- or zero-extended; lengths read from the heap are non-negative. A fresh object
//!   that escapes is zero in every field either trace reads, differs from every pointer that
//!   existed before, is not null and has its allocation's class (the interpreter's
//!   `default_class`). `guard_class` and friends on null are undefined in the original.
//! - Accesses with a non-constant index into a tracked array of constant length select
//!   among its items (and require the index in range).
//!
//! - **Constants pinned by guards**: past a guard that fixes an integer to a constant
//!   (`guard_value(x, C)`, `guard_true(int_eq(x, C))`, `guard_false(int_ne(x, C))`,
//!   `guard_false(x)`, `guard_true(x)` of a comparison), later ops of that side use the
//!   constant for `x`, as the optimizer does (sound: on that path `x` is the constant).
//! - The heap is compared by reading both sides' arrays at every index either side wrote
//!   (both are stores into the same initial array, so this is exactly array equality,
//!   without asking Z3 for extensionality).
//!
//! # Queries: abstraction refinement
//!
//! Multiplication and division circuits (`int_mul`, `int_mul_ovf`, `uint_mul_high`,
//! `int_floordiv`, `int_mod`, `int_pydiv`, `int_pymod`) are what makes Z3 slow on 64-bit
//! vectors. With [`Config::abstract_heavy_ops`] (the default) each such op whose operands
//! are not constants (a product with a constant, a quotient by a constant divisor stay
//! concrete: they bit-blast cheaply) is translated as an application of an uninterpreted
//! function, one symbol per op shared by both traces (`int_mul_ovf` shares `int_mul`'s),
//! on operands simplified and, for commutative ops, ordered, so the same computation on both
//! sides is the same term and congruence covers CSE; `(-x) * (-y)` is `x * y`, and `x / x`,
//! `x % x` are exact without a circuit. The "no overflow" flag of `int_mul_ovf` is an
//! uninterpreted predicate of the same operands. Cheap facts that hold in the full
//! semantics are assumed with them (multiplication by 0, 1 and -1, division of 0, division by
//! 1 and -1, no overflow when multiplying by 0 or 1).
//!
//! Each claim is first checked with this abstraction. A proof there is a proof for every
//! meaning of the function symbols, hence for the real one. Only when the abstract query
//! fails is the claim checked again with the full bit-vector semantics (every application
//! replaced by its remembered concrete meaning, by substitution); that verdict is the
//! result, and its model is a real counterexample (values printed in a counterexample are
//! evaluated in their concrete meaning). A query without abstracted terms is checked once.
//! [`validate_with_stats`] reports how many queries of each kind ran.
//!
//! Operations outside this model (string copies, exception save/restore, ...) make the
//! verdict `Unknown` with the op's name as the reason; so does a Z3 timeout (each query
//! gets [`Config::timeout_ms`]; a full-semantics query that times out is retried without the
//! path facts that involve multiplication or division, which is sound because fewer
//! assumptions only make a proof harder). Each query runs in a fresh solver (non-incremental
//! Z3 preprocesses bit-vector problems much better than push/pop; an incremental solver
//! was tried on the PyPy traces and timed out more often); the claims of one exit are
//! proven with one conjunction first.
//!
//! # Known limits
//!
//! - Z3 still times out on some removed `guard_no_overflow`s whose proof needs the full
//!   semantics (bounds reasoning through a 64-bit product): about 1% of random 15-20-op
//!   traces end `Unknown` with a 1 s limit (5% before the abstraction and the pinned
//!   constants).
//! - Long PyPy traces (hundreds of heap writes to frames) make queries slow: each of a few
//!   hundred claims asserts the whole path condition again in a fresh solver.
//! - Escaped objects are matched by the order in which objects of one shape escape; an
//!   optimizer that makes two objects of the same shape and length escape in the opposite
//!   order than the original gets a spurious difference (no naming matches them up).
//! - Counterexample values are named by op position (`i4` is op 4), as `print_trace` names
//!   them, not by the names of a hand-written input file.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use trace_ir::descr::Descr;
use trace_ir::eval::eval_pure;
use trace_ir::{FailArg, GuardId, Kind, OpFlags, OpRef, Opcode, Trace, Value, ValueData, VirtualField, VirtualKind};
use z3::ast::{Array, Ast, Bool, Dynamic, BV};
use z3::{FuncDecl, Params, SatResult, Solver, Sort};

use crate::semantics::{no_overflow, op_semantics};

/// Settings of [`validate`].
#[derive(Clone, Debug)]
pub struct Config {
    /// Time limit of each Z3 query, in milliseconds.
    pub timeout_ms: u32,
    /// Whether fail arguments of kept guards are compared (on by default).
    pub check_fail_args: bool,
    /// Whether the modelled heap is compared at exits, calls and labels (on by default).
    pub check_heap: bool,
    /// Whether queries are first checked with multiplications and divisions abstracted as
    /// uninterpreted functions (abstraction refinement, see the module documentation; on by
    /// default). Off: every query uses the full bit-vector semantics directly.
    pub abstract_heavy_ops: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            timeout_ms: 2000,
            check_fail_args: true,
            check_heap: true,
            abstract_heavy_ops: true,
        }
    }
}

/// The outcome of [`validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every query was proven: the optimized trace behaves like the original.
    Valid,
    /// Inputs on which the two traces differ.
    Invalid {
        /// What differs, the inputs and the values.
        counterexample: Counterexample,
    },
    /// Neither proven nor refuted (a timeout or an operation outside the model).
    Unknown {
        /// Why.
        reason: String,
    },
}

impl Verdict {
    /// Whether the verdict is [`Verdict::Valid`].
    pub fn is_valid(&self) -> bool {
        matches!(self, Verdict::Valid)
    }
    /// Whether the verdict is [`Verdict::Invalid`].
    pub fn is_invalid(&self) -> bool {
        matches!(self, Verdict::Invalid { .. })
    }
    /// Whether the verdict is [`Verdict::Unknown`].
    pub fn is_unknown(&self) -> bool {
        matches!(self, Verdict::Unknown { .. })
    }
    /// A one-word name: `valid`, `invalid` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid { .. } => "invalid",
            Verdict::Unknown { .. } => "unknown",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Valid => f.write_str("valid"),
            Verdict::Invalid { counterexample } => write!(f, "invalid: {counterexample}"),
            Verdict::Unknown { reason } => write!(f, "unknown: {reason}"),
        }
    }
}

/// Inputs on which the original and the optimized trace differ (seed 004's format: the
/// inputs, then the values of the traces' integer operations under those inputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// What differs (`guard Guard3 (guard_true) was removed but can fail`, ...).
    pub message: String,
    /// The input values, named as the printer names them (`i0`, `p1`), as signed integers.
    pub inputs: Vec<(String, i64)>,
    /// The two differing values (original, optimized), when the difference is a value.
    pub differing: Option<(i64, i64)>,
    /// Values of the original trace's integer ops up to the failing point (`i3`).
    pub original: Vec<(String, i64)>,
    /// Values of the optimized trace's integer ops up to the failing point (`i3`).
    pub optimized: Vec<(String, i64)>,
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        writeln!(f, "counterexample")?;
        for (n, v) in &self.inputs {
            writeln!(f, "  input {n} = {v}")?;
        }
        if let Some((a, b)) = self.differing {
            writeln!(f, "  original value = {a}, optimized value = {b}")?;
        }
        for (n, v) in &self.original {
            writeln!(f, "  {n}unoptimized = {v}")?;
        }
        for (n, v) in &self.optimized {
            writeln!(f, "  {n}optimized = {v}")?;
        }
        Ok(())
    }
}

/// What the Z3 queries of one [`validate_with_stats`] run cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Claims decided one by one (the claims of a batch proven with one conjunction count
    /// only as that one abstract query).
    pub claims: usize,
    /// Queries with multiplications and divisions abstracted (including batches).
    pub abstract_queries: usize,
    /// Queries with the full bit-vector semantics (refinements, counterexample probes and
    /// retries).
    pub concrete_queries: usize,
    /// Claims whose abstract query failed and that were re-checked with the full semantics.
    pub refined: usize,
    /// Queries that ended without an answer (time limit).
    pub timeouts: usize,
    /// Wall-clock time spent in Z3's `check`.
    pub solver_time: std::time::Duration,
}

impl Stats {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &Stats) {
        self.claims += other.claims;
        self.abstract_queries += other.abstract_queries;
        self.concrete_queries += other.concrete_queries;
        self.refined += other.refined;
        self.timeouts += other.timeouts;
        self.solver_time += other.solver_time;
    }
}

/// Validate `optimized` against `original` (see the module documentation).
pub fn validate(original: &Trace, optimized: &Trace, cfg: &Config) -> Verdict {
    validate_with_stats(original, optimized, cfg).0
}

/// [`validate`], also returning what the Z3 queries cost.
pub fn validate_with_stats(original: &Trace, optimized: &Trace, cfg: &Config) -> (Verdict, Stats) {
    // An optimizer that peeled the loop (`optimizer::Options::peel`) optimized the peeled
    // original: one label more.
    let peeled = trace_ir::is_peeled_form(original, optimized)
        .then(|| trace_ir::peel_loop(original))
        .flatten();
    let original = peeled.as_ref().unwrap_or(original);
    let mut stats = Stats::default();
    let mut first = None;
    // What escaped in the last run (the same objects escape under every naming).
    let mut shapes = BTreeSet::new();
    for naming in [Naming::ShapeAndLength, Naming::Shape, Naming::Order] {
        if first.is_some() && !naming.differs(&shapes) {
            continue;
        }
        let mut v = Validator::new(original, optimized, cfg);
        v.o.naming = naming;
        v.p.naming = naming;
        let verdict = match v.run() {
            Ok(()) => match v.unknown.take() {
                None => Verdict::Valid,
                Some(reason) => Verdict::Unknown { reason },
            },
            Err(Stop::Invalid(c)) => Verdict::Invalid { counterexample: c },
            Err(Stop::Unknown(reason)) => Verdict::Unknown { reason },
        };
        stats.add(&v.stats);
        shapes = v.o.esc_shapes.union(&v.p.esc_shapes).cloned().collect();
        let escaped = !shapes.is_empty();
        if verdict.is_valid() || !verdict.is_invalid() && first.is_none() || !escaped {
            return (verdict, stats);
        }
        // Invalid (or, on a later naming, not decided): the other namings of escaped objects
        // may still match them up; the first verdict stands unless one proves the traces equal.
        first.get_or_insert(verdict);
    }
    (first.expect("at least one naming ran"), stats)
}

/// How escaped fresh objects are named on both sides (see [`esc_addr`]). The traces are
/// equivalent if they are under any one naming, since fresh objects are interchangeable; the
/// validator tries these in order until one proves the traces equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Naming {
    /// The `k`-th object of each shape and constant length to escape.
    ShapeAndLength,
    /// The `k`-th object of each shape to escape (arrays whose length one side knows only
    /// symbolically).
    Shape,
    /// The `k`-th object to escape.
    Order,
}

impl Naming {
    /// Whether this naming can match escaped objects (of these shapes, each with whether its
    /// length was constant) differently from the naming tried before it. Namings that only
    /// rename the addresses consistently on both sides give the same verdict.
    fn differs(self, shapes: &BTreeSet<(String, bool)>) -> bool {
        match self {
            Naming::ShapeAndLength => true,
            Naming::Shape => shapes.iter().any(|(_, constant_len)| *constant_len),
            Naming::Order => shapes.iter().map(|(shape, _)| shape).collect::<BTreeSet<_>>().len() > 1,
        }
    }
}

// ------------------------------------------------------------------------------------------
// Symbolic values and objects

/// A symbolic value: a bit-vector, or an object allocated by the trace.
#[derive(Clone, Debug)]
enum Sym {
    Bv(BV),
    Obj(usize),
}

/// An object allocated by the trace (or described by a guard's resume data).
#[derive(Clone, Debug)]
struct LocalObj {
    /// Allocation op and descriptor text: two objects are comparable only with equal shapes.
    shape: String,
    /// Its class, when the allocation sets one.
    class: Option<BV>,
    /// Array length, for arrays.
    len: Option<BV>,
    /// Field key -> value (missing: zero / null).
    fields: BTreeMap<String, Sym>,
    /// Field key -> array item descriptor and index, for writing items to the heap.
    item_of: BTreeMap<String, (String, u32)>,
    /// Its address once it escaped.
    addr: Option<BV>,
    /// Created before the last label and not passed through it: unusable.
    dead: bool,
}

/// Objects of the original (by id) matched with objects of the optimized trace while
/// comparing values: a matching in both directions, so that aliasing differs visibly.
#[derive(Clone, Default)]
struct Pairs {
    fwd: HashMap<usize, usize>,
    bwd: HashMap<usize, usize>,
}

impl Pairs {
    /// Whether `a` (original) and `b` (optimized) are matched: `Some(true)` if with each
    /// other, `Some(false)` if either with another object, `None` if neither is matched.
    fn known(&self, a: usize, b: usize) -> Option<bool> {
        match (self.fwd.get(&a), self.bwd.get(&b)) {
            (None, None) => None,
            (Some(&b2), _) => Some(b2 == b),
            (None, Some(_)) => Some(false),
        }
    }

    fn insert(&mut self, a: usize, b: usize) {
        self.fwd.insert(a, b);
        self.bwd.insert(b, a);
    }
}

/// One field or item of an escaped object: its name in [`LocalObj::fields`], where the heap
/// model keeps it, and its current value.
struct Content {
    name: String,
    key: String,
    index: BV,
    value: BV,
}

enum Stop {
    Invalid(Counterexample),
    Unknown(String),
}

type R<T> = Result<T, Stop>;

fn unsupported<T>(what: impl Into<String>) -> R<T> {
    Err(Stop::Unknown(what.into()))
}

fn bv(v: u64) -> BV {
    BV::from_u64(v, 64)
}

fn zero() -> BV {
    bv(0)
}

fn bool_to_bv(b: &Bool) -> BV {
    b.ite(&bv(1), &bv(0))
}

fn descr_key(trace: &Trace, op: OpRef) -> String {
    match trace.op(op).descr {
        Some(d) => format!("{:?}", trace.descr(d)),
        None => String::new(),
    }
}

/// Which sync point an op is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Guard(GuardId),
    Call(usize),
    Label(usize),
    Final,
}

fn is_elidable_call(trace: &Trace, op: OpRef) -> bool {
    let o = trace.op(op);
    match o.opcode {
        Opcode::CallPureI | Opcode::CallPureR | Opcode::CallPureF | Opcode::CallPureN => true,
        Opcode::CallI | Opcode::CallR | Opcode::CallF | Opcode::CallN => o
            .descr
            .and_then(|d| trace.descr(d).as_call().map(|c| c.effect.is_elidable()))
            .unwrap_or(false),
        _ => false,
    }
}

fn is_sync_call(trace: &Trace, op: OpRef) -> bool {
    let o = trace.op(op);
    matches!(
        o.opcode,
        Opcode::CallI
            | Opcode::CallR
            | Opcode::CallF
            | Opcode::CallN
            | Opcode::CallMayForceI
            | Opcode::CallMayForceR
            | Opcode::CallMayForceF
            | Opcode::CallMayForceN
            | Opcode::CallAssemblerI
            | Opcode::CallAssemblerR
            | Opcode::CallAssemblerF
            | Opcode::CallAssemblerN
            | Opcode::CondCallN
            | Opcode::CondCallValueI
            | Opcode::CondCallValueR
    ) && !is_elidable_call(trace, op)
}

fn events(trace: &Trace) -> Vec<(OpRef, Event)> {
    let mut out = Vec::new();
    let (mut calls, mut labels) = (0, 0);
    for r in trace.op_refs() {
        let op = trace.op(r);
        if let Some(g) = trace.guard_of(r) {
            out.push((r, Event::Guard(g.id)));
        } else if op.opcode == Opcode::Label {
            out.push((r, Event::Label(labels)));
            labels += 1;
        } else if op.opcode.is_final() {
            out.push((r, Event::Final));
        } else if is_sync_call(trace, r) {
            out.push((r, Event::Call(calls)));
            calls += 1;
        }
    }
    out
}

// ------------------------------------------------------------------------------------------
// One side of the symbolic execution

struct Side<'t> {
    trace: &'t Trace,
    tag: &'static str,
    vals: Vec<Option<Sym>>,
    objs: Vec<LocalObj>,
    /// Current heap arrays by key (created lazily from `key@epoch`).
    arrays: HashMap<String, Array>,
    /// Keys written since the last epoch change.
    written: BTreeSet<String>,
    /// The indices written into each array since it was last replaced by a fresh one.
    written_at: HashMap<String, Vec<BV>>,
    /// Index width of each heap array.
    bits: HashMap<String, u32>,
    epoch: String,
    /// Escapes so far, per object shape (the `k`-th object of a shape to escape on each side
    /// gets the address [`esc_addr`]`(shape, k)`).
    escapes: BTreeMap<String, usize>,
    /// Every address this side gave an escaping object.
    esc_addrs: Vec<BV>,
    /// The shapes of the objects that escaped, each with whether its length was a constant.
    esc_shapes: BTreeSet<(String, bool)>,
    /// How escaping objects are named.
    naming: Naming,
    /// Object id -> the heap epoch in which it escaped, or into which its contents were
    /// carried over a heap-writing call ([`Side::new_epoch_after_call`]).
    escaped_in: HashMap<usize, String>,
    /// Object id -> the fields carried into the current epoch (structs).
    carried: HashMap<usize, BTreeSet<String>>,
    /// The field keys either trace reads with `getfield_gc_*`.
    read_keys: std::rc::Rc<Vec<String>>,
    /// Facts about escaped objects' addresses, not yet added to the path condition.
    esc_facts: Vec<Bool>,
    calls: usize,
    labels: usize,
    no_ovf: Option<Bool>,
    /// Per op: whether its value depends on a multiplication or division.
    heavy: Vec<bool>,
    /// Whether the last overflow op is heavy.
    ovf_heavy: bool,
    exc: Bool,
    not_forced: Bool,
    pos: usize,
}

impl<'t> Side<'t> {
    fn new(trace: &'t Trace, tag: &'static str) -> Side<'t> {
        Side {
            trace,
            tag,
            vals: vec![None; trace.ops.len()],
            objs: Vec::new(),
            arrays: HashMap::new(),
            written: BTreeSet::new(),
            written_at: HashMap::new(),
            bits: HashMap::new(),
            epoch: "0".into(),
            escapes: BTreeMap::new(),
            esc_addrs: Vec::new(),
            esc_shapes: BTreeSet::new(),
            naming: Naming::ShapeAndLength,
            escaped_in: HashMap::new(),
            carried: HashMap::new(),
            esc_facts: Vec::new(),
            read_keys: std::rc::Rc::new(Vec::new()),
            calls: 0,
            labels: 0,
            no_ovf: None,
            heavy: vec![false; trace.ops.len()],
            ovf_heavy: false,
            exc: Bool::from_bool(false),
            not_forced: Bool::new_const("not_forced"),
            pos: 0,
        }
    }

    fn array(&mut self, key: &str, domain_bits: u32) -> Array {
        if let Some(a) = self.arrays.get(key) {
            return a.clone();
        }
        let a = self.initial(key, domain_bits);
        self.arrays.insert(key.to_string(), a.clone());
        self.bits.insert(key.to_string(), domain_bits);
        a
    }

    /// The heap of `key` as the current epoch started (what [`Self::array`] stores into).
    fn initial(&self, key: &str, domain_bits: u32) -> Array {
        let epoch = if key.starts_with("imm:") {
            "0"
        } else {
            self.epoch.as_str()
        };
        Array::new_const(
            format!("heap[{key}]@{epoch}"),
            &Sort::bitvector(domain_bits),
            &Sort::bitvector(64),
        )
    }

    fn read(&mut self, key: &str, index: &BV) -> BV {
        let a = self.array(key, index.get_size());
        a.select(index).as_bv().expect("heap arrays hold bit-vectors")
    }

    fn write(&mut self, key: &str, index: &BV, value: &BV) {
        let a = self.array(key, index.get_size());
        self.arrays.insert(key.to_string(), a.store(index, value));
        self.written.insert(key.to_string());
        self.written_at.entry(key.to_string()).or_default().push(index.clone());
    }

    /// Forget the heap (after a call that may write it, or at a label).
    fn new_epoch(&mut self, epoch: String) {
        self.epoch = epoch;
        self.arrays.retain(|k, _| k.starts_with("imm:"));
        self.written_at.retain(|k, _| k.starts_with("imm:"));
        self.written.clear();
        self.carried.clear();
    }

    fn value(&self, v: Value) -> R<Sym> {
        match v.data() {
            ValueData::Const(c) => Ok(Sym::Bv(bv(self.trace.consts.get(c).bits()))),
            ValueData::Op(o) => match self.vals.get(o.index()).cloned().flatten() {
                Some(Sym::Obj(id)) if self.objs[id].dead => unsupported(format!(
                    "{} trace: object {o} of the preamble used after the label",
                    self.tag
                )),
                Some(s) => Ok(s),
                None => unsupported(format!("{} trace: {o} has no value", self.tag)),
            },
        }
    }

    /// The value as a bit-vector, escaping a tracked object.
    fn bv_of(&mut self, v: Value) -> R<BV> {
        let s = self.value(v)?;
        Ok(self.escape(&s))
    }

    /// Give a tracked object an address and move its fields into the heap model.
    fn escape(&mut self, s: &Sym) -> BV {
        match s {
            Sym::Bv(b) => b.clone(),
            Sym::Obj(id) => {
                if let Some(a) = &self.objs[*id].addr {
                    return a.clone();
                }
                let obj = &self.objs[*id];
                let len = obj.len.as_ref().and_then(|l| l.simplify().as_u64());
                self.esc_shapes.insert((obj.shape.clone(), len.is_some()));
                let shape = match (self.naming, len) {
                    (Naming::ShapeAndLength, Some(n)) => format!("{}/{n}", obj.shape),
                    (Naming::ShapeAndLength | Naming::Shape, _) => obj.shape.clone(),
                    (Naming::Order, _) => String::new(),
                };
                let k = self.escapes.entry(shape.clone()).or_insert(0);
                let addr = esc_addr(&shape, *k);
                *k += 1;
                // A fresh allocation is not null, differs from the other fresh ones and has
                // the class its allocation gave it.
                self.esc_facts.push(addr.eq(zero()).not());
                for other in &self.esc_addrs {
                    self.esc_facts.push(addr.eq(other).not());
                }
                self.esc_addrs.push(addr.clone());
                if let Some(c) = &self.objs[*id].class {
                    self.esc_facts.push(class_of(&addr).eq(c));
                }
                // Nor is it any pointer that existed before (its only references were
                // tracked until now).
                let mut seen = HashSet::new();
                for (i, v) in self.vals.iter().enumerate() {
                    if let Some(Sym::Bv(b)) = v {
                        if self.trace.ops[i].opcode.result_kind() == Kind::Ref
                            && b.get_size() == 64
                            && seen.insert(b.clone())
                        {
                            self.esc_facts.push(addr.eq(b).not());
                        }
                    }
                }
                self.objs[*id].addr = Some(addr.clone());
                self.escaped_in.insert(*id, self.epoch.clone());
                let obj = self.objs[*id].clone();
                // A fresh object's fields are zero: write zeros for every field either trace
                // reads (before the fields it has). Array items that were never written are
                // left unknown after an escape: the length may be constant on one side and
                // symbolic on the other, so zeros could not be written alike.
                // Stated about the initial heap, not written: the other side may not read
                // the same fields (the optimizer removes dead reads), and zeros never
                // contradict each other.
                if obj.len.is_none() {
                    for key in self.read_keys.clone().iter() {
                        if !obj.fields.contains_key(key) {
                            let item = self.initial(key, 64).select(&addr).as_bv();
                            if let Some(item) = item {
                                self.esc_facts.push(item.eq(zero()));
                            }
                        }
                    }
                }
                // A fresh array's items are zero. With a constant length, state it about the
                // heap both sides start the epoch from (an assumption, not a write: the other
                // side may know the same length only symbolically, or escape the array
                // later, and must see the same zeros through its reads of that heap).
                if let (Some(akey), Some(n)) = (
                    obj.shape.strip_prefix("array:"),
                    obj.len.as_ref().and_then(|l| l.simplify().as_u64()),
                ) {
                    if n <= 64 {
                        let init = self.initial(&format!("items:{akey}"), 128);
                        for i in 0..n {
                            let item = init.select(&addr.concat(bv(i))).as_bv();
                            if let Some(item) = item {
                                self.esc_facts.push(item.eq(zero()));
                            }
                        }
                    }
                }
                if let Some(len) = &obj.len {
                    let key = match obj.shape.as_str() {
                        "newstr" => "imm:len:strlen".to_string(),
                        "newunicode" => "imm:len:unicodelen".to_string(),
                        shape => format!("imm:len:{shape}"),
                    };
                    self.write(&key, &addr, len);
                }
                for (key, val) in &obj.fields {
                    let vb = self.escape(val);
                    match obj.item_of.get(key) {
                        Some((akey, idx)) => {
                            let ix = addr.concat(bv(*idx as u64));
                            self.write(&format!("items:{akey}"), &ix, &vb);
                        }
                        None => self.write(key, &addr, &vb),
                    }
                }
                addr
            }
        }
    }

    /// The contents of escaped object `id` as this side's heap holds them now: every item of
    /// an array of constant length up to 64, or for a struct the fields it had as it escaped,
    /// the fields either trace reads, the fields written since (this epoch or carried over
    /// heap-writing calls) and `extra`. A field the object never had is zero: stated about the
    /// heap this epoch started from. `None` for other shapes or lengths.
    fn escaped_contents(&mut self, id: usize, extra: &[String]) -> Option<Vec<Content>> {
        let obj = self.objs[id].clone();
        let addr = obj.addr.clone()?;
        let mut out = Vec::new();
        if let Some(akey) = obj.shape.strip_prefix("array:") {
            let n = obj.len.as_ref()?.simplify().as_u64().filter(|&n| n <= 64)?;
            for i in 0..n {
                let (key, index) = (format!("items:{akey}"), addr.concat(bv(i)));
                let value = self.read(&key, &index);
                out.push(Content {
                    name: format!("item:{akey}#{i}"),
                    key,
                    index,
                    value,
                });
            }
            return Some(out);
        }
        if obj.len.is_some() {
            return None;
        }
        let carried = self.carried.get(&id).cloned().unwrap_or_default();
        let plain = |k: &&String| !k.starts_with("items:") && !k.starts_with("imm:") && !k.starts_with("raw:");
        let keys: BTreeSet<String> = obj
            .fields
            .keys()
            .chain(self.read_keys.iter())
            .chain(self.written.iter().filter(plain))
            .chain(carried.iter())
            .chain(extra.iter())
            .cloned()
            .collect();
        for key in keys {
            if !obj.fields.contains_key(&key) && !carried.contains(&key) {
                if let Some(init) = self.initial(&key, 64).select(&addr).as_bv() {
                    self.esc_facts.push(init.eq(zero()));
                }
            }
            let value = self.read(&key, &addr);
            out.push(Content {
                name: key.clone(),
                key,
                index: addr.clone(),
                value,
            });
        }
        Some(out)
    }

    /// Start a new heap epoch after a call that may write the heap, keeping the contents of
    /// the objects only this side has escaped (`one_sided`, see [`one_sided`]): the call
    /// cannot reach them, since the heaps and the call's arguments were proven equal before it
    /// and nothing compared holds their addresses.
    fn new_epoch_after_call(&mut self, epoch: String, one_sided: &[BV]) {
        let mut keep = Vec::new();
        for id in 0..self.objs.len() {
            let current = self.escaped_in.get(&id) == Some(&self.epoch);
            let Some(addr) = self.objs[id].addr.clone() else {
                continue;
            };
            if !current || !one_sided.iter().any(|e| e.ast_eq(&addr)) {
                continue;
            }
            if let Some(contents) = self.escaped_contents(id, &[]) {
                keep.push((id, contents));
            }
        }
        self.new_epoch(epoch);
        for (id, contents) in keep {
            let mut keys = BTreeSet::new();
            for f in contents {
                self.write(&f.key, &f.index, &f.value);
                keys.insert(f.name);
            }
            if self.objs[id].len.is_none() {
                self.carried.insert(id, keys);
            }
            self.escaped_in.insert(id, self.epoch.clone());
        }
    }

    /// The items of tracked array `id` (constant length up to 64, no tracked objects in it),
    /// for accesses with a non-constant index.
    fn items(&self, id: usize, akey: &str) -> Option<Vec<BV>> {
        let o = &self.objs[id];
        let n = o.len.as_ref()?.simplify().as_u64()?;
        if n > 64 {
            return None;
        }
        let mut out = Vec::new();
        for i in 0..n {
            match o.fields.get(&format!("item:{akey}#{i}")) {
                None => out.push(zero()),
                Some(Sym::Bv(b)) => out.push(b.clone()),
                Some(Sym::Obj(_)) => return None,
            }
        }
        Some(out)
    }

    fn new_obj(&mut self, obj: LocalObj) -> Sym {
        self.objs.push(obj);
        Sym::Obj(self.objs.len() - 1)
    }

    fn tracked(&self, s: &Sym) -> Option<usize> {
        match s {
            Sym::Obj(id) if self.objs[*id].addr.is_none() => Some(*id),
            _ => None,
        }
    }
}

/// The address of the `k`-th object of `shape` to escape on a side (`shape` as the [`Naming`]
/// has it: with a constant array length, without, or empty). Numbering per shape (not overall)
/// keeps the addresses of both traces matched when the optimizer makes objects of different
/// shapes escape in another order.
fn esc_addr(shape: &str, k: usize) -> BV {
    BV::new_const(format!("esc{k}:{shape}"), 64)
}

/// The addresses `mine` gave objects that `other` has no object of at that address yet (the
/// `k`-th escape of a shape, for `k` at or above `other`'s count of that shape).
fn one_sided(mine: &Side, other: &Side) -> Vec<BV> {
    let mut out = Vec::new();
    for (shape, &n) in &mine.escapes {
        let from = other.escapes.get(shape).copied().unwrap_or(0);
        out.extend((from..n).map(|k| esc_addr(shape, k)));
    }
    out
}

fn class_of(p: &BV) -> BV {
    let f = FuncDecl::new("class_of", &[&Sort::bitvector(64)], &Sort::bitvector(64));
    f.apply(&[p]).as_bv().expect("class_of returns a bit-vector")
}

fn uf_bv(name: &str, args: &[BV]) -> BV {
    let sorts: Vec<Sort> = args.iter().map(|a| Sort::bitvector(a.get_size())).collect();
    let sort_refs: Vec<&Sort> = sorts.iter().collect();
    let f = FuncDecl::new(format!("{name}/{}", args.len()), &sort_refs, &Sort::bitvector(64));
    let arg_refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
    f.apply(&arg_refs)
        .as_bv()
        .expect("uninterpreted functions return bit-vectors")
}

fn uf_bool(name: &str, args: &[BV]) -> Bool {
    let sorts: Vec<Sort> = args.iter().map(|a| Sort::bitvector(a.get_size())).collect();
    let sort_refs: Vec<&Sort> = sorts.iter().collect();
    let f = FuncDecl::new(format!("{name}/{}", args.len()), &sort_refs, &Sort::bool());
    let arg_refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
    f.apply(&arg_refs).as_bool().expect("predicate returns a boolean")
}

// ------------------------------------------------------------------------------------------
// Abstraction of multiplication and division

/// Which semantics a query uses.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Heavy ops are uninterpreted ([`Abstraction`]).
    Abstract,
    /// The full bit-vector semantics; `light`: without the facts that involve heavy ops.
    Concrete { light: bool },
}

/// The abstraction of the ops whose bit-blasted circuits are expensive ([`HEAVY_OPS`], see
/// the module documentation): each such op with non-constant operands is an application of
/// an uninterpreted function (one symbol per op, shared by both traces), and the overflow
/// flag of `int_mul_ovf` an uninterpreted predicate of the same operands. The concrete
/// meaning of every application is remembered, so a query can be re-checked with the full
/// bit-vector semantics by substitution.
struct Abstraction {
    /// Whether heavy ops are abstracted at all ([`Config::abstract_heavy_ops`]).
    enabled: bool,
    /// The applications made so far (abstract term, concrete meaning), in creation order.
    /// A concrete meaning contains no application: it is built from the concrete meanings
    /// of the operands.
    defs: Vec<(Dynamic, Dynamic)>,
    /// The abstract terms already in `defs`.
    known: HashSet<Dynamic>,
    /// Cheap facts about the applications that hold in the full semantics (`x * 0 == 0`,
    /// `x * 1 == x`, `x / 1 == x`, ...), assumed by abstract queries.
    axioms: Vec<Bool>,
}

impl Abstraction {
    fn new(enabled: bool) -> Abstraction {
        Abstraction {
            enabled,
            defs: Vec::new(),
            known: HashSet::new(),
            axioms: Vec::new(),
        }
    }

    /// `x` with every application replaced by its concrete meaning.
    fn concrete<T: Ast + Clone>(&self, x: &T) -> T {
        if self.defs.is_empty() {
            return x.clone();
        }
        let pairs: Vec<(&Dynamic, &Dynamic)> = self.defs.iter().map(|(a, c)| (a, c)).collect();
        x.substitute(&pairs)
    }

    /// Remember the concrete meaning of `app` (and its axioms), when it is new.
    fn define(&mut self, app: Dynamic, concrete: impl FnOnce(&Self) -> Dynamic, axioms: impl FnOnce() -> Vec<Bool>) {
        if self.known.contains(&app) {
            return;
        }
        let c = concrete(self);
        self.known.insert(app.clone());
        self.defs.push((app, c));
        self.axioms.extend(axioms());
    }

    /// The operands of a heavy op in canonical form: simplified (so that `x + 0` and `x`
    /// give the same application) and, for the commutative ones, ordered.
    fn operands(opc: Opcode, a: &BV, b: &BV) -> (BV, BV) {
        let (a, b) = (a.simplify(), b.simplify());
        if is_commutative(opc) && ast_hash(&a) > ast_hash(&b) {
            (b, a)
        } else {
            (a, b)
        }
    }

    /// Whether `opc(a, b)` is abstracted: a heavy op whose circuit is not cheap (a
    /// multiplication by a constant, a division by a constant divisor stay concrete).
    fn abstracts(&self, opc: Opcode, a: &BV, b: &BV) -> bool {
        let num = |x: &BV| x.as_u64().is_some();
        self.enabled
            && HEAVY_OPS.contains(&opc)
            && if is_commutative(opc) {
                !num(a) && !num(b)
            } else {
                !num(b)
            }
    }

    /// The value of heavy op `opc(args)` (and its `valid_if`), abstracted; `None` when the op
    /// is not abstracted.
    fn value(&mut self, opc: Opcode, args: &[BV]) -> Option<(BV, Bool)> {
        if args.len() != 2 || !self.enabled || !HEAVY_OPS.contains(&opc) {
            return None;
        }
        let (mut a, mut b) = Abstraction::operands(opc, &args[0], &args[1]);
        let is_div = matches!(
            opc,
            Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod
        );
        let valid = if is_div {
            b.eq(zero()).not()
        } else {
            Bool::from_bool(true)
        };
        if is_div && a.ast_eq(&b) {
            // `x / x` and `x % x`: exact without a division circuit (1 and 0 where
            // defined; at zero whatever the semantics gives).
            let at_zero = op_semantics(opc, &[zero(), zero()]).ok()?.0.simplify();
            let one = matches!(opc, Opcode::IntFloorDiv | Opcode::IntPyDiv);
            let v = a.eq(zero()).ite(&at_zero, &bv(one as u64));
            return Some((v, valid));
        }
        if is_div && a.as_u64() == Some(0) {
            // `0 / y`, `0 % y`: 0 where defined, without a division circuit.
            let at_zero = op_semantics(opc, &[zero(), zero()]).ok()?.0.simplify();
            return Some((b.eq(zero()).ite(&at_zero, &zero()), valid));
        }
        if matches!(opc, Opcode::IntMul | Opcode::IntMulOvf) {
            // (-x) * (-y) == x * y (wrapping).
            if let (Some(x), Some(y)) = (negated(&a), negated(&b)) {
                (a, b) = Abstraction::operands(opc, &x, &y);
            }
        }
        if !self.abstracts(opc, &a, &b) {
            return None;
        }
        // `int_mul_ovf` computes the same wrapped product as `int_mul`.
        let symbol = if opc == Opcode::IntMulOvf { Opcode::IntMul } else { opc };
        let app = uf_bv(&format!("abs:{}", symbol.name()), &[a.clone(), b.clone()]);
        self.define(
            Dynamic::from_ast(&app),
            |abs| {
                let (ca, cb) = (abs.concrete(&a), abs.concrete(&b));
                let (v, _) = op_semantics(symbol, &[ca, cb]).expect("heavy ops have semantics");
                Dynamic::from_ast(&v)
            },
            || heavy_axioms(symbol, &a, &b, &app),
        );
        Some((app, valid))
    }

    /// The "no overflow" flag of `int_mul_ovf(a, b)`, abstracted; `None` when not abstracted.
    fn no_overflow(&mut self, opc: Opcode, a: &BV, b: &BV) -> Option<Bool> {
        if opc != Opcode::IntMulOvf {
            return None;
        }
        let (a, b) = Abstraction::operands(opc, a, b);
        if !self.abstracts(opc, &a, &b) {
            return None;
        }
        let app = uf_bool("abs:int_mul_ovf_ok", &[a.clone(), b.clone()]);
        self.define(
            Dynamic::from_ast(&app),
            |abs| {
                let (ca, cb) = (abs.concrete(&a), abs.concrete(&b));
                Dynamic::from_ast(&no_overflow(opc, &ca, &cb).expect("int_mul_ovf has an overflow flag"))
            },
            || {
                // Multiplying by 0 or 1 never overflows.
                let trivial = [a.eq(zero()), b.eq(zero()), a.eq(bv(1)), b.eq(bv(1))];
                vec![Bool::or(&trivial).implies(&app)]
            },
        );
        Some(app)
    }
}

/// Facts about `f = opc(a, b)` that hold in the full semantics and cost no circuit:
/// multiplication by 0, 1 and -1, division of 0, division by 1 and -1.
fn heavy_axioms(opc: Opcode, a: &BV, b: &BV, f: &BV) -> Vec<Bool> {
    let (zero, one, minus_one) = (zero(), bv(1), bv(u64::MAX));
    let when = |c: Bool, v: &BV| c.implies(f.eq(v));
    match opc {
        Opcode::IntMul => vec![
            when(Bool::or(&[a.eq(&zero), b.eq(&zero)]), &zero),
            when(a.eq(&one), b),
            when(b.eq(&one), a),
            when(a.eq(&minus_one), &b.bvneg()),
            when(b.eq(&minus_one), &a.bvneg()),
        ],
        Opcode::UintMulHigh => vec![when(
            Bool::or(&[a.eq(&zero), b.eq(&zero), a.eq(&one), b.eq(&one)]),
            &zero,
        )],
        Opcode::IntFloorDiv | Opcode::IntPyDiv => vec![
            when(Bool::and(&[a.eq(&zero), b.eq(&zero).not()]), &zero),
            when(b.eq(&one), a),
            when(b.eq(&minus_one), &a.bvneg()),
        ],
        Opcode::IntMod | Opcode::IntPyMod => vec![
            when(Bool::and(&[a.eq(&zero), b.eq(&zero).not()]), &zero),
            when(Bool::or(&[b.eq(&one), b.eq(&minus_one)]), &zero),
        ],
        _ => Vec::new(),
    }
}

/// `x` when `t` is `-x` (Z3's simplifier writes it `-1 * x`).
fn negated(t: &BV) -> Option<BV> {
    let decl = t.safe_decl().ok()?;
    let kids = t.children();
    match (decl.kind(), kids.as_slice()) {
        (z3::DeclKind::Bneg, [x]) => x.as_bv(),
        (z3::DeclKind::Bmul, [c, x]) | (z3::DeclKind::Bmul, [x, c]) if c.as_bv()?.as_u64() == Some(u64::MAX) => {
            x.as_bv()
        }
        _ => None,
    }
}

fn is_commutative(opc: Opcode) -> bool {
    matches!(opc, Opcode::IntMul | Opcode::IntMulOvf | Opcode::UintMulHigh)
}

/// Z3's structural hash of a term (stable for equal terms).
fn ast_hash(x: &BV) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

/// What translating one op produced besides its value.
struct Translated {
    /// A precondition of the op (`valid_if`), when not trivially true.
    valid: Option<Bool>,
    /// A fact the op asserts (hints such as `assert_not_none`).
    fact: Option<Bool>,
}

// ------------------------------------------------------------------------------------------
// The validator

/// A claim of an open batch: the condition to prove, what it means, and the pair of values
/// it compares (for the counterexample), if any.
type Claim = (Bool, String, Option<(BV, BV)>);

struct Validator<'t> {
    o: Side<'t>,
    p: Side<'t>,
    /// The path condition: guards passed, original ops defined, hints.
    /// Each with whether it involves a multiplication or division.
    facts: Vec<(Bool, bool)>,
    /// The concrete meaning of `facts[i]` once computed (see [`Abstraction`]).
    concrete_facts: Vec<Bool>,
    abs: Abstraction,
    /// Query statistics.
    stats: Stats,
    /// Claims collected while a batch is open.
    batch: Option<Vec<Claim>>,
    cfg: Config,
    unknown: Option<String>,
    float_uf: bool,
}

impl<'t> Validator<'t> {
    fn new(original: &'t Trace, optimized: &'t Trace, cfg: &Config) -> Validator<'t> {
        let mut keys = BTreeSet::new();
        for t in [original, optimized] {
            for r in t.op_refs() {
                if matches!(
                    t.op(r).opcode,
                    Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF
                ) {
                    keys.insert(field_key(t, r));
                }
            }
        }
        let keys = std::rc::Rc::new(keys.into_iter().collect::<Vec<_>>());
        let mut o = Side::new(original, "original");
        let mut p = Side::new(optimized, "optimized");
        o.read_keys = keys.clone();
        p.read_keys = keys;
        Validator {
            o,
            p,
            facts: Vec::new(),
            concrete_facts: Vec::new(),
            abs: Abstraction::new(cfg.abstract_heavy_ops),
            stats: Stats::default(),
            batch: None,
            cfg: cfg.clone(),
            unknown: None,
            float_uf: false,
        }
    }

    fn run(&mut self) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        if ot.num_inputs != pt.num_inputs {
            return unsupported(format!(
                "the traces have different numbers of inputs ({} and {})",
                ot.num_inputs, pt.num_inputs
            ));
        }
        for i in 0..ot.num_inputs {
            let (ko, kp) = (ot.ops[i].opcode.result_kind(), pt.ops[i].opcode.result_kind());
            if ko != kp {
                return unsupported(format!(
                    "input {i} has kind {ko:?} in the original and {kp:?} in the optimized trace"
                ));
            }
            let name = format!("{}{}", ko.prefix(), i);
            let s = Sym::Bv(BV::new_const(name, 64));
            self.o.vals[i] = Some(s.clone());
            self.p.vals[i] = Some(s);
        }
        self.o.pos = ot.num_inputs;
        self.p.pos = pt.num_inputs;

        let ev_o = events(ot);
        let ev_p = events(pt);
        let orig_ids: HashMap<GuardId, usize> = ev_o
            .iter()
            .enumerate()
            .filter_map(|(i, (_, e))| match e {
                Event::Guard(g) => Some((*g, i)),
                _ => None,
            })
            .collect();
        for (r, e) in &ev_p {
            if let Event::Guard(g) = e {
                if !orig_ids.contains_key(g) {
                    return Err(Stop::Invalid(self.structural(format!(
                        "the optimized trace adds a guard with a new id: {g} ({} at {r})",
                        pt.op(*r).opcode
                    ))));
                }
            }
        }
        // The original's events with removed guards dropped must equal the optimized events.
        let kept: BTreeSet<GuardId> = ev_p
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Guard(g) => Some(*g),
                _ => None,
            })
            .collect();
        let o_kept: Vec<Event> = ev_o
            .iter()
            .map(|(_, e)| *e)
            .filter(|e| !matches!(e, Event::Guard(g) if !kept.contains(g)))
            .collect();
        let p_events: Vec<Event> = ev_p.iter().map(|(_, e)| *e).collect();
        if o_kept != p_events {
            let at = o_kept
                .iter()
                .zip(&p_events)
                .position(|(a, b)| a != b)
                .unwrap_or(o_kept.len().min(p_events.len()));
            return unsupported(format!(
                "sync points differ at position {at}: original {:?}, optimized {:?} (guards reordered, calls or labels added or removed)",
                o_kept.get(at),
                p_events.get(at)
            ));
        }

        let mut pi = 0usize;
        for (ro, e) in ev_o {
            self.run_side_until(true, ro)?;
            match e {
                Event::Guard(g) if !kept.contains(&g) => {
                    let cond = self.guard_cond(true, ro)?;
                    self.prove(
                        &cond,
                        || format!("guard {g} ({}) was removed but can fail", ot.op(ro).opcode),
                        None,
                    )?;
                    let h = self.guard_heavy(true, ro);
                    self.assume(cond, h);
                    self.learn_constant(true, ro);
                    self.guard_result(true, ro);
                    self.o.pos = ro.index() + 1;
                }
                _ => {
                    let (rp, ep) = ev_p[pi];
                    pi += 1;
                    debug_assert_eq!(e, ep);
                    self.run_side_until(false, rp)?;
                    match e {
                        Event::Guard(g) => self.sync_guard(g, ro, rp)?,
                        Event::Call(k) => self.sync_call(k, ro, rp)?,
                        Event::Label(k) => self.sync_label(k, ro, rp)?,
                        Event::Final => self.sync_final(ro, rp)?,
                    }
                    self.o.pos = ro.index() + 1;
                    self.p.pos = rp.index() + 1;
                }
            }
        }
        Ok(())
    }

    fn side(&mut self, orig: bool) -> &mut Side<'t> {
        if orig {
            &mut self.o
        } else {
            &mut self.p
        }
    }

    /// Translate the ops of one side up to (not including) `stop`.
    fn run_side_until(&mut self, orig: bool, stop: OpRef) -> R<()> {
        while self.side(orig).pos < stop.index() {
            let r = OpRef::new(self.side(orig).pos);
            let t = self.translate(orig, r)?;
            let heavy = {
                let s = self.side(orig);
                let op = s.trace.op(r);
                let h = HEAVY_OPS.contains(&op.opcode)
                    || op.args.iter().any(|a| a.as_op().is_some_and(|o| s.heavy[o.index()]));
                s.heavy[r.index()] = h;
                if op.opcode.is_ovf() {
                    s.ovf_heavy = h;
                }
                h
            };
            if let Some(f) = t.fact {
                self.assume(f, false);
            }
            if let Some(valid) = t.valid {
                if orig {
                    self.assume(valid, heavy);
                } else {
                    let opcode = self.p.trace.op(r).opcode;
                    self.prove(
                        &valid,
                        || format!("optimized op {r} ({opcode}) may be undefined (shift out of range or division by zero) where the original is defined"),
                        None,
                    )?;
                }
            }
            self.side(orig).pos += 1;
        }
        Ok(())
    }

    // --------------------------------------------------------------------------------------
    // Queries

    /// Add a fact to the path condition.
    fn assume(&mut self, b: Bool, heavy: bool) {
        if b.simplify().as_bool() != Some(true) {
            self.facts.push((b, heavy));
        }
    }

    /// Whether a guard's condition depends on a multiplication or division (facts that make
    /// Z3 slow; see [`Validator::prove`]).
    fn guard_heavy(&mut self, orig: bool, r: OpRef) -> bool {
        let s = self.side(orig);
        let op = s.trace.op(r);
        (op.opcode.is_guard() && matches!(op.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow) && s.ovf_heavy)
            || op.args.iter().any(|a| a.as_op().is_some_and(|o| s.heavy[o.index()]))
    }

    /// Check whether `facts ∧ ¬claim` is satisfiable, in a fresh solver (Z3's
    /// non-incremental mode preprocesses bit-vector problems much better than push/pop).
    fn check(&mut self, claim: &Bool, mode: Mode) -> (SatResult, Option<z3::Model>, Option<String>) {
        let started = std::time::Instant::now();
        let mut params = Params::new();
        // Once the verdict is Unknown, later queries can only still find a counterexample:
        // give them less time.
        let ms = if self.unknown.is_some() {
            self.cfg.timeout_ms.min(200)
        } else {
            self.cfg.timeout_ms
        };
        params.set_u32("timeout", ms);
        let solver = Solver::new();
        solver.set_params(&params);
        match mode {
            Mode::Abstract => {
                for f in &self.abs.axioms {
                    solver.assert(f);
                }
                for (f, _) in &self.facts {
                    solver.assert(f);
                }
                solver.assert(claim.not());
            }
            Mode::Concrete { light } => {
                self.concretize_facts();
                for ((_, heavy), c) in self.facts.iter().zip(&self.concrete_facts) {
                    if !(light && *heavy) {
                        solver.assert(c);
                    }
                }
                solver.assert(self.abs.concrete(claim).not());
            }
        }
        let res = solver.check();
        let out = match res {
            SatResult::Sat => (res, solver.get_model(), None),
            SatResult::Unknown => (res, None, solver.get_reason_unknown()),
            SatResult::Unsat => (res, None, None),
        };
        let st = &mut self.stats;
        match mode {
            Mode::Abstract => st.abstract_queries += 1,
            Mode::Concrete { .. } => st.concrete_queries += 1,
        }
        if res == SatResult::Unknown {
            st.timeouts += 1;
        }
        st.solver_time += started.elapsed();
        out
    }

    /// Compute the concrete meaning of the facts not yet translated.
    fn concretize_facts(&mut self) {
        for i in self.concrete_facts.len()..self.facts.len() {
            let c = self.abs.concrete(&self.facts[i].0);
            self.concrete_facts.push(c);
        }
    }

    /// Whether the query `facts ∧ ¬claim` involves no abstracted op (its abstract and
    /// concrete forms are the same).
    fn query_is_concrete(&mut self, claim: &Bool) -> bool {
        if self.abs.defs.is_empty() {
            return true;
        }
        self.concretize_facts();
        self.facts
            .iter()
            .zip(&self.concrete_facts)
            .all(|((f, _), c)| f.ast_eq(c))
            && self.abs.concrete(claim).ast_eq(claim)
    }

    /// Look for a real counterexample near the abstract one before a full-semantics query
    /// (which may time out on multiplier circuits even when counterexamples abound): the
    /// abstract model's input values, then special and pseudo-random ones, are substituted
    /// into the concrete query and evaluated (other symbols as in the abstract model). When
    /// one satisfies it, a solver with the inputs fixed to it returns the model.
    fn probe(&mut self, claim: &Bool, model: &z3::Model) -> Option<(SatResult, Option<z3::Model>, Option<String>)> {
        self.concretize_facts();
        let mut parts: Vec<Bool> = self.concrete_facts.clone();
        parts.push(self.abs.concrete(claim).not());
        let query = Bool::and(&parts);
        let inputs: Vec<BV> = (0..self.o.trace.num_inputs)
            .filter_map(|i| match &self.o.vals[i] {
                Some(Sym::Bv(b)) => Some(b.clone()),
                _ => None,
            })
            .collect();
        if inputs.is_empty() {
            return None;
        }
        const SPECIAL: [u64; 8] = [0, 1, 2, u64::MAX, 3, 1 << 32, i64::MAX as u64, i64::MIN as u64];
        let mut rng = trace_ir::rng::Rng::new(0x9e37_79b9 ^ self.stats.claims as u64);
        for round in 0..24 {
            let values: Vec<BV> = inputs
                .iter()
                .map(|x| match round {
                    0 => model.eval(x, true).unwrap_or_else(zero),
                    r if r < 8 => bv(SPECIAL[(r as usize + rng.below(4) as usize) % SPECIAL.len()]),
                    _ => bv(rng.next_u64() >> rng.below(64)),
                })
                .collect();
            let pairs: Vec<(&BV, &BV)> = inputs.iter().zip(&values).collect();
            let ground = query.substitute(&pairs);
            if model.eval(&ground, true).and_then(|b| b.as_bool()) != Some(true) {
                continue;
            }
            let solver = Solver::new();
            let mut params = Params::new();
            params.set_u32("timeout", self.cfg.timeout_ms);
            solver.set_params(&params);
            solver.assert(&query);
            for (x, v) in &pairs {
                solver.assert(Ast::eq(*x, *v));
            }
            self.stats.concrete_queries += 1;
            if solver.check() == SatResult::Sat {
                return Some((SatResult::Sat, solver.get_model(), None));
            }
        }
        None
    }

    /// Decide `facts ∧ ¬claim` by abstraction refinement: first with heavy ops abstracted
    /// (unsatisfiable there means unsatisfiable with any meaning of them, so with the real
    /// one); otherwise with the full bit-vector semantics, whose model is then a real
    /// counterexample. A full query that times out is retried without the path facts that
    /// involve multiplication or division (fewer assumptions only make a proof harder).
    fn decide(&mut self, claim: &Bool) -> (SatResult, Option<z3::Model>, Option<String>) {
        self.stats.claims += 1;
        let abstract_result = self.check(claim, Mode::Abstract);
        if abstract_result.0 == SatResult::Unsat {
            return abstract_result;
        }
        let mut result = if self.query_is_concrete(claim) {
            abstract_result
        } else {
            self.stats.refined += 1;
            match abstract_result.1.as_ref().and_then(|m| self.probe(claim, m)) {
                Some(found) => found,
                None => self.check(claim, Mode::Concrete { light: false }),
            }
        };
        if result.0 == SatResult::Unknown
            && self.facts.iter().any(|(_, h)| *h)
            && self.check(claim, Mode::Concrete { light: true }).0 == SatResult::Unsat
        {
            result = (SatResult::Unsat, None, None);
        }
        result
    }

    /// Prove `claim` under the path condition. On a counterexample stop with `Invalid`;
    /// on a timeout remember the reason and go on. While a batch is open the claim is only
    /// collected (see [`Validator::flush`]).
    fn prove(&mut self, claim: &Bool, what: impl Fn() -> String, diff: Option<(&BV, &BV)>) -> R<()> {
        self.drain_escape_facts();
        if claim.simplify().as_bool() == Some(true) {
            return Ok(());
        }
        if let Some(batch) = &mut self.batch {
            batch.push((claim.clone(), what(), diff.map(|(a, b)| (a.clone(), b.clone()))));
            return Ok(());
        }
        let (res, model, why) = self.decide(claim);
        match res {
            SatResult::Unsat => Ok(()),
            SatResult::Unknown => {
                if self.unknown.is_none() {
                    self.unknown = Some(format!("Z3 gave up ({}) proving: {}", why.unwrap_or_default(), what()));
                }
                Ok(())
            }
            SatResult::Sat => {
                if self.float_uf {
                    if self.unknown.is_none() {
                        self.unknown = Some(format!(
                            "counterexample depends on uninterpreted float operations: {}",
                            what()
                        ));
                    }
                    Ok(())
                } else {
                    Err(Stop::Invalid(self.counterexample(model, what(), diff)))
                }
            }
        }
    }

    fn drain_escape_facts(&mut self) {
        let mut new: Vec<Bool> = self.o.esc_facts.drain(..).collect();
        new.append(&mut self.p.esc_facts);
        for f in new {
            self.facts.push((f, false));
        }
    }

    /// Start collecting claims instead of proving them one by one.
    fn open_batch(&mut self) {
        self.batch = Some(Vec::new());
    }

    /// Prove the collected claims with one query; when it fails, find the failing claim
    /// with one query each.
    fn flush(&mut self) -> R<()> {
        self.drain_escape_facts();
        let Some(batch) = self.batch.take() else { return Ok(()) };
        if batch.is_empty() {
            return Ok(());
        }
        if batch.len() > 1 {
            let all: Vec<Bool> = batch.iter().map(|(c, _, _)| c.clone()).collect();
            if self.check(&Bool::and(&all), Mode::Abstract).0 == SatResult::Unsat {
                return Ok(());
            }
        }
        for (claim, what, diff) in batch {
            self.prove(&claim, || what.clone(), diff.as_ref().map(|(a, b)| (a, b)))?;
        }
        Ok(())
    }

    fn structural(&self, message: String) -> Counterexample {
        Counterexample {
            message,
            inputs: Vec::new(),
            differing: None,
            original: Vec::new(),
            optimized: Vec::new(),
        }
    }

    fn counterexample(&self, model: Option<z3::Model>, message: String, diff: Option<(&BV, &BV)>) -> Counterexample {
        let Some(model) = model else {
            return self.structural(message);
        };
        // Values are evaluated in their concrete meaning (the model is one of the full
        // semantics, where the abstraction's function symbols have no interpretation).
        let ev = |b: &BV| {
            model
                .eval(&self.abs.concrete(b), true)
                .and_then(|v| v.as_u64())
                .map(|v| v as i64)
        };
        let mut inputs = Vec::new();
        for i in 0..self.o.trace.num_inputs {
            if let Some(Sym::Bv(b)) = &self.o.vals[i] {
                let k = self.o.trace.ops[i].opcode.result_kind();
                inputs.push((format!("{}{}", k.prefix(), i), ev(b).unwrap_or(0)));
            }
        }
        let side_vals = |s: &Side| {
            let mut out = Vec::new();
            for (i, v) in s.vals.iter().enumerate().skip(s.trace.num_inputs) {
                if s.trace.ops[i].opcode.result_kind() != Kind::Int {
                    continue;
                }
                if let Some(Sym::Bv(b)) = v {
                    if let Some(x) = ev(b) {
                        out.push((format!("i{i}"), x));
                    }
                }
                if out.len() >= 40 {
                    break;
                }
            }
            out
        };
        let differing = diff.and_then(|(a, b)| Some((ev(a)?, ev(b)?)));
        Counterexample {
            message,
            inputs,
            differing,
            original: side_vals(&self.o),
            optimized: side_vals(&self.p),
        }
    }

    // --------------------------------------------------------------------------------------
    // Sync points

    fn sync_guard(&mut self, g: GuardId, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let co = self.guard_cond(true, ro)?;
        let cp = self.guard_cond(false, rp)?;
        let opname = ot.op(ro).opcode;
        self.prove(
            &co.iff(&cp),
            || format!("guard {g} ({opname} / {}) fails on different inputs", pt.op(rp).opcode),
            None,
        )?;
        // When the guard fails, the interpreter resumes with the fail arguments.
        if self.cfg.check_fail_args || self.cfg.check_heap {
            self.drain_escape_facts();
            let n = self.facts.len();
            let h = self.guard_heavy(true, ro);
            self.assume(co.not(), h);
            self.open_batch();
            let r = self.compare_exit(g, ro, rp).and_then(|()| self.flush());
            self.batch = None;
            self.facts.truncate(n);
            self.concrete_facts.truncate(n);
            r?;
        }
        let (ho, hp) = (self.guard_heavy(true, ro), self.guard_heavy(false, rp));
        self.assume(co, ho);
        self.assume(cp, hp);
        self.learn_constant(true, ro);
        self.learn_constant(false, rp);
        self.guard_result(true, ro);
        self.guard_result(false, rp);
        Ok(())
    }

    fn compare_exit(&mut self, g: GuardId, ro: OpRef, rp: OpRef) -> R<()> {
        if self.cfg.check_fail_args {
            let go = self.o.trace.guard_of(ro).cloned().expect("guard data");
            let gp = self.p.trace.guard_of(rp).cloned().expect("guard data");
            if go.fail_args.len() != gp.fail_args.len() {
                return Err(Stop::Invalid(self.structural(format!(
                    "guard {g}: {} fail arguments in the original, {} in the optimized trace",
                    go.fail_args.len(),
                    gp.fail_args.len()
                ))));
            }
            let mut memo_o = HashMap::new();
            let mut memo_p = HashMap::new();
            let mut pairs = Pairs::default();
            for (i, (fo, fp)) in go.fail_args.iter().zip(&gp.fail_args).enumerate() {
                if matches!(fo, FailArg::Hole) || matches!(fp, FailArg::Hole) {
                    continue;
                }
                let so = self.fail_arg(true, &go, fo, &mut memo_o)?;
                let sp = self.fail_arg(false, &gp, fp, &mut memo_p)?;
                self.prove_equal(&so, &sp, &mut pairs, &|| {
                    format!("guard {g}: fail argument {i} differs when the guard fails")
                })?;
            }
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("when guard {g} fails"))?;
        }
        Ok(())
    }

    fn sync_call(&mut self, k: usize, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (opo, opp) = (ot.op(ro), pt.op(rp));
        if opo.opcode != opp.opcode || descr_key(ot, ro) != descr_key(pt, rp) || opo.args.len() != opp.args.len() {
            return Err(Stop::Invalid(self.structural(format!(
                "call {k}: `{}` in the original, `{}` in the optimized trace",
                opo.opcode, opp.opcode
            ))));
        }
        self.open_batch();
        for i in 0..opo.args.len() {
            let a = self.o.bv_of(opo.args[i])?;
            let b = self.p.bv_of(opp.args[i])?;
            self.prove(
                &a.eq(&b),
                || format!("call {k} ({}): argument {i} differs", opo.opcode),
                Some((&a, &b)),
            )?;
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("before call {k} ({})", opo.opcode))?;
        }
        self.flush()?;
        let effect = opo.descr.and_then(|d| ot.descr(d).as_call().map(|c| c.effect));
        let may_write = effect.map(|e| e.may_write_heap()).unwrap_or(true) || opo.opcode.has(OpFlags::BARRIER);
        let can_raise = effect.map(|e| e.can_raise()).unwrap_or(true);
        let mut res = BV::new_const(format!("call{k}"), 64);
        if matches!(opo.opcode, Opcode::CondCallValueI | Opcode::CondCallValueR) {
            // The value if non-zero, else the call's result.
            let v = self.o.bv_of(opo.args[0])?;
            res = v.eq(zero()).ite(&res, &v);
        }
        let res = Sym::Bv(res);
        let only = (one_sided(&self.o, &self.p), one_sided(&self.p, &self.o));
        for orig in [true, false] {
            let r = if orig { ro } else { rp };
            let only_here = if orig { &only.0 } else { &only.1 };
            let s = self.side(orig);
            s.vals[r.index()] = Some(res.clone());
            s.calls += 1;
            s.exc = if can_raise {
                Bool::new_const(format!("raised{k}"))
            } else {
                Bool::from_bool(false)
            };
            if opo.opcode.has(OpFlags::BARRIER) {
                s.not_forced = Bool::new_const(format!("not_forced{k}"));
            }
            if may_write {
                s.new_epoch_after_call(format!("call{k}"), only_here);
            }
        }
        Ok(())
    }

    fn sync_label(&mut self, k: usize, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (ao, ap) = (ot.op(ro).args.clone(), pt.op(rp).args.clone());
        if ao.len() != ap.len() {
            return unsupported(format!(
                "label {k} has {} parameters in the original and {} in the optimized trace",
                ao.len(),
                ap.len()
            ));
        }
        self.open_batch();
        let mut pairs = Pairs::default();
        let mut operands = Vec::with_capacity(ao.len());
        for i in 0..ao.len() {
            let so = self.o.value(ao[i])?;
            let sp = self.p.value(ap[i])?;
            self.prove_equal(&so, &sp, &mut pairs, &|| format!("label {k}: operand {i} differs"))?;
            operands.push(so);
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("at label {k}"))?;
        }
        self.flush()?;
        // A parameter of the loop header that the optimized trace's final jump passes back
        // unchanged equals its operand in every iteration, on both sides: by induction, the
        // jump's operands being proven equal (so the original's jump passes that value back
        // too). The others become fresh symbols.
        let header = |t: &Trace, l: OpRef| trace_ir::invariant_params(t).filter(|(h, _)| *h == l).map(|(_, v)| v);
        let same = match (header(ot, ro), header(pt, rp)) {
            (Some(_), Some(v)) => v,
            _ => Vec::new(),
        };
        // A parameter the optimized jump masks (`trace_ir::masked_params`: the back edge
        // brings `x & C`, `C = 2^k - 1`) is in `[0, C]` in every iteration when its operand
        // here is: by induction, the jump's operand is in it by its shape, and the original's
        // is proven equal to it. The optimizer assumes exactly that (and only keeps a peeled
        // loop whose jump masks what it assumed masked). An operand shown not to be in
        // `[0, C]` gives no assumption; one Z3 cannot decide gives it, but the verdict can
        // then be `Unknown` at best (so a time-out never turns into a false `Invalid`).
        let masks = match (header(ot, ro), trace_ir::masked_params(pt).filter(|(h, _)| *h == rp)) {
            (Some(_), Some((_, m))) => m,
            _ => Vec::new(),
        };
        let mut masked: Vec<Option<u64>> = vec![None; operands.len()];
        for (j, so) in operands.iter().enumerate() {
            if let (Some(&Some(c)), Sym::Bv(b), false) = (masks.get(j), so, same.get(j) == Some(&true)) {
                let within = b.bvule(BV::from_u64(c, 64));
                match self.decide(&within).0 {
                    SatResult::Unsat => masked[j] = Some(c),
                    SatResult::Unknown => {
                        if self.unknown.is_none() {
                            self.unknown = Some(format!("Z3 gave up proving label {k}: operand {j} in [0, {c:#x}]"));
                        }
                        masked[j] = Some(c);
                    }
                    SatResult::Sat => {}
                }
            }
        }
        let invariant: Vec<Option<BV>> = operands
            .into_iter()
            .enumerate()
            .map(|(j, so)| match so {
                Sym::Bv(b) if same.get(j) == Some(&true) => Some(b),
                _ => None,
            })
            .collect();
        let mut assumptions = Vec::new();
        for orig in [true, false] {
            let r = if orig { ro } else { rp };
            let s = self.side(orig);
            for o in s.objs.iter_mut() {
                if o.addr.is_none() {
                    o.dead = true;
                }
            }
            s.new_epoch(format!("label{k}"));
            s.labels += 1;
            s.no_ovf = None;
            for (j, param) in s.trace.label_params(r).enumerate() {
                let kind = s.trace.op(param).opcode.result_kind();
                let sym = match &invariant[j] {
                    Some(b) => b.clone(),
                    None => BV::new_const(format!("L{k}_{}{j}", kind.prefix()), 64),
                };
                if let (Some(c), true) = (masked[j], orig) {
                    assumptions.push(sym.bvule(BV::from_u64(c, 64)));
                }
                s.vals[param.index()] = Some(Sym::Bv(sym));
            }
        }
        // Both sides share the parameters' symbols: one assumption each.
        for a in assumptions {
            self.assume(a, false);
        }
        // `run` then continues right after the label; `translate` keeps the parameters'
        // values set here.
        Ok(())
    }

    fn sync_final(&mut self, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (opo, opp) = (ot.op(ro), pt.op(rp));
        if opo.opcode != opp.opcode {
            return Err(Stop::Invalid(self.structural(format!(
                "the original ends with {}, the optimized trace with {}",
                opo.opcode, opp.opcode
            ))));
        }
        if opo.args.len() != opp.args.len() {
            return Err(Stop::Invalid(self.structural(format!(
                "{}: {} operands in the original, {} in the optimized trace",
                opo.opcode,
                opo.args.len(),
                opp.args.len()
            ))));
        }
        self.open_batch();
        let mut pairs = Pairs::default();
        for i in 0..opo.args.len() {
            let so = self.o.value(opo.args[i])?;
            let sp = self.p.value(opp.args[i])?;
            let name = opo.opcode;
            self.prove_equal(&so, &sp, &mut pairs, &|| format!("{name}: output {i} differs"))?;
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("at {}", opo.opcode))?;
        }
        self.flush()?;
        Ok(())
    }

    /// Prove two values equal: bit-vectors by equality, tracked objects field by field.
    /// `pairs` relates the objects already matched at this sync point (shared by all its
    /// values, so one object on one side cannot stand for two different ones on the other).
    fn prove_equal(&mut self, so: &Sym, sp: &Sym, pairs: &mut Pairs, what: &dyn Fn() -> String) -> R<()> {
        match (self.o.tracked(so), self.p.tracked(sp)) {
            (None, None) => {
                let a = self.o.escape(so);
                let b = self.p.escape(sp);
                self.prove(&a.eq(&b), what, Some((&a, &b)))
            }
            _ => {
                let claim = self.obj_equal(so, sp, pairs);
                self.prove(&claim, what, None)
            }
        }
    }

    /// The condition under which two values (possibly tracked objects) are equal.
    fn obj_equal(&mut self, so: &Sym, sp: &Sym, pairs: &mut Pairs) -> Bool {
        match (self.o.tracked(so), self.p.tracked(sp)) {
            (None, None) => {
                let a = self.o.escape(so);
                let b = self.p.escape(sp);
                a.eq(&b)
            }
            (Some(a), Some(b)) => {
                if let Some(known) = pairs.known(a, b) {
                    return Bool::from_bool(known);
                }
                pairs.insert(a, b);
                let (oa, ob) = (self.o.objs[a].clone(), self.p.objs[b].clone());
                if oa.shape != ob.shape {
                    return Bool::from_bool(false);
                }
                let mut conj = Vec::new();
                if let (Some(x), Some(y)) = (&oa.len, &ob.len) {
                    conj.push(x.eq(y));
                }
                let keys: BTreeSet<&String> = oa.fields.keys().chain(ob.fields.keys()).collect();
                for k in keys {
                    let fa = oa.fields.get(k).cloned().unwrap_or(Sym::Bv(zero()));
                    let fb = ob.fields.get(k).cloned().unwrap_or(Sym::Bv(zero()));
                    conj.push(self.obj_equal(&fa, &fb, pairs));
                }
                Bool::and(&conj)
            }
            // A tracked object on one side, a pointer on the other: equal only if the pointer
            // is a fresh object the other side has not escaped (so nothing compared holds its
            // address on the tracked side) with the same contents.
            (None, Some(b)) => self.escaped_vs_tracked(true, so, b, pairs),
            (Some(a), None) => self.escaped_vs_tracked(false, sp, a, pairs),
        }
    }

    /// `x` on side `orig` (a pointer) against the object `t` tracked on the other side: the
    /// disjunction, over this side's fresh objects escaped only here with `t`'s shape, of
    /// "`x` is its address and its contents equal `t`'s". With a single syntactic match the
    /// pairing is kept in `pairs`; otherwise each alternative pairs on a copy.
    fn escaped_vs_tracked(&mut self, orig: bool, x: &Sym, t: usize, pairs: &mut Pairs) -> Bool {
        let xv = self.side(orig).escape(x).simplify();
        let (mine, other) = if orig { (&self.o, &self.p) } else { (&self.p, &self.o) };
        let one_sided = one_sided(mine, other);
        let shape = &other.objs[t].shape;
        let candidates: Vec<(usize, BV)> = mine
            .objs
            .iter()
            .enumerate()
            .filter_map(|(id, o)| {
                let addr = o.addr.as_ref()?;
                (o.shape == *shape
                    && !o.dead
                    && mine.escaped_in.get(&id) == Some(&mine.epoch)
                    && one_sided.iter().any(|e| e.ast_eq(addr)))
                .then(|| (id, addr.clone()))
            })
            .collect();
        let pair = |pairs: &Pairs, c: usize| if orig { pairs.known(c, t) } else { pairs.known(t, c) };
        if let Some((c, _)) = candidates.iter().find(|(_, a)| a.ast_eq(&xv)) {
            return match pair(pairs, *c) {
                Some(known) => Bool::from_bool(known),
                None => self.escaped_contents_equal(orig, *c, t, pairs),
            };
        }
        let mut alternatives = Vec::new();
        for (c, addr) in candidates {
            let same = match pair(pairs, c) {
                Some(known) => Bool::from_bool(known),
                None => self.escaped_contents_equal(orig, c, t, &mut pairs.clone()),
            };
            alternatives.push(Bool::and(&[xv.eq(&addr), same]));
        }
        Bool::or(&alternatives)
    }

    /// Object `c`, escaped on side `orig` (its contents in that side's heap), against object
    /// `t` tracked on the other side: same shape, length and fields (pairs them first).
    fn escaped_contents_equal(&mut self, orig: bool, c: usize, t: usize, pairs: &mut Pairs) -> Bool {
        if orig {
            pairs.insert(c, t);
        } else {
            pairs.insert(t, c);
        }
        let (mine, other) = if orig {
            (&mut self.o, &self.p)
        } else {
            (&mut self.p, &self.o)
        };
        let (esc, tr) = (mine.objs[c].clone(), other.objs[t].clone());
        let mut conj = Vec::new();
        if let (Some(x), Some(y)) = (&esc.len, &tr.len) {
            conj.push(x.eq(y));
        }
        let extra: Vec<String> = tr.fields.keys().cloned().collect();
        let Some(contents) = mine.escaped_contents(c, &extra) else {
            return Bool::from_bool(false);
        };
        // (this side's value read from its heap, the tracked side's value)
        let fields: Vec<(BV, Sym)> = contents
            .into_iter()
            .map(|f| {
                let w = tr.fields.get(&f.name).cloned().unwrap_or(Sym::Bv(zero()));
                (f.value, w)
            })
            .collect();
        for (v, w) in fields {
            let v = Sym::Bv(v);
            conj.push(if orig {
                self.obj_equal(&v, &w, pairs)
            } else {
                self.obj_equal(&w, &v, pairs)
            });
        }
        Bool::and(&conj)
    }

    fn prove_heap_equal(&mut self, when: &str) -> R<()> {
        let keys: BTreeSet<String> = self.o.written.iter().chain(self.p.written.iter()).cloned().collect();
        // Fresh objects only one side gave an address so far (`esc{k}` for k at or above the
        // smaller count): on the other side the object is still tracked, or does not exist.
        // Its contents are not part of the heap comparison; if anything compared can reach
        // it, that reference itself differs (an address on one side, not on the other).
        let mut one_sided = one_sided(&self.o, &self.p);
        one_sided.extend(self::one_sided(&self.p, &self.o));
        let on_one_side = |i: &BV| {
            let n = i.get_size();
            let a = if n > 64 {
                i.extract(n - 1, n - 64).simplify()
            } else {
                i.simplify()
            };
            one_sided.iter().any(|e| e.ast_eq(&a))
        };
        for key in keys {
            let bits = self
                .o
                .bits
                .get(&key)
                .or_else(|| self.p.bits.get(&key))
                .copied()
                .unwrap_or(64);
            let a = self.o.array(&key, bits);
            let b = self.p.array(&key, bits);
            if a.ast_eq(&b) {
                continue;
            }
            // Both arrays are stores into the same initial array, so they are equal exactly
            // when they agree at every index either side wrote: a finite conjunction of
            // reads instead of array extensionality, which Z3 finds much harder.
            let mut seen = HashSet::new();
            let mut same = Vec::new();
            let mut skipped = 0;
            for side in [&self.o, &self.p] {
                for i in side.written_at.get(&key).into_iter().flatten() {
                    if on_one_side(i) {
                        skipped += 1;
                        continue;
                    }
                    if seen.insert(i.clone()) {
                        let (x, y) = (a.select(i).as_bv(), b.select(i).as_bv());
                        same.push(x.expect("heap arrays hold bit-vectors").eq(y.expect("bit-vectors")));
                    }
                }
            }
            if same.is_empty() && skipped > 0 {
                continue;
            }
            let claim = if same.is_empty() { a.eq(&b) } else { Bool::and(&same) };
            self.prove(&claim, || format!("heap {key} differs {when}"), None)?;
        }
        Ok(())
    }

    // --------------------------------------------------------------------------------------
    // Guards

    fn guard_cond(&mut self, orig: bool, r: OpRef) -> R<Bool> {
        let s = self.side(orig);
        let op = s.trace.op(r).clone();
        let gid = s.trace.guard_of(r).map(|g| g.id).expect("guard data");
        let arg = |s: &mut Side, i: usize| s.value(op.args[i]);
        Ok(match op.opcode {
            Opcode::GuardTrue => {
                let x = arg(s, 0)?;
                s.escape(&x).eq(zero()).not()
            }
            Opcode::GuardFalse => {
                let x = arg(s, 0)?;
                s.escape(&x).eq(zero())
            }
            Opcode::GuardValue => {
                let x = arg(s, 0)?;
                let c = arg(s, 1)?;
                if s.tracked(&x).is_some() || s.tracked(&c).is_some() {
                    Bool::from_bool(matches!((&x, &c), (Sym::Obj(a), Sym::Obj(b)) if a == b))
                } else {
                    s.escape(&x).eq(s.escape(&c))
                }
            }
            Opcode::GuardNoOverflow | Opcode::GuardOverflow => {
                let Some(f) = s.no_ovf.clone() else {
                    return unsupported(format!(
                        "{} trace: {} without a preceding overflow op",
                        s.tag, op.opcode
                    ));
                };
                if op.opcode == Opcode::GuardNoOverflow {
                    f
                } else {
                    f.not()
                }
            }
            Opcode::GuardNonnull | Opcode::GuardIsnull => {
                let x = arg(s, 0)?;
                let nonnull = if s.tracked(&x).is_some() {
                    Bool::from_bool(true)
                } else {
                    s.escape(&x).eq(zero()).not()
                };
                if op.opcode == Opcode::GuardNonnull {
                    nonnull
                } else {
                    nonnull.not()
                }
            }
            Opcode::GuardClass | Opcode::GuardNonnullClass => {
                let x = arg(s, 0)?;
                let c = arg(s, 1)?;
                let c = s.escape(&c);
                let (nonnull, class) = match s.tracked(&x) {
                    Some(id) => (
                        Bool::from_bool(true),
                        s.objs[id]
                            .class
                            .clone()
                            .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)])),
                    ),
                    None => {
                        let p = s.escape(&x);
                        let nonnull = p.eq(zero()).not();
                        if orig && op.opcode == Opcode::GuardClass {
                            // `guard_class` on null is undefined (see above).
                            self.facts.push((nonnull.clone(), false));
                        }
                        (nonnull, class_of(&p))
                    }
                };
                if op.opcode == Opcode::GuardClass {
                    class.eq(&c)
                } else {
                    Bool::and(&[nonnull, class.eq(&c)])
                }
            }
            Opcode::GuardGcType | Opcode::GuardSubclass | Opcode::GuardIsObject => {
                let x = arg(s, 0)?;
                let p = s.escape(&x);
                if orig {
                    // The interpreter rejects these guards on null: the original is
                    // defined only where the pointer is not null.
                    self.facts.push((p.eq(zero()).not(), false));
                }
                let s = self.side(orig);
                match op.opcode {
                    Opcode::GuardGcType => {
                        let c = arg(s, 1)?;
                        uf_bv("gc_type", &[p]).eq(s.escape(&c))
                    }
                    Opcode::GuardSubclass => {
                        let c = arg(s, 1)?;
                        uf_bool("subclass", &[class_of(&p), s.escape(&c)])
                    }
                    _ => uf_bool("is_object", &[p]),
                }
            }
            Opcode::GuardNoException => s.exc.not(),
            Opcode::GuardException => {
                let c = arg(s, 0)?;
                let c = s.escape(&c);
                Bool::and(&[
                    s.exc.clone(),
                    uf_bv("exc_class", &[BV::new_const(format!("excval_{}", s.calls), 64)]).eq(&c),
                ])
            }
            Opcode::GuardNotInvalidated => Bool::new_const("not_invalidated"),
            Opcode::GuardNotForced | Opcode::GuardNotForced2 => s.not_forced.clone(),
            Opcode::GuardFutureCondition => Bool::from_bool(true),
            other => return unsupported(format!("guard {other} ({gid}) is not modelled")),
        })
    }

    /// After a passed guard that pins an integer to a constant (`guard_value(x, C)`,
    /// `guard_true(int_eq(x, C))`, `guard_false(int_ne(x, C))`, `guard_false(x)`,
    /// `guard_true(x)` of a comparison), later ops of that side use the constant for `x`, as
    /// the optimizer does. Sound: on the path past the guard `x` equals the constant. It keeps
    /// terms small and multiplications and divisions by `x` cheap (by a constant).
    fn learn_constant(&mut self, orig: bool, r: OpRef) {
        let s = self.side(orig);
        let trace = s.trace;
        let op = trace.op(r);
        let is_const = |v: Value| v.as_op().is_none();
        let (x, c): (Value, Option<Value>) = match op.opcode {
            Opcode::GuardValue => (op.args[0], Some(op.args[1])),
            Opcode::GuardTrue | Opcode::GuardFalse => {
                let x = op.args[0];
                let Some(xr) = x.as_op() else { return };
                let xop = trace.op(xr);
                let (eq, ne) = (xop.opcode == Opcode::IntEq, xop.opcode == Opcode::IntNe);
                let pinned = if (eq && op.opcode == Opcode::GuardTrue) || (ne && op.opcode == Opcode::GuardFalse) {
                    match (is_const(xop.args[0]), is_const(xop.args[1])) {
                        (false, true) => Some((xop.args[0], xop.args[1])),
                        (true, false) => Some((xop.args[1], xop.args[0])),
                        _ => None,
                    }
                } else {
                    None
                };
                if let Some((y, c)) = pinned {
                    self.pin(orig, y, c);
                }
                // The guarded value itself: 0 past guard_false, 1 past guard_true of a
                // comparison.
                let s = self.side(orig);
                let boolean =
                    xop.opcode.flags().contains(OpFlags::BOOL_RESULT) && xop.opcode.result_kind() == Kind::Int;
                if op.opcode == Opcode::GuardFalse {
                    if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
                        s.vals[xr.index()] = Some(Sym::Bv(zero()));
                    }
                } else if boolean {
                    if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
                        s.vals[xr.index()] = Some(Sym::Bv(bv(1)));
                    }
                }
                return;
            }
            _ => return,
        };
        if let Some(c) = c {
            if is_const(c) {
                self.pin(orig, x, c);
            }
        }
    }

    /// Use constant `c` for op `x` from now on (see [`Validator::learn_constant`]).
    fn pin(&mut self, orig: bool, x: Value, c: Value) {
        let s = self.side(orig);
        let Some(xr) = x.as_op() else { return };
        if s.trace.kind_of(x) != Kind::Int {
            return;
        }
        let Ok(Sym::Bv(cv)) = s.value(c) else { return };
        if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
            s.vals[xr.index()] = Some(Sym::Bv(cv));
        }
    }

    /// Give a guard with a result (`guard_exception`) its value, shared by both sides
    /// (named after the guard id).
    fn guard_result(&mut self, orig: bool, r: OpRef) {
        let s = self.side(orig);
        let op = s.trace.op(r);
        if op.opcode.result_kind() != Kind::Void {
            let id = s.trace.guard_of(r).map(|g| g.id.0).unwrap_or(0);
            s.vals[r.index()] = Some(Sym::Bv(BV::new_const(format!("guard_result{id}"), 64)));
        }
    }

    fn fail_arg(&mut self, orig: bool, g: &trace_ir::GuardData, fa: &FailArg, memo: &mut HashMap<u32, Sym>) -> R<Sym> {
        match fa {
            FailArg::Value(v) => self.side(orig).value(*v),
            FailArg::Hole => Ok(Sym::Bv(zero())),
            FailArg::Virtual(i) => {
                if let Some(s) = memo.get(i) {
                    return Ok(s.clone());
                }
                let Some(vo) = g.virtuals.get(*i as usize) else {
                    return unsupported(format!("virtual {i} out of range"));
                };
                let s = self.side(orig);
                let trace = s.trace;
                let (shape, class, len) = match vo.kind {
                    VirtualKind::Struct { opcode, descr } => {
                        let sd = trace.descr(descr);
                        let class = alloc_class(opcode, Some(sd));
                        (
                            format!("{}:{:?}", opcode.name().trim_end_matches("_with_vtable"), sd),
                            class,
                            None,
                        )
                    }
                    VirtualKind::Array { opcode, descr, len } => {
                        let _ = opcode;
                        (format!("array:{:?}", trace.descr(descr)), None, Some(bv(len as u64)))
                    }
                };
                let id_sym = s.new_obj(LocalObj {
                    shape,
                    class,
                    len,
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                let Sym::Obj(id) = id_sym else { unreachable!() };
                memo.insert(*i, id_sym.clone());
                for (field, val) in &vo.fields {
                    let v = self.fail_arg(orig, g, val, memo)?;
                    let s = self.side(orig);
                    let key = match (field, vo.kind) {
                        (VirtualField::Field(d), _) => field_key_of(trace.descr(*d)),
                        (VirtualField::Item(ix), VirtualKind::Array { descr, .. }) => {
                            let akey = format!("{:?}", trace.descr(descr));
                            let key = format!("item:{akey}#{ix}");
                            s.objs[id].item_of.insert(key.clone(), (akey, *ix));
                            key
                        }
                        (VirtualField::Item(_), _) => return unsupported("array item of a struct virtual"),
                    };
                    s.objs[id].fields.insert(key, v);
                }
                Ok(id_sym)
            }
        }
    }

    // --------------------------------------------------------------------------------------
    // Ops

    fn translate(&mut self, orig: bool, r: OpRef) -> R<Translated> {
        let s = if orig { &mut self.o } else { &mut self.p };
        let trace = s.trace;
        let op = trace.op(r).clone();
        let mut t = Translated {
            valid: None,
            fact: None,
        };
        let opc = op.opcode;
        if opc.is_input() {
            // Label parameters were given values by `sync_label`.
            if s.vals[r.index()].is_none() {
                return unsupported(format!("{} trace: input {r} outside the input list and label", s.tag));
            }
            return Ok(t);
        }
        let flags = opc.flags();
        let set = |s: &mut Side, v: Sym| s.vals[r.index()] = Some(v);
        match opc {
            Opcode::SameAsI | Opcode::SameAsR | Opcode::SameAsF => {
                let v = s.value(op.args[0])?;
                set(s, v);
            }
            Opcode::IntAddOvf | Opcode::IntSubOvf | Opcode::IntMulOvf => {
                let a = s.bv_of(op.args[0])?;
                let b = s.bv_of(op.args[1])?;
                let (res, no_ovf) = match (
                    self.abs.value(opc, &[a.clone(), b.clone()]),
                    self.abs.no_overflow(opc, &a, &b),
                ) {
                    (Some((res, _)), Some(no_ovf)) => (res, no_ovf),
                    _ => ovf_semantics(opc, &a, &b)?,
                };
                s.no_ovf = Some(no_ovf);
                set(s, Sym::Bv(res));
            }
            Opcode::PtrEq | Opcode::PtrNe | Opcode::InstancePtrEq | Opcode::InstancePtrNe => {
                let a = s.value(op.args[0])?;
                let b = s.value(op.args[1])?;
                let eq = match (s.tracked(&a), s.tracked(&b)) {
                    (None, None) => s.escape(&a).eq(s.escape(&b)),
                    (Some(x), Some(y)) => Bool::from_bool(x == y),
                    _ => Bool::from_bool(false),
                };
                let res = if matches!(opc, Opcode::PtrEq | Opcode::InstancePtrEq) {
                    eq
                } else {
                    eq.not()
                };
                set(s, Sym::Bv(bool_to_bv(&res)));
            }
            Opcode::CastPtrToInt | Opcode::CastIntToPtr => {
                let a = s.bv_of(op.args[0])?;
                set(s, Sym::Bv(a));
            }
            Opcode::ConvertFloatBytesToLonglong | Opcode::ConvertLonglongBytesToFloat => {
                let a = s.bv_of(op.args[0])?;
                set(s, Sym::Bv(a));
            }
            _ if flags.contains(OpFlags::PURE) => {
                let mut args = Vec::with_capacity(op.args.len());
                for &a in &op.args {
                    args.push(s.bv_of(a)?);
                }
                // Fold constants with the interpreter's evaluation function.
                let consts: Option<Vec<u64>> = args.iter().map(|a| a.simplify().as_u64()).collect();
                let is_float =
                    op.args.iter().any(|&a| trace.kind_of(a) == Kind::Float) || opc.result_kind() == Kind::Float;
                if let (Some(cs), true) = (&consts, is_float) {
                    match eval_pure(opc, cs) {
                        Ok(v) => {
                            set(s, Sym::Bv(bv(v)));
                            return Ok(t);
                        }
                        Err(e) => return unsupported(format!("{opc}: {e}")),
                    }
                }
                if is_float {
                    self.float_uf = true;
                    let s = if orig { &mut self.o } else { &mut self.p };
                    let v = if flags.contains(OpFlags::BOOL_RESULT) {
                        bool_to_bv(&uf_bool(opc.name(), &args))
                    } else {
                        uf_bv(opc.name(), &args)
                    };
                    s.vals[r.index()] = Some(Sym::Bv(v));
                    return Ok(t);
                }
                let abstracted = self.abs.value(opc, &args);
                let (v, valid) = match abstracted.map(Ok).unwrap_or_else(|| op_semantics(opc, &args)) {
                    Ok(x) => x,
                    Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
                };
                if valid.simplify().as_bool() != Some(true) {
                    t.valid = Some(valid);
                }
                set(s, Sym::Bv(v));
            }
            Opcode::New | Opcode::NewWithVtable => {
                let d = op.descr.map(|d| trace.descr(d));
                let class = alloc_class(opc, d);
                let shape = match d {
                    Some(d) => format!("{}:{d:?}", opc.name().trim_end_matches("_with_vtable")),
                    None => return unsupported(format!("{opc} without a size descriptor")),
                };
                let o = s.new_obj(LocalObj {
                    shape,
                    class,
                    len: None,
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::NewArray | Opcode::NewArrayClear => {
                let len = s.bv_of(op.args[0])?;
                let d = op.descr.map(|d| trace.descr(d));
                let Some(d) = d else {
                    return unsupported(format!("{opc} without an array descriptor"));
                };
                let shape = format!("array:{d:?}");
                let o = s.new_obj(LocalObj {
                    shape,
                    class: None,
                    len: Some(len.clone()),
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::Newstr | Opcode::Newunicode => {
                let len = s.bv_of(op.args[0])?;
                let o = s.new_obj(LocalObj {
                    shape: opc.name().into(),
                    class: None,
                    len: Some(len),
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                set(s, o);
            }
            Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF => {
                let key = field_key(trace, r);
                let base = s.value(op.args[0])?;
                let v = match s.tracked(&base) {
                    Some(id) => s.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero())),
                    None => {
                        let p = s.escape(&base);
                        Sym::Bv(s.read(&key, &p))
                    }
                };
                set(s, v);
            }
            Opcode::SetfieldGc => {
                let key = field_key(trace, r);
                let base = s.value(op.args[0])?;
                let val = narrow_store(trace, r, s.value(op.args[1])?);
                match s.tracked(&base) {
                    Some(id) => {
                        s.objs[id].fields.insert(key, val);
                    }
                    None => {
                        let p = s.escape(&base);
                        let v = s.escape(&val);
                        s.write(&key, &p, &v);
                    }
                }
            }
            Opcode::GetfieldRawI | Opcode::GetfieldRawR | Opcode::GetfieldRawF => {
                let key = format!("raw:{}", descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let v = s.read(&key, &p);
                set(s, Sym::Bv(v));
            }
            Opcode::SetfieldRaw => {
                let key = format!("raw:{}", descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let v = narrow_bv(trace, r, s.bv_of(op.args[1])?);
                s.write(&key, &p, &v);
            }
            Opcode::GetarrayitemGcI
            | Opcode::GetarrayitemGcR
            | Opcode::GetarrayitemGcF
            | Opcode::GetarrayitemGcPureI
            | Opcode::GetarrayitemGcPureR
            | Opcode::GetarrayitemGcPureF => {
                let akey = descr_key(trace, r);
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let v = match (s.tracked(&base), idx.simplify().as_u64()) {
                    (Some(id), Some(ix)) if ix <= u32::MAX as u64 => {
                        let key = format!("item:{akey}#{ix}");
                        s.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero()))
                    }
                    (Some(id), None) if s.items(id, &akey).is_some() => {
                        // A non-constant index into a tracked array of known length: select
                        // among its items; the index must be in range.
                        let items = s.items(id, &akey).unwrap_or_default();
                        let n = items.len() as u64;
                        let mut v = zero();
                        for (i, item) in items.iter().enumerate().rev() {
                            v = idx.eq(bv(i as u64)).ite(item, &v);
                        }
                        t.valid = Some(idx.bvult(bv(n)));
                        Sym::Bv(v)
                    }
                    _ => {
                        let p = s.escape(&base);
                        Sym::Bv(s.read(&format!("items:{akey}"), &p.concat(&idx)))
                    }
                };
                set(s, v);
            }
            Opcode::SetarrayitemGc => {
                let akey = descr_key(trace, r);
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let val = narrow_store(trace, r, s.value(op.args[2])?);
                match (s.tracked(&base), idx.simplify().as_u64()) {
                    (Some(id), Some(ix)) if ix <= u32::MAX as u64 => {
                        let key = format!("item:{akey}#{ix}");
                        s.objs[id].item_of.insert(key.clone(), (akey, ix as u32));
                        s.objs[id].fields.insert(key, val);
                    }
                    (Some(id), None) if matches!(val, Sym::Bv(_)) && s.items(id, &akey).is_some() => {
                        let items = s.items(id, &akey).unwrap_or_default();
                        let Sym::Bv(vb) = &val else { unreachable!() };
                        t.valid = Some(idx.bvult(bv(items.len() as u64)));
                        for (i, old) in items.iter().enumerate() {
                            let key = format!("item:{akey}#{i}");
                            let new = idx.eq(bv(i as u64)).ite(vb, old);
                            s.objs[id].item_of.insert(key.clone(), (akey.clone(), i as u32));
                            s.objs[id].fields.insert(key, Sym::Bv(new));
                        }
                    }
                    _ => {
                        let p = s.escape(&base);
                        let v = s.escape(&val);
                        s.write(&format!("items:{akey}"), &p.concat(&idx), &v);
                    }
                }
            }
            Opcode::ArraylenGc | Opcode::Strlen | Opcode::Unicodelen => {
                let base = s.value(op.args[0])?;
                let v = match s.tracked(&base) {
                    Some(id) => s.objs[id].len.clone().unwrap_or_else(zero),
                    None => {
                        let p = s.escape(&base);
                        let key = match opc {
                            Opcode::ArraylenGc => format!("imm:len:array:{}", descr_key(trace, r)),
                            _ => format!("imm:len:{}", opc.name()),
                        };
                        let v = s.read(&key, &p);
                        // Lengths are never negative.
                        t.fact = Some(v.bvsge(zero()));
                        v
                    }
                };
                set(s, Sym::Bv(v));
            }
            Opcode::Strgetitem | Opcode::Unicodegetitem => {
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.read(&format!("chars:{}", opc.name()), &p.concat(&i));
                set(s, Sym::Bv(v));
            }
            Opcode::Strsetitem | Opcode::Unicodesetitem => {
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.bv_of(op.args[2])?;
                let name = if opc == Opcode::Strsetitem {
                    "strgetitem"
                } else {
                    "unicodegetitem"
                };
                s.write(&format!("chars:{name}"), &p.concat(&i), &v);
            }
            Opcode::Strhash | Opcode::Unicodehash => {
                let p = s.bv_of(op.args[0])?;
                let v = s.read(&format!("hash:{}", opc.name()), &p);
                set(s, Sym::Bv(v));
            }
            Opcode::GetarrayitemRawI | Opcode::GetarrayitemRawF | Opcode::RawLoadI | Opcode::RawLoadF => {
                let key = format!("raw:{}:{}", opc.name().starts_with("raw"), descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.read(&key, &p.concat(&i));
                set(s, Sym::Bv(v));
            }
            Opcode::SetarrayitemRaw | Opcode::RawStore => {
                let key = format!("raw:{}:{}", opc == Opcode::RawStore, descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                s.write(&key, &p.concat(&i), &v);
            }
            Opcode::GetinteriorfieldGcI | Opcode::GetinteriorfieldGcR | Opcode::GetinteriorfieldGcF => {
                let key = format!("interior:{}", descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = s.read(&key, &p.concat(&i));
                set(s, Sym::Bv(v));
            }
            Opcode::SetinteriorfieldGc => {
                let key = format!("interior:{}", descr_key(trace, r));
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                s.write(&key, &p.concat(&i), &v);
            }
            Opcode::CallPureI
            | Opcode::CallPureR
            | Opcode::CallPureF
            | Opcode::CallPureN
            | Opcode::CallI
            | Opcode::CallR
            | Opcode::CallF
            | Opcode::CallN
            | Opcode::CallLoopinvariantI
            | Opcode::CallLoopinvariantR
            | Opcode::CallLoopinvariantF
            | Opcode::CallLoopinvariantN
                if is_elidable_call(trace, r) || opc.name().starts_with("call_loopinvariant") =>
            {
                let mut args = Vec::new();
                for &a in &op.args {
                    args.push(s.bv_of(a)?);
                }
                let name = format!("call[{}]", descr_key(trace, r));
                let v = uf_bv(&name, &args);
                if opc.result_kind() != Kind::Void {
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::QuasiimmutField
            | Opcode::VirtualRefFinish
            | Opcode::EnterPortalFrame
            | Opcode::LeavePortalFrame
            | Opcode::Keepalive
            | Opcode::RecordKnownResult
            | Opcode::RecordExactClass => {}
            Opcode::AssertNotNone => {
                let x = s.value(op.args[0])?;
                if s.tracked(&x).is_none() {
                    let p = s.escape(&x);
                    if orig {
                        t.fact = Some(p.eq(zero()).not());
                    }
                }
            }
            Opcode::ForceToken => set(s, Sym::Bv(BV::new_const("force_token", 64))),
            Opcode::VirtualRef => {
                let v = s.value(op.args[0])?;
                set(s, v);
            }
            _ => return unsupported(format!("{} is not modelled by the validator", opc)),
        }
        if flags.contains(OpFlags::READS_HEAP) && !flags.contains(OpFlags::GUARD) {
            if let Some(Sym::Bv(v)) = s.vals[r.index()].clone() {
                s.vals[r.index()] = Some(Sym::Bv(narrow_read(trace, r, v)));
            }
        }
        Ok(t)
    }
}

/// The class `new_with_vtable` stores: the interpreter's (the size descriptor's vtable, or
/// a default derived from the size).
fn alloc_class(opc: Opcode, d: Option<&Descr>) -> Option<BV> {
    match (opc, d.and_then(|d| d.as_size())) {
        (Opcode::NewWithVtable, Some(sd)) => Some(bv(trace_ir::interp::default_class(sd))),
        _ => None,
    }
}

/// Ops whose bit-blasted circuits make Z3 slow.
const HEAVY_OPS: &[Opcode] = &[
    Opcode::IntMul,
    Opcode::IntMulOvf,
    Opcode::UintMulHigh,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
];

fn field_key(trace: &Trace, r: OpRef) -> String {
    match trace.op(r).descr {
        Some(d) => field_key_of(trace.descr(d)),
        None => String::new(),
    }
}

/// The heap key of a field: immutable fields get their own arrays, which calls keep.
fn field_key_of(d: &Descr) -> String {
    match d {
        Descr::Field(f) if f.immutable => format!("imm:{d:?}"),
        d => format!("{d:?}"),
    }
}

/// A store through a narrow integer descriptor keeps only what memory holds (see
/// [`narrow_bv`]), so two heaps that differ only in bits no read can see compare equal.
fn narrow_store(trace: &Trace, r: OpRef, v: Sym) -> Sym {
    match v {
        Sym::Bv(b) => Sym::Bv(narrow_bv(trace, r, b)),
        obj => obj,
    }
}

/// A store of `v` through the narrow integer descriptor of op `r`: the low bytes, sign- or
/// zero-extended, exactly what a later read through the same descriptor gives.
fn narrow_bv(trace: &Trace, r: OpRef, v: BV) -> BV {
    let op = trace.op(r);
    let d = op.descr.map(|d| trace.descr(d));
    let int_kind = match d {
        Some(Descr::Field(f)) => f.kind == Kind::Int,
        Some(Descr::Interior(i)) => i.field.kind == Kind::Int,
        Some(Descr::Array(a)) => a.kind == Kind::Int,
        _ => false,
    };
    if !int_kind {
        return v;
    }
    narrow_to_descr(d, op.opcode, v)
}

/// Memory holds only `size` bytes of a narrow integer field or array item: a read gives
/// the low bytes, sign- or zero-extended.
fn narrow_read(trace: &Trace, r: OpRef, v: BV) -> BV {
    let op = trace.op(r);
    if op.opcode.result_kind() != Kind::Int {
        return v;
    }
    narrow_to_descr(op.descr.map(|d| trace.descr(d)), op.opcode, v)
}

/// `v` as a narrow integer slot of descriptor `d` holds it (`arraylen_gc` reads the full
/// length word, not an item).
fn narrow_to_descr(d: Option<&Descr>, opcode: Opcode, v: BV) -> BV {
    let (size, signed) = match d {
        Some(Descr::Field(f)) => (f.size, f.signed),
        Some(Descr::Interior(i)) => (i.field.size, i.field.signed),
        Some(Descr::Array(a)) if opcode != Opcode::ArraylenGc => (a.item_size, a.signed),
        _ => return v,
    };
    if size == 0 || size >= 8 {
        return v;
    }
    let bits = size as u32 * 8;
    let low = v.extract(bits - 1, 0);
    if signed {
        low.sign_ext(64 - bits)
    } else {
        low.zero_ext(64 - bits)
    }
}

/// The wrapping result and the "no overflow" condition of an `_ovf` op, both from
/// [`crate::semantics`].
fn ovf_semantics(opc: Opcode, a: &BV, b: &BV) -> R<(BV, Bool)> {
    let (res, _) = match op_semantics(opc, &[a.clone(), b.clone()]) {
        Ok(x) => x,
        Err(e) => return unsupported(format!("{opc}: no Z3 semantics ({e})")),
    };
    match no_overflow(opc, a, b) {
        Some(f) => Ok((res, f)),
        None => unsupported(format!("{opc}: no overflow semantics")),
    }
}
