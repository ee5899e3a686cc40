//! Helpers of the `tracejit` integration tests: running the binary, temporary files, the corpus.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_tracejit");

/// What a run of the binary gave.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run `tracejit` with `args`.
pub fn tracejit(args: &[&str]) -> Out {
    let out = Command::new(BIN).args(args).output().expect("run tracejit");
    Out {
        code: out
            .status
            .code()
            .unwrap_or_else(|| panic!("tracejit {args:?} killed by a signal")),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run and expect exit 0; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = tracejit(args);
    assert_eq!(o.code, 0, "tracejit {args:?} failed:\n{}\n{}", o.stdout, o.stderr);
    o.stdout
}

/// A fresh temporary directory for one test.
pub fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracejit-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write `bytes` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// A file of the dev corpus (`shared/corpus/pypy-dev`).
pub fn corpus(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/pypy-dev")
        .join(name);
    assert!(p.exists(), "corpus file missing: {}", p.display());
    p.to_str().unwrap().to_string()
}

/// The first `jit-log-noopt` section of a PyPy log and the section after it, as their own
/// log.
pub fn first_sections(log: &str, count: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.ends_with("{jit-log-noopt"))
        .expect("a noopt section");
    let mut end = start;
    for _ in 0..count {
        let open = end
            + lines[end..]
                .iter()
                .position(|l| l.contains("{jit-log"))
                .expect("a section");
        end = open
            + lines[open..]
                .iter()
                .position(|l| l.contains("jit-log") && l.ends_with('}'))
                .expect("closed");
        end += 1;
    }
    lines[start..end].join("\n") + "\n"
}

/// A loop summing 0..10 (with an `int_add(x, 0)` for the optimizer to remove).
pub const LOOP: &str = "# sum loop
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_lt(i0, 10)
guard_true(i2, descr=<Guard0>) [i0, i1]
i3 = int_add(i1, i0)
i4 = int_add(i0, 1)
i5 = int_add(i4, 0)
jump(i5, i3, descr=TargetToken(1))
";

/// A straight-line trace that finishes with a product.
pub const MUL: &str = "[i0, i1]\ni2 = int_mul(i0, i1)\nfinish(i2)\n";

/// A redundant mask the optimizer removes; mined as written it is a finding.
pub const AND_AND: &str = "[i0]\ni1 = int_and(i0, 15)\ni2 = int_and(i1, 255)\nfinish(i2)\n";

/// Parse JSON Lines: every line one JSON object with a string `type`.
pub fn json_lines(out: &str) -> Vec<serde_json::Value> {
    assert!(!out.is_empty(), "no output");
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            assert!(v["type"].is_string(), "no \"type\": {l}");
            v
        })
        .collect()
}

/// The `type` of each line.
pub fn types(lines: &[serde_json::Value]) -> Vec<&str> {
    lines.iter().map(|v| v["type"].as_str().unwrap()).collect()
}

/// The keys of a JSON object, sorted.
pub fn keys(v: &serde_json::Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().expect("an object").keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}
