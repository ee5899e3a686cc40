//! Compile latency per trace: optimize (with and without peeling) and compile the example
//! programs' recorded traces (first trace in a fresh process, and warm) and random traces of
//! 10 to 10,000 ops, with the per-trace fixed cost and per-op cost fitted; and LuaJIT's time
//! per trace on the same programs written in Lua (`benches/lua/`), measured in the same run.
//!
//! `cargo build --release -p benches --bin latency`, then `target/release/latency`
//! (`--reps K` for the warm repetitions, `--first K` for the fresh processes per program,
//! `--part examples,first,random,luajit` to run some parts only). Prints Markdown tables.

use backend_x86_64::{CompileOptions, Compiler};
use benches::EXAMPLES;
use optimizer::{Optimizer, Options};
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;
use trace_ir::Trace;

/// Sizes of the random traces.
const RANDOM_SIZES: [usize; 5] = [10, 30, 100, 1000, 10_000];

/// Command-line settings.
struct Args {
    reps: usize,
    first: usize,
    parts: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        reps: 101,
        first: 7,
        parts: ["examples", "first", "random", "luajit"].map(String::from).to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(w) = it.next() {
        let mut value = || it.next().ok_or(format!("{w} needs a value"));
        match w.as_str() {
            "--reps" => a.reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--first" => a.first = value()?.parse().map_err(|e| format!("--first: {e}"))?,
            "--part" => a.parts = value()?.split(',').map(String::from).collect(),
            _ => return Err(format!("unknown argument {w}")),
        }
    }
    Ok(a)
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--child-first") {
        child_first();
        return;
    }
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("latency: {e}\nusage: latency [--reps K] [--first K] [--part examples,first,random,luajit]");
        std::process::exit(2)
    });
    let want = |p: &str| args.parts.iter().any(|x| x == p);
    let programs = benches::recorded_traces();
    if want("examples") {
        examples_warm(&programs, args.reps);
    }
    if want("first") {
        examples_first(&programs, args.first);
    }
    if want("random") {
        random_traces(args.reps);
    }
    if want("luajit") {
        luajit(args.first);
    }
}

/// Optimizer options: the example interpreter's (peeling) or the default.
fn opt_options(peel: bool) -> Options {
    Options {
        peel,
        ..Options::default()
    }
}

fn compile_options() -> CompileOptions {
    CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    }
}

fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// Warm times of one trace in microseconds: optimize, optimize with peeling, compile of the
/// peeled output.
#[derive(Default)]
struct Samples {
    opt: Vec<f64>,
    peel: Vec<f64>,
    compile: Vec<f64>,
    total: Vec<f64>,
}

/// Optimize without and with peeling and compile the peeled output once, timing each step.
fn measure_once(t: &Trace, o: &mut Optimizer, c: &mut Compiler, s: &mut Samples) -> usize {
    let copts = compile_options();
    let t0 = Instant::now();
    let plain = o.optimize(black_box(t), &opt_options(false)).expect("optimizes");
    s.opt.push(micros(t0));
    let t1 = Instant::now();
    let peeled = o
        .optimize(black_box(t), &opt_options(true))
        .expect("optimizes with peeling");
    let peel_us = micros(t1);
    let t2 = Instant::now();
    let code = c.compile(&peeled.trace, &copts).expect("compiles");
    let compile_us = micros(t2);
    s.peel.push(peel_us);
    s.compile.push(compile_us);
    s.total.push(peel_us + compile_us);
    drop((plain, code));
    peeled.trace.num_real_ops()
}

fn examples_warm(programs: &[(&str, Vec<Trace>)], reps: usize) {
    let mut o = Optimizer::new();
    let mut c = Compiler::new();
    let traces: Vec<(String, &Trace)> = programs
        .iter()
        .flat_map(|(p, ts)| {
            ts.iter().enumerate().map(move |(k, t)| {
                let name = if k == 0 {
                    p.to_string()
                } else {
                    format!("{p}#{}", k + 1)
                };
                (name, t)
            })
        })
        .collect();
    let mut samples: Vec<Samples> = traces.iter().map(|_| Samples::default()).collect();
    let mut out_ops = vec![0; traces.len()];
    // Rounds over all traces, so a slow moment of the machine hits every trace alike.
    for _ in 0..reps.max(1) {
        for (i, (_, t)) in traces.iter().enumerate() {
            out_ops[i] = measure_once(t, &mut o, &mut c, &mut samples[i]);
        }
    }
    println!("## Example traces, warm\n");
    println!("Median of {reps} rounds over all traces, one reusable `Optimizer` and `Compiler`; µs per trace.\n");
    println!("| trace | ops recorded | ops peeled+optimized | optimize | optimize with peeling | compile | peeling + compile | M recorded ops/s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut totals = Vec::new();
    for (i, (name, t)) in traces.iter().enumerate() {
        let s = &mut samples[i];
        let ops = t.num_real_ops();
        let total = median(&mut s.total);
        totals.push(total);
        println!(
            "| {name} | {ops} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |",
            out_ops[i],
            median(&mut s.opt),
            median(&mut s.peel),
            median(&mut s.compile),
            total,
            ops as f64 / total
        );
    }
    println!(
        "\nMedian over the traces of peeling + compile: {:.1} µs.\n",
        median(&mut totals)
    );
}

/// Child process: read one recorded trace on stdin, then create the contexts, optimize with
/// peeling and compile, timing each step; print the four times in microseconds.
fn child_first() {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).expect("stdin");
    let t = trace_ir::parse_trace(&text).expect("a trace");
    let t0 = Instant::now();
    let mut o = Optimizer::new();
    let new_opt = micros(t0);
    let t1 = Instant::now();
    let peeled = o.optimize(&t, &opt_options(true)).expect("optimizes");
    let opt = micros(t1);
    let t2 = Instant::now();
    let mut c = Compiler::new();
    let new_comp = micros(t2);
    let t3 = Instant::now();
    let code = c.compile(&peeled.trace, &compile_options()).expect("compiles");
    let comp = micros(t3);
    drop(code);
    println!("{new_opt} {opt} {new_comp} {comp}");
}

