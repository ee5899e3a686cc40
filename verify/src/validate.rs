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
//!   uninterpreted float operation is `Unknown`, unless the reference interpreter confirms a
//!   difference on concrete inputs derived from it ([`crate::replay`]): then `Invalid`.
//! - **Objects allocated by the trace** (`new`, `new_with_vtable`, `new_array*` with a
//!   constant length) are tracked exactly, field by field, as long as they have not
//!   escaped: their fields are not in the heap model. An object escapes when it is stored
//!   into memory that is not itself a tracked object, passed to a call, cast to an integer,
//!   indexed with a non-constant index, or accessed through a descriptor whose bytes overlap
//!   a field or item it holds through another descriptor (byte views, see below). Escaping
//!   gives it a fresh address and writes its fields into the heap model. A fresh address is
//!   not null, differs from the other fresh ones of its side, from every reference value of
//!   its side that existed before, from every reference read later from the memory an epoch
//!   started from when it escaped in that epoch or later (no store of the trace put it there),
//!   and from every non-null reference constant of both traces (the interpreter never places
//!   a fresh object at a constant's address), and has its allocation's class (the
//!   interpreter's `default_class`).
//! - **Naming fresh objects.** Addresses are matched between the traces by a naming: the `k`-th
//!   object of a shape (and constant length) to escape gets the same address on both sides. Fresh
//!   objects are interchangeable, so the traces are equivalent if they are under any one naming;
//!   when the first naming gives `Invalid` and objects escaped, the validator tries the shape
//!   without the length (one side may know a length only symbolically), then plain escape order,
//!   then **pairing by role**, and answers `Valid` if one of them proves the traces equal,
//!   `Unknown` if pairing by role (the most faithful matching) ends undecided, and the first
//!   `Invalid` otherwise. By role, each side's objects get addresses of their own
//!   (`esc{k}:original`, `esc{k}:optimized`); where a sync point presents corresponding operands
//!   (the same call argument, fail argument, `finish`/`jump`/`label` operand, field of two
//!   compared objects, or heap word both sides wrote) that are fresh objects of one shape not
//!   paired yet, they are paired: their addresses are assumed equal, one-to-one, and only when
//!   that is consistent with the path condition (checked with Z3; otherwise the operands stay
//!   different and the comparison fails, as it should). That covers traces that escape different
//!   numbers of objects of a shape (the original escapes a temporary the optimized trace keeps
//!   virtual, or one side allocates more). Pairs made while comparing a failing guard's exit stay
//!   (a pairing only chooses which runs are compared, whether the guard fails or not); objects
//!   compared in one of several alternatives (an escaped object against candidates for a tracked
//!   one) are not paired. An object only one side escaped (not paired, by role) keeps its
//!   contents over a call that may write the heap: the call cannot reach it (the heaps and the
//!   call's arguments were proven equal).
//! - **Comparing objects** (fail arguments, `finish`/`jump`/`label` operands): two tracked
//!   objects are equal when their shapes, lengths and fields are (under byte views, each
//!   field or item either holds against the bytes the other holds there, so that objects
//!   holding the same bytes through different descriptors are equal); an object one side
//!   escaped (in the
//!   current heap epoch, and only on that side) equals an object the other side still tracks
//!   when its contents in the heap do (the escape was the validator's conservative choice,
//!   e.g. an item store at a non-constant index, and nothing compared can hold its address,
//!   or that reference differs). The objects matched at one sync point form a one-to-one
//!   pairing, so one object passed twice is not equal to two equal copies.
//! - **The heap** (memory of objects the trace did not allocate, or that escaped) follows the
//!   traces' aliasing ([`Aliasing`]; both traces must have the same, otherwise `Unknown`).
//!   Each field descriptor has an SMT array from object address to value, each array
//!   descriptor one for its items (indexed by the concatenation of address and index), each
//!   interior descriptor one; under [`Aliasing::TypeBased`] that is all. Under
//!   [`Aliasing::Bytes`] the field, array and interior descriptors of both traces (by value)
//!   whose bytes may overlap another one's (a field's `[offset, offset + size)`, an array's
//!   items `[base, ∞)`, an interior field's `[16 + offset, ∞)`) go to one byte memory
//!   instead: an SMT array from object address ++ byte offset (64 + 64 bits) to bytes
//!   (object-relative: different references never share bytes). A read of `n` bytes
//!   concatenates `n` bytes little-endian, a write stores the low `n` bytes of the value;
//!   item `i` is at `base + i * item_size`. Descriptors with no overlap partner keep their own
//!   arrays, so traces without overlapping views are modelled as under type-based aliasing.
//!   Lengths of arrays and strings are immutable arrays keyed by the array descriptor (or
//!   the string kind), under byte views by the length word's offset (two array descriptors
//!   with one length offset read one word). Raw memory is one byte memory indexed by the
//!   absolute address in every model. Both sides start from the same arrays; writes are
//!   `store`s, so read-after-write and possible aliasing are exact. Reads of a byte memory
//!   make the stores they may hit explicit (`ite` on the index) and skip the stores whose
//!   constant offsets differ. A call that may write the heap replaces all mutable arrays by
//!   fresh ones shared by both sides (after the heaps were proven equal).
//! - **Immutable reads** see what calls leave: immutable (`pure`) fields live in arrays
//!   that calls do not replace; the items of each array descriptor and the byte memory have
//!   an immutable twin, which receives every write they receive but is not replaced by calls
//!   (fresh at a label), and `getarrayitem_gc_pure_*` reads (and `pure` fields in the byte
//!   memory) read the twin. Object classes are an uninterpreted function.
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
//!   that escapes is zero in every field either trace reads: stated about the arrays its
//!   epoch started from (not written: the other side may read other fields); in the byte
//!   memory, its bytes (for a struct, the span of the overlapping fields' bytes, after the
//!   class word; for an array of constant length, its items) read as zero from the memory
//!   its epoch started from (one condition on the index per object, not one fact per byte).
//!   `guard_class` and friends on null are undefined in the original.
//! - **Hints are promises**, assumed on the original: `assert_not_none(p)` (`p` is not
//!   null) and `record_exact_class(p, C)` (`p` is not null and `class_of(p)` is `C`).
//! - Accesses with a non-constant index into a tracked array of constant length select
//!   among its items (and require the index in range).
//!
//! - **Constants pinned by guards**: past a guard that fixes an integer to a constant
//!   (`guard_value(x, C)`, `guard_true(int_eq(x, C))`, `guard_false(int_ne(x, C))`,
//!   `guard_false(x)`, `guard_true(x)` of a comparison), later ops of that side use the
//!   constant for `x`, as the optimizer does (sound: on that path `x` is the constant).
//! - The heap is compared by reading both sides' arrays at every index either side wrote
//!   (both are stores into the same initial array, so this is exactly array equality,
//!   without asking Z3 for extensionality); a byte memory at every byte written. The
//!   immutable twins are not compared: they differ only where a mutable array the
//!   comparison covers differed, or where one side wrote back what it read after a call,
//!   which a later immutable read of those bytes shows as a difference of values.
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
//! - Escaped objects are matched by the order in which objects of one shape escape, or by
//!   role where sync points present them; two objects of the same shape that escape in the
//!   opposite order and are compared only through memory the comparison does not pair (a byte
//!   memory, or contents of objects not paired) still get a spurious difference.
//! - Under byte views, strings' characters and hashes keep their own arrays (string ops take
//!   no descriptor), and the class word of an instance is not in the byte memory: a field
//!   view at offset 0 of a fresh instance reads zero, not its class.
//! - Counterexample values are named by op position (`i4` is op 4), as `print_trace` names
//!   them, not by the names of a hand-written input file.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::rc::Rc;

