//! Golden tests of the optimizer: input trace text in, expected trace text out (compared
//! structurally with `trace_ir::traces_equivalent`; on a mismatch the test prints both).
//! One or more tests per capability; the walk-throughs of the knownbits domain and of PyPy's integer-bounds miscompilations are here.
//!
//! `BLESS=1 cargo test -p optimizer --test golden` rewrites every expectation that no longer
//! matches with the optimizer's current output, in this file (STYLE.md #10); review the change
//! with `git diff`. Only expectations written as string literals directly in the `check(...)` /
//! `check_with(...)` call can be rewritten; another mismatch still fails.

mod common;
use common::{parse, peel, same_behaviour};
use optimizer::{optimize, Optimized, Options, Reason};
use trace_interp::RtValue;

/// Optimize `input` with the default options and compare with `expected` (see [`check_with`]).
#[track_caller]
fn check(input: &str, expected: &str) -> Optimized {
    check_with(input, expected, &Options::default())
}

/// Optimize `input` with `opts` and compare with `expected`; with `BLESS=1`, a mismatching
/// expectation is rewritten in this file instead (the test then goes on with the output).
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

/// Rewriting expectations in this file (`BLESS=1`).
mod bless {
    use std::panic::Location;
    use std::sync::Mutex;

    /// Whether `BLESS=1` (or any value but `0` and empty) is set.
    pub fn enabled() -> bool {
        std::env::var("BLESS")
            .map(|v| !v.is_empty() && v != "0")
            .unwrap_or(false)
    }

    /// Line-count changes made so far by this process: (original line of the call, lines added).
    /// Tests run in parallel; the lock serializes the read-modify-write of the file, and the
    /// deltas map the compiled-in line numbers to the lines of the file as rewritten.
    static SHIFTS: Mutex<Vec<(usize, isize)>> = Mutex::new(Vec::new());

