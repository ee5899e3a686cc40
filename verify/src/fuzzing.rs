//! Fuzzing checks (STYLE #13): every fuzz target in `fuzz/fuzz_targets/` is a five-line
//! call of one `check_*` function here, the same checks run as `#[test]`s on a bounded
//! number of cases (`verify/tests/validate_fuzz.rs`), and `tracejit fuzz` runs them without
//! libFuzzer.
//!
//! | check | oracle |
//! |---|---|
//! | [`check_parse`] | arbitrary text never panics the parser; a parsed file prints and re-parses to equivalent traces |
//! | [`check_optimize_diff`] | the reference interpreter gives equivalent outcomes before and after `optimize` (example inputs and random ones) |
//! | [`check_native_diff`] | the native code of the original and of the optimized trace exits like the interpreter (integer traces, or traces that touch only memory they allocate: byte and word views, floats, hints; with and without loops) |
//! | [`check_validate`] | translation validation of the optimized trace is not `Invalid` |
//! | [`check_ifconv_diff`] | a random loop with a short bridge back to its body (`trace_interp::random::random_diamond`) merges (`optimizer::ifconv`), and the merged loop runs like the tree in the interpreter, and natively like the interpreter |
//! | [`check_tree_diff`] | a random trace tree (a loop, bridges out of its guards, out of a bridge, jumping back into the loop; on the loop as generated or optimized) and its form with optimized bridges: equivalent outcomes in the interpreter (`run_tree`), and native code with the bridges attached exits like it |
//!
//! A random trace is derived from the fuzz bytes: the first bytes choose the generator's
//! knobs (length, loops, weights) and the optimizer's options (loop peeling for loops), a
//! hash of all bytes is the generator's seed. Panics inside
//! a check are caught and reported as failures, so `tracejit fuzz` can go on and minimize.
//!
//! [`minimize`] shrinks a failing trace by deleting ops (one at a time, last first) while
//! the trace stays well-formed and the failure persists.

use std::panic::{catch_unwind, AssertUnwindSafe};

use backend_x86_64::{compile, CompileOptions, Exit, ExitValue, SimpleHeap};
pub use trace_interp::random::random_inputs;
use trace_interp::random::{random_trace, RandomConfig};
use trace_interp::rng::{hash_words, Rng};
use trace_interp::{run, runs_equivalent, ClassPolicy, Outcome, RtValue, RunConfig};
use trace_ir::{FailArg, Trace, Value, ValueData, VirtualField};

use crate::validate::{validate, Config, Verdict};

mod trees;
pub use trees::{bytes_tree, check_tree_diff, seed_tree, tree_failure, FuzzTree};

/// Which check.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Interpreter before vs after optimization.
    OptimizeDiff,
    /// Interpreter vs native code, unoptimized and optimized.
    NativeDiff,
    /// Z3 translation validation.
    Validate,
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

/// Run `f`, turning a panic into an error.
fn guarded(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => Err(format!("panic: {}", panic_message(e))),
    }
}

/// The optimizer options the fuzz bytes stand for: loops are peeled when the second byte's
/// second bit is set (its first bit chooses loops, see [`trace_params`]).
pub fn optimizer_options(bytes: &[u8]) -> optimizer::Options {
    let b1 = bytes.get(1).copied().unwrap_or(0);
    optimizer::Options {
        peel: b1 & 3 == 3,
        ..optimizer::Options::default()
    }
}

/// Which random traces a check takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Family {
    /// Every kind of op ([`RandomConfig::default`]).
    All,
    /// Integer traces ([`RandomConfig::integers_only`]).
    Integers,
    /// Traces that touch only memory they allocate ([`RandomConfig::self_contained`]).
    SelfContained,
}

