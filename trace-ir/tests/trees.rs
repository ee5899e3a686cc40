//! Trace trees: the text format of bridges, linking a PyPy log's bridges to their guards,
//! and every rule of `verify_tree`.

use trace_ir::text::{assemble_trees, bridge_origin, GuardName};
use trace_ir::tree::{exit_kinds, tree_jump, TreeJump};
use trace_ir::{parse_file, parse_tree, print_tree, verify_tree, GuardId, Kind, OpRef, TraceTree};

const LOOP: &str = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_lt(i0, i1)
guard_true(i2, descr=<Guard0>) [i0, i1]
i3 = int_and(i0, 7)
guard_true(i3, descr=<Guard1>) [i0, i1]
i4 = int_add(i0, 1)
jump(i4, i1, descr=TargetToken(1))
";

fn tree(bridges: &str) -> Result<TraceTree, String> {
    parse_tree(&format!("{LOOP}\n{bridges}")).map_err(|e| e.to_string())
}

fn refused(bridges: &str, why: &str) {
    match tree(bridges) {
        Ok(t) => panic!("accepted:\n{}", print_tree(&t)),
        Err(e) => assert!(e.contains(why), "expected `{why}` in: {e}"),
    }
}

#[test]
fn a_tree_prints_and_parses_back() {
    let t = tree(
        "# bridge out of Guard1\n[i0, i1]\ni2 = int_add(i0, 1)\nguard_true(i2, descr=<Guard2>) [i2]\njump(i2, i1, descr=TargetToken(1))\n\
         # bridge out of Guard2\n[i0]\nfinish(i0)\n",
    )
    .unwrap();
    assert_eq!(t.bridges.len(), 2);
    assert_eq!((t.bridges[0].guard, t.bridges[1].guard), (GuardId(1), GuardId(2)));
    assert_eq!(t.find_guard(GuardId(2)), Some((1, OpRef::new(3))));
    assert_eq!(t.find_label(1), Some((0, OpRef::new(2))));
    assert_eq!(t.bridge_of(GuardId(2)), Some(2));
    assert_eq!(tree_jump(&t, 1, OpRef::new(4)), TreeJump::Enter(0, OpRef::new(2)));
    let printed = print_tree(&t);
    assert!(printed.contains("\n# bridge out of Guard1\n[i0, i1]\n"), "{printed}");
    let again = parse_tree(&printed).unwrap();
    assert_eq!(print_tree(&again), printed);
    let g = t.root.guard_of(OpRef::new(8)).unwrap();
    assert_eq!(exit_kinds(&t.root, g), vec![Kind::Int, Kind::Int]);
}

#[test]
fn exit_words_are_the_values_of_the_resume_data_virtual_fields_included() {
    let t = parse_tree(
        "[i0]\ni1 = int_add(i0, 1)\nguard_true(i0, descr=<Guard0>) [$0, i0, None] {$0 = new(descr=<SizeDescr 16>) <FieldF x 8>: 1.5, <FieldS y 0>: i1}\nfinish(i0)\n\
         # bridge out of Guard0\n[i0, f1, i2]\nfinish(i2)\n",
    )
    .unwrap();
    let g = t.root.guard_of(OpRef::new(2)).unwrap();
    assert_eq!(exit_kinds(&t.root, g), vec![Kind::Int, Kind::Float, Kind::Int]);
}

#[test]
fn bridges_must_leave_from_a_guard_of_an_earlier_trace_once() {
    refused("# bridge out of Guard7\n[i0]\nfinish(i0)\n", "expected one tree");
    refused(
        "# bridge out of Guard1\n[i0, i1]\nfinish(i0)\n# bridge out of Guard1\n[i0, i1]\nfinish(i1)\n",
        "already has a bridge",
    );
    // A bridge out of a guard of a bridge that comes after it.
    let mut t = tree("# bridge out of Guard1\n[i0, i1]\nguard_true(i0, descr=<Guard2>) [i0]\nfinish(i0)\n# bridge out of Guard2\n[i0]\nfinish(i0)\n").unwrap();
    t.bridges.swap(0, 1);
    let e = verify_tree(&t).unwrap_err();
    assert!(
        e.to_string()
            .contains("not a guard of the root or of an earlier bridge"),
        "{e}"
    );
}

#[test]
fn a_bridge_takes_the_exit_words_of_its_guard() {
    refused("# bridge out of Guard1\n[i0]\nfinish(i0)\n", "takes inputs");
    refused("# bridge out of Guard1\n[i0, f1]\nfinish(i0)\n", "takes inputs");
}

