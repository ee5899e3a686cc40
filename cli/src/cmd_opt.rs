//! `tracejit opt FILE [--stats] [--json] [--peel] [--no-<part>...]`: optimize every trace of a
//! file and print the optimized traces (or, with `--json`, JSON Lines: one object per trace), with
//! statistics. `--peel` peels each loop's first iteration first (`Options::peel`).
//!
//! When the file is a PyPy log with both unoptimized (`jit-log-noopt`) and PyPy-optimized
//! sections, only the unoptimized traces are optimized, and each is shown with PyPy's op count
//! for the same trace (the optimized section that follows it).

use crate::common::{load_some_traces, CliError, CliResult, JsonMap, Out};
use clap::{Arg, ArgAction, ArgMatches, FromArgMatches};
use optimizer::{optimize, Options, Stats};
use serde::Serialize;
use trace_ir::{print_trace, Trace};

/// Arguments of `tracejit opt`.
#[derive(clap::Args)]
pub struct OptArgs {
    /// A trace file (the text format) or a PyPy log
    #[arg(value_name = "FILE")]
    file: String,
    /// Print the optimizer's statistics after each trace and the rule firings at the end
    #[arg(long)]
    stats: bool,
    /// Print JSON Lines: one object per trace, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
    /// Peel each loop's first iteration first
    #[arg(long)]
    peel: bool,
    #[command(flatten)]
    disabled: DisabledParts,
}

/// The optimizer parts switched off on the command line: one `--no-<part>` flag per
/// [`Options::PARTS`].
pub struct DisabledParts(Vec<&'static str>);

impl FromArgMatches for DisabledParts {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let off = Options::PARTS
            .iter()
            .copied()
            .filter(|p| m.get_flag(&format!("no-{p}")))
            .collect();
        Ok(DisabledParts(off))
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for DisabledParts {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Options::PARTS.iter().fold(cmd, |cmd, p| {
            cmd.arg(
                Arg::new(format!("no-{p}"))
                    .long(format!("no-{p}"))
                    .action(ArgAction::SetTrue)
                    .help(format!("Switch off the optimizer's `{p}` part")),
            )
        })
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

fn is_noopt(t: &Trace) -> bool {
    t.info.section.as_deref() == Some("jit-log-noopt")
}

/// The optimizer's statistics in JSON.
#[derive(Serialize)]
struct StatsJson {
    ops_in: usize,
    ops_out: usize,
    /// Ops removed, by reason.
    removed: JsonMap<&'static str, usize>,
    /// Rule firings, by rule.
    rules: JsonMap<&'static str, usize>,
    virtuals_removed: usize,
    virtuals_materialized: usize,
}

fn stats_json(s: &Stats) -> StatsJson {
    StatsJson {
        ops_in: s.ops_in,
        ops_out: s.ops_out,
        removed: JsonMap(s.removed.iter().map(|(r, n)| (r.name(), *n)).collect()),
        rules: JsonMap(s.rules.iter().map(|(r, n)| (*r, *n)).collect()),
        virtuals_removed: s.virtuals_removed,
        virtuals_materialized: s.virtuals_materialized,
    }
}

/// One line of `tracejit opt --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OptLine<'a> {
    /// An optimized trace.
    Trace {
        name: &'a str,
        pypy_ops: Option<usize>,
        stats: StatsJson,
        trace: String,
    },
    /// The totals, last.
    Summary {
        file: &'a str,
        traces: usize,
        pypy_ops: usize,
        stats: StatsJson,
    },
}

/// `tracejit opt FILE [--stats] [--json] [--peel] [--no-<part>...]`.
pub fn opt(a: OptArgs) -> CliResult {
    let out = Out::plain();
    let path = &a.file;
    let mut opts = Options {
        peel: a.peel,
        ..Options::default()
    };
    for p in &a.disabled.0 {
        opts.set(p, false);
    }
    let traces = load_some_traces(path)?;
    let has_noopt = traces.iter().any(is_noopt);
    let json = a.json;
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
            out.json(&OptLine::Trace {
                name: &t.info.name,
                pypy_ops: pypy,
                stats: stats_json(&res.stats),
                trace: print_trace(&res.trace),
            });
            continue;
        }
        let pypy_txt = pypy.map(|p| format!(", PyPy {p}")).unwrap_or_default();
        out.line(&format!(
            "# {}: {} ops -> {} ops{pypy_txt}",
            t.info.name, res.stats.ops_in, res.stats.ops_out
        ));
        out.line(print_trace(&res.trace).trim_end());
        if a.stats {
            for line in res.stats.to_string().lines() {
                out.line(&format!("# {line}"));
            }
        }
        out.line("");
    }
    if json {
        out.json(&OptLine::Summary {
            file: path,
            traces: n,
            pypy_ops: pypy_total,
            stats: stats_json(&total),
        });
    } else {
        let pypy_txt = if has_noopt {
            format!(", PyPy {pypy_total}")
        } else {
            String::new()
        };
        out.line(&format!(
            "# total: {n} traces, {} ops -> {} ops{pypy_txt}",
            total.ops_in, total.ops_out
        ));
        if a.stats {
            for line in total.to_string().lines() {
                out.line(&format!("# {line}"));
            }
            // PyPy's rule statistics: every opcode with a firing, all its rules in the
            // order they are tried, with their counts.
            out.line("# rule firings per opcode:");
            for line in optimizer::peephole::format_stats(&total.rules).lines() {
                out.line(&format!("#   {line}"));
            }
        }
    }
    out.finish()
}
