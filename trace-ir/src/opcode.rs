//! The one opcode table: every operation of the trace IR, its text name, operand and result
//! kinds, descriptor requirement and flags. Everything else about opcodes is generated here.
//!
//! Names follow PyPy's spelling, so PyPy JIT logs import directly. Operand signatures are
//! written as strings, one character per operand:
//!
//! | char | meaning |
//! |---|---|
//! | `i` | integer operand |
//! | `r` | reference (pointer) operand |
//! | `f` | float operand |
//! | `a` | any kind (e.g. `guard_value(x, c)`, `keepalive(x)`) |
//! | `*` | (last position only) any number of further operands of any kind |
//!
//! The result is one of `i`, `r`, `f` or `v` (no result).

use bitflags::bitflags;
use std::fmt;
use std::str::FromStr;

/// The kind of a value: what a register holding it must be able to hold.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A 64-bit integer (also booleans, as 0 or 1).
    Int,
    /// A pointer to a heap object (or null).
    Ref,
    /// A 64-bit IEEE float.
    Float,
    /// No value (the result kind of ops that produce nothing).
    Void,
}

impl Kind {
    /// The one-letter prefix PyPy uses for variables of this kind (`i`, `p`, `f`).
    pub fn prefix(self) -> char {
        match self {
            Kind::Int => 'i',
            Kind::Ref => 'p',
            Kind::Float => 'f',
            Kind::Void => 'v',
        }
    }

    /// The kind named by a variable prefix (`i`, `p`, `f`), if any.
    pub fn from_prefix(c: char) -> Option<Kind> {
        match c {
            'i' => Some(Kind::Int),
            'p' | 'r' => Some(Kind::Ref),
            'f' => Some(Kind::Float),
            _ => None,
        }
    }

    const fn from_sig(c: u8) -> Kind {
        match c {
            b'i' => Kind::Int,
            b'r' => Kind::Ref,
            b'f' => Kind::Float,
            _ => Kind::Void,
        }
    }
}

bitflags! {
    /// What the optimizer, interpreter and backend may assume about an opcode.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub struct OpFlags: u32 {
        /// No side effect, result depends only on the operands: may be folded, CSE'd, removed if unused.
        const PURE = 1 << 0;
        /// The two operands may be swapped.
        const COMMUTATIVE = 1 << 1;
        /// A guard: checks a condition and exits the trace when it does not hold.
        const GUARD = 1 << 2;
        /// An overflow-checking arithmetic op; must be followed by `guard_no_overflow`/`guard_overflow`.
        const OVF = 1 << 3;
        /// The result is 0 or 1.
        const BOOL_RESULT = 1 << 4;
        /// Allocates a new heap object.
        const ALLOC = 1 << 5;
        /// Reads the heap.
        const READS_HEAP = 1 << 6;
        /// Writes the heap.
        const WRITES_HEAP = 1 << 7;
        /// A call to a function (its call descriptor tells its effect).
        const CALL = 1 << 8;
        /// Ends the trace (`jump`, `finish`).
        const FINAL = 1 << 9;
        /// A hint: executing it does nothing observable; it may be dropped.
        const HINT = 1 << 10;
        /// Unknown effects: no knowledge about the heap survives it.
        const BARRIER = 1 << 11;
        /// The result is undefined for some operands (shift amount out of range, division by zero):
        /// the interpreter reports an invalid operation there.
        const PARTIAL = 1 << 12;
        /// A trace input or label parameter (defined by the trace, not computed).
        const INPUT = 1 << 13;
        /// Accesses raw (non-GC) memory.
        const RAW = 1 << 14;
        /// May raise an exception (sets the modelled exception state).
        const CAN_RAISE = 1 << 15;
        /// The loop header (`label`).
        const LABEL = 1 << 16;
        /// Never printed or parsed by its name (inputs and label parameters).
        const INTERNAL = 1 << 17;
        /// A read of GC memory whose only effect is its result: dropped when unused (a read
        /// of null or out of bounds is invalid in the original, so dropping it changes nothing
        /// defined).
        const LOAD = 1 << 18;
    }
}

/// What kind of descriptor an opcode takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DescrKind {
    /// No descriptor.
    None,
    /// A field descriptor (`<FieldS name 8>`).
    Field,
    /// A size descriptor (`<SizeDescr 16>`).
    Size,
    /// An array descriptor (`<ArrayS 8>`).
    Array,
    /// An interior-field descriptor (`<InteriorFieldDescr <FieldP name 0>>`).
    Interior,
    /// A call descriptor (`<Calli 8 ii EF=0>`).
    Call,
    /// Optional and of any kind (`label`, `jump`, `finish`, `quasiimmut_field`, `call_assembler`).
    Any,
}

/// Static facts about one opcode, as written in the table.
#[derive(Copy, Clone, Debug)]
pub struct OpInfo {
    /// PyPy's name of the op (`int_add`).
    pub name: &'static str,
    /// Operand signature (see the module documentation).
    pub args: &'static str,
    /// Result kind.
    pub result: Kind,
    /// Which descriptor the op takes.
    pub descr: DescrKind,
    /// Flags.
    pub flags: OpFlags,
    /// One line of documentation.
    pub doc: &'static str,
}

