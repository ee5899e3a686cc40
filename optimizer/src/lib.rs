//! tracejit's single-pass trace optimizer: abstract integer domains, peephole rules, CSE,
//! guard and overflow elimination, allocation removal and a heap cache.
//!
//! Entry point: [`optimize`]. It never mutates its input; it builds a new trace in one forward
//! pass (see the `pass` module documentation for the order of the steps per op), followed by
//! a backward sweep that drops unused pure ops. [`Options`] switches each part off (for
//! benchmarks and bisecting a miscompilation); [`Stats`] says what was removed and why, and
//! with [`Options::explain`] an [`Explanation`] says it per op.
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! let mut b = TraceBuilder::new();
//! let x = b.input(Kind::Int);
//! let zero = b.const_int(0);
//! let y = b.op(Opcode::IntAdd, &[x, zero]);
//! b.finish(&[y]);
//! let trace = b.build().unwrap();
//! let out = optimizer::optimize(&trace, &optimizer::Options::default()).unwrap();
//! assert_eq!(out.trace.num_real_ops(), 1); // just the finish
//! ```
#![deny(missing_docs)]

mod alias;
pub mod divconst;
pub mod domain;
mod fold;
mod heap;
pub mod ifconv;
mod pass;
pub mod peephole;

use std::collections::BTreeMap;
use std::fmt;
use trace_ir::{OpRef, Trace, VerifyError};

pub use pass::Optimizer;

