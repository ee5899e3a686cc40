//! The byte layout of the traces' descriptors: which share bytes and go to the byte memory.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use trace_ir::abi::VirtualRefLayout;
use trace_ir::descr::{ArrayDescr, Descr, FieldDescr, DEFAULT_ARRAY_BASE, DEFAULT_ARRAY_LEN, STR_LEN_OFFSET};
use trace_ir::{Aliasing, DescrRef, Kind, OpRef, Trace, VirtualField, VirtualKind};
use z3::ast::BV;

use super::side::{LocalObj, Sym};
use super::terms::zero;

/// The field, array and interior descriptors of both traces, and which of them go to the byte
/// memory (see the documentation of the `validate` module).
#[derive(Default)]
pub(super) struct Layout {
    /// Whether the traces use byte views ([`Aliasing::Bytes`]).
    pub(super) bytes: bool,
    /// The descriptors by their text (`{:?}`, the heap keys' names).
    pub(super) descrs: HashMap<String, Descr>,
    /// Under byte views, the descriptors whose bytes may overlap another descriptor's: their
    /// accesses go to [`BYTES`].
    ///
    /// [`BYTES`]: super::memory::BYTES
    pub(super) shared: HashSet<String>,
    /// The byte offsets of the shared field descriptors (a fresh struct is stated zero there
    /// when it escapes).
    pub(super) field_bytes: BTreeSet<i64>,
}

