//! `tracejit`: parse, print, run, optimize, compile and check traces from the command line.
//!
//! Each subcommand lives in its own module; `main` only dispatches.

mod cmd_check;
mod cmd_eval_pypy;
mod cmd_fuzz;
mod cmd_interp;
mod cmd_mine;
mod cmd_opt;
mod cmd_run;
mod cmd_run_tree;
mod cmd_synth;
mod cmd_text;
mod cmd_view;
mod common;
mod opcount;
mod view;

use std::process::ExitCode;

const USAGE: &str = "\
usage: tracejit <command> [options] FILE...

commands:
  parse FILE [--json]             parse and verify every trace; one line per trace
  print FILE                      print every trace in normalized text form
  interp FILE [--inputs 1,2,3 | --random N --seed S] [--guided] [--max-iterations N] [--json]
                                  run every trace in the reference interpreter (--guided:
                                  choose inputs and memory so guards hold, to run further)
  opt FILE [--stats] [--json] [--peel] [--no-<part>...]
                                  optimize every trace (parts: fold intbounds rules cse
                                  guards ovf virtuals heapcache dce; --peel: peel each
                                  loop's first iteration first); PyPy's counts alongside
  run FILE [--inputs 1,2.5,0 | --random N --seed S] [--opt] [--hooks] [--tree]
                                  compile every trace to x86-64, run it natively and
                                  print its exit next to the interpreter's; traces that
                                  name foreign memory or functions (and all with --hooks)
                                  run with memory and calls through the interpreter's model;
                                  --tree: FILE is a loop and its bridges, run as one tree
  mine FILE... [--json] [--limit N] [--seconds S] [--findings] [--no-opt]
                                  find missed optimizations in the optimized traces with
                                  Z3; patterns by count
  check FILE [--json] [--timeout MS] [--jobs N] [--stats] [--peel]
                                  optimize every trace and validate the result with Z3
                                  (--timeout: per query, default 2000; --jobs: traces in
                                  parallel, default all cores; --stats: time and queries;
                                  --peel: optimize with loop peeling)
  check ORIGINAL --optimized OTHER [--json] [--timeout MS] [--jobs N] [--stats]
                                  validate a given pair of traces (guards by descr=<GuardN>)
  eval-pypy FILE... [--json] [--timeout MS] [--runs N] [--peel]
                                  optimize PyPy's noopt traces, validate (interpreter and
                                  Z3) and compare op counts with PyPy's optimized traces
  fuzz --count N --seed S [--z3] [--native] [--trees] [--out DIR]
                                  fuzz checks on random traces (--trees: and on random
                                  trace trees, a loop with bridges); failures minimized
                                  and saved under DIR (default fuzz-failures/)
  synth-rules [--json] [--op NAME]
                                  synthesize simple rules with Z3; mark each
                                  covered or MISSING in the optimizer
  view FILE -o REPORT.html [--no-asm] [--runs N [--seed S]]
                                  write a self-contained HTML page: each trace's
                                  recorded ops beside the optimized ones, what removed
                                  or rewrote each op, the code of each op, PyPy's
                                  counts beside ours by category (--runs: the exits of
                                  N interpreter runs on guided random inputs)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let result = match cmd.as_str() {
        "parse" => cmd_text::parse(rest),
        "print" => cmd_text::print(rest),
        "interp" => cmd_interp::interp(rest),
        "opt" => cmd_opt::opt(rest),
        "run" => cmd_run::run(rest),
        "mine" => cmd_mine::mine(rest),
        "check" => cmd_check::check(rest),
        "eval-pypy" => cmd_eval_pypy::eval_pypy(rest),
        "fuzz" => cmd_fuzz::fuzz(rest),
        "synth-rules" => cmd_synth::synth_rules(rest),
        "view" => cmd_view::view(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(common::CliError::Usage(format!("unknown command `{other}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(common::CliError::Usage(msg)) => {
            eprintln!("tracejit: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(common::CliError::Failed(msg)) => {
            eprintln!("tracejit: {msg}");
            ExitCode::from(1)
        }
    }
}
