//! Translation validation by congruence: products with a constant are uninterpreted in the
//! first query (equal operands give equal products and overflow flags, without a multiplier
//! circuit), and values proven equal at a sync point are reused by later claims. Each wrong
//! variant stays `Invalid`.

use trace_ir::text::parse_trace;
use trace_ir::Trace;
use verify::validate::{validate_with_stats, Config, Stats, Verdict};

fn parse(src: &str) -> Trace {
    parse_trace(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn check(original: &str, optimized: &str) -> (Verdict, Stats) {
    validate_with_stats(&parse(original), &parse(optimized), &Config::default())
}

#[track_caller]
fn assert_invalid(original: &str, optimized: &str) {
    let (v, _) = check(original, optimized);
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}\n{optimized}");
}

/// A hash step (xor, mask, shift, product with a constant, overflow check) whose operand
/// the two traces compute in different ways.
const HASH_ORIGINAL: &str = "
[i0, i1]
i2 = int_xor(i0, i1)
i3 = int_and(i2, 4294967295)
i4 = int_rshift(i3, 13)
i5 = int_xor(i3, i4)
i6 = int_mul_ovf(i5, 3266489909)
guard_no_overflow(descr=<Guard1>) [i0, i1]
i7 = int_and(i6, 4294967295)
i8 = int_mul_ovf(i7, 2246822507)
guard_no_overflow(descr=<Guard2>) [i0, i7]
finish(i8)
";

fn hash_optimized(shift: u32, constant: u64) -> String {
    format!(
        "
[i0, i1]
i2 = int_and(i0, 4294967295)
i3 = int_and(i1, 4294967295)
i4 = int_xor(i2, i3)
i5 = uint_rshift(i4, {shift})
i6 = int_xor(i4, i5)
i7 = int_mul_ovf(i6, {constant})
guard_no_overflow(descr=<Guard1>) [i0, i1]
i8 = int_and(i7, 4294967295)
i9 = int_mul_ovf(i8, 2246822507)
guard_no_overflow(descr=<Guard2>) [i0, i8]
finish(i9)
"
    )
}

#[test]
fn products_with_a_constant_of_equal_operands_are_proven_equal_without_the_full_semantics() {
    // 100 ms per query: enough for congruence (a few milliseconds each), too little for Z3
    // to prove the two overflow flags' multiplier circuits equivalent.
    let cfg = Config {
        timeout_ms: 100,
        ..Config::default()
    };
    let (v, stats) = validate_with_stats(&parse(HASH_ORIGINAL), &parse(&hash_optimized(13, 3266489909)), &cfg);
    assert!(matches!(v, Verdict::Valid), "{v}");
    assert_eq!(stats.concrete_queries, 0, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
}

#[test]
fn products_with_a_constant_of_different_operands_stay_invalid() {
    assert_invalid(HASH_ORIGINAL, &hash_optimized(12, 3266489909));
}

#[test]
fn products_with_different_constants_stay_invalid() {
    assert_invalid(HASH_ORIGINAL, &hash_optimized(13, 3266489911));
}

/// A product with `2^k` is the shift a strength reduction writes, in every query mode: the
/// two sides give one term, so no query is needed (deep in a chain of calls and products
/// the abstract query would otherwise have to relate an uninterpreted product to a shift).
#[test]
fn a_product_with_a_power_of_two_is_the_shift_a_strength_reduction_writes() {
    let original = "
[i0, i1]
i2 = int_mul(i0, i1)
i3 = int_mul(i2, 8)
finish(i3)
";
    let optimized = "
[i0, i1]
i2 = int_mul(i0, i1)
i3 = int_lshift(i2, 3)
finish(i3)
";
    let (v, stats) = check(original, optimized);
    assert!(matches!(v, Verdict::Valid), "{v}");
    assert_eq!((stats.abstract_queries, stats.concrete_queries), (0, 0), "{stats:?}");
    let wrong = optimized.replace("int_lshift(i2, 3)", "int_lshift(i2, 2)");
    assert_invalid(original, &wrong);
    // The overflow check of the product stays what it is: a guard on it is compared, and an
    // optimized trace that drops it without a reason stays invalid.
    let checked = "
[i0]
i1 = int_mul_ovf(i0, 4)
guard_no_overflow(descr=<Guard1>) [i0]
finish(i1)
";
    let unchecked = "
[i0]
i1 = int_lshift(i0, 2)
finish(i1)
";
    assert_invalid(checked, unchecked);
    let bounded = |op: &str| {
        format!(
            "
[i0]
record_int_range(i0, 0, 1000)
{op}
finish(i1)
"
        )
    };
    let (v, _) = check(
        &bounded("i1 = int_mul_ovf(i0, 4)\nguard_no_overflow(descr=<Guard1>) [i0]"),
        &bounded("i1 = int_lshift(i0, 2)"),
    );
    assert!(matches!(v, Verdict::Valid), "{v}");
}

/// The original computes a value with an arithmetic shift the optimized trace makes
/// logical (the value is known non-negative); a fail argument shows both, and a later
/// product of it with another value is compared at the end.
const LEARN_ORIGINAL: &str = "
[i0, i1]
i2 = int_and(i0, 4294967295)
i3 = int_rshift(i2, 3)
i4 = int_lt(i1, 100)
guard_true(i4, descr=<Guard1>) [i3]
i5 = int_mul(i3, i1)
i6 = int_xor(i5, i3)
finish(i6)
";

#[test]
fn values_proven_equal_at_a_guard_exit_are_reused_past_the_guard() {
    let optimized = "
[i0, i1]
i2 = int_and(i0, 4294967295)
i3 = uint_rshift(i2, 3)
i4 = int_lt(i1, 100)
guard_true(i4, descr=<Guard1>) [i3]
i5 = int_mul(i3, i1)
i6 = int_xor(i5, i3)
finish(i6)
";
    let (v, stats) = check(LEARN_ORIGINAL, optimized);
    assert!(matches!(v, Verdict::Valid), "{v}");
    assert!(stats.learned >= 1, "{stats:?}");
}

#[test]
fn a_value_that_differs_at_the_guard_exit_is_not_reused() {
    let optimized = "
[i0, i1]
i2 = int_and(i0, 4294967295)
i3 = uint_rshift(i2, 2)
i4 = int_lt(i1, 100)
guard_true(i4, descr=<Guard1>) [i3]
i5 = int_mul(i3, i1)
i6 = int_xor(i5, i3)
finish(i6)
";
    assert_invalid(LEARN_ORIGINAL, optimized);
}

#[test]
fn a_value_equal_only_where_the_guard_fails_is_not_reused_where_it_passes() {
    // The fail arguments are equal when the guard fails (`i2` is 0 there), the outputs
    // differ when it passes.
    let original = "
[i0, i1]
i2 = int_lt(i0, 10)
i3 = int_add(i1, 1)
guard_true(i2, descr=<Guard1>) [i3]
finish(i3)
";
    let optimized = "
[i0, i1]
i2 = int_lt(i0, 10)
i3 = int_add(i2, 1)
i4 = int_add(i1, i3)
guard_true(i2, descr=<Guard1>) [i4]
finish(i4)
";
    assert_invalid(original, optimized);
}

/// The original escapes an array holding `p1` before it writes `p0` into an item of the
/// input array `p1`; the optimized trace writes the item first.
const ESCAPE_ORIGINAL: &str = "
[p0, p1, i2]
p3 = new_array(2, descr=<ArrayP 8>)
setarrayitem_gc(p3, 0, p1, descr=<ArrayP 8>)
setfield_gc(p0, p3, descr=<FieldP T.a 8>)
setarrayitem_gc(p1, 0, p0, descr=<ArrayP 8>)
finish(i2)
";

fn escape_optimized(item: &str) -> String {
    format!(
        "
[p0, p1, i2]
setarrayitem_gc(p1, 0, {item}, descr=<ArrayP 8>)
p3 = new_array(2, descr=<ArrayP 8>)
setarrayitem_gc(p3, 0, p1, descr=<ArrayP 8>)
setfield_gc(p0, p3, descr=<FieldP T.a 8>)
finish(i2)
"
    )
}

#[test]
fn heaps_are_compared_through_the_stores_into_an_escaped_object() {
    let (v, _) = check(ESCAPE_ORIGINAL, &escape_optimized("p0"));
    assert!(matches!(v, Verdict::Valid), "{v}");
}

#[test]
fn a_different_item_behind_the_stores_into_an_escaped_object_stays_invalid() {
    assert_invalid(ESCAPE_ORIGINAL, &escape_optimized("p1"));
}
