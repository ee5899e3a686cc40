//! Guards and exits (rebuilding virtual objects), labels and back edges, and calls.

use super::*;

/// How a rebuilt virtual's items are written: through an array descriptor (and its writer
/// id), or as characters of this width.
#[derive(Clone, Copy)]
enum Items<'d> {
    Array(&'d ArrayDescr, u32),
    Chars(u8),
}

impl<'a> Machine<'a> {
    pub(crate) fn guard_holds(&mut self, at: OpRef) -> Result<bool, Stop> {
        use Opcode::*;
        let opc = self.trace.op(at).opcode;
        Ok(match opc {
            GuardTrue => self.arg(at, 0)?.bits() != 0,
            GuardFalse => self.arg(at, 0)?.bits() == 0,
            GuardValue => self.arg(at, 0)?.bits() == self.arg(at, 1)?.bits(),
            GuardNoOverflow => !self.st.ovf,
            GuardOverflow => self.st.ovf,
            GuardNonnull => self.arg(at, 0)?.bits() != 0,
            GuardIsnull => self.arg(at, 0)?.bits() == 0,
            GuardClass | GuardSubclass | GuardGcType => {
                let p = self.nonnull(at, 0)?;
                let want = self.arg(at, 1)?.bits();
                self.class_of(p, want, opc == GuardGcType) == want
            }
            GuardNonnullClass => {
                let p = self.arg(at, 0)?.bits();
                let want = self.arg(at, 1)?.bits();
                p != 0 && self.class_of(p, want, false) == want
            }
            GuardIsObject => {
                let p = self.nonnull(at, 0)?;
                self.st.heap.objects.get(&p).is_none_or(|o| o.class != 0)
            }
            GuardNoException => self.st.exception.is_none(),
            GuardException => {
                let want = self.int_arg(at, 0)?;
                match self.st.exception {
                    Some((c, v)) if c == want => {
                        self.st.exception = None;
                        self.set(at, RtValue::Ref(v));
                        true
                    }
                    _ => false,
                }
            }
            GuardNotInvalidated => !self.cfg.invalidated,
            GuardNotForced | GuardNotForced2 | GuardFutureCondition => true,
            other => return Err(invalid(at, format!("{other} is not a known guard"))),
        })
    }

    pub(crate) fn fail(&mut self, at: OpRef) -> Stop {
        let t = self.trace;
        let Some(g) = t.op(at).guard.filter(|g| g.index() < t.guards.len()) else {
            return invalid(at, "guard without resume data");
        };
        let gd = t.guard(g);
        if let Some(to) = self.bridge_of(gd.id) {
            return self.enter_bridge(at, gd, to);
        }
        let mut memo: HashMap<u32, u64> = HashMap::new();
        let mut values = Vec::with_capacity(gd.fail_args.len());
        for fa in &gd.fail_args {
            match self.fail_value(at, gd, fa, &mut memo) {
                Ok(v) => values.push(v),
                Err(stop) => return stop,
            }
        }
        for w in &gd.writes {
            if let Err(stop) = self.resume_write(at, gd, w, &mut memo) {
                return stop;
            }
        }
        Outcome::GuardFailed {
            guard: gd.id,
            resume_key: gd.resume_key,
            values,
        }
    }

    pub(crate) fn fail_value(
        &mut self,
        at: OpRef,
        gd: &GuardData,
        fa: &FailArg,
        memo: &mut HashMap<u32, u64>,
    ) -> Result<RtValue, Stop> {
        match *fa {
            FailArg::Value(v) => self.get(at, v),
            FailArg::Hole => Ok(RtValue::Int(0)),
            FailArg::Virtual(i) => self.rebuild(at, gd, i, memo).map(RtValue::Ref),
        }
    }

    /// Perform the write `w` of the exit of the guard at `at` (after its virtual objects are
    /// rebuilt): as `setfield_gc`/`setarrayitem_gc` would, through `w`'s descriptor.
    pub(crate) fn resume_write(
        &mut self,
        at: OpRef,
        gd: &GuardData,
        w: &trace_ir::ResumeWrite,
        memo: &mut HashMap<u32, u64>,
    ) -> Result<(), Stop> {
        let t = self.trace;
        let p = match self.get(at, w.obj)?.bits() {
            0 => return Err(invalid(at, "an exit's write through a null pointer")),
            p => p,
        };
        let value = self.fail_value(at, gd, &w.value, memo)?;
        let Some(d) = t.descrs.get(w.descr.index()) else {
            return Err(invalid(at, "an exit's write with a missing descriptor"));
        };
        let writer = self.descr_id(w.descr);
        match (d, w.index) {
            (Descr::Field(fd), None) => {
                let view = View::new(fd.offset, fd.size);
                self.store_as(at, p, view, narrow(value, fd.size, fd.signed), fd.immutable, writer)
            }
            (Descr::Array(ad), Some(i)) => {
                let view = self.item_view(at, p, i64::from(i), ad)?;
                self.store_as(at, p, view, narrow(value, ad.item_size, ad.signed), false, writer)
            }
            _ => Err(invalid(at, "an exit's write with a descriptor of the wrong kind")),
        }
    }