/// The generator configuration and seed the fuzz bytes stand for.
pub fn trace_params(bytes: &[u8], family: Family) -> (RandomConfig, u64) {
    let b = |i: usize| bytes.get(i).copied().unwrap_or(0) as u32;
    let integers_only = family == Family::Integers;
    let base = match family {
        Family::All => RandomConfig::default(),
        Family::Integers => RandomConfig::integers_only(),
        Family::SelfContained => RandomConfig::self_contained(),
    };
    let mut cfg = RandomConfig {
        length: 5 + (b(0) % 40) as usize,
        loops: b(1) & 1 == 1,
        ..base
    };
    if bytes.len() > 4 {
        cfg.int_ops = 1 + b(2) % 12;
        cfg.ovf_ops = b(3) % 6;
        cfg.guards = 1 + b(4) % 8;
    }
    if !integers_only && bytes.len() > 7 {
        cfg.heap = b(5) % 8;
        cfg.calls = if family == Family::All { b(6) % 4 } else { 0 };
        cfg.floats = b(7) % 4;
    }
    if !integers_only && bytes.len() > 8 {
        cfg.views = b(8) % 6;
    }
    // Virtual references in a fifth of the traces, chosen by a residue of a byte of its own,
    // so that inputs found before such traces existed (the test `fuzz_findings_stay_fixed`)
    // stay the traces they were found as.
    cfg.frames = if !integers_only && bytes.len() > 9 && b(9) % 5 == 1 {
        3
    } else {
        0
    };
    // Byte-offset accesses likewise, by a residue of another byte.
    cfg.gc_bytes = if !integers_only && bytes.len() > 10 && b(10) % 7 == 1 {
        3
    } else {
        0
    };
    // Loops that pass new objects to their next iteration likewise.
    cfg.loop_objects = !integers_only && bytes.len() > 13 && b(13) % 6 == 1;
    // String ops likewise.
    cfg.strings = if !integers_only && bytes.len() > 14 && b(14) % 6 == 1 {
        4
    } else {
        0
    };
    // Promises of what a field holds likewise.
    cfg.field_hints = if !integers_only && bytes.len() > 15 && b(15) % 7 == 2 {
        3
    } else {
        0
    };
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| c.iter().fold(0u64, |a, &x| (a << 8) | x as u64))
        .collect();
    (cfg, hash_words(&words) ^ bytes.len() as u64)
}

/// `parse` target: arbitrary text never panics the parser, and whatever parses prints and
/// parses back to equivalent traces.
pub fn check_parse(bytes: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(bytes);
    guarded(|| {
        let Ok(traces) = trace_ir::parse_file(&text) else {
            return Ok(());
        };
        for t in &traces {
            let printed = trace_ir::print_trace(t);
            let back =
                trace_ir::parse_trace(&printed).map_err(|e| format!("printed trace does not parse: {e}\n{printed}"))?;
            trace_ir::traces_equivalent(t, &back)
                .map_err(|e| format!("print/parse round trip differs: {e}\n{printed}"))?;
        }
        Ok(())
    })
}

