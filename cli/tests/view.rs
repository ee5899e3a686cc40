//! `tracejit view` in a real browser: reports for a small trace file and for a PyPy log of
//! the dev corpus (`shared/corpus/pypy-dev`) are opened in headless Chromium, and the DOM
//! after the page's script ran is checked (the script's marker, the op rows, highlighted
//! targets, the filter, rule names, the bar charts).
//!
//! Needs `chromium`: without it the tests print that they skipped, unless
//! `TRACEJIT_REQUIRE_TOOLS=1` (CI), where they fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::LOOP;

const BIN: &str = env!("CARGO_BIN_EXE_tracejit");

/// The Chromium binary, or `None` after saying the test skips (a failure when
/// `TRACEJIT_REQUIRE_TOOLS=1`).
fn chromium(test: &str) -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("TRACEJIT_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("{test}: chromium is required (TRACEJIT_REQUIRE_TOOLS=1) but not on PATH");
        }
        eprintln!("{test}: SKIPPED: chromium is not installed");
    }
    found
}

/// A fresh temporary directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracejit-view-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A loop whose guard fails when `i0 >= i1`, and a bridge out of that guard.
const TREE: &str = include_str!("data/loop_and_bridge.tree");

/// `tracejit view FILE -o OUT [extra...]`, expecting success.
fn view_with(file: &Path, out: &Path, extra: &[&str]) {
    let o = Command::new(BIN)
        .args(["view", file.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(extra)
        .output()
        .expect("run tracejit");
    assert!(
        o.status.success(),
        "tracejit view failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `tracejit view FILE -o OUT`, expecting success.
fn view(file: &Path, out: &Path) {
    view_with(file, out, &[]);
}

/// The DOM of `page` (with `fragment` after `#`, if not empty) after its script ran, as
/// headless Chromium dumps it (fresh profile, no network services).
fn dump_dom(chromium: &Path, dir: &Path, page: &Path, fragment: &str) -> String {
    let profile = dir.join(format!("profile-{}", fragment.replace(['=', '#'], "_")));
    std::fs::create_dir_all(&profile).unwrap();
    let mut url = format!("file://{}", page.display());
    if !fragment.is_empty() {
        url = format!("{url}#{fragment}");
    }
    let stdout_path = dir.join("dom.html");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(&url)
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed on {url}: {status}");
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish on {url} within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dom = std::fs::read_to_string(&stdout_path).unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    dom
}

/// The opening tag of the element with id `id` in `dom`.
fn tag_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element {id}"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find('>').unwrap();
    &dom[start..=end]
}

#[test]
fn loop_report_highlights_what_an_op_became() {
    let Some(chromium) = chromium("loop_report_highlights_what_an_op_became") else {
        return;
    };
    let d = temp_dir("highlight");
    let (src, page) = (d.join("loop.txt"), d.join("loop.html"));
    std::fs::write(&src, LOOP).unwrap();
    view(&src, &page);
    // op 9 (`int_add(i4, 0)`) goes by add_zero: it is output op 8 (`int_add(i0, 1)`)
    let dom = dump_dom(&chromium, &d, &page, "t0-i9");
    // 7 recorded and 6 optimized op rows, counted by the script
    assert!(
        dom.contains("<body data-view-ready=\"13\">"),
        "script marker missing:\n{dom}"
    );
    assert!(
        tag_of(&dom, "t0-i9").contains("class=\"op in removed r-rule hl-src\""),
        "{}",
        tag_of(&dom, "t0-i9")
    );
    assert!(
        tag_of(&dom, "t0-o8").contains("class=\"op out hl\""),
        "{}",
        tag_of(&dom, "t0-o8")
    );
    assert!(!tag_of(&dom, "t0-o7").contains(" hl"), "{}", tag_of(&dom, "t0-o7"));
    assert!(dom.contains("<span class=\"rule\">add_zero</span>"));
    // an optimized op highlights where it came from
    let dom = dump_dom(&chromium, &d, &page, "t0-o8");
    assert!(tag_of(&dom, "t0-i8").contains(" hl\""), "{}", tag_of(&dom, "t0-i8"));
    assert!(tag_of(&dom, "t0-i9").contains(" hl\""), "{}", tag_of(&dom, "t0-i9"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn loop_report_filter_hides_other_ops() {
    let Some(chromium) = chromium("loop_report_filter_hides_other_ops") else {
        return;
    };
    let d = temp_dir("filter");
    let (src, page) = (d.join("loop.txt"), d.join("loop.html"));
    std::fs::write(&src, LOOP).unwrap();
    view(&src, &page);
    let dom = dump_dom(&chromium, &d, &page, "q=add_zero");
    assert!(dom.contains("data-filter=\"add_zero\""), "{dom}");
    assert!(dom.contains("<span id=\"filter-count\">1 of 13 ops</span>"), "{dom}");
    assert!(!tag_of(&dom, "t0-i9").contains("hidden"));
    assert!(tag_of(&dom, "t0-i5").contains("hidden"));
    assert!(tag_of(&dom, "t0-o8").contains("hidden"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn pypy_log_report_has_every_noopt_trace_and_the_charts() {
    let Some(chromium) = chromium("pypy_log_report_has_every_noopt_trace_and_the_charts") else {
        return;
    };
    let log = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev/fannkuch.pypylog");
    assert!(log.exists(), "corpus file missing: {}", log.display());
    let noopt = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.ends_with("{jit-log-noopt"))
        .count();
    assert!(noopt > 5, "{noopt} noopt sections");
    let d = temp_dir("pypy");
    let page = d.join("fannkuch.html");
    view(&log, &page);
    let dom = dump_dom(&chromium, &d, &page, "");
    assert!(dom.contains("<body data-view-ready=\""), "script marker missing");
    assert_eq!(dom.matches("<section class=\"trace\"").count(), noopt);
    for k in 0..noopt {
        assert!(dom.contains(&format!("id=\"t{k}\"")), "trace {k} missing");
    }
    let total = tag_of(&dom, "chart-total");
    assert!(total.starts_with("<svg class=\"chart\""), "{total}");
    // per chart 7 categories x 3 series (recorded, ours, PyPy's)
    let charts = dom.matches("<svg class=\"chart\"").count();
    assert!(charts > 1, "only the total chart");
    assert_eq!(dom.matches("<rect class=\"bar ").count(), 21 * charts);
    assert!(dom.contains("<rect class=\"bar b-pypy\" data-cat=\"guard\""));
    // fates with reasons, and code per op
    for needle in [
        "class=\"badge kept\"",
        "class=\"badge r-guard_known\"",
        "<details class=\"asm\">",
    ] {
        assert!(dom.contains(needle), "{needle} missing");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn tree_report_links_bridges_and_counts_guard_exits() {
    let Some(chromium) = chromium("tree_report_links_bridges_and_counts_guard_exits") else {
        return;
    };
    let d = temp_dir("tree");
    let (src, page) = (d.join("tree.txt"), d.join("tree.html"));
    std::fs::write(&src, TREE).unwrap();
    view_with(&src, &page, &["--runs", "8", "--seed", "3", "--no-asm"]);
    // the recorded guard (op 6) with its bridge highlights the optimized guard
    let dom = dump_dom(&chromium, &d, &page, "t0-i6");
    assert!(dom.contains("<body data-view-ready=\""), "script marker missing");
    let row_end = dom
        .find("id=\"t0-i6\"")
        .map(|at| at + dom[at..].find("</tr>").unwrap())
        .unwrap();
    let row = &dom[dom[..row_end].rfind("<tr").unwrap()..row_end];
    assert!(row.contains("<a class=\"bridge\" href=\"#t1\">bridge</a>"), "{row}");
    assert!(row.contains("sample runs that failed this guard"), "{row}");
    assert!(tag_of(&dom, "t0-o6").contains(" hl\""), "{}", tag_of(&dom, "t0-o6"));
    assert!(dom.contains("exits of 8 runs in the reference interpreter"));
    assert!(dom.contains("bridge out of Guard0 of <a href=\"#t0\">loop</a>"));
    let _ = std::fs::remove_dir_all(&d);
}
