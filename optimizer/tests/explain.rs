//! The per-op explanation (`Options::explain`): for small traces, what became of every input
//! op (kept as which output op, or removed for which reason, by which rule, replaced by
//! which value) and where every output op came from, written out by hand.

mod common;
use common::parse;
use optimizer::{optimize, Explanation, Fate, Options};
use trace_ir::text::const_to_string;
use trace_ir::{print_trace, OpRef, Trace, ValueData};

/// Optimize `input` with the explanation on.
fn explained(input: &str) -> (Trace, Explanation) {
    let opts = Options {
        explain: true,
        ..Options::default()
    };
    let out = optimize(&parse(input), &opts).unwrap_or_else(|e| panic!("optimize failed: {e}"));
    let e = out.explanation.expect("explain is on");
    (out.trace, e)
}

/// One line per input op: `N: kept M` (output op M) or `N: <reason> [<rule>] [= <value>]`
/// (`#M` for output op M, constants as printed).
fn fates(input: &str) -> String {
    let (out, e) = explained(input);
    let mut s = String::new();
    for (i, f) in e.fates.iter().enumerate() {
        let line = match *f {
            Fate::Kept(o) => format!("{i}: kept {}", o.index()),
            Fate::Removed { reason, rule, value } => {
                let mut l = format!("{i}: {}", reason.name());
                if let Some(r) = rule {
                    l += &format!(" {r}");
                }
                match value.map(|v| v.data()) {
                    Some(ValueData::Op(o)) => l += &format!(" = #{}", o.index()),
                    Some(ValueData::Const(c)) => {
                        l += &format!(" = {}", const_to_string(out.consts.get(c), out.consts.name(c)))
                    }
                    None => {}
                }
                l
            }
            Fate::Unaccounted => format!("{i}: unaccounted"),
        };
        s += &line;
        s.push('\n');
    }
    s
}

#[track_caller]
fn check_fates(input: &str, expected: &str) {
    let got = fates(input);
    let want: String = expected.lines().map(|l| format!("{}\n", l.trim())).collect();
    assert_eq!(got, want, "fates differ; got:\n{got}");
}

#[test]
fn explanation_is_absent_by_default() {
    let out = optimize(&parse("[i0]\n i1 = int_add(i0, 0)\n finish(i1)"), &Options::default()).unwrap();
    assert!(out.explanation.is_none());
}

#[test]
fn rules_name_themselves_and_the_value_or_op_they_leave() {
    // i2 is 0 by sub_x_x; i3 is i1 by add_zero; i4 becomes a new int_lshift by mul_pow2_const
    check_fates(
        "[i0, i1]
         i2 = int_sub(i0, i0)
         i3 = int_add(i1, i2)
         i4 = int_mul(i3, 8)
         finish(i4)",
        "0: kept 0
         1: kept 1
         2: rule sub_x_x = 0
         3: rule add_zero = #1
         4: rule mul_pow2_const = #2
         5: kept 3",
    );
}

#[test]
fn rewritten_op_comes_from_the_op_the_rule_rewrote() {
    let (out, e) = explained(
        "[i0, i1]
         i2 = int_sub(i0, i0)
         i3 = int_add(i1, i2)
         i4 = int_mul(i3, 8)
         finish(i4)",
    );
    assert_eq!(out.ops[2].opcode, trace_ir::Opcode::IntLshift);
    let origins: Vec<usize> = e.origins.iter().map(|o| o.index()).collect();
    assert_eq!(origins, [0, 1, 4, 5]);
}

#[test]
fn implied_guards_and_constant_comparisons() {
    check_fates(
        "[i0]
         i1 = int_lt(i0, 10)
         guard_true(i1, descr=<Guard1>) [i0]
         i2 = int_lt(i0, 20)
         guard_true(i2, descr=<Guard2>) [i0]
         i3 = int_ge(i0, 10)
         guard_false(i3, descr=<Guard3>) [i0]
         finish(i0)",
        "0: kept 0
         1: kept 1
         2: kept 2
         3: bounds_constant = 1
         4: guard_known
         5: bounds_constant = 0
         6: guard_known
         7: kept 3",
    );
}

#[test]
fn virtual_allocation_and_its_accesses() {
    check_fates(
        "[i0]
         p1 = new(descr=<SizeDescr 16>)
         setfield_gc(p1, i0, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i2)",
        "0: kept 0
         1: virtual_alloc
         2: virtual_access
         3: virtual_access = #0
         4: kept 1",
    );
}

#[test]
fn materialized_allocation_is_kept_and_its_writes_come_from_the_escape() {
    let input = "[p0, i1]
         p2 = new(descr=<SizeDescr 16>)
         setfield_gc(p2, i1, descr=<FieldS a 8>)
         setfield_gc(p0, p2, descr=<FieldP b 8>)
         finish()";
    check_fates(
        input,
        "0: kept 0
         1: kept 1
         2: kept 2
         3: virtual_access
         4: kept 4
         5: kept 5",
    );
    let (_, e) = explained(input);
    let origins: Vec<usize> = e.origins.iter().map(|o| o.index()).collect();
    assert_eq!(origins, [0, 1, 2, 4, 4, 5]);
    let from_escape: Vec<usize> = e.outputs_of(OpRef::new(4)).map(|o| o.index()).collect();
    assert_eq!(from_escape, [3, 4]);
}

#[test]
fn overflow_guards_go_with_their_ops() {
    // the _ovf ops become plain ops (kept); their guards go
    check_fates(
        "[i0]
         i1 = int_and(i0, 255)
         i2 = int_add_ovf(i1, 1)
         guard_no_overflow(descr=<Guard1>) [i0]
         i3 = int_mul_ovf(i2, 1000)
         guard_no_overflow(descr=<Guard2>) [i0]
         finish(i3)",
        "0: kept 0
         1: kept 1
         2: kept 2
         3: overflow
         4: kept 3
         5: overflow
         6: kept 4",
    );
}

