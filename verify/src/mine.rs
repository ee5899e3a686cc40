//! Missing-optimization mining (seed 002): find integer ops of an optimized trace that the
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
//!    reaches it? Instead of seed 002's exists-forall query, the miner takes one model of the
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
//! A proven finding is shrunk as in seed 002: drop each guard fact and each overflow fact,
//! then turn each defined op (other than `X`) into a free variable, keeping every change
//! after which the claim is still proven. The rest prints as a pattern with leaves named
//! `x`, `y`, `z`, ... (`int_and(int_and(x, 15), 255) => int_and(x, 15)`), followed by
//! `if` and the facts still needed. The **shape** replaces the constants other than
//! -1, 0 and 1 with `C1`, `C2`, ... (equal constants get one name); findings are aggregated by
//! kind and shape ([`aggregate`]).
//!
//! Each query runs in a fresh solver with [`MineConfig::timeout_ms`]; a timeout counts as
//! "not proven" (so a miss, never a false report). [`MineConfig::deadline`] bounds the time
//! of a whole run.

use crate::semantics::{bv, no_overflow, op_semantics, INTEGER_OPS, WIDTH};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Instant;
use trace_ir::{Const, Descr, Kind, OpFlags, Opcode, Trace, Value, ValueData};
use z3::ast::{Ast, Bool, BV};
use z3::{Model, Params, SatResult, Solver};

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

// --- encoding ---------------------------------------------------------------------------

/// Lazily built Z3 terms of one trace.
struct Enc<'t> {
    t: &'t Trace,
    vars: HashMap<usize, BV>,
    defs: HashMap<usize, Option<(BV, Bool)>>,
    cones: HashMap<(usize, usize), Cone>,
}

/// A bounded backward cone: the ops defined in it and every op it touches.
#[derive(Clone, Debug, Default)]
struct Cone {
    defined: BTreeSet<usize>,
    all: BTreeSet<usize>,
}

impl<'t> Enc<'t> {
    fn new(t: &'t Trace) -> Self {
        Enc {
            t,
            vars: HashMap::new(),
            defs: HashMap::new(),
            cones: HashMap::new(),
        }
    }

    fn var(&mut self, k: usize) -> BV {
        self.vars
            .entry(k)
            .or_insert_with(|| BV::new_const(format!("v{k}"), WIDTH))
            .clone()
    }

    fn is_int(&self, k: usize) -> bool {
        self.t.ops[k].opcode.result_kind() == Kind::Int
    }

    /// The term of an integer operand (`None` for references and floats).
    fn value(&mut self, v: Value) -> Option<BV> {
        match v.data() {
            ValueData::Op(o) => self.is_int(o.index()).then(|| self.var(o.index())),
            ValueData::Const(c) => match self.t.consts.get(c) {
                Const::Int(i) => Some(bv(i)),
                _ => None,
            },
        }
    }

    fn definable(&self, k: usize) -> bool {
        let op = &self.t.ops[k];
        INTEGER_OPS.contains(&op.opcode) && op.args.iter().all(|&a| self.t.kind_of(a) == Kind::Int)
    }

    /// `(op(args), valid_if)` of a definable op.
    fn def(&mut self, k: usize) -> Option<(BV, Bool)> {
        if let Some(d) = self.defs.get(&k) {
            return d.clone();
        }
        let d = if self.definable(k) {
            let args: Option<Vec<BV>> = self.t.ops[k].args.clone().iter().map(|&a| self.value(a)).collect();
            args.and_then(|a| op_semantics(self.t.ops[k].opcode, &a).ok())
        } else {
            None
        };
        self.defs.insert(k, d.clone());
        d
    }

    fn cone(&mut self, root: usize, depth: usize, max: usize) -> Cone {
        if let Some(c) = self.cones.get(&(root, depth)) {
            return c.clone();
        }
        let mut c = Cone::default();
        let mut level = vec![root];
        c.all.insert(root);
        for d in 0..=depth {
            let mut next = Vec::new();
            for k in level {
                if d < depth && c.defined.len() < max && self.definable(k) && c.defined.insert(k) {
                    for &a in &self.t.ops[k].args {
                        if let Some(o) = a.as_op() {
                            if c.all.insert(o.index()) {
                                next.push(o.index());
                            }
                        }
                    }
                }
            }
            level = next;
        }
        self.cones.insert((root, depth), c.clone());
        c
    }

