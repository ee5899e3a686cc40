//! `tracejit view FILE -o REPORT.html [--no-asm]`: write the trace viewer's self-contained
//! HTML page for every trace of a file (our text format or a PyPy log); see [`crate::view`].

use crate::common::{CliError, CliResult};
use crate::view::{render, ViewOptions};

/// The command line of `view`.
#[derive(Debug, PartialEq, Eq)]
struct ViewArgs {
    file: String,
    out: String,
    asm: bool,
}

/// `FILE -o OUT` (or `--output OUT`) and `--no-asm`, in any order.
fn parse_args(args: &[String]) -> Result<ViewArgs, CliError> {
    let (mut file, mut out, mut asm) = (None, None, true);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => {
                let v = it
                    .next()
                    .ok_or_else(|| CliError::Usage(format!("{a} needs a file name")))?;
                out = Some(v.clone());
            }
            "--no-asm" => asm = false,
            s if s.starts_with('-') && s != "-" => return Err(CliError::Usage(format!("unknown option {s}"))),
            s if file.is_none() => file = Some(s.to_string()),
            _ => return Err(CliError::Usage("expected exactly one FILE".into())),
        }
    }
    Ok(ViewArgs {
        file: file.ok_or_else(|| CliError::Usage("missing FILE".into()))?,
        out: out.ok_or_else(|| CliError::Usage("missing -o REPORT.html".into()))?,
        asm,
    })
}

/// `tracejit view FILE -o REPORT.html [--no-asm]`.
pub fn view(args: &[String]) -> CliResult {
    let a = parse_args(args)?;
    let traces = crate::common::load_traces(&a.file)?;
    let title = a.file.rsplit('/').next().unwrap_or(&a.file);
    let html = render(title, &traces, &ViewOptions { asm: a.asm });
    std::fs::write(&a.out, html).map_err(|e| CliError::Failed(format!("{}: {e}", a.out)))?;
    println!("{}: {} trace(s) -> {}", a.file, traces.len(), a.out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn file_and_output_in_any_order() {
        let want = ViewArgs {
            file: "a.trace".into(),
            out: "r.html".into(),
            asm: true,
        };
        assert_eq!(parse_args(&args(&["a.trace", "-o", "r.html"])).unwrap(), want);
        assert_eq!(parse_args(&args(&["--output", "r.html", "a.trace"])).unwrap(), want);
        assert!(!parse_args(&args(&["a.trace", "-o", "r.html", "--no-asm"])).unwrap().asm);
    }

    #[test]
    fn missing_or_extra_arguments_are_usage_errors() {
        for bad in [
            &["a.trace"][..],
            &["-o", "r.html"],
            &["a", "b", "-o", "r"],
            &["a", "-o"],
            &["a", "--x"],
        ] {
            assert!(matches!(parse_args(&args(bad)), Err(CliError::Usage(_))), "{bad:?}");
        }
    }
}
