//! `tracejit view FILE -o REPORT.html [--no-asm] [--runs N [--seed S]]`: write the trace
//! viewer's self-contained HTML page for every trace of a file (our text format or a PyPy
//! log); see [`crate::view`].

use crate::common::{CliError, CliResult};
use crate::view::{render, ViewOptions};

/// The command line of `view`.
#[derive(Debug, PartialEq, Eq)]
struct ViewArgs {
    file: String,
    out: String,
    opts: ViewOptions,
}

/// `FILE -o OUT` (or `--output OUT`), `--no-asm`, `--runs N`, `--seed S`, in any order.
fn parse_args(args: &[String]) -> Result<ViewArgs, CliError> {
    let (mut file, mut out, mut opts) = (None, None, ViewOptions::default());
    let number = |flag: &str, v: Option<&String>| -> Result<u64, CliError> {
        let v = v.ok_or_else(|| CliError::Usage(format!("{flag} needs a number")))?;
        v.parse()
            .map_err(|_| CliError::Usage(format!("{flag} needs a number, got `{v}`")))
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => {
                let v = it
                    .next()
                    .ok_or_else(|| CliError::Usage(format!("{a} needs a file name")))?;
                out = Some(v.clone());
            }
            "--no-asm" => opts.asm = false,
            "--runs" => opts.runs = number(a, it.next())? as usize,
            "--seed" => opts.seed = number(a, it.next())?,
            s if s.starts_with('-') && s != "-" => return Err(CliError::Usage(format!("unknown option {s}"))),
            s if file.is_none() => file = Some(s.to_string()),
            _ => return Err(CliError::Usage("expected exactly one FILE".into())),
        }
    }
    Ok(ViewArgs {
        file: file.ok_or_else(|| CliError::Usage("missing FILE".into()))?,
        out: out.ok_or_else(|| CliError::Usage("missing -o REPORT.html".into()))?,
        opts,
    })
}

/// `tracejit view FILE -o REPORT.html [--no-asm] [--runs N [--seed S]]`.
pub fn view(args: &[String]) -> CliResult {
    let a = parse_args(args)?;
    let traces = crate::common::load_traces(&a.file)?;
    let title = a.file.rsplit('/').next().unwrap_or(&a.file);
    let html = render(title, &traces, &a.opts);
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
    fn file_and_options_in_any_order() {
        let want = ViewArgs {
            file: "a.trace".into(),
            out: "r.html".into(),
            opts: ViewOptions::default(),
        };
        assert_eq!(parse_args(&args(&["a.trace", "-o", "r.html"])).unwrap(), want);
        assert_eq!(parse_args(&args(&["--output", "r.html", "a.trace"])).unwrap(), want);
        let o = parse_args(&args(&[
            "--runs", "5", "a.trace", "-o", "r.html", "--no-asm", "--seed", "9",
        ]))
        .unwrap()
        .opts;
        assert_eq!((o.asm, o.runs, o.seed), (false, 5, 9));
    }

    #[test]
    fn missing_or_extra_arguments_are_usage_errors() {
        for bad in [
            &["a.trace"][..],
            &["-o", "r.html"],
            &["a", "b", "-o", "r"],
            &["a", "-o"],
            &["a", "--x"],
            &["a", "-o", "r", "--runs", "many"],
            &["a", "-o", "r", "--seed"],
        ] {
            assert!(matches!(parse_args(&args(bad)), Err(CliError::Usage(_))), "{bad:?}");
        }
    }
}
