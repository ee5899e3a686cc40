//! How to compile ([`CompileOptions`], [`MemoryAccess`]) and why compiling can fail
//! ([`CompileError`]).

use std::fmt;
use trace_ir::{OpRef, Opcode};

/// How compiled code reaches memory and functions.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum MemoryAccess {
    /// Native code reads and writes memory itself at the addresses the trace computes and
    /// calls the trace's function addresses directly (the embedder guarantees they are real;
    /// see the crate documentation). The fast mode, and the default.
    #[default]
    Direct,
    /// Every op that touches memory, allocates, calls a function, reads or sets the exception
    /// state or checks an object's class or type becomes a call into the [`crate::Runtime`]
    /// ([`crate::Runtime::exec`]), and failing guards get their fail arguments from
    /// [`crate::Runtime::guard_exit`]. Native code never dereferences a trace value, so traces
    /// naming foreign memory and functions (PyPy logs: `ConstPtr`, raw addresses, function
    /// addresses of another process) run safely against a model of that memory such as
    /// `trace_interp::ModelHeap`. Arithmetic, guards on values, loops and exits stay
    /// native.
    Hooks,
}

/// How to compile. `Default` is the fast configuration with no logging; it reads no
/// environment ([`CompileOptions::from_env`] does).
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// How native code reaches memory and functions (default [`MemoryAccess::Direct`]).
    pub memory: MemoryAccess,
    /// Number of general-purpose registers the allocator may use (3..=13, default 13;
    /// fewer registers means more spilling, for tests). Outside the range, compiling fails
    /// with [`CompileError::Options`].
    pub int_regs: usize,
    /// Number of XMM registers the allocator may use (2..=15, default 15). Outside the
    /// range, compiling fails with [`CompileError::Options`].
    pub float_regs: usize,
    /// Print the disassembly with each op's code range to stderr (needs the `disasm`
    /// feature for instructions; without it the bytes are printed). Default off.
    pub log_asm: bool,
    /// List the code in `/tmp/perf-<pid>.map` for `perf report` (entries of freed code
    /// give way to the code that reuses its memory; see `docs/debugging.md`). Default off.
    pub perf_map: bool,
    /// Register the code with GDB through its JIT interface: a symbol per trace and bridge,
    /// a line table into the trace's text and unwind information, removed when the code is
    /// freed (`docs/debugging.md`). Default false.
    pub gdb_jit: bool,
    /// Write a perf jitdump, `jit-<pid>.dump`, into this directory (the first directory
    /// given in the process is used for all code), for `perf inject --jit`
    /// (`docs/debugging.md`). Default `None`.
    pub jitdump: Option<std::path::PathBuf>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            memory: MemoryAccess::Direct,
            int_regs: 13,
            float_regs: 15,
            log_asm: false,
            perf_map: false,
            gdb_jit: false,
            jitdump: None,
        }
    }
}

impl CompileOptions {
    /// The defaults, with logging and profiler and debugger output switched on from the
    /// environment: `log_asm` when `TRACEJIT_LOG` (a comma-separated list) contains `asm`,
    /// `perf_map` when `TRACEJIT_PERFMAP` is `1`, `gdb_jit` when `TRACEJIT_GDB` is `1`, and
    /// `jitdump` when `TRACEJIT_JITDUMP` names a directory.
    pub fn from_env() -> Self {
        let log = std::env::var("TRACEJIT_LOG").unwrap_or_default();
        CompileOptions {
            log_asm: log.split(',').any(|w| w.trim() == "asm"),
            perf_map: std::env::var("TRACEJIT_PERFMAP").is_ok_and(|v| v == "1"),
            gdb_jit: std::env::var("TRACEJIT_GDB").is_ok_and(|v| v == "1"),
            jitdump: std::env::var_os("TRACEJIT_JITDUMP")
                .filter(|d| !d.is_empty())
                .map(std::path::PathBuf::from),
            ..CompileOptions::default()
        }
    }

    /// Check the register counts.
    pub(crate) fn check(&self) -> Result<(), CompileError> {
        if !(3..=13).contains(&self.int_regs) {
            return Err(CompileError::Options(format!(
                "int_regs is {}, not in 3..=13",
                self.int_regs
            )));
        }
        if !(2..=15).contains(&self.float_regs) {
            return Err(CompileError::Options(format!(
                "float_regs is {}, not in 2..=15",
                self.float_regs
            )));
        }
        Ok(())
    }
}

/// Why a trace could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The trace uses an op (or an op form) this backend does not compile.
    Unsupported {
        /// The op.
        op: OpRef,
        /// Its opcode.
        opcode: Opcode,
    },
    /// The trace does not pass `trace_ir::verify` (checked before compiling), or breaks
    /// an invariant the backend relies on.
    BadTrace(String),
    /// The [`CompileOptions`] are out of range.
    Options(String),
    /// Executable memory could not be obtained.
    Memory(String),
    /// A bug in the backend.
    Internal(String),
    /// The bridge cannot be attached where it was asked to be (see
    /// [`crate::CompiledTrace::attach_bridge`]).
    Bridge(String),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Unsupported { op, opcode } => {
                write!(f, "{op}: `{opcode}` is not supported by the x86-64 backend")
            }
            CompileError::BadTrace(m) => write!(f, "malformed trace: {m}"),
            CompileError::Options(m) => write!(f, "compile options: {m}"),
            CompileError::Memory(m) => write!(f, "executable memory: {m}"),
            CompileError::Internal(m) => write!(f, "internal backend error: {m}"),
            CompileError::Bridge(m) => write!(f, "cannot attach the bridge: {m}"),
        }
    }
}

impl std::error::Error for CompileError {}
