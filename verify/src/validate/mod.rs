//! Translation validation: prove with Z3 that an optimized trace behaves like the
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
//! `Unknown` for a reordering). A conditional call the optimized trace dropped never calls,
//! and one it made a plain call always calls; which original call an optimized call is comes
//! from a search for an alignment of the sync points in which every pair of calls is the same
//! call; when a pair of calls the first alignment made differs, the next few alignments are
//! tried (whether a conditional call calls is only known to Z3). Operations of the optimized trace that may be undefined
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
//!   constant length, and the `JitVirtualRef` of a `virtual_ref`, whose fields its
//!   `virtual_ref_finish` writes: `trace_ir::abi::VirtualRefLayout`) are tracked exactly, field by field, as long as they have not
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
//!   without the length (one side may know a length only symbolically), then the escape order
//!   among objects of one class (objects of different classes are never one object), then
//!   **pairing by role**, and answers `Valid` if one of them proves the traces equal,
//!   `Unknown` if pairing by role (the most faithful matching) ends undecided, and the first
//!   `Invalid` otherwise. By role, each side's objects get addresses of their own
//!   (`esc{k}:original`, `esc{k}:optimized`); where a sync point presents corresponding operands
//!   (the same call argument, fail argument, `finish`/`jump`/`label` operand, field of two
//!   compared objects, or heap word both sides wrote, in the byte memory too) that are fresh
//!   objects of one shape not paired yet, they are paired (and where no heap word holds a fresh
//!   object on both sides, a word that may hold exactly one object not yet paired on each side,
//!   as a branch of an `ite`, pairs those): their addresses are assumed equal, one-to-one, and only when
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
//!   `store`s, so read-after-write and possible aliasing are exact. Reads make the stores
//!   they may hit explicit (`ite` on the index) and leave out, wherever they are in the
//!   chain, the stores whose index certainly differs: constant offsets that differ, two
//!   escaped objects of one side, or an escaped object and a value the path condition states
//!   apart from it (whatever the offsets). A call that may write the heap replaces all mutable arrays by
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
//!   The optimized trace's body label may have parameters past the original's that carry
//!   loaded values ([`Config::carried`]: a field, or an array item at a constant index, of an
//!   earlier parameter or a constant): wherever the label is reached (its operands, a final
//!   `jump` to it) each such operand is proven to be what the original's heap holds there,
//!   read as `getfield_gc_*`/`getarrayitem_gc_*` read it; past the label the parameter is a
//!   fresh symbol assumed to hold that read of the label's fresh heap (the same induction).
//!   After the fields of objects the label takes field by field ([`Config::carried_virtuals`]),
//!   its last parameters may carry results of pure ops on its input parameters
//!   ([`Config::carried_pure`]): each operand is proven to be that op of the label's input
//!   operands (and the op defined there); past the label the parameter is that op of the
//!   input parameters. An extra parameter that carries nothing is `Unknown`.
//! - Elidable and loop-invariant calls are uninterpreted functions of their arguments. One
//!   that returns a reference does not return an escaped object it cannot reach: one never
//!   passed to a call, never written where an immutable read may see it (an immutable field,
//!   an array or interior item, raw memory) and escaped after the last call that may write
//!   the heap (such a call may store what it reaches anywhere); it reads its arguments and
//!   immutable memory only (`docs/memory-model.md`).
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
//! vectors. With [`Config::abstract_heavy_ops`] (the default) each such op that is not a
//! constant, a product with 0, 1 or -1 or a quotient by 0, 1 or -1 (products with other
//! constants included: two multiplier circuits on operands that are equal but written
//! differently are a hard equivalence problem, while their applications are equal by
//! congruence) is translated as an application of an uninterpreted
//! function, one symbol per op shared by both traces (`int_mul_ovf` shares `int_mul`'s),
//! on operands simplified and, for commutative ops, ordered, so the same computation on both
//! sides is the same term and congruence covers CSE; `(-x) * (-y)` is `x * y`, and `x / x`,
//! `x % x` and `x * 2^k` (as `x << k`, the form a strength reduction writes) are exact
//! without a circuit. The "no overflow" flag of `int_mul_ovf` is an
//! uninterpreted predicate of the same operands. Cheap facts that hold in the full
//! semantics are assumed with them (multiplication by 0, 1 and -1, division of 0, division by
//! 1 and -1, no overflow when multiplying by 0 or 1).
//!
//! Each claim is first checked on a slice of the path condition: the facts that share a
//! symbol (an input, an op result Z3 does not interpret, an escaped object's address) with
//! the claim, transitively, except through symbols in many facts (escaped addresses, stated
//! apart from every reference, would join everything), with a short time limit. A proof from
//! some facts is a proof from all of them; a long trace's path condition holds hundreds of
//! facts the claim does not involve, which can cost Z3 seconds. Otherwise the claim is
//! checked with this abstraction and the whole path condition. A proof there is a proof for every
//! meaning of the function symbols, hence for the real one. When the abstract query fails,
//! the claim is checked with the applications that have a constant operand given their
//! bit-vector semantics (the others still uninterpreted; the same argument), and then with
//! the full bit-vector semantics (every application replaced by its remembered concrete
//! meaning, by substitution); that verdict is the result, and its model is a real
//! counterexample (values printed in a counterexample are evaluated in their concrete
//! meaning). A step whose query would be the same as the previous one's is skipped.
//! [`validate_with_stats`] reports how many queries of each kind ran.
//!
//! **Values proven equal are reused.** When a sync point compares a value of the original
//! with one of the optimized trace (a fail argument, a field of a virtual object, a call
//! argument) and they are different terms, the validator asks (abstract query, short time
//! limit, after a guard's exit comparison, under the path condition without the guard's
//! failure) whether the path condition proves them equal; when it does, the original's ops
//! with that value take the optimized trace's term. Sound: the path condition only grows
//! along the walk, so every later query assumes the equality, and replacing a term by one the
//! facts prove equal keeps a query equisatisfiable. Later values computed from them are then
//! the same terms on both sides. A value the optimized trace already computes as the same
//! term is left alone. Heap comparisons read through the stores into the original's escaped
//! objects whose addresses the path condition states apart from the index.
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
//! - Z3 times out on some removed `guard_no_overflow`s whose proof needs the full semantics
//!   (bounds reasoning through a 64-bit product): about 1% of random 15-20-op traces end
//!   `Unknown` with a 1 s limit.
//! - Long PyPy traces (hundreds of heap writes to frames) make queries slow where a claim's
//!   slice does not prove it: each of a few hundred claims then asserts the whole path
//!   condition again in a fresh solver.
//! - Escaped objects are matched by the order in which objects of one shape escape, or by
//!   role where sync points present them; two objects of the same shape that escape in the
//!   opposite order and are compared only through contents of objects not paired, or through
//!   heap words that may hold several objects not yet paired, still get a spurious
//!   difference.
//! - Under byte views, strings' characters and hashes keep their own arrays (string ops take
//!   no descriptor), and the class word of an instance is not in the byte memory: a field
//!   view at offset 0 of a fresh instance reads zero, not its class.
//! - Counterexample values are named by op position (`i4` is op 4), as `print_trace` names
//!   them, not by the names of a hand-written input file.
//!
//! # Where the code is
//!
//! - `validator`: the validator's state (both sides, the path condition, the abstraction,
//!   the statistics) and the walk over both traces from sync point to sync point;
//! - `sync`: the sync points of a trace and what is proven at each (guards and their exits,
//!   calls, labels, the final op);
//! - `carried`: loop body label parameters that carry loaded values or pure results,
//!   proven where the label is reached and assumed past it;
//! - `carried_objects`: objects a loop body label takes field by field;
//! - `guards`: guard conditions, the constants guards pin, guard results, and the objects of
//!   resume data;
//! - `translate`: the ops between sync points, one file per op family (values, allocations,
//!   fields, arrays and strings, calls and hints);
//! - `side`: one side's values and the objects it tracks;
//! - `heap`: a side's memories (SMT arrays by key), reads and writes of places, epochs;
//! - `memory`: places, the byte memories and reads through their stores;
//! - `layout`: the bytes of the descriptors, and which of them share the byte memory;
//! - `escape`: escape of tracked objects (their addresses, the facts about them, their
//!   contents in the heap);
//! - `align`: which sync point of the optimized trace each sync point of the original is;
//! - `naming`: naming escaped objects across the two traces, and pairing them by role;
//! - `compare`: values, objects and heaps compared at a sync point;
//! - `equalities`: values proven equal on both sides, reused by later claims;
//! - `abstraction`: multiplication and division as uninterpreted functions;
//! - `query`: solver calls, abstraction refinement, batches of claims, counterexamples;
//! - `slice`: proving a claim from the facts that share its symbols;
//! - `terms`: small Z3 term builders.
//!
//! The memory and value model the validator follows is `docs/memory-model.md`.
//!
//! [`GuardId`]: trace_ir::GuardId
//! [`Aliasing`]: trace_ir::Aliasing
//! [`Aliasing::Bytes`]: trace_ir::Aliasing::Bytes
//! [`Aliasing::TypeBased`]: trace_ir::Aliasing::TypeBased

