//! Translation validation of conditional calls the optimizer decides: a `cond_call` dropped
//! because its condition is zero, or made a plain call because it is not, and a
//! `cond_call_value` replaced by its value, are `Valid` when the condition is proven; the
//! same rewrites on a condition that may go either way are `Invalid`.

use optimizer::{optimize, Options, Reason};
use trace_ir::text::parse_trace;
use trace_ir::{print_trace, Trace};
use verify::validate::{validate, Config, Verdict};

fn parse(src: &str) -> Trace {
    parse_trace(src).unwrap_or_else(|e| panic!("{e}"))
}

const DECIDED: &str = "
[i0, p1]
p2 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p2, 0, descr=<FieldS T.flag 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.flag 8>)
cond_call(i3, ConstClass(force), p2, descr=<Callv 0 r EF=2 OS=121>)
i4 = int_or(i0, 2)
cond_call(i4, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
guard_nonnull(p1, descr=<Guard0>) [i0]
p5 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
i6 = cond_call_value_i(i3, ConstClass(g), i0, descr=<Calli 8 i EF=2>)
finish(p5, i6)
";

#[test]
fn decided_cond_calls_validate() {
    let t = parse(DECIDED);
    let out = optimize(&t, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.stats.removed(Reason::CondCallKnown),
        2,
        "{}",
        print_trace(&out.trace)
    );
    let v = validate(&t, &out.trace, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
}

const UNDECIDED: &str = "
[i0, p1]
cond_call(i0, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
p2 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
finish(p2)
";

/// `wrong`, validated as the optimized form of `UNDECIDED`, is `Invalid`.
#[track_caller]
fn assert_invalid_for_undecided(wrong: &str) {
    let v = validate(&parse(UNDECIDED), &parse(wrong), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}");
}

#[test]
fn a_cond_call_dropped_on_an_unknown_condition_is_invalid() {
    assert_invalid_for_undecided(
        "
[i0, p1]
p2 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
finish(p2)
",
    );
}

#[test]
fn a_cond_call_made_unconditional_on_an_unknown_condition_is_invalid() {
    assert_invalid_for_undecided(
        "
[i0, p1]
call_n(ConstClass(f), i0, descr=<Callv 0 i EF=2>)
p2 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
finish(p2)
",
    );
}

#[test]
fn a_cond_call_value_replaced_by_a_value_that_may_be_null_is_invalid() {
    assert_invalid_for_undecided(
        "
[i0, p1]
cond_call(i0, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
finish(p1)
",
    );
}

#[test]
fn a_cond_call_value_made_a_call_on_a_value_that_may_be_set_is_invalid() {
    assert_invalid_for_undecided(
        "
[i0, p1]
cond_call(i0, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
p2 = call_r(ConstClass(make), descr=<Callr 8 EF=2>)
finish(p2)
",
    );
}

/// The optimizer drops one conditional call of `original` (its condition is known), and
/// the validator accepts the result.
#[track_caller]
fn drops_one_and_validates(original: &Trace) {
    let out = optimize(original, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.stats.removed(Reason::CondCallKnown),
        1,
        "{}",
        print_trace(&out.trace)
    );
    let v = validate(original, &out.trace, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
}

/// A dropped `cond_call_value_i` followed by a plain call of another function with the same
/// descriptor: the plain call is the original's second call, not the conditional one made
/// plain (the functions differ).
#[test]
fn a_dropped_cond_call_is_not_paired_with_a_later_call_of_another_function() {
    let original = parse(
        "
[i0]
i1 = cond_call_value_i(7, ConstClass(f), 10, descr=<Calli 8 i EF=2>)
i2 = call_i(ConstClass(g), i0, descr=<Calli 8 i EF=2>)
i3 = int_add(i1, i2)
finish(i3)
",
    );
    drops_one_and_validates(&original);
}

#[test]
fn a_dropped_cond_call_is_not_paired_with_a_later_one_of_the_same_function() {
    // The first cond_call never calls (the guard made its condition zero) and goes; the
    // second, of the same function with another constant argument, stays.
    let original = parse(
        "
[i0, i1]
i2 = uint_lt(100, i1)
guard_false(i2, descr=<Guard0>) [i0]
cond_call(i2, ConstClass(f), 5, descr=<Callv 0 i EF=2>)
i3 = int_sub(i1, i0)
cond_call(i3, ConstClass(f), 7, descr=<Callv 0 i EF=2>)
finish(i3)
",
    );
    drops_one_and_validates(&original);
    // Dropping the second one instead is wrong.
    let wrong = parse(
        "
[i0, i1]
i2 = uint_lt(100, i1)
guard_false(i2, descr=<Guard0>) [i0]
cond_call(i2, ConstClass(f), 5, descr=<Callv 0 i EF=2>)
i3 = int_sub(i1, i0)
finish(i3)
",
    );
    let v = validate(&original, &wrong, &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}");
}

#[test]
fn a_dropped_cond_call_value_is_not_paired_with_a_later_plain_call_of_the_same_function() {
    // The cond_call_value's value is known non-zero, so it never calls and goes; the plain
    // call after it, of the same function and descriptor, stays. Its argument is a constant
    // on both sides, the cond_call's a computed one: only the call after the optimized
    // plain call (another function) tells the pairing apart.
    let original = parse(
        "
[i0]
i1 = int_xor(i0, 3)
i2 = int_is_true(-16)
i3 = cond_call_value_i(i2, ConstClass(f), i1, descr=<Calli 8 i EF=2>)
i4 = call_i(ConstClass(f), 5, descr=<Calli 8 i EF=2>)
cond_call(i3, ConstClass(g), 6, descr=<Callv 0 i EF=2>)
finish(i3, i4)
",
    );
    drops_one_and_validates(&original);
}

#[test]
fn a_cond_call_value_on_a_constant_is_not_paired_with_one_on_a_computed_value() {
    // The first never calls (its value is a constant other than zero) and goes; the second,
    // of the same function on an input, stays: the optimized call is the second one.
    let original = parse(
        "
[i0, i1]
i2 = int_mod(i0, 1000)
i3 = cond_call_value_i(77, ConstClass(f), i2, descr=<Calli 8 i EF=2>)
i4 = cond_call_value_i(i1, ConstClass(f), 8, descr=<Calli 8 i EF=2>)
finish(i3, i4)
",
    );
    drops_one_and_validates(&original);
}

/// Two conditional calls of one function, the first never calling (its condition is zero, but
/// not as a constant) and the second always: the optimized trace's one plain call is the
/// second. The first alignment of the sync points pairs it with the first (nothing but Z3
/// tells which one calls); the validator then tries the next alignment.
const FIRST_NEVER_CALLS: &str = "
[i0]
i1 = int_and(i0, 0)
i2 = int_gt(7, -6)
cond_call(i1, 268466320, i0, descr=<Callv 0 i EF=2>)
cond_call(i2, 268466320, 0, descr=<Callv 0 i EF=2>)
finish()
";

#[test]
fn the_plain_call_a_later_cond_call_became_is_found_by_the_next_alignment() {
    let plain = |arg: &str| {
        parse(&format!(
            "[i0]\ncall_n(268466320, {arg}, descr=<Callv 0 i EF=2>)\nfinish()\n"
        ))
    };
    let original = parse(FIRST_NEVER_CALLS);
    let v = validate(&original, &plain("0"), &Config::default());
    assert!(v.is_valid(), "{v}");
    let v = validate(&original, &plain("1"), &Config::default());
    assert!(v.is_invalid(), "{v}");
    let out = optimize(&original, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let v = validate(&original, &out.trace, &Config::default());
    assert!(!v.is_invalid(), "{v}\n{}", print_trace(&out.trace));
}
