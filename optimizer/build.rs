//! Build script of `optimizer`: compiles the peephole rules `rules/*.rules` (the rule
//! language of `rule-dsl`) into Rust matching code, `$OUT_DIR/generated_rules.rs`, which
//! `src/peephole.rs` includes. A rule file error fails the build with the rule file's line
//! and column: there is no fallback.

use std::path::{Path, PathBuf};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!("cargo:rerun-if-changed=rule-dsl/src/rt.rs");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "rules"))
            .collect(),
        Err(e) => fail(&format!("cannot read {}: {e}", dir.display())),
    };
    paths.sort();
    let mut files = Vec::new();
    for p in &paths {
        println!("cargo:rerun-if-changed={}", p.display());
        let src = std::fs::read_to_string(p).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", p.display())));
        files.push((
            format!(
                "optimizer/rules/{}",
                p.file_name().unwrap_or_default().to_string_lossy()
            ),
            src,
        ));
    }
    let rules = rule_dsl::load(&files).unwrap_or_else(|e| fail(&e.to_string()));
    let code = rule_dsl::codegen::generate(&rules);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_else(|| fail("OUT_DIR is not set")))
        .join("generated_rules.rs");
    if let Err(e) = std::fs::write(&out, code) {
        fail(&format!("cannot write {}: {e}", out.display()));
    }
}

/// Reports a rule error and fails the build.
fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    println!("cargo:warning={msg}");
    std::process::exit(1);
}
