//! What each op does: the dispatch by op family.

use super::*;

impl<'a> Machine<'a> {
    /// Execute the op at `pc`; returns the next pc.
    pub(crate) fn step(&mut self, pc: usize) -> Result<usize, Stop> {
        use Opcode::*;
        let t = self.trace;
        let at = OpRef::new(pc);
        let op = t.op(at);
        let opc = op.opcode;
        if opc.is_input() {
            return Ok(pc + 1);
        }
        self.st.steps += 1;
        if opc.is_pure() {
            let mut bits: smallvec::SmallVec<[u64; 4]> = smallvec::SmallVec::new();
            for &v in &op.args {
                bits.push(self.get(at, v)?.bits());
            }
            let r = eval_pure(opc, &bits).map_err(|e| invalid(at, e.to_string()))?;
            self.set(at, RtValue::from_bits(opc.result_kind(), r));
            return Ok(pc + 1);
        }
        if opc.is_guard() {
            let holds = self.guard_holds(at)? && !self.stops_at(at);
            return if holds { Ok(pc + 1) } else { Err(self.fail(at)) };
        }
        if opc.is_call() {
            self.call(at)?;
            return Ok(pc + 1);
        }
        match opc {
            Label | Jump | Finish => return self.step_control(at),
            IntAddOvf | IntSubOvf | IntMulOvf => {
                let (a, b) = (self.int_arg(at, 0)?, self.int_arg(at, 1)?);
                let (r, ovf) = eval_ovf(opc, a, b).map_err(|e| invalid(at, e.to_string()))?;
                self.st.ovf = ovf;
                self.set(at, RtValue::Int(r));
            }
            New | NewWithVtable | NewArray | NewArrayClear | Newstr | Newunicode => self.step_alloc(at)?,
            GetfieldGcI | GetfieldGcR | GetfieldGcF | SetfieldGc | GetfieldRawI | GetfieldRawR | GetfieldRawF
            | SetfieldRaw | GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF | GetarrayitemGcPureI
            | GetarrayitemGcPureR | GetarrayitemGcPureF | SetarrayitemGc | GetarrayitemRawI | GetarrayitemRawF
            | SetarrayitemRaw | RawLoadI | RawLoadF | RawStore | GetinteriorfieldGcI | GetinteriorfieldGcR
            | GetinteriorfieldGcF | SetinteriorfieldGc | SetinteriorfieldRaw | GcLoadI | GcLoadR | GcLoadF
            | GcLoadIndexedI | GcLoadIndexedR | GcLoadIndexedF | GcStore | GcStoreIndexed => self.step_memory(at)?,
            ArraylenGc | Strlen | Unicodelen | Strgetitem | Unicodegetitem | Strsetitem | Unicodesetitem | Strhash
            | Unicodehash | Copystrcontent | Copyunicodecontent => self.step_strings(at)?,
            ForceToken | VirtualRef | SaveException | SaveExcClass | RestoreException | AssertNotNone
            | RecordExactClass | RecordExactValueR | RecordExactValueI | QuasiimmutField | VirtualRefFinish
            | EnterPortalFrame | LeavePortalFrame | Keepalive | RecordKnownResult | RecordKnownField
            | RecordIntRange | RecordIntBits => self.step_other(at)?,
            // Handled above by flag; listed so the match stays exhaustive over the table.
            InputI | InputR | InputF => {}
            _ => return Err(not_handled(at, opc)),
        }
        Ok(pc + 1)
    }