/// The failure of `check` on `trace` (with its example `inputs`) optimized with `options`, if
/// any. This is what [`minimize`] keeps failing.
pub fn trace_failure(check: Check, trace: &Trace, inputs: &[RtValue], options: &optimizer::Options) -> Option<String> {
    guarded(|| {
        let out = optimizer::optimize(trace, options).map_err(|e| format!("optimizer error: {e}"))?;
        trace_ir::verify(&out.trace).map_err(|e| format!("the optimized trace fails the verifier: {e}"))?;
        match check {
            Check::OptimizeDiff => {
                let mut rng = Rng::new(hash_words(&[trace.ops.len() as u64, 0xf022]));
                let mut sets = vec![inputs.to_vec()];
                sets.push(random_inputs(&mut rng, trace));
                sets.push(random_inputs(&mut rng, trace));
                // The last set with classes derived from addresses: class checks of inputs
                // fail, and fused guards exit early.
                let policies = [
                    ClassPolicy::FirstCheckDecides,
                    ClassPolicy::FirstCheckDecides,
                    ClassPolicy::FromAddress,
                ];
                for (set, class_policy) in sets.into_iter().zip(policies) {
                    let cfg = RunConfig {
                        class_policy,
                        ..RunConfig::default()
                    };
                    let a = run(trace, &set, &cfg);
                    let b = run(&out.trace, &set, &cfg);
                    // An original that reaches an invalid operation has no defined outcome
                    // (and the optimizer may state at a guard what a broken promise said).
                    if matches!(a.outcome, Outcome::Invalid { .. }) {
                        continue;
                    }
                    exit_facts_hold(&out, &b.outcome)?;
                    runs_equivalent(trace, &out.trace, &set, &cfg, &a, &b)
                        .map_err(|e| format!("interpreter before/after optimization: {e}"))?;
                }
                Ok(())
            }
            Check::NativeDiff => {
                native_matches(trace, inputs).map_err(|e| format!("unoptimized: {e}"))?;
                native_matches(&out.trace, inputs).map_err(|e| format!("optimized: {e}"))
            }
            Check::Validate => match validate(
                trace,
                &out.trace,
                &Config {
                    timeout_ms: 1000,
                    ..Config::for_optimized(&out)
                },
            ) {
                Verdict::Invalid { counterexample } => Err(format!("translation validation: {counterexample}")),
                _ => Ok(()),
            },
        }
    })
    .err()
}

/// The facts the optimizer stated at the guard a run of its output left through
/// ([`optimizer::Optimized::guard_facts`]) hold for the exit's fail arguments: integer
/// ranges and known bits, non-null references. (Classes and the fields of virtual objects,
/// which a run's exit values do not show, are checked by the tree check: a bridge states
/// them as promises.)
fn exit_facts_hold(out: &optimizer::Optimized, outcome: &Outcome) -> Result<(), String> {
    let Outcome::GuardFailed { guard, values, .. } = outcome else {
        return Ok(());
    };
    let gd = out.trace.guards.iter().find(|g| g.id == *guard);
    let facts = out.guard_facts.iter().find(|f| f.guard == *guard);
    let (Some(gd), Some(facts)) = (gd, facts) else {
        return Err(format!("{guard} of the optimized trace has no exit facts"));
    };
    let words = gd
        .fail_args
        .iter()
        .zip(values)
        .filter(|(fa, _)| matches!(fa, FailArg::Value(_)));
    for (k, ((_, v), f)) in words.zip(&facts.words).enumerate() {
        let x = v.bits() as i64;
        let holds = f.range.is_none_or(|(lo, hi)| (lo..=hi).contains(&x))
            && f.bits.is_none_or(|(mask, bits)| x as u64 & mask == bits)
            && (!f.nonnull || x != 0);
        if !holds {
            return Err(format!(
                "exit of {guard}: exit word {k} is {v:?}, against what the optimizer stated: {f:?}"
            ));
        }
    }
    Ok(())
}

/// Native code exits like the interpreter: integers and floats compared as bits, references
/// by whether they are null (the addresses of objects the run allocated differ by
/// construction). A run of the interpreter without a defined outcome is not compared, and
/// one that breaks a promise is not run natively.
pub fn native_matches(trace: &Trace, inputs: &[RtValue]) -> Result<(), String> {
    let want = run(trace, inputs, &RunConfig::default());
    // A broken promise is undefined behaviour for native code (Direct mode does not check
    // promises: a forged reference may point anywhere), so such a run is not made at all.
    if matches!(want.outcome, Outcome::Invalid { promise: true, .. }) {
        return Ok(());
    }
    let compiled = match compile(
        trace,
        &CompileOptions {
            log_asm: false,
            perf_map: false,
            ..CompileOptions::default()
        },
    ) {
        Ok(c) => c,
        // An op the backend does not support is not a miscompilation.
        Err(_) => return Ok(()),
    };
    let bits: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
    let mut heap = SimpleHeap::new();
    // SAFETY: random traces in Direct mode take integer and float inputs and touch only
    // objects they allocate (from `heap`); the backend checks null and bounds.
    let got = unsafe { compiled.run(&bits, &mut heap) }.map_err(|e| format!("run error: {e:?}"))?;
    native_agrees(&want.outcome, &got)
}

