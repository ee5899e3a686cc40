//! Random heap ops: fields, array items, allocations, and views of one object through
//! several descriptors.

use super::*;

impl<'c> Gen<'c> {
    pub(super) fn heap_op(&mut self) -> bool {
        use Opcode::*;
        let d = &self.d;
        let (f_int, f_int4, f_u1, f_ref, f_float, f_imm) = (d.f_int, d.f_int4, d.f_u1, d.f_ref, d.f_float, d.f_imm);
        let (a_int, a_ref, a_u1) = (d.a_int, d.a_ref, d.a_u1);
        let (size_plain, size_vt, size_vt2) = (d.size_plain, d.size_vt, d.size_vt2);
        match self.rng.below(9) {
            0 => {
                let (opc, sd) =
                    *self
                        .rng
                        .pick(&[(New, size_plain), (NewWithVtable, size_vt), (NewWithVtable, size_vt2)]);
                let Some(p) = self.op(opc, &[], Some(sd)) else {
                    return false;
                };
                if opc == NewWithVtable && self.rng.chance(1, 2) {
                    let x = self.int_arg();
                    self.op(SetfieldGc, &[p, x], Some(f_imm));
                }
                true
            }
            1 => {
                let opc = *self.rng.pick(&[NewArray, NewArrayClear]);
                let ad = *self.rng.pick(&[a_int, a_ref, a_u1]);
                let len = *self.rng.pick(&[1i64, 2, 4, 8]);
                let n = self.konst(Const::Int(len));
                self.op(opc, &[n], Some(ad)).is_some()
            }
            2 | 3 => {
                let Some(p) = self.struct_ref() else { return false };
                let fd = *self.rng.pick(&[f_int, f_int4, f_u1, f_ref, f_float]);
                let v = match self.t.descr(fd).as_field().map(|f| f.kind) {
                    Some(Kind::Ref) => self.ref_arg(),
                    Some(Kind::Float) => self.float_arg(),
                    _ => self.int_arg(),
                };
                self.op(SetfieldGc, &[p, v], Some(fd)).is_some()
            }
            4 | 5 => {
                let Some(p) = self.struct_ref() else { return false };
                let fd = *self.rng.pick(&[f_int, f_int4, f_u1, f_ref, f_float, f_imm]);
                let opc = match self.t.descr(fd).as_field().map(|f| f.kind) {
                    Some(Kind::Ref) => GetfieldGcR,
                    Some(Kind::Float) => GetfieldGcF,
                    _ => GetfieldGcI,
                };
                self.op(opc, &[p], Some(fd)).is_some()
            }
            6 => {
                let Some((a, len, ad)) = self.array_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let v = match self.t.descr(ad).as_array().map(|x| x.kind) {
                    Some(Kind::Ref) => self.ref_arg(),
                    _ => self.int_arg(),
                };
                self.op(SetarrayitemGc, &[a, i, v], Some(ad)).is_some()
            }
            7 => {
                let Some((a, len, ad)) = self.array_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let opc = match self.t.descr(ad).as_array().map(|x| x.kind) {
                    Some(Kind::Ref) => GetarrayitemGcR,
                    _ => GetarrayitemGcI,
                };
                self.op(opc, &[a, i], Some(ad)).is_some()
            }
            _ => {
                let Some((a, _, ad)) = self.array_ref() else {
                    return false;
                };
                self.op(ArraylenGc, &[a], Some(ad)).is_some()
            }
        }
    }

    /// An access through a view (see [`RandomConfig::views`]): a field view of a struct, or
    /// an item of an allocated array read or written through another array descriptor.
    pub(super) fn view_op(&mut self) -> bool {
        use Opcode::*;
        let d = &self.d;
        let fields = [d.v_a4, d.v_b1, d.v_fi, d.v_af, d.v_k];
        let arrays = [d.v_s1, d.v_u2, d.v_u8, d.v_f8, d.a_int, d.a_u1];
        let a_ref = d.a_ref;
        let write = self.rng.chance(1, 2);
        if self.rng.chance(1, 2) {
            let Some(p) = self.struct_ref() else { return false };
            let fd = *self.rng.pick(&fields);
            let kind = self.t.descr(fd).value_kind().unwrap_or(Kind::Int);
            return if write {
                let v = if kind == Kind::Float {
                    self.float_arg()
                } else {
                    self.int_arg()
                };
                self.op(SetfieldGc, &[p, v], Some(fd)).is_some()
            } else {
                let opc = if kind == Kind::Float { GetfieldGcF } else { GetfieldGcI };
                self.op(opc, &[p], Some(fd)).is_some()
            };
        }
        let Some((a, len, alloc)) = self.array_ref() else {
            return false;
        };
        // the bytes of a reference are an address (and an integer written over one would be
        // dereferenced by native code)
        if alloc == a_ref {
            return false;
        }
        let ad = *self.rng.pick(&arrays);
        let (Some(alloc_d), Some(view)) = (self.t.descr(alloc).as_array(), self.t.descr(ad).as_array()) else {
            return false;
        };
        // within the allocation's bytes, and below its length (native code checks the index
        // against the length word)
        let items = (len * alloc_d.item_size as u64 / view.item_size as u64).min(len);
        let kind = view.kind;
        let Some(i) = self.index_for(items) else { return false };
        if write {
            let v = if kind == Kind::Float {
                self.float_arg()
            } else {
                self.int_arg()
            };
            self.op(SetarrayitemGc, &[a, i, v], Some(ad)).is_some()
        } else {
            let opc = if kind == Kind::Float {
                GetarrayitemGcF
            } else {
                GetarrayitemGcI
            };
            self.op(opc, &[a, i], Some(ad)).is_some()
        }
    }

