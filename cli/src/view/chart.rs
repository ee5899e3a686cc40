//! The bar chart of op counts by category (recorded, ours, PyPy's), as inline SVG.

use super::html::esc;
use crate::opcount::{Counts, CATS};
use std::fmt::Write;

/// The series of the chart: CSS class and legend label.
const SERIES: [(&str, &str); 3] = [("b-in", "recorded"), ("b-ours", "ours"), ("b-pypy", "PyPy")];

/// An SVG bar chart: per category one bar per series that has counts. `id` names the chart
/// element (`<id>` on the `svg`).
pub fn bars(id: &str, series: [Option<&Counts>; 3]) -> String {
    let max = series
        .iter()
        .flatten()
        .flat_map(|c| c.cat.iter())
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let shown: Vec<usize> = (0..3).filter(|&s| series[s].is_some()).collect();
    let (label_w, bar_w, bar_h, gap) = (44.0, 260.0, 6.0, 4.0);
    let group_h = bar_h * shown.len() as f64 + gap;
    let legend_h = 14.0;
    let height = legend_h + group_h * CATS.len() as f64;
    let width = label_w + bar_w + 50.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" id=\"{}\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"op counts by category\">",
        esc(id)
    );
    for (k, &si) in shown.iter().enumerate() {
        let (class, label) = SERIES[si];
        let x = label_w + 80.0 * k as f64;
        let _ = write!(
            s,
            "<rect class=\"{class}\" x=\"{x}\" y=\"3\" width=\"10\" height=\"10\"/><text x=\"{}\" y=\"12\">{label}</text>",
            x + 14.0
        );
    }
    for (c, cat) in CATS.iter().enumerate() {
        let y0 = legend_h + group_h * c as f64;
        let _ = write!(
            s,
            "<text class=\"cat\" x=\"0\" y=\"{}\">{cat}</text>",
            y0 + group_h / 2.0 + 2.0
        );
        for (k, &si) in shown.iter().enumerate() {
            let n = series[si].map_or(0, |x| x.cat[c]);
            let (class, label) = SERIES[si];
            let w = bar_w * n as f64 / max as f64;
            let y = y0 + bar_h * k as f64;
            let _ = write!(
                s,
                "<rect class=\"bar {class}\" data-cat=\"{cat}\" data-n=\"{n}\" x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"><title>{cat}, {label}: {n}</title></rect><text class=\"n\" x=\"{:.1}\" y=\"{}\">{n}</text>",
                bar_h - 1.0,
                label_w + w + 3.0,
                y + bar_h - 0.5
            );
        }
    }
    s.push_str("</svg>");
    s
}
