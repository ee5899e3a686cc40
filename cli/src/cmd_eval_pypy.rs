//! `tracejit eval-pypy FILE... [--json] [--timeout MS] [--runs N] [--peel]`: optimize every trace
//! PyPy logged unoptimized (`jit-log-noopt`), check that our output verifies, validate it (the reference interpreter
//! on guided random inputs, and Z3 where the ops are modelled), and compare our op counts
//! with PyPy's optimized version of the same trace (the `jit-log-opt-*` section that follows
//! the noopt section: its total, and its peeled loop body after the last `label`).
//!
//! Op counts exclude trace inputs and label parameters (`debug_merge_point` is not part of
//! a parsed trace). Categories: `int` (integer and pointer arithmetic, comparisons, casts),
//! `guard`, `alloc` (allocations), `read` / `write` (heap reads and writes, not guards or
//! calls), `call` (all call families), `other` (labels, jumps, finish, floats, hints).
//! PyPy's loop traces hold a preamble and a peeled body, so PyPy's total counts the loop
//! twice while ours counts it once; the `pypy body` column is the fairer comparison for
//! loops. With `--peel` we peel loops too (`optimizer::Options::peel`): our total then holds
//! a preamble and a body like PyPy's, and exits are compared by resume key (the copied
//! guards have ids of their own).

use crate::bridge_facts::{satisfy, with_entry_facts, Parents};
use crate::common::{load_traces, no_traces, CliError, CliResult, Out};
use crate::opcount::{Counts, CATS};
use crate::recorded::with_recorded_constants;
use serde::Serialize;
use trace_interp::guided::guided_inputs;
use trace_interp::random::random_inputs;
use trace_interp::rng::{mix64, Rng};
use trace_interp::{run, runs_equivalent, Outcome, RunConfig};
use trace_ir::Trace;
use verify::validate::{validate, Config, Verdict};

/// Arguments of `tracejit eval-pypy`.
#[derive(clap::Args)]
pub struct EvalPypyArgs {
    /// PyPy logs with jit-log-noopt and jit-log-opt sections
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
    /// Print JSON Lines: one object per file, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
    /// Time limit of each Z3 query, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 500)]
    timeout: u32,
    /// Interpreter runs (guided random inputs) per trace
    #[arg(long, value_name = "N", default_value_t = 3)]
    runs: u64,
    /// Optimize with loop peeling
    #[arg(long)]
    peel: bool,
}

/// The totals of one file (or of all files).
#[derive(Clone, Default)]
struct Row {
    name: String,
    traces: usize,
    paired: usize,
    ops_in: Counts,
    ours: Counts,
    pypy: Counts,
    pypy_body: Counts,
    /// Our counts on the traces that have a PyPy counterpart (for a like-for-like ratio).
    ours_paired: Counts,
    /// Our per-iteration counts ([`Counts::per_iteration`]) on those traces.
    ours_body: Counts,
    z3: [usize; 3],
    interp_runs: usize,
    interp_diff: usize,
    opt_errors: usize,
    /// Optimized traces that fail the IR verifier.
    bad_output: usize,
    /// Bridges that start from facts known at their guard ([`Parents::facts`]).
    bridges_with_facts: usize,
    notes: Vec<String>,
}

impl Row {
    fn add(&mut self, o: &Row) {
        self.traces += o.traces;
        self.paired += o.paired;
        self.ops_in.add(&o.ops_in);
        self.ours.add(&o.ours);
        self.pypy.add(&o.pypy);
        self.pypy_body.add(&o.pypy_body);
        self.ours_paired.add(&o.ours_paired);
        self.ours_body.add(&o.ours_body);
        for i in 0..3 {
            self.z3[i] += o.z3[i];
        }
        self.interp_runs += o.interp_runs;
        self.interp_diff += o.interp_diff;
        self.opt_errors += o.opt_errors;
        self.bad_output += o.bad_output;
        self.bridges_with_facts += o.bridges_with_facts;
    }
}

/// The PyPy traces to optimize in `traces`: those logged unoptimized.
fn is_noopt(t: &Trace) -> bool {
    t.info.section.as_deref() == Some("jit-log-noopt")
}

