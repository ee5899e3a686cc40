//! `tracejit run FILE --tree`: a trace tree (a loop and its bridges: the text format's
//! `# bridge out of Guard<N>` sections) compiled with its bridges attached, run natively and
//! compared with the reference interpreter's `run_tree`.

use crate::cmd_run::{agree, foreign, next_inputs, show_exit, RunArgs, Verdict};
use crate::common::{read_file, CliError, CliResult, Out};
use backend_x86_64::{compile, CompileOptions, Compiler, SimpleHeap};
use trace_interp::rng::Rng;
use trace_interp::{run_tree, Outcome, RunConfig};
use trace_ir::tree::{Bridge, TraceTree};

/// Run the tree in `file` on `count` input vectors (`--inputs`, or `--random` from `seed`)
/// in Direct mode; with `--opt` every bridge is optimized first (the interpreter runs the tree
/// as written, and a run where it hits an invalid operation is refined by whatever the
/// optimized tree does). Exit status 1 when a native run differs.
pub fn run_tree_file(a: &RunArgs, file: &str, count: usize, seed: u64) -> CliResult {
    let tree = trace_ir::parse_tree(&read_file(file)?).map_err(|e| CliError::Failed(format!("{file}: {e}")))?;
    for t in std::iter::once(&tree.root).chain(tree.bridges.iter().map(|b| &b.trace)) {
        if let Some(why) = foreign(t) {
            return Err(CliError::Failed(format!(
                "{file}: trees run natively in Direct mode only, on objects they allocate: {why}"
            )));
        }
    }
    let compiled = if a.opt { optimized_bridges(&tree)? } else { tree.clone() };
    let opts = CompileOptions::from_env();
    let mut code = compile(&compiled.root, &opts).map_err(|e| CliError::Failed(format!("{file}: {e}")))?;
    let mut compiler = Compiler::new();
    for b in &compiled.bridges {
        compiler
            .attach_bridge(&mut code, b.guard, &b.trace, &opts)
            .map_err(|e| CliError::Failed(format!("{file}: bridge out of {}: {e}", b.guard)))?;
    }
    let kinds = tree.root.input_kinds();
    let mut rng = Rng::new(seed);
    let mut failures = 0;
    let out = Out::plain();
    for k in 0..count {
        let inputs = next_inputs(a, &mut rng, &kinds, false, "the tree")?;
        let shown: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
        let int = run_tree(&tree, &inputs, &RunConfig::default()).outcome;
        let nth = if count > 1 { format!(" (#{k})") } else { String::new() };
        if int == Outcome::IterationLimit {
            out.line(&format!(
                "tree [{}]{nth}\n  interp: {int}\n  not run natively (native loops have no limit)",
                shown.join(", ")
            ));
            continue;
        }
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        // SAFETY: the tree names no memory or function outside what it allocates and takes
        // no references (`foreign`, checked above).
        let native = unsafe { code.run(&words, &mut SimpleHeap::new()) }
            .map_err(|e| CliError::Failed(format!("{file}: {e}")))?;
        let cmp = if agree(&native, &int) {
            Ok(())
        } else {
            Err("different exit".to_string())
        };
        let verdict = Verdict::of(cmp, &int, a.opt);
        failures += usize::from(matches!(verdict, Verdict::Different(_)));
        out.line(&format!(
            "tree [{}]{nth}\n  native: {}\n  interp: {int}\n  {verdict}",
            shown.join(", "),
            show_exit(&native),
        ));
    }
    out.finish()?;
    if failures > 0 {
        return Err(CliError::Failed(format!("{failures} run(s) differ")));
    }
    Ok(())
}

/// `tree` with every bridge optimized; a bridge out of a guard the optimizer removed (it
/// never fails) goes. Guards are not fused (`optimizer::Options::guardfusion`): the tree's
/// bridges need not redo what a guard failing early skips, and the runs are compared exit
/// for exit.
fn optimized_bridges(tree: &TraceTree) -> Result<TraceTree, CliError> {
    let mut out = TraceTree::new(tree.root.clone());
    let options = optimizer::Options {
        guardfusion: false,
        ..optimizer::Options::default()
    };
    for b in &tree.bridges {
        let opt = optimizer::optimize(&b.trace, &options)
            .map_err(|e| CliError::Failed(format!("bridge out of {}: optimizer: {e}", b.guard)))?;
        if out.find_guard(b.guard).is_some() {
            out.bridges.push(Bridge {
                guard: b.guard,
                trace: opt.trace,
            });
        }
    }
    Ok(out)
}
