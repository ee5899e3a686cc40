//! A bridge entering a peeled loop's body whose label carries loaded values, takes an
//! object field by field or carries a loop-invariant pure result: it passes what the label
//! carries (from its own heap cache, or loaded or computed at its jump: the loop's short
//! preamble redone), and the tree computes what it computes with the bridge entering the
//! header.

use super::{jump_token, last_guard_with_key, peeled};
use optimizer::{Optimized, Optimizer, Options};
use trace_interp::{outcomes_equivalent_by_resume_key, run_tree, RtValue, RunConfig};
use trace_ir::tree::{guard_op, Bridge, TraceTree};
use trace_ir::{bridge_prologue, Descr, GuardId, Opcode, Trace, TraceBuilder, Value};

/// A counting loop that adds a field of an object it passes on unchanged: the body label
/// carries the field's value.
const CARRYING_LOOP: &str = "
[p0, i1, i2]
label(p0, i1, i2, descr=TargetToken(9)) -> [p3, i4, i5]
guard_nonnull(p3, descr=<Guard1 key=2>) [p3, i4, i5]
i6 = getfield_gc_i(p3, descr=<FieldS T.step 8>)
i7 = int_lt(i4, 1000)
guard_true(i7, descr=<Guard0 key=1>) [p3, i4, i5]
i8 = int_add(i4, i6)
jump(p3, i8, i5, descr=TargetToken(9))
";

/// A loop that passes a boxed counter on: the body label takes the box field by field.
const BOXING_LOOP: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(11)) -> [p2, i3]
i4 = getfield_gc_i(p2, descr=<FieldS Box.v 8>)
i5 = int_lt(i4, 1000)
guard_true(i5, descr=<Guard0 key=1>) [p2, i4, i3]
i6 = int_add(i4, 1)
p7 = new(descr=<SizeDescr 16>)
setfield_gc(p7, i6, descr=<FieldS Box.v 8>)
jump(p7, i3, descr=TargetToken(11))
";

/// A loop whose step is a pure op of a parameter it passes on unchanged: the body label
/// carries the step, computed once in the peeled iteration.
const INVARIANT_LOOP: &str = "
[i0, i1, i2]
label(i0, i1, i2, descr=TargetToken(15)) -> [i3, i4, i5]
i6 = int_mul(i4, 3)
i7 = int_add(i3, i6)
i8 = int_lt(i7, 100000)
guard_true(i8, descr=<Guard0 key=1>) [i3, i4, i5]
jump(i7, i4, i5, descr=TargetToken(15))
";

/// A bridge out of guard `g` of `out` that counts its passes in the last exit word and
/// leaves at resume key 50 on the third, then makes the loop's header operands with `make`
/// from the exit words and the new count and jumps to the header `header`.
fn bridge(out: &Optimized, g: GuardId, header: u64, make: impl Fn(&mut TraceBuilder, &[Value]) -> Vec<Value>) -> Trace {
    let at = guard_op(&out.trace, g).unwrap();
    let gd = out.trace.guard_of(at).unwrap();
    let facts = out.guard_facts.iter().find(|f| f.guard == g);
    let mut b = TraceBuilder::new();
    b.guard_ids_from(100);
    let fail: Vec<Value> = bridge_prologue(&out.trace, gd, facts, &mut b)
        .into_iter()
        .map(|v| v.unwrap())
        .collect();
    let (one, three) = (b.const_int(1), b.const_int(3));
    let pass = b.op(Opcode::IntAdd, &[*fail.last().unwrap(), one]);
    let more = b.op(Opcode::IntLt, &[pass, three]);
    let mut exit = fail.clone();
    exit.push(pass);
    b.guard(Opcode::GuardTrue, &[more], &exit, 50);
    let mut words = fail;
    *words.last_mut().unwrap() = pass;
    let args = make(&mut b, &words);
    let d = b.descr(Descr::Target(header));
    b.op_with_descr(Opcode::Jump, &args, d);
    b.build().unwrap()
}

/// The tree of `out` with `bridge` at `g`, run on `inputs`, the same with the bridge
/// optimized against the loop's body entries; the optimized bridge.
/// `steps`: objects whose field at offset 8 holds 7.
fn compare(out: &Optimized, g: GuardId, bridge: &Trace, inputs: &[RtValue], steps: &[(u64, i64)]) -> Trace {
    let opt = Optimizer::new()
        .optimize_bridge(bridge, &Options::default(), &out.body_entries)
        .unwrap();
    let tree = |bt: Trace| TraceTree {
        root: out.trace.clone(),
        bridges: vec![Bridge { guard: g, trace: bt }],
    };
    let (header, body) = (tree(bridge.clone()), tree(opt.trace.clone()));
    trace_ir::verify_tree(&body).unwrap();
    let cfg = RunConfig {
        max_iterations: 100_000,
        preset: steps.iter().map(|&(o, off)| ((o, off), RtValue::Int(7))).collect(),
        ..RunConfig::default()
    };
    let (want, got) = (run_tree(&header, inputs, &cfg), run_tree(&body, inputs, &cfg));
    outcomes_equivalent_by_resume_key(&want, &got).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(got.outcome, trace_interp::Outcome::GuardFailed { resume_key: 50, .. }),
        "{:?}",
        got.outcome
    );
    assert!(got.iterations > 100, "{} iterations", got.iterations);
    opt.trace
}

