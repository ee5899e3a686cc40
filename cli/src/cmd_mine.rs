//! `tracejit mine FILE... [--json] [--limit N] [--seconds S] ...`: mine optimized traces for
//! missing optimizations with Z3 (`verify::mine`) and print the findings
//! aggregated by pattern, most frequent first.
//!
//! PyPy logs: the `jit-log-noopt` sections are optimized with our optimizer and the result is
//! mined; other files: every trace is optimized and mined (`--no-opt` mines them as written).

use crate::common::{load_traces, no_traces, CliResult, Out};
use serde::Serialize;
use std::time::{Duration, Instant};
use trace_ir::Trace;
use verify::mine::{aggregate, mine_trace, prepare, Finding, FindingKind, MineConfig, MineStats, PatternCount};

/// Arguments of `tracejit mine`.
#[derive(clap::Args)]
pub struct MineArgs {
    /// Trace files (the text format) or PyPy logs
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
    /// Print JSON Lines: findings and a line per file, then patterns and a summary
    /// (docs/cli.md)
    #[arg(long)]
    json: bool,
    /// Show the N most frequent patterns (0: all)
    #[arg(long, value_name = "N", default_value_t = 30)]
    limit: usize,
    /// Time budget per file, in seconds
    #[arg(long, value_name = "S", default_value_t = 60.0, value_parser = positive_seconds)]
    seconds: f64,
    /// Time limit of each Z3 query, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = MineConfig::default().timeout_ms)]
    timeout_ms: u32,
    /// Levels of operands expanded below each op (its cone depth)
    #[arg(long, value_name = "D", default_value_t = MineConfig::default().depth)]
    depth: usize,
    /// Mine only the first N traces of each file
    #[arg(long, value_name = "N")]
    max_traces: Option<usize>,
    /// List every finding, not only the patterns
    #[arg(long)]
    findings: bool,
    /// Mine the traces as written (by default they are optimized first)
    #[arg(long)]
    no_opt: bool,
    /// Do not assume the earlier integer guards (and guard_no_overflows)
    #[arg(long)]
    no_guards: bool,
    /// Do not shrink each finding to a small pattern
    #[arg(long)]
    no_minimize: bool,
    /// One line per trace on stderr: ops, queries, findings, time
    #[arg(long)]
    verbose: bool,
}

/// A positive, finite number of seconds, for the argument parser.
fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// What happened in one file.
struct FileReport {
    path: String,
    stats: MineStats,
    /// Traces the optimizer refused (name, error).
    errors: Vec<(String, String)>,
    seconds: f64,
}

fn kind_value(k: &FindingKind) -> serde_json::Value {
    match k {
        FindingKind::ConstBool(v) | FindingKind::Constant(v) => (*v).into(),
        FindingKind::SameAsEarlier(y) | FindingKind::SameAsInput(y) => format!("op {y}").into(),
        FindingKind::NoOverflow | FindingKind::GuardImplied => serde_json::Value::Null,
    }
}

/// The settings of a `mine` run, from its arguments.
struct Settings {
    /// Patterns shown (0 = all).
    limit: usize,
    /// Time budget per file.
    seconds: f64,
    /// Traces mined per file at most.
    max_traces: usize,
    /// Miner settings, without the per-file deadline.
    base: MineConfig,
    /// The optimizer's options, `None` with `--no-opt` (traces are mined as written).
    optimize: Option<optimizer::Options>,
    /// `--json`.
    json: bool,
    /// `--findings`: list every finding.
    findings: bool,
    /// `--verbose`: one line per trace on stderr.
    verbose: bool,
}

impl Settings {
    fn of(a: &MineArgs) -> Settings {
        Settings {
            limit: a.limit,
            seconds: a.seconds,
            max_traces: a.max_traces.unwrap_or(usize::MAX),
            base: MineConfig {
                timeout_ms: a.timeout_ms,
                depth: a.depth,
                use_guards: !a.no_guards,
                minimize: !a.no_minimize,
                ..MineConfig::default()
            },
            optimize: if a.no_opt {
                None
            } else {
                Some(optimizer::Options::default())
            },
            json: a.json,
            findings: a.findings,
            verbose: a.verbose,
        }
    }
}

