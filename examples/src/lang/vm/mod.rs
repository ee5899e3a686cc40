//! The bytecode interpreter of the example language, with the JIT embedded.
//!
//! The interpreter and its JIT driver: counts loop iterations, records hot loops,
//! optimizes and compiles them, enters compiled code at loop headers, and resumes
//! interpretation when a guard fails.
//!
//! # Life of a loop
//!
//! 1. Every `loop_header` execution counts one iteration. At [`Config::hot_threshold`] the
//!    interpreter starts a [`Recorder`] and records the next iteration.
//! 2. When the iteration reaches the header again the trace is closed, optimized (in
//!    [`Mode::JitOptimized`]), compiled by the configured [`Engine`] and entered at once.
//!    A recording that cannot finish (nested loop, `print`, loop exit, too long) is abandoned;
//!    after [`Config::max_aborts`] abandoned recordings the loop is never recorded again.
//! 3. From then on, reaching the header enters compiled code with the boxes of the live slots.
//!    When a guard fails, the exit's values are written back to the slots live at the guard's
//!    resume position (virtual boxes are rebuilt on the heap by the executor) and the
//!    interpreter re-executes that instruction.
//! 4. Failures are counted per guard. A guard other than the loop's own exit test that fails
//!    [`Config::retrace_threshold`] times throws the trace away and the loop is recorded again
//!    (at most [`Config::max_retraces`] times; then the last trace stays). A guard that fails at
//!    the header itself (a class check of the preamble) resumes at the header without entering
//!    again, so each exit makes at least one interpreted iteration of progress: failing guards
//!    never loop forever.
//!
//! # Integer overflow
//!
//! Arithmetic is on 64-bit integers. An overflowing `+`, `-`, `*`, unary `-`, `abs`, `<<` or
//! `MININT // -1` raises a runtime error ("integer overflow") with the line and column. In
//! compiled code the `guard_no_overflow` (or the shift's check) fails, the interpreter resumes
//! at that instruction, re-executes it and raises the same error: the three modes agree.

mod builtins;
mod compiler;
mod config;
mod dispatch;
mod driver;
mod results;
mod values;

pub use compiler::{compiler_for, Compiler};
pub use config::{Config, Engine, LogFlags, Mode};
pub use results::{RunOutput, RunStats, RuntimeError, TraceStats};

use super::bytecode::{Constant, Instr, Program};
use super::heap::Heap;
use crate::jit::recorder::{Abort, Recorder};
use driver::LoopState;

/// The interpreter state of one run.
pub struct Vm<'p> {
    program: &'p Program,
    config: Config,
    heap: Heap,
    slots: Vec<u64>,
    const_boxes: Vec<u64>,
    output: String,
    loops: Vec<LoopState>,
    recorder: Option<Recorder>,
    compiler: Box<dyn Compiler>,
    /// The optimizer, whose tables are reused from trace to trace.
    optimizer: optimizer::Optimizer,
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
        let compiler = compiler_for(config.engine);
        Vm {
            program,
            config,
            heap,
            slots,
            const_boxes,
            output: String::new(),
            loops: (0..program.num_loops).map(|_| LoopState::default()).collect(),
            recorder: None,
            compiler,
            optimizer: optimizer::Optimizer::new(),
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
            if let Some(rec) = &mut self.recorder {
                if let Err(Abort(why)) = rec.record(self.program, pc, &self.slots, &self.heap, &self.const_boxes) {
                    let id = rec.loop_id() as usize;
                    self.abort_recording(id, &why);
                }
            }
            pc = match self.step(pc, instr)? {
                Some(next) => next,
                None => break,
            };
        }
        self.stats.allocations = self.heap.allocations;
        if self.config.log.stats {
            let s = &self.stats;
            eprintln!(
                "[jit] run: {} trace(s), {} entries, {} guard failures, {} retraces, {} aborted recordings, {} allocations",
                s.traces.len(),
                s.entries,
                s.guard_failures,
                s.retraces,
                s.aborts,
                s.allocations
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
