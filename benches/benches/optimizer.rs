//! Optimizer throughput (input ops per second): random traces of 100, 1,000 and 10,000 ops
//! (with heap ops, calls and loops) and the pypy-dev corpus (its unoptimized traces).
//!
//! Criterion measures wall-clock time. On a loaded machine, set `TRACEJIT_BENCH_CPU=1` to
//! also print the throughput per CPU second of this thread (Linux `schedstat`), which other
//! processes do not inflate. `TRACEJIT_BENCH_OFF=cse,rules` switches parts off;
//! `TRACEJIT_BENCH_BASELINE=1` measures a trace copy plus one verifier pass instead (a
//! calibration of the machine: the cheapest linear pass over a trace).

use benches::{corpus_noopt, optimizer_set};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use optimizer::{Optimizer, Options};
use std::hint::black_box;
use trace_ir::Trace;

fn bench_set(c: &mut Criterion, group: &str, name: &str, traces: &[Trace]) {
    let ops: usize = traces.iter().map(|t| t.num_real_ops()).sum();
    let opts = Options::default();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(ops as u64));
    let mut optimizer = Optimizer::new();
    g.bench_with_input(BenchmarkId::from_parameter(name), traces, |b, ts| {
        b.iter(|| {
            for t in ts {
                black_box(optimizer.optimize(black_box(t), &opts).unwrap());
            }
        })
    });
    g.finish();
}

fn optimizer_benches(c: &mut Criterion) {
    for len in [100usize, 1_000, 10_000] {
        let set = optimizer_set(len);
        bench_set(c, "optimize_random", &format!("{len}_ops"), &set);
    }
    let corpus = corpus_noopt();
    if !corpus.is_empty() {
        bench_set(c, "optimize_corpus", "pypy_dev", &corpus);
    }
}

/// CPU time of this thread in seconds (Linux), if available.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Throughput per CPU second: optimize `traces` repeatedly for about `secs` of CPU time.
fn cpu_throughput(name: &str, traces: &[Trace], secs: f64) {
    let ops: usize = traces.iter().map(|t| t.num_real_ops()).sum();
    let mut opts = Options::default();
    if let Ok(off) = std::env::var("TRACEJIT_BENCH_OFF") {
        for part in off.split(',') {
            opts.set(part, false);
        }
    }
    let Some(start) = thread_cpu_seconds() else { return };
    let mut rounds = 0u64;
    let mut now = start;
    let baseline = std::env::var_os("TRACEJIT_BENCH_BASELINE").is_some();
    let mut optimizer = Optimizer::new();
    while now - start < secs {
        for t in traces {
            if baseline {
                // calibration: one copy and one verifier pass over the trace
                let copy = black_box(t.clone());
                trace_ir::verify(&copy).unwrap();
                black_box(&copy);
            } else {
                black_box(optimizer.optimize(black_box(t), &opts).unwrap());
            }
        }
        rounds += 1;
        now = thread_cpu_seconds().unwrap_or(now + secs);
    }
    let rate = (ops as f64 * rounds as f64) / (now - start);
    println!(
        "cpu-time throughput {name:<24} {:>8.2} M input ops/s ({rounds} rounds of {ops} ops)",
        rate / 1e6
    );
}

criterion_group!(benches, optimizer_benches);

fn main() {
    if std::env::var_os("TRACEJIT_BENCH_CPU").is_some() {
        for len in [100usize, 1_000, 10_000] {
            cpu_throughput(&format!("random {len} ops"), &optimizer_set(len), 2.0);
        }
        cpu_throughput("pypy-dev corpus", &corpus_noopt(), 2.0);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
