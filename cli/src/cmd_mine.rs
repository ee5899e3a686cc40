//! `tracejit mine FILE... [--json] [--limit N] [--seconds S] ...`: mine optimized traces for
//! missing optimizations with Z3 (`verify::mine`) and print the findings
//! aggregated by pattern, most frequent first.
//!
//! PyPy logs: the `jit-log-noopt` sections are optimized with our optimizer and the result is
//! mined; other files: every trace is optimized and mined (`--no-opt` mines them as written).

use crate::common::{json_str, read_file, Args, CliError, CliResult};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};
use verify::mine::{aggregate, mine_trace, prepare, Finding, FindingKind, MineConfig, MineStats, PatternCount};

/// What happened in one file.
struct FileReport {
    path: String,
    stats: MineStats,
    /// Traces the optimizer refused (name, error).
    errors: Vec<(String, String)>,
    seconds: f64,
}

fn number<T: std::str::FromStr>(a: &Args, name: &str, default: T) -> Result<T, CliError> {
    match a.value(name) {
        Some(v) => v
            .parse()
            .map_err(|_| CliError::Usage(format!("--{name} needs a number, got `{v}`"))),
        None => Ok(default),
    }
}

fn kind_value(k: &FindingKind) -> String {
    match k {
        FindingKind::ConstBool(v) | FindingKind::Constant(v) => v.to_string(),
        FindingKind::SameAsEarlier(y) | FindingKind::SameAsInput(y) => format!("\"op {y}\""),
        FindingKind::NoOverflow | FindingKind::GuardImplied => "null".into(),
    }
}

/// The settings of a `mine` run, from its arguments.
struct Settings {
    /// The files to mine.
    files: Vec<String>,
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
    /// Parse and check the arguments of `tracejit mine`.
    fn parse(args: &[String]) -> Result<Settings, CliError> {
        let a = Args::parse(
            args,
            &["limit", "seconds", "timeout-ms", "depth", "max-traces"],
            &["json", "findings", "no-opt", "no-guards", "no-minimize", "verbose"],
        )?;
        if a.positional.is_empty() {
            return Err(CliError::Usage("missing FILE".into()));
        }
        let limit: usize = number(&a, "limit", 30)?;
        let seconds: f64 = number(&a, "seconds", 60.0)?;
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(CliError::Usage("--seconds must be positive".into()));
        }
        let max_traces: usize = number(&a, "max-traces", usize::MAX)?;
        let defaults = MineConfig::default();
        let base = MineConfig {
            timeout_ms: number(&a, "timeout-ms", defaults.timeout_ms)?,
            depth: number(&a, "depth", defaults.depth)?,
            use_guards: !a.has("no-guards"),
            minimize: !a.has("no-minimize"),
            ..defaults
        };
        Ok(Settings {
            limit,
            seconds,
            max_traces,
            base,
            optimize: if a.has("no-opt") {
                None
            } else {
                Some(optimizer::Options::default())
            },
            json: a.has("json"),
            findings: a.has("findings"),
            verbose: a.has("verbose"),
            files: a.positional,
        })
    }
}

/// `tracejit mine FILE... [--json] [--limit N] [--seconds S] [--timeout-ms T] [--depth D]
/// [--max-traces N] [--findings] [--no-opt] [--no-guards] [--no-minimize] [--verbose]`.
///
/// `--limit N` shows the N most frequent patterns (default 30; 0 = all); `--seconds S` is the
/// time budget per file (default 60); `--max-traces N` mines only the first N traces of each
/// file; `--findings` also lists every finding; `--verbose` prints one line per trace on
/// stderr (ops, queries, time). Exit status 0 when every file was read (also
/// with findings), 1 on an unreadable or malformed file.
pub fn mine(args: &[String]) -> CliResult {
    let s = Settings::parse(args)?;
    let mut reports = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    for path in &s.files {
        reports.push(mine_file(&s, path, &mut findings)?);
    }
    let patterns = aggregate(&findings);
    let shown = if s.limit == 0 {
        patterns.len()
    } else {
        s.limit.min(patterns.len())
    };
    let out = if s.json {
        json_report(&reports, &findings, &patterns, shown)
    } else {
        text_report(&reports, &findings, &patterns, shown, s.findings)
    };
    write_stdout(&out)
}

