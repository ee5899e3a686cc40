//! A reusable JIT driver: everything between an interpreter and tracejit that is not
//! specific to the interpreter's language.
//!
//! The interpreter calls [`Driver::loop_header`] each time it reaches a loop header (keyed
//! by its own program location `K`, e.g. a bytecode position). The driver counts, and
//! answers what to do:
//!
//! - [`AtHeader::Interpret`]: go on interpreting;
//! - [`AtHeader::Record`]: start recording this iteration (the interpreter mirrors what it
//!   executes into a `TraceBuilder` whose `label` carries its live values, and hands the
//!   trace to [`Driver::finish_recording`] when [`AtHeader::Close`] says it is back at this
//!   header, or gives up with [`Driver::abort_recording`]);
//! - [`AtHeader::Run`]: compiled code exists: [`Driver::run`] it.
//!
//! When compiled code leaves through a guard, [`Driver::run`] returns the exit (the guard's
//! resume key and fail arguments: the interpreter resumes there) and counts the guard's
//! failures ([`backend_x86_64::CompiledTrace::guard_failures`]). Once a guard is hot,
//! [`Driver::bridge_to_record`] hands the interpreter what it needs to record a **bridge**
//! from the guard's resume point: a builder whose inputs are the guard's exit words, with
//! the guard's virtual objects rebuilt and what the optimizer knew of them at the guard
//! stated ([`trace_ir::bridge_prologue`]), the value of each fail argument, and the
//! `TargetToken` to jump back to when it reaches the loop header.
//! [`Driver::finish_recording`] then optimizes the bridge (into the loop's peeled body when
//! it proves what the body assumes, `optimizer::Optimizer::optimize_bridge`) and attaches
//! it.
//!
//! A location whose recording is abandoned [`DriverConfig::max_aborts`] times is never
//! recorded again (blacklisted); a guard whose bridge cannot be recorded or attached keeps
//! exiting to the interpreter. Compiled loops and their bridges are kept per location.
//!
//! `examples/examples/hello_driver.rs` is a complete toy interpreter built on it. In short:
//!
//! ```
//! use backend_x86_64::{Exit, ExitValue, SimpleHeap};
//! use driver::{AtHeader, Driver, DriverConfig};
//! use trace_ir::{Kind, Opcode, TraceBuilder};
//! let mut d: Driver<usize> = Driver::new(DriverConfig { hot_loop: 1, ..DriverConfig::default() });
//! // The interpreter reaches the header of loop 0 (`while i < n: i += 1`) with i = 0, n = 10.
//! assert_eq!(d.loop_header(0), AtHeader::Record);
//! // It records one iteration...
//! let mut b = TraceBuilder::new();
//! let ins = [b.input(Kind::Int), b.input(Kind::Int)];
//! let p = b.label(&ins);
//! let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
//! b.guard(Opcode::GuardTrue, &[lt], &p, 0); // leaves at bytecode position 0
//! let one = b.const_int(1);
//! let i = b.op(Opcode::IntAdd, &[p[0], one]);
//! // ...and is back at the header: close and hand it over.
//! assert_eq!(d.loop_header(0), AtHeader::Close);
//! d.close_jump(&mut b, &[i, p[1]]);
//! d.finish_recording(b.build()?)?;
//! // From now on the loop runs natively.
//! assert_eq!(d.loop_header(0), AtHeader::Run);
//! // SAFETY: the loop reads no memory and calls nothing.
//! match unsafe { d.run(0, &[1, 10], &mut SimpleHeap::new()) }? {
//!     Exit::Guard { resume_key: 0, values, .. } => {
//!         assert_eq!(values, vec![ExitValue::Int(10), ExitValue::Int(10)])
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use backend_x86_64::{CompileError, CompileOptions, CompiledTrace, Compiler, Exit, RunError, Runtime};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use trace_ir::{Descr, GuardId, Trace, TraceBuilder, Value};

/// When the driver records, compiles and attaches.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Passes through a loop header before the loop is recorded.
    pub hot_loop: u32,
    /// Failures of a guard before a bridge is recorded from it.
    pub hot_guard: u32,
    /// Abandoned recordings of a location before it is never recorded again.
    pub max_aborts: u32,
    /// Ops a recording may have ([`Driver::too_long`]); a longer trace is abandoned.
    pub max_trace_ops: usize,
    /// Run the optimizer (loops with `Options::peel`).
    pub optimize: bool,
    /// How to compile.
    pub compile: CompileOptions,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            hot_loop: 50,
            hot_guard: 20,
            max_aborts: 3,
            max_trace_ops: 4000,
            optimize: true,
            compile: CompileOptions::default(),
        }
    }
}

