//! A profiling driver for the backend: compiles (with one reusable `Compiler` context) the same random traces (100, 1,000 or 10,000
//! ops, the compile benchmark's sets) in a loop for a while and prints the throughput, so
//! `perf record` sees nothing but compilation.
//!
//! `cargo build --release -p benches --bin compile_profile`, then
//! `perf record -g target/release/compile_profile [LEN] [SECONDS] [TRACES]` (defaults: 1000 ops, 5 s,
//! the whole set). `LEN` = `examples` compiles the example programs' optimized traces
//! instead (short traces: the per-trace fixed cost) and also prints µs per trace;
//! `compile_profile print-examples` prints those traces in text form, and `LEN` naming a
//! file compiles the traces of that file (for tools such as valgrind, under which the
//! example programs' native runs cannot run).

use backend_x86_64::{CompileOptions, Compiler};
use benches::{compile_set, optimized_traces};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5.0);
    let first = args.first().map(String::as_str).unwrap_or("");
    let mut traces = if first == "examples" || first == "print-examples" {
        let traces: Vec<_> = optimized_traces().into_iter().map(|(_, t)| t).collect();
        if first == "print-examples" {
            traces.iter().for_each(|t| println!("{}", trace_ir::print_trace(t)));
            return;
        }
        traces
    } else if std::path::Path::new(first).is_file() {
        let text = std::fs::read_to_string(first).expect("reads the trace file");
        trace_ir::parse_file(&text).expect("parses the trace file")
    } else {
        compile_set(args.first().and_then(|a| a.parse().ok()).unwrap_or(1000))
    };
    if let Some(k) = args.get(2).and_then(|a| a.parse().ok()) {
        traces.truncate(k);
    }
    let ops: usize = traces.iter().map(|t| t.num_real_ops()).sum();
    let opts = CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    let mut compiler = Compiler::new();
    let code: usize = traces
        .iter()
        .map(|t| compiler.compile(t, &opts).expect("compiles").code_size())
        .sum();
    let guards: usize = traces.iter().map(|t| t.guards.len()).sum();
    println!("{} bytes of code, {guards} guards", code);
    let c0 = thread_cpu_seconds();
    let t0 = Instant::now();
    let mut rounds = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        for t in &traces {
            black_box(compiler.compile(black_box(t), &opts).expect("compiles"));
        }
        rounds += 1;
    }
    let el = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds().zip(c0).map(|(b, a)| b - a).unwrap_or(el);
    let total = ops as f64 * rounds as f64;
    println!(
        "{} traces, {ops} ops: {rounds} rounds in {el:.2} s wall, {cpu:.2} s CPU = {:.2} M ops/s wall, {:.2} M ops/s CPU, {:.2} µs CPU per trace",
        traces.len(),
        total / el / 1e6,
        total / cpu / 1e6,
        cpu * 1e6 / (rounds as f64 * traces.len() as f64)
    );
}

/// CPU time of this thread in seconds (Linux `schedstat`), if available.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}
