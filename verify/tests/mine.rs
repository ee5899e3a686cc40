//! Missing-optimization mining on small hand-written (already "optimized") traces: each known
//! redundancy is reported with the right kind and a minimized pattern; traces without one
//! report nothing.

use trace_ir::text::parse_trace;
use verify::mine::{aggregate, mine_trace, Finding, FindingKind, MineConfig, MineStats};

fn mine(text: &str) -> Vec<Finding> {
    let t = parse_trace(text).unwrap_or_else(|e| panic!("{e}"));
    let mut stats = MineStats::default();
    let f = mine_trace(&t, &MineConfig::default(), &mut stats);
    assert_eq!(stats.traces, 1);
    assert!(!stats.budget_exhausted);
    f
}

fn only(fs: &[Finding]) -> &Finding {
    assert_eq!(fs.len(), 1, "expected one finding, got {fs:#?}");
    &fs[0]
}

#[test]
fn and_of_and_is_the_inner_and() {
    let fs = mine("[i0]\ni1 = int_and(i0, 15)\ni2 = int_and(i1, 255)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.op, 2);
    assert_eq!(f.kind, FindingKind::SameAsEarlier(1));
    assert_eq!(f.pattern, "int_and(int_and(x, 15), 255) => int_and(x, 15)");
    assert_eq!(f.shape, "int_and(int_and(x, C1), C2) => int_and(x, C1)");
}

#[test]
fn comparison_implied_by_an_earlier_guard_is_a_constant_bool() {
    let fs = mine("[i0]\ni1 = int_lt(i0, 10)\nguard_true(i1) [i0]\ni2 = int_lt(i0, 20)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.op, 3);
    assert_eq!(f.kind, FindingKind::ConstBool(1));
    assert_eq!(f.pattern, "int_lt(x, 20) => 1   if guard_true(int_lt(x, 10))");
}

#[test]
fn false_comparison_after_guard_false() {
    // x == 0 is known after guard_false(x); x > 5 is then always false.
    let fs = mine("[i0, i1]\nguard_false(i0) [i0]\ni2 = int_gt(i0, 5)\ni3 = int_add(i2, i1)\nfinish(i3)\n");
    let f = &fs[0];
    assert_eq!(f.op, 3);
    assert_eq!(f.kind, FindingKind::ConstBool(0));
    assert_eq!(f.pattern, "int_gt(x, 5) => 0   if guard_false(x)");
}

#[test]
fn xor_twice_is_a_synthesized_constant() {
    let fs = mine("[i0]\ni1 = int_xor(i0, 1)\ni2 = int_xor(i1, i0)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::Constant(1));
    assert_eq!(f.pattern, "int_xor(int_xor(x, 1), x) => 1");
}

#[test]
fn reassembled_halves_are_the_input() {
    let fs = mine(
        "[i0]\ni1 = int_and(i0, 4294967295)\ni2 = uint_rshift(i0, 32)\ni3 = int_lshift(i2, 32)\ni4 = int_or(i1, i3)\nfinish(i4)\n",
    );
    let f = only(&fs);
    assert_eq!(f.op, 4);
    assert_eq!(f.kind, FindingKind::SameAsInput(0));
    assert_eq!(
        f.pattern,
        "int_or(int_and(x, 0xffffffff), int_lshift(uint_rshift(x, 32), 32)) => x"
    );
}

#[test]
fn masked_increment_cannot_overflow() {
    let fs = mine("[i0]\ni1 = int_and(i0, 255)\ni2 = int_add_ovf(i1, 1)\nguard_no_overflow() [i0]\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.op, 2);
    assert_eq!(f.kind, FindingKind::NoOverflow);
    assert_eq!(
        f.pattern,
        "int_add_ovf(int_and(x, 255), 1) => int_add(int_and(x, 255), 1) (never overflows)"
    );
}

#[test]
fn repeated_guard_is_implied() {
    let fs = mine("[i0, i1]\nguard_true(i0) [i0]\ni2 = int_add(i1, 1)\nguard_true(i0) [i2]\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.op, 4);
    assert_eq!(f.kind, FindingKind::GuardImplied);
    assert_eq!(f.pattern, "guard_true(x) => (always passes)   if guard_true(x)");
}

#[test]
fn guard_value_makes_later_arithmetic_constant() {
    let fs = mine("[i0]\nguard_value(i0, 7) [i0]\ni2 = int_mul(i0, 3)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::Constant(21));
    assert_eq!(f.pattern, "int_mul(x, 3) => 21   if guard_value(x, 7)");
}

#[test]
fn minimization_drops_irrelevant_guards_and_ops() {
    // The guard on i1 and the addition feeding i3 do not matter for i5 == i4.
    let fs = mine(
        "[i0, i1]\ni2 = int_lt(i1, 100)\nguard_true(i2) [i0]\ni3 = int_add(i0, i1)\ni4 = int_and(i3, 15)\ni5 = int_and(i4, 31)\nfinish(i5)\n",
    );
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::SameAsEarlier(5));
    assert_eq!(f.pattern, "int_and(int_and(x, 15), 31) => int_and(x, 15)");
    assert!(f.unminimized.contains("int_add"), "{}", f.unminimized);
}

#[test]
fn nothing_to_find_reports_nothing() {
    let fs = mine(
        "[i0, i1]
i2 = int_add(i0, i1)
i3 = int_lt(i2, 100)
guard_true(i3) [i0]
i4 = int_mul(i2, 3)
i5 = int_and(i4, 255)
i6 = uint_rshift(i5, 2)
i7 = int_xor(i6, i0)
i8 = int_add_ovf(i7, i1)
guard_no_overflow() [i0]
i9 = int_sub(i8, i0)
i10 = int_le(i9, i1)
guard_true(i10) [i0]
jump(i8, i9)
",
    );
    assert!(fs.is_empty(), "false positives: {fs:#?}");
}

#[test]
fn loop_parameters_are_not_confused_with_their_initial_values() {
    // After the label, i2 is a new parameter: nothing links it to the preamble's guard.
    let fs = mine(
        "[i0]
i1 = int_lt(i0, 10)
guard_true(i1) [i0]
label(i0, descr=TargetToken(1)) -> [i2]
i3 = int_lt(i2, 10)
guard_true(i3) [i2]
i4 = int_add(i2, 1)
jump(i4, descr=TargetToken(1))
",
    );
    assert!(fs.is_empty(), "false positives: {fs:#?}");
}

#[test]
fn findings_aggregate_by_shape() {
    let fs = mine(
        "[i0, i1]
i2 = int_and(i0, 15)
i3 = int_and(i2, 255)
i4 = int_and(i1, 7)
i5 = int_and(i4, 63)
i6 = int_and(i1, 3)
i7 = int_and(i6, 63)
i8 = int_add(i3, i5)
i9 = int_add(i8, i7)
finish(i9)
",
    );
    assert_eq!(fs.len(), 3, "{fs:#?}");
    let agg = aggregate(&fs);
    assert_eq!(agg.len(), 1, "{agg:#?}");
    assert_eq!(agg[0].count, 3);
    assert_eq!(agg[0].distinct, 3);
    assert_eq!(agg[0].kind, "same-as-earlier");
}

#[test]
fn an_expired_deadline_stops_the_run() {
    let t = parse_trace("[i0]\ni1 = int_and(i0, 15)\ni2 = int_and(i1, 255)\nfinish(i2)\n").unwrap();
    let cfg = MineConfig {
        deadline: Some(std::time::Instant::now()),
        ..MineConfig::default()
    };
    let mut stats = MineStats::default();
    let fs = mine_trace(&t, &cfg, &mut stats);
    assert!(fs.is_empty());
    assert!(stats.budget_exhausted);
}

#[test]
fn narrow_loads_and_lengths_have_their_ranges() {
    // An unsigned byte masked with 255 is the byte itself.
    let fs = mine("[p0]\ni1 = getarrayitem_gc_i(p0, 3, descr=<ArrayU 1>)\ni2 = int_and(i1, 255)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::SameAsEarlier(1));
    assert_eq!(f.pattern, "int_and(x, 255) => x   if x: u8");
    // A length is never negative.
    let fs = mine("[p0]\ni1 = strlen(p0)\ni2 = int_lt(i1, 0)\nfinish(i2)\n");
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::ConstBool(0));
    assert_eq!(f.pattern, "int_lt(x, 0) => 0   if x >= 0");
    // A full-width signed field has no range: nothing to find.
    assert!(mine("[p0]\ni1 = getfield_gc_i(p0, descr=<FieldS a 8>)\ni2 = int_and(i1, 255)\nfinish(i2)\n").is_empty());
}

#[test]
fn the_same_computation_twice_is_marked() {
    let fs = mine("[i0]\ni1 = int_add(i0, 3)\ni2 = int_add(i0, 3)\nfinish(i1, i2)\n");
    let f = only(&fs);
    assert_eq!(f.kind, FindingKind::SameAsEarlier(1));
    assert_eq!(f.pattern, "int_add(x, 3) => int_add(x, 3)   (computed twice)");
}