macro_rules! define_opcodes {
    ($( $variant:ident = $name:literal, $args:literal -> $res:literal, $descr:ident, [$($flag:ident)|*], $doc:literal; )*) => {
        /// Every operation of the trace IR (generated from the one opcode table).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum Opcode {
            $( #[doc = $doc] $variant, )*
        }

        /// The opcode table, indexed by `Opcode as usize`.
        pub static OPCODE_TABLE: &[OpInfo] = TABLE;
        const TABLE: &[OpInfo] = &[
            $( OpInfo {
                name: $name,
                args: $args,
                result: Kind::from_sig($res.as_bytes()[0]),
                descr: DescrKind::$descr,
                flags: OpFlags::from_bits_truncate(0 $(| OpFlags::$flag.bits())*),
                doc: $doc,
            }, )*
        ];

        impl Opcode {

            /// All opcodes, in table order.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$variant, )* ];
        }
    };
}

// The table. Keep one line per op; the doc string is the op's one-line semantics.
define_opcodes! {
    // --- trace structure -------------------------------------------------------------
    InputI = "input_i", "" -> "i", None, [INPUT | INTERNAL], "An integer trace input or label parameter.";
    InputR = "input_r", "" -> "r", None, [INPUT | INTERNAL], "A reference trace input or label parameter.";
    InputF = "input_f", "" -> "f", None, [INPUT | INTERNAL], "A float trace input or label parameter.";
    Label = "label", "*" -> "v", Any, [LABEL], "Loop header: its operands flow into the parameters that follow it.";
    Jump = "jump", "*" -> "v", Any, [FINAL], "Back edge: jump to the label (or trace start) with new parameter values.";
    Finish = "finish", "*" -> "v", Any, [FINAL], "Leave the trace, returning the operands.";

    // --- integer arithmetic ----------------------------------------------------------
    IntAdd = "int_add", "ii" -> "i", None, [PURE | COMMUTATIVE], "Wrapping addition.";
    IntSub = "int_sub", "ii" -> "i", None, [PURE], "Wrapping subtraction.";
    IntMul = "int_mul", "ii" -> "i", None, [PURE | COMMUTATIVE], "Wrapping multiplication.";
    IntFloorDiv = "int_floordiv", "ii" -> "i", None, [PURE | PARTIAL], "Division truncating toward zero (C semantics); invalid when the divisor is 0.";
    IntMod = "int_mod", "ii" -> "i", None, [PURE | PARTIAL], "Remainder with the sign of the dividend (C semantics); invalid when the divisor is 0.";
    IntPyDiv = "int_pydiv", "ii" -> "i", None, [PURE | PARTIAL], "Python floor division; invalid when the divisor is 0.";
    IntPyMod = "int_pymod", "ii" -> "i", None, [PURE | PARTIAL], "Python modulo (sign of the divisor); invalid when the divisor is 0.";
    IntAnd = "int_and", "ii" -> "i", None, [PURE | COMMUTATIVE], "Bitwise and.";
    IntOr = "int_or", "ii" -> "i", None, [PURE | COMMUTATIVE], "Bitwise or.";
    IntXor = "int_xor", "ii" -> "i", None, [PURE | COMMUTATIVE], "Bitwise exclusive or.";
    IntLshift = "int_lshift", "ii" -> "i", None, [PURE | PARTIAL], "Shift left; invalid unless 0 <= amount < 64.";
    IntRshift = "int_rshift", "ii" -> "i", None, [PURE | PARTIAL], "Arithmetic shift right; invalid unless 0 <= amount < 64.";
    UintRshift = "uint_rshift", "ii" -> "i", None, [PURE | PARTIAL], "Logical shift right; invalid unless 0 <= amount < 64.";
    UintMulHigh = "uint_mul_high", "ii" -> "i", None, [PURE | COMMUTATIVE], "High 64 bits of the unsigned 128-bit product.";
    IntLt = "int_lt", "ii" -> "i", None, [PURE | BOOL_RESULT], "Signed a < b.";
    IntLe = "int_le", "ii" -> "i", None, [PURE | BOOL_RESULT], "Signed a <= b.";
    IntEq = "int_eq", "ii" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "a == b.";
    IntNe = "int_ne", "ii" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "a != b.";
    IntGt = "int_gt", "ii" -> "i", None, [PURE | BOOL_RESULT], "Signed a > b.";
    IntGe = "int_ge", "ii" -> "i", None, [PURE | BOOL_RESULT], "Signed a >= b.";
    UintLt = "uint_lt", "ii" -> "i", None, [PURE | BOOL_RESULT], "Unsigned a < b.";
    UintLe = "uint_le", "ii" -> "i", None, [PURE | BOOL_RESULT], "Unsigned a <= b.";
    UintGt = "uint_gt", "ii" -> "i", None, [PURE | BOOL_RESULT], "Unsigned a > b.";
    UintGe = "uint_ge", "ii" -> "i", None, [PURE | BOOL_RESULT], "Unsigned a >= b.";
    IntIsTrue = "int_is_true", "i" -> "i", None, [PURE | BOOL_RESULT], "x != 0.";
    IntIsZero = "int_is_zero", "i" -> "i", None, [PURE | BOOL_RESULT], "x == 0.";
    IntNeg = "int_neg", "i" -> "i", None, [PURE], "Wrapping negation.";
    IntInvert = "int_invert", "i" -> "i", None, [PURE], "Bitwise not.";
    IntSignext = "int_signext", "ii" -> "i", None, [PURE | PARTIAL], "Sign-extend the low n bytes of x (n in 1, 2, 4, 8).";
    IntForceGeZero = "int_force_ge_zero", "i" -> "i", None, [PURE], "max(x, 0).";
    IntSelect = "int_select", "iii" -> "i", None, [PURE], "c != 0 ? a : b (not in PyPy: a merged bridge's values).";
    IntAddOvf = "int_add_ovf", "ii" -> "i", None, [OVF | COMMUTATIVE], "Addition that records signed overflow for the next guard.";
    IntSubOvf = "int_sub_ovf", "ii" -> "i", None, [OVF], "Subtraction that records signed overflow for the next guard.";
    IntMulOvf = "int_mul_ovf", "ii" -> "i", None, [OVF | COMMUTATIVE], "Multiplication that records signed overflow for the next guard.";
    SameAsI = "same_as_i", "i" -> "i", None, [PURE], "Copy of an integer.";
    SameAsR = "same_as_r", "r" -> "r", None, [PURE], "Copy of a reference.";
    SameAsF = "same_as_f", "f" -> "f", None, [PURE], "Copy of a float.";

    // --- pointers --------------------------------------------------------------------
    PtrEq = "ptr_eq", "rr" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "Pointer identity.";
    PtrNe = "ptr_ne", "rr" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "Pointer non-identity.";
    InstancePtrEq = "instance_ptr_eq", "rr" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "Instance identity.";
    InstancePtrNe = "instance_ptr_ne", "rr" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "Instance non-identity.";
    CastPtrToInt = "cast_ptr_to_int", "r" -> "i", None, [PURE], "The address of an object.";
    CastIntToPtr = "cast_int_to_ptr", "i" -> "r", None, [PURE], "A pointer from an address.";

    // --- floats ----------------------------------------------------------------------
    FloatAdd = "float_add", "ff" -> "f", None, [PURE], "IEEE addition (not commutative in its bits: a NaN result carries the first NaN operand's payload).";
    FloatSub = "float_sub", "ff" -> "f", None, [PURE], "IEEE subtraction.";
    FloatMul = "float_mul", "ff" -> "f", None, [PURE], "IEEE multiplication (not commutative in its bits: a NaN result carries the first NaN operand's payload).";
    FloatTrueDiv = "float_truediv", "ff" -> "f", None, [PURE], "IEEE division.";
    FloatNeg = "float_neg", "f" -> "f", None, [PURE], "Sign flip.";
    FloatAbs = "float_abs", "f" -> "f", None, [PURE], "Absolute value.";
    FloatSqrt = "float_sqrt", "f" -> "f", None, [PURE], "IEEE square root, as x86-64 `sqrtsd`; what a call with oopspec `OS_MATH_SQRT` becomes (not a PyPy resop).";
    FloatLt = "float_lt", "ff" -> "i", None, [PURE | BOOL_RESULT], "a < b (false if unordered).";
    FloatLe = "float_le", "ff" -> "i", None, [PURE | BOOL_RESULT], "a <= b (false if unordered).";
    FloatEq = "float_eq", "ff" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "a == b (false if unordered).";
    FloatNe = "float_ne", "ff" -> "i", None, [PURE | BOOL_RESULT | COMMUTATIVE], "a != b (true if unordered).";
    FloatGt = "float_gt", "ff" -> "i", None, [PURE | BOOL_RESULT], "a > b (false if unordered).";
    FloatGe = "float_ge", "ff" -> "i", None, [PURE | BOOL_RESULT], "a >= b (false if unordered).";
    CastIntToFloat = "cast_int_to_float", "i" -> "f", None, [PURE], "Signed integer to float.";
    CastFloatToInt = "cast_float_to_int", "f" -> "i", None, [PURE], "Float to integer, truncating (saturating; NaN gives 0).";
    ConvertFloatBytesToLonglong = "convert_float_bytes_to_longlong", "f" -> "i", None, [PURE], "The bits of a float.";
    ConvertLonglongBytesToFloat = "convert_longlong_bytes_to_float", "i" -> "f", None, [PURE], "The float with these bits.";

    // --- guards ----------------------------------------------------------------------
    GuardTrue = "guard_true", "i" -> "v", Any, [GUARD], "Exit unless x != 0.";
    GuardFalse = "guard_false", "i" -> "v", Any, [GUARD], "Exit unless x == 0.";
    GuardValue = "guard_value", "aa" -> "v", Any, [GUARD], "Exit unless x equals the constant.";
    GuardNoOverflow = "guard_no_overflow", "" -> "v", Any, [GUARD], "Exit if the preceding _ovf op overflowed.";
    GuardOverflow = "guard_overflow", "" -> "v", Any, [GUARD], "Exit unless the preceding _ovf op overflowed.";
    GuardNonnull = "guard_nonnull", "r" -> "v", Any, [GUARD], "Exit if the pointer is null.";
    GuardIsnull = "guard_isnull", "r" -> "v", Any, [GUARD], "Exit unless the pointer is null.";
    GuardClass = "guard_class", "ri" -> "v", Any, [GUARD | READS_HEAP], "Exit unless the object's class is the constant.";
    GuardNonnullClass = "guard_nonnull_class", "ri" -> "v", Any, [GUARD | READS_HEAP], "Exit if null or the class differs.";
    GuardGcType = "guard_gc_type", "ri" -> "v", Any, [GUARD | READS_HEAP], "Exit unless the object's GC type id is the constant.";
    GuardIsObject = "guard_is_object", "r" -> "v", Any, [GUARD | READS_HEAP], "Exit unless the object is an instance (has a vtable).";
    GuardSubclass = "guard_subclass", "ri" -> "v", Any, [GUARD | READS_HEAP], "Exit unless the object's class is a subclass of the constant.";
    GuardNoException = "guard_no_exception", "" -> "v", Any, [GUARD], "Exit if an exception is pending.";
    GuardException = "guard_exception", "i" -> "r", Any, [GUARD], "Exit unless the pending exception has this class; returns and clears it.";
    GuardNotInvalidated = "guard_not_invalidated", "" -> "v", Any, [GUARD], "Exit if the trace was invalidated.";
    GuardNotForced = "guard_not_forced", "" -> "v", Any, [GUARD], "Exit if the preceding call forced the frame.";
    GuardNotForced2 = "guard_not_forced_2", "" -> "v", Any, [GUARD], "Exit if the frame was forced (before finish).";
    GuardFutureCondition = "guard_future_condition", "" -> "v", Any, [GUARD], "Placeholder guard for later conditions; never fails.";

    // --- allocation ------------------------------------------------------------------
    New = "new", "" -> "r", Size, [ALLOC], "Allocate a struct of the descriptor's size.";
    NewWithVtable = "new_with_vtable", "" -> "r", Size, [ALLOC], "Allocate an instance and set its class.";
    NewArray = "new_array", "i" -> "r", Array, [ALLOC], "Allocate an array of n items.";
    NewArrayClear = "new_array_clear", "i" -> "r", Array, [ALLOC], "Allocate an array of n zeroed items.";
    Newstr = "newstr", "i" -> "r", None, [ALLOC], "Allocate a byte string of length n.";
    Newunicode = "newunicode", "i" -> "r", None, [ALLOC], "Allocate a unicode string of length n.";

    // --- heap access -----------------------------------------------------------------
    GetfieldGcI = "getfield_gc_i", "r" -> "i", Field, [READS_HEAP | LOAD], "Load an integer field.";
    GetfieldGcR = "getfield_gc_r", "r" -> "r", Field, [READS_HEAP | LOAD], "Load a reference field.";
    GetfieldGcF = "getfield_gc_f", "r" -> "f", Field, [READS_HEAP | LOAD], "Load a float field.";
    SetfieldGc = "setfield_gc", "ra" -> "v", Field, [WRITES_HEAP], "Store a field.";
    GetfieldRawI = "getfield_raw_i", "i" -> "i", Field, [READS_HEAP | RAW], "Load an integer field from raw memory.";
    GetfieldRawR = "getfield_raw_r", "i" -> "r", Field, [READS_HEAP | RAW], "Load a reference field from raw memory.";
    GetfieldRawF = "getfield_raw_f", "i" -> "f", Field, [READS_HEAP | RAW], "Load a float field from raw memory.";
    SetfieldRaw = "setfield_raw", "ia" -> "v", Field, [WRITES_HEAP | RAW], "Store a field in raw memory.";
    GetarrayitemGcI = "getarrayitem_gc_i", "ri" -> "i", Array, [READS_HEAP | LOAD], "Load an integer array item.";
    GetarrayitemGcR = "getarrayitem_gc_r", "ri" -> "r", Array, [READS_HEAP | LOAD], "Load a reference array item.";
    GetarrayitemGcF = "getarrayitem_gc_f", "ri" -> "f", Array, [READS_HEAP | LOAD], "Load a float array item.";
    GetarrayitemGcPureI = "getarrayitem_gc_pure_i", "ri" -> "i", Array, [READS_HEAP | LOAD], "Load an integer item of an immutable array.";
    GetarrayitemGcPureR = "getarrayitem_gc_pure_r", "ri" -> "r", Array, [READS_HEAP | LOAD], "Load a reference item of an immutable array.";
    GetarrayitemGcPureF = "getarrayitem_gc_pure_f", "ri" -> "f", Array, [READS_HEAP | LOAD], "Load a float item of an immutable array.";
    SetarrayitemGc = "setarrayitem_gc", "ria" -> "v", Array, [WRITES_HEAP], "Store an array item.";
    GetarrayitemRawI = "getarrayitem_raw_i", "ii" -> "i", Array, [READS_HEAP | RAW], "Load an integer item from a raw array.";
    GetarrayitemRawF = "getarrayitem_raw_f", "ii" -> "f", Array, [READS_HEAP | RAW], "Load a float item from a raw array.";
    SetarrayitemRaw = "setarrayitem_raw", "iia" -> "v", Array, [WRITES_HEAP | RAW], "Store an item into a raw array.";
    RawLoadI = "raw_load_i", "ii" -> "i", Array, [READS_HEAP | RAW], "Load an integer at address + offset.";
    RawLoadF = "raw_load_f", "ii" -> "f", Array, [READS_HEAP | RAW], "Load a float at address + offset.";
    RawStore = "raw_store", "iia" -> "v", Array, [WRITES_HEAP | RAW], "Store at address + offset.";
    GetinteriorfieldGcI = "getinteriorfield_gc_i", "ri" -> "i", Interior, [READS_HEAP | LOAD], "Load an integer field of an array-of-structs item.";
    GetinteriorfieldGcR = "getinteriorfield_gc_r", "ri" -> "r", Interior, [READS_HEAP | LOAD], "Load a reference field of an array-of-structs item.";
    GetinteriorfieldGcF = "getinteriorfield_gc_f", "ri" -> "f", Interior, [READS_HEAP | LOAD], "Load a float field of an array-of-structs item.";
    SetinteriorfieldGc = "setinteriorfield_gc", "ria" -> "v", Interior, [WRITES_HEAP], "Store a field of an array-of-structs item.";
    SetinteriorfieldRaw = "setinteriorfield_raw", "iia" -> "v", Interior, [WRITES_HEAP | RAW], "Store a field of an item of a raw array of structs (address + index * item size + field offset).";
    GcLoadI = "gc_load_i", "rii" -> "i", None, [READS_HEAP | LOAD], "Load |size| bytes at a byte offset of an object (operands: object, offset, size), sign-extended when size < 0.";
    GcLoadR = "gc_load_r", "rii" -> "r", None, [READS_HEAP | LOAD], "Load a reference at a byte offset of an object (object, offset, size 8).";
    GcLoadF = "gc_load_f", "rii" -> "f", None, [READS_HEAP | LOAD], "Load a float at a byte offset of an object (object, offset, size 8).";
    GcLoadIndexedI = "gc_load_indexed_i", "riiii" -> "i", None, [READS_HEAP | LOAD], "Load |size| bytes at byte offset index * scale + base of an object (object, index, scale, base, size), sign-extended when size < 0.";
    GcLoadIndexedR = "gc_load_indexed_r", "riiii" -> "r", None, [READS_HEAP | LOAD], "Load a reference at byte offset index * scale + base of an object (object, index, scale, base, size 8).";
    GcLoadIndexedF = "gc_load_indexed_f", "riiii" -> "f", None, [READS_HEAP | LOAD], "Load a float at byte offset index * scale + base of an object (object, index, scale, base, size 8).";
    GcStore = "gc_store", "riai" -> "v", None, [WRITES_HEAP], "Store the low |size| bytes of a value at a byte offset of an object (object, offset, value, size).";
    GcStoreIndexed = "gc_store_indexed", "riaiii" -> "v", None, [WRITES_HEAP], "Store the low |size| bytes of a value at byte offset index * scale + base of an object (object, index, value, scale, base, size).";
    ArraylenGc = "arraylen_gc", "r" -> "i", Array, [READS_HEAP | LOAD], "Length of an array.";
    Strlen = "strlen", "r" -> "i", None, [READS_HEAP | LOAD], "Length of a byte string.";
    Strgetitem = "strgetitem", "ri" -> "i", None, [READS_HEAP | LOAD], "Byte of a string.";
    Strsetitem = "strsetitem", "rii" -> "v", None, [WRITES_HEAP], "Store a byte into a string.";
    Strhash = "strhash", "r" -> "i", None, [READS_HEAP], "Hash of a byte string.";
    Copystrcontent = "copystrcontent", "rriii" -> "v", None, [WRITES_HEAP | READS_HEAP], "Copy bytes between strings (src, dst, srcstart, dststart, length).";
    Unicodelen = "unicodelen", "r" -> "i", None, [READS_HEAP | LOAD], "Length of a unicode string.";
    Unicodegetitem = "unicodegetitem", "ri" -> "i", None, [READS_HEAP | LOAD], "Code point of a unicode string.";
    Unicodesetitem = "unicodesetitem", "rii" -> "v", None, [WRITES_HEAP], "Store a code point into a unicode string.";
    Unicodehash = "unicodehash", "r" -> "i", None, [READS_HEAP], "Hash of a unicode string.";
    Copyunicodecontent = "copyunicodecontent", "rriii" -> "v", None, [WRITES_HEAP | READS_HEAP], "Copy code points between unicode strings.";

    // --- calls -----------------------------------------------------------------------
    CallI = "call_i", "i*" -> "i", Call, [CALL], "Call a function returning an integer.";
    CallR = "call_r", "i*" -> "r", Call, [CALL], "Call a function returning a reference.";
    CallF = "call_f", "i*" -> "f", Call, [CALL], "Call a function returning a float.";
    CallN = "call_n", "i*" -> "v", Call, [CALL], "Call a function returning nothing.";
    CallPureI = "call_pure_i", "i*" -> "i", Call, [CALL], "Call an elidable function returning an integer.";
    CallPureR = "call_pure_r", "i*" -> "r", Call, [CALL], "Call an elidable function returning a reference.";
    CallPureF = "call_pure_f", "i*" -> "f", Call, [CALL], "Call an elidable function returning a float.";
    CallPureN = "call_pure_n", "i*" -> "v", Call, [CALL], "Call an elidable function returning nothing.";
    CallLoopinvariantI = "call_loopinvariant_i", "i*" -> "i", Call, [CALL], "Call a loop-invariant function returning an integer.";
    CallLoopinvariantR = "call_loopinvariant_r", "i*" -> "r", Call, [CALL], "Call a loop-invariant function returning a reference.";
    CallLoopinvariantF = "call_loopinvariant_f", "i*" -> "f", Call, [CALL], "Call a loop-invariant function returning a float.";
    CallLoopinvariantN = "call_loopinvariant_n", "i*" -> "v", Call, [CALL], "Call a loop-invariant function returning nothing.";
    CallMayForceI = "call_may_force_i", "i*" -> "i", Call, [CALL | BARRIER], "Call that may force the frame, returning an integer.";
    CallMayForceR = "call_may_force_r", "i*" -> "r", Call, [CALL | BARRIER], "Call that may force the frame, returning a reference.";
    CallMayForceF = "call_may_force_f", "i*" -> "f", Call, [CALL | BARRIER], "Call that may force the frame, returning a float.";
    CallMayForceN = "call_may_force_n", "i*" -> "v", Call, [CALL | BARRIER], "Call that may force the frame, returning nothing.";
    CallAssemblerI = "call_assembler_i", "*" -> "i", Any, [CALL | BARRIER], "Call another compiled loop, returning an integer.";
    CallAssemblerR = "call_assembler_r", "*" -> "r", Any, [CALL | BARRIER], "Call another compiled loop, returning a reference.";
    CallAssemblerF = "call_assembler_f", "*" -> "f", Any, [CALL | BARRIER], "Call another compiled loop, returning a float.";
    CallAssemblerN = "call_assembler_n", "*" -> "v", Any, [CALL | BARRIER], "Call another compiled loop, returning nothing.";
    CondCallN = "cond_call", "ii*" -> "v", Call, [CALL], "If the condition is non-zero, call the function.";
    CondCallValueI = "cond_call_value_i", "ii*" -> "i", Call, [CALL], "The value if non-zero, else the result of calling the function.";
    CondCallValueR = "cond_call_value_r", "ri*" -> "r", Call, [CALL], "The value if non-null, else the result of calling the function.";

    // --- hints and frame operations ----------------------------------------------------
    QuasiimmutField = "quasiimmut_field", "r" -> "v", Any, [HINT], "Marks a quasi-immutable field read (pairs with guard_not_invalidated).";
    ForceToken = "force_token", "" -> "r", None, [], "A token naming the current frame.";
    VirtualRef = "virtual_ref", "ri" -> "r", None, [ALLOC], "A virtual reference to an object: a new `JitVirtualRef` holding the force token and a null `forced` (`abi::VirtualRefLayout`).";
    VirtualRefFinish = "virtual_ref_finish", "rr" -> "v", None, [WRITES_HEAP], "Ends the life of a virtual reference: stores the object into `forced` unless it is null, and null into the token.";
    EnterPortalFrame = "enter_portal_frame", "ii" -> "v", None, [HINT], "Profiling hint: a portal frame is entered.";
    LeavePortalFrame = "leave_portal_frame", "i" -> "v", None, [HINT], "Profiling hint: a portal frame is left.";
    Keepalive = "keepalive", "a" -> "v", None, [HINT], "Keeps a value alive up to this point.";
    RecordKnownResult = "record_known_result", "ai*" -> "v", Call, [HINT], "Records that calling the function with these arguments gives the value.";
    RecordKnownField = "record_known_field", "ra" -> "v", Field, [HINT], "Records that the object's field (the descriptor) holds the value.";
    RecordExactClass = "record_exact_class", "ri" -> "v", None, [HINT], "Records the exact class of an object.";
    RecordExactValueR = "record_exact_value_r", "rr" -> "v", None, [HINT], "Records that a reference is the given constant.";
    RecordExactValueI = "record_exact_value_i", "ii" -> "v", None, [HINT], "Records that an integer is the given constant.";
    AssertNotNone = "assert_not_none", "r" -> "v", None, [HINT], "Records that a pointer is not null.";
    RecordIntRange = "record_int_range", "iii" -> "v", None, [HINT], "Records that an integer lies in the signed range [lo, hi].";
    RecordIntBits = "record_int_bits", "iii" -> "v", None, [HINT], "Records that an integer's bits under a mask (operand 1) are the given bits (operand 2).";
    SaveException = "save_exception", "" -> "r", None, [], "Reads and clears the pending exception value.";
    SaveExcClass = "save_exc_class", "" -> "i", None, [], "Reads the pending exception class.";
    RestoreException = "restore_exception", "ir" -> "v", None, [], "Sets the pending exception (class, value).";
}

