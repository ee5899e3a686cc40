//! Exits: guard exits and their stubs (fail arguments copied into the exit buffer), the
//! invalid-operation exits, and leaving the trace at `finish`.
//!
//! Guards snapshot the locations of their fail arguments (and of the fields of virtual
//! objects in their resume data) right before their conditional jump. The exit stub, emitted
//! after the loop body, copies the ones in registers into the exit buffer and returns the
//! exit code; constants are part of the exit's description, and values in spill slots stay
//! there: the exit reads them from the frame (slots are never reused and nothing runs between
//! the branch and the return, so a slot still holds what it held at the guard). A PyPy trace
//! carries most of its fail arguments in slots: its stubs shrink to a few stores.
//!
//! A guard's stub is, in order: the exit words an overflow guard recomputes (stored and
//! undone, see [`Undo`]); the patch point; the failure counter's increment; the other
//! register words' stores, the exit code and the jump to the epilogue, padded so that a
//! bridge's jump fits over them. A bridge attached to the guard is entered at the patch point
//! (so the counter counts the guard's exits to the interpreter) with every exit word where
//! the guard left it ([`WordFact::at`]): in its register, its spill slot, the exit buffer (a
//! recomputed word) or a constant.

use super::emit::{rel32, Cond, Emitter, Opnd};
use super::frame::FrameLayout;
use super::fusion::Undo;
use super::regs::{Reg, R11};
use super::{bad, internal, kind_of, Gen, R};
use crate::checker::Event;
use crate::exit::ExitKinds;
use crate::pmove::Loc;
use crate::runtime::ArrayLayout;
use crate::{ExitInfo, ExitSlot, ExitTables, ExitWrite, FieldWrite, VirtualInit, VirtualLayout};
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi};
use trace_ir::{Descr, FailArg, Kind, OpRef, Opcode, Trace, Value, VirtualField, VirtualKind, VirtualObject};

/// A guard or invalid-operation exit waiting for its stub.
pub(super) struct Stub {
    /// Where the stub starts in the code, once placed. Jumps to stubs are hand-encoded and
    /// fixed up then (see [`Exits::stub_jumps`]), without the assembler's label and
    /// relocation per exit.
    at: u32,
    /// The exit code the stub returns (an index into the exits).
    code: u32,
    /// The registers each exit-buffer word comes from: `Exits::stub_words[words.0..words.1]`.
    words: (u32, u32),
    /// For a guard's stub, the index of its failure counter (the guard's index in the
    /// trace's guard table); `u32::MAX` for an invalid-operation stub.
    counter: u32,
}

/// What a guard's exit stub offers a bridge: its patch point, exit words and jumps.
#[derive(Copy, Clone, Debug)]
pub(crate) struct GuardTail {
    /// The exit code of the guard (as the code returns it).
    pub(crate) exit: u32,
    /// The code offset of the stub's patch point: at least [`PATCH_LEN`] bytes of code run
    /// only from there on (stores, the exit code, the jump to the epilogue, padding), which
    /// a bridge's jump may overwrite.
    pub(crate) tail: u32,
    /// The guard's exit words, `Exits::word_facts[words.0..words.1]`.
    pub(crate) words: (u32, u32),
    /// The jumps to the stub whose target a bridge may take over (when the stub's patch
    /// point is its start: it recomputes no word), `Exits::guard_jumps[jumps.0..jumps.1]`:
    /// the code offsets of their 32-bit displacements.
    pub(crate) jumps: (u32, u32),
}

/// The bytes at a guard stub's patch point that a bridge's jump may overwrite: room for
/// `mov r11, imm64; jmp r11`.
pub(crate) const PATCH_LEN: usize = 13;

/// What native code knows of one exit word of a guard, for a bridge out of it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct WordFact {
    /// The word's kind.
    pub(crate) kind: Kind,
    /// Whether native code knew it to be non-null at the guard.
    pub(crate) nonnull: bool,
    /// Where the word is at the stub's patch point: a register, a frame word (the spill slot
    /// it lives in, or for a word the stub recomputes, its exit-buffer word), or a constant.
    pub(crate) at: Loc,
}

