//! Every example program prints the same in all three modes, with both executors, and the
//! same as its loop written in Rust; guard failures, re-entry, retracing and overflow exits
//! behave.

use examples::lang::vm::{run_source, Config, Engine, Mode, RunOutput};
use examples::programs::{example, EXAMPLES};

fn config(mode: Mode, engine: Engine) -> Config {
    let mut cfg = Config::new(mode, engine);
    cfg.log = Default::default();
    cfg
}

fn run(src: &str, n: i64, mode: Mode, engine: Engine) -> Result<RunOutput, String> {
    run_source(src, &[("N", n)], config(mode, engine))
}

fn check_all_examples(engine: Engine) {
    for ex in EXAMPLES {
        let expected = (ex.native)(ex.test_n);
        for mode in Mode::ALL {
            let out = run(ex.source, ex.test_n, mode, engine)
                .unwrap_or_else(|e| panic!("{} in {}: {e}", ex.name, mode.name()));
            assert_eq!(out.output, expected, "{} in {}", ex.name, mode.name());
            if mode == Mode::Interpreter {
                assert!(out.stats.traces.is_empty());
            } else {
                assert!(
                    !out.stats.traces.is_empty(),
                    "{} in {}: no trace compiled",
                    ex.name,
                    mode.name()
                );
                assert!(
                    out.stats.driver.entries > 0,
                    "{} in {}: compiled code never entered",
                    ex.name,
                    mode.name()
                );
            }
        }
    }
}

#[test]
fn all_examples_agree_with_the_trace_runner() {
    check_all_examples(Engine::TraceRunner);
}

#[test]
fn all_examples_agree_with_native_code() {
    check_all_examples(Engine::Native);
}

#[test]
fn the_optimizer_removes_the_boxes_of_the_sum_loop() {
    let ex = example("sum").unwrap();
    let out = run(ex.source, ex.test_n, Mode::JitOptimized, Engine::Native).unwrap();
    let t = &out.stats.traces[0];
    assert!(t.allocs_recorded > 0);
    assert_eq!(t.allocs_final, 0, "{t:?}");
    assert!(t.ops_final < t.ops_recorded);
    // The unoptimized run allocates a box per arithmetic result; the optimized one almost
    // nothing after compilation.
    let noopt = run(ex.source, ex.test_n, Mode::JitUnoptimized, Engine::Native).unwrap();
    assert!(
        out.stats.allocations * 10 < noopt.stats.allocations,
        "{} vs {}",
        out.stats.allocations,
        noopt.stats.allocations
    );
}

#[test]
fn data_dependent_branch_exits_and_reenters() {
    let ex = example("branch").unwrap();
    for engine in [Engine::TraceRunner, Engine::Native] {
        for mode in [Mode::JitUnoptimized, Mode::JitOptimized] {
            let out = run(ex.source, 20_000, mode, engine).unwrap();
            assert_eq!(out.output, (ex.native)(20_000));
            let s = &out.stats;
            assert!(s.driver.entries >= s.driver.exits);
            match engine {
                // About one iteration in eight takes the rare path: without bridges, many
                // exits, each followed by a re-entry; the branch guard fails often enough to
                // retrace the loop.
                Engine::TraceRunner => {
                    assert!(s.driver.exits > 500, "{s:?}");
                    assert!(s.driver.retraces >= 1, "{s:?}");
                    assert!(s.traces.len() as u32 == 1 + s.driver.retraces, "{s:?}");
                }
                // Native code gets a bridge for the rare path once its guard is hot: the
                // rare path stays native, and exits are few. Optimized, the bridge (one
                // counter increment) is merged into the loop.
                Engine::Native => {
                    assert!(s.driver.bridges >= 1, "{s:?}");
                    assert_eq!(s.driver.merged, u32::from(mode == Mode::JitOptimized), "{s:?}");
                    assert_eq!(s.driver.retraces, 0, "{s:?}");
                    assert!(s.driver.exits < 100, "{s:?}");
                }
            }
        }
    }
}

#[test]
fn trace_trees_keep_nested_and_changing_paths_native() {
    // nested_branch: the rare path's bridge has a guard of its own for the rarer path, which
    // gets a bridge too; phase_change: the path the loop was compiled on stops being taken
    // halfway, and its guard gets a bridge.
    for (name, min_bridges, merged) in [("nested_branch", 2, 2), ("phase_change", 1, 0)] {
        let ex = example(name).unwrap();
        let out = run(ex.source, 20_000, Mode::JitOptimized, Engine::Native).unwrap();
        assert_eq!(out.output, (ex.native)(20_000), "{name}");
        let s = &out.stats;
        assert!(s.driver.bridges >= min_bridges, "{name}: {s:?}");
        // nested_branch's bridges are short pure paths back to the body (the first with a
        // guard of its own, out of which the second leaves): both are merged into the loop.
        // phase_change's goes to the loop's header.
        assert_eq!(s.driver.merged, merged, "{name}: {s:?}");
        assert_eq!(s.driver.retraces, 0, "{name}: {s:?}");
        // Once warmed up, only the loop's own end leaves compiled code.
        assert!(s.driver.exits_after_warmup <= 1, "{name}: {s:?}");
    }
}