// Order-dependent tricks rely on these positions.
const _: () = assert!(Opcode::InputI as u16 == 0);
const _: () = assert!(Opcode::InputF as u16 == Opcode::InputI as u16 + 2);

/// The flags and result kind of each row of the table, in one dense array: asked for every
/// op by the optimizer and the backend, they then take a few cache lines instead of the
/// table's 56-byte rows.
static HOT: [(OpFlags, Kind); TABLE.len()] = {
    let mut a = [(OpFlags::empty(), Kind::Void); TABLE.len()];
    let mut i = 0;
    while i < a.len() {
        a[i] = (TABLE[i].flags, TABLE[i].result);
        i += 1;
    }
    a
};

/// Where the operands of a `gc_load*`/`gc_store*` op are (see [`Opcode::gc_access`]): the
/// object is operand 0; the byte offset is `index * scale + base`, with `scale` 1 and `base`
/// 0 when the op has only an offset (operand `index`); the access is `|size|` bytes,
/// sign-extended when `size < 0`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GcAccess {
    /// The operand holding the index (or the offset).
    pub index: usize,
    /// The operand holding the scale, if any.
    pub scale: Option<usize>,
    /// The operand holding the base offset, if any.
    pub base: Option<usize>,
    /// The operand holding the size.
    pub size: usize,
    /// The operand holding the stored value (stores).
    pub value: Option<usize>,
}

