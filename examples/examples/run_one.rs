//! Run one example program in one mode and print its output and statistics:
//! `cargo run --release -p examples --example run_one -- NAME interp|noopt|opt N [native|runner]`
//! (combine with `TRACEJIT_LOG=opt,asm,stats,jit` to see the traces and the machine code).
use examples::lang::vm::{run_source, Config, Engine, Mode};
use examples::programs::{example, EXAMPLES};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        let names: Vec<&str> = EXAMPLES.iter().map(|e| e.name).collect();
        eprintln!(
            "usage: run_one NAME interp|noopt|opt N [native|runner]\nprograms: {}",
            names.join(", ")
        );
        std::process::exit(2)
    };
    let (Some(name), Some(mode), Some(n)) = (a.first(), a.get(1), a.get(2)) else {
        usage()
    };
    let Some(ex) = example(name) else { usage() };
    let mode = match mode.as_str() {
        "interp" => Mode::Interpreter,
        "noopt" => Mode::JitUnoptimized,
        "opt" => Mode::JitOptimized,
        _ => usage(),
    };
    let Ok(n) = n.parse::<i64>() else { usage() };
    let engine = match a.get(3).map(String::as_str) {
        None | Some("native") => Engine::Native,
        Some("runner") => Engine::TraceRunner,
        _ => usage(),
    };
    let t = std::time::Instant::now();
    match run_source(ex.source, &[("N", n)], Config::new(mode, engine)) {
        Ok(o) => {
            print!("{}", o.output);
            let s = &o.stats;
            println!(
                "{:?}: {} trace(s), {} entries, {} guard failures, {} retraces, {} aborted recordings, {} allocations",
                t.elapsed(),
                s.traces.len(),
                s.driver.entries,
                s.driver.exits,
                s.driver.retraces,
                s.driver.aborts,
                s.allocations
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
