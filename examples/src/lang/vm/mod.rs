//! The bytecode interpreter and its JIT driver: counts loop iterations, records hot loops,
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

use super::bytecode::{Builtin, Constant, Instr, Program, Slot};
use super::heap::*;
use super::parser::{BinOp, Pos, UnOp};
use crate::jit::exec::{LoopCode, TraceRunner};
use crate::jit::recorder::{Abort, Recorded, Recorder};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::{Duration, Instant};
use trace_ir::{GuardId, Opcode, Trace};

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
    /// The trace runner of `jit::exec` (interprets the trace on real memory).
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
    /// Iterations before a loop is recorded.
    pub hot_threshold: u32,
    /// Failures of one guard before its loop is recorded again.
    pub retrace_threshold: u32,
    /// Re-recordings of one loop before the last trace is kept for good.
    pub max_retraces: u32,
    /// Abandoned recordings before a loop is never recorded again.
    pub max_aborts: u32,
    /// Logging.
    pub log: LogFlags,
}

impl Config {
    /// Default settings for `mode` and `engine`, logging from `TRACEJIT_LOG`.
    pub fn new(mode: Mode, engine: Engine) -> Config {
        Config {
            mode,
            engine,
            hot_threshold: 50,
            retrace_threshold: 100,
            max_retraces: 2,
            max_aborts: 3,
            log: LogFlags::from_env(),
        }
    }
}

/// A runtime error of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runtime error at {}: {}", self.pos, self.message)
    }
}

impl std::error::Error for RuntimeError {}

/// What happened to one compiled trace.
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    /// Source line of the loop.
    pub line: u32,
    /// Ops of the recorded trace (not counting inputs and label parameters).
    pub ops_recorded: usize,
    /// Ops after optimization (equal to `ops_recorded` when not optimized).
    pub ops_final: usize,
    /// Guards of the recorded trace.
    pub guards_recorded: usize,
    /// Guards after optimization.
    pub guards_final: usize,
    /// Allocations of the recorded trace.
    pub allocs_recorded: usize,
    /// Allocations after optimization.
    pub allocs_final: usize,
    /// Allocations the optimizer removed (stayed virtual).
    pub virtuals_removed: usize,
    /// Time spent in the optimizer.
    pub optimize_time: Duration,
    /// Time spent compiling (backend or runner setup).
    pub compile_time: Duration,
    /// The trace as recorded.
    pub recorded: Trace,
    /// The trace that was compiled (the optimized one in [`Mode::JitOptimized`]).
    pub compiled: Trace,
}

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Every trace compiled, in order.
    pub traces: Vec<TraceStats>,
    /// Abandoned recordings.
    pub aborts: u32,
    /// Entries into compiled code.
    pub entries: u64,
    /// Guard failures (exits from compiled code).
    pub guard_failures: u64,
    /// Loops recorded again because a guard failed too often.
    pub retraces: u32,
    /// Objects allocated (by the interpreter, compiled code and exits).
    pub allocations: u64,
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// What the program printed.
    pub output: String,
    /// Counters.
    pub stats: RunStats,
}

struct CompiledLoop {
    code: Box<dyn LoopCode>,
    entry_slots: Vec<Slot>,
    /// Exits per resume key (a guard and its copy in the peeled loop body count together).
    failures: HashMap<u64, u32>,
    loop_exit_guards: HashSet<GuardId>,
}

#[derive(Default)]
struct LoopState {
    counter: u32,
    aborts: u32,
    retraces: u32,
    disabled: bool,
    compiled: Option<CompiledLoop>,
}

/// Compiles recorded traces into runnable loops: the pluggable part of the embedding.
pub trait Compiler {
    /// Turn `trace` (already optimized or not) into a runnable loop.
    fn compile(&mut self, trace: Trace, log: &LogFlags) -> Result<Box<dyn LoopCode>, String>;
}

struct RunnerCompiler;

impl Compiler for RunnerCompiler {
    fn compile(&mut self, trace: Trace, _log: &LogFlags) -> Result<Box<dyn LoopCode>, String> {
        Ok(Box::new(TraceRunner::new(trace)))
    }
}

/// The compiler for `engine`.
pub fn compiler_for(engine: Engine) -> Box<dyn Compiler> {
    match engine {
        Engine::TraceRunner => Box::new(RunnerCompiler),
        Engine::Native => crate::jit::native::native_compiler(),
    }
}

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