/// The exits of a trace: what each exit code means, and the stubs that produce them. The
/// buffers are reused from trace to trace ([`Exits::reset`]).
#[derive(Default)]
pub(super) struct Exits {
    /// What each exit code means (the index is the code).
    infos: Vec<ExitInfo>,
    /// The fail-argument slots of all guard exits, back to back.
    slots: Vec<ExitSlot>,
    /// The virtual objects of all guard exits, back to back (see `ExitInfo::Guard`).
    virtuals: Vec<VirtualLayout>,
    /// The fields of all virtual objects, back to back (see `VirtualLayout::fields`).
    virtual_fields: Vec<FieldWrite>,
    /// The writes of all guard exits, back to back (see `ExitInfo::Guard::writes`).
    writes: Vec<ExitWrite>,
    /// The kinds of each exit's values.
    kinds: ExitKinds,
    /// The stubs of guard and invalid-operation exits, in the order they are placed.
    stubs: Vec<Stub>,
    /// The exit-buffer sources of all stubs, back to back (see [`Stub::words`]): registers
    /// only (constants and spilled values are read from the exit's description and the
    /// frame).
    stub_words: Vec<Reg>,
    /// The jumps to stubs: the code offset of each jump's 32-bit displacement and the stub
    /// it goes to.
    stub_jumps: Vec<(u32, u32)>,
    /// The invalid-operation exit of the op being compiled, if one was made (all invalid
    /// exits of one op share a stub: they report the same op): `(op, stub)`.
    invalid: Option<(usize, u32)>,
    /// Exit-buffer words that a stub recomputes after copying: `(stub index, word index,
    /// inverse op, other operand)`, in stub order (see [`Undo`]).
    undos: Vec<(u32, u32, Opcode, Opnd)>,
    /// The exit code of this trace's first exit (a bridge's exits follow those of the
    /// traces compiled before it in its tree).
    pub(super) code_base: u32,
    /// The address of the trace's guard failure counters (one 64-bit word per guard, by
    /// the guard's index in the trace's guard table).
    pub(super) counters: u64,
    /// The patch points of the guard stubs, by guard index, once placed.
    pub(super) tails: Vec<GuardTail>,
    /// The exit words of all guards, back to back (see [`GuardTail::words`]).
    pub(super) word_facts: Vec<WordFact>,
    /// The jumps to guard stubs a bridge may take over, back to back (see
    /// [`GuardTail::jumps`]).
    pub(super) guard_jumps: Vec<u32>,
}

impl Exits {
    /// Empty: the buffers cleared, their capacity kept.
    pub(super) fn reset(&mut self) {
        self.infos.clear();
        self.slots.clear();
        self.virtuals.clear();
        self.virtual_fields.clear();
        self.writes.clear();
        self.kinds.clear();
        self.stubs.clear();
        self.stub_words.clear();
        self.stub_jumps.clear();
        self.invalid = None;
        self.undos.clear();
        self.code_base = 0;
        self.counters = 0;
        self.tails.clear();
        self.word_facts.clear();
        self.guard_jumps.clear();
    }

    /// The exit descriptions, fail-argument slots, virtual objects and their fields, for
    /// the compiled trace (copied out at their exact sizes; the buffers stay for the next
    /// trace).
    pub(super) fn output(&self) -> ExitTables {
        ExitTables {
            exits: self.infos.clone(),
            slots: self.slots.clone(),
            virtuals: self.virtuals.clone(),
            virtual_fields: self.virtual_fields.clone(),
            writes: self.writes.clone(),
            kinds: self.kinds.clone(),
        }
    }

    /// The number of stubs so far (the index the next one gets).
    pub(super) fn num_stubs(&self) -> u32 {
        self.stubs.len() as u32
    }

    /// A new exit code for `info`, whose values have the kinds pushed since the last exit
    /// (`ExitKinds::push_kind`).
    fn push_exit(&mut self, info: ExitInfo) -> u32 {
        self.kinds.end_exit();
        self.infos.push(info);
        self.infos.len() as u32 - 1
    }

    /// The stub of an exit that reports an invalid operation at op `pos` (one per op).
    #[inline]
    pub(super) fn invalid_exit(&mut self, pos: usize) -> u32 {
        if let Some((at, stub)) = self.invalid {
            if at == pos {
                return stub;
            }
        }
        let stub = self.stubs.len() as u32;
        let code = self.push_exit(ExitInfo::Invalid { op: OpRef::new(pos) });
        self.stubs.push(Stub {
            at: 0,
            code,
            words: (0, 0),
            counter: u32::MAX,
        });
        self.invalid = Some((pos, stub));
        stub
    }

    /// `jcc rel32` to stub `s`, hand-encoded; the displacement is filled in when the stubs
    /// are placed.
    #[inline]
    pub(super) fn jcc_stub(&mut self, em: &mut Emitter, c: Cond, s: u32) {
        let at = em.jcc_rel32_to_patch(c);
        self.stub_jumps.push((at, s));
    }

