//! The interpreter's side of the JIT: at a loop header, what the `driver` crate says to do
//! (record with the language's recorder, close, enter compiled code), and on a guard's exit,
//! resuming the interpreter with the exit's values.

use super::config::Mode;
use super::results::{RuntimeError, TraceStats};
use super::Vm;
use crate::jit::recorder::{Abort, Recorder};
use driver::{AtHeader, Exit};

impl Vm<'_> {
    /// Abandon the recording in progress.
    pub(super) fn abort_recording(&mut self, why: &str) {
        if let Some(rec) = self.recorder.take() {
            if self.config.log.jit {
                eprintln!("[jit] recording of loop {} abandoned: {why}", rec.loop_id());
            }
        }
        self.driver.abort_recording();
    }

    /// Record instruction `pc` into the recording in progress.
    pub(super) fn record(&mut self, pc: usize) {
        let Some(rec) = &mut self.recorder else { return };
        let r = match self.driver.too_long(rec.builder()) {
            true => Err(Abort("trace too long".into())),
            false => rec.record(self.program, pc, &self.slots, &self.heap, &self.const_boxes),
        };
        if let Err(Abort(why)) = r {
            self.abort_recording(&why);
        }
    }

    /// Execute the `loop_header` at `pc`; returns the next position.
    pub(super) fn loop_header(&mut self, pc: usize, id: usize) -> Result<usize, RuntimeError> {
        self.stats.header_passes += 1;
        if self.recorder.as_ref().is_some_and(|r| r.loop_id() as usize != id) {
            self.abort_recording("another loop header while recording");
        }
        if self.config.mode == Mode::Interpreter {
            return Ok(pc + 1);
        }
        if self.driver.recording() == Some(id) {
            self.close(pc, id);
        }
        if self.skip_entry_at == Some(pc) {
            self.skip_entry_at = None;
            return Ok(pc + 1);
        }
        match self.driver.loop_header(id) {
            AtHeader::Run => self.enter(pc, id),
            AtHeader::Record => {
                if self.config.log.jit {
                    eprintln!("[jit] recording loop {id} at line {}", self.program.positions[pc].line);
                }
                let unbox = self.config.mode == Mode::JitOptimized;
                self.recorder = Some(Recorder::start(self.program, pc, &self.slots, &self.heap, unbox));
                Ok(pc + 1)
            }
            AtHeader::Interpret | AtHeader::Close => Ok(pc + 1),
        }
    }

    /// The recording of loop `id` (or of a bridge of it) is back at the header `pc`: close
    /// it and hand it to the driver.
    fn close(&mut self, pc: usize, id: usize) {
        let Some(rec) = self.recorder.take() else {
            return self.abort_recording("no recorder");
        };
        let driver = &self.driver;
        let recorded = match rec.close(&self.slots, &self.heap, |b, args| driver.close_jump(b, args)) {
            Ok(r) => r,
            Err(Abort(why)) => return self.abort_recording(&why),
        };
        let log = &self.config.log;
        if log.opt {
            eprintln!(
                "[jit] recorded trace of loop {id}:\n{}",
                trace_ir::print_trace(&recorded.trace)
            );
        }
        match self.driver.finish_recording(recorded.trace, &recorded.loop_exit_guards) {
            Ok(report) => {
                if log.opt {
                    eprintln!(
                        "[jit] compiled trace of loop {id}:\n{}",
                        trace_ir::print_trace(&report.compiled)
                    );
                }
                if log.stats {
                    eprintln!("[jit] optimizer stats of loop {id}: {:?}", report.optimizer);
                }
                if log.jit {
                    let what = match (report.bridge_of, report.merged) {
                        (None, _) => "trace".into(),
                        (Some(g), false) => format!("bridge out of {g}"),
                        (Some(g), true) => format!("bridge out of {g} merged into the loop: loop"),
                    };
                    eprintln!(
                        "[jit] loop {id} (line {}): {what} of {} ops compiled, optimize {:?}, compile {:?}",
                        self.program.positions[pc].line,
                        report.compiled.num_real_ops(),
                        report.optimize_time,
                        report.compile_time
                    );
                }
                if report.bridge_of.is_none() {
                    let line = self.program.positions[pc].line;
                    self.stats.traces.push(TraceStats::new(line, report));
                    self.shapes[id] = Some(recorded.shape);
                }
            }
            Err(e) if log.jit => eprintln!("[jit] recording of loop {id} abandoned: {e}"),
            Err(_) => {}
        }
    }

    /// Enter the compiled loop `id` at its header `pc`; returns where to resume.
    fn enter(&mut self, pc: usize, id: usize) -> Result<usize, RuntimeError> {
        let Some(shape) = &self.shapes[id] else {
            return Err(self.error(pc, "compiled code without a recorded loop shape"));
        };
        let inputs: Vec<u64> = shape.entry_slots.iter().map(|&s| self.slots[s as usize]).collect();
        let retraces = self.driver.stats().retraces;
        // SAFETY: the loop was recorded by this interpreter on this heap (`Executor::run`).
        let exit = unsafe { self.driver.run(id, &inputs, &mut self.heap) };
        if self.config.log.jit && self.driver.stats().retraces > retraces {
            eprintln!("[jit] the guards of loop {id} failed too often: recording the loop again");
        }
        let (guard, resume_key, values) = match exit {
            Ok(Exit::Guard {
                guard,
                resume_key,
                values,
            }) => (guard, resume_key, values),
            Ok(other) => return Err(self.error(pc, format!("compiled code left unexpectedly: {other:?}"))),
            Err(e) => return Err(self.error(pc, e.to_string())),
        };
        let resume = resume_key as usize;
        let live = match resume < self.program.code.len() {
            true => self.program.live_slots(resume),
            false => return Err(self.error(pc, format!("compiled code returned a bad resume position {resume}"))),
        };
        if live.len() != values.len() {
            let m = format!(
                "exit of {guard} carries {} values for {} live slots",
                values.len(),
                live.len()
            );
            return Err(self.error(pc, m));
        }
        for (&s, v) in live.iter().zip(&values) {
            if !self.heap.contains(v.bits()) {
                return Err(self.error(pc, format!("exit of {guard} returned an invalid object {v:?}")));
            }
            self.slots[s as usize] = v.bits();
        }
        if resume == pc {
            self.skip_entry_at = Some(pc);
        }
        if let Some(start) = self.driver.bridge_to_record() {
            let started = match &self.shapes[id] {
                Some(shape) => Recorder::start_bridge(self.program, shape, start, resume),
                None => Err(Abort("no loop shape".into())),
            };
            match started {
                Ok(r) => self.recorder = Some(r),
                Err(Abort(why)) => self.abort_recording(&why),
            }
        }
        Ok(resume)
    }
}