/// One line of `tracejit mine --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum MineLine<'a> {
    /// A finding (all findings of a file come before its `file` line).
    Finding {
        file: &'a str,
        trace: &'a str,
        op: usize,
        opcode: &'a str,
        kind: &'a str,
        value: serde_json::Value,
        pattern: &'a str,
        shape: &'a str,
        unminimized: &'a str,
    },
    /// A mined file.
    File {
        file: &'a str,
        traces: usize,
        ops: usize,
        queries: usize,
        unknown: usize,
        contradictory: usize,
        seconds: f64,
        budget_exhausted: bool,
        optimizer_errors: Vec<TraceError<'a>>,
    },
    /// A pattern, most frequent first (after all files).
    Pattern {
        count: usize,
        kind: &'a str,
        shape: &'a str,
        distinct: usize,
        example: &'a str,
        first: &'a str,
    },
    /// The totals, last.
    Summary {
        files: usize,
        findings: usize,
        patterns: usize,
        shown: usize,
    },
}

/// A trace the optimizer refused.
#[derive(Serialize)]
struct TraceError<'a> {
    trace: &'a str,
    error: &'a str,
}

/// `tracejit mine FILE... [--json] [--limit N] [--seconds S] [--timeout-ms T] [--depth D]
/// [--max-traces N] [--findings] [--no-opt] [--no-guards] [--no-minimize] [--verbose]`.
///
/// `--limit N` shows the N most frequent patterns (default 30; 0 = all); `--seconds S` is the
/// time budget per file (default 60); `--max-traces N` mines only the first N traces of each
/// file; `--findings` also lists every finding; `--verbose` prints one line per trace on
/// stderr (ops, queries, time). Each file's line (and findings) is printed when the file is
/// done, the patterns at the end. Exit status 0 when every file was read (also with
/// findings: they are the report, not a failure), 1 on an unreadable or malformed file or
/// when no file has traces.
pub fn mine(a: MineArgs) -> CliResult {
    let s = Settings::of(&a);
    let mut files = Vec::new();
    for path in &a.files {
        let traces = load_traces(path)?;
        if !traces.is_empty() {
            files.push((path.as_str(), traces));
        }
    }
    if files.is_empty() {
        return Err(no_traces());
    }
    let out = Out::with_progress(0, "mine");
    let mut findings: Vec<Finding> = Vec::new();
    for (path, traces) in &files {
        let start = findings.len();
        let rep = mine_file(&s, path, traces, &out, &mut findings);
        print_file(&s, &out, &rep, &findings[start..]);
    }
    let patterns = aggregate(&findings);
    let shown = if s.limit == 0 {
        patterns.len()
    } else {
        s.limit.min(patterns.len())
    };
    if s.json {
        for p in &patterns[..shown] {
            out.json(&MineLine::Pattern {
                count: p.count,
                kind: p.kind,
                shape: &p.shape,
                distinct: p.distinct,
                example: &p.example,
                first: &p.first,
            });
        }
        out.json(&MineLine::Summary {
            files: files.len(),
            findings: findings.len(),
            patterns: patterns.len(),
            shown,
        });
    } else {
        print_patterns(&out, findings.len(), &patterns, shown);
    }
    out.finish()
}

