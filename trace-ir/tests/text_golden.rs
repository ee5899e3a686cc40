//! Golden tests of the text format: each `tests/text_golden/*.trace` file holds an input
//! trace, a `#### expected` line, and the normalized text the printer must give for it.
//! Run with `BLESS=1` to rewrite the expectations (then review the diff).

use std::path::PathBuf;
use trace_ir::text::{parse_trace, print_trace, traces_equivalent};

const MARKER: &str = "#### expected\n";

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/text_golden")
}

#[test]
fn golden_files() {
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/text_golden exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "golden files missing: {files:?}");
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (input, expected) = text
            .split_once(MARKER)
            .unwrap_or_else(|| panic!("{}: no `{MARKER}` line", path.display()));
        let trace = parse_trace(input).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let printed = print_trace(&trace);
        if printed != expected {
            if bless {
                std::fs::write(path, format!("{input}{MARKER}{printed}")).unwrap();
            } else {
                failures.push(format!(
                    "{}:\n--- expected\n{expected}--- printed\n{printed}",
                    path.display()
                ));
            }
        }
        // The expectation is itself a fixed point and the same trace.
        let again = parse_trace(&printed).unwrap_or_else(|e| panic!("{}: reparse: {e}\n{printed}", path.display()));
        assert_eq!(print_trace(&again), printed, "{}", path.display());
        traces_equivalent(&trace, &again).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    assert!(
        failures.is_empty(),
        "{}\n(run with BLESS=1 to accept)",
        failures.join("\n")
    );
}