    /// Allocate the virtual `i` of the guard (once per exit) and fill in its fields.
    pub(crate) fn rebuild(
        &mut self,
        at: OpRef,
        gd: &GuardData,
        i: u32,
        memo: &mut HashMap<u32, u64>,
    ) -> Result<u64, Stop> {
        if let Some(&a) = memo.get(&i) {
            return Ok(a);
        }
        let t = self.trace;
        let Some(v) = gd.virtuals.get(i as usize) else {
            return Err(invalid(at, format!("fail argument names missing virtual {i}")));
        };
        let descr = |d: trace_ir::entity::DescrRef| {
            if d.index() < t.descrs.len() {
                Ok(t.descr(d))
            } else {
                Err(invalid(at, "virtual with a missing descriptor"))
            }
        };
        let (addr, items) = match v.kind {
            VirtualKind::Struct { opcode, descr: d } => {
                let sd = descr(d)?
                    .as_size()
                    .ok_or_else(|| invalid(at, "struct virtual needs a size descriptor"))?;
                let class = if opcode == Opcode::NewWithVtable {
                    default_class(sd)
                } else {
                    0
                };
                (self.st.heap.alloc(ObjKind::Struct { size: sd.size }, class, true), None)
            }
            VirtualKind::Array { descr: d, len, .. } => {
                let ad = descr(d)?
                    .as_array()
                    .ok_or_else(|| invalid(at, "array virtual needs an array descriptor"))?;
                (
                    self.alloc_array(len as u64, ad.clone(), self.descr_id(d), true),
                    Some(Items::Array(ad, self.descr_id(d))),
                )
            }
            VirtualKind::Str { opcode, len } => {
                let unicode = opcode == Opcode::Newunicode;
                let width = if unicode { 4 } else { 1 };
                (self.alloc_string(len as u64, unicode, true), Some(Items::Chars(width)))
            }
        };
        memo.insert(i, addr);
        for (field, fa) in &v.fields {
            if *fa == FailArg::Hole {
                continue;
            }
            let value = self.fail_value(at, gd, fa, memo)?;
            let (view, immutable, value, writer) = match (*field, items) {
                (VirtualField::Field(d), _) => {
                    let fd = descr(d)?
                        .as_field()
                        .ok_or_else(|| invalid(at, "virtual field needs a field descriptor"))?;
                    let view = View::new(fd.offset, fd.size);
                    (view, fd.immutable, narrow(value, fd.size, fd.signed), self.descr_id(d))
                }
                (VirtualField::Item(k), Some(Items::Array(ad, writer))) => {
                    let view = self.item_view(at, addr, k as i64, ad)?;
                    (view, false, narrow(value, ad.item_size, ad.signed), writer)
                }
                (VirtualField::Item(k), Some(Items::Chars(width))) => {
                    let view = self.char_view(at, addr, k as i64, width)?;
                    (view, false, narrow(value, width, false), heap::WRITER_STRING)
                }
                (VirtualField::Item(_), None) => return Err(invalid(at, "an item of a struct virtual")),
            };
            self.st.heap.write(addr, view, value, immutable, writer);
        }
        Ok(addr)
    }

    pub(crate) fn back_edge(&mut self) -> Result<(), Stop> {
        self.st.iterations += 1;
        if self.st.iterations > self.cfg.max_iterations {
            return Err(Outcome::IterationLimit);
        }
        Ok(())
    }

    /// Whether [`RunConfig::stop_at`] stops the run at the guard at `at`.
    pub(crate) fn stops_at(&self, at: OpRef) -> bool {
        let Some(s) = self.cfg.stop_at else { return false };
        let t = self.trace;
        s.loop_entries == self.st.loop_entries
            && t.op(at)
                .guard
                .and_then(|g| t.guards.get(g.index()))
                .is_some_and(|gd| gd.resume_key == s.resume_key)
    }

    /// Assign `vals` to the parameters of the label at `label` and return the pc after them.
    pub(crate) fn enter(&mut self, at: OpRef, label: usize, vals: Vec<RtValue>) -> Result<usize, Stop> {
        self.st.loop_entries += 1;
        let t = self.trace;
        let n = t.ops.get(label).map_or(usize::MAX, |l| {
            if l.opcode == Opcode::Label {
                l.args.len()
            } else {
                usize::MAX
            }
        });
        if n != vals.len() || label + n >= t.ops.len() {
            return Err(invalid(at, "label and jump disagree on the number of loop parameters"));
        }
        for (k, v) in vals.into_iter().enumerate() {
            let p = label + 1 + k;
            self.st.vals[p] = v.with_kind(t.ops[p].opcode.result_kind());
        }
        Ok(label + 1 + n)
    }

