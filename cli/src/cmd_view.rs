//! `tracejit view FILE -o REPORT.html [--no-asm] [--runs N [--seed S]]`: write the trace
//! viewer's self-contained HTML page for every trace of a file (our text format or a PyPy
//! log); see [`crate::view`].

use crate::common::{load_some_traces, CliError, CliResult};
use crate::view::{render, ViewOptions};

/// Arguments of `tracejit view`.
#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// A trace file (text format) or a PyPy log
    #[arg(value_name = "FILE")]
    file: String,
    /// Where to write the HTML page
    #[arg(short, long, value_name = "REPORT.html")]
    output: String,
    /// Leave out the x86-64 code of each op
    #[arg(long)]
    no_asm: bool,
    /// Run each trace and its optimized version N times in the reference interpreter
    /// (guided random inputs) and show how often each guard failed
    #[arg(long, value_name = "N", default_value_t = 0)]
    runs: usize,
    /// Seed of the runs' inputs
    #[arg(long, value_name = "S", default_value_t = ViewOptions::default().seed, requires = "runs")]
    seed: u64,
}

impl ViewArgs {
    fn options(&self) -> ViewOptions {
        ViewOptions {
            asm: !self.no_asm,
            runs: self.runs,
            seed: self.seed,
        }
    }
}

/// `tracejit view FILE -o REPORT.html [--no-asm] [--runs N [--seed S]]`.
pub fn view(a: ViewArgs) -> CliResult {
    let traces = load_some_traces(&a.file)?;
    let title = a.file.rsplit('/').next().unwrap_or(&a.file);
    let html = render(title, &traces, &a.options());
    std::fs::write(&a.output, html).map_err(|e| CliError::Failed(format!("{}: {e}", a.output)))?;
    println!("{}: {} trace(s) -> {}", a.file, traces.len(), a.output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `view`'s arguments alone, as clap parses them.
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        view: ViewArgs,
    }

    fn parse(args: &[&str]) -> Result<ViewArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("view").chain(args.iter().copied())).map(|c| c.view)
    }

    #[test]
    fn file_and_options_in_any_order() {
        let a = parse(&["a.trace", "-o", "r.html"]).unwrap();
        assert_eq!((a.file.as_str(), a.output.as_str()), ("a.trace", "r.html"));
        assert_eq!(a.options(), ViewOptions::default());
        let b = parse(&["--output", "r.html", "a.trace"]).unwrap();
        assert_eq!((b.file.as_str(), b.output.as_str()), ("a.trace", "r.html"));
        let o = parse(&["--runs", "5", "a.trace", "-o", "r.html", "--no-asm", "--seed", "9"])
            .unwrap()
            .options();
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
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