mod abstraction;
mod align;
mod carried;
mod carried_objects;
mod compare;
mod equalities;
mod escape;
mod exit_writes;
mod guards;
mod heap;
mod layout;
mod memory;
mod naming;
mod query;
mod side;
mod slice;
mod sync;
mod terms;
mod translate;
mod validator;

use std::collections::BTreeSet;
use std::fmt;

use trace_ir::Trace;

use naming::Naming;
use validator::Validator;

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
    /// Loop bodies the optimized trace may enter where the original jumps to the loop's
    /// header ([`optimizer::Optimizer::optimize_bridge`]): such a final `jump` is valid when
    /// its operands are proven equal to the original's and to satisfy every fact the body
    /// assumes. A `jump` to any other label than the original's is invalid.
    pub body_entries: Vec<trace_ir::BodyEntry>,
    /// What the optimizer states about the exit words of the optimized trace's guards
    /// ([`optimizer::Optimized::guard_facts`]): each fact is proven to hold whenever its
    /// guard fails (checked with the fail arguments). Empty: nothing to prove.
    pub guard_facts: Vec<trace_ir::GuardFacts>,
    /// The parameters of the optimized trace's loop body labels that carry loaded values
    /// ([`optimizer::Optimized::carried`]): each is proven to hold what its field or item
    /// holds whenever the label is reached (from before the loop and from the back edge).
    pub carried: Vec<trace_ir::CarriedLoad>,
    /// The objects the optimized trace's loop body label takes field by field
    /// ([`optimizer::Optimized::carried_virtuals`]): each is proven, wherever the label is
    /// reached, to be an object the original allocated that nothing else refers to, with
    /// those fields.
    pub carried_virtuals: Vec<trace_ir::CarriedVirtual>,
    /// The results of pure ops the optimized trace's loop body label carries
    /// ([`optimizer::Optimized::carried_pure`]): each is proven, wherever the label is
    /// reached, to be its op on the label's input operands, defined there.
    pub carried_pure: Vec<trace_ir::CarriedPure>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            timeout_ms: 2000,
            check_fail_args: true,
            check_heap: true,
            abstract_heavy_ops: true,
            body_entries: Vec::new(),
            guard_facts: Vec::new(),
            carried: Vec::new(),
            carried_virtuals: Vec::new(),
            carried_pure: Vec::new(),
        }
    }
}

