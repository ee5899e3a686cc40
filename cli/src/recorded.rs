//! What PyPy's recording of a trace proves about its constants. A PyPy log names each
//! constant box anew (`ConstPtr(ptr110)`, `ConstPtr(ptr438)`), so two names may be one
//! object, and it prints no object's class or immutable fields, which PyPy's optimizer reads
//! from the objects themselves. But a logged trace was recorded by running it: every guard in
//! it passed. So where our optimizer reduces a guard to one on constants, the recording
//! proves the guard's condition, and a constant's class and immutable fields never change:
//!
//! - `guard_value(ConstPtr(a), ConstPtr(b))`, or `guard_true(instance_ptr_eq(x, y))` (and
//!   `ptr_eq`, or `guard_false` of `_ne`) where `x` and `y` are `ConstPtr(a)` and
//!   `ConstPtr(b)` to our optimizer (which folds such a comparison of two names to false):
//!   `a` and `b` name one object (the trace is read again with `b` written as `a`);
//! - `guard_class(ConstPtr(a), C)` (or `guard_nonnull_class`): `a`'s class is `C`
//!   (`record_exact_class` before the first op);
//! - `guard_value(x, K)`, `guard_false(x)` or `guard_isnull(x)` where `x` is an immutable
//!   field `F` of `ConstPtr(a)`: that field holds `K` (or zero; `record_known_field` before
//!   the first op).
//!
//! `tracejit eval-pypy` optimizes the trace so stated (the hints are promises the
//! interpreter checks and the validator assumes), a few rounds until no such guard is left.

use trace_ir::text::{const_to_string, descr_to_string};
use trace_ir::{Const, Opcode, Trace, Value};

/// Rounds of optimizing and stating what the recording proves.
const ROUNDS: usize = 4;

/// `t` with what its recording proves about its constants stated (see the module
/// documentation); `None` when the optimizer's output has no guard on constants to learn
/// from.
pub fn with_recorded_constants(t: &Trace, options: &optimizer::Options) -> Option<Trace> {
    let mut cur: Option<Trace> = None;
    for _ in 0..ROUNDS {
        let input = cur.as_ref().unwrap_or(t);
        let explained = optimizer::Options {
            explain: true,
            ..options.clone()
        };
        let out = optimizer::optimize(input, &explained).ok()?;
        let (mut renames, hints) = learn(&out.trace);
        // The explanation's input is the peeled loop when the optimizer peeled it.
        let peeled = options.peel.then(|| trace_ir::peel_loop(input)).flatten();
        for (from, to) in compared_equal(peeled.as_ref().unwrap_or(input), &out) {
            if !renames.iter().any(|(f, _)| *f == from || *f == to) {
                renames.push((from, to));
            }
        }
        if renames.is_empty() && hints.is_empty() {
            break;
        }
        let mut text = trace_ir::print_trace(input);
        for (from, to) in &renames {
            text = text.replace(&format!("ConstPtr({from})"), &format!("ConstPtr({to})"));
        }
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let at = lines.iter().position(|l| l.starts_with('['))? + 1;
        let fresh: Vec<String> = hints.into_iter().filter(|h| !lines.contains(h)).collect();
        if renames.is_empty() && fresh.is_empty() {
            break;
        }
        lines.splice(at..at, fresh);
        let mut next = trace_ir::parse_trace(&lines.join("\n")).ok()?;
        next.info = t.info.clone();
        cur = Some(next);
    }
    cur
}

/// The name of a named, non-null pointer constant.
fn named_pointer(t: &Trace, v: Value) -> Option<String> {
    let c = v.as_const()?;
    match t.consts.get(c) {
        Const::Ref(a) if a != 0 => t.consts.name(c).map(str::to_string),
        _ => None,
    }
}

/// The text of a constant operand.
fn const_text(t: &Trace, v: Value) -> Option<String> {
    let c = v.as_const()?;
    Some(const_to_string(t.consts.get(c), t.consts.name(c)))
}

