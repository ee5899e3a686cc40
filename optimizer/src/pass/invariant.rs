//! Loop-invariant pure results through a peeled loop's body label ([`CarriedPure`]): the
//! body finds what the peeled iteration computed on invariant operands
//! (`Pass::pure_across_label`), and every such result it uses becomes a parameter of its
//! label. The preamble passes the result, the final `jump` passes the parameter back (its
//! operands are the same in every iteration), and a trace entering the body computes it at
//! its `jump` ([`super::entry`]), so the body reads nothing defined before its label.
//!
//! Only ops such a trace can compute are carried this way: no descriptor (no call, no
//! read), integer or float operands and result, defined on every operand
//! ([`defined_everywhere`]).
//! What the body knows of the parameter is what a trace entering it must meet: in a body
//! that carries loads or objects, everything the peeled iteration established about the
//! result (a constant its guards fixed included); in any other body only what the op's
//! transfer function gives from the parameters' facts, which every trace computing the op
//! on operands the body accepts meets (the body keeps the guards that depend on more, and
//! stays enterable). A body that carries loads or objects may also use results no trace
//! entering it could compute (calls, immutable reads); then nothing enters it.

use super::pure::Key;
use super::Pass;
use trace_ir::eval::defined_everywhere;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{CarriedBase, CarriedPure, Descr, Kind, Op, OpRef, Opcode, Value, WordFacts};

/// A result of the peeled iteration the body uses: the value the label takes (an op's
/// result, or a constant the iteration's guards established), the parameter the body reads
/// (`None` when it reads the constant itself), the op on the label's parameters, and what
/// the body assumes of the parameter.
#[derive(Clone, Debug)]
pub(crate) struct Used {
    result: Value,
    param: Option<OpRef>,
    opcode: Opcode,
    args: Vec<CarriedBase>,
    facts: WordFacts,
}

impl<'a> Pass<'a> {
    /// Whether a trace entering the body can compute `key` itself (see the module
    /// documentation).
    pub(super) fn redoable(&self, key: &Key) -> bool {
        let consts: smallvec::SmallVec<[Option<u64>; 3]> =
            key.args.iter().map(|&a| self.const_val(a).map(|c| c.bits())).collect();
        let numbers = |k: Option<Kind>| matches!(k, Some(Kind::Int | Kind::Float));
        key.descr.is_none()
            && key.opcode.is_pure()
            && numbers(Some(key.opcode.result_kind()))
            && (0..key.args.len()).all(|i| numbers(key.opcode.arg_kind(i)))
            && defined_everywhere(key.opcode, &consts)
    }

    /// What the body reads for `v`, the peeled iteration's result for `key`: the label's
    /// parameter that is to carry it, or `v` itself (a constant of a body that carries
    /// loads or objects, which the label states; a result no entering trace could compute,
    /// which the body then depends on, so nothing may enter it). `None`: the body computes
    /// it again (such a result in a body that carries nothing, where entering it is worth
    /// more than the op saved).
    pub(super) fn use_preamble(&mut self, key: &Key, v: Value) -> Option<Value> {
        let args = match &self.cse.body {
            Some((_, positions)) if self.redoable(key) => key
                .args
                .iter()
                .map(|&a| match a.as_const() {
                    Some(c) => Some(CarriedBase::Const(self.v.consts.get(c))),
                    None => positions.get(&a).map(|&k| CarriedBase::Param(k)),
                })
                .collect::<Option<Vec<_>>>(),
            _ => None,
        };
        let all = self.carries();
        let Some(args) = args else {
            self.counts.uses_preamble |= all;
            return all.then_some(v);
        };
        if let Some(u) = self.cse.used.iter().find(|u| u.opcode == key.opcode && u.args == args) {
            return Some(u.param.map_or(u.result, Value::op));
        }
        let kind = key.opcode.result_kind();
        let (param, facts) = if all && v.is_const() {
            if kind != Kind::Int {
                self.counts.uses_preamble = true;
                return Some(v);
            }
            (None, self.word_facts(v))
        } else {
            let p = self.push_arena(Op::new(
                if kind == Kind::Float {
                    Opcode::InputF
                } else {
                    Opcode::InputI
                },
                &[],
            ));
            if kind == Kind::Int && self.opts.intbounds {
                let bound = match (all, v.as_op()) {
                    (true, Some(r)) => self.v.info[r.index()].bound.clone(),
                    _ => self.transfer(key.opcode, &key.args),
                };
                self.v.info[p.index()].bound = bound;
            }
            (Some(p), self.word_facts(Value::op(p)))
        };
        self.cse.used.push(Used {
            result: v,
            param,
            opcode: key.opcode,
            args,
            facts,
        });
        Some(param.map_or(v, Value::op))
    }

    /// Make each used result of the peeled iteration a parameter of the body label, after
    /// its others: the label takes the result, the final `jump` passes the parameter back.
    /// Returns them as the output states them. When the final op is not a `jump` to that
    /// label passing the operands back unchanged, each parameter the body reads becomes a
    /// copy of the result instead (the body reads it across the label), and nothing may
    /// enter the body.
    pub(super) fn carry_pure(&mut self) -> Vec<CarriedPure> {
        let used = std::mem::take(&mut self.cse.used);
        let body = self.cse.body.take();
        let (false, Some((label, positions))) = (used.is_empty(), body) else {
            return Vec::new();
        };
        let n = self.v.ops[label.index()].args.len();
        let params: FxHashMap<usize, Value> = positions.iter().map(|(&p, &k)| (k, p)).collect();
        let jump = self.v.order.last().copied();
        let passes_back = jump.is_some_and(|j| {
            let (op, l) = (&self.v.ops[j.index()], &self.v.ops[label.index()]);
            // (`self.cse.body` is the last label's: a jump without a token goes there.)
            let to_label = match op.descr.map(|d| self.descr(d)) {
                Some(Descr::Target(t)) => l.descr.map(|d| self.descr(d)) == Some(&Descr::Target(*t)),
                Some(Descr::Loop(k)) => *k < 0,
                _ => true,
            };
            op.opcode == Opcode::Jump
                && to_label
                && op.args.len() == n
                && used.iter().flat_map(|u| &u.args).all(|a| match *a {
                    CarriedBase::Param(k) => params.get(&k).is_some_and(|&p| op.args[k] == p),
                    CarriedBase::Const(_) => true,
                })
        });
        // Where the next parameter (or copy) goes: after the label's parameters.
        let mut at = self
            .v
            .order
            .iter()
            .position(|&o| o == label)
            .expect("the label is emitted")
            + 1
            + n;
        let mut out = Vec::with_capacity(used.len());
        for u in used {
            let p = match (u.param, passes_back) {
                (Some(p), true) => p,
                (Some(p), false) => {
                    let op = &mut self.v.ops[p.index()];
                    op.opcode = if op.opcode == Opcode::InputF {
                        Opcode::SameAsF
                    } else {
                        Opcode::SameAsI
                    };
                    op.args.push(u.result);
                    self.v.order.insert(at, p);
                    at += 1;
                    continue;
                }
                (None, true) => self.push_arena(Op::new(Opcode::InputI, &[])),
                (None, false) => continue,
            };
            self.v.order.insert(at, p);
            at += 1;
            self.v.ops[label.index()].args.push(u.result);
            self.v.ops[jump.expect("checked").index()].args.push(Value::op(p));
            out.push(CarriedPure {
                param: n + out.len(),
                opcode: u.opcode,
                args: u.args,
                facts: u.facts,
            });
        }
        if !passes_back {
            self.counts.uses_preamble = true;
        }
        out
    }
}
