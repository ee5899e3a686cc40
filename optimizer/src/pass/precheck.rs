//! The structural check of an input trace in release builds.

use crate::OptError;
use trace_ir::{FailArg, OpRef, Opcode, Trace, Value, ValueData, VirtualKind, VirtualObject};

/// The structural facts the pass relies on (release builds; debug builds run the full
/// verifier): operands defined before use, descriptors and resume data present and in range,
/// arities as in the opcode table, label parameters after labels. A violation is an error, not
/// a panic.
pub(super) fn precheck(t: &Trace) -> Result<(), OptError> {
    let bad = |i: usize, m: &str| {
        Err(OptError::BadInput(trace_ir::VerifyError {
            op: Some(OpRef::new(i)),
            message: m.to_string(),
        }))
    };
    let n = t.ops.len();
    if t.num_inputs > n || t.ops[..t.num_inputs].iter().any(|o| !o.opcode.is_input()) {
        return Err(OptError::BadInput(trace_ir::VerifyError {
            op: None,
            message: "bad trace inputs".into(),
        }));
    }
    let ok_value = |v: Value, i: usize| match v.data() {
        ValueData::Op(o) => o.index() < i,
        ValueData::Const(c) => c.index() < t.consts.len(),
    };
    let mut params = 0usize;
    for (i, op) in t.ops.iter().enumerate().skip(t.num_inputs) {
        let opc = op.opcode;
        if opc.is_input() {
            if params == 0 {
                return bad(i, "input op outside the label parameters");
            }
            params -= 1;
            continue;
        }
        if params != 0 {
            return bad(i, "label is missing parameters");
        }
        let sig = opc.info().args.as_bytes();
        let variadic = sig.last() == Some(&b'*');
        let fixed = sig.len() - variadic as usize;
        if (variadic && op.args.len() < fixed) || (!variadic && op.args.len() != fixed) {
            return bad(i, "wrong number of operands");
        }
        if op.args.iter().any(|&a| !ok_value(a, i)) {
            return bad(i, "operand used before its definition");
        }
        match (opc.descr_kind(), op.descr) {
            (_, Some(d)) if d.index() >= t.descrs.len() => return bad(i, "missing descriptor"),
            (trace_ir::DescrKind::None | trace_ir::DescrKind::Any, _) => {}
            (_, None) => return bad(i, "missing descriptor"),
            _ => {}
        }
        if opc.is_guard() {
            let Some(g) = op.guard.filter(|g| g.index() < t.guards.len()) else {
                return bad(i, "guard without resume data");
            };
            let gd = t.guard(g);
            let ok_fa = |fa: &FailArg| match *fa {
                FailArg::Value(v) => ok_value(v, i),
                FailArg::Virtual(k) => (k as usize) < gd.virtuals.len(),
                FailArg::Hole => true,
            };
            let vdescr_ok = |vo: &VirtualObject| match vo.kind {
                VirtualKind::Struct { descr, .. } | VirtualKind::Array { descr, .. } => descr.index() < t.descrs.len(),
                VirtualKind::Str { .. } => true,
            };
            let mut entries_ok =
                gd.virtuals.iter().all(vdescr_ok) && gd.writes.iter().all(|w| w.descr.index() < t.descrs.len());
            gd.for_each_entry(|fa| entries_ok &= ok_fa(&fa));
            if !entries_ok {
                return bad(i, "bad fail arguments");
            }
        }
        if opc == Opcode::Label {
            params = op.args.len();
        }
    }
    if params != 0 {
        return bad(n - 1, "trace ends inside a label's parameters");
    }
    Ok(())
}