/// What the interpreter does at a loop header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtHeader {
    /// Go on interpreting.
    Interpret,
    /// Start recording the loop from here (a `label` of the live values, then the
    /// iteration), and hand the trace to [`Driver::finish_recording`] at
    /// [`AtHeader::Close`]. The driver gives the loop's last label the `TargetToken` its
    /// bridges jump to.
    Record,
    /// A recording of this location (a loop, or a bridge of it) is in progress and is back
    /// at its header: close it and hand it to [`Driver::finish_recording`].
    Close,
    /// The loop is compiled: [`Driver::run`] it.
    Run,
}

/// Why the driver could not do what it was asked.
#[derive(Debug)]
pub enum DriverError {
    /// The call does not fit the driver's state (say, `run` of a location that has no code).
    State(String),
    /// The trace could not be optimized or compiled.
    Compile(String),
    /// Compiled code refused to run.
    Run(RunError),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::State(m) => write!(f, "driver: {m}"),
            DriverError::Compile(m) => write!(f, "driver: cannot compile: {m}"),
            DriverError::Run(e) => write!(f, "driver: {e}"),
        }
    }
}

impl std::error::Error for DriverError {}

impl From<CompileError> for DriverError {
    fn from(e: CompileError) -> Self {
        DriverError::Compile(e.to_string())
    }
}

/// What a bridge recording starts from (see [`Driver::bridge_to_record`]).
#[derive(Debug)]
pub struct BridgeStart {
    /// The guard the bridge leaves from.
    pub guard: GuardId,
    /// A builder with the bridge's inputs (the guard's exit words) and the guard's virtual
    /// objects rebuilt; guard ids continue after the tree's.
    pub builder: TraceBuilder,
    /// The value of each fail argument of the guard in the builder (`None` for a hole), in
    /// order: what the interpreter's resumed state holds in the places they fill.
    pub fail_values: Vec<Option<Value>>,
    /// The `TargetToken` the bridge's final `jump` names (the loop's header; see
    /// [`Driver::close_jump`]; the optimizer may send it into the loop's peeled body).
    pub target: u64,
}

/// Counters of a driver's work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Loops compiled.
    pub loops: u32,
    /// Bridges compiled and attached.
    pub bridges: u32,
    /// Recordings abandoned.
    pub aborts: u32,
    /// Runs of compiled code.
    pub entries: u64,
    /// Exits through guards.
    pub exits: u64,
}

/// A compiled loop and its bridges.
struct Tree {
    code: CompiledTrace,
    /// The compiled traces (the loop, then each bridge): a bridge's prologue needs its
    /// guard's resume data.
    traces: Vec<Trace>,
    /// What the optimizer knew at the guards of `traces` (a bridge starts from it).
    facts: Vec<trace_ir::GuardFacts>,
    /// The loop's body as a way in for bridges (see `Optimizer::optimize_bridge`).
    entries: Vec<trace_ir::BodyEntry>,
    token: u64,
    next_guard: u32,
    /// Guards that have a bridge, or whose bridge could not be made.
    done: std::collections::HashSet<GuardId>,
}

/// What a location is up to.
enum Location {
    Counting { passes: u32, aborts: u32 },
    Blacklisted,
    Compiled(Box<Tree>),
}

/// The recording in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Recording<K> {
    Loop(K),
    Bridge(K, GuardId),
}

/// The driver (see the crate documentation); `K` is the interpreter's program location of
/// a loop header.
pub struct Driver<K> {
    config: DriverConfig,
    locations: HashMap<K, Location>,
    recording: Option<Recording<K>>,
    /// A hot guard waiting for its bridge to be recorded.
    hot: Option<(K, GuardId)>,
    compiler: Compiler,
    optimizer: optimizer::Optimizer,
    next_token: u64,
    stats: DriverStats,
}

