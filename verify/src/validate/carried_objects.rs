//! Objects the optimized trace's loop label takes field by field ([`Config::carried_virtuals`]):
//! where the label is reached, the original's operand is an object the trace allocated that
//! nothing else refers to (tracked, not escaped, not reachable from another operand or from
//! its own fields) and equal, field by field, to an object of the same shape made of the
//! optimized operands; past the label both sides have such an object, fresh, whose fields
//! are symbols the optimized trace's field parameters share. Sound by induction, as for
//! carried loads: an object nothing refers to is, to everything the loop does next, a fresh
//! allocation with those contents.
//!
//! [`Config::carried_virtuals`]: super::Config::carried_virtuals

use std::collections::{BTreeMap, BTreeSet};

use trace_ir::descr::Descr;
use trace_ir::{CarriedLoad, CarriedVirtual, OpRef, Opcode, Value, VirtualKind};
use z3::ast::BV;

use super::carried::Carried;
use super::compare::Pairs;
use super::layout::field_key_of;
use super::side::{alloc_class, struct_shape, LocalObj, Side, Sym};
use super::validator::Validator;
use super::{unsupported, R};

/// What a loop body label carries past the original's parameters, as the optimizer states it.
#[derive(Clone, Default)]
pub(super) struct LabelCarries {
    pub(super) loads: Vec<CarriedLoad>,
    pub(super) virtuals: Vec<CarriedVirtual>,
    pub(super) pure: Vec<trace_ir::CarriedPure>,
}

/// One object the loop label takes field by field, its descriptors resolved.
pub(super) struct CarriedObj<'t> {
    /// The label's input parameter it is passed in.
    param: usize,
    shape: String,
    class: Option<BV>,
    /// Each field's descriptor and the label parameter that holds it.
    fields: Vec<(&'t Descr, usize)>,
}