    /// The fact a passed guard establishes (`None` for other guards or non-integer ones).
    fn guard_fact(&mut self, g: usize) -> Option<Bool> {
        let op = self.t.ops[g].clone();
        let c = self.value(*op.args.first()?)?;
        match op.opcode {
            Opcode::GuardTrue => Some(c.eq(bv(0)).not()),
            Opcode::GuardFalse => Some(c.eq(bv(0))),
            Opcode::GuardValue => Some(c.eq(self.value(op.args[1])?)),
            _ => None,
        }
    }

    /// The op a guard fact is about, if it is an op.
    fn guard_subject(&self, g: usize) -> Option<usize> {
        let op = &self.t.ops[g];
        if !matches!(op.opcode, Opcode::GuardTrue | Opcode::GuardFalse | Opcode::GuardValue) {
            return None;
        }
        let o = op.args.first()?.as_op()?.index();
        if !self.is_int(o) || op.args.iter().any(|&a| self.t.kind_of(a) != Kind::Int) {
            return None;
        }
        Some(o)
    }

    fn no_ovf(&mut self, k: usize) -> Option<Bool> {
        let op = self.t.ops[k].clone();
        let a = self.value(op.args[0])?;
        let b = self.value(op.args[1])?;
        no_overflow(op.opcode, &a, &b)
    }

    /// The range the optimizer also knows for a load: narrow integer fields and array items
    /// (by size and signedness; e.g. `<ArrayU 1>` gives 0..=255) and lengths (`strlen`,
    /// `unicodelen`, `arraylen_gc` are >= 0). With a short label for patterns.
    fn load_range(&self, k: usize) -> Option<(i64, i64, String)> {
        let op = &self.t.ops[k];
        if op.opcode.result_kind() != Kind::Int || !op.opcode.has(OpFlags::READS_HEAP) || op.opcode.is_call() {
            return None;
        }
        if matches!(op.opcode, Opcode::Strlen | Opcode::Unicodelen | Opcode::ArraylenGc) {
            return Some((0, i64::MAX, ">= 0".into()));
        }
        let (size, signed) = match self.t.descr(op.descr?) {
            Descr::Field(f) if f.kind == Kind::Int => (f.size, f.signed),
            Descr::Array(a) if a.kind == Kind::Int => (a.item_size, a.signed),
            Descr::Interior(i) if i.field.kind == Kind::Int => (i.field.size, i.field.signed),
            _ => return None,
        };
        if !(1..8).contains(&size) {
            return None;
        }
        let bits = 8 * u32::from(size);
        Some(if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1, format!(": i{bits}"))
        } else {
            (0, (1i64 << bits) - 1, format!(": u{bits}"))
        })
    }

    /// Whether ovf op `k` is followed by a `guard_no_overflow` before position `limit`.
    fn ovf_guarded_before(&self, k: usize, limit: usize) -> bool {
        self.t.ops[k].opcode.is_ovf() && k + 1 < limit && self.t.ops[k + 1].opcode == Opcode::GuardNoOverflow
    }
}

/// The facts of one query: defined ops, guard facts (guard op indices), no-overflow facts
/// (ovf op indices).
#[derive(Clone, Debug)]
struct Problem {
    defined: BTreeSet<usize>,
    guards: Vec<usize>,
    ovf: Vec<usize>,
    /// Leaves with a range fact from their load ([`Enc::load_range`]).
    ranges: Vec<usize>,
}

/// What a finding claims.
#[derive(Clone, Copy, Debug)]
enum Claim {
    /// `v_root == c`.
    Const(usize, u64),
    /// `v_root == v_y`.
    Same(usize, usize),
    /// The ovf op does not overflow.
    NoOverflow(usize),
    /// The guard's condition holds.
    Guard(usize),
}

enum Outcome {
    Proven,
    Refuted,
    Unknown,
}

struct Miner<'t, 'c> {
    enc: Enc<'t>,
    cfg: &'c MineConfig,
    stats: MineStats,
    /// Minimization cache: unminimized pattern -> (pattern, shape).
    cache: HashMap<String, (String, String)>,
}

