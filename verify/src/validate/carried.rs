//! Loop body label parameters that carry loaded values ([`Config::carried`]) and results of
//! pure ops on invariant parameters ([`Config::carried_pure`]): proven where the label is
//! reached (its operands, the final `jump`'s), assumed past the label.
//!
//! [`Config::carried`]: super::Config::carried
//! [`Config::carried_pure`]: super::Config::carried_pure

use trace_ir::descr::Descr;
use trace_ir::text::descr_to_string;
use trace_ir::{
    jump_target, CarriedBase, CarriedLoad, CarriedPure, CarriedValue, JumpTarget, Kind, OpRef, Trace, WordFacts,
};
use z3::ast::{Bool, BV};

use super::carried_objects::LabelCarries;
use super::compare::Pairs;
use super::side::{Side, Sym};
use super::terms::bv;
use super::validator::Validator;
use super::{unsupported, R};

/// One carried load of the optimized trace's loop label, its descriptor resolved.
pub(super) struct Carried<'t> {
    /// What the place holds: the label's parameter at this position, or a constant.
    pub(super) value: CarriedValue,
    /// The object read.
    pub(super) base: CarriedBase,
    /// The field descriptor, or the array descriptor with `index`.
    pub(super) descr: &'t Descr,
    /// The item's index, for an array item.
    pub(super) index: Option<i64>,
    /// What is assumed about a carried parameter besides.
    pub(super) facts: WordFacts,
}

impl Carried<'_> {
    /// What the load carries, for messages: `parameter 2 (field <FieldP T.x 8>)`,
    /// `constant 7 (item 2 of <ArrayS 8>)`.
    fn what(&self) -> String {
        let place = match self.index {
            None => format!("field {}", descr_to_string(self.descr)),
            Some(i) => format!("item {i} of {}", descr_to_string(self.descr)),
        };
        match self.value {
            CarriedValue::Param(j) => format!("parameter {j} ({place})"),
            CarriedValue::Const(c) => format!("constant {:#x} ({place})", c.bits()),
        }
    }
}

/// The label the final `jump` of `t` goes to: the only label loads are carried through.
pub(super) fn loop_label(t: &Trace) -> Option<OpRef> {
    let last = OpRef::new(t.ops.len().checked_sub(1)?);
    match jump_target(t, last) {
        JumpTarget::Label(l) if t.op(last).opcode == trace_ir::Opcode::Jump => Some(l),
        _ => None,
    }
}

impl<'t> Side<'t> {
    /// What the field or item `c` carries holds for `base`, read as `getfield_gc_*` or
    /// `getarrayitem_gc_*` with a constant index reads it.
    fn load_carried(&mut self, base: &Sym, c: &Carried) -> Sym {
        match c.index {
            None => self.load_field(base, c.descr),
            Some(i) => self.load_item(base, c.descr, &bv(i as u64), false).0,
        }
    }
}

impl<'t> Validator<'t> {
    /// What the optimized trace's own loop body label carries (`Config::carried`,
    /// `carried_virtuals`, `carried_pure`).
    pub(super) fn own_carries(&self) -> LabelCarries {
        LabelCarries {
            loads: self.cfg.carried.clone(),
            virtuals: self.cfg.carried_virtuals.clone(),
            pure: self.cfg.carried_pure.clone(),
        }
    }

    /// When the optimized final `jump` `rp` goes to the body of the loop whose header the
    /// original's `ro` names (`Config::body_entries`): the loads and objects that body's
    /// label carries (loads, objects, pure results) and their descriptors, each found (by value) in the optimized or the
    /// original trace's table (`None` when in neither).
    pub(super) fn entered_body(&self, ro: OpRef, rp: OpRef) -> Option<(LabelCarries, Vec<Option<&'t Descr>>)> {
        let target = |t: &Trace, r: OpRef| match t.op(r).descr.map(|d| t.descr(d)) {
            Some(Descr::Target(x)) if t.op(r).opcode == trace_ir::Opcode::Jump => Some(*x),
            _ => None,
        };
        let (to, tp) = (target(self.o.trace, ro)?, target(self.p.trace, rp)?);
        let entry = self.cfg.body_entries.iter().find(|e| e.header == to && e.body == tp)?;
        let (pt, ot): (&'t Trace, &'t Trace) = (self.p.trace, self.o.trace);
        let descrs = entry
            .descrs
            .iter()
            .map(|d| pt.descrs.iter().chain(&ot.descrs).find(|x| *x == d))
            .collect();
        let carries = LabelCarries {
            loads: entry.carried.clone(),
            virtuals: entry.carried_virtuals.clone(),
            pure: entry.carried_pure.clone(),
        };
        Some((carries, descrs))
    }