impl GcAccess {
    /// The byte offset and width of the access given the operands' values `arg(i)`; `None`
    /// when the offset overflows or the size is not 1, 2, 4 or 8 bytes (or 8 for a reference
    /// or float of kind `kind`).
    pub fn resolve(&self, arg: impl Fn(usize) -> i64, kind: Kind) -> Option<(i64, u8, bool)> {
        let offset = arg(self.index)
            .checked_mul(self.scale.map_or(1, &arg))?
            .checked_add(self.base.map_or(0, &arg))?;
        let size = arg(self.size);
        let width = size.unsigned_abs();
        let ok = match kind {
            Kind::Int => matches!(width, 1 | 2 | 4 | 8),
            _ => width == 8,
        };
        ok.then_some((offset, width as u8, size < 0))
    }
}

impl Opcode {
    /// The operand layout of a `gc_load*`/`gc_store*` op; `None` for other ops.
    pub fn gc_access(self) -> Option<GcAccess> {
        use Opcode::*;
        let plain = |value: Option<usize>| GcAccess {
            index: 1,
            scale: None,
            base: None,
            size: if value.is_some() { 3 } else { 2 },
            value,
        };
        let indexed = |value: Option<usize>| {
            let k = usize::from(value.is_some());
            GcAccess {
                index: 1,
                scale: Some(2 + k),
                base: Some(3 + k),
                size: 4 + k,
                value,
            }
        };
        Some(match self {
            GcLoadI | GcLoadR | GcLoadF => plain(None),
            GcStore => plain(Some(2)),
            GcLoadIndexedI | GcLoadIndexedR | GcLoadIndexedF => indexed(None),
            GcStoreIndexed => indexed(Some(2)),
            _ => return None,
        })
    }
}

