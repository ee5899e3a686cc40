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

use crate::common::{json_str, Args, CliError, CliResult};
use crate::opcount::{Counts, CATS};
use trace_interp::guided::guided_inputs;
use trace_interp::outcomes_equivalent_by_resume_key;
use trace_interp::random::random_inputs;
use trace_interp::rng::{mix64, Rng};
use trace_interp::{outcomes_equivalent, run, RunConfig};
use verify::validate::{validate, Config, Verdict};

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
    }
}

fn eval_file(path: &str, cfg: &Config, runs: u64, options: &optimizer::Options) -> Result<Row, CliError> {
    let traces = crate::common::load_traces(path)?;
    let mut row = Row {
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        ..Row::default()
    };
    let run_cfg = RunConfig::default();
    for (i, t) in traces.iter().enumerate() {
        if t.info.section.as_deref() != Some("jit-log-noopt") {
            continue;
        }
        // PyPy's optimized version: the next trace, when it is an opt section.
        let pypy = traces
            .get(i + 1)
            .filter(|n| n.info.section.as_deref().is_some_and(|s| s.starts_with("jit-log-opt")));
        row.traces += 1;
        let ops_in = Counts::of(t, 0);
        row.ops_in.add(&ops_in);
        let (out, guard_facts) = match optimizer::optimize(t, options) {
            Ok(o) => (o.trace, o.guard_facts),
            Err(e) => {
                row.opt_errors += 1;
                row.notes.push(format!("{}: optimizer refused: {e}", t.info.name));
                row.ours.add(&ops_in);
                continue;
            }
        };
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
        // Z3 translation validation, with the facts stated at the guards.
        let cfg = Config {
            guard_facts,
            ..cfg.clone()
        };
        match validate(t, &out, &cfg) {
            Verdict::Valid => row.z3[0] += 1,
            Verdict::Invalid { counterexample } => {
                row.z3[1] += 1;
                row.notes
                    .push(format!("{}: INVALID: {}", t.info.name, counterexample.message));
            }
            Verdict::Unknown { .. } => row.z3[2] += 1,
        }
        // The reference interpreter on guided random inputs.
        let peeled = trace_ir::is_peeled_form(t, &out);
        let mut rng = Rng::new(mix64(i as u64 ^ 0x5eed));
        for _ in 0..runs {
            let start = random_inputs(&mut rng, t);
            let (inputs, gcfg) = guided_inputs(t, &start, &run_cfg, 16);
            let a = run(t, &inputs, &gcfg);
            let b = run(&out, &inputs, &gcfg);
            row.interp_runs += 1;
            let same = if peeled {
                outcomes_equivalent_by_resume_key(&a, &b)
            } else {
                outcomes_equivalent(&a, &b)
            };
            if let Err(e) = same {
                row.interp_diff += 1;
                row.notes.push(format!("{}: interpreter differs: {e}", t.info.name));
            }
        }
    }
    Ok(row)
}

/// `tracejit eval-pypy FILE... [--json] [--timeout MS] [--runs N] [--peel]`.
pub fn eval_pypy(args: &[String]) -> CliResult {
    let a = Args::parse(args, &["timeout", "runs"], &["json", "peel"])?;
    let options = optimizer::Options {
        peel: a.has("peel"),
        ..optimizer::Options::default()
    };
    if a.positional.is_empty() {
        return Err(CliError::Usage("missing FILE".into()));
    }
    let mut cfg = Config {
        timeout_ms: 500,
        ..Config::default()
    };
    if let Some(t) = a.value("timeout") {
        cfg.timeout_ms = t
            .parse()
            .map_err(|_| CliError::Usage(format!("--timeout: not a number: {t}")))?;
    }
    let runs: u64 = match a.value("runs") {
        Some(r) => r
            .parse()
            .map_err(|_| CliError::Usage(format!("--runs: not a number: {r}")))?,
        None => 3,
    };
    let mut rows = Vec::new();
    for f in &a.positional {
        rows.push(eval_file(f, &cfg, runs, &options)?);
    }
    let mut total = Row {
        name: "TOTAL".into(),
        ..Row::default()
    };
    for r in &rows {
        total.add(r);
    }
    if a.has("json") {
        print_json(&rows, &total);
    } else {
        print_table(&rows, &total);
    }
    if total.z3[1] > 0 || total.interp_diff > 0 || total.bad_output > 0 {
        return Err(CliError::Failed(format!(
            "{} trace(s) invalid (Z3), {} interpreter run(s) differ, {} optimized trace(s) fail the verifier",
            total.z3[1], total.interp_diff, total.bad_output
        )));
    }
    Ok(())
}

fn print_table(rows: &[Row], total: &Row) {
    println!(
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
    );
    let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let line = |r: &Row| {
        println!(
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
        );
    };
    for r in rows {
        line(r);
    }
    line(total);
    println!();
    print!("{:<18}", "by category");
    for c in CATS {
        print!(" {:>20}", format!("{c} in/ours/pypy"));
    }
    println!();
    for r in rows.iter().chain(std::iter::once(total)) {
        print!("{:<18}", r.name);
        for k in 0..7 {
            print!(
                " {:>20}",
                format!("{}/{}/{}", r.ops_in.cat[k], r.ours.cat[k], r.pypy.cat[k])
            );
        }
        println!();
    }
    println!();
    print!("{:<18}", "per iteration");
    for c in CATS {
        print!(" {:>20}", format!("{c} ours/pypy"));
    }
    println!();
    for r in rows.iter().chain(std::iter::once(total)) {
        print!("{:<18}", r.name);
        for k in 0..7 {
            print!(" {:>20}", format!("{}/{}", r.ours_body.cat[k], r.pypy_body.cat[k]));
        }
        println!();
    }
    for r in rows {
        for n in &r.notes {
            println!("note: {}: {n}", r.name);
        }
    }
}

fn counts_json(c: &Counts) -> String {
    let mut s = format!("{{\"total\": {}", c.total);
    for (k, name) in CATS.iter().enumerate() {
        s.push_str(&format!(", \"{name}\": {}", c.cat[k]));
    }
    s.push('}');
    s
}

fn print_json(rows: &[Row], total: &Row) {
    let one = |r: &Row| {
        format!(
            "{{\"file\": {}, \"traces\": {}, \"paired\": {}, \"ops_in\": {}, \"ours\": {}, \"ours_paired\": {}, \"ours_body\": {}, \"pypy\": {}, \"pypy_body\": {}, \"z3\": {{\"valid\": {}, \"invalid\": {}, \"unknown\": {}}}, \"interp\": {{\"runs\": {}, \"differ\": {}}}, \"optimizer_errors\": {}, \"verifier_failures\": {}, \"notes\": [{}]}}",
            json_str(&r.name),
            r.traces,
            r.paired,
            counts_json(&r.ops_in),
            counts_json(&r.ours),
            counts_json(&r.ours_paired),
            counts_json(&r.ours_body),
            counts_json(&r.pypy),
            counts_json(&r.pypy_body),
            r.z3[0],
            r.z3[1],
            r.z3[2],
            r.interp_runs,
            r.interp_diff,
            r.opt_errors,
            r.bad_output,
            r.notes.iter().map(|n| json_str(n)).collect::<Vec<_>>().join(", ")
        )
    };
    let items: Vec<String> = rows.iter().map(one).collect();
    println!(
        "{{\"files\": [\n  {}\n], \"total\": {}}}",
        items.join(",\n  "),
        one(total)
    );
}
