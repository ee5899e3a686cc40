//! If-conversion of a bridge into its loop (`optimizer::ifconv`): the merged loop of a
//! hand-written tree, word for word; the shapes it refuses; and random loops with a short
//! bridge out of a guard of their body, run as trees and as merged loops by the interpreter
//! (same outcome: the same finish, or the same guard with the same exit words) and the merged
//! loops natively.

use optimizer::ifconv::merge_bridge;
use proptest::prelude::*;
use trace_interp::{run, run_tree, RtValue, RunConfig};
use trace_ir::{parse_tree, print_trace, Descr, Kind, Opcode, Trace, TraceBuilder, TraceTree, Value};

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

/// `TREE` with `edit` applied to its text: not merged.
#[track_caller]
fn refused(from: &str, to: &str) {
    assert!(TREE.contains(from));
    let text = TREE.replace(from, to);
    assert!(merged(&tree(&text)).is_none(), "merged:\n{text}");
}

#[test]
fn bridges_that_are_not_pure_short_paths_back_to_the_body_stay_bridges() {
    // A guard of the bridge's own.
    refused(
        "i6 = int_add(i4, 1)\njump(i0, i1, i5",
        "i7 = int_lt(i4, 5)\nguard_true(i7, descr=<Guard3>) [i0]\ni6 = int_add(i4, 1)\njump(i0, i1, i5",
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

/// Integer ops defined on every operand, and the ones the paths may use with a constant.
const OPS: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntLt,
    Opcode::IntEq,
    Opcode::UintLt,
];

/// A small deterministic generator (xorshift).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick(&mut self, pool: &[Value]) -> Value {
        pool[self.below(pool.len())]
    }
}

/// Append `n` random ops to `b` over `pool` (results added to it): binary ops, shifts by a
/// constant, and `int_add_ovf`/`int_sub_ovf`/`int_mul_ovf` with their checks (resume data:
/// `keep`).
fn random_ops(g: &mut Gen, b: &mut TraceBuilder, pool: &mut Vec<Value>, n: usize, keep: &[Value]) {
    for _ in 0..n {
        let x = g.pick(pool);
        let y = match g.below(3) {
            0 => b.const_int([1, -1, 7, 255, i64::MAX, i64::MIN, 1 << 40][g.below(7)]),
            _ => g.pick(pool),
        };
        let v = match g.below(8) {
            0 => {
                let k = b.const_int(g.below(64) as i64);
                b.op(
                    [Opcode::IntLshift, Opcode::IntRshift, Opcode::UintRshift][g.below(3)],
                    &[x, k],
                )
            }
            1 => {
                let v = b.op(
                    [Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf][g.below(3)],
                    &[x, y],
                );
                b.guard(Opcode::GuardNoOverflow, &[], keep, 0);
                v
            }
            _ => b.op(OPS[g.below(OPS.len())], &[x, y]),
        };
        pool.push(v);
    }
}

/// A random loop `[i, n, p1, p2, p3]` (counting `i` up to `n`) whose body computes a
/// condition, guards on it, computes the next values on one path; the bridge out of that
/// guard computes them on the other path and jumps back to the body.
fn random_diamond(seed: u64) -> TraceTree {
    let mut g = Gen(seed | 1);
    let mut b = TraceBuilder::new();
    let inputs: Vec<Value> = (0..5).map(|_| b.input(Kind::Int)).collect();
    let params = b.label(&inputs);
    let more = b.op(Opcode::IntLt, &[params[0], params[1]]);
    b.guard(Opcode::GuardTrue, &[more], &params, 1);
    let mut pool = params.clone();
    let k = 1 + g.below(4);
    random_ops(&mut g, &mut b, &mut pool, k, &params);
    let c = g.pick(&pool[2..]);
    let c = if g.below(2) == 0 {
        let mask = b.const_int([1, 3, 7][g.below(3)]);
        b.op(Opcode::IntAnd, &[c, mask])
    } else {
        let other = g.pick(&pool);
        b.op(Opcode::IntLt, &[c, other])
    };
    // The exit words: the counter and the limit first, then some values of the body.
    let mut words = vec![params[0], params[1]];
    for _ in 0..1 + g.below(4) {
        words.push(g.pick(&pool));
    }
    let polarity = if g.below(2) == 0 {
        Opcode::GuardTrue
    } else {
        Opcode::GuardFalse
    };
    let gid = b.guard(polarity, &[c], &words, 2);
    let k = g.below(6);
    random_ops(&mut g, &mut b, &mut pool, k, &params);
    let one = b.const_int(1);
    let next = b.op(Opcode::IntAdd, &[params[0], one]);
    let mut back = vec![next, params[1]];
    for _ in 0..3 {
        back.push(g.pick(&pool[2..]));
    }
    b.jump(&back);
    let mut root = b.build().expect("a valid loop");
    let token = root.make_descr(Descr::Target(1));
    let label = root.last_label().unwrap().index();
    root.ops[label].descr = Some(token);
    let last = root.ops.len() - 1;
    root.ops[last].descr = Some(token);

    let mut bb = TraceBuilder::new();
    bb.guard_ids_from(100);
    let ins: Vec<Value> = words.iter().map(|_| bb.input(Kind::Int)).collect();
    let mut pool = ins.clone();
    let k = g.below(6);
    random_ops(&mut g, &mut bb, &mut pool, k, &ins);
    let one = bb.const_int(1);
    let next = bb.op(Opcode::IntAdd, &[ins[0], one]);
    let mut back = vec![next, ins[1]];
    for _ in 0..3 {
        back.push(g.pick(&pool[2..]));
    }
    bb.jump(&back);
    let mut bridge = bb.build_unverified();
    let token = bridge.make_descr(Descr::Target(1));
    let last = bridge.ops.len() - 1;
    bridge.ops[last].descr = Some(token);
    let tree = TraceTree {
        root,
        bridges: vec![trace_ir::Bridge {
            guard: gid,
            trace: bridge,
        }],
    };
    trace_ir::verify_tree(&tree).unwrap_or_else(|e| panic!("{e}\n{}", trace_ir::print_tree(&tree)));
    tree
}

fn input_value(g: &mut Gen) -> i64 {
    match g.below(4) {
        0 => [0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1][g.below(6)],
        1 => g.below(100) as i64,
        _ => g.next() as i64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn merged_loops_run_like_their_trees(seed in any::<u64>(), n in 0i64..40) {
        let tree = random_diamond(seed);
        let bridge = &tree.bridges[0];
        let m = merge_bridge(&tree.root, bridge.guard, &bridge.trace)
            .unwrap_or_else(|| panic!("not merged:\n{}", trace_ir::print_tree(&tree)));
        let mut g = Gen(seed ^ 0x5eed);
        let mut inputs = vec![RtValue::Int(0), RtValue::Int(n)];
        for _ in 0..3 {
            inputs.push(RtValue::Int(input_value(&mut g)));
        }
        let want = run_tree(&tree, &inputs, &RunConfig::default()).outcome;
        let got = run(&m, &inputs, &RunConfig::default()).outcome;
        prop_assert_eq!(
            &got, &want,
            "tree:\n{}\nmerged:\n{}", trace_ir::print_tree(&tree), print_trace(&m)
        );
        verify::fuzzing::native_matches(&m, &inputs)
            .unwrap_or_else(|e| panic!("{e}\nmerged:\n{}", print_trace(&m)));
    }
}
