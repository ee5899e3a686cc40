//! Optimizer throughput (input ops per second): random traces of 100, 1,000 and 10,000 ops
//! (with heap ops, calls and loops) and the pypy-dev corpus (its unoptimized traces).
//!
//! Criterion measures wall-clock time. On a loaded machine, set `TRACEJIT_BENCH_CPU=1` to
//! also print the throughput per CPU second of this thread (Linux `schedstat`), which other
//! processes do not inflate. `TRACEJIT_BENCH_OFF=cse,rules` switches parts off;
//! `TRACEJIT_BENCH_BASELINE=1` measures a trace copy plus one verifier pass instead (a
//! calibration of the machine: the cheapest linear pass over a trace).

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use optimizer::{Optimizer, Options};
use std::hint::black_box;
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::Trace;

/// Several random traces of about `len` ops (different seeds, so one odd trace does not
/// dominate).
fn random_set(len: usize, count: u64) -> Vec<Trace> {
    let cfg = RandomConfig {
        length: len,
        ..RandomConfig::default()
    };
    (0..count).map(|s| random_trace(&cfg, 1000 + s).0).collect()
}

fn corpus() -> Vec<Trace> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return out;
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.extension().map(|x| x == "pypylog").unwrap_or(false) {
            if let Ok(text) = std::fs::read_to_string(&p) {
                if let Ok(ts) = trace_ir::parse_file(&text) {
                    out.extend(
                        ts.into_iter()
                            .filter(|t| t.info.section.as_deref() == Some("jit-log-noopt")),
                    );
                }
            }
        }
    }
    out
}

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
    for (len, count) in [(100usize, 40u64), (1_000, 8), (10_000, 2)] {
        let set = random_set(len, count);
        bench_set(c, "optimize_random", &format!("{len}_ops"), &set);
    }
    let corpus = corpus();
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
        for (len, count) in [(100usize, 40u64), (1_000, 8), (10_000, 2)] {
            cpu_throughput(&format!("random {len} ops"), &random_set(len, count), 2.0);
        }
        cpu_throughput("pypy-dev corpus", &corpus(), 2.0);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
