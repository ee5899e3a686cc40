//! The real PyPy traces of `shared/corpus/pypy-dev`: every trace of every log parses and
//! verifies, the number of traces per section matches the corpus README, and printing then
//! parsing each one gives the same trace.

use std::path::PathBuf;
use trace_ir::text::{parse_file, parse_trace, print_trace, traces_equivalent};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev")
}

fn read(name: &str) -> String {
    let path = corpus_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// (file, noopt, opt loops, opt bridges), from the corpus README.
const EXPECTED: &[(&str, usize, usize, usize)] = &[
    ("richards.pypylog", 88, 14, 74),
    ("fannkuch.pypylog", 21, 7, 14),
    ("float.pypylog", 13, 8, 5),
    ("mmh3.pypylog", 38, 13, 25),
];

#[test]
fn every_corpus_trace_parses_and_verifies() {
    for &(file, noopt, loops, bridges) in EXPECTED {
        let traces = parse_file(&read(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let count = |s: &str| traces.iter().filter(|t| t.info.section.as_deref() == Some(s)).count();
        assert_eq!(
            (
                count("jit-log-noopt"),
                count("jit-log-opt-loop"),
                count("jit-log-opt-bridge")
            ),
            (noopt, loops, bridges),
            "{file}: traces per section"
        );
        assert_eq!(traces.len(), noopt + loops + bridges);
        for t in &traces {
            trace_ir::verify(t).unwrap_or_else(|e| panic!("{file} {}: {e}", t.info.name));
            assert!(t.num_real_ops() > 0, "{file} {}", t.info.name);
        }
    }
}

#[test]
fn every_corpus_trace_round_trips() {
    for &(file, ..) in EXPECTED {
        for t in parse_file(&read(file)).unwrap() {
            let text = print_trace(&t);
            let back = parse_trace(&text).unwrap_or_else(|e| panic!("{file} {}: {e}\n{text}", t.info.name));
            traces_equivalent(&t, &back).unwrap_or_else(|e| panic!("{file} {}: {e}", t.info.name));
            assert_eq!(print_trace(&back), text, "{file} {}", t.info.name);
        }
    }
}

#[test]
fn names_and_headers_come_from_the_log() {
    let traces = parse_file(&read("fannkuch.pypylog")).unwrap();
    let first = &traces[0];
    assert_eq!(first.info.section.as_deref(), Some("jit-log-noopt"));
    assert_eq!(first.info.name, "noopt #1 (line 1)");
    assert_eq!(first.info.header.as_deref(), Some("Traced loop or bridge with 53 ops"));
    assert_eq!(first.num_inputs, 12);
    let second = &traces[1];
    assert_eq!(second.info.section.as_deref(), Some("jit-log-opt-loop"));
    assert_eq!(second.info.name, "Loop 1 (line 58)");
    let bridge = traces
        .iter()
        .find(|t| t.info.section.as_deref() == Some("jit-log-opt-bridge"))
        .unwrap();
    assert_eq!(bridge.info.name, "bridge out of Guard 0x7f316aa4e698 (line 439)");
}

/// The optimized bridges of each log are linked to the guards they leave from: every bridge
/// names its guard's address, the guard is in a loop or bridge logged before it, and each
/// loop with its bridges is a tree `verify_tree` accepts (inputs of the guards' kinds,
/// jumps that fit the labels they enter).
#[test]
fn logged_bridges_are_linked_to_their_guards() {
    for &(file, _, loops, bridges) in EXPECTED {
        let opt: Vec<_> = parse_file(&read(file))
            .unwrap()
            .into_iter()
            .filter(|t| t.info.section.as_deref() != Some("jit-log-noopt"))
            .collect();
        assert!(opt
            .iter()
            .skip(1)
            .all(|t| (trace_ir::text::bridge_origin(&t.info).is_some())
                == (t.info.section.as_deref() == Some("jit-log-opt-bridge"))));
        let trees = trace_ir::text::assemble_trees(opt);
        let linked: usize = trees.iter().map(|t| t.bridges.len()).sum();
        assert_eq!(
            (trees.len(), linked),
            (loops, bridges),
            "{file}: one tree per loop, every bridge in one"
        );
        for t in &trees {
            trace_ir::verify_tree(t).unwrap_or_else(|e| panic!("{file} {}: {e}", t.root.info.name));
        }
    }
}
