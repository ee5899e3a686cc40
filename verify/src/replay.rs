//! Concrete confirmation of counterexamples the validator cannot decide symbolically: float
//! operations are uninterpreted functions in [`crate::validate`], so a counterexample that
//! depends on them may not be real. The reference interpreter runs both traces on the
//! counterexample's inputs, and on variants of them whose float inputs are replaced by
//! special values (NaNs with different payloads, signed zeros, infinities: where the IR's
//! float semantics tells operand orders apart); a difference between the runs (the original
//! run having a defined outcome) is a real one.

use crate::validate::Counterexample;
use trace_interp::{run, runs_equivalent, Outcome, RtValue, RunConfig};
use trace_ir::{Kind, Trace};

/// Float inputs tried in place of the counterexample's: NaNs with payloads (quiet and
/// signaling, both signs), signed zeros, infinity, one.
const FLOATS: &[u64] = &[
    0x7ff8_0000_0000_0001,
    0xfff8_0000_0000_0002,
    0x7ff0_0000_0000_0003,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0x3ff0_0000_0000_0000,
];

/// Most input vectors tried.
const MAX_RUNS: usize = 400;

/// A concrete counterexample to the equivalence of `original` and `optimized` near
/// `witness` (see the module documentation), if the interpreter finds one.
pub fn confirm(original: &Trace, optimized: &Trace, witness: &Counterexample) -> Option<Counterexample> {
    let kinds = original.input_kinds();
    if kinds != optimized.input_kinds() {
        return None;
    }
    let base: Vec<u64> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let name = format!("{}{}", k.prefix(), i);
            witness
                .inputs
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |&(_, v)| v as u64)
        })
        .collect();
    let floats: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == Kind::Float).collect();
    let choices = FLOATS.len() + 1;
    let total = choices
        .checked_pow(floats.len() as u32)
        .unwrap_or(usize::MAX)
        .min(MAX_RUNS);
    let cfg = RunConfig::default();
    for n in 0..total {
        let mut bits = base.clone();
        let mut k = n;
        for &i in &floats {
            let c = k % choices;
            k /= choices;
            if c > 0 {
                bits[i] = FLOATS[c - 1];
            }
        }
        let inputs: Vec<RtValue> = kinds
            .iter()
            .zip(&bits)
            .map(|(&k, &b)| RtValue::from_bits(k, b))
            .collect();
        let a = run(original, &inputs, &cfg);
        if matches!(a.outcome, Outcome::Invalid { .. } | Outcome::IterationLimit) {
            continue;
        }
        let b = run(optimized, &inputs, &cfg);
        if let Err(e) = runs_equivalent(original, optimized, &inputs, &cfg, &a, &b) {
            return Some(Counterexample {
                message: format!("{} (confirmed by the reference interpreter: {e})", witness.message),
                inputs: kinds
                    .iter()
                    .zip(&bits)
                    .enumerate()
                    .map(|(i, (k, &b))| (format!("{}{}", k.prefix(), i), b as i64))
                    .collect(),
                differing: None,
                original: Vec::new(),
                optimized: Vec::new(),
            });
        }
    }
    None
}
