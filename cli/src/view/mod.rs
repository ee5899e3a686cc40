//! The trace viewer behind `tracejit view`: one self-contained HTML page (inline CSS and
//! script, nothing fetched) showing, per trace, the recorded ops beside the optimized ones,
//! what became of each recorded op ([`optimizer::Explanation`]), the machine code of each
//! optimized op, and for PyPy logs our op counts beside PyPy's by category.

mod chart;
mod html;
mod model;
mod runs;
#[cfg(test)]
mod tests;

pub use model::TraceView;
use trace_ir::text::GuardName;
use trace_ir::Trace;

/// What to put in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewOptions {
    /// Compile each optimized trace and show the code of each op.
    pub asm: bool,
    /// Run each trace and its optimized version this many times in the reference
    /// interpreter (guided random inputs) and count the exits (0: no runs).
    pub runs: usize,
    /// Seed of the inputs of the runs.
    pub seed: u64,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            asm: true,
            runs: 0,
            seed: 0,
        }
    }
}

/// The traces to show: every trace of the file, or for a PyPy log with unoptimized
/// (`jit-log-noopt`) sections only those, each paired with PyPy's optimized version (the
/// `jit-log-opt-*` section that follows it).
pub fn views<'a>(traces: &'a [Trace], opts: &ViewOptions) -> Vec<TraceView<'a>> {
    let is_noopt = |t: &Trace| t.info.section.as_deref() == Some("jit-log-noopt");
    let has_noopt = traces.iter().any(is_noopt);
    let mut views = traces
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
            TraceView::new(k, t, pypy, opts.asm, (opts.runs, opts.seed))
        })
        .collect::<Vec<_>>();
    link_bridges(&mut views);
    views
}

/// Link each bridge (a trace whose header says `bridge out of Guard...`) to the earlier
/// trace that has that guard (by id, or by PyPy's guard address kept as resume key).
fn link_bridges(views: &mut [TraceView]) {
    for k in 0..views.len() {
        let Some(name) = trace_ir::text::bridge_origin(&views[k].input.info) else {
            continue;
        };
        let found = (0..k).rev().find_map(|j| {
            let t = views[j].input;
            t.guards
                .iter()
                .find(|g| match name {
                    GuardName::Id(id) => g.id == id,
                    GuardName::Address(a) => g.resume_key == a,
                })
                .map(|g| (j, g.id))
        });
        if let Some((j, g)) = found {
            views[j].bridges.push((g, k));
            views[k].parent = Some((j, views[j].name()));
        }
    }
}

/// The HTML page for the traces of the file called `title`.
pub fn render(title: &str, traces: &[Trace], opts: &ViewOptions) -> String {
    html::page(title, &views(traces, opts))
}
