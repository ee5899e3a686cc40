//! The summary's chart: grouped bars of the time per unit of `N` of each example in each
//! variant, on a logarithmic axis, drawn as SVG with plotters.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;

/// The legend labels of the bars, in the order of [`ChartRow::ns_per_n`] (and of
/// [`crate::Variant::ALL`]).
pub const SERIES: [&str; 5] = ["interpreter", "JIT unoptimized", "JIT optimized", "Rust", "Rust scalar"];

/// The fill colour of each series' bars and legend swatch, in the order of [`SERIES`].
pub const SERIES_COLORS: [RGBColor; 5] = [
    RGBColor(0xD6, 0x27, 0x28),
    RGBColor(0xFF, 0x7F, 0x0E),
    RGBColor(0x2C, 0xA0, 0x2C),
    RGBColor(0x1F, 0x77, 0xB4),
    RGBColor(0x94, 0x67, 0xBD),
];

/// The least time, in nanoseconds, that sets the bottom of the time axis: the axis starts at
/// the decade below the lowest time of at least this much. A time below the axis (a loop LLVM
/// turns into a closed form takes about nothing per iteration) is drawn as a flat bar marked
/// `< bottom`.
pub const AXIS_FLOOR_NS: f64 = 0.01;

/// Width of the legend column at the right of the chart, in pixels.
const LEGEND_WIDTH: u32 = 170;

/// One example's measurements: a group of bars.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartRow {
    /// The example's name, written under its group.
    pub name: String,
    /// Nanoseconds per unit of `N` in each variant, in the order of [`SERIES`].
    pub ns_per_n: [f64; SERIES.len()],
}

/// Draws `rows` as an SVG document: one group of bars per row, one bar per series, time on a
/// logarithmic axis.
pub fn render_svg(rows: &[ChartRow]) -> Result<String, String> {
    let (lo, hi) = axis_range(rows)?;
    let width = 200 + LEGEND_WIDTH + 110 * rows.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 520)).into_drawing_area();
        draw(&root, rows, lo, hi).map_err(|e| format!("drawing the chart: {e}"))?;
        root.present().map_err(|e| format!("drawing the chart: {e}"))?;
    }
    Ok(svg)
}

/// Draws `rows` (see [`render_svg`]) into the SVG file `path`.
pub fn write_svg(path: &Path, rows: &[ChartRow]) -> Result<(), String> {
    let svg = render_svg(rows)?;
    std::fs::write(path, svg).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The time axis: whole decades from the one below the lowest time at or above
/// [`AXIS_FLOOR_NS`] (so that its bar is not flat) to the one above the highest.
fn axis_range(rows: &[ChartRow]) -> Result<(f64, f64), String> {
    let mut min = f64::INFINITY;
    let mut max = 0.0f64;
    for row in rows {
        for (&v, series) in row.ns_per_n.iter().zip(SERIES) {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{} {series}: {v} is not a time", row.name));
            }
            if v >= AXIS_FLOOR_NS {
                min = min.min(v);
            }
            max = max.max(v);
        }
    }
    if max < AXIS_FLOOR_NS {
        return Err(format!("no time of {AXIS_FLOOR_NS} ns or more to draw"));
    }
    let lo = 10f64.powf(min.log10().ceil() - 1.0);
    let hi = 10f64.powf(max.log10().floor() + 1.0);
    Ok((lo, hi))
}

/// Formats a tick of the time axis without float noise (`0.01`, `1`, `1000`).
fn tick_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-v.log10()).ceil().max(0.0) as usize;
        format!("{v:.decimals$}")
    }
}

/// The example axis: example `i` spans `i..i + 1`, its tick (and name) is at the centre.
struct ExampleAxis {
    groups: usize,
}

impl Ranged for ExampleAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (value / self.groups as f64 * span).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.groups).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.groups as f64
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    rows: &[ChartRow],
    lo: f64,
    hi: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // plotters places the ticks of a logarithmic axis at the powers of ten from
    // 10^ceil(log(start)); computed in floating point, that can skip `lo` itself (0.1), so
    // the axis starts a hair below it.
    let base = lo * (1.0 - 1e-9);
    let (plot_area, legend_area) = root.split_horizontally(root.dim_in_pixel().0 - LEGEND_WIDTH);
    let x_axis = ExampleAxis { groups: rows.len() };
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(
            "Time per unit of N by example (log scale; lower is faster)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x_axis, (base..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("example")
        .y_desc("ns per unit of N")
        .x_label_formatter(&|x| rows.get(x.floor() as usize).map(|r| r.name.clone()).unwrap_or_default())
        .y_label_formatter(&|y| tick_label(*y))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;

    // Each group spans 0.8 of its unit, split evenly between the series.
    let bar = 0.8 / SERIES.len() as f64;
    for (s, color) in SERIES_COLORS.iter().enumerate() {
        let bars = rows.iter().enumerate().map(|(i, row)| {
            let x0 = i as f64 + 0.1 + s as f64 * bar;
            let top = row.ns_per_n[s].max(lo);
            Rectangle::new([(x0, top), (x0 + bar * 0.9, base)], color.filled())
        });
        chart.draw_series(bars)?;
        let below = rows.iter().enumerate().filter(|(_, row)| row.ns_per_n[s] < lo);
        chart.draw_series(below.map(|(i, _)| {
            let x = i as f64 + 0.1 + (s as f64 + 0.45) * bar;
            Text::new(
                format!("< {}", tick_label(lo)),
                (x, base),
                ("sans-serif", 13)
                    .into_font()
                    .transform(FontTransform::Rotate270)
                    .color(&BLACK),
            )
        }))?;
    }

    // Legend: a swatch and a label per series, top down.
    for (s, (label, color)) in SERIES.iter().zip(SERIES_COLORS).enumerate() {
        let y = 60 + 26 * s as i32;
        legend_area.draw(&Rectangle::new([(10, y), (28, y + 16)], color.filled()))?;
        legend_area.draw(&Text::new(*label, (36, y + 2), ("sans-serif", 15)))?;
    }
    Ok(())
}
