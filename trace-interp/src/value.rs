//! Runtime values: a word with its kind.

use std::fmt;
use trace_ir::opcode::Kind;
use trace_ir::trace::Const;

/// A runtime value with its kind.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RtValue {
    /// A 64-bit integer.
    Int(i64),
    /// A float, as its IEEE bits (so values compare and hash exactly; NaN equals NaN of the
    /// same bits).
    Float(u64),
    /// An address (0 is null).
    Ref(u64),
}

impl RtValue {
    /// The float `v`.
    pub fn float(v: f64) -> RtValue {
        RtValue::Float(v.to_bits())
    }
    /// The 64 bits of the value.
    pub fn bits(self) -> u64 {
        match self {
            RtValue::Int(i) => i as u64,
            RtValue::Float(b) | RtValue::Ref(b) => b,
        }
    }
    /// The value of `kind` with these bits (`Void` gives an integer).
    pub fn from_bits(kind: Kind, bits: u64) -> RtValue {
        match kind {
            Kind::Float => RtValue::Float(bits),
            Kind::Ref => RtValue::Ref(bits),
            _ => RtValue::Int(bits as i64),
        }
    }
    /// Zero (0, 0.0, null) of `kind`.
    pub fn zero(kind: Kind) -> RtValue {
        RtValue::from_bits(kind, 0)
    }
    /// The same bits seen as `kind`.
    pub fn with_kind(self, kind: Kind) -> RtValue {
        RtValue::from_bits(kind, self.bits())
    }
    /// The kind of the value.
    pub fn kind(self) -> Kind {
        match self {
            RtValue::Int(_) => Kind::Int,
            RtValue::Float(_) => Kind::Float,
            RtValue::Ref(_) => Kind::Ref,
        }
    }
    /// The value of a pool constant.
    pub fn from_const(c: Const) -> RtValue {
        match c {
            Const::Int(i) => RtValue::Int(i),
            Const::Float(b) => RtValue::Float(b),
            Const::Ref(a) => RtValue::Ref(a),
        }
    }
}

impl fmt::Display for RtValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RtValue::Int(i) => write!(f, "{i}"),
            RtValue::Float(b) => write!(f, "{:?}", f64::from_bits(b)),
            RtValue::Ref(0) => f.write_str("null"),
            RtValue::Ref(a) => write!(f, "0x{a:x}"),
        }
    }
}
