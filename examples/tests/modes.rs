//! Every example program prints the same in all three modes, and the same as its Rust version.

use examples::lang::vm::{run_source, Config, Engine, Mode};
use examples::programs::EXAMPLES;

fn run(src: &str, n: i64, mode: Mode, engine: Engine) -> Result<examples::lang::vm::RunOutput, String> {
    let mut cfg = Config::new(mode, engine);
    cfg.log = Default::default();
    run_source(src, &[("N", n)], cfg)
}

#[test]
fn all_examples_agree_in_all_modes_trace_runner() {
    for ex in EXAMPLES {
        let expected = (ex.native)(ex.test_n);
        for mode in Mode::ALL {
            let out = run(ex.source, ex.test_n, mode, Engine::TraceRunner)
                .unwrap_or_else(|e| panic!("{} in {}: {e}", ex.name, mode.name()));
            assert_eq!(out.output, expected, "{} in {}", ex.name, mode.name());
            if mode != Mode::Interpreter {
                assert!(!out.stats.traces.is_empty(), "{} in {}: no trace compiled", ex.name, mode.name());
            }
        }
    }
}
