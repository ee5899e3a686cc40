//! One side of the symbolic execution: its values, the objects it tracks and its heap state.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use trace_ir::descr::Descr;
use trace_ir::{OpRef, Opcode, Trace, Value, ValueData};
use z3::ast::{Array, Ast, Bool, BV};

use super::layout::Layout;
use super::memory::{Apart, ZeroSpan};
use super::naming::Naming;
use super::terms::{bv, zero};
use super::{unsupported, R};

/// A symbolic value: a bit-vector, or an object allocated by the trace.
#[derive(Clone, Debug)]
pub(super) enum Sym {
    Bv(BV),
    Obj(usize),
}

/// An object allocated by the trace (or described by a guard's resume data).
#[derive(Clone, Debug)]
pub(super) struct LocalObj {
    /// Allocation op and descriptor text: two objects are comparable only with equal shapes.
    pub(super) shape: String,
    /// Its class, when the allocation sets one.
    pub(super) class: Option<BV>,
    /// Array length, for arrays.
    pub(super) len: Option<BV>,
    /// Field key -> value (missing: zero / null).
    pub(super) fields: BTreeMap<String, Sym>,
    /// Field key -> array item descriptor and index, for writing items to the heap.
    pub(super) item_of: BTreeMap<String, (String, u32)>,
    /// Its address once it escaped.
    pub(super) addr: Option<BV>,
    /// Created before the last label and not passed through it: unusable.
    pub(super) dead: bool,
}

/// The shape of a struct `new` or `new_with_vtable` of size descriptor `d` allocates (its
/// [`LocalObj::shape`]).
pub(super) fn struct_shape(opc: Opcode, d: &Descr) -> String {
    format!("{}:{d:?}", opc.name().trim_end_matches("_with_vtable"))
}

/// The class `new_with_vtable` stores: the interpreter's (the size descriptor's vtable, or
/// a default derived from the size).
pub(super) fn alloc_class(opc: Opcode, d: Option<&Descr>) -> Option<BV> {
    match (opc, d.and_then(|d| d.as_size())) {
        (Opcode::NewWithVtable, Some(sd)) => Some(bv(trace_ir::abi::default_class(sd))),
        _ => None,
    }
}

pub(super) struct Side<'t> {
    pub(super) trace: &'t Trace,
    pub(super) tag: &'static str,
    pub(super) vals: Vec<Option<Sym>>,
    pub(super) objs: Vec<LocalObj>,
    /// Current heap arrays by key (created lazily from `key@epoch`).
    pub(super) arrays: HashMap<String, Array>,
    /// Keys written since the last epoch change.
    pub(super) written: BTreeSet<String>,
    /// The field keys of the byte memory written since the last epoch change.
    pub(super) written_fields: BTreeSet<String>,
    /// The indices written into each array since it was last replaced by a fresh one.
    pub(super) written_at: HashMap<String, Vec<BV>>,
    /// Index width of each heap array.
    pub(super) bits: HashMap<String, u32>,
    pub(super) epoch: String,
    /// The epoch the immutable twins ([`twin_of`]) started from: `0` (they start as the
    /// memories at entry) or the last label (fresh arrays).
    ///
    /// [`twin_of`]: super::memory::twin_of
    pub(super) twin_epoch: String,
    /// Escapes so far, per object shape (the `k`-th object of a shape to escape on each side
    /// gets the address [`esc_addr`]`(shape, k)`).
    ///
    /// [`esc_addr`]: super::naming::esc_addr
    pub(super) escapes: BTreeMap<String, usize>,
    /// Every address this side gave an escaping object, in escape order.
    pub(super) esc_addrs: Vec<BV>,
    /// The shape of each object of `esc_addrs`.
    pub(super) esc_shape_of: Vec<String>,
    /// The number of the epoch in which each object of `esc_addrs` escaped.
    pub(super) esc_epoch_of: Vec<usize>,
    /// Epoch name -> its number, in order (`0` is 0).
    pub(super) epoch_numbers: HashMap<String, usize>,
    /// Under [`Naming::Role`]: whether each object of `esc_addrs` is paired with one of the
    /// other side's ([`Validator::try_pair`]).
    ///
    /// [`Validator::try_pair`]: super::validator::Validator::try_pair
    pub(super) paired: Vec<bool>,
    /// Per escaped object (as `esc_addrs`): whether an elidable call may reach it, which reads
    /// its arguments and immutable memory only (see [`Side::expose`]).
    pub(super) exposed: Vec<bool>,
    /// The shapes of the objects that escaped, each with whether its length was a constant.
    pub(super) esc_shapes: BTreeSet<(String, bool)>,
    /// How escaping objects are named.
    pub(super) naming: Naming,
    /// Object id -> the heap epoch in which it escaped, or into which its contents were
    /// carried over a heap-writing call ([`Side::new_epoch_after_call`]).
    pub(super) escaped_in: HashMap<usize, String>,
    /// Object id -> the fields carried into the current epoch (structs).
    pub(super) carried: HashMap<usize, BTreeSet<String>>,
    /// The field keys either trace reads with `getfield_gc_*`.
    pub(super) read_keys: Rc<Vec<String>>,
    /// By shape of a struct the traces allocate: the field keys either trace writes into
    /// such a struct while it is new (stores into the allocation's result, fields of virtual
    /// objects in resume data): a trace may leave a zero field unwritten.
    pub(super) written_keys: Rc<HashMap<String, Vec<String>>>,
    /// The descriptors of both traces and which of them use the byte memory.
    pub(super) layout: Rc<Layout>,
    /// The non-null reference constants of both traces (no fresh object has their address).
    pub(super) consts: Rc<Vec<u64>>,
    /// Facts about escaped objects' addresses, not yet added to the path condition.
    pub(super) esc_facts: Vec<Bool>,
    /// The zero bytes of fresh objects in the byte memories epochs started from (shared by
    /// both sides, like the facts).
    pub(super) zeros: Rc<RefCell<Vec<ZeroSpan>>>,
    /// Object id -> the byte offsets where it is zero in the byte memory as it escaped.
    pub(super) zero_span_of: HashMap<usize, (u64, u64)>,
    /// Escape name -> values stated different from that address (the references that existed
    /// before the object escaped), so that reads look through the stores into it.
    pub(super) apart: Apart,
    pub(super) calls: usize,
    pub(super) labels: usize,
    pub(super) no_ovf: Option<Bool>,
    /// Per op: whether its value depends on a multiplication or division.
    pub(super) heavy: Vec<bool>,
    /// Whether the last overflow op is heavy.
    pub(super) ovf_heavy: bool,
    pub(super) exc: Bool,
    pub(super) not_forced: Bool,
    pub(super) pos: usize,
}

