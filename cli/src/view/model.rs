//! What the viewer shows of one trace: its ops as printed, the optimizer's per-op
//! explanation, the machine code of each optimized op, and PyPy's optimized version.

use super::runs::{tally, Tally};
use crate::opcount::Counts;
use backend_x86_64::{compile, CompileOptions, CompiledTrace, MemoryAccess};
use optimizer::{Fate, Optimized, Options};
use trace_ir::{print_trace, GuardId, OpRef, Trace};

/// One trace of the file, analysed.
pub struct TraceView<'a> {
    /// Its position among the traces shown (`t<N>` in element ids).
    pub index: usize,
    /// The recorded trace.
    pub input: &'a Trace,
    /// The optimizer's output with its explanation, or why the optimizer refused.
    pub optimized: Result<Optimized, String>,
    /// The code of the optimized trace.
    pub code: Code,
    /// PyPy's optimized version of the same trace (PyPy logs with noopt sections).
    pub pypy: Option<&'a Trace>,
    /// Exits on sample runs of the recorded and the optimized trace (`--runs`).
    pub runs: Option<(Tally, Option<Tally>)>,
    /// The bridges out of this trace's guards: guard id and the bridge's view index.
    pub bridges: Vec<(GuardId, usize)>,
    /// The trace this one is a bridge out of: its view index and name.
    pub parent: Option<(usize, String)>,
}

/// The machine code of the optimized trace.
pub enum Code {
    /// Not asked for (`--no-asm`) or no optimized trace to compile.
    None,
    /// The backend refused it.
    Failed(String),
    /// Per op of the optimized trace its instructions (offsets from the start of the code);
    /// the prologue before the first op, the exit stubs and epilogue after the last.
    Compiled {
        /// Code size in bytes.
        size: usize,
        /// Instructions per output op (empty for ops without code).
        per_op: Vec<Vec<String>>,
        /// Instructions before the first op.
        prologue: Vec<String>,
        /// Instructions after the last op.
        stubs: Vec<String>,
    },
}

impl<'a> TraceView<'a> {
    /// Optimize `input` with the explanation on and, with `asm`, compile the result; with
    /// `runs > 0`, run both versions that often (inputs drawn from `seed`).
    pub fn new(
        index: usize,
        input: &'a Trace,
        pypy: Option<&'a Trace>,
        asm: bool,
        (runs, seed): (usize, u64),
    ) -> TraceView<'a> {
        let opts = Options {
            explain: true,
            ..Options::default()
        };
        let optimized = optimizer::optimize(input, &opts).map_err(|e| e.to_string());
        let code = match (&optimized, asm) {
            (Ok(o), true) => compiled(&o.trace),
            _ => Code::None,
        };
        let runs = (runs > 0).then(|| {
            let out = optimized.as_ref().ok().map(|o| &o.trace);
            tally(input, out, runs, seed ^ index as u64)
        });
        TraceView {
            index,
            input,
            optimized,
            code,
            pypy,
            runs,
            bridges: Vec::new(),
            parent: None,
        }
    }

    /// The trace's name, or `trace N` when it has none.
    pub fn name(&self) -> String {
        if self.input.info.name.is_empty() {
            format!("trace {}", self.index)
        } else {
            self.input.info.name.clone()
        }
    }

    /// Op counts of the input, ours and PyPy's.
    pub fn counts(&self) -> (Counts, Option<Counts>, Option<Counts>) {
        let ours = self.optimized.as_ref().ok().map(|o| Counts::of(&o.trace, 0));
        (Counts::of(self.input, 0), ours, self.pypy.map(|p| Counts::of(p, 0)))
    }

    /// How many sample runs failed guard `g` of the recorded (`optimized` false) or the
    /// optimized trace.
    pub fn failures(&self, g: GuardId, optimized: bool) -> Option<usize> {
        let (rec, opt) = self.runs.as_ref()?;
        let t = if optimized { opt.as_ref()? } else { rec };
        Some(t.guards.get(&g).copied().unwrap_or(0))
    }

    /// Per op of the input: the output ops whose origin it is (where its click leads).
    pub fn outputs_of(&self, i: usize) -> Vec<usize> {
        let Ok(o) = &self.optimized else { return Vec::new() };
        let Some(e) = &o.explanation else { return Vec::new() };
        let mut v: Vec<usize> = e.outputs_of(OpRef::new(i)).map(|o| o.index()).collect();
        if let Some(Fate::Removed { value: Some(val), .. }) = e.fates.get(i) {
            if let Some(op) = val.as_op() {
                if !v.contains(&op.index()) {
                    v.push(op.index());
                }
            }
        }
        v
    }
}

/// The printed line of each op of `t` (`None` for inputs and label parameters, which the
/// inputs line and their label's line show), and the inputs line.
pub fn op_lines(t: &Trace) -> (String, Vec<Option<String>>) {
    let text = print_trace(t);
    let mut lines = text.lines().filter(|l| !l.starts_with("aliasing "));
    let header = lines.next().unwrap_or("[]").to_string();
    let mut out = vec![None; t.ops.len()];
    let mut params_left = 0usize;
    for (i, op) in t.ops.iter().enumerate().skip(t.num_inputs) {
        if op.opcode.is_input() && params_left > 0 {
            params_left -= 1;
            continue;
        }
        params_left = if op.opcode == trace_ir::Opcode::Label {
            op.args.len()
        } else {
            0
        };
        out[i] = lines.next().map(str::to_string);
    }
    (header, out)
}

/// Compile `t` in the backend's default (direct) mode; nothing runs.
fn compiled(t: &Trace) -> Code {
    let opts = CompileOptions {
        memory: MemoryAccess::Direct,
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    let c = match compile(t, &opts) {
        Ok(c) => c,
        Err(e) => return Code::Failed(e.to_string()),
    };
    let code = c.code();
    let mut per_op = vec![Vec::new(); t.ops.len()];
    let (mut first, mut last) = (None, 0);
    for (op, r) in c.op_ranges() {
        first.get_or_insert(r.start);
        last = last.max(r.end);
        if let Some(slot) = per_op.get_mut(op.index()) {
            slot.extend(disasm(&c, r.clone()));
        }
    }
    let first = first.unwrap_or(code.len());
    Code::Compiled {
        size: code.len(),
        per_op,
        prologue: disasm(&c, 0..first),
        stubs: disasm(&c, last..code.len()),
    }
}

/// The instructions of `code` in `range`: `offset  text`.
fn disasm(code: &CompiledTrace, range: std::ops::Range<usize>) -> Vec<String> {
    code.instructions(range)
        .into_iter()
        .map(|(at, text)| format!("{at:5x}  {text}"))
        .collect()
}