impl<K: Copy + Eq + Hash + fmt::Debug> Driver<K> {
    /// A driver with `config`.
    pub fn new(config: DriverConfig) -> Driver<K> {
        Driver {
            config,
            locations: HashMap::new(),
            recording: None,
            hot: None,
            compiler: Compiler::new(),
            optimizer: optimizer::Optimizer::new(),
            next_token: 1,
            stats: DriverStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> &DriverStats {
        &self.stats
    }

    /// The interpreter reached the loop header `key`: what to do (see [`AtHeader`]).
    pub fn loop_header(&mut self, key: K) -> AtHeader {
        match &self.recording {
            Some(Recording::Loop(k) | Recording::Bridge(k, _)) if *k == key => return AtHeader::Close,
            Some(_) => return AtHeader::Interpret,
            None => {}
        }
        let hot_loop = self.config.hot_loop;
        let loc = self
            .locations
            .entry(key)
            .or_insert(Location::Counting { passes: 0, aborts: 0 });
        match loc {
            Location::Compiled(_) => AtHeader::Run,
            Location::Blacklisted => AtHeader::Interpret,
            Location::Counting { passes, .. } => {
                *passes += 1;
                if *passes < hot_loop {
                    return AtHeader::Interpret;
                }
                *passes = 0;
                self.recording = Some(Recording::Loop(key));
                AtHeader::Record
            }
        }
    }

    /// Whether a recording is in progress (the interpreter mirrors its work into it).
    pub fn is_recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Whether the recording in `b` has grown past [`DriverConfig::max_trace_ops`]: the
    /// interpreter then abandons it ([`Driver::abort_recording`]).
    pub fn too_long(&self, b: &TraceBuilder) -> bool {
        b.trace().ops.len() > self.config.max_trace_ops
    }

    /// End the recording in `b` at the loop header (at [`AtHeader::Close`]) with the `jump`
    /// it needs: back to its own label for a loop, to the loop's header (its
    /// `TargetToken`) for a bridge; `args` are the live values, in the order of the loop's
    /// label.
    pub fn close_jump(&self, b: &mut TraceBuilder, args: &[Value]) {
        let target = match &self.recording {
            Some(Recording::Bridge(k, _)) => match self.locations.get(k) {
                Some(Location::Compiled(t)) => Some(t.token),
                _ => None,
            },
            _ => None,
        };
        match target {
            Some(token) => {
                let d = b.descr(Descr::Target(token));
                b.op_with_descr(trace_ir::Opcode::Jump, args, d);
            }
            None => b.jump(args),
        }
    }

    /// The recording in progress cannot go on (an operation the interpreter cannot record,
    /// a length limit, ...): forget it. A location abandoned too often is blacklisted; a
    /// guard whose bridge is abandoned keeps exiting to the interpreter.
    pub fn abort_recording(&mut self) {
        self.stats.aborts += 1;
        match self.recording.take() {
            Some(Recording::Loop(k)) => {
                let max = self.config.max_aborts;
                if let Some(loc) = self.locations.get_mut(&k) {
                    if let Location::Counting { aborts, .. } = loc {
                        *aborts += 1;
                        if *aborts >= max {
                            *loc = Location::Blacklisted;
                        }
                    }
                }
            }
            Some(Recording::Bridge(k, g)) => {
                if let Some(Location::Compiled(t)) = self.locations.get_mut(&k) {
                    t.done.insert(g);
                }
            }
            None => {}
        }
    }

    /// The recording in progress is complete: optimize it, compile it (a loop) or attach it
    /// (a bridge). On an error the recording is abandoned as by
    /// [`Driver::abort_recording`].
    pub fn finish_recording(&mut self, trace: Trace) -> Result<(), DriverError> {
        if trace.ops.len() > self.config.max_trace_ops && self.recording.is_some() {
            self.abort_recording();
            return Err(DriverError::State(format!(
                "the trace has {} ops, more than {}",
                trace.ops.len(),
                self.config.max_trace_ops
            )));
        }
        let r = match self.recording.clone() {
            Some(Recording::Loop(k)) => self.install_loop(k, trace),
            Some(Recording::Bridge(k, g)) => self.install_bridge(k, g, trace),
            None => return Err(DriverError::State("no recording in progress".into())),
        };
        match r {
            Ok(()) => {
                self.recording = None;
                Ok(())
            }
            Err(e) => {
                self.abort_recording();
                Err(e)
            }
        }
    }

    fn install_loop(&mut self, key: K, mut trace: Trace) -> Result<(), DriverError> {
        let token = self.next_token;
        if let Some(l) = trace.last_label() {
            let d = trace.make_descr(Descr::Target(token));
            trace.ops[l.index()].descr = Some(d);
        }
        let (trace, facts, entries) = if self.config.optimize {
            let opts = optimizer::Options {
                peel: true,
                ..optimizer::Options::default()
            };
            let out = self
                .optimizer
                .optimize(&trace, &opts)
                .map_err(|e| DriverError::Compile(format!("{e:?}")))?;
            (out.trace, out.guard_facts, out.body_entries)
        } else {
            (trace, Vec::new(), Vec::new())
        };
        let code = self.compiler.compile(&trace, &self.config.compile)?;
        self.next_token += 1;
        self.stats.loops += 1;
        let next_guard = trace.max_guard_id().map_or(0, |g| g.0 + 1);
        self.locations.insert(
            key,
            Location::Compiled(Box::new(Tree {
                code,
                traces: vec![trace],
                facts,
                entries,
                token,
                next_guard,
                done: Default::default(),
            })),
        );
        Ok(())
    }

    fn install_bridge(&mut self, key: K, guard: GuardId, trace: Trace) -> Result<(), DriverError> {
        let Some(Location::Compiled(t)) = self.locations.get_mut(&key) else {
            return Err(DriverError::State(format!("no compiled loop at {key:?}")));
        };
        t.done.insert(guard);
        let trace = if self.config.optimize {
            let out = self
                .optimizer
                .optimize_bridge(&trace, &optimizer::Options::default(), &t.entries)
                .map_err(|e| DriverError::Compile(format!("{e:?}")))?;
            t.facts.extend(out.guard_facts);
            out.trace
        } else {
            trace
        };
        self.compiler
            .attach_bridge(&mut t.code, guard, &trace, &self.config.compile)?;
        t.next_guard = t.next_guard.max(trace.max_guard_id().map_or(0, |g| g.0 + 1));
        t.traces.push(trace);
        self.stats.bridges += 1;
        Ok(())
    }

    /// Run the compiled loop at `key` on `inputs` (one word per input of the loop trace the
    /// interpreter recorded: its live values at the header). Returns the exit; a guard's
    /// exit is counted, and a guard that is hot now gets a bridge recorded next (see
    /// [`Driver::bridge_to_record`]).
    ///
    /// # Safety
    /// The contract of [`CompiledTrace::run`]: the inputs, the addresses and functions the
    /// loop and its bridges use, and `rt`, are valid for native code compiled with
    /// [`DriverConfig::compile`].
    pub unsafe fn run(&mut self, key: K, inputs: &[u64], rt: &mut dyn Runtime) -> Result<Exit, DriverError> {
        let Some(Location::Compiled(t)) = self.locations.get(&key) else {
            return Err(DriverError::State(format!("no compiled loop at {key:?}")));
        };
        self.stats.entries += 1;
        // SAFETY: this function's contract is the run's.
        let exit = unsafe { t.code.run(inputs, rt) }.map_err(DriverError::Run)?;
        if let Exit::Guard { guard, .. } = exit {
            self.stats.exits += 1;
            let hot = t
                .code
                .guard_failures(guard)
                .is_some_and(|n| n >= u64::from(self.config.hot_guard));
            if hot && !t.done.contains(&guard) && self.recording.is_none() {
                self.hot = Some((key, guard));
            }
        }
        Ok(exit)
    }

    /// After [`Driver::run`] left through a hot guard: what recording a bridge from it
    /// needs (the interpreter resumes at the guard's resume point as usual, with the exit's
    /// values, and records from there; the values the trace gives those places are
    /// [`BridgeStart::fail_values`]). Starts the bridge recording; `None` when no guard
    /// is waiting for a bridge.
    pub fn bridge_to_record(&mut self) -> Option<BridgeStart> {
        let (key, guard) = self.hot.take()?;
        let Some(Location::Compiled(t)) = self.locations.get_mut(&key) else {
            return None;
        };
        let (parent, at) = t
            .traces
            .iter()
            .find_map(|tr| trace_ir::tree::guard_op(tr, guard).map(|at| (tr, at)))?;
        let gd = parent.guard_of(at)?;
        let mut builder = TraceBuilder::new();
        builder.guard_ids_from(t.next_guard);
        let facts = t.facts.iter().find(|f| f.guard == guard).map_or(&[][..], |f| &f.words);
        let fail_values = trace_ir::bridge_prologue(parent, gd, facts, &mut builder);
        self.recording = Some(Recording::Bridge(key, guard));
        Some(BridgeStart {
            guard,
            builder,
            fail_values,
            target: t.token,
        })
    }
}
