//! Exits: guard exits and their stubs (fail arguments copied into the exit buffer), the
//! invalid-operation exits, and leaving the trace at `finish`.

use super::*;

/// A guard or invalid-operation exit waiting for its stub.
pub(super) struct Stub {
    /// Where the stub starts in the code, once placed. Jumps to stubs are hand-encoded and
    /// fixed up then (see `Gen::stub_jumps`), without the assembler's label and relocation
    /// per exit.
    pub(super) at: u32,
    pub(super) code: u32,
    /// The registers each exit-buffer word comes from: `Gen::stub_words[words.0..words.1]`.
    pub(super) words: (u32, u32),
}

impl Gen<'_> {
    pub(super) fn jcc_stub(&mut self, c: Cond, s: u32) {
        self.stub_jump(&[0x0f, 0x80 | c.code()], s);
    }
    /// `jmp rel32` to guard stub `s` (`E9`), fixed up as [`Gen::jcc_stub`].
    pub(super) fn jmp_stub(&mut self, s: u32) {
        self.stub_jump(&[0xe9], s);
    }
    /// `opcode` and a zero displacement to be fixed up.
    pub(super) fn stub_jump(&mut self, opcode: &[u8], s: u32) {
        let at = self.asm.offset().0 + opcode.len();
        self.stub_jumps.push((at as u32, s));
        self.rel32_insn(opcode, 0);
    }

    pub(super) fn undo_word(&mut self, d: i32, inverse: Opcode, y: Opnd) {
        let y = match y {
            Opnd::Mem(m) => {
                self.load_frame(11, m);
                Opnd::Reg(11)
            }
            y => y,
        };
        match (inverse, y) {
            (Opcode::IntAdd, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; add QWORD [rbp + d], Rq(r)),
            (Opcode::IntAdd, Opnd::Imm(i)) => dynasm!(self.asm ; .arch x64 ; add QWORD [rbp + d], i),
            (_, Opnd::Reg(r)) => dynasm!(self.asm ; .arch x64 ; sub QWORD [rbp + d], Rq(r)),
            (_, Opnd::Imm(i)) => dynasm!(self.asm ; .arch x64 ; sub QWORD [rbp + d], i),
            (_, Opnd::Mem(_)) => unreachable!("loaded into r11"),
        }
    }

    /// The label of an exit stub that reports an invalid operation at the current op.
    pub(super) fn invalid_exit(&mut self) -> u32 {
        if let Some((at, stub)) = self.invalid {
            if at == self.pos {
                return stub;
            }
        }
        let stub = self.stubs.len() as u32;
        let code = self.exits.len() as u32;
        self.exits.push(ExitInfo::Invalid {
            op: OpRef::new(self.pos),
        });
        self.stubs.push(Stub {
            at: 0,
            code,
            words: (0, 0),
        });
        self.invalid = Some((self.pos, stub));
        stub
    }

    /// Snapshot the fail arguments of the guard at the current op and jump to its stub when
    /// `exit_if` holds. With `undo` (an overflow guard), the operand its `_ovf` op overwrote
    /// is recomputed by the stub (see [`Undo`]).
    pub(super) fn guard_exit(&mut self, exit_if: Cond, undo: Option<Undo>) -> R<()> {
        let t = self.t;
        let g = t.ops[self.pos]
            .guard
            .ok_or_else(|| internal("guard without resume data".into()))?;
        let gd = t.guard(g);
        let mut words = std::mem::take(&mut self.stub_words);
        let first = words.len();
        let stub_index = self.stubs.len() as u32;
        let mut undos = std::mem::take(&mut self.undos);
        let mut slot_of = |fa: &FailArg, words: &mut Vec<Reg>, me: &Self| -> R<ExitSlot> {
            Ok(match *fa {
                FailArg::Value(v) => {
                    match undo {
                        Some(u) if v.as_op().is_some_and(|o| o.index() == u.val) => {
                            // The register holds the op's result; the stub recomputes `v`.
                            me.record_use(Loc::Reg(u.reg), u.at);
                            if let Opnd::Reg(r) = u.y {
                                me.expect(Loc::Reg(r), me.val(u.y_val));
                            }
                            undos.push((stub_index, (words.len() - first) as u32, u.inverse, u.y));
                            words.push(u.reg);
                        }
                        _ => return me.exit_slot(v, words, first),
                    }
                    ExitSlot::Frame((FRAME_HEADER + words.len() - 1 - first) as u32)
                }
                FailArg::Virtual(k) => ExitSlot::Virtual(k),
                FailArg::Hole => ExitSlot::Hole,
            })
        };
        let mut slots = std::mem::take(&mut self.exit_slots);
        let fail_start = slots.len() as u32;
        for fa in &gd.fail_args {
            // Most fail arguments are plain values with nothing to undo: straight to their slot.
            let slot = match *fa {
                FailArg::Value(v) if undo.is_none() => self.exit_slot(v, &mut words, first)?,
                _ => slot_of(fa, &mut words, self)?,
            };
            slots.push(slot);
        }
        let fail = (fail_start, slots.len() as u32);
        self.exit_slots = slots;
        let mut virtuals = Vec::new();
        for vo in &gd.virtuals {
            let init = match vo.kind {
                VirtualKind::Struct { opcode, descr } => {
                    let sd = t
                        .descr(descr)
                        .as_size()
                        .ok_or_else(|| bad("virtual struct without a size descriptor"))?;
                    let class = if opcode == Opcode::NewWithVtable {
                        trace_ir::interp::default_class(sd)
                    } else {
                        0
                    };
                    VirtualInit::Struct {
                        size: sd.size.max(0) as u64,
                        class,
                    }
                }
                VirtualKind::Array { descr, len, .. } => {
                    let ad = t
                        .descr(descr)
                        .as_array()
                        .ok_or_else(|| bad("virtual array without an array descriptor"))?;
                    VirtualInit::Array {
                        layout: ArrayLayout {
                            item_size: ad.item_size as u64,
                            base_offset: ad.base_offset as u64,
                            len_offset: ad.len_offset as u64,
                        },
                        len: len as u64,
                    }
                }
            };
            let mut fields = Vec::with_capacity(vo.fields.len());
            for (place, fa) in &vo.fields {
                let (offset, size) = match (*place, &init) {
                    (VirtualField::Field(d), _) => {
                        let f = t
                            .descr(d)
                            .as_field()
                            .ok_or_else(|| bad("virtual field without a field descriptor"))?;
                        (f.offset as u64, f.size)
                    }
                    (VirtualField::Item(i), VirtualInit::Array { layout, .. }) => {
                        (layout.base_offset + i as u64 * layout.item_size, layout.item_size as u8)
                    }
                    (VirtualField::Item(_), _) => return Err(bad("array item of a virtual struct")),
                };
                fields.push((offset, size, slot_of(fa, &mut words, self)?));
            }
            virtuals.push(VirtualLayout { init, fields });
        }
        self.undos = undos;
        let code = self.exits.len() as u32;
        self.exits.push(ExitInfo::Guard {
            guard: gd.id,
            resume_key: gd.resume_key,
            fail,
            virtuals,
        });
        self.stubs.push(Stub {
            at: 0,
            code,
            words: (first as u32, words.len() as u32),
        });
        self.stub_words = words;
        self.jcc_stub(exit_if, stub_index);
        Ok(())
    }

    /// Where an exit finds value `v`: its spill slot (a spilled value stays where it is),
    /// its constant, or (held in a register) the next exit-buffer word of the stub, whose
    /// words start at `words[first]`.
    #[inline]
    pub(super) fn exit_slot(&self, v: Value, words: &mut Vec<Reg>, first: usize) -> R<ExitSlot> {
        Ok(match self.loc(v)? {
            Loc::Mem(d) => ExitSlot::Frame((d / 8) as u32),
            Loc::Imm(bits) => ExitSlot::Const(bits),
            Loc::Reg(r) => {
                words.push(r);
                ExitSlot::Frame((FRAME_HEADER + words.len() - 1 - first) as u32)
            }
        })
    }

    /// Leave the trace: store `args` into the exit buffer and return the code of `info`.
    pub(super) fn leave(&mut self, args: &[Value], info: ExitInfo) -> R<()> {
        for (k, &v) in args.iter().enumerate() {
            let src = self.loc(v)?;
            self.mov(Loc::Mem(self.exit_disp(k)), src);
        }
        let code = self.exits.len() as i32;
        self.exits.push(info);
        let e = self.epilogue;
        dynasm!(self.asm ; .arch x64 ; mov eax, code ; jmp =>e);
        self.record(Event::End);
        Ok(())
    }
}
