//! Descriptors: what a heap access, allocation or call operates on (field offsets and sizes,
//! object sizes and classes, array layouts, call signatures and effects).
//!
//! The text forms are PyPy's (`<FieldS name 8>`, `<SizeDescr 16>`, `<ArrayP 8>`,
//! `<Calli 8 ii EF=0>`), extended with optional `key=value` words for layout facts PyPy does
//! not print (see the `text` module).

use crate::opcode::Kind;
use std::sync::Arc;

/// A field of a struct: `<FieldS name offset [pure]>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldDescr {
    /// Qualified field name (`pypy.objspace.std.intobject.W_IntObject.inst_intval`); shared,
    /// so that copying a trace copies no name.
    pub name: Arc<str>,
    /// Byte offset from the object start.
    pub offset: i64,
    /// Size in bytes (1, 2, 4 or 8). PyPy does not print it: 8 unless given as `size=N`.
    pub size: u8,
    /// Whether a narrow integer field is sign-extended (`FieldS`) or zero-extended (`FieldU`).
    pub signed: bool,
    /// Kind of the field's value (`FieldS`/`FieldU`: Int, `FieldP`: Ref, `FieldF`: Float).
    pub kind: Kind,
    /// The field never changes after the object is initialised (`pure`).
    pub immutable: bool,
}

/// The size (and class, for instances) of a struct: `<SizeDescr 16>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SizeDescr {
    /// Object size in bytes.
    pub size: i64,
    /// The class (vtable address) that `new_with_vtable` stores at offset 0, if known
    /// (`vtable=N` in the text form).
    pub vtable: Option<i64>,
}

/// The layout of an array: `<ArrayS 8>` (item kind and size; base and length offsets).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayDescr {
    /// Item size in bytes.
    pub item_size: u8,
    /// Whether narrow integer items are sign-extended (`ArrayS`) or zero-extended (`ArrayU`).
    pub signed: bool,
    /// Item kind (`ArrayS`/`ArrayU`: Int, `ArrayP`: Ref, `ArrayF`: Float).
    pub kind: Kind,
    /// Offset of item 0 from the array start (`base=N`; default 16).
    pub base_offset: i64,
    /// Offset of the length word from the array start (`len=N`; default 8).
    pub len_offset: i64,
}

impl ArrayDescr {
    /// The bytes an array of `len` items takes (header included): its items end at
    /// `base_offset + len * item_size`, and the length word at `len_offset` is inside too.
    /// `None` when that does not fit 64 bits.
    pub fn alloc_size(&self, len: u64) -> Option<u64> {
        let items = len.checked_mul(self.item_size as u64)?;
        let end = (self.base_offset.max(0) as u64).checked_add(items)?;
        Some(end.max(self.len_offset.max(0) as u64 + 8))
    }
}

/// The largest allocation, in bytes (header included), that a trace may ask for: a larger
/// `new`, `new_array*`, `newstr` or `newunicode` is an invalid operation in the interpreter,
/// and the backend's runtime refuses it the same way.
pub const MAX_ALLOC_BYTES: u64 = 1 << 24;
/// Offset of a string's length word (`newstr`, `newunicode`).
pub const STR_LEN_OFFSET: i64 = 8;
/// Offset of a string's first character.
pub const STR_CHARS_OFFSET: i64 = 16;

/// The width in bytes of the characters a string op works on: 1 for byte strings
/// (`newstr`, `strlen`, `strgetitem`, `strsetitem`, `strhash`, `copystrcontent`), 4 for
/// unicode strings (the `unicode` twins); `None` for any other op.
pub fn string_char_size(opcode: crate::opcode::Opcode) -> Option<u8> {
    use crate::opcode::Opcode::*;
    match opcode {
        Newstr | Strlen | Strgetitem | Strsetitem | Strhash | Copystrcontent => Some(1),
        Newunicode | Unicodelen | Unicodegetitem | Unicodesetitem | Unicodehash | Copyunicodecontent => Some(4),
        _ => None,
    }
}

/// Default [`ArrayDescr::base_offset`].
pub const DEFAULT_ARRAY_BASE: i64 = 16;
/// Default [`ArrayDescr::len_offset`].
pub const DEFAULT_ARRAY_LEN: i64 = 8;

/// A field of a struct inside an array of structs:
/// `<InteriorFieldDescr <FieldP odictentry.key 0>>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InteriorDescr {
    /// Size of one array item (a struct), in bytes (`item=N`; default 16).
    pub item_size: i64,
    /// The field inside each item.
    pub field: FieldDescr,
}

/// What a called function may do, from PyPy's `EF=n` (effect info) numbers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallEffect {
    /// `EF=0`: elidable, cannot raise.
    ElidableCannotRaise,
    /// `EF=1`: loop-invariant (its result can be reused for the whole loop).
    LoopInvariant,
    /// `EF=2`: cannot raise, but may write the heap.
    CannotRaise,
    /// `EF=3`: elidable, may raise MemoryError.
    ElidableOrMemoryError,
    /// `EF=4`: elidable, may raise.
    ElidableCanRaise,
    /// `EF=5`: may raise and write the heap.
    CanRaise,
    /// `EF=6`: may force virtualizables.
    ForcesVirtualOrVirtualizable,
    /// `EF=7`: anything may happen.
    RandomEffects,
}

