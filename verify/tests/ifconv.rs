//! If-conversion of a bridge into its loop (`optimizer::ifconv`): the merged loop of a
//! hand-written tree, word for word; the shapes it refuses; and random loops with a short
//! bridge out of a guard of their body, run as trees and as merged loops by the interpreter
//! (same outcome: the same finish, or the same guard with the same exit words) and the merged
//! loops natively.

use optimizer::ifconv::merge_bridge;
use proptest::prelude::*;
use trace_interp::{run, run_tree, RtValue, RunConfig};
use trace_ir::{parse_tree, print_trace, Trace, TraceTree};

/// A loop whose body leaves through `Guard1` one time in eight, and its bridge: the rare
/// path counts (with an overflow check), the other one accumulates.
const TREE: &str = "
[i0, i1, i2, i3, i4]
label(i0, i1, i2, i3, i4, descr=TargetToken(1))
i10 = int_lt(i4, i0)
guard_true(i10, descr=<Guard0>) [i0, i1, i2, i3, i4]
i11 = int_lshift(i1, 13)
i12 = int_and(i11, 4294967295)
i13 = int_xor(i1, i12)
i14 = int_and(i13, 7)
guard_true(i14, descr=<Guard1>) [i0, i13, i2, i3, i4]
i15 = int_and(i13, 255)
i16 = int_add(i3, i15)
i17 = int_and(i16, 16777215)
i18 = int_add(i4, 1)
jump(i0, i13, i2, i17, i18, descr=TargetToken(1))

# bridge out of Guard1
[i0, i1, i2, i3, i4]
i5 = int_add_ovf(i2, 1)
guard_no_overflow(descr=<Guard2>) [i0, i1, i2, i3, i4]
i6 = int_add(i4, 1)
jump(i0, i1, i5, i3, i6, descr=TargetToken(1))
";

const MERGED: &str = "[i0, i1, i2, i3, i4]
label(i0, i1, i2, i3, i4, descr=TargetToken(1))
i11 = int_lt(i4, i0)
guard_true(i11, descr=<Guard0>) [i0, i1, i2, i3, i4]
i13 = int_lshift(i1, 13)
i14 = int_and(i13, 4294967295)
i15 = int_xor(i1, i14)
i16 = int_and(i15, 7)
i17 = int_is_zero(i16)
i18 = int_add_ovf(i2, i17)
guard_no_overflow(descr=<Guard2>) [i0, i15, i2, i3, i4]
i20 = int_add(i4, 1)
i21 = int_and(i15, 255)
i22 = int_add(i3, i21)
i23 = int_and(i22, 16777215)
i24 = int_select(i16, i23, i3)
jump(i0, i15, i18, i24, i20, descr=TargetToken(1))
";

