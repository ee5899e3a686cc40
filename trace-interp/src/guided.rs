//! Guided inputs: a small search that makes a trace run further on concrete inputs, used to
//! exercise real (PyPy) traces whose guards almost never hold on random inputs.
//!
//! Each round runs the trace; when a guard fails, the search looks at the guard's operands and
//! tries to change a **controllable** value so that the guard would hold:
//! - a trace input, or
//! - a value read from initial external memory (a field, array item or interior field of an
//!   external object, before any heap-writing call or through an immutable descriptor),
//!   which becomes an entry of [`RunConfig::preset`].
//!
//! Handled guards: `guard_value` (take the constant), `guard_true`/`guard_false` on a
//! controllable value or on a pure comparison one of whose operands is controllable (the new
//! value is the first of a few candidates derived from the other operand that satisfies the
//! comparison, checked with [`trace_ir::eval::eval_pure`]), `guard_nonnull`/`guard_isnull`, and
//! class guards on a null controllable reference. The search stops when a round changes
//! nothing or after `max_rounds`, and returns the assignment whose run executed the most ops.

use crate::heap::external_address;
use crate::{run_recording, Outcome, RtValue, RunConfig};
use std::collections::HashMap;
use trace_ir::abi::hash_words;
use trace_ir::entity::{OpRef, Value, ValueData};
use trace_ir::eval::eval_pure;
use trace_ir::opcode::{Kind, OpFlags, Opcode};
use trace_ir::trace::Trace;

/// Inputs and initial external memory on which `trace` runs as far as the search could get
/// (see the module documentation), starting from `inputs` and `cfg`.
pub fn guided_inputs(
    trace: &Trace,
    inputs: &[RtValue],
    cfg: &RunConfig,
    max_rounds: usize,
) -> (Vec<RtValue>, RunConfig) {
    let mut inputs = inputs.to_vec();
    let mut cfg = cfg.clone();
    let mut best: Option<(u64, Vec<RtValue>, RunConfig)> = None;
    for _ in 0..max_rounds {
        let (r, vals, prov) = run_recording(trace, &inputs, &cfg, true);
        if best.as_ref().is_none_or(|b| r.steps >= b.0) {
            best = Some((r.steps, inputs.clone(), cfg.clone()));
        }
        let Outcome::GuardFailed { guard, .. } = r.outcome else {
            break;
        };
        let Some(at) = trace.ops.iter().position(|op| {
            op.guard
                .is_some_and(|g| g.index() < trace.guards.len() && trace.guard(g).id == guard)
        }) else {
            break;
        };
        let ctx = Ctx {
            trace,
            vals: &vals,
            prov: &prov,
        };
        let mut changed = false;
        for (v, want) in ctx.fixes(OpRef::new(at)) {
            let Some(o) = v.as_op() else { continue };
            if o.index() < trace.num_inputs && o.index() < inputs.len() {
                if inputs[o.index()] != want {
                    inputs[o.index()] = want;
                    changed = true;
                }
            } else if let Some(&key) = prov.get(&o.index()) {
                if cfg.preset.get(&key) != Some(&want) {
                    cfg.preset.insert(key, want);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    match best {
        Some((_, i, c)) => (i, c),
        None => (inputs, cfg),
    }
}

struct Ctx<'a> {
    trace: &'a Trace,
    vals: &'a [RtValue],
    prov: &'a HashMap<usize, (u64, i64)>,
}

impl Ctx<'_> {
    fn value(&self, v: Value) -> Option<RtValue> {
        match v.data() {
            ValueData::Op(o) => self.vals.get(o.index()).copied(),
            ValueData::Const(c) if c.index() < self.trace.consts.len() => {
                Some(RtValue::from_const(self.trace.consts.get(c)))
            }
            ValueData::Const(_) => None,
        }
    }

    fn controllable(&self, v: Value) -> bool {
        v.as_op()
            .is_some_and(|o| o.index() < self.trace.num_inputs || self.prov.contains_key(&o.index()))
    }

    fn kind(&self, v: Value) -> Kind {
        self.trace.kind_of(v)
    }

    /// (value, wanted value) pairs that would make the guard at `at` hold.
    fn fixes(&self, at: OpRef) -> Vec<(Value, RtValue)> {
        let op = self.trace.op(at);
        let arg = |i: usize| op.args.get(i).copied();
        let nonnull = |v: Value| {
            RtValue::Ref(external_address(hash_words(&[
                0x9e1d,
                v.as_op().map_or(0, |o| o.index() as u64),
            ])))
        };
        match op.opcode {
            Opcode::GuardValue => match (arg(0), arg(1).and_then(|c| self.value(c))) {
                (Some(x), Some(c)) if self.controllable(x) => vec![(x, c.with_kind(self.kind(x)))],
                _ => vec![],
            },
            Opcode::GuardTrue | Opcode::GuardFalse => {
                let Some(x) = arg(0) else { return vec![] };
                let truth = op.opcode == Opcode::GuardTrue;
                if self.controllable(x) {
                    return vec![(x, RtValue::Int(truth as i64))];
                }
                self.solve_condition(x, truth).into_iter().collect()
            }
            Opcode::GuardNonnull | Opcode::GuardClass | Opcode::GuardNonnullClass => match arg(0) {
                Some(p) if self.controllable(p) && self.value(p).is_some_and(|v| v.bits() == 0) => {
                    vec![(p, nonnull(p))]
                }
                _ => vec![],
            },
            Opcode::GuardIsnull => match arg(0) {
                Some(p) if self.controllable(p) => vec![(p, RtValue::Ref(0))],
                _ => vec![],
            },
            _ => vec![],
        }
    }

    /// Make the pure boolean op defining `x` evaluate to `truth` by changing one
    /// controllable operand.
    fn solve_condition(&self, x: Value, truth: bool) -> Option<(Value, RtValue)> {
        let o = x.as_op()?;
        let def = self.trace.op(o);
        if !def.opcode.has(OpFlags::PURE) || def.opcode.result_kind() != Kind::Int {
            return None;
        }
        let args: Vec<Value> = def.args.to_vec();
        let cur: Vec<u64> = args
            .iter()
            .map(|&a| self.value(a).map(|v| v.bits()))
            .collect::<Option<_>>()?;
        for (i, &a) in args.iter().enumerate() {
            if !self.controllable(a) {
                continue;
            }
            let other = cur.get(1 - i.min(1)).copied().filter(|_| args.len() == 2).unwrap_or(0);
            let kind = self.kind(a);
            let mut cands: Vec<u64> = match kind {
                Kind::Float => {
                    let f = f64::from_bits(other);
                    [f, f + 1.0, f - 1.0, 0.0, 1.0].iter().map(|x| x.to_bits()).collect()
                }
                Kind::Ref => vec![other, 0, external_address(other ^ 0x5a5a)],
                _ => {
                    let v = other as i64;
                    [v, v.wrapping_add(1), v.wrapping_sub(1), 0, 1, -1, i64::MAX, i64::MIN]
                        .iter()
                        .map(|&x| x as u64)
                        .collect()
                }
            };
            cands.dedup();
            for c in cands {
                let mut try_args = cur.clone();
                try_args[i] = c;
                if eval_pure(def.opcode, &try_args).is_ok_and(|r| (r != 0) == truth) {
                    return Some((a, RtValue::from_bits(kind, c)));
                }
            }
        }
        None
    }
}
