//! Shared helpers of the benchmarks: problem sizes per mode, timing of whole example runs
//! and of the same loops written in Rust, and the traces whose compilation is measured.
//!
//! Times are normalised per unit of `N` (one loop iteration for most programs, one round of
//! 1024 hash steps for `fnv_hash`), so modes run with different `N` can be compared: the
//! interpreter and the unoptimized JIT get a smaller `N` than the optimized JIT and Rust.
#![deny(missing_docs)]

pub mod chart;

use examples::lang::vm::{run_source, Config, Engine, LogFlags, Mode, RunOutput};
use examples::programs::Example;
use std::hint::black_box;
use std::time::{Duration, Instant};
use trace_ir::Trace;

pub use examples::programs::EXAMPLES;

/// What is measured for one example.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    /// A run of the program in this mode (native code for the JIT modes).
    Mode(Mode),
    /// The loop written in Rust, as LLVM compiles it (it may vectorize or use a closed form).
    Rust,
    /// The loop written in Rust with an optimization barrier on the counter (scalar code).
    RustScalar,
}

impl Variant {
    /// All variants, in table order.
    pub const ALL: [Variant; 5] = [
        Variant::Mode(Mode::Interpreter),
        Variant::Mode(Mode::JitUnoptimized),
        Variant::Mode(Mode::JitOptimized),
        Variant::Rust,
        Variant::RustScalar,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Mode(m) => m.name(),
            Variant::Rust => "rust",
            Variant::RustScalar => "rust-scalar",
        }
    }
}

/// `N` used to measure `variant` of `ex`.
pub fn bench_n(ex: &Example, variant: Variant) -> i64 {
    match variant {
        Variant::Mode(Mode::Interpreter) | Variant::Mode(Mode::JitUnoptimized) => ex.demo_n / 2,
        Variant::Mode(Mode::JitOptimized) => ex.demo_n * 4,
        Variant::Rust | Variant::RustScalar => ex.demo_n * 4,
    }
}

/// Run `ex` in `mode` with native code, without logging.
pub fn run_mode(ex: &Example, mode: Mode, n: i64) -> Result<RunOutput, String> {
    let mut cfg = Config::new(mode, Engine::Native);
    cfg.log = LogFlags::default();
    run_source(ex.source, &[("N", n)], cfg)
}

/// Run one variant once; returns what it printed.
pub fn run_variant(ex: &Example, variant: Variant, n: i64) -> String {
    match variant {
        Variant::Mode(m) => {
            run_mode(ex, m, black_box(n))
                .unwrap_or_else(|e| panic!("{} in {}: {e}", ex.name, m.name()))
                .output
        }
        Variant::Rust => (ex.native)(black_box(n)),
        Variant::RustScalar => (ex.scalar)(black_box(n)),
    }
}

/// The best of `reps` timings of `variant` with `n`, and what it printed.
pub fn time_variant(ex: &Example, variant: Variant, n: i64, reps: usize) -> (Duration, String) {
    let mut best = Duration::MAX;
    let mut out = String::new();
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        out = run_variant(ex, variant, n);
        best = best.min(t0.elapsed());
    }
    (best, out)
}

/// The traces recorded by an optimized run of each example (`test_n` iterations), per program.
pub fn recorded_traces() -> Vec<(&'static str, Vec<Trace>)> {
    EXAMPLES
        .iter()
        .map(|ex| {
            let out = run_mode(ex, Mode::JitOptimized, ex.test_n).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            (ex.name, out.stats.traces.into_iter().map(|t| t.recorded).collect())
        })
        .collect()
}

/// The traces compiled by an optimized run of each example: `(name, optimized trace)`,
/// named `program` or `program#k` for the k-th trace of a program (k ≥ 2).
pub fn optimized_traces() -> Vec<(String, Trace)> {
    let mut v = Vec::new();
    for ex in EXAMPLES {
        let out = run_mode(ex, Mode::JitOptimized, ex.test_n).expect("example runs");
        for (k, t) in out.stats.traces.into_iter().enumerate() {
            let name = if k == 0 {
                ex.name.to_string()
            } else {
                format!("{}#{}", ex.name, k + 1)
            };
            v.push((name, t.compiled));
        }
    }
    v
}

/// The backend compile benchmark's set of random traces of about `len` ops (heap ops, calls,
/// floats and loops; fixed seeds), shared by the criterion `compile` group and the
/// `compile_profile` driver so both measure the same input.
pub fn compile_set(len: usize) -> Vec<trace_ir::Trace> {
    let count = (40_000 / len.max(1)).clamp(2, 40) as u64;
    let cfg = trace_interp::random::RandomConfig {
        length: len,
        ..trace_interp::random::RandomConfig::default()
    };
    (0..count)
        .map(|s| trace_interp::random::random_trace(&cfg, 1000 + s).0)
        .collect()
}

/// The optimizer benchmark's set of random traces of about `len` ops (40 of 100 ops, 8 of
/// 1,000, 2 of 10,000; fixed seeds, so one odd trace does not dominate), shared by the
/// criterion `optimizer` benchmark and the `opt_profile` driver.
pub fn optimizer_set(len: usize) -> Vec<trace_ir::Trace> {
    let count = match len {
        0..=100 => 40,
        101..=1000 => 8,
        _ => 2,
    };
    let cfg = trace_interp::random::RandomConfig {
        length: len,
        ..trace_interp::random::RandomConfig::default()
    };
    (0..count)
        .map(|s| trace_interp::random::random_trace(&cfg, 1000 + s).0)
        .collect()
}

/// The unoptimized traces (`jit-log-noopt` sections) of the pypy-dev corpus
/// (`../shared/corpus/pypy-dev/*.pypylog`), in file order; empty when the corpus is absent.
pub fn corpus_noopt() -> Vec<trace_ir::Trace> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pypylog"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|text| trace_ir::parse_file(&text).ok())
        .flatten()
        .filter(|t| t.info.section.as_deref() == Some("jit-log-noopt"))
        .collect()
}