    /// Replace the second argument (a string literal) of the `check`/`check_with` call at
    /// `loc` by `text` (one line per trace line, aligned one column after the opening quote,
    /// as the hand-written expectations are).
    pub fn rewrite_expectation(loc: &Location<'_>, text: &str) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden.rs");
        assert!(
            loc.file().ends_with("golden.rs"),
            "BLESS: the call at {loc} is not in golden.rs"
        );
        let mut shifts = SHIFTS.lock().unwrap_or_else(|e| e.into_inner());
        let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("BLESS: cannot read {path}: {e}"));
        let shift: isize = shifts
            .iter()
            .filter(|(l, _)| *l < loc.line() as usize)
            .map(|(_, d)| d)
            .sum();
        let line = (loc.line() as isize + shift) as usize;
        let call = line_start(&src, line).map(|p| p + loc.column() as usize - 1);
        let Some((start, end)) = call.and_then(|c| second_argument_literal(&src, c)) else {
            panic!("BLESS: the expectation of the call at {loc} is not a string literal; update it by hand to:\n{text}")
        };
        let quote_col = start - src[..start].rfind('\n').map(|p| p + 1).unwrap_or(0);
        let indent = " ".repeat(quote_col + 1);
        let body: Vec<String> = text
            .trim_end()
            .lines()
            .map(|l| l.trim().replace('\\', "\\\\").replace('"', "\\\""))
            .collect();
        let literal = format!("\"{}\"", body.join(&format!("\n{indent}")));
        let old_lines = src[start..end].matches('\n').count() as isize;
        let new_lines = literal.matches('\n').count() as isize;
        let out = format!("{}{}{}", &src[..start], literal, &src[end..]);
        std::fs::write(path, out).unwrap_or_else(|e| panic!("BLESS: cannot write {path}: {e}"));
        shifts.push((loc.line() as usize, new_lines - old_lines));
        eprintln!("BLESS: rewrote the expectation of the call at {loc}");
    }

    /// Byte offset of the start of 1-based `line`.
    fn line_start(src: &str, line: usize) -> Option<usize> {
        if line == 1 {
            return Some(0);
        }
        src.match_indices('\n').nth(line - 2).map(|(p, _)| p + 1)
    }

    /// The byte span (quotes included) of the second argument of the call starting at `call`,
    /// if that argument is a plain string literal.
    fn second_argument_literal(src: &str, call: usize) -> Option<(usize, usize)> {
        let b = src.as_bytes();
        let mut i = call + src[call..].find('(')? + 1;
        let (mut depth, mut arg) = (0usize, 0usize);
        while i < b.len() {
            match b[i] {
                b'"' => {
                    let end = string_end(b, i)?;
                    if arg == 1 && depth == 0 {
                        // the literal must be the whole argument
                        let rest = src[end..].trim_start();
                        return (rest.starts_with(',') || rest.starts_with(')')).then_some((i, end));
                    }
                    i = end;
                    continue;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth == 0 => return None,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth == 0 => arg += 1,
                c if arg == 1 && depth == 0 && !c.is_ascii_whitespace() => return None,
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// The offset just past the closing quote of the string literal opening at `start`.
    fn string_end(b: &[u8], start: usize) -> Option<usize> {
        let mut i = start + 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }
}

// ---------------------------------------------------------------- folding

#[test]
fn constfold_two_ops() {
    check(
        "[i0]
         i1 = int_add(5, 4)
         i2 = int_add(i1, 10)
         i3 = int_add(i2, i0)
         finish(i3)",
        "[i0]
         i3 = int_add(19, i0)
         finish(i3)",
    );
}

#[test]
fn invalid_evaluation_is_kept() {
    // a shift by 70 is invalid: the folder leaves it alone
    check(
        "[i0]
         i1 = int_lshift(1, 70)
         finish(i1)",
        "[i0]
         i1 = int_lshift(1, 70)
         finish(i1)",
    );
}

#[test]
fn float_folding() {
    check(
        "[f0]
         f1 = float_add(1.5, 2.25)
         f2 = float_mul(f1, f0)
         finish(f2)",
        "[f0]
         f2 = float_mul(3.75, f0)
         finish(f2)",
    );
}

// ---------------------------------------------------------------- abstract values

#[test]
fn constfold_via_knownbits() {
    check(
        "[i0]
         i1 = int_or(i0, 1)
         i2 = int_and(i1, 1)
         finish(i2, i1)",
        "[i0]
         i1 = int_or(i0, 1)
         finish(1, i1)",
    );
}

#[test]
fn constfold_alignment_check() {
    check(
        "[i0]
         i1 = int_invert(7)
         i2 = int_and(i0, i1)
         i3 = int_add(i2, 16)
         i4 = int_and(i3, 7)
         i5 = int_eq(i4, 0)
         guard_true(i5, descr=<Guard1>) [i0]
         finish(i3)",
        "[i0]
         i2 = int_and(i0, -8)
         i3 = int_add(i2, 16)
         finish(i3)",
    );
}

#[test]
fn remove_redundant_and() {
    check(
        "[i0]
         i1 = int_invert(15)
         i2 = int_and(i0, i1)
         i3 = int_and(i2, i1)
         finish(i3)",
        "[i0]
         i2 = int_and(i0, -16)
         finish(i2)",
    );
}

#[test]
fn remove_redundant_and_more_complex() {
    let out = check(
        "[i0, i1]
         i2 = int_and(i0, 15)
         i3 = int_or(i1, 15)
         i4 = int_and(i2, i3)
         finish(i4, i3)",
        "[i0, i1]
         i2 = int_and(i0, 15)
         i3 = int_or(i1, 15)
         finish(i2, i3)",
    );
    assert_eq!(out.stats.removed(Reason::Identity), 1);
}

#[test]
fn remove_and_simple() {
    check(
        "[i0, i1]
         i2 = int_and(0, i0)
         i3 = int_invert(i2)
         i4 = int_and(i1, i3)
         finish(i4)",
        "[i0, i1]
         finish(i1)",
    );
}

#[test]
fn remove_redundant_or() {
    // i3 has the low 8 bits set; or-ing a value of at most 4 bits changes nothing
    check(
        "[i0, i1]
         i2 = int_and(i1, 15)
         i3 = int_or(i0, 255)
         i4 = int_or(i3, i2)
         finish(i4)",
        "[i0, i1]
         i3 = int_or(i0, 255)
         finish(i3)",
    );
}

#[test]
fn comparison_known_from_ranges() {
    check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_lt(i1, 256)
         i3 = uint_rshift(i0, 60)
         i4 = int_le(i3, 15)
         i5 = int_add(i2, i4)
         finish(i5)",
        "[i0]
         finish(2)",
    );
}

// ---------------------------------------------------------------- rule hook

#[test]
fn rules_fire_through_the_hook() {
    let out = check(
        "[i0, i1]
         i2 = int_sub(i0, i0)
         i3 = int_add(i1, i2)
         i4 = int_mul(i3, 8)
         finish(i4)",
        "[i0, i1]
         i4 = int_lshift(i1, 3)
         finish(i4)",
    );
    assert!(out.stats.rules.values().sum::<usize>() >= 2, "{:?}", out.stats.rules);
}

#[test]
fn rules_can_be_switched_off() {
    let o = Options {
        rules: false,
        ..Options::default()
    };
    check_with(
        "[i0]
         i4 = int_mul(i0, 8)
         finish(i4)",
        "[i0]
         i4 = int_mul(i0, 8)
         finish(i4)",
        &o,
    );
}

// ---------------------------------------------------------------- CSE

#[test]
fn cse_commutative() {
    let out = check(
        "[i0, i1]
         i2 = int_add(i0, i1)
         i3 = int_add(i1, i0)
         i4 = int_xor(i2, i3)
         i5 = int_mul(i2, i3)
         finish(i5, i4)",
        "[i0, i1]
         i2 = int_add(i0, i1)
         i5 = int_mul(i2, i2)
         finish(i5, 0)",
    );
    assert_eq!(out.stats.removed(Reason::Cse), 1);
}

#[test]
fn cse_elidable_call_and_loopinvariant_call() {
    check(
        "[i0]
         i1 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i2 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i3 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i4 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i5 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         i6 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         finish(i1, i2, i3, i4, i5, i6)",
        "[i0]
         i1 = call_pure_i(ConstClass(f), i0, descr=<Calli 8 i EF=0>)
         i3 = call_loopinvariant_i(ConstClass(g), descr=<Calli 8 EF=1>)
         i5 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         i6 = call_i(ConstClass(h), i0, descr=<Calli 8 i EF=2>)
         finish(i1, i1, i3, i3, i5, i6)",
    );
}

#[test]
fn cse_immutable_reads() {
    check(
        "[p0, i1]
         i2 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i4 = arraylen_gc(p0, descr=<ArrayS 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         i5 = arraylen_gc(p0, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         finish(i2, i3, i4, i5, i6)",
        "[p0, i1]
         i2 = getarrayitem_gc_pure_i(p0, i1, descr=<ArrayS 8>)
         i4 = arraylen_gc(p0, descr=<ArrayS 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish(i2, i2, i4, i4, i2)",
    );
}

// ---------------------------------------------------------------- guards

#[test]
fn guard_implied_by_stronger_guard() {
    check(
        "[i0]
         i1 = int_lt(i0, 10)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_lt(i0, 20)
         guard_true(i2, descr=<Guard2>) [i0]
         i3 = int_ge(i0, 10)
         guard_false(i3, descr=<Guard3>) [i0]
         finish(i0)",
        "[i0]
         i1 = int_lt(i0, 10)
         guard_true(i1, descr=<Guard1>) [i0]
         finish(i0)",
    );
}

#[test]
fn guard_narrows_both_operands() {
    check(
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_lt(i1, -9223372036854775807)
         guard_false(i3, descr=<Guard2>) [i0]
         i4 = int_eq(i0, 9223372036854775807)
         finish(i4)",
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0]
         finish(0)",
    );
}

#[test]
fn guard_value_makes_a_constant() {
    check(
        "[i0, p1]
         guard_value(i0, 5, descr=<Guard1>) [i0]
         i2 = int_add(i0, 1)
         guard_value(p1, ConstPtr(ptr7), descr=<Guard2>) [i0]
         i3 = getfield_gc_i(p1, descr=<FieldS x 8>)
         guard_value(i0, 5, descr=<Guard3>) [i0]
         finish(i2, i3)",
        "[i0, p1]
         guard_value(i0, 5, descr=<Guard1>) [i0]
         guard_value(p1, ConstPtr(ptr7), descr=<Guard2>) [5]
         i3 = getfield_gc_i(ConstPtr(ptr7), descr=<FieldS x 8>)
         finish(6, i3)",
    );
}

#[test]
fn guard_class_and_nonnull_remembered() {
    check(
        "[p0, p1]
         guard_nonnull_class(p0, 1234, descr=<Guard1>) [p0]
         guard_nonnull(p0, descr=<Guard2>) [p0]
         guard_class(p0, 1234, descr=<Guard3>) [p0]
         guard_class(p1, 77, descr=<Guard4>) [p0]
         guard_class(p1, 77, descr=<Guard5>) [p0]
         guard_nonnull(p1, descr=<Guard6>) [p0]
         guard_isnull(ConstPtr(null), descr=<Guard7>) [p0]
         finish()",
        "[p0, p1]
         guard_nonnull_class(p0, 1234, descr=<Guard1>) [p0]
         guard_class(p1, 77, descr=<Guard4>) [p0]
         finish()",
    );
}

#[test]
fn guard_known_false_is_kept() {
    // the guard always fails: it must stay (it is the exit)
    check(
        "[i0]
         i1 = int_and(i0, 7)
         i2 = int_gt(i1, 100)
         guard_true(i2, descr=<Guard1>) [i0]
         finish(i0)",
        "[i0]
         guard_true(0, descr=<Guard1>) [i0]
         finish(i0)",
    );
}

#[test]
fn guard_is_true_chain() {
    check(
        "[i0]
         i1 = int_is_true(i0)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_is_zero(i0)
         guard_false(i2, descr=<Guard2>) [i0]
         i3 = int_ne(i0, 0)
         finish(i3)",
        "[i0]
         guard_true(i0, descr=<Guard1>) [i0]
         finish(1)",
    );
}

/// A guard on `int_is_zero(x)` or `int_is_true(x)` tests `x` itself (the sense flipped for
/// `int_is_zero`); the test op stays only where something else reads it (here a fail
/// argument, whose value at each exit is known).
#[test]
fn guard_on_a_truth_test_tests_the_operand() {
    check(
        "[i0, i1, i2]
         i3 = int_is_zero(i0)
         guard_true(i3, descr=<Guard1>) [i1]
         i4 = int_is_true(i1)
         guard_false(i4, descr=<Guard2>) [i2]
         i5 = int_is_zero(i2)
         guard_false(i5, descr=<Guard3>) [i5]
         finish(i3, i4)",
        "[i0, i1, i2]
         guard_false(i0, descr=<Guard1>) [i1]
         guard_false(i1, descr=<Guard2>) [i2]
         guard_true(i2, descr=<Guard3>) [1]
         finish(1, 0)",
    );
}

#[test]
fn guard_no_exception_and_not_invalidated_repeats() {
    check(
        "[i0]
         i1 = call_i(ConstClass(f), i0, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard1>) [i0]
         guard_no_exception(descr=<Guard2>) [i0]
         guard_not_invalidated(descr=<Guard3>) [i0]
         guard_not_invalidated(descr=<Guard4>) [i0]
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard5>) [i0]
         guard_not_invalidated(descr=<Guard6>) [i0]
         finish(i2)",
        "[i0]
         i1 = call_i(ConstClass(f), i0, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard1>) [i0]
         guard_not_invalidated(descr=<Guard3>) [i0]
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=5>)
         guard_no_exception(descr=<Guard5>) [i0]
         guard_not_invalidated(descr=<Guard6>) [i0]
         finish(i2)",
    );
}

// ---------------------------------------------------------------- overflow

#[test]
fn ovf_removed_when_bounds_exclude_overflow() {
    let out = check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_mul_ovf(i2, 1000)
         guard_no_overflow(descr=<Guard2>) [i0]
         finish(i3)",
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add(i1, 1)
         i3 = int_mul(i2, 1000)
         finish(i3)",
    );
    assert_eq!(out.stats.removed(Reason::Overflow), 2);
}

#[test]
fn ovf_kept_when_it_may_overflow() {
    check(
        "[i0]
         i2 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i2)",
        "[i0]
         i2 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i2)",
    );
}

