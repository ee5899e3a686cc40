//! Unit tests of the viewer page (no browser): escaping, every trace and op present, the
//! fates and rule names in the rows, PyPy pairing and its bar chart, nothing fetched.

use super::html::esc;
use super::{render, ViewOptions};

/// Two traces; the first has a name with markup in it, the second an `int_add(x, 0)`.
const TWO: &str = "# <b>odd</b> & 'name' \"q\"
[i0]
i1 = int_mul(i0, 8)
finish(i1)

# second
[i0, i1]
i2 = int_add(i1, 0)
i3 = int_lt(i2, 10)
guard_true(i3, descr=<Guard7>) [i0]
i4 = int_lt(i2, 20)
guard_true(i4, descr=<Guard8>) [i0]
finish(i2)
";

/// A tiny PyPy log: one unoptimized trace and PyPy's optimized version of it.
const PYPY_LOG: &str = "[1a] {jit-log-noopt
# Traced loop or bridge with 6 ops
[p0, i1]
debug_merge_point(0, 0, 'f:1 LOAD_FAST')
i2 = int_add(i1, 0)
i3 = int_lt(i2, 10)
guard_true(i3)
p4 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p4, i2, descr=<FieldS W_IntObject.inst_intval 8>)
finish(p4)
[1b] jit-log-noopt}
[1c] {jit-log-opt-loop
# Loop 1 (f:1 LOAD_FAST) : entry bridge with 5 ops
[p0, i1]
+10: i3 = int_lt(i1, 10)
+20: guard_true(i3, descr=<Guard0x10>) [i1]
+30: p4 = new_with_vtable(descr=<SizeDescr 16>)
+40: setfield_gc(p4, i1, descr=<FieldS W_IntObject.inst_intval 8>)
+50: finish(p4)
[1d] jit-log-opt-loop}
";

/// A loop and a bridge out of its guard.
const TREE: &str = include_str!("../../tests/data/loop_and_bridge.tree");

/// A guard that fails on every input (`x < x` is false), before and after optimization.
const ALWAYS_FAILS: &str = "[i0]
i1 = int_lt(i0, i0)
guard_true(i1, descr=<Guard3>) [i0]
finish(i0)
";

fn page_with(text: &str, opts: &ViewOptions) -> String {
    let traces = trace_ir::parse_file(text).unwrap_or_else(|e| panic!("fixture does not parse: {e}"));
    render("fixture <file>", &traces, opts)
}

fn page(text: &str, asm: bool) -> String {
    page_with(
        text,
        &ViewOptions {
            asm,
            ..ViewOptions::default()
        },
    )
}

