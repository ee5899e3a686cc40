//! Shared helpers of the optimizer tests: golden comparison and differential runs.
#![allow(dead_code)]

use optimizer::{optimize, Optimized, Options};
use trace_interp::runs_equivalent;
use trace_interp::{run, Outcome, RtValue, RunConfig};
use trace_ir::{parse_trace, print_trace, traces_equivalent, Kind, Trace};

/// Parse a trace of a test, panicking with the parse error.
pub fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("test trace does not parse: {e}\n{text}"))
}

/// All parts on, and loop peeling.
pub fn peel() -> Options {
    Options {
        peel: true,
        ..Options::default()
    }
}

/// Optimize `input` with all parts on and compare with `expected` (structurally: op
/// positions, constants and descriptors by value, guard ids, fail arguments, virtuals).
/// Returns the result for further checks.
pub fn check(input: &str, expected: &str) -> Optimized {
    check_with(input, expected, &Options::default())
}

/// [`check`] with explicit options.
pub fn check_with(input: &str, expected: &str, opts: &Options) -> Optimized {
    let t = parse(input);
    let out = optimize(&t, opts).unwrap_or_else(|e| panic!("optimize failed: {e}"));
    let want = parse(expected);
    if let Err(e) = traces_equivalent(&out.trace, &want) {
        panic!(
            "optimized trace differs from the expectation: {e}\n--- got:\n{}\n--- expected:\n{}",
            print_trace(&out.trace),
            print_trace(&want)
        );
    }
    out
}

/// A deterministic stream of test inputs: special integers and random words.
pub struct Inputs {
    state: u64,
}

const SPECIAL: &[i64] = &[
    0,
    1,
    -1,
    2,
    -2,
    7,
    8,
    15,
    16,
    255,
    256,
    1023,
    i64::MAX,
    i64::MIN,
    i64::MAX - 1,
    i64::MIN + 1,
    1 << 32,
    -(1 << 32),
    1 << 62,
];

impl Inputs {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Inputs {
        Inputs {
            state: seed ^ 0x9e37_79b9_7f4a_7c15,
        }
    }
    fn next(&mut self) -> u64 {
        // SplitMix64
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// One value of `kind`.
    pub fn value(&mut self, kind: Kind) -> RtValue {
        let r = self.next();
        match kind {
            Kind::Int => RtValue::Int(match r % 4 {
                0 => SPECIAL[(r >> 8) as usize % SPECIAL.len()],
                1 => ((r >> 8) % 64) as i64 - 32,
                2 => ((r >> 8) % 2048) as i64 - 1024,
                _ => (r >> 3) as i64 ^ (r << 61) as i64,
            }),
            Kind::Float => RtValue::float(match r % 3 {
                0 => 0.0,
                1 => ((r >> 8) % 1000) as f64 / 8.0 - 60.0,
                _ => f64::from_bits(r >> 2),
            }),
            Kind::Ref => RtValue::Ref(match r % 4 {
                0 => 0,
                _ => 0x5000_0000_0000 | ((r >> 8) & 0x0fff_ffff_fff8) | 8,
            }),
            Kind::Void => RtValue::Int(0),
        }
    }
    /// One value per input of `t`.
    pub fn for_trace(&mut self, t: &Trace) -> Vec<RtValue> {
        t.input_kinds().into_iter().map(|k| self.value(k)).collect()
    }
}

/// Run `original` and `optimized` on `inputs`; `Ok(false)` when the original is invalid there
/// (skipped: the optimizer may do anything where the original has undefined behaviour).
pub fn same_behaviour(original: &Trace, optimized: &Trace, inputs: &[RtValue]) -> Result<bool, String> {
    same_behaviour_under(original, optimized, inputs, &RunConfig::default())
}

/// [`same_behaviour`] under the run configuration `cfg`.
pub fn same_behaviour_under(
    original: &Trace,
    optimized: &Trace,
    inputs: &[RtValue],
    cfg: &RunConfig,
) -> Result<bool, String> {
    let cfg = cfg.clone();
    let a = run(original, inputs, &cfg);
    if matches!(a.outcome, Outcome::Invalid { .. }) {
        return Ok(false);
    }
    let b = run(optimized, inputs, &cfg);
    // A peeled optimization (`Options::peel`, one label more) reports its body's copied
    // guards by resume key and runs one body more before the iteration limit.
    let peeled = trace_ir::is_peeled_form(original, optimized);
    if peeled && [&a, &b].iter().any(|r| matches!(r.outcome, Outcome::IterationLimit)) {
        return Ok(false);
    }
    runs_equivalent(original, optimized, inputs, &cfg, &a, &b).map_err(|e| {
        format!(
            "inputs {inputs:?}\noriginal: {}\noptimized: {}\n{e}\n--- original:\n{}\n--- optimized:\n{}",
            a.outcome,
            b.outcome,
            print_trace(original),
            print_trace(optimized)
        )
    })?;
    Ok(true)
}