    /// `label`, `jump` and `finish`: the next pc, or how the run stops.
    pub(crate) fn step_control(&mut self, at: OpRef) -> Result<usize, Stop> {
        use Opcode::*;
        let t = self.trace;
        let op = t.op(at);
        let opc = op.opcode;
        match opc {
            Label => {
                let vals = self.args(at)?;
                self.enter(at, at.index(), vals)
            }
            Jump => {
                let vals = self.args(at)?;
                match jump_target(t, at) {
                    JumpTarget::Label(l) => {
                        self.back_edge()?;
                        self.enter(at, l.index(), vals)
                    }
                    JumpTarget::Start => {
                        self.back_edge()?;
                        self.st.loop_entries += 1;
                        if vals.len() != t.num_inputs {
                            return Err(invalid(at, "jump to the start with the wrong number of values"));
                        }
                        for (i, v) in vals.into_iter().enumerate() {
                            self.st.vals[i] = v;
                        }
                        Ok(t.num_inputs)
                    }
                    JumpTarget::External => {
                        let target = match op.descr.map(|d| t.descrs.get(d.index())) {
                            Some(Some(Descr::Loop(n))) => Some(*n),
                            Some(Some(Descr::Target(token))) => {
                                if let Some((to, label)) = self.tree_label(*token) {
                                    self.back_edge()?;
                                    return Err(self.go_to(to, tree::Entry::Label(label, vals)));
                                }
                                None
                            }
                            _ => None,
                        };
                        Err(Outcome::ExternalJump { target, values: vals })
                    }
                }
            }
            Finish => Err(Outcome::Finish(self.args(at)?)),
            _ => Err(not_handled(at, opc)),
        }
    }

    /// Allocation: `new`, `new_with_vtable`, `new_array*`, `newstr`, `newunicode`.
    pub(crate) fn step_alloc(&mut self, at: OpRef) -> Result<(), Stop> {
        use Opcode::*;
        let opc = self.trace.op(at).opcode;
        match opc {
            New | NewWithVtable => {
                let sd = self.size_descr(at)?;
                let class = if opc == NewWithVtable { default_class(sd) } else { 0 };
                let bytes = u64::try_from(sd.size.max(if class != 0 { 8 } else { 0 })).ok();
                self.alloc_size(at, 0, bytes)?;
                let a = self.st.heap.alloc(ObjKind::Struct { size: sd.size }, class, false);
                self.set(at, RtValue::Ref(a));
            }
            NewArray | NewArrayClear => {
                let descr = self.array_descr(at)?.clone();
                let n = self.int_arg(at, 0)?;
                let len = self.alloc_size(at, n, descr.alloc_size(n.max(0) as u64))?;
                let a = self.alloc_array(len, descr, self.writer(at), false);
                self.set(at, RtValue::Ref(a));
            }
            Newstr | Newunicode => {
                let n = self.int_arg(at, 0)?;
                let width = u64::from(char_size(opc));
                let bytes = (n.max(0) as u64)
                    .checked_mul(width)
                    .and_then(|b| b.checked_add(STR_CHARS_OFFSET as u64));
                let len = self.alloc_size(at, n, bytes)?;
                let a = self.alloc_string(len, opc == Newunicode, false);
                self.set(at, RtValue::Ref(a));
            }
            _ => return Err(not_handled(at, opc)),
        }
        Ok(())
    }

