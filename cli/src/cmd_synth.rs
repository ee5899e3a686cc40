//! `tracejit synth-rules [--json] [--op NAME]...`: synthesize simple peephole rules with Z3
//! (`verify::synth`) and mark each `covered` if the optimizer already simplifies a
//! one-op trace with it, or `MISSING`. Exits with status 1 if any rule is missing.

use crate::common::{CliError, CliResult, Out};
use serde::Serialize;
use trace_ir::Opcode;
use verify::synth::{synthesize, BINARY_OPS};

/// Arguments of `tracejit synth-rules`.
#[derive(clap::Args)]
pub struct SynthArgs {
    /// Print JSON Lines: one object per rule, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
    /// Search only this binary integer op (e.g. int_and); may be repeated [default: all]
    #[arg(long, value_name = "NAME")]
    op: Vec<String>,
}

/// One line of `tracejit synth-rules --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SynthLine<'a> {
    /// A synthesized rule.
    Rule { op: &'a str, rule: &'a str, covered: bool },
    /// The totals, last.
    Summary {
        found: usize,
        covered: usize,
        missing: usize,
    },
}

/// The ops named by `--op` (all binary integer ops searched when none is).
fn ops_of(names: &[String]) -> Result<Vec<Opcode>, CliError> {
    if names.is_empty() {
        return Ok(BINARY_OPS.to_vec());
    }
    names
        .iter()
        .map(|name| {
            let op = Opcode::from_name(name).ok_or_else(|| CliError::Usage(format!("unknown operation `{name}`")))?;
            if !BINARY_OPS.contains(&op) {
                return Err(CliError::Usage(format!(
                    "`{name}` is not one of the binary integer ops searched"
                )));
            }
            Ok(op)
        })
        .collect()
}

/// `tracejit synth-rules [--json] [--op NAME]...`: the rules of each op are printed as soon as
/// its search is done.
pub fn synth_rules(a: SynthArgs) -> CliResult {
    let ops = ops_of(&a.op)?;
    let out = Out::with_progress(ops.len() as u64, "synth-rules");
    let (mut found, mut missing) = (0, 0);
    for op in ops {
        out.bar().set_message(op.name().to_string());
        for f in synthesize(&[op]) {
            found += 1;
            missing += usize::from(!f.covered);
            if a.json {
                let text = f.to_string();
                let rule = text.rsplit_once("    ").map(|(r, _)| r).unwrap_or(&text);
                out.json(&SynthLine::Rule {
                    op: op.name(),
                    rule: rule.trim(),
                    covered: f.covered,
                });
            } else {
                out.line(&f.to_string());
            }
        }
        out.bar().inc(1);
    }
    if a.json {
        out.json(&SynthLine::Summary {
            found,
            covered: found - missing,
            missing,
        });
    } else {
        out.line(&format!(
            "# {found} rules found, {} covered, {missing} MISSING",
            found - missing
        ));
    }
    out.finish()?;
    if missing > 0 {
        return Err(CliError::Failed(format!(
            "{missing} synthesized rule(s) not done by the optimizer"
        )));
    }
    Ok(())
}
