//! The JIT driver: loop counting, recording, installing compiled traces, entering them, handling exits.

use super::config::Mode;
use super::results::{RuntimeError, TraceStats};
use super::Vm;
use crate::jit::exec::LoopCode;
use crate::jit::recorder::{Abort, BridgeTarget, Recorded, Recorder};
use crate::lang::bytecode::Slot;
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use trace_ir::{BodyEntry, GuardFacts, GuardId, Opcode, Trace, WordFacts};

/// A loop's compiled code and the bookkeeping of its exits.
struct CompiledLoop {
    code: Box<dyn LoopCode>,
    entry_slots: Vec<Slot>,
    /// Exits per resume key (a guard and its copy in the peeled loop body count together).
    failures: HashMap<u64, u32>,
    loop_exit_guards: HashSet<GuardId>,
    /// What its bridges jump back to.
    target: BridgeTarget,
    /// The compiled traces: the loop, then each bridge.
    traces: Vec<Trace>,
    /// Which of `traces` each guard is in.
    guard_trace: HashMap<GuardId, usize>,
    /// Guards that have a bridge, or whose bridge could not be made.
    no_more_bridges: HashSet<GuardId>,
    /// The first guard id no trace of the loop uses.
    next_guard_id: u32,
    /// What the optimizer knew at each guard about its exit words (a bridge starts from it).
    guard_facts: HashMap<GuardId, Vec<WordFacts>>,
    /// The loop's peeled body as a way in for bridges.
    body_entries: Vec<BodyEntry>,
}

impl CompiledLoop {
    /// Add a compiled trace (the loop, or a bridge) to the bookkeeping.
    fn add_trace(&mut self, t: Trace, facts: Vec<GuardFacts>) {
        self.guard_facts.extend(facts.into_iter().map(|f| (f.guard, f.words)));
        let k = self.traces.len();
        for gd in &t.guards {
            self.guard_trace.insert(gd.id, k);
        }
        self.next_guard_id = self.next_guard_id.max(t.max_guard_id().map_or(0, |g| g.0 + 1));
        self.traces.push(t);
    }
}

/// The driver's state of one loop: hotness, abandoned recordings, retraces, compiled code.
#[derive(Default)]
pub(super) struct LoopState {
    counter: u32,
    aborts: u32,
    retraces: u32,
    disabled: bool,
    compiled: Option<CompiledLoop>,
}

/// The ops of `t` whose opcode satisfies `f`.
fn count_ops(t: &Trace, f: impl Fn(Opcode) -> bool) -> usize {
    t.ops.iter().filter(|o| f(o.opcode)).count()
}