    pub(crate) fn call(&mut self, at: OpRef) -> Result<(), Stop> {
        use Opcode::*;
        let t = self.trace;
        let op = t.op(at);
        let opc = op.opcode;
        let all = self.args(at)?;
        // A call whose oopspec names a pure op is that op (`trace_ir::oopspec`).
        if let Some(Descr::Call(cd)) = op.descr.and_then(|d| t.descrs.get(d.index())) {
            if let Some(pure) = trace_ir::oopspec::pure_call_opcode(opc, cd, all.len()) {
                let bits: Vec<u64> = all[1..].iter().map(|v| v.bits()).collect();
                let r = eval_pure(pure, &bits).map_err(|e| invalid(at, e.to_string()))?;
                self.set(at, RtValue::from_bits(opc.result_kind(), r));
                return Ok(());
            }
            if trace_ir::oopspec::is_array_copy(opc, cd, all.len()) && self.array_copy(at, &all)? {
                return Ok(());
            }
        }
        // Split into (function, arguments, whether it may write the heap, whether what it can
        // reach escapes: not for elidable and loop-invariant calls, which change nothing
        // and so cannot keep a reference); handle the conditional forms.
        let (func, args, writes, escapes): (u64, &[RtValue], bool, bool) = match opc {
            CallAssemblerI | CallAssemblerR | CallAssemblerF | CallAssemblerN => {
                let id = match op.descr.and_then(|d| t.descrs.get(d.index())) {
                    Some(Descr::Loop(n)) => hash_words(&[0xa55e, *n as u64]),
                    Some(Descr::Target(n)) => hash_words(&[0xa55e, 1, *n]),
                    Some(Descr::Other(s)) => hash_words(&s.bytes().map(u64::from).collect::<Vec<_>>()),
                    _ => 0xa55e,
                };
                (id, &all[..], true, true)
            }
            CondCallN | CondCallValueI | CondCallValueR => {
                if all.len() < 2 {
                    return Err(invalid(at, "cond_call needs a condition and a function"));
                }
                // cond_call(c, f, ...) calls f when c != 0 (PyPy's COND_CALL);
                // cond_call_value(v, f, ...) is v when v != 0, else f(...).
                let cond = all[0].bits() != 0;
                if opc == CondCallN && !cond {
                    return Ok(());
                }
                if opc != CondCallN && cond {
                    self.set(at, all[0]);
                    return Ok(());
                }
                let eff = self.call_effect(at)?;
                (all[1].bits(), &all[2..], eff.may_write_heap(), !eff.is_elidable())
            }
            _ => {
                if all.is_empty() {
                    return Err(invalid(at, "call without a function"));
                }
                let eff = self.call_effect(at)?;
                let never = matches!(
                    opc,
                    CallPureI
                        | CallPureR
                        | CallPureF
                        | CallPureN
                        | CallLoopinvariantI
                        | CallLoopinvariantR
                        | CallLoopinvariantF
                        | CallLoopinvariantN
                );
                (
                    all[0].bits(),
                    &all[1..],
                    eff.may_write_heap() && !never,
                    !eff.changes_nothing(opc),
                )
            }
        };
        let canon: Vec<u64> = args.iter().map(|&v| canonical(&self.st.heap, v)).collect();
        if escapes {
            self.st.heap.escape_at_call(args);
        }
        let kind = opc.result_kind();
        let result = self.call_value(func, args, kind);
        if writes {
            self.st.heap.clobber();
            self.st.calls.push(CallRecord { func, args: canon });
        }
        if kind != Kind::Void {
            self.set(at, result);
        }
        Ok(())
    }

