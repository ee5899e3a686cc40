//! Heap access: null checks, views of fields, items and characters, bounds, allocation,
//! classes, and loads and stores with the memory model's checks.

use super::*;

impl<'a> Machine<'a> {
    pub(crate) fn nonnull(&self, at: OpRef, i: usize) -> Result<u64, Stop> {
        match self.arg(at, i)?.bits() {
            0 => Err(invalid(
                at,
                format!("{} through a null pointer", self.trace.op(at).opcode),
            )),
            a => Ok(a),
        }
    }

    /// The writer identity of the op's descriptor (see [`Machine::descr_id`]).
    pub(crate) fn writer(&self, at: OpRef) -> u32 {
        self.trace.op(at).descr.map_or(u32::MAX, |d| self.descr_id(d))
    }

    /// The writer identities of a virtual reference's token and `forced` fields: the ids of
    /// the layout's descriptors when the trace's table has them (so explicit accesses
    /// through them agree), else [`heap::WRITER_VREF`].
    pub(crate) fn vref_writers(&self) -> [u32; 2] {
        match VirtualRefLayout::find_in(self.trace) {
            Some([_, token, forced]) => [self.descr_id(token), self.descr_id(forced)],
            None => heap::WRITER_VREF,
        }
    }

    /// The memory model's checks of an access to `view` of the object at `addr` by `writer`:
    /// under type-based aliasing, bytes written through another descriptor are not accessed;
    /// an allocated struct's bytes lie within its size (native code does not check either);
    /// a write never changes an instance's class word or an array's or string's length word.
    pub(crate) fn check_access(&self, at: OpRef, addr: u64, view: View, writer: u32, write: bool) -> Result<(), Stop> {
        let heap = &self.st.heap;
        if self.trace.aliasing == trace_ir::Aliasing::TypeBased {
            if let Some(other) = heap.other_writer(addr, view, writer) {
                let name = |w: u32| match w {
                    heap::WRITER_CLASS => "the class word".to_string(),
                    heap::WRITER_STRING => "a string op".to_string(),
                    w => format!("descriptor {w}"),
                };
                return Err(broken(
                    at,
                    format!(
                        "bytes {}..{} were written through {}: type-based aliasing forbids accessing them through {}",
                        view.offset,
                        view.end(),
                        name(other),
                        name(writer)
                    ),
                ));
            }
        }
        if let Some(o) = heap.objects.get(&addr) {
            let size = match o.kind {
                // (an instance holds at least its class word)
                ObjKind::Struct { size } => size.max(if o.class != 0 { 8 } else { 0 }),
                _ => i64::MAX,
            };
            if view.offset < 0 || view.end() > size {
                return Err(broken(
                    at,
                    format!(
                        "bytes {}..{} lie outside the {size} bytes the struct was allocated with",
                        view.offset,
                        view.end()
                    ),
                ));
            }
        }
        if write && heap.writes_header(addr, view) {
            return Err(broken(at, "a write to a class or length word (these never change)"));
        }
        Ok(())
    }

    /// The bytes of item `i` of the array at `addr` accessed through `ad`. For an allocated
    /// array the index is below its length (what its length word says, the check native code
    /// makes too), and the view lies within its items: when another descriptor's items are
    /// wider than the allocation's, that is a promise native code does not check. An external
    /// array's index is non-negative.
    pub(crate) fn item_view(&self, at: OpRef, addr: u64, i: i64, ad: &ArrayDescr) -> Result<View, Stop> {
        if i < 0 {
            return Err(invalid(at, format!("negative index {i}")));
        }
        let offset = (i as i128) * ad.item_size as i128 + ad.base_offset as i128;
        let Ok(offset) = i64::try_from(offset) else {
            return Err(invalid(at, format!("index {i} out of the address space")));
        };
        let view = View::new(offset, ad.item_size);
        if let Some(obj) = self.st.heap.objects.get(&addr) {
            let ObjKind::Array { len, descr } = &obj.kind else {
                return Err(invalid(at, "indexing an object that is not an array"));
            };
            if i as u64 >= *len {
                return Err(invalid(at, format!("index {i} out of bounds for length {len}")));
            }
            let start = descr.base_offset;
            let end = start + (*len as i64) * descr.item_size as i64;
            if view.offset < start || view.end() > end {
                return Err(broken(
                    at,
                    format!(
                        "item {i} of {} bytes lies outside the {len} items of {} bytes the array was allocated with",
                        ad.item_size, descr.item_size
                    ),
                ));
            }
        }
        Ok(view)
    }