#[test]
fn guard_overflow_after_safe_op_is_kept() {
    // the op cannot overflow, so guard_overflow always fails: it must stay
    check(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_overflow(descr=<Guard1>) [i0]
         finish(i2)",
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_overflow(descr=<Guard1>) [i0]
         finish(i2)",
    );
}

#[test]
fn ovf_constant_folding() {
    check(
        "[i0]
         i1 = int_add_ovf(9223372036854775807, 1)
         guard_overflow(descr=<Guard1>) [i0]
         i2 = int_mul_ovf(3, 4)
         guard_no_overflow(descr=<Guard2>) [i0]
         i3 = int_sub_ovf(-9223372036854775808, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(i1, i2, i3)",
        "[i0]
         i3 = int_sub_ovf(-9223372036854775808, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(-9223372036854775808, 12, i3)",
    );
}

#[test]
fn knowledge_from_passed_guard_no_overflow() {
    check(
        "[i0]
         i1 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i2 = int_eq(i1, -9223372036854775808)
         guard_false(i2, descr=<Guard2>) [i0]
         i3 = int_lt(i0, 9223372036854775807)
         guard_true(i3, descr=<Guard3>) [i0]
         i4 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard4>) [i0]
         finish(i4)",
        "[i0]
         i1 = int_add_ovf(i0, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i1)",
    );
}

// ---------------------------------------------------------------- PyPy's known integer-bounds miscompilations

/// Optimizing must keep `guards` guards, and the trace must behave like the original on the
/// counterexample inputs of the seed.
fn must_keep(src: &str, guards: usize, counterexamples: &[Vec<RtValue>]) {
    let t = parse(src);
    let out = optimize(&t, &Options::default()).unwrap();
    let kept = out.trace.ops.iter().filter(|o| o.opcode.is_guard()).count();
    assert_eq!(kept, guards, "guards removed:\n{}", trace_ir::print_trace(&out.trace));
    for inp in counterexamples {
        assert!(
            same_behaviour(&t, &out.trace, inp).unwrap(),
            "original invalid on {inp:?}"
        );
    }
}

#[test]
fn miscompilation_1_wrapping_add_backwards() {
    // int_add(x, 10) < 15 does not imply x < 6 (x = MAXINT - 4 wraps)
    must_keep(
        "[i0]
         i1 = int_add(i0, 10)
         i2 = int_lt(i1, 15)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_lt(i0, 6)
         guard_true(i3, descr=<Guard2>) [i0]
         finish(i0)",
        2,
        &[
            vec![RtValue::Int(i64::MAX - 4)],
            vec![RtValue::Int(9223372036854775800)],
        ],
    );
}

#[test]
fn miscompilation_2_negation_of_minint() {
    // int_sub(0, x) < 0 does not imply x > 0 (x = MININT)
    for op in ["i1 = int_sub(0, i0)", "i1 = int_neg(i0)"] {
        must_keep(
            &format!(
                "[i0]
                 {op}
                 i2 = int_lt(i1, 0)
                 guard_true(i2, descr=<Guard1>) [i0]
                 i3 = int_gt(i0, 0)
                 guard_true(i3, descr=<Guard2>) [i0]
                 finish(i0)"
            ),
            2,
            &[vec![RtValue::Int(i64::MIN)]],
        );
    }
}

#[test]
fn miscompilation_3_wrapping_mul_equality() {
    // 12 == int_mul(x, 12) does not imply x == 1 (x = 0x8000000000000001)
    must_keep(
        "[i0]
         i1 = int_mul(i0, 12)
         i2 = int_eq(i1, 12)
         guard_true(i2, descr=<Guard1>) [i0]
         i3 = int_eq(i0, 1)
         guard_true(i3, descr=<Guard2>) [i0]
         finish(i0)",
        2,
        &[vec![RtValue::Int(0x8000000000000001u64 as i64)]],
    );
}

#[test]
fn miscompilation_4_sub_ovf_of_wrapping_add() {
    // int_sub_ovf(int_add(a, b), b) is not a: the guard can fail
    let src = "[i0, i1]
         i2 = int_add(i0, i1)
         i3 = int_sub_ovf(i2, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i3)";
    check(src, src);
    must_keep(
        src,
        1,
        &[
            vec![RtValue::Int(i64::MAX), RtValue::Int(1)],
            vec![RtValue::Int(-5), RtValue::Int(i64::MIN)],
        ],
    );
}

#[test]
fn correct_variant_of_miscompilation_4() {
    // after a passed int_add_ovf, int_sub(c, b) is a
    check(
        "[i0, i1]
         i2 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_sub(i2, i1)
         finish(i3, i2)",
        "[i0, i1]
         i2 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         finish(i0, i2)",
    );
}

#[test]
fn shifted_constant_equal_zero_is_not_misread() {
    // 0 == int_lshift(0x1000000000000000, x) with 0 <= x <= 15 must not conclude anything
    must_keep(
        "[i0]
         i1 = int_ge(i0, 0)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_le(i0, 15)
         guard_true(i2, descr=<Guard2>) [i0]
         i3 = int_lshift(1152921504606846976, i0)
         i4 = int_eq(i3, 0)
         guard_true(i4, descr=<Guard3>) [i0]
         finish(i3)",
        3,
        &[vec![RtValue::Int(4)], vec![RtValue::Int(3)]],
    );
}

// ---------------------------------------------------------------- allocation removal

#[test]
fn remove_unused_allocation() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i2)",
        "[i0]
         finish(i0)",
    );
}