/// From an optimized trace: the pointer names to write as others, and the hints its guards
/// on constants prove.
fn learn(t: &Trace) -> (Vec<(String, String)>, Vec<String>) {
    let (mut renames, mut hints) = (Vec::new(), Vec::new());
    for op in &t.ops {
        match op.opcode {
            Opcode::GuardValue => {
                if let (Some(a), Some(b)) = (named_pointer(t, op.args[0]), named_pointer(t, op.args[1])) {
                    if a != b && !renames.iter().any(|(f, _)| *f == b || *f == a) {
                        renames.push((b, a));
                    }
                    continue;
                }
                if let Some(k) = const_text(t, op.args[1]) {
                    hints.extend(immutable_field_hint(t, op.args[0], &k));
                }
            }
            Opcode::GuardFalse | Opcode::GuardIsnull => {
                let zero = if op.opcode == Opcode::GuardFalse {
                    "0"
                } else {
                    "ConstPtr(null)"
                };
                hints.extend(immutable_field_hint(t, op.args[0], zero));
            }
            Opcode::GuardClass | Opcode::GuardNonnullClass => {
                if let (Some(a), Some(c)) = (named_pointer(t, op.args[0]), const_text(t, op.args[1])) {
                    hints.push(format!("record_exact_class(ConstPtr({a}), {c})"));
                }
            }
            _ => {}
        }
    }
    (renames, hints)
}

/// The renames `(b, a)` the recording proves by the identity comparisons that `input`'s
/// guards passed on what `out` (its optimized form, with an explanation) knows to be the
/// named pointer constants `a` and `b`.
fn compared_equal(input: &Trace, out: &optimizer::Optimized) -> Vec<(String, String)> {
    let Some(explanation) = &out.explanation else {
        return Vec::new();
    };
    // The named pointer constant an operand of `input` is in the output, if any.
    let name = |v: Value| match v.as_op() {
        None => named_pointer(input, v),
        Some(o) => match explanation.fates.get(o.index()) {
            Some(optimizer::Fate::Removed { value: Some(c), .. }) => named_pointer(&out.trace, *c),
            _ => None,
        },
    };
    let mut renames = Vec::new();
    for op in &input.ops {
        let Some(cond) = op.args.first().and_then(|a| a.as_op()) else {
            continue;
        };
        let cmp = input.op(cond);
        let equal = matches!(
            (op.opcode, cmp.opcode),
            (Opcode::GuardTrue, Opcode::PtrEq | Opcode::InstancePtrEq)
                | (Opcode::GuardFalse, Opcode::PtrNe | Opcode::InstancePtrNe)
        );
        if !equal {
            continue;
        }
        if let (Some(a), Some(b)) = (name(cmp.args[0]), name(cmp.args[1])) {
            if a != b {
                renames.push((b, a));
            }
        }
    }
    renames
}

