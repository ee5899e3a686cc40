//! Missing-optimization mining: find integer ops of an optimized trace that the
//! optimizer could have removed, prove it with Z3, and shrink each example to a rule-like
//! pattern.
//!
//! # What is asked
//!
//! For every integer op `X` of the (already optimized) trace that [`op_semantics`] covers,
//! the miner builds a small formula around it (one 64-bit variable per op, see below) and asks:
//!
//! 1. **constant** ([`FindingKind::ConstBool`] for comparisons and other boolean ops,
//!    [`FindingKind::Constant`] otherwise): is `X` the same value on every execution that
//!    reaches it? Instead of an exists-forall query, the miner takes one model of the
//!    facts, reads `X`'s value `c` in it and proves `X == c`: a constant exists exactly when
//!    every model agrees, so this finds the same constants with quantifier-free queries.
//! 2. **same as an earlier value** ([`FindingKind::SameAsEarlier`],
//!    [`FindingKind::SameAsInput`]): is `X` always equal to an earlier op `Y`? Candidates are
//!    the ops of `X`'s cone and earlier pure integer ops whose operands all lie in the cone
//!    (a different computation over the same values).
//! 3. **no overflow** ([`FindingKind::NoOverflow`]): an `int_*_ovf` op whose
//!    `guard_no_overflow` can never fail.
//! 4. **implied guard** ([`FindingKind::GuardImplied`]): a `guard_true`/`guard_false`/
//!    `guard_value` on an integer whose condition the earlier guards already imply (only
//!    reported when its condition op is not itself reported as a constant).
//!
//! Many candidates are checked at once: the miner asks for a model in which `X` differs from
//! at least one surviving candidate, drops the candidates that model refutes, and repeats
//! until the query is unsatisfiable (all survivors proven) or no candidate is left.
//!
//! # The formula and what it assumes
//!
//! Every op `k` gets a variable `v_k`. The **cone** of `X` is the set of integer ops reached
//! backwards from `X` through operands, up to [`MineConfig::depth`] levels and
//! [`MineConfig::max_cone`] ops; each op of the cone is *defined* (`v_k == op(args)` and its
//! `valid_if`, e.g. a shift amount below 64, which held because the op ran). Everything else
//! (inputs, label parameters, loads, calls, ops beyond the bound) is a free variable. The
//! facts assumed besides the definitions are:
//!
//! - every earlier `guard_true(c)` (`c != 0`), `guard_false(c)` (`c == 0`) and
//!   `guard_value(c, K)` (`c == K`) on an integer whose own small cone (depth 2) shares an op
//!   with `X`'s cone: up to [`MineConfig::max_guards`] of them, nearest first;
//! - for a defined `int_*_ovf` op whose `guard_no_overflow` comes before `X`: no overflow.
//!
//! - the ranges the optimizer also gives loads: a narrow integer field or array item is
//!   within its size and signedness (`<ArrayU 1>`: `0..=255`, printed `x: u8`), and
//!   `strlen`, `unicodelen`, `arraylen_gc` are `>= 0`.
//!
//! Nothing else is assumed: nothing about full-width loads, calls or the values that flow
//! around a loop (label parameters are free). Every fact holds
//! on each execution that reaches `X`, so a proof is a real missed optimization *of this
//! trace*; what it would take to exploit it (a rule, range or relational reasoning, loop
//! peeling) is for a human to judge.
//!
//! # Minimization
//!
//! A proven finding is shrunk: drop each guard fact and each overflow fact, then turn each
//! defined op (other than `X`) into a free variable, keeping every change after which the
//! claim is still proven. The rest prints as a pattern with leaves named `x`, `y`, `z`, ...
//! (`int_and(int_and(x, 15), 255) => int_and(x, 15)`), followed by `if` and the facts still
//! needed. The **shape** replaces the constants other than -1, 0 and 1 with `C1`, `C2`, ...
//! (equal constants get one name); findings are aggregated by kind and shape ([`aggregate`]).
//!
//! Each query runs in a fresh solver with [`MineConfig::timeout_ms`]; a timeout counts as
//! "not proven" (so a miss, never a false report). [`MineConfig::deadline`] bounds the time
//! of a whole run.
//!
//! [`op_semantics`]: crate::semantics::op_semantics

