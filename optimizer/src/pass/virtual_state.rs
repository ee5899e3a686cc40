//! Virtual state across a peeled loop's back edge (PyPy's `virtualstate`): an object that
//! the preamble passes to the body label still virtual, and that nothing else refers to
//! there, is not allocated. The label takes its fields as parameters of their own (a null
//! placeholder stands in its own position), and past the label the body has a virtual object
//! of the same kind with those fields. The final `jump` must pass a virtual object of that
//! kind again, with no field the label does not take (a field it lacks is zero); otherwise
//! the position is reported and [`super::run`] repeats the run without carrying it (the
//! object is then materialized as before). Each carried object leaves the pass as a
//! [`CarriedVirtual`], which the translation validator proves on both ways into the label.

use super::Pass;
use trace_ir::fxhash::FxHashSet;
use trace_ir::{CarriedVirtual, Const, DescrRef, Kind, Op, Opcode, Value, VirtualField, VirtualKind};

/// One object the body label takes field by field.
#[derive(Clone)]
pub(crate) struct VirtualParam {
    /// The label's input parameter it is passed in.
    pos: usize,
    kind: VirtualKind,
    /// Its fields, in label order, each with its kind.
    fields: Vec<(DescrRef, Kind)>,
}

impl<'a> Pass<'a> {
    /// At the body label `i`: materialize what must exist past it, keeping the operands
    /// that may stay virtual (those not excluded, of a struct, passed once, and with no
    /// field that is virtual or refers to them); each of those is replaced in `args` by a
    /// null placeholder. Returns, per such object, its description and its field values.
    pub(super) fn virtual_state_at_label(&mut self, i: usize, args: &mut [Value]) -> Vec<(VirtualParam, Vec<Value>)> {
        self.carry.virtuals.clear();
        let may_carry = self.carry.label == Some(i) && self.opts.virtuals;
        let candidate = |s: &mut Self, k: usize, a: Value| -> bool {
            may_carry
                && !s.carry.excluded_virtuals.contains(&k)
                && s.virt_of(a)
                    .is_some_and(|id| matches!(s.virtuals[id as usize].kind, VirtualKind::Struct { .. }))
        };
        let mut keep = vec![false; args.len()];
        for k in 0..args.len() {
            let a = self.find(args[k]);
            args[k] = a;
            keep[k] = candidate(self, k, a);
        }
        // The others first: materializing them materializes what they refer to.
        for k in 0..args.len() {
            if !keep[k] {
                self.force(args[k]);
            }
        }
        // Then the fields of the ones kept (a field's object may refer to a kept one).
        for k in 0..args.len() {
            if keep[k] && self.is_virtual(args[k]) {
                self.force_fields(args[k]);
            }
        }
        let mut out = Vec::new();
        for k in 0..args.len() {
            if !keep[k] {
                continue;
            }
            let a = args[k];
            if !self.is_virtual(a) || args.iter().filter(|&&b| b == a).count() != 1 {
                self.force(a);
                continue;
            }
            let id = self.virt_of(a).expect("virtual") as usize;
            let v = self.virtuals[id].clone();
            let mut fields = Vec::with_capacity(v.fields.len());
            let mut values = Vec::with_capacity(v.fields.len());
            for (f, val) in v.fields {
                let VirtualField::Field(d) = f else {
                    unreachable!("struct fields")
                };
                let kind = self.mem.descr_facts[d.index()].kind.unwrap_or(Kind::Int);
                fields.push((d, kind));
                values.push(self.find(val));
            }
            out.push((
                VirtualParam {
                    pos: k,
                    kind: v.kind,
                    fields,
                },
                values,
            ));
            args[k] = self.make_const(Const::Ref(0));
        }
        out
    }