fn tree(text: &str) -> TraceTree {
    parse_tree(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn merged(tree: &TraceTree) -> Option<Trace> {
    let b = &tree.bridges[0];
    merge_bridge(&tree.root, b.guard, &b.trace)
}

#[test]
fn a_counting_bridge_becomes_a_select_and_a_check_that_only_its_path_can_fail() {
    let t = tree(TREE);
    let m = merged(&t).expect("merges");
    assert_eq!(print_trace(&m), MERGED);
    // Same outcomes as the tree: through the loop's end, and through the bridge's overflow
    // check (the rare path's counter at its maximum).
    for rare in [0, i64::MAX - 3, i64::MAX] {
        let inputs = [1000, 2_463_534_242, rare, 0, 0].map(RtValue::Int);
        let want = run_tree(&t, &inputs, &RunConfig::default()).outcome;
        assert_eq!(run(&m, &inputs, &RunConfig::default()).outcome, want, "rare = {rare}");
        verify::fuzzing::native_matches(&m, &inputs).unwrap();
    }
}

#[test]
fn a_guard_of_the_bridge_becomes_a_guard_that_passes_off_its_path() {
    // The bridge stops counting at a limit: its guard is taken on the bridge's path only.
    let text = TREE.replace(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        "i7 = int_lt(i2, 1000)\nguard_true(i7, descr=<Guard3>) [i0, i1, i2]\ni6 = int_add(i4, 1)\njump(i0, i1, i5",
    );
    let t = tree(&text);
    let m = merged(&t).expect("merges");
    let listing = print_trace(&m);
    assert!(listing.contains("= int_select(i16, 1, i"), "{listing}");
    assert!(
        listing.contains("guard_true(") && listing.contains("descr=<Guard3>) [i0, i15, i2]"),
        "{listing}"
    );
    for rare in [0, 990, i64::MAX] {
        let inputs = [1000, 2_463_534_242, rare, 0, 0].map(RtValue::Int);
        let want = run_tree(&t, &inputs, &RunConfig::default()).outcome;
        assert_eq!(run(&m, &inputs, &RunConfig::default()).outcome, want, "rare = {rare}");
        verify::fuzzing::native_matches(&m, &inputs).unwrap();
    }
}

/// `TREE` with `edit` applied to its text: not merged.
#[track_caller]
fn refused(from: &str, to: &str) {
    assert!(TREE.contains(from));
    let text = TREE.replace(from, to);
    assert!(merged(&tree(&text)).is_none(), "merged:\n{text}");
}

#[test]
fn bridges_that_are_not_pure_short_paths_back_to_the_body_stay_bridges() {
    // A guard that is no condition.
    refused(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        "guard_value(i4, 5, descr=<Guard3>) [i0]\ni6 = int_add(i4, 1)\njump(i0, i1, i5",
    );
    // A call.
    refused(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        "i6 = call_i(ConstClass(f), i4, descr=<Calli 8 i EF=2>)\njump(i0, i1, i5",
    );
    // A division whose divisor may be zero on the path not taken.
    refused(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        "i6 = int_floordiv(i4, i1)\njump(i0, i1, i5",
    );
    // A path longer than `MAX_PATH_OPS`.
    let long: String = (0..optimizer::ifconv::MAX_PATH_OPS)
        .map(|k| format!("i{} = int_add(i4, {k})\n", 100 + k))
        .collect();
    refused(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        &format!("{long}i6 = int_add(i4, 1)\njump(i0, i1, i5"),
    );
    let short: String = (0..10).map(|k| format!("i{} = int_add(i4, {k})\n", 100 + k)).collect();
    let text = TREE.replace(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        &format!("{short}i6 = int_add(i4, 1)\njump(i0, i1, i5"),
    );
    assert!(merged(&tree(&text)).is_some(), "ten more ops merge:\n{text}");
    // A jump to another loop.
    refused(
        "jump(i0, i1, i5, i3, i6, descr=TargetToken(1))",
        "jump(i0, i1, i5, i3, i6, descr=TargetToken(9))",
    );
    // A guard before the loop's label (its bridge would not come back to the body).
    refused(
        "[i0, i1, i2, i3, i4]\nlabel(i0, i1, i2, i3, i4, descr=TargetToken(1))\ni10 = int_lt(i4, i0)\nguard_true(i10, descr=<Guard0>) [i0, i1, i2, i3, i4]\ni11 = int_lshift(i1, 13)\ni12 = int_and(i11, 4294967295)\ni13 = int_xor(i1, i12)\ni14 = int_and(i13, 7)\nguard_true(i14, descr=<Guard1>) [i0, i13, i2, i3, i4]",
        "[i0, i1, i2, i3, i4]\ni11 = int_lshift(i1, 13)\ni12 = int_and(i11, 4294967295)\ni13 = int_xor(i1, i12)\ni14 = int_and(i13, 7)\nguard_true(i14, descr=<Guard1>) [i0, i13, i2, i3, i4]\nlabel(i0, i1, i2, i3, i4, descr=TargetToken(1))\ni10 = int_lt(i4, i0)\nguard_true(i10, descr=<Guard0>) [i0, i1, i2, i3, i4]",
    );
}

#[test]
fn a_loop_path_with_memory_access_stays_a_branch() {
    let text = TREE.replace(
        "i15 = int_and(i13, 255)",
        "i15 = getfield_gc_i(ConstPtr(ptr1), descr=<FieldS T.x 8>)",
    );
    assert!(merged(&tree(&text)).is_none());
}

// --- random loops with a bridge ------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// `trace_interp::random::random_diamond` loops merge, and run like their trees
    /// (`verify::fuzzing::ifconv_failure`).
    #[test]
    fn merged_loops_run_like_their_trees(seed in any::<u64>()) {
        if let Some(e) = verify::fuzzing::ifconv_failure(seed) {
            panic!("seed {seed}: {e}");
        }
    }
}
