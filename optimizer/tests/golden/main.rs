//! Golden tests of the optimizer: input trace text in, expected trace text out (compared
//! structurally with `trace_ir::traces_equivalent`; on a mismatch the test prints both).
//! One or more tests per capability, a module per part of the optimizer; the walk-throughs of
//! the knownbits domain and of PyPy's integer-bounds miscompilations are here.
//!
//! `BLESS=1 cargo test -p optimizer --test golden` rewrites every expectation that no longer
//! matches with the optimizer's current output, in the file of its test (STYLE.md #10); review the change
//! with `git diff`. Only expectations written as string literals directly in the `check(...)` /
//! `check_with(...)` call can be rewritten; another mismatch still fails.

mod bless;
#[path = "../common/mod.rs"]
mod common;

mod exits;
mod folding;
mod frames;
mod guards;
mod heap;
mod loops;
mod overflow;
mod strings;
mod virtuals;

use common::{parse, peel, same_behaviour};
use optimizer::{optimize, Optimized, Options, Reason};
use trace_interp::RtValue;

/// Optimize `input` with the default options and compare with `expected` (see [`check_with`]).
#[track_caller]
fn check(input: &str, expected: &str) -> Optimized {
    check_with(input, expected, &Options::default())
}

/// Optimize `input` with `opts` and compare with `expected`; with `BLESS=1`, a mismatching
/// expectation is rewritten in the file of the call instead (the test then goes on with the
/// output).
#[track_caller]
fn check_with(input: &str, expected: &str, opts: &Options) -> Optimized {
    if !bless::enabled() {
        return common::check_with(input, expected, opts);
    }
    let out = optimize(&parse(input), opts).unwrap_or_else(|e| panic!("optimize failed: {e}"));
    let matches = trace_ir::parse_trace(expected)
        .map(|want| trace_ir::traces_equivalent(&out.trace, &want).is_ok())
        .unwrap_or(false);
    if !matches {
        bless::rewrite_expectation(std::panic::Location::caller(), &trace_ir::print_trace(&out.trace));
    }
    out
}