impl<'t, 'c> Miner<'t, 'c> {
    fn facts(&mut self, p: &Problem) -> Vec<Bool> {
        let mut out = Vec::new();
        for &k in &p.defined {
            if let Some((rhs, valid)) = self.enc.def(k) {
                out.push(self.enc.var(k).eq(&rhs));
                if valid.simplify().as_bool() != Some(true) {
                    out.push(valid);
                }
            }
        }
        for &g in &p.guards {
            if let Some(f) = self.enc.guard_fact(g) {
                out.push(f);
            }
        }
        for &o in &p.ovf {
            if let Some(f) = self.enc.no_ovf(o) {
                out.push(f);
            }
        }
        for &k in &p.ranges {
            if let Some((lo, hi, _)) = self.enc.load_range(k) {
                let v = self.enc.var(k);
                out.push(Bool::and(&[v.bvsge(bv(lo)), v.bvsle(bv(hi))]));
            }
        }
        out
    }

    fn claim(&mut self, c: Claim) -> Option<Bool> {
        match c {
            Claim::Const(r, v) => Some(self.enc.var(r).eq(BV::from_u64(v, WIDTH))),
            Claim::Same(r, y) => Some(self.enc.var(r).eq(self.enc.var(y))),
            Claim::NoOverflow(k) => self.enc.no_ovf(k),
            Claim::Guard(g) => self.enc.guard_fact(g),
        }
    }

