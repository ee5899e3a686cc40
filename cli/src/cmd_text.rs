//! `tracejit parse` and `tracejit print`: read a trace file or PyPy log, verify every trace,
//! and summarize or print them in the normalized text format.

use crate::common::{load_some_traces, CliError, CliResult, Out};
use serde::Serialize;
use trace_ir::text::print_trace;
use trace_ir::Trace;

/// Arguments of `tracejit parse`.
#[derive(clap::Args)]
pub struct ParseArgs {
    /// A trace file (the text format) or a PyPy log
    #[arg(value_name = "FILE")]
    file: String,
    /// Print JSON Lines: one object per trace, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
}

/// Arguments of `tracejit print`.
#[derive(clap::Args)]
pub struct PrintArgs {
    /// A trace file (the text format) or a PyPy log
    #[arg(value_name = "FILE")]
    file: String,
}

/// Parse `path`, turning a parse error into `FILE:LINE:COLUMN: message`.
fn load(path: &str) -> Result<Vec<Trace>, CliError> {
    load_some_traces(path)
}

fn guards(t: &Trace) -> usize {
    t.ops.iter().filter(|op| op.opcode.is_guard()).count()
}

/// One line of `tracejit parse --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ParseLine<'a> {
    /// A trace.
    Trace {
        index: usize,
        name: &'a str,
        section: Option<&'a str>,
        inputs: usize,
        ops: usize,
        guards: usize,
    },
    /// The totals, last.
    Summary {
        file: &'a str,
        traces: usize,
        ops: usize,
        guards: usize,
    },
}

/// `tracejit parse FILE [--json]`: one line per trace (index, section, name, inputs, ops
/// not counting inputs and label parameters, guards), then a total line.
pub fn parse(args: ParseArgs) -> CliResult {
    let path = &args.file;
    let traces = load(path)?;
    let out = Out::plain();
    let (mut total_ops, mut total_guards) = (0, 0);
    for (i, t) in traces.iter().enumerate() {
        let (ops, gs) = (t.num_real_ops(), guards(t));
        total_ops += ops;
        total_guards += gs;
        if args.json {
            out.json(&ParseLine::Trace {
                index: i,
                name: &t.info.name,
                section: t.info.section.as_deref(),
                inputs: t.num_inputs,
                ops,
                guards: gs,
            });
        } else {
            let section = t.info.section.as_deref().unwrap_or("-");
            out.line(&format!(
                "{i:4}  {section:<18}  {:<48}  inputs {:3}  ops {:5}  guards {:4}",
                t.info.name, t.num_inputs, ops, gs
            ));
        }
    }
    if args.json {
        out.json(&ParseLine::Summary {
            file: path,
            traces: traces.len(),
            ops: total_ops,
            guards: total_guards,
        });
    } else {
        out.line(&format!(
            "total: {} traces, {total_ops} ops, {total_guards} guards (all verified)",
            traces.len()
        ));
    }
    out.finish()
}

/// `tracejit print FILE`: every trace in normalized text form, each after a `# name` line.
/// The output is itself a valid input file.
pub fn print(args: PrintArgs) -> CliResult {
    let traces = load(&args.file)?;
    let out = Out::plain();
    for (i, t) in traces.iter().enumerate() {
        if i > 0 {
            out.line("");
        }
        let name = if t.info.name.is_empty() {
            format!("trace #{}", i + 1)
        } else {
            t.info.name.clone()
        };
        out.line(&format!("# {}", name.replace('\n', " ")));
        out.line(print_trace(t).trim_end_matches('\n'));
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> String {
        let path = std::env::temp_dir().join(format!("tracejit-cmd-text-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let path = temp_file(
            "bad.trace",
            "[i0]\ni1 = int_add(i0, 1)\ni2 = int_add(i1, q)\nfinish(i2)\n",
        );
        match load(&path) {
            Err(CliError::Failed(msg)) => assert_eq!(msg, format!("{path}:3:18: expected a value, found `q`")),
            other => panic!("expected a failure, got {:?}", other.map(|t| t.len())),
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn printed_output_loads_again() {
        let path = temp_file(
            "two.trace",
            "# first\n[i0]\nfinish(i0)\n# second\n[p0]\nguard_nonnull(p0) []\nfinish(p0)\n",
        );
        let traces = load(&path).unwrap();
        assert_eq!(traces.len(), 2);
        assert_eq!(traces[1].info.name, "second");
        assert_eq!(guards(&traces[1]), 1);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn corpus_log_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/corpus/pypy-dev/fannkuch.pypylog"
        );
        assert_eq!(load(path).unwrap().len(), 42);
    }
}
