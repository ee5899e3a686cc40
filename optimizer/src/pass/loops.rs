//! Loops: what a `label` does to the pass's knowledge (virtuals still used after it are
//! materialized, the heap cache and CSE tables cleared), and what the second run over a peeled
//! loop assumes about its header's parameters ([`HeaderFacts`]).

use super::pure::{map_args, Key};
use super::{Pass, F_FRESH, F_NONNULL, NO_VIRT};
use crate::domain::IntBound;
use smallvec::SmallVec;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{
    BodyEntry, CarriedLoad, CarriedPure, CarriedVirtual, Const, Descr, Kind, Op, OpRef, Opcode, Trace, Value,
    ValueData, WordFacts,
};

/// What the second run over a peeled loop assumes about its header's parameters: which are
/// loop-invariant (they get their operand's facts, see `Pass::import_facts`), which are
/// masked by the back edge (`[0, C]` when their entry operand is in it too), and which the
/// label and the back edge both pass the same constant (they are that constant).
#[derive(Default)]
pub(crate) struct HeaderFacts {
    pub(super) invariant: Vec<bool>,
    pub(super) masks: Vec<Option<u64>>,
    pub(super) constants: Vec<bool>,
}

impl HeaderFacts {
    /// What the shape of `t`'s loop (its final jump) says about its header's parameters.
    pub(super) fn of(t: &Trace) -> HeaderFacts {
        HeaderFacts {
            invariant: trace_ir::invariant_params(t).map(|(_, v)| v).unwrap_or_default(),
            masks: trace_ir::masked_params(t).map(|(_, v)| v).unwrap_or_default(),
            constants: trace_ir::constant_params(t)
                .map(|(_, v)| v.iter().map(Option::is_some).collect())
                .unwrap_or_default(),
        }
    }

    /// The facts of the first `n` parameters only (a label's input parameters, without the
    /// ones that carry loaded values).
    pub(super) fn truncated(mut self, n: usize) -> HeaderFacts {
        self.invariant.truncate(n);
        self.masks.truncate(n);
        self.constants.truncate(n);
        self
    }

    pub(super) fn is_empty(&self) -> bool {
        !self.invariant.contains(&true) && self.masks.iter().all(Option::is_none) && !self.constants.contains(&true)
    }

    /// Whether everything assumed here still holds by the shape of `later` (the output of
    /// the run that assumed it): the same parameters invariant, the same masks, the same
    /// constant parameters.
    pub(super) fn hold_in(&self, later: &HeaderFacts) -> bool {
        later.invariant.len() == self.invariant.len()
            && later.masks.len() == self.masks.len()
            && later.constants.len() == self.constants.len()
            && self
                .constants
                .iter()
                .zip(&later.constants)
                .all(|(&was, &now)| now || !was)
            && self
                .invariant
                .iter()
                .zip(&later.invariant)
                .all(|(&was, &now)| now || !was)
            && self
                .masks
                .iter()
                .zip(&later.masks)
                .all(|(was, now)| was.is_none() || now == was)
    }
}

/// The loop header's facts and the liveness the pass needs at labels.
#[derive(Default)]
pub(crate) struct Header<'a> {
    /// The loop header's input position and what is assumed about its parameters (see
    /// [`super::run`]); `None` without such assumptions.
    pub facts: Option<(usize, &'a HeaderFacts)>,
    /// Input op -> index of its last use (operand or resume data).
    pub last_use: Vec<u32>,
    /// Per emitted label with a `TargetToken`: the label (a working op) and what the pass
    /// knew about each parameter right after it (what the ops after it may rely on).
    pub label_facts: Vec<(OpRef, Vec<WordFacts>)>,
}

impl<'a> Pass<'a> {
    pub(super) fn compute_last_use(&mut self) {
        let t = self.input;
        let mut last = std::mem::take(&mut self.header.last_use);
        last.clear();
        last.resize(t.ops.len(), 0);
        let mut note = |v: Value, at: usize| {
            if let Some(o) = v.as_op() {
                last[o.index()] = at as u32;
            }
        };
        for (i, op) in t.ops.iter().enumerate() {
            op.for_each_value_read(&t.guards, |v| note(v, i));
        }
        self.header.last_use = last;
    }