    /// The carried loads of the optimized trace's loop label, checked against its
    /// parameters: one for each of parameters `from..to` (those past the original's), in
    /// order, and any number of constant ones; or why they are missing or malformed.
    pub(super) fn carried_params(
        &self,
        from: usize,
        to: usize,
        loads: &[CarriedLoad],
        descrs: &[Option<&'t Descr>],
    ) -> Result<Vec<Carried<'t>>, String> {
        let mut out = Vec::with_capacity(loads.len());
        let mut next = from;
        for c in loads {
            if let CarriedValue::Param(j) = c.value {
                if j != next || j >= to {
                    return Err(format!(
                        "a carried load names parameter {j}, not parameter {next} of {to}"
                    ));
                }
                next += 1;
            }
            let Some(&Some(descr)) = descrs.get(c.descr.index()) else {
                return Err(format!(
                    "carried load: descriptor {} is not the optimized trace's",
                    c.descr.index()
                ));
            };
            let fits = match c.index {
                None => matches!(descr, Descr::Field(_)),
                Some(_) => matches!(descr, Descr::Array(_)),
            };
            if !fits {
                return Err(format!(
                    "carried load: {} is no {} descriptor",
                    descr_to_string(descr),
                    if c.index.is_some() { "array" } else { "field" }
                ));
            }
            if let CarriedBase::Param(k) = c.base {
                if k >= next.max(from) {
                    return Err(format!(
                        "a carried load reads from parameter {k}, which does not come before it"
                    ));
                }
            }
            out.push(Carried {
                value: c.value,
                base: c.base,
                descr,
                index: c.index,
                facts: c.facts.clone(),
            });
        }
        if next != to {
            return Err(format!(
                "parameter {next} is not the original's and carries no load (Config::carried)"
            ));
        }
        Ok(out)
    }

    /// Prove that each carried load holds where the label is reached: its operand (of
    /// `operands`, the optimized side's past the original's, by position) or constant is what
    /// its field or item holds in the original side's heap now, and the operand has the
    /// facts assumed of it; `params`: the original side's values of the operands before
    /// them (a load based on a carried parameter reads from what that parameter's own load
    /// gives, which is proven equal to its operand).
    pub(super) fn prove_carried(
        &mut self,
        at: &str,
        loads: &[Carried],
        params: &[Sym],
        operands: &[Sym],
        pairs: &mut Pairs,
    ) -> R<()> {
        let n = params.len();
        let mut reads: Vec<Option<Sym>> = vec![None; operands.len()];
        for c in loads {
            let base = match c.base {
                CarriedBase::Param(k) if k < n => params[k].clone(),
                CarriedBase::Param(k) => reads[k - n].clone().expect("an earlier carried parameter"),
                CarriedBase::Const(v) => Sym::Bv(bv(v.bits())),
            };
            let v = self.o.load_carried(&base, c);
            let x = match c.value {
                CarriedValue::Param(j) => operands[j - n].clone(),
                CarriedValue::Const(k) => Sym::Bv(bv(k.bits())),
            };
            self.prove_equal(&v, &x, pairs, &|| {
                format!("{at}: carried {} is not what it holds", c.what())
            })?;
            if let CarriedValue::Param(j) = c.value {
                if !c.facts.is_empty() {
                    let claim = self.p.satisfies(&x, &c.facts);
                    let what = c.what();
                    let facts = c.facts.clone();
                    self.prove(
                        &claim,
                        || format!("{at}: carried {what} may not satisfy what the loop assumes ({facts:?})"),
                        None,
                    )?;
                }
                reads[j - n] = Some(v);
            }
        }
        Ok(())
    }

    /// Past the optimized trace's label at `rp` (its heap and its other parameters already
    /// fresh): each carried parameter a fresh symbol, assumed to hold what its field or item
    /// holds in the heap the label starts from, of the parameters' symbols. Sound by
    /// induction: every way into the label was proven to pass such values.
    pub(super) fn enter_carried(&mut self, k: usize, rp: OpRef, loads: &[Carried]) {
        let params: Vec<OpRef> = self.p.trace.label_params(rp).collect();
        for c in loads {
            let base = match c.base {
                CarriedBase::Param(j) => self.p.vals[params[j].index()]
                    .clone()
                    .expect("an earlier parameter has a value"),
                CarriedBase::Const(v) => Sym::Bv(bv(v.bits())),
            };
            let v = self.o.load_carried(&base, c);
            let v = self.o.escape(&v);
            match c.value {
                CarriedValue::Param(j) => {
                    let param = params[j];
                    let kind = self.p.trace.op(param).opcode.result_kind();
                    let sym = BV::new_const(format!("L{k}_{}{}", kind.prefix(), j), 64);
                    self.assume(sym.eq(&v), false);
                    let x = Sym::Bv(sym);
                    if !c.facts.is_empty() {
                        let holds = self.p.satisfies(&x, &c.facts);
                        self.assume(holds, false);
                    }
                    self.p.vals[param.index()] = Some(x);
                }
                CarriedValue::Const(x) => self.assume(v.eq(bv(x.bits())), false),
            }
        }
    }
}