fn examples_first(programs: &[(&str, Vec<Trace>)], runs: usize) {
    let exe = std::env::current_exe().expect("own path");
    println!("## First trace in a fresh process\n");
    println!(
        "Each program's first recorded trace, handed as text to a fresh process of this benchmark, \
         which creates an `Optimizer` and a `Compiler`, optimizes with peeling and compiles: \
         median of {runs} processes, µs.\n"
    );
    println!("| trace | ops | create optimizer | optimize with peeling | create compiler | compile | total |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut totals = Vec::new();
    for (name, traces) in programs {
        let Some(t) = traces.first() else { continue };
        let text = trace_ir::print_trace(t);
        match trace_ir::parse_trace(&text) {
            Ok(back) if trace_ir::print_trace(&back) == text => {}
            _ => {
                println!(
                    "| {name} | {} | the trace does not survive its text form | | | | |",
                    t.num_real_ops()
                );
                continue;
            }
        }
        let mut cols: [Vec<f64>; 5] = Default::default();
        for _ in 0..runs.max(1) {
            let mut child = Command::new(&exe)
                .arg("--child-first")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("write");
            let out = child.wait_with_output().expect("child");
            let v: Vec<f64> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(v.len(), 4, "child output for {name}");
            for k in 0..4 {
                cols[k].push(v[k]);
            }
            cols[4].push(v.iter().sum());
        }
        let m: Vec<f64> = cols.iter_mut().map(|c| median(c)).collect();
        totals.push(m[4]);
        println!(
            "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            t.num_real_ops(),
            m[0],
            m[1],
            m[2],
            m[3],
            m[4]
        );
    }
    println!(
        "\nMedian over the programs of the total: {:.1} µs.\n",
        median(&mut totals)
    );
}

/// Least squares fit of `t = a + b·n` on relative residuals (weights 1/t², so that a 10-op
/// trace's time weighs as much as a 10,000-op trace's): returns `(a, b)`.
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y) in points {
        let w = 1.0 / (y * y);
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    let b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
    let a = (sy - b * sx) / sw;
    (a, b)
}

fn random_traces(reps: usize) {
    let mut o = Optimizer::new();
    let mut c = Compiler::new();
    let copts = compile_options();
    // Per step: (ops, µs) of every trace, and per size the medians.
    let mut points: [Vec<(f64, f64)>; 3] = Default::default();
    let mut rows = Vec::new();
    for len in RANDOM_SIZES {
        let traces: Vec<Trace> = benches::optimizer_set(len);
        let rounds = (reps * 100 / len).clamp(5, reps.max(5));
        let mut per: Vec<[Vec<f64>; 3]> = traces.iter().map(|_| Default::default()).collect();
        for _ in 0..rounds {
            for (t, s) in traces.iter().zip(per.iter_mut()) {
                for (k, peel) in [false, true].into_iter().enumerate() {
                    let t0 = Instant::now();
                    let r = o.optimize(black_box(t), &opt_options(peel)).expect("optimizes");
                    s[k].push(micros(t0));
                    drop(r);
                }
                let t0 = Instant::now();
                let code = c.compile(black_box(t), &copts).expect("compiles");
                s[2].push(micros(t0));
                drop(code);
            }
        }
        let mut size_med: [Vec<f64>; 3] = Default::default();
        let mut ops: Vec<f64> = traces.iter().map(|t| t.num_real_ops() as f64).collect();
        for (t, s) in traces.iter().zip(per.iter_mut()) {
            for k in 0..3 {
                let m = median(&mut s[k]);
                points[k].push((t.num_real_ops() as f64, m));
                size_med[k].push(m);
            }
        }
        let total_ops: f64 = ops.iter().sum();
        let sums: Vec<f64> = per.iter_mut().fold(vec![0.0; 3], |mut acc, s| {
            for k in 0..3 {
                acc[k] += median(&mut s[k]);
            }
            acc
        });
        rows.push((
            len,
            traces.len(),
            rounds,
            median(&mut ops),
            size_med.map(|mut v| median(&mut v)),
            sums.iter().map(|s| total_ops / s).collect::<Vec<_>>(),
        ));
    }
    println!("## Random traces\n");
    println!(
        "`trace_interp::random` traces (40 of 10, 30 and 100 ops, 8 of 1,000, 2 of 10,000; seeds 1000..), \
         one reusable `Optimizer` and `Compiler`: per trace the median of its rounds; µs per trace (median over the traces) and M input ops/s \
         (all ops of the set over the sum of the per-trace medians). Compile is of the random trace itself, as in `compile_profile`.\n"
    );
    println!("| ops (median) | traces × rounds | optimize µs | optimize with peeling µs | compile µs | optimize M ops/s | with peeling M ops/s | compile M ops/s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (_, count, rounds, ops, m, rate) in &rows {
        println!(
            "| {ops:.0} | {count} × {rounds} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} |",
            m[0], m[1], m[2], rate[0], rate[1], rate[2]
        );
    }
    println!("\nFitted `µs per trace = fixed + per-op × ops` over every trace's median (least squares on relative residuals):\n");
    println!("| step | fixed µs per trace | ns per op |");
    println!("|---|---:|---:|");
    for (k, name) in ["optimize", "optimize with peeling", "compile"].iter().enumerate() {
        let (a, b) = fit(&points[k]);
        println!("| {name} | {a:.1} | {:.1} |", b * 1000.0);
    }
    println!();
}

