//! The heap model's memories: their keys, places ([`Place`]), reads through their stores.

use std::collections::{HashMap, HashSet};

use z3::ast::{Array, Ast, Bool, Dynamic, BV};
use z3::DeclKind;

use super::terms::bv;

/// The memory of GC objects viewed through descriptors that share bytes with another one (byte
/// views): object address ++ byte offset (64 + 64 bits) -> byte.
pub(super) const BYTES: &str = "bytes";

/// The immutable twin of [`BYTES`] (see [`twin_of`]).
pub(super) const TWIN_BYTES: &str = "twin:bytes";

/// Raw memory: absolute address -> byte.
pub(super) const RAW: &str = "raw";

/// The immutable twin of a memory, if it has one: the items of one array descriptor and the
/// byte memory have one, which receives every write the memory receives but is not replaced by
/// calls that may write the heap. Immutable reads (`getarrayitem_gc_pure_*`, `pure` fields in
/// the byte memory) read it.
pub(super) fn twin_of(key: &str) -> Option<String> {
    if key == BYTES || key.starts_with("items:") {
        Some(format!("twin:{key}"))
    } else {
        None
    }
}

/// Whether the memory `key` holds bytes (its other memories hold 64-bit words).
pub(super) fn holds_bytes(key: &str) -> bool {
    matches!(key, BYTES | TWIN_BYTES | RAW)
}

/// Where the heap model keeps a view.
#[derive(Clone, Debug)]
pub(super) enum Place {
    /// A word of the memory `key`, at `index`; `imm`: an immutable read, of its twin
    /// ([`twin_of`]).
    Word { key: String, index: BV, imm: bool },
    /// `size` bytes of [`BYTES`] from byte `offset` of the object at `addr`; `imm`: an
    /// immutable read, of [`TWIN_BYTES`].
    Bytes { addr: BV, offset: BV, size: u8, imm: bool },
    /// `size` bytes of raw memory from address `addr`.
    Raw { addr: BV, size: u8 },
}

/// `x + k`, folded when `x` is a numeral.
pub(super) fn add_const(x: &BV, k: u64) -> BV {
    match x.as_u64() {
        Some(c) => bv(c.wrapping_add(k)),
        None if k == 0 => x.clone(),
        None => x.bvadd(bv(k)),
    }
}

/// `base + index * size` (the byte offset of an item), folded when `index` is a numeral.
pub(super) fn scaled(index: &BV, size: u64, base: i64) -> BV {
    match index.simplify().as_u64() {
        Some(i) => bv(i.wrapping_mul(size).wrapping_add(base as u64)),
        None => add_const(&index.bvmul(bv(size)), base as u64),
    }
}

/// The index of byte `k` of a view at `offset`: in the object at `addr` (object-relative), or
/// at the absolute address `offset` (raw memory).
pub(super) fn byte_index(addr: Option<&BV>, offset: &BV, k: u64) -> BV {
    let off = add_const(offset, k);
    match addr {
        Some(a) => a.concat(&off),
        None => off,
    }
}

/// An index as (base, constant): `concat(base, k)` (object memories: address ++ offset or
/// index), `base + k` (raw memory) or a numeral `k` (no base); `concat` says which form.
pub(super) fn split_index(i: &BV) -> (Option<Dynamic>, u64, bool) {
    if let Ok(decl) = i.safe_decl() {
        let kids = i.children();
        match (decl.kind(), kids.as_slice()) {
            (DeclKind::Concat, [high, low]) => {
                if let Some(k) = low.as_bv().filter(|l| l.get_size() == 64).and_then(|l| l.as_u64()) {
                    return (Some(high.clone()), k, true);
                }
            }
            (DeclKind::Badd, [x, y]) => {
                if let Some(k) = y.as_bv().and_then(|c| c.as_u64()) {
                    return (Some(x.clone()), k, false);
                }
                if let Some(k) = x.as_bv().and_then(|c| c.as_u64()) {
                    return (Some(y.clone()), k, false);
                }
            }
            _ => {}
        }
    }
    match i.as_u64() {
        Some(k) => (None, k, false),
        None => (Some(Dynamic::from_ast(i)), 0, false),
    }
}