#[test]
fn esc_escapes_markup_and_quotes() {
    assert_eq!(
        esc("<a href=\"x\">'&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
    assert_eq!(esc("plain text"), "plain text");
}

#[test]
fn trace_names_and_title_are_escaped() {
    let html = page(TWO, false);
    assert!(
        html.contains("&lt;b&gt;odd&lt;/b&gt; &amp; &#39;name&#39; &quot;q&quot;"),
        "{html}"
    );
    assert!(!html.contains("<b>odd</b>"));
    assert!(html.contains("<title>tracejit view: fixture &lt;file&gt;</title>"));
}

#[test]
fn every_trace_and_every_op_has_its_row() {
    let html = page(TWO, false);
    for id in ["id=\"t0\"", "id=\"t1\"", "id=\"t0-i1\"", "id=\"t0-i2\"", "id=\"t1-i7\""] {
        assert!(html.contains(id), "{id} missing");
    }
    assert!(!html.contains("id=\"t2\""));
    assert!(html.contains("<code>i1 = int_mul(i0, 8)</code>"));
    assert!(html.contains("<code>guard_true(i5, descr=&lt;Guard8&gt;) [i0]</code>"));
}

#[test]
fn rows_carry_fates_rules_and_links() {
    let html = page(TWO, false);
    // i1 = int_mul(i0, 8) is rewritten by a rule into the shift that is output op 1
    assert!(
        html.contains("<tr id=\"t0-i1\" class=\"op in removed r-rule\" data-to=\"t0-o1\">"),
        "{html}"
    );
    assert!(html.contains("<span class=\"rule\">mul_pow2_const</span> = <code>#1</code>"));
    // in the second trace: add_zero, and the weaker guard implied by the first
    assert!(html.contains("<span class=\"rule\">add_zero</span> = <code>#1</code>"));
    assert!(html.contains("<tr id=\"t1-i6\" class=\"op in removed r-guard_known\" data-to=\"\" data-guard=\"Guard8\">"));
    assert!(html.contains("<tr id=\"t1-o2\" class=\"op out\" data-from=\"t1-i3\">"));
}

#[test]
fn code_column_only_with_asm() {
    assert!(!page(TWO, false).contains("class=\"asm\""));
    let html = page(TWO, true);
    assert!(html.contains("<details class=\"asm\"><summary>"), "no code column");
    assert!(html.contains("bytes of code: prologue"));
}

#[test]
fn pypy_log_pairs_each_noopt_trace_with_pypy_counts_and_chart() {
    let html = page(PYPY_LOG, false);
    assert!(html.contains("id=\"t0\""));
    assert!(
        !html.contains("id=\"t1\""),
        "PyPy's optimized trace is not a trace of its own"
    );
    assert!(html.contains("(PyPy 5)"), "{html}");
    for chart in ["id=\"chart-total\"", "id=\"chart-t0\""] {
        assert!(html.contains(chart), "{chart} missing");
    }
    // 7 categories x 3 series, in each of the two charts
    assert_eq!(html.matches("<rect class=\"bar ").count(), 42);
    assert!(html.contains("data-cat=\"guard\" data-n=\"1\""));
    assert!(html.contains("PyPy's optimized trace (jit-log-opt-loop, 5 ops)"));
}

#[test]
fn page_fetches_nothing() {
    let html = page(PYPY_LOG, true);
    for needle in ["http://", "https://", " src=", "<link", "@import", "url("] {
        assert!(!html.contains(needle), "{needle} in the page");
    }
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(html.matches("</script>").count(), 1);
}

#[test]
fn bridges_link_to_their_guard_and_back() {
    let html = page(TREE, false);
    // the guard row of the loop, recorded and optimized, links to the bridge
    assert_eq!(
        html.matches("<a class=\"bridge\" href=\"#t1\">bridge</a>").count(),
        2,
        "{html}"
    );
    assert!(html.contains("<p class=\"bridge-of\">bridge out of Guard0 of <a href=\"#t0\">loop</a></p>"));
}

#[test]
fn runs_count_the_exits_of_both_versions() {
    let opts = ViewOptions {
        asm: false,
        runs: 4,
        seed: 1,
    };
    let html = page_with(ALWAYS_FAILS, &opts);
    assert!(
        html.contains("exits of 4 runs in the reference interpreter (guided random inputs): recorded: Guard3 4; optimized: Guard3 4"),
        "{html}"
    );
    // on the recorded guard row and on the optimized one
    assert_eq!(html.matches(">failed 4</span>").count(), 2);
    let html = page_with("[i0]\ni1 = int_add(i0, 1)\nfinish(i1)\n", &opts);
    assert!(html.contains("recorded: finish 4; optimized: finish 4"));
    assert!(!page(ALWAYS_FAILS, false).contains("failed"), "no counts without runs");
}

#[test]
fn ops_kept_in_another_form_say_so() {
    let html = page(
        "[i0]\ni1 = int_and(i0, 255)\ni2 = int_add_ovf(i1, 1)\nguard_no_overflow(descr=<Guard1>) [i0]\nfinish(i2)\n",
        false,
    );
    assert!(
        html.contains("<span class=\"badge kept\">kept</span> #2 as <code>int_add</code>"),
        "{html}"
    );
    assert!(html.contains("<tr id=\"t0-i3\" class=\"op in removed r-overflow\""));
    assert!(!html.contains("#1 as"), "int_and is kept as it is");
}
