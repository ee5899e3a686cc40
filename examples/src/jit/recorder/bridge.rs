//! Recording a bridge: from a hot guard's resume point back to the loop header.

use super::{Abort, Descrs, ParamKind, Recorder};
use crate::lang::bytecode::{Instr, Program, Slot};
use std::collections::HashMap;
use trace_ir::{Descr, GuardId, Opcode, SizeDescr, Trace, TraceBuilder, WordFacts};

/// What a bridge needs to know of the loop it returns to.
#[derive(Clone, Debug)]
pub struct BridgeTarget {
    /// The loop header's position.
    pub header_pc: usize,
    /// How the live slots cross the loop's label (in its parameter order).
    pub params: Vec<(Slot, ParamKind)>,
    /// The `TargetToken` of the loop's label.
    pub token: u64,
}

impl Recorder {
    /// Start recording a bridge out of guard `guard` of `parent` (a trace of the compiled
    /// loop `loop_`: the loop or one of its bridges, with what its optimizer knew at its
    /// guards' exits, `GuardFacts::words` of `guard`), at the guard's resume position
    /// `resume_pc`, where the interpreter has just written the exit's values into the live
    /// slots. The bridge's inputs are the guard's exit words; its virtual objects are
    /// rebuilt at the bridge's start (`trace_ir::tree::bridge_prologue`), so the optimizer
    /// can keep them virtual. The bridge ends at the loop's header with a jump to the loop's
    /// label. Its guards get ids from `first_guard_id` on.
    pub fn start_bridge(
        program: &Program,
        loop_: &BridgeTarget,
        (parent, facts): (&Trace, &[WordFacts]),
        guard: GuardId,
        resume_pc: usize,
        first_guard_id: u32,
    ) -> Result<Recorder, Abort> {
        let Instr::LoopHeader { id } = program.code[loop_.header_pc] else {
            return Err(Abort("a bridge must end at a loop header".into()));
        };
        let at = trace_ir::tree::guard_op(parent, guard).ok_or_else(|| Abort(format!("no {guard} in the trace")))?;
        let gd = parent
            .guard_of(at)
            .ok_or_else(|| Abort(format!("{guard} has no resume data")))?;
        let mut b = TraceBuilder::new();
        b.guard_ids_from(first_guard_id);
        let fail = trace_ir::bridge_prologue(parent, gd, facts, &mut b);
        let d = Descrs::new(&mut b);
        let live = program.live_slots(resume_pc);
        if live.len() != fail.len() {
            return Err(Abort(format!(
                "{guard} has {} fail arguments for {} live slots",
                fail.len(),
                live.len()
            )));
        }
        let mut r = Recorder {
            b,
            d,
            header_pc: loop_.header_pc,
            loop_id: id,
            vals: vec![None; program.num_slots],
            known_class: HashMap::new(),
            params: loop_.params.clone(),
            entry_slots: program.live_slots(loop_.header_pc),
            loop_exit_guards: Vec::new(),
            token: loop_.token,
            bridge_of: Some(guard),
        };
        for (&s, v) in live.iter().zip(fail) {
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

    /// For a bridge recording: the guard it leaves from.
    pub fn bridge_of(&self) -> Option<GuardId> {
        self.bridge_of
    }
}
