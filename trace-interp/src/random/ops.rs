//! Random integer, overflow, float, call and hint ops, and guards on what they computed.

use super::*;

impl<'c> Gen<'c> {
    pub(super) fn int_op(&mut self) -> bool {
        use Opcode::*;
        const BIN: &[Opcode] = &[
            IntAdd,
            IntSub,
            IntMul,
            IntAnd,
            IntOr,
            IntXor,
            IntLt,
            IntLe,
            IntEq,
            IntNe,
            IntGt,
            IntGe,
            UintLt,
            UintLe,
            UintGt,
            UintGe,
            UintMulHigh,
            IntLshift,
            IntRshift,
            UintRshift,
            IntFloorDiv,
            IntMod,
            IntPyDiv,
            IntPyMod,
        ];
        const UN: &[Opcode] = &[
            IntIsTrue,
            IntIsZero,
            IntNeg,
            IntInvert,
            IntForceGeZero,
            SameAsI,
            IntSignext,
        ];
        if self.rng.chance(1, 4) {
            let opc = *self.rng.pick(UN);
            let x = self.int_arg();
            let args = if opc == IntSignext {
                let n = *self.rng.pick(&[1i64, 2, 4, 8]);
                vec![x, self.konst(Const::Int(n))]
            } else {
                vec![x]
            };
            return self.op(opc, &args, None).is_some();
        }
        let opc = *self.rng.pick(BIN);
        let x = self.int_arg();
        let y = match opc {
            IntLshift | IntRshift | UintRshift => {
                let y = self.int_arg();
                let ok = !self.is_variant(y) && (0..64).contains(&(self.ex(y).bits() as i64));
                if ok {
                    y
                } else if self.rng.chance(1, 2) {
                    let s = self.rng.below(64) as i64;
                    self.konst(Const::Int(s))
                } else {
                    let m = self.konst(Const::Int(63));
                    match self.op(IntAnd, &[y, m], None) {
                        Some(v) => v,
                        None => return false,
                    }
                }
            }
            IntFloorDiv | IntMod | IntPyDiv | IntPyMod if self.rng.chance(1, 2) => {
                // A constant divisor, as the optimizer rewrites (`optimizer::divconst`).
                let c = *self
                    .rng
                    .pick(&[3i64, 7, 10, 12, 641, 1000, 16, -8, -7, i64::MAX, i64::MIN, 1 << 40]);
                self.konst(Const::Int(c))
            }
            IntFloorDiv | IntMod | IntPyDiv | IntPyMod => {
                let y = self.int_arg();
                if !self.is_variant(y) && self.ex(y).bits() != 0 {
                    y
                } else {
                    let one = self.konst(Const::Int(1));
                    match self.op(IntOr, &[y, one], None) {
                        Some(v) => v,
                        None => return false,
                    }
                }
            }
            _ => self.int_arg(),
        };
        let Some(r) = self.op(opc, &[x, y], None) else {
            return false;
        };
        if opc.has(trace_ir::opcode::OpFlags::BOOL_RESULT) && !self.is_variant(r) && self.rng.chance(1, 2) {
            let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
            self.guard(g, &[r]);
        }
        true
    }

    pub(super) fn ovf_op(&mut self) -> bool {
        let opc = *self
            .rng
            .pick(&[Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf]);
        let (x, y) = (self.int_arg(), self.int_arg());
        if self.op(opc, &[x, y], None).is_none() {
            return false;
        }
        let g = if self.st.ovf {
            Opcode::GuardOverflow
        } else {
            Opcode::GuardNoOverflow
        };
        if !self.guard(g, &[]) {
            // Never expected: the guard is chosen from the flag. Keep the trace well-formed.
            self.t.ops.pop();
            self.st.vals.pop();
            self.variant.pop();
            self.live.pop();
            return false;
        }
        true
    }

