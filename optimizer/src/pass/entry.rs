//! A trace's final `jump` into another loop's peeled body ([`trace_ir::BodyEntry`]): when
//! its operands satisfy what the body assumes, the jump skips the loop's preamble and
//! passes, past the body's input parameters, what the body label carries: the loaded
//! values (from this trace's heap cache, or loaded here: the loop's short preamble redone),
//! the fields of the objects the body takes field by field (virtual here), and the results
//! of the pure ops on invariant operands (computed here).

use trace_ir::{BodyEntry, CarriedBase, CarriedValue, Const, Descr, DescrRef, Kind, Op, Opcode, Value, VirtualField};

use super::Pass;
use crate::alias::Loc;
use smallvec::SmallVec;

/// How the jump passes one carried load.
enum Load {
    /// A value the heap cache knows.
    Known(Value),
    /// A field read here, of the object at this position (input parameter or earlier
    /// carried load).
    Read(usize, DescrRef),
}

impl<'a> Pass<'a> {
    /// For the final `jump` `op` with operands `args` (not yet forced): the body token of
    /// the loop in `self.entries` whose header it names, when its operands provably
    /// satisfy what the body assumes; `args` then holds the body's operands (a null
    /// placeholder where the body takes an object field by field, every other operand
    /// forced) followed by the carried loads and fields. `None` otherwise (the operands
    /// then forced as far as the check went).
    pub(super) fn enter_body(&mut self, op: &Op, args: &mut SmallVec<[Value; 3]>) -> Option<u64> {
        let Some(Descr::Target(t)) = op.descr.map(|d| self.descr(d)) else {
            return None;
        };
        let entries = self.entries;
        let e = entries
            .iter()
            .find(|e| e.header == *t && e.params.len() == args.len())?;
        // Every descriptor the entry names, in this pass's table.
        let descrs: Vec<DescrRef> = e.descrs.iter().map(|d| self.find_descr(d)).collect::<Option<_>>()?;
        let objects: Vec<usize> = e.carried_virtuals.iter().map(|c| c.param).collect();
        for (k, a) in args.iter_mut().enumerate() {
            *a = self.find(*a);
            if !objects.contains(&k) {
                self.force(*a);
            }
        }
        if !self.objects_fit(e, &descrs, args) {
            return None;
        }
        // Their fields as values (materializing what they refer to), then the loads as the
        // heap cache knows them after that.
        for c in &e.carried_virtuals {
            self.force_fields(args[c.param]);
        }
        if !self.objects_fit(e, &descrs, args) {
            return None;
        }
        let plan = self.entry_plan(e, &descrs, args)?;
        let pure = self.entry_pure(e, args)?;
        // Commit: the objects' fields, then the loads, in label order.
        let mut fields = Vec::new();
        for c in &e.carried_virtuals {
            let a = args[c.param];
            let id = self.virt_of(a).expect("checked virtual") as usize;
            let own = self.virtuals[id].fields.clone();
            for &(d, _) in &c.fields {
                let d = descrs[d.index()];
                let v = match own.iter().find(|f| f.0 == VirtualField::Field(d)) {
                    Some(&(_, v)) => self.find(v),
                    None => {
                        let kind = self.descr(d).value_kind().unwrap_or(Kind::Int);
                        self.zero_of(kind)
                    }
                };
                fields.push(v);
            }
            args[c.param] = self.make_const(Const::Ref(0));
        }
        for load in plan {
            let v = match load {
                Load::Known(v) => v,
                Load::Read(base, d) => {
                    let obj = args[base];
                    let opcode = match self.descr(d).value_kind() {
                        Some(Kind::Ref) => Opcode::GetfieldGcR,
                        Some(Kind::Float) => Opcode::GetfieldGcF,
                        _ => Opcode::GetfieldGcI,
                    };
                    let v = self.emit_load(opcode, Loc::field(d), &[obj], obj);
                    if self.opts.heapcache {
                        self.mem.heap.remember_field(d, obj, v);
                    }
                    v
                }
            };
            args.push(v);
        }
        args.extend(fields);
        args.extend(pure);
        debug_assert_eq!(args.len(), e.arity());
        Some(e.body)
    }

