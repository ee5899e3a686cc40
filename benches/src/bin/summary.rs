//! Prints the benchmark summary as markdown tables (the README reproduces them): time per
//! unit of `N` of each example in each mode and in Rust, the ratios optimized/unoptimized and
//! optimized/Rust, and the backend's compile throughput.
//!
//! `cargo run --release -p benches --bin summary [-- --reps K]` (best of K runs, default 3).

use backend_x86_64::{compile, CompileOptions};
use benches::{bench_n, optimized_traces, time_variant, Variant, EXAMPLES};
use std::time::Instant;

fn main() {
    let mut reps = 3usize;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, k] = &args[..] {
        if flag == "--reps" {
            reps = k.parse().unwrap_or(3);
        }
    }
    println!(
        "| program | interp ns/N | jit-noopt ns/N | jit-opt ns/N | Rust ns/N | Rust scalar ns/N | opt vs interp | opt vs noopt | opt / Rust | opt / Rust scalar |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut notes = Vec::new();
    let mut failed = false;
    for ex in EXAMPLES {
        let mut per_n = Vec::new();
        let mut outputs = Vec::new();
        for v in Variant::ALL {
            let n = bench_n(ex, v);
            // The fast variants take milliseconds: more repetitions against scheduling noise.
            let k = if matches!(
                v,
                Variant::Mode(examples::lang::vm::Mode::JitOptimized) | Variant::Rust | Variant::RustScalar
            ) {
                reps * 3
            } else {
                reps
            };
            let (t, out) = time_variant(ex, v, n, k);
            per_n.push(t.as_secs_f64() * 1e9 / n as f64);
            outputs.push((n, out));
        }
        // Same N, same output: check the variants agree at their own sizes via the Rust loop.
        for (v, (n, out)) in Variant::ALL.iter().zip(&outputs) {
            if *out != (ex.native)(*n) {
                eprintln!("MISMATCH: {} {} printed {out:?}", ex.name, v.name());
                failed = true;
            }
        }
        let (interp, noopt, opt, rust, scalar) = (per_n[0], per_n[1], per_n[2], per_n[3], per_n[4]);
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.0}× | {:.1}× | {} | {:.2} |",
            ex.name,
            interp,
            noopt,
            opt,
            rust,
            scalar,
            interp / opt,
            noopt / opt,
            if rust > 0.005 {
                format!("{:.2}", opt / rust)
            } else {
                "∞ (closed form)".to_string()
            },
            opt / scalar
        );
        if ex.integer_kernel && interp / opt < 20.0 {
            notes.push(format!(
                "{}: optimized vs interpreter {:.1}× (target ≥ 20×)",
                ex.name,
                interp / opt
            ));
        }
        if noopt / opt < 3.0 {
            notes.push(format!(
                "{}: optimized vs unoptimized {:.1}× (target ≥ 3×)",
                ex.name,
                noopt / opt
            ));
        }
        if opt / scalar > 1.5 {
            notes.push(format!(
                "{}: optimized / scalar Rust {:.2} (target ≤ 1.5)",
                ex.name,
                opt / scalar
            ));
        }
        if opt / rust > 1.5 {
            notes.push(format!(
                "{}: optimized / Rust as LLVM compiles it {:.2} (target ≤ 1.5)",
                ex.name,
                opt / rust
            ));
        }
    }
    println!();
    println!(
        "ns/N: best of {reps} whole runs ({} for jit-opt and Rust) divided by N (one loop iteration; for fnv_hash one round of 1024 hash steps).",
        reps * 3
    );
    println!("Interpreter and jit-noopt run with N = demo size / 2, jit-opt and Rust with N = demo size × 4.");
    println!("Rust: the loop as LLVM compiles it (vectorized or closed form where it can). Rust scalar: the same loop");
    println!("with an empty asm! barrier on the loop counter, i.e. plain scalar code like a tracing JIT emits.");
    println!();
    println!("| trace (optimized) | ops | compile µs | ops per ms |");
    println!("|---|---:|---:|---:|");
    let opts = CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    for (name, t) in optimized_traces() {
        let k = 200;
        let t0 = Instant::now();
        for _ in 0..k {
            compile(&t, &opts).expect("compiles");
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / k as f64;
        let ops = t.num_real_ops();
        println!("| {name} | {ops} | {us:.1} | {:.0} |", ops as f64 / us * 1e3);
    }
    println!();
    if notes.is_empty() {
        println!("All targets met (≥ 20× over the interpreter on integer kernels, ≥ 3× over unoptimized traces, ≤ 1.5× native Rust).");
    } else {
        println!("Targets not met:");
        for n in notes {
            println!("- {n}");
        }
    }
    if failed {
        std::process::exit(1);
    }
}