/// A native exit agrees with the interpreter's outcome: integers and floats as bits,
/// references by whether they are null; an interpreter run without a defined outcome
/// agrees with anything.
fn native_agrees(want: &Outcome, got: &Exit) -> Result<(), String> {
    let same = |a: &[RtValue], n: &[ExitValue]| {
        a.len() == n.len()
            && a.iter().zip(n).all(|(x, y)| match x {
                RtValue::Ref(r) => (*r == 0) == (y.bits() == 0),
                other => other.bits() == y.bits(),
            })
    };
    match (want, got) {
        (Outcome::Finish(a), Exit::Finish { values }) if same(a, values) => Ok(()),
        (Outcome::GuardFailed { guard, values: a, .. }, Exit::Guard { guard: g, values, .. })
            if guard == g && same(a, values) =>
        {
            Ok(())
        }
        (Outcome::Invalid { .. }, _) | (Outcome::IterationLimit, _) => Ok(()),
        (w, g) => Err(format!("interpreter {w:?}, native {g:?}")),
    }
}

fn bytes_trace(bytes: &[u8], family: Family) -> (Trace, Vec<RtValue>) {
    let (cfg, seed) = trace_params(bytes, family);
    random_trace(&cfg, seed)
}

/// `optimize_diff` target.
pub fn check_optimize_diff(bytes: &[u8]) -> Result<(), String> {
    let (t, inputs) = guarded_trace(bytes, Family::All)?;
    trace_failure(Check::OptimizeDiff, &t, &inputs, &optimizer_options(bytes)).map_or(Ok(()), Err)
}

/// `native_diff` target: integer traces, or (the second byte's third bit) traces that touch
/// only memory they allocate; with and without loops.
pub fn check_native_diff(bytes: &[u8]) -> Result<(), String> {
    let family = if bytes.get(1).is_some_and(|b| b & 4 != 0) {
        Family::SelfContained
    } else {
        Family::Integers
    };
    let (t, inputs) = guarded_trace(bytes, family)?;
    trace_failure(Check::NativeDiff, &t, &inputs, &optimizer_options(bytes)).map_or(Ok(()), Err)
}

/// `validate` target.
pub fn check_validate(bytes: &[u8]) -> Result<(), String> {
    let (t, inputs) = guarded_trace(bytes, Family::All)?;
    trace_failure(Check::Validate, &t, &inputs, &optimizer_options(bytes)).map_or(Ok(()), Err)
}

/// Fuzz check: the random loop with a bridge of `bytes` (a hash of them is the seed of
/// `trace_interp::random::random_diamond`) is merged by `optimizer::ifconv::merge_bridge`,
/// the interpreter runs the merged loop to the outcome it runs the tree to (the same finish,
/// or the same guard with the same exit words), and native code of the merged loop exits
/// like the interpreter.
pub fn check_ifconv_diff(bytes: &[u8]) -> Result<(), String> {
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| c.iter().fold(0u64, |a, &x| (a << 8) | x as u64))
        .collect();
    ifconv_failure(hash_words(&words) ^ bytes.len() as u64).map_or(Ok(()), Err)
}

