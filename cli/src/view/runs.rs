//! How the recorded and the optimized trace leave on sample runs (`tracejit view --runs N`):
//! both run in the reference interpreter on the same guided random inputs (as `eval-pypy`
//! draws them), and each exit is counted: `finish`, each guard by id, the rest by kind.

use std::collections::BTreeMap;
use trace_interp::guided::guided_inputs;
use trace_interp::random::random_inputs;
use trace_interp::rng::{mix64, Rng};
use trace_interp::{run, Outcome, RunConfig};
use trace_ir::{GuardId, Trace};

/// Exits of one trace over the runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs that failed each guard.
    pub guards: BTreeMap<GuardId, usize>,
    /// Runs that ended otherwise, by kind (`finish`, `jump`, `invalid`, `iteration limit`).
    pub other: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn count(&mut self, o: &Outcome) {
        let kind = match o {
            Outcome::GuardFailed { guard, .. } => {
                *self.guards.entry(*guard).or_default() += 1;
                return;
            }
            Outcome::Finish(_) => "finish",
            Outcome::ExternalJump { .. } => "jump",
            Outcome::Invalid { .. } => "invalid",
            Outcome::IterationLimit => "iteration limit",
        };
        *self.other.entry(kind).or_default() += 1;
    }

    /// One line: `finish 3, Guard2 1, ...`.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self.other.iter().map(|(k, n)| format!("{k} {n}")).collect();
        parts.extend(self.guards.iter().map(|(g, n)| format!("{g} {n}")));
        if parts.is_empty() {
            "no runs".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The exits of `n` runs of `recorded` and of `optimized` on the same inputs, drawn from
/// `seed`.
pub fn tally(recorded: &Trace, optimized: Option<&Trace>, n: usize, seed: u64) -> (Tally, Option<Tally>) {
    let mut rng = Rng::new(mix64(seed ^ 0x7ea5));
    let cfg = RunConfig::default();
    let (mut rec, mut opt) = (Tally::default(), optimized.map(|_| Tally::default()));
    for _ in 0..n {
        let start = random_inputs(&mut rng, recorded);
        let (inputs, gcfg) = guided_inputs(recorded, &start, &cfg, 16);
        rec.count(&run(recorded, &inputs, &gcfg).outcome);
        if let (Some(t), Some(o)) = (optimized, opt.as_mut()) {
            o.count(&run(t, &inputs, &gcfg).outcome);
        }
    }
    (rec, opt)
}
