//! The single forward pass, one module per concern: [`values`] (the working values),
//! [`pure`] (folding, bounds, rules, CSE), [`guards`] (guards and what they teach),
//! [`overflow`] (`_ovf` ops), [`loops`] (labels and the facts a peeled loop's header
//! assumes), [`carry`] and [`virtual_state`] (what a peeled loop's body label carries), [`calls`], [`virtuals`] (allocation removal), [`memory`] (the heap cache and
//! delayed writes), [`output`] (the final sweep) and [`explain`] (the per-op account of
//! [`crate::Options::explain`]). Each owns its part of the state
//! ([`Pass`] holds one sub-struct per concern); [`Optimizer`] keeps the reusable tables
//! between traces.
//!
//! # Working values
//!
//! The pass builds its output in an *arena* of ops plus an *emission order* (`Values::ops`,
//! `Values::order`): an op created for a virtual allocation lives in the arena from the
//! moment the input allocates it but enters the order only when (and if) it is materialized.
//! Operands in the arena are working values: arena ops or constants of the output pool (a
//! copy of the input pool, so input constants keep their `ConstRef`). Every input op maps to
//! a working value (`Values::map`); a union-find over arena ops (`Values::uf`) records later
//! equalities (`guard_value(x, 5)` makes `x` the constant 5 from there on), read only through
//! `find`. The final step sweeps dead pure ops backwards and renumbers the order into a fresh
//! [`Trace`].
//!
//! # Per op (the recorder expands, this pass only shrinks)
//!
//! 1. operands replaced by their representatives; constant folding through `trace_ir::eval`
//!    (an op whose evaluation is invalid is kept);
//! 2. the abstract value (`IntBound`) of every integer op; a singleton becomes a constant;
//!    `int_and`/`int_or` identities by known bits;
//! 3. the peephole rules ([`crate::peephole`]);
//! 4. CSE of pure ops (commutative operands normalized), elidable and loop-invariant calls,
//!    immutable reads;
//! 5. guards: dropped when known to hold, otherwise emitted and learnt from (comparisons
//!    narrow both operands by the domain's backward functions; `guard_value` forwards the
//!    value to the constant; class and nullness are remembered);
//! 6. `_ovf` ops that cannot overflow become plain ops and lose their `guard_no_overflow`;
//!    after a passed `guard_no_overflow` the result's exact range is known, and it is
//!    propagated backwards to the operands only through the `_ovf` backward functions (never
//!    through wrapping `int_add`/`int_mul` results as if they could not wrap: one of PyPy's
//!    known integer-bounds miscompilations);
//! 7. allocation removal (virtual objects, materialized at escapes, described in resume data);
//! 8. the heap cache ([`crate::heap`]); writes to non-virtual objects are delayed until
//!    something could observe them (a read of a location that may share a byte with them
//!    under the trace's memory model, [`crate::alias`]; a guard, a call or any other op with
//!    effects; the end of the trace), so a write overwritten before that is never emitted
//!    (`Reason::DeadStore`);
//! 9. a final backward sweep removing unused pure ops and heap reads.
//!
//! Hints that do nothing when executed are dropped: `quasiimmut_field` (its
//! `guard_not_invalidated` stays, repeated ones go until the next call), `assert_not_none`
//! (after recording what it promises), `same_as_*`. A `virtual_ref` is a virtual object of
//! its own (`trace_ir::abi::VirtualRefLayout`: a `force_token` and a null `forced`) and
//! `virtual_ref_finish` writes its fields, so the object a reference stands for stays
//! virtual when only the reference escapes. `record_exact_class` is a promise too (`docs/memory-model.md`):
//! what it states is recorded, and it is dropped once the class was known already (the first
//! statement of an object's class stays: it decides the class of an external object for the
//! interpreter, and emits no code).
//!
//! # What the pass deliberately does not do
//!
//! - learn backwards through wrapping `int_mul`/`int_lshift` results, or through `_ovf` ops
//!   whose overflow guard did not pass (PyPy's known integer-bounds miscompilations);
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
//! valid (they do not change between iterations). A peeled loop's body label is the
//! exception: it carries loads ([`carry`]) and takes a virtual struct that nothing else
//! refers to field by field ([`virtual_state`]), so the body keeps it virtual.