#[test]
fn folded_overflow_ops_and_kept_overflow_guards() {
    check_fates(
        "[i0]
         i1 = int_add_ovf(9223372036854775807, 1)
         guard_overflow(descr=<Guard1>) [i0]
         i2 = int_mul_ovf(3, 4)
         guard_no_overflow(descr=<Guard2>) [i0]
         i3 = int_sub_ovf(-9223372036854775808, 1)
         guard_no_overflow(descr=<Guard3>) [i0]
         finish(i1, i2, i3)",
        "0: kept 0
         1: folded = -9223372036854775808
         2: overflow
         3: folded = 12
         4: overflow
         5: kept 1
         6: kept 2
         7: kept 3",
    );
}

#[test]
fn cse_and_dead_ops() {
    check_fates(
        "[i0, i1]
         i2 = int_add(i0, i1)
         i3 = int_add(i1, i0)
         i4 = int_mul(i0, i1)
         finish(i3)",
        "0: kept 0
         1: kept 1
         2: kept 2
         3: cse = #2
         4: dead
         5: kept 3",
    );
}

#[test]
fn dead_store_and_heap_cache() {
    // the first write is overwritten before anything observes it; the read is answered by
    // the second write, which is emitted at the end (from its own input op)
    check_fates(
        "[p0, i1]
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         setfield_gc(p0, 5, descr=<FieldS a 8>)
         i2 = getfield_gc_i(p0, descr=<FieldS a 8>)
         finish(i2)",
        "0: kept 0
         1: kept 1
         2: dead_store
         3: kept 2
         4: heap_cache = 5
         5: kept 3",
    );
}

#[test]
fn redundant_write() {
    check_fates(
        "[p0]
         i1 = getfield_gc_i(p0, descr=<FieldS a 8>)
         setfield_gc(p0, i1, descr=<FieldS a 8>)
         finish(i1)",
        "0: kept 0
         1: kept 1
         2: redundant_write
         3: kept 2",
    );
}

#[test]
fn loop_parameters_are_kept() {
    check_fates(
        "[i0]
         label(i0, descr=<Loop0>)
         i2 = int_add(i0, 1)
         jump(i2, descr=<Loop0>)",
        "0: kept 0
         1: kept 1
         2: kept 2
         3: kept 3
         4: kept 4",
    );
}

/// Every noopt trace of the dev corpus (`shared/corpus/pypy-dev`), with and without loop
/// peeling: the output is the same as without the explanation, every input op has a fate,
/// kept ops are distinct output ops that come from them, and the reasons attributed one to
/// one agree with the statistics.
#[test]
fn corpus_explanations_change_nothing_and_agree_with_statistics() {
    use optimizer::Reason;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pypylog"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "corpus files missing in {}", dir.display());
    let one_to_one = [
        Reason::GuardKnown,
        Reason::Overflow,
        Reason::VirtualAlloc,
        Reason::VirtualAccess,
        Reason::HeapCache,
        Reason::RedundantWrite,
        Reason::DeadStore,
    ];
    let mut traces = 0;
    for f in &files {
        let all = trace_ir::parse_file(&std::fs::read_to_string(f).unwrap()).unwrap();
        for t in all
            .iter()
            .filter(|t| t.info.section.as_deref() == Some("jit-log-noopt"))
        {
            for peel in [false, true] {
                let opts = Options {
                    explain: true,
                    peel,
                    ..Options::default()
                };
                let out = optimize(t, &opts).unwrap_or_else(|e| panic!("{}: {e}", t.info.name));
                let e = out.explanation.as_ref().unwrap();
                // explaining changes nothing in the output
                let plain = optimize(
                    t,
                    &Options {
                        explain: false,
                        ..opts.clone()
                    },
                )
                .unwrap();
                assert_eq!(print_trace(&plain.trace), print_trace(&out.trace), "{}", t.info.name);
                assert_eq!(plain.stats, out.stats, "{}", t.info.name);
                let input = if peel {
                    trace_ir::peel_loop(t).unwrap_or_else(|| t.clone())
                } else {
                    t.clone()
                };
                let name = &t.info.name;
                assert_eq!(e.fates.len(), input.ops.len(), "{name}");
                assert_eq!(e.origins.len(), out.trace.ops.len(), "{name}");
                let mut seen = vec![false; out.trace.ops.len()];
                for (i, f) in e.fates.iter().enumerate() {
                    match *f {
                        Fate::Kept(o) => {
                            assert!(!seen[o.index()], "{name}: output op {o} kept twice");
                            seen[o.index()] = true;
                            assert_eq!(e.origins[o.index()].index(), i, "{name}: op {i}");
                            assert_eq!(
                                input.ops[i].opcode.result_kind(),
                                out.trace.ops[o.index()].opcode.result_kind(),
                                "{name}: op {i} kept as {o}"
                            );
                        }
                        Fate::Removed { .. } => {}
                        Fate::Unaccounted => panic!("{name}: op {i} ({}) unaccounted", input.ops[i].opcode),
                    }
                }
                for r in one_to_one {
                    let n = e
                        .fates
                        .iter()
                        .filter(|f| matches!(f, Fate::Removed { reason, .. } if *reason == r))
                        .count();
                    assert_eq!(n, out.stats.removed(r), "{name}: {} (peel {peel})", r.name());
                }
                traces += 1;
            }
        }
    }
    assert!(traces > 20, "only {traces} traces");
}
