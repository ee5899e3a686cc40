//! Proving a claim from the facts that share its symbols: the path condition of a long trace
//! holds hundreds of facts, most of them about values the claim does not involve, and Z3 can
//! take seconds to see that.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use z3::ast::{Ast, Bool, Dynamic};
use z3::{Params, SatResult, Solver, SortKind};

use super::abstraction::Mode;
use super::validator::Validator;

/// The time limit of a query on a slice, in milliseconds (at most the configured one): a slice
/// that does not prove the claim quickly leaves it to the whole path condition.
const SLICE_MS: u32 = 150;

/// The symbols of terms: the uninterpreted constants (inputs, results of ops Z3 does not
/// interpret, escaped objects' addresses) of a bit-vector or Boolean sort. Heap arrays and
/// uninterpreted functions are left out: nearly every fact reads the heap, so they would put
/// every fact in every slice (the slice is only an attempt; leaving facts out never proves
/// a claim that does not hold).
#[derive(Default)]
pub(super) struct Symbols(HashMap<Bool, Rc<HashSet<Dynamic>>>);

impl Symbols {
    fn of(&mut self, fact: &Bool) -> Rc<HashSet<Dynamic>> {
        if let Some(s) = self.0.get(fact) {
            return s.clone();
        }
        let s = Rc::new(symbols(&Dynamic::from_ast(fact)));
        self.0.insert(fact.clone(), s.clone());
        s
    }
}

fn symbols(t: &Dynamic) -> HashSet<Dynamic> {
    let mut out = HashSet::new();
    let mut seen = HashSet::new();
    let mut stack = vec![t.clone()];
    while let Some(t) = stack.pop() {
        if !seen.insert(t.clone()) {
            continue;
        }
        let kids = t.children();
        if kids.is_empty() {
            // (Not by the declaration's kind, which the system Z3 may number differently from
            // the bindings' enumeration: a leaf that is no value.)
            let symbol = match t.sort_kind() {
                SortKind::Bv => t.as_bv().is_some_and(|b| b.as_u64().is_none()),
                SortKind::Bool => t.as_bool().is_some_and(|b| b.as_bool().is_none()),
                _ => false,
            };
            if symbol {
                out.insert(t);
            }
        } else {
            stack.extend(kids);
        }
    }
    out
}

impl<'t> Validator<'t> {
    /// Whether `claim` follows from the facts that share symbols with it (transitively), with
    /// heavy ops abstracted: then it follows from all of them. `false` also when the slice is
    /// the whole path condition (nothing to gain) or Z3 does not decide it quickly.
    pub(super) fn proved_by_slice(&mut self, claim: &Bool) -> bool {
        let n = self.facts.len();
        if n < 16 {
            return false;
        }
        let mut wanted = (*self.symbols.of(claim)).clone();
        let syms: Vec<Rc<HashSet<Dynamic>>> = self.facts.iter().map(|(f, _)| self.symbols.of(f)).collect();
        // Symbols in many facts (escaped objects' addresses, stated apart from every
        // reference) would join every fact to every other: a fact that shares a symbol with
        // the slice joins it, but adds its other symbols to the slice only where they are
        // not such hubs.
        let mut uses: HashMap<&Dynamic, usize> = HashMap::new();
        for s in &syms {
            for x in s.iter() {
                *uses.entry(x).or_default() += 1;
            }
        }
        let hub = (n / 16).max(16);
        let mut taken = vec![false; n];
        let mut count = 0;
        loop {
            let mut grew = false;
            for (i, s) in syms.iter().enumerate() {
                // (A fact without symbols is about constants or the heap alone: kept.)
                if !taken[i] && (s.is_empty() || s.iter().any(|x| wanted.contains(x))) {
                    taken[i] = true;
                    count += 1;
                    wanted.extend(s.iter().filter(|x| uses[x] <= hub).cloned());
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        if count * 4 > n * 3 {
            return false;
        }
        let started = std::time::Instant::now();
        let solver = Solver::new();
        let mut params = Params::new();
        params.set_u32("timeout", self.cfg.timeout_ms.min(SLICE_MS));
        solver.set_params(&params);
        for f in &self.abs.axioms {
            solver.assert(self.abs.in_mode(f, Mode::Abstract));
        }
        for ((f, _), _) in self.facts.iter().zip(&taken).filter(|(_, &t)| t) {
            solver.assert(f);
        }
        solver.assert(self.abs.in_mode(claim, Mode::Abstract).not());
        let res = solver.check();
        self.stats.abstract_queries += 1;
        self.stats.solver_time += started.elapsed();
        res == SatResult::Unsat
    }
}
