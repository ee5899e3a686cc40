//! The code buffer `dynasm!` assembles into: dynasmrt's `VecAssembler` (bytes, dynamic
//! labels, relocations resolved at the end) plus [`CodeBuf::put`], which appends a whole
//! hand-encoded instruction with one store.
//!
//! Why not `VecAssembler` itself: it only appends a byte (`push`) or a slice (`extend`), and
//! a hand-encoded instruction's length is known at run time only, so `extend` became a
//! `memcpy` call per instruction (2.4% of compile time for the frame moves alone). Here the
//! code generator's most frequent instructions are encoded into a 16-byte word and appended
//! with one store.

use dynasmrt::components::{LabelRegistry, PatchLoc, RelocRegistry};
use dynasmrt::x64::X64Relocation;
use dynasmrt::{AssemblyOffset, DynamicLabel, DynasmApi, DynasmError, DynasmLabelApi, LabelKind, TargetKind};

/// Bytes of spare capacity [`CodeBuf::put`] needs (it stores a whole 16-byte word).
const PUT_WIDTH: usize = 16;

/// An x86-64 code buffer with dynamic labels (the only labels the code generator uses).
pub(crate) struct CodeBuf {
    ops: Vec<u8>,
    labels: LabelRegistry,
    relocs: RelocRegistry<X64Relocation>,
    error: Option<DynasmError>,
}

impl Default for CodeBuf {
    fn default() -> CodeBuf {
        CodeBuf::with_capacity(0, 0, 0)
    }
}

impl CodeBuf {
    /// An empty buffer with room for `bytes` of code, `labels` dynamic labels and `refs`
    /// references to them.
    pub(crate) fn with_capacity(bytes: usize, labels: usize, refs: usize) -> CodeBuf {
        CodeBuf {
            ops: Vec::with_capacity(bytes),
            labels: LabelRegistry::with_capacity(0, 0, labels),
            relocs: RelocRegistry::with_capacity(0, refs),
            error: None,
        }
    }

    /// Empty, for another trace: the code goes into `ops` (cleared, with room for `bytes`);
    /// the label tables keep their capacity.
    pub(crate) fn reset(&mut self, mut ops: Vec<u8>, bytes: usize) {
        ops.clear();
        ops.reserve(bytes);
        self.ops = ops;
        self.labels.clear();
        // Resolved references were drained by `take_code`; an abandoned compilation may
        // have left some.
        self.relocs.take_dynamics().for_each(drop);
        self.relocs.take_statics().for_each(drop);
        self.error = None;
    }

    /// A new dynamic label.
    pub(crate) fn new_dynamic_label(&mut self) -> DynamicLabel {
        self.labels.new_dynamic_label()
    }

    /// Append the first `len` (at most 16) bytes of `insn` (little-endian: byte 0 first).
    #[inline(always)]
    pub(crate) fn put(&mut self, insn: u128, len: usize) {
        debug_assert!(len <= PUT_WIDTH);
        if self.ops.capacity() - self.ops.len() < PUT_WIDTH {
            self.ops.reserve(PUT_WIDTH);
        }
        let at = self.ops.len();
        // SAFETY: at least `PUT_WIDTH` bytes of capacity follow `at` (reserved above), so
        // the unaligned 16-byte store stays inside the allocation; the length grows by
        // `len <= PUT_WIDTH`, covering only bytes just written.
        unsafe {
            self.ops
                .as_mut_ptr()
                .add(at)
                .cast::<u128>()
                .write_unaligned(insn.to_le());
            self.ops.set_len(at + len);
        }
    }

    /// The bytes so far, leaving the buffer empty (labels and their references are kept:
    /// for the tests that compare encodings of instructions without labels).
    #[cfg(all(test, feature = "disasm"))]
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.ops)
    }

    /// The code, with every label reference resolved.
    #[cfg(test)]
    pub(crate) fn finalize(mut self) -> Result<Vec<u8>, DynasmError> {
        self.take_code()
    }

    /// The code, with every label reference resolved, taken out of the buffer (whose label
    /// tables stay for [`CodeBuf::reset`]).
    pub(crate) fn take_code(&mut self) -> Result<Vec<u8>, DynasmError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.relocs.take_statics().next().is_some() {
            return Err(DynasmError::UnknownLabel(LabelKind::Local("static label")));
        }
        for (loc, id) in self.relocs.take_dynamics() {
            let target = self.labels.resolve_dynamic(id)?;
            let buf = &mut self.ops[loc.range(0)];
            if loc.patch(buf, 0, target.0).is_err() {
                return Err(DynasmError::ImpossibleRelocation(TargetKind::Dynamic(id)));
            }
        }
        Ok(std::mem::take(&mut self.ops))
    }
}

impl CodeBuf {
    /// A static label or a relocation other than to a dynamic label: reported by
    /// [`CodeBuf::finalize`] (the code generator uses dynamic labels only).
    fn unsupported(&mut self) {
        self.error = Some(DynasmError::UnknownLabel(LabelKind::Local(
            "only dynamic labels are supported",
        )));
    }
}

impl Extend<u8> for CodeBuf {
    fn extend<T: IntoIterator<Item = u8>>(&mut self, iter: T) {
        self.ops.extend(iter)
    }
}

impl<'a> Extend<&'a u8> for CodeBuf {
    fn extend<T: IntoIterator<Item = &'a u8>>(&mut self, iter: T) {
        self.ops.extend(iter)
    }
}

impl DynasmApi for CodeBuf {
    #[inline]
    fn offset(&self) -> AssemblyOffset {
        AssemblyOffset(self.ops.len())
    }
    #[inline]
    fn push(&mut self, byte: u8) {
        self.ops.push(byte);
    }
    fn align(&mut self, alignment: usize, with: u8) {
        while !self.ops.len().is_multiple_of(alignment) {
            self.ops.push(with);
        }
    }
}

impl DynasmLabelApi for CodeBuf {
    type Relocation = X64Relocation;

    fn local_label(&mut self, _name: &'static str) {
        self.unsupported();
    }
    fn global_label(&mut self, _name: &'static str) {
        self.unsupported();
    }
    fn dynamic_label(&mut self, id: DynamicLabel) {
        let offset = self.offset();
        if let Err(e) = self.labels.define_dynamic(id, offset) {
            self.error = Some(e)
        }
    }
    fn forward_relocation(&mut self, _: &'static str, _: isize, _: u8, _: u8, _: X64Relocation) {
        self.unsupported();
    }
    fn backward_relocation(&mut self, _: &'static str, _: isize, _: u8, _: u8, _: X64Relocation) {
        self.unsupported();
    }
    fn global_relocation(&mut self, _: &'static str, _: isize, _: u8, _: u8, _: X64Relocation) {
        self.unsupported();
    }
    fn dynamic_relocation(
        &mut self,
        id: DynamicLabel,
        target_offset: isize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        let location = self.offset();
        self.relocs.add_dynamic(
            id,
            PatchLoc::new(location, target_offset, field_offset, ref_offset, kind),
        );
    }
    fn value_relocation(&mut self, _: usize, _: u8, _: u8, _: X64Relocation) {
        self.unsupported();
    }
}
