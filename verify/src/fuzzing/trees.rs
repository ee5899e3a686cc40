//! The differential check of trace trees (`tree_diff`): a random loop with bridges
//! (`trace_interp::random::random_tree`, or bridges grown on the optimized loop), its
//! bridges optimized one by one, and every form run by the interpreter (`run_tree`) and as
//! native code with the bridges attached.

use super::{guarded, native_agrees, panic_message, trace_params, Family};
use crate::validate::{validate, Config, Verdict};
use backend_x86_64::{compile, CompileError, CompileOptions, Compiler, MemoryAccess, SimpleHeap};
use std::panic::catch_unwind;
use trace_interp::random::{grow_tree, random_tree, RandomConfig};
use trace_interp::{
    outcomes_equivalent, outcomes_equivalent_by_resume_key, run_tree, Outcome, RtValue, RunConfig, RunResult,
};
use trace_ir::tree::{verify_tree, Bridge, TraceTree};
use trace_ir::Trace;

/// A random tree to check: the tree, its inputs, and what a bridge may assume.
#[derive(Clone, Debug)]
pub struct FuzzTree {
    /// The tree (bridges as recorded).
    pub tree: TraceTree,
    /// The root's inputs.
    pub inputs: Vec<RtValue>,
    /// The peeled loop bodies bridges may enter ([`optimizer::Optimized::body_entries`] of
    /// the root).
    pub entries: Vec<trace_ir::BodyEntry>,
    /// The same tree without the hints that state the optimizer's facts at the root's
    /// guards, when the bridges have them.
    pub unhinted: Option<TraceTree>,
}

/// The tree of `(cfg, seed)` (`cfg.loops` forced on): `random_tree`'s, or with `optimize`
/// its bridges grown again on the optimized loop (peeled with `peel`), their bridges
/// starting from the facts the optimizer knew at the guards.
pub fn seed_tree(cfg: &RandomConfig, seed: u64, optimize: bool, peel: bool) -> FuzzTree {
    let cfg = RandomConfig {
        loops: true,
        ..cfg.clone()
    };
    let (tree, inputs) = random_tree(&cfg, seed);
    let plain = FuzzTree {
        tree,
        inputs,
        entries: Vec::new(),
        unhinted: None,
    };
    if !optimize {
        return plain;
    }
    let opts = optimizer::Options {
        peel,
        ..optimizer::Options::default()
    };
    match optimizer::optimize(&plain.tree.root, &opts) {
        Ok(opt) => FuzzTree {
            tree: grow_tree(opt.trace.clone(), &plain.inputs, seed, &opt.guard_facts),
            unhinted: Some(grow_tree(opt.trace, &plain.inputs, seed, &[])),
            entries: opt.body_entries,
            inputs: plain.inputs,
        },
        Err(_) => plain,
    }
}

/// The tree the fuzz bytes stand for: integer loops, or (the second byte's third bit) loops
/// that touch only memory they allocate; with bridges grown on the loop as generated, or
/// (the fourth bit) on the loop after `optimizer::optimize` (its guards carry virtual
/// objects), peeled when the fifth bit is set too.
pub fn bytes_tree(bytes: &[u8]) -> Result<FuzzTree, String> {
    let b1 = bytes.get(1).copied().unwrap_or(0);
    let family = if b1 & 4 != 0 {
        Family::SelfContained
    } else {
        Family::Integers
    };
    let (cfg, seed) = trace_params(bytes, family);
    catch_unwind(|| seed_tree(&cfg, seed, b1 & 8 != 0, b1 & 16 != 0))
        .map_err(|e| format!("generator panic: {}", panic_message(e)))
}

/// `tree_diff` target.
pub fn check_tree_diff(bytes: &[u8]) -> Result<(), String> {
    let case = bytes_tree(bytes)?;
    tree_failure(&case, false).map_or(Ok(()), Err)
}