impl Opcode {
    /// The table row of this opcode.
    #[inline]
    pub fn info(self) -> &'static OpInfo {
        &OPCODE_TABLE[self as usize]
    }
    /// PyPy's name of the op.
    #[inline]
    pub fn name(self) -> &'static str {
        self.info().name
    }
    /// The op's flags.
    #[inline]
    pub fn flags(self) -> OpFlags {
        HOT[self as usize].0
    }
    /// The kind of the op's result (`Void` when it has none).
    #[inline]
    pub fn result_kind(self) -> Kind {
        HOT[self as usize].1
    }
    /// The kind of the descriptor this op takes.
    #[inline]
    pub fn descr_kind(self) -> DescrKind {
        self.info().descr
    }
    /// The number of fixed operands (excluding a variadic tail).
    pub fn fixed_arity(self) -> usize {
        self.info().args.bytes().filter(|&c| c != b'*').count()
    }
    /// Whether the op takes any number of further operands after its fixed ones.
    pub fn is_variadic(self) -> bool {
        self.info().args.ends_with('*')
    }
    /// The expected kind of operand `i`: `None` when any kind is accepted.
    pub fn arg_kind(self, i: usize) -> Option<Kind> {
        let sig = self.info().args.as_bytes();
        match sig.get(i) {
            Some(b'i') => Some(Kind::Int),
            Some(b'r') => Some(Kind::Ref),
            Some(b'f') => Some(Kind::Float),
            _ => None,
        }
    }
    /// Whether `n` operands are acceptable.
    pub fn arity_ok(self, n: usize) -> bool {
        if self.is_variadic() {
            n >= self.fixed_arity()
        } else {
            n == self.fixed_arity()
        }
    }
    /// Whether the op has `flag`.
    #[inline]
    pub fn has(self, flag: OpFlags) -> bool {
        self.flags().contains(flag)
    }
    /// Whether the op is a guard.
    #[inline]
    pub fn is_guard(self) -> bool {
        self.has(OpFlags::GUARD)
    }
    /// Whether the op is pure (foldable, CSE-able, removable when unused).
    #[inline]
    pub fn is_pure(self) -> bool {
        self.has(OpFlags::PURE)
    }
    /// Whether the op is commutative in its two operands.
    #[inline]
    pub fn is_commutative(self) -> bool {
        self.has(OpFlags::COMMUTATIVE)
    }
    /// Whether the op is a trace input or label parameter.
    #[inline]
    pub fn is_input(self) -> bool {
        self.has(OpFlags::INPUT)
    }
    /// Whether the op ends the trace.
    #[inline]
    pub fn is_final(self) -> bool {
        self.has(OpFlags::FINAL)
    }
    /// Whether the op is an overflow-checking arithmetic op.
    #[inline]
    pub fn is_ovf(self) -> bool {
        self.has(OpFlags::OVF)
    }
    /// Whether the op is a call of any family.
    #[inline]
    pub fn is_call(self) -> bool {
        self.has(OpFlags::CALL)
    }
    /// The plain call a conditional call is when it calls (`cond_call` -> `call_n`,
    /// `cond_call_value_i` -> `call_i`, `cond_call_value_r` -> `call_r`): the same operands
    /// without the first. `None` for any other op.
    pub fn unconditional_call(self) -> Option<Opcode> {
        match self {
            Opcode::CondCallN => Some(Opcode::CallN),
            Opcode::CondCallValueI => Some(Opcode::CallI),
            Opcode::CondCallValueR => Some(Opcode::CallR),
            _ => None,
        }
    }
    /// The input opcode holding a value of `kind` (`input_i` for `Int`, ...).
    pub fn input_for(kind: Kind) -> Option<Opcode> {
        match kind {
            Kind::Int => Some(Opcode::InputI),
            Kind::Ref => Some(Opcode::InputR),
            Kind::Float => Some(Opcode::InputF),
            Kind::Void => None,
        }
    }
    /// The wrapping op an overflow op becomes once overflow is ruled out.
    pub fn ovf_to_wrapping(self) -> Option<Opcode> {
        match self {
            Opcode::IntAddOvf => Some(Opcode::IntAdd),
            Opcode::IntSubOvf => Some(Opcode::IntSub),
            Opcode::IntMulOvf => Some(Opcode::IntMul),
            _ => None,
        }
    }
    /// The opcode with this PyPy name, if any (internal opcodes have none).
    pub fn from_name(name: &str) -> Option<Opcode> {
        name_index().get(name).copied()
    }
}