/// The name of `x` if it is the address of an escaped fresh object ([`esc_addr`] and the
/// addresses by role: `esc<k>:...`).
///
/// [`esc_addr`]: super::naming::esc_addr
fn escape_name(x: &Dynamic) -> Option<String> {
    if !x.children().is_empty() {
        return None;
    }
    let name = x.safe_decl().ok()?.name();
    let digits = name.strip_prefix("esc")?.split_once(':')?.0;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

/// Whether two escape names certainly name two objects: every escape is stated different
/// from the escapes before it on its side, and a name stands for one object on both sides,
/// except the side-specific names of the pairing by role (`esc<k>:original` and
/// `esc<k>:optimized`), which pairing may make equal across the sides.
fn distinct_fresh(a: &str, b: &str) -> bool {
    let tag = |n: &str| {
        n.split_once(':')
            .map(|(_, t)| t.to_string())
            .filter(|t| t == "original" || t == "optimized")
    };
    a != b && tag(a) == tag(b)
}

/// The object address and the offset or item of an index `concat(address, offset or item)`
/// of an object memory.
pub(super) fn address_and_offset(i: &BV) -> Option<(BV, BV)> {
    let decl = i.safe_decl().ok()?;
    if decl.kind() != DeclKind::Concat {
        return None;
    }
    match i.children().as_slice() {
        [high, low] => Some((high.as_bv()?, low.as_bv().filter(|l| l.get_size() == 64)?)),
        _ => None,
    }
}

/// The object address of an index `concat(address, offset or item)` of an object memory,
/// whatever its low part.
fn object_address(i: &BV) -> Option<BV> {
    address_and_offset(i).map(|(a, _)| a)
}

/// Whether two indices of one memory certainly differ: in the constant part of `concat(_, k)`
/// forms (whatever the addresses), or of `base + k` forms with one base; or at two escaped
/// fresh objects (see [`distinct_fresh`]; whatever the offsets or items).
pub(super) fn indices_differ(i: &BV, j: &BV) -> bool {
    if let (Some(x), Some(y)) = (object_address(i), object_address(j)) {
        let names = (escape_name(&Dynamic::from_ast(&x)), escape_name(&Dynamic::from_ast(&y)));
        if let (Some(x), Some(y)) = names {
            if distinct_fresh(&x, &y) {
                return true;
            }
        }
    }
    let ((bi, ki, ci), (bj, kj, cj)) = (split_index(i), split_index(j));
    if ci == cj && (ci || ki == kj) {
        if let (Some(x), Some(y)) = (bi.as_ref().and_then(escape_name), bj.as_ref().and_then(escape_name)) {
            if distinct_fresh(&x, &y) {
                return true;
            }
        }
    }
    ki != kj
        && match (ci, cj) {
            (true, true) => true,
            (false, false) => match (bi, bj) {
                (None, None) => true,
                (Some(x), Some(y)) => x.ast_eq(&y),
                _ => false,
            },
            _ => false,
        }
}

/// Per escaped object (by the name of its address), the values its address is stated to
/// differ from in the path condition.
#[derive(Clone, Default)]
pub(super) struct Apart(HashMap<String, HashSet<BV>>);

impl Apart {
    /// Record that the fact `addr != v` is stated.
    pub(super) fn insert(&mut self, addr: &BV, v: &BV) {
        if let Some(name) = escape_name(&Dynamic::from_ast(addr)) {
            self.0.entry(name).or_default().insert(v.clone());
        }
    }

    /// Whether indices `i` and `j` certainly differ because one is at an escaped object whose
    /// address is stated to differ from the other's object (whatever the offsets or items).
    fn differ(&self, i: &BV, j: &BV) -> bool {
        if self.0.is_empty() {
            return false;
        }
        // (Object memories: the addresses of `concat(address, _)`, whatever the offsets or
        // items. Raw memory: the bases of `base + k` with one `k`.)
        let (bi, bj) = match (object_address(i), object_address(j)) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                let ((bi, ki, ci), (bj, kj, cj)) = (split_index(i), split_index(j));
                if ci || cj || ki != kj {
                    return false;
                }
                let (Some(bi), Some(bj)) = (bi.and_then(|b| b.as_bv()), bj.and_then(|b| b.as_bv())) else {
                    return false;
                };
                (bi, bj)
            }
        };
        let apart = |x: &BV, y: &BV| {
            escape_name(&Dynamic::from_ast(x))
                .and_then(|n| self.0.get(&n))
                .is_some_and(|set| set.contains(y))
        };
        apart(&bi, &bj) || apart(&bj, &bi)
    }
}

/// `array[index]` without the stores `index` certainly misses (anywhere in the chain) and
/// below the newest one it hits (same index), the stores it may hit as a chain of `ite`s over
/// the rest: keeps reads of byte memories, which write many bytes at constant offsets, and of
/// memories written at many escaped objects, small.
pub(super) fn select(array: &Array, index: &BV) -> BV {
    select_apart(array, index, &Apart::default())
}

