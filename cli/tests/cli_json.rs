//! The `--json` output of every command that has one: JSON Lines, each line an object with a
//! `type`, in the shapes docs/cli.md documents, the summary last.

mod support;
use serde_json::json;
use support::*;

#[test]
fn parse_json_is_a_line_per_trace_then_a_summary() {
    let d = temp_dir("json_parse");
    let f = write(&d, "two.txt", format!("{LOOP}# mul\n{MUL}"));
    let lines = json_lines(&ok(&["parse", "--json", &f]));
    assert_eq!(types(&lines), ["trace", "trace", "summary"]);
    assert_eq!(
        lines[0],
        json!({"type": "trace", "index": 0, "name": "sum loop", "section": null, "inputs": 2, "ops": 7, "guards": 1})
    );
    assert_eq!(lines[1]["name"], "mul");
    assert_eq!(
        lines[2],
        json!({"type": "summary", "file": f, "traces": 2, "ops": 9, "guards": 1})
    );
}

#[test]
fn interp_json_is_a_line_per_trace_with_its_runs() {
    let d = temp_dir("json_interp");
    let f = write(&d, "loop.txt", LOOP);
    let lines = json_lines(&ok(&["interp", &f, "--inputs", "7,1", "--json"]));
    assert_eq!(types(&lines), ["trace", "summary"]);
    assert_eq!(keys(&lines[0]), ["index", "name", "runs", "type"]);
    let run = &lines[0]["runs"][0];
    assert_eq!(keys(run), ["inputs", "iterations", "outcome", "preset_slots", "steps"]);
    assert_eq!(run["inputs"], json!([{"int": 7}, {"int": 1}]));
    assert_eq!(
        run["outcome"],
        json!({"kind": "guard_failed", "guard": 0, "resume_key": 0, "values": [{"int": 10}, {"int": 25}]})
    );
    assert_eq!(lines[1], json!({"type": "summary", "file": f, "traces": 1, "runs": 1}));
    // A trace whose input count differs from the list is a line with an error.
    let m = write(&d, "one.txt", "[i0]\nfinish(i0)\n");
    let lines = json_lines(&ok(&["interp", &m, "--inputs", "1,2", "--json"]));
    assert_eq!(keys(&lines[0]), ["error", "index", "name", "type"]);
    assert_eq!(lines[1]["runs"], 0);
    // No input sets: an empty list of runs.
    let lines = json_lines(&ok(&["interp", &m, "--random", "0", "--json"]));
    assert_eq!(lines[0]["runs"], json!([]));
}

#[test]
fn opt_json_is_a_line_per_trace_then_a_summary() {
    let d = temp_dir("json_opt");
    let f = write(&d, "loop.txt", LOOP);
    let lines = json_lines(&ok(&["opt", "--json", &f]));
    assert_eq!(types(&lines), ["trace", "summary"]);
    assert_eq!(keys(&lines[0]), ["name", "pypy_ops", "stats", "trace", "type"]);
    assert_eq!(lines[0]["pypy_ops"], json!(null));
    let stats = &lines[0]["stats"];
    assert_eq!(
        keys(stats),
        [
            "ops_in",
            "ops_out",
            "removed",
            "rules",
            "virtuals_materialized",
            "virtuals_removed"
        ]
    );
    assert_eq!(
        (stats["ops_in"].as_u64(), stats["ops_out"].as_u64()),
        (Some(7), Some(6))
    );
    assert_eq!(stats["rules"]["add_zero"], 1);
    let text = lines[0]["trace"].as_str().unwrap();
    assert!(text.starts_with("[i0, i1]\n") && !text.contains(", 0)"), "{text}");
    assert_eq!(keys(&lines[1]), ["file", "pypy_ops", "stats", "traces", "type"]);
    assert_eq!(lines[1]["traces"], 1);
    assert_eq!(lines[1]["stats"]["ops_out"], 6);
}