    /// Fields, array items, interior fields and raw memory: loads and stores.
    pub(crate) fn step_memory(&mut self, at: OpRef) -> Result<(), Stop> {
        use Opcode::*;
        let opc = self.trace.op(at).opcode;
        match opc {
            GetfieldGcI | GetfieldGcR | GetfieldGcF => {
                let fd = self.field_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let view = View::new(fd.offset, fd.size);
                self.load(at, p, view, fd.immutable, fd.signed)?;
            }
            SetfieldGc => {
                let fd = self.field_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let v = narrow(self.arg(at, 1)?, fd.size, fd.signed);
                self.store(at, p, View::new(fd.offset, fd.size), v, fd.immutable)?;
            }
            GetfieldRawI | GetfieldRawR | GetfieldRawF => {
                let fd = self.field_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let v = self
                    .st
                    .heap
                    .read_raw(a.wrapping_add(fd.offset as u64), fd.size, opc.result_kind());
                self.set(at, narrow(v, fd.size, fd.signed));
            }
            SetfieldRaw => {
                let fd = self.field_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let v = narrow(self.arg(at, 1)?, fd.size, fd.signed);
                self.st.heap.write_raw(a.wrapping_add(fd.offset as u64), fd.size, v);
            }
            // --- arrays ---
            GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF | GetarrayitemGcPureI | GetarrayitemGcPureR
            | GetarrayitemGcPureF => {
                let ad = self.array_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let view = self.item_view(at, p, self.int_arg(at, 1)?, ad)?;
                let pure = matches!(opc, GetarrayitemGcPureI | GetarrayitemGcPureR | GetarrayitemGcPureF);
                self.load(at, p, view, pure, ad.signed)?;
            }
            SetarrayitemGc => {
                let ad = self.array_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let view = self.item_view(at, p, self.int_arg(at, 1)?, ad)?;
                let v = narrow(self.arg(at, 2)?, ad.item_size, ad.signed);
                self.store(at, p, view, v, false)?;
            }
            GetarrayitemRawI | GetarrayitemRawF => {
                let ad = self.array_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let i = self.int_arg(at, 1)?;
                let addr = a.wrapping_add((i as u64).wrapping_mul(ad.item_size as u64));
                let v = self.st.heap.read_raw(addr, ad.item_size, opc.result_kind());
                self.set(at, narrow(v, ad.item_size, ad.signed));
            }
            SetarrayitemRaw => {
                let ad = self.array_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let i = self.int_arg(at, 1)?;
                let addr = a.wrapping_add((i as u64).wrapping_mul(ad.item_size as u64));
                let v = narrow(self.arg(at, 2)?, ad.item_size, ad.signed);
                self.st.heap.write_raw(addr, ad.item_size, v);
            }
            RawLoadI | RawLoadF => {
                let ad = self.array_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let addr = a.wrapping_add(self.int_arg(at, 1)? as u64);
                let v = self.st.heap.read_raw(addr, ad.item_size, opc.result_kind());
                self.set(at, narrow(v, ad.item_size, ad.signed));
            }
            RawStore => {
                let ad = self.array_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let addr = a.wrapping_add(self.int_arg(at, 1)? as u64);
                let v = narrow(self.arg(at, 2)?, ad.item_size, ad.signed);
                self.st.heap.write_raw(addr, ad.item_size, v);
            }
            GetinteriorfieldGcI | GetinteriorfieldGcR | GetinteriorfieldGcF => {
                let (item, fd) = self.interior_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let view = self.interior_view(at, p, self.int_arg(at, 1)?, item, fd)?;
                self.load(at, p, view, fd.immutable, fd.signed)?;
            }
            SetinteriorfieldGc => {
                let (item, fd) = self.interior_descr(at)?;
                let p = self.nonnull(at, 0)?;
                let view = self.interior_view(at, p, self.int_arg(at, 1)?, item, fd)?;
                let v = narrow(self.arg(at, 2)?, fd.size, fd.signed);
                self.store(at, p, view, v, fd.immutable)?;
            }
            SetinteriorfieldRaw => {
                let (item, fd) = self.interior_descr(at)?;
                let a = self.nonnull(at, 0)?;
                let i = self.int_arg(at, 1)?;
                let addr = a
                    .wrapping_add((i as u64).wrapping_mul(item as u64))
                    .wrapping_add(fd.offset as u64);
                let v = narrow(self.arg(at, 2)?, fd.size, fd.signed);
                self.st.heap.write_raw(addr, fd.size, v);
            }
            GcLoadI | GcLoadR | GcLoadF | GcLoadIndexedI | GcLoadIndexedR | GcLoadIndexedF | GcStore
            | GcStoreIndexed => {
                let g = opc.gc_access().expect("a gc_load/gc_store op");
                let kind = match g.value {
                    Some(v) => self.arg(at, v)?.kind(),
                    None => opc.result_kind(),
                };
                let mut args = [0i64; 6];
                for (k, a) in args.iter_mut().enumerate().take(self.trace.op(at).args.len()).skip(1) {
                    if Some(k) != g.value {
                        *a = self.int_arg(at, k)?;
                    }
                }
                let Some((offset, size, signed)) = g.resolve(|k| args[k], kind) else {
                    return Err(invalid(at, format!("{opc} of a size or offset out of range")));
                };
                let p = self.nonnull(at, 0)?;
                let view = View::new(offset, size);
                match g.value {
                    None => self.load(at, p, view, false, signed)?,
                    Some(v) => {
                        let v = narrow(self.arg(at, v)?, size, false);
                        self.store(at, p, view, v, false)?;
                    }
                }
            }
            _ => return Err(not_handled(at, opc)),
        }
        Ok(())
    }

