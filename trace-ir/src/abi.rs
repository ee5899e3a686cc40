//! What compiled code, the optimizer and the reference interpreter must agree on beyond the
//! descriptors' layout ([`crate::descr`] holds the allocation limit and the string and array
//! layout): the class `new_with_vtable` stores without an explicit vtable, the reference
//! `force_token` returns, the layout of the objects `virtual_ref` makes, the bound on string
//! copies, and the deterministic hash behind `strhash`/`unicodehash` and default classes.

use crate::descr::{Descr, FieldDescr, SizeDescr};
use crate::entity::DescrRef;
use crate::opcode::{Kind, Opcode};
use crate::trace::Trace;

/// The reference `force_token` returns.
pub const FORCE_TOKEN: u64 = 0x3000_0000_0000;

/// The object `virtual_ref(p, i)` makes, PyPy's `JitVirtualRef`: an instance of
/// [`VirtualRefLayout::size`] (class [`default_class`] of it) whose field
/// [`VirtualRefLayout::token`] holds the `force_token` of the frame that made it and whose
/// field [`VirtualRefLayout::forced`] holds null; `virtual_ref_finish(r, p)` stores `p` into
/// `forced` unless `p` is null, then null into the token. The object `p` the reference stands
/// for is not stored anywhere: it stays in the resume data of the guards after the calls that
/// could force the reference (`guard_not_forced`), so it may stay virtual while the
/// reference escapes. In this model calls never force a reference (`guard_not_forced`
/// always holds). The descriptors carry PyPy's names, so a PyPy log's explicit accesses to
/// such an object (a bridge rebuilding one) use the same ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualRefLayout {
    /// `<SizeDescr 24>`.
    pub size: SizeDescr,
    /// `<FieldP JitVirtualRef.virtual_token 8>`: the force token while the frame lives.
    pub token: FieldDescr,
    /// `<FieldP JitVirtualRef.forced 16>`: the object, once the reference was finished with one.
    pub forced: FieldDescr,
}

impl VirtualRefLayout {
    /// The layout.
    pub fn get() -> VirtualRefLayout {
        let field = |name: &str, offset| FieldDescr {
            name: name.into(),
            offset,
            size: 8,
            signed: false,
            kind: Kind::Ref,
            immutable: false,
        };
        VirtualRefLayout {
            size: SizeDescr { size: 24, vtable: None },
            token: field("JitVirtualRef.virtual_token", 8),
            forced: field("JitVirtualRef.forced", 16),
        }
    }

    /// Whether `trace` has an op that makes or finishes a virtual reference.
    pub fn used_by(trace: &Trace) -> bool {
        trace
            .ops
            .iter()
            .any(|o| matches!(o.opcode, Opcode::VirtualRef | Opcode::VirtualRefFinish))
    }

    /// The descriptors of the layout (size, token, forced) as `trace`'s table would number
    /// them with the missing ones added: those found in the table keep their numbers, the
    /// missing ones follow the table in that order and are returned as the second value (the
    /// descriptors to append to the table). `trace` is not changed.
    pub fn locate(trace: &Trace) -> ([DescrRef; 3], Vec<Descr>) {
        let l = VirtualRefLayout::get();
        let mut extra = Vec::new();
        let mut place = |d: Descr| match trace.descrs.iter().position(|x| *x == d) {
            Some(i) => DescrRef::new(i),
            None => {
                extra.push(d);
                DescrRef::new(trace.descrs.len() + extra.len() - 1)
            }
        };
        let refs = [
            place(Descr::Size(l.size)),
            place(Descr::Field(l.token)),
            place(Descr::Field(l.forced)),
        ];
        (refs, extra)
    }

    /// The descriptors of the layout in `trace`'s table (size, token, forced), if all are
    /// there.
    pub fn find_in(trace: &Trace) -> Option<[DescrRef; 3]> {
        let l = VirtualRefLayout::get();
        let find = |d: Descr| trace.descrs.iter().position(|x| *x == d).map(DescrRef::new);
        Some([
            find(Descr::Size(l.size))?,
            find(Descr::Field(l.token))?,
            find(Descr::Field(l.forced))?,
        ])
    }
}

/// Largest length `copystrcontent`/`copyunicodecontent` may copy (external strings have no
/// known length, so this bounds the work); a longer copy is an invalid operation.
pub const MAX_COPY_LEN: i64 = 1 << 20;

/// The class `new_with_vtable` stores for a size descriptor without an explicit vtable.
pub fn default_class(sd: &SizeDescr) -> u64 {
    sd.vtable
        .map(|v| v as u64)
        .unwrap_or_else(|| 0x6000_0000_0000 | (hash_words(&[0xc1a55, sd.size as u64]) & 0x0fff_ffff_fff8))
}

/// The hash `strhash`/`unicodehash` give a string of `len` characters: [`hash_words`] of
/// `[0x57a, len, chars...]`, each character zero-extended.
pub fn string_hash(len: u64, chars: impl IntoIterator<Item = u64>) -> u64 {
    let mut words = vec![0x57a, len];
    words.extend(chars);
    hash_words(&words)
}

/// The SplitMix64 finalizer: a bijective mix of 64 bits (Steele, Lea, Flood 2014).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hash a sequence of words into one (order-sensitive), deterministic across runs and
/// platforms; not for cryptography.
pub fn hash_words(words: &[u64]) -> u64 {
    let mut h: u64 = 0x6a09_e667_f3bc_c908;
    for &w in words {
        h = mix64(h ^ mix64(w.wrapping_add(0x9e37_79b9_7f4a_7c15)));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_virtual_reference_layout_is_what_pypy_logs_name() {
        let t = crate::parse_trace(
            "[p0]
            p1 = new_with_vtable(descr=<SizeDescr 24>)
            setfield_gc(p1, p0, descr=<FieldP JitVirtualRef.virtual_token 8>)
            setfield_gc(p1, ConstPtr(null), descr=<FieldP JitVirtualRef.forced 16>)
            finish(p1)",
        )
        .unwrap();
        let found = VirtualRefLayout::find_in(&t).expect("the log's descriptors are the layout's");
        assert_eq!(VirtualRefLayout::locate(&t), (found, Vec::new()), "nothing added");
        assert!(!VirtualRefLayout::used_by(&t));
    }

    #[test]
    fn missing_layout_descriptors_are_numbered_after_the_table() {
        let t = crate::parse_trace(
            "[p0]
            setfield_gc(p0, ConstPtr(null), descr=<FieldP JitVirtualRef.forced 16>)
            p1 = getfield_gc_r(p0, descr=<FieldP other 8>)
            finish(p1)",
        )
        .unwrap();
        let n = t.descrs.len();
        let l = VirtualRefLayout::get();
        let (refs, extra) = VirtualRefLayout::locate(&t);
        assert_eq!(extra, vec![Descr::Size(l.size), Descr::Field(l.token)]);
        assert_eq!(refs[0], DescrRef::new(n));
        assert_eq!(refs[1], DescrRef::new(n + 1));
        assert_eq!(t.descr(refs[2]), &Descr::Field(l.forced));
    }
}
