//! Queries: solver calls, abstraction refinement, batches of claims, and counterexamples.

use trace_ir::Kind;
use z3::ast::{Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

use super::abstraction::Mode;
use super::side::{Side, Sym};
use super::terms::{bv, zero};
use super::validator::Validator;
use super::{Counterexample, Stop, R};

/// A claim of an open batch: the condition to prove, what it means, and the pair of values
/// it compares (for the counterexample), if any.
pub(super) type Claim = (Bool, String, Option<(BV, BV)>);

impl<'t> Validator<'t> {
    /// Add a fact to the path condition.
    pub(super) fn assume(&mut self, b: Bool, heavy: bool) {
        if b.simplify().as_bool() != Some(true) {
            self.facts.push((b, heavy));
        }
    }

    /// Check whether `facts ∧ ¬claim` is satisfiable, in a fresh solver (Z3's
    /// non-incremental mode preprocesses bit-vector problems much better than push/pop).
    pub(super) fn check(&mut self, claim: &Bool, mode: Mode) -> (SatResult, Option<z3::Model>, Option<String>) {
        // Once the verdict is Unknown, later queries can only still find a counterexample:
        // give them less time.
        let ms = if self.unknown.is_some() {
            self.cfg.timeout_ms.min(200)
        } else {
            self.cfg.timeout_ms
        };
        self.check_ms(claim, mode, ms)
    }

    /// [`Validator::check`] with a time limit of `ms` milliseconds.
    pub(super) fn check_ms(
        &mut self,
        claim: &Bool,
        mode: Mode,
        ms: u32,
    ) -> (SatResult, Option<z3::Model>, Option<String>) {
        let started = std::time::Instant::now();
        let mut params = Params::new();
        params.set_u32("timeout", ms);
        let solver = Solver::new();
        solver.set_params(&params);
        if !matches!(mode, Mode::Concrete { .. }) {
            for f in &self.abs.axioms {
                solver.assert(self.abs.in_mode(f, mode));
            }
        }
        let light = mode == Mode::Concrete { light: true };
        for (f, heavy) in self.facts_in(mode).iter().zip(self.facts.iter().map(|(_, h)| *h)) {
            if !(light && heavy) {
                solver.assert(f);
            }
        }
        solver.assert(self.abs.in_mode(claim, mode).not());
        let res = solver.check();
        let out = match res {
            SatResult::Sat => (res, solver.get_model(), None),
            SatResult::Unknown => (res, None, solver.get_reason_unknown()),
            SatResult::Unsat => (res, None, None),
        };
        let st = &mut self.stats;
        match mode {
            Mode::Abstract | Mode::Partial => st.abstract_queries += 1,
            Mode::Concrete { .. } => st.concrete_queries += 1,
        }
        if res == SatResult::Unknown {
            st.timeouts += 1;
        }
        st.solver_time += started.elapsed();
        out
    }

    /// The path condition in the semantics of `mode` (the translations are computed once).
    fn facts_in(&mut self, mode: Mode) -> Vec<Bool> {
        match mode {
            Mode::Abstract => self.facts.iter().map(|(f, _)| f.clone()).collect(),
            Mode::Partial => {
                for i in self.partial_facts.len()..self.facts.len() {
                    let p = self.abs.partial(&self.facts[i].0);
                    self.partial_facts.push(p);
                }
                self.partial_facts.clone()
            }
            Mode::Concrete { .. } => {
                self.concretize_facts();
                self.concrete_facts.clone()
            }
        }
    }

    /// Compute the concrete meaning of the facts not yet translated.
    pub(super) fn concretize_facts(&mut self) {
        for i in self.concrete_facts.len()..self.facts.len() {
            let c = self.abs.concrete(&self.facts[i].0);
            self.concrete_facts.push(c);
        }
    }

    /// Whether the query `facts ∧ ¬claim` is the same in modes `a` and `b` (so that a model
    /// of one is a model of the other).
    fn same_query(&mut self, claim: &Bool, a: Mode, b: Mode) -> bool {
        if self.abs.defs.is_empty() {
            return true;
        }
        let (fa, fb) = (self.facts_in(a), self.facts_in(b));
        fa.iter().zip(&fb).all(|(x, y)| x.ast_eq(y)) && self.abs.in_mode(claim, a).ast_eq(self.abs.in_mode(claim, b))
    }

    /// Look for a real counterexample near the abstract one before a full-semantics query
    /// (which may time out on multiplier circuits even when counterexamples abound): the
    /// abstract model's input values, then special and pseudo-random ones, are substituted
    /// into the concrete query and evaluated (other symbols as in the abstract model). When
    /// one satisfies it, a solver with the inputs fixed to it returns the model.
    pub(super) fn probe(
        &mut self,
        claim: &Bool,
        model: &z3::Model,
    ) -> Option<(SatResult, Option<z3::Model>, Option<String>)> {
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
        let mut rng = trace_interp::rng::Rng::new(0x9e37_79b9 ^ self.stats.claims as u64);
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

    /// Decide `facts ∧ ¬claim` by abstraction refinement: first from the facts that share
    /// symbols with the claim ([`Validator::proved_by_slice`]), then with heavy ops abstracted
    /// (unsatisfiable there means unsatisfiable with any meaning of them, so with the real
    /// one); then with the heavy ops that have a constant operand interpreted (the same
    /// argument for the others); otherwise with the full bit-vector semantics, whose model is
    /// then a real counterexample. A full query that times out is retried without the path
    /// facts that involve multiplication or division (fewer assumptions only make a proof
    /// harder).
    pub(super) fn decide(&mut self, claim: &Bool) -> (SatResult, Option<z3::Model>, Option<String>) {
        self.stats.claims += 1;
        if self.proved_by_slice(claim) {
            return (SatResult::Unsat, None, None);
        }
        let (mut last, mut mode) = (self.check(claim, Mode::Abstract), Mode::Abstract);
        if last.0 == SatResult::Unsat {
            return last;
        }
        if self.abs.has_partial() && !self.same_query(claim, Mode::Abstract, Mode::Partial) {
            (last, mode) = (self.check(claim, Mode::Partial), Mode::Partial);
            if last.0 == SatResult::Unsat {
                return last;
            }
        }
        let concrete = Mode::Concrete { light: false };
        let mut result = if self.same_query(claim, mode, concrete) {
            last
        } else {
            self.stats.refined += 1;
            match last.1.as_ref().and_then(|m| self.probe(claim, m)) {
                Some(found) => found,
                None => self.check(claim, concrete),
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
    pub(super) fn prove(&mut self, claim: &Bool, what: impl Fn() -> String, diff: Option<(&BV, &BV)>) -> R<()> {
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

    pub(super) fn drain_escape_facts(&mut self) {
        let mut new: Vec<Bool> = self.o.esc_facts.drain(..).collect();
        new.append(&mut self.p.esc_facts);
        for f in new {
            self.facts.push((f, false));
        }
    }

    /// Start collecting claims instead of proving them one by one.
    pub(super) fn open_batch(&mut self) {
        self.batch = Some(Vec::new());
    }

    /// Prove the collected claims with one query; when it fails, find the failing claim
    /// with one query each.
    pub(super) fn flush(&mut self) -> R<()> {
        self.drain_escape_facts();
        let Some(batch) = self.batch.take() else { return Ok(()) };
        if batch.is_empty() {
            return Ok(());
        }
        if batch.len() > 1 {
            let all = Bool::and(&batch.iter().map(|(c, _, _)| c.clone()).collect::<Vec<_>>());
            if self.proved_by_slice(&all) || self.check(&all, Mode::Abstract).0 == SatResult::Unsat {
                return Ok(());
            }
        }
        for (claim, what, diff) in batch {
            self.prove(&claim, || what.clone(), diff.as_ref().map(|(a, b)| (a, b)))?;
        }
        Ok(())
    }

    /// Whether `extra` is consistent with the path condition (with the full semantics):
    /// `None` when Z3 cannot tell.
    pub(super) fn satisfiable(&mut self, extra: &Bool) -> Option<bool> {
        let claim = extra.not();
        let concrete = Mode::Concrete { light: false };
        let mut modes = vec![Mode::Abstract];
        if self.abs.has_partial() && !self.same_query(&claim, Mode::Abstract, Mode::Partial) {
            modes.push(Mode::Partial);
        }
        if !self.same_query(&claim, *modes.last().expect("a mode"), concrete) {
            modes.push(concrete);
        }
        let last = modes.len() - 1;
        for (i, mode) in modes.into_iter().enumerate() {
            match self.check(&claim, mode).0 {
                SatResult::Unsat => return Some(false),
                SatResult::Sat if i == last => return Some(true),
                SatResult::Sat => {}
                SatResult::Unknown => return None,
            }
        }
        None
    }

    pub(super) fn structural(&self, message: String) -> Counterexample {
        Counterexample {
            message,
            inputs: Vec::new(),
            differing: None,
            original: Vec::new(),
            optimized: Vec::new(),
        }
    }

    pub(super) fn counterexample(
        &self,
        model: Option<z3::Model>,
        message: String,
        diff: Option<(&BV, &BV)>,
    ) -> Counterexample {
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
}