    /// Lengths and strings: `arraylen_gc`, `strlen`, characters, hashes and copies.
    pub(crate) fn step_strings(&mut self, at: OpRef) -> Result<(), Stop> {
        use Opcode::*;
        let opc = self.trace.op(at).opcode;
        match opc {
            ArraylenGc | Strlen | Unicodelen => {
                let p = self.nonnull(at, 0)?;
                if let Some(obj) = self.st.heap.objects.get(&p) {
                    let same_kind = matches!(
                        (opc, &obj.kind),
                        (ArraylenGc, ObjKind::Array { .. })
                            | (Strlen, ObjKind::Str { .. })
                            | (Unicodelen, ObjKind::Unicode { .. })
                    );
                    if !same_kind {
                        return Err(invalid(at, format!("{opc} of an object of another kind")));
                    }
                }
                let (len_offset, writer) = match opc {
                    ArraylenGc => (self.array_descr(at)?.len_offset, self.writer(at)),
                    _ => (STR_LEN_OFFSET, heap::WRITER_STRING),
                };
                let len = self.length(at, p, len_offset, writer)?;
                self.set(at, RtValue::Int(len));
            }
            Strgetitem | Unicodegetitem => {
                let p = self.nonnull(at, 0)?;
                let width = char_size(opc);
                let view = self.char_view(at, p, self.int_arg(at, 1)?, width)?;
                self.check_access(at, p, view, heap::WRITER_STRING, false)?;
                let v = self.st.heap.read(p, view, Kind::Int, true);
                self.set(at, narrow(v, width, false));
            }
            Strsetitem | Unicodesetitem => {
                let p = self.nonnull(at, 0)?;
                let width = char_size(opc);
                let view = self.char_view(at, p, self.int_arg(at, 1)?, width)?;
                self.check_access(at, p, view, heap::WRITER_STRING, true)?;
                let v = narrow(self.arg(at, 2)?, width, false);
                self.st.heap.write(p, view, v, false, heap::WRITER_STRING);
            }
            Strhash | Unicodehash => {
                let p = self.nonnull(at, 0)?;
                let width = u64::from(char_size(opc));
                let epoch = self.st.heap.epoch;
                let h = match self.st.heap.objects.get(&p) {
                    Some(obj) => {
                        let len = obj.length().unwrap_or(0);
                        let chars = (0..len).map(|k| {
                            let view = View::new(STR_CHARS_OFFSET + (k * width) as i64, width as u8);
                            obj.read(view, Kind::Int, epoch, true).bits()
                        });
                        string_hash(len, chars) as i64
                    }
                    None => self.st.heap.read(p, View::new(-8, 8), Kind::Int, true).bits() as i64,
                };
                self.set(at, RtValue::Int(h));
            }
            Copystrcontent | Copyunicodecontent => {
                let src = self.nonnull(at, 0)?;
                let dst = self.nonnull(at, 1)?;
                let (ss, ds, n) = (self.int_arg(at, 2)?, self.int_arg(at, 3)?, self.int_arg(at, 4)?);
                if !(0..=MAX_COPY_LEN).contains(&n) {
                    return Err(invalid(at, format!("copy length {n} outside 0..={MAX_COPY_LEN}")));
                }
                if n > 0 {
                    self.index(at, src, ss)?;
                    self.index(at, src, ss.wrapping_add(n - 1))?;
                    self.index(at, dst, ds)?;
                    self.index(at, dst, ds.wrapping_add(n - 1))?;
                    let width = char_size(opc);
                    let mut items = Vec::with_capacity(n as usize);
                    for k in 0..n {
                        let view = self.char_view(at, src, ss + k, width)?;
                        let v = self.st.heap.read(src, view, Kind::Int, true);
                        items.push(narrow(v, width, false));
                    }
                    for (k, v) in items.into_iter().enumerate() {
                        let view = self.char_view(at, dst, ds + k as i64, width)?;
                        self.check_access(at, dst, view, heap::WRITER_STRING, true)?;
                        self.st.heap.write(dst, view, v, false, heap::WRITER_STRING);
                    }
                }
            }
            _ => return Err(not_handled(at, opc)),
        }
        Ok(())
    }

