//! The settings of a run: execution mode, engine, the JIT driver's thresholds, logging.

/// Which execution strategy to use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Interpret only; never record.
    Interpreter,
    /// Record boxed traces and run them without optimization.
    JitUnoptimized,
    /// Record unboxed-header traces and optimize them before running.
    JitOptimized,
}

impl Mode {
    /// All modes, in the order the demo shows them.
    pub const ALL: [Mode; 3] = [Mode::Interpreter, Mode::JitUnoptimized, Mode::JitOptimized];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Interpreter => "interp",
            Mode::JitUnoptimized => "jit-noopt",
            Mode::JitOptimized => "jit-opt",
        }
    }
}

/// What runs compiled loops.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The trace runner of `jit::runner` (interprets the trace on real memory).
    TraceRunner,
    /// x86-64 code from `backend_x86_64`.
    Native,
}

/// What `TRACEJIT_LOG` asked for (comma-separated words).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogFlags {
    /// `opt`: print each recorded trace and its optimized form.
    pub opt: bool,
    /// `asm`: ask the backend to print the machine code of each trace.
    pub asm: bool,
    /// `stats`: print optimizer statistics per trace and a summary per run.
    pub stats: bool,
    /// `jit`: print driver events (recording, aborts, compilations, retraces).
    pub jit: bool,
}

impl LogFlags {
    /// Parse a `TRACEJIT_LOG` value (`opt,asm,stats,jit` or `all`).
    pub fn parse(s: &str) -> LogFlags {
        let mut f = LogFlags::default();
        for w in s.split(',').map(str::trim) {
            match w {
                "opt" => f.opt = true,
                "asm" => f.asm = true,
                "stats" => f.stats = true,
                "jit" => f.jit = true,
                "all" => {
                    f = LogFlags {
                        opt: true,
                        asm: true,
                        stats: true,
                        jit: true,
                    }
                }
                _ => {}
            }
        }
        f
    }
    /// From the `TRACEJIT_LOG` environment variable.
    pub fn from_env() -> LogFlags {
        std::env::var("TRACEJIT_LOG")
            .map(|s| LogFlags::parse(&s))
            .unwrap_or_default()
    }
}

/// Settings of a run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Execution strategy.
    pub mode: Mode,
    /// What runs compiled loops.
    pub engine: Engine,
    /// When the JIT records, compiles, attaches bridges and records again (its `optimize`
    /// is the mode's: on in [`Mode::JitOptimized`] only).
    pub driver: driver::DriverConfig,
    /// Logging.
    pub log: LogFlags,
}

impl Config {
    /// Default settings for `mode` and `engine`, logging from `TRACEJIT_LOG`.
    pub fn new(mode: Mode, engine: Engine) -> Config {
        Config {
            mode,
            engine,
            driver: driver::DriverConfig::default(),
            log: LogFlags::from_env(),
        }
    }
}