use trace_ir::descr::{ArrayDescr, Descr, FieldDescr, DEFAULT_ARRAY_BASE, DEFAULT_ARRAY_LEN, STR_LEN_OFFSET};
use trace_ir::eval::eval_pure;
use trace_ir::{
    Aliasing, DescrRef, FailArg, GuardId, Kind, OpFlags, OpRef, Opcode, Trace, Value, ValueData, VirtualField,
    VirtualKind,
};
use z3::ast::{Array, Ast, Bool, Dynamic, BV};
use z3::{DeclKind, FuncDecl, Params, SatResult, Solver, Sort};

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
    let mut witness = None;
    let (verdict, stats) = validate_symbolically(original, optimized, cfg, &mut witness);
    // A difference Z3 found only through uninterpreted float operations is checked on the
    // interpreter: if it shows on concrete inputs, the traces differ.
    if let (Verdict::Unknown { .. }, Some(w)) = (&verdict, &witness) {
        if let Some(counterexample) = crate::replay::confirm(original, optimized, w) {
            return (Verdict::Invalid { counterexample }, stats);
        }
    }
    (verdict, stats)
}

/// The symbolic part of [`validate_with_stats`]; `witness` receives the first counterexample
/// that depends on uninterpreted float operations.
fn validate_symbolically(
    original: &Trace,
    optimized: &Trace,
    cfg: &Config,
    witness: &mut Option<Counterexample>,
) -> (Verdict, Stats) {
    // An optimizer that peeled the loop (`optimizer::Options::peel`) optimized the peeled
    // original: one label more.
    let peeled = trace_ir::is_peeled_form(original, optimized)
        .then(|| trace_ir::peel_loop(original))
        .flatten();
    let original = peeled.as_ref().unwrap_or(original);
    let mut stats = Stats::default();
    if original.aliasing != optimized.aliasing {
        let reason = format!(
            "the traces have different aliasing: {} in the original, {} in the optimized trace",
            original.aliasing.name(),
            optimized.aliasing.name()
        );
        return (Verdict::Unknown { reason }, stats);
    }
    let mut first = None;
    // What escaped in the last run (the same objects escape under every naming).
    let mut shapes = BTreeSet::new();
    for naming in [Naming::ShapeAndLength, Naming::Shape, Naming::Order, Naming::Role] {
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
        if witness.is_none() {
            *witness = v.float_witness.take();
        }
        shapes = v.o.esc_shapes.union(&v.p.esc_shapes).cloned().collect();
        let escaped = !shapes.is_empty();
        if verdict.is_valid() || !verdict.is_invalid() && first.is_none() || !escaped {
            return (verdict, stats);
        }
        // Pairing by role matches fresh objects most faithfully: when it cannot decide, a
        // difference found under an escape-order naming may be the naming's.
        if let (Naming::Role, Verdict::Unknown { reason }, Some(Verdict::Invalid { counterexample })) =
            (naming, &verdict, &first)
        {
            let reason = format!(
                "{reason} (pairing fresh objects by role; by escape order: {})",
                counterexample.message
            );
            return (Verdict::Unknown { reason }, stats);
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
    /// By role: each side's objects get their own addresses, and an object of the original
    /// and one of the optimized trace not yet paired become one object (equal addresses) where
    /// they meet in corresponding places of a sync point: the same call argument, fail
    /// argument, `finish`/`jump`/`label` operand or heap location ([`Validator::try_pair`]).
    /// For traces that escape different numbers of objects of a shape (one side escapes a
    /// temporary object the other keeps virtual, or allocates more).
    Role,
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
            Naming::Role => !shapes.is_empty(),
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
    place: Place,
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
// Memory layout

/// The memory of GC objects viewed through descriptors that share bytes with another one (byte
/// views): object address ++ byte offset (64 + 64 bits) -> byte.
const BYTES: &str = "bytes";
/// The immutable twin of [`BYTES`] (see [`twin_of`]).
const TWIN_BYTES: &str = "twin:bytes";
/// Raw memory: absolute address -> byte.
const RAW: &str = "raw";

/// The immutable twin of a memory, if it has one: the items of one array descriptor and the
/// byte memory have one, which receives every write the memory receives but is not replaced by
/// calls that may write the heap. Immutable reads (`getarrayitem_gc_pure_*`, `pure` fields in
/// the byte memory) read it.
fn twin_of(key: &str) -> Option<String> {
    if key == BYTES || key.starts_with("items:") {
        Some(format!("twin:{key}"))
    } else {
        None
    }
}

/// Whether the memory `key` holds bytes (its other memories hold 64-bit words).
fn holds_bytes(key: &str) -> bool {
    matches!(key, BYTES | TWIN_BYTES | RAW)
}

/// `x + k`, folded when `x` is a numeral.
fn add_const(x: &BV, k: u64) -> BV {
    match x.as_u64() {
        Some(c) => bv(c.wrapping_add(k)),
        None if k == 0 => x.clone(),
        None => x.bvadd(bv(k)),
    }
}

/// `base + index * size` (the byte offset of an item), folded when `index` is a numeral.
fn scaled(index: &BV, size: u64, base: i64) -> BV {
    match index.simplify().as_u64() {
        Some(i) => bv(i.wrapping_mul(size).wrapping_add(base as u64)),
        None => add_const(&index.bvmul(bv(size)), base as u64),
    }
}

/// The index of byte `k` of a view at `offset`: in the object at `addr` (object-relative), or
/// at the absolute address `offset` (raw memory).
fn byte_index(addr: Option<&BV>, offset: &BV, k: u64) -> BV {
    let off = add_const(offset, k);
    match addr {
        Some(a) => a.concat(&off),
        None => off,
    }
}

/// An index as (base, constant): `concat(base, k)` (object memories: address ++ offset or
/// index), `base + k` (raw memory) or a numeral `k` (no base); `concat` says which form.
fn split_index(i: &BV) -> (Option<Dynamic>, u64, bool) {
    if let Ok(decl) = i.safe_decl() {
        let kids = i.children();
        match (decl.kind(), kids.as_slice()) {
            (DeclKind::Concat, [high, low]) => {
                if let Some(k) = low.as_bv().filter(|l| l.get_size() == 64).and_then(|l| l.as_u64()) {
                    return (Some(high.clone()), k, true);
                }
            }
            (DeclKind::Badd, [x, y]) => {
                if let Some(k) = y.as_bv().and_then(|c| c.as_u64()) {
                    return (Some(x.clone()), k, false);
                }
                if let Some(k) = x.as_bv().and_then(|c| c.as_u64()) {
                    return (Some(y.clone()), k, false);
                }
            }
            _ => {}
        }
    }
    match i.as_u64() {
        Some(k) => (None, k, false),
        None => (Some(Dynamic::from_ast(i)), 0, false),
    }
}

/// Whether two indices of one memory certainly differ: in the constant part of `concat(_, k)`
/// forms (whatever the addresses), or of `base + k` forms with one base.
fn indices_differ(i: &BV, j: &BV) -> bool {
    let ((bi, ki, ci), (bj, kj, cj)) = (split_index(i), split_index(j));
    ki != kj
        && match (ci, cj) {
            (true, true) => true,
            (false, false) => match (bi, bj) {
                (None, None) => true,
                (Some(x), Some(y)) => x.ast_eq(&y),
                _ => false,
            },
            _ => false,
        }
}

/// `array[index]`, looking through the stores `index` certainly misses and stopping at one it
/// hits (same index) before handing the rest to Z3: keeps reads of byte memories, which write
/// many bytes at constant offsets, small.
fn select(array: &Array, index: &BV) -> BV {
    let mut a = array.clone();
    while let Ok(decl) = a.safe_decl() {
        if decl.kind() != DeclKind::Store {
            break;
        }
        let kids = a.children();
        let (Some(inner), Some(j), Some(v)) = (kids[0].as_array(), kids[1].as_bv(), kids[2].as_bv()) else {
            break;
        };
        if j.ast_eq(index) {
            return v;
        }
        if !indices_differ(&j, index) {
            break;
        }
        a = inner;
    }
    a.select(index).as_bv().expect("heap arrays hold bit-vectors")
}

/// A byte range of a fresh object, zero in the byte memory an epoch started from: `init`
/// (that memory's initial array) at `addr ++ [lo, hi)`.
#[derive(Clone)]
struct ZeroSpan {
    init: Array,
    addr: BV,
    lo: u64,
    hi: u64,
}

/// `array[index]` with the stores `index` may hit made explicit: `ite(index == j, v, ...)`
/// down to the first store it certainly hits or the initial array, whose bytes in the `zeros`
/// spans are zero (the same value as [`select`] under those facts, as a term Z3 decides by
/// bit-vector reasoning instead of array lemmas, which byte memories read at symbolic offsets
/// need; one comparison per fresh object instead of one fact per byte).
fn select_expanded(array: &Array, index: &BV, zeros: &[ZeroSpan]) -> BV {
    let mut maybe: Vec<(BV, BV)> = Vec::new();
    let mut a = array.clone();
    let bottom = loop {
        let store = a
            .safe_decl()
            .ok()
            .filter(|d| d.kind() == DeclKind::Store)
            .and_then(|_| {
                let kids = a.children();
                Some((kids[0].as_array()?, kids[1].as_bv()?, kids[2].as_bv()?))
            });
        let Some((inner, j, v)) = store else {
            break select_initial(&a, index, zeros);
        };
        if j.ast_eq(index) {
            break v;
        }
        if !indices_differ(&j, index) {
            maybe.push((j, v));
        }
        a = inner;
    };
    let mut out = bottom;
    for (j, v) in maybe.into_iter().rev() {
        out = index_eq(&j, index).ite(&v, &out);
    }
    out
}

/// `init[index]` of an initial byte memory: zero inside the `zeros` spans of `init`.
fn select_initial(init: &Array, index: &BV, zeros: &[ZeroSpan]) -> BV {
    let mut out = init.select(index).as_bv().expect("heap arrays hold bit-vectors");
    let n = index.get_size();
    if n <= 64 {
        return out;
    }
    let (addr, off) = match index.safe_decl().map(|d| d.kind()) {
        Ok(DeclKind::Concat) => {
            let kids = index.children();
            match (kids[0].as_bv(), kids[1].as_bv()) {
                (Some(a), Some(o)) if o.get_size() == 64 => (a, o),
                _ => (index.extract(n - 1, 64), index.extract(63, 0)),
            }
        }
        _ => (index.extract(n - 1, 64), index.extract(63, 0)),
    };
    let zero8 = BV::from_u64(0, out.get_size());
    for z in zeros.iter().rev() {
        if !z.init.ast_eq(init) {
            continue;
        }
        let inside = match off.as_u64() {
            Some(o) if o < z.lo || o >= z.hi => continue,
            Some(_) => Bool::from_bool(true),
            None => Bool::and(&[off.bvuge(bv(z.lo)), off.bvult(bv(z.hi))]),
        };
        if addr.ast_eq(&z.addr) && inside.as_bool() == Some(true) {
            return zero8;
        }
        out = Bool::and(&[addr.eq(&z.addr), inside]).ite(&zero8, &out);
    }
    out
}

/// `i == j`, split into address and offset when both are `concat(address, offset)`.
fn index_eq(i: &BV, j: &BV) -> Bool {
    let parts = |x: &BV| -> Option<(BV, BV)> {
        let decl = x.safe_decl().ok()?;
        let kids = x.children();
        match (decl.kind(), kids.as_slice()) {
            (DeclKind::Concat, [h, l]) => Some((h.as_bv()?, l.as_bv()?)),
            _ => None,
        }
    };
    match (parts(i), parts(j)) {
        (Some((hi, li)), Some((hj, lj))) if hi.get_size() == hj.get_size() => Bool::and(&[li.eq(&lj), hi.eq(&hj)]),
        _ => i.eq(j),
    }
}

/// The field, array and interior descriptors of both traces, and which of them go to the byte
/// memory (see the module documentation).
#[derive(Default)]
struct Layout {
    /// Whether the traces use byte views ([`Aliasing::Bytes`]).
    bytes: bool,
    /// The descriptors by their text (`{:?}`, the heap keys' names).
    descrs: HashMap<String, Descr>,
    /// Under byte views, the descriptors whose bytes may overlap another descriptor's: their
    /// accesses go to [`BYTES`].
    shared: HashSet<String>,
    /// The byte offsets of the shared field descriptors (a fresh struct is stated zero there
    /// when it escapes).
    field_bytes: BTreeSet<i64>,
}

impl Layout {
    fn new(traces: [&Trace; 2]) -> Layout {
        let mut l = Layout {
            bytes: traces[0].aliasing == Aliasing::Bytes,
            ..Layout::default()
        };
        for t in traces {
            let mut add = |d: DescrRef| {
                let descr = t.descr(d);
                if matches!(descr, Descr::Field(_) | Descr::Array(_) | Descr::Interior(_)) {
                    l.descrs.insert(format!("{descr:?}"), descr.clone());
                }
            };
            for op in &t.ops {
                if let Some(d) = op.descr {
                    add(d);
                }
            }
            for g in &t.guards {
                for v in &g.virtuals {
                    if let VirtualKind::Array { descr, .. } = v.kind {
                        add(descr);
                    }
                    for (f, _) in &v.fields {
                        if let VirtualField::Field(d) = f {
                            add(*d);
                        }
                    }
                }
            }
        }
        if !l.bytes {
            return l;
        }
        // Each descriptor's bytes relative to the object: a field's own, an array's items from
        // its base on, an interior field's from its offset in the first item on.
        let spans: Vec<(&String, i64, i64)> = l
            .descrs
            .iter()
            .filter_map(|(k, d)| {
                let (start, end) = match d {
                    Descr::Field(f) => (f.offset, f.offset.saturating_add(f.size.max(1) as i64)),
                    Descr::Array(a) => (a.base_offset, i64::MAX),
                    Descr::Interior(i) => (DEFAULT_ARRAY_BASE.saturating_add(i.field.offset), i64::MAX),
                    _ => return None,
                };
                Some((k, start, end))
            })
            .collect();
        let mut shared = HashSet::new();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                if a.1 < b.2 && b.1 < a.2 {
                    shared.insert(a.0.clone());
                    shared.insert(b.0.clone());
                }
            }
        }
        for k in &shared {
            if let Some(Descr::Field(f)) = l.descrs.get(k) {
                l.field_bytes
                    .extend(f.offset..f.offset.saturating_add(f.size.max(1) as i64));
            }
        }
        l.shared = shared;
        l
    }

    /// Whether accesses through the descriptor with text `d` go to the byte memory.
    fn shared(&self, d: &str) -> bool {
        self.shared.contains(d)
    }

    /// The descriptor of a field key (`{:?}`, or `imm:{:?}` for an immutable field).
    fn field(&self, key: &str) -> Option<&FieldDescr> {
        match self.descrs.get(key.strip_prefix("imm:").unwrap_or(key)) {
            Some(Descr::Field(f)) => Some(f),
            _ => None,
        }
    }

    /// The array descriptor with text `akey`.
    fn array(&self, akey: &str) -> Option<&ArrayDescr> {
        match self.descrs.get(akey) {
            Some(Descr::Array(a)) => Some(a),
            _ => None,
        }
    }

    /// The key of the length words of arrays of descriptor `akey` (`None`: of strings, `name`
    /// being `strlen` or `unicodelen`): per length offset under byte views (two descriptors with
    /// one length offset read one word), per descriptor otherwise.
    fn len_key(&self, akey: Option<&str>, name: &str) -> String {
        if self.bytes {
            let off = match akey {
                Some(a) => self.array(a).map_or(DEFAULT_ARRAY_LEN, |d| d.len_offset),
                None => STR_LEN_OFFSET,
            };
            return format!("imm:len:@{off}");
        }
        match akey {
            Some(a) => format!("imm:len:array:{a}"),
            None => format!("imm:len:{name}"),
        }
    }

    /// The key of the length word of an allocation of `shape`.
    fn len_key_of_shape(&self, shape: &str) -> String {
        match shape {
            "newstr" => self.len_key(None, "strlen"),
            "newunicode" => self.len_key(None, "unicodelen"),
            s => self.len_key(s.strip_prefix("array:"), ""),
        }
    }

    /// The descriptor text and the bytes `[start, end)` of field or item `key` of a tracked
    /// object (`item_of`: its items' descriptors and indices; an item key it does not list is
    /// read from the key, `item:{akey}#{index}`).
    fn bytes_of(&self, key: &str, item_of: &BTreeMap<String, (String, u32)>) -> Option<(String, i64, i64)> {
        let item = match item_of.get(key) {
            Some((akey, i)) => Some((akey.clone(), *i as i64)),
            None => key
                .strip_prefix("item:")
                .and_then(|k| k.rsplit_once('#'))
                .and_then(|(a, i)| Some((a.to_string(), i.parse::<i64>().ok()?))),
        };
        match item {
            Some((akey, i)) => {
                let a = self.array(&akey)?;
                let start = a.base_offset.saturating_add(i.saturating_mul(a.item_size as i64));
                Some((akey, start, start.saturating_add(a.item_size.max(1) as i64)))
            }
            None => {
                let f = self.field(key)?;
                let d = key.strip_prefix("imm:").unwrap_or(key).to_string();
                Some((d, f.offset, f.offset + f.size.max(1) as i64))
            }
        }
    }
}

impl Layout {
    /// The descriptor text of a word memory (a field's, an array's items', an interior
    /// field's), if `key` is one.
    fn word_descr<'k>(&self, key: &'k str) -> Option<&'k str> {
        let d = key
            .strip_prefix("items:")
            .or_else(|| key.strip_prefix("interior:"))
            .unwrap_or_else(|| key.strip_prefix("imm:").unwrap_or(key));
        self.descrs.contains_key(d).then_some(d)
    }

    /// `v` as a read through descriptor `d` gives it: a narrow integer's low bytes, sign- or
    /// zero-extended.
    fn extend(&self, d: &str, v: BV) -> BV {
        let (size, signed, kind) = match self.descrs.get(d) {
            Some(Descr::Field(f)) => (f.size, f.signed, f.kind),
            Some(Descr::Interior(i)) => (i.field.size, i.field.signed, i.field.kind),
            Some(Descr::Array(a)) => (a.item_size, a.signed, a.kind),
            _ => return v,
        };
        if kind != Kind::Int || size == 0 || size >= 8 {
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

    /// What field or item `name` of tracked object `o` holds as a read through its descriptor
    /// sees it: its own value, or under byte views the bytes of the fields and items `o` holds
    /// through other descriptors there (zero where it holds none; under type-based aliasing
    /// another descriptor's bytes are not this one's). `None` when that would cut a reference
    /// to a tracked object.
    fn tracked_view(&self, o: &LocalObj, name: &str) -> Option<Sym> {
        if let Some(v) = o.fields.get(name) {
            return Some(v.clone());
        }
        if !self.bytes {
            return Some(Sym::Bv(zero()));
        }
        let Some((d, start, end)) = self.bytes_of(name, &o.item_of) else {
            return Some(Sym::Bv(zero()));
        };
        let parts: Vec<(i64, i64, &Sym)> = o
            .fields
            .iter()
            .filter_map(|(k, v)| {
                let (_, s, e) = self.bytes_of(k, &o.item_of)?;
                (s < end && start < e).then_some((s, e, v))
            })
            .collect();
        if parts.is_empty() {
            return Some(Sym::Bv(zero()));
        }
        if end - start > 8 {
            return None;
        }
        let mut v: Option<BV> = None;
        for b in (start..end).rev() {
            let byte = match parts.iter().find(|(s, e, _)| *s <= b && b < *e) {
                None => BV::from_u64(0, 8),
                Some((s, _, Sym::Bv(x))) => {
                    let k = (b - s) as u32;
                    x.extract(8 * k + 7, 8 * k)
                }
                Some((_, _, Sym::Obj(_))) => return None,
            };
            v = Some(match v {
                None => byte,
                Some(high) => high.concat(&byte),
            });
        }
        let v = v.expect("at least one byte");
        let n = v.get_size();
        let v = if n < 64 { v.zero_ext(64 - n) } else { v };
        Some(Sym::Bv(self.extend(&d, v)))
    }
}

/// Where the heap model keeps a view.
#[derive(Clone, Debug)]
enum Place {
    /// A word of the memory `key`, at `index`; `imm`: an immutable read, of its twin
    /// ([`twin_of`]).
    Word { key: String, index: BV, imm: bool },
    /// `size` bytes of [`BYTES`] from byte `offset` of the object at `addr`; `imm`: an
    /// immutable read, of [`TWIN_BYTES`].
    Bytes { addr: BV, offset: BV, size: u8, imm: bool },
    /// `size` bytes of raw memory from address `addr`.
    Raw { addr: BV, size: u8 },
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
    /// The field keys of the byte memory written since the last epoch change.
    written_fields: BTreeSet<String>,
    /// The indices written into each array since it was last replaced by a fresh one.
    written_at: HashMap<String, Vec<BV>>,
    /// Index width of each heap array.
    bits: HashMap<String, u32>,
    epoch: String,
    /// The epoch the immutable twins ([`twin_of`]) started from: `0` (they start as the
    /// memories at entry) or the last label (fresh arrays).
    twin_epoch: String,
    /// Escapes so far, per object shape (the `k`-th object of a shape to escape on each side
    /// gets the address [`esc_addr`]`(shape, k)`).
    escapes: BTreeMap<String, usize>,
    /// Every address this side gave an escaping object, in escape order.
    esc_addrs: Vec<BV>,
    /// The shape of each object of `esc_addrs`.
    esc_shape_of: Vec<String>,
    /// The number of the epoch in which each object of `esc_addrs` escaped.
    esc_epoch_of: Vec<usize>,
    /// Epoch name -> its number, in order (`0` is 0).
    epoch_numbers: HashMap<String, usize>,
    /// Under [`Naming::Role`]: whether each object of `esc_addrs` is paired with one of the
    /// other side's ([`Validator::try_pair`]).
    paired: Vec<bool>,
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
    read_keys: Rc<Vec<String>>,
    /// The descriptors of both traces and which of them use the byte memory.
    layout: Rc<Layout>,
    /// The non-null reference constants of both traces (no fresh object has their address).
    consts: Rc<Vec<u64>>,
    /// Facts about escaped objects' addresses, not yet added to the path condition.
    esc_facts: Vec<Bool>,
    /// The zero bytes of fresh objects in the byte memories epochs started from (shared by
    /// both sides, like the facts).
    zeros: Rc<RefCell<Vec<ZeroSpan>>>,
    /// Object id -> the byte offsets where it is zero in the byte memory as it escaped.
    zero_span_of: HashMap<usize, (u64, u64)>,
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
            written_fields: BTreeSet::new(),
            written_at: HashMap::new(),
            bits: HashMap::new(),
            epoch: "0".into(),
            twin_epoch: "0".into(),
            escapes: BTreeMap::new(),
            esc_addrs: Vec::new(),
            esc_shape_of: Vec::new(),
            esc_epoch_of: Vec::new(),
            epoch_numbers: HashMap::from([("0".to_string(), 0)]),
            paired: Vec::new(),
            esc_shapes: BTreeSet::new(),
            naming: Naming::ShapeAndLength,
            escaped_in: HashMap::new(),
            carried: HashMap::new(),
            esc_facts: Vec::new(),
            zeros: Rc::new(RefCell::new(Vec::new())),
            zero_span_of: HashMap::new(),
            read_keys: Rc::new(Vec::new()),
            layout: Rc::new(Layout::default()),
            consts: Rc::new(Vec::new()),
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
    /// Immutable fields' arrays start at entry and are never replaced; an immutable twin
    /// starts as its memory at entry, or fresh at a label.
    fn initial(&self, key: &str, domain_bits: u32) -> Array {
        let name = if key.starts_with("imm:") {
            format!("heap[{key}]@0")
        } else if let Some(of) = key.strip_prefix("twin:") {
            if self.twin_epoch == "0" {
                format!("heap[{of}]@0")
            } else {
                format!("heap[{key}]@{}", self.twin_epoch)
            }
        } else {
            format!("heap[{key}]@{}", self.epoch)
        };
        let range = if holds_bytes(key) { 8 } else { 64 };
        Array::new_const(name, &Sort::bitvector(domain_bits), &Sort::bitvector(range))
    }

    /// The arrays the reads of `key` start from in the current epoch: its own and its twin's.
    fn initials(&self, key: &str, domain_bits: u32) -> Vec<Array> {
        let mut out = vec![self.initial(key, domain_bits)];
        if let Some(t) = twin_of(key) {
            let ti = self.initial(&t, domain_bits);
            if !ti.ast_eq(&out[0]) {
                out.push(ti);
            }
        }
        out
    }

    fn read(&mut self, key: &str, index: &BV) -> BV {
        let a = self.array(key, index.get_size());
        if holds_bytes(key) {
            select_expanded(&a, index, &self.zeros.borrow())
        } else {
            select(&a, index)
        }
    }

    /// Write `value` at `index` of `key` and of its immutable twin.
    fn write(&mut self, key: &str, index: &BV, value: &BV) {
        self.store(key, index, value);
        if let Some(t) = twin_of(key) {
            let a = self.array(&t, index.get_size());
            self.arrays.insert(t, a.store(index, value));
        }
    }

    /// Write `value` at `index` of `key` only.
    fn store(&mut self, key: &str, index: &BV, value: &BV) {
        let a = self.array(key, index.get_size());
        self.arrays.insert(key.to_string(), a.store(index, value));
        self.written.insert(key.to_string());
        self.written_at.entry(key.to_string()).or_default().push(index.clone());
    }

    /// `size` bytes of the byte memory `mem` from `offset` (of the object at `addr`; raw
    /// memory: absolute), little-endian, zero-extended to 64 bits.
    fn read_bytes(&mut self, mem: &str, addr: Option<&BV>, offset: &BV, size: u8) -> BV {
        let n = size.clamp(1, 8) as u32;
        let mut v: Option<BV> = None;
        for k in (0..n).rev() {
            let b = self.read(mem, &byte_index(addr, offset, k as u64));
            v = Some(match v {
                None => b,
                Some(high) => high.concat(&b),
            });
        }
        let v = v.expect("at least one byte");
        if n < 8 {
            v.zero_ext(64 - 8 * n)
        } else {
            v
        }
    }

    /// Write the low `size` bytes of `value` little-endian from `offset` (see
    /// [`Self::read_bytes`]); `mirror`: into the immutable twin too.
    fn write_bytes(&mut self, mem: &str, addr: Option<&BV>, offset: &BV, size: u8, value: &BV, mirror: bool) {
        let n = size.clamp(1, 8) as u32;
        for k in 0..n {
            let i = byte_index(addr, offset, k as u64);
            let b = value.extract(8 * k + 7, 8 * k);
            if mirror {
                self.write(mem, &i, &b);
            } else {
                self.store(mem, &i, &b);
            }
        }
    }

    fn read_place(&mut self, place: &Place) -> BV {
        match place {
            Place::Word { key, index, imm } => {
                let key = match (imm, twin_of(key)) {
                    (true, Some(t)) => t,
                    _ => key.clone(),
                };
                self.read(&key, index)
            }
            Place::Bytes {
                addr,
                offset,
                size,
                imm,
            } => {
                let mem = if *imm { TWIN_BYTES } else { BYTES };
                self.read_bytes(mem, Some(addr), offset, *size)
            }
            Place::Raw { addr, size } => self.read_bytes(RAW, None, addr, *size),
        }
    }

    /// Write `value` to `place` (an immutable place: its mutable memory, as every write);
    /// `mirror`: into the immutable twin too (false only when carrying contents over a call).
    fn write_place(&mut self, place: &Place, value: &BV, mirror: bool) {
        match place {
            Place::Word { key, index, .. } => {
                if mirror {
                    self.write(key, index, value);
                } else {
                    self.store(key, index, value);
                }
            }
            Place::Bytes { addr, offset, size, .. } => {
                self.write_bytes(BYTES, Some(addr), offset, *size, value, mirror)
            }
            Place::Raw { addr, size } => self.write_bytes(RAW, None, addr, *size, value, false),
        }
    }

    /// State that word `place` (of a fresh object) is zero in the memories this epoch started
    /// from. (Fresh objects' bytes in the byte memory are zero by their [`ZeroSpan`]s.)
    fn state_zero(&mut self, place: &Place) {
        let Place::Word { key, index, .. } = place else {
            return;
        };
        for init in self.initials(key, index.get_size()) {
            if let Some(v) = init.select(index).as_bv() {
                self.esc_facts.push(v.eq(zero()));
            }
        }
    }

    /// Bytes `[lo, hi)` of the fresh object `id` at `addr` are zero in the byte memories this
    /// epoch started from.
    fn zero_span(&mut self, id: usize, addr: &BV, lo: u64, hi: u64) {
        self.zero_span_of.insert(id, (lo, hi));
        for init in self.initials(BYTES, 128) {
            self.zeros.borrow_mut().push(ZeroSpan {
                init,
                addr: addr.clone(),
                lo,
                hi,
            });
        }
    }

    /// Where field `key` (`{:?}` or `imm:{:?}` of its descriptor) of the object at `addr` is.
    fn field_place(&self, addr: &BV, key: &str) -> Place {
        match self.layout.field(key) {
            Some(f) if self.layout.shared(key.strip_prefix("imm:").unwrap_or(key)) => Place::Bytes {
                addr: addr.clone(),
                offset: bv(f.offset as u64),
                size: f.size,
                imm: f.immutable,
            },
            _ => Place::Word {
                key: key.to_string(),
                index: addr.clone(),
                imm: false,
            },
        }
    }

    /// Where item `index` of the array at `addr` accessed through descriptor `akey` is;
    /// `imm`: for an immutable read.
    fn item_place(&self, addr: &BV, akey: &str, index: &BV, imm: bool) -> Place {
        match self.layout.array(akey) {
            Some(a) if self.layout.shared(akey) => Place::Bytes {
                addr: addr.clone(),
                offset: scaled(index, a.item_size as u64, a.base_offset),
                size: a.item_size,
                imm,
            },
            _ => Place::Word {
                key: format!("items:{akey}"),
                index: addr.concat(index),
                imm,
            },
        }
    }

    /// Where field or item `key` of a tracked object ([`LocalObj::fields`]) is once the object
    /// has the address `addr`.
    fn obj_place(&self, addr: &BV, key: &str, item_of: &BTreeMap<String, (String, u32)>) -> Place {
        match item_of.get(key) {
            Some((akey, i)) => self.item_place(addr, akey, &bv(*i as u64), false),
            None => self.field_place(addr, key),
        }
    }

    /// Whether bytes `[start, end)` accessed through shared descriptor `d` of tracked object
    /// `id` overlap a field or item it holds through another descriptor (the object then
    /// escapes, and the byte memory assembles the bytes).
    fn overlaps_other(&self, id: usize, d: &str, start: i64, end: i64) -> bool {
        let o = &self.objs[id];
        o.fields.keys().any(|k| match self.layout.bytes_of(k, &o.item_of) {
            Some((kd, s, e)) => kd != d && s < end && start < e,
            None => false,
        })
    }

    /// Whether an access to field `key` of tracked object `id` must go through the byte
    /// memory (see [`Self::overlaps_other`]).
    fn field_overlaps(&self, id: usize, key: &str) -> bool {
        let d = key.strip_prefix("imm:").unwrap_or(key);
        match self.layout.field(key) {
            Some(f) if self.layout.shared(d) => self.overlaps_other(id, d, f.offset, f.offset + f.size.max(1) as i64),
            _ => false,
        }
    }

    /// Whether an access to item `index` (`None`: not a constant) through `akey` of tracked
    /// object `id` must go through the byte memory: it overlaps what the object holds through
    /// another descriptor, or its index is not a constant and `akey` is not the allocation's.
    fn item_overlaps(&self, id: usize, akey: &str, index: Option<u64>) -> bool {
        let Some(a) = self.layout.array(akey).filter(|_| self.layout.shared(akey)) else {
            return false;
        };
        match index {
            Some(i) => {
                let start = a
                    .base_offset
                    .saturating_add((i as i64).saturating_mul(a.item_size as i64));
                self.overlaps_other(id, akey, start, start.saturating_add(a.item_size.max(1) as i64))
            }
            None => {
                self.objs[id].shape.strip_prefix("array:") != Some(akey)
                    || self.overlaps_other(id, akey, a.base_offset, i64::MAX)
            }
        }
    }

    /// Forget the heap (after a call that may write it, or at a label, which also replaces
    /// the immutable twins).
    fn new_epoch(&mut self, epoch: String, label: bool) {
        let keep = |k: &String| k.starts_with("imm:") || (!label && k.starts_with("twin:"));
        self.arrays.retain(|k, _| keep(k));
        self.written_at.retain(|k, _| keep(k));
        self.written.clear();
        self.written_fields.clear();
        self.carried.clear();
        if label {
            self.twin_epoch = epoch.clone();
        }
        let n = self.epoch_numbers.len();
        self.epoch_numbers.entry(epoch.clone()).or_insert(n);
        self.epoch = epoch;
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
        let id = match s {
            Sym::Bv(b) => return b.clone(),
            Sym::Obj(id) => *id,
        };
        if let Some(a) = &self.objs[id].addr {
            return a.clone();
        }
        let obj = self.objs[id].clone();
        let len = obj.len.as_ref().and_then(|l| l.simplify().as_u64());
        self.esc_shapes.insert((obj.shape.clone(), len.is_some()));
        let addr = if self.naming == Naming::Role {
            // Side-specific: paired with the other side's objects by role.
            BV::new_const(format!("esc{}:{}", self.esc_addrs.len(), self.tag), 64)
        } else {
            let shape = match (self.naming, len) {
                (Naming::ShapeAndLength, Some(n)) => format!("{}/{n}", obj.shape),
                (Naming::ShapeAndLength | Naming::Shape, _) => obj.shape.clone(),
                _ => String::new(),
            };
            let k = self.escapes.entry(shape.clone()).or_insert(0);
            let addr = esc_addr(&shape, *k);
            *k += 1;
            addr
        };
        // A fresh allocation is not null, differs from the other fresh ones and from the
        // traces' constants, and has the class its allocation gave it.
        self.esc_facts.push(addr.eq(zero()).not());
        for other in &self.esc_addrs {
            self.esc_facts.push(addr.eq(other).not());
        }
        for &c in self.consts.iter() {
            self.esc_facts.push(addr.eq(bv(c)).not());
        }
        self.esc_addrs.push(addr.clone());
        self.esc_shape_of.push(obj.shape.clone());
        self.esc_epoch_of
            .push(self.epoch_numbers.get(&self.epoch).copied().unwrap_or(usize::MAX));
        self.paired.push(false);
        if let Some(c) = &obj.class {
            self.esc_facts.push(class_of(&addr).eq(c));
        }
        // Nor is it any pointer that existed before (its only references were tracked until
        // now).
        let mut seen = HashSet::new();
        for (i, v) in self.vals.iter().enumerate() {
            if let Some(Sym::Bv(b)) = v {
                if self.trace.ops[i].opcode.result_kind() == Kind::Ref && b.get_size() == 64 && seen.insert(b.clone()) {
                    self.esc_facts.push(addr.eq(b).not());
                }
            }
        }
        self.objs[id].addr = Some(addr.clone());
        self.escaped_in.insert(id, self.epoch.clone());
        let layout = self.layout.clone();
        // A fresh object's fields are zero: stated for every field either trace reads (and
        // every byte of the shared fields) about the heap both sides start the epoch from,
        // not written: the other side may not read the same fields (the optimizer removes dead
        // reads), and zeros never contradict each other. Array items that were never written
        // are left unknown after an escape when the length is not a constant: it may be
        // constant on one side and symbolic on the other, so zeros could not be stated alike.
        if obj.len.is_none() {
            for key in self.read_keys.clone().iter() {
                if !obj.fields.contains_key(key) {
                    let place = self.field_place(&addr, key);
                    if matches!(place, Place::Word { .. }) {
                        self.state_zero(&place);
                    }
                }
            }
            if let (Some(&lo), Some(&hi)) = (layout.field_bytes.first(), layout.field_bytes.last()) {
                // (An instance's class word is not zero.)
                let lo = if obj.class.is_some() { lo.max(8) } else { lo };
                if lo <= hi {
                    self.zero_span(id, &addr, lo as u64, hi as u64 + 1);
                }
            }
        }
        // A fresh array's items are zero (with a constant length: the other side may know the
        // same length only symbolically, or escape the array later, and must see the same
        // zeros through its reads of the heap this epoch started from).
        if let (Some(akey), Some(n)) = (obj.shape.strip_prefix("array:"), len) {
            match layout.array(akey) {
                Some(a) if layout.shared(akey) => {
                    let lo = a.base_offset as u64;
                    let hi = n.saturating_mul(a.item_size as u64).saturating_add(lo);
                    self.zero_span(id, &addr, lo, hi);
                }
                _ if n <= 64 => {
                    for i in 0..n {
                        let place = self.item_place(&addr, akey, &bv(i), false);
                        self.state_zero(&place);
                    }
                }
                _ => {}
            }
        }
        if let Some(len) = &obj.len {
            let key = layout.len_key_of_shape(&obj.shape);
            self.write(&key, &addr, len);
        }
        for (key, val) in &obj.fields {
            let vb = self.escape(val);
            let place = self.obj_place(&addr, key, &obj.item_of);
            self.write_place(&place, &vb, true);
        }
        addr
    }

    /// `v`, a reference read from memory: when it is read from the memory an epoch started
    /// from (no store of this trace), it is no object that escaped in that epoch or later (the
    /// memory held only references that existed then; a fresh object's address reaches memory
    /// only by a store or a call after it escaped).
    fn read_before_escapes(&mut self, v: &BV) {
        let Ok(decl) = v.safe_decl() else { return };
        if decl.kind() != DeclKind::Select {
            return;
        }
        let Some(array) = v.children().first().cloned() else {
            return;
        };
        let Ok(adecl) = array.safe_decl() else { return };
        if adecl.kind() != DeclKind::Uninterpreted || adecl.arity() != 0 {
            return;
        }
        let name = adecl.name();
        let Some(start) = name
            .strip_prefix("heap[")
            .and_then(|n| n.rsplit_once("]@"))
            .and_then(|(_, e)| self.epoch_numbers.get(e).copied())
        else {
            return;
        };
        for (addr, &e) in self.esc_addrs.iter().zip(&self.esc_epoch_of) {
            if e >= start {
                self.esc_facts.push(v.eq(addr).not());
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
                let place = self.item_place(&addr, akey, &bv(i), false);
                // As a read sees it (a narrow item's word or bytes hold only its bytes).
                let value = self.read_place(&place);
                let value = self.layout.extend(akey, value);
                out.push(Content {
                    name: format!("item:{akey}#{i}"),
                    place,
                    value,
                });
            }
            return Some(out);
        }
        if obj.len.is_some() {
            return None;
        }
        let carried = self.carried.get(&id).cloned().unwrap_or_default();
        let layout = self.layout.clone();
        let plain = |k: &&String| layout.field(k).is_some() && !k.starts_with("imm:");
        let keys: BTreeSet<String> = obj
            .fields
            .keys()
            .chain(self.read_keys.iter())
            .chain(self.written.iter().filter(plain))
            .chain(self.written_fields.iter())
            .chain(carried.iter())
            .chain(extra.iter())
            .cloned()
            .collect();
        for key in keys {
            let place = self.field_place(&addr, &key);
            if !obj.fields.contains_key(&key) && !carried.contains(&key) {
                self.state_zero(&place);
            }
            let value = self.read_place(&place);
            let value = layout.extend(key.strip_prefix("imm:").unwrap_or(&key), value);
            out.push(Content {
                name: key,
                place,
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
        self.new_epoch(epoch, false);
        for (id, contents) in keep {
            let mut keys = BTreeSet::new();
            for f in contents {
                // Immutable fields' arrays are not replaced.
                if !matches!(&f.place, Place::Word { key, .. } if key.starts_with("imm:")) {
                    self.write_place(&f.place, &f.value, false);
                }
                keys.insert(f.name);
            }
            if self.objs[id].len.is_none() {
                self.carried.insert(id, keys);
            }
            // The bytes it never had are still zero.
            if let (Some(&(lo, hi)), Some(addr)) = (self.zero_span_of.get(&id), self.objs[id].addr.clone()) {
                self.zero_span(id, &addr, lo, hi);
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

/// The addresses `mine` gave objects that `other` has no object of at that address yet: the
/// `k`-th escape of a shape, for `k` at or above `other`'s count of that shape; under
/// [`Naming::Role`], the objects not paired yet.
fn one_sided(mine: &Side, other: &Side) -> Vec<BV> {
    if mine.naming == Naming::Role {
        return mine
            .esc_addrs
            .iter()
            .zip(&mine.paired)
            .filter(|(_, &p)| !p)
            .map(|(a, _)| a.clone())
            .collect();
    }
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
    /// The first counterexample that depends on uninterpreted float operations, for a
    /// concrete confirmation ([`crate::replay`]).
    float_witness: Option<Counterexample>,
    /// Whether objects are being compared in one of several alternatives
    /// ([`Validator::escaped_vs_tracked`]): no pairing by role there.
    tentative: bool,
    /// The facts of the pairs made by role ([`Validator::try_pair`]).
    pair_facts: Vec<Bool>,
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
        let keys = Rc::new(keys.into_iter().collect::<Vec<_>>());
        let layout = Rc::new(Layout::new([original, optimized]));
        let consts: BTreeSet<u64> = [original, optimized]
            .iter()
            .flat_map(|t| t.consts.iter())
            .filter(|c| c.kind() == Kind::Ref && c.bits() != 0)
            .map(|c| c.bits())
            .collect();
        let consts = Rc::new(consts.into_iter().collect::<Vec<_>>());
        let mut o = Side::new(original, "original");
        let mut p = Side::new(optimized, "optimized");
        let zeros = Rc::new(RefCell::new(Vec::new()));
        for s in [&mut o, &mut p] {
            s.zeros = zeros.clone();
            s.read_keys = keys.clone();
            s.layout = layout.clone();
            s.consts = consts.clone();
        }
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
            float_witness: None,
            tentative: false,
            pair_facts: Vec::new(),
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
                    if self.float_witness.is_none() {
                        self.float_witness = Some(self.counterexample(model, what(), diff));
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
            let pairs_before = self.pair_facts.len();
            self.open_batch();
            let r = self.compare_exit(g, ro, rp).and_then(|()| self.flush());
            self.batch = None;
            self.facts.truncate(n);
            self.concrete_facts.truncate(n);
            // Objects paired by role at the exit stay paired: a pairing only chooses which
            // runs are compared, whether or not the guard fails (and what was consistent with
            // the exit's path condition is consistent with the weaker one here).
            self.facts
                .extend(self.pair_facts[pairs_before..].iter().map(|f| (f.clone(), false)));
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
            self.try_pair(&a, &b);
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
            s.new_epoch(format!("label{k}"), true);
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
                self.try_pair(&a, &b);
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
                self.try_pair(&a, &b);
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
                // Every field either object holds, as the other holds its bytes (objects never
                // hold overlapping fields themselves).
                let keys: BTreeSet<&String> = oa.fields.keys().chain(ob.fields.keys()).collect();
                let layout = self.o.layout.clone();
                for k in keys {
                    let (Some(fa), Some(fb)) = (layout.tracked_view(&oa, k), layout.tracked_view(&ob, k)) else {
                        return Bool::from_bool(false);
                    };
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
        let tentative = std::mem::replace(&mut self.tentative, true);
        for (c, addr) in candidates {
            let same = match pair(pairs, c) {
                Some(known) => Bool::from_bool(known),
                None => self.escaped_contents_equal(orig, c, t, &mut pairs.clone()),
            };
            alternatives.push(Bool::and(&[xv.eq(&addr), same]));
        }
        self.tentative = tentative;
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
        let layout = mine.layout.clone();
        let mut fields: Vec<(BV, Sym)> = Vec::new();
        for f in contents {
            let Some(w) = layout.tracked_view(&tr, &f.name) else {
                return Bool::from_bool(false);
            };
            fields.push((f.value, w));
        }
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

    /// Under [`Naming::Role`]: pair fresh objects of both sides that a heap word both sides
    /// wrote holds (the same field of the same object is a corresponding place), until no new
    /// pair is found (pairing objects pairs their fields' places).
    fn pair_heap_values(&mut self, keys: &BTreeSet<String>) {
        if self.o.naming != Naming::Role {
            return;
        }
        loop {
            let mut found = false;
            for key in keys {
                if holds_bytes(key) {
                    continue;
                }
                let bits = self
                    .o
                    .bits
                    .get(key)
                    .or_else(|| self.p.bits.get(key))
                    .copied()
                    .unwrap_or(64);
                let a = self.o.array(key, bits);
                let b = self.p.array(key, bits);
                if a.ast_eq(&b) {
                    continue;
                }
                let mut seen = HashSet::new();
                let indices: Vec<BV> = [&self.o, &self.p]
                    .iter()
                    .flat_map(|s| s.written_at.get(key).into_iter().flatten())
                    .filter(|i| seen.insert((*i).clone()))
                    .cloned()
                    .collect();
                for i in indices {
                    found |= self.try_pair(&select(&a, &i), &select(&b, &i));
                }
            }
            if !found {
                return;
            }
        }
    }

    /// Under [`Naming::Role`]: when `a` (original) and `b` (optimized) are the addresses of
    /// fresh objects of one shape that are not paired yet, met in corresponding places, pair
    /// them: assume their addresses equal (fresh objects are interchangeable, so this only
    /// chooses which runs of the traces are compared). Kept one-to-one; never done when it
    /// would contradict the path condition (then the places differ, as they should). Returns
    /// whether a pair was made.
    fn try_pair(&mut self, a: &BV, b: &BV) -> bool {
        if self.o.naming != Naming::Role || self.tentative {
            return false;
        }
        let (a, b) = (a.simplify(), b.simplify());
        let Some(i) = self.o.esc_addrs.iter().position(|x| x.ast_eq(&a)) else {
            return false;
        };
        let Some(j) = self.p.esc_addrs.iter().position(|x| x.ast_eq(&b)) else {
            return false;
        };
        if self.o.paired[i] || self.p.paired[j] || self.o.esc_shape_of[i] != self.p.esc_shape_of[j] {
            return false;
        }
        self.drain_escape_facts();
        let same = a.eq(&b);
        if !self.satisfiable(&same) {
            return false;
        }
        self.assume(same.clone(), false);
        self.pair_facts.push(same);
        self.o.paired[i] = true;
        self.p.paired[j] = true;
        true
    }

    /// Whether the path condition and `extra` can hold together (with the full semantics).
    fn satisfiable(&mut self, extra: &Bool) -> bool {
        let claim = extra.not();
        match self.check(&claim, Mode::Abstract).0 {
            SatResult::Sat => {
                self.query_is_concrete(&claim)
                    || self.check(&claim, Mode::Concrete { light: false }).0 == SatResult::Sat
            }
            _ => false,
        }
    }

    fn prove_heap_equal(&mut self, when: &str) -> R<()> {
        let keys: BTreeSet<String> = self.o.written.iter().chain(self.p.written.iter()).cloned().collect();
        self.pair_heap_values(&keys);
        // Fresh objects only one side gave an address so far (`esc{k}` for k at or above the
        // smaller count; by role: not paired): on the other side the object is still tracked,
        // or does not exist. Its contents are not part of the heap comparison; if anything
        // compared can reach it, that reference itself differs (an address on one side, not on
        // the other).
        let mut one_sided = one_sided(&self.o, &self.p);
        one_sided.extend(self::one_sided(&self.p, &self.o));
        let layout = self.o.layout.clone();
        let on_one_side = |key: &str, i: &BV| {
            if key == RAW {
                return false;
            }
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
                    if on_one_side(&key, i) {
                        skipped += 1;
                        continue;
                    }
                    if seen.insert(i.clone()) {
                        same.push(if holds_bytes(&key) {
                            let zeros = self.o.zeros.borrow();
                            select_expanded(&a, i, &zeros).eq(select_expanded(&b, i, &zeros))
                        } else {
                            // A narrow integer's word holds only its bytes: compare what a read
                            // sees (the initial words' other bits are seen by no read).
                            let (x, y) = (select(&a, i), select(&b, i));
                            match layout.word_descr(&key) {
                                Some(d) => layout.extend(d, x).eq(layout.extend(d, y)),
                                None => x.eq(y),
                            }
                        });
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
                let v = match s.tracked(&base).filter(|&id| !s.field_overlaps(id, &key)) {
                    Some(id) => s.objs[id].fields.get(&key).cloned().unwrap_or(Sym::Bv(zero())),
                    None => {
                        let p = s.escape(&base);
                        let place = s.field_place(&p, &key);
                        Sym::Bv(s.read_place(&place))
                    }
                };
                set(s, v);
            }
            Opcode::SetfieldGc => {
                let key = field_key(trace, r);
                let base = s.value(op.args[0])?;
                let val = narrow_store(trace, r, s.value(op.args[1])?);
                match s.tracked(&base).filter(|&id| !s.field_overlaps(id, &key)) {
                    Some(id) => {
                        s.objs[id].fields.insert(key, val);
                    }
                    None => {
                        let p = s.escape(&base);
                        let v = s.escape(&val);
                        let place = s.field_place(&p, &key);
                        if matches!(place, Place::Bytes { .. }) && !key.starts_with("imm:") {
                            s.written_fields.insert(key);
                        }
                        s.write_place(&place, &v, true);
                    }
                }
            }
            Opcode::GetfieldRawI | Opcode::GetfieldRawR | Opcode::GetfieldRawF | Opcode::SetfieldRaw => {
                let Some(fd) = op.descr.and_then(|d| trace.descr(d).as_field()) else {
                    return unsupported(format!("{opc} without a field descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let place = Place::Raw {
                    addr: add_const(&p, fd.offset as u64),
                    size: fd.size,
                };
                if opc == Opcode::SetfieldRaw {
                    let v = narrow_bv(trace, r, s.bv_of(op.args[1])?);
                    s.write_place(&place, &v, false);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::GetarrayitemGcI
            | Opcode::GetarrayitemGcR
            | Opcode::GetarrayitemGcF
            | Opcode::GetarrayitemGcPureI
            | Opcode::GetarrayitemGcPureR
            | Opcode::GetarrayitemGcPureF => {
                let akey = descr_key(trace, r);
                let pure = matches!(
                    opc,
                    Opcode::GetarrayitemGcPureI | Opcode::GetarrayitemGcPureR | Opcode::GetarrayitemGcPureF
                );
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let cidx = idx.simplify().as_u64();
                let tracked = s.tracked(&base).filter(|&id| !s.item_overlaps(id, &akey, cidx));
                let v = match (tracked, cidx) {
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
                        let place = s.item_place(&p, &akey, &idx, pure);
                        Sym::Bv(s.read_place(&place))
                    }
                };
                set(s, v);
            }
            Opcode::SetarrayitemGc => {
                let akey = descr_key(trace, r);
                let base = s.value(op.args[0])?;
                let idx = s.bv_of(op.args[1])?;
                let val = narrow_store(trace, r, s.value(op.args[2])?);
                let cidx = idx.simplify().as_u64();
                let tracked = s.tracked(&base).filter(|&id| !s.item_overlaps(id, &akey, cidx));
                match (tracked, cidx) {
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
                        let place = s.item_place(&p, &akey, &idx, false);
                        s.write_place(&place, &v, true);
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
                            Opcode::ArraylenGc => s.layout.len_key(Some(&descr_key(trace, r)), ""),
                            _ => s.layout.len_key(None, opc.name()),
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
            Opcode::GetarrayitemRawI
            | Opcode::GetarrayitemRawF
            | Opcode::RawLoadI
            | Opcode::RawLoadF
            | Opcode::SetarrayitemRaw
            | Opcode::RawStore => {
                let Some(ad) = op.descr.and_then(|d| trace.descr(d).as_array()) else {
                    return unsupported(format!("{opc} without an array descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                // `raw_load`/`raw_store` take a byte offset, the array item ops an index.
                let scale = if matches!(opc, Opcode::RawLoadI | Opcode::RawLoadF | Opcode::RawStore) {
                    1
                } else {
                    ad.item_size as u64
                };
                let offset = scaled(&i, scale, 0);
                let addr = match (p.simplify().as_u64(), offset.as_u64()) {
                    (Some(a), Some(o)) => bv(a.wrapping_add(o)),
                    (_, Some(0)) => p,
                    _ => p.bvadd(&offset),
                };
                let place = Place::Raw {
                    addr,
                    size: ad.item_size,
                };
                if matches!(opc, Opcode::SetarrayitemRaw | Opcode::RawStore) {
                    let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                    s.write_place(&place, &v, false);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
            }
            Opcode::GetinteriorfieldGcI
            | Opcode::GetinteriorfieldGcR
            | Opcode::GetinteriorfieldGcF
            | Opcode::SetinteriorfieldGc => {
                let ikey = descr_key(trace, r);
                let Some(Descr::Interior(id)) = op.descr.map(|d| trace.descr(d)) else {
                    return unsupported(format!("{opc} without an interior descriptor"));
                };
                let p = s.bv_of(op.args[0])?;
                let i = s.bv_of(op.args[1])?;
                let place = if s.layout.shared(&ikey) {
                    Place::Bytes {
                        addr: p,
                        offset: scaled(&i, id.item_size as u64, DEFAULT_ARRAY_BASE + id.field.offset),
                        size: id.field.size,
                        imm: id.field.immutable,
                    }
                } else {
                    Place::Word {
                        key: format!("interior:{ikey}"),
                        index: p.concat(&i),
                        imm: false,
                    }
                };
                if opc == Opcode::SetinteriorfieldGc {
                    let v = narrow_bv(trace, r, s.bv_of(op.args[2])?);
                    s.write_place(&place, &v, true);
                } else {
                    let v = s.read_place(&place);
                    set(s, Sym::Bv(v));
                }
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
            | Opcode::RecordKnownResult => {}
            Opcode::RecordExactClass => {
                // A promise: on the original, the object is not null and has that class.
                if orig {
                    let x = s.value(op.args[0])?;
                    let c = s.bv_of(op.args[1])?;
                    t.fact = Some(match s.tracked(&x) {
                        Some(id) => s.objs[id]
                            .class
                            .clone()
                            .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)]))
                            .eq(&c),
                        None => {
                            let p = s.escape(&x);
                            Bool::and(&[p.eq(zero()).not(), class_of(&p).eq(&c)])
                        }
                    });
                }
            }
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
                if opc.result_kind() == Kind::Ref {
                    s.read_before_escapes(&v);
                }
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