impl CallEffect {
    /// PyPy's `EF=` number.
    pub fn number(self) -> u8 {
        self as u8
    }
    /// The effect with PyPy's `EF=` number `n`.
    pub fn from_number(n: u8) -> Option<CallEffect> {
        use CallEffect::*;
        Some(match n {
            0 => ElidableCannotRaise,
            1 => LoopInvariant,
            2 => CannotRaise,
            3 => ElidableOrMemoryError,
            4 => ElidableCanRaise,
            5 => CanRaise,
            6 => ForcesVirtualOrVirtualizable,
            7 => RandomEffects,
            _ => return None,
        })
    }
    /// Whether the function may write the heap (and so invalidates heap knowledge).
    pub fn may_write_heap(self) -> bool {
        matches!(
            self,
            CallEffect::CannotRaise
                | CallEffect::CanRaise
                | CallEffect::ForcesVirtualOrVirtualizable
                | CallEffect::RandomEffects
        )
    }
    /// Whether the result depends only on the arguments (and the call may be CSE'd).
    pub fn is_elidable(self) -> bool {
        matches!(
            self,
            CallEffect::ElidableCannotRaise | CallEffect::ElidableOrMemoryError | CallEffect::ElidableCanRaise
        )
    }
    /// Whether a call by `opcode` with this effect changes nothing (and so keeps no reference
    /// to what it reaches and reads no mutable memory): `call_pure_*` and
    /// `call_loopinvariant_*` whatever their effect, `call_*` with an elidable one
    /// (docs/memory-model.md, "Calls and escape").
    pub fn changes_nothing(self, opcode: crate::opcode::Opcode) -> bool {
        use crate::opcode::Opcode::*;
        match opcode {
            CallPureI | CallPureR | CallPureF | CallPureN | CallLoopinvariantI | CallLoopinvariantR
            | CallLoopinvariantF | CallLoopinvariantN => true,
            CallI | CallR | CallF | CallN => self.is_elidable(),
            _ => false,
        }
    }
    /// Whether the function may raise.
    pub fn can_raise(self) -> bool {
        !matches!(
            self,
            CallEffect::ElidableCannotRaise | CallEffect::CannotRaise | CallEffect::LoopInvariant
        )
    }
}

/// The signature and effect of a called function: `<Calli 8 ii EF=0 OS=12>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallDescr {
    /// Result kind (`Calli`: Int, `Callr`: Ref, `Callf`: Float, `Callv`: Void).
    pub result: Kind,
    /// Result size in bytes as PyPy prints it (8, or 0 for void, 1 for bool-returning).
    pub result_size: u8,
    /// Kinds of the arguments (after the function pointer), `ii` → `[Int, Int]`.
    pub args: Vec<Kind>,
    /// What the function may do.
    pub effect: CallEffect,
    /// PyPy's oopspec index (`OS=n`), if printed.
    pub oopspec: Option<u32>,
}

/// A descriptor of the trace's descriptor table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Descr {
    /// A struct field.
    Field(FieldDescr),
    /// A struct size and class.
    Size(SizeDescr),
    /// An array layout.
    Array(ArrayDescr),
    /// A field of an array-of-structs item.
    Interior(InteriorDescr),
    /// A call signature.
    Call(CallDescr),
    /// A loop header token: `TargetToken(n)` on `label` and `jump`.
    Target(u64),
    /// A compiled loop: `<LoopN>` (`<Loop-1>` in noopt logs means "this trace's own start").
    Loop(i64),
    /// Any other descriptor, kept verbatim for printing (`<QuasiImmutDescr object at 0x..>`,
    /// `<DoneWithThisFrameDescrRef object at 0x..>`). Its text excludes the outer `<` `>`.
    Other(String),
}

impl Descr {
    /// The field descriptor, if this is one.
    pub fn as_field(&self) -> Option<&FieldDescr> {
        match self {
            Descr::Field(f) => Some(f),
            Descr::Interior(i) => Some(&i.field),
            _ => None,
        }
    }
    /// The kind of the values a field, array or interior descriptor holds (what its loads
    /// return and its stores take); `None` for other descriptors.
    pub fn value_kind(&self) -> Option<Kind> {
        match self {
            Descr::Field(f) => Some(f.kind),
            Descr::Interior(i) => Some(i.field.kind),
            Descr::Array(a) => Some(a.kind),
            _ => None,
        }
    }
    /// The array descriptor, if this is one.
    pub fn as_array(&self) -> Option<&ArrayDescr> {
        match self {
            Descr::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The size descriptor, if this is one.
    pub fn as_size(&self) -> Option<&SizeDescr> {
        match self {
            Descr::Size(s) => Some(s),
            _ => None,
        }
    }
    /// The call descriptor, if this is one.
    pub fn as_call(&self) -> Option<&CallDescr> {
        match self {
            Descr::Call(c) => Some(c),
            _ => None,
        }
    }
}
