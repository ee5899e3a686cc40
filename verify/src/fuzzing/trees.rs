//! The differential check of trace trees (`tree_diff`): a random loop with bridges
//! (`trace_interp::random::random_tree`, or bridges grown on the optimized loop), its
//! bridges optimized one by one, and every form run by the interpreter (`run_tree`) and as
//! native code with the bridges attached.

use super::{guarded, native_agrees, panic_message, trace_params, Family};
use crate::validate::{validate, Config, Verdict};
use backend_x86_64::{compile, CompileError, CompileOptions, Compiler, SimpleHeap};
use std::panic::catch_unwind;
use trace_interp::random::{grow_tree, random_tree};
use trace_interp::{outcomes_equivalent, run_tree, Outcome, RtValue, RunConfig, RunResult};
use trace_ir::tree::{verify_tree, Bridge, TraceTree};

/// The tree the fuzz bytes stand for: integer loops, or (the second byte's third bit) loops
/// that touch only memory they allocate; with bridges grown on the loop as generated, or
/// (the fourth bit) on the loop after `optimizer::optimize` (its guards carry virtual
/// objects).
pub fn bytes_tree(bytes: &[u8]) -> Result<(TraceTree, Vec<RtValue>), String> {
    let b1 = bytes.get(1).copied().unwrap_or(0);
    let family = if b1 & 4 != 0 {
        Family::SelfContained
    } else {
        Family::Integers
    };
    let (mut cfg, seed) = trace_params(bytes, family);
    cfg.loops = true;
    catch_unwind(|| {
        let (tree, inputs) = random_tree(&cfg, seed);
        if b1 & 8 == 0 {
            return (tree, inputs);
        }
        match optimizer::optimize(&tree.root, &optimizer::Options::default()) {
            Ok(opt) => (grow_tree(opt.trace, &inputs, seed), inputs),
            Err(_) => (tree, inputs),
        }
    })
    .map_err(|e| format!("generator panic: {}", panic_message(e)))
}

/// `tree_diff` target.
pub fn check_tree_diff(bytes: &[u8]) -> Result<(), String> {
    let (tree, inputs) = bytes_tree(bytes)?;
    tree_failure(&tree, &inputs, false).map_or(Ok(()), Err)
}

/// What is wrong with `tree` on `inputs`, if anything: the tree and its form with every
/// bridge optimized verify as trees; the interpreter runs both to equivalent outcomes;
/// native code with the bridges attached exits like the interpreter for both; and, with
/// `z3`, translation validation proves each optimized bridge equivalent to its recorded
/// form (every bridge enters its loop at the loop's header, which assumes nothing of the
/// values it is given, so the jump's operands are all there is to prove).
pub fn tree_failure(tree: &TraceTree, inputs: &[RtValue], z3: bool) -> Option<String> {
    guarded(|| {
        verify_tree(tree).map_err(|e| format!("the generated tree: {e}"))?;
        let mut optimized = TraceTree::new(tree.root.clone());
        for b in &tree.bridges {
            let out = optimizer::optimize(&b.trace, &optimizer::Options::default())
                .map_err(|e| format!("optimizer error on the bridge out of {}: {e}", b.guard))?;
            // A guard the optimizer removed from its bridge never fails: a bridge out of it
            // is never entered, and goes.
            if optimized.find_guard(b.guard).is_none() {
                continue;
            }
            if z3 {
                let cfg = Config {
                    timeout_ms: 1000,
                    ..Config::default()
                };
                if let Verdict::Invalid { counterexample } = validate(&b.trace, &out.trace, &cfg) {
                    return Err(format!(
                        "translation validation of the bridge out of {}: {counterexample}",
                        b.guard
                    ));
                }
            }
            optimized.bridges.push(Bridge {
                guard: b.guard,
                trace: out.trace,
            });
        }
        verify_tree(&optimized).map_err(|e| format!("the tree with optimized bridges: {e}"))?;
        let cfg = RunConfig::default();
        let want = run_tree(tree, inputs, &cfg);
        if !matches!(want.outcome, Outcome::Invalid { .. } | Outcome::IterationLimit) {
            let got = run_tree(&optimized, inputs, &cfg);
            outcomes_equivalent(&want, &got)
                .map_err(|e| format!("interpreter before/after optimizing the bridges: {e}"))?;
        }
        native_tree_matches(tree, inputs, &want).map_err(|e| format!("native tree: {e}"))?;
        let want_opt = run_tree(&optimized, inputs, &cfg);
        native_tree_matches(&optimized, inputs, &want_opt).map_err(|e| format!("native tree, optimized bridges: {e}"))
    })
    .err()
}

/// The tree compiled natively (its bridges attached in order) exits like the interpreter's
/// run `want`. A run without a defined outcome, or that hits the iteration limit (native
/// code has none), is not made natively; a bridge the backend refuses is not a
/// miscompilation.
fn native_tree_matches(tree: &TraceTree, inputs: &[RtValue], want: &RunResult) -> Result<(), String> {
    if matches!(
        want.outcome,
        Outcome::Invalid { promise: true, .. } | Outcome::IterationLimit
    ) {
        return Ok(());
    }
    let opts = CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    let Ok(mut code) = compile(&tree.root, &opts) else {
        return Ok(());
    };
    let mut compiler = Compiler::new();
    for b in &tree.bridges {
        match compiler.attach_bridge(&mut code, b.guard, &b.trace, &opts) {
            Ok(()) => {}
            Err(CompileError::Bridge(_)) | Err(CompileError::Unsupported { .. }) => return Ok(()),
            Err(e) => return Err(format!("attaching the bridge out of {}: {e}", b.guard)),
        }
    }
    let bits: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
    let got = code
        .run(&bits, &mut SimpleHeap::new())
        .map_err(|e| format!("run error: {e:?}"))?;
    native_agrees(&want.outcome, &got)
}
