//! Integration tests of the `tracejit` binary: every subcommand on small trace files written
//! to a temporary directory and on the dev corpus (`shared/corpus/pypy-dev`), checking exit
//! codes and the key lines of the output.

mod support;
use support::*;

/// A syntax error at line 2, column 18 (the operand list ends early).
const BAD: &str = "[i0]\ni1 = int_add(i0, \nfinish(i1)\n";

// --- parse and print -------------------------------------------------------------------

#[test]
fn parse_summarizes_each_trace() {
    let d = temp_dir("parse");
    let f = write(&d, "loop.txt", LOOP);
    let out = ok(&["parse", &f]);
    assert!(out.contains("sum loop"), "{out}");
    assert!(out.contains("inputs   2  ops     7  guards    1"), "{out}");
    assert!(out.contains("total: 1 traces, 7 ops, 1 guards (all verified)"), "{out}");
    let json = ok(&["parse", "--json", &f]);
    assert!(json.starts_with("{\"type\":\"trace\","), "{json}");
    assert!(
        json.contains("\"name\":\"sum loop\",\"section\":null,\"inputs\":2,\"ops\":7,\"guards\":1"),
        "{json}"
    );
}

#[test]
fn print_output_reparses_to_the_same_text() {
    let d = temp_dir("print");
    let f = write(&d, "loop.txt", LOOP);
    let once = ok(&["print", &f]);
    assert!(once.starts_with("# sum loop\n[i0, i1]\n"), "{once}");
    assert!(once.contains("guard_true(i5, descr=<Guard0>) [i0, i1]"), "{once}");
    let g = write(&d, "printed.txt", &once);
    assert_eq!(ok(&["print", &g]), once);
}

// --- interp, opt, run -------------------------------------------------------------------

#[test]
fn interp_runs_the_loop_to_its_exit_guard() {
    let d = temp_dir("interp");
    let f = write(&d, "loop.txt", LOOP);
    let out = ok(&["interp", &f, "--inputs", "0,0"]);
    // 0 + 1 + ... + 9 = 45 when i0 reaches 10.
    assert!(out.contains("[0, 0] => Guard0 failed (resume key 0) [10, 45]"), "{out}");
    assert!(out.contains("10 iterations"), "{out}");
    let json = ok(&["interp", &f, "--inputs", "7,1", "--json"]);
    assert!(json.contains("\"kind\":\"guard_failed\",\"guard\":0"), "{json}");
    assert!(json.contains("\"values\":[{\"int\":10},{\"int\":25}]"), "{json}");
}

#[test]
fn opt_removes_the_add_of_zero() {
    let d = temp_dir("opt");
    let f = write(&d, "loop.txt", LOOP);
    let out = ok(&["opt", &f]);
    assert!(out.contains("# sum loop: 7 ops -> 6 ops"), "{out}");
    assert!(!out.contains(", 0)"), "int_add(x, 0) survived:\n{out}");
    assert!(out.contains("# total: 1 traces, 7 ops -> 6 ops"), "{out}");
    let stats = ok(&["opt", "--stats", &f]);
    assert!(stats.contains("rule add_zero"), "{stats}");
    let json = ok(&["opt", "--json", &f]);
    assert!(json.contains("\"ops_in\":7,\"ops_out\":6"), "{json}");
    let none = ok(&["opt", "--no-rules", "--no-intbounds", &f]);
    assert!(none.contains("7 ops -> 7 ops"), "{none}");
}

#[test]
fn run_native_code_agrees_with_the_interpreter() {
    let d = temp_dir("run");
    let l = write(&d, "loop.txt", LOOP);
    let out = ok(&["run", &l, "--inputs", "0,0"]);
    assert!(
        out.contains("native: guard Guard0 failed (resume key 0) [10, 45]"),
        "{out}"
    );
    assert!(out.contains("interp: Guard0 failed (resume key 0) [10, 45]"), "{out}");
    assert!(out.contains("  same"), "{out}");
    let opt = ok(&["run", &l, "--inputs", "3,0", "--opt"]);
    assert!(
        opt.contains("native: guard Guard0 failed (resume key 0) [10, 42]"),
        "{opt}"
    );
    let m = write(&d, "mul.txt", MUL);
    let out = ok(&["run", &m, "--inputs", "6,-7"]);
    assert!(out.contains("native: finish(-42)"), "{out}");
    // The same through the interpreter's memory model.
    let out = ok(&["run", &m, "--inputs", "6,-7", "--hooks"]);
    assert!(
        out.contains("Hooks mode") && out.contains("native: finish(-42)"),
        "{out}"
    );
    let random = ok(&["run", &m, "--random", "20", "--seed", "3"]);
    assert_eq!(random.matches("  same").count(), 20, "{random}");
    assert!(!random.contains("DIFFERENT"), "{random}");
    // Missing inputs is a usage error.
    assert_eq!(tracejit(&["run", &m]).code, 2);
}