    /// The bytes of field `fd` of item `i` of the array of structs at `addr` (the default
    /// array layout: items from offset 16).
    pub(crate) fn interior_view(
        &self,
        at: OpRef,
        addr: u64,
        i: i64,
        item_size: i64,
        fd: &FieldDescr,
    ) -> Result<View, Stop> {
        let i = self.index(at, addr, i)?;
        let offset = (i as i128) * item_size as i128 + DEFAULT_ARRAY_BASE as i128 + fd.offset as i128;
        i64::try_from(offset)
            .map(|o| View::new(o, fd.size))
            .map_err(|_| invalid(at, format!("index {i} out of the address space")))
    }

    /// The bytes of character `i` of the string at `addr` (`width` bytes a character).
    pub(crate) fn char_view(&self, at: OpRef, addr: u64, i: i64, width: u8) -> Result<View, Stop> {
        let i = self.index(at, addr, i)?;
        let offset = (i as i128) * width as i128 + STR_CHARS_OFFSET as i128;
        i64::try_from(offset)
            .map(|o| View::new(o, width))
            .map_err(|_| invalid(at, format!("index {i} out of the address space")))
    }

    /// The length of the array or string at `addr`, read through its length word at
    /// `len_offset` (`writer` is the reading descriptor).
    pub(crate) fn length(&mut self, at: OpRef, addr: u64, len_offset: i64, writer: u32) -> Result<i64, Stop> {
        let view = View::new(len_offset, 8);
        self.check_access(at, addr, view, writer, false)?;
        if let Some(obj) = self.st.heap.objects.get(&addr) {
            return match obj.length() {
                Some(_) => Ok(obj.read(view, Kind::Int, self.st.heap.epoch, true).bits() as i64),
                None => Err(invalid(at, "the length of an object that is not an array or string")),
            };
        }
        if self.st.heap.written(addr, view) {
            return Err(broken(at, "the length word of an array or string was written"));
        }
        Ok((self.st.heap.read(addr, view, Kind::Int, true).bits() % 64) as i64)
    }

    /// Bounds check against an allocated array or string.
    pub(crate) fn index(&self, at: OpRef, addr: u64, i: i64) -> Result<u64, Stop> {
        if let Some(obj) = self.st.heap.objects.get(&addr) {
            let Some(len) = obj.length() else {
                return Err(invalid(at, "indexing an object that is not an array or string"));
            };
            if i < 0 || i as u64 >= len {
                return Err(invalid(at, format!("index {i} out of bounds for length {len}")));
            }
        } else if i < 0 {
            return Err(invalid(at, format!("negative index {i}")));
        }
        Ok(i as u64)
    }

    /// Check an allocation of `bytes` bytes (`None`: beyond 64 bits) for `n` items.
    pub(crate) fn alloc_size(&self, at: OpRef, n: i64, bytes: Option<u64>) -> Result<u64, Stop> {
        if n < 0 {
            return Err(invalid(at, format!("negative allocation length {n}")));
        }
        match bytes {
            Some(b) if b <= MAX_ALLOC_BYTES => Ok(n as u64),
            _ => Err(invalid(
                at,
                format!("an allocation of {n} items is larger than {MAX_ALLOC_BYTES} bytes"),
            )),
        }
    }

    /// Allocate an array of `len` items laid out by `descr` (index `writer`): its length word
    /// is written at once.
    pub(crate) fn alloc_array(&mut self, len: u64, descr: ArrayDescr, writer: u32, rebuilt: bool) -> u64 {
        let len_view = View::new(descr.len_offset, 8);
        let a = self.st.heap.alloc(ObjKind::Array { len, descr }, 0, rebuilt);
        self.st.heap.write_header(a, len_view, len, writer);
        a
    }

    /// Allocate a string of `len` characters (`rebuilt`: by a guard's exit, from resume data).
    pub(crate) fn alloc_string(&mut self, len: u64, unicode: bool, rebuilt: bool) -> u64 {
        let kind = if unicode {
            ObjKind::Unicode { len }
        } else {
            ObjKind::Str { len }
        };
        let a = self.st.heap.alloc(kind, 0, rebuilt);
        self.st
            .heap
            .write_header(a, View::new(STR_LEN_OFFSET, 8), len, heap::WRITER_STRING);
        a
    }

