//! Bridges: what the optimizer states at a loop's guards, what a peeled loop's body
//! assumes, and a bridge optimized from the former into the latter.

mod short_preamble;

use optimizer::{Optimized, Optimizer, Options};
use trace_interp::{outcomes_equivalent_by_resume_key, run_tree, RtValue, RunConfig};
use trace_ir::tree::{guard_op, Bridge, TraceTree};
use trace_ir::{
    bridge_prologue, parse_trace, BodyEntry, Descr, GuardId, Opcode, Trace, TraceBuilder, Value, WordFacts,
};

/// A counting loop with an accumulator kept in `[0, 255]` by a mask, and a pass number
/// it passes on unchanged.
const MASKED_LOOP: &str = "
[i0, i1, i2]
label(i0, i1, i2, descr=TargetToken(7)) -> [i3, i4, i5]
i6 = int_lt(i3, 1000)
guard_true(i6, descr=<Guard0 key=1>) [i3, i4, i5]
i7 = int_add(i4, i3)
i8 = int_and(i7, 255)
i9 = int_add(i3, 1)
jump(i9, i8, i5, descr=TargetToken(7))
";

fn peeled(text: &str) -> Optimized {
    let t = parse_trace(text).unwrap();
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    Optimizer::new().optimize(&t, &opts).unwrap()
}

/// The guard of `t` with resume key `key` that comes last (in a peeled loop: the body's).
fn last_guard_with_key(t: &Trace, key: u64) -> GuardId {
    t.guards.iter().rev().find(|g| g.resume_key == key).unwrap().id
}

/// A bridge out of guard `g` of the loop `out` (with the optimizer's facts there) that
/// counts the pass and leaves at the third, sets the counter to `counter - 1000` and the
/// accumulator to what `acc` makes of it, then jumps to the loop's header.
fn bridge(out: &Optimized, g: GuardId, acc: impl Fn(&mut TraceBuilder, Value) -> Value) -> Trace {
    let at = guard_op(&out.trace, g).unwrap();
    let gd = out.trace.guard_of(at).unwrap();
    let facts = out.guard_facts.iter().find(|f| f.guard == g);
    let mut b = TraceBuilder::new();
    b.guard_ids_from(100);
    let fail = bridge_prologue(&out.trace, gd, facts, &mut b);
    let (i, a, p) = (fail[0].unwrap(), fail[1].unwrap(), fail[2].unwrap());
    let (one, three) = (b.const_int(1), b.const_int(3));
    let p2 = b.op(Opcode::IntAdd, &[p, one]);
    let more = b.op(Opcode::IntLt, &[p2, three]);
    b.guard(Opcode::GuardTrue, &[more], &[i, a, p2], 50);
    let k = b.const_int(1000);
    let i2 = b.op(Opcode::IntSub, &[i, k]);
    let a2 = acc(&mut b, a);
    let d = b.descr(Descr::Target(7));
    b.op_with_descr(Opcode::Jump, &[i2, a2, p2], d);
    b.build().unwrap()
}

/// Where the final jump of `b` goes once optimized as a bridge of the loop `out`.
fn optimized_target(b: &Trace, out: &Optimized) -> Option<u64> {
    let opt = Optimizer::new()
        .optimize_bridge(b, &Options::default(), &out.body_entries)
        .unwrap();
    jump_token(&opt.trace)
}

fn jump_token(t: &Trace) -> Option<u64> {
    let jump = t.ops.last()?;
    match jump.descr.map(|d| t.descr(d)) {
        Some(Descr::Target(x)) if jump.opcode == Opcode::Jump => Some(*x),
        _ => None,
    }
}