    /// After the body label and its other parameters: a parameter for each field of each
    /// carried object, and the object itself, virtual, as the input's label parameter.
    pub(super) fn virtual_state_params(&mut self, i: usize, carried: Vec<(VirtualParam, Vec<Value>)>) {
        for (vp, _) in carried {
            let VirtualKind::Struct { opcode, descr } = vp.kind else {
                unreachable!("only structs are carried")
            };
            let fields = vp
                .fields
                .iter()
                .map(|&(d, kind)| {
                    let input = Opcode::input_for(kind).expect("a value kind");
                    (VirtualField::Field(d), self.emit(Op::new(input, &[])))
                })
                .collect();
            let obj = self.virtual_struct(opcode, descr, fields);
            // (If it is materialized, that is what became of the label's parameter.)
            self.note_origin((i + 1 + vp.pos) as u32);
            self.v.map[i + 1 + vp.pos] = obj;
            self.carry.virtuals.push(vp);
        }
    }

    /// At the final `jump` (input op `i`) to the body label: materialize its operands
    /// except those in a position the label takes field by field, which must be virtual
    /// objects of the label's kind with no field it does not take; each is replaced in
    /// `args` by the placeholder, and its field values are returned in label order. A
    /// position that does not match is reported (the run is repeated without it) and its
    /// object materialized.
    pub(super) fn virtual_state_at_jump(&mut self, i: usize, args: &mut [Value]) -> Vec<Value> {
        let carried = std::mem::take(&mut self.carry.virtuals);
        let at_loop_end = i + 1 == self.input.ops.len() && !carried.is_empty();
        let positions: FxHashSet<usize> = carried.iter().map(|c| c.pos).filter(|_| at_loop_end).collect();
        for (k, a) in args.iter_mut().enumerate() {
            *a = self.find(*a);
            if !positions.contains(&k) {
                self.force(*a);
            }
        }
        if !at_loop_end {
            self.carry.virtuals = carried;
            return Vec::new();
        }
        let matches = |s: &Self, c: &VirtualParam, a: Value| -> bool {
            s.virt_of(a).is_some_and(|id| {
                let v = &s.virtuals[id as usize];
                v.kind == c.kind
                    && v.fields.iter().all(|(f, _)| match f {
                        VirtualField::Field(d) => c.fields.iter().any(|x| x.0 == *d),
                        VirtualField::Item(_) => false,
                    })
            })
        };
        let mut ok: Vec<bool> = carried
            .iter()
            .map(|c| c.pos < args.len() && matches(self, c, args[c.pos]))
            .collect();
        for (c, &good) in carried.iter().zip(&ok) {
            if good {
                self.force_fields(args[c.pos]);
            }
        }
        for (j, c) in carried.iter().enumerate() {
            let a = args[c.pos];
            ok[j] = ok[j] && self.is_virtual(a) && args.iter().filter(|&&b| b == a).count() == 1;
        }
        let mut extra = Vec::new();
        for (c, &good) in carried.iter().zip(&ok) {
            if !good {
                self.carry.failed_virtuals.push(c.pos);
                if c.pos < args.len() {
                    self.force(args[c.pos]);
                }
                for &(_, kind) in &c.fields {
                    let z = self.zero_of(kind);
                    extra.push(z);
                }
                continue;
            }
            let id = self.virt_of(args[c.pos]).expect("virtual") as usize;
            let fields = self.virtuals[id].fields.clone();
            for &(d, kind) in &c.fields {
                let v = match fields.iter().find(|f| f.0 == VirtualField::Field(d)) {
                    Some(&(_, v)) => self.find(v),
                    None => self.zero_of(kind),
                };
                extra.push(v);
            }
            args[c.pos] = self.make_const(Const::Ref(0));
        }
        self.carry.virtuals = carried;
        extra
    }

    /// The objects carried field by field as the output states them, the parameters'
    /// positions numbered after the label's input and carried-load parameters.
    pub(super) fn carried_virtuals(&self) -> Vec<CarriedVirtual> {
        let mut next = self.carry.arity + self.carry.params();
        self.carry
            .virtuals
            .iter()
            .map(|c| CarriedVirtual {
                param: c.pos,
                kind: c.kind,
                fields: c
                    .fields
                    .iter()
                    .map(|&(d, _)| {
                        next += 1;
                        (d, next - 1)
                    })
                    .collect(),
            })
            .collect()
    }
}

impl VirtualParam {
    /// The label's input parameter the object is passed in.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }
}