    pub(super) fn label(&mut self, i: usize) {
        self.flush_writes();
        let t = self.input;
        let op = &t.ops[i];
        // Virtuals used after the label must exist as objects: their state would otherwise be
        // that of the first iteration.
        if self.opts.virtuals && !self.virtuals.is_empty() {
            for j in 0..i {
                if self.header.last_use[j] as usize > i && t.ops[j].opcode.result_kind() == Kind::Ref {
                    let v = self.get(Value::op(OpRef::new(j)));
                    self.force(v);
                }
            }
        }
        let mut args = map_args(&op.args, |a| self.get(a));
        let objects = self.virtual_state_at_label(i, &mut args);
        let carried = self.carry_places(i, &args);
        args.extend(carried.iter().map(|c| c.param).filter(|v| !v.is_const()));
        args.extend(objects.iter().flat_map(|o| o.1.iter().copied()));
        let label = self.emit(Op {
            opcode: Opcode::Label,
            descr: op.descr,
            guard: None,
            args,
        });
        // Invariant parameters with the operand each always equals, and their positions.
        let mut invariant: Vec<(Value, Value, usize)> = Vec::new();
        let facts = match self.header.facts {
            Some((header, facts)) if header == i => Some(facts),
            _ => None,
        };
        for k in 0..op.args.len() {
            let p = i + 1 + k;
            let v = self.emit(Op::new(t.ops[p].opcode, &[]));
            self.note_origin(p as u32);
            self.v.map[p] = v;
            let Some(facts) = facts else { continue };
            if objects.iter().any(|o| o.0.pos() == k) {
                continue;
            }
            let label = label.as_op().expect("an emitted op");
            let arg = self.find(self.v.ops[label.index()].args[k]);
            // (Integers only: what a body assumes of a parameter must be a fact a bridge
            // entering it can meet, and a range states an integer constant.)
            if facts.constants.get(k) == Some(&true) && arg.is_const() && self.kind_of(arg) == Kind::Int {
                self.make_equal(v, arg);
            } else if facts.invariant.get(k) == Some(&true) {
                self.import_facts(v, arg);
                invariant.push((arg, v, k));
            } else if let Some(&Some(mask)) = facts.masks.get(k) {
                self.assume_masked(v, arg, mask);
            }
        }
        let label_op = label.as_op().expect("an emitted op");
        self.carry_params(op.args.len(), carried);
        self.virtual_state_params(i, objects);
        if matches!(op.descr.map(|d| t.descr(d)), Some(Descr::Target(_))) {
            let params = (0..op.args.len())
                .map(|k| self.word_facts(self.v.map[i + 1 + k]))
                .collect();
            let label = label.as_op().expect("an emitted op");
            self.header.label_facts.push((label, params));
        }
        let (facts, info) = (&self.mem.descr_facts, &self.v.info);
        let fixed = |v: Value| v.as_op().is_none_or(|o| info[o.index()].virt == NO_VIRT);
        self.mem
            .heap
            .keep_fields(|d| facts[d.index()].immutable, |o, v| fixed(o) && fixed(v));
        self.pure_across_label(label_op, &invariant);
        self.cse.ovf.clear();
        self.effects.exc_clear = false;
        self.effects.not_invalidated = false;
        self.effects.nonnull_guards.clear();
        self.carry_remember(label_op);
    }

    /// At `label`, whose `invariant` parameters each always equal their operand (operand,
    /// parameter, position): keep the pure results computed before it whose operands are
    /// constants and such operands, keyed by the parameters, so the body finds them instead
    /// of computing them again in every iteration (loop-invariant code motion: the peeled
    /// first iteration computed them); forget the others. The label carries the ones the
    /// body uses ([`super::invariant`]); a body that uses one no trace entering it could
    /// compute (a call, a read) depends on the peeled iteration, and no bridge may enter it
    /// ([`Pass::body_entries`]), so only a body that carries loads or objects keeps those.
    fn pure_across_label(&mut self, label: OpRef, invariant: &[(Value, Value, usize)]) {
        self.cse.preamble.clear();
        self.cse.body = None;
        if invariant.is_empty() || !self.opts.cse {
            self.cse.pure.clear();
            return;
        }
        let all = self.carries();
        let map: FxHashMap<Value, Value> = invariant.iter().map(|&(a, p, _)| (self.find(a), p)).collect();
        let old = std::mem::take(&mut self.cse.pure);
        for (key, result) in old {
            let args: Option<SmallVec<[Value; 3]>> = key
                .args
                .iter()
                .map(|&a| {
                    let a = self.find(a);
                    if a.is_const() {
                        Some(a)
                    } else {
                        map.get(&a).copied()
                    }
                })
                .collect();
            let result = self.find(result);
            if let (Some(args), false) = (args, self.is_virtual(result)) {
                let key = Key::new(key.opcode, &args, key.descr);
                if all || self.redoable(&key) {
                    self.cse.preamble.insert(key, result);
                }
            }
        }
        let positions = invariant.iter().map(|&(_, p, k)| (p, k)).collect();
        self.cse.body = Some((label, positions));
    }

