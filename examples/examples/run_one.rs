//! Run one example program in one mode: `cargo run -p examples --example run_one -- NAME MODE N`.
use examples::lang::vm::{run_source, Config, Engine, Mode};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let ex = examples::programs::example(&a[1]).expect("name");
    let mode = match a[2].as_str() { "interp" => Mode::Interpreter, "noopt" => Mode::JitUnoptimized, _ => Mode::JitOptimized };
    let n: i64 = a[3].parse().unwrap();
    let engine = if a.get(4).map(|s| s.as_str()) == Some("native") { Engine::Native } else { Engine::TraceRunner };
    let t = std::time::Instant::now();
    match run_source(ex.source, &[("N", n)], Config::new(mode, engine)) {
        Ok(o) => println!("{}{:?}\n{:?}", o.output, o.stats, t.elapsed()),
        Err(e) => println!("error: {e}"),
    }
}