/// A shift by 64 (an invalid operation) whose result is unused: the optimizer removes it.
const DEAD_SHIFT: &str = "# dead shift\n[i0]\ni1 = int_lshift(i0, 64)\nfinish(i0)\n";

#[test]
fn run_opt_reports_a_run_of_an_invalid_original_as_refined_not_different() {
    let d = temp_dir("run_refines");
    let f = write(&d, "shift.txt", DEAD_SHIFT);
    for extra in [&[][..], &["--hooks"][..]] {
        let mut args = vec!["run", f.as_str(), "--inputs", "5", "--opt"];
        args.extend_from_slice(extra);
        let out = ok(&args);
        assert!(out.contains("native: finish(5)"), "{out}");
        assert!(out.contains("interp: invalid"), "{out}");
        assert!(out.contains("\n  refines (original invalid)"), "{out}");
        assert!(!out.contains("DIFFERENT"), "{out}");
    }
    // The trace as written stops at the shift natively too.
    let out = ok(&["run", &f, "--inputs", "5"]);
    assert!(out.contains("native: invalid at"), "{out}");
    assert!(out.contains("\n  same"), "{out}");
}

#[test]
fn run_a_tree_with_its_bridges_attached() {
    let tree = concat!(env!("CARGO_MANIFEST_DIR"), "/../trace-ir/tests/data/branchy.tree");
    // sum of i below 100, the multiples of 8 a hundredfold.
    for extra in [&[][..], &["--opt"][..]] {
        let mut args = vec!["run", tree, "--tree", "--inputs", "0,100,0"];
        args.extend_from_slice(extra);
        let out = ok(&args);
        assert!(
            out.contains("native: guard Guard0 failed (resume key 0) [100, 100, 66726]"),
            "{out}"
        );
        assert!(
            out.contains("interp: Guard0 failed (resume key 0) [100, 100, 66726]"),
            "{out}"
        );
        assert!(out.contains("  same"), "{out}");
    }
    // Trees run in Direct mode only.
    assert_eq!(
        tracejit(&["run", tree, "--tree", "--hooks", "--inputs", "0,1,0"]).code,
        2
    );
}

// --- mine -------------------------------------------------------------------------------

#[test]
fn mine_reports_a_redundant_mask_as_written_and_nothing_after_optimizing() {
    let d = temp_dir("mine");
    let f = write(&d, "andand.txt", AND_AND);
    let out = ok(&["mine", "--no-opt", &f]);
    assert!(out.contains("1 traces mined, 2 ops examined"), "{out}");
    assert!(
        out.contains("    1  same-as-earlier  int_and(int_and(x, C1), C2) => int_and(x, C1)"),
        "{out}"
    );
    assert!(
        out.contains("e.g. int_and(int_and(x, 15), 255) => int_and(x, 15)"),
        "{out}"
    );
    assert!(out.contains("total: 1 findings in 1 patterns"), "{out}");
    // Our optimizer removes the second mask, so the optimized trace has nothing to find.
    let out = ok(&["mine", &f]);
    assert!(out.contains("total: 0 findings in 0 patterns"), "{out}");
    let json = ok(&["mine", "--json", "--no-opt", &f]);
    assert!(json.starts_with("{\"type\":\"finding\",\"file\":"), "{json}");
    assert!(
        json.contains("\"op\":2,\"opcode\":\"int_and\",\"kind\":\"same-as-earlier\",\"value\":\"op 1\""),
        "{json}"
    );
    assert!(
        json.ends_with("{\"type\":\"summary\",\"files\":1,\"findings\":1,\"patterns\":1,\"shown\":1}\n"),
        "{json}"
    );
}

#[test]
fn mine_takes_several_files_and_limits_the_table() {
    let d = temp_dir("mine_many");
    let a = write(&d, "a.txt", AND_AND);
    let b = write(&d, "b.txt", "[i0]\ni1 = int_xor(i0, 1)\ni2 = int_xor(i1, i0)\ni3 = int_lt(i0, 3)\nguard_true(i3) [i0]\ni4 = int_lt(i0, 5)\nfinish(i2, i4)\n");
    let out = ok(&["mine", "--no-opt", "--findings", &a, &b]);
    assert_eq!(out.lines().filter(|l| l.starts_with("# ")).count(), 2, "{out}");
    assert!(out.contains("constant         int_xor(int_xor(x, 1), x) => 1"), "{out}");
    assert!(
        out.contains("const-bool       int_lt(x, C1) => 1   if guard_true(int_lt(x, C2))"),
        "{out}"
    );
    assert!(out.contains("total: 3 findings in 3 patterns"), "{out}");
    let limited = ok(&["mine", "--no-opt", "--limit", "1", &a, &b]);
    assert!(
        limited.contains("total: 3 findings in 3 patterns (1 shown)"),
        "{limited}"
    );
    assert_eq!(limited.lines().filter(|l| l.contains("e.g.")).count(), 1, "{limited}");
}

// --- errors -----------------------------------------------------------------------------

