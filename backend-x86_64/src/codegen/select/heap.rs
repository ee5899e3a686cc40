//! Instruction selection of heap accesses: fields, arrays, interior fields, raw memory,
//! with their null and bounds checks (and what is known about them).

use crate::checker::Val;
use crate::codegen::emit::{fits_i32, Cond, Opnd};
use crate::codegen::frame::TEMP_DISP;
use crate::codegen::regs::{Reg, RegSet, R11};
use crate::codegen::{bad, Gen, R};
use dynasmrt::{dynasm, DynasmApi};
use trace_ir::descr::{DEFAULT_ARRAY_BASE, DEFAULT_ARRAY_LEN};
use trace_ir::{FieldDescr, Kind, Op, Opcode, Value, ValueData};

/// What is known about memory at the current op: which values are non-null, which array
/// accesses are in bounds. The buffers are reused from trace to trace
/// ([`HeapFacts::reset`]).
#[derive(Default)]
pub(in crate::codegen) struct HeapFacts {
    /// Per op, as a bit set: its value is known to be non-null (it passed a null check or
    /// `guard_nonnull*`, or is a label parameter that always equals such a value), so heap
    /// accesses through it need no null check of their own.
    nonnull: Vec<u64>,
    /// Known in-bounds accesses since memory last changed: `(array, index, length offset)`
    /// with `index <u [array + length offset]` checked (by a bounds check or a passed guard
    /// on `uint_lt(index, arraylen_gc(array))`). Forgotten at every op that may write memory
    /// or call, and at labels.
    in_bounds: Vec<(Val, Val, i64)>,
    /// The `arraylen_gc` ops read since memory last changed.
    lens: Vec<usize>,
}

impl HeapFacts {
    /// Nothing known, for a trace of `n` ops.
    pub(in crate::codegen) fn reset(&mut self, n: usize) {
        self.nonnull.clear();
        self.nonnull.resize(n.div_ceil(64), 0);
        self.forget_memory();
    }

    /// Memory may have changed: forget the bounds checks and the length reads.
    pub(in crate::codegen) fn forget_memory(&mut self) {
        self.in_bounds.clear();
        self.lens.clear();
    }

    /// The `arraylen_gc` at `at` read a length.
    pub(super) fn note_len(&mut self, at: usize) {
        self.lens.push(at);
    }

    /// `v` is known to be non-null from now on.
    pub(in crate::codegen) fn make_nonnull(&mut self, v: Value) {
        if let Some(o) = v.as_op() {
            self.nonnull[o.index() / 64] |= 1 << (o.index() % 64);
        }
    }

    /// Whether op `o`'s value is known to be non-null.
    fn known_nonnull_op(&self, o: usize) -> bool {
        self.nonnull[o / 64] & (1 << (o % 64)) != 0
    }

    /// Whether `fact` (`(array, index, length offset)`) is known.
    fn knows(&self, fact: &(Val, Val, i64)) -> bool {
        self.in_bounds.contains(fact)
    }

    /// Remember `fact` (at most 16 facts are kept).
    fn learn(&mut self, fact: (Val, Val, i64)) {
        if self.in_bounds.len() < 16 && !self.in_bounds.contains(&fact) {
            self.in_bounds.push(fact);
        }
    }
}

impl<'t> Gen<'t> {
    /// `getfield_*`.
    pub(super) fn getfield(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let f = self.field(op)?;
        let base = self.load(a(0))?;
        self.null_check(a(0), base);
        let d = self.alloc_reg(opc.result_kind(), RegSet::EMPTY)?;
        let (base, disp) = self.mem_operand(base, f.offset);
        self.em.load_mem(d, base, disp, f.size, f.signed);
        self.def(d);
        Ok(())
    }

    /// `setfield_*`.
    pub(super) fn setfield(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let f = self.field(op)?;
        let base = self.load(a(0))?;
        self.null_check(a(0), base);
        let v = self.load(a(1))?;
        // After loading `v` (a float constant goes through `r11`).
        let (base, disp) = self.mem_operand(base, f.offset);
        self.em.store_mem(base, disp, v, f.size);
        Ok(())
    }

    /// `arraylen_gc`.
    pub(super) fn arraylen(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let ad = self.array(op)?;
        let base = self.load(a(0))?;
        self.null_check(a(0), base);
        let d = self.alloc_reg(Kind::Int, RegSet::EMPTY)?;
        let (base, disp) = self.mem_operand(base, ad.len_offset);
        self.em.load_mem(d, base, disp, 8, true);
        self.def(d);
        Ok(())
    }

