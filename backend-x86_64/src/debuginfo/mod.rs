//! Debugger and profiler integration: compiled code announced to GDB (its JIT interface),
//! to `perf` (a jitdump file, and the perf map), each opt-in through [`CompileOptions`].
//!
//! Every piece of code (a root trace or a bridge) gets one symbol name,
//! `tracejit_<name>_<n>` (`<name>` is the trace's name with every character but ASCII
//! letters, digits and `_` replaced by `_`, `<n>` a process-wide count), a bridge
//! `tracejit_<name>_<n>_bridge_<guard number>`; all three outputs use it. Its "source" is
//! the trace's text (`trace_ir::text`), with a comment line first (symbol, address, size)
//! and one last (the exit stubs and the epilogue, which follow the last op): each op's code
//! maps to the op's line in it.
//!
//! - GDB ([`CompileOptions::gdb_jit`], module `gdb`): an in-memory ELF object per piece
//!   (module `elf`: the symbol, a DWARF line table and compile unit, call frame information
//!   so GDB unwinds through the code) registered through `__jit_debug_descriptor`; the
//!   trace's text is written to `$TMPDIR/tracejit-<pid>/<symbol>.trace` for `list` and
//!   line display. Both are removed when the code is freed.
//! - perf jitdump ([`CompileOptions::jitdump`], module `jitdump`): `jit-<pid>.dump` with a
//!   `JIT_CODE_DEBUG_INFO` and a `JIT_CODE_LOAD` record per piece, for `perf inject --jit`.
//! - perf map ([`CompileOptions::perf_map`], module `perfmap`): `/tmp/perf-<pid>.map`,
//!   rewritten so that it never lists two entries for one address.
//!
//! The registration lives in the code's [`crate::codemem::CodeMemory`] and is undone before
//! the memory goes back to the code space.

mod elf;
mod gdb;
mod jitdump;
mod perfmap;

use crate::codegen::Unwind;
use crate::CompileOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use trace_ir::{GuardId, Trace};

/// One piece of compiled code, as the debugger and profilers are told about it.
pub(crate) struct Piece<'a> {
    /// The trace it was compiled from.
    pub trace: &'a Trace,
    /// The code, at its run-time address.
    pub code: &'a [u8],
    /// Code range of each op: (op index, start, end).
    pub ranges: &'a [(u32, u32, u32)],
    /// How to unwind the code (see `codegen::frame`).
    pub unwind: &'a [(u32, Unwind)],
    /// The guard a bridge leaves from; `None` for a root trace.
    pub bridge_of: Option<GuardId>,
}

/// What was registered for one piece of code: undone when dropped (before the code is
/// freed).
#[derive(Default)]
pub(crate) struct Registration {
    gdb: Option<gdb::Entry>,
    perf_map: Option<perfmap::Entry>,
    source: Option<PathBuf>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // GDB forgets the object before its source file goes.
        self.gdb.take();
        self.perf_map.take();
        if let Some(path) = self.source.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether `opts` asks for any registration.
pub(crate) fn wanted(opts: &CompileOptions) -> bool {
    opts.gdb_jit || opts.perf_map || opts.jitdump.is_some()
}

/// Announce `piece` to what `opts` asks for. Failures (a file that cannot be written) are
/// reported on stderr once per output and leave that output out: the code runs the same.
pub(crate) fn register(opts: &CompileOptions, piece: &Piece<'_>) -> Registration {
    let mut reg = Registration::default();
    if !wanted(opts) {
        return reg;
    }
    let symbol = symbol_name(piece);
    let addr = piece.code.as_ptr() as u64;
    if opts.perf_map {
        reg.perf_map = perfmap::add(addr, piece.code.len() as u64, &symbol);
    }
    if !opts.gdb_jit && opts.jitdump.is_none() {
        return reg;
    }
    let source = SourceText::new(piece.trace, &symbol, addr, piece.code.len());
    if let Some(dir) = &opts.jitdump {
        jitdump::record(dir, piece, &symbol, &source);
    }
    if opts.gdb_jit {
        let path = source_dir().and_then(|d| {
            let path = d.join(format!("{symbol}.trace"));
            std::fs::write(&path, &source.text).ok().map(|()| path)
        });
        let Some(path) = path else {
            warn_once(&GDB_SOURCE_WARNED, "cannot write the trace text for GDB");
            return reg;
        };
        match elf::object(piece, &symbol, &path, &source) {
            Ok(obj) => reg.gdb = Some(gdb::Entry::register(obj)),
            Err(e) => eprintln!("tracejit: no GDB debug information for {symbol}: {e}"),
        }
        reg.source = Some(path);
    }
    reg
}

static GDB_SOURCE_WARNED: std::sync::Once = std::sync::Once::new();

/// Print `msg` on stderr the first time only.
fn warn_once(once: &std::sync::Once, msg: &str) {
    once.call_once(|| eprintln!("tracejit: {msg}"));
}

/// `$TMPDIR/tracejit-<pid>`, created if needed.
fn source_dir() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tracejit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok().map(|()| dir)
}

