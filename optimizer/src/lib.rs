//! tracejit's single-pass trace optimizer: abstract integer domains, peephole rules, CSE,
//! guard and overflow elimination, allocation removal and a heap cache.
//!
//! Entry point: [`optimize`]. It never mutates its input; it builds a new trace in one forward
//! pass (see the `pass` module documentation for the order of the steps per op), followed by
//! a backward sweep that drops unused pure ops. [`Options`] switches each part off (for
//! benchmarks and bisecting a miscompilation); [`Stats`] says what was removed and why.
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! let mut b = TraceBuilder::new();
//! let x = b.input(Kind::Int);
//! let zero = b.const_int(0);
//! let y = b.op(Opcode::IntAdd, &[x, zero]);
//! b.finish_with(&[y]);
//! let trace = b.finish().unwrap();
//! let out = optimizer::optimize(&trace, &optimizer::Options::default()).unwrap();
//! assert_eq!(out.trace.num_real_ops(), 1); // just the finish
//! ```
#![deny(missing_docs)]

mod alias;
pub mod domain;
mod fold;
mod heap;
mod pass;
pub mod peephole;

use std::collections::BTreeMap;
use std::fmt;
use trace_ir::{OpRef, Trace, VerifyError};

pub use pass::Optimizer;

/// Which parts of the optimizer run. `Options::default()` enables everything;
/// [`Options::none`] disables everything (the output is then a copy of the input, minus
/// nothing). Each switch only turns off the *removal* it names; the pass stays correct with any
/// combination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Constant folding through `trace_ir::eval` (all operands constant).
    pub fold: bool,
    /// Abstract integer values (`IntBound`): constants from bounds, `and`/`or` identities,
    /// learning from guards, overflow removal by bounds.
    pub intbounds: bool,
    /// The peephole rules (`peephole::apply`).
    pub rules: bool,
    /// Common-subexpression elimination of pure ops, elidable and loop-invariant calls,
    /// immutable reads.
    pub cse: bool,
    /// Removal of guards whose condition is known (and remembering what guards establish).
    pub guards: bool,
    /// Turning `_ovf` ops that cannot overflow into plain ops (and dropping their guard).
    pub ovf: bool,
    /// Allocation removal (virtual objects).
    pub virtuals: bool,
    /// The heap cache for non-virtual objects.
    pub heapcache: bool,
    /// The final sweep that drops unused pure ops.
    pub dce: bool,
    /// Peel the loop's first iteration before optimizing ([`trace_ir::peel_loop`], as PyPy's
    /// unroll does), so the loop body runs knowing what the first iteration's guards
    /// established about loop-invariant values (`label` parameters the `jump` passes back
    /// unchanged). Off by default: the output then has one more `label`, and guards of the
    /// copied body have fresh ids (same resume keys); validate it against the peeled input
    /// (`verify::validate` peels the original itself when the label counts say so).
    pub peel: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fold: true,
            intbounds: true,
            rules: true,
            cse: true,
            guards: true,
            ovf: true,
            virtuals: true,
            heapcache: true,
            dce: true,
            peel: false,
        }
    }
}

impl Options {
    /// Everything off.
    pub fn none() -> Options {
        Options {
            fold: false,
            intbounds: false,
            rules: false,
            cse: false,
            guards: false,
            ovf: false,
            virtuals: false,
            heapcache: false,
            dce: false,
            peel: false,
        }
    }
    /// The part names, as used by `--no-<part>` on the command line.
    pub const PARTS: &'static [&'static str] = &[
        "fold",
        "intbounds",
        "rules",
        "cse",
        "guards",
        "ovf",
        "virtuals",
        "heapcache",
        "dce",
    ];
    /// Switch the part called `name` (one of [`Options::PARTS`]); `false` if there is no such part.
    pub fn set(&mut self, name: &str, on: bool) -> bool {
        let slot = match name {
            "fold" => &mut self.fold,
            "intbounds" => &mut self.intbounds,
            "rules" => &mut self.rules,
            "cse" => &mut self.cse,
            "guards" => &mut self.guards,
            "ovf" => &mut self.ovf,
            "virtuals" => &mut self.virtuals,
            "heapcache" => &mut self.heapcache,
            "dce" => &mut self.dce,
            _ => return false,
        };
        *slot = on;
        true
    }
}

/// Why an op of the input does not appear in the output.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// All operands constant: folded by `trace_ir::eval`.
    Folded,
    /// The abstract value is a single constant.
    BoundsConstant,
    /// `int_and`/`int_or` identity by known bits (`is_and_identity`).
    Identity,
    /// A peephole rule replaced it.
    Rule,
    /// Same as an earlier op (pure op, elidable or loop-invariant call, immutable read).
    Cse,
    /// A guard whose condition is already known to hold.
    GuardKnown,
    /// An `_ovf` op's `guard_no_overflow` whose op cannot overflow.
    Overflow,
    /// An allocation that stayed virtual (never materialized).
    VirtualAlloc,
    /// A field or item access on a virtual object.
    VirtualAccess,
    /// A read forwarded by the heap cache.
    HeapCache,
    /// A write of the value the field already holds.
    RedundantWrite,
    /// A write overwritten before anything could observe it (no read, guard or call between).
    DeadStore,
    /// A hint that was used and dropped (or `same_as`).
    Hint,
    /// Unused pure op (final sweep).
    Dead,
}

impl Reason {
    /// All reasons, in display order.
    pub const ALL: &'static [Reason] = &[
        Reason::Folded,
        Reason::BoundsConstant,
        Reason::Identity,
        Reason::Rule,
        Reason::Cse,
        Reason::GuardKnown,
        Reason::Overflow,
        Reason::VirtualAlloc,
        Reason::VirtualAccess,
        Reason::HeapCache,
        Reason::RedundantWrite,
        Reason::DeadStore,
        Reason::Hint,
        Reason::Dead,
    ];
    /// A short name (`folded`, `cse`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Folded => "folded",
            Reason::BoundsConstant => "bounds_constant",
            Reason::Identity => "identity",
            Reason::Rule => "rule",
            Reason::Cse => "cse",
            Reason::GuardKnown => "guard_known",
            Reason::Overflow => "overflow",
            Reason::VirtualAlloc => "virtual_alloc",
            Reason::VirtualAccess => "virtual_access",
            Reason::HeapCache => "heap_cache",
            Reason::RedundantWrite => "redundant_write",
            Reason::DeadStore => "dead_store",
            Reason::Hint => "hint",
            Reason::Dead => "dead",
        }
    }
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