impl Config {
    /// The default configuration with what the optimizer states about its output `out`
    /// (its guard facts, carried loads and objects), for validating `out.trace` against the
    /// trace it was made from.
    pub fn for_optimized(out: &optimizer::Optimized) -> Config {
        Config::default().stating(out)
    }

    /// This configuration with what the optimizer states about its output `out` (its guard
    /// facts, and what its loop body label carries) in place of what it held.
    pub fn stating(self, out: &optimizer::Optimized) -> Config {
        Config {
            guard_facts: out.guard_facts.clone(),
            carried: out.carried.clone(),
            carried_virtuals: out.carried_virtuals.clone(),
            carried_pure: out.carried_pure.clone(),
            ..self
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

/// Inputs on which the original and the optimized trace differ: the inputs, then the values
/// of the traces' integer operations under those inputs.
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
    /// Values of the original proven equal to the optimized trace's and replaced by its term.
    pub learned: usize,
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
        self.learned += other.learned;
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
    // What escaped in the runs so far: a run that stops early (undecided, or a difference
    // found) sees only the objects that escaped before that point, so a later naming is
    // skipped only when no run saw anything it could match differently.
    let mut shapes = BTreeSet::new();
    for naming in [Naming::ShapeAndLength, Naming::Shape, Naming::Order, Naming::Role] {
        if first.is_some() && !naming.differs(&shapes) {
            continue;
        }
        // A difference found under one alignment of the sync points may be the alignment's
        // (which conditional call is the one that calls is not known before Z3 says): the
        // next alignments are tried, and the first verdict stands unless one proves more.
        let mut alignment = 0;
        let mut earlier: Option<Verdict> = None;
        let verdict = loop {
            let mut v = Validator::new(original, optimized, cfg);
            v.o.naming = naming;
            v.p.naming = naming;
            v.alignment = alignment;
            let verdict = match v.run() {
                Ok(()) => match v.unknown.take() {
                    None => Verdict::Valid,
                    Some(reason) => Verdict::Unknown { reason },
                },
                Err(Stop::Invalid(c)) if v.pairing_undecided => Verdict::Unknown {
                    reason: format!(
                        "{} (after a pairing of fresh objects by role that Z3 could not decide)",
                        c.message
                    ),
                },
                Err(Stop::Invalid(c)) => Verdict::Invalid { counterexample: c },
                Err(Stop::Unknown(reason)) => Verdict::Unknown { reason },
            };
            stats.add(&v.stats);
            if witness.is_none() {
                *witness = v.float_witness.take();
            }
            shapes.extend(v.o.esc_shapes.iter().chain(&v.p.esc_shapes).cloned());
            if v.alignment_missing {
                break earlier.expect("an alignment before the missing one");
            }
            if verdict.is_invalid() && v.aligned_by_search && alignment < MORE_ALIGNMENTS {
                earlier.get_or_insert(verdict);
                alignment += 1;
                continue;
            }
            break match (earlier, verdict) {
                (Some(Verdict::Invalid { counterexample }), Verdict::Unknown { reason }) => Verdict::Unknown {
                    reason: format!(
                        "{reason} (under another alignment of the sync points; under the first: {})",
                        counterexample.message
                    ),
                },
                (Some(first), v) if !v.is_valid() => first,
                (_, v) => v,
            };
        };
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

/// How many alignments of the sync points after the first are tried when the first gives
/// `Invalid`.
const MORE_ALIGNMENTS: usize = 3;

enum Stop {
    Invalid(Counterexample),
    Unknown(String),
}

type R<T> = Result<T, Stop>;

fn unsupported<T>(what: impl Into<String>) -> R<T> {
    Err(Stop::Unknown(what.into()))
}