    /// `jmp rel32` to stub `s`, fixed up as [`Exits::jcc_stub`].
    pub(super) fn jmp_stub(&mut self, em: &mut Emitter, s: u32) {
        let at = em.jmp_rel32_to_patch();
        self.stub_jumps.push((at, s));
    }

    /// Emit every stub (at the current code offset, after the epilogue at `epilogue`): a
    /// guard's stub stores and recomputes its overwritten operands (see [`Undo`]), then
    /// (from its patch point, [`GuardTail::tail`]) counts the failure, copies its other
    /// register words into the exit buffer and returns its exit code through the epilogue;
    /// an invalid-operation stub does the same without counter and patch point.
    pub(super) fn place_stubs(&mut self, em: &mut Emitter, frame: FrameLayout, epilogue: usize) -> R<()> {
        let mut undo_next = 0usize;
        for (stub_index, stub) in self.stubs.iter_mut().enumerate() {
            stub.at = em.asm.offset().0 as u32;
            // Operands overwritten in place: stored, then recomputed from the result.
            let undo_from = undo_next;
            while let Some(&(k, w, inverse, y)) = self.undos.get(undo_next) {
                if k as usize != stub_index {
                    break;
                }
                em.store(
                    frame.exit_disp(w as usize),
                    self.stub_words[(stub.words.0 + w) as usize],
                );
                em.undo_word(frame.exit_disp(w as usize), inverse, y);
                undo_next += 1;
            }
            let undone = &self.undos[undo_from..undo_next];
            let patch = em.asm.offset().0;
            if stub.counter != u32::MAX {
                // `mov r11, imm64` (49 BB imm64); `inc qword [r11]` (49 FF 03): one store.
                let counter = self.counters + 8 * u64::from(stub.counter);
                em.asm.put(0xbb49 | u128::from(counter) << 16 | 0x03_ff49 << 80, 13);
            }
            for w in stub.words.0..stub.words.1 {
                let k = w - stub.words.0;
                if !undone.iter().any(|u| u.1 == k) {
                    em.store(frame.exit_disp(k as usize), self.stub_words[w as usize]);
                }
            }
            // `mov eax, imm32` (B8 imm32), then `jmp rel32` (E9 rel32) back to the epilogue,
            // whose offset is known: one store.
            let code = self.code_base + stub.code;
            let rel = rel32(em.asm.offset().0 + 10, epilogue)?;
            em.asm.put(
                0xb8 | u128::from(code) << 8 | 0xe9 << 40 | u128::from(rel as u32) << 48,
                10,
            );
            if stub.counter != u32::MAX {
                let len = em.asm.offset().0 - patch;
                if len < PATCH_LEN {
                    em.asm.put(0xcccc_cccc_cccc_cccc_cccc_cccc_cccc, PATCH_LEN - len);
                }
                let site = &mut self.tails[stub.counter as usize];
                site.exit = self.code_base + stub.code;
                site.tail = patch as u32;
            }
        }
        Ok(())
    }

    /// Fill in the displacements of the jumps to stubs in the finished `code`, and list,
    /// per guard, the jumps a bridge may take over ([`GuardTail::jumps`]).
    pub(super) fn patch_stub_jumps(&mut self, code: &mut [u8]) -> R<()> {
        let mut taken = Vec::new();
        for &(at, stub) in &self.stub_jumps {
            let s = &self.stubs[stub as usize];
            let rel = rel32(at as usize + 4, s.at as usize)?;
            code[at as usize..at as usize + 4].copy_from_slice(&rel.to_le_bytes());
            if s.counter != u32::MAX && self.tails[s.counter as usize].tail == s.at {
                taken.push((s.counter, at));
            }
        }
        taken.sort_unstable();
        for group in taken.chunk_by(|a, b| a.0 == b.0) {
            let from = self.guard_jumps.len() as u32;
            self.guard_jumps.extend(group.iter().map(|j| j.1));
            self.tails[group[0].0 as usize].jumps = (from, self.guard_jumps.len() as u32);
        }
        Ok(())
    }
}

