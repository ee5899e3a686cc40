//! The generator's core: inputs and descriptors, emitting ops while executing them, picking
//! operands, guards and their fail arguments, the driver, and loops.

use super::*;

/// The size of the structs the generator allocates (`size_vt2` is larger): every field
/// descriptor it uses lies within it.
const STRUCT_SIZE: i64 = 48;

impl<'c> Gen<'c> {
    pub(super) fn new(cfg: &'c RandomConfig, seed: u64, loops: bool) -> Gen<'c> {
        let mut t = Trace::default();
        t.info.name = format!("random trace {seed}");
        let mut md = |d: Descr| t.make_descr(d);
        let d = Descrs {
            size_plain: md(Descr::Size(SizeDescr {
                size: STRUCT_SIZE,
                vtable: None,
            })),
            size_vt: md(Descr::Size(SizeDescr {
                size: STRUCT_SIZE,
                vtable: Some(0x7000_1000),
            })),
            size_vt2: md(Descr::Size(SizeDescr { size: 56, vtable: None })),
            f_int: md(field("T.inst_a", 8, 8, true, Kind::Int, false)),
            f_int4: md(field("T.inst_b", 16, 4, true, Kind::Int, false)),
            f_u1: md(field("T.inst_c", 20, 1, false, Kind::Int, false)),
            f_ref: md(field("T.inst_p", 24, 8, false, Kind::Ref, false)),
            f_float: md(field("T.inst_f", 32, 8, false, Kind::Float, false)),
            f_imm: md(field("T.inst_k", 40, 8, true, Kind::Int, true)),
            a_int: md(array(8, true, Kind::Int)),
            a_ref: md(array(8, false, Kind::Ref)),
            a_u1: md(array(1, false, Kind::Int)),
            v_a4: md(field("T.view_a", 8, 4, true, Kind::Int, false)),
            v_b1: md(field("T.view_b", 17, 1, false, Kind::Int, false)),
            v_fi: md(field("T.view_f", 32, 8, true, Kind::Int, false)),
            v_af: md(field("T.view_af", 8, 8, false, Kind::Float, false)),
            v_k: md(field("T.view_k", 40, 8, true, Kind::Int, false)),
            v_s1: md(array(1, true, Kind::Int)),
            v_u2: md(array(2, false, Kind::Int)),
            v_u8: md(array(8, false, Kind::Int)),
            v_f8: md(array(8, false, Kind::Float)),
            c_pure: md(call(
                Kind::Int,
                &[Kind::Int, Kind::Int],
                CallEffect::ElidableCannotRaise,
            )),
            c_write: md(call(Kind::Int, &[Kind::Int], CallEffect::CannotRaise)),
            c_raise_n: md(call(Kind::Void, &[Kind::Ref], CallEffect::CanRaise)),
            c_float: md(call(Kind::Float, &[Kind::Float], CallEffect::ElidableCannotRaise)),
            c_ref: md(call(Kind::Ref, &[Kind::Int], CallEffect::ElidableCanRaise)),
            c_force: md(call(Kind::Int, &[Kind::Int], CallEffect::ForcesVirtualOrVirtualizable)),
            c_cond: md(call(Kind::Void, &[Kind::Int], CallEffect::CannotRaise)),
            c_copy: md(Descr::Call(CallDescr {
                oopspec: Some(trace_ir::oopspec::OS_ARRAYCOPY),
                ..call_descr(
                    Kind::Void,
                    &[Kind::Ref, Kind::Ref, Kind::Int, Kind::Int, Kind::Int],
                    CallEffect::CannotRaise,
                )
            })),
        };
        let mut rng = Rng::new(seed);
        t.aliasing = cfg.aliasing.unwrap_or_else(|| {
            if rng.chance(1, 3) {
                Aliasing::TypeBased
            } else {
                Aliasing::Bytes
            }
        });
        Gen {
            cfg,
            rng,
            t,
            st: State::default(),
            run_cfg: RunConfig::default(),
            live: Vec::new(),
            variant: Vec::new(),
            next_guard: 0,
            d,
            loops,
            in_loop: None,
        }
    }

    pub(super) fn ex(&self, v: Value) -> RtValue {
        match v.as_op() {
            Some(o) => self.st.vals[o.index()],
            None => RtValue::from_const(self.t.consts.get(v.as_const().expect("a value is an op or a constant"))),
        }
    }

    pub(super) fn is_variant(&self, v: Value) -> bool {
        v.as_op().is_some_and(|o| self.variant[o.index()])
    }

    pub(super) fn konst(&mut self, c: Const) -> Value {
        self.t.make_const(c)
    }

    pub(super) fn make_inputs(&mut self) -> Vec<RtValue> {
        let n_int = 1 + self.rng.index(self.cfg.max_int_inputs.max(1));
        let n_ref = self.rng.index(self.cfg.max_ref_inputs + 1);
        let n_float = if self.cfg.floats > 0 {
            self.rng.index(self.cfg.max_float_inputs + 1)
        } else {
            0
        };
        let mut kinds: Vec<Kind> = std::iter::repeat_n(Kind::Int, n_int)
            .chain(std::iter::repeat_n(Kind::Ref, n_ref))
            .chain(std::iter::repeat_n(Kind::Float, n_float))
            .collect();
        for i in (1..kinds.len()).rev() {
            let j = self.rng.index(i + 1);
            kinds.swap(i, j);
        }
        let mut inputs: Vec<RtValue> = Vec::new();
        for k in kinds {
            let earlier_ref = inputs
                .iter()
                .copied()
                .rfind(|v| matches!(v, RtValue::Ref(a) if *a != 0));
            let v = match k {
                Kind::Int => RtValue::Int(special_int(&mut self.rng)),
                // Aliasing inputs: two references to one external object.
                Kind::Ref if earlier_ref.is_some() && self.rng.chance(1, 3) => earlier_ref.unwrap_or(RtValue::Ref(0)),
                Kind::Ref if self.rng.chance(1, 6) => RtValue::Ref(0),
                Kind::Ref => RtValue::Ref(external_address(self.rng.next_u64())),
                _ => RtValue::float(special_float(&mut self.rng)),
            };
            let r = OpRef::new(self.t.ops.len());
            self.t.ops.push(Op::new(Opcode::input_for(k).expect("not void"), &[]));
            self.st.vals.push(v);
            self.variant.push(false);
            self.live.push(Live {
                v: Value::op(r),
                kind: k,
                variant: false,
            });
            inputs.push(v);
        }
        self.t.num_inputs = inputs.len();
        inputs
    }

    /// Append `op`, execute it; on failure (an invalid operation or a failing guard) take it
    /// back and return `None`.
    pub(super) fn emit(&mut self, op: Op) -> Option<Value> {
        let pc = self.t.ops.len();
        let variant = self.in_loop.is_some()
            && (op.args.iter().any(|&a| self.is_variant(a)) || !(op.opcode.is_pure() || op.opcode.is_guard()));
        let kind = op.opcode.result_kind();
        let has_guard = op.guard.is_some();
        self.t.ops.push(op);
        self.st.vals.push(RtValue::Int(0));
        self.variant.push(variant);
        match interp::step_op(&self.t, &self.run_cfg, &mut self.st, pc) {
            Ok(_) => {
                let v = Value::op(OpRef::new(pc));
                if kind != Kind::Void {
                    self.live.push(Live { v, kind, variant });
                }
                Some(v)
            }
            Err(_) => {
                self.t.ops.pop();
                self.st.vals.pop();
                self.variant.pop();
                if has_guard {
                    self.t.guards.pop();
                }
                None
            }
        }
    }

    pub(super) fn op(&mut self, opc: Opcode, args: &[Value], descr: Option<DescrRef>) -> Option<Value> {
        let mut op = Op::new(opc, args);
        op.descr = descr;
        self.emit(op)
    }

    pub(super) fn fail_args(&mut self) -> Vec<FailArg> {
        let n = self.rng.index(6.min(self.live.len() + 1));
        let mut fa: Vec<FailArg> = (0..n).map(|_| FailArg::Value(self.rng.pick(&self.live).v)).collect();
        // Allocated objects in fail arguments: once the optimizer makes them virtual, the exit
        // has to rebuild them.
        if self.rng.chance(1, 2) {
            if let Some(p) = self.pick_live(Kind::Ref, |g, l| g.st.heap.is_allocated(g.ex(l.v).bits())) {
                fa.push(FailArg::Value(p));
            }
        }
        fa
    }

    pub(super) fn guard(&mut self, opc: Opcode, args: &[Value]) -> bool {
        let fail_args = self.fail_args();
        let id = GuardId(self.next_guard);
        self.t.guards.push(GuardData {
            id,
            resume_key: 1000 + id.0 as u64,
            fail_args,
            virtuals: Vec::new(),
            writes: Vec::new(),
        });
        let mut op = Op::new(opc, args);
        op.guard = Some(GuardRef::new(self.t.guards.len() - 1));
        if self.emit(op).is_some() {
            self.next_guard += 1;
            true
        } else {
            false
        }
    }

    /// A live value of `kind` satisfying `ok`, if any.
    pub(super) fn pick_live(&mut self, kind: Kind, ok: impl Fn(&Self, &Live) -> bool) -> Option<Value> {
        let cands: Vec<Value> = self
            .live
            .iter()
            .filter(|l| l.kind == kind && ok(self, l))
            .map(|l| l.v)
            .collect();
        if cands.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&cands))
        }
    }

    pub(super) fn int_arg(&mut self) -> Value {
        if self.rng.chance(3, 10) {
            let c = special_int(&mut self.rng);
            return self.konst(Const::Int(c));
        }
        match self.pick_live(Kind::Int, |_, _| true) {
            Some(v) => v,
            None => {
                let c = special_int(&mut self.rng);
                self.konst(Const::Int(c))
            }
        }
    }

    pub(super) fn invariant_int(&mut self) -> Option<Value> {
        self.pick_live(Kind::Int, |_, l| !l.variant)
    }

    pub(super) fn float_arg(&mut self) -> Value {
        match self.pick_live(Kind::Float, |_, _| true) {
            Some(v) if self.rng.chance(3, 4) => v,
            _ => {
                let f = special_float(&mut self.rng);
                self.konst(Const::float(f))
            }
        }
    }

    pub(super) fn ref_arg(&mut self) -> Value {
        // Prefer objects of the trace, so stores nest allocations into each other.
        if self.rng.chance(1, 2) {
            if let Some(p) = self.pick_live(Kind::Ref, |g, l| g.st.heap.is_allocated(g.ex(l.v).bits())) {
                return p;
            }
        }
        match self.pick_live(Kind::Ref, |_, _| true) {
            Some(v) => v,
            None => self.konst(Const::Ref(0)),
        }
    }

    /// A non-null reference to a struct the generator's fields fit in (an allocated struct
    /// of [`STRUCT_SIZE`] bytes or more, or an external object).
    pub(super) fn struct_ref(&mut self) -> Option<Value> {
        self.pick_live(Kind::Ref, |g, l| {
            let a = g.ex(l.v).bits();
            a != 0
                && g.st
                    .heap
                    .objects
                    .get(&a)
                    .is_none_or(|o| matches!(o.kind, ObjKind::Struct { size } if size >= STRUCT_SIZE))
        })
    }

    /// A reference to an allocated array and its length and descriptor.
    pub(super) fn array_ref(&mut self) -> Option<(Value, u64, DescrRef)> {
        let v = self.pick_live(Kind::Ref, |g, l| {
            let a = g.ex(l.v).bits();
            g.st.heap
                .objects
                .get(&a)
                .is_some_and(|o| matches!(o.kind, ObjKind::Array { .. }))
                && g.array_descr_of(a).is_some()
        })?;
        let a = self.ex(v).bits();
        let len = self.st.heap.objects.get(&a)?.length()?;
        Some((v, len, self.array_descr_of(a)?))
    }

    /// The descriptor an allocated array was created with (found from its allocating op).
    pub(super) fn array_descr_of(&self, addr: u64) -> Option<DescrRef> {
        self.t.ops.iter().enumerate().rev().find_map(|(i, op)| {
            (matches!(op.opcode, Opcode::NewArray | Opcode::NewArrayClear) && self.st.vals[i].bits() == addr)
                .then_some(op.descr)
                .flatten()
        })
    }

    /// An index valid for every array of length `len` (a power of two): a constant, or a
    /// live integer masked by `len - 1`.
    pub(super) fn index_for(&mut self, len: u64) -> Option<Value> {
        if len == 0 {
            return None;
        }
        if self.rng.chance(1, 2) || !len.is_power_of_two() {
            let i = self.rng.below(len) as i64;
            return Some(self.konst(Const::Int(i)));
        }
        let x = self.int_arg();
        let m = self.konst(Const::Int(len as i64 - 1));
        self.op(Opcode::IntAnd, &[x, m], None)
    }

    pub(super) fn generate(mut self) -> (Trace, Vec<RtValue>) {
        let inputs = self.make_inputs();
        let total = self.cfg.length.max(1);
        let loop_at = (self.loops && self.rng.chance(1, 2)).then(|| total / 4 + self.rng.index(total / 3 + 1));
        let mut count = 0;
        let mut tries = 0;
        while count < total && tries < total * 20 {
            tries += 1;
            if Some(count) == loop_at && self.in_loop.is_none() {
                self.start_loop();
            }
            if self.random_op() {
                count += 1;
            }
        }
        if self.in_loop.is_some() {
            self.end_loop();
        } else {
            let n = self.rng.index(5.min(self.live.len() + 1));
            let vals: Vec<Value> = (0..n).map(|_| self.rng.pick(&self.live).v).collect();
            self.t.ops.push(Op::new(Opcode::Finish, &vals));
        }
        (self.t, inputs)
    }

    pub(super) fn random_op(&mut self) -> bool {
        let c = self.cfg;
        match self.rng.weighted(&[
            c.int_ops,
            c.ovf_ops,
            c.guards,
            c.heap,
            c.calls,
            c.floats,
            c.views,
            c.hints,
            c.frames,
            c.gc_bytes,
            c.strings,
            c.field_hints,
        ]) {
            Some(0) | None => self.int_op(),
            Some(1) => self.ovf_op(),
            Some(2) => self.guard_op(),
            Some(3) => self.heap_op(),
            Some(4) => self.call_op(),
            Some(5) => self.float_op(),
            Some(6) => self.view_op(),
            Some(7) => self.hint_op(),
            Some(8) => self.frame_op(),
            Some(9) => self.gc_op(),
            Some(10) => self.string_op(),
            _ => self.field_hint_op(),
        }
    }

    pub(super) fn start_loop(&mut self) {
        let start = self.rng.range_i64(0, 3);
        let iters = 1 + self.rng.below(self.cfg.max_iterations.max(1) as u64) as i64;
        let i0 = self.konst(Const::Int(start));
        let n = self.konst(Const::Int(start + iters));
        let mut args: Vec<(Value, Kind, bool)> = vec![(i0, Kind::Int, true), (n, Kind::Int, false)];
        for _ in 0..self.rng.below(4) {
            let l = *self.rng.pick(&self.live);
            args.push((l.v, l.kind, false));
        }
        for _ in 0..1 + self.rng.below(2) {
            let x = self.int_arg();
            args.push((x, Kind::Int, true));
        }
        if self.cfg.loop_objects && self.cfg.heap > 0 && self.rng.chance(1, 3) {
            // An object the trace allocates, which the loop may pass on as a new one.
            let p = self.op(Opcode::NewWithVtable, &[], Some(self.d.size_vt));
            let x = self.int_arg();
            if let Some(p) = p {
                self.op(Opcode::SetfieldGc, &[p, x], Some(self.d.f_int));
                args.push((p, Kind::Ref, true));
            }
        } else if self.rng.chance(1, 2) {
            if let Some(p) = self.struct_ref() {
                args.push((p, Kind::Ref, true));
            }
        }
        let label_pc = self.t.ops.len();
        let vals: Vec<Value> = args.iter().map(|a| a.0).collect();
        self.t.ops.push(Op::new(Opcode::Label, &vals));
        self.st.vals.push(RtValue::Int(0));
        self.variant.push(false);
        self.live.clear();
        let mut params = Vec::new();
        for &(_, kind, variant) in &args {
            let r = OpRef::new(self.t.ops.len());
            self.t
                .ops
                .push(Op::new(Opcode::input_for(kind).expect("not void"), &[]));
            self.st.vals.push(RtValue::Int(0));
            self.variant.push(variant);
            let v = Value::op(r);
            self.live.push(Live { v, kind, variant });
            params.push((v, kind, variant));
        }
        let in_loop = LoopInfo {
            counter: params[0].0,
            limit: params[1].0,
            params,
        };
        self.in_loop = Some(in_loop);
        let stepped = interp::step_op(&self.t, &self.run_cfg, &mut self.st, label_pc);
        debug_assert!(stepped.is_ok());
        let (counter, limit) = (
            self.in_loop.as_ref().map(|l| l.counter),
            self.in_loop.as_ref().map(|l| l.limit),
        );
        if let (Some(i), Some(n)) = (counter, limit) {
            if let Some(c) = self.op(Opcode::IntLt, &[i, n], None) {
                self.guard(Opcode::GuardTrue, &[c]);
            }
        }
    }

    /// A new struct of the allocation the object `p` refers to (its size and class), some
    /// of its fields written from `p`'s or from other values: what a loop passes to its next
    /// iteration when it makes a new object each time. `None` when `p` is no struct the
    /// trace allocated.
    fn fresh_like(&mut self, p: Value) -> Option<Value> {
        use Opcode::*;
        let a = self.ex(p).bits();
        let (size, class) = match self.st.heap.objects.get(&a) {
            Some(o) => match o.kind {
                ObjKind::Struct { size } => (size, o.class),
                _ => return None,
            },
            None => return None,
        };
        let d = &self.d;
        let (opc, sd) = [
            (New, d.size_plain),
            (NewWithVtable, d.size_vt),
            (NewWithVtable, d.size_vt2),
        ]
        .into_iter()
        .find(|&(opc, sd)| {
            let s = self.t.descr(sd).as_size().expect("a size descriptor");
            let c = if opc == NewWithVtable {
                trace_ir::abi::default_class(s)
            } else {
                0
            };
            s.size == size && c == class
        })?;
        let q = self.op(opc, &[], Some(sd))?;
        let (f_int, f_ref, f_float) = (self.d.f_int, self.d.f_ref, self.d.f_float);
        if self.rng.chance(2, 3) {
            let old = self.op(GetfieldGcI, &[p], Some(f_int));
            let x = self.int_arg();
            let v = old.and_then(|o| self.op(IntAdd, &[o, x], None)).unwrap_or(x);
            self.op(SetfieldGc, &[q, v], Some(f_int));
        }
        if self.rng.chance(1, 3) {
            let v = self.ref_arg();
            self.op(SetfieldGc, &[q, v], Some(f_ref));
        }
        if self.rng.chance(1, 3) {
            let v = self.float_arg();
            self.op(SetfieldGc, &[q, v], Some(f_float));
        }
        Some(q)
    }

    pub(super) fn end_loop(&mut self) {
        let Some(info) = self.in_loop.take() else { return };
        let one = self.konst(Const::Int(1));
        // Build the jump without executing it (that would start the next iteration).
        let i2 = self
            .op(Opcode::IntAdd, &[info.counter, one], None)
            .unwrap_or(info.counter);
        let mut vals: SmallVec<[Value; 8]> = SmallVec::new();
        for (k, &(p, kind, variant)) in info.params.iter().enumerate() {
            let v = match (k, variant) {
                (0, _) => i2,
                (_, false) => p,
                (_, true) if kind == Kind::Ref => {
                    // A new object like the parameter (one that may stay virtual across
                    // the back edge), or one of the same shape, so body ops stay valid.
                    let fresh = if self.cfg.loop_objects && self.rng.chance(1, 2) {
                        self.fresh_like(p)
                    } else {
                        None
                    };
                    let shape = |g: &Self, v: Value| {
                        let a = g.ex(v).bits();
                        g.st.heap.objects.get(&a).map(|o| (o.kind.clone(), o.class))
                    };
                    let want = shape(self, p);
                    fresh.unwrap_or_else(|| {
                        self.pick_live(Kind::Ref, |g, l| want.is_some() && shape(g, l.v) == want)
                            .unwrap_or(p)
                    })
                }
                (_, true) => self.pick_live(kind, |_, _| true).unwrap_or(p),
            };
            vals.push(v);
        }
        self.t.ops.push(Op::new(Opcode::Jump, &vals));
    }
}