#[test]
fn a_peeled_loop_exports_its_body_and_its_guard_facts() {
    let out = peeled(MASKED_LOOP);
    assert_eq!(
        out.body_entries,
        vec![BodyEntry {
            header: 7,
            body: trace_ir::peeled_body_token(7),
            params: vec![
                WordFacts::default(),
                WordFacts {
                    range: Some((0, 255)),
                    ..WordFacts::default()
                },
                WordFacts::default(),
            ],
            ..BodyEntry::default()
        }]
    );
    // One entry per guard, one per exit word; at the body's guard the accumulator is in its
    // mask (what is known before the guard: a bridge does not learn from the failed test).
    assert_eq!(out.guard_facts.len(), out.trace.guards.len());
    let body_guard = last_guard_with_key(&out.trace, 1);
    let f = &out.guard_facts.iter().find(|f| f.guard == body_guard).unwrap().words;
    assert_eq!(f.len(), 3);
    assert!(f[0].is_empty(), "{:?}", f[0]);
    assert_eq!(f[1].range, Some((0, 255)));
}

#[test]
fn hints_state_facts_the_optimizer_learns_and_drops() {
    let t = parse_trace(
        "
[i0, i1]
record_int_range(i0, 0, 255)
record_int_bits(i1, 3, 2)
i2 = int_lt(i0, 256)
guard_true(i2, descr=<Guard0 key=1>) []
i3 = int_and(i1, 3)
finish(i3)
",
    )
    .unwrap();
    let out = Optimizer::new().optimize(&t, &Options::default()).unwrap();
    let printed = trace_ir::print_trace(&out.trace);
    assert!(!printed.contains("record_int"), "{printed}");
    assert!(!printed.contains("guard_true"), "{printed}");
    assert!(printed.contains("finish(2)"), "{printed}");
}

#[test]
fn a_bridge_that_keeps_the_mask_enters_the_body() {
    let out = peeled(MASKED_LOOP);
    let g = last_guard_with_key(&out.trace, 1);
    let b = bridge(&out, g, |_, a| a);
    assert_eq!(optimized_target(&b, &out), Some(trace_ir::peeled_body_token(7)));
    // Without the body as an entry, or without the facts at the guard, it stays at the header.
    let alone = Optimizer::new().optimize(&b, &Options::default()).unwrap();
    assert_eq!(jump_token(&alone.trace), Some(7));
    let at = guard_op(&out.trace, g).unwrap();
    let mut bare = TraceBuilder::new();
    let fail = bridge_prologue(&out.trace, out.trace.guard_of(at).unwrap(), None, &mut bare);
    let d = bare.descr(Descr::Target(7));
    let args: Vec<Value> = fail.iter().map(|v| v.unwrap()).collect();
    bare.op_with_descr(Opcode::Jump, &args, d);
    assert_eq!(optimized_target(&bare.build().unwrap(), &out), Some(7));
}

#[test]
fn a_bridge_that_breaks_the_mask_enters_the_header() {
    let out = peeled(MASKED_LOOP);
    let g = last_guard_with_key(&out.trace, 1);
    let b = bridge(&out, g, |b, a| {
        let one = b.const_int(1);
        b.op(Opcode::IntAdd, &[a, one])
    });
    assert_eq!(optimized_target(&b, &out), Some(7));
}

/// The tree with the bridge entering the body computes what it computes with the bridge
/// entering the header, for accumulators at the edges of the mask.
#[test]
fn entering_the_body_computes_what_entering_the_header_does() {
    let out = peeled(MASKED_LOOP);
    let g = last_guard_with_key(&out.trace, 1);
    let b = bridge(&out, g, |_, a| a);
    let opt = Optimizer::new()
        .optimize_bridge(&b, &Options::default(), &out.body_entries)
        .unwrap();
    assert_eq!(jump_token(&opt.trace), Some(trace_ir::peeled_body_token(7)));
    let tree = |bt: Trace| TraceTree {
        root: out.trace.clone(),
        bridges: vec![Bridge { guard: g, trace: bt }],
    };
    let (header, body) = (tree(b), tree(opt.trace));
    trace_ir::verify_tree(&body).unwrap();
    let cfg = RunConfig {
        max_iterations: 100_000,
        ..RunConfig::default()
    };
    for (i, a) in [(0, 0), (5, 255), (990, 17), (999, 128)] {
        let inputs = [RtValue::Int(i), RtValue::Int(a), RtValue::Int(0)];
        let (want, got) = (run_tree(&header, &inputs, &cfg), run_tree(&body, &inputs, &cfg));
        outcomes_equivalent_by_resume_key(&want, &got).unwrap_or_else(|e| panic!("({i}, {a}): {e}"));
        assert!(
            matches!(got.outcome, trace_interp::Outcome::GuardFailed { resume_key: 50, .. }),
            "({i}, {a}): {:?}",
            got.outcome
        );
        assert!(got.iterations > 2000, "({i}, {a}): {} iterations", got.iterations);
    }
}