    /// The class of the object at `addr` for a class check against `want` (deciding it for
    /// external objects under `FirstCheckDecides`).
    pub(crate) fn class_of(&mut self, addr: u64, want: u64, gc_type: bool) -> u64 {
        if let Some(obj) = self.st.heap.objects.get(&addr) {
            return obj.class;
        }
        let policy = self.cfg.class_policy;
        let ext = self.st.heap.external.entry(addr).or_default();
        let slot = if gc_type { &mut ext.gc_type } else { &mut ext.class };
        match (*slot, policy) {
            (Some(c), _) => c,
            (None, ClassPolicy::FirstCheckDecides) => {
                *slot = Some(want);
                want
            }
            (None, ClassPolicy::FromAddress) => {
                let c = 0x6000_0000_0000 | (hash_words(&[0xc1a55, addr, gc_type as u64]) & 0x0fff_ffff_fff8);
                *slot = Some(c);
                c
            }
        }
    }

    /// A load of `view` of the object at `addr` through the op's descriptor: the memory
    /// model's checks, then the read (`pure`: an immutable read), sign- or zero-extended.
    pub(crate) fn load(&mut self, at: OpRef, addr: u64, view: View, pure: bool, signed: bool) -> Result<(), Stop> {
        let kind = self.trace.op(at).opcode.result_kind();
        let v = self.load_as(at, addr, view, pure, signed, kind)?;
        self.set(at, v);
        Ok(())
    }

    /// [`Machine::load`] as a value of `kind`, returned rather than set (what a load of that
    /// kind through the op's descriptor would give).
    pub(crate) fn load_as(
        &mut self,
        at: OpRef,
        addr: u64,
        view: View,
        pure: bool,
        signed: bool,
        kind: Kind,
    ) -> Result<RtValue, Stop> {
        self.check_access(at, addr, view, self.writer(at), false)?;
        if pure && !self.st.heap.is_allocated(addr) && self.st.heap.written(addr, view) {
            return Err(broken(
                at,
                "an immutable read of bytes this trace wrote into an object it did not allocate",
            ));
        }
        if kind == Kind::Ref && self.st.heap.forges_reference(addr, view, pure) {
            return Err(broken(
                at,
                "a reference read from bytes not written as that reference (a forged address)",
            ));
        }
        if kind != Kind::Ref && self.st.heap.exposes_reference(addr, view, pure) {
            return Err(broken(
                at,
                "an integer or float read of a reference's bytes (an address)",
            ));
        }
        self.note_read(at, addr, view, pure);
        if self.st.heap.reads_initial_memory(addr, view, pure) {
            self.st.heap.initial_reads.insert((addr, view.offset, kind));
        }
        let v = self.st.heap.read(addr, view, kind, pure);
        Ok(narrow(v, view.size, signed))
    }

    /// A store of `v` (already narrowed) to `view` of the object at `addr` through the op's
    /// descriptor.
    pub(crate) fn store(&mut self, at: OpRef, addr: u64, view: View, v: RtValue, immutable: bool) -> Result<(), Stop> {
        self.store_as(at, addr, view, v, immutable, self.writer(at))
    }

    /// [`Machine::store`] through the descriptor whose id is `writer` (the op at `at` is
    /// where the write happens, for the reports).
    pub(crate) fn store_as(
        &mut self,
        at: OpRef,
        addr: u64,
        view: View,
        v: RtValue,
        immutable: bool,
        writer: u32,
    ) -> Result<(), Stop> {
        self.check_access(at, addr, view, writer, true)?;
        if immutable && !self.st.heap.is_allocated(addr) {
            return Err(broken(
                at,
                "a write to an immutable field of an object the trace did not allocate",
            ));
        }
        self.st.heap.write(addr, view, v, immutable, writer);
        Ok(())
    }

    pub(crate) fn note_read(&mut self, at: OpRef, addr: u64, view: View, immutable: bool) {
        let initial = self.st.provenance.is_some() && self.st.heap.reads_initial_memory(addr, view, immutable);
        if let Some(p) = self.st.provenance.as_mut() {
            if initial {
                p.insert(at.index(), (addr, view.offset));
            } else {
                p.remove(&at.index());
            }
        }
    }
}