#[test]
fn remove_two_allocations() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, p1, descr=<FieldP b 8>)
         p3 = getfield_gc_r(p2, descr=<FieldP b 8>)
         i4 = getfield_gc_i(p3, descr=<FieldS a 8>)
         finish(i4)",
        "[i0]
         finish(i0)",
    );
}

#[test]
fn materialize() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn dont_materialize_twice() {
    // one allocation; the second identical store is redundant (heap cache)
    let out = check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
    assert_eq!(out.stats.virtuals_materialized, 1);
    // without the heap cache both stores stay, and still one allocation
    let o = Options {
        heapcache: false,
        ..Options::default()
    };
    check_with(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        &o,
    );
}

#[test]
fn materialize_non_virtuals_and_constants() {
    let src = "[p0, p1]
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         setfield_gc(p1, 17, descr=<FieldS a 16>)
         finish()";
    check(src, src);
}

#[test]
fn materialize_fields() {
    check(
        "[p0, i1]
         p2 = new(descr=<SizeDescr 24>)
         setfield_gc(p2, 8, descr=<FieldS a 8>)
         setfield_gc(p2, i1, descr=<FieldS c 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         finish()",
        "[p0, i1]
         p2 = new(descr=<SizeDescr 24>)
         setfield_gc(p2, 8, descr=<FieldS a 8>)
         setfield_gc(p2, i1, descr=<FieldS c 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn materialize_chained_objects() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p2, descr=<FieldP n 8>)
         setfield_gc(p2, 1337, descr=<FieldS a 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, 1337, descr=<FieldS a 8>)
         setfield_gc(p1, p2, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn object_graph_cycles() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p1, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 16>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, p1, descr=<FieldP n 8>)
         setfield_gc(p0, p1, descr=<FieldP b 16>)
         finish()",
    );
}

#[test]
fn long_chain_of_virtuals_materializes_without_recursion() {
    // 20,000 nested virtual objects escape at once
    let n = 20_000;
    let mut src = String::from("[p0]\n p1 = new(descr=<SizeDescr 16>)\n");
    for i in 2..=n {
        src += &format!(
            " p{i} = new(descr=<SizeDescr 16>)\n setfield_gc(p{i}, p{}, descr=<FieldP next 8>)\n",
            i - 1
        );
    }
    src +=
        &format!(" guard_true(0, descr=<Guard1>) [p{n}]\n setfield_gc(p0, p{n}, descr=<FieldP head 8>)\n finish()\n");
    let t = parse(&src);
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || optimize(&t, &Options::default()).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out.stats.virtuals_materialized, n);
    // n allocations, n - 1 inner stores, the guard, the outer store, finish
    assert_eq!(out.trace.num_real_ops(), 2 * n + 2);
    // the guard describes the whole chain
    assert_eq!(out.trace.guards[0].virtuals.len(), n);
}

#[test]
fn load_non_virtual() {
    let src = "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i1)";
    check(src, src);
}

#[test]
fn materialize_on_other_ops() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(print), p1, descr=<Callv 0 r EF=2>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(print), p1, descr=<Callv 0 r EF=2>)
         finish()",
    );
}

#[test]
fn sink_allocations() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 123, descr=<FieldS a 8>)
         setfield_gc(p1, 456, descr=<FieldS c 16>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = getfield_gc_i(p1, descr=<FieldS c 16>)
         i4 = int_add(i2, i3)
         setfield_gc(p1, i4, descr=<FieldS a 8>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 24>)
         setfield_gc(p1, 579, descr=<FieldS a 8>)
         setfield_gc(p1, 456, descr=<FieldS c 16>)
         setfield_gc(p0, p1, descr=<FieldP b 8>)
         finish()",
    );
}

#[test]
fn unwritten_fields_read_as_zero() {
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 24>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         p3 = getfield_gc_r(p1, descr=<FieldP b 16>)
         finish(i2, p3)",
        "[i0]
         finish(0, ConstPtr(null))",
    );
}

#[test]
fn virtual_only_in_fail_args_is_described() {
    let out = check(
        "[i0, i1]
         p2 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>)
         setfield_gc(p2, i0, descr=<FieldS a 8>)
         p3 = new_array(2, descr=<ArrayP 8>)
         setarrayitem_gc(p3, 1, p2, descr=<ArrayP 8>)
         guard_true(i1, descr=<Guard1>) [i0, p3, p2]
         i4 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i4)",
        "[i0, i1]
         guard_true(i1, descr=<Guard1>) [i0, $0, $1] {$0 = new_array(2, descr=<ArrayP 8>) [1]: $1; $1 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>) <FieldS a 8>: i0}
         finish(i0)",
    );
    assert_eq!(out.stats.virtuals_removed, 2);
    assert_eq!(out.stats.virtuals_materialized, 0);
    // the exit rebuilds the objects
    let t = parse(
        "[i0, i1]
         p2 = new_with_vtable(descr=<SizeDescr 24 vtable=4096>)
         setfield_gc(p2, i0, descr=<FieldS a 8>)
         p3 = new_array(2, descr=<ArrayP 8>)
         setarrayitem_gc(p3, 1, p2, descr=<ArrayP 8>)
         guard_true(i1, descr=<Guard1>) [i0, p3, p2]
         i4 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i4)",
    );
    for inputs in [[RtValue::Int(7), RtValue::Int(0)], [RtValue::Int(7), RtValue::Int(1)]] {
        assert!(same_behaviour(&t, &out.trace, &inputs).unwrap());
    }
}

#[test]
fn guards_and_comparisons_on_virtuals_fold() {
    check(
        "[p0]
         p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         guard_class(p1, 4096, descr=<Guard1>) [p0]
         guard_nonnull(p1, descr=<Guard2>) [p0]
         guard_nonnull_class(p1, 4096, descr=<Guard3>) [p0]
         i2 = ptr_eq(p1, p0)
         i3 = ptr_ne(p1, p1)
         i4 = instance_ptr_eq(p1, ConstPtr(null))
         finish(i2, i3, i4)",
        "[p0]
         finish(0, 0, 0)",
    );
}

#[test]
fn guard_isnull_on_virtual_escapes_and_stays() {
    check(
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         guard_isnull(p1, descr=<Guard1>) [p0]
         finish()",
        "[p0]
         p1 = new(descr=<SizeDescr 16>)
         guard_isnull(p1, descr=<Guard1>) [p0]
         finish()",
    );
}

