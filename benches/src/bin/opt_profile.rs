//! A throughput driver for the optimizer: optimizes the optimizer benchmark's sets (random
//! traces of 100, 1,000 or 10,000 ops, the pypy-dev corpus's unoptimized traces, or the
//! example programs' recorded traces) in a loop for a while with one reusable `Optimizer`
//! context and prints input ops per CPU-second of this thread, so two builds can be run alternately and compared side by side, and
//! `perf record` sees nothing but optimization.
//!
//! `cargo build --release -p benches --bin opt_profile`, then
//! `target/release/opt_profile [LEN|corpus|examples] [SECONDS] [--peel]` (defaults: 1000 ops, 3 s).

use benches::{corpus_noopt, optimizer_set, recorded_traces};
use optimizer::{Optimizer, Options};
use std::hint::black_box;
use std::time::Instant;

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
        corpus_noopt()
    } else if set == "examples" {
        recorded_traces().into_iter().flat_map(|(_, ts)| ts).collect()
    } else {
        optimizer_set(set.parse().expect("LEN, corpus or examples"))
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