/// What [`check_ifconv_diff`] finds wrong with the loop of `seed`, if anything.
pub fn ifconv_failure(seed: u64) -> Option<String> {
    let (tree, inputs) = trace_interp::random::random_diamond(seed);
    let shown = || trace_ir::print_tree(&tree);
    guarded(|| {
        trace_ir::verify_tree(&tree).map_err(|e| format!("generator: {e}\n{}", shown()))?;
        let b = &tree.bridges[0];
        let merged = optimizer::ifconv::merge_bridge(&tree.root, b.guard, &b.trace)
            .ok_or_else(|| format!("not merged:\n{}", shown()))?;
        let want = trace_interp::run_tree(&tree, &inputs, &RunConfig::default()).outcome;
        let got = run(&merged, &inputs, &RunConfig::default()).outcome;
        if got != want {
            return Err(format!(
                "tree {want:?}, merged {got:?}\ntree:\n{}\nmerged:\n{}",
                shown(),
                trace_ir::print_trace(&merged)
            ));
        }
        native_matches(&merged, &inputs).map_err(|e| format!("{e}\nmerged:\n{}", trace_ir::print_trace(&merged)))
    })
    .err()
}

fn guarded_trace(bytes: &[u8], family: Family) -> Result<(Trace, Vec<RtValue>), String> {
    catch_unwind(|| bytes_trace(bytes, family)).map_err(|e| format!("generator panic: {}", panic_message(e)))
}

/// Delete op `k` (not an input) from `t`, renumbering later ops; `None` if something uses it.
fn remove_op(t: &Trace, k: usize) -> Option<Trace> {
    let uses = |v: &Value| v.as_op().is_some_and(|o| o.index() == k);
    for op in &t.ops {
        if op.args.iter().any(uses) {
            return None;
        }
    }
    for g in &t.guards {
        let fa_uses = |f: &FailArg| matches!(f, FailArg::Value(v) if uses(v));
        if g.fail_args.iter().any(fa_uses) || g.virtuals.iter().any(|vo| vo.fields.iter().any(|(_, f)| fa_uses(f))) {
            return None;
        }
    }
    let map = |v: Value| match v.data() {
        ValueData::Op(o) if o.index() > k => Value::op(trace_ir::OpRef::new(o.index() - 1)),
        _ => v,
    };
    let map_fa = |f: &FailArg| match f {
        FailArg::Value(v) => FailArg::Value(map(*v)),
        other => *other,
    };
    let mut out = t.clone();
    out.ops.remove(k);
    for op in &mut out.ops {
        for a in op.args.iter_mut() {
            *a = map(*a);
        }
    }
    for g in &mut out.guards {
        g.fail_args = g.fail_args.iter().map(map_fa).collect();
        for vo in &mut g.virtuals {
            vo.fields = vo
                .fields
                .iter()
                .map(|(f, a): &(VirtualField, FailArg)| (*f, map_fa(a)))
                .collect();
        }
    }
    trace_ir::verify(&out).ok()?;
    Some(out)
}

/// Shrink a failing trace: delete ops, last first, while the trace stays well-formed and
/// `check` still fails on it (with the same inputs and `options`); repeat until nothing can
/// be deleted.
pub fn minimize(check: Check, trace: &Trace, inputs: &[RtValue], options: &optimizer::Options) -> Trace {
    let mut cur = trace.clone();
    loop {
        let mut progress = false;
        let mut k = cur.ops.len();
        while k > cur.num_inputs {
            k -= 1;
            if k >= cur.ops.len() || cur.ops[k].opcode.is_input() || cur.ops[k].opcode.is_final() {
                continue;
            }
            if let Some(smaller) = remove_op(&cur, k) {
                if trace_failure(check, &smaller, inputs, options).is_some() {
                    cur = smaller;
                    progress = true;
                }
            }
        }
        if !progress {
            return cur;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_op_renumbers_and_refuses_used_ops() {
        let t = trace_ir::parse_trace("[i0]\ni1 = int_add(i0, 1)\ni2 = int_mul(i0, 3)\nfinish(i2)\n").unwrap();
        // i2 is used by finish: cannot go; i1 is unused: can.
        assert!(remove_op(&t, 2).is_none());
        let smaller = remove_op(&t, 1).unwrap();
        assert_eq!(smaller.ops.len(), 3);
        assert_eq!(trace_ir::print_trace(&smaller).matches("int_mul").count(), 1);
        assert!(!trace_ir::print_trace(&smaller).contains("int_add"));
    }
}
