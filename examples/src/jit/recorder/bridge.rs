//! Recording a bridge: from a hot guard's resume point back to the loop header.

use super::{Abort, Descrs, LoopShape, Recorder};
use crate::lang::bytecode::{Instr, Program};
use driver::BridgeStart;
use std::collections::HashMap;
use trace_ir::{Descr, Opcode, SizeDescr};

impl Recorder {
    /// Start recording a bridge of the loop `shape` from the driver's `start` (its builder
    /// holds the guard's exit words as inputs, its virtual boxes rebuilt), at the guard's
    /// resume position `resume_pc`, where the interpreter has just written the exit's values
    /// into the live slots. The bridge ends at the loop's header.
    pub fn start_bridge(
        program: &Program,
        shape: &LoopShape,
        start: BridgeStart,
        resume_pc: usize,
    ) -> Result<Recorder, Abort> {
        let Instr::LoopHeader { id } = program.code[shape.header_pc] else {
            return Err(Abort("a bridge must end at a loop header".into()));
        };
        let mut b = start.builder;
        let d = Descrs::new(&mut b);
        let live = program.live_slots(resume_pc);
        if live.len() != start.fail_values.len() {
            return Err(Abort(format!(
                "{} has {} fail arguments for {} live slots",
                start.guard,
                start.fail_values.len(),
                live.len()
            )));
        }
        let mut r = Recorder {
            b,
            d,
            header_pc: shape.header_pc,
            loop_id: id,
            vals: vec![None; program.num_slots],
            known_class: HashMap::new(),
            params: shape.params.clone(),
            entry_slots: shape.entry_slots.clone(),
            loop_exit_guards: Vec::new(),
        };
        for (&s, v) in live.iter().zip(start.fail_values) {
            r.vals[s as usize] = v;
            // The boxes the prologue allocates have the class of their size descriptor.
            if let Some(v) = v {
                let t = r.b.trace();
                if let Some(o) = v.as_op().map(|o| t.op(o)).filter(|o| o.opcode == Opcode::NewWithVtable) {
                    if let Some(Descr::Size(SizeDescr { vtable: Some(c), .. })) = o.descr.map(|d| t.descr(d)) {
                        r.known_class.insert(v, *c as u64);
                    }
                }
            }
        }
        Ok(r)
    }
}
