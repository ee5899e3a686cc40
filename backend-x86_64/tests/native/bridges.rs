//! Trace trees: bridges attached to guards (out of the loop and out of bridges, jumping
//! back into the loop or finishing), guard failure counters, and the bridges the backend
//! refuses; each tree compared with the reference interpreter's `run_tree`.

use super::random::same_with_heap;
use super::*;
use trace_interp::random::{grow_tree, random_tree};
use trace_interp::run_tree;
use trace_ir::tree::{verify_tree, Bridge, TraceTree};
use trace_ir::GuardId;

/// Compile a tree: its root, then each bridge attached in order.
fn compile_tree(tree: &TraceTree, o: &CompileOptions) -> Result<CompiledTrace, CompileError> {
    let mut c = compile(&tree.root, o)?;
    let mut compiler = Compiler::new();
    for b in &tree.bridges {
        compiler.attach_bridge(&mut c, b.guard, &b.trace, o)?;
    }
    Ok(c)
}

/// Hooks mode: memory and calls through the runtime (`SimpleHeap` performs them).
fn hooks() -> CompileOptions {
    CompileOptions {
        memory: MemoryAccess::Hooks,
        ..opts()
    }
}

/// Run `tree` natively and in the interpreter on `inputs`; compare.
fn tree_differential(tree: &TraceTree, inputs: &[RtValue], o: &CompileOptions) -> Result<interp::RunResult, String> {
    let int = run_tree(tree, inputs, &RunConfig::default());
    let c = compile_tree(tree, o).map_err(|e| format!("{e}\n{}", trace_ir::print_tree(tree)))?;
    if int.outcome == Outcome::IterationLimit {
        return Ok(int);
    }
    let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
    let mut heap = SimpleHeap::new();
    let native = c.run_test(&words, &mut heap).unwrap();
    same_with_heap(&tree.root, &native, &heap, &int).map_err(|e| format!("{e}\n{}", trace_ir::print_tree(tree)))?;
    Ok(int)
}

/// `sum += i` for `i < n`; every eighth `i` the guard `i & 7 != 0` fails: the bridge adds
/// `100 * i` instead and jumps back into the loop.
fn branchy_loop() -> TraceTree {
    let text = include_str!("../../../trace-ir/tests/data/branchy.tree");
    trace_ir::parse_tree(text).unwrap()
}

fn expected_branchy_sum(n: i64) -> i64 {
    (0..n).map(|i| if i & 7 == 0 { 100 * i } else { i }).sum()
}

#[test]
fn a_bridge_keeps_the_rare_path_native() {
    let tree = branchy_loop();
    let c = compile_tree(&tree, &opts()).unwrap();
    assert_eq!(c.num_bridges(), 1);
    assert!(c.has_bridge(GuardId(1)) && !c.has_bridge(GuardId(0)));
    for n in [0i64, 1, 8, 9, 100] {
        match c.run_test(&[0, n as u64, 0], &mut SimpleHeap::new()).unwrap() {
            Exit::Guard { guard, values, .. } => {
                assert_eq!(guard, GuardId(0));
                assert_eq!(values, ints(&[n, n, expected_branchy_sum(n)]));
            }
            other => panic!("{other:?}"),
        }
    }
    // The interpreter agrees, under register pressure too.
    for o in [opts(), tight(), hooks()] {
        tree_differential(&tree, &[RtValue::Int(0), RtValue::Int(77), RtValue::Int(5)], &o).unwrap();
    }
}

