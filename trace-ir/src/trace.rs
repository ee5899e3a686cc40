//! The trace: a straight line of ops with guards, inputs first, optionally one or more
//! `label`s and a final `jump` or `finish`; its constant pool, descriptor table and guard table.
//!
//! ```text
//!  ops:    [input_i, input_r, ..., op, op, guard, ..., label, input_i, ..., op, jump]
//!           └ num_inputs ┘                            └ label params ┘
//! ```
//! A `label` with `n` operands is followed by exactly `n` input ops: its parameters. Operands
//! flow into the parameters when the label is reached from above; a `jump` assigns its
//! operands to the parameters of the label it targets (or to the trace inputs when the trace
//! has no label) and continues after it. So the trace is in SSA form: every value has one
//! definition, and the back edge is a parallel move.

use crate::descr::Descr;
use crate::entity::{ConstRef, DescrRef, GuardId, GuardRef, OpRef, Value, ValueData};
use crate::opcode::{Kind, Opcode};
use smallvec::SmallVec;
use std::sync::Arc;

/// A constant of the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Const {
    /// An integer.
    Int(i64),
    /// A float, stored as its IEEE bits so constants can be hashed and compared exactly.
    Float(u64),
    /// A pointer (0 is null).
    Ref(u64),
}

impl Const {
    /// The kind of the constant.
    pub fn kind(self) -> Kind {
        match self {
            Const::Int(_) => Kind::Int,
            Const::Float(_) => Kind::Float,
            Const::Ref(_) => Kind::Ref,
        }
    }
    /// The constant's 64 bits (integers as two's complement, floats as IEEE bits).
    pub fn bits(self) -> u64 {
        match self {
            Const::Int(v) => v as u64,
            Const::Float(b) | Const::Ref(b) => b,
        }
    }
    /// A float constant.
    pub fn float(v: f64) -> Const {
        Const::Float(v.to_bits())
    }
}

/// The constant pool of a trace. Constants are interned: the same value (and name) gets the
/// same [`ConstRef`]. Named constants are PyPy's `ConstPtr(ptr13)` and `ConstClass(name)`:
/// their value is derived from the name (see [`symbol_address`]) and the name is printed.
#[derive(Debug, Default, PartialEq)]
pub struct ConstPool {
    consts: Vec<Const>,
    // Shared, so that copying a pool (every optimizer run does) copies no name.
    names: Vec<Option<Arc<str>>>,
    index: crate::fxhash::FxHashMap<(Const, Option<Arc<str>>), ConstRef>,
}

/// The deterministic address given to a named constant (`ConstPtr(ptr13)`, `ConstClass(X)`):
/// an FNV-1a hash of the name, 8-byte aligned, in the upper half of the canonical user
/// address space so it never collides with small integers.
pub fn symbol_address(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    0x4000_0000_0000 | (h & 0x3fff_ffff_fff8)
}

impl Clone for ConstPool {
    fn clone(&self) -> Self {
        ConstPool {
            consts: self.consts.clone(),
            names: self.names.clone(),
            index: self.index.clone(),
        }
    }
    /// Reuses `self`'s tables (the optimizer copies a trace's pool into its context per run).
    fn clone_from(&mut self, source: &Self) {
        self.consts.clone_from(&source.consts);
        self.names.clone_from(&source.names);
        self.index.clone_from(&source.index);
    }
}

impl ConstPool {
    /// Intern an unnamed constant.
    pub fn intern(&mut self, c: Const) -> ConstRef {
        self.intern_named(c, None)
    }
    /// Intern a constant with an optional symbolic name.
    pub fn intern_named(&mut self, c: Const, name: Option<String>) -> ConstRef {
        let key = (c, name.map(Arc::from));
        if let Some(&r) = self.index.get(&key) {
            return r;
        }
        let r = ConstRef::new(self.consts.len());
        self.consts.push(key.0);
        self.names.push(key.1.clone());
        self.index.insert(key, r);
        r
    }
    /// The constant's value.
    #[inline]
    pub fn get(&self, c: ConstRef) -> Const {
        self.consts[c.index()]
    }
    /// The constant's symbolic name, if it has one.
    pub fn name(&self, c: ConstRef) -> Option<&str> {
        self.names[c.index()].as_deref()
    }
    /// The constants, in pool order.
    pub fn iter(&self) -> impl Iterator<Item = Const> + '_ {
        self.consts.iter().copied()
    }
    /// Number of constants.
    pub fn len(&self) -> usize {
        self.consts.len()
    }
    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.consts.is_empty()
    }
}