/// Mine the traces of the file at `path` within the time budget; its findings are appended to
/// `findings`.
fn mine_file(s: &Settings, path: &str, findings: &mut Vec<Finding>) -> Result<FileReport, CliError> {
    let text = read_file(path)?;
    let traces = trace_ir::parse_file(&text)
        .map_err(|e| CliError::Failed(format!("{path}:{}:{}: {}", e.line, e.column, e.message)))?;
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
    let prepared = prepare(&traces, s.optimize.as_ref());
    for (name, t) in prepared.into_iter().take(s.max_traces) {
        if Instant::now() >= start + Duration::from_secs_f64(s.seconds) {
            rep.stats.budget_exhausted = true;
            break;
        }
        match t {
            Ok(t) => {
                let (t0, before) = (Instant::now(), rep.stats.clone());
                let found = mine_trace(&t, &cfg, &mut rep.stats);
                if s.verbose {
                    eprintln!(
                        "{path}: {name}: {} ops, {} queries ({} unknown), {} findings, {:.2} s",
                        rep.stats.ops - before.ops,
                        rep.stats.queries - before.queries,
                        rep.stats.unknown - before.unknown,
                        found.len(),
                        t0.elapsed().as_secs_f64()
                    );
                }
                findings.extend(found);
            }
            Err(e) => rep.errors.push((name, e)),
        }
    }
    rep.seconds = start.elapsed().as_secs_f64();
    Ok(rep)
}

/// The report as one JSON object: per-file statistics, every finding, the `shown` most frequent
/// patterns and the totals.
fn json_report(reports: &[FileReport], findings: &[Finding], patterns: &[PatternCount], shown: usize) -> String {
    let mut out = String::new();
    let files: Vec<String> = reports
        .iter()
        .map(|r| {
            let errors: Vec<String> = r
                .errors
                .iter()
                .map(|(n, e)| format!("{{\"trace\":{},\"error\":{}}}", json_str(n), json_str(e)))
                .collect();
            format!(
                "{{\"file\":{},\"traces\":{},\"ops\":{},\"queries\":{},\"unknown\":{},\"contradictory\":{},\"seconds\":{:.3},\"budget_exhausted\":{},\"optimizer_errors\":[{}]}}",
                json_str(&r.path),
                r.stats.traces,
                r.stats.ops,
                r.stats.queries,
                r.stats.unknown,
                r.stats.contradictory,
                r.seconds,
                r.stats.budget_exhausted,
                errors.join(",")
            )
        })
        .collect();
    let fs: Vec<String> = findings
        .iter()
        .map(|f| {
            format!(
                "{{\"trace\":{},\"op\":{},\"opcode\":{},\"kind\":{},\"value\":{},\"pattern\":{},\"shape\":{},\"unminimized\":{}}}",
                json_str(&f.trace),
                f.op,
                json_str(f.opcode.name()),
                json_str(f.kind.name()),
                kind_value(&f.kind),
                json_str(&f.pattern),
                json_str(&f.shape),
                json_str(&f.unminimized)
            )
        })
        .collect();
    let ps: Vec<String> = patterns[..shown]
        .iter()
        .map(|p| {
            format!(
                "{{\"count\":{},\"kind\":{},\"shape\":{},\"distinct\":{},\"example\":{},\"first\":{}}}",
                p.count,
                json_str(p.kind),
                json_str(&p.shape),
                p.distinct,
                json_str(&p.example),
                json_str(&p.first)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "{{\"files\":[{}],\"findings\":[{}],\"patterns\":[{}],\"total\":{{\"findings\":{},\"patterns\":{}}}}}",
        files.join(","),
        fs.join(","),
        ps.join(","),
        findings.len(),
        patterns.len()
    );
    out
}

/// The report as text: a line per file, every finding with `--findings`, the table of the
/// `shown` most frequent patterns and the totals.
fn text_report(
    reports: &[FileReport],
    findings: &[Finding],
    patterns: &[PatternCount],
    shown: usize,
    list_findings: bool,
) -> String {
    let mut out = String::new();
    for r in reports {
        let s = &r.stats;
        let budget = if s.budget_exhausted {
            ", time budget exhausted"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "# {}: {} traces mined, {} ops examined, {} Z3 queries ({} unknown), {:.1} s{budget}",
            r.path, s.traces, s.ops, s.queries, s.unknown, r.seconds
        );
        if s.contradictory > 0 {
            let _ = writeln!(out, "#   {} ops after contradictory guards skipped", s.contradictory);
        }
        for (n, e) in &r.errors {
            let _ = writeln!(out, "#   not mined: {n}: optimizer: {e}");
        }
    }
    if list_findings {
        for f in findings {
            let _ = writeln!(out, "{f}");
        }
    }
    if !patterns.is_empty() {
        let _ = writeln!(out, "{:>5}  {:<16} pattern", "count", "kind");
    }
    for p in &patterns[..shown] {
        let _ = writeln!(out, "{:>5}  {:<16} {}", p.count, p.kind, p.shape);
        let variants = if p.distinct > 1 {
            format!("; {} variants", p.distinct)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<16}   e.g. {}   [{}{variants}]",
            "", "", p.example, p.first
        );
    }
    let more = if shown < patterns.len() {
        format!(" ({} shown)", shown)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "total: {} findings in {} patterns{more}",
        findings.len(),
        patterns.len()
    );
    out
}

/// Write `out` to stdout; a closed pipe is not an error.
fn write_stdout(out: &str) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Failed(format!("writing output: {e}"))),
    }
}