#[test]
fn a_bridge_redoes_the_short_preamble_of_a_body_that_carries_a_load() {
    let out = peeled(CARRYING_LOOP);
    let entry = out.body_entries.first().expect("the carrying body is an entry");
    assert_eq!(entry.carried.len(), 1, "{entry:?}");
    let g = last_guard_with_key(&out.trace, 1);
    // The bridge restarts the count from 0 with the same object.
    let b = bridge(&out, g, 9, |b, f| {
        let zero = b.const_int(0);
        vec![f[0], zero, f[2]]
    });
    let obj = 0x1000;
    let opt = compare(
        &out,
        g,
        &b,
        &[RtValue::Ref(obj), RtValue::Int(0), RtValue::Int(0)],
        &[(obj, 8)],
    );
    assert_eq!(
        jump_token(&opt),
        Some(trace_ir::peeled_body_token(9)),
        "{}",
        trace_ir::print_trace(&opt)
    );
    let loads = opt.ops.iter().filter(|o| o.opcode == Opcode::GetfieldGcI).count();
    assert_eq!(loads, 1, "{}", trace_ir::print_trace(&opt));
}

#[test]
fn a_bridge_passes_the_fields_of_an_object_the_body_takes_field_by_field() {
    let out = peeled(BOXING_LOOP);
    let entry = out.body_entries.first().expect("the boxing body is an entry");
    assert_eq!(entry.carried_virtuals.len(), 1, "{entry:?}");
    let g = last_guard_with_key(&out.trace, 1);
    // The bridge boxes the counter minus 500 and goes on.
    let b = bridge(&out, g, 11, |b, f| {
        let k = b.const_int(500);
        let i = b.op(Opcode::IntSub, &[f[1], k]);
        let size = b.descr(Descr::Size(trace_ir::SizeDescr { size: 16, vtable: None }));
        let field = out
            .trace
            .descrs
            .iter()
            .find(|d| d.as_field().is_some())
            .unwrap()
            .clone();
        let field = b.descr(field);
        let p = b.op_with_descr(Opcode::New, &[], size);
        b.op_with_descr(Opcode::SetfieldGc, &[p, i], field);
        vec![p, f[2]]
    });
    let opt = compare(&out, g, &b, &[RtValue::Ref(0x1000), RtValue::Int(0)], &[]);
    assert_eq!(
        jump_token(&opt),
        Some(trace_ir::peeled_body_token(11)),
        "{}",
        trace_ir::print_trace(&opt)
    );
    assert!(
        opt.ops.iter().all(|o| o.opcode != Opcode::New),
        "{}",
        trace_ir::print_trace(&opt)
    );
}

#[test]
fn a_bridge_whose_box_refers_to_itself_enters_the_header() {
    // The loop's box has a reference field it leaves null; the bridge's box points to
    // itself, so its fields cannot be passed without making it.
    let out = peeled(
        "
[p0, i1]
label(p0, i1, descr=TargetToken(13)) -> [p2, i3]
i4 = getfield_gc_i(p2, descr=<FieldS Box.v 8>)
i5 = int_lt(i4, 1000)
guard_true(i5, descr=<Guard0 key=1>) [p2, i4, i3]
i6 = int_add(i4, 1)
p7 = new(descr=<SizeDescr 24>)
setfield_gc(p7, i6, descr=<FieldS Box.v 8>)
setfield_gc(p7, ConstPtr(null), descr=<FieldP Box.link 16>)
jump(p7, i3, descr=TargetToken(13))
",
    );
    let entry = out.body_entries.first().expect("the boxing body is an entry");
    assert_eq!(entry.carried_virtuals.len(), 1, "{entry:?}");
    let g = last_guard_with_key(&out.trace, 1);
    let b = bridge(&out, g, 13, |b, f| {
        let size = b.descr(Descr::Size(trace_ir::SizeDescr { size: 24, vtable: None }));
        let named = |b: &mut TraceBuilder, name: &str| {
            let d = out
                .trace
                .descrs
                .iter()
                .find(|d| d.as_field().is_some_and(|x| &*x.name == name))
                .unwrap()
                .clone();
            b.descr(d)
        };
        let (v, link) = (named(b, "Box.v"), named(b, "Box.link"));
        let p = b.op_with_descr(Opcode::New, &[], size);
        let zero = b.const_int(0);
        b.op_with_descr(Opcode::SetfieldGc, &[p, zero], v);
        b.op_with_descr(Opcode::SetfieldGc, &[p, p], link);
        vec![p, f[2]]
    });
    let opt = compare(&out, g, &b, &[RtValue::Ref(0x1000), RtValue::Int(0)], &[]);
    assert_eq!(jump_token(&opt), Some(13), "{}", trace_ir::print_trace(&opt));
}

#[test]
fn a_bridge_computes_the_invariant_result_the_body_label_carries() {
    let out = peeled(INVARIANT_LOOP);
    let entry = out.body_entries.first().expect("the body is an entry");
    assert_eq!(entry.carried_pure.len(), 1, "{entry:?}");
    let g = last_guard_with_key(&out.trace, 1);
    // The bridge restarts the count from 0 with a step one larger: the body's `i4 * 3`
    // must be computed again, on the new operand.
    let b = bridge(&out, g, 15, |b, f| {
        let (zero, one) = (b.const_int(0), b.const_int(1));
        let step = b.op(Opcode::IntAdd, &[f[1], one]);
        vec![zero, step, f[2]]
    });
    let opt = compare(&out, g, &b, &[RtValue::Int(0), RtValue::Int(1), RtValue::Int(0)], &[]);
    assert_eq!(
        jump_token(&opt),
        Some(trace_ir::peeled_body_token(15)),
        "{}",
        trace_ir::print_trace(&opt)
    );
    let muls = opt.ops.iter().filter(|o| o.opcode == Opcode::IntMul).count();
    assert_eq!(muls, 1, "{}", trace_ir::print_trace(&opt));
}
