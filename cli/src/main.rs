//! `tracejit`: parse, print, run, optimize, compile and check traces from the command line.
//!
//! Each subcommand lives in its own module, with its arguments (a `clap::Args` struct) and its
//! work; `main` only parses the command line and dispatches. Adding a subcommand is one
//! variant of [`Command`] and one arm of its `match`.

mod bridge_facts;
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
mod recorded;
mod view;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use common::CliError;
use std::process::ExitCode;

/// Parse, print, interpret, optimize, compile and check JIT traces (text format or PyPy logs).
#[derive(Parser)]
#[command(
    name = "tracejit",
    version,
    arg_required_else_help = true,
    after_help = "Exit status: 0 success; 1 a failure (unreadable or bad input, no traces, an invalid \
                  optimization, a differing run, a failing fuzz case, a missing rule); 2 a usage error.\n\
                  With --json, output is JSON Lines: one object per line, each with a \"type\" field \
                  (docs/cli.md)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and verify every trace; one line per trace
    Parse(cmd_text::ParseArgs),
    /// Print every trace in normalized text form (itself a valid input file)
    Print(cmd_text::PrintArgs),
    /// Run every trace in the reference interpreter
    Interp(cmd_interp::InterpArgs),
    /// Optimize every trace; statistics and PyPy's op counts alongside
    Opt(cmd_opt::OptArgs),
    /// Compile every trace to x86-64, run it natively and compare with the interpreter
    Run(cmd_run::RunArgs),
    /// Find missed optimizations in the optimized traces with Z3; patterns by count
    Mine(cmd_mine::MineArgs),
    /// Validate the optimizer's output, or a given pair of traces, with Z3
    ///
    /// `check FILE` optimizes every trace of FILE and validates the result against the trace;
    /// `check ORIGINAL --optimized OTHER` validates the k-th trace of OTHER against the k-th
    /// trace of ORIGINAL (guards matched by their `descr=<GuardN>` ids).
    Check(cmd_check::CheckArgs),
    /// Optimize PyPy's unoptimized traces, validate them and compare op counts with PyPy's
    EvalPypy(cmd_eval_pypy::EvalPypyArgs),
    /// Fuzz checks on random traces; failures minimized and saved
    Fuzz(cmd_fuzz::FuzzArgs),
    /// Synthesize simple rules with Z3; each marked covered or MISSING in the optimizer
    SynthRules(cmd_synth::SynthArgs),
    /// Write the trace viewer: one self-contained HTML page with each trace's recorded ops
    /// beside the optimized ones, what removed or rewrote each op and the code of each op
    View(cmd_view::ViewArgs),
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let name = matches.subcommand_name().unwrap_or_default();
    let result = match cli.command {
        Command::Parse(a) => cmd_text::parse(a),
        Command::Print(a) => cmd_text::print(a),
        Command::Interp(a) => cmd_interp::interp(a),
        Command::Opt(a) => cmd_opt::opt(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Mine(a) => cmd_mine::mine(a),
        Command::Check(a) => cmd_check::check(a),
        Command::EvalPypy(a) => cmd_eval_pypy::eval_pypy(a),
        Command::Fuzz(a) => cmd_fuzz::fuzz(a),
        Command::SynthRules(a) => cmd_synth::synth_rules(a),
        Command::View(a) => cmd_view::view(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(msg)) => {
            // Printed like the argument parser's own usage errors, with the command's usage.
            let mut cmd = Cli::command();
            cmd.build();
            let kind = clap::error::ErrorKind::ValueValidation;
            let err = match cmd.find_subcommand_mut(name) {
                Some(sub) => sub.error(kind, msg),
                None => cmd.error(kind, msg),
            };
            let _ = err.print();
            ExitCode::from(2)
        }
        Err(CliError::Failed(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}
