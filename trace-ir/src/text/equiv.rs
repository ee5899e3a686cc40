//! Structural comparison of two traces, resolving constants and descriptors by value, so
//! that traces that differ only in the order of their constant pool or descriptor table
//! compare equal (what a print/parse round trip preserves).

use crate::entity::{DescrRef, Value, ValueData};
use crate::trace::{Const, FailArg, Trace, VirtualField, VirtualKind, VirtualObject};

#[derive(Debug, PartialEq)]
enum V<'a> {
    Op(usize),
    Const(Option<Const>, Option<&'a str>),
}

fn val(t: &Trace, v: Value) -> V<'_> {
    match v.data() {
        ValueData::Op(o) => V::Op(o.index()),
        ValueData::Const(c) if c.index() < t.consts.len() => V::Const(Some(t.consts.get(c)), t.consts.name(c)),
        ValueData::Const(_) => V::Const(None, None),
    }
}

fn descr(t: &Trace, d: DescrRef) -> Option<&crate::descr::Descr> {
    t.descrs.get(d.index())
}

fn fail_arg<'a>(t: &'a Trace, f: &FailArg) -> Result<V<'a>, u32> {
    match f {
        FailArg::Value(v) => Ok(val(t, *v)),
        FailArg::Virtual(k) => Err(*k),
        FailArg::Hole => Err(u32::MAX),
    }
}

fn same_virtual(a: &Trace, va: &VirtualObject, b: &Trace, vb: &VirtualObject) -> Result<(), String> {
    match (va.kind, vb.kind) {
        (VirtualKind::Struct { opcode: oa, descr: da }, VirtualKind::Struct { opcode: ob, descr: db }) => {
            if oa != ob || descr(a, da) != descr(b, db) {
                return Err(format!("{oa} {:?} vs {ob} {:?}", descr(a, da), descr(b, db)));
            }
        }
        (
            VirtualKind::Array {
                opcode: oa,
                descr: da,
                len: la,
            },
            VirtualKind::Array {
                opcode: ob,
                descr: db,
                len: lb,
            },
        ) => {
            if oa != ob || la != lb || descr(a, da) != descr(b, db) {
                return Err(format!(
                    "{oa}({la}) {:?} vs {ob}({lb}) {:?}",
                    descr(a, da),
                    descr(b, db)
                ));
            }
        }
        (VirtualKind::Str { opcode: oa, len: la }, VirtualKind::Str { opcode: ob, len: lb }) => {
            if oa != ob || la != lb {
                return Err(format!("{oa}({la}) vs {ob}({lb})"));
            }
        }
        (ka, kb) => return Err(format!("{} vs {}", ka.opcode(), kb.opcode())),
    }
    if va.fields.len() != vb.fields.len() {
        return Err(format!("{} fields vs {}", va.fields.len(), vb.fields.len()));
    }
    for ((fa, xa), (fb, xb)) in va.fields.iter().zip(&vb.fields) {
        let same_field = match (fa, fb) {
            (VirtualField::Field(da), VirtualField::Field(db)) => descr(a, *da) == descr(b, *db),
            (VirtualField::Item(ia), VirtualField::Item(ib)) => ia == ib,
            _ => false,
        };
        if !same_field {
            return Err(format!("field {fa:?} vs {fb:?}"));
        }
        if fail_arg(a, xa) != fail_arg(b, xb) {
            return Err(format!("field value {xa:?} vs {xb:?}"));
        }
    }
    Ok(())
}

/// Compare two traces op by op: opcodes, operands (op positions; constants by value and
/// name), descriptors by value, guard ids, resume keys, fail arguments and virtual objects.
/// Source information ([`crate::TraceInfo`]) is ignored. The error names the first
/// difference.
pub fn traces_equivalent(a: &Trace, b: &Trace) -> Result<(), String> {
    if a.aliasing != b.aliasing {
        return Err(format!("aliasing {} vs {}", a.aliasing.name(), b.aliasing.name()));
    }
    if a.num_inputs != b.num_inputs {
        return Err(format!("{} inputs vs {}", a.num_inputs, b.num_inputs));
    }
    if a.ops.len() != b.ops.len() {
        return Err(format!("{} ops vs {}", a.ops.len(), b.ops.len()));
    }
    for (i, (x, y)) in a.ops.iter().zip(&b.ops).enumerate() {
        let at = |m: String| format!("op {i} ({}): {m}", x.opcode);
        if x.opcode != y.opcode {
            return Err(at(format!("opcode {} vs {}", x.opcode, y.opcode)));
        }
        if x.args.len() != y.args.len() {
            return Err(at(format!("{} operands vs {}", x.args.len(), y.args.len())));
        }
        for (k, (&va, &vb)) in x.args.iter().zip(&y.args).enumerate() {
            let (ra, rb) = (val(a, va), val(b, vb));
            if ra != rb {
                return Err(at(format!("operand {k}: {ra:?} vs {rb:?}")));
            }
        }
        let (da, db) = (x.descr.map(|d| descr(a, d)), y.descr.map(|d| descr(b, d)));
        if da != db {
            return Err(at(format!("descriptor {da:?} vs {db:?}")));
        }
        match (
            x.guard.map(|g| a.guards.get(g.index())),
            y.guard.map(|g| b.guards.get(g.index())),
        ) {
            (None, None) => {}
            (Some(Some(ga)), Some(Some(gb))) => {
                if ga.id != gb.id || ga.resume_key != gb.resume_key {
                    return Err(at(format!(
                        "guard {} key {} vs guard {} key {}",
                        ga.id, ga.resume_key, gb.id, gb.resume_key
                    )));
                }
                if ga.fail_args.len() != gb.fail_args.len() {
                    return Err(at(format!(
                        "{} fail args vs {}",
                        ga.fail_args.len(),
                        gb.fail_args.len()
                    )));
                }
                for (k, (fa, fb)) in ga.fail_args.iter().zip(&gb.fail_args).enumerate() {
                    if fail_arg(a, fa) != fail_arg(b, fb) {
                        return Err(at(format!("fail arg {k}: {fa:?} vs {fb:?}")));
                    }
                }
                if ga.virtuals.len() != gb.virtuals.len() {
                    return Err(at(format!("{} virtuals vs {}", ga.virtuals.len(), gb.virtuals.len())));
                }
                for (k, (va, vb)) in ga.virtuals.iter().zip(&gb.virtuals).enumerate() {
                    same_virtual(a, va, b, vb).map_err(|m| at(format!("virtual ${k}: {m}")))?;
                }
                if ga.writes.len() != gb.writes.len() {
                    return Err(at(format!("{} exit writes vs {}", ga.writes.len(), gb.writes.len())));
                }
                for (k, (wa, wb)) in ga.writes.iter().zip(&gb.writes).enumerate() {
                    let same = val(a, wa.obj) == val(b, wb.obj)
                        && wa.index == wb.index
                        && descr(a, wa.descr) == descr(b, wb.descr)
                        && fail_arg(a, &wa.value) == fail_arg(b, &wb.value);
                    if !same {
                        return Err(at(format!("exit write {k}: {wa:?} vs {wb:?}")));
                    }
                }
            }
            (ga, gb) => return Err(at(format!("guard data {ga:?} vs {gb:?}"))),
        }
    }
    Ok(())
}