/// The process-wide count that makes symbol names unique.
static NEXT_SYMBOL: AtomicU64 = AtomicU64::new(0);

/// The symbol name of `piece` (see the module documentation).
fn symbol_name(piece: &Piece<'_>) -> String {
    let n = NEXT_SYMBOL.fetch_add(1, Ordering::Relaxed);
    let name: String = piece
        .trace
        .info
        .name
        .chars()
        .take(80)
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    let name = if name.is_empty() { "trace".to_string() } else { name };
    match piece.bridge_of {
        None => format!("tracejit_{name}_{n}"),
        Some(g) => format!("tracejit_{name}_{n}_bridge_{}", g.0),
    }
}

/// The text a piece of code maps to, and the line of each op in it.
pub(crate) struct SourceText {
    /// A comment line (symbol, address, size), the trace's text, and a comment line for
    /// the exit stubs and the epilogue.
    pub text: String,
    /// The 1-based line of each op (by op index); the inputs' line for inputs and label
    /// parameters.
    pub op_lines: Vec<u32>,
    /// The line of the code before the first op (the prologue): the inputs' line.
    pub entry_line: u32,
    /// The line of the code after the last op (exit stubs, epilogue).
    pub tail_line: u32,
}

impl SourceText {
    fn new(trace: &Trace, symbol: &str, addr: u64, len: usize) -> SourceText {
        let listing = trace_ir::print_listing(trace);
        let mut text = format!("# {symbol} at {addr:#x}, {len} bytes\n");
        text.push_str(&listing.text);
        text.push_str("# exit stubs and epilogue\n");
        let tail_line = text.lines().count() as u32;
        // 1-based, after the header comment line.
        let inputs = listing.text.lines().position(|l| l.starts_with('[')).unwrap_or(0) as u32;
        let entry_line = inputs + 2;
        let op_lines = listing.op_lines.iter().map(|l| l + 2).collect();
        SourceText {
            text,
            op_lines,
            entry_line,
            tail_line,
        }
    }
}

/// The line of each code range: `(start, end, line)` in code order, covering the whole code
/// (prologue on the entry line, exit stubs and epilogue on the tail line).
pub(crate) fn line_ranges(piece: &Piece<'_>, source: &SourceText) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::with_capacity(piece.ranges.len() + 2);
    let mut at = 0;
    for &(op, start, end) in piece.ranges {
        if start > at {
            out.push((at, start, source.entry_line));
        }
        if end > start {
            out.push((start, end, source.op_lines[op as usize]));
        }
        at = at.max(end);
    }
    let len = piece.code.len() as u32;
    if len > at {
        out.push((at, len, source.tail_line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_ir::{Kind, Opcode, TraceBuilder};

    /// Each op's line in the trace text shows that op: guards, a label with parameters (on
    /// the label's line), the ops after it; with the header comment first.
    #[test]
    fn op_lines_point_at_each_ops_line_of_the_trace_text() {
        let mut b = TraceBuilder::new();
        let (i, n) = (b.input(Kind::Int), b.input(Kind::Int));
        let p = b.label(&[i, n]);
        let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
        b.guard(Opcode::GuardTrue, &[lt], &[p[0]], 0);
        let one = b.const_int(1);
        let i2 = b.op(Opcode::IntAdd, &[p[0], one]);
        b.jump(&[i2, p[1]]);
        let t = b.build().unwrap();
        let s = SourceText::new(&t, "tracejit_x_0", 0x1000, 10);
        let lines: Vec<&str> = s.text.lines().collect();
        assert_eq!(lines[0], "# tracejit_x_0 at 0x1000, 10 bytes");
        assert!(lines[1].starts_with('['), "{}", s.text);
        assert_eq!(s.entry_line, 2);
        assert_eq!(lines.last(), Some(&"# exit stubs and epilogue"));
        assert_eq!(s.tail_line as usize, lines.len());
        let label = t.ops.iter().position(|o| o.opcode == Opcode::Label).unwrap();
        for (k, op) in t.ops.iter().enumerate() {
            let line = lines[s.op_lines[k] as usize - 1];
            if k < t.num_inputs {
                assert!(line.starts_with('['), "input {k}: {line}");
            } else if op.opcode.is_input() {
                assert_eq!(s.op_lines[k], s.op_lines[label], "parameter {k} on the label's line");
            } else {
                assert!(
                    line.contains(op.opcode.name()),
                    "op {k} ({}) on `{line}`",
                    op.opcode.name()
                );
            }
        }
        let mut distinct: Vec<u32> = (label..t.ops.len())
            .filter(|&k| !t.ops[k].opcode.is_input())
            .map(|k| s.op_lines[k])
            .collect();
        distinct.dedup();
        assert_eq!(distinct.len(), 5, "label, int_lt, guard_true, int_add, jump");
    }
}
