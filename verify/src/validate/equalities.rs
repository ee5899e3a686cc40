//! Values proven equal on both sides: the original's value takes the optimized trace's term.

use z3::ast::BV;
use z3::SatResult;

use super::abstraction::Mode;
use super::side::Sym;
use super::validator::Validator;

/// The time limit of a query that only looks for an equality to reuse (its failure costs
/// nothing but time).
const LEARN_MS: u32 = 100;

impl<'t> Validator<'t> {
    /// Note that the original's value `a` and the optimized trace's `b` are compared at a sync
    /// point: a candidate for [`Validator::learn_equalities`].
    pub(super) fn note_equal_candidate(&mut self, a: &BV, b: &BV) {
        if a.ast_eq(b) || a.as_u64().is_some() {
            return;
        }
        self.equal_candidates.push((a.clone(), b.clone()));
    }

    /// For each candidate pair noted since the last call whose original value is the value of
    /// ops of the original (each pair once), try to prove the two values equal under the path
    /// condition (heavy ops abstracted, a short time limit); when proven, those ops get the
    /// optimized trace's term from now on. Sound: the path condition only grows along the
    /// walk (the facts of a failing guard's exit are dropped before this runs), so every later
    /// query assumes the equality, and a query with one of two terms its facts prove equal
    /// replaced by the other is satisfiable exactly when the query is. The two traces then
    /// compute later values from the same terms, so claims about them are often equal terms
    /// (no query at all) or need only congruence.
    pub(super) fn learn_equalities(&mut self) {
        let candidates = std::mem::take(&mut self.equal_candidates);
        for (a, b) in candidates {
            let first = self.o.trace.num_inputs;
            let ops: Vec<usize> = (first..self.o.pos.min(self.o.vals.len()))
                .filter(|&i| matches!(&self.o.vals[i], Some(Sym::Bv(t)) if t.ast_eq(&a)))
                .collect();
            // A value the optimized trace already computes as the same term stays (replacing
            // it would make claims about that other value harder).
            let shared = (0..self.p.pos.min(self.p.vals.len()))
                .any(|i| matches!(&self.p.vals[i], Some(Sym::Bv(t)) if t.ast_eq(&a)));
            if ops.is_empty() || shared || !self.tried_equal.insert((a.clone(), b.clone())) {
                continue;
            }
            let ms = self.cfg.timeout_ms.min(LEARN_MS);
            if self.check_ms(&a.eq(&b), Mode::Abstract, ms).0 == SatResult::Unsat {
                for i in ops {
                    self.o.vals[i] = Some(Sym::Bv(b.clone()));
                }
                self.stats.learned += 1;
            }
        }
    }
}

/// A candidate: the original's value, the optimized trace's.
pub(super) type Candidate = (BV, BV);