const OVERFLOW: &str = "
x = 1
i = 0
while i < N {
    x = x + i * 1000000000000
    i = i + 1
}
print(x)
";

#[test]
fn overflow_leaves_native_code_and_raises_the_same_error() {
    // Without overflow: all modes agree.
    for mode in Mode::ALL {
        let out = run(OVERFLOW, 1000, mode, Engine::Native).unwrap();
        assert_eq!(out.output, format!("{}\n", 1 + 1_000_000_000_000i64 * (999 * 1000 / 2)));
    }
    // The sum passes 2^63 near i = 4295, long after the loop was compiled.
    for engine in [Engine::TraceRunner, Engine::Native] {
        for mode in Mode::ALL {
            let err = run(OVERFLOW, 10_000, mode, engine).unwrap_err();
            assert_eq!(err, "runtime error at 5:11: integer overflow", "{mode:?} {engine:?}");
        }
    }
}

const SHIFT_OVERFLOW: &str = "s = 0
i = 0
while i < N {
    s = s ^ (i << 52)
    i = i + 1
}
print(s)
";

#[test]
fn left_shift_overflow_leaves_native_code_and_raises_the_same_error() {
    // The recorder checks `i << 52` as `int_mul_ovf(i, 2**52)`: i < 2048 fits, i = 2048
    // overflows the shift in every mode, long after the loop was compiled.
    let want = (0..1000i64).fold(0, |s, i| s ^ (i << 52));
    for mode in Mode::ALL {
        let out = run(SHIFT_OVERFLOW, 1000, mode, Engine::Native).unwrap();
        assert_eq!(out.output, format!("{want}\n"));
    }
    for engine in [Engine::TraceRunner, Engine::Native] {
        for mode in Mode::ALL {
            let err = run(SHIFT_OVERFLOW, 3000, mode, engine).unwrap_err();
            assert_eq!(err, "runtime error at 4:16: integer overflow", "{mode:?} {engine:?}");
        }
    }
}

#[test]
fn type_change_inside_a_compiled_loop_falls_back_to_the_interpreter() {
    // `x` is an int for 300 iterations, then a float: the class guard fails and the loop is
    // retraced with the new type.
    let src = "
x = 0
i = 0
while i < N {
    if i == 300 { x = 0.5 }
    x = x + 1
    i = i + 1
}
print(x)
";
    for engine in [Engine::TraceRunner, Engine::Native] {
        for mode in Mode::ALL {
            let out = run(src, 1000, mode, engine).unwrap();
            assert_eq!(out.output, "700.5\n", "{mode:?} {engine:?}");
        }
    }
}

#[test]
fn runtime_errors_in_compiled_loops() {
    let src = "
a = array(10)
i = 0
while i < N {
    a[i % 10] = a[i % 10] + i
    i = i + 1
}
print(a[i])
";
    for mode in Mode::ALL {
        let err = run(src, 500, mode, Engine::Native).unwrap_err();
        assert!(
            err.contains("index 500 out of range for an array of length 10"),
            "{err}"
        );
        let err = run(
            "x = 1\ni = 0\nwhile i < N { x = x + 1 // (N - i - 100); i = i + 1 }",
            300,
            mode,
            Engine::Native,
        )
        .unwrap_err();
        assert!(err.contains("division by zero"), "{err}");
    }
}

#[test]
fn nested_loops_and_aborted_recordings() {
    let src = "
t = 0
j = 0
while j < N {
    k = 0
    while k < 20 { t = t + k; k = k + 1 }
    print(t)
    j = j + 1
}
";
    let expected: String = (1..=300).map(|j| format!("{}\n", 190 * j)).collect();
    for mode in Mode::ALL {
        let out = run(src, 300, mode, Engine::Native).unwrap();
        assert_eq!(out.output, expected);
        if mode != Mode::Interpreter {
            // The outer loop contains a loop and a print: its recordings are abandoned.
            assert!(out.stats.driver.aborts >= 1);
            assert_eq!(out.stats.traces.len(), 1);
        }
    }
}

#[test]
fn rust_references_agree_with_each_other() {
    for ex in EXAMPLES {
        for n in [0, 1, 7, ex.test_n] {
            assert_eq!((ex.native)(n), (ex.scalar)(n), "{} with N = {n}", ex.name);
        }
    }
}
