//! The summary chart drawn from hand-written rows: a well-formed SVG with one bar per example
//! and series, bar heights on a logarithmic scale, the example names and the legend.

use benches::chart::{render_svg, write_svg, ChartRow, SERIES, SERIES_COLORS};
use std::path::PathBuf;

fn rows() -> Vec<ChartRow> {
    vec![
        ChartRow {
            name: "sum".into(),
            // Rust: a closed form, below the axis.
            ns_per_n: [1000.0, 100.0, 10.0, 0.0, 1.0],
        },
        ChartRow {
            name: "fnv_hash".into(),
            ns_per_n: [100000.0, 80000.0, 2000.0, 1000.0, 1000.0],
        },
        ChartRow {
            name: "float".into(),
            ns_per_n: [120.0, 90.0, 10.0, 2.0, 2.0],
        },
    ]
}

/// A file in the temporary directory that is removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The value of attribute `name` in the tag `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// Every tag of `svg` (`<...>`, the angle brackets excluded), in document order.
fn tags(svg: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("every tag is closed") + open;
        out.push(&rest[open + 1..close]);
        rest = &rest[close + 1..];
    }
    out
}

/// Checks that the tags of `svg` nest: each closing tag closes the innermost open one, and
/// every one is closed at the end.
fn assert_tags_nest(svg: &str) {
    let mut open: Vec<&str> = Vec::new();
    for tag in tags(svg) {
        if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name.trim()), "closing tag </{name}> out of place");
        } else {
            open.push(tag.split_whitespace().next().expect("tag name"));
        }
    }
    assert!(open.is_empty(), "tags left open: {open:?}");
}

/// The heights of the filled rectangles of `color` (`#RRGGBB`), in document order.
fn rect_heights(svg: &str, color: &str) -> Vec<f64> {
    tags(svg)
        .into_iter()
        .filter(|t| t.starts_with("rect ") && attr(t, "fill") == Some(color))
        .map(|t| attr(t, "height").expect("rect height").parse().expect("number"))
        .collect()
}

/// The contents of the `<text>` elements of `svg`, trimmed, in document order.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text ")
        .skip(1)
        .map(|t| {
            let start = t.find('>').expect("text tag closed") + 1;
            let end = t.find("</text>").expect("text element closed");
            t[start..end].trim().to_string()
        })
        .collect()
}

fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[test]
fn chart_file_is_an_svg_document_whose_tags_nest() {
    let file = TempFile(std::env::temp_dir().join(format!("benches-chart-{}.svg", std::process::id())));
    write_svg(&file.0, &rows()).expect("chart written");
    let svg = std::fs::read_to_string(&file.0).expect("chart read back");
    assert!(svg.trim_start().starts_with("<svg"), "starts with {:?}", &svg[..20]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_tags_nest(&svg);
}

#[test]
fn chart_has_one_bar_per_example_and_series_and_one_legend_swatch_per_series() {
    let svg = render_svg(&rows()).unwrap();
    for color in SERIES_COLORS {
        let heights = rect_heights(&svg, &hex(color));
        // Three bars, then the legend swatch.
        assert_eq!(heights.len(), 3 + 1, "rects filled {}", hex(color));
        assert!(heights.iter().all(|&h| h >= 0.0), "{heights:?}");
    }
}

#[test]
fn chart_bar_heights_follow_a_logarithmic_time_axis() {
    let svg = render_svg(&rows()).unwrap();
    let h: Vec<Vec<f64>> = SERIES_COLORS.iter().map(|&c| rect_heights(&svg, &hex(c))).collect();
    // sum: 1000, 100, 10 ns are equally spaced decades above the axis floor.
    let (interp, noopt, opt) = (h[0][0], h[1][0], h[2][0]);
    assert!(interp > noopt && noopt > opt && opt > 0.0, "{interp} {noopt} {opt}");
    assert!(
        ((interp - noopt) - (noopt - opt)).abs() <= 2.0,
        "{interp} {noopt} {opt}"
    );
    // Rust scalar at 1 ns is one more decade down; fnv_hash's 100000 ns is the tallest bar.
    assert!(((opt - h[4][0]) - (noopt - opt)).abs() <= 2.0);
    let tallest = h.iter().flat_map(|s| &s[..3]).cloned().fold(0.0, f64::max);
    assert_eq!(tallest, h[0][1]);
}

#[test]
fn chart_marks_a_time_below_the_axis_with_a_flat_bar_and_its_bottom() {
    let svg = render_svg(&rows()).unwrap();
    // The lowest time of at least 0.01 ns is 1 ns, so the axis starts at 0.1 ns; sum's Rust
    // time (0 ns) is the only one below it.
    assert_eq!(rect_heights(&svg, &hex(SERIES_COLORS[3]))[0], 0.0);
    assert_eq!(texts(&svg).iter().filter(|t| *t == "&lt; 0.1").count(), 1);
    assert!(texts(&svg).contains(&"0.1".to_string()), "axis bottom tick missing");
}

#[test]
fn chart_names_each_example_and_each_series() {
    let texts = texts(&render_svg(&rows()).unwrap());
    for name in ["sum", "fnv_hash", "float"] {
        assert!(texts.iter().any(|t| t == name), "example {name} not named");
    }
    for label in SERIES {
        assert!(texts.iter().any(|t| t == label), "series {label} not in the legend");
    }
    assert!(texts.iter().any(|t| t == "ns per unit of N"), "time axis not labelled");
}

#[test]
fn chart_refuses_a_time_that_is_not_a_number() {
    let mut rows = rows();
    rows[2].ns_per_n[1] = f64::NAN;
    let err = render_svg(&rows).unwrap_err();
    assert!(err.contains("float") && err.contains("JIT unoptimized"), "{err}");
}

#[test]
fn chart_refuses_rows_with_nothing_to_draw() {
    assert!(render_svg(&[]).is_err());
}

#[test]
fn chart_write_to_a_missing_directory_names_the_path() {
    let path = std::env::temp_dir().join("benches-chart-no-such-dir").join("chart.svg");
    let err = write_svg(&path, &rows()).unwrap_err();
    assert!(err.contains("benches-chart-no-such-dir"), "{err}");
}