    fn out_of_time(&mut self) -> bool {
        if self.cfg.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stats.budget_exhausted = true;
        }
        self.stats.budget_exhausted
    }

    /// Check `facts ∧ extra` in a fresh solver.
    fn check(&mut self, facts: &[Bool], extra: Option<&Bool>) -> (SatResult, Option<Model>) {
        if self.out_of_time() {
            return (SatResult::Unknown, None);
        }
        self.stats.queries += 1;
        let s = Solver::new_for_logic("QF_BV").unwrap_or_default();
        let mut p = Params::new();
        p.set_u32("timeout", self.cfg.timeout_ms);
        s.set_params(&p);
        for f in facts {
            s.assert(f);
        }
        if let Some(e) = extra {
            s.assert(e);
        }
        let r = s.check();
        match r {
            SatResult::Sat => (r, s.get_model()),
            SatResult::Unknown => {
                self.stats.unknown += 1;
                (r, None)
            }
            SatResult::Unsat => (r, None),
        }
    }

    fn prove(&mut self, p: &Problem, c: Claim) -> Outcome {
        let Some(claim) = self.claim(c) else {
            return Outcome::Unknown;
        };
        let facts = self.facts(p);
        match self.check(&facts, Some(&claim.not())) {
            (SatResult::Unsat, _) => Outcome::Proven,
            (SatResult::Sat, _) => Outcome::Refuted,
            _ => Outcome::Unknown,
        }
    }

    /// The facts around `root` (an op, or a guard's subject) known before position `limit`,
    /// with the extra ops (candidates) that should be defined.
    fn problem(&mut self, root: usize, limit: usize) -> (Problem, Cone) {
        let cone = self.enc.cone(root, self.cfg.depth, self.cfg.max_cone);
        let mut p = Problem {
            defined: cone.defined.clone(),
            guards: Vec::new(),
            ovf: Vec::new(),
            ranges: Vec::new(),
        };
        if self.cfg.use_guards {
            for g in (0..limit).rev() {
                if p.guards.len() >= self.cfg.max_guards {
                    break;
                }
                let Some(c) = self.enc.guard_subject(g) else { continue };
                let gc = self.enc.cone(c, 2, 8);
                if gc.all.iter().any(|k| cone.all.contains(k)) {
                    p.guards.push(g);
                    p.defined.extend(gc.defined.iter().copied());
                }
            }
            p.guards.reverse();
            p.ovf = p
                .defined
                .iter()
                .copied()
                .filter(|&k| self.enc.ovf_guarded_before(k, limit))
                .collect();
        }
        (p, cone)
    }

    /// Range facts for the loads among the operands of the defined ops, the guard subjects
    /// and `extra`.
    fn add_ranges(&mut self, p: &mut Problem, extra: &[usize]) {
        let mut leaves: BTreeSet<usize> = extra.iter().copied().collect();
        for &k in &p.defined {
            leaves.extend(
                self.enc.t.ops[k]
                    .args
                    .iter()
                    .filter_map(|a| a.as_op())
                    .map(|o| o.index()),
            );
        }
        leaves.extend(p.guards.iter().filter_map(|&g| self.enc.guard_subject(g)));
        p.ranges = leaves
            .into_iter()
            .filter(|k| !p.defined.contains(k) && self.enc.load_range(*k).is_some())
            .collect();
    }

    fn eval(&mut self, m: &Model, k: usize) -> Option<u64> {
        m.eval(&self.enc.var(k), true).and_then(|v| v.as_u64())
    }

    /// Examine op `x`; a finding's claim and the problem it holds in.
    fn examine_op(&mut self, x: usize) -> Option<(Claim, Problem)> {
        let opcode = self.enc.t.ops[x].opcode;
        let (mut p, cone) = self.problem(x, x);
        if opcode.is_ovf() {
            return match self.prove(&p, Claim::NoOverflow(x)) {
                Outcome::Proven => Some((Claim::NoOverflow(x), p)),
                _ => None,
            };
        }
        // Candidates: ops of the cone, then earlier definable ops over cone values.
        let mut cands: Vec<usize> = Vec::new();
        for y in (0..x).rev() {
            if cands.len() >= self.cfg.max_candidates {
                break;
            }
            if !self.enc.is_int(y) || self.enc.t.ops[y].opcode.is_guard() {
                continue;
            }
            if cone.all.contains(&y) {
                cands.push(y);
            } else if self.enc.definable(y)
                && self.enc.t.ops[y]
                    .args
                    .iter()
                    .all(|a| a.as_op().is_none_or(|o| cone.all.contains(&o.index())))
                && self.enc.t.ops[y].args.iter().any(|a| a.as_op().is_some())
            {
                cands.push(y);
                p.defined.insert(y);
            }
        }
        self.add_ranges(&mut p, &[x]);
        let facts = self.facts(&p);
        let model = match self.check(&facts, None) {
            (SatResult::Sat, Some(m)) => m,
            (SatResult::Unsat, _) => {
                self.stats.contradictory += 1;
                return None;
            }
            _ => return None,
        };
        let cx = self.eval(&model, x)?;
        let mut consts = vec![cx];
        let mut same: Vec<usize> = cands
            .into_iter()
            .filter(|&y| self.eval(&model, y) == Some(cx))
            .collect();
        let vx = self.enc.var(x);
        for _round in 0..16 {
            if consts.is_empty() && same.is_empty() {
                return None;
            }
            let mut differs: Vec<Bool> = consts.iter().map(|&c| vx.eq(BV::from_u64(c, WIDTH)).not()).collect();
            for &y in &same {
                differs.push(vx.eq(self.enc.var(y)).not());
            }
            match self.check(&facts, Some(&Bool::or(&differs))) {
                (SatResult::Unsat, _) => break,
                (SatResult::Sat, Some(m)) => {
                    let v = self.eval(&m, x);
                    consts.retain(|&c| v == Some(c));
                    same.retain(|&y| self.eval(&m, y) == v);
                }
                _ => {
                    // Prove the most interesting survivor alone, then give up on the rest.
                    let c = match (consts.first(), same.iter().min()) {
                        (Some(&c), _) => Claim::Const(x, c),
                        (None, Some(&y)) => Claim::Same(x, y),
                        (None, None) => return None,
                    };
                    return match self.prove(&p, c) {
                        Outcome::Proven => Some((c, p)),
                        _ => None,
                    };
                }
            }
        }
        if let Some(&c) = consts.first() {
            return Some((Claim::Const(x, c), p));
        }
        same.iter().min().map(|&y| (Claim::Same(x, y), p))
    }

    fn examine_guard(&mut self, g: usize, c: usize) -> Option<(Claim, Problem)> {
        let (mut p, _) = self.problem(c, g);
        self.add_ranges(&mut p, &[c]);
        match self.prove(&p, Claim::Guard(g)) {
            Outcome::Proven => Some((Claim::Guard(g), p)),
            _ => None,
        }
    }

    /// The ops a claim is about (kept defined and printed).
    fn roots(&self, c: Claim) -> Vec<usize> {
        match c {
            Claim::Const(r, _) | Claim::NoOverflow(r) => vec![r],
            Claim::Same(r, y) => vec![r, y],
            Claim::Guard(g) => self.enc.t.ops[g]
                .args
                .iter()
                .filter_map(|a| a.as_op())
                .map(|o| o.index())
                .collect(),
        }
    }

    /// Defined ops reachable from the roots, the guard subjects and the ovf facts.
    fn reachable(&self, p: &Problem, c: Claim) -> BTreeSet<usize> {
        let mut stack = self.roots(c);
        for &g in &p.guards {
            stack.extend(
                self.enc.t.ops[g]
                    .args
                    .iter()
                    .filter_map(|a| a.as_op())
                    .map(|o| o.index()),
            );
        }
        for &o in &p.ovf {
            stack.extend(
                self.enc.t.ops[o]
                    .args
                    .iter()
                    .filter_map(|a| a.as_op())
                    .map(|o| o.index()),
            );
        }
        let mut seen = BTreeSet::new();
        while let Some(k) = stack.pop() {
            if !seen.insert(k) || !p.defined.contains(&k) {
                continue;
            }
            stack.extend(
                self.enc.t.ops[k]
                    .args
                    .iter()
                    .filter_map(|a| a.as_op())
                    .map(|o| o.index()),
            );
        }
        seen
    }

    fn minimize(&mut self, mut p: Problem, c: Claim) -> Problem {
        let keep: Vec<usize> = match c {
            Claim::Const(r, _) | Claim::Same(r, _) => vec![r],
            _ => Vec::new(),
        };
        let mut i = 0;
        while i < p.guards.len() {
            let mut q = p.clone();
            q.guards.remove(i);
            if matches!(self.prove(&q, c), Outcome::Proven) {
                p = q;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < p.ovf.len() {
            let mut q = p.clone();
            q.ovf.remove(i);
            if matches!(self.prove(&q, c), Outcome::Proven) {
                p = q;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < p.ranges.len() {
            let mut q = p.clone();
            q.ranges.remove(i);
            if matches!(self.prove(&q, c), Outcome::Proven) {
                p = q;
            } else {
                i += 1;
            }
        }
        // Free the defined ops, farthest (earliest) first.
        let order: Vec<usize> = p.defined.iter().copied().filter(|k| !keep.contains(k)).collect();
        for k in order {
            let mut q = p.clone();
            q.defined.remove(&k);
            let reach = self.reachable(&q, c);
            q.defined.retain(|d| reach.contains(d));
            q.ranges.retain(|d| reach.contains(d));
            if matches!(self.prove(&q, c), Outcome::Proven) {
                p = q;
            }
        }
        let reach = self.reachable(&p, c);
        let mut q = p.clone();
        q.defined.retain(|d| reach.contains(d));
        q.ranges.retain(|d| reach.contains(d));
        if matches!(self.prove(&q, c), Outcome::Proven) {
            p = q;
        }
        p
    }

    fn finding(&mut self, x: usize, c: Claim, p: Problem) -> Finding {
        let t = self.enc.t;
        let (reach_p, unmin) = {
            let reach = self.reachable(&p, c);
            let mut q = p.clone();
            q.defined.retain(|d| reach.contains(d));
            q.ranges.retain(|d| reach.contains(d));
            let text = render(t, &q, c, false);
            (q, text)
        };
        let (pattern, shape) = if !self.cfg.minimize {
            (unmin.clone(), render(t, &reach_p, c, true))
        } else if let Some(hit) = self.cache.get(&unmin) {
            hit.clone()
        } else {
            let m = self.minimize(p, c);
            let r = (render(t, &m, c, false), render(t, &m, c, true));
            self.cache.insert(unmin.clone(), r.clone());
            r
        };
        let opcode = t.ops[x].opcode;
        let kind = match c {
            Claim::Const(_, v) if opcode.has(OpFlags::BOOL_RESULT) => FindingKind::ConstBool(v as i64),
            Claim::Const(_, v) => FindingKind::Constant(v as i64),
            Claim::Same(_, y) if t.ops[y].opcode.is_input() => FindingKind::SameAsInput(y),
            Claim::Same(_, y) => FindingKind::SameAsEarlier(y),
            Claim::NoOverflow(_) => FindingKind::NoOverflow,
            Claim::Guard(_) => FindingKind::GuardImplied,
        };
        Finding {
            trace: t.info.name.clone(),
            op: x,
            opcode,
            kind,
            pattern,
            shape,
            unminimized: unmin,
        }
    }
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

// --- printing ---------------------------------------------------------------------------

const LEAF_NAMES: &[&str] = &["x", "y", "z", "w", "u", "v", "s", "t"];

struct Render<'a> {
    t: &'a Trace,
    p: &'a Problem,
    abstract_consts: bool,
    leaves: HashMap<usize, String>,
    consts: HashMap<i64, String>,
}

/// An integer literal: decimal when small, hex otherwise.
pub fn literal(v: i64) -> String {
    if (-65536..65536).contains(&v) {
        v.to_string()
    } else {
        format!("0x{:x}", v as u64)
    }
}

impl Render<'_> {
    fn lit(&mut self, v: i64) -> String {
        if !self.abstract_consts || matches!(v, -1..=1) {
            return literal(v);
        }
        let n = self.consts.len() + 1;
        self.consts.entry(v).or_insert_with(|| format!("C{n}")).clone()
    }

    fn leaf(&mut self, k: usize) -> String {
        let n = self.leaves.len();
        self.leaves
            .entry(k)
            .or_insert_with(|| {
                LEAF_NAMES
                    .get(n)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| format!("x{n}"))
            })
            .clone()
    }

    fn value(&mut self, v: Value) -> String {
        match v.data() {
            ValueData::Op(o) => self.expr(o.index()),
            ValueData::Const(c) => match self.t.consts.get(c) {
                Const::Int(i) => self.lit(i),
                other => trace_ir::text::const_to_string(other, self.t.consts.name(c)),
            },
        }
    }

    fn apply(&mut self, k: usize) -> String {
        let op = &self.t.ops[k];
        let args: Vec<String> = op.args.clone().iter().map(|&a| self.value(a)).collect();
        format!("{}({})", op.opcode.name(), args.join(", "))
    }

    fn expr(&mut self, k: usize) -> String {
        if self.p.defined.contains(&k) {
            self.apply(k)
        } else {
            self.leaf(k)
        }
    }
}

fn render(t: &Trace, p: &Problem, c: Claim, abstract_consts: bool) -> String {
    let mut r = Render {
        t,
        p,
        abstract_consts,
        leaves: HashMap::new(),
        consts: HashMap::new(),
    };
    let head = match c {
        Claim::Const(x, v) => {
            let lhs = r.expr(x);
            let bool_result = t.ops[x].opcode.has(OpFlags::BOOL_RESULT);
            let rhs = if bool_result {
                literal(v as i64)
            } else {
                r.lit(v as i64)
            };
            format!("{lhs} => {rhs}")
        }
        Claim::Same(x, y) => {
            let lhs = r.expr(x);
            let rhs = r.expr(y);
            // The same computation twice (what CSE removes).
            let note = if lhs == rhs { "   (computed twice)" } else { "" };
            format!("{lhs} => {rhs}{note}")
        }
        Claim::NoOverflow(x) => {
            let lhs = r.apply(x);
            let plain = t.ops[x].opcode.ovf_to_wrapping().map(|o| o.name()).unwrap_or("?");
            let rhs = lhs.replacen(t.ops[x].opcode.name(), plain, 1);
            format!("{lhs} => {rhs} (never overflows)")
        }
        Claim::Guard(g) => format!("{} => (always passes)", guard_text(&mut r, g)),
    };
    let mut conds: Vec<String> = p.guards.iter().map(|&g| guard_text(&mut r, g)).collect();
    for &o in &p.ovf {
        let e = r.apply(o);
        conds.push(format!("guard_no_overflow({e})"));
    }
    for &k in &p.ranges {
        let label = Enc::new(t).load_range(k).map(|(_, _, l)| l).unwrap_or_default();
        let e = r.expr(k);
        conds.push(if label.starts_with(':') {
            format!("{e}{label}")
        } else {
            format!("{e} {label}")
        });
    }
    if conds.is_empty() {
        head
    } else {
        format!("{head}   if {}", conds.join(" and "))
    }
}

fn guard_text(r: &mut Render<'_>, g: usize) -> String {
    let op = &r.t.ops[g];
    let args: Vec<String> = op.args.clone().iter().map(|&a| r.value(a)).collect();
    format!("{}({})", op.opcode.name(), args.join(", "))
}