    /// `ll_arraycopy(src, dst, src_start, dst_start, length)` (`trace_ir::oopspec::is_array_copy`)
    /// between two arrays the run allocated with one item layout: the items move (all read,
    /// then all written, through that layout) and nothing else happens; `Ok(false)` when
    /// either array was not allocated by the run or their layouts differ (the call is then an
    /// ordinary call). Ranges outside either array are invalid.
    pub(crate) fn array_copy(&mut self, at: OpRef, all: &[RtValue]) -> Result<bool, Stop> {
        let (src, dst) = (all[1].bits(), all[2].bits());
        let layout = |a: u64| match self.st.heap.objects.get(&a).map(|o| &o.kind) {
            Some(ObjKind::Array { len, descr }) => Some((*len, descr.clone())),
            _ => None,
        };
        let (Some((slen, sd)), Some((dlen, dd))) = (layout(src), layout(dst)) else {
            return Ok(false);
        };
        if sd != dd {
            return Ok(false);
        }
        let [ss, ds, n] = [all[3], all[4], all[5]].map(|v| v.bits() as i64);
        let fits = |start: i64, len: u64| {
            start >= 0 && n >= 0 && (start as u64).checked_add(n as u64).is_some_and(|e| e <= len)
        };
        if !fits(ss, slen) || !fits(ds, dlen) {
            return Err(invalid(
                at,
                format!("array copy of {n} items from {ss} (of {slen}) to {ds} (of {dlen}) out of range"),
            ));
        }
        // The writer identity of the arrays' descriptor in this trace (its items were written
        // through it).
        let t = self.trace;
        let writer = (0..t.descrs.len())
            .find(|&i| matches!(&t.descrs[i], Descr::Array(a) if *a == sd))
            .map_or(u32::MAX, |i| self.descr_id(trace_ir::DescrRef::new(i)));
        let view = |i: i64| View::new(i * sd.item_size as i64 + sd.base_offset, sd.item_size);
        let items: Vec<RtValue> = (0..n)
            .map(|k| {
                narrow(
                    self.st.heap.read(src, view(ss + k), sd.kind, false),
                    sd.item_size,
                    sd.signed,
                )
            })
            .collect();
        for (k, v) in items.into_iter().enumerate() {
            self.store_as(at, dst, view(ds + k as i64), v, false, writer)?;
        }
        Ok(true)
    }

    /// What calling `func` on `args` returns, as a value of `kind`: the embedder's function
    /// ([`RunConfig::functions`]) if it gave one, else a value derived from the function
    /// and the arguments (the same for the same ones: `canonical` names each object).
    pub(crate) fn call_value(&mut self, func: u64, args: &[RtValue], kind: Kind) -> RtValue {
        let key = (func, args.iter().map(|&v| canonical(&self.st.heap, v)).collect());
        if let Some(&v) = self.st.results.get(&key) {
            return v.with_kind(kind);
        }
        let v = call_value(self.cfg, &self.st.heap, func, args, kind);
        self.st.results.insert(key, v);
        v
    }

    /// `record_known_result(v, f, args...)` for a function that changes nothing (its
    /// descriptor's effect elidable or loop-invariant): `f(args...)` returns `v` in this
    /// run, before and after; a call that returned something else already breaks the
    /// promise. Another function's record says nothing.
    pub(crate) fn record_known_result(&mut self, at: OpRef) -> Result<(), Stop> {
        let all = self.args(at)?;
        let Ok(eff) = self.call_effect(at) else { return Ok(()) };
        if all.len() < 2 || !(eff.is_elidable() || eff == CallEffect::LoopInvariant) {
            return Ok(());
        }
        let v = all[0];
        let key = (
            all[1].bits(),
            all[2..].iter().map(|&a| canonical(&self.st.heap, a)).collect(),
        );
        match self.st.results.get(&key) {
            Some(&got) if got.bits() != v.bits() => Err(broken(
                at,
                format!("record_known_result: the call returned {got}, not {v}"),
            )),
            _ => {
                self.st.results.insert(key, v);
                Ok(())
            }
        }
    }

    /// `record_known_field(p, v, descr=F)`: a promise that field `F` of `p` holds `v` (as the
    /// field stores it). On an external object whose field this run has neither written nor
    /// read from its initial contents as the field's kind, the promise decides that content
    /// for reads of that kind ([`crate::heap::Heap::decided`]; as the first class check
    /// decides an external object's class); anywhere else the field is read and must hold it.
    pub(crate) fn record_known_field(&mut self, at: OpRef) -> Result<(), Stop> {
        let fd = self.field_descr(at)?;
        let p = self.arg(at, 0)?.bits();
        if p == 0 {
            return Err(broken(at, "record_known_field of null"));
        }
        let view = View::new(fd.offset, fd.size);
        let kind = self.trace.kind_of(self.trace.op(at).args[1]);
        let want = narrow(self.arg(at, 1)?, fd.size, fd.signed);
        let heap = &mut self.st.heap;
        let key = (p, fd.offset, kind);
        if heap.reads_initial_memory(p, view, fd.immutable)
            && !heap.initial_reads.contains(&key)
            && !heap.preset.contains_key(&(p, fd.offset))
        {
            heap.decided.entry(key).or_insert(want);
        }
        // The read a load of the field would make, with the memory model's checks.
        let got = self.load_as(at, p, view, fd.immutable, fd.signed, kind)?;
        if got.bits() != want.bits() {
            return Err(broken(
                at,
                format!("record_known_field: the field holds {got}, not {want}"),
            ));
        }
        Ok(())
    }

    pub(crate) fn call_effect(&self, at: OpRef) -> Result<CallEffect, Stop> {
        match self.descr(at)? {
            Descr::Call(cd) => Ok(cd.effect),
            _ => Err(invalid(at, "expected a call descriptor")),
        }
    }
}