/// Optimize, validate and count the noopt traces of one file (a step of `out`'s progress bar
/// per trace).
fn eval_file(path: &str, traces: &[Trace], cfg: &Config, runs: u64, options: &optimizer::Options, out: &Out) -> Row {
    let mut row = Row {
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        ..Row::default()
    };
    let run_cfg = RunConfig::default();
    let mut parents = Parents::default();
    for (i, t) in traces.iter().enumerate() {
        if !is_noopt(t) {
            continue;
        }
        out.bar().set_message(format!("{}: {}", row.name, t.info.name));
        out.bar().inc(1);
        // PyPy's optimized version: the next trace, when it is an opt section.
        let pypy = traces
            .get(i + 1)
            .filter(|n| n.info.section.as_deref().is_some_and(|s| s.starts_with("jit-log-opt")));
        row.traces += 1;
        let ops_in = Counts::of(t, 0);
        row.ops_in.add(&ops_in);
        // A bridge starts from what is known at its guard (hints before its first op).
        let facts = parents.facts(traces, i);
        let hinted = facts.as_ref().and_then(|f| with_entry_facts(t, f));
        if hinted.is_some() {
            row.bridges_with_facts += 1;
        }
        let t = hinted.as_ref().unwrap_or(t);
        // What its recording proves about its constants.
        let recorded = with_recorded_constants(t, options);
        let t = recorded.as_ref().unwrap_or(t);
        let optimized = match optimizer::optimize(t, options) {
            Ok(o) => o,
            Err(e) => {
                row.opt_errors += 1;
                row.notes.push(format!("{}: optimizer refused: {e}", t.info.name));
                row.ours.add(&ops_in);
                continue;
            }
        };
        // Z3 translation validation below, with the facts stated at the guards and what the
        // loop body's label carries.
        let cfg = cfg.clone().stating(&optimized);
        let out = optimized.trace;
        if let Err(e) = trace_ir::verify(&out) {
            row.bad_output += 1;
            row.notes
                .push(format!("{}: the optimized trace fails the verifier: {e}", t.info.name));
        }
        let ours = Counts::of(&out, 0);
        row.ours.add(&ours);
        if let Some(p) = pypy {
            row.paired += 1;
            row.ours_paired.add(&ours);
            row.ours_body.add(&Counts::per_iteration(&out));
            row.pypy.add(&Counts::of(p, 0));
            row.pypy_body.add(&Counts::per_iteration(p));
        }
        match validate(t, &out, &cfg) {
            Verdict::Valid => row.z3[0] += 1,
            Verdict::Invalid { counterexample } => {
                row.z3[1] += 1;
                row.notes
                    .push(format!("{}: INVALID: {}", t.info.name, counterexample.message));
            }
            Verdict::Unknown { reason } => {
                row.z3[2] += 1;
                row.notes.push(format!("{}: Z3 unknown: {reason}", t.info.name));
            }
        }
        // The reference interpreter on guided random inputs.
        let mut rng = Rng::new(mix64(i as u64 ^ 0x5eed));
        for _ in 0..runs {
            let mut start = random_inputs(&mut rng, t);
            if let Some(f) = &facts {
                satisfy(f, &mut start);
            }
            let (mut inputs, gcfg) = guided_inputs(t, &start, &run_cfg, 16);
            if let Some(f) = &facts {
                satisfy(f, &mut inputs);
            }
            let a = run(t, &inputs, &gcfg);
            if matches!(a.outcome, Outcome::Invalid { promise: true, .. }) {
                // Inputs a bridge cannot get from its guard.
                continue;
            }
            let b = run(&out, &inputs, &gcfg);
            row.interp_runs += 1;
            if let Err(e) = runs_equivalent(t, &out, &inputs, &gcfg, &a, &b) {
                row.interp_diff += 1;
                row.notes.push(format!("{}: interpreter differs: {e}", t.info.name));
            }
        }
    }
    row
}

/// `tracejit eval-pypy FILE... [--json] [--timeout MS] [--runs N] [--peel]`: each file's row
/// is printed as soon as the file is done, the totals and the tables by category at the end.
pub fn eval_pypy(a: EvalPypyArgs) -> CliResult {
    let options = optimizer::Options {
        peel: a.peel,
        ..optimizer::Options::default()
    };
    let cfg = Config {
        timeout_ms: a.timeout,
        ..Config::default()
    };
    let mut files = Vec::new();
    for f in &a.files {
        let traces = load_traces(f)?;
        if !traces.is_empty() {
            files.push((f.as_str(), traces));
        }
    }
    if files.is_empty() {
        return Err(no_traces());
    }
    let noopt: usize = files
        .iter()
        .map(|(_, ts)| ts.iter().filter(|t| is_noopt(t)).count())
        .sum();
    let out = Out::with_progress(noopt as u64, "eval-pypy");
    if !a.json {
        out.line(&table_header());
    }
    let mut rows = Vec::new();
    for (f, traces) in &files {
        let row = eval_file(f, traces, &cfg, a.runs, &options, &out);
        if a.json {
            out.json(&EvalLine::File {
                file: f,
                row: row_json(&row),
                notes: &row.notes,
            });
        } else {
            out.line(&table_line(&row));
            for n in &row.notes {
                out.line(&format!("note: {}: {n}", row.name));
            }
        }
        rows.push(row);
    }
    let mut total = Row {
        name: "TOTAL".into(),
        ..Row::default()
    };
    for r in &rows {
        total.add(r);
    }
    if a.json {
        out.json(&EvalLine::Summary {
            files: rows.len(),
            row: row_json(&total),
        });
    } else {
        print_tables(&out, &rows, &total);
    }
    out.finish()?;
    if total.z3[1] > 0 || total.interp_diff > 0 || total.bad_output > 0 {
        return Err(CliError::Failed(format!(
            "{} trace(s) invalid (Z3), {} interpreter run(s) differ, {} optimized trace(s) fail the verifier",
            total.z3[1], total.interp_diff, total.bad_output
        )));
    }
    Ok(())
}

