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
//! How code is compiled and run is the driver's [`Engine`]: [`Native`] (x86-64 code from
//! `backend_x86_64`, the default) or the embedder's own. The driver optimizes
//! ([`DriverConfig::optimize`]: loops with peeling, bridges into the loop's peeled body when
//! they prove what it assumes), keeps the compiled traces, and tells what each compilation
//! did ([`TraceReport`]) and what it did overall ([`DriverStats`]).
//!
//! When compiled code leaves through a guard, [`Driver::run`] returns the exit (the guard's
//! resume key and fail arguments: the interpreter resumes there) and counts it. With an
//! engine that has bridges, once a guard has failed [`DriverConfig::hot_guard`] times
//! ([`Engine::guard_failures`]), [`Driver::bridge_to_record`] hands the interpreter what it
//! needs to record a **bridge** from the guard's resume point: a builder whose inputs are
//! the guard's exit words, with the guard's virtual objects rebuilt and what the optimizer
//! knew of them at the guard stated ([`trace_ir::bridge_prologue`]), the value of each fail
//! argument, and the `TargetToken` to jump back to when it reaches the loop header.
//! [`Driver::finish_recording`] then optimizes the bridge and attaches it, or, when it is a
//! short pure path back to the loop body and no bridge is attached to the loop yet, merges
//! it into the loop and compiles the loop again ([`DriverConfig::if_convert`]). With an engine
//! without bridges, guards that fail [`DriverConfig::retrace_after`] times throw the loop's
//! code away so that it is recorded again (at most [`DriverConfig::max_retraces`] times).
//! Guards the interpreter names as the loop's own exits (its loop test) are neither.
//!
//! A location whose recording is abandoned [`DriverConfig::max_aborts`] times is never
//! recorded again (blacklisted); a guard whose bridge cannot be recorded or attached keeps
//! exiting to the interpreter. Compiled loops and their bridges are kept per location.
//!
//! `examples/examples/hello_driver.rs` is a complete toy interpreter built on it, and the
//! example language of `examples/src/lang` embeds the JIT through it (with a second engine
//! of its own). In short:
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
//! let exit = b.guard(Opcode::GuardTrue, &[lt], &p, 0); // leaves at bytecode position 0
//! let one = b.const_int(1);
//! let i = b.op(Opcode::IntAdd, &[p[0], one]);
//! // ...and is back at the header: close and hand it over (`exit` is the loop's own exit).
//! assert_eq!(d.loop_header(0), AtHeader::Close);
//! d.close_jump(&mut b, &[i, p[1]]);
//! let report = d.finish_recording(b.build()?, &[exit])?;
//! assert!(report.optimizer.is_some()); // peeled, optimized, then compiled
//! // From now on the loop runs natively.
//! assert_eq!(d.loop_header(0), AtHeader::Run);
//! // SAFETY: the loop reads no memory and calls nothing.
//! match unsafe { d.run(0, &[1, 10], &mut SimpleHeap::new()) }? {
//!     Exit::Guard { resume_key: 0, values, .. } => {
//!         assert_eq!(values, vec![ExitValue::Int(10), ExitValue::Int(10)])
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!((d.stats().loops, d.stats().entries, d.stats().exits), (1, 1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod engine;
mod report;

pub use backend_x86_64::{Exit, ExitValue};
pub use engine::{Engine, EngineError, Native};
pub use report::{BridgeStart, DriverError, DriverStats, TraceReport};

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;
use std::time::Instant;
use trace_ir::{BodyEntry, Descr, GuardFacts, GuardId, Trace, TraceBuilder, Value};

/// When the driver records, compiles, attaches and records again.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Passes through a loop header before the loop is recorded.
    pub hot_loop: u32,
    /// Failures of a guard before a bridge is recorded from it (engines with bridges).
    pub hot_guard: u32,
    /// Failures of guards with one resume key before the loop is recorded again (engines
    /// without bridges; a guard and its copy in the peeled loop body count together).
    pub retrace_after: u32,
    /// Times one location is recorded again before its code is kept for good.
    pub max_retraces: u32,
    /// Abandoned recordings of a location before it is never recorded again.
    pub max_aborts: u32,
    /// Ops a recording may have ([`Driver::too_long`]); a longer trace is abandoned.
    pub max_trace_ops: usize,
    /// Run the optimizer (loops with `Options::peel`, bridges with `optimize_bridge`).
    pub optimize: bool,
    /// With the optimizer: merge a bridge into its loop when it is a short pure path back to
    /// the loop body and no bridge is attached to the loop yet (`optimizer::ifconv::merge_bridge`,
    /// [`MAX_MERGES`] per loop): the loop is compiled again with both paths and no branch
    /// between them.
    pub if_convert: bool,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            hot_loop: 50,
            hot_guard: 20,
            retrace_after: 100,
            max_retraces: 2,
            max_aborts: 3,
            max_trace_ops: 4000,
            optimize: true,
            if_convert: true,
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

/// A compiled loop and its bridges.
struct Tree<C> {
    code: C,
    /// The compiled traces (the loop, then each bridge): a bridge's prologue needs its
    /// guard's resume data.
    traces: Vec<Trace>,
    /// What the optimizer knew at the guards of `traces` (a bridge starts from it).
    facts: Vec<GuardFacts>,
    /// The loop's body as a way in for bridges (see `Optimizer::optimize_bridge`).
    entries: Vec<BodyEntry>,
    token: u64,
    /// The first guard id no trace of the tree uses.
    next_guard: u32,
    /// The loop's own exits (and their copies in the peeled body).
    loop_exits: HashSet<GuardId>,
    /// Guards that have a bridge, or whose bridge could not be made.
    done: HashSet<GuardId>,
    /// Guard failures per resume key (engines without bridges).
    failures: HashMap<u64, u32>,
    /// Bridges merged into the loop ([`MAX_MERGES`] at most).
    merges: u32,
}

/// Bridges merged into one loop at most ([`DriverConfig::if_convert`]): each merge compiles
/// the loop again, and a merged path's guards may get bridges that merge in turn.
pub const MAX_MERGES: u32 = 4;

/// What a location is up to.
struct Location<C> {
    passes: u32,
    aborts: u32,
    retraces: u32,
    blacklisted: bool,
    tree: Option<Box<Tree<C>>>,
}

impl<C> Default for Location<C> {
    fn default() -> Self {
        Location {
            passes: 0,
            aborts: 0,
            retraces: 0,
            blacklisted: false,
            tree: None,
        }
    }
}

/// The recording in progress.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Recording<K> {
    Loop(K),
    Bridge(K, GuardId),
}

impl<K: Copy> Recording<K> {
    fn key(self) -> K {
        match self {
            Recording::Loop(k) | Recording::Bridge(k, _) => k,
        }
    }
}

/// The driver (see the crate documentation); `K` is the interpreter's program location of
/// a loop header, `E` how compiled code runs.
pub struct Driver<K, E: Engine = Native> {
    config: DriverConfig,
    engine: E,
    locations: HashMap<K, Location<E::Code>>,
    recording: Option<Recording<K>>,
    /// A hot guard waiting for its bridge to be recorded.
    hot: Option<(K, GuardId)>,
    optimizer: optimizer::Optimizer,
    next_token: u64,
    stats: DriverStats,
}

impl<K: Copy + Eq + Hash + fmt::Debug> Driver<K, Native> {
    /// A driver with `config` compiling to native code with the default options.
    pub fn new(config: DriverConfig) -> Driver<K, Native> {
        Driver::with_engine(config, Native::default())
    }
}

impl<K: Copy + Eq + Hash + fmt::Debug, E: Engine> Driver<K, E> {
    /// A driver with `config` whose code `engine` compiles and runs.
    pub fn with_engine(config: DriverConfig, engine: E) -> Driver<K, E> {
        Driver {
            config,
            engine,
            locations: HashMap::new(),
            recording: None,
            hot: None,
            optimizer: optimizer::Optimizer::new(),
            next_token: 1,
            stats: DriverStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> &DriverStats {
        &self.stats
    }

    /// The settings.
    pub fn config(&self) -> &DriverConfig {
        &self.config
    }

    /// The engine (say, to ask [`Engine::supports_bridges`]).
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The interpreter reached the loop header `key`: what to do (see [`AtHeader`]).
    pub fn loop_header(&mut self, key: K) -> AtHeader {
        match self.recording {
            Some(r) if r.key() == key => return AtHeader::Close,
            Some(_) => return AtHeader::Interpret,
            None => {}
        }
        let loc = self.locations.entry(key).or_default();
        if loc.tree.is_some() {
            return AtHeader::Run;
        }
        if loc.blacklisted {
            return AtHeader::Interpret;
        }
        loc.passes += 1;
        if loc.passes < self.config.hot_loop {
            return AtHeader::Interpret;
        }
        loc.passes = 0;
        self.recording = Some(Recording::Loop(key));
        AtHeader::Record
    }

    /// The location whose loop (or a bridge of it) is being recorded, if any (the
    /// interpreter mirrors its work into the recording).
    pub fn recording(&self) -> Option<K> {
        self.recording.map(Recording::key)
    }

    /// Whether a recording is in progress.
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
        let target = match self.recording {
            Some(Recording::Bridge(k, _)) => self.tree(k).map(|t| t.token),
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
        let Some(r) = self.recording.take() else { return };
        self.stats.aborts += 1;
        let max = self.config.max_aborts;
        let Some(loc) = self.locations.get_mut(&r.key()) else {
            return;
        };
        match r {
            Recording::Loop(_) => {
                loc.aborts += 1;
                loc.passes = 0;
                if loc.aborts >= max {
                    loc.blacklisted = true;
                }
            }
            Recording::Bridge(_, g) => {
                if let Some(t) = loc.tree.as_mut() {
                    t.done.insert(g);
                }
            }
        }
    }

    /// The recording in progress is complete: optimize it, compile it (a loop) or attach it
    /// (a bridge), and say what was done. `loop_exits` are the guards of `trace` that leave
    /// the loop the way the program does (its loop test): they get no bridge and count
    /// toward no retrace. On an error the recording is abandoned as by
    /// [`Driver::abort_recording`].
    pub fn finish_recording(&mut self, trace: Trace, loop_exits: &[GuardId]) -> Result<TraceReport<K>, DriverError> {
        let Some(r) = self.recording else {
            return Err(DriverError::State("no recording in progress".into()));
        };
        let res = if trace.ops.len() > self.config.max_trace_ops {
            Err(DriverError::TooLong {
                ops: trace.ops.len(),
                max: self.config.max_trace_ops,
            })
        } else {
            match r {
                Recording::Loop(k) => self.install_loop(k, trace, loop_exits),
                Recording::Bridge(k, g) => self.install_bridge(k, g, trace, loop_exits),
            }
        };
        match res {
            Ok(report) => {
                self.recording = None;
                self.stats.exits_after_warmup = 0;
                Ok(report)
            }
            Err(e) => {
                self.abort_recording();
                Err(e)
            }
        }
    }

    fn install_loop(&mut self, key: K, mut recorded: Trace, exits: &[GuardId]) -> Result<TraceReport<K>, DriverError> {
        let t0 = Instant::now();
        let token = self.next_token;
        if let Some(l) = recorded.last_label() {
            let d = recorded.make_descr(Descr::Target(token));
            recorded.ops[l.index()].descr = Some(d);
        }
        let mut loop_exits: HashSet<GuardId> = exits.iter().copied().collect();
        let (trace, facts, entries, stats) = if self.config.optimize {
            let opts = optimizer::Options {
                peel: true,
                ..optimizer::Options::default()
            };
            let out = self
                .optimizer
                .optimize(&recorded, &opts)
                .map_err(DriverError::Optimize)?;
            // The loop's own exits have copies in the peeled loop body.
            for (o, c) in trace_ir::peeled_guard_copies(&recorded) {
                if loop_exits.contains(&o) {
                    loop_exits.insert(c);
                }
            }
            (out.trace, out.guard_facts, out.body_entries, Some(out.stats))
        } else {
            (recorded.clone(), Vec::new(), Vec::new(), None)
        };
        let optimize_time = t0.elapsed();
        let t1 = Instant::now();
        let code = self.engine.compile(&trace).map_err(DriverError::Compile)?;
        let compile_time = t1.elapsed();
        self.next_token += 1;
        self.stats.loops += 1;
        self.stats.loop_time += optimize_time + compile_time;
        let next_guard = trace.max_guard_id().map_or(0, |g| g.0 + 1);
        self.locations.entry(key).or_default().tree = Some(Box::new(Tree {
            code,
            traces: vec![trace.clone()],
            facts,
            entries,
            token,
            next_guard,
            loop_exits,
            done: HashSet::new(),
            failures: HashMap::new(),
            merges: 0,
        }));
        Ok(TraceReport {
            key,
            bridge_of: None,
            recorded,
            compiled: trace,
            merged: false,
            optimizer: stats,
            optimize_time,
            compile_time,
        })
    }

    fn install_bridge(
        &mut self,
        key: K,
        guard: GuardId,
        recorded: Trace,
        exits: &[GuardId],
    ) -> Result<TraceReport<K>, DriverError> {
        let t0 = Instant::now();
        let Some(t) = self.locations.get_mut(&key).and_then(|l| l.tree.as_mut()) else {
            return Err(DriverError::State(format!("no compiled loop at {key:?}")));
        };
        t.done.insert(guard);
        let (trace, stats) = if self.config.optimize {
            let out = self
                .optimizer
                .optimize_bridge(&recorded, &optimizer::Options::default(), &t.entries)
                .map_err(DriverError::Optimize)?;
            t.facts.extend(out.guard_facts);
            (out.trace, Some(out.stats))
        } else {
            (recorded.clone(), None)
        };
        let optimize_time = t0.elapsed();
        let t1 = Instant::now();
        let merged = (self.config.optimize && self.config.if_convert && t.traces.len() == 1 && t.merges < MAX_MERGES)
            .then(|| optimizer::ifconv::merge_bridge(&t.traces[0], guard, &trace))
            .flatten();
        if let Some(merged) = merged {
            // The loop, compiled again with the bridge's path in it, replaces the old code
            // (which no thread runs: its exit brought control here).
            t.code = self.engine.compile(&merged).map_err(DriverError::Compile)?;
            let compile_time = t1.elapsed();
            t.next_guard = t.next_guard.max(merged.max_guard_id().map_or(0, |g| g.0 + 1));
            t.loop_exits.extend(exits);
            t.traces[0] = merged.clone();
            t.merges += 1;
            self.stats.bridges += 1;
            self.stats.merged += 1;
            self.stats.bridge_time += optimize_time + compile_time;
            return Ok(TraceReport {
                key,
                bridge_of: Some(guard),
                recorded,
                compiled: merged,
                merged: true,
                optimizer: stats,
                optimize_time,
                compile_time,
            });
        }
        self.engine
            .attach_bridge(&mut t.code, guard, &trace)
            .map_err(DriverError::Compile)?;
        let compile_time = t1.elapsed();
        t.next_guard = t.next_guard.max(trace.max_guard_id().map_or(0, |g| g.0 + 1));
        t.loop_exits.extend(exits);
        t.traces.push(trace.clone());
        self.stats.bridges += 1;
        self.stats.bridge_time += optimize_time + compile_time;
        Ok(TraceReport {
            key,
            bridge_of: Some(guard),
            recorded,
            compiled: trace,
            merged: false,
            optimizer: stats,
            optimize_time,
            compile_time,
        })
    }

    fn tree(&self, key: K) -> Option<&Tree<E::Code>> {
        self.locations.get(&key).and_then(|l| l.tree.as_deref())
    }

    /// Run the compiled loop at `key` on `inputs` (one word per input of the loop trace the
    /// interpreter recorded: its live values at the header). Returns the exit. A guard's
    /// exit is counted; a guard that is hot now gets a bridge recorded next (see
    /// [`Driver::bridge_to_record`]), or, with an engine without bridges, the loop's code
    /// is thrown away when its guards failed too often (the next [`Driver::loop_header`]
    /// counts towards recording it again).
    ///
    /// # Safety
    /// The engine's contract for [`Engine::run`] (for [`Native`], that of
    /// `backend_x86_64::CompiledTrace::run`: the inputs, the addresses and functions the
    /// loop and its bridges use, and `rt`, are valid for the native code).
    pub unsafe fn run(&mut self, key: K, inputs: &[u64], rt: &mut E::Runtime) -> Result<Exit, DriverError> {
        let no_code = || DriverError::State(format!("no compiled loop at {key:?}"));
        let loc = self.locations.get_mut(&key).ok_or_else(no_code)?;
        let t = loc.tree.as_mut().ok_or_else(no_code)?;
        self.stats.entries += 1;
        // SAFETY: this function's contract is the run's.
        let exit = unsafe { self.engine.run(&mut t.code, inputs, rt) }.map_err(DriverError::Run)?;
        let Exit::Guard { guard, resume_key, .. } = exit else {
            return Ok(exit);
        };
        self.stats.exits += 1;
        self.stats.exits_after_warmup += 1;
        if t.loop_exits.contains(&guard) {
            return Ok(exit);
        }
        if self.engine.supports_bridges() {
            let hot =
                (self.engine.guard_failures(&t.code, guard)).is_some_and(|n| n >= u64::from(self.config.hot_guard));
            if hot && !t.done.contains(&guard) && self.recording.is_none() {
                self.hot = Some((key, guard));
            }
            return Ok(exit);
        }
        let n = t.failures.entry(resume_key).or_insert(0);
        *n += 1;
        if *n >= self.config.retrace_after && loc.retraces < self.config.max_retraces {
            loc.retraces += 1;
            loc.tree = None;
            loc.passes = 0;
            self.stats.retraces += 1;
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
        if self.recording.is_some() {
            return None;
        }
        let t = self.tree(key)?;
        let (parent, at) = t
            .traces
            .iter()
            .find_map(|tr| trace_ir::tree::guard_op(tr, guard).map(|at| (tr, at)))?;
        let gd = parent.guard_of(at)?;
        let mut builder = TraceBuilder::new();
        builder.guard_ids_from(t.next_guard);
        let facts = t.facts.iter().find(|f| f.guard == guard);
        let fail_values = trace_ir::bridge_prologue(parent, gd, facts, &mut builder);
        let target = t.token;
        self.recording = Some(Recording::Bridge(key, guard));
        Some(BridgeStart {
            guard,
            builder,
            fail_values,
            target,
        })
    }
}
