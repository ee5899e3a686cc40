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

#[path = "../examples/hello_driver.rs"]
#[allow(dead_code)]
mod hello_driver;

#[test]
fn hello_driver_compiles_the_loop_and_a_bridge_for_its_rare_path() {
    use driver::{Driver, DriverConfig};
    let mut driver = Driver::new(DriverConfig::default());
    let n = 200_000i64;
    let regs = hello_driver::run(n, &mut driver);
    let a: i64 = (0..n).filter(|i| i & 7 != 0).sum();
    assert_eq!((regs[0], regs[2], regs[3]), (n, a, n / 8));
    let s = driver.stats();
    assert_eq!((s.loops, s.bridges, s.aborts), (1, 1, 0), "{s:?}");
    // Until the bridge, each rare iteration exits; after it only the loop's end does.
    assert!(s.exits <= 25, "{s:?}");
    // Below the hot loop threshold nothing is compiled.
    let mut cold = Driver::new(DriverConfig::default());
    assert_eq!(
        hello_driver::run(10, &mut cold)[2],
        (0..10).filter(|i| i & 7 != 0).sum::<i64>()
    );
    assert_eq!(cold.stats().loops, 0);
}