    pub(super) fn guard_op(&mut self) -> bool {
        use Opcode::*;
        match self.rng.below(6) {
            0 | 1 => {
                let Some(x) = self.invariant_int() else { return false };
                let g = if self.ex(x).bits() != 0 { GuardTrue } else { GuardFalse };
                self.guard(g, &[x])
            }
            2 => {
                let Some(x) = self.invariant_int() else { return false };
                let c = self.konst(Const::Int(self.ex(x).bits() as i64));
                self.guard(GuardValue, &[x, c])
            }
            3 => {
                let Some(p) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let g = if self.ex(p).bits() != 0 {
                    GuardNonnull
                } else {
                    GuardIsnull
                };
                self.guard(g, &[p])
            }
            4 => {
                let Some(p) = self.pick_live(Kind::Ref, |g, l| !l.variant && g.ex(l.v).bits() != 0) else {
                    return false;
                };
                let a = self.ex(p).bits();
                let class = match self.st.heap.objects.get(&a) {
                    Some(o) if o.class != 0 => o.class,
                    Some(_) => return false,
                    None => match self.st.heap.external.get(&a).and_then(|e| e.class) {
                        Some(c) => c,
                        None => *self.rng.pick(&[0x7000_1000u64, 0x7000_2000]),
                    },
                };
                let c = self.konst(Const::Int(class as i64));
                let g = if self.rng.chance(1, 2) {
                    GuardClass
                } else {
                    GuardNonnullClass
                };
                self.guard(g, &[p, c])
            }
            _ => {
                let Some(p) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let Some(q) = self.pick_live(Kind::Ref, |_, l| !l.variant) else {
                    return false;
                };
                let opc = *self.rng.pick(&[PtrEq, PtrNe, InstancePtrEq, InstancePtrNe]);
                let Some(r) = self.op(opc, &[p, q], None) else {
                    return false;
                };
                let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
                self.guard(g, &[r])
            }
        }
    }

    pub(super) fn float_op(&mut self) -> bool {
        use Opcode::*;
        if self.rng.chance(1, 6) {
            // The same op with its operands both ways round, bits made visible: NaN payloads
            // tell them apart.
            let opc = *self.rng.pick(&[FloatAdd, FloatMul]);
            let (x, y) = (self.float_arg(), self.float_arg());
            for args in [[x, y], [y, x]] {
                let Some(r) = self.op(opc, &args, None) else {
                    return false;
                };
                self.op(ConvertFloatBytesToLonglong, &[r], None);
            }
            return true;
        }
        match self.rng.below(6) {
            0 | 1 => {
                let opc = *self.rng.pick(&[FloatAdd, FloatSub, FloatMul, FloatTrueDiv]);
                let (x, y) = (self.float_arg(), self.float_arg());
                self.op(opc, &[x, y], None).is_some()
            }
            2 => {
                let opc = *self.rng.pick(&[
                    FloatNeg,
                    FloatAbs,
                    FloatSqrt,
                    SameAsF,
                    CastFloatToInt,
                    ConvertFloatBytesToLonglong,
                ]);
                let x = self.float_arg();
                self.op(opc, &[x], None).is_some()
            }
            3 => {
                let opc = *self.rng.pick(&[CastIntToFloat, ConvertLonglongBytesToFloat]);
                let x = self.int_arg();
                self.op(opc, &[x], None).is_some()
            }
            _ => {
                let opc = *self.rng.pick(&[FloatLt, FloatLe, FloatEq, FloatNe, FloatGt, FloatGe]);
                let (x, y) = (self.float_arg(), self.float_arg());
                let Some(r) = self.op(opc, &[x, y], None) else {
                    return false;
                };
                if !self.is_variant(r) {
                    let g = if self.ex(r).bits() != 0 { GuardTrue } else { GuardFalse };
                    self.guard(g, &[r]);
                }
                true
            }
        }
    }

    pub(super) fn call_op(&mut self) -> bool {
        use Opcode::*;
        let f = *self.rng.pick(FUNCS);
        let func = self.konst(Const::Int(f));
        let d = &self.d;
        let (c_pure, c_write, c_raise_n, c_float, c_ref, c_force, c_cond) = (
            d.c_pure,
            d.c_write,
            d.c_raise_n,
            d.c_float,
            d.c_ref,
            d.c_force,
            d.c_cond,
        );
        match self.rng.below(7) {
            0 => {
                let (x, y) = (self.int_arg(), self.int_arg());
                let opc = if self.rng.chance(1, 2) { CallPureI } else { CallI };
                self.op(opc, &[func, x, y], Some(c_pure)).is_some()
            }
            1 => {
                let x = self.int_arg();
                self.op(CallI, &[func, x], Some(c_write)).is_some()
            }
            2 => {
                let p = self.ref_arg();
                if self.op(CallN, &[func, p], Some(c_raise_n)).is_none() {
                    return false;
                }
                self.guard(GuardNoException, &[]);
                true
            }
            3 if self.cfg.floats > 0 => {
                let x = self.float_arg();
                self.op(CallF, &[func, x], Some(c_float)).is_some()
            }
            4 => {
                let x = self.int_arg();
                if self.op(CallR, &[func, x], Some(c_ref)).is_none() {
                    return false;
                }
                self.guard(GuardNoException, &[]);
                true
            }
            5 => {
                let x = self.int_arg();
                if self.op(CallMayForceI, &[func, x], Some(c_force)).is_none() {
                    return false;
                }
                self.guard(GuardNotForced, &[]);
                true
            }
            _ => {
                if self.rng.chance(1, 4) && self.array_copy_op() {
                    return true;
                }
                let (c, x) = (self.int_arg(), self.int_arg());
                if self.rng.chance(1, 3) {
                    // `cond_call_value_i(v, f, x)`: `v` when non-zero, else `f(x)`.
                    let c_write = self.d.c_write;
                    return self.op(CondCallValueI, &[c, func, x], Some(c_write)).is_some();
                }
                self.op(CondCallN, &[c, func, x], Some(c_cond)).is_some()
            }
        }
    }

