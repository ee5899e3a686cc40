//! Runs the logic of `examples/hello_jit.rs`.

#[path = "../examples/hello_jit.rs"]
mod hello_jit;

#[test]
fn hello_jit_sums_and_reports_overflow() {
    assert_eq!(hello_jit::sum_below(0, 0, false), Some(0));
    assert_eq!(hello_jit::sum_below(10, 0, false), Some(45));
    assert_eq!(hello_jit::sum_below(100_000, 7, false), Some(4_999_950_007));
    // Starting near the maximum, the sum overflows: the overflow guard exits.
    assert_eq!(hello_jit::sum_below(100, i64::MAX - 4000, false), None);
    assert_eq!(hello_jit::sum_below(10, i64::MAX - 45, false), Some(i64::MAX));
}