fn name_index() -> &'static std::collections::HashMap<&'static str, Opcode> {
    use std::sync::OnceLock;
    static INDEX: OnceLock<std::collections::HashMap<&'static str, Opcode>> = OnceLock::new();
    INDEX.get_or_init(|| {
        Opcode::ALL
            .iter()
            .filter(|op| !op.has(OpFlags::INTERNAL))
            .map(|&op| (op.name(), op))
            .collect()
    })
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error of [`Opcode::from_str`]: no op has this name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownOpcode(pub String);

impl fmt::Display for UnknownOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown operation `{}`", self.0)
    }
}

impl std::error::Error for UnknownOpcode {}

impl FromStr for Opcode {
    type Err = UnknownOpcode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Opcode::from_name(s).ok_or_else(|| UnknownOpcode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_discriminant() {
        for (i, &op) in Opcode::ALL.iter().enumerate() {
            assert_eq!(op as usize, i);
            assert_eq!(OPCODE_TABLE[i].name, op.name());
            assert_eq!(OPCODE_TABLE[i].flags, op.flags());
            assert_eq!(OPCODE_TABLE[i].result, op.result_kind());
        }
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &op in Opcode::ALL {
            assert!(seen.insert(op.name()), "duplicate name {}", op.name());
            if !op.has(OpFlags::INTERNAL) {
                assert_eq!(op.name().parse::<Opcode>(), Ok(op));
            }
        }
        assert!("input_i".parse::<Opcode>().is_err());
        assert!("no_such_op".parse::<Opcode>().is_err());
    }

    #[test]
    fn signatures_are_well_formed() {
        for &op in Opcode::ALL {
            let sig = op.info().args;
            for (i, c) in sig.bytes().enumerate() {
                assert!(b"irfa*".contains(&c), "{}: bad signature char", op);
                if c == b'*' {
                    assert_eq!(i, sig.len() - 1, "{}: `*` must come last", op);
                }
            }
            if op.is_commutative() {
                assert_eq!(op.fixed_arity(), 2, "{} is commutative but not binary", op);
            }
            if op.has(OpFlags::BOOL_RESULT) {
                assert_eq!(op.result_kind(), Kind::Int);
            }
        }
    }

    #[test]
    fn issue_op_list_is_covered() {
        for name in [
            "int_add",
            "int_sub",
            "int_mul",
            "int_and",
            "int_or",
            "int_xor",
            "int_eq",
            "int_ne",
            "int_lt",
            "int_le",
            "int_gt",
            "int_ge",
            "uint_lt",
            "uint_le",
            "uint_gt",
            "uint_ge",
            "int_lshift",
            "int_rshift",
            "uint_rshift",
            "uint_mul_high",
            "int_pydiv",
            "int_pymod",
            "int_is_true",
            "int_is_zero",
            "int_neg",
            "int_invert",
            "int_add_ovf",
            "int_sub_ovf",
            "int_mul_ovf",
            "int_signext",
            "int_force_ge_zero",
            "same_as_i",
            "same_as_r",
            "same_as_f",
            "guard_true",
            "guard_false",
            "guard_value",
            "guard_no_overflow",
            "guard_overflow",
            "guard_nonnull",
            "guard_isnull",
            "guard_class",
            "guard_nonnull_class",
            "new",
            "new_with_vtable",
            "new_array",
            "getfield_gc_i",
            "getfield_gc_r",
            "getfield_gc_f",
            "setfield_gc",
            "getarrayitem_gc_i",
            "getarrayitem_gc_r",
            "getarrayitem_gc_f",
            "setarrayitem_gc",
            "arraylen_gc",
            "getfield_raw_i",
            "setfield_raw",
            "ptr_eq",
            "ptr_ne",
            "instance_ptr_eq",
            "instance_ptr_ne",
            "call_i",
            "call_r",
            "call_f",
            "call_n",
            "float_add",
            "float_sub",
            "float_mul",
            "float_truediv",
            "float_neg",
            "float_abs",
            "float_lt",
            "float_le",
            "float_eq",
            "float_ne",
            "float_gt",
            "float_ge",
            "cast_int_to_float",
            "cast_float_to_int",
            "label",
            "jump",
            "finish",
        ] {
            assert!(Opcode::from_name(name).is_some(), "missing {name}");
        }
    }
}
