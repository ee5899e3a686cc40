//! Prints the benchmark summary as markdown tables (docs/performance.md reproduces them): time per
//! unit of `N` of each example in each mode and in Rust, the ratios optimized/unoptimized and
//! optimized/Rust, and the backend's compile throughput; with `--svg PATH`, also draws the
//! times as a chart.
//!
//! `cargo run --release -p benches --bin summary [-- --reps K] [--svg PATH]`

use backend_x86_64::{compile, CompileOptions};
use benches::chart::{write_svg, ChartRow};
use benches::{bench_n, optimized_traces, time_variant, Variant, EXAMPLES};
use std::path::PathBuf;
use std::time::Instant;

const USAGE: &str = "usage: summary [--reps K] [--svg PATH]

Measures every example interpreted, JIT-compiled without and with the optimizer, and in Rust,
and prints the times per unit of N as markdown tables.

  --reps K     best of K whole runs (3 times K for the fast variants); default 3
  --svg PATH   also write the times as an SVG chart to PATH: grouped bars per example, one per
               variant, nanoseconds per unit of N on a logarithmic axis; default: no chart";

/// The command line.
struct Args {
    reps: usize,
    svg: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args { reps: 3, svg: None };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--reps" => {
                let k = value()?;
                parsed.reps = match k.parse() {
                    Ok(k) if k > 0 => k,
                    _ => return Err(format!("--reps {k}: not a positive whole number")),
                };
            }
            "--svg" => {
                let path = PathBuf::from(value()?);
                // Found before the minutes of measuring rather than after.
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !dir.is_dir() {
                        return Err(format!("--svg {}: no directory {}", path.display(), dir.display()));
                    }
                }
                parsed.svg = Some(path);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let Args { reps, svg } = parse_args(&args).unwrap_or_else(|e| {
        eprintln!("summary: {e}\n\n{USAGE}");
        std::process::exit(2)
    });
    println!(
        "| program | interp ns/N | jit-noopt ns/N | jit-opt ns/N | Rust ns/N | Rust scalar ns/N | opt vs interp | opt vs noopt | opt / Rust | opt / Rust scalar |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut notes = Vec::new();
    let mut failed = false;
    let mut chart_rows = Vec::new();
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
        chart_rows.push(ChartRow {
            name: ex.name.to_string(),
            ns_per_n: [interp, noopt, opt, rust, scalar],
        });
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
    print_compile_throughput();
    println!();
    if notes.is_empty() {
        println!("All targets met (≥ 20× over the interpreter on integer kernels, ≥ 3× over unoptimized traces, ≤ 1.5× native Rust).");
    } else {
        println!("Targets not met:");
        for n in notes {
            println!("- {n}");
        }
    }
    if let Some(path) = svg {
        match write_svg(&path, &chart_rows) {
            Ok(()) => eprintln!("chart written to {}", path.display()),
            Err(e) => {
                eprintln!("summary: chart: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// Prints the table of compile times of the optimized traces.
fn print_compile_throughput() {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn no_arguments_mean_three_reps_and_no_chart() {
        let a = parse_args(&[]).unwrap();
        assert_eq!((a.reps, a.svg), (3, None));
    }

    #[test]
    fn reps_and_svg_are_read_in_either_order() {
        let dir = std::env::temp_dir();
        let path = dir.join("summary.svg");
        let p = path.to_str().unwrap();
        for list in [["--reps", "5", "--svg", p], ["--svg", p, "--reps", "5"]] {
            let a = parse_args(&args(&list)).unwrap();
            assert_eq!((a.reps, a.svg.as_deref()), (5, Some(path.as_path())));
        }
    }

    #[test]
    fn svg_in_the_current_directory_is_accepted() {
        let a = parse_args(&args(&["--svg", "summary.svg"])).unwrap();
        assert_eq!(a.svg, Some(PathBuf::from("summary.svg")));
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        for (list, reason) in [
            (&["--reps", "zero"][..], "not a positive whole number"),
            (&["--reps", "0"][..], "not a positive whole number"),
            (&["--svg"][..], "--svg needs a value"),
            (&["--csv", "x"][..], "unknown argument --csv"),
            (
                &["--svg", "/no-such-dir-for-summary/x.svg"][..],
                "no directory /no-such-dir-for-summary",
            ),
        ] {
            let err = parse_args(&args(list)).err().expect("refused");
            assert!(err.contains(reason), "{list:?}: {err}");
        }
    }
}
