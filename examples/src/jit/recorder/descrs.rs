//! The descriptors of the language's objects.

use super::{field, Descrs};
use crate::lang::heap::*;
use trace_ir::{ArrayDescr, CallDescr, CallEffect, Descr, Kind, SizeDescr, TraceBuilder};

impl Descrs {
    /// The descriptors of the language's objects, in `b`'s table.
    pub(super) fn new(b: &mut TraceBuilder) -> Descrs {
        Descrs {
            int_field: b.descr(field("IntBox.value", BOX_VALUE_OFFSET, Kind::Int)),
            float_field: b.descr(field("FloatBox.value", BOX_VALUE_OFFSET, Kind::Float)),
            first: b.descr(field("Pair.first", PAIR_FIRST_OFFSET, Kind::Ref)),
            second: b.descr(field("Pair.second", PAIR_SECOND_OFFSET, Kind::Ref)),
            int_size: b.descr(Descr::Size(SizeDescr {
                size: BOX_SIZE as i64,
                vtable: Some(INT_CLASS as i64),
            })),
            float_size: b.descr(Descr::Size(SizeDescr {
                size: BOX_SIZE as i64,
                vtable: Some(FLOAT_CLASS as i64),
            })),
            pair_size: b.descr(Descr::Size(SizeDescr {
                size: PAIR_SIZE as i64,
                vtable: Some(PAIR_CLASS as i64),
            })),
            array: b.descr(Descr::Array(ArrayDescr {
                item_size: 8,
                signed: true,
                kind: Kind::Int,
                base_offset: ARRAY_ITEMS_OFFSET,
                len_offset: ARRAY_LEN_OFFSET,
            })),
            sqrt: b.descr(Descr::Call(CallDescr {
                result: Kind::Float,
                result_size: 8,
                args: vec![Kind::Float],
                effect: CallEffect::ElidableCannotRaise,
                oopspec: Some(trace_ir::oopspec::OS_MATH_SQRT),
            })),
        }
    }
}