    /// Whether what is known about `a` implies the facts `f`.
    pub(super) fn satisfies(&mut self, a: Value, f: &WordFacts) -> bool {
        let a = self.find(a);
        let kind = self.kind_of(a);
        if f.range.is_some() || f.bits.is_some() {
            let b = self.bound_of(a);
            if kind != Kind::Int || b.is_empty() {
                return false;
            }
            if let Some((lo, hi)) = f.range {
                if b.lower_i64() < lo || b.upper_i64() > hi {
                    return false;
                }
            }
            if let Some((mask, bits)) = f.bits {
                let r = IntBound::bits_from_range(&b.range);
                let (known, ones) = (b.bits.knowns() | r.knowns(), b.bits.known_ones() | r.known_ones());
                if known & mask != mask || ones & mask != bits {
                    return false;
                }
            }
        }
        if f.class.is_some() && (kind != Kind::Ref || self.known_class(a) != f.class) {
            return false;
        }
        !f.nonnull || (kind == Kind::Ref && self.known_nonnull(a))
    }

    /// The output's peeled loop bodies as [`BodyEntry`]s: a label with `TargetToken(b)`
    /// after one with `TargetToken(h)`, `b` the [`trace_ir::peeled_body_token`] of `h`,
    /// whose ops read nothing defined before it but its parameters, with the loads,
    /// objects and pure results its label carries (`carried`, `carried_virtuals`,
    /// `carried_pure`; the output's descriptors).
    pub(super) fn body_entries(
        &self,
        out: &Trace,
        carried: &[CarriedLoad],
        carried_virtuals: &[CarriedVirtual],
        carried_pure: &[CarriedPure],
    ) -> Vec<BodyEntry> {
        let token = |t: &Trace, l: OpRef| match t.op(l).descr.map(|d| t.descr(d)) {
            Some(Descr::Target(x)) => Some(*x),
            _ => None,
        };
        let labels: Vec<OpRef> = out.op_refs().filter(|&r| out.op(r).opcode == Opcode::Label).collect();
        let mut entries = Vec::new();
        // A body that uses a result of the peeled iteration no entering trace computes
        // needs that iteration.
        if self.counts.uses_preamble {
            return entries;
        }
        for (working, params) in &self.header.label_facts {
            let Some(&k) = self.sweep.new_index.get(working.index()).filter(|&&k| k != u32::MAX) else {
                continue;
            };
            let body = OpRef::new(k as usize);
            let Some(b) = token(out, body) else { continue };
            let header = labels
                .iter()
                .take_while(|&&l| l != body)
                .filter_map(|&l| token(out, l))
                .find(|&h| trace_ir::peeled_body_token(h) == b);
            if let Some(header) = header {
                if trace_ir::tree::read_before_label(out, body, |_| true).is_none() {
                    // The carried loads and objects are the final label's.
                    let last = labels.last() == Some(&body);
                    let (carried, carried_virtuals, carried_pure) = match last {
                        true => (carried, carried_virtuals, carried_pure),
                        false => (&[][..], &[][..], &[][..]),
                    };
                    let mut entry = BodyEntry {
                        header,
                        body: b,
                        params: params.clone(),
                        carried_pure: carried_pure.to_vec(),
                        ..BodyEntry::default()
                    };
                    entry.own_descrs(out, carried, carried_virtuals);
                    entries.push(entry);
                }
            }
        }
        entries
    }

    /// Give the label parameter `param`, whose back edge brings `x & mask` (a low mask), the
    /// range `[0, mask]` when its entry operand `arg` is known to be in it: then every value
    /// it takes is (see [`run`]).
    pub(super) fn assume_masked(&mut self, param: Value, arg: Value, mask: u64) {
        let (Some(p), true) = (param.as_op(), self.opts.intbounds) else {
            return;
        };
        let entry = self.bound_of(arg);
        if entry.lower_i64() >= 0 && entry.upper_i64() as u64 <= mask {
            self.v.info[p.index()].bound = IntBound::from_range_i64(0, mask as i64);
        }
    }

    /// Give the loop-invariant label parameter `param` what is known about the operand `arg`
    /// it always equals: its integer bounds, class and non-nullness. Not for an allocation of
    /// this trace: the parameter would have to be that very object rather than one distinct
    /// from it (the freshness flag), and the translation validator tracks such objects
    /// field by field only up to the label.
    pub(super) fn import_facts(&mut self, param: Value, arg: Value) {
        let Some(p) = param.as_op() else { return };
        if arg.as_op().is_some_and(|o| self.v.info[o.index()].flags & F_FRESH != 0) {
            return;
        }
        if self.opts.intbounds {
            self.v.info[p.index()].bound = self.bound_of(arg);
        }
        match arg.data() {
            ValueData::Op(o) => {
                let (class, nonnull) = (self.v.info[o.index()].class, self.v.info[o.index()].flags & F_NONNULL);
                let info = &mut self.v.info[p.index()];
                info.class = class;
                info.flags |= nonnull;
            }
            ValueData::Const(c) => {
                if let Const::Ref(a) = self.v.consts.get(c) {
                    if a != 0 {
                        self.v.info[p.index()].flags |= F_NONNULL;
                    }
                }
            }
        }
    }
}
