//! The queries of the miner: the facts of a problem, the claims to prove, and minimization.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use trace_ir::OpFlags;
use z3::ast::{Ast, Bool, BV};
use z3::{Model, Params, SatResult, Solver};

use crate::semantics::{bv, WIDTH};

use super::encode::{Cone, Enc};
use super::render::render;
use super::{Finding, FindingKind, MineConfig, MineStats};

/// The facts of one query: defined ops, guard facts (guard op indices), no-overflow facts
/// (ovf op indices).
#[derive(Clone, Debug)]
pub(super) struct Problem {
    pub(super) defined: BTreeSet<usize>,
    pub(super) guards: Vec<usize>,
    pub(super) ovf: Vec<usize>,
    /// Leaves with a range fact from their load ([`Enc::load_range`]).
    pub(super) ranges: Vec<usize>,
}

/// What a finding claims.
#[derive(Clone, Copy, Debug)]
pub(super) enum Claim {
    /// `v_root == c`.
    Const(usize, u64),
    /// `v_root == v_y`.
    Same(usize, usize),
    /// The ovf op does not overflow.
    NoOverflow(usize),
    /// The guard's condition holds.
    Guard(usize),
}

pub(super) enum Outcome {
    Proven,
    Refuted,
    Unknown,
}

pub(super) struct Miner<'t, 'c> {
    pub(super) enc: Enc<'t>,
    pub(super) cfg: &'c MineConfig,
    pub(super) stats: MineStats,
    /// Minimization cache: unminimized pattern -> (pattern, shape).
    pub(super) cache: HashMap<String, (String, String)>,
}

impl<'t, 'c> Miner<'t, 'c> {
    pub(super) fn facts(&mut self, p: &Problem) -> Vec<Bool> {
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

    pub(super) fn claim(&mut self, c: Claim) -> Option<Bool> {
        match c {
            Claim::Const(r, v) => Some(self.enc.var(r).eq(BV::from_u64(v, WIDTH))),
            Claim::Same(r, y) => Some(self.enc.var(r).eq(self.enc.var(y))),
            Claim::NoOverflow(k) => self.enc.no_ovf(k),
            Claim::Guard(g) => self.enc.guard_fact(g),
        }
    }

    pub(super) fn out_of_time(&mut self) -> bool {
        if self.cfg.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stats.budget_exhausted = true;
        }
        self.stats.budget_exhausted
    }

    /// Check `facts ∧ extra` in a fresh solver.
    pub(super) fn check(&mut self, facts: &[Bool], extra: Option<&Bool>) -> (SatResult, Option<Model>) {
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

    pub(super) fn prove(&mut self, p: &Problem, c: Claim) -> Outcome {
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
    pub(super) fn problem(&mut self, root: usize, limit: usize) -> (Problem, Cone) {
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
    pub(super) fn add_ranges(&mut self, p: &mut Problem, extra: &[usize]) {
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

    pub(super) fn eval(&mut self, m: &Model, k: usize) -> Option<u64> {
        m.eval(&self.enc.var(k), true).and_then(|v| v.as_u64())
    }

    /// Examine op `x`; a finding's claim and the problem it holds in.
    pub(super) fn examine_op(&mut self, x: usize) -> Option<(Claim, Problem)> {
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

    pub(super) fn examine_guard(&mut self, g: usize, c: usize) -> Option<(Claim, Problem)> {
        let (mut p, _) = self.problem(c, g);
        self.add_ranges(&mut p, &[c]);
        match self.prove(&p, Claim::Guard(g)) {
            Outcome::Proven => Some((Claim::Guard(g), p)),
            _ => None,
        }
    }

    /// The ops a claim is about (kept defined and printed).
    pub(super) fn roots(&self, c: Claim) -> Vec<usize> {
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
    pub(super) fn reachable(&self, p: &Problem, c: Claim) -> BTreeSet<usize> {
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

    pub(super) fn minimize(&mut self, mut p: Problem, c: Claim) -> Problem {
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

    pub(super) fn finding(&mut self, x: usize, c: Claim, p: Problem) -> Finding {
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