mod encode;
mod miner;
mod render;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Instant;

use trace_ir::{Opcode, Trace};

use encode::Enc;
use miner::Miner;

pub use render::literal;

/// How much work the miner does per op.
#[derive(Clone, Debug)]
pub struct MineConfig {
    /// Levels of operands expanded below an op (its cone depth).
    pub depth: usize,
    /// At most this many ops defined in one cone.
    pub max_cone: usize,
    /// Per-query Z3 timeout in milliseconds.
    pub timeout_ms: u32,
    /// Assume earlier integer guards (and `guard_no_overflow`s).
    pub use_guards: bool,
    /// At most this many guard facts per op (the nearest relevant ones).
    pub max_guards: usize,
    /// At most this many earlier values compared with each op.
    pub max_candidates: usize,
    /// Shrink each finding to a small pattern.
    pub minimize: bool,
    /// Stop (and say so in [`MineStats::budget_exhausted`]) after this instant.
    pub deadline: Option<Instant>,
}

impl Default for MineConfig {
    fn default() -> Self {
        MineConfig {
            depth: 4,
            max_cone: 24,
            timeout_ms: 200,
            use_guards: true,
            max_guards: 12,
            max_candidates: 48,
            minimize: true,
            deadline: None,
        }
    }
}

/// What kind of redundancy was found.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// A boolean op (comparison, `int_is_true`, ...) that is always this value (0 or 1).
    ConstBool(i64),
    /// A non-boolean op that is always this constant.
    Constant(i64),
    /// Always equal to this earlier op (by index in the trace).
    SameAsEarlier(usize),
    /// Always equal to this trace input or label parameter (by index in the trace).
    SameAsInput(usize),
    /// An `int_*_ovf` op whose `guard_no_overflow` never fails.
    NoOverflow,
    /// A guard whose condition always holds.
    GuardImplied,
}

impl FindingKind {
    /// A short name (`const-bool`, `constant`, `same-as-earlier`, `same-as-input`,
    /// `no-overflow`, `guard-implied`).
    pub fn name(&self) -> &'static str {
        match self {
            FindingKind::ConstBool(_) => "const-bool",
            FindingKind::Constant(_) => "constant",
            FindingKind::SameAsEarlier(_) => "same-as-earlier",
            FindingKind::SameAsInput(_) => "same-as-input",
            FindingKind::NoOverflow => "no-overflow",
            FindingKind::GuardImplied => "guard-implied",
        }
    }
}

/// One proven missed optimization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The trace's name.
    pub trace: String,
    /// Index of the redundant op in the mined trace (the value `i<index>` as `tracejit opt`
    /// prints it, except for renamed label parameters).
    pub op: usize,
    /// Its opcode.
    pub opcode: Opcode,
    /// What was found.
    pub kind: FindingKind,
    /// The minimized example as a rule-like line (see the module documentation).
    pub pattern: String,
    /// The pattern with constants abstracted (the aggregation key, with the kind).
    pub shape: String,
    /// The example before minimization.
    pub unminimized: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} op {} ({}): {}: {}",
            self.trace,
            self.op,
            self.opcode,
            self.kind.name(),
            self.pattern
        )
    }
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MineStats {
    /// Traces mined (completely or until the deadline).
    pub traces: usize,
    /// Ops and guards examined.
    pub ops: usize,
    /// Z3 queries.
    pub queries: usize,
    /// Queries that ended `unknown` (mostly timeouts).
    pub unknown: usize,
    /// Ops skipped because the facts before them contradict each other (a guard that always
    /// fails).
    pub contradictory: usize,
    /// The deadline stopped the run.
    pub budget_exhausted: bool,
}

impl MineStats {
    /// Add another run's counters.
    pub fn merge(&mut self, o: &MineStats) {
        self.traces += o.traces;
        self.ops += o.ops;
        self.queries += o.queries;
        self.unknown += o.unknown;
        self.contradictory += o.contradictory;
        self.budget_exhausted |= o.budget_exhausted;
    }
}

