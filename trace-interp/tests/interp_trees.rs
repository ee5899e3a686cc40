//! Running trace trees: bridges entered from failing guards with the exit words, jumps
//! into another trace's label, the iteration limit over the whole tree, one memory model
//! across the traces, and random trees.

use trace_interp::random::{random_tree, RandomConfig};
use trace_interp::{run, run_tree, Outcome, RtValue, RunConfig};
use trace_ir::{parse_tree, verify_tree, GuardId};

/// `sum += i` for `i < n`; every eighth `i` the bridge adds `100 * i` instead.
const BRANCHY: &str = include_str!("../../trace-ir/tests/data/branchy.tree");

fn ints(v: &[i64]) -> Vec<RtValue> {
    v.iter().map(|&x| RtValue::Int(x)).collect()
}

#[test]
fn a_failing_guard_with_a_bridge_goes_on_in_the_bridge() {
    let tree = parse_tree(BRANCHY).unwrap();
    let cfg = RunConfig::default();
    let r = run_tree(&tree, &ints(&[0, 20, 0]), &cfg);
    // 0..20 with i = 0, 8, 16 counted a hundredfold.
    let sum: i64 = (0..20).sum::<i64>() + 99 * (8 + 16);
    assert_eq!(
        r.outcome,
        Outcome::GuardFailed {
            guard: GuardId(0),
            resume_key: 0,
            values: ints(&[20, 20, sum])
        }
    );
    // Each jump back from the bridge is an iteration.
    assert_eq!(r.iterations, 20);
    // The root alone leaves at the first failure of Guard1.
    let alone = run(&tree.root, &ints(&[0, 20, 0]), &cfg);
    assert!(matches!(alone.outcome, Outcome::GuardFailed { guard: GuardId(1), .. }));
}

#[test]
fn the_iteration_limit_counts_the_whole_tree() {
    let tree = parse_tree(BRANCHY).unwrap();
    let cfg = RunConfig {
        max_iterations: 10,
        ..RunConfig::default()
    };
    assert_eq!(
        run_tree(&tree, &ints(&[0, 20, 0]), &cfg).outcome,
        Outcome::IterationLimit
    );
}

#[test]
fn equal_descriptors_of_two_traces_are_one_writer() {
    // Under type-based aliasing, the bridge reads the field the root wrote through an equal
    // descriptor (fine), or through another descriptor of the same bytes (a broken promise).
    let tree = |read: &str| {
        parse_tree(&format!(
            "aliasing type-based
[i0]
p1 = new(descr=<SizeDescr 16>)
setfield_gc(p1, i0, descr=<FieldS x 8>)
guard_false(i0, descr=<Guard0>) [p1]
finish(i0)

# bridge out of Guard0
aliasing type-based
[p0]
{read}i2 = getfield_gc_i(p0, descr=<FieldS x 8>)
finish(i2)
"
        ))
        .unwrap()
    };
    let cfg = RunConfig::default();
    let fine = tree("");
    assert_eq!(run_tree(&fine, &ints(&[5]), &cfg).outcome, Outcome::Finish(ints(&[5])));
    match run_tree(
        &tree("i1 = getfield_gc_i(p0, descr=<FieldU other 8>)\n"),
        &ints(&[5]),
        &cfg,
    )
    .outcome
    {
        Outcome::Invalid { promise: true, .. } => {}
        other => panic!("{other}"),
    }
}

#[test]
fn random_trees_verify_and_leave() {
    let cfg = RandomConfig::self_contained();
    let (mut bridged, mut deeper) = (0, 0);
    for seed in 0..2000 {
        let (tree, inputs) = random_tree(&cfg, seed);
        verify_tree(&tree).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::print_tree(&tree)));
        let r = run_tree(&tree, &inputs, &RunConfig::default());
        assert_ne!(r.outcome, Outcome::IterationLimit, "seed {seed}");
        let alone = run(&tree.root, &inputs, &RunConfig::default());
        if r.outcome != alone.outcome {
            bridged += 1;
        }
        if tree.bridges.len() >= 2 && tree.bridges[1].guard != tree.bridges[0].guard {
            deeper += 1;
        }
    }
    assert!(bridged > 1500, "only {bridged} trees ran a bridge");
    assert!(deeper > 1000, "only {deeper} trees have a second bridge");
}