    /// Frames, exceptions and hints.
    pub(crate) fn step_other(&mut self, at: OpRef) -> Result<(), Stop> {
        use Opcode::*;
        let opc = self.trace.op(at).opcode;
        match opc {
            ForceToken => self.set(at, RtValue::Ref(FORCE_TOKEN)),
            VirtualRef => {
                let l = VirtualRefLayout::get();
                let class = default_class(&l.size);
                self.alloc_size(at, 0, Some(l.size.size as u64))?;
                let a = self.st.heap.alloc(ObjKind::Struct { size: l.size.size }, class, false);
                let [token, forced] = self.vref_writers();
                let view = |f: &trace_ir::FieldDescr| View::new(f.offset, f.size);
                self.store_as(at, a, view(&l.token), RtValue::Ref(FORCE_TOKEN), false, token)?;
                self.store_as(at, a, view(&l.forced), RtValue::Ref(0), false, forced)?;
                self.set(at, RtValue::Ref(a));
            }
            VirtualRefFinish => {
                let l = VirtualRefLayout::get();
                let r = self.nonnull(at, 0)?;
                let p = self.arg(at, 1)?;
                let [token, forced] = self.vref_writers();
                let view = |f: &trace_ir::FieldDescr| View::new(f.offset, f.size);
                if p.bits() != 0 {
                    self.store_as(at, r, view(&l.forced), p, false, forced)?;
                }
                self.store_as(at, r, view(&l.token), RtValue::Ref(0), false, token)?;
            }
            SaveException => {
                let v = self.st.exception.take().map_or(0, |(_, v)| v);
                self.set(at, RtValue::Ref(v));
            }
            SaveExcClass => {
                let c = self.st.exception.map_or(0, |(c, _)| c);
                self.set(at, RtValue::Int(c));
            }
            RestoreException => {
                let (c, v) = (self.int_arg(at, 0)?, self.arg(at, 1)?.bits());
                self.st.exception = if c == 0 && v == 0 { None } else { Some((c, v)) };
            }
            // Hints are promises: breaking one is an invalid operation, so every part may rely
            // on what it states.
            AssertNotNone => {
                if self.arg(at, 0)?.bits() == 0 {
                    return Err(broken(at, "assert_not_none of null"));
                }
            }
            RecordExactClass => {
                let p = self.arg(at, 0)?.bits();
                let want = self.arg(at, 1)?.bits();
                if p == 0 {
                    return Err(broken(at, "record_exact_class of null"));
                }
                let class = self.class_of(p, want, false);
                if class != want {
                    return Err(broken(
                        at,
                        format!("record_exact_class names class 0x{want:x}; the object's is 0x{class:x}"),
                    ));
                }
            }
            RecordExactValueR | RecordExactValueI => {
                let (x, want) = (self.arg(at, 0)?.bits(), self.arg(at, 1)?.bits());
                if x != want {
                    return Err(broken(at, format!("{opc} names 0x{want:x}; the value is 0x{x:x}")));
                }
            }
            RecordIntRange => {
                let (x, lo, hi) = (self.int_arg(at, 0)?, self.int_arg(at, 1)?, self.int_arg(at, 2)?);
                if !(lo..=hi).contains(&x) {
                    return Err(broken(at, format!("record_int_range: {x} is not in [{lo}, {hi}]")));
                }
            }
            RecordIntBits => {
                let (x, mask, bits) = (self.int_arg(at, 0)?, self.int_arg(at, 1)?, self.int_arg(at, 2)?);
                if x & mask != bits {
                    return Err(broken(
                        at,
                        format!("record_int_bits: {x:#x} & {mask:#x} is not {bits:#x}"),
                    ));
                }
            }
            RecordKnownResult => self.record_known_result(at)?,
            RecordKnownField => self.record_known_field(at)?,
            QuasiimmutField | EnterPortalFrame | LeavePortalFrame | Keepalive => {}
            _ => return Err(not_handled(at, opc)),
        }
        Ok(())
    }
}