/// Mine `traces` (of the file at `path`) within the time budget; its findings are appended to
/// `findings`.
fn mine_file(s: &Settings, path: &str, traces: &[Trace], out: &Out, findings: &mut Vec<Finding>) -> FileReport {
    let start = Instant::now();
    let cfg = MineConfig {
        deadline: Some(start + Duration::from_secs_f64(s.seconds)),
        ..s.base.clone()
    };
    let mut rep = FileReport {
        path: path.to_string(),
        stats: MineStats::default(),
        errors: Vec::new(),
        seconds: 0.0,
    };
    let prepared = prepare(traces, s.optimize.as_ref());
    let n = prepared.len().min(s.max_traces);
    let bar = out.bar();
    bar.inc_length(n as u64);
    for (k, (name, t)) in prepared.into_iter().take(n).enumerate() {
        if Instant::now() >= start + Duration::from_secs_f64(s.seconds) {
            rep.stats.budget_exhausted = true;
            bar.inc((n - k) as u64);
            break;
        }
        bar.set_message(format!("{path}: {name}"));
        match t {
            Ok(t) => {
                let (t0, before) = (Instant::now(), rep.stats.clone());
                let found = mine_trace(&t, &cfg, &mut rep.stats);
                if s.verbose {
                    out.warn(&format!(
                        "{path}: {name}: {} ops, {} queries ({} unknown), {} findings, {:.2} s",
                        rep.stats.ops - before.ops,
                        rep.stats.queries - before.queries,
                        rep.stats.unknown - before.unknown,
                        found.len(),
                        t0.elapsed().as_secs_f64()
                    ));
                }
                findings.extend(found);
            }
            Err(e) => rep.errors.push((name, e)),
        }
        bar.inc(1);
    }
    rep.seconds = start.elapsed().as_secs_f64();
    rep
}

/// The report of one file: its findings (JSON; text with `--findings`) and its line.
fn print_file(s: &Settings, out: &Out, r: &FileReport, findings: &[Finding]) {
    let st = &r.stats;
    if s.json {
        for f in findings {
            out.json(&MineLine::Finding {
                file: &r.path,
                trace: &f.trace,
                op: f.op,
                opcode: f.opcode.name(),
                kind: f.kind.name(),
                value: kind_value(&f.kind),
                pattern: &f.pattern,
                shape: &f.shape,
                unminimized: &f.unminimized,
            });
        }
        out.json(&MineLine::File {
            file: &r.path,
            traces: st.traces,
            ops: st.ops,
            queries: st.queries,
            unknown: st.unknown,
            contradictory: st.contradictory,
            seconds: r.seconds,
            budget_exhausted: st.budget_exhausted,
            optimizer_errors: r
                .errors
                .iter()
                .map(|(n, e)| TraceError { trace: n, error: e })
                .collect(),
        });
        return;
    }
    let budget = if st.budget_exhausted {
        ", time budget exhausted"
    } else {
        ""
    };
    out.line(&format!(
        "# {}: {} traces mined, {} ops examined, {} Z3 queries ({} unknown), {:.1} s{budget}",
        r.path, st.traces, st.ops, st.queries, st.unknown, r.seconds
    ));
    if st.contradictory > 0 {
        out.line(&format!(
            "#   {} ops after contradictory guards skipped",
            st.contradictory
        ));
    }
    for (n, e) in &r.errors {
        out.line(&format!("#   not mined: {n}: optimizer: {e}"));
    }
    if s.findings {
        for f in findings {
            out.line(&f.to_string());
        }
    }
}

/// The table of the `shown` most frequent patterns and the totals, as text.
fn print_patterns(out: &Out, findings: usize, patterns: &[PatternCount], shown: usize) {
    if !patterns.is_empty() {
        out.line(&format!("{:>5}  {:<16} pattern", "count", "kind"));
    }
    for p in &patterns[..shown] {
        out.line(&format!("{:>5}  {:<16} {}", p.count, p.kind, p.shape));
        let variants = if p.distinct > 1 {
            format!("; {} variants", p.distinct)
        } else {
            String::new()
        };
        out.line(&format!(
            "{:>5}  {:<16}   e.g. {}   [{}{variants}]",
            "", "", p.example, p.first
        ));
    }
    let more = if shown < patterns.len() {
        format!(" ({} shown)", shown)
    } else {
        String::new()
    };
    out.line(&format!(
        "total: {findings} findings in {} patterns{more}",
        patterns.len()
    ));
}
