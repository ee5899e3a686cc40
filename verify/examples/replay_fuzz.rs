use verify::fuzzing::*;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let fam = std::env::args().nth(2).unwrap_or("all".into());
    let bytes = std::fs::read(&path).unwrap();
    let family = match fam.as_str() {
        "int" => Family::Integers,
        "self" => Family::SelfContained,
        _ => Family::All,
    };
    let (cfg, seed) = trace_params(&bytes, family);
    let (t, inputs) = trace_interp::random::random_trace(&cfg, seed);
    let opts = optimizer_options(&bytes);
    let check = match std::env::args().nth(3).as_deref() {
        Some("native") => Check::NativeDiff,
        Some("validate") => Check::Validate,
        _ => Check::OptimizeDiff,
    };
    println!(
        "peel={} failure: {:?}",
        opts.peel,
        trace_failure(check, &t, &inputs, &opts)
    );
    let small = minimize(check, &t, &inputs, &opts);
    println!("inputs {:?}", inputs);
    println!("{}", trace_ir::print_trace(&small));
    println!("failure: {:?}", trace_failure(check, &small, &inputs, &opts));
    let out = optimizer::optimize(&small, &opts).unwrap();
    println!("optimized:\n{}", trace_ir::print_trace(&out.trace));
}