/// [`select`], also looking through the stores into escaped objects `apart` says `index` is
/// not in.
pub(super) fn select_apart(array: &Array, index: &BV, apart: &Apart) -> BV {
    select_through(
        array,
        index,
        |j| indices_differ(j, index) || apart.differ(j, index),
        |a| a.select(index).as_bv().expect("heap arrays hold bit-vectors"),
    )
}

/// A byte range of a fresh object, zero in the byte memory an epoch started from: `init`
/// (that memory's initial array) at `addr ++ [lo, hi)`.
#[derive(Clone)]
pub(super) struct ZeroSpan {
    pub(super) init: Array,
    pub(super) addr: BV,
    pub(super) lo: u64,
    pub(super) hi: u64,
}

/// `array[index]` with the stores `index` may hit made explicit: `ite(index == j, v, ...)`
/// down to the first store it certainly hits or the initial array, whose bytes in the `zeros`
/// spans are zero (the same value as [`select`] under those facts, as a term Z3 decides by
/// bit-vector reasoning instead of array lemmas, which byte memories read at symbolic offsets
/// need; one comparison per fresh object instead of one fact per byte).
pub(super) fn select_expanded(array: &Array, index: &BV, zeros: &[ZeroSpan]) -> BV {
    select_through(
        array,
        index,
        |j| indices_differ(j, index),
        |a| select_initial(a, index, zeros),
    )
}

/// `array[index]` without the stores whose index `misses` says `index` certainly misses
/// (anywhere in the chain) and below the newest one at `index` itself, the stores it may hit
/// as a chain of `ite`s over `bottom` of the array under them all.
fn select_through(array: &Array, index: &BV, misses: impl Fn(&BV) -> bool, bottom: impl Fn(&Array) -> BV) -> BV {
    // The stores `index` may hit, newest first.
    let mut maybe: Vec<(BV, BV)> = Vec::new();
    let mut a = array.clone();
    let bottom = loop {
        let store = a
            .safe_decl()
            .ok()
            .filter(|d| d.kind() == DeclKind::Store)
            .and_then(|_| {
                let kids = a.children();
                Some((kids[0].as_array()?, kids[1].as_bv()?, kids[2].as_bv()?))
            });
        let Some((inner, j, v)) = store else {
            break bottom(&a);
        };
        if j.ast_eq(index) {
            break v;
        }
        if !misses(&j) {
            maybe.push((j, v));
        }
        a = inner;
    };
    let mut out = bottom;
    for (j, v) in maybe.into_iter().rev() {
        out = index_eq(&j, index).ite(&v, &out);
    }
    out
}

/// `init[index]` of an initial byte memory: zero inside the `zeros` spans of `init`.
pub(super) fn select_initial(init: &Array, index: &BV, zeros: &[ZeroSpan]) -> BV {
    let mut out = init.select(index).as_bv().expect("heap arrays hold bit-vectors");
    let n = index.get_size();
    if n <= 64 {
        return out;
    }
    let (addr, off) = match index.safe_decl().map(|d| d.kind()) {
        Ok(DeclKind::Concat) => {
            let kids = index.children();
            match (kids[0].as_bv(), kids[1].as_bv()) {
                (Some(a), Some(o)) if o.get_size() == 64 => (a, o),
                _ => (index.extract(n - 1, 64), index.extract(63, 0)),
            }
        }
        _ => (index.extract(n - 1, 64), index.extract(63, 0)),
    };
    let zero8 = BV::from_u64(0, out.get_size());
    for z in zeros.iter().rev() {
        if !z.init.ast_eq(init) {
            continue;
        }
        let inside = match off.as_u64() {
            Some(o) if o < z.lo || o >= z.hi => continue,
            Some(_) => Bool::from_bool(true),
            None => Bool::and(&[off.bvuge(bv(z.lo)), off.bvult(bv(z.hi))]),
        };
        if addr.ast_eq(&z.addr) && inside.as_bool() == Some(true) {
            return zero8;
        }
        out = Bool::and(&[addr.eq(&z.addr), inside]).ite(&zero8, &out);
    }
    out
}

/// `i == j`, split into address and offset when both are `concat(address, offset)`.
pub(super) fn index_eq(i: &BV, j: &BV) -> Bool {
    let parts = |x: &BV| -> Option<(BV, BV)> {
        let decl = x.safe_decl().ok()?;
        let kids = x.children();
        match (decl.kind(), kids.as_slice()) {
            (DeclKind::Concat, [h, l]) => Some((h.as_bv()?, l.as_bv()?)),
            _ => None,
        }
    };
    match (parts(i), parts(j)) {
        (Some((hi, li)), Some((hj, lj))) if hi.get_size() == hj.get_size() => Bool::and(&[li.eq(&lj), hi.eq(&hj)]),
        _ => i.eq(j),
    }
}