/// `Options` from one table: the parts (on by default, each switched off by `--no-<part>` on
/// the command line) and the other switches with their defaults.
macro_rules! options {
    (
        parts { $( $(#[doc = $pdoc:literal])* $part:ident, )* }
        switches { $( $(#[doc = $sdoc:literal])* $switch:ident = $default:literal, )* }
    ) => {
        /// Which parts of the optimizer run. `Options::default()` enables every part;
        /// [`Options::none`] disables everything (the output is then a copy of the input, minus
        /// nothing). Each part only turns off the *removal* it names; the pass stays correct
        /// with any combination.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct Options {
            $( $(#[doc = $pdoc])* pub $part: bool, )*
            $( $(#[doc = $sdoc])* pub $switch: bool, )*
        }

        impl Default for Options {
            fn default() -> Self {
                Options { $( $part: true, )* $( $switch: $default, )* }
            }
        }

        impl Options {
            /// Everything off.
            pub fn none() -> Options {
                Options { $( $part: false, )* $( $switch: false, )* }
            }
            /// The part names, as used by `--no-<part>` on the command line.
            pub const PARTS: &'static [&'static str] = &[ $( stringify!($part), )* ];
            /// Switch the part called `name` (one of [`Options::PARTS`]); `false` if there is
            /// no such part.
            pub fn set(&mut self, name: &str, on: bool) -> bool {
                match name {
                    $( stringify!($part) => self.$part = on, )*
                    _ => return false,
                }
                true
            }
        }
    };
}

options! {
    parts {
        /// Constant folding through `trace_ir::eval` (all operands constant).
        fold,
        /// Abstract integer values (`IntBound`): constants from bounds, `and`/`or`
        /// identities, learning from guards, overflow removal by bounds.
        intbounds,
        /// The peephole rules (`peephole::apply`).
        rules,
        /// Common-subexpression elimination of pure ops, elidable and loop-invariant calls,
        /// immutable reads.
        cse,
        /// Removal of guards whose condition is known (and remembering what guards
        /// establish).
        guards,
        /// Turning `_ovf` ops that cannot overflow into plain ops (and dropping their guard).
        ovf,
        /// Allocation removal (virtual objects).
        virtuals,
        /// The heap cache for non-virtual objects.
        heapcache,
        /// The final sweep that drops unused pure ops.
        dce,
        /// Calls whose oopspec names a pure op (`OS_MATH_SQRT`, `OS_INT_PY_DIV`,
        /// `OS_INT_PY_MOD`) become that op (`trace_ir::oopspec::pure_call_opcode`).
        oopspec,
        /// Division and modulo by a constant as shifts, masks and a multiply-high
        /// ([`divconst`]).
        divconst,
        /// A `guard_class` on an object whose `guard_nonnull` was emitted earlier (no `label`
        /// between) is fused into it: that guard becomes `guard_nonnull_class` and the later
        /// one is dropped. The trace may then exit at the earlier guard where the input would
        /// have passed it and failed the later one; that exit's resume data is exact there, so
        /// an interpreter resuming at it redoes the steps between. A bridge attached to such a
        /// guard must therefore be recorded from the guard's resume point, not assume why the
        /// guard failed.
        guardfusion,
    }
    switches {
        /// Peel the loop's first iteration before optimizing ([`trace_ir::peel_loop`], as
        /// PyPy's unroll does), so the loop body runs knowing what the first iteration's guards
        /// established about loop-invariant values (`label` parameters the `jump` passes back
        /// unchanged), and finds the fields and items the first iteration loaded in the
        /// parameters the body label carries ([`Optimized::carried`]) instead of loading them
        /// again. A struct the loop makes for its next iteration, which nothing else refers
        /// to, is taken field by field ([`Optimized::carried_virtuals`]) instead of allocated
        /// in every iteration. Pure ops on invariant operands are computed once, in the first
        /// iteration, and the label carries their results ([`Optimized::carried_pure`]; in
        /// a body that carries loads or objects, elidable calls and immutable reads too).
        /// Off by default: the output then has one more `label`, and guards of the
        /// copied body have fresh ids (same resume keys); validate it against the peeled input
        /// (`verify::validate` peels the original itself when the label counts say so).
        peel = false,
        /// Record what became of every input op ([`Optimized::explanation`]): kept as which
        /// output op, or removed for which reason (and by which rule, replaced by which
        /// value). Off by default; when off the pass records nothing per op.
        explain = false,
    }
}

/// `Reason` from one table: each variant with its name and meaning.
macro_rules! reasons {
    ( $( $(#[doc = $doc:literal])* $variant:ident = $name:literal, )* ) => {
        /// Why an op of the input does not appear in the output.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Reason {
            /// All reasons, in display order.
            pub const ALL: &'static [Reason] = &[ $( Reason::$variant, )* ];
            /// A short name (`folded`, `cse`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $( Reason::$variant => $name, )*
                }
            }
        }
    };
}

reasons! {
    /// All operands constant: folded by `trace_ir::eval`.
    Folded = "folded",
    /// The abstract value is a single constant.
    BoundsConstant = "bounds_constant",
    /// `int_and`/`int_or` identity by known bits (`is_and_identity`).
    Identity = "identity",
    /// A peephole rule replaced it.
    Rule = "rule",
    /// Same as an earlier op (pure op, elidable or loop-invariant call, immutable read).
    Cse = "cse",
    /// A guard whose condition is already known to hold.
    GuardKnown = "guard_known",
    /// An `_ovf` op's `guard_no_overflow` whose op cannot overflow.
    Overflow = "overflow",
    /// An allocation that stayed virtual (never materialized).
    VirtualAlloc = "virtual_alloc",
    /// A field or item access on a virtual object.
    VirtualAccess = "virtual_access",
    /// A read forwarded by the heap cache.
    HeapCache = "heap_cache",
    /// A write of the value the field already holds.
    RedundantWrite = "redundant_write",
    /// A write overwritten before anything could observe it (no read, guard or call between).
    DeadStore = "dead_store",
    /// A hint that was used and dropped (or `same_as`).
    Hint = "hint",
    /// A `guard_class` fused into the object's earlier `guard_nonnull`
    /// ([`Options::guardfusion`]).
    GuardFused = "guard_fused",
    /// A conditional call whose condition is known to be false (`cond_call` of zero,
    /// `cond_call_value` of a non-zero value): it calls nothing.
    CondCallKnown = "cond_call_known",
    /// Unused pure op (final sweep).
    Dead = "dead",
}

/// What one run of the optimizer did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Ops of the input, not counting inputs and label parameters.
    pub ops_in: usize,
    /// Ops of the output, not counting inputs and label parameters.
    pub ops_out: usize,
    /// Input ops removed, by reason (only non-zero entries).
    pub removed: BTreeMap<Reason, usize>,
    /// Peephole rule firings by rule name (including the conditional rewrites of the pass).
    pub rules: BTreeMap<&'static str, usize>,
    /// Allocations that stayed virtual to the end (never emitted).
    pub virtuals_removed: usize,
    /// Virtual objects materialized (allocation emitted at an escape).
    pub virtuals_materialized: usize,
    /// Guards whose resume data describes at least one virtual object.
    pub guards_with_virtuals: usize,
}

impl Stats {
    /// How many input ops were removed for `reason`.
    pub fn removed(&self, reason: Reason) -> usize {
        self.removed.get(&reason).copied().unwrap_or(0)
    }
    /// Total input ops removed (for any reason).
    pub fn total_removed(&self) -> usize {
        self.removed.values().sum()
    }
    /// Add another run's counts to these.
    pub fn merge(&mut self, other: &Stats) {
        self.ops_in += other.ops_in;
        self.ops_out += other.ops_out;
        for (&r, &n) in &other.removed {
            *self.removed.entry(r).or_default() += n;
        }
        for (&r, &n) in &other.rules {
            *self.rules.entry(r).or_default() += n;
        }
        self.virtuals_removed += other.virtuals_removed;
        self.virtuals_materialized += other.virtuals_materialized;
        self.guards_with_virtuals += other.guards_with_virtuals;
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "ops: {} -> {}", self.ops_in, self.ops_out)?;
        for (r, n) in &self.removed {
            writeln!(f, "  removed {:<16} {n}", r.name())?;
        }
        writeln!(
            f,
            "  virtuals removed {}, materialized {}",
            self.virtuals_removed, self.virtuals_materialized
        )?;
        for (name, n) in &self.rules {
            writeln!(f, "  rule {name:<28} {n}")?;
        }
        Ok(())
    }
}

/// The result of [`optimize`].
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The optimized trace (a new trace; guards keep their `GuardId` and resume key).
    pub trace: Trace,
    /// What was done.
    pub stats: Stats,
    /// Per guard of `trace`, in trace order: what the optimizer knew about its exit words
    /// whenever it fails (a bridge out of it starts from these, see
    /// [`trace_ir::bridge_prologue`]).
    pub guard_facts: Vec<trace_ir::GuardFacts>,
    /// The peeled loop of `trace` (with [`Options::peel`]), as a way into its body: what the
    /// body assumes about its parameters. Empty when `trace` is not a peeled loop, its body
    /// reads values of the preamble that only the preamble computes, or its label carries
    /// loaded values (whoever enters it would have to load them).
    pub body_entries: Vec<trace_ir::BodyEntry>,
    /// What the peeled loop body's label carries about memory: the fields and items its
    /// extra parameters (or constants) hold there (see [`trace_ir::CarriedLoad`]); the
    /// translation validator needs them (`verify::validate::Config::carried`).
    pub carried: Vec<trace_ir::CarriedLoad>,
    /// The objects a peeled loop's body label takes field by field instead of allocating
    /// them in every iteration; the translation validator needs them
    /// (`verify::validate::Config::carried_virtuals`).
    pub carried_virtuals: Vec<trace_ir::CarriedVirtual>,
    /// The results of pure ops on loop-invariant operands that a peeled loop's body label
    /// carries, computed once before the loop; the translation validator needs them
    /// (`verify::validate::Config::carried_pure`).
    pub carried_pure: Vec<trace_ir::CarriedPure>,
    /// What became of each input op and where each output op came from; only with
    /// [`Options::explain`]. With [`Options::peel`] its input is the peeled trace
    /// ([`trace_ir::peel_loop`] of the input) when the input is a loop.
    pub explanation: Option<Explanation>,
}

/// What became of one op of the input ([`Explanation::fates`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Emitted as this op of the output (with its operands replaced by what they became; an
    /// `_ovf` op that cannot overflow is emitted as the plain op). Inputs and label
    /// parameters are always kept.
    Kept(OpRef),
    /// Not in the output.
    Removed {
        /// Why.
        reason: Reason,
        /// The peephole rule (or identity) that replaced it, for [`Reason::Rule`] and
        /// [`Reason::Identity`].
        rule: Option<&'static str>,
        /// What its result is in the output, when it has a result and the output still
        /// computes that value: an op of the output trace or a constant of its pool.
        value: Option<trace_ir::Value>,
    },
    /// Neither emitted nor removed by a step the pass records (a gap in the explanation;
    /// reported rather than guessed).
    Unaccounted,
}

/// Per-op account of one run of the optimizer ([`Options::explain`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// Per op of the input (indexed like its `ops`), what became of it.
    pub fates: Vec<Fate>,
    /// Per op of the output, the input op it comes from: mostly the op itself (also for a
    /// write the heap cache delayed, and for an allocation that stayed virtual until it
    /// escaped); the field writes of a materialized virtual come from the op where the
    /// object escaped, and the ops a rule builds from the op the rule rewrote.
    pub origins: Vec<OpRef>,
}

impl Explanation {
    /// The output ops whose origin is input op `i`.
    pub fn outputs_of(&self, i: OpRef) -> impl Iterator<Item = OpRef> + '_ {
        self.origins
            .iter()
            .enumerate()
            .filter(move |(_, &o)| o == i)
            .map(|(k, _)| OpRef::new(k))
    }
}

/// Why [`optimize`] refused a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptError {
    /// The input trace is malformed (the verifier's complaint).
    BadInput(VerifyError),
    /// An input op the optimizer cannot handle.
    Unsupported {
        /// The op.
        op: OpRef,
        /// What is wrong.
        message: String,
    },
    /// The output failed verification (an optimizer bug; checked in debug and test builds).
    BadOutput(VerifyError),
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptError::BadInput(e) => write!(f, "invalid input trace: {e}"),
            OptError::Unsupported { op, message } => write!(f, "at {op}: {message}"),
            OptError::BadOutput(e) => write!(f, "optimizer produced an invalid trace (bug): {e}"),
        }
    }
}

impl std::error::Error for OptError {}

/// Optimize `trace` with the parts enabled in `opts`. The input is never mutated; the output
/// is verified in debug and test builds. With [`Options::peel`] the pass runs on the peeled
/// trace (when `trace` is a loop), and [`Stats`] counts the ops of that.
pub fn optimize(trace: &Trace, opts: &Options) -> Result<Optimized, OptError> {
    Optimizer::new().optimize(trace, opts)
}