#[test]
fn virtual_arrays() {
    check(
        "[i0]
         p1 = new_array_clear(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, i0, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, 1, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_i(p1, 2, descr=<ArrayS 8>)
         i4 = arraylen_gc(p1, descr=<ArrayS 8>)
         finish(i2, i3, i4)",
        "[i0]
         finish(i0, 0, 3)",
    );
}

#[test]
fn virtual_array_with_variable_index_escapes() {
    check(
        "[i0]
         p1 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, 5, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, i0, descr=<ArrayS 8>)
         finish(i2)",
        "[i0]
         p1 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, 5, descr=<ArrayS 8>)
         i2 = getarrayitem_gc_i(p1, i0, descr=<ArrayS 8>)
         finish(i2)",
    );
}

#[test]
fn narrow_field_that_may_not_fit_is_not_forwarded() {
    // a 1-byte unsigned field truncates: the read must stay
    check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
    );
    check(
        "[i0]
         i1 = int_and(i0, 255)
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i1, descr=<FieldU b 8 size=1>)
         i2 = getfield_gc_i(p1, descr=<FieldU b 8 size=1>)
         finish(i2)",
        "[i0]
         i1 = int_and(i0, 255)
         finish(i1)",
    );
}

// ---------------------------------------------------------------- heap cache

#[test]
fn heap_read_after_write_and_read() {
    check(
        "[p0, i1]
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i3 = getfield_gc_i(p0, descr=<FieldS c 16>)
         i4 = getfield_gc_i(p0, descr=<FieldS c 16>)
         setarrayitem_gc(p0, 2, i1, descr=<ArrayS 8>)
         i5 = getarrayitem_gc_i(p0, 2, descr=<ArrayS 8>)
         finish(i2, i3, i4, i5)",
        "[p0, i1]
         i3 = getfield_gc_i(p0, descr=<FieldS c 16>)
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         setarrayitem_gc(p0, 2, i1, descr=<ArrayS 8>)
         finish(i1, i3, i3, i1)",
    );
}

#[test]
fn dead_stores_between_guards_are_removed() {
    // the frame-like pattern of PyPy traces: a slot rewritten before anything can observe it
    let out = check(
        "[p0, p1, i2]
         setfield_gc(p0, 1, descr=<FieldS depth 8>)
         setarrayitem_gc(p1, 0, i2, descr=<ArrayS 8>)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         i3 = int_add(i2, 1)
         setarrayitem_gc(p1, 0, i3, descr=<ArrayS 8>)
         setfield_gc(p0, 3, descr=<FieldS depth 8>)
         guard_true(i2, descr=<Guard1>) [i2]
         setfield_gc(p0, 4, descr=<FieldS depth 8>)
         i5 = getfield_gc_i(p1, descr=<FieldS other 16>)
         setfield_gc(p0, 5, descr=<FieldS depth 8>)
         finish(i5)",
        "[p0, p1, i2]
         i3 = int_add(i2, 1)
         setarrayitem_gc(p1, 0, i3, descr=<ArrayS 8>)
         setfield_gc(p0, 3, descr=<FieldS depth 8>)
         guard_true(i2, descr=<Guard1>) [0]
         i7 = getfield_gc_i(p1, descr=<FieldS other 16>)
         setfield_gc(p0, 5, descr=<FieldS depth 8>)
         finish(i7)",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 4);
}

#[test]
fn overwritten_stores_of_allocations_are_dead_and_the_allocation_waits() {
    // p2 is stored and the store overwritten before anything observes it: the store goes, and
    // p2 stays virtual until the `finish` needs it (after the call, which cannot reach it)
    let src = "[p0, i1]
         p2 = new_array_clear(2, descr=<ArrayS 8>)
         setarrayitem_gc(p2, 0, i1, descr=<ArrayS 8>)
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         setfield_gc(p0, ConstPtr(null), descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish(p2)";
    let out = check(
        src,
        "[p0, i1]
         setfield_gc(p0, ConstPtr(null), descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         p4 = new_array_clear(2, descr=<ArrayS 8>)
         setarrayitem_gc(p4, 0, i1, descr=<ArrayS 8>)
         finish(p4)",
    );
    let t = parse(src);
    for i in [0i64, 5, -7] {
        assert!(same_behaviour(&t, &out.trace, &[RtValue::Ref(0x5000_0000_1008), RtValue::Int(i)]).unwrap());
    }
}

#[test]
fn overwritten_reference_stores_of_older_objects_are_dead() {
    // p1 existed before the trace: the first store is overwritten before anything observes it
    let out = check(
        "[p0, p1, p2]
         setfield_gc(p0, p1, descr=<FieldP p 8>)
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()",
        "[p0, p1, p2]
         setfield_gc(p0, p2, descr=<FieldP p 8>)
         call_n(ConstClass(f), descr=<Callv 0 EF=2>)
         finish()",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 1);
}

#[test]
fn delayed_writes_keep_their_order_with_possible_aliases() {
    // p0 and p1 may be the same object: the last write wins, and the read sees it
    check(
        "[p0, p1]
         setfield_gc(p0, 1, descr=<FieldS a 8>)
         setfield_gc(p1, 2, descr=<FieldS a 8>)
         setfield_gc(p0, 3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i4)",
        "[p0, p1]
         setfield_gc(p0, 1, descr=<FieldS a 8>)
         setfield_gc(p1, 2, descr=<FieldS a 8>)
         setfield_gc(p0, 3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i4)",
    );
}

#[test]
fn heap_write_through_possible_alias_invalidates() {
    let src = "[p0, p1, i2, i3]
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i4)";
    check(src, src);
}

#[test]
fn heap_distinct_allocations_do_not_alias() {
    check(
        "[i2, i3]
         p0 = new(descr=<SizeDescr 16>)
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(f), p0, p1, descr=<Callv 0 rr EF=2>)
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i4)",
        "[i2, i3]
         p0 = new(descr=<SizeDescr 16>)
         p1 = new(descr=<SizeDescr 16>)
         call_n(ConstClass(f), p0, p1, descr=<Callv 0 rr EF=2>)
         setfield_gc(p0, i2, descr=<FieldS a 8>)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         finish(i2)",
    );
}

#[test]
fn heap_calls_invalidate_unless_they_cannot_write() {
    check(
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=0>)
         i3 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_n(ConstClass(g), descr=<Callv 0 EF=2>)
         i5 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i6 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_may_force_n(ConstClass(h), descr=<Callv 0 EF=7>)
         i7 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         finish(i2, i3, i5, i6, i7)",
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         i2 = call_i(ConstClass(f), i1, descr=<Calli 8 i EF=0>)
         i4 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         call_n(ConstClass(g), descr=<Callv 0 EF=2>)
         i5 = getfield_gc_i(p0, descr=<FieldS a 8>)
         call_may_force_n(ConstClass(h), descr=<Callv 0 EF=7>)
         i7 = getfield_gc_i(p0, descr=<FieldS k 16 pure>)
         finish(i2, i1, i5, i4, i7)",
    );
}

#[test]
fn heap_overlapping_descriptors_invalidate_each_other() {
    let src = "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         setfield_gc(p0, i1, descr=<FieldS other_name_same_offset 8>)
         i3 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i2, i3)";
    check(src, src);
}

