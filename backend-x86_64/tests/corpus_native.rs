//! Every trace of the dev corpus (`shared/corpus/pypy-dev`, real PyPy JIT logs), as logged and
//! after `optimizer::optimize`, compiles in Hooks mode and runs natively against the
//! interpreter's heap and call model (`trace_interp::ModelHeap` as the runtime) with the
//! same outcome as the reference interpreter on random inputs: same exit, same values (objects
//! the run allocated compared by content), same heap-writing calls, same external memory and
//! exception state (`trace_interp::outcomes_equivalent`). The number of traces the backend
//! accepts is asserted. Each trace runs on four input vectors: one from the guided input
//! search, one with the `FromAddress` class policy, two plain.

use backend_x86_64::{compile, CompileError, CompileOptions, MemoryAccess};
use std::collections::BTreeMap;
use std::path::PathBuf;
use trace_interp::guided::guided_inputs;
use trace_interp::random::random_inputs;
use trace_interp::rng::Rng;
use trace_interp::{outcomes_equivalent, run, ClassPolicy, ModelHeap, Outcome, RunConfig};
use trace_ir::{parse_file, Trace};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev")
}

fn hooks() -> CompileOptions {
    CompileOptions {
        memory: MemoryAccess::Hooks,
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    }
}

#[derive(Default, Debug)]
struct Counts {
    traces: usize,
    accepted: usize,
    /// Traces Direct mode compiles too (it cannot run them: they name foreign memory).
    direct_accepted: usize,
    runs: usize,
    steps: u64,
    skipped_limit: usize,
    outcomes: [usize; 4],
    rejected: BTreeMap<String, usize>,
    direct_rejected: BTreeMap<String, usize>,
}

/// Compile `t` in Hooks mode and compare native runs with the interpreter on `rounds` random
/// input vectors. Returns an error describing the first difference.
fn check(t: &Trace, rng: &mut Rng, rounds: usize, c: &mut Counts) -> Result<(), String> {
    c.traces += 1;
    let direct = CompileOptions {
        memory: MemoryAccess::Direct,
        ..hooks()
    };
    match compile(t, &direct) {
        Ok(_) => c.direct_accepted += 1,
        Err(CompileError::Unsupported { opcode, .. }) => {
            *c.direct_rejected.entry(opcode.to_string()).or_default() += 1;
        }
        Err(e) => return Err(format!("compile (direct): {e}")),
    }
    let code = match compile(t, &hooks()) {
        Ok(code) => code,
        Err(CompileError::Unsupported { opcode, .. }) => {
            *c.rejected.entry(opcode.to_string()).or_default() += 1;
            return Ok(());
        }
        Err(e) => return Err(format!("compile: {e}")),
    };
    c.accepted += 1;
    let cfg = RunConfig {
        max_iterations: 200,
        ..RunConfig::default()
    };
    for round in 0..rounds {
        let mut inputs = random_inputs(rng, t);
        let mut cfg = cfg.clone();
        if round == 0 {
            // Inputs and initial external memory chosen so that guards hold: the run gets
            // further into the trace (loops, calls, stores) than on plain random inputs.
            (inputs, cfg) = guided_inputs(t, &inputs, &cfg, 40);
        }
        if round == 1 {
            // External objects' classes derived from their addresses (class guards fail).
            cfg.class_policy = ClassPolicy::FromAddress;
        }
        let want = run(t, &inputs, &cfg);
        if want.outcome == Outcome::IterationLimit {
            // Native loops have no iteration limit.
            c.skipped_limit += 1;
            continue;
        }
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let mut model = ModelHeap::new(t, &cfg);
        // SAFETY: compiled in Hooks mode: every access and call goes to the model.
        let exit = unsafe { code.run(&words, &mut model) }.map_err(|e| e.to_string())?;
        let got = model.into_result(trace_interp::native::exit_outcome(&exit));
        outcomes_equivalent(&want, &got).map_err(|e| {
            format!(
                "inputs {inputs:?}: {e}\n  interp: {}\n  native: {}",
                want.outcome, got.outcome
            )
        })?;
        c.runs += 1;
        c.steps += want.steps;
        c.outcomes[match want.outcome {
            Outcome::Finish(_) => 0,
            Outcome::GuardFailed { .. } => 1,
            Outcome::ExternalJump { .. } => 2,
            _ => 3,
        }] += 1;
    }
    Ok(())
}

#[test]
fn corpus_traces_run_natively_like_the_interpreter() {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pypylog"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "expected the four logs of pypy-dev");
    let (mut plain, mut opt) = (Counts::default(), Counts::default());
    let mut failures = Vec::new();
    let mut rng = Rng::new(5);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for t in parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display())) {
            if let Err(e) = check(&t, &mut rng, 4, &mut plain) {
                failures.push(format!("{} (as logged): {e}", t.info.name));
            }
            match optimizer::optimize(&t, &optimizer::Options::default()) {
                Ok(o) => {
                    if let Err(e) = check(&o.trace, &mut rng, 4, &mut opt) {
                        failures.push(format!("{} (optimized): {e}", t.info.name));
                    }
                }
                Err(e) => failures.push(format!("{}: optimizer: {e}", t.info.name)),
            }
        }
    }
    eprintln!("as logged: {plain:?}");
    eprintln!("optimized: {opt:?}");
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(plain.traces, 320, "noopt + opt traces in pypy-dev");
    assert_eq!(opt.traces, 320);
    // Every trace compiles in both modes (Direct mode hands `call_assembler_*`, string ops
    // and the type guards to the runtime too, but would dereference the trace's addresses).
    for c in [&plain, &opt] {
        assert_eq!(c.accepted, 320, "{c:?}");
        assert_eq!(c.direct_accepted, 320, "{c:?}");
        assert_eq!(c.runs, 4 * 320, "{c:?}");
    }
    // The guided round takes traces past their first guards.
    assert!(plain.outcomes[0] + plain.outcomes[2] > 250, "{plain:?}");
    assert!(plain.steps > 40_000, "{plain:?}");
}