#[test]
fn check_json_is_a_line_per_trace_then_a_summary() {
    let d = temp_dir("json_check");
    let f = write(&d, "two.txt", format!("{LOOP}# mul\n{MUL}"));
    let lines = json_lines(&ok(&["check", "--json", &f]));
    assert_eq!(types(&lines), ["trace", "trace", "summary"]);
    assert_eq!(
        keys(&lines[0]),
        ["name", "ops_in", "ops_out", "stats", "type", "verdict"]
    );
    assert_eq!(lines[0]["verdict"], "valid");
    assert_eq!(lines[1]["name"], "mul");
    assert_eq!(
        keys(&lines[0]["stats"]),
        [
            "abstract_queries",
            "claims",
            "concrete_queries",
            "seconds",
            "solver_seconds",
            "timeouts"
        ]
    );
    let s = &lines[2];
    assert_eq!(
        (&s["traces"], &s["valid"], &s["invalid"], &s["unknown"]),
        (&json!(2), &json!(2), &json!(0), &json!(0))
    );
    // A wrong optimization written by hand: the counterexample is in the line, exit 1.
    let wrong = write(&d, "wrong.txt", "[i0, i1]\ni2 = int_add(i0, i1)\nfinish(i2)\n");
    let only_mul = write(&d, "mul.txt", MUL);
    let o = tracejit(&["check", "--json", &only_mul, "--optimized", &wrong]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let lines = json_lines(&o.stdout);
    assert_eq!(types(&lines), ["trace", "summary"]);
    assert_eq!(lines[0]["verdict"], "invalid");
    for k in ["message", "inputs", "original_value", "optimized_value"] {
        assert!(!lines[0][k].is_null(), "{k} missing: {}", lines[0]);
    }
    let (i0, i1) = (
        lines[0]["inputs"]["i0"].as_i64().unwrap(),
        lines[0]["inputs"]["i1"].as_i64().unwrap(),
    );
    assert_eq!(lines[0]["original_value"].as_i64(), Some(i0.wrapping_mul(i1)));
    assert_eq!(lines[0]["optimized_value"].as_i64(), Some(i0.wrapping_add(i1)));
    assert_eq!(lines[1]["invalid"], 1);
}

#[test]
fn mine_json_is_findings_and_a_line_per_file_then_patterns_and_a_summary() {
    let d = temp_dir("json_mine");
    let f = write(&d, "andand.txt", AND_AND);
    let lines = json_lines(&ok(&["mine", "--json", "--no-opt", &f]));
    assert_eq!(types(&lines), ["finding", "file", "pattern", "summary"]);
    assert_eq!(
        keys(&lines[0]),
        [
            "file",
            "kind",
            "op",
            "opcode",
            "pattern",
            "shape",
            "trace",
            "type",
            "unminimized",
            "value"
        ]
    );
    assert_eq!(
        (
            &lines[0]["op"],
            &lines[0]["opcode"],
            &lines[0]["kind"],
            &lines[0]["value"]
        ),
        (&json!(2), &json!("int_and"), &json!("same-as-earlier"), &json!("op 1"))
    );
    assert_eq!(
        keys(&lines[1]),
        [
            "budget_exhausted",
            "contradictory",
            "file",
            "ops",
            "optimizer_errors",
            "queries",
            "seconds",
            "traces",
            "type",
            "unknown"
        ]
    );
    assert_eq!((&lines[1]["file"], &lines[1]["traces"]), (&json!(f), &json!(1)));
    assert_eq!(
        keys(&lines[2]),
        ["count", "distinct", "example", "first", "kind", "shape", "type"]
    );
    assert_eq!(lines[2]["shape"], "int_and(int_and(x, C1), C2) => int_and(x, C1)");
    assert_eq!(
        lines[3],
        json!({"type": "summary", "files": 1, "findings": 1, "patterns": 1, "shown": 1})
    );
}

#[test]
fn eval_pypy_json_is_a_line_per_file_then_a_summary() {
    let d = temp_dir("json_eval");
    // PyPy's first unoptimized loop and its optimized version.
    let f = write(&d, "first.pypylog", first_sections(&corpus("fannkuch.pypylog"), 2));
    let lines = json_lines(&ok(&["eval-pypy", "--json", "--runs", "1", &f]));
    assert_eq!(types(&lines), ["file", "summary"]);
    let numbers = [
        "bridges_with_facts",
        "interp",
        "ops_in",
        "optimizer_errors",
        "ours",
        "ours_body",
        "ours_paired",
        "paired",
        "pypy",
        "pypy_body",
        "traces",
        "verifier_failures",
        "z3",
    ];
    let with = |extra: &[&'static str]| {
        let mut k: Vec<&str> = numbers.iter().chain(extra).copied().collect();
        k.sort_unstable();
        k
    };
    assert_eq!(keys(&lines[0]), with(&["file", "notes", "type"]));
    assert_eq!(keys(&lines[1]), with(&["files", "type"]));
    assert_eq!(
        (&lines[0]["file"], &lines[0]["traces"], &lines[0]["paired"]),
        (&json!(f), &json!(1), &json!(1))
    );
    assert_eq!(
        keys(&lines[0]["ours"]),
        ["alloc", "call", "guard", "int", "other", "read", "total", "write"]
    );
    assert_eq!(lines[0]["z3"]["invalid"], 0);
    assert_eq!(lines[0]["interp"], json!({"runs": 1, "differ": 0}));
    assert_eq!(lines[1]["files"], 1);
    assert_eq!(lines[1]["pypy"], lines[0]["pypy"]);
}

#[test]
fn synth_rules_json_is_a_line_per_rule_then_a_summary() {
    let o = tracejit(&["synth-rules", "--json", "--op", "int_and"]);
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    let lines = json_lines(&o.stdout);
    let (last, rules) = lines.split_last().unwrap();
    assert_eq!(last["type"], "summary");
    assert!(!rules.is_empty());
    for r in rules {
        assert_eq!(keys(r), ["covered", "op", "rule", "type"]);
        assert_eq!((&r["type"], &r["op"]), (&json!("rule"), &json!("int_and")));
    }
    assert!(rules.iter().any(|r| r["rule"] == "int_and(x, 0) -> 0"), "{}", o.stdout);
    let missing = rules.iter().filter(|r| r["covered"] == false).count();
    assert_eq!(
        *last,
        json!({"type": "summary", "found": rules.len(), "covered": rules.len() - missing, "missing": missing})
    );
    assert_eq!(o.code, i32::from(missing > 0), "exit 1 exactly when a rule is missing");
}
