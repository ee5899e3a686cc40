//! A throughput driver for the optimizer: optimizes the optimizer benchmark's sets (random
//! traces of 100, 1,000 or 10,000 ops, or the pypy-dev corpus's unoptimized traces) in a loop
//! for a while with one reusable `Optimizer` context and prints input ops per CPU-second of
//! this thread, so two builds can be run alternately and compared side by side, and
//! `perf record` sees nothing but optimization.
//!
//! `cargo build --release -p benches --bin opt_profile`, then
//! `target/release/opt_profile [LEN|corpus] [SECONDS] [--peel]` (defaults: 1000 ops, 3 s).

use optimizer::{Optimizer, Options};
use std::hint::black_box;
use std::time::Instant;
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::Trace;

/// The optimizer benchmark's sets: several random traces of about `len` ops.
fn random_set(len: usize) -> Vec<Trace> {
    let count = match len {
        0..=100 => 40,
        101..=1000 => 8,
        _ => 2,
    };
    let cfg = RandomConfig {
        length: len,
        ..RandomConfig::default()
    };
    (0..count).map(|s| random_trace(&cfg, 1000 + s).0).collect()
}

/// The unoptimized traces of the pypy-dev corpus.
fn corpus() -> Vec<Trace> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pypylog"))
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| trace_ir::parse_file(&std::fs::read_to_string(p).expect("readable")).expect("parses"))
        .filter(|t| t.info.section.as_deref() == Some("jit-log-noopt"))
        .collect()
}

/// CPU time of this thread in seconds (Linux `schedstat`).
fn thread_cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    s.split_whitespace()
        .next()
        .and_then(|w| w.parse::<f64>().ok())
        .expect("a number")
        / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let set = args.first().map(String::as_str).unwrap_or("1000");
    let secs: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let opts = Options {
        peel: args.iter().any(|a| a == "--peel"),
        ..Options::default()
    };
    let traces = if set == "corpus" {
        corpus()
    } else {
        random_set(set.parse().expect("LEN or corpus"))
    };
    let ops: usize = traces.iter().map(|t| t.num_real_ops()).sum();
    let mut optimizer = Optimizer::new();
    let c0 = thread_cpu_seconds();
    let t0 = Instant::now();
    let mut rounds = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        for t in &traces {
            black_box(optimizer.optimize(black_box(t), &opts).expect("optimizes"));
        }
        rounds += 1;
    }
    let cpu = thread_cpu_seconds() - c0;
    let rate = (ops as u64 * rounds) as f64 / cpu;
    println!(
        "{set}: {} traces, {ops} ops, {rounds} rounds, {:.2} M input ops per CPU-second",
        traces.len(),
        rate / 1e6
    );
}
