//! `tracejit opt FILE [--stats] [--json] [--peel] [--no-<part>...]`: optimize every trace of a
//! file and print the optimized traces (or, with `--json`, one JSON object per trace), with
//! statistics. `--peel` peels each loop's first iteration first (`Options::peel`).
//!
//! When the file is a PyPy log with both unoptimized (`jit-log-noopt`) and PyPy-optimized
//! sections, only the unoptimized traces are optimized, and each is shown with PyPy's op count
//! for the same trace (the optimized section that follows it).

use crate::common::{json_str, Args, CliError, CliResult};
use optimizer::{optimize, Options, Stats};
use std::io::Write;
use trace_ir::{print_trace, Trace};

fn is_noopt(t: &Trace) -> bool {
    t.info.section.as_deref() == Some("jit-log-noopt")
}

fn stats_json(s: &Stats) -> String {
    let removed: Vec<String> = s
        .removed
        .iter()
        .map(|(r, n)| format!("{}:{n}", json_str(r.name())))
        .collect();
    let rules: Vec<String> = s.rules.iter().map(|(r, n)| format!("{}:{n}", json_str(r))).collect();
    format!(
        "{{\"ops_in\":{},\"ops_out\":{},\"removed\":{{{}}},\"rules\":{{{}}},\"virtuals_removed\":{},\"virtuals_materialized\":{}}}",
        s.ops_in,
        s.ops_out,
        removed.join(","),
        rules.join(","),
        s.virtuals_removed,
        s.virtuals_materialized
    )
}

/// Write a line to `out`; a closed pipe (`tracejit opt ... | head`) ends the command quietly.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {
        if writeln!($out, $($arg)*).is_err() {
            return Ok(());
        }
    };
}

/// `tracejit opt FILE [--stats] [--json] [--peel] [--no-<part>...]`.
pub fn opt(args: &[String]) -> CliResult {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let no_parts: Vec<String> = Options::PARTS.iter().map(|p| format!("no-{p}")).collect();
    let mut switches: Vec<&str> = vec!["stats", "json", "peel"];
    switches.extend(no_parts.iter().map(|s| s.as_str()));
    let a = Args::parse(args, &[], &switches)?;
    let path = a.one_file()?;
    let mut opts = Options {
        peel: a.has("peel"),
        ..Options::default()
    };
    for p in Options::PARTS {
        if a.has(&format!("no-{p}")) {
            opts.set(p, false);
        }
    }
    let traces = crate::common::load_traces(path)?;
    let has_noopt = traces.iter().any(is_noopt);
    let json = a.has("json");
    let mut total = Stats::default();
    let (mut pypy_total, mut n) = (0usize, 0usize);
    for (k, t) in traces.iter().enumerate() {
        if has_noopt && !is_noopt(t) {
            continue;
        }
        let res = optimize(t, &opts).map_err(|e| CliError::Failed(format!("{path}: {}: {e}", t.info.name)))?;
        let pypy = if has_noopt {
            traces[k + 1..]
                .iter()
                .take_while(|x| !is_noopt(x))
                .next()
                .map(|x| x.num_real_ops())
        } else {
            None
        };
        n += 1;
        pypy_total += pypy.unwrap_or(0);
        total.merge(&res.stats);
        if json {
            outln!(
                out,
                "{{\"name\":{},\"pypy_ops\":{},\"stats\":{},\"trace\":{}}}",
                json_str(&t.info.name),
                pypy.map(|p| p.to_string()).unwrap_or_else(|| "null".into()),
                stats_json(&res.stats),
                json_str(&print_trace(&res.trace))
            );
            continue;
        }
        let pypy_txt = pypy.map(|p| format!(", PyPy {p}")).unwrap_or_default();
        outln!(
            out,
            "# {}: {} ops -> {} ops{pypy_txt}",
            t.info.name,
            res.stats.ops_in,
            res.stats.ops_out
        );
        outln!(out, "{}", print_trace(&res.trace).trim_end());
        if a.has("stats") {
            for line in res.stats.to_string().lines() {
                outln!(out, "# {line}");
            }
        }
        outln!(out, "");
    }
    if json {
        outln!(
            out,
            "{{\"total\":{},\"traces\":{n},\"pypy_ops\":{pypy_total}}}",
            stats_json(&total)
        );
    } else {
        let pypy_txt = if has_noopt {
            format!(", PyPy {pypy_total}")
        } else {
            String::new()
        };
        outln!(
            out,
            "# total: {n} traces, {} ops -> {} ops{pypy_txt}",
            total.ops_in,
            total.ops_out
        );
        if a.has("stats") {
            for line in total.to_string().lines() {
                outln!(out, "# {line}");
            }
            // PyPy's rule statistics: every opcode with a firing, all its rules in the
            // order they are tried, with their counts.
            outln!(out, "# rule firings per opcode:");
            for line in optimizer::peephole::format_stats(&total.rules).lines() {
                outln!(out, "#   {line}");
            }
        }
    }
    if out.flush().is_err() {
        return Ok(());
    }
    Ok(())
}
