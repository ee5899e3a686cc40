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

use crate::common::{load_some_traces, load_traces, CliError, CliResult, JsonMap, Out};
use serde::Serialize;
use std::time::{Duration, Instant};
use trace_ir::Trace;
use verify::validate::{validate_with_stats, Config, Stats, Verdict};

/// Arguments of `tracejit check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The traces to optimize and validate; with --optimized, the original traces
    #[arg(value_name = "FILE")]
    file: String,
    /// Validate the k-th trace of OTHER as the optimized form of the k-th trace of FILE
    /// (guards matched by their `descr=<GuardN>` ids) instead of running the optimizer
    #[arg(long, value_name = "OTHER")]
    optimized: Option<String>,
    /// Print JSON Lines: one object per trace, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
    /// Time limit of each Z3 query, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = Config::default().timeout_ms)]
    timeout: u32,
    /// Traces validated in parallel [default: the number of cores]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Print the validation time and Z3 queries per trace and in total
    #[arg(long)]
    stats: bool,
    /// Optimize with loop peeling
    #[arg(long, conflicts_with = "optimized")]
    peel: bool,
}

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
pub fn check(a: CheckArgs) -> CliResult {
    let opts = optimizer::Options {
        peel: a.peel,
        ..optimizer::Options::default()
    };
    let file = &a.file;
    let cfg = Config {
        timeout_ms: a.timeout,
        ..Config::default()
    };
    let jobs = match a.jobs {
        Some(j) => j as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let originals = load_some_traces(file)?;
    let optimized = match &a.optimized {
        Some(other) => {
            let optimized = load_traces(other)?;
            if optimized.len() != originals.len() {
                return Err(CliError::Failed(format!(
                    "{file} has {} trace(s), {other} has {}",
                    originals.len(),
                    optimized.len()
                )));
            }
            Some(optimized)
        }
        None => None,
    };
    let out = Out::with_progress(originals.len() as u64, "check");
    let mut report = Report::new(&out, a.json, a.stats);
    match &optimized {
        Some(optimized) => {
            let pairs: Vec<(usize, (&Trace, &Trace))> = originals.iter().zip(optimized).enumerate().collect();
            par_for_each(
                &pairs,
                jobs,
                |(i, (o, p))| timed(trace_name(o, file, *i), o, p, &cfg),
                |row| report.row(row),
            );
        }
        None => {
            let items: Vec<(usize, &Trace)> = originals.iter().enumerate().collect();
            par_for_each(
                &items,
                jobs,
                |(i, o)| {
                    let name = trace_name(o, file, *i);
                    match optimizer::optimize(o, &opts) {
                        Ok(out) => {
                            let cfg = cfg.clone().stating(&out);
                            timed(name, o, &out.trace, &cfg)
                        }
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
                },
                |row| report.row(row),
            );
        }
    }
    let invalid = report.invalid;
    report.summary();
    out.finish()?;
    if invalid > 0 {
        Err(CliError::Failed(format!("{invalid} trace(s) invalid")))
    } else {
        Ok(())
    }
}

/// `f` of every item on `jobs` threads (each takes the next unclaimed item); `each` gets the
/// results in the order of the items, each as soon as it and all before it are done. Z3's
/// context is per thread, so each thread validates on its own.
fn par_for_each<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync, mut each: impl FnMut(R)) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, R)>();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(items.len()).max(1) {
            let tx = tx.clone();
            let (next, f) = (&next, &f);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if tx.send((i, f(item))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
        let mut emitted = 0;
        for (i, r) in rx {
            done[i] = Some(r);
            while let Some(r) = done.get_mut(emitted).and_then(Option::take) {
                each(r);
                emitted += 1;
            }
        }
    });
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

/// Validation statistics in JSON.
#[derive(Serialize)]
struct StatsJson {
    seconds: f64,
    solver_seconds: f64,
    claims: usize,
    abstract_queries: usize,
    concrete_queries: usize,
    timeouts: usize,
}

fn stats_json(s: &Stats, time: Duration) -> StatsJson {
    StatsJson {
        seconds: time.as_secs_f64(),
        solver_seconds: s.solver_time.as_secs_f64(),
        claims: s.claims,
        abstract_queries: s.abstract_queries,
        concrete_queries: s.concrete_queries,
        timeouts: s.timeouts,
    }
}

/// One line of `tracejit check --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CheckLine<'a> {
    /// A validated trace; `reason` with `unknown`, the counterexample with `invalid`.
    Trace {
        name: &'a str,
        ops_in: usize,
        ops_out: usize,
        verdict: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        inputs: Option<JsonMap<&'a str, i64>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        original_value: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        optimized_value: Option<i64>,
        stats: StatsJson,
    },
    /// The totals, last.
    Summary {
        traces: usize,
        valid: usize,
        invalid: usize,
        unknown: usize,
        stats: StatsJson,
    },
}

/// The output of `check`, one row at a time, and its totals.
struct Report<'a> {
    out: &'a Out,
    json: bool,
    stats: bool,
    rows: usize,
    valid: usize,
    invalid: usize,
    unknown: usize,
    total: Stats,
    time: Duration,
}

impl<'a> Report<'a> {
    fn new(out: &'a Out, json: bool, stats: bool) -> Report<'a> {
        Report {
            out,
            json,
            stats,
            rows: 0,
            valid: 0,
            invalid: 0,
            unknown: 0,
            total: Stats::default(),
            time: Duration::ZERO,
        }
    }

    fn row(&mut self, r: Row) {
        self.out.bar().inc(1);
        self.rows += 1;
        match &r.verdict {
            Verdict::Valid => self.valid += 1,
            Verdict::Invalid { .. } => self.invalid += 1,
            Verdict::Unknown { .. } => self.unknown += 1,
        }
        self.total.add(&r.stats);
        self.time += r.time;
        if self.json {
            let (mut reason, mut message, mut inputs, mut differing) = (None, None, None, None);
            match &r.verdict {
                Verdict::Valid => {}
                Verdict::Unknown { reason: why } => reason = Some(why.as_str()),
                Verdict::Invalid { counterexample: c } => {
                    message = Some(c.message.as_str());
                    inputs = Some(JsonMap(c.inputs.iter().map(|(n, v)| (n.as_str(), *v)).collect()));
                    differing = c.differing;
                }
            }
            self.out.json(&CheckLine::Trace {
                name: &r.name,
                ops_in: r.ops_in,
                ops_out: r.ops_out,
                verdict: r.verdict.name(),
                reason,
                message,
                inputs,
                original_value: differing.map(|d| d.0),
                optimized_value: differing.map(|d| d.1),
                stats: stats_json(&r.stats, r.time),
            });
        } else {
            self.out.line(&format!(
                "{}: {} ops -> {} ops: {}",
                r.name, r.ops_in, r.ops_out, r.verdict
            ));
            if self.stats {
                self.out.line(&format!("  {}", stats_text(&r.stats, r.time)));
            }
        }
    }

    fn summary(self) {
        if self.json {
            self.out.json(&CheckLine::Summary {
                traces: self.rows,
                valid: self.valid,
                invalid: self.invalid,
                unknown: self.unknown,
                stats: stats_json(&self.total, self.time),
            });
            return;
        }
        self.out.line(&format!(
            "{} trace(s): {} valid, {} invalid, {} unknown",
            self.rows, self.valid, self.invalid, self.unknown
        ));
        if self.stats {
            self.out
                .line(&format!("validation: {}", stats_text(&self.total, self.time)));
        }
    }
}
