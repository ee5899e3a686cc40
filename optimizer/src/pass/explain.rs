//! The per-op account of a run ([`crate::Options::explain`]): which input op's turn pushed
//! each working op, which input ops a counted step removed, and at the end what became of
//! every input op ([`crate::Fate`]). Nothing is recorded when the option is off.

use super::{Pass, NO_VIRT};
use crate::{Explanation, Fate, Reason};
use trace_ir::{OpRef, Value, ValueData};

/// What the pass records while explaining.
#[derive(Clone, Default)]
pub(super) struct Explain {
    /// Per input op: the counted step that removed it, with the rule's name.
    removed: Vec<Option<(Reason, Option<&'static str>)>>,
    /// Per arena op: the input op whose turn pushed it.
    origin: Vec<u32>,
    /// The rule that fired last (named in the removal that follows it).
    last_rule: Option<&'static str>,
}

impl Explain {
    /// Empty records for an input of `n` ops.
    pub(super) fn new(n: usize) -> Explain {
        Explain {
            removed: vec![None; n],
            origin: Vec::with_capacity(n + 8),
            last_rule: None,
        }
    }
}

impl<'a> Pass<'a> {
    /// Input op `k` is removed for `r`: counted, and recorded when explaining. Every removal
    /// of an input op goes through here (the final sweep and never-materialized virtuals are
    /// counted in bulk by [`Pass::finish`]).
    pub(super) fn removed_at(&mut self, k: usize, r: Reason) {
        self.counts.removed[r as usize] += 1;
        self.explain_removed(k, r);
    }

    /// The input op being processed is removed for `r`.
    pub(super) fn removed(&mut self, r: Reason) {
        self.removed_at(self.cur, r);
    }

    /// Record (not count) that input op `k` went for `r`; the first record stands.
    pub(super) fn explain_removed(&mut self, k: usize, r: Reason) {
        if let Some(e) = &mut self.explain {
            let rule = matches!(r, Reason::Rule | Reason::Identity)
                .then(|| e.last_rule.take())
                .flatten();
            let slot = &mut e.removed[k];
            if slot.is_none() {
                *slot = Some((r, rule));
            }
        }
    }

    /// A rule fired: counted, and remembered for the removal it causes.
    pub(super) fn fired(&mut self, name: &'static str) {
        *self.counts.stats.rules.entry(name).or_default() += 1;
        if let Some(e) = &mut self.explain {
            e.last_rule = Some(name);
        }
    }

    /// Record that the arena op just pushed comes from the current input op.
    #[inline]
    pub(super) fn note_pushed(&mut self) {
        if let Some(e) = &mut self.explain {
            e.origin.push(self.cur as u32);
        }
    }

    /// Record that the last arena op comes from input op `k` instead.
    /// How many output ops have an origin so far (see [`Pass::note_origins_since`]).
    pub(super) fn origin_mark(&self) -> usize {
        self.explain.as_ref().map_or(0, |e| e.origin.len())
    }

    /// The ops emitted since `mark` ([`Pass::origin_mark`]) come from input op `k`.
    pub(super) fn note_origins_since(&mut self, mark: usize, k: u32) {
        if let Some(e) = &mut self.explain {
            for o in e.origin.iter_mut().skip(mark) {
                *o = k;
            }
        }
    }

    pub(super) fn note_origin(&mut self, k: u32) {
        if let Some(e) = &mut self.explain {
            if let Some(last) = e.origin.last_mut() {
                *last = k;
            }
        }
    }

    /// The account of the run, from the records and the numbering of the output (after the
    /// sweep, before the trace is built).
    pub(super) fn explanation(&mut self) -> Option<Explanation> {
        let e = self.explain.take()?;
        let t = self.input;
        let new_index = &self.sweep.new_index;
        let n = t.ops.len();
        // per input op: its last surviving output op, and whether one of its ops was swept
        let mut own = vec![u32::MAX; n];
        let mut swept = vec![false; n];
        let mut in_order = vec![false; self.v.ops.len()];
        for &o in &self.v.order {
            in_order[o.index()] = true;
            // (Parameters a label carries beyond its input's come from the label but are not
            // what became of it.)
            if self.v.ops[o.index()].opcode.is_input() || self.counts.attached.contains(&o) {
                continue;
            }
            let i = e.origin[o.index()] as usize;
            match new_index[o.index()] {
                u32::MAX => swept[i] = true,
                k => own[i] = k,
            }
        }
        let origins = self
            .sweep
            .out_ops
            .iter()
            .map(|o| OpRef::new(e.origin[o.index()] as usize))
            .collect();
        let out_value = |v: Value| match v.data() {
            ValueData::Const(_) => Some(v),
            ValueData::Op(o) => match new_index[o.index()] {
                u32::MAX => None,
                k => Some(Value::op(OpRef::new(k as usize))),
            },
        };
        let mut fates = Vec::with_capacity(n);
        for (i, op) in t.ops.iter().enumerate() {
            let mapped = self.v.map[i];
            let input_out = op
                .opcode
                .is_input()
                .then(|| out_value(mapped).and_then(|v| v.as_op()))
                .flatten();
            let fate = if let Some(o) = input_out {
                Fate::Kept(o)
            } else if let Some((reason, rule)) = e.removed[i] {
                let value = if op.opcode.result_kind() == trace_ir::Kind::Void {
                    None
                } else {
                    out_value(mapped).or_else(|| out_value(self.v.uf.find(mapped)))
                };
                Fate::Removed { reason, rule, value }
            } else if own[i] != u32::MAX {
                Fate::Kept(OpRef::new(own[i] as usize))
            } else if swept[i] {
                Fate::Removed {
                    reason: Reason::Dead,
                    rule: None,
                    value: None,
                }
            } else if mapped
                .as_op()
                .is_some_and(|o| !in_order[o.index()] && self.v.info[o.index()].virt != NO_VIRT)
            {
                Fate::Removed {
                    reason: Reason::VirtualAlloc,
                    rule: None,
                    value: None,
                }
            } else {
                Fate::Unaccounted
            };
            fates.push(fate);
        }
        Some(Explanation { fates, origins })
    }
}
