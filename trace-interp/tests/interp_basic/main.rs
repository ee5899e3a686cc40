//! Interpreter unit tests: loops, iteration limit, guard exits, virtual rebuild (nested and
//! cyclic), escape and heap-writing calls, invalid operations, exceptions, classes, calls; a
//! module per theme, the shared builders here.

mod exits;
mod heap;
mod ops;
mod promises;

use std::sync::Arc;
use trace_interp::{outcomes_equivalent, run, ClassPolicy, HostFn, Outcome, RtValue, RunConfig, RunResult};
use trace_ir::{
    Aliasing, ArrayDescr, CallDescr, CallEffect, Descr, DescrRef, FailArg, FieldDescr, GuardId, Kind, Op, Opcode,
    SizeDescr, Trace, TraceBuilder, Value, VirtualField, VirtualKind, VirtualObject,
};

fn ints(v: &[i64]) -> Vec<RtValue> {
    v.iter().map(|&i| RtValue::Int(i)).collect()
}

fn go(t: &Trace, inputs: &[RtValue]) -> RunResult {
    run(t, inputs, &RunConfig::default())
}

fn field(b: &mut TraceBuilder, name: &str, offset: i64, kind: Kind) -> DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: name.into(),
        offset,
        size: 8,
        signed: true,
        kind,
        immutable: false,
    }))
}

fn imm_field(b: &mut TraceBuilder, offset: i64) -> DescrRef {
    b.descr(Descr::Field(FieldDescr {
        name: "imm".into(),
        offset,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: true,
    }))
}

fn size(b: &mut TraceBuilder, size: i64) -> DescrRef {
    b.descr(Descr::Size(SizeDescr {
        size,
        vtable: Some(0x7000),
    }))
}

fn array(b: &mut TraceBuilder, kind: Kind) -> DescrRef {
    b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind,
        base_offset: 16,
        len_offset: 8,
    }))
}

fn calldescr(b: &mut TraceBuilder, result: Kind, args: &[Kind], effect: CallEffect) -> DescrRef {
    b.descr(Descr::Call(CallDescr {
        result,
        result_size: 8,
        args: args.to_vec(),
        effect,
        oopspec: None,
    }))
}
