//! `tracejit check`: translation validation (Z3) of the optimizer's output, or of a given
//! pair of traces.
//!
//! - `tracejit check FILE [--json] [--timeout MS] [--jobs N] [--stats] [--peel]` optimizes
//!   every trace of FILE (with `--peel`: peeling loops first, `Options::peel`) and validates
//!   the result against the trace.
//! - `tracejit check ORIGINAL --optimized OTHER [--json] [--timeout MS] [--jobs N] [--stats]`
//!   validates the k-th trace of OTHER against the k-th trace of ORIGINAL (guards matched by
//!   their `descr=<GuardN>` ids), so a wrong optimization written by hand is shown to be
//!   caught.
//!
//! `--timeout` is the time limit of each Z3 query (default 2000 ms); `--jobs` validates that
//! many traces at once on separate threads (default: the number of cores); `--stats` prints
//! per trace the validation time and its Z3 queries (abstract ones with multiplication and
//! division uninterpreted, concrete ones with the full semantics, timeouts; see
//! `verify::validate`), and the totals.
//!
//! Exit status: 0 when nothing is invalid, 1 when some trace is invalid (or a file cannot be
//! read or parsed), 2 on a usage error.

use crate::common::{json_str, load_traces, Args, CliError, CliResult};
use std::time::{Duration, Instant};
use trace_ir::Trace;
use verify::validate::{validate_with_stats, Config, Stats, Verdict};

/// One validated trace.
struct Row {
    name: String,
    ops_in: usize,
    ops_out: usize,
    verdict: Verdict,
    stats: Stats,
    /// Wall-clock time of the validation (term building and Z3).
    time: Duration,
}

/// Validate and time one pair.
fn timed(name: String, o: &Trace, p: &Trace, cfg: &Config) -> Row {
    let start = Instant::now();
    let (verdict, stats) = validate_with_stats(o, p, cfg);
    Row {
        name,
        ops_in: o.num_real_ops(),
        ops_out: p.num_real_ops(),
        verdict,
        stats,
        time: start.elapsed(),
    }
}

/// `tracejit check ...`.
pub fn check(args: &[String]) -> CliResult {
    let a = Args::parse(args, &["optimized", "timeout", "jobs"], &["json", "stats", "peel"])?;
    let opts = optimizer::Options {
        peel: a.has("peel"),
        ..optimizer::Options::default()
    };
    let file = a.one_file()?;
    let mut cfg = Config::default();
    if let Some(t) = a.value("timeout") {
        cfg.timeout_ms = t
            .parse()
            .map_err(|_| CliError::Usage(format!("--timeout: not a number: {t}")))?;
    }
    let jobs = match a.value("jobs") {
        Some(j) => j
            .parse::<usize>()
            .ok()
            .filter(|&j| j > 0)
            .ok_or_else(|| CliError::Usage(format!("--jobs: not a positive number: {j}")))?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let originals = load_traces(file)?;
    let rows = match a.value("optimized") {
        Some(other) => {
            let optimized = load_traces(other)?;
            if optimized.len() != originals.len() {
                return Err(CliError::Failed(format!(
                    "{file} has {} trace(s), {other} has {}",
                    originals.len(),
                    optimized.len()
                )));
            }
            let pairs: Vec<(usize, (&Trace, &Trace))> = originals.iter().zip(&optimized).enumerate().collect();
            par_map(&pairs, jobs, |(i, (o, p))| timed(trace_name(o, file, *i), o, p, &cfg))
        }
        None => {
            let items: Vec<(usize, &Trace)> = originals.iter().enumerate().collect();
            par_map(&items, jobs, |(i, o)| {
                let name = trace_name(o, file, *i);
                match optimizer::optimize(o, &opts) {
                    Ok(out) => timed(name, o, &out.trace, &cfg),
                    Err(e) => Row {
                        name,
                        ops_in: o.num_real_ops(),
                        ops_out: 0,
                        verdict: Verdict::Unknown {
                            reason: format!("the optimizer refused the trace: {e}"),
                        },
                        stats: Stats::default(),
                        time: Duration::ZERO,
                    },
                }
            })
        }
    };
    if a.has("json") {
        print_json(&rows);
    } else {
        print_text(&rows, a.has("stats"));
    }
    let invalid = rows.iter().filter(|r| r.verdict.is_invalid()).count();
    if invalid > 0 {
        Err(CliError::Failed(format!("{invalid} trace(s) invalid")))
    } else {
        Ok(())
    }
}

/// `f` of every item on `jobs` threads (each takes the next unclaimed item), in order.
/// Z3's context is per thread, so each thread validates on its own.
fn par_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(items.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was processed"))
        .collect()
}

fn trace_name(t: &Trace, file: &str, i: usize) -> String {
    if t.info.name.is_empty() {
        format!("{file}#{i}")
    } else {
        t.info.name.clone()
    }
}

fn stats_text(s: &Stats, time: Duration) -> String {
    format!(
        "{:.2} s ({:.2} s in Z3), {} claims, {} abstract / {} concrete queries, {} timeouts",
        time.as_secs_f64(),
        s.solver_time.as_secs_f64(),
        s.claims,
        s.abstract_queries,
        s.concrete_queries,
        s.timeouts
    )
}

fn print_text(rows: &[Row], stats: bool) {
    let (mut valid, mut invalid, mut unknown) = (0, 0, 0);
    let mut total = Stats::default();
    let mut time = Duration::ZERO;
    for r in rows {
        match &r.verdict {
            Verdict::Valid => valid += 1,
            Verdict::Invalid { .. } => invalid += 1,
            Verdict::Unknown { .. } => unknown += 1,
        }
        total.add(&r.stats);
        time += r.time;
        println!("{}: {} ops -> {} ops: {}", r.name, r.ops_in, r.ops_out, r.verdict);
        if stats {
            println!("  {}", stats_text(&r.stats, r.time));
        }
    }
    println!(
        "{} trace(s): {valid} valid, {invalid} invalid, {unknown} unknown",
        rows.len()
    );
    if stats {
        println!("validation: {}", stats_text(&total, time));
    }
}

fn print_json(rows: &[Row]) {
    let mut out = String::from("[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "\n  {{\"name\": {}, \"ops_in\": {}, \"ops_out\": {}, \"verdict\": \"{}\"",
            json_str(&r.name),
            r.ops_in,
            r.ops_out,
            r.verdict.name()
        ));
        match &r.verdict {
            Verdict::Valid => {}
            Verdict::Unknown { reason } => out.push_str(&format!(", \"reason\": {}", json_str(reason))),
            Verdict::Invalid { counterexample: c } => {
                out.push_str(&format!(", \"message\": {}, \"inputs\": {{", json_str(&c.message)));
                for (j, (n, v)) in c.inputs.iter().enumerate() {
                    if j > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&format!("{}: {v}", json_str(n)));
                }
                out.push('}');
                if let Some((a, b)) = c.differing {
                    out.push_str(&format!(", \"original_value\": {a}, \"optimized_value\": {b}"));
                }
            }
        }
        out.push('}');
    }
    out.push_str("\n]");
    println!("{out}");
}