/// What is wrong with `case`, if anything: the tree and its form with every bridge
/// optimized (`Optimizer::optimize_bridge` with the case's loop bodies) verify as trees;
/// the facts the optimizer stated at the root's guards hold whenever the bridges start
/// (the hinted tree breaks no promise the unhinted one keeps); the interpreter runs both
/// forms to equivalent outcomes; native code with the bridges attached exits like the
/// interpreter for both; and, with `z3`, translation validation proves each optimized
/// bridge equivalent to its recorded form, including what a loop body it jumps into
/// assumes of the jump's operands.
pub fn tree_failure(case: &FuzzTree, z3: bool) -> Option<String> {
    let (tree, inputs) = (&case.tree, &case.inputs[..]);
    guarded(|| {
        verify_tree(tree).map_err(|e| format!("the generated tree: {e}"))?;
        facts_hold(case)?;
        let mut optimized = TraceTree::new(tree.root.clone());
        let mut opt = optimizer::Optimizer::new();
        // Random bridges are not recordings of an interpreter resuming at their guard: a
        // fused guard (`Options::guardfusion`) failing early would enter a bridge that does
        // not redo the skipped steps.
        let options = optimizer::Options {
            guardfusion: false,
            ..optimizer::Options::default()
        };
        for b in &tree.bridges {
            let out = opt
                .optimize_bridge(&b.trace, &options, &case.entries)
                .map_err(|e| format!("optimizer error on the bridge out of {}: {e}", b.guard))?;
            // A guard the optimizer removed from its bridge never fails: a bridge out of it
            // is never entered, and goes.
            if optimized.find_guard(b.guard).is_none() {
                continue;
            }
            if z3 {
                let cfg = Config {
                    timeout_ms: 1000,
                    body_entries: case.entries.clone(),
                    ..Config::for_optimized(&out)
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
            // A bridge that enters the peeled body meets the copies of the preamble's
            // guards, which share their resume keys (and are told apart by them).
            let same = if case.entries.is_empty() {
                outcomes_equivalent(&want, &got)
            } else {
                outcomes_equivalent_by_resume_key(&want, &got)
            };
            if let Err(e) = same {
                if !exits_at_unbridged_copy(tree, &want) && !exits_at_unbridged_copy(&optimized, &got) {
                    return Err(format!("interpreter before/after optimizing the bridges: {e}"));
                }
            }
        }
        native_tree_matches(tree, inputs, &want).map_err(|e| format!("native tree: {e}"))?;
        let want_opt = run_tree(&optimized, inputs, &cfg);
        native_tree_matches(&optimized, inputs, &want_opt).map_err(|e| format!("native tree, optimized bridges: {e}"))
    })
    .err()
}

/// Whether `got` left `tree` through a guard without a bridge whose resume key a guard with
/// a bridge shares (a peeled loop's guard and its copy). Entering the loop's body instead
/// of its header meets the body's copies of the preamble's guards (and the other way
/// round): in a running system such an exit resumes the interpreter where the bridge of
/// the twin starts (and the guard gets a bridge of its own when it is hot), so the two
/// runs are not compared past that exit.
fn exits_at_unbridged_copy(tree: &TraceTree, got: &RunResult) -> bool {
    let Outcome::GuardFailed { guard, resume_key, .. } = got.outcome else {
        return false;
    };
    let key_of = |g| {
        let (k, at) = tree.find_guard(g)?;
        tree.trace(k).guard_of(at).map(|gd| gd.resume_key)
    };
    tree.bridge_of(guard).is_none() && tree.bridges.iter().any(|b| key_of(b.guard) == Some(resume_key))
}

/// The facts stated at the start of the case's bridges hold: the hinted tree breaks no
/// promise the unhinted one keeps.
fn facts_hold(case: &FuzzTree) -> Result<(), String> {
    let Some(unhinted) = &case.unhinted else {
        return Ok(());
    };
    let cfg = RunConfig::default();
    let broken = |t: &TraceTree| match run_tree(t, &case.inputs, &cfg).outcome {
        Outcome::Invalid {
            promise: true, reason, ..
        } => Some(reason),
        _ => None,
    };
    match (broken(&case.tree), broken(unhinted)) {
        (Some(why), None) => Err(format!("a fact the optimizer stated at a guard does not hold: {why}")),
        _ => Ok(()),
    }
}

/// The tree compiled natively (its bridges attached in order), in Direct mode and (without
/// calls and exception ops) in Hooks mode through `SimpleHeap`'s runtime, exits like the
/// interpreter's run `want`. A run
/// without a defined outcome, or that hits the iteration limit (native code has none), is
/// not made natively; a bridge the backend refuses is not a miscompilation.
fn native_tree_matches(tree: &TraceTree, inputs: &[RtValue], want: &RunResult) -> Result<(), String> {
    if matches!(
        want.outcome,
        Outcome::Invalid { promise: true, .. } | Outcome::IterationLimit
    ) {
        return Ok(());
    }
    native_tree_run(tree, inputs, want, MemoryAccess::Direct).map_err(|e| format!("Direct mode: {e}"))?;
    // `exec_in_memory` serves no calls and no exception state.
    let served = |t: &Trace| {
        t.ops.iter().all(|op| {
            use trace_ir::Opcode::*;
            !op.opcode.is_call()
                && !matches!(
                    op.opcode,
                    SaveException | SaveExcClass | RestoreException | GuardException
                )
        })
    };
    if served(&tree.root) && tree.bridges.iter().all(|b| served(&b.trace)) {
        native_tree_run(tree, inputs, want, MemoryAccess::Hooks).map_err(|e| format!("Hooks mode: {e}"))?;
    }
    Ok(())
}

/// [`native_tree_matches`] in one memory mode.
fn native_tree_run(tree: &TraceTree, inputs: &[RtValue], want: &RunResult, memory: MemoryAccess) -> Result<(), String> {
    let opts = CompileOptions {
        memory,
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
    // SAFETY: random trees take integer and float inputs and touch only objects they
    // allocate; the backend (or in Hooks mode `exec_in_memory`) checks null and bounds.
    let got = unsafe { code.run(&bits, &mut SimpleHeap::new()) }.map_err(|e| format!("run error: {e:?}"))?;
    native_agrees(&want.outcome, &got)
}