/// `record_known_field(ConstPtr(a), value, descr=F)` when `x` is a read of the immutable
/// field `F` of the named pointer `a`.
fn immutable_field_hint(t: &Trace, x: Value, value: &str) -> Option<String> {
    let op = t.op(x.as_op()?);
    if !matches!(op.opcode, Opcode::GetfieldGcI | Opcode::GetfieldGcR) {
        return None;
    }
    let d = t.descr(op.descr?);
    if !d.as_field()?.immutable {
        return None;
    }
    let a = named_pointer(t, op.args[0])?;
    Some(format!(
        "record_known_field(ConstPtr({a}), {value}, descr={})",
        descr_to_string(d)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function object the trace makes holds a code constant that a later guard names
    /// by another name; the code's class and an immutable field of it are guarded.
    const TRACE: &str = "[p0]
        p1 = new_with_vtable(descr=<SizeDescr 32>)
        setfield_gc(p1, ConstPtr(ptr10), descr=<FieldP Function.inst_code 24 pure>)
        p2 = getfield_gc_r(p1, descr=<FieldP Function.inst_code 24 pure>)
        guard_value(p2, ConstPtr(ptr20), descr=<Guard1>) [p0]
        guard_class(p2, ConstClass(PyCode), descr=<Guard2>) [p0]
        p3 = getfield_gc_r(p2, descr=<FieldP Code.inst_co_name 8 pure>)
        guard_value(p3, ConstPtr(ptr30), descr=<Guard3>) [p0]
        i4 = getfield_gc_i(p2, descr=<FieldS Code.inst_flags 16 pure>)
        guard_false(i4, descr=<Guard4>) [p0]
        i5 = getfield_gc_i(p2, descr=<FieldS Code.inst_count 32>)
        guard_false(i5, descr=<Guard5>) [p0]
        finish(p3)";

    #[test]
    fn the_recording_proves_the_guards_on_constants() {
        let t = trace_ir::parse_trace(TRACE).unwrap();
        let options = optimizer::Options::default();
        let stated = with_recorded_constants(&t, &options).expect("guards on constants");
        let text = trace_ir::print_trace(&stated);
        // One object under two names, its class and its immutable fields.
        assert!(!text.contains("ptr20"), "{text}");
        for hint in [
            "record_exact_class(ConstPtr(ptr10), ConstClass(PyCode))",
            "record_known_field(ConstPtr(ptr10), ConstPtr(ptr30), descr=<FieldP Code.inst_co_name 8 pure>)",
            "record_known_field(ConstPtr(ptr10), 0, descr=<FieldS Code.inst_flags 16 pure>)",
        ] {
            assert!(text.contains(hint), "{hint} missing:\n{text}");
        }
        // A mutable field may change: it is read and guarded still.
        let out = optimizer::optimize(&stated, &options).unwrap();
        let guards: Vec<Opcode> = out
            .trace
            .ops
            .iter()
            .map(|o| o.opcode)
            .filter(|o| o.is_guard())
            .collect();
        assert_eq!(
            guards,
            vec![Opcode::GuardFalse],
            "{}",
            trace_ir::print_trace(&out.trace)
        );
        // Runs of the stated trace keep its promises where the recording's guards pass.
        let cfg = trace_interp::RunConfig::default();
        let r = trace_interp::run(&stated, &[trace_interp::RtValue::Ref(0x5000_0000_1000)], &cfg);
        assert!(
            !matches!(r.outcome, trace_interp::Outcome::Invalid { promise: true, .. }),
            "{}",
            r.outcome
        );
    }

    #[test]
    fn an_identity_comparison_the_recording_passed_names_one_object() {
        // The object's globals are `ptr10` to the optimizer; the guard compares them with
        // `ptr20`, which folds to an always-failing guard unless the two names are one.
        let t = trace_ir::parse_trace(
            "[p0]
             p1 = new_with_vtable(descr=<SizeDescr 32>)
             setfield_gc(p1, ConstPtr(ptr10), descr=<FieldP Function.inst_globals 24 pure>)
             p2 = getfield_gc_r(p1, descr=<FieldP Function.inst_globals 24 pure>)
             i3 = instance_ptr_eq(ConstPtr(ptr20), p2)
             guard_true(i3, descr=<Guard1>) [p0]
             p4 = getfield_gc_r(p1, descr=<FieldP Function.inst_globals 24 pure>)
             i5 = ptr_ne(p4, ConstPtr(ptr30))
             guard_false(i5, descr=<Guard2>) [p0]
             finish(p2)",
        )
        .unwrap();
        let options = optimizer::Options::default();
        let before = optimizer::optimize(&t, &options).unwrap();
        assert!(
            trace_ir::print_trace(&before.trace).contains("guard_true(0"),
            "{}",
            trace_ir::print_trace(&before.trace)
        );
        let stated = with_recorded_constants(&t, &options).expect("comparisons of constants");
        let text = trace_ir::print_trace(&stated);
        let names = ["ptr10", "ptr20", "ptr30"].iter().filter(|n| text.contains(*n)).count();
        assert_eq!(names, 1, "{text}");
        let out = optimizer::optimize(&stated, &options).unwrap();
        assert!(
            out.trace.ops.iter().all(|o| !o.opcode.is_guard()),
            "{}",
            trace_ir::print_trace(&out.trace)
        );
        // A comparison the recording failed (`guard_false` of an `_eq`) proves nothing.
        let failed = trace_ir::parse_trace(
            "[p0]
             i1 = instance_ptr_eq(ConstPtr(ptr20), ConstPtr(ptr10))
             guard_false(i1, descr=<Guard1>) [p0]
             finish(p0)",
        )
        .unwrap();
        assert!(with_recorded_constants(&failed, &options).is_none());
    }

    #[test]
    fn a_trace_without_guards_on_constants_is_left_alone() {
        let t = trace_ir::parse_trace(
            "[p0]
             i1 = getfield_gc_i(p0, descr=<FieldS a 8 pure>)
             guard_false(i1, descr=<Guard1>) [p0]
             finish(i1)",
        )
        .unwrap();
        assert!(with_recorded_constants(&t, &optimizer::Options::default()).is_none());
    }
}
