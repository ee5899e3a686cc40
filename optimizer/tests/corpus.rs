//! Every trace of the dev corpus (`shared/corpus/pypy-dev`, real PyPy JIT logs) optimizes
//! without error, the output verifies, and it behaves like the input in the reference
//! interpreter on random inputs. Prints our op counts next to PyPy's own optimized version of
//! each trace (run with `--nocapture` to see the table).

mod common;
use common::{same_behaviour, Inputs};
use optimizer::{optimize, Options, Stats};
use std::path::PathBuf;
use trace_ir::{parse_file, Trace};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev")
}

fn is_noopt(t: &Trace) -> bool {
    t.info.section.as_deref() == Some("jit-log-noopt")
}

#[test]
fn corpus_traces_optimize_and_behave_the_same() {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().map(|x| x == "pypylog").unwrap_or(false))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "corpus files missing in {}", dir.display());
    let mut total = Stats::default();
    let (mut ours, mut pypy, mut noopt_ops, mut traces) = (0usize, 0usize, 0usize, 0usize);
    let (mut compared, mut skipped) = (0usize, 0usize);
    let mut inputs = Inputs::new(17);
    println!("{:<48} {:>7} {:>7} {:>7}", "trace", "noopt", "ours", "pypy");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let all = parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (k, t) in all.iter().enumerate() {
            if !is_noopt(t) {
                continue;
            }
            let out = optimize(t, &Options::default()).unwrap_or_else(|e| panic!("{}: {e}", t.info.name));
            trace_ir::verify(&out.trace).unwrap_or_else(|e| panic!("{}: {e}", t.info.name));
            let theirs = all[k + 1..]
                .iter()
                .take_while(|x| !is_noopt(x))
                .next()
                .map(|x| x.num_real_ops());
            traces += 1;
            noopt_ops += t.num_real_ops();
            ours += out.trace.num_real_ops();
            if let Some(p) = theirs {
                pypy += p;
            }
            total.merge(&out.stats);
            println!(
                "{:<48} {:>7} {:>7} {:>7}",
                t.info.name.chars().take(48).collect::<String>(),
                t.num_real_ops(),
                out.trace.num_real_ops(),
                theirs.map(|p| p.to_string()).unwrap_or_else(|| "-".into())
            );
            for _ in 0..3 {
                let inp = inputs.for_trace(t);
                match same_behaviour(t, &out.trace, &inp) {
                    Ok(true) => compared += 1,
                    Ok(false) => skipped += 1,
                    Err(e) => panic!("{}: {e}", t.info.name),
                }
            }
        }
    }
    println!(
        "{traces} traces: noopt {noopt_ops} ops, ours {ours}, PyPy {pypy}; runs compared {compared}, skipped {skipped}"
    );
    println!("{total}");
    assert!(traces >= 100, "only {traces} noopt traces found");
    // 46,599 -> about 24,000 when this was written: catch large regressions
    assert!(
        ours * 10 < noopt_ops * 6,
        "ours {ours} of {noopt_ops}: less than 40% removed"
    );
    assert!(skipped * 5 < compared, "too many runs where the original is invalid");
}