mod calls;
mod carry;
mod entry;
mod explain;
mod guards;
mod invariant;
mod loops;
mod memory;
mod output;
mod overflow;
mod precheck;
mod pure;
mod strings;
#[cfg(test)]
mod tests;
mod values;
mod virtual_state;
mod virtuals;

use crate::domain::{IntBound, KnownBits};
use crate::{OptError, Optimized, Options, Reason, Stats};
use carry::Carry;
use guards::{Effects, Resume};
use loops::{Header, HeaderFacts};
use memory::Memory;
use output::Sweep;
use pure::{map_args, Cse};
use trace_ir::abi::VirtualRefLayout;
use trace_ir::{Op, OpRef, Opcode, Trace};
use values::Values;
use virtuals::Virtual;

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
/// Most stores of virtual objects kept delayed past a guard (each guard's resume data holds
/// them all, so more would make the pass quadratic in the trace's length): the oldest beyond
/// it are done before the guard.
const MAX_EXIT_WRITES: usize = 16;
/// Nesting limit of `RuleEnv::emit` and of backward propagation.
const MAX_DEPTH: u32 = 6;

/// The tables of one pass that are worth keeping from trace to trace: cleared, not
/// reallocated (STYLE.md #15). On a loaded machine, freeing and re-faulting these pages cost
/// more than a fifth of the pass's time.
#[derive(Default)]
pub(crate) struct Tables {
    v: Values,
    cse: Cse,
    mem: Memory,
    virtuals: Vec<Virtual>,
    last_use: Vec<u32>,
    resume: Resume,
    sweep: Sweep,
    kept: Snapshot,
    /// What the body label of a peeled loop carries (set by [`run`], reported back to it).
    carry: Carry,
}

/// Tables of traces up to this many ops are kept for the next run (larger ones are freed).
const KEEP_TABLES_OPS: usize = 1 << 16;

/// A reusable optimizer: it keeps its working tables between traces (cleared, not
/// reallocated), so an embedder that optimizes many traces makes one and calls
/// [`Optimizer::optimize`] for each. [`crate::optimize`] is the one-call convenience.
///
/// ```
/// use trace_ir::{TraceBuilder, Kind, Opcode};
/// let mut opt = optimizer::Optimizer::new();
/// for k in 0..3 {
///     let mut b = TraceBuilder::new();
///     let x = b.input(Kind::Int);
///     let c = b.const_int(k);
///     let y = b.op(Opcode::IntAdd, &[x, c]);
///     b.finish(&[y]);
///     let out = opt.optimize(&b.build().unwrap(), &optimizer::Options::default()).unwrap();
///     assert_eq!(out.trace.num_real_ops(), if k == 0 { 1 } else { 2 });
/// }
/// ```
#[derive(Default)]
pub struct Optimizer {
    tables: Option<Box<Tables>>,
    /// What the body label of a peeled loop carries, from run to run of one trace.
    carry: Carry,
}

impl std::fmt::Debug for Optimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Optimizer")
            .field("keeps_tables", &self.tables.is_some())
            .finish()
    }
}

impl Optimizer {
    /// An optimizer with empty tables.
    pub fn new() -> Optimizer {
        Optimizer::default()
    }

    /// Optimize `trace` with the parts enabled in `opts` (see [`crate::optimize`]).
    pub fn optimize(&mut self, trace: &Trace, opts: &Options) -> Result<Optimized, OptError> {
        run(self, trace, opts, &[])
    }

    /// Optimize a bridge (or any trace that ends by jumping to another trace's loop):
    /// like [`Optimizer::optimize`], and a final `jump` to the header of a loop in
    /// `entries` ([`Optimized::body_entries`] of the loops it may enter) goes to that loop's
    /// body instead when the optimizer proves its operands satisfy what the body assumes,
    /// skipping the loop's preamble. The facts the bridge starts from are the hints
    /// [`trace_ir::bridge_prologue`] put at its start.
    pub fn optimize_bridge(
        &mut self,
        trace: &Trace,
        opts: &Options,
        entries: &[trace_ir::BodyEntry],
    ) -> Result<Optimized, OptError> {
        run(self, trace, opts, entries)
    }

    fn take_tables(&mut self) -> Box<Tables> {
        let mut t = self.tables.take().unwrap_or_default();
        t.carry = std::mem::take(&mut self.carry);
        t
    }

