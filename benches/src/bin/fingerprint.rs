//! What the optimizer and the backend produce for a fixed set of inputs, written out so that
//! two builds (before and after a refactoring) can be compared with `diff`:
//!
//! - `optimizer.txt`: the optimized text of every trace of the pypy-dev corpus and of random
//!   traces (every kind of op, integer traces, traces touching only their own memory; fixed
//!   seeds), with default options and with loop peeling, and each run's statistics;
//! - `backend.txt`: the machine code of the backend's compile sets (random traces of about
//!   100 and 1,000 ops, as the compile benchmark uses) and of the optimized corpus traces
//!   (Hooks mode), disassembled from offset 0 with 64-bit immediates that are addresses
//!   (trampolines, descriptors kept by the compiled trace) masked, since those differ
//!   between builds and runs;
//! - `interp.txt`: the random traces themselves with their inputs, the reference
//!   interpreter's outcome of each before and after optimization, and for every corpus
//!   trace the guided inputs' outcome.
//!
//! `cargo run --release -p benches --bin fingerprint -- DIR` writes the files into `DIR` and
//! prints a hash of each.

use backend_x86_64::{compile, CompileOptions, MemoryAccess};
use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter, OpKind};
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::Trace;

/// Random traces per family.
const RANDOM: u64 = 1500;

fn corpus() -> Vec<Trace> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pypylog"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| trace_ir::parse_file(&std::fs::read_to_string(p).expect("readable")).expect("parses"))
        .collect()
}

fn random_set() -> Vec<Trace> {
    let families = [
        RandomConfig::default(),
        RandomConfig::integers_only(),
        RandomConfig::self_contained(),
    ];
    families
        .iter()
        .flat_map(|cfg| (0..RANDOM).map(move |s| random_trace(cfg, s).0))
        .collect()
}

fn optimizer_text(traces: &[Trace]) -> String {
    let mut out = String::new();
    for (k, t) in traces.iter().enumerate() {
        for peel in [false, true] {
            let opts = optimizer::Options {
                peel,
                ..optimizer::Options::default()
            };
            let _ = writeln!(out, "### trace {k} ({}) peel={peel}", t.info.name);
            match optimizer::optimize(t, &opts) {
                Ok(o) => {
                    out.push_str(&trace_ir::print_trace(&o.trace));
                    let _ = writeln!(out, "# {:?}", o.stats);
                }
                Err(e) => {
                    let _ = writeln!(out, "# error: {e}");
                }
            }
        }
    }
    out
}

/// The code of `t`, one instruction a line, addresses masked.
fn code_text(t: &Trace, memory: MemoryAccess) -> String {
    let opts = CompileOptions {
        memory,
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    let code = match compile(t, &opts) {
        Ok(c) => c,
        Err(e) => return format!("error: {e}\n"),
    };
    let mut out = String::new();
    let mut dec = Decoder::with_ip(64, code.code(), 0, DecoderOptions::NONE);
    let mut fmt = IntelFormatter::new();
    let mut text = String::new();
    while dec.can_decode() {
        let ins = dec.decode();
        if (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Immediate64 && ins.immediate64() >= 1 << 40) {
            let _ = writeln!(out, "{:6x}  {:?} <address>", ins.ip(), ins.code());
            continue;
        }
        text.clear();
        fmt.format(&ins, &mut text);
        let _ = writeln!(out, "{:6x}  {text}", ins.ip());
    }
    out
}

fn backend_text(corpus: &[Trace]) -> String {
    let mut out = String::new();
    for len in [100, 1000] {
        for (k, t) in benches::compile_set(len).iter().enumerate() {
            let _ = writeln!(out, "### compile set {len} #{k}");
            out.push_str(&code_text(t, MemoryAccess::Direct));
        }
    }
    for (k, t) in corpus.iter().enumerate() {
        let Ok(o) = optimizer::optimize(t, &optimizer::Options::default()) else {
            continue;
        };
        let _ = writeln!(out, "### corpus #{k} ({})", t.info.name);
        out.push_str(&code_text(&o.trace, MemoryAccess::Hooks));
    }
    out
}

fn interp_text(corpus: &[Trace]) -> String {
    use trace_interp::{guided::guided_inputs, run, RtValue, RunConfig};
    let mut out = String::new();
    let families = [
        RandomConfig::default(),
        RandomConfig::integers_only(),
        RandomConfig::self_contained(),
    ];
    for (f, cfg) in families.iter().enumerate() {
        for seed in 0..RANDOM {
            let (t, inputs) = random_trace(cfg, seed);
            let _ = writeln!(out, "### family {f} seed {seed}");
            out.push_str(&trace_ir::print_trace(&t));
            let _ = writeln!(out, "# inputs {inputs:?}");
            let r = run(&t, &inputs, &RunConfig::default());
            let _ = writeln!(out, "# outcome {:?} steps {}", r.outcome, r.steps);
            if let Ok(o) = optimizer::optimize(&t, &optimizer::Options::default()) {
                let r = run(&o.trace, &inputs, &RunConfig::default());
                let _ = writeln!(out, "# optimized {:?} steps {}", r.outcome, r.steps);
            }
        }
    }
    for (k, t) in corpus.iter().enumerate() {
        let zeros: Vec<RtValue> = t.input_kinds().into_iter().map(RtValue::zero).collect();
        let (inputs, cfg) = guided_inputs(t, &zeros, &RunConfig::default(), 20);
        let r = run(t, &inputs, &cfg);
        let _ = writeln!(
            out,
            "### corpus #{k}\n# inputs {inputs:?}\n# outcome {:?} steps {}",
            r.outcome, r.steps
        );
    }
    out
}

fn digest(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: fingerprint DIR");
        std::process::exit(2)
    });
    std::fs::create_dir_all(&dir).expect("output directory");
    let corpus = corpus();
    let mut traces = corpus.clone();
    traces.extend(random_set());
    let opt = optimizer_text(&traces);
    let back = backend_text(&corpus);
    let interp = interp_text(&corpus);
    for (name, text) in [("optimizer.txt", &opt), ("backend.txt", &back), ("interp.txt", &interp)] {
        let path = format!("{dir}/{name}");
        std::fs::write(&path, text).expect("writable");
        println!("{path}: {} lines, hash {:016x}", text.lines().count(), digest(text));
    }
}