impl<'t> Validator<'t> {
    /// The carried pure results of a label of `n` input parameters and `m` in all, checked:
    /// their parameters are the last ones, in order, each a pure op without descriptor on
    /// input parameters and constants. Returns where they start (the other carried
    /// parameters end there).
    pub(super) fn carried_pure_params(&self, n: usize, m: usize, pure: &[CarriedPure]) -> Result<usize, String> {
        let Some(start) = m.checked_sub(pure.len()).filter(|&s| s >= n) else {
            return Err(format!(
                "{} carried pure results do not fit after {n} parameters",
                pure.len()
            ));
        };
        for (i, c) in pure.iter().enumerate() {
            if c.param != start + i {
                return Err(format!(
                    "a carried pure result in parameter {}, not {}",
                    c.param,
                    start + i
                ));
            }
            if !c.opcode.is_pure() || !c.opcode.arity_ok(c.args.len()) {
                return Err(format!("a carried {} of {} operands", c.opcode, c.args.len()));
            }
            if c.args.iter().any(|a| matches!(*a, CarriedBase::Param(k) if k >= n)) {
                return Err(format!("a carried {} on a parameter past the {n} inputs", c.opcode));
            }
        }
        Ok(start)
    }

    /// `c`'s op on `params` (a side's values of the label's input parameters) and the
    /// condition under which it is defined.
    fn carried_pure_value(&mut self, c: &CarriedPure, params: &[Sym]) -> R<(BV, Bool)> {
        let mut args = Vec::with_capacity(c.args.len());
        for a in &c.args {
            args.push(match *a {
                CarriedBase::Param(k) => match &params[k] {
                    Sym::Bv(b) => b.clone(),
                    _ => return unsupported(format!("a carried {} on an object", c.opcode)),
                },
                CarriedBase::Const(x) => bv(x.bits()),
            });
        }
        let is_float =
            c.opcode.result_kind() == Kind::Float || (0..args.len()).any(|i| c.opcode.arg_kind(i) == Some(Kind::Float));
        self.pure_value(c.opcode, &args, is_float)
    }

    /// Prove that each carried pure result holds where the label is reached: its operand
    /// (of `operands`, the optimized side's past the original's `params`, by position) is
    /// its op on the original side's values `params` of the input operands (proven equal to
    /// the optimized side's), that op is defined there, and the operand has the facts
    /// assumed of it.
    pub(super) fn prove_carried_pure(
        &mut self,
        at: &str,
        pure: &[CarriedPure],
        params: &[Sym],
        operands: &[Sym],
        pairs: &mut Pairs,
    ) -> R<()> {
        let n = params.len();
        for c in pure {
            let (v, defined) = self.carried_pure_value(c, params)?;
            let opcode = c.opcode;
            self.prove(&defined, || format!("{at}: carried {opcode} may be undefined"), None)?;
            let x = operands[c.param - n].clone();
            self.prove_equal(&Sym::Bv(v), &x, pairs, &|| {
                format!("{at}: carried parameter {} is not its {opcode}", c.param)
            })?;
            if !c.facts.is_empty() {
                let claim = self.p.satisfies(&x, &c.facts);
                let facts = c.facts.clone();
                self.prove(
                    &claim,
                    || format!("{at}: carried {opcode} may not satisfy what the loop assumes ({facts:?})"),
                    None,
                )?;
            }
        }
        Ok(())
    }

    /// Past the optimized trace's label at `rp` (its input parameters already set): each
    /// carried pure result's parameter is its op on them, assumed to have its facts. Sound
    /// by induction: every way into the label was proven to pass such values.
    pub(super) fn enter_carried_pure(&mut self, rp: OpRef, pure: &[CarriedPure]) -> R<()> {
        let params: Vec<OpRef> = self.p.trace.label_params(rp).collect();
        let n = params.len() - pure.len();
        let inputs = params[..n]
            .iter()
            .map(|p| self.p.vals[p.index()].clone().expect("an input parameter has a value"))
            .collect::<Vec<_>>();
        for c in pure {
            let (v, _) = self.carried_pure_value(c, &inputs)?;
            let x = Sym::Bv(v);
            if !c.facts.is_empty() {
                let holds = self.p.satisfies(&x, &c.facts);
                self.assume(holds, false);
            }
            self.p.vals[params[c.param].index()] = Some(x);
        }
        Ok(())
    }
}