/// One operation. Layout: opcode (2 bytes), descriptor (4), guard (4), operands inline
/// up to three (a `SmallVec` spills longer lists to the heap).
///
/// ```text
/// ┌────────┬──────────────┬──────────────┬───────────────────────────────┐
/// │ opcode │ descr?: u32  │ guard?: u32  │ args: SmallVec<[Value; 3]>    │
/// └────────┴──────────────┴──────────────┴───────────────────────────────┘
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// What the op does.
    pub opcode: Opcode,
    /// Descriptor, for ops that take one.
    pub descr: Option<DescrRef>,
    /// Resume data, for guards (and only for guards).
    pub guard: Option<GuardRef>,
    /// Operands.
    pub args: SmallVec<[Value; 3]>,
}

impl Op {
    /// A new op without descriptor or guard data.
    pub fn new(opcode: Opcode, args: &[Value]) -> Op {
        Op {
            opcode,
            descr: None,
            guard: None,
            args: SmallVec::from_slice(args),
        }
    }
    /// Operand `i`.
    #[inline]
    pub fn arg(&self, i: usize) -> Value {
        self.args[i]
    }
    /// Everything the op reads, in order: its operands (as [`FailArg::Value`]), then, for a
    /// guard, the entries of its resume data ([`GuardData::for_each_entry`]); `guards` is the
    /// guard table the op's [`Op::guard`] indexes (missing guard data reads nothing). The one
    /// walk over "the values an op reads" every part uses (liveness, dead-code removal, the
    /// interpreter's exits).
    #[inline]
    pub fn for_each_read(&self, guards: &[GuardData], mut f: impl FnMut(FailArg)) {
        for &a in &self.args {
            f(FailArg::Value(a));
        }
        if let Some(gd) = self.guard.and_then(|g| guards.get(g.index())) {
            gd.for_each_entry(f);
        }
    }
    /// Every value the op reads ([`Op::for_each_read`]'s [`FailArg::Value`] entries), in
    /// order.
    #[inline]
    pub fn for_each_value_read(&self, guards: &[GuardData], mut f: impl FnMut(Value)) {
        self.for_each_read(guards, |fa| {
            if let FailArg::Value(v) = fa {
                f(v)
            }
        });
    }
}

/// One fail argument of a guard: what the interpreter needs to resume.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FailArg {
    /// A value computed by the trace (or a constant).
    Value(Value),
    /// A virtual object the optimizer removed, described by the guard's `virtuals[i]`; the
    /// exit rebuilds it.
    Virtual(u32),
    /// No value (PyPy prints `None`): the interpreter does not need this slot.
    Hole,
}

/// Which allocation a virtual object stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum VirtualKind {
    /// A struct (`new`) or instance (`new_with_vtable`) of this size descriptor.
    Struct {
        /// `New` or `NewWithVtable`.
        opcode: Opcode,
        /// Its size descriptor.
        descr: DescrRef,
    },
    /// An array (`new_array`, `new_array_clear`) of this descriptor and constant length.
    Array {
        /// `NewArray` or `NewArrayClear`.
        opcode: Opcode,
        /// Its array descriptor.
        descr: DescrRef,
        /// Its length.
        len: u32,
    },
    /// A string (`newstr`, `newunicode`) of constant length; its items are its characters
    /// (bytes, or 4-byte code points for unicode), set by `strsetitem`/`unicodesetitem`.
    Str {
        /// `Newstr` or `Newunicode`.
        opcode: Opcode,
        /// Its length.
        len: u32,
    },
}

impl VirtualKind {
    /// The length of an array or string virtual (`None` for a struct).
    pub fn length(&self) -> Option<u32> {
        match *self {
            VirtualKind::Struct { .. } => None,
            VirtualKind::Array { len, .. } | VirtualKind::Str { len, .. } => Some(len),
        }
    }

    /// The opcode whose allocation this virtual stands for.
    pub fn opcode(&self) -> Opcode {
        match *self {
            VirtualKind::Struct { opcode, .. }
            | VirtualKind::Array { opcode, .. }
            | VirtualKind::Str { opcode, .. } => opcode,
        }
    }
}

