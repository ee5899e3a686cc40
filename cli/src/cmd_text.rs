//! `tracejit parse` and `tracejit print`: read a trace file or PyPy log, verify every trace,
//! and summarize or print them in the normalized text format.

use crate::common::{json_str, Args, CliError, CliResult};
use std::fmt::Write as _;
use std::io::Write as _;
use trace_ir::text::print_trace;
use trace_ir::Trace;

/// Parse `path`, turning a parse error into `FILE:LINE:COLUMN: message`.
fn load(path: &str) -> Result<Vec<Trace>, CliError> {
    crate::common::load_traces(path)
}

/// Write `out` to stdout; a closed pipe (`tracejit print x | head`) is not an error.
fn emit(out: &str) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Failed(format!("writing output: {e}"))),
    }
}

fn guards(t: &Trace) -> usize {
    t.ops.iter().filter(|op| op.opcode.is_guard()).count()
}

/// `tracejit parse FILE [--json]`: one line per trace (index, section, name, inputs, ops
/// not counting inputs and label parameters, guards), then a total line.
pub fn parse(args: &[String]) -> CliResult {
    let args = Args::parse(args, &[], &["json"])?;
    let path = args.one_file()?;
    let traces = load(path)?;
    let (mut total_ops, mut total_guards) = (0, 0);
    let json = args.has("json");
    let mut items = Vec::new();
    let mut out = String::new();
    for (i, t) in traces.iter().enumerate() {
        let (ops, gs) = (t.num_real_ops(), guards(t));
        total_ops += ops;
        total_guards += gs;
        if json {
            items.push(format!(
                "{{\"index\":{i},\"name\":{},\"section\":{},\"inputs\":{},\"ops\":{ops},\"guards\":{gs}}}",
                json_str(&t.info.name),
                t.info.section.as_deref().map(json_str).unwrap_or_else(|| "null".into()),
                t.num_inputs
            ));
        } else {
            let section = t.info.section.as_deref().unwrap_or("-");
            let _ = writeln!(
                out,
                "{i:4}  {section:<18}  {:<48}  inputs {:3}  ops {:5}  guards {:4}",
                t.info.name, t.num_inputs, ops, gs
            );
        }
    }
    if json {
        let _ = writeln!(
            out,
            "{{\"file\":{},\"traces\":[{}],\"total\":{{\"traces\":{},\"ops\":{total_ops},\"guards\":{total_guards}}}}}",
            json_str(path),
            items.join(","),
            traces.len()
        );
    } else {
        let _ = writeln!(
            out,
            "total: {} traces, {total_ops} ops, {total_guards} guards (all verified)",
            traces.len()
        );
    }
    emit(&out)
}

/// `tracejit print FILE`: every trace in normalized text form, each after a `# name` line.
/// The output is itself a valid input file.
pub fn print(args: &[String]) -> CliResult {
    let args = Args::parse(args, &[], &[])?;
    let path = args.one_file()?;
    let traces = load(path)?;
    let mut out = String::new();
    for (i, t) in traces.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let name = if t.info.name.is_empty() {
            format!("trace #{}", i + 1)
        } else {
            t.info.name.clone()
        };
        let _ = writeln!(out, "# {}", name.replace('\n', " "));
        out.push_str(&print_trace(t));
    }
    emit(&out)
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