#[test]
fn a_bridge_prologue_rebuilds_the_guards_virtual_objects_from_its_exit_words() {
    // The guard's resume data holds an object (its field x = i0 * 3) and a hole; the bridge
    // starts with the prologue, reads the field back and finishes with it and the value.
    let root = trace_ir::parse_trace(
        "[i0]\ni1 = int_mul(i0, 3)\nguard_false(i0, descr=<Guard0>) [i0, $0, None] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=7>) <FieldS x 8>: i1}\nfinish(i0)\n",
    )
    .unwrap();
    let gd = &root.guards[0];
    let mut b = trace_ir::TraceBuilder::new();
    b.guard_ids_from(1);
    let fail = trace_ir::bridge_prologue(&root, gd, None, &mut b);
    assert_eq!(fail.len(), 3);
    assert!(fail[2].is_none());
    let (i0, obj) = (fail[0].unwrap(), fail[1].unwrap());
    let x = b.descr(trace_ir::Descr::Field(trace_ir::FieldDescr {
        name: "x".into(),
        offset: 8,
        size: 8,
        signed: true,
        kind: trace_ir::Kind::Int,
        immutable: false,
    }));
    let v = b.op_with_descr(trace_ir::Opcode::GetfieldGcI, &[obj], x);
    // The rebuilt instance has its class.
    let seven = b.const_int(7);
    b.guard(trace_ir::Opcode::GuardClass, &[obj, seven], &[], 0);
    b.finish(&[i0, v]);
    let bridge = b.build().unwrap();
    // Two exit words: i0 and the field.
    assert_eq!(bridge.num_inputs, 2);
    let tree = trace_ir::TraceTree {
        root,
        bridges: vec![trace_ir::Bridge {
            guard: GuardId(0),
            trace: bridge,
        }],
    };
    verify_tree(&tree).unwrap();
    let r = run_tree(&tree, &ints(&[5]), &RunConfig::default());
    assert_eq!(r.outcome, Outcome::Finish(ints(&[5, 15])));
}

#[test]
fn a_bridge_prologue_rebuilds_a_virtual_string_with_its_characters() {
    // The guard's resume data holds a string of three characters, one of them `i0 + 1` (300
    // stores its low byte, 44); the bridge reads the characters and the length back.
    let root = trace_ir::parse_trace(
        "[i0]\ni1 = int_add(i0, 1)\nguard_false(i0, descr=<Guard0>) [i0, $0] {$0 = newstr(3) [0]: i1, [2]: 98}\nfinish(i0)\n",
    )
    .unwrap();
    let gd = &root.guards[0];
    let mut b = trace_ir::TraceBuilder::new();
    b.guard_ids_from(1);
    let fail = trace_ir::bridge_prologue(&root, gd, None, &mut b);
    let s = fail[1].unwrap();
    let mut chars = Vec::new();
    for k in 0..3 {
        let k = b.const_int(k);
        chars.push(b.op(trace_ir::Opcode::Strgetitem, &[s, k]));
    }
    let n = b.op(trace_ir::Opcode::Strlen, &[s]);
    chars.push(n);
    b.finish(&chars);
    let tree = trace_ir::TraceTree {
        root,
        bridges: vec![trace_ir::Bridge {
            guard: GuardId(0),
            trace: b.build().unwrap(),
        }],
    };
    verify_tree(&tree).unwrap();
    let r = run_tree(&tree, &ints(&[299]), &RunConfig::default());
    assert_eq!(r.outcome, Outcome::Finish(ints(&[44, 0, 98, 3])));
}