/// Where a field of a virtual object lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VirtualField {
    /// A struct field, by its field descriptor.
    Field(DescrRef),
    /// An array item, by its index.
    Item(u32),
}

/// A removed allocation, as a guard's resume data describes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VirtualObject {
    /// What was allocated.
    pub kind: VirtualKind,
    /// The fields written so far (others hold their default: zero or null).
    pub fields: Vec<(VirtualField, FailArg)>,
}

/// Everything a guard carries besides its condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardData {
    /// Stable identity (survives optimization).
    pub id: GuardId,
    /// Opaque key chosen by the embedder (e.g. a bytecode position); PyPy traces keep their
    /// guard's address here.
    pub resume_key: u64,
    /// Values the interpreter needs when the guard fails.
    pub fail_args: Vec<FailArg>,
    /// Virtual objects named by `FailArg::Virtual(i)` (and nested in each other).
    pub virtuals: Vec<VirtualObject>,
    /// Writes the optimizer delayed past the guard (stores of virtual objects into objects
    /// that exist): when the guard fails they are performed after the virtual objects are
    /// rebuilt and before the interpreter resumes; a bridge performs them first.
    pub writes: Vec<ResumeWrite>,
}

/// A write into an existing object that a guard's exit performs (see [`GuardData::writes`]):
/// `setfield_gc(obj, value, descr)`, or `setarrayitem_gc(obj, index, value, descr)` with an
/// array descriptor.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResumeWrite {
    /// The object written (a reference computed by the trace or a constant).
    pub obj: Value,
    /// A field descriptor, or with `index` an array descriptor.
    pub descr: DescrRef,
    /// The array item written; `None` for a field.
    pub index: Option<u32>,
    /// The value written: a value, or a virtual object of the guard's resume data.
    pub value: FailArg,
}

impl GuardData {
    /// Every entry of the resume data, in order: the fail arguments, then the fields of each
    /// virtual object (values, holes and virtual references alike), then the object and
    /// the value of each write.
    #[inline]
    pub fn for_each_entry(&self, mut f: impl FnMut(FailArg)) {
        for &fa in &self.fail_args {
            f(fa);
        }
        for vo in &self.virtuals {
            for &(_, fa) in &vo.fields {
                f(fa);
            }
        }
        for w in &self.writes {
            f(FailArg::Value(w.obj));
            f(w.value);
        }
    }
    /// The number of entries [`GuardData::for_each_entry`] gives.
    #[inline]
    pub fn entry_count(&self) -> usize {
        self.fail_args.len() + self.virtuals.iter().map(|v| v.fields.len()).sum::<usize>() + 2 * self.writes.len()
    }
    /// Every value the resume data names ([`GuardData::for_each_entry`]'s
    /// [`FailArg::Value`] entries), in order: what an exit reads.
    #[inline]
    pub fn for_each_value(&self, mut f: impl FnMut(Value)) {
        self.for_each_entry(|fa| {
            if let FailArg::Value(v) = fa {
                f(v)
            }
        });
    }
}

/// What a trace is, as far as its source tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceInfo {
    /// A name for messages (e.g. `fannkuch.pypylog:953 Loop 8`).
    pub name: String,
    /// The log section it came from (`jit-log-noopt`, `jit-log-opt-loop`, ...), if any.
    pub section: Option<String>,
    /// The header comment line, if any (`# Loop 8 (...) : loop with 90 ops`).
    pub header: Option<String>,
}

/// How accesses to one object through different descriptors relate: the trace's (or the
/// embedder's) choice of memory model, which every part obeys (`docs/memory-model.md`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Aliasing {
    /// Descriptors are views of byte-addressed memory: two accesses to one object alias when
    /// their bytes overlap, whatever their descriptors (an emulator's byte and word views of
    /// one buffer). The default: nothing is assumed that the bytes do not say.
    #[default]
    Bytes,
    /// PyPy's type-based rule: accesses through different descriptors never alias. Once a
    /// byte of an object is written through a descriptor, accessing it through another one is
    /// an invalid operation (a broken promise). Text form `aliasing type-based`; the PyPy-log
    /// reader gives it to every trace it reads.
    TypeBased,
}

