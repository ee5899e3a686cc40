//! The trace viewer behind `tracejit view`: one self-contained HTML page (inline CSS and
//! script, nothing fetched) showing, per trace, the recorded ops beside the optimized ones,
//! what became of each recorded op ([`optimizer::Explanation`]), the machine code of each
//! optimized op, and for PyPy logs our op counts beside PyPy's by category.

mod chart;
mod html;
mod model;
#[cfg(test)]
mod tests;

pub use model::TraceView;
use trace_ir::Trace;

/// What to put in the report.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    /// Compile each optimized trace and show the code of each op.
    pub asm: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions { asm: true }
    }
}

/// The traces to show: every trace of the file, or for a PyPy log with unoptimized
/// (`jit-log-noopt`) sections only those, each paired with PyPy's optimized version (the
/// `jit-log-opt-*` section that follows it).
pub fn views<'a>(traces: &'a [Trace], opts: &ViewOptions) -> Vec<TraceView<'a>> {
    let is_noopt = |t: &Trace| t.info.section.as_deref() == Some("jit-log-noopt");
    let has_noopt = traces.iter().any(is_noopt);
    traces
        .iter()
        .enumerate()
        .filter(|(_, t)| !has_noopt || is_noopt(t))
        .enumerate()
        .map(|(k, (i, t))| {
            let pypy = if has_noopt {
                traces
                    .get(i + 1)
                    .filter(|n| n.info.section.as_deref().is_some_and(|s| s.starts_with("jit-log-opt")))
            } else {
                None
            };
            TraceView::new(k, t, pypy, opts.asm)
        })
        .collect()
}

/// The HTML page for the traces of the file called `title`.
pub fn render(title: &str, traces: &[Trace], opts: &ViewOptions) -> String {
    html::page(title, &views(traces, opts))
}