#[test]
fn heap_array_writes() {
    check(
        "[p0, i1, i2]
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         i4 = getarrayitem_gc_i(p0, 1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 1, i2, descr=<ArrayS 8>)
         i5 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         setarrayitem_gc(p0, i1, i2, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i3, i4, i5, i6)",
        "[p0, i1, i2]
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         i4 = getarrayitem_gc_i(p0, 1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 1, i2, descr=<ArrayS 8>)
         setarrayitem_gc(p0, i1, i2, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i3, i4, i3, i6)",
    );
}

// ---------------------------------------------------------------- loops

#[test]
fn label_parameters_start_without_knowledge() {
    check(
        "[i0]
         i1 = int_and(i0, 7)
         i9 = int_lt(i1, 8)
         guard_true(i9, descr=<Guard1>) [i0]
         label(i1, descr=TargetToken(1))
         i3 = int_lt(i1, 8)
         guard_true(i3, descr=<Guard2>) [i1]
         i4 = int_add(i1, 1)
         jump(i4, descr=TargetToken(1))",
        "[i0]
         i1 = int_and(i0, 7)
         label(i1, descr=TargetToken(1))
         i3 = int_lt(i1, 8)
         guard_true(i3, descr=<Guard2>) [i1]
         i4 = int_add(i1, 1)
         jump(i4, descr=TargetToken(1))",
    );
}

/// With peeling, the first iteration's guard on a loop-invariant value (`base & 7 == 0`,
/// after `(base + 24 * i) & 7` became `base & 7`) holds in the loop body: the copy is gone.
/// A guard on the loop-carried `i` stays. The copied guards get the next free ids and keep
/// their original's resume key.
#[test]
fn peeling_removes_a_loop_invariant_guard() {
    check_with(
        "[i0, i1, i2]
         label(i0, i1, i2, descr=TargetToken(1))
         i3 = int_lt(i2, i0)
         guard_true(i3, descr=<Guard1>) [i2]
         i4 = int_mul(i2, 24)
         i5 = int_add(i1, i4)
         i6 = int_and(i5, 7)
         i7 = int_is_true(i6)
         guard_false(i7, descr=<Guard2>) [i2]
         i8 = int_add(i2, 1)
         jump(i0, i1, i8, descr=TargetToken(1))",
        "[i0, i1, i2]
         label(i0, i1, i2, descr=TargetToken(1))
         i7 = int_lt(i2, i0)
         guard_true(i7, descr=<Guard1>) [i2]
         i9 = int_and(i1, 7)
         guard_false(i9, descr=<Guard2>) [i2]
         i11 = int_add(i2, 1)
         label(i0, i1, i11, descr=TargetToken(4611686018427387905))
         i16 = int_lt(i11, i0)
         guard_true(i16, descr=<Guard3 key=1>) [i11]
         i18 = int_add(i11, 1)
         jump(i0, i1, i18, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    // Without peeling the guard stays in the loop: the output is the input.
    let unchanged = "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i2 = int_and(i0, 7)
         guard_false(i2, descr=<Guard1>) [i1]
         i4 = int_add(i1, 1)
         jump(i0, i4, descr=TargetToken(1))";
    let out = check_with(unchanged, unchanged, &Options::default());
    assert_eq!(out.stats.removed(optimizer::Reason::GuardKnown), 0);
}

/// A loop-carried accumulator masked on the back edge (`s = (s + x) & 0xffffff`) is in
/// `[0, 0xffffff]` at the loop header once the peeled iteration has masked it on entry: the
/// body adds a byte to it without an overflow check. The peeled iteration keeps its check
/// (`s` is arbitrary on entry).
#[test]
fn peeling_drops_the_overflow_check_of_a_masked_accumulator() {
    check_with(
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i2 = int_and(i1, 255)
         i3 = int_add_ovf(i0, i2)
         guard_no_overflow(descr=<Guard1>) [i0]
         i4 = int_and(i3, 16777215)
         jump(i4, i1, descr=TargetToken(1))",
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1)) -> [i2, i3]
         i4 = int_and(i3, 255)
         i5 = int_add_ovf(i2, i4)
         guard_no_overflow(descr=<Guard1>) [i2]
         i6 = int_and(i5, 16777215)
         label(i6, i3, descr=TargetToken(4611686018427387905)) -> [i7, i8]
         i9 = int_and(i8, 255)
         i10 = int_add(i7, i9)
         i11 = int_and(i10, 16777215)
         jump(i11, i8, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
    // A mask wider than the sum can stay below keeps the check: `x` may be any integer.
    check_with(
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1))
         i3 = int_add_ovf(i0, i1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i4 = int_and(i3, 16777215)
         jump(i4, i1, descr=TargetToken(1))",
        "[i0, i1]
         label(i0, i1, descr=TargetToken(1)) -> [i2, i3]
         i5 = int_add_ovf(i2, i3)
         guard_no_overflow(descr=<Guard1>) [i2]
         i6 = int_and(i5, 16777215)
         label(i6, i3, descr=TargetToken(4611686018427387905)) -> [i7, i8]
         i10 = int_add_ovf(i7, i8)
         guard_no_overflow(descr=<Guard2 key=1>) [i7]
         i11 = int_and(i10, 16777215)
         jump(i11, i8, descr=TargetToken(4611686018427387905))",
        &peel(),
    );
}

/// A parameter the jump does not pass back unchanged is not invariant: what the peeled
/// iteration learnt about it does not carry into the loop.
#[test]
fn peeling_keeps_guards_on_loop_carried_values() {
    let out = check_with(
        "[i0, i1]
         label(i0, i1)
         i2 = int_and(i0, 7)
         i3 = int_is_true(i2)
         guard_false(i3, descr=<Guard1>) [i1]
         i4 = int_add(i0, 1)
         jump(i4, i1)",
        "[i0, i1]
         label(i0, i1)
         i5 = int_and(i0, 7)
         guard_false(i5, descr=<Guard1>) [i1]
         i7 = int_add(i0, 1)
         label(i7, i1)
         i11 = int_and(i7, 7)
         guard_false(i11, descr=<Guard2 key=1>) [i1]
         i13 = int_add(i7, 1)
         jump(i13, i1)",
        &peel(),
    );
    assert_eq!(out.stats.removed(optimizer::Reason::GuardKnown), 0);
}

#[test]
fn virtuals_reaching_a_label_are_materialized() {
    let out = check(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         label(p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = int_add(i2, 1)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         i4 = int_lt(i3, 100)
         guard_true(i4, descr=<Guard1>) [p1]
         jump(p1, descr=TargetToken(1))",
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         label(p1, descr=TargetToken(1))
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         i3 = int_add(i2, 1)
         i4 = int_lt(i3, 100)
         setfield_gc(p1, i3, descr=<FieldS a 8>)
         guard_true(i4, descr=<Guard1>) [p1]
         jump(p1, descr=TargetToken(1))",
    );
    assert_eq!(out.stats.virtuals_materialized, 1);
}

#[test]
fn loop_body_virtuals_are_removed() {
    // a box allocated and consumed inside the body never exists
    let src = "[i0]
         label(i0, descr=TargetToken(1))
         p1 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         setfield_gc(p1, i0, descr=<FieldS v 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS v 8>)
         i3 = int_add(i2, 1)
         i4 = int_lt(i3, 10)
         guard_true(i4, descr=<Guard1>) [i3, p1]
         jump(i3, descr=TargetToken(1))";
    let out = check(
        src,
        "[i0]
         label(i0, descr=TargetToken(1))
         i3 = int_add(i0, 1)
         i4 = int_lt(i3, 10)
         guard_true(i4, descr=<Guard1>) [i3, $0] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>) <FieldS v 8>: i0}
         jump(i3, descr=TargetToken(1))",
    );
    let t = parse(src);
    for i in [-5i64, 0, 9, 10] {
        assert!(same_behaviour(&t, &out.trace, &[RtValue::Int(i)]).unwrap());
    }
}

