//! The output: a backward sweep drops unused pure ops and heap reads, the emission order is
//! renumbered into a fresh [`Trace`], and the statistics are completed.

use super::Tables;
use super::{Pass, NO_VIRT};
use crate::{OptError, Optimized, Reason};
use smallvec::SmallVec;
use trace_ir::{FailArg, GuardData, Op, OpFlags, OpRef, Opcode, Trace, Value, ValueData};

/// The tables of the final sweep (reused from trace to trace).
#[derive(Default)]
pub(crate) struct Sweep {
    /// Per arena op: whether the output needs it.
    pub(super) live: Vec<bool>,
    /// Per arena op: its index in the output (`u32::MAX`: not emitted).
    pub(super) new_index: Vec<u32>,
    /// The arena ops of the output, in order.
    pub(super) out_ops: Vec<OpRef>,
}

impl<'a> Pass<'a> {
    /// Flush what is pending, sweep, renumber: the optimized trace and the tables to reuse.
    pub(super) fn finish(mut self) -> Result<(Optimized, Box<Tables>), OptError> {
        self.flush_writes();
        let carried_pure = self.carry_pure();
        self.mark_live();
        self.carry_unused();
        let carried = self.carried_loads();
        let carried_virtuals = self.carried_virtuals();
        let dead = self.number_kept();
        self.counts.removed[Reason::Dead as usize] += dead;
        let explanation = self.explanation();
        let trace = self.renumbered()?;
        let body_entries = self.body_entries(&trace, &carried, &carried_virtuals, &carried_pure);
        let guard_facts = trace
            .guards
            .iter()
            .zip(std::mem::take(&mut self.resume.facts))
            .zip(std::mem::take(&mut self.resume.fields))
            .map(|((gd, words), fields)| trace_ir::GuardFacts {
                guard: gd.id,
                words,
                fields,
            })
            .collect();
        let never = self.v.info.iter().filter(|i| i.virt != NO_VIRT).count();
        self.counts.stats.virtuals_removed = never;
        self.counts.removed[Reason::VirtualAlloc as usize] += never;
        for &r in Reason::ALL {
            let n = self.counts.removed[r as usize];
            if n > 0 {
                self.counts.stats.removed.insert(r, n);
            }
        }
        self.counts.stats.ops_out = trace.num_real_ops();
        if cfg!(debug_assertions) {
            trace_ir::verify(&trace).map_err(OptError::BadOutput)?;
        }
        self.v.ops.clear();
        let tables = Box::new(Tables {
            v: self.v,
            cse: self.cse,
            mem: self.mem,
            virtuals: self.virtuals,
            last_use: self.header.last_use,
            resume: self.resume,
            sweep: self.sweep,
            kept: self.kept,
            carry: self.carry,
        });
        Ok((
            Optimized {
                trace,
                stats: self.counts.stats,
                guard_facts,
                body_entries,
                carried,
                carried_virtuals,
                carried_pure,
                explanation,
            },
            tables,
        ))
    }

    /// The backward sweep: an op is needed if it has an effect or a needed op uses it.
    pub(super) fn mark_live(&mut self) {
        let n = self.v.ops.len();
        let live = &mut self.sweep.live;
        live.clear();
        live.resize(n, false);
        let mark = |live: &mut Vec<bool>, v: Value| {
            if let Some(o) = v.as_op() {
                live[o.index()] = true;
            }
        };
        for &o in self.v.order.iter().rev() {
            let op = &self.v.ops[o.index()];
            let removable = self.opts.dce
                && o.index() >= self.input.num_inputs
                && op.opcode != Opcode::Label
                && is_removable(op.opcode);
            if !live[o.index()] && removable {
                continue;
            }
            live[o.index()] = true;
            op.for_each_value_read(&self.resume.guards, |v| mark(live, v));
        }
    }

    /// Give every kept op of the emission order its output index (label parameters are
    /// always kept: they are positional); returns how many ops were dropped.
    pub(super) fn number_kept(&mut self) -> usize {
        let n = self.v.ops.len();
        let Sweep {
            live,
            new_index,
            out_ops,
        } = &mut self.sweep;
        new_index.clear();
        new_index.resize(n, u32::MAX);
        out_ops.clear();
        out_ops.reserve(self.v.order.len());
        let mut in_label_params = 0usize;
        let mut dead = 0usize;
        for &o in &self.v.order {
            let op = &self.v.ops[o.index()];
            let keep = live[o.index()] || in_label_params > 0;
            in_label_params = in_label_params.saturating_sub(1);
            if op.opcode == Opcode::Label {
                in_label_params = op.args.len();
            }
            if !keep {
                dead += usize::from(!self.counts.attached.contains(&o));
                continue;
            }
            new_index[o.index()] = out_ops.len() as u32;
            out_ops.push(o);
        }
        dead
    }

    /// The kept ops renumbered into a fresh trace (operands and resume data remapped).
    pub(super) fn renumbered(&mut self) -> Result<Trace, OptError> {
        let new_index = &self.sweep.new_index;
        let remap = |v: Value| -> Result<Value, OptError> {
            match v.data() {
                ValueData::Const(_) => Ok(v),
                ValueData::Op(o) => match new_index[o.index()] {
                    u32::MAX => Err(OptError::BadOutput(trace_ir::VerifyError {
                        op: None,
                        message: format!("working op {o} used but never emitted"),
                    })),
                    k => Ok(Value::op(OpRef::new(k as usize))),
                },
            }
        };
        let mut ops = Vec::with_capacity(self.sweep.out_ops.len());
        for &o in &self.sweep.out_ops {
            let op = &self.v.ops[o.index()];
            let mut args = SmallVec::with_capacity(op.args.len());
            for &a in &op.args {
                args.push(remap(a)?);
            }
            ops.push(Op {
                opcode: op.opcode,
                descr: op.descr,
                guard: op.guard,
                args,
            });
        }
        let remap_fa = |fa: FailArg| -> Result<FailArg, OptError> {
            Ok(match fa {
                FailArg::Value(v) => FailArg::Value(remap(v)?),
                other => other,
            })
        };
        let mut guards: Vec<GuardData> = std::mem::take(&mut self.resume.guards);
        for gd in &mut guards {
            for fa in &mut gd.fail_args {
                *fa = remap_fa(*fa)?;
            }
            for vo in &mut gd.virtuals {
                for f in &mut vo.fields {
                    f.1 = remap_fa(f.1)?;
                }
            }
            for w in &mut gd.writes {
                w.obj = remap(w.obj)?;
                w.value = remap_fa(w.value)?;
            }
        }
        let mut descrs = self.input.descrs.clone();
        descrs.extend(self.extra_descrs.iter().cloned());
        if let Some((jump, body)) = self.retarget {
            let k = new_index[jump.index()] as usize;
            ops[k].descr = Some(trace_ir::DescrRef::new(descrs.len()));
            descrs.push(trace_ir::Descr::Target(body));
        }
        Ok(Trace {
            ops,
            num_inputs: self.input.num_inputs,
            consts: std::mem::take(&mut self.v.consts),
            descrs,
            guards,
            info: self.input.info.clone(),
            aliasing: self.input.aliasing,
        })
    }
}

/// Whether an unused op of this opcode may be dropped: pure ops, loads (`OpFlags::LOAD`) and
/// `force_token` (the token of the running frame, which does nothing else).
fn is_removable(opc: Opcode) -> bool {
    opc.is_pure() || opc.has(OpFlags::LOAD) || opc == Opcode::ForceToken
}
