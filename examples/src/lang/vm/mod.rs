//! The bytecode interpreter of the example language, with the JIT embedded.
//!
//! The JIT is the `driver` crate's: it counts loop iterations (keyed by the loop's id),
//! says when to record, optimizes and compiles the traces, enters compiled code, counts
//! guard failures, and says when a guard gets a bridge or a loop is recorded again
//! (`Config::driver`). The interpreter keeps what is specific to its language (`jit.rs`).
//!
//! # Life of a loop
//!
//! 1. At a loop header the driver says to record: the interpreter starts a [`Recorder`] and
//!    mirrors the next iteration into it.
//! 2. When the iteration reaches the header again the trace is closed and handed to the
//!    driver, which optimizes it (in [`Mode::JitOptimized`]) and compiles it with the
//!    configured [`Engine`]; the loop is entered at once. A recording that cannot finish
//!    (nested loop, `print`, loop exit, too long) is abandoned.
//! 3. From then on, reaching the header enters compiled code with the boxes of the live slots.
//!    When a guard fails, the exit's values are written back to the slots live at the guard's
//!    resume position (virtual boxes are rebuilt on the heap by the engine) and the
//!    interpreter re-executes that instruction. A hot guard gets a bridge, recorded from
//!    there to the header (native code), or the loop is recorded again (the trace runner).
//!    A guard that fails at the header itself (a class check of the preamble) resumes at the
//!    header without entering again, so each exit makes at least one interpreted iteration
//!    of progress: failing guards never loop forever.
//!
//! # Integer overflow
//!
//! Arithmetic is on 64-bit integers. An overflowing `+`, `-`, `*`, unary `-`, `abs`, `<<` or
//! `MININT // -1` raises a runtime error ("integer overflow") with the line and column. In
//! compiled code the `guard_no_overflow` (or the shift's check) fails, the interpreter resumes
//! at that instruction, re-executes it and raises the same error: the three modes agree.

mod builtins;
mod config;
mod dispatch;
mod jit;
mod results;
mod values;

pub use config::{Config, Engine, LogFlags, Mode};
pub use results::{RunOutput, RunStats, RuntimeError, TraceStats};

use super::bytecode::{Constant, Instr, Program};
use super::heap::Heap;
use crate::jit::engine::Executor;
use crate::jit::recorder::{LoopShape, Recorder};
use backend_x86_64::CompileOptions;
use driver::{Driver, DriverConfig, Native};

/// The interpreter state of one run.
pub struct Vm<'p> {
    program: &'p Program,
    config: Config,
    heap: Heap,
    slots: Vec<u64>,
    const_boxes: Vec<u64>,
    output: String,
    driver: Driver<usize, Executor>,
    /// The recording in progress (of a loop, or of a bridge of it).
    recorder: Option<Recorder>,
    /// The shape of each loop's compiled header, by loop id.
    shapes: Vec<Option<LoopShape>>,
    stats: RunStats,
    /// Header position at which the next entry into compiled code is skipped (after an exit
    /// that resumes at the header itself).
    skip_entry_at: Option<usize>,
}

impl<'p> Vm<'p> {
    /// A VM for `program`; `params` gives the values of the program's parameters in order.
    pub fn new(program: &'p Program, params: &[i64], config: Config) -> Vm<'p> {
        let mut heap = Heap::new();
        let none = heap.none();
        let mut slots = vec![none; program.num_slots];
        for (&(_, s), &v) in program.params.iter().zip(params) {
            slots[s as usize] = heap.new_int(v);
        }
        let const_boxes = program
            .constants
            .iter()
            .map(|c| match *c {
                Constant::Int(v) => heap.new_int(v),
                Constant::Float(v) => heap.new_float(v),
            })
            .collect();
        let executor = match config.engine {
            Engine::TraceRunner => Executor::Runner,
            Engine::Native => Executor::Native(Box::new(Native::new(CompileOptions {
                log_asm: config.log.asm,
                ..CompileOptions::from_env()
            }))),
        };
        let driver_config = DriverConfig {
            optimize: config.mode == Mode::JitOptimized,
            ..config.driver.clone()
        };
        Vm {
            program,
            config,
            heap,
            slots,
            const_boxes,
            output: String::new(),
            driver: Driver::with_engine(driver_config, executor),
            recorder: None,
            shapes: vec![None; program.num_loops],
            stats: RunStats::default(),
            skip_entry_at: None,
        }
    }

    fn error(&self, pc: usize, message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            pos: self.program.positions[pc],
            message: message.into(),
        }
    }