fn table_header() -> String {
    format!(
        "{:<18} {:>6} {:>6} {:>6} {:>6} {:>9} {:>7} {:>7} {:>7}  {:<33} {:<11}",
        "file",
        "traces",
        "in",
        "ours",
        "pypy",
        "ours/pypy",
        "ours-bd",
        "pypy-bd",
        "bd",
        "z3 valid/invalid/unknown",
        "interp diff"
    )
}

fn table_line(r: &Row) -> String {
    let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    format!(
        "{:<18} {:>6} {:>6} {:>6} {:>6} {:>9.2} {:>7} {:>7} {:>7.2}  {:<33} {:<11}",
        r.name,
        r.traces,
        r.ops_in.total,
        r.ours.total,
        r.pypy.total,
        ratio(r.ours_paired.total, r.pypy.total),
        r.ours_body.total,
        r.pypy_body.total,
        ratio(r.ours_body.total, r.pypy_body.total),
        format!("{}/{}/{}", r.z3[0], r.z3[1], r.z3[2]),
        format!("{}/{}", r.interp_diff, r.interp_runs)
    )
}

/// The totals line, then the tables by category (of every file and the totals).
fn print_tables(out: &Out, rows: &[Row], total: &Row) {
    out.line(&table_line(total));
    out.line(&format!(
        "{} bridges start from what is known at their guard in PyPy's optimized trace",
        total.bridges_with_facts
    ));
    out.line("");
    let mut head = format!("{:<18}", "by category");
    for c in CATS {
        head.push_str(&format!(" {:>20}", format!("{c} in/ours/pypy")));
    }
    out.line(&head);
    for r in rows.iter().chain(std::iter::once(total)) {
        let mut line = format!("{:<18}", r.name);
        for k in 0..7 {
            line.push_str(&format!(
                " {:>20}",
                format!("{}/{}/{}", r.ops_in.cat[k], r.ours.cat[k], r.pypy.cat[k])
            ));
        }
        out.line(&line);
    }
    out.line("");
    let mut head = format!("{:<18}", "per iteration");
    for c in CATS {
        head.push_str(&format!(" {:>20}", format!("{c} ours/pypy")));
    }
    out.line(&head);
    for r in rows.iter().chain(std::iter::once(total)) {
        let mut line = format!("{:<18}", r.name);
        for k in 0..7 {
            line.push_str(&format!(
                " {:>20}",
                format!("{}/{}", r.ours_body.cat[k], r.pypy_body.cat[k])
            ));
        }
        out.line(&line);
    }
}

/// Op counts in JSON: the total and one count per category.
#[derive(Serialize)]
struct CountsJson {
    total: usize,
    int: usize,
    guard: usize,
    alloc: usize,
    read: usize,
    write: usize,
    call: usize,
    other: usize,
}

fn counts_json(c: &Counts) -> CountsJson {
    let [int, guard, alloc, read, write, call, other] = c.cat;
    CountsJson {
        total: c.total,
        int,
        guard,
        alloc,
        read,
        write,
        call,
        other,
    }
}

/// The numbers of a file (or of all files) in JSON.
#[derive(Serialize)]
struct RowJson {
    traces: usize,
    paired: usize,
    ops_in: CountsJson,
    ours: CountsJson,
    ours_paired: CountsJson,
    ours_body: CountsJson,
    pypy: CountsJson,
    pypy_body: CountsJson,
    z3: Z3Json,
    interp: InterpJson,
    optimizer_errors: usize,
    verifier_failures: usize,
    bridges_with_facts: usize,
}

#[derive(Serialize)]
struct Z3Json {
    valid: usize,
    invalid: usize,
    unknown: usize,
}

#[derive(Serialize)]
struct InterpJson {
    runs: usize,
    differ: usize,
}

fn row_json(r: &Row) -> RowJson {
    RowJson {
        traces: r.traces,
        paired: r.paired,
        ops_in: counts_json(&r.ops_in),
        ours: counts_json(&r.ours),
        ours_paired: counts_json(&r.ours_paired),
        ours_body: counts_json(&r.ours_body),
        pypy: counts_json(&r.pypy),
        pypy_body: counts_json(&r.pypy_body),
        z3: Z3Json {
            valid: r.z3[0],
            invalid: r.z3[1],
            unknown: r.z3[2],
        },
        interp: InterpJson {
            runs: r.interp_runs,
            differ: r.interp_diff,
        },
        optimizer_errors: r.opt_errors,
        verifier_failures: r.bad_output,
        bridges_with_facts: r.bridges_with_facts,
    }
}

/// One line of `tracejit eval-pypy --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EvalLine<'a> {
    /// A file, when it is done.
    File {
        file: &'a str,
        #[serde(flatten)]
        row: RowJson,
        notes: &'a [String],
    },
    /// The totals, last.
    Summary {
        files: usize,
        #[serde(flatten)]
        row: RowJson,
    },
}