// ---------------------------------------------------------------- hints

#[test]
fn hints_are_dropped_consistently() {
    // quasiimmut_field goes, its guard_not_invalidated stays; virtual_ref is its object
    check(
        "[p0, p1]
         quasiimmut_field(p0, descr=<QuasiImmutDescr object at 0x7fe0f98cf6e0>)
         guard_not_invalidated(descr=<Guard1>) [p0]
         p2 = virtual_ref(p1, 3)
         assert_not_none(p1)
         guard_nonnull(p1, descr=<Guard2>) [p0]
         virtual_ref_finish(p2, ConstPtr(null))
         p3 = same_as_r(p2)
         enter_portal_frame(1, 2)
         finish(p3)",
        "[p0, p1]
         guard_not_invalidated(descr=<Guard1>) [p0]
         enter_portal_frame(1, 2)
         finish(p1)",
    );
}

// ---------------------------------------------------------------- dead code, options, stats

#[test]
fn dead_pure_ops_and_reads_are_removed() {
    let out = check(
        "[i0, p1]
         i2 = int_mul(i0, i0)
         i3 = int_add(i2, 1)
         i4 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i0)",
        "[i0, p1]
         finish(i0)",
    );
    assert_eq!(out.stats.removed(Reason::Dead), 3);
    assert_eq!(out.stats.ops_in, 4);
    assert_eq!(out.stats.ops_out, 1);
}

#[test]
fn everything_off_is_the_identity() {
    let src = "[i0, p1]
         i2 = int_add(i0, 0)
         i3 = int_add(5, 4)
         p4 = new(descr=<SizeDescr 16>)
         setfield_gc(p4, i3, descr=<FieldS a 8>)
         i5 = getfield_gc_i(p4, descr=<FieldS a 8>)
         i6 = int_lt(i5, 10)
         guard_true(i6, descr=<Guard1>) [i0]
         guard_true(i6, descr=<Guard2>) [i0]
         i7 = int_add_ovf(i2, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(i7)";
    check_with(src, src, &Options::none());
}

#[test]
fn input_is_not_mutated_and_guard_ids_survive() {
    let t = parse(
        "[i0]
         i1 = int_add(i0, 0)
         i2 = int_lt(i1, 5)
         guard_true(i2, descr=<Guard7 key=99>) [i1]
         finish(i1)",
    );
    let before = t.clone();
    let out = optimize(&t, &Options::default()).unwrap();
    assert_eq!(t, before);
    let g = out
        .trace
        .guards
        .iter()
        .find(|g| g.id == trace_ir::GuardId(7))
        .expect("guard 7 kept");
    assert_eq!(g.resume_key, 99);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let mut t = parse("[i0]\n i1 = int_add(i0, 1)\n finish(i1)");
    t.ops[1].args[0] = trace_ir::Value::op(trace_ir::OpRef::new(5));
    assert!(matches!(
        optimize(&t, &Options::default()),
        Err(optimizer::OptError::BadInput(_))
    ));
}

// ---------------------------------------------------------------- guards and their exits

#[test]
fn guard_condition_at_its_own_exit_is_a_constant() {
    // When `guard_true(c)` fails, c is 0; when `guard_false(b)` fails on a boolean b, b is 1.
    // Resume data names the constant (also inside a virtual object), so the comparison has no
    // use left but the guard and the backend fuses it into the jump. `guard_false` on a
    // non-boolean says nothing about the value at the exit: it stays.
    check(
        "[i0, i1]
         i2 = int_lt(i0, i1)
         p3 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>)
         setfield_gc(p3, i2, descr=<FieldS value 8>)
         guard_true(i2, descr=<Guard1>) [i0, i2, p3]
         i4 = int_eq(i0, 5)
         guard_false(i4, descr=<Guard2>) [i4, i1]
         i5 = int_and(i0, i1)
         guard_false(i5, descr=<Guard3>) [i5]
         finish(i0)",
        "[i0, i1]
         i2 = int_lt(i0, i1)
         guard_true(i2, descr=<Guard1>) [i0, 0, $0] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=4096>) <FieldS value 8>: 0}
         i4 = int_eq(i0, 5)
         guard_false(i4, descr=<Guard2>) [1, i1]
         i6 = int_and(i0, i1)
         guard_false(i6, descr=<Guard3>) [i6]
         finish(i0)",
    );
}

#[test]
fn guard_on_a_mask_teaches_the_masked_bits() {
    // After `x & 7 == 0` (either spelling) the low three bits of x are known 0, so the same
    // test on x + 16 is known to pass (the alignment kernel); `x | 1 == 5` makes `x & 4` 4.
    check(
        "[i0, i1, i2]
         i3 = int_and(i0, 7)
         i4 = int_is_true(i3)
         guard_false(i4, descr=<Guard1>) [i0]
         i5 = int_add(i0, 16)
         i6 = int_and(i5, 7)
         i7 = int_is_true(i6)
         guard_false(i7, descr=<Guard2>) [i0]
         i8 = int_and(i1, 7)
         i9 = int_eq(i8, 0)
         guard_true(i9, descr=<Guard3>) [i1]
         i10 = int_sub(i1, 8)
         i11 = int_and(i10, 7)
         i12 = int_or(i2, 1)
         i13 = int_eq(i12, 5)
         guard_true(i13, descr=<Guard4>) [i2]
         i14 = int_and(i2, 4)
         finish(i5, i11, i14)",
        "[i0, i1, i2]
         i3 = int_and(i0, 7)
         guard_false(i3, descr=<Guard1>) [i0]
         i5 = int_add(i0, 16)
         i6 = int_and(i1, 7)
         guard_false(i6, descr=<Guard3>) [i1]
         i8 = int_or(i2, 1)
         i9 = int_eq(i8, 5)
         guard_true(i9, descr=<Guard4>) [i2]
         finish(i5, 0, 4)",
    );
}

#[test]
fn checked_mul_by_power_of_two_is_found_as_a_shift() {
    // A passed `int_mul_ovf(2, x)` computes `x << 1`: a later shift (or a multiplication the
    // rules turn into that shift) reuses it (`tracejit mine` on mmh3).
    check(
        "[i0]
         i1 = int_mul_ovf(2, i0)
         guard_no_overflow(descr=<Guard1>) [i0]
         i2 = int_lshift(i0, 1)
         i3 = int_mul(i0, 2)
         i4 = int_lshift(i0, 2)
         finish(i1, i2, i3, i4)",
        "[i0]
         i1 = int_mul_ovf(2, i0)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_lshift(i0, 2)
         finish(i1, i1, i1, i3)",
    );
}