    /// Run the program to its end.
    pub fn run(mut self) -> Result<RunOutput, RuntimeError> {
        let mut pc = 0usize;
        loop {
            let instr = self.program.code[pc];
            if let Instr::LoopHeader { id } = instr {
                pc = self.loop_header(pc, id as usize)?;
                continue;
            }
            self.record(pc);
            pc = match self.step(pc, instr)? {
                Some(next) => next,
                None => break,
            };
        }
        self.stats.allocations = self.heap.allocations;
        self.stats.driver = self.driver.stats().clone();
        if self.config.log.stats {
            eprintln!(
                "[jit] run: {:?}, {} allocations",
                self.stats.driver, self.stats.allocations
            );
        }
        Ok(RunOutput {
            output: self.output,
            stats: self.stats,
        })
    }

    fn overflow(&self, pc: usize) -> RuntimeError {
        self.error(pc, "integer overflow")
    }
}

/// Compile and run `src` in `config`'s mode; `params` are `(name, value)` pairs of variables
/// set before the program starts.
pub fn run_source(src: &str, params: &[(&str, i64)], config: Config) -> Result<RunOutput, String> {
    let names: Vec<&str> = params.iter().map(|p| p.0).collect();
    let program = super::bytecode::compile(src, &names).map_err(|e| e.to_string())?;
    let values: Vec<i64> = params.iter().map(|p| p.1).collect();
    Vm::new(&program, &values, config).run().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interp(src: &str) -> Result<String, String> {
        let mut cfg = Config::new(Mode::Interpreter, Engine::TraceRunner);
        cfg.log = LogFlags::default();
        run_source(src, &[], cfg).map(|o| o.output)
    }

    #[test]
    fn integer_operators_follow_python() {
        let out =
            interp("print(1 + 2 * 3, 7 // 2, -7 // 2, -7 % 3, 7 % -3, 1 << 4, -16 >> 2, 6 & 3, 6 | 3, 6 ^ 3, ~5)");
        assert_eq!(out.unwrap(), "7 3 -4 2 -2 16 -4 2 7 5 -6\n");
        assert_eq!(
            interp("print(2 < 3, 3 <= 2, 2 == 2, 2 != 2, not 0, not 7)").unwrap(),
            "1 0 1 0 1 0\n"
        );
    }

    #[test]
    fn floats_and_builtins() {
        let out =
            interp("print(7 / 2, 1.5 * 2, sqrt(16), int(2.9), int(-2.9), float(3), abs(-4), abs(-2.5), 1 < 1.5, -0.5)");
        assert_eq!(out.unwrap(), "3.5 3.0 4.0 2 -2 3.0 4 2.5 1 -0.5\n");
    }

    #[test]
    fn arrays_pairs_and_none() {
        let src = "a = array(3)\na[1] = 5\nprint(a, len(a), pair(1, pair(2.5, a)), snd(pair(1, 2)))\nif 0 { y = 1 }\nprint(y, not y)";
        assert_eq!(interp(src).unwrap(), "[0, 5, 0] 3 (1, (2.5, [0, 5, 0])) 2\nNone 1\n");
    }

    #[test]
    fn control_flow() {
        let src = "i = 0\nwhile i < 5 {\n if i == 1 { print(10) } else if i == 3 { print(30) }\n else { print(i) }\n i = i + 1\n}";
        assert_eq!(interp(src).unwrap(), "0\n10\n2\n30\n4\n");
    }

    #[test]
    fn runtime_errors_have_positions() {
        let cases = [
            ("x = 1 + pair(1, 2)", "1:7", "unsupported operand types"),
            ("x = 1\ny = x // 0", "2:7", "division by zero"),
            ("x = 9223372036854775807 + 1", "1:25", "integer overflow"),
            ("x = -9223372036854775808 // -1", "1:26", "integer overflow"),
            ("x = -(-9223372036854775808)", "1:5", "integer overflow"),
            ("x = abs(-9223372036854775808)", "1:8", "integer overflow"),
            ("x = 3 << 62", "1:7", "integer overflow"),
            ("x = 1 << 64", "1:7", "shift amount 64"),
            ("a = array(2)\na[2] = 1", "2:1", "index 2 out of range"),
            ("a = array(2)\nx = a[-1]", "2:6", "index -1 out of range"),
            ("x = fst(1)", "1:8", "unsupported argument type int"),
            ("x = len(2.5)", "1:8", "unsupported argument type float"),
            ("x = 1.5 & 1", "1:9", "not defined on floats"),
            ("a = array(2)\na[0] = 0.5", "2:1", "arrays hold ints"),
        ];
        for (src, pos, msg) in cases {
            let e = interp(src).unwrap_err();
            assert!(e.contains(pos) && e.contains(msg), "{src:?}: {e}");
        }
    }

    #[test]
    fn log_flags_parse() {
        let f = LogFlags::parse("opt, stats");
        assert!(f.opt && f.stats && !f.asm && !f.jit);
        assert_eq!(
            LogFlags::parse("all"),
            LogFlags {
                opt: true,
                asm: true,
                stats: true,
                jit: true
            }
        );
        assert_eq!(LogFlags::parse(""), LogFlags::default());
    }
}