    /// Exclude the places the last run reported from the runs that follow; whether there
    /// were any.
    fn exclude_failed(&mut self) -> bool {
        let failed = std::mem::take(&mut self.carry.failed);
        let failed_virtuals = std::mem::take(&mut self.carry.failed_virtuals);
        let any = !failed.is_empty() || !failed_virtuals.is_empty();
        self.carry.excluded.extend(failed);
        self.carry.excluded_virtuals.extend(failed_virtuals);
        any
    }

    /// Carry values through the body label at input op `label` (`None`: carry nothing),
    /// excluding nothing yet.
    fn carry_from(&mut self, label: Option<usize>) {
        self.carry.label = label;
        self.carry.excluded.clear();
        self.carry.excluded_virtuals.clear();
        self.carry.reset();
    }

    /// Keep `tables` for the next trace unless a trace of `ops` ops made them large.
    fn give_back(&mut self, mut tables: Box<Tables>, ops: usize) {
        self.carry = std::mem::take(&mut tables.carry);
        if ops <= KEEP_TABLES_OPS {
            self.tables = Some(tables);
        }
    }
}

/// The state of one run of the pass, grouped by the concern that owns it.
pub(crate) struct Pass<'a> {
    input: &'a Trace,
    /// Descriptors the pass uses beyond the input's table, numbered after it (those of
    /// [`VirtualRefLayout`] the input lacks); the output's table ends with them.
    extra_descrs: Vec<trace_ir::Descr>,
    /// The descriptors of a virtual reference (size, token, forced), when the input makes or
    /// finishes one.
    vref: Option<[trace_ir::DescrRef; 3]>,
    opts: &'a Options,
    /// The working values ([`values`]).
    v: Values,
    /// Common-subexpression elimination ([`pure`]).
    cse: Cse,
    /// The heap cache and delayed writes ([`memory`]).
    mem: Memory,
    /// Virtual objects, by id ([`virtuals`]).
    virtuals: Vec<Virtual>,
    /// Resume data of emitted guards ([`guards`]).
    resume: Resume,
    /// What passed guards established about exceptions and invalidation ([`guards`]).
    effects: Effects,
    /// The loop header's facts and liveness ([`loops`]).
    header: Header<'a>,
    /// Statistics.
    counts: Counts,
    /// The tables of the final sweep ([`output`]).
    sweep: Sweep,
    /// Nesting depth of `RuleEnv::emit` and of backward propagation.
    depth: u32,
    /// Loop bodies a final `jump` may enter instead of their header ([`loops`]).
    entries: &'a [trace_ir::BodyEntry],
    /// The emitted final `jump` that enters a loop body, and the body's token.
    retarget: Option<(OpRef, u64)>,
    /// The input op being processed (whose turn pushes arena ops; [`explain`]).
    cur: usize,
    /// The per-op account, with [`Options::explain`] ([`explain`]).
    explain: Option<Box<explain::Explain>>,
    /// The state kept for a second run over the same input ([`Start`]).
    kept: Snapshot,
    /// The values the body label of a peeled loop carries ([`carry`]).
    carry: Carry,
}

/// What the pass removed and why (moved into [`Stats`] at the end).
#[derive(Clone, Default)]
struct Counts {
    stats: Stats,
    /// Removed input ops by [`Reason`].
    removed: [usize; Reason::ALL.len()],
    /// Ops emitted as part of another input op's object, not for an input op of their own
    /// (the `force_token` of a virtual reference): when dropped they count as nothing, and
    /// the explanation gives their input op its object's fate.
    attached: Vec<OpRef>,
    /// Whether a loop body depends on the peeled iteration beyond what its label carries
    /// ([`Cse::preamble`], [`invariant`]).
    uses_preamble: bool,
}