    /// `ll_arraycopy(src, dst, src_start, dst_start, length)` between two allocated arrays
    /// (of one layout or not), at constant positions within both.
    fn array_copy_op(&mut self) -> bool {
        let (Some((src, slen, _)), Some((dst, dlen, _))) = (self.array_ref(), self.array_ref()) else {
            return false;
        };
        let ss = self.rng.below(slen);
        let n = self.rng.below((slen - ss).min(dlen) + 1);
        let ds = self.rng.below(dlen - n + 1);
        let func = self.konst(Const::Int(0x1000_c0b0));
        let [ss, ds, n] = [ss, ds, n].map(|k| self.konst(Const::Int(k as i64)));
        let c_copy = self.d.c_copy;
        self.op(Opcode::CallN, &[func, src, dst, ss, ds, n], Some(c_copy))
            .is_some()
    }

    /// A hint that is a promise, true on the example inputs: `assert_not_none` of a non-null
    /// reference, or `record_exact_class` of an object's class (deciding it for an external
    /// object, as a first class check would).
    pub(super) fn hint_op(&mut self) -> bool {
        let Some(p) = self.pick_live(Kind::Ref, |g, l| !l.variant && g.ex(l.v).bits() != 0) else {
            return false;
        };
        if self.rng.chance(1, 2) {
            return self.op(Opcode::AssertNotNone, &[p], None).is_some();
        }
        let a = self.ex(p).bits();
        let class = match self.st.heap.objects.get(&a) {
            Some(o) if o.class != 0 => o.class,
            Some(_) => return false,
            None => match self.st.heap.external.get(&a).and_then(|e| e.class) {
                Some(c) => c,
                None => *self.rng.pick(&[0x7000_1000u64, 0x7000_2000]),
            },
        };
        let c = self.konst(Const::Int(class as i64));
        self.op(Opcode::RecordExactClass, &[p, c], None).is_some()
    }

    /// `record_known_field` of what a field of an object holds now in the example run (a
    /// promise true on the example inputs, possibly broken on others): an integer field's
    /// value as a constant, a reference field's as a live value that holds it (or null).
    /// Not in a loop body, where the field may change from one iteration to the next.
    pub(super) fn field_hint_op(&mut self) -> bool {
        if self.in_loop.is_some() {
            return false;
        }
        let Some(p) = self.struct_ref() else { return false };
        let d = &self.d;
        let fd = *self.rng.pick(&[d.f_int, d.f_int4, d.f_u1, d.f_ref, d.f_imm]);
        let Some(f) = self.t.descr(fd).as_field().cloned() else {
            return false;
        };
        let view = crate::heap::View::new(f.offset, f.size);
        let now = crate::machine::narrow(
            self.st.heap.read(self.ex(p).bits(), view, f.kind, f.immutable),
            f.size,
            f.signed,
        );
        let v = match f.kind {
            Kind::Ref if now.bits() == 0 => self.konst(Const::Ref(0)),
            Kind::Ref => match self.pick_live(Kind::Ref, |g, l| g.ex(l.v).bits() == now.bits()) {
                Some(v) => v,
                None => return false,
            },
            _ => self.konst(Const::Int(now.bits() as i64)),
        };
        self.op(Opcode::RecordKnownField, &[p, v], Some(fd)).is_some()
    }
}