impl Vm<'_> {
    /// Abandon the recording in progress (of loop `id`, or of a bridge of it).
    pub(super) fn abort_recording(&mut self, id: usize, why: &str) {
        if let Some(g) = self.recorder.take().and_then(|r| r.bridge_of()) {
            self.abandon_bridge(id, g, why);
            return;
        }
        self.abandon_loop(id, why);
    }

    /// A bridge out of `g` that cannot be recorded: the guard exits to the interpreter for
    /// good.
    fn abandon_bridge(&mut self, id: usize, g: GuardId, why: &str) {
        self.stats.aborts += 1;
        if let Some(c) = self.loops[id].compiled.as_mut() {
            c.no_more_bridges.insert(g);
        }
        if self.config.log.jit {
            eprintln!("[jit] recording of a bridge out of {g} of loop {id} abandoned: {why}");
        }
    }

    /// A recording of loop `id` abandoned: after enough of them the loop is never recorded
    /// again.
    fn abandon_loop(&mut self, id: usize, why: &str) {
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
    pub(super) fn loop_header(&mut self, pc: usize, id: usize) -> Result<usize, RuntimeError> {
        self.stats.header_passes += 1;
        // Close or abandon a recording in progress.
        if let Some(rec) = self.recorder.take() {
            let (rid, bridge) = (rec.loop_id() as usize, rec.bridge_of());
            if rid != id {
                match bridge {
                    Some(g) => self.abandon_bridge(rid, g, "another loop while recording"),
                    None => self.abandon_loop(rid, "nested loop while recording"),
                }
            } else {
                match (rec.close(&self.slots, &self.heap), bridge) {
                    (Ok(recorded), None) => self.install(pc, id, recorded),
                    (Ok(recorded), Some(g)) => self.install_bridge(id, g, recorded),
                    (Err(Abort(why)), Some(g)) => self.abandon_bridge(id, g, &why),
                    (Err(Abort(why)), None) => self.abandon_loop(id, &why),
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
            let token = id as u64 + 1;
            self.recorder = Some(Recorder::start(self.program, pc, &self.slots, &self.heap, unbox, token));
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
        let mut guard_facts = Vec::new();
        let mut body_entries = Vec::new();
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
            guard_facts = opt.guard_facts;
            body_entries = opt.body_entries;
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
        let compiled_trace = ts.compiled.clone();
        self.stats.traces.push(ts);
        let mut compiled = CompiledLoop {
            code,
            entry_slots: rec.entry_slots,
            failures: HashMap::new(),
            loop_exit_guards,
            target: rec.target,
            traces: Vec::new(),
            guard_trace: HashMap::new(),
            no_more_bridges: HashSet::new(),
            next_guard_id: 0,
            guard_facts: HashMap::new(),
            body_entries,
        };
        compiled.add_trace(compiled_trace, guard_facts);
        self.loops[id].compiled = Some(compiled);
        self.stats.exits_after_warmup = 0;
    }

    /// Optimize (in [`Mode::JitOptimized`]) and compile the recorded bridge out of guard `g`
    /// of loop `id`, and attach it.
    fn install_bridge(&mut self, id: usize, g: GuardId, rec: Recorded) {
        let t0 = Instant::now();
        let log = self.config.log.clone();
        let Some(compiled) = self.loops[id].compiled.as_mut() else {
            return;
        };
        compiled.no_more_bridges.insert(g);
        let mut facts = Vec::new();
        let trace = if self.config.mode == Mode::JitOptimized {
            match (self.optimizer).optimize_bridge(&rec.trace, &optimizer::Options::default(), &compiled.body_entries) {
                Ok(o) => {
                    facts = o.guard_facts;
                    o.trace
                }
                Err(e) => {
                    if log.jit {
                        eprintln!("[jit] optimizer refused the bridge out of {g}: {e:?}");
                    }
                    return;
                }
            }
        } else {
            rec.trace
        };
        if log.opt {
            eprintln!(
                "[jit] bridge out of {g} of loop {id}:\n{}",
                trace_ir::print_trace(&trace)
            );
        }
        match compiled.code.attach_bridge(g, &trace) {
            Ok(()) => {
                compiled.add_trace(trace, facts);
                self.stats.bridges += 1;
                self.stats.exits_after_warmup = 0;
                self.stats.bridge_time += t0.elapsed();
                if log.jit {
                    eprintln!("[jit] bridge out of {g} of loop {id} attached in {:?}", t0.elapsed());
                }
            }
            Err(e) => {
                if log.jit {
                    eprintln!("[jit] bridge out of {g} of loop {id} not attached: {e}");
                }
            }
        }
    }

    /// After an exit through guard `g` of loop `id` to `resume`: when the guard has failed
    /// often enough and the engine attaches bridges, start recording one. Returns whether
    /// a recording started.
    fn maybe_record_bridge(&mut self, id: usize, g: GuardId, resume: usize) -> bool {
        let threshold = self.config.bridge_threshold;
        let Some(c) = self.loops[id].compiled.as_mut() else {
            return false;
        };
        if !c.code.supports_bridges() || c.loop_exit_guards.contains(&g) || c.no_more_bridges.contains(&g) {
            return false;
        }
        let hot = c.code.guard_failures(g).is_some_and(|n| n >= u64::from(threshold));
        if !hot || self.recorder.is_some() {
            return false;
        }
        let Some(&k) = c.guard_trace.get(&g) else { return false };
        let facts = c.guard_facts.get(&g).map_or(&[][..], Vec::as_slice);
        match Recorder::start_bridge(
            self.program,
            &c.target,
            (&c.traces[k], facts),
            g,
            resume,
            c.next_guard_id,
        ) {
            Ok(r) => {
                if self.config.log.jit {
                    eprintln!("[jit] recording a bridge out of {g} of loop {id}");
                }
                self.recorder = Some(r);
                true
            }
            Err(Abort(why)) => {
                c.no_more_bridges.insert(g);
                if self.config.log.jit {
                    eprintln!("[jit] no bridge out of {g} of loop {id}: {why}");
                }
                false
            }
        }
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
        self.stats.exits_after_warmup += 1;
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
        if self.maybe_record_bridge(id, exit.guard, resume) {
            return Ok(resume);
        }
        let l = &mut self.loops[id];
        let compiled = l.compiled.as_mut().expect("compiled");
        if !compiled.code.supports_bridges() && !compiled.loop_exit_guards.contains(&exit.guard) {
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
}