    /// A virtual reference: `virtual_ref` of an object (an allocated one when there is, as
    /// a frame), stored half of the time into a reference field of a struct (an interpreter
    /// linking its frames); or `virtual_ref_finish` of a reference made so, with null or an
    /// object.
    pub(super) fn frame_op(&mut self) -> bool {
        use Opcode::*;
        let made = |g: &Self, l: &Live| {
            l.v.as_op()
                .is_some_and(|o| g.t.ops[o.index()].opcode == VirtualRef && g.ex(l.v).bits() != 0)
        };
        if self.rng.chance(1, 2) {
            let Some(r) = self.pick_live(Kind::Ref, made) else {
                return false;
            };
            let p = if self.rng.chance(3, 4) {
                self.konst(Const::Ref(0))
            } else {
                self.ref_arg()
            };
            return self.op(VirtualRefFinish, &[r, p], None).is_some();
        }
        let p = self.ref_arg();
        let k = self.rng.below(4) as i64;
        let k = self.konst(Const::Int(k));
        let Some(r) = self.op(VirtualRef, &[p, k], None) else {
            return false;
        };
        if self.rng.chance(1, 2) {
            if let Some(q) = self.struct_ref() {
                let f_ref = self.d.f_ref;
                self.op(SetfieldGc, &[q, r], Some(f_ref));
            }
        }
        true
    }

    /// A `gc_load*` or `gc_store*` at the offset and width of one of the generator's mutable
    /// fields (so it meets the fields' own accesses byte for byte), plain or indexed, a
    /// narrow integer load sign- or zero-extended.
    pub(super) fn gc_op(&mut self) -> bool {
        use Opcode::*;
        let Some(p) = self.struct_ref() else { return false };
        let (offset, width, kind) = *self.rng.pick(&[
            (8i64, 8i64, Kind::Int),
            (16, 4, Kind::Int),
            (20, 1, Kind::Int),
            (24, 8, Kind::Ref),
            (32, 8, Kind::Float),
        ]);
        let size = if kind == Kind::Int && self.rng.chance(1, 2) {
            -width
        } else {
            width
        };
        let size = self.konst(Const::Int(size));
        let indexed = self.rng.chance(1, 2);
        // indexed: item `offset / 4` of 4 bytes from 0, or item 1 of 8 bytes from `offset - 8`
        let (index, scale, base) = if self.rng.chance(1, 2) {
            (offset / 4, 4, 0)
        } else {
            (1, 8, offset - 8)
        };
        let [index, scale, base] = [index, scale, base].map(|k| self.konst(Const::Int(k)));
        let offset = self.konst(Const::Int(offset));
        if self.rng.chance(1, 2) {
            let v = match kind {
                Kind::Ref => self.ref_arg(),
                Kind::Float => self.float_arg(),
                _ => self.int_arg(),
            };
            if indexed {
                self.op(GcStoreIndexed, &[p, index, v, scale, base, size], None)
                    .is_some()
            } else {
                self.op(GcStore, &[p, offset, v, size], None).is_some()
            }
        } else {
            let opc = match (kind, indexed) {
                (Kind::Ref, false) => GcLoadR,
                (Kind::Float, false) => GcLoadF,
                (_, false) => GcLoadI,
                (Kind::Ref, true) => GcLoadIndexedR,
                (Kind::Float, true) => GcLoadIndexedF,
                (_, true) => GcLoadIndexedI,
            };
            if indexed {
                self.op(opc, &[p, index, scale, base, size], None).is_some()
            } else {
                self.op(opc, &[p, offset, size], None).is_some()
            }
        }
    }
}