    /// `getinteriorfield_gc_*`.
    pub(super) fn getinteriorfield(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let (item, f) = self.interior(op)?;
        let (base, disp) = self.address(
            a(0),
            a(1),
            item,
            DEFAULT_ARRAY_BASE.wrapping_add(f.offset),
            Some(DEFAULT_ARRAY_LEN),
        )?;
        let d = self.alloc_reg(opc.result_kind(), RegSet::EMPTY)?;
        self.em.load_mem(d, base, disp, f.size, f.signed);
        self.def(d);
        Ok(())
    }

    /// `setinteriorfield_gc`.
    pub(super) fn setinteriorfield(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let (item, f) = self.interior(op)?;
        let v = self.load(a(2))?;
        // A raw array of structs has no header: item 0 starts at the address.
        let (base_off, len_off) = if op.opcode == Opcode::SetinteriorfieldRaw {
            (f.offset, None)
        } else {
            (DEFAULT_ARRAY_BASE.wrapping_add(f.offset), Some(DEFAULT_ARRAY_LEN))
        };
        let (base, disp) = self.address(a(0), a(1), item, base_off, len_off)?;
        self.em.store_mem(base, disp, v, f.size);
        Ok(())
    }

    /// `gc_load*`, `gc_store*` ([`trace_ir::GcAccess`]): `|size|` bytes at the object's
    /// address plus `index * scale + base`; through the runtime when the scale, base or size
    /// is not a constant, or the size not one the op can have.
    pub(super) fn gc_access(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let g = opc.gc_access().ok_or_else(|| bad("not a gc_load or gc_store"))?;
        let constant = |k: Option<usize>, default: i64| match k {
            None => Some(default),
            Some(k) => t.const_int(args[k]),
        };
        let kind = match g.value {
            Some(k) => crate::codegen::kind_of(t, args[k]),
            None => opc.result_kind(),
        };
        let (Some(scale), Some(base_off), Some(size)) =
            (constant(g.scale, 1), constant(g.base, 0), constant(Some(g.size), 0))
        else {
            return self.hook_op(at);
        };
        let width = size.unsigned_abs();
        if !matches!(width, 1 | 2 | 4 | 8) || kind != Kind::Int && width != 8 {
            return self.hook_op(at);
        }
        match g.value {
            None => {
                let (base, disp) = self.address(args[0], args[g.index], scale, base_off, None)?;
                let d = self.alloc_reg(opc.result_kind(), RegSet::EMPTY)?;
                self.em.load_mem(d, base, disp, width as u8, size < 0);
                self.def(d);
            }
            Some(k) => {
                let v = self.load(args[k])?;
                let (base, disp) = self.address(args[0], args[g.index], scale, base_off, None)?;
                self.em.store_mem(base, disp, v, width as u8);
            }
        }
        Ok(())
    }

    /// Array item and raw loads.
    pub(super) fn getarrayitem(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let ad = self.array(op)?;
        let (base, disp) = self.item_address(opc, a(0), a(1), ad)?;
        let d = self.alloc_reg(opc.result_kind(), RegSet::EMPTY)?;
        self.em.load_mem(d, base, disp, ad.item_size, ad.signed);
        self.def(d);
        Ok(())
    }

    /// Array item and raw stores.
    pub(super) fn setarrayitem(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let ad = self.array(op)?;
        let v = self.load(a(2))?;
        let (base, disp) = self.item_address(opc, a(0), a(1), ad)?;
        self.em.store_mem(base, disp, v, ad.item_size);
        Ok(())
    }