impl Emitter {
    /// `[rbp + d] = [rbp + d] inverse y` in an exit stub (see [`Undo`]).
    fn undo_word(&mut self, d: i32, inverse: Opcode, y: Opnd) {
        let y = match y {
            Opnd::Mem(m) => {
                self.load_frame(R11, m);
                Opnd::Reg(R11)
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
}

impl Gen<'_> {
    /// The stub of an exit that reports an invalid operation at the current op.
    #[inline]
    pub(super) fn invalid_exit(&mut self) -> u32 {
        self.r.exits.invalid_exit(self.pos)
    }

    /// `jcc rel32` to stub `s`.
    #[inline]
    pub(super) fn jcc_stub(&mut self, c: Cond, s: u32) {
        self.r.exits.jcc_stub(&mut self.em, c, s);
    }

    /// `jmp rel32` to stub `s`.
    pub(super) fn jmp_stub(&mut self, s: u32) {
        self.r.exits.jmp_stub(&mut self.em, s);
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
        let mut words = std::mem::take(&mut self.r.exits.stub_words);
        let first = words.len();
        let stub_index = self.r.exits.stubs.len() as u32;
        let mut undos = std::mem::take(&mut self.r.exits.undos);
        // An exit word's slot, and where a bridge finds it (`WordFact::at`).
        let mut slot_of = |fa: &FailArg, words: &mut Vec<Reg>, me: &Self| -> R<(ExitSlot, Loc)> {
            Ok(match *fa {
                FailArg::Value(v) => {
                    match undo {
                        Some(u) if v.as_op().is_some_and(|o| o.index() == u.val) => {
                            // The register holds the op's result; the stub recomputes `v`.
                            me.em.record_use(u.reg.loc(), u.at, me.pos);
                            if let Opnd::Reg(r) = u.y {
                                me.em.expect(r.loc(), me.val(u.y_val), me.pos);
                            }
                            undos.push((stub_index, (words.len() - first) as u32, u.inverse, u.y));
                            words.push(u.reg);
                        }
                        _ => return me.exit_slot(v, words, first),
                    }
                    let word = me.frame.exit_word(words.len() - 1 - first);
                    (ExitSlot::Frame(word as u32), Loc::Mem(8 * word as i32))
                }
                FailArg::Virtual(k) => (ExitSlot::Virtual(k), Loc::Imm(0)),
                FailArg::Hole => (ExitSlot::Hole, Loc::Imm(0)),
            })
        };
        let fact = |v: Value, at: Loc, me: &Self| WordFact {
            kind: kind_of(t, v),
            nonnull: me.known_nonnull(v),
            at,
        };
        // One pass over the resume data: each entry's slot, the exit's value kinds, and the
        // exit words (the values, in `GuardData::for_each_value`'s order) for bridges.
        let mut slots = std::mem::take(&mut self.r.exits.slots);
        let mut facts = std::mem::take(&mut self.r.exits.word_facts);
        let facts_from = facts.len() as u32;
        let fail_start = slots.len() as u32;
        for fa in &gd.fail_args {
            let (slot, kind) = match *fa {
                FailArg::Value(v) => {
                    // Most fail arguments are plain values with nothing to undo: straight to
                    // their slot.
                    let (slot, at) = match undo {
                        None => self.exit_slot(v, &mut words, first)?,
                        Some(_) => slot_of(fa, &mut words, self)?,
                    };
                    let f = fact(v, at, self);
                    facts.push(f);
                    (slot, f.kind)
                }
                FailArg::Virtual(k) => (ExitSlot::Virtual(k), Kind::Ref),
                FailArg::Hole => (ExitSlot::Hole, Kind::Void),
            };
            slots.push(slot);
            self.r.exits.kinds.push_kind(kind);
        }
        let fail = (fail_start, slots.len() as u32);
        self.r.exits.slots = slots;
        let virtuals_start = self.r.exits.virtuals.len() as u32;
        if !gd.virtuals.is_empty() {
            let mut virtuals = std::mem::take(&mut self.r.exits.virtuals);
            let mut fields = std::mem::take(&mut self.r.exits.virtual_fields);
            for vo in &gd.virtuals {
                let init = virtual_init(t, vo)?;
                let fields_start = fields.len() as u32;
                for (place, fa) in &vo.fields {
                    let (offset, size) = virtual_field_place(t, *place, &init)?;
                    let (slot, at) = slot_of(fa, &mut words, self)?;
                    if let FailArg::Value(v) = *fa {
                        facts.push(fact(v, at, self));
                    }
                    fields.push((offset, size, slot));
                }
                virtuals.push(VirtualLayout {
                    init,
                    fields: (fields_start, fields.len() as u32),
                });
            }
            self.r.exits.virtuals = virtuals;
            self.r.exits.virtual_fields = fields;
        }
        let virtuals = (virtuals_start, self.r.exits.virtuals.len() as u32);
        let writes_start = self.r.exits.writes.len() as u32;
        for w in &gd.writes {
            let (obj, at) = slot_of(&FailArg::Value(w.obj), &mut words, self)?;
            facts.push(fact(w.obj, at, self));
            let (offset, size) = match (t.descr(w.descr), w.index) {
                (Descr::Field(f), None) => (f.offset as u64, f.size),
                (Descr::Array(a), Some(i)) => (
                    (a.base_offset as u64).wrapping_add(u64::from(i).wrapping_mul(a.item_size as u64)),
                    a.item_size,
                ),
                _ => return Err(bad("an exit's write without a field or array descriptor")),
            };
            let (value, at) = slot_of(&w.value, &mut words, self)?;
            if let FailArg::Value(v) = w.value {
                facts.push(fact(v, at, self));
            }
            self.r.exits.writes.push(ExitWrite {
                obj,
                offset,
                size,
                value,
            });
        }
        let writes = (writes_start, self.r.exits.writes.len() as u32);
        self.r.exits.undos = undos;
        self.r.exits.tails[g.index()].words = (facts_from, facts.len() as u32);
        self.r.exits.word_facts = facts;
        let info = ExitInfo::Guard {
            guard: gd.id,
            resume_key: gd.resume_key,
            fail,
            virtuals,
            writes,
            op: OpRef::new(self.pos),
        };
        let code = self.r.exits.push_exit(info);
        self.r.exits.stubs.push(Stub {
            at: 0,
            code,
            words: (first as u32, words.len() as u32),
            counter: g.index() as u32,
        });
        self.r.exits.stub_words = words;
        self.jcc_stub(exit_if, stub_index);
        Ok(())
    }

    /// Where an exit finds value `v`: its spill slot (a spilled value stays where it is),
    /// its constant, or (held in a register) the next exit-buffer word of the stub, whose
    /// words start at `words[first]`; and where the value is at the guard.
    #[inline]
    fn exit_slot(&self, v: Value, words: &mut Vec<Reg>, first: usize) -> R<(ExitSlot, Loc)> {
        let at = self.loc(v)?;
        let slot = match at {
            Loc::Mem(d) => ExitSlot::Frame((d / 8) as u32),
            Loc::Imm(bits) => ExitSlot::Const(bits),
            Loc::Reg(r) => {
                words.push(Reg::new(r));
                ExitSlot::Frame(self.frame.exit_word(words.len() - 1 - first) as u32)
            }
        };
        Ok((slot, at))
    }

    /// Leave the trace: store `args` into the exit buffer and return the code of `info`.
    pub(super) fn leave(&mut self, args: &[Value], info: ExitInfo) -> R<()> {
        for (k, &v) in args.iter().enumerate() {
            let src = self.loc(v)?;
            self.em.mov(Loc::Mem(self.frame.exit_disp(k)), src);
        }
        for &v in args {
            self.r.exits.kinds.push_kind(kind_of(self.t, v));
        }
        let code = (self.r.exits.code_base + self.r.exits.push_exit(info)) as i32;
        let e = self.epilogue;
        dynasm!(self.em.asm ; .arch x64 ; mov eax, code ; jmp =>e);
        self.em.record(Event::End);
        Ok(())
    }
}

/// How an exit allocates virtual object `vo`.
fn virtual_init(t: &Trace, vo: &VirtualObject) -> R<VirtualInit> {
    Ok(match vo.kind {
        VirtualKind::Struct { opcode, descr } => {
            let sd = t
                .descr(descr)
                .as_size()
                .ok_or_else(|| bad("virtual struct without a size descriptor"))?;
            let class = if opcode == Opcode::NewWithVtable {
                trace_ir::abi::default_class(sd)
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
        VirtualKind::Str { opcode, len } => VirtualInit::Array {
            layout: ArrayLayout::of_string(opcode == Opcode::Newunicode),
            len: len as u64,
        },
    })
}

/// The offset and size of a field (or array item) of a virtual object allocated as `init`.
fn virtual_field_place(t: &Trace, place: VirtualField, init: &VirtualInit) -> R<(u64, u8)> {
    Ok(match (place, init) {
        (VirtualField::Field(d), _) => {
            let f = t
                .descr(d)
                .as_field()
                .ok_or_else(|| bad("virtual field without a field descriptor"))?;
            (f.offset as u64, f.size)
        }
        (VirtualField::Item(i), VirtualInit::Array { layout, len }) => {
            if u64::from(i) >= *len {
                return Err(bad("an item of a virtual array or string past its length"));
            }
            (layout.base_offset + i as u64 * layout.item_size, layout.item_size as u8)
        }
        (VirtualField::Item(_), _) => return Err(bad("array item of a virtual struct")),
    })
}
