//! `tracejit fuzz --count N --seed S [--z3] [--native] [--trees] [--out DIR]`: the fuzz
//! checks of `verify::fuzzing` on N random traces, without libFuzzer.
//!
//! Every trace is checked with the interpreter before and after optimization; `--z3` adds
//! translation validation, `--native` the native-code differential (integer traces, and
//! traces that touch only memory they allocate), `--trees` the trace-tree differential
//! (`verify::fuzzing::tree_failure`: a random loop with bridges, its bridges optimized, in
//! the interpreter and natively, and with `--z3` each optimized bridge validated; and
//! `verify::fuzzing::ifconv_failure`: a random loop with a short bridge merged into it, run
//! against the tree; a failing tree is saved whole, in the tree text format). Every
//! other group of four traces is optimized with loop peeling (`optimizer::Options::peel`). A
//! failing trace is minimized (ops deleted while the failure persists) and saved under
//! `--out` (default `fuzz-failures/`) as `<check>-<seed>.trace`, with the failure as a
//! comment. The last line is exactly `N passed, N failed`.

use crate::common::{CliError, CliResult, Out};
use trace_interp::random::{random_trace, RandomConfig};
use trace_interp::rng::mix64;
use trace_interp::RtValue;
use verify::fuzzing::{ifconv_failure, minimize, seed_tree, trace_failure, tree_failure, Check};

/// Arguments of `tracejit fuzz`.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Number of random traces
    #[arg(long, value_name = "N", default_value_t = 100)]
    count: u64,
    /// Seed of the first trace (trace i uses a hash of seed + i)
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// Add translation validation with Z3
    #[arg(long)]
    z3: bool,
    /// Add the native-code differential
    #[arg(long)]
    native: bool,
    /// Add the trace-tree differentials (a random loop with bridges; a loop with a bridge
    /// merged into it)
    #[arg(long)]
    trees: bool,
    /// Directory for the minimized failing cases
    #[arg(long, value_name = "DIR", default_value = "fuzz-failures")]
    out: String,
}

/// `tracejit fuzz ...`.
pub fn fuzz(a: FuzzArgs) -> CliResult {
    let (count, seed) = (a.count, a.seed);
    let report = Out::with_progress(count, "fuzz");
    let out = a.out.clone();
    let mut checks = vec![Check::OptimizeDiff];
    if a.z3 {
        checks.push(Check::Validate);
    }
    if a.native {
        checks.push(Check::NativeDiff);
    }
    let (mut passed, mut failed) = (0u64, 0u64);
    for i in 0..count {
        let s = mix64(seed.wrapping_add(i));
        let mut ok = true;
        for &check in &checks {
            // Native code is compared on traces it can run on its own: integer traces, and
            // traces that touch only memory they allocate.
            let cfg = match (check == Check::NativeDiff, i % 2) {
                (true, 0) => RandomConfig {
                    loops: i % 4 < 2,
                    ..RandomConfig::self_contained()
                },
                (_, 1) => RandomConfig {
                    loops: i % 4 < 2,
                    ..RandomConfig::integers_only()
                },
                _ => RandomConfig::default(),
            };
            let (trace, inputs) = random_trace(&cfg, s);
            let options = optimizer::Options {
                peel: i % 8 >= 4,
                ..optimizer::Options::default()
            };
            if let Some(msg) = trace_failure(check, &trace, &inputs, &options) {
                ok = false;
                let small = minimize(check, &trace, &inputs, &options);
                let msg_small = trace_failure(check, &small, &inputs, &options).unwrap_or_else(|| msg.clone());
                let mut msg_file = msg_small.clone();
                if options.peel {
                    msg_file.insert_str(0, "optimized with loop peeling (`tracejit opt --peel`)\n");
                }
                let name = format!("{}-{s:016x}.trace", check_name(check));
                let path = save_failure(&out, &name, &msg_file, &inputs, &trace_ir::print_trace(&small))?;
                report.line(&format!(
                    "FAIL {} seed {s:#x}: {} ({} -> {} ops, saved {path})",
                    check_name(check),
                    msg_small.lines().next().unwrap_or(""),
                    trace.num_real_ops(),
                    small.num_real_ops()
                ));
            }
        }
        if a.trees && !check_tree(s, i, &out, a.z3, &report)? {
            ok = false;
        }
        if a.trees && !check_ifconv(s, &out, &report)? {
            ok = false;
        }
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
        report.bar().set_message(format!("{failed} failed"));
        report.bar().inc(1);
    }
    report.line(&format!("{passed} passed, {failed} failed"));
    report.finish()?;
    if failed > 0 {
        Err(CliError::Failed(format!("{failed} trace(s) failed")))
    } else {
        Ok(())
    }
}

fn check_name(c: Check) -> &'static str {
    match c {
        Check::OptimizeDiff => "optimize_diff",
        Check::NativeDiff => "native_diff",
        Check::Validate => "validate",
    }
}

/// The tree check on the tree of seed `s` (integer loops and self-contained ones in turn;
/// of every four pairs, one as generated, one grown on the optimized loop, two on the
/// optimized peeled loop); a failing tree is saved under `out`. Returns whether it passed.
fn check_tree(s: u64, i: u64, out: &str, z3: bool, report: &Out) -> Result<bool, CliError> {
    let cfg = match i % 2 {
        0 => RandomConfig::self_contained(),
        _ => RandomConfig::integers_only(),
    };
    let case = seed_tree(&cfg, s, i % 8 >= 2, i % 8 >= 4);
    let Some(msg) = tree_failure(&case, z3) else {
        return Ok(true);
    };
    let name = format!("tree_diff-{s:016x}.trace");
    let path = save_failure(out, &name, &msg, &case.inputs, &trace_ir::print_tree(&case.tree))?;
    report.line(&format!(
        "FAIL tree_diff seed {s:#x}: {} (saved {path})",
        msg.lines().next().unwrap_or("")
    ));
    Ok(false)
}

/// The if-conversion check (`verify::fuzzing::ifconv_failure`) on the loop with a bridge of
/// seed `s`; a failing tree is saved under `out`. Returns whether it passed.
fn check_ifconv(s: u64, out: &str, report: &Out) -> Result<bool, CliError> {
    let Some(msg) = ifconv_failure(s) else {
        return Ok(true);
    };
    let (tree, inputs) = trace_interp::random::random_diamond(s);
    let name = format!("ifconv_diff-{s:016x}.trace");
    let path = save_failure(out, &name, &msg, &inputs, &trace_ir::print_tree(&tree))?;
    report.line(&format!(
        "FAIL ifconv_diff seed {s:#x}: {} (saved {path})",
        msg.lines().next().unwrap_or("")
    ));
    Ok(false)
}

/// Save a failing case as `out/name`: the failure `msg` and the inputs as comments, then
/// `text` (a trace or a tree). Returns the path.
fn save_failure(out: &str, name: &str, msg: &str, inputs: &[RtValue], text: &str) -> Result<String, CliError> {
    std::fs::create_dir_all(out).map_err(|e| CliError::Failed(format!("{out}: {e}")))?;
    let path = format!("{out}/{name}");
    let mut file = String::new();
    for line in msg.lines() {
        file.push_str(&format!("# {line}\n"));
    }
    let words: Vec<i64> = inputs.iter().map(|v| v.bits() as i64).collect();
    file.push_str(&format!("# inputs: {words:?}\n{text}"));
    std::fs::write(&path, file).map_err(|e| CliError::Failed(format!("{path}: {e}")))?;
    Ok(path)
}