impl Layout {
    /// The layout of the descriptors of `traces` and of `extra` (descriptors read other than
    /// by the traces' ops: what loop body parameters carry).
    pub(super) fn new(traces: [&Trace; 2], extra: &[&Descr]) -> Layout {
        let mut l = Layout {
            bytes: traces[0].aliasing == Aliasing::Bytes,
            ..Layout::default()
        };
        for descr in extra {
            if matches!(descr, Descr::Field(_) | Descr::Array(_)) {
                l.descrs.insert(format!("{descr:?}"), (*descr).clone());
            }
        }
        for t in traces {
            if VirtualRefLayout::used_by(t) {
                let vref = VirtualRefLayout::get();
                for f in [vref.token, vref.forced] {
                    let d = Descr::Field(f);
                    l.descrs.insert(format!("{d:?}"), d);
                }
            }
            let mut add = |d: DescrRef| {
                let descr = t.descr(d);
                if matches!(descr, Descr::Field(_) | Descr::Array(_) | Descr::Interior(_)) {
                    l.descrs.insert(format!("{descr:?}"), descr.clone());
                }
            };
            for op in &t.ops {
                if let Some(d) = op.descr {
                    add(d);
                }
            }
            for g in &t.guards {
                for v in &g.virtuals {
                    if let VirtualKind::Array { descr, .. } = v.kind {
                        add(descr);
                    }
                    for (f, _) in &v.fields {
                        if let VirtualField::Field(d) = f {
                            add(*d);
                        }
                    }
                }
            }
        }
        if !l.bytes {
            return l;
        }
        // Each descriptor's bytes relative to the object: a field's own, an array's items from
        // its base on, an interior field's from its offset in the first item on.
        let spans: Vec<(&String, i64, i64)> = l
            .descrs
            .iter()
            .filter_map(|(k, d)| {
                let (start, end) = match d {
                    Descr::Field(f) => (f.offset, f.offset.saturating_add(f.size.max(1) as i64)),
                    Descr::Array(a) => (a.base_offset, i64::MAX),
                    Descr::Interior(i) => (DEFAULT_ARRAY_BASE.saturating_add(i.field.offset), i64::MAX),
                    _ => return None,
                };
                Some((k, start, end))
            })
            .collect();
        let mut shared = HashSet::new();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                if a.1 < b.2 && b.1 < a.2 {
                    shared.insert(a.0.clone());
                    shared.insert(b.0.clone());
                }
            }
        }
        // `gc_load`/`gc_store` read and write bytes at any offset: every descriptor's
        // accesses go to the byte memory with theirs.
        if traces
            .iter()
            .any(|t| t.ops.iter().any(|o| o.opcode.gc_access().is_some()))
        {
            shared.extend(spans.iter().map(|(k, _, _)| (*k).clone()));
        }
        for k in &shared {
            if let Some(Descr::Field(f)) = l.descrs.get(k) {
                l.field_bytes
                    .extend(f.offset..f.offset.saturating_add(f.size.max(1) as i64));
            }
        }
        l.shared = shared;
        l
    }

    /// Whether accesses through the descriptor with text `d` go to the byte memory.
    pub(super) fn shared(&self, d: &str) -> bool {
        self.shared.contains(d)
    }

    /// The descriptor of a field key (`{:?}`, or `imm:{:?}` for an immutable field).
    pub(super) fn field(&self, key: &str) -> Option<&FieldDescr> {
        match self.descrs.get(key.strip_prefix("imm:").unwrap_or(key)) {
            Some(Descr::Field(f)) => Some(f),
            _ => None,
        }
    }

    /// The array descriptor with text `akey`.
    pub(super) fn array(&self, akey: &str) -> Option<&ArrayDescr> {
        match self.descrs.get(akey) {
            Some(Descr::Array(a)) => Some(a),
            _ => None,
        }
    }

    /// The key of the length words of arrays of descriptor `akey` (`None`: of strings, `name`
    /// being `strlen` or `unicodelen`): per length offset under byte views (two descriptors with
    /// one length offset read one word), per descriptor otherwise.
    pub(super) fn len_key(&self, akey: Option<&str>, name: &str) -> String {
        if self.bytes {
            let off = match akey {
                Some(a) => self.array(a).map_or(DEFAULT_ARRAY_LEN, |d| d.len_offset),
                None => STR_LEN_OFFSET,
            };
            return format!("imm:len:@{off}");
        }
        match akey {
            Some(a) => format!("imm:len:array:{a}"),
            None => format!("imm:len:{name}"),
        }
    }

    /// The key of the length word of an allocation of `shape`.
    pub(super) fn len_key_of_shape(&self, shape: &str) -> String {
        match shape {
            "newstr" => self.len_key(None, "strlen"),
            "newunicode" => self.len_key(None, "unicodelen"),
            s => self.len_key(s.strip_prefix("array:"), ""),
        }
    }

    /// The descriptor text and the bytes `[start, end)` of field or item `key` of a tracked
    /// object (`item_of`: its items' descriptors and indices; an item key it does not list is
    /// read from the key, `item:{akey}#{index}`).
    pub(super) fn bytes_of(&self, key: &str, item_of: &BTreeMap<String, (String, u32)>) -> Option<(String, i64, i64)> {
        let item = match item_of.get(key) {
            Some((akey, i)) => Some((akey.clone(), *i as i64)),
            None => key
                .strip_prefix("item:")
                .and_then(|k| k.rsplit_once('#'))
                .and_then(|(a, i)| Some((a.to_string(), i.parse::<i64>().ok()?))),
        };
        match item {
            Some((akey, i)) => {
                let a = self.array(&akey)?;
                let start = a.base_offset.saturating_add(i.saturating_mul(a.item_size as i64));
                Some((akey, start, start.saturating_add(a.item_size.max(1) as i64)))
            }
            None => {
                let f = self.field(key)?;
                let d = key.strip_prefix("imm:").unwrap_or(key).to_string();
                Some((d, f.offset, f.offset + f.size.max(1) as i64))
            }
        }
    }
}