impl<'t> Side<'t> {
    pub(super) fn new(trace: &'t Trace, tag: &'static str) -> Side<'t> {
        Side {
            trace,
            tag,
            vals: vec![None; trace.ops.len()],
            objs: Vec::new(),
            arrays: HashMap::new(),
            written: BTreeSet::new(),
            written_fields: BTreeSet::new(),
            written_at: HashMap::new(),
            bits: HashMap::new(),
            epoch: "0".into(),
            twin_epoch: "0".into(),
            escapes: BTreeMap::new(),
            esc_addrs: Vec::new(),
            esc_shape_of: Vec::new(),
            esc_epoch_of: Vec::new(),
            epoch_numbers: HashMap::from([("0".to_string(), 0)]),
            paired: Vec::new(),
            exposed: Vec::new(),
            esc_shapes: BTreeSet::new(),
            naming: Naming::ShapeAndLength,
            escaped_in: HashMap::new(),
            carried: HashMap::new(),
            esc_facts: Vec::new(),
            zeros: Rc::new(RefCell::new(Vec::new())),
            zero_span_of: HashMap::new(),
            apart: Apart::default(),
            read_keys: Rc::new(Vec::new()),
            written_keys: Rc::new(HashMap::new()),
            layout: Rc::new(Layout::default()),
            consts: Rc::new(Vec::new()),
            calls: 0,
            labels: 0,
            no_ovf: None,
            heavy: vec![false; trace.ops.len()],
            ovf_heavy: false,
            exc: Bool::from_bool(false),
            not_forced: Bool::new_const("not_forced"),
            pos: 0,
        }
    }

    pub(super) fn value(&self, v: Value) -> R<Sym> {
        match v.data() {
            ValueData::Const(c) => Ok(Sym::Bv(bv(self.trace.consts.get(c).bits()))),
            ValueData::Op(o) => match self.vals.get(o.index()).cloned().flatten() {
                Some(Sym::Obj(id)) if self.objs[id].dead => unsupported(format!(
                    "{} trace: object {o} of the preamble used after the label",
                    self.tag
                )),
                Some(s) => Ok(s),
                None => unsupported(format!("{} trace: {o} has no value", self.tag)),
            },
        }
    }

    /// The value as a bit-vector, escaping a tracked object.
    pub(super) fn bv_of(&mut self, v: Value) -> R<BV> {
        let s = self.value(v)?;
        Ok(self.escape(&s))
    }

    /// The items of tracked array `id` (constant length up to 64, no tracked objects in it),
    /// for accesses with a non-constant index.
    pub(super) fn items(&self, id: usize, akey: &str) -> Option<Vec<BV>> {
        let o = &self.objs[id];
        let n = o.len.as_ref()?.simplify().as_u64()?;
        if n > 64 {
            return None;
        }
        let mut out = Vec::new();
        for i in 0..n {
            match o.fields.get(&format!("item:{akey}#{i}")) {
                None => out.push(zero()),
                Some(Sym::Bv(b)) => out.push(b.clone()),
                Some(Sym::Obj(_)) => return None,
            }
        }
        Some(out)
    }

    /// Item `ix` of the tracked array `id` (array descriptor key `akey`) is now `val`.
    pub(super) fn store_item(&mut self, id: usize, akey: &str, ix: u32, val: Sym) {
        let key = format!("item:{akey}#{ix}");
        self.objs[id].item_of.insert(key.clone(), (akey.to_string(), ix));
        self.objs[id].fields.insert(key, val);
    }

    /// Give op `r` the value `v`.
    pub(super) fn set(&mut self, r: OpRef, v: Sym) {
        self.vals[r.index()] = Some(v);
    }

    pub(super) fn new_obj(&mut self, obj: LocalObj) -> Sym {
        self.objs.push(obj);
        Sym::Obj(self.objs.len() - 1)
    }

    pub(super) fn tracked(&self, s: &Sym) -> Option<usize> {
        match s {
            Sym::Obj(id) if self.objs[*id].addr.is_none() => Some(*id),
            _ => None,
        }
    }
}