/// Findings aggregated by kind and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternCount {
    /// Kind name ([`FindingKind::name`]).
    pub kind: &'static str,
    /// The shape.
    pub shape: String,
    /// Number of findings.
    pub count: usize,
    /// Number of different concrete patterns among them.
    pub distinct: usize,
    /// The most frequent concrete pattern.
    pub example: String,
    /// Where the first finding was (`trace op N`).
    pub first: String,
}

/// Group findings by (kind, shape), most frequent first (ties by shape text).
pub fn aggregate(findings: &[Finding]) -> Vec<PatternCount> {
    let mut groups: BTreeMap<(&'static str, &str), Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        groups.entry((f.kind.name(), f.shape.as_str())).or_default().push(f);
    }
    let mut out: Vec<PatternCount> = groups
        .into_iter()
        .map(|((kind, shape), fs)| {
            let mut per: BTreeMap<&str, usize> = BTreeMap::new();
            for f in &fs {
                *per.entry(f.pattern.as_str()).or_default() += 1;
            }
            let example = per
                .iter()
                .max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p)))
                .map(|(p, _)| p.to_string())
                .unwrap_or_default();
            PatternCount {
                kind,
                shape: shape.to_string(),
                count: fs.len(),
                distinct: per.len(),
                example,
                first: format!("{} op {}", fs[0].trace, fs[0].op),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.kind.cmp(b.kind))
            .then_with(|| a.shape.cmp(&b.shape))
    });
    out
}

/// The traces to mine from a parsed file: when it holds `jit-log-noopt` sections only those
/// (PyPy's own optimized sections are skipped), otherwise every trace. With `opts`, each is
/// run through `optimizer::optimize` first; an optimizer error is returned for that trace.
pub fn prepare(traces: &[Trace], opts: Option<&optimizer::Options>) -> Vec<(String, Result<Trace, String>)> {
    let is_noopt = |t: &Trace| t.info.section.as_deref() == Some("jit-log-noopt");
    let has_noopt = traces.iter().any(is_noopt);
    traces
        .iter()
        .filter(|t| !has_noopt || is_noopt(t))
        .map(|t| {
            let r = match opts {
                Some(o) => optimizer::optimize(t, o).map(|r| r.trace).map_err(|e| e.to_string()),
                None => Ok(t.clone()),
            };
            (t.info.name.clone(), r)
        })
        .collect()
}

/// Mine one trace (as given: optimize it first if that is what should be mined), adding to
/// `stats`. Findings come in trace order.
pub fn mine_trace(trace: &Trace, cfg: &MineConfig, stats: &mut MineStats) -> Vec<Finding> {
    let mut m = Miner {
        enc: Enc::new(trace),
        cfg,
        stats: MineStats::default(),
        cache: HashMap::new(),
    };
    let mut out = Vec::new();
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for x in 0..trace.ops.len() {
        if m.out_of_time() {
            break;
        }
        let op = &trace.ops[x];
        let found = if op.opcode.is_guard() {
            match m.enc.guard_subject(x) {
                Some(c) if !reported.contains(&c) => {
                    m.stats.ops += 1;
                    m.examine_guard(x, c)
                }
                _ => None,
            }
        } else if m.enc.definable(x) && !op.opcode.is_input() {
            m.stats.ops += 1;
            m.examine_op(x)
        } else {
            None
        };
        if let Some((c, p)) = found {
            if m.out_of_time() {
                break;
            }
            reported.insert(x);
            out.push(m.finding(x, c, p));
        }
    }
    m.stats.traces = 1;
    stats.merge(&m.stats);
    out
}

/// Mine every trace in turn until `cfg.deadline`.
pub fn mine_traces<'a>(
    traces: impl IntoIterator<Item = &'a Trace>,
    cfg: &MineConfig,
    stats: &mut MineStats,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in traces {
        if cfg.deadline.is_some_and(|d| Instant::now() >= d) {
            stats.budget_exhausted = true;
            break;
        }
        out.extend(mine_trace(t, cfg, stats));
    }
    out
}
