//! Helpers of the translation-validation tests: parse a pair of traces, validate the second
//! as the optimized form of the first, and say which verdict a case must get.
#![allow(dead_code)]

use optimizer::{optimize, Options};
use trace_ir::{parse_trace, print_trace, Trace};
use verify::validate::{validate, Config, Verdict};

pub fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

pub fn verdict(original: &str, optimized: &str) -> Verdict {
    validate(&parse(original), &parse(optimized), &Config::default())
}

#[track_caller]
pub fn assert_valid(original: &str, optimized: &str) {
    let v = verdict(original, optimized);
    assert!(
        v.is_valid(),
        "expected valid, got {v}\noriginal:\n{original}\noptimized:\n{optimized}"
    );
}

#[track_caller]
pub fn assert_invalid(original: &str, optimized: &str) {
    let v = verdict(original, optimized);
    assert!(
        v.is_invalid(),
        "expected invalid, got {v}\noriginal:\n{original}\noptimized:\n{optimized}"
    );
}

/// The optimizer's output (default options) on `original` is not `Invalid`.
#[track_caller]
pub fn assert_optimizer_output_not_invalid(original: &str) {
    let t = parse(original);
    let out = optimize(&t, &Options::default()).unwrap_or_else(|e| panic!("optimizer: {e}\n{original}"));
    let v = validate(&t, &out.trace, &Config::default());
    assert!(
        !v.is_invalid(),
        "{v}\noriginal:\n{original}\noptimized:\n{}",
        print_trace(&out.trace)
    );
}
