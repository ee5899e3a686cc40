//! Which heap locations may share bytes, under the trace's memory model
//! ([`trace_ir::Aliasing`], `docs/memory-model.md`): the one question the heap cache, the
//! delayed writes and redundant-write removal ask before they reorder, merge or forward an
//! access.
//!
//! A location is a struct field, an array item at a constant index, or an array item at an
//! index the pass does not know ([`Index`]). Its bytes, relative to the object's start, are
//! the field's `[offset, offset + size)`, the item's `[base + k * size, base + (k + 1) * size)`,
//! or `[base, ∞)` for an unknown item. Two accesses may touch the same bytes only when their
//! objects may be the same object (decided by the caller) and:
//! - under [`Aliasing::TypeBased`], they use the same descriptor and, for items, their indices
//!   may be equal (PyPy's rule: different descriptors never alias);
//! - under [`Aliasing::Bytes`], their byte ranges overlap, whatever their descriptors (a field
//!   and an array item of one object included).

use smallvec::SmallVec;
use trace_ir::{Aliasing, Descr, DescrRef, Trace};

/// Where in an object a location is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Index {
    /// A struct field (the descriptor is a field descriptor).
    Field,
    /// An array item at this constant index.
    Item(i64),
    /// An array item at an index the pass does not know.
    AnyItem,
}

/// A heap location: a descriptor and where it points.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    /// The field or array descriptor.
    pub descr: DescrRef,
    /// Which field or item.
    pub index: Index,
}

impl Loc {
    /// The field `descr`.
    pub fn field(descr: DescrRef) -> Loc {
        Loc {
            descr,
            index: Index::Field,
        }
    }
    /// Item `index` (`None`: unknown) of an array accessed through `descr`.
    pub fn item(descr: DescrRef, index: Option<i64>) -> Loc {
        Loc {
            descr,
            index: index.map_or(Index::AnyItem, Index::Item),
        }
    }
}

/// A descriptor's bytes: a field's offset and width, or an array's base and item width.
#[derive(Copy, Clone, Debug, Default)]
struct Bytes {
    start: i64,
    size: u8,
    array: bool,
}

/// The byte layout of a trace's descriptors and the overlaps its memory model gives; built
/// once per pass, reusing its tables.
#[derive(Clone, Debug, Default)]
pub(crate) struct Layout {
    model: Aliasing,
    bytes: Vec<Option<Bytes>>,
    /// Per descriptor: the other descriptors whose locations may share a byte with one of its
    /// own (empty under the type-based model).
    overlaps: Vec<SmallVec<[DescrRef; 2]>>,
    /// Under byte views, whether the trace reads or writes bytes at any offset (`gc_load*`,
    /// `gc_store*`): then no descriptor is alone.
    any_view: bool,
}

