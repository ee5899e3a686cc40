//! Typed `u32` indices into the arenas of a trace (ops, constants, descriptors, guards) and
//! the packed [`Value`] operand.
//!
//! Every index type reserves `u32::MAX` so that `Option<Index>` costs nothing extra.

use std::fmt;
use std::num::NonZeroU32;

macro_rules! entity {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(NonZeroU32);

        impl $name {
            /// The entity with this index. Panics on `u32::MAX`, which is reserved.
            #[inline]
            pub fn new(index: usize) -> Self {
                assert!(index < u32::MAX as usize, concat!(stringify!($name), " index overflow"));
                $name(NonZeroU32::new(index as u32 + 1).unwrap())
            }
            /// The index of this entity in its arena.
            #[inline]
            pub fn index(self) -> usize {
                (self.0.get() - 1) as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.index())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.index())
            }
        }
    };
}

entity!(
    /// An operation of a trace (inputs and label parameters are ops too).
    OpRef,
    "op"
);
entity!(
    /// A constant in a trace's constant pool.
    ConstRef,
    "const"
);
entity!(
    /// A descriptor in a trace's descriptor table.
    DescrRef,
    "descr"
);
entity!(
    /// The resume data of a guard in a trace's guard table.
    GuardRef,
    "guard"
);

/// The stable identity of a guard: it survives optimization, so an exit of an optimized trace
/// names the guard of the recorded trace. Printed as `descr=<GuardN>`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct GuardId(pub u32);

impl fmt::Display for GuardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guard{}", self.0)
    }
}

/// An operand: the result of an op, or a constant of the pool.
///
/// Packed in 32 bits: bit 31 set means a constant index, clear means an op index.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(u32);

const CONST_BIT: u32 = 1 << 31;

/// The unpacked form of a [`Value`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ValueData {
    /// The result of an op.
    Op(OpRef),
    /// A pool constant.
    Const(ConstRef),
}

impl Value {
    /// The result of `op`.
    #[inline]
    pub fn op(op: OpRef) -> Value {
        let i = op.index() as u32;
        assert!(i < CONST_BIT, "op index overflow");
        Value(i)
    }
    /// The constant `c`.
    #[inline]
    pub fn constant(c: ConstRef) -> Value {
        let i = c.index() as u32;
        assert!(i < CONST_BIT, "constant index overflow");
        Value(i | CONST_BIT)
    }
    /// Unpack.
    #[inline]
    pub fn data(self) -> ValueData {
        if self.0 & CONST_BIT != 0 {
            ValueData::Const(ConstRef::new((self.0 & !CONST_BIT) as usize))
        } else {
            ValueData::Op(OpRef::new(self.0 as usize))
        }
    }
    /// The op, if this is an op result.
    #[inline]
    pub fn as_op(self) -> Option<OpRef> {
        match self.data() {
            ValueData::Op(o) => Some(o),
            ValueData::Const(_) => None,
        }
    }
    /// The constant, if this is a constant.
    #[inline]
    pub fn as_const(self) -> Option<ConstRef> {
        match self.data() {
            ValueData::Const(c) => Some(c),
            ValueData::Op(_) => None,
        }
    }
    /// Whether this is a constant.
    #[inline]
    pub fn is_const(self) -> bool {
        self.0 & CONST_BIT != 0
    }
    /// The op index of an op result, `none` for a constant. A select rather than a branch:
    /// for hot loops over operands, where constants and op results mix unpredictably.
    #[inline]
    pub fn op_index_or(self, none: usize) -> usize {
        if self.0 & CONST_BIT != 0 {
            none
        } else {
            self.0 as usize
        }
    }
}

impl From<OpRef> for Value {
    fn from(op: OpRef) -> Value {
        Value::op(op)
    }
}

impl From<ConstRef> for Value {
    fn from(c: ConstRef) -> Value {
        Value::constant(c)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.data() {
            ValueData::Op(o) => write!(f, "{o:?}"),
            ValueData::Const(c) => write!(f, "{c:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_free() {
        assert_eq!(std::mem::size_of::<Option<OpRef>>(), 4);
        assert_eq!(std::mem::size_of::<Option<DescrRef>>(), 4);
        assert_eq!(std::mem::size_of::<Value>(), 4);
    }

    #[test]
    fn value_packing_round_trips() {
        for i in [0usize, 1, 17, (1 << 31) - 1] {
            assert_eq!(Value::op(OpRef::new(i)).as_op(), Some(OpRef::new(i)));
            assert_eq!(Value::constant(ConstRef::new(i)).as_const(), Some(ConstRef::new(i)));
            assert!(Value::constant(ConstRef::new(i)).is_const());
            assert!(!Value::op(OpRef::new(i)).is_const());
            assert_eq!(Value::op(OpRef::new(i)).op_index_or(usize::MAX), i);
            assert_eq!(Value::constant(ConstRef::new(i)).op_index_or(usize::MAX), usize::MAX);
        }
    }
}