    /// The field descriptor of `op`.
    pub(super) fn field(&self, op: &Op) -> R<&'t FieldDescr> {
        let t = self.t;
        op.descr
            .and_then(|d| t.descr(d).as_field())
            .ok_or_else(|| bad("field access without a field descriptor"))
    }
    /// The item size and field of `op`'s interior field descriptor.
    pub(super) fn interior(&self, op: &Op) -> R<(i64, &'t FieldDescr)> {
        let t = self.t;
        match op.descr.map(|d| t.descr(d)) {
            Some(trace_ir::Descr::Interior(i)) => Ok((i.item_size, &i.field)),
            _ => Err(bad("interior field access without an interior descriptor")),
        }
    }
    /// The array descriptor of `op`.
    pub(super) fn array(&self, op: &Op) -> R<&'t trace_ir::ArrayDescr> {
        let t = self.t;
        op.descr
            .and_then(|d| t.descr(d).as_array())
            .ok_or_else(|| bad("array access without an array descriptor"))
    }

    /// The address of an array item (or raw `address + offset`) as base register plus
    /// displacement; a variable index is folded into `r11`.
    pub(super) fn item_address(
        &mut self,
        opc: Opcode,
        base: Value,
        index: Value,
        ad: &trace_ir::ArrayDescr,
    ) -> R<(Reg, i32)> {
        let raw_offset = matches!(opc, Opcode::RawLoadI | Opcode::RawLoadF | Opcode::RawStore);
        let raw = raw_offset
            || matches!(
                opc,
                Opcode::GetarrayitemRawI | Opcode::GetarrayitemRawF | Opcode::SetarrayitemRaw
            );
        let (scale, base_off) = match (raw_offset, raw) {
            (true, _) => (1i64, 0i64),
            (false, true) => (ad.item_size as i64, 0),
            _ => (ad.item_size as i64, ad.base_offset),
        };
        let len_off = if raw { None } else { Some(ad.len_offset) };
        self.address(base, index, scale, base_off, len_off)
    }

    /// `base + index * scale + base_off` as a base register and displacement, after a null
    /// check and (with `len_off`) a bounds check against the length word there. Address
    /// arithmetic wraps (as the interpreter's raw accesses do); a variable index or a
    /// displacement that does not fit 32 bits is folded into `r11`.
    pub(super) fn address(
        &mut self,
        base: Value,
        index: Value,
        scale: i64,
        base_off: i64,
        len_off: Option<i64>,
    ) -> R<(Reg, i32)> {
        let rb = self.load(base)?;
        self.null_check(base, rb);
        let fact = len_off.map(|l| (self.val(base), self.val(index), l));
        // A checked access needs no second check until memory changes.
        let len_off = match fact {
            Some(f) if self.r.heap.knows(&f) => None,
            Some(f) => {
                self.r.heap.learn(f);
                len_off
            }
            None => None,
        };
        if let Some(len_off) = len_off {
            self.bounds_check(rb, index, len_off)?;
        }
        if let Some(i) = self.t.const_int(index) {
            let d = i.wrapping_mul(scale).wrapping_add(base_off);
            return Ok(self.mem_operand(rb, d));
        }
        let ri = self.load(index)?;
        Ok(self.scaled_index(rb, ri, scale, base_off))
    }

    /// Exit as invalid unless `index <u [rb + len_off]` (unsigned: negative indices fail
    /// too).
    fn bounds_check(&mut self, rb: Reg, index: Value, len_off: i64) -> R<()> {
        let inv = self.invalid_exit();
        let opnd = self.opnd(index)?;
        if fits_i32(len_off) {
            let len_off = len_off as i32;
            match opnd {
                Opnd::Reg(r) => dynasm!(self.em.asm ; .arch x64 ; cmp Rq(r), QWORD [Rq(rb) + len_off]),
                Opnd::Mem(m) => {
                    dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD [rbp + m] ; cmp r11, QWORD [Rq(rb) + len_off])
                }
                Opnd::Imm(i) => dynasm!(self.em.asm ; .arch x64 ; mov r11, i ; cmp r11, QWORD [Rq(rb) + len_off]),
            }
            self.jcc_stub(Cond::Ae, inv);
            return Ok(());
        }
        // The length word into `r11` (through `[base + r11]`), then the index against it.
        self.em.mov_imm_r11(len_off as u64);
        dynasm!(self.em.asm ; .arch x64 ; mov r11, QWORD [Rq(rb) + r11]);
        let c = match opnd {
            Opnd::Reg(r) => {
                dynasm!(self.em.asm ; .arch x64 ; cmp Rq(r), r11);
                Cond::Ae
            }
            Opnd::Mem(m) => {
                dynasm!(self.em.asm ; .arch x64 ; cmp QWORD [rbp + m], r11);
                Cond::Ae
            }
            // length <= index (the immediate sign-extends like the index value).
            Opnd::Imm(i) => {
                dynasm!(self.em.asm ; .arch x64 ; cmp r11, i);
                Cond::Be
            }
        };
        self.jcc_stub(c, inv);
        Ok(())
    }

    /// `rb + ri * scale + base_off` in `r11` (with a displacement when `base_off` fits 32
    /// bits).
    fn scaled_index(&mut self, rb: Reg, ri: Reg, scale: i64, base_off: i64) -> (Reg, i32) {
        let wide = !fits_i32(base_off);
        if wide && !matches!(scale, 1 | 2 | 4 | 8) {
            // No second scratch register: the offset waits in the frame's temporary word
            // (free outside parallel moves).
            self.em.mov_imm_r11(base_off as u64);
            dynasm!(self.em.asm ; .arch x64 ; mov QWORD [rbp + TEMP_DISP], r11);
        }
        match scale {
            1 | 2 | 4 | 8 if wide => {
                // r11 = base + base_off, then the scaled index.
                self.em.mov_imm_r11(base_off as u64);
                dynasm!(self.em.asm ; .arch x64 ; add r11, Rq(rb));
                match scale {
                    1 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 1]),
                    2 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 2]),
                    4 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 4]),
                    _ => dynasm!(self.em.asm ; .arch x64 ; lea r11, [r11 + Rq(ri) * 8]),
                }
                return (R11, 0);
            }
            1 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 1]),
            2 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 2]),
            4 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 4]),
            8 => dynasm!(self.em.asm ; .arch x64 ; lea r11, [Rq(rb) + Rq(ri) * 8]),
            s if fits_i32(s) => {
                let s = s as i32;
                dynasm!(self.em.asm ; .arch x64 ; imul r11, Rq(ri), s ; add r11, Rq(rb))
            }
            s => {
                // A 64-bit item size (interior fields of huge structs): multiply in `r11`.
                self.em.mov_imm_r11(s as u64);
                dynasm!(self.em.asm ; .arch x64 ; imul r11, Rq(ri) ; add r11, Rq(rb))
            }
        }
        if wide {
            dynasm!(self.em.asm ; .arch x64 ; add r11, QWORD [rbp + TEMP_DISP]);
            return (R11, 0);
        }
        (R11, base_off as i32)
    }

    /// `[base + off]` as a base register and 32-bit displacement: `base` itself when `off`
    /// fits, else `r11 = base + off` (wrapping) with displacement 0. Emit it right before the
    /// access: nothing may use `r11` in between.
    pub(super) fn mem_operand(&mut self, base: Reg, off: i64) -> (Reg, i32) {
        if fits_i32(off) {
            return (base, off as i32);
        }
        self.em.mov_imm_r11(off as u64);
        dynasm!(self.em.asm ; .arch x64 ; add r11, Rq(base));
        (R11, 0)
    }

    /// Exit as invalid when `v` (in `r`) is null (heap accesses through null are invalid
    /// operations), unless `v` is known to be non-null.
    pub(super) fn null_check(&mut self, v: Value, r: Reg) {
        if self.known_nonnull(v) {
            return;
        }
        let inv = self.invalid_exit();
        dynasm!(self.em.asm ; .arch x64 ; test Rq(r), Rq(r));
        self.jcc_stub(Cond::E, inv);
        self.r.heap.make_nonnull(v);
    }

    /// Whether `v` is a non-zero constant or an op known to be non-null here (the trace is
    /// straight-line code: a check passed earlier holds for the rest of the trace).
    pub(in crate::codegen) fn known_nonnull(&self, v: Value) -> bool {
        match v.data() {
            ValueData::Const(c) => self.t.consts.get(c).bits() != 0,
            ValueData::Op(o) => self.r.heap.known_nonnull_op(o.index()),
        }
    }
    /// Whether an op may change memory (or call code that may): it ends what
    /// [`HeapFacts`] knows about bounds. (Bit operations without short-circuits: asked at
    /// every op, of a random op mix.)
    pub(super) fn may_write(&self, opc: Opcode) -> bool {
        use trace_ir::OpFlags;
        let f = opc.flags();
        let reads_only = f.contains(OpFlags::READS_HEAP) & !f.contains(OpFlags::WRITES_HEAP);
        let quiet = f.intersects(OpFlags::PURE | OpFlags::GUARD) | reads_only;
        !quiet | f.intersects(OpFlags::CALL | OpFlags::WRITES_HEAP | OpFlags::ALLOC) | self.hk.routes(opc)
    }

    /// After a guard on the comparison at `cmp` passed (`holds`: the comparison is true):
    /// when that says `index <u arraylen_gc(array)` with the length read since memory last
    /// changed, accesses of `array[index]` need no bounds check.
    pub(super) fn learn_in_bounds(&mut self, cmp: usize, holds: bool) {
        use Opcode::*;
        let t = self.t;
        let Some(op) = t.ops.get(cmp) else { return };
        let (index, len) = match (op.opcode, holds) {
            (UintLt, true) | (UintGe, false) => (op.args[0], op.args[1]),
            (UintGt, true) | (UintLe, false) => (op.args[1], op.args[0]),
            _ => return,
        };
        let Some(l) = len.as_op().map(|o| o.index()) else {
            return;
        };
        if !self.r.heap.lens.contains(&l) || t.ops[l].opcode != ArraylenGc {
            return;
        }
        let Some(ad) = t.ops[l].descr.and_then(|d| t.descr(d).as_array()) else {
            return;
        };
        let fact = (self.val(t.ops[l].args[0]), self.val(index), ad.len_offset);
        self.r.heap.learn(fact);
    }
}