#[test]
fn exit_stubs_count_guard_failures() {
    let tree = branchy_loop();
    let mut c = compile(&tree.root, &opts()).unwrap();
    assert_eq!(c.guard_failures(GuardId(1)), Some(0));
    assert_eq!(c.guard_failures(GuardId(9)), None);
    for start in [0u64, 8, 16] {
        c.run_test(&[start, 100, 0], &mut SimpleHeap::new()).unwrap();
    }
    assert_eq!(c.guard_failures(GuardId(1)), Some(3));
    assert_eq!(c.guard_failures(GuardId(0)), Some(0));
    // With the bridge attached the guard's failures run the bridge: they no longer leave
    // native code, and the count of exits stays.
    c.attach_bridge(GuardId(1), &tree.bridges[0].trace, &opts()).unwrap();
    match c.run_test(&[0, 100, 0], &mut SimpleHeap::new()).unwrap() {
        Exit::Guard { guard, values, .. } => {
            assert_eq!(guard, GuardId(0));
            assert_eq!(values, ints(&[100, 100, expected_branchy_sum(100)]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.guard_failures(GuardId(1)), Some(3));
    assert_eq!(c.guard_failures(GuardId(0)), Some(1));
}

#[test]
fn bridges_out_of_bridges_and_finishing_bridges() {
    // Guard1's bridge has a guard of its own (i < 50) whose bridge finishes with a value.
    let text = "
[i0, i1, i2]
label(i0, i1, i2, descr=TargetToken(3))
i3 = int_lt(i0, i1)
guard_true(i3, descr=<Guard0>) [i0, i2]
i4 = int_and(i0, 3)
guard_true(i4, descr=<Guard1>) [i0, i1, i2]
i5 = int_add(i2, 1)
i6 = int_add(i0, 1)
jump(i6, i1, i5, descr=TargetToken(3))

# bridge out of Guard1
[i0, i1, i2]
i3 = int_lt(i0, 50)
guard_true(i3, descr=<Guard2>) [i2, i0]
i4 = int_add(i2, 1000)
i5 = int_add(i0, 1)
jump(i5, i1, i4, descr=TargetToken(3))

# bridge out of Guard2
[i0, i1]
i2 = int_mul(i1, 2)
finish(i0, i2)
";
    let tree = trace_ir::parse_tree(text).unwrap();
    let c = compile_tree(&tree, &opts()).unwrap();
    // i = 0, 4, ..., 48 take bridge 1 (13 times); i = 52 leaves through bridge 2.
    let sum = 52 + 13 * 1000 - 13;
    match c.run_test(&[0, 100, 0], &mut SimpleHeap::new()).unwrap() {
        Exit::Finish { values } => assert_eq!(values, ints(&[sum, 104])),
        other => panic!("{other:?}"),
    }
    // Guard2 failed once, into its bridge: no exit to count.
    assert_eq!(c.guard_failures(GuardId(2)), Some(0));
    for o in [opts(), tight(), hooks()] {
        tree_differential(&tree, &[RtValue::Int(0), RtValue::Int(100), RtValue::Int(0)], &o).unwrap();
    }
}

#[test]
fn a_bridge_gets_the_fields_of_virtual_objects_as_inputs() {
    // The guard's resume data holds a virtual object: its field is an exit word.
    let text = "
[i0, i1]
label(i0, i1, descr=TargetToken(5))
i2 = int_lt(i0, i1)
i3 = int_mul(i0, 3)
guard_true(i2, descr=<Guard0>) [i0, $0] {$0 = new(descr=<SizeDescr 16>) <FieldS x 8>: i3}
i4 = int_add(i0, 1)
jump(i4, i1, descr=TargetToken(5))

# bridge out of Guard0
[i0, i1]
p2 = new(descr=<SizeDescr 16>)
setfield_gc(p2, i1, descr=<FieldS x 8>)
i3 = getfield_gc_i(p2, descr=<FieldS x 8>)
i4 = int_add(i3, i0)
finish(i4)
";
    let tree = trace_ir::parse_tree(text).unwrap();
    let c = compile_tree(&tree, &opts()).unwrap();
    match c.run_test(&[0, 5], &mut SimpleHeap::new()).unwrap() {
        Exit::Finish { values } => assert_eq!(values, ints(&[5 + 15])),
        other => panic!("{other:?}"),
    }
    tree_differential(&tree, &[RtValue::Int(0), RtValue::Int(5)], &opts()).unwrap();
    tree_differential(&tree, &[RtValue::Int(0), RtValue::Int(5)], &hooks()).unwrap();
}

#[test]
fn in_hooks_mode_a_request_names_the_trace_of_the_tree_its_op_is_in() {
    // The loop reads a field of its input; the bridge writes and reads one of its own
    // object: every such op goes to the runtime, which sees whose it is.
    let text = "
[p0, i1]
label(p0, i1, descr=TargetToken(5))
i2 = getfield_gc_i(p0, descr=<FieldS x 8>)
i3 = int_lt(i1, i2)
guard_true(i3, descr=<Guard0>) [i1]
i4 = int_add(i1, 1)
jump(p0, i4, descr=TargetToken(5))

# bridge out of Guard0
[i0]
p1 = new(descr=<SizeDescr 16>)
setfield_gc(p1, i0, descr=<FieldS x 8>)
i2 = getfield_gc_i(p1, descr=<FieldS x 8>)
finish(i2)
";
    struct Log {
        heap: SimpleHeap,
        seen: Vec<(usize, usize, Opcode)>,
    }
    impl Runtime for Log {
        fn alloc(&mut self, size: u64, class: u64) -> u64 {
            self.heap.alloc(size, class)
        }
        fn alloc_array(&mut self, size: u64, len: u64) -> u64 {
            self.heap.alloc_array(size, len)
        }
        fn exec(&mut self, req: &HookRequest<'_>) -> HookReply {
            self.seen.push((req.trace, req.op.index(), req.opcode));
            backend_x86_64::exec_in_memory(self, req)
        }
    }
    let tree = trace_ir::parse_tree(text).unwrap();
    let c = compile_tree(&tree, &hooks()).unwrap();
    let mut log = Log {
        heap: SimpleHeap::new(),
        seen: Vec::new(),
    };
    let obj = log.heap.alloc(16, 0);
    // SAFETY: the field read is of an object the runtime allocated with room for it.
    unsafe { *((obj + 8) as *mut i64) = 3 };
    // SAFETY: Hooks mode: every memory access goes through `log`.
    match unsafe { c.run(&[obj, 0], &mut log) }.unwrap() {
        Exit::Finish { values } => assert_eq!(values, ints(&[3])),
        other => panic!("{other:?}"),
    }
    // The loop's read is its op 5 (after the label's two parameters); it runs for i1 = 0..=3.
    let ops_of = |trace: usize| {
        log.seen
            .iter()
            .filter(|s| s.0 == trace)
            .map(|s| (s.1, s.2))
            .collect::<Vec<_>>()
    };
    assert_eq!(ops_of(0), vec![(5, Opcode::GetfieldGcI); 4], "{:?}", log.seen);
    assert_eq!(
        ops_of(1),
        vec![(1, Opcode::New), (2, Opcode::SetfieldGc), (3, Opcode::GetfieldGcI)],
        "{:?}",
        log.seen
    );
}

#[test]
fn bridges_that_cannot_be_attached_are_refused_and_leave_the_tree_as_it_was() {
    let tree = branchy_loop();
    let bridge = &tree.bridges[0].trace;
    let mut c = compile(&tree.root, &opts()).unwrap();
    let refused = |r: Result<(), CompileError>| match r {
        Err(CompileError::Bridge(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refused(c.attach_bridge(GuardId(42), bridge, &opts()));
    assert!(m.contains("no Guard42"), "{m}");
    // Inputs of other kinds than the guard's exit words.
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Float);
    b.finish(&[x]);
    let m = refused(c.attach_bridge(GuardId(1), &b.build().unwrap(), &opts()));
    assert!(m.contains("takes inputs"), "{m}");
    // A guard id the tree has already.
    let mut b = TraceBuilder::new();
    let ins: Vec<_> = (0..3).map(|_| b.input(Kind::Int)).collect();
    b.guard(Opcode::GuardTrue, &[ins[0]], &[], 0);
    b.finish(&ins);
    let m = refused(c.attach_bridge(GuardId(1), &b.build().unwrap(), &opts()));
    assert!(m.contains("also a guard of the tree"), "{m}");
    // Another memory mode than the tree's.
    let hooks = CompileOptions {
        memory: MemoryAccess::Hooks,
        ..opts()
    };
    let m = refused(c.attach_bridge(GuardId(1), bridge, &hooks));
    assert!(m.contains("the tree runs in Direct mode"), "{m}");
    assert_eq!(c.num_bridges(), 0);
    c.attach_bridge(GuardId(1), bridge, &opts()).unwrap();
    let m = refused(c.attach_bridge(GuardId(1), bridge, &opts()));
    assert!(m.contains("already has a bridge"), "{m}");
    assert_eq!(c.num_bridges(), 1);
}

#[test]
fn a_jump_must_pass_non_null_values_where_the_loop_takes_them_to_be() {
    // The loop's parameter p1 is a checked allocation passed around unchanged: its code
    // takes it to be non-null. A bridge passing a reference loaded from memory is refused; one that
    // checks it with `guard_nonnull` first, or passes the exit word back, is accepted.
    let root = "
[i0]
p1 = new(descr=<SizeDescr 24>)
guard_nonnull(p1, descr=<Guard5>) [i0]
label(i0, p1, descr=TargetToken(9))
i2 = int_lt(i0, 10)
guard_true(i2, descr=<Guard0>) [i0, p1]
setfield_gc(p1, i0, descr=<FieldS x 8>)
i3 = int_add(i0, 1)
jump(i3, p1, descr=TargetToken(9))
";
    let bridge = |body: &str| trace_ir::parse_trace(&format!("[i0, p1]\n{body}")).unwrap();
    let loaded = "p2 = getfield_gc_r(p1, descr=<FieldP next 16>)\n";
    let cases = [
        (format!("{loaded}jump(i0, p2, descr=TargetToken(9))"), false),
        (
            format!("{loaded}guard_nonnull(p2, descr=<Guard10>) [i0]\njump(i0, p2, descr=TargetToken(9))"),
            true,
        ),
        (
            "i2 = int_sub(i0, 20)\njump(i2, p1, descr=TargetToken(9))".to_string(),
            true,
        ),
    ];
    for (body, accepted) in cases {
        let root = trace_ir::parse_trace(root).unwrap();
        let mut c = compile(&root, &opts()).unwrap();
        let b = bridge(&body);
        match c.attach_bridge(GuardId(0), &b, &opts()) {
            Ok(()) => {
                assert!(accepted, "accepted: {body}");
                let tree = TraceTree {
                    root,
                    bridges: vec![Bridge {
                        guard: GuardId(0),
                        trace: b,
                    }],
                };
                // The last bridge goes round once more from -10 and leaves through itself
                // at 10 again: an endless tree, so it is not run.
                if body.contains("guard_nonnull") {
                    tree_differential(&tree, &[RtValue::Int(0)], &opts()).unwrap();
                }
            }
            Err(CompileError::Bridge(m)) => {
                assert!(!accepted, "refused ({m}): {body}");
                assert!(m.contains("non-null"), "{m}");
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_bridge_with_a_loop_of_its_own_is_entered_by_a_bridge_out_of_it() {
    // Bridge 1 (out of the loop's guard) runs a loop of its own, labelled TargetToken(50);
    // bridge 2, out of a guard in that loop, jumps back into it; the loop reads a value of
    // bridge 1 from before its label (i3), computed on the way to bridge 2.
    let text = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_lt(i0, 10)
guard_true(i2, descr=<Guard0>) [i0, i1]
i3 = int_add(i1, i0)
i4 = int_add(i0, 1)
jump(i4, i3, descr=TargetToken(1))

# bridge out of Guard0
[i0, i1]
i3 = int_mul(i1, 2)
label(i0, i1, descr=TargetToken(50))
i6 = int_lt(i0, 30)
guard_true(i6, descr=<Guard1>) [i0, i1]
i7 = int_and(i0, 3)
guard_true(i7, descr=<Guard2>) [i0, i1]
i8 = int_add(i1, i3)
i9 = int_add(i0, 1)
jump(i9, i8, descr=TargetToken(50))

# bridge out of Guard2
[i0, i1]
i2 = int_add(i0, 1)
i3 = int_sub(i1, 1)
jump(i2, i3, descr=TargetToken(50))
";
    let tree = trace_ir::parse_tree(text).unwrap();
    for o in [opts(), tight(), hooks()] {
        let int = tree_differential(&tree, &[RtValue::Int(0), RtValue::Int(0)], &o).unwrap();
        // i0 from 10 to 30 adds 2 * 45 fifteen times and, at 12, 16, 20, 24 and 28, takes 1.
        match &int.outcome {
            Outcome::GuardFailed {
                guard: GuardId(1),
                values,
                ..
            } => assert_eq!(values, &[RtValue::Int(30), RtValue::Int(45 + 15 * 90 - 5)]),
            other => panic!("{other}"),
        }
    }
}

/// Random trees (random loops with bridges out of the failing guard, out of that bridge,
/// and out of another guard) run natively and in the interpreter.
#[test]
fn random_trees() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 8,
        ..RandomConfig::default()
    };
    let (mut jumped, mut compared) = (0, 0);
    for seed in 0..3000u64 {
        let (tree, inputs) = random_tree(&cfg, seed);
        verify_tree(&tree).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::print_tree(&tree)));
        let o = match seed % 4 {
            3 => tight(),
            2 => hooks(),
            _ => opts(),
        };
        let int = tree_differential(&tree, &inputs, &o).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let alone = interp::run(&tree.root, &inputs, &RunConfig::default());
        compared += 1;
        if int.iterations > alone.iterations {
            jumped += 1;
        }
    }
    assert_eq!(compared, 3000);
    assert!(
        jumped > 1500,
        "only {jumped} trees jumped from a bridge back into the loop"
    );
}

/// The same on optimized loops, whose guards carry virtual objects: the bridges get their
/// fields as inputs.
#[test]
fn random_trees_of_optimized_loops() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        loops: true,
        ..RandomConfig::default()
    };
    let mut with_virtuals = 0;
    for seed in 0..2000u64 {
        let (t, inputs) = random_trace(&cfg, seed);
        let Ok(opt) = optimizer::optimize(&t, &optimizer::Options::default()) else {
            continue;
        };
        let tree = grow_tree(opt.trace, &inputs, seed, &opt.guard_facts);
        verify_tree(&tree).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::print_tree(&tree)));
        if tree.bridges.iter().any(|b| {
            let (k, at) = tree.find_guard(b.guard).unwrap();
            !tree.trace(k).guard_of(at).unwrap().virtuals.is_empty()
        }) {
            with_virtuals += 1;
        }
        let o = if seed % 3 == 0 { hooks() } else { opts() };
        tree_differential(&tree, &inputs, &o).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
    assert!(
        with_virtuals > 400,
        "only {with_virtuals} trees have a bridge out of a guard with virtuals"
    );
}

/// A tree round-trips through the text format.
#[test]
fn trees_round_trip_through_the_text_format() {
    let tree = branchy_loop();
    let again = trace_ir::parse_tree(&trace_ir::print_tree(&tree)).unwrap();
    assert_eq!(again.bridges.len(), 1);
    assert_eq!(again.bridges[0].guard, GuardId(1));
    trace_ir::traces_equivalent(&tree.root, &again.root).unwrap();
    trace_ir::traces_equivalent(&tree.bridges[0].trace, &again.bridges[0].trace).unwrap();
}