/// What one run of `benches/lua/measure.lua` printed (`key=value` words).
fn lua_run(mode: &str, program: &PathBuf, n: i64, reps: usize) -> Result<Vec<Vec<(String, String)>>, String> {
    let script = lua_dir().join("measure.lua");
    let out = Command::new("luajit")
        .arg(&script)
        .arg(mode)
        .arg(program)
        .arg(n.to_string())
        .arg(reps.to_string())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
                .collect()
        })
        .collect())
}

fn field(line: &[(String, String)], key: &str) -> f64 {
    line.iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn lua_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("lua")
}

fn luajit(runs: usize) {
    println!("## LuaJIT on the same programs\n");
    let version = Command::new("luajit").arg("-v").output();
    let Some(version) = version.ok().filter(|o| o.status.success()) else {
        println!("`luajit` is not installed: LuaJIT skipped.\n");
        return;
    };
    let warm_reps = 11;
    println!(
        "{}: `benches/lua/PROGRAM.lua` through `benches/lua/measure.lua`. \
         `events`: the program loaded and run {warm_reps} times in one process with the default JIT parameters (N = the examples' test N), \
         the time from each trace's `start` event to its `stop` (record, optimize, assemble) summed and divided by the traces; \
         first run in the process, and the median of the later runs (warm). `on − off`: CPU time of a run of 100 iterations (one round of `fnv_hash`) with \
         `hotloop=1` minus a run with the JIT off, divided by the traces of the first; median of {runs} processes each. µs per trace.\n",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    println!("| program | traces | IR ins per trace | events, first run | events, warm | on − off |");
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut firsts, mut warms) = (Vec::new(), Vec::new());
    for ex in EXAMPLES {
        let prog = lua_dir().join(format!("{}.lua", ex.name));
        let events = match lua_run("events", &prog, ex.test_n, warm_reps) {
            Ok(v) if !v.is_empty() => v,
            Ok(_) | Err(_) => {
                println!("| {} | luajit failed | | | | |", ex.name);
                continue;
            }
        };
        let per = |l: &[(String, String)]| field(l, "total_us") / field(l, "traces");
        let first = per(&events[0]);
        let mut later: Vec<f64> = events[1..].iter().map(|l| per(l)).collect();
        let warm = median(&mut later);
        // 100 iterations; one round of `fnv_hash` (1024 inner iterations).
        let small_n = if ex.test_n < 100 { 1 } else { 100 };
        let mut diffs = Vec::new();
        for _ in 0..runs.max(1) {
            let on = lua_run("on", &prog, small_n, 1);
            let off = lua_run("off", &prog, small_n, 1);
            if let (Ok(on), Ok(off)) = (on, off) {
                let (on, off) = (&on[0], &off[0]);
                diffs.push((field(on, "run_us") - field(off, "run_us")) / field(on, "traces"));
            }
        }
        firsts.push(first);
        warms.push(warm);
        println!(
            "| {} | {} | {:.0} | {first:.1} | {warm:.1} | {:.1} |",
            ex.name,
            field(&events[0], "traces"),
            field(&events[0], "ir") / field(&events[0], "traces"),
            median(&mut diffs)
        );
    }
    println!(
        "\nMedian over the programs: first run {:.1} µs, warm {:.1} µs per trace.\n",
        median(&mut firsts),
        median(&mut warms)
    );
}
