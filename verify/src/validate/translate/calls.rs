//! Translation of elidable and loop-invariant calls, hints and frame ops.

use std::collections::BTreeMap;

use trace_ir::abi::VirtualRefLayout;
use trace_ir::{Descr, Kind, Op, OpRef, Opcode, WordFacts};
use z3::ast::{Bool, BV};

use super::Translated;
use crate::validate::layout::descr_key;
use crate::validate::side::{alloc_class, struct_shape, LocalObj, Side, Sym};
use crate::validate::terms::{bv, class_of, uf_bv, zero};
use crate::validate::R;

impl<'t> Side<'t> {
    /// An elidable or loop-invariant call: an uninterpreted function of its descriptor and
    /// arguments (no sync point).
    pub(super) fn elidable_call(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let mut args = Vec::new();
        for &a in &op.args {
            let v = self.bv_of(a)?;
            self.expose(&v);
            args.push(v);
        }
        let name = format!("call[{}]", descr_key(trace, r));
        let v = uf_bv(&name, &args);
        if opc.result_kind() == Kind::Ref {
            self.unreachable_by_elidable(&v);
        }
        if opc.result_kind() != Kind::Void {
            self.set(r, Sym::Bv(v));
        }
        Ok(())
    }

    /// `record_known_result(v, f, args...)` for a function that changes nothing (elidable or
    /// loop-invariant effect), a promise assumed on the original: `v` is what the call
    /// `f(args...)` of that descriptor returns ([`Side::elidable_call`]'s term).
    pub(super) fn record_known_result(&mut self, orig: bool, r: OpRef, op: &Op, t: &mut Translated) -> R<()> {
        let trace = self.trace;
        let changes_nothing = op
            .descr
            .and_then(|d| trace.descr(d).as_call())
            .is_some_and(|cd| cd.effect.is_elidable() || cd.effect == trace_ir::CallEffect::LoopInvariant);
        if !orig || !changes_nothing || op.args.len() < 2 {
            return Ok(());
        }
        let v = self.bv_of(op.args[0])?;
        let mut args = Vec::new();
        for &a in &op.args[1..] {
            args.push(self.bv_of(a)?);
        }
        let name = format!("call[{}]", descr_key(trace, r));
        t.fact = Some(v.eq(uf_bv(&name, &args)));
        Ok(())
    }

    /// `record_exact_class(p, C)`, a promise assumed on the original: `p` is not null and has
    /// class `C`.
    pub(super) fn record_exact_class(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        // A promise: on the original, the object is not null and has that class.
        if orig {
            let x = self.value(op.args[0])?;
            let c = self.bv_of(op.args[1])?;
            t.fact = Some(self.has_class(&x, &c));
        }
        Ok(())
    }

    /// That `x` is a non-null reference to an object of class `c`.
    fn has_class(&mut self, x: &Sym, c: &BV) -> Bool {
        match self.tracked(x) {
            Some(id) => self.objs[id]
                .class
                .clone()
                .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)]))
                .eq(c),
            None => {
                let p = self.escape(x);
                Bool::and(&[p.eq(zero()).not(), class_of(&p).eq(c)])
            }
        }
    }

    /// That the word `x` satisfies the facts `f` (what a loop body assumes of a parameter).
    pub(crate) fn satisfies(&mut self, x: &Sym, f: &WordFacts) -> Bool {
        let mut all = Vec::new();
        if let Some(c) = f.class {
            all.push(self.has_class(x, &bv(c as u64)));
        }
        // An object of the trace is not null and has no integer facts to meet.
        if self.tracked(x).is_some() {
            return Bool::and(&all);
        }
        let w = self.escape(x);
        if f.nonnull {
            all.push(w.eq(zero()).not());
        }
        if let Some((lo, hi)) = f.range {
            all.push(bv(lo as u64).bvsle(&w));
            all.push(w.bvsle(bv(hi as u64)));
        }
        if let Some((mask, bits)) = f.bits {
            all.push(w.bvand(bv(mask)).eq(bv(bits)));
        }
        Bool::and(&all)
    }

    /// `assert_not_none(p)`, a promise assumed on the original: `p` is not null.
    pub(super) fn assert_not_none(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        let x = self.value(op.args[0])?;
        if self.tracked(&x).is_none() {
            let p = self.escape(&x);
            if orig {
                t.fact = Some(p.eq(zero()).not());
            }
        }
        Ok(())
    }

    /// `record_int_range(x, lo, hi)` and `record_int_bits(x, mask, bits)`, promises assumed
    /// on the original: `lo <= x <= hi` (signed), `x & mask == bits`.
    pub(super) fn record_int(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        if orig {
            let x = self.bv_of(op.args[0])?;
            let (a, b) = (self.bv_of(op.args[1])?, self.bv_of(op.args[2])?);
            t.fact = Some(match op.opcode {
                Opcode::RecordIntRange => Bool::and(&[a.bvsle(&x), x.bvsle(&b)]),
                _ => x.bvand(&a).eq(&b),
            });
        }
        Ok(())
    }

    /// `record_exact_value_*`: a promise that the value is the constant, assumed on the
    /// original.
    pub(super) fn record_exact_value(&mut self, orig: bool, op: &Op, t: &mut Translated) -> R<()> {
        if orig {
            let x = self.bv_of(op.args[0])?;
            let c = self.bv_of(op.args[1])?;
            t.fact = Some(x.eq(&c));
        }
        Ok(())
    }

    /// `force_token`: one symbol, the same on both sides.
    pub(super) fn force_token() -> Sym {
        Sym::Bv(BV::new_const("force_token", 64))
    }

    /// `virtual_ref`: a tracked `JitVirtualRef` holding the force token and a null `forced`
    /// (`trace_ir::abi::VirtualRefLayout`), as `new_with_vtable` of its size and two field
    /// writes make it.
    pub(super) fn virtual_ref(&mut self, r: OpRef) {
        let l = VirtualRefLayout::get();
        let size = Descr::Size(l.size);
        let o = self.new_obj(LocalObj {
            shape: struct_shape(Opcode::NewWithVtable, &size),
            class: alloc_class(Opcode::NewWithVtable, Some(&size)),
            len: None,
            fields: BTreeMap::new(),
            item_of: BTreeMap::new(),
            addr: None,
            dead: false,
        });
        self.store_field(&o, &Descr::Field(l.token), Side::force_token());
        self.store_field(&o, &Descr::Field(l.forced), Sym::Bv(zero()));
        self.set(r, o);
    }

    /// `virtual_ref_finish(r, p)`: `forced` becomes `p` unless `p` is null (what it held,
    /// otherwise), then the token null.
    pub(super) fn virtual_ref_finish(&mut self, op: &Op) -> R<()> {
        let l = VirtualRefLayout::get();
        let (forced, token) = (Descr::Field(l.forced), Descr::Field(l.token));
        let r = self.value(op.args[0])?;
        let p = self.value(op.args[1])?;
        let stored = match p {
            Sym::Obj(_) => Some(p),
            Sym::Bv(b) if b.as_u64() == Some(0) => None,
            Sym::Bv(b) => {
                let held = self.load_field(&r, &forced);
                let held = self.escape(&held);
                Some(Sym::Bv(b.eq(zero()).ite(&held, &b)))
            }
        };
        if let Some(v) = stored {
            self.store_field(&r, &forced, v);
        }
        self.store_field(&r, &token, Sym::Bv(zero()));
        Ok(())
    }
}
