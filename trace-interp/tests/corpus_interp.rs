//! Every trace of the PyPy dev corpus (noopt and opt sections) runs in the interpreter on
//! several deterministic input sets without a panic.

use std::path::PathBuf;
use trace_interp::rng::Rng;
use trace_interp::{guided::guided_inputs, heap::external_address, run, ClassPolicy, Outcome, RtValue, RunConfig};
use trace_ir::{parse_file, Kind, Trace};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev")
}

fn inputs_for(t: &Trace, rng: &mut Rng) -> Vec<RtValue> {
    t.input_kinds()
        .into_iter()
        .map(|k| match k {
            Kind::Int => RtValue::Int(trace_interp::random::special_int(rng)),
            Kind::Float => RtValue::float(rng.range_i64(-1000, 1000) as f64 / 8.0),
            _ => RtValue::Ref(external_address(rng.next_u64())),
        })
        .collect()
}

#[test]
fn every_corpus_trace_runs_without_panicking() {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pypylog"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "expected the four logs of pypy-dev");
    let mut traces = 0;
    let mut counts = [0usize; 5]; // finish, guard, external jump, invalid, limit
    let mut rng = Rng::new(2024);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let ts = parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // One trace per `{jit-log-noopt` / `{jit-log-opt-*` section.
        let sections = text
            .lines()
            .filter(|l| l.contains("{jit-log-noopt") || l.contains("{jit-log-opt"))
            .count();
        assert_eq!(ts.len(), sections, "{}", f.display());
        for t in &ts {
            traces += 1;
            for round in 0..4 {
                let cfg = RunConfig {
                    max_iterations: 200,
                    class_policy: if round == 3 {
                        ClassPolicy::FromAddress
                    } else {
                        ClassPolicy::FirstCheckDecides
                    },
                    ..RunConfig::default()
                };
                let inputs = inputs_for(t, &mut rng);
                let r = run(t, &inputs, &cfg);
                let k = match r.outcome {
                    Outcome::Finish(_) => 0,
                    Outcome::GuardFailed { .. } => 1,
                    Outcome::ExternalJump { .. } => 2,
                    Outcome::Invalid { .. } => 3,
                    Outcome::IterationLimit => 4,
                };
                counts[k] += 1;
                if std::env::var_os("CORPUS_DEBUG").is_some() {
                    eprintln!("{}: {} (steps {})", t.info.name, r.outcome, r.steps);
                }
                // Deterministic.
                assert_eq!(run(t, &inputs, &cfg).outcome, r.outcome, "{}", t.info.name);
            }
        }
    }
    // The corpus README's table: 88 + 21 + 13 + 38 = 160 noopt sections, each with its opt
    // section, so 320 traces.
    assert_eq!(traces, 320, "noopt + opt traces in pypy-dev");
    eprintln!("outcomes (finish, guard, external jump, invalid, limit): {counts:?}");
    // Real traces mostly leave through guards on random inputs; some must get further.
    assert!(counts[1] > 0);
}

#[test]
fn guided_inputs_take_corpus_traces_further() {
    let dir = corpus_dir();
    let mut rng = Rng::new(7);
    let (mut plain_steps, mut guided_steps, mut traces, mut finished_or_left) = (0u64, 0u64, 0usize, 0usize);
    for name in ["fannkuch.pypylog", "float.pypylog", "richards.pypylog", "mmh3.pypylog"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for t in parse_file(&text).unwrap() {
            traces += 1;
            let cfg = RunConfig {
                max_iterations: 100,
                ..RunConfig::default()
            };
            let inputs = inputs_for(&t, &mut rng);
            let plain = run(&t, &inputs, &cfg);
            let (gi, gcfg) = guided_inputs(&t, &inputs, &cfg, 60);
            let guided = run(&t, &gi, &gcfg);
            assert!(
                guided.steps >= plain.steps,
                "{}: the search went backwards",
                t.info.name
            );
            plain_steps += plain.steps;
            guided_steps += guided.steps;
            if matches!(
                guided.outcome,
                Outcome::Finish(_) | Outcome::ExternalJump { .. } | Outcome::IterationLimit
            ) {
                finished_or_left += 1;
            }
        }
    }
    eprintln!("{traces} traces: {plain_steps} ops executed on random inputs, {guided_steps} on guided inputs; {finished_or_left} run to their end");
    assert!(
        guided_steps > 3 * plain_steps,
        "guided {guided_steps} vs plain {plain_steps}"
    );
}