#[test]
fn constant_moves_off_the_loop_carried_chain() {
    // The PyPy kernel's s' = (s + (x ^ 5) - 5) & M with x a multiple of 8: the xor adds 5
    // without carries, so the new s is s + x (rule sub_add_xor_const, also through the passed
    // int_add_ovf, which stays for its guard).
    check(
        "[i0, i1]
         i2 = int_mul_ovf(i1, 8)
         guard_no_overflow(descr=<Guard1>) [i0, i1]
         i3 = int_and(i2, 255)
         i4 = int_xor(i3, 5)
         i5 = int_add_ovf(i0, i4)
         guard_no_overflow(descr=<Guard2>) [i0, i1]
         i6 = int_sub_ovf(i5, 5)
         guard_no_overflow(descr=<Guard3>) [i0, i1]
         i7 = int_and(i6, 2147483647)
         finish(i7)",
        "[i0, i1]
         i2 = int_mul_ovf(i1, 8)
         guard_no_overflow(descr=<Guard1>) [i0, i1]
         i4 = int_and(i2, 255)
         i5 = int_xor(i4, 5)
         i6 = int_add_ovf(i0, i5)
         guard_no_overflow(descr=<Guard2>) [i0, i1]
         i8 = int_add(i0, i4)
         i9 = int_and(i8, 2147483647)
         finish(i9)",
    );
}

// ---- the memory model: byte views and type-based aliasing (docs/memory-model.md) --------

#[test]
fn byte_views_keep_stores_before_loads_of_their_bytes() {
    // Under byte views (the default) the byte load reads the word store's low byte: the
    // delayed store is flushed before it; a load of other bytes does not flush it.
    check(
        "[p0]
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i1 = getarrayitem_gc_i(p0, 8, descr=<ArrayU 1>)
         i2 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         finish(i1, i2)",
        "[p0]
         i1 = getarrayitem_gc_i(p0, 8, descr=<ArrayU 1>)
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         finish(i1, i3)",
    );
}

#[test]
fn type_based_aliasing_keeps_descriptors_apart() {
    // Under PyPy's rule a byte view never aliases the word array: the store stays delayed
    // to the end, and the word is read back from the heap cache.
    check(
        "aliasing type-based
         [p0]
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         i2 = getarrayitem_gc_i(p0, 0, descr=<ArrayS 8>)
         finish(i1, i2)",
        "aliasing type-based
         [p0]
         i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
         setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
         finish(i1, 4660)",
    );
}

#[test]
fn stores_through_two_views_stay_in_order() {
    // The second store is another view of the first one's bytes: it flushes the first, and
    // the third is not merged into the first one's place (before the second).
    check(
        "[p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
        "[p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
    );
    // Under the type-based rule the views never alias: the third store replaces the first.
    check(
        "aliasing type-based
         [p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
        "aliasing type-based
         [p0, i1, i2, i3]
         setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
         setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
         finish()",
    );
}

#[test]
fn a_float_view_is_not_forwarded_into_an_integer_view() {
    // The float stays in memory: the integer view loads its bits.
    check(
        "[f0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, f0, descr=<FieldF x 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS y 8>)
         finish(i2)",
        "[f0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, f0, descr=<FieldF x 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS y 8>)
         finish(i2)",
    );
}

#[test]
fn commuted_float_ops_are_not_one_expression() {
    // NaN payloads: float_add(a, b) and float_add(b, a) differ in their bits.
    check(
        "[f0, f1]
         f2 = float_add(f0, f1)
         f3 = float_add(f1, f0)
         f4 = float_add(f0, f1)
         finish(f2, f3, f4)",
        "[f0, f1]
         f2 = float_add(f0, f1)
         f3 = float_add(f1, f0)
         finish(f2, f3, f2)",
    );
}

#[test]
fn the_first_statement_of_a_class_stays() {
    // record_exact_class is a promise: the guard it implies goes; the hint stays (it is the
    // first word about p0's class), a repeated one goes.
    let out = check(
        "[p0]
         record_exact_class(p0, 4096)
         guard_class(p0, 4096, descr=<Guard0>) [p0]
         record_exact_class(p0, 4096)
         guard_nonnull(p0, descr=<Guard1>) [p0]
         finish(p0)",
        "[p0]
         record_exact_class(p0, 4096)
         finish(p0)",
    );
    assert_eq!(out.stats.removed.get(&Reason::Hint), Some(&1));
}

#[test]
fn fresh_objects_differ_from_constants_and_older_values() {
    // p2 escapes (stored into p0), so it is allocated; it is at no constant's address and at
    // no address p0 or p1 (which existed before it) held. p3, read after the allocation, may
    // be p2.
    check(
        "[p0, p1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         i3 = instance_ptr_eq(p2, ConstPtr(ptr7))
         i4 = ptr_eq(p1, p2)
         i5 = ptr_ne(p2, p0)
         p6 = getfield_gc_r(p1, descr=<FieldP b 8>)
         i7 = ptr_eq(p6, p2)
         finish(i3, i4, i5, i7)",
        "[p0, p1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         p6 = getfield_gc_r(p1, descr=<FieldP b 8>)
         i7 = ptr_eq(p6, p2)
         finish(0, 0, 1, i7)",
    );
}

#[test]
fn writes_to_a_fresh_object_keep_what_is_known_of_older_ones() {
    // the write to p3's field (p3 exists: an elidable call took it) cannot change p0's: the
    // load of p0's field is forwarded
    check(
        "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         p3 = new(descr=<SizeDescr 16>)
         i5 = call_i(ConstClass(f), p3, descr=<Calli 8 r EF=0>)
         setfield_gc(p3, i1, descr=<FieldS a 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i2, i4, i5)",
        "[p0, i1]
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         p3 = new(descr=<SizeDescr 16>)
         i4 = call_i(ConstClass(f), p3, descr=<Calli 8 r EF=0>)
         setfield_gc(p3, i1, descr=<FieldS a 8>)
         finish(i2, i2, i4)",
    );
}

#[test]
fn hints_do_not_keep_overwritten_stores() {
    // a hint observes no memory: the first write of the frame field is dead across it
    let out = check(
        "[p0]
         setfield_gc(p0, 1, descr=<FieldS depth 8>)
         enter_portal_frame(14, 5108)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         leave_portal_frame(14)
         finish()",
        "[p0]
         enter_portal_frame(14, 5108)
         leave_portal_frame(14)
         setfield_gc(p0, 2, descr=<FieldS depth 8>)
         finish()",
    );
    assert_eq!(out.stats.removed(Reason::DeadStore), 1);
}

#[test]
fn guards_teach_the_operands_of_an_xor() {
    // (x ^ 12) & 3 == 1: the low two bits of x ^ 12 are 01, and 12 leaves them alone
    check(
        "[i0]
         i1 = int_xor(i0, 12)
         i2 = int_and(i1, 3)
         i3 = int_eq(i2, 1)
         guard_true(i3, descr=<Guard1>) [i0]
         i4 = int_and(i0, 1)
         finish(i4)",
        "[i0]
         i1 = int_xor(i0, 12)
         i2 = int_and(i1, 3)
         i3 = int_eq(i2, 1)
         guard_true(i3, descr=<Guard1>) [i0]
         finish(1)",
    );
}