/// Known bits at a guard are stated under their mask: the bits outside it are zero.
#[test]
fn guard_facts_state_known_bits_under_their_mask() {
    let t = parse_trace(
        "
[i0]
i1 = int_or(i0, 12)
i2 = int_lt(i0, 3)
guard_true(i2, descr=<Guard0 key=1>) [i1]
finish(i1)
",
    )
    .unwrap();
    let out = Optimizer::new().optimize(&t, &Options::default()).unwrap();
    let f = &out.guard_facts[0].words[0];
    let (mask, bits) = f.bits.expect("known bits");
    assert_eq!(bits & !mask, 0, "{f:?}");
    assert_eq!((mask & 12, bits & 12), (12, 12), "{f:?}");
}

#[test]
fn a_bridge_starts_from_the_fields_its_guard_knew() {
    // The guard knows two fields of its object: one loaded (an exit word), one written (a
    // constant); a bridge out of it states them and reads neither again. A field the exit
    // writes is not stated (the bridge performs that write itself).
    let t = parse_trace(
        "[p0, i1]
         p2 = getfield_gc_r(p0, descr=<FieldP map 8>)
         setfield_gc(p0, 5, descr=<FieldS n 16>)
         p3 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p0, p3, descr=<FieldP box 24>)
         guard_true(i1, descr=<Guard1>) [p0, p2]
         finish(p2)",
    )
    .unwrap();
    let out = Optimizer::new().optimize(&t, &Options::default()).unwrap();
    let g = GuardId(1);
    let facts = out.guard_facts.iter().find(|f| f.guard == g).unwrap();
    let named: Vec<(usize, String, trace_ir::FieldValue)> = facts
        .fields
        .iter()
        .map(|f| {
            let d = out.trace.descr(f.descr).as_field().unwrap().name.to_string();
            (f.object, d, f.value)
        })
        .collect();
    assert_eq!(
        named,
        vec![
            (0, "map".to_string(), trace_ir::FieldValue::Word(1)),
            (0, "n".to_string(), trace_ir::FieldValue::Const(trace_ir::Const::Int(5))),
        ],
        "{}",
        trace_ir::print_trace(&out.trace)
    );
    // The bridge: its prologue states the fields, its loads of them are gone.
    let at = guard_op(&out.trace, g).unwrap();
    let mut b = TraceBuilder::new();
    b.guard_ids_from(100);
    let fail = bridge_prologue(&out.trace, out.trace.guard_of(at).unwrap(), Some(facts), &mut b);
    let p0 = fail[0].unwrap();
    let map = b.descr(out.trace.descr(facts.fields[0].descr).clone());
    let n = b.descr(out.trace.descr(facts.fields[1].descr).clone());
    let m = b.op_with_descr(Opcode::GetfieldGcR, &[p0], map);
    let k = b.op_with_descr(Opcode::GetfieldGcI, &[p0], n);
    b.finish(&[m, k]);
    let bridge = b.build().unwrap();
    let opt = Optimizer::new().optimize(&bridge, &Options::default()).unwrap();
    assert!(
        opt.trace.ops.iter().all(|o| !o.opcode.has(trace_ir::OpFlags::LOAD)),
        "{}",
        trace_ir::print_trace(&opt.trace)
    );
    // The tree runs as the loop alone would, the bridge's promises kept.
    let tree = TraceTree {
        root: out.trace.clone(),
        bridges: vec![Bridge {
            guard: g,
            trace: bridge,
        }],
    };
    trace_ir::verify_tree(&tree).unwrap();
    let r = run_tree(
        &tree,
        &[RtValue::Ref(0x5000_0000_3000), RtValue::Int(0)],
        &RunConfig::default(),
    );
    assert!(matches!(r.outcome, trace_interp::Outcome::Finish(_)), "{}", r.outcome);
}