#[test]
fn malformed_file_fails_with_file_line_column() {
    let d = temp_dir("bad");
    let f = write(&d, "bad.txt", BAD);
    let good = write(&d, "good.txt", "[i0]\nfinish(i0)\n");
    for cmd in [
        vec!["check", &f],
        vec!["check", &good, "--optimized", &f],
        vec!["eval-pypy", &f],
        vec!["parse", &f],
        vec!["print", &f],
        vec!["mine", &f],
        vec!["opt", &f],
        vec!["interp", &f],
        vec!["run", &f, "--inputs", "1"],
    ] {
        let o = tracejit(&cmd);
        assert_eq!(o.code, 1, "{cmd:?}: {}", o.stderr);
        assert!(o.stderr.contains(&format!("{f}:2:18: ")), "{cmd:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{cmd:?}: {}", o.stdout);
    }
}

// --- the corpus -------------------------------------------------------------------------

#[test]
fn corpus_parse_print_opt_interp() {
    let f = corpus("fannkuch.pypylog");
    // 21 noopt sections, 7 optimized loops and 14 bridges (corpus README).
    let out = ok(&["parse", &f]);
    assert!(out.contains("total: 42 traces,"), "{out}");
    let printed = ok(&["print", &f]);
    let d = temp_dir("corpus");
    let p = write(&d, "printed.txt", &printed);
    let reparsed = ok(&["parse", &p]);
    let totals = |s: &str| s.lines().last().unwrap_or("").to_string();
    assert_eq!(totals(&reparsed), totals(&out));
    let opt = ok(&["opt", &f]);
    assert!(opt.contains("# total: 21 traces,"), "{}", totals(&opt));
    let interp = ok(&["interp", &f, "--random", "1", "--seed", "1"]);
    assert_eq!(interp.lines().filter(|l| l.contains("=>")).count(), 42, "{interp}");
}

#[test]
fn corpus_run_one_section_natively() {
    let d = temp_dir("corpus_run");
    let f = write(&d, "first.pypylog", first_sections(&corpus("fannkuch.pypylog"), 1));
    for opt in [false, true] {
        let mut args = vec!["run", f.as_str(), "--random", "3", "--seed", "1"];
        if opt {
            args.push("--opt");
        }
        // PyPy's traces name objects of PyPy's process (`ConstPtr(ptr13)`): native code must
        // not dereference them here, so `run` compiles them in Hooks mode and runs them
        // against the interpreter's memory model.
        let out = ok(&args);
        assert!(
            out.contains("Hooks mode (memory and calls through the interpreter's model)"),
            "{out}"
        );
        assert_eq!(out.matches("\n  same").count(), 3, "{out}");
        assert!(!out.contains("DIFFERENT"), "{out}");
    }
}

/// `eval-pypy` on one corpus file, with and without peeling: every trace validates (no Z3
/// counterexample, no interpreter difference), the peeled loops add a preamble to our op
/// count, and what runs per iteration is the part after the preamble.
#[test]
fn corpus_eval_pypy_with_and_without_peeling() {
    let f = corpus("fannkuch.pypylog");
    // TOTAL  traces  in  ours  pypy  ours/pypy  ours-bd  pypy-bd  bd  z3  interp
    let total = |out: &str| -> Vec<String> {
        let line = out
            .lines()
            .find(|l| l.starts_with("TOTAL"))
            .unwrap_or_else(|| panic!("{out}"));
        line.split_whitespace().map(str::to_string).collect()
    };
    let plain = total(&ok(&["eval-pypy", &f]));
    let peeled = total(&ok(&["eval-pypy", "--peel", &f]));
    for t in [&plain, &peeled] {
        assert_eq!(t[1], "21", "{t:?}");
        assert_eq!(t[9].split('/').nth(1), Some("0"), "no trace invalid: {t:?}");
        assert!(t[10].starts_with("0/"), "no interpreter difference: {t:?}");
    }
    let n = |t: &[String], k: usize| t[k].parse::<usize>().unwrap();
    assert!(n(&peeled, 3) > n(&plain, 3), "plain {plain:?}, peeled {peeled:?}");
    assert!(n(&peeled, 6) < n(&peeled, 3), "{peeled:?}");
    assert_eq!(plain[7], peeled[7], "PyPy's own counts do not depend on our options");
}

#[test]
fn corpus_mine_within_its_budget() {
    let f = corpus("fannkuch.pypylog");
    let out = ok(&["mine", &f, "--seconds", "60"]);
    assert!(out.contains(": 21 traces mined,"), "{out}");
    assert!(!out.contains("time budget exhausted"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("total: "), "{out}");
    // A tiny budget stops early and says so, still with exit 0.
    let m = corpus("mmh3.pypylog");
    let out = ok(&["mine", &m, "--seconds", "0.5", "--json"]);
    assert!(out.contains("\"budget_exhausted\":true"), "{out}");
    let out = ok(&["mine", &m, "--max-traces", "2", "--no-minimize"]);
    assert!(out.contains(": 2 traces mined,"), "{out}");
}