impl<'t> Validator<'t> {
    /// What the parameters of the optimized loop label past the original's `n` (of `m`)
    /// carry: loaded values ([`Validator::carried_params`]), then the fields of objects
    /// taken field by field, then results of pure ops
    /// ([`Validator::carried_pure_params`]).
    pub(super) fn carried_extras(
        &self,
        n: usize,
        m: usize,
        c: &LabelCarries,
        descrs: &[Option<&'t Descr>],
    ) -> Result<(Vec<Carried<'t>>, Vec<CarriedObj<'t>>), String> {
        let end = self.carried_pure_params(n, m, &c.pure)?;
        let (objs, start) = self.carried_objects(n, end, &c.virtuals, descrs)?;
        Ok((self.carried_params(n, start, &c.loads, descrs)?, objs))
    }

    /// The objects of [`Config::carried_virtuals`](super::Config::carried_virtuals), checked
    /// against a label of `n` input parameters and `m` in all: each passed in a distinct
    /// input parameter, its fields in the last parameters, in order. Also returns where those
    /// start (the carried loads' parameters end there).
    pub(super) fn carried_objects(
        &self,
        n: usize,
        m: usize,
        virtuals: &[CarriedVirtual],
        descrs: &[Option<&'t Descr>],
    ) -> Result<(Vec<CarriedObj<'t>>, usize), String> {
        let total: usize = virtuals.iter().map(|c| c.fields.len()).sum();
        let Some(start) = m.checked_sub(total).filter(|&s| s >= n) else {
            return Err(format!(
                "{total} field parameters do not fit after {n} input parameters"
            ));
        };
        let mut next = start;
        let mut params = BTreeSet::new();
        let mut out = Vec::new();
        for c in virtuals {
            if c.param >= n || !params.insert(c.param) {
                return Err(format!("an object carried in parameter {} of {n}", c.param));
            }
            let VirtualKind::Struct { opcode, descr } = c.kind else {
                return Err("an array carried field by field".into());
            };
            let sd = match descrs.get(descr.index()).copied().flatten() {
                Some(d @ Descr::Size(_)) if matches!(opcode, Opcode::New | Opcode::NewWithVtable) => d,
                _ => return Err(format!("an object carried as {opcode} of descriptor {}", descr.index())),
            };
            let mut fields = Vec::with_capacity(c.fields.len());
            for &(d, pos) in &c.fields {
                match descrs.get(d.index()).copied().flatten() {
                    Some(fd @ Descr::Field(_)) if pos == next => fields.push((fd, pos)),
                    _ => return Err(format!("a carried object's field in parameter {pos}, not {next}")),
                }
                next += 1;
            }
            out.push(CarriedObj {
                param: c.param,
                shape: struct_shape(opcode, sd),
                class: alloc_class(opcode, Some(sd)),
                fields,
            });
        }
        Ok((out, start))
    }

    /// Prove that each carried object holds where the label is reached: `operands` are the
    /// original side's (by input position), `optimized` the optimized trace's operands.
    pub(super) fn prove_carried_objects(
        &mut self,
        at: &str,
        objs: &[CarriedObj],
        operands: &[Sym],
        optimized: &[Value],
        pairs: &mut Pairs,
    ) -> R<()> {
        for c in objs {
            let so = &operands[c.param];
            let Some(id) = self.o.tracked(so) else {
                return unsupported(format!(
                    "{at}: operand {} carried field by field is no object the original allocated and kept",
                    c.param
                ));
            };
            let others = operands
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != c.param)
                .map(|(_, s)| s);
            let own = self.o.objs[id].fields.values();
            if self.o.reaches(others.chain(own), id) {
                return unsupported(format!(
                    "{at}: the object in operand {} carried field by field is referred to elsewhere",
                    c.param
                ));
            }
            let mut fields = BTreeMap::new();
            for &(d, pos) in &c.fields {
                fields.insert(field_key_of(d), self.p.value(optimized[pos])?);
            }
            let sp = self.p.new_obj(c.object(fields));
            self.prove_equal(so, &sp, pairs, &|| {
                format!(
                    "{at}: the object in operand {} is not what its field parameters hold",
                    c.param
                )
            })?;
        }
        Ok(())
    }

    /// Past the label `rp` of the optimized trace, the `k`-th (after the epoch change): each
    /// carried object a fresh object of its shape on the original side, in its input
    /// parameter `ro`'s, whose fields are symbols the optimized trace's field parameters
    /// take.
    pub(super) fn enter_carried_objects(&mut self, k: usize, ro: OpRef, rp: OpRef, objs: &[CarriedObj]) {
        let oparams: Vec<OpRef> = self.o.trace.label_params(ro).collect();
        let pparams: Vec<OpRef> = self.p.trace.label_params(rp).collect();
        for c in objs {
            let mut fields = BTreeMap::new();
            for (f, &(d, pos)) in c.fields.iter().enumerate() {
                let sym = Sym::Bv(BV::new_const(format!("L{k}_o{}_{f}", c.param), 64));
                fields.insert(field_key_of(d), sym.clone());
                self.p.vals[pparams[pos].index()] = Some(sym);
            }
            let obj = self.o.new_obj(c.object(fields));
            self.o.vals[oparams[c.param].index()] = Some(obj);
        }
    }
}

impl CarriedObj<'_> {
    /// A new object of this shape with `fields`.
    fn object(&self, fields: BTreeMap<String, Sym>) -> LocalObj {
        LocalObj {
            shape: self.shape.clone(),
            class: self.class.clone(),
            len: None,
            fields,
            item_of: BTreeMap::new(),
            addr: None,
            dead: false,
        }
    }

    /// The label's input parameter the object is passed in.
    pub(super) fn param(&self) -> usize {
        self.param
    }
}

impl Side<'_> {
    /// Whether object `id` is reachable from `roots` through the fields of tracked objects.
    fn reaches<'s>(&self, roots: impl Iterator<Item = &'s Sym>, id: usize) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<usize> = roots.filter_map(|s| self.tracked(s)).collect();
        while let Some(o) = stack.pop() {
            if o == id {
                return true;
            }
            if seen.insert(o) {
                stack.extend(self.objs[o].fields.values().filter_map(|s| self.tracked(s)));
            }
        }
        false
    }
}