impl Layout {
    /// Compute the layout of `trace`'s descriptors followed by `extra` (reusing this one's
    /// tables).
    pub fn reset(&mut self, trace: &Trace, extra: &[Descr]) {
        self.model = trace.aliasing;
        self.bytes.clear();
        self.bytes.extend(trace.descrs.iter().chain(extra).map(|d| match d {
            Descr::Field(f) => Some(Bytes {
                start: f.offset,
                size: f.size.max(1),
                array: false,
            }),
            Descr::Array(a) => Some(Bytes {
                start: a.base_offset,
                size: a.item_size.max(1),
                array: true,
            }),
            _ => None,
        }));
        for o in &mut self.overlaps {
            o.clear();
        }
        self.overlaps.resize(trace.descrs.len() + extra.len(), SmallVec::new());
        if self.model == Aliasing::TypeBased {
            self.any_view = false;
            return;
        }
        self.any_view = trace.ops.iter().any(|o| o.opcode.gc_access().is_some());
        // Sort by first byte; each descriptor overlaps the following ones that start before it
        // ends (an array's items reach on without end).
        let mut spans: Vec<(i64, i64, usize)> = self
            .bytes
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.map(|b| {
                    let end = if b.array { i64::MAX } else { b.start + b.size as i64 };
                    (b.start, end, i)
                })
            })
            .collect();
        spans.sort_unstable();
        for a in 0..spans.len() {
            let (_, end, i) = spans[a];
            for &(start, _, j) in &spans[a + 1..] {
                if start >= end {
                    break;
                }
                self.overlaps[i].push(DescrRef::new(j));
                self.overlaps[j].push(DescrRef::new(i));
            }
        }
    }

    /// The bytes of `loc` as `[start, end)` (`end` is `i64::MAX` for an unknown item).
    fn range(&self, loc: Loc) -> Option<(i64, i64)> {
        let b = self.bytes.get(loc.descr.index()).copied().flatten()?;
        let size = b.size as i64;
        Some(match loc.index {
            Index::Field => (b.start, b.start.saturating_add(size)),
            Index::Item(k) => {
                let start = k.saturating_mul(size).saturating_add(b.start);
                (start, start.saturating_add(size))
            }
            Index::AnyItem => (b.start, i64::MAX),
        })
    }

    /// Whether accesses to `a` and `b` of the same object may touch a common byte.
    pub fn may_overlap(&self, a: Loc, b: Loc) -> bool {
        if a.descr == b.descr {
            return match (a.index, b.index) {
                (Index::Item(x), Index::Item(y)) => x == y,
                _ => true,
            };
        }
        if self.model == Aliasing::TypeBased || !self.overlaps[a.descr.index()].contains(&b.descr) {
            return false;
        }
        match (self.range(a), self.range(b)) {
            (Some((s1, e1)), Some((s2, e2))) => s1 < e2 && s2 < e1,
            _ => true,
        }
    }

    /// The other descriptors whose locations may share bytes with `d`'s.
    pub fn overlapping(&self, d: DescrRef) -> &[DescrRef] {
        &self.overlaps[d.index()]
    }

    /// Whether no other descriptor's location may share a byte with `d`'s: then a write
    /// through `d` is observed only through `d` (the interpreter's values of unwritten memory
    /// are chosen per view, so a write-back of a read value is invisible only then).
    pub fn alone(&self, d: DescrRef) -> bool {
        self.overlaps[d.index()].is_empty() && !self.any_view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(aliasing: Aliasing) -> (Layout, Vec<DescrRef>) {
        let t = trace_ir::parse_trace(&format!(
            "aliasing {}\n[p0]\ni1 = getfield_gc_i(p0, descr=<FieldS a 8>)\n\
             i2 = getfield_gc_i(p0, descr=<FieldU b 9 size=1>)\n\
             i3 = getarrayitem_gc_i(p0, 1, descr=<ArrayS 8>)\n\
             i4 = getarrayitem_gc_i(p0, 8, descr=<ArrayU 1>)\n\
             i5 = getfield_gc_i(p0, descr=<FieldS c 0>)\nfinish()",
            aliasing.name()
        ))
        .unwrap();
        let mut l = Layout::default();
        l.reset(&t, &[]);
        let d = (0..t.descrs.len()).map(DescrRef::new).collect();
        (l, d)
    }

    /// Byte views: fields overlap by bytes, items by their byte ranges whatever the
    /// descriptor, and an unknown item reaches every byte from the array's base on.
    #[test]
    fn byte_views_overlap_by_bytes() {
        let (l, d) = layout(Aliasing::Bytes);
        let (a, b, w, byte, c) = (d[0], d[1], d[2], d[3], d[4]);
        assert!(l.may_overlap(Loc::field(a), Loc::field(b)));
        assert!(!l.may_overlap(Loc::field(a), Loc::field(c)));
        // item 1 of `ArrayS 8` is bytes 24..32; item 8 of `ArrayU 1` is byte 24
        assert!(l.may_overlap(Loc::item(w, Some(1)), Loc::item(byte, Some(8))));
        assert!(!l.may_overlap(Loc::item(w, Some(1)), Loc::item(byte, Some(7))));
        assert!(l.may_overlap(Loc::item(w, None), Loc::item(byte, Some(0))));
        // fields and items of one object share bytes too: field `a` (8..16) is before the
        // items (from 16), an unknown item is not
        assert!(!l.may_overlap(Loc::field(a), Loc::item(w, None)));
        assert!(l.may_overlap(Loc::item(w, Some(0)), Loc::item(w, None)));
        assert!(!l.alone(a) && l.alone(c));
    }

    /// Type-based: different descriptors never overlap; one descriptor's items do when their
    /// indices may be equal.
    #[test]
    fn type_based_descriptors_never_overlap() {
        let (l, d) = layout(Aliasing::TypeBased);
        assert!(!l.may_overlap(Loc::field(d[0]), Loc::field(d[1])));
        assert!(!l.may_overlap(Loc::item(d[2], Some(1)), Loc::item(d[3], Some(8))));
        assert!(l.may_overlap(Loc::item(d[2], Some(1)), Loc::item(d[2], None)));
        assert!(!l.may_overlap(Loc::item(d[2], Some(1)), Loc::item(d[2], Some(2))));
        assert!(d.iter().all(|&x| l.alone(x)));
    }
}