    /// Whether each object position of `e` holds, in `args`, a virtual object of the body's
    /// kind that no other operand is and whose fields the body takes.
    fn objects_fit(&self, e: &BodyEntry, descrs: &[DescrRef], args: &[Value]) -> bool {
        e.carried_virtuals.iter().all(|c| {
            let Some(&a) = args.get(c.param) else {
                return false;
            };
            let Some(id) = self.virt_of(a) else {
                return false;
            };
            let id = id as usize;
            let kind_ok = match (self.virtuals[id].kind, c.kind) {
                (
                    trace_ir::VirtualKind::Struct { opcode, descr },
                    trace_ir::VirtualKind::Struct { opcode: o2, descr: d2 },
                ) => opcode == o2 && descr == descrs[d2.index()],
                _ => false,
            };
            let fields_ok = self.virtuals[id].fields.iter().all(|(f, _)| match f {
                VirtualField::Field(d) => c.fields.iter().any(|x| descrs[x.0.index()] == *d),
                VirtualField::Item(_) => false,
            });
            kind_ok && fields_ok && args.iter().filter(|&&b| b == a).count() == 1
        })
    }

    /// How the jump with operands `args` (forced but for the object positions, which
    /// [`Pass::objects_fit`]) passes each carried load of `e` (`descrs`: its descriptors in
    /// this pass's table), when it can enter the body at all: its operands satisfy the
    /// body's facts, and each load is known (as the body assumes it) or a field of an
    /// object known to be non-null that the body assumes nothing about.
    fn entry_plan(&mut self, e: &BodyEntry, descrs: &[DescrRef], args: &[Value]) -> Option<Vec<Load>> {
        let objects: Vec<usize> = e.carried_virtuals.iter().map(|c| c.param).collect();
        for (k, (f, &a)) in e.params.iter().zip(args).enumerate() {
            if !objects.contains(&k) && !self.satisfies(a, f) {
                return None;
            }
        }
        // The values at label positions past the inputs (`None`: read at the jump).
        let mut at: Vec<Option<Value>> = args.iter().map(|&a| Some(a)).collect();
        let mut plan = Vec::new();
        for c in &e.carried {
            let d = descrs[c.descr.index()];
            let (base, pos) = match c.base {
                CarriedBase::Param(k) if objects.contains(&k) => return None,
                CarriedBase::Param(k) => (*at.get(k)?, Some(k)),
                CarriedBase::Const(k) => (Some(self.make_const(k)), None),
            };
            let known = base.and_then(|b| match c.index {
                None => self.mem.heap.field(d, b),
                Some(i) => self.mem.heap.item(d, i, b),
            });
            let known = known.map(|v| self.find(v));
            match (known, c.value) {
                (Some(v), CarriedValue::Const(k)) if v == self.make_const(k) => continue,
                (Some(v), CarriedValue::Param(_)) if !self.is_virtual(v) && self.satisfies(v, &c.facts) => {
                    at.push(Some(v));
                    plan.push(Load::Known(v));
                }
                // Read here: a field of an object known non-null, of a value the body
                // assumes nothing about.
                (None, CarriedValue::Param(_)) if c.index.is_none() && c.facts.is_empty() => {
                    let pos = pos?;
                    if !base.is_some_and(|b| self.known_nonnull(b)) {
                        return None;
                    }
                    at.push(None);
                    plan.push(Load::Read(pos, d));
                }
                _ => return None,
            }
        }
        Some(plan)
    }

    /// The results of pure ops `e`'s label carries, computed here on the jump's operands
    /// `args` (the loop's preamble computes them once), when each has what the body assumes
    /// of it. Unused when the jump does not enter the body after all (then swept as dead).
    fn entry_pure(&mut self, e: &BodyEntry, args: &[Value]) -> Option<SmallVec<[Value; 3]>> {
        let mut out = SmallVec::new();
        for c in &e.carried_pure {
            let mut a: SmallVec<[Value; 3]> = SmallVec::new();
            for b in &c.args {
                a.push(match *b {
                    CarriedBase::Param(k) if !e.carried_virtuals.iter().any(|o| o.param == k) => *args.get(k)?,
                    CarriedBase::Param(_) => return None,
                    CarriedBase::Const(k) => self.make_const(k),
                });
            }
            if !c.opcode.is_pure() || !c.opcode.arity_ok(a.len()) {
                return None;
            }
            // (Below the top level: not an input op's result, nothing to count or explain.)
            self.depth += 1;
            let v = self.pure(c.opcode, &a, None, false);
            self.depth -= 1;
            let v = self.find(v);
            if self.is_virtual(v) || !self.satisfies(v, &c.facts) {
                return None;
            }
            out.push(v);
        }
        Some(out)
    }

    /// Descriptor `d` in this pass's table (the input's and the extra ones), by value.
    fn find_descr(&self, d: &Descr) -> Option<DescrRef> {
        let n = self.input.descrs.len();
        (0..n + self.extra_descrs.len())
            .map(DescrRef::new)
            .find(|&r| self.descr(r) == d)
    }
}
