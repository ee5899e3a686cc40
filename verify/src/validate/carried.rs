//! Loop body label parameters that carry loaded values ([`Config::carried`]): proven where
//! the label is reached (its operands, the final `jump`'s), assumed past the label.
//!
//! [`Config::carried`]: super::Config::carried

use trace_ir::descr::Descr;
use trace_ir::text::descr_to_string;
use trace_ir::{CarriedBase, OpRef, Trace};
use z3::ast::BV;

use super::compare::Pairs;
use super::side::{Side, Sym};
use super::terms::bv;
use super::validator::Validator;
use super::R;

/// One carried parameter of the optimized trace's label, its descriptor resolved.
pub(super) struct Carried<'t> {
    /// Its position among the label's parameters.
    pub(super) param: usize,
    /// The object read.
    pub(super) base: CarriedBase,
    /// The field descriptor, or the array descriptor with `index`.
    pub(super) descr: &'t Descr,
    /// The item's index, for an array item.
    pub(super) index: Option<i64>,
}

impl Carried<'_> {
    /// What the parameter carries, for messages: `field <FieldP T.x 8>`, `item 2 of <ArrayS 8>`.
    fn what(&self) -> String {
        match self.index {
            None => format!("field {}", descr_to_string(self.descr)),
            Some(i) => format!("item {i} of {}", descr_to_string(self.descr)),
        }
    }
}

/// The `TargetToken` a label or `jump` op of `t` names.
pub(super) fn target_token(t: &Trace, r: OpRef) -> Option<u64> {
    match t.op(r).descr.map(|d| t.descr(d)) {
        Some(Descr::Target(x)) => Some(*x),
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
    /// The carried loads of parameters `from..to` of the optimized trace's label with token
    /// `token` (a label, or the target of a `jump`), one per parameter, in order; or why they
    /// are missing or malformed.
    pub(super) fn carried_params(
        &self,
        token: Option<u64>,
        from: usize,
        to: usize,
    ) -> Result<Vec<Carried<'t>>, String> {
        let pt: &'t Trace = self.p.trace;
        let Some(token) = token else {
            return Err("its extra parameters carry nothing (the label has no TargetToken)".into());
        };
        let mut out = Vec::with_capacity(to - from);
        for j in from..to {
            let Some(c) = self.cfg.carried.iter().find(|c| c.label == token && c.param == j) else {
                return Err(format!(
                    "parameter {j} is not the original's and carries no load (Config::carried)"
                ));
            };
            let Some(descr) = pt.descrs.get(c.descr.index()) else {
                return Err(format!(
                    "carried parameter {j}: descriptor {} is not the optimized trace's",
                    c.descr.index()
                ));
            };
            let fits = match c.index {
                None => matches!(descr, Descr::Field(_)),
                Some(_) => matches!(descr, Descr::Array(_)),
            };
            if !fits {
                return Err(format!(
                    "carried parameter {j}: {} is no {} descriptor",
                    descr_to_string(descr),
                    if c.index.is_some() { "array" } else { "field" }
                ));
            }
            if let CarriedBase::Param(k) = c.base {
                if k >= j {
                    return Err(format!(
                        "carried parameter {j} reads from parameter {k}, which does not come before it"
                    ));
                }
            }
            out.push(Carried {
                param: j,
                base: c.base,
                descr,
                index: c.index,
            });
        }
        Ok(out)
    }

    /// Prove that each carried operand (`operands`, of the optimized side, one per load) holds
    /// what its field or item holds in the original side's heap now; `params`: the original
    /// side's values of the operands before them (a load based on a carried parameter reads
    /// from what that parameter's own load gives, which is proven equal to its operand).
    pub(super) fn prove_carried(
        &mut self,
        at: &str,
        loads: &[Carried],
        params: &[Sym],
        operands: &[Sym],
        pairs: &mut Pairs,
    ) -> R<()> {
        let n = params.len();
        let mut reads: Vec<Sym> = Vec::with_capacity(loads.len());
        for (c, x) in loads.iter().zip(operands) {
            let base = match c.base {
                CarriedBase::Param(k) if k < n => params[k].clone(),
                CarriedBase::Param(k) => reads[k - n].clone(),
                CarriedBase::Const(v) => Sym::Bv(bv(v.bits())),
            };
            let v = self.o.load_carried(&base, c);
            self.prove_equal(&v, x, pairs, &|| {
                format!(
                    "{at}: carried parameter {} ({}) is not what it holds",
                    c.param,
                    c.what()
                )
            })?;
            reads.push(v);
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
            let param = params[c.param];
            let kind = self.p.trace.op(param).opcode.result_kind();
            let sym = BV::new_const(format!("L{k}_{}{}", kind.prefix(), c.param), 64);
            self.assume(sym.eq(&v), false);
            self.p.vals[param.index()] = Some(Sym::Bv(sym));
        }
    }
}
