//! `tracejit check`: translation validation (Z3) of the optimizer's output, or of a given
//! pair of traces.
//!
//! - `tracejit check FILE [--json] [--timeout MS]` optimizes every trace of FILE and
//!   validates the result against the trace.
//! - `tracejit check ORIGINAL --optimized OTHER [--json] [--timeout MS]` validates the k-th
//!   trace of OTHER against the k-th trace of ORIGINAL (guards matched by their
//!   `descr=<GuardN>` ids), so a wrong optimization written by hand is shown to be caught.
//!
//! Exit status: 0 when nothing is invalid, 1 when some trace is invalid (or a file cannot be
//! read or parsed), 2 on a usage error.

use crate::common::{json_str, read_file, Args, CliError, CliResult};
use trace_ir::Trace;
use verify::validate::{validate, Config, Verdict};

/// One validated trace.
struct Row {
    name: String,
    ops_in: usize,
    ops_out: usize,
    verdict: Verdict,
}

fn parse(path: &str) -> Result<Vec<Trace>, CliError> {
    let text = read_file(path)?;
    trace_ir::parse_file(&text).map_err(|e| CliError::Failed(format!("{path}: {e}")))
}

/// `tracejit check ...`.
pub fn check(args: &[String]) -> CliResult {
    let a = Args::parse(args, &["optimized", "timeout"], &["json"])?;
    let file = a.one_file()?;
    let mut cfg = Config::default();
    if let Some(t) = a.value("timeout") {
        cfg.timeout_ms = t
            .parse()
            .map_err(|_| CliError::Usage(format!("--timeout: not a number: {t}")))?;
    }
    let originals = parse(file)?;
    let mut rows = Vec::new();
    match a.value("optimized") {
        Some(other) => {
            let optimized = parse(other)?;
            if optimized.len() != originals.len() {
                return Err(CliError::Failed(format!(
                    "{file} has {} trace(s), {other} has {}",
                    originals.len(),
                    optimized.len()
                )));
            }
            for (i, (o, p)) in originals.iter().zip(&optimized).enumerate() {
                rows.push(Row {
                    name: trace_name(o, file, i),
                    ops_in: o.num_real_ops(),
                    ops_out: p.num_real_ops(),
                    verdict: validate(o, p, &cfg),
                });
            }
        }
        None => {
            for (i, o) in originals.iter().enumerate() {
                let name = trace_name(o, file, i);
                match optimizer::optimize(o, &optimizer::Options::default()) {
                    Ok(out) => rows.push(Row {
                        name,
                        ops_in: o.num_real_ops(),
                        ops_out: out.trace.num_real_ops(),
                        verdict: validate(o, &out.trace, &cfg),
                    }),
                    Err(e) => rows.push(Row {
                        name,
                        ops_in: o.num_real_ops(),
                        ops_out: 0,
                        verdict: Verdict::Unknown {
                            reason: format!("the optimizer refused the trace: {e}"),
                        },
                    }),
                }
            }
        }
    }
    if a.has("json") {
        print_json(&rows);
    } else {
        print_text(&rows);
    }
    let invalid = rows.iter().filter(|r| r.verdict.is_invalid()).count();
    if invalid > 0 {
        Err(CliError::Failed(format!("{invalid} trace(s) invalid")))
    } else {
        Ok(())
    }
}

fn trace_name(t: &Trace, file: &str, i: usize) -> String {
    if t.info.name.is_empty() {
        format!("{file}#{i}")
    } else {
        t.info.name.clone()
    }
}

fn print_text(rows: &[Row]) {
    let (mut valid, mut invalid, mut unknown) = (0, 0, 0);
    for r in rows {
        match &r.verdict {
            Verdict::Valid => valid += 1,
            Verdict::Invalid { .. } => invalid += 1,
            Verdict::Unknown { .. } => unknown += 1,
        }
        println!("{}: {} ops -> {} ops: {}", r.name, r.ops_in, r.ops_out, r.verdict);
    }
    println!(
        "{} trace(s): {valid} valid, {invalid} invalid, {unknown} unknown",
        rows.len()
    );
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
