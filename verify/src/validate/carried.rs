//! Loop body label parameters that carry loaded values ([`Config::carried`]): proven where
//! the label is reached (its operands, the final `jump`'s), assumed past the label.
//!
//! [`Config::carried`]: super::Config::carried

use trace_ir::descr::Descr;
use trace_ir::text::descr_to_string;
use trace_ir::{
    jump_target, CarriedBase, CarriedLoad, CarriedValue, CarriedVirtual, JumpTarget, OpRef, Trace, WordFacts,
};
use z3::ast::BV;

use super::compare::Pairs;
use super::side::{Side, Sym};
use super::terms::bv;
use super::validator::Validator;
use super::R;

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
    /// When the optimized final `jump` `rp` goes to the body of the loop whose header the
    /// original's `ro` names (`Config::body_entries`): the loads and objects that body's
    /// label carries and their descriptors, each found (by value) in the optimized or the
    /// original trace's table (`None` when in neither).
    #[allow(clippy::type_complexity)]
    pub(super) fn entered_body(
        &self,
        ro: OpRef,
        rp: OpRef,
    ) -> Option<(Vec<CarriedLoad>, Vec<CarriedVirtual>, Vec<Option<&'t Descr>>)> {
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
        Some((entry.carried.clone(), entry.carried_virtuals.clone(), descrs))
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
