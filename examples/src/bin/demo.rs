//! The demo: runs every example program three ways (interpreter only, JIT without the
//! optimizer, JIT with the optimizer), checks that the three print the same (and the same as
//! the loop written in Rust), and prints a table of times, speed-ups and trace statistics.
//!
//! ```text
//! cargo run --release -p examples --bin demo [-- --scale F] [--only NAME] [--engine native|runner]
//! ```
//! Exits with status 1 when any program's outputs disagree or a run fails.

use examples::lang::vm::{run_source, Config, Engine, Mode, RunOutput};
use examples::programs::EXAMPLES;
use std::process::ExitCode;
use std::time::{Duration, Instant};

struct Args {
    scale: f64,
    only: Option<String>,
    engine: Engine,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        scale: 1.0,
        only: None,
        engine: Engine::Native,
    };
    let mut it = std::env::args().skip(1);
    while let Some(w) = it.next() {
        match w.as_str() {
            "--scale" => {
                let v = it.next().ok_or("--scale needs a number")?;
                a.scale = v.parse().map_err(|_| format!("bad --scale `{v}`"))?;
                if a.scale.is_nan() || a.scale <= 0.0 {
                    return Err("--scale must be positive".into());
                }
            }
            "--only" => a.only = Some(it.next().ok_or("--only needs a program name")?),
            "--engine" => {
                a.engine = match it.next().as_deref() {
                    Some("native") => Engine::Native,
                    Some("runner") => Engine::TraceRunner,
                    other => return Err(format!("--engine must be native or runner, not {other:?}")),
                }
            }
            "-h" | "--help" => {
                println!("usage: demo [--scale F] [--only NAME] [--engine native|runner]");
                println!(
                    "programs: {}",
                    EXAMPLES.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    Ok(a)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "tracejit demo: each example program in three modes ({:?} engine)\n",
        args.engine
    );
    println!(
        "| program | N | interp ms | jit-noopt ms | jit-opt ms | opt vs interp | opt vs noopt | ops rec→opt | guards rec→opt | allocs rec→opt | virtuals removed | bridges | exits/M iter | compile µs/loop | compile µs/bridge |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ok = true;
    let total = Instant::now();
    for ex in EXAMPLES {
        if args.only.as_deref().is_some_and(|o| o != ex.name) {
            continue;
        }
        let n = ((ex.demo_n as f64) * args.scale).max(1.0) as i64;
        let expected = (ex.native)(n);
        let mut times = Vec::new();
        let mut outs: Vec<RunOutput> = Vec::new();
        for mode in Mode::ALL {
            let t0 = Instant::now();
            match run_source(ex.source, &[("N", n)], Config::new(mode, args.engine)) {
                Ok(out) => {
                    times.push(t0.elapsed());
                    if out.output != expected {
                        eprintln!(
                            "MISMATCH {} in {}: printed {:?}, the Rust loop gives {:?}",
                            ex.name,
                            mode.name(),
                            out.output,
                            expected
                        );
                        ok = false;
                    }
                    outs.push(out);
                }
                Err(e) => {
                    eprintln!("FAILED {} in {}: {e}", ex.name, mode.name());
                    ok = false;
                }
            }
        }
        if outs.len() != 3 {
            continue;
        }
        if outs.iter().any(|o| o.output != outs[0].output) {
            eprintln!("MISMATCH {}: the three modes printed different results", ex.name);
            ok = false;
        }
        let opt = &outs[2].stats;
        let sum = |f: fn(&examples::lang::vm::TraceStats) -> usize| opt.traces.iter().map(f).sum::<usize>();
        let compile: Duration = opt.traces.iter().map(|t| t.compile_time + t.optimize_time).sum();
        let per_trace = if opt.traces.is_empty() {
            0.0
        } else {
            compile.as_secs_f64() * 1e6 / opt.traces.len() as f64
        };
        let per_bridge = match opt.driver.bridges {
            0 => "–".to_string(),
            b => format!("{:.0}", opt.driver.bridge_time.as_secs_f64() * 1e6 / f64::from(b)),
        };
        // The iterations of all loops: the headers the interpreter passes in interpreter mode.
        let iterations = outs[0].stats.header_passes.max(1);
        let exits_per_m = opt.driver.exits_after_warmup as f64 * 1e6 / iterations as f64;
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        println!(
            "| {} | {} | {} | {} | {} | {:.1}× | {:.1}× | {}→{} | {}→{} | {}→{} | {} | {} | {:.0} | {:.0} | {} |",
            ex.name,
            n,
            ms(times[0]),
            ms(times[1]),
            ms(times[2]),
            ratio(times[0], times[2]),
            ratio(times[1], times[2]),
            sum(|t| t.ops_recorded),
            sum(|t| t.ops_final),
            sum(|t| t.guards_recorded),
            sum(|t| t.guards_final),
            sum(|t| t.allocs_recorded),
            sum(|t| t.allocs_final),
            sum(|t| t.virtuals_removed),
            opt.driver.bridges,
            exits_per_m,
            per_trace,
            per_bridge
        );
    }
    println!("\nTimes are whole runs (parse, interpret, record, optimize, compile, run); one run each.");
    println!("ops/guards/allocs: recorded trace → optimized trace, summed over the traces of the jit-opt run.");
    println!(
        "bridges, exits/M iter (exits to the interpreter after the last compilation, per million loop iterations) and compile times: the jit-opt run."
    );
    println!(
        "Total {:.2} s. Outputs {}.",
        total.elapsed().as_secs_f64(),
        if ok { "agree in all modes" } else { "DISAGREE" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