impl Layout {
    /// The descriptor text of a word memory (a field's, an array's items', an interior
    /// field's), if `key` is one.
    pub(super) fn word_descr<'k>(&self, key: &'k str) -> Option<&'k str> {
        let d = key
            .strip_prefix("items:")
            .or_else(|| key.strip_prefix("interior:"))
            .unwrap_or_else(|| key.strip_prefix("imm:").unwrap_or(key));
        self.descrs.contains_key(d).then_some(d)
    }

    /// `v` as a read through descriptor `d` gives it: a narrow integer's low bytes, sign- or
    /// zero-extended.
    pub(super) fn extend(&self, d: &str, v: BV) -> BV {
        let (size, signed, kind) = match self.descrs.get(d) {
            Some(Descr::Field(f)) => (f.size, f.signed, f.kind),
            Some(Descr::Interior(i)) => (i.field.size, i.field.signed, i.field.kind),
            Some(Descr::Array(a)) => (a.item_size, a.signed, a.kind),
            _ => return v,
        };
        if kind != Kind::Int || size == 0 || size >= 8 {
            return v;
        }
        let bits = size as u32 * 8;
        let low = v.extract(bits - 1, 0);
        if signed {
            low.sign_ext(64 - bits)
        } else {
            low.zero_ext(64 - bits)
        }
    }

    /// Whether the bytes of field or item `name` lie within one field or item through which
    /// tracked object `o` holds a tracked object (a view that would cut that reference).
    pub(super) fn within_object_field(&self, o: &LocalObj, name: &str) -> bool {
        let Some((_, start, end)) = self.bytes_of(name, &o.item_of) else {
            return false;
        };
        o.fields.iter().any(|(k, v)| {
            matches!(v, Sym::Obj(_))
                && self
                    .bytes_of(k, &o.item_of)
                    .is_some_and(|(_, s, e)| s <= start && end <= e)
        })
    }

    /// What field or item `name` of tracked object `o` holds as a read through its descriptor
    /// sees it: its own value, or under byte views the bytes of the fields and items `o` holds
    /// through other descriptors there (zero where it holds none; under type-based aliasing
    /// another descriptor's bytes are not this one's). `None` when that would cut a reference
    /// to a tracked object.
    pub(super) fn tracked_view(&self, o: &LocalObj, name: &str) -> Option<Sym> {
        if let Some(v) = o.fields.get(name) {
            return Some(v.clone());
        }
        if !self.bytes {
            return Some(Sym::Bv(zero()));
        }
        let Some((d, start, end)) = self.bytes_of(name, &o.item_of) else {
            return Some(Sym::Bv(zero()));
        };
        let parts: Vec<(i64, i64, &Sym)> = o
            .fields
            .iter()
            .filter_map(|(k, v)| {
                let (_, s, e) = self.bytes_of(k, &o.item_of)?;
                (s < end && start < e).then_some((s, e, v))
            })
            .collect();
        if parts.is_empty() {
            return Some(Sym::Bv(zero()));
        }
        if end - start > 8 {
            return None;
        }
        let mut v: Option<BV> = None;
        for b in (start..end).rev() {
            let byte = match parts.iter().find(|(s, e, _)| *s <= b && b < *e) {
                None => BV::from_u64(0, 8),
                Some((s, _, Sym::Bv(x))) => {
                    let k = (b - s) as u32;
                    x.extract(8 * k + 7, 8 * k)
                }
                Some((_, _, Sym::Obj(_))) => return None,
            };
            v = Some(match v {
                None => byte,
                Some(high) => high.concat(&byte),
            });
        }
        let v = v.expect("at least one byte");
        let n = v.get_size();
        let v = if n < 64 { v.zero_ext(64 - n) } else { v };
        Some(Sym::Bv(self.extend(&d, v)))
    }
}

pub(super) fn descr_key(trace: &Trace, op: OpRef) -> String {
    match trace.op(op).descr {
        Some(d) => format!("{:?}", trace.descr(d)),
        None => String::new(),
    }
}

pub(super) fn field_key(trace: &Trace, r: OpRef) -> String {
    match trace.op(r).descr {
        Some(d) => field_key_of(trace.descr(d)),
        None => String::new(),
    }
}

/// The heap key of a field: immutable fields get their own arrays, which calls keep.
pub(super) fn field_key_of(d: &Descr) -> String {
    match d {
        Descr::Field(f) if f.immutable => format!("imm:{d:?}"),
        d => format!("{d:?}"),
    }
}