/// The width of a string op's characters (`trace_ir::descr::string_char_size`).
fn char_size(opc: Opcode) -> u8 {
    trace_ir::descr::string_char_size(opc).unwrap_or(4)
}

// Keep the flag-based dispatch honest: every op with a result that is neither pure, guard,
// call, nor handled by name would hit the fallback arm; the unit test below runs every opcode.
#[cfg(test)]
mod tests {
    use super::super::*;
    use trace_ir::GuardId;
    use trace_ir::Opcode;

    #[test]
    fn every_opcode_is_dispatched() {
        // An op that reaches the fallback arm reports "not handled"; build a one-op trace per
        // opcode with the right operand kinds and check the message never appears.
        use trace_ir::descr::*;
        use trace_ir::opcode::OpFlags;
        for &opc in Opcode::ALL {
            if opc.is_input() || opc == Opcode::Label || opc.has(OpFlags::FINAL) {
                continue;
            }
            let mut b = trace_ir::TraceBuilder::new();
            let sig = opc.info().args;
            let mut args = Vec::new();
            for c in sig.bytes() {
                match c {
                    b'i' | b'a' => args.push(b.const_int(1)),
                    b'r' => args.push(b.const_ref(0x4000_0000_0010)),
                    b'f' => args.push(b.const_float(1.5)),
                    _ => {}
                }
            }
            let d = match opc.descr_kind() {
                trace_ir::DescrKind::Field => Some(b.descr(Descr::Field(FieldDescr {
                    name: "f".into(),
                    offset: 8,
                    size: 8,
                    signed: true,
                    kind: Kind::Int,
                    immutable: false,
                }))),
                trace_ir::DescrKind::Interior => Some(b.descr(Descr::Interior(InteriorDescr {
                    item_size: 16,
                    field: FieldDescr {
                        name: "f".into(),
                        offset: 8,
                        size: 8,
                        signed: true,
                        kind: Kind::Int,
                        immutable: false,
                    },
                }))),
                trace_ir::DescrKind::Size => Some(b.descr(Descr::Size(SizeDescr { size: 16, vtable: None }))),
                trace_ir::DescrKind::Array => Some(b.descr(Descr::Array(ArrayDescr {
                    item_size: 8,
                    signed: true,
                    kind: Kind::Int,
                    base_offset: 16,
                    len_offset: 8,
                }))),
                trace_ir::DescrKind::Call => Some(b.descr(Descr::Call(CallDescr {
                    result: opc.result_kind(),
                    result_size: 8,
                    args: vec![],
                    effect: CallEffect::CanRaise,
                    oopspec: None,
                }))),
                _ => None,
            };
            let mut op = trace_ir::Op::new(opc, &args);
            op.descr = d;
            let trace = if opc.is_guard() {
                let mut t = b.build_unverified();
                t.guards.push(GuardData {
                    id: GuardId(0),
                    resume_key: 0,
                    fail_args: vec![],
                    virtuals: vec![],
                    writes: vec![],
                });
                op.guard = Some(trace_ir::GuardRef::new(0));
                t.ops.push(op);
                t.ops.push(trace_ir::Op::new(Opcode::Finish, &[]));
                t
            } else {
                b.push(op);
                b.finish(&[]);
                b.build_unverified()
            };
            let r = run(&trace, &[], &RunConfig::default());
            if let Outcome::Invalid { reason, .. } = &r.outcome {
                assert!(
                    !reason.contains("not handled") && !reason.contains("not a known guard"),
                    "{opc}: {reason}"
                );
            }
        }
    }
}