impl Aliasing {
    /// The name in the text format (`bytes`, `type-based`).
    pub fn name(self) -> &'static str {
        match self {
            Aliasing::Bytes => "bytes",
            Aliasing::TypeBased => "type-based",
        }
    }
    /// The model named `name` in the text format.
    pub fn from_name(name: &str) -> Option<Aliasing> {
        match name {
            "bytes" => Some(Aliasing::Bytes),
            "type-based" => Some(Aliasing::TypeBased),
            _ => None,
        }
    }
}

/// A trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// All ops: the first `num_inputs` are the inputs.
    pub ops: Vec<Op>,
    /// Number of trace inputs (the first ops).
    pub num_inputs: usize,
    /// Constants.
    pub consts: ConstPool,
    /// Descriptors.
    pub descrs: Vec<Descr>,
    /// Guard resume data, referenced by `Op::guard`.
    pub guards: Vec<GuardData>,
    /// Source information.
    pub info: TraceInfo,
    /// How accesses through different descriptors alias (see [`Aliasing`]).
    pub aliasing: Aliasing,
}

impl Trace {
    /// The op `r`.
    #[inline]
    pub fn op(&self, r: OpRef) -> &Op {
        &self.ops[r.index()]
    }
    /// All op references in order.
    pub fn op_refs(&self) -> impl Iterator<Item = OpRef> + '_ {
        (0..self.ops.len()).map(OpRef::new)
    }
    /// The trace inputs.
    pub fn inputs(&self) -> impl Iterator<Item = OpRef> + '_ {
        (0..self.num_inputs).map(OpRef::new)
    }
    /// The kinds of the trace inputs.
    pub fn input_kinds(&self) -> Vec<Kind> {
        self.inputs().map(|r| self.op(r).opcode.result_kind()).collect()
    }
    /// The descriptor `d`.
    #[inline]
    pub fn descr(&self, d: DescrRef) -> &Descr {
        &self.descrs[d.index()]
    }
    /// The guard data `g`.
    #[inline]
    pub fn guard(&self, g: GuardRef) -> &GuardData {
        &self.guards[g.index()]
    }
    /// The guard data of op `r`, if it is a guard.
    pub fn guard_of(&self, r: OpRef) -> Option<&GuardData> {
        self.op(r).guard.map(|g| self.guard(g))
    }
    /// The kind of a value.
    pub fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            ValueData::Op(o) => self.op(o).opcode.result_kind(),
            ValueData::Const(c) => self.consts.get(c).kind(),
        }
    }
    /// The constant behind `v`, if it is one.
    pub fn const_of(&self, v: Value) -> Option<Const> {
        v.as_const().map(|c| self.consts.get(c))
    }
    /// The integer constant behind `v`, if it is one.
    pub fn const_int(&self, v: Value) -> Option<i64> {
        match self.const_of(v) {
            Some(Const::Int(i)) => Some(i),
            _ => None,
        }
    }
    /// Intern a constant and return it as a value.
    pub fn make_const(&mut self, c: Const) -> Value {
        Value::constant(self.consts.intern(c))
    }
    /// Intern an integer constant.
    pub fn make_const_int(&mut self, v: i64) -> Value {
        self.make_const(Const::Int(v))
    }
    /// Add a descriptor, reusing an equal one already in the table.
    pub fn make_descr(&mut self, d: Descr) -> DescrRef {
        if let Some(i) = self.descrs.iter().position(|x| *x == d) {
            return DescrRef::new(i);
        }
        self.descrs.push(d);
        DescrRef::new(self.descrs.len() - 1)
    }
    /// The parameters of the label at `label`: the input ops right after it.
    pub fn label_params(&self, label: OpRef) -> impl Iterator<Item = OpRef> {
        let n = self.op(label).args.len();
        (label.index() + 1..label.index() + 1 + n).map(OpRef::new)
    }
    /// The last `label` of the trace, if any (the loop header a plain `jump` goes to).
    pub fn last_label(&self) -> Option<OpRef> {
        self.ops
            .iter()
            .rposition(|op| op.opcode == Opcode::Label)
            .map(OpRef::new)
    }
    /// Number of ops, not counting inputs and label parameters.
    pub fn num_real_ops(&self) -> usize {
        self.ops.iter().filter(|op| !op.opcode.is_input()).count()
    }
    /// The highest guard id in the trace, if any (for allocating fresh ids).
    pub fn max_guard_id(&self) -> Option<GuardId> {
        self.guards.iter().map(|g| g.id).max()
    }
}
