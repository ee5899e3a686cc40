//! Criterion benchmarks of the example programs (interpreter, JIT unoptimized, JIT optimized,
//! the loop in Rust) and of the backend's compile throughput. Throughput is per unit of `N`,
//! so criterion's "elem/s" compares across variants run with different `N`; the compile
//! group counts trace ops (`cargo bench -p benches --bench examples -- compile`).

use backend_x86_64::{CompileOptions, Compiler};
use benches::{bench_n, compile_set, optimized_traces, run_variant, Variant, EXAMPLES};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn examples(c: &mut Criterion) {
    for ex in EXAMPLES {
        let mut g = c.benchmark_group(ex.name);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        for v in Variant::ALL {
            let n = bench_n(ex, v);
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(v.name(), |b| b.iter(|| run_variant(ex, v, n)));
        }
        g.finish();
    }
}

/// Backend compile throughput in trace ops per second: the optimized example traces (one
/// benchmark each) and sets of random traces of about 100, 1,000 and 10,000 ops.
fn compile_throughput(c: &mut Criterion) {
    let traces = optimized_traces();
    let mut g = c.benchmark_group("compile");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    let opts = CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    let mut compiler = Compiler::new();
    for (name, t) in &traces {
        g.throughput(Throughput::Elements(t.num_real_ops() as u64));
        g.bench_function(name.as_str(), |b| {
            b.iter(|| compiler.compile(t, &opts).expect("compiles"))
        });
    }
    for len in [100usize, 1_000, 10_000] {
        let set = compile_set(len);
        let ops: usize = set.iter().map(|t| t.num_real_ops()).sum();
        g.throughput(Throughput::Elements(ops as u64));
        g.bench_function(format!("random_{len}_ops"), |b| {
            b.iter(|| {
                for t in &set {
                    black_box(compiler.compile(black_box(t), &opts).expect("compiles"));
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, examples, compile_throughput);
criterion_main!(benches);