#[test]
fn guard_ids_and_label_tokens_are_unique_in_a_tree() {
    refused(
        "# bridge out of Guard1\n[i0, i1]\nguard_true(i0, descr=<Guard0>) [i0]\nfinish(i0)\n",
        "also a guard of an earlier trace",
    );
    refused(
        "# bridge out of Guard1\n[i0, i1]\nlabel(i0, descr=TargetToken(1))\njump(i0, descr=TargetToken(1))\n",
        "labels two ops of the tree",
    );
}

#[test]
fn a_jump_into_another_trace_fits_its_label() {
    refused(
        "# bridge out of Guard1\n[i0, i1]\njump(i0, descr=TargetToken(1))\n",
        "jump passes 1 values to a label of 2 parameters",
    );
    refused(
        "# bridge out of Guard1\n[i0, i1]\nf2 = cast_int_to_float(i0)\njump(i0, f2, descr=TargetToken(1))\n",
        "wrong kind",
    );
    // A token no trace of the tree has leaves the tree.
    let t = tree("# bridge out of Guard1\n[i0, i1]\njump(i0, i1, descr=TargetToken(99))\n").unwrap();
    assert_eq!(tree_jump(&t, 1, OpRef::new(2)), TreeJump::Out);
}

#[test]
fn a_label_whose_loop_reads_values_from_before_it_is_entered_only_after_they_are_computed() {
    // The loop after label 5 reads i2, computed before the label: a bridge out of Guard0
    // (before i2) cannot enter it; a bridge out of Guard1 (in the loop) can.
    let root = "
[i0]
guard_true(i0, descr=<Guard0>) [i0]
i2 = int_mul(i0, 3)
label(i0, descr=TargetToken(5))
i4 = int_add(i0, i2)
i5 = int_lt(i4, 100)
guard_true(i5, descr=<Guard1>) [i4]
jump(i4, descr=TargetToken(5))
";
    let bridge = |g: u32| {
        format!("{root}\n# bridge out of Guard{g}\n[i0]\ni1 = int_add(i0, 1)\njump(i1, descr=TargetToken(5))\n")
    };
    let e = parse_tree(&bridge(0)).unwrap_err().to_string();
    assert!(e.contains("which this path has not computed"), "{e}");
    parse_tree(&bridge(1)).unwrap();
    // A bridge out of a bridge of Guard1 descends from a guard in the loop as well.
    let deeper = format!(
        "{}\n# bridge out of Guard2\n[i0]\njump(i0, descr=TargetToken(5))\n",
        bridge(1).replace(
            "i1 = int_add(i0, 1)\n",
            "i1 = int_add(i0, 1)\nguard_true(i1, descr=<Guard2>) [i1]\n"
        )
    );
    parse_tree(&deeper).unwrap();
}

#[test]
fn a_pypy_logs_bridges_are_linked_to_their_guards_by_address() {
    let log = "\
[1] {jit-log-opt-loop
# Loop 0 (f) : loop with 5 ops
[i0]
label(i0, descr=TargetToken(140))
i1 = int_lt(i0, 10)
guard_true(i1, descr=<Guard0x7f00aa>) [i0]
i2 = int_add(i0, 1)
jump(i2, descr=TargetToken(140))
[2] jit-log-opt-loop}
[3] {jit-log-opt-bridge
# bridge out of Guard 0x7f00aa with 2 ops
[i0]
i1 = int_sub(i0, 10)
jump(i1, descr=TargetToken(140))
[4] jit-log-opt-bridge}
[5] {jit-log-opt-bridge
# bridge out of Guard 0x7f00bb with 1 ops
[i0]
finish(i0)
[6] jit-log-opt-bridge}
";
    let traces = parse_file(log).unwrap();
    assert_eq!(bridge_origin(&traces[1].info), Some(GuardName::Address(0x7f00aa)));
    assert_eq!(bridge_origin(&traces[0].info), None);
    let trees = assemble_trees(traces);
    // The second bridge's guard is not in the log: it stays a tree of its own.
    assert_eq!(trees.len(), 2);
    assert_eq!(trees[0].bridges.len(), 1);
    let g = trees[0].bridges[0].guard;
    assert_eq!(
        trees[0].root.guards.iter().find(|gd| gd.id == g).unwrap().resume_key,
        0x7f00aa
    );
    verify_tree(&trees[0]).unwrap();
}