/// Run the pass (see the module documentation).
pub(crate) fn run(
    ctx: &mut Optimizer,
    input: &Trace,
    opts: &Options,
    entries: &[trace_ir::BodyEntry],
) -> Result<Optimized, OptError> {
    if cfg!(debug_assertions) {
        trace_ir::verify(input).map_err(OptError::BadInput)?;
    } else {
        precheck::precheck(input)?;
    }
    let Some(peeled) = opts.peel.then(|| trace_ir::peel_loop(input)).flatten() else {
        ctx.carry_from(None);
        return run_once(ctx, input, opts, &HeaderFacts::default(), entries, Start::Keep(None));
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
    //
    // Both runs are the same up to the loop header (the assumptions apply from there on), so
    // the first keeps its state at the header and the second resumes from it.
    let header = trace_ir::invariant_params(&peeled).map(|(h, _)| h.index());
    let arity = header.map(|h| peeled.ops[h].args.len()).unwrap_or(0);
    ctx.carry_from(header);
    // The first run also finds what the body label cannot carry; its output stands only if it
    // carried nothing that failed (otherwise a run without those places replaces it), but
    // its loop shape is what the second run's assumptions are read from either way.
    let first = run_once(
        ctx,
        &peeled,
        opts,
        &HeaderFacts::default(),
        entries,
        Start::Keep(header),
    )?;
    let first_failed = ctx.exclude_failed();
    let facts = HeaderFacts::of(&first.trace).truncated(arity);
    let plain = |ctx: &mut Optimizer| -> Result<Optimized, OptError> {
        if first_failed {
            run_carrying(ctx, &peeled, opts, &HeaderFacts::default(), entries)
        } else {
            Ok(first)
        }
    };
    if facts.is_empty() {
        return plain(ctx);
    }
    let second = run_carrying(ctx, &peeled, opts, &facts, entries)?;
    if facts.hold_in(&HeaderFacts::of(&second.trace).truncated(arity)) {
        Ok(second)
    } else {
        plain(ctx)
    }
}

/// Runs over a peeled loop, each resuming from the state the first kept at the loop header,
/// until its body label carries only what the final jump knows and the body reads
/// ([`carry`]): each run drops the places the one before reported; after
/// [`MAX_CARRY_RUNS`] runs the label carries nothing.
fn run_carrying(
    ctx: &mut Optimizer,
    input: &Trace,
    opts: &Options,
    facts: &HeaderFacts,
    entries: &[trace_ir::BodyEntry],
) -> Result<Optimized, OptError> {
    // The first run takes the kept state (most loops need no other); one after it starts
    // over and keeps the state again, the runs after that resume from it.
    let header = ctx.carry.label;
    let mut start = Start::Resume;
    for _ in 0..MAX_CARRY_RUNS {
        let out = run_once(ctx, input, opts, facts, entries, start)?;
        if !ctx.exclude_failed() {
            return Ok(out);
        }
        start = match start {
            Start::Resume => Start::Keep(header),
            _ => Start::ResumeKeep,
        };
    }
    let label = ctx.carry.label.take();
    let out = run_once(ctx, input, opts, facts, entries, Start::Resume);
    ctx.carry.label = label;
    out
}

/// Runs of the pass over a peeled loop to settle what its body label carries.
const MAX_CARRY_RUNS: usize = 4;

/// Where a run of the pass starts.
#[derive(Clone, Copy)]
enum Start {
    /// At the start of the trace, keeping the state reached at this input op (if any) in
    /// the optimizer's tables.
    Keep(Option<usize>),
    /// From the state the run just before kept, over the same input with the same options
    /// (from the start when it kept none), keeping that state again for another run.
    ResumeKeep,
    /// From the state the run just before kept (from the start when it kept none), keeping
    /// nothing: the kept state is used up.
    Resume,
}

/// The state of the pass before an input op: everything a run changes, so that a second run
/// over the same input can resume there instead of repeating the ops before it. Kept with
/// the optimizer's tables, so its allocations serve trace after trace.
#[derive(Default)]
struct Snapshot {
    /// The input op; `None`: nothing kept.
    at: Option<usize>,
    v: Values,
    cse: Cse,
    mem: Memory,
    virtuals: Vec<Virtual>,
    resume: Resume,
    effects: Effects,
    label_facts: Vec<(OpRef, Vec<trace_ir::WordFacts>)>,
    counts: Counts,
    depth: u32,
    retarget: Option<(OpRef, u64)>,
    explain: Option<Box<explain::Explain>>,
}

/// One pass over `input` with `ctx`'s tables, assuming `facts` about the parameters of the
/// loop header (the label the final jump goes back to), from `start`.
fn run_once(
    ctx: &mut Optimizer,
    input: &Trace,
    opts: &Options,
    facts: &HeaderFacts,
    entries: &[trace_ir::BodyEntry],
    start: Start,
) -> Result<Optimized, OptError> {
    let mut p = Pass::new(input, opts, ctx.take_tables(), entries);
    if !facts.is_empty() {
        p.header.facts = trace_ir::invariant_params(input).map(|(header, _)| (header.index(), facts));
    }
    p.run(start)?;
    let (out, tables) = p.finish()?;
    ctx.give_back(tables, input.ops.len());
    Ok(out)
}

impl<'a> Pass<'a> {
    /// A pass over `input` with `tables` (cleared for it).
    fn new(input: &'a Trace, opts: &'a Options, tables: Box<Tables>, entries: &'a [trace_ir::BodyEntry]) -> Pass<'a> {
        let n = input.ops.len();
        let Tables {
            mut v,
            mut cse,
            mut mem,
            mut virtuals,
            last_use,
            mut resume,
            sweep,
            kept,
            carry,
        } = *tables;
        // A virtual reference becomes a virtual object of the layout's descriptors.
        let (vref, mut extra_descrs) = if opts.virtuals && VirtualRefLayout::used_by(input) {
            let (refs, extra) = VirtualRefLayout::locate(input);
            (Some(refs), extra)
        } else {
            (None, Vec::new())
        };
        // And those of what the loop bodies a final jump may enter carry.
        for d in entries.iter().flat_map(|e| &e.descrs) {
            if !input.descrs.contains(d) && !extra_descrs.contains(d) {
                extra_descrs.push(d.clone());
            }
        }
        v.reset(n, &input.consts);
        cse.reset(n);
        mem.reset(input, &extra_descrs);
        virtuals.clear();
        resume.guards = Vec::with_capacity(input.guards.len());
        resume.memo.clear();
        resume.work.clear();
        resume.exit_subst = None;
        resume.facts = Vec::with_capacity(input.guards.len());
        resume.fields = Vec::with_capacity(input.guards.len());
        Pass {
            input,
            extra_descrs,
            vref,
            opts,
            v,
            cse,
            mem,
            virtuals,
            resume,
            effects: Effects::default(),
            header: Header {
                facts: None,
                last_use,
                label_facts: Vec::new(),
            },
            counts: Counts {
                stats: Stats {
                    ops_in: input.num_real_ops(),
                    ..Default::default()
                },
                removed: [0; Reason::ALL.len()],
                attached: Vec::new(),
                uses_preamble: false,
            },
            sweep,
            depth: 0,
            entries,
            retarget: None,
            cur: 0,
            explain: opts.explain.then(|| Box::new(explain::Explain::new(n))),
            kept,
            carry,
        }
    }

    /// Descriptor `d` of the input's table or of [`Pass::extra_descrs`].
    fn descr(&self, d: trace_ir::DescrRef) -> &trace_ir::Descr {
        let n = self.input.descrs.len();
        match d.index().checked_sub(n) {
            Some(k) => &self.extra_descrs[k],
            None => self.input.descr(d),
        }
    }

    fn run(&mut self, start: Start) -> Result<(), OptError> {
        let t = self.input;
        if t.ops.iter().any(|o| o.opcode == Opcode::Label) {
            self.compute_last_use();
        }
        let (resume_at, keep_at) = match start {
            Start::ResumeKeep => (self.kept.at, self.kept.at),
            Start::Resume => (self.kept.at, None),
            Start::Keep(at) => (None, at),
        };
        self.kept.at = None;
        let mut i = match resume_at {
            Some(at) => {
                self.restore();
                at
            }
            None => {
                for i in 0..t.num_inputs {
                    self.cur = i;
                    let v = self.emit(Op::new(t.ops[i].opcode, &[]));
                    self.v.map[i] = v;
                }
                t.num_inputs
            }
        };
        while i < t.ops.len() {
            if keep_at == Some(i) {
                self.keep(i);
            }
            let op = &t.ops[i];
            self.cur = i;
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

    /// Keep the state before input op `at` (in `self.kept`).
    fn keep(&mut self, at: usize) {
        let k = &mut self.kept;
        k.at = Some(at);
        k.v.clone_from(&self.v);
        k.cse.clone_from(&self.cse);
        k.mem.clone_from(&self.mem);
        k.virtuals.clone_from(&self.virtuals);
        k.resume.clone_from(&self.resume);
        k.effects.clone_from(&self.effects);
        k.label_facts.clone_from(&self.header.label_facts);
        k.counts.clone_from(&self.counts);
        k.depth = self.depth;
        k.retarget = self.retarget;
        k.explain.clone_from(&self.explain);
    }

    /// Continue from the state kept by the run before (over the same input): swapped in,
    /// so the kept tables take this run's fresh ones (and their allocations) in exchange.
    fn restore(&mut self) {
        use std::mem::swap;
        let k = &mut self.kept;
        swap(&mut self.v, &mut k.v);
        swap(&mut self.cse, &mut k.cse);
        swap(&mut self.mem, &mut k.mem);
        swap(&mut self.virtuals, &mut k.virtuals);
        swap(&mut self.resume.guards, &mut k.resume.guards);
        swap(&mut self.resume.facts, &mut k.resume.facts);
        swap(&mut self.resume.fields, &mut k.resume.fields);
        self.resume.exit_subst = k.resume.exit_subst;
        swap(&mut self.effects, &mut k.effects);
        swap(&mut self.header.label_facts, &mut k.label_facts);
        swap(&mut self.counts, &mut k.counts);
        self.depth = k.depth;
        self.retarget = k.retarget;
        swap(&mut self.explain, &mut k.explain);
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
                Opcode::Newstr
                | Opcode::Newunicode
                | Opcode::Strlen
                | Opcode::Unicodelen
                | Opcode::Strgetitem
                | Opcode::Unicodegetitem
                | Opcode::Strsetitem
                | Opcode::Unicodesetitem
                | Opcode::Copystrcontent
                | Opcode::Copyunicodecontent
                    if self.opts.virtuals =>
                {
                    self.string_op(op, &args)
                }
                Opcode::Jump | Opcode::Finish => {
                    self.flush_writes();
                    let mut args = args;
                    // (A loop carrying values through its own body label jumps there.)
                    let body = match opc {
                        Opcode::Jump if !self.carries() => self.enter_body(op, &mut args),
                        _ => None,
                    };
                    if body.is_none() {
                        let fields = self.virtual_state_at_jump(i, &mut args);
                        let carried = self.carry_jump_operands(i, &args);
                        args.extend(carried);
                        args.extend(fields);
                    }
                    let jump = self.emit(Op {
                        opcode: opc,
                        descr: op.descr,
                        guard: None,
                        args,
                    });
                    self.retarget = body.map(|b| (jump.as_op().expect("an emitted op"), b));
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
                // A virtual `JitVirtualRef`: the object it stands for stays virtual while the
                // reference escapes.
                Opcode::VirtualRef if self.opts.virtuals => Some(self.virtual_ref()),
                // The token of the running frame: it observes no memory.
                Opcode::ForceToken => Some(self.force_token(false)),
                Opcode::VirtualRefFinish if self.opts.virtuals => self.virtual_ref_finish(op, &args),
                // Promises about an integer: what they state is known from here on.
                Opcode::RecordIntRange | Opcode::RecordIntBits if self.opts.intbounds => {
                    if let (Some(a), Some(b)) = (self.const_i64(args[1]), self.const_i64(args[2])) {
                        let bound = if opc == Opcode::RecordIntRange {
                            IntBound::from_range_i64(a, b)
                        } else {
                            let (mask, bits) = (a as u64, b as u64);
                            IntBound::from_knownbits(KnownBits::new(bits & mask, !mask))
                        };
                        self.narrow(args[0], bound, 0);
                    }
                    self.removed(Reason::Hint);
                    None
                }
                // A promise: the value is that constant from here on.
                Opcode::RecordExactValueR | Opcode::RecordExactValueI if self.opts.guards && args[1].is_const() => {
                    self.make_equal(args[0], args[1]);
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
                    match (args[0].as_op(), c) {
                        (Some(o), Some(c)) => {
                            self.v.info[o.index()].class = Some(c);
                            self.v.info[o.index()].flags |= F_NONNULL;
                        }
                        (None, Some(c)) => {
                            self.v.const_classes.insert(args[0], c);
                        }
                        _ => {}
                    }
                    self.emit(Op {
                        opcode: opc,
                        descr: op.descr,
                        guard: None,
                        args,
                    });
                    None
                }
                Opcode::RecordKnownResult if self.opts.cse => self.record_known_result(op, &args),
                Opcode::RecordKnownField => {
                    self.record_known_field(op, &args);
                    None
                }
                Opcode::CondCallN | Opcode::CondCallValueI | Opcode::CondCallValueR => self.cond_call(op, &args),
                _ if opc.is_call() => self.call(op, &args),
                _ => self.generic(op, &args),
            }
        };
        if let Some(v) = res {
            self.v.map[i] = v;
        }
        Ok(())
    }
}