fn count_ops(t: &Trace, f: impl Fn(Opcode) -> bool) -> usize {
    t.ops.iter().filter(|o| f(o.opcode)).count()
}

fn type_name(class: u64) -> &'static str {
    match class {
        INT_CLASS => "int",
        FLOAT_CLASS => "float",
        PAIR_CLASS => "pair",
        ARRAY_CLASS => "array",
        NONE_CLASS => "None",
        _ => "<corrupt object>",
    }
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

    fn class(&self, s: Slot) -> u64 {
        self.heap.class_of(self.slots[s as usize])
    }

    fn int(&self, s: Slot) -> i64 {
        self.heap.int_value(self.slots[s as usize])
    }

    fn num(&self, s: Slot) -> Option<f64> {
        let o = self.slots[s as usize];
        match self.heap.class_of(o) {
            INT_CLASS => Some(self.heap.int_value(o) as f64),
            FLOAT_CLASS => Some(self.heap.float_value(o)),
            _ => None,
        }
    }

    /// Format a value the way `print` does.
    pub fn format_value(&self, obj: u64) -> String {
        let h = &self.heap;
        match h.class_of(obj) {
            INT_CLASS => h.int_value(obj).to_string(),
            FLOAT_CLASS => format!("{:?}", h.float_value(obj)),
            NONE_CLASS => "None".into(),
            PAIR_CLASS => format!(
                "({}, {})",
                self.format_value(h.load(obj, PAIR_FIRST_OFFSET)),
                self.format_value(h.load(obj, PAIR_SECOND_OFFSET))
            ),
            ARRAY_CLASS => {
                let items: Vec<String> = (0..h.array_len(obj)).map(|i| h.array_get(obj, i).to_string()).collect();
                format!("[{}]", items.join(", "))
            }
            _ => "<corrupt object>".into(),
        }
    }

    fn truthy(&self, s: Slot) -> bool {
        let o = self.slots[s as usize];
        match self.heap.class_of(o) {
            INT_CLASS => self.heap.int_value(o) != 0,
            FLOAT_CLASS => self.heap.float_value(o) != 0.0,
            NONE_CLASS => false,
            _ => true,
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

    fn abort_recording(&mut self, id: usize, why: &str) {
        self.recorder = None;
        self.stats.aborts += 1;
        let l = &mut self.loops[id];
        l.aborts += 1;
        l.counter = 0;
        if l.aborts >= self.config.max_aborts {
            l.disabled = true;
        }
        if self.config.log.jit {
            eprintln!("[jit] recording of loop {id} abandoned: {why}");
        }
    }

    /// Execute the `loop_header` at `pc`; returns the next position.
    fn loop_header(&mut self, pc: usize, id: usize) -> Result<usize, RuntimeError> {
        // Close or abandon a recording in progress.
        if let Some(rec) = self.recorder.take() {
            if rec.loop_id() as usize != id {
                let rid = rec.loop_id() as usize;
                self.abort_recording(rid, "nested loop while recording");
            } else {
                match rec.close(&self.slots, &self.heap) {
                    Ok(recorded) => self.install(pc, id, recorded),
                    Err(Abort(why)) => self.abort_recording(id, &why),
                }
            }
        }
        if self.config.mode == Mode::Interpreter {
            return Ok(pc + 1);
        }
        if self.skip_entry_at == Some(pc) {
            self.skip_entry_at = None;
            return Ok(pc + 1);
        }
        if self.loops[id].compiled.is_some() {
            return self.enter(pc, id);
        }
        let l = &mut self.loops[id];
        if l.disabled || self.recorder.is_some() {
            return Ok(pc + 1);
        }
        l.counter += 1;
        if l.counter >= self.config.hot_threshold {
            if self.config.log.jit {
                eprintln!("[jit] recording loop {id} at line {}", self.program.positions[pc].line);
            }
            let unbox = self.config.mode == Mode::JitOptimized;
            self.recorder = Some(Recorder::start(self.program, pc, &self.slots, &self.heap, unbox));
        }
        Ok(pc + 1)
    }

    fn install(&mut self, pc: usize, id: usize, rec: Recorded) {
        let log = self.config.log.clone();
        let line = self.program.positions[pc].line;
        let recorded = rec.trace;
        let mut ts = TraceStats {
            line,
            ops_recorded: recorded.num_real_ops(),
            guards_recorded: count_ops(&recorded, |o| o.is_guard()),
            allocs_recorded: count_ops(&recorded, |o| o.has(trace_ir::OpFlags::ALLOC)),
            ..TraceStats::default()
        };
        if log.opt {
            eprintln!(
                "[jit] recorded trace of loop {id} (line {line}):\n{}",
                trace_ir::print_trace(&recorded)
            );
        }
        ts.recorded = recorded.clone();
        let mut loop_exit_guards: HashSet<GuardId> = rec.loop_exit_guards.into_iter().collect();
        let trace = if self.config.mode == Mode::JitOptimized {
            let t0 = Instant::now();
            let opts = optimizer::Options {
                peel: true,
                ..optimizer::Options::default()
            };
            let opt = match self.optimizer.optimize(&recorded, &opts) {
                Ok(o) => o,
                Err(e) => {
                    self.abort_recording(id, &format!("optimizer refused the trace: {e:?}"));
                    return;
                }
            };
            ts.optimize_time = t0.elapsed();
            // The loop's normal exits have copies in the peeled loop body.
            for (o, c) in trace_ir::peeled_guard_copies(&recorded) {
                if loop_exit_guards.contains(&o) {
                    loop_exit_guards.insert(c);
                }
            }
            ts.virtuals_removed = opt.stats.virtuals_removed;
            if log.opt {
                eprintln!(
                    "[jit] optimized trace of loop {id}:\n{}",
                    trace_ir::print_trace(&opt.trace)
                );
            }
            if log.stats {
                eprintln!("[jit] optimizer stats of loop {id}: {:?}", opt.stats);
            }
            opt.trace
        } else {
            recorded
        };
        ts.ops_final = trace.num_real_ops();
        ts.guards_final = count_ops(&trace, |o| o.is_guard());
        ts.allocs_final = count_ops(&trace, |o| o.has(trace_ir::OpFlags::ALLOC));
        ts.compiled = trace.clone();
        let t0 = Instant::now();
        let code = match self.compiler.compile(trace, &log) {
            Ok(c) => c,
            Err(e) => {
                self.abort_recording(id, &format!("compilation failed: {e}"));
                return;
            }
        };
        ts.compile_time = t0.elapsed();
        if log.jit || log.stats {
            eprintln!(
                "[jit] loop {id} (line {line}) compiled: {} -> {} ops, {} -> {} guards, {} -> {} allocations, optimize {:?}, compile {:?}",
                ts.ops_recorded, ts.ops_final, ts.guards_recorded, ts.guards_final, ts.allocs_recorded, ts.allocs_final,
                ts.optimize_time, ts.compile_time
            );
        }
        self.stats.traces.push(ts);
        self.loops[id].compiled = Some(CompiledLoop {
            code,
            entry_slots: rec.entry_slots,
            failures: HashMap::new(),
            loop_exit_guards,
        });
    }

    /// Enter the compiled loop `id` at its header `pc`; returns where to resume.
    fn enter(&mut self, pc: usize, id: usize) -> Result<usize, RuntimeError> {
        let compiled = self.loops[id].compiled.as_mut().expect("compiled");
        let inputs: Vec<u64> = compiled.entry_slots.iter().map(|&s| self.slots[s as usize]).collect();
        self.stats.entries += 1;
        let exit = compiled.code.run(&inputs, &mut self.heap).map_err(|e| RuntimeError {
            pos: self.program.positions[pc],
            message: format!("compiled code failed: {e}"),
        })?;
        self.stats.guard_failures += 1;
        let resume = exit.resume_key as usize;
        if resume >= self.program.code.len() {
            return Err(self.error(pc, format!("compiled code returned a bad resume position {resume}")));
        }
        let live = self.program.live_slots(resume);
        if live.len() != exit.values.len() {
            return Err(self.error(
                pc,
                format!(
                    "exit of {} carries {} values for {} live slots",
                    exit.guard,
                    exit.values.len(),
                    live.len()
                ),
            ));
        }
        for (&s, &v) in live.iter().zip(&exit.values) {
            if !self.heap.contains(v) {
                return Err(self.error(
                    pc,
                    format!("exit of {} returned an invalid object address {v:#x}", exit.guard),
                ));
            }
            self.slots[s as usize] = v;
        }
        if resume == pc {
            self.skip_entry_at = Some(pc);
        }
        let l = &mut self.loops[id];
        let compiled = l.compiled.as_mut().expect("compiled");
        if !compiled.loop_exit_guards.contains(&exit.guard) {
            let n = compiled.failures.entry(exit.resume_key).or_insert(0);
            *n += 1;
            if *n >= self.config.retrace_threshold && l.retraces < self.config.max_retraces {
                l.retraces += 1;
                l.compiled = None;
                l.counter = 0;
                self.stats.retraces += 1;
                if self.config.log.jit {
                    eprintln!(
                        "[jit] {} of loop {id} failed too often: recording the loop again",
                        exit.guard
                    );
                }
            }
        }
        Ok(resume)
    }

    /// Execute one instruction (not a loop header); `None` at the end of the program.
    fn step(&mut self, pc: usize, instr: Instr) -> Result<Option<usize>, RuntimeError> {
        match instr {
            Instr::LoadConst { dst, k } => self.slots[dst as usize] = self.const_boxes[k as usize],
            Instr::Move { dst, src } => self.slots[dst as usize] = self.slots[src as usize],
            Instr::Binary { op, dst, a, b } => {
                let r = self.binary(pc, op, a, b)?;
                self.slots[dst as usize] = r;
            }
            Instr::Unary { op, dst, a } => {
                let r = self.unary(pc, op, a)?;
                self.slots[dst as usize] = r;
            }
            Instr::GetItem { dst, arr, idx } => {
                let (o, i) = self.index(pc, arr, idx)?;
                let v = self.heap.array_get(o, i);
                self.slots[dst as usize] = self.heap.new_int(v);
            }
            Instr::SetItem { arr, idx, val } => {
                let (o, i) = self.index(pc, arr, idx)?;
                if self.class(val) != INT_CLASS {
                    return Err(self.error(pc, format!("arrays hold ints, not {}", type_name(self.class(val)))));
                }
                let v = self.int(val);
                self.heap.array_set(o, i, v);
            }
            Instr::Call { dst, builtin, args, .. } => {
                let r = self.call(pc, builtin, args)?;
                self.slots[dst as usize] = r;
            }
            Instr::Print { arg, last } => {
                let s = self.format_value(self.slots[arg as usize]);
                self.output.push_str(&s);
                self.output.push(if last { '\n' } else { ' ' });
            }
            Instr::Jump { target } => return Ok(Some(target as usize)),
            Instr::JumpIfFalse { cond, target, .. } => {
                if !self.truthy(cond) {
                    return Ok(Some(target as usize));
                }
            }
            Instr::LoopHeader { .. } => unreachable!("handled by loop_header"),
            Instr::Halt => return Ok(None),
        }
        Ok(Some(pc + 1))
    }

    fn index(&self, pc: usize, arr: Slot, idx: Slot) -> Result<(u64, usize), RuntimeError> {
        if self.class(arr) != ARRAY_CLASS {
            return Err(self.error(
                pc,
                format!("cannot index a value of type {}", type_name(self.class(arr))),
            ));
        }
        if self.class(idx) != INT_CLASS {
            return Err(self.error(
                pc,
                format!("array index must be an int, not {}", type_name(self.class(idx))),
            ));
        }
        let o = self.slots[arr as usize];
        let i = self.int(idx);
        let len = self.heap.array_len(o);
        if i < 0 || i as u64 >= len as u64 {
            return Err(self.error(pc, format!("index {i} out of range for an array of length {len}")));
        }
        Ok((o, i as usize))
    }

    fn overflow(&self, pc: usize) -> RuntimeError {
        self.error(pc, "integer overflow")
    }

    fn binary(&mut self, pc: usize, op: BinOp, a: Slot, b: Slot) -> Result<u64, RuntimeError> {
        let (ca, cb) = (self.class(a), self.class(b));
        if ca == INT_CLASS && cb == INT_CLASS && op != BinOp::Div {
            let (x, y) = (self.int(a), self.int(b));
            let r = match op {
                BinOp::Add => x.checked_add(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::Sub => x.checked_sub(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::Mul => x.checked_mul(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::FloorDiv | BinOp::Mod => {
                    if y == 0 {
                        return Err(self.error(pc, "division by zero"));
                    }
                    if x == i64::MIN && y == -1 {
                        return Err(self.overflow(pc));
                    }
                    if op == BinOp::FloorDiv {
                        trace_ir::eval::py_div(x, y)
                    } else {
                        trace_ir::eval::py_mod(x, y)
                    }
                }
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl | BinOp::Shr => {
                    if !(0..64).contains(&y) {
                        return Err(self.error(pc, format!("shift amount {y} outside 0..63")));
                    }
                    if op == BinOp::Shr {
                        x >> y
                    } else {
                        let r = x << y;
                        if r >> y != x {
                            return Err(self.overflow(pc));
                        }
                        r
                    }
                }
                BinOp::Lt => (x < y) as i64,
                BinOp::Le => (x <= y) as i64,
                BinOp::Gt => (x > y) as i64,
                BinOp::Ge => (x >= y) as i64,
                BinOp::Eq => (x == y) as i64,
                BinOp::Ne => (x != y) as i64,
                BinOp::Div => unreachable!(),
            };
            return Ok(self.heap.new_int(r));
        }
        let (Some(x), Some(y)) = (self.num(a), self.num(b)) else {
            return Err(self.error(
                pc,
                format!(
                    "unsupported operand types for {op:?}: {} and {}",
                    type_name(ca),
                    type_name(cb)
                ),
            ));
        };
        let f = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => {
                if y == 0.0 {
                    return Err(self.error(pc, "division by zero"));
                }
                x / y
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                let r = match op {
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    BinOp::Ge => x >= y,
                    BinOp::Eq => x == y,
                    _ => x != y,
                };
                return Ok(self.heap.new_int(r as i64));
            }
            _ => return Err(self.error(pc, format!("{op:?} is not defined on floats"))),
        };
        Ok(self.heap.new_float(f))
    }

    fn unary(&mut self, pc: usize, op: UnOp, a: Slot) -> Result<u64, RuntimeError> {
        let c = self.class(a);
        match (op, c) {
            (UnOp::Neg, INT_CLASS) => {
                let r = self.int(a).checked_neg().ok_or_else(|| self.overflow(pc))?;
                Ok(self.heap.new_int(r))
            }
            (UnOp::Neg, FLOAT_CLASS) => {
                let f = -self.heap.float_value(self.slots[a as usize]);
                Ok(self.heap.new_float(f))
            }
            (UnOp::Invert, INT_CLASS) => {
                let r = !self.int(a);
                Ok(self.heap.new_int(r))
            }
            (UnOp::Not, _) => {
                let r = !self.truthy(a) as i64;
                Ok(self.heap.new_int(r))
            }
            _ => Err(self.error(pc, format!("bad operand type for unary {op:?}: {}", type_name(c)))),
        }
    }

    fn call(&mut self, pc: usize, builtin: Builtin, args: [Slot; 2]) -> Result<u64, RuntimeError> {
        let a = args[0];
        let obj = self.slots[a as usize];
        let c = self.class(a);
        let bad = |vm: &Self| vm.error(pc, format!("{builtin:?}: unsupported argument type {}", type_name(c)));
        Ok(match (builtin, c) {
            (Builtin::Len, ARRAY_CLASS) => {
                let n = self.heap.array_len(obj) as i64;
                self.heap.new_int(n)
            }
            (Builtin::Abs, INT_CLASS) => {
                let r = self.int(a).checked_abs().ok_or_else(|| self.overflow(pc))?;
                self.heap.new_int(r)
            }
            (Builtin::Abs, FLOAT_CLASS) => {
                let f = self.heap.float_value(obj).abs();
                self.heap.new_float(f)
            }
            (Builtin::Sqrt, INT_CLASS | FLOAT_CLASS) => {
                let x = self.num(a).expect("number");
                let r = crate::jit::recorder::sqrt_f64(x);
                self.heap.new_float(r)
            }
            (Builtin::Float, INT_CLASS) => {
                let x = self.int(a) as f64;
                self.heap.new_float(x)
            }
            (Builtin::Float, FLOAT_CLASS) | (Builtin::Int, INT_CLASS) => obj,
            (Builtin::Int, FLOAT_CLASS) => {
                let x = trace_ir::eval::float_to_int(self.heap.float_value(obj));
                self.heap.new_int(x)
            }
            (Builtin::Array, INT_CLASS) => {
                let n = self.int(a);
                if !(0..=1 << 24).contains(&n) {
                    return Err(self.error(pc, format!("array length {n} outside 0..2^24")));
                }
                self.heap.new_array(n as usize)
            }
            (Builtin::Pair, _) => {
                let second = self.slots[args[1] as usize];
                self.heap.new_pair(obj, second)
            }
            (Builtin::Fst, PAIR_CLASS) => self.heap.load(obj, PAIR_FIRST_OFFSET),
            (Builtin::Snd, PAIR_CLASS) => self.heap.load(obj, PAIR_SECOND_OFFSET),
            _ => return Err(bad(self)),
        })
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
