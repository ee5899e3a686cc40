//! Random bridges into peeled loop bodies whose labels carry loaded fields, take a box
//! field by field or carry a loop-invariant pure result (the short preamble redone at the
//! bridge's jump): for each, the tree with
//! the optimized bridge runs like the tree with the recorded one in the interpreter, and
//! translation validation proves the optimized bridge, body entry included.

use optimizer::{Optimized, Optimizer, Options};
use trace_interp::{outcomes_equivalent_by_resume_key, run_tree, Outcome, RtValue, RunConfig};
use trace_ir::tree::{guard_op, Bridge, TraceTree};
use trace_ir::{bridge_prologue, parse_trace, Descr, GuardId, Opcode, Trace, TraceBuilder, Value};
use verify::validate::{validate, Config, Verdict};

/// xorshift64: deterministic cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A loop over `i` (up to 1000) that adds field `step` of `p` and, with `boxed`, keeps the
/// running sum in a `Box` it makes for its next iteration; `p`'s `limit` field is read too
/// when `two`. The last parameter counts the bridge's passes and is passed on unchanged;
/// with `pure` the loop also adds twice that count to `i` (a pure op on an invariant
/// parameter, which the body label carries and a bridge that changes the count computes
/// again).
fn loop_text(boxed: bool, two: bool, pure: bool) -> String {
    let limit = if two {
        "i20 = getfield_gc_i(p2, descr=<FieldS T.limit 16>)\ni21 = int_lt(i4, i20)\nguard_true(i21, descr=<Guard3 key=3>) [p2, i4, p5, i6]\n"
    } else {
        ""
    };
    let (read, make) = if boxed {
        (
            "i9 = getfield_gc_i(p5, descr=<FieldS Box.v 8>)\n",
            "i12 = int_add(i9, i7)\np13 = new(descr=<SizeDescr 16>)\nsetfield_gc(p13, i12, descr=<FieldS Box.v 8>)\n",
        )
    } else {
        ("", "p13 = same_as_r(p5)\n")
    };
    let (twice, next) = match pure {
        true => ("i15 = int_mul(i6, 2)\ni16 = int_add(i14, i15)\n", "i16"),
        false => ("", "i14"),
    };
    format!(
        "[p0, i1, p10, i11]
label(p0, i1, p10, i11, descr=TargetToken(9)) -> [p2, i4, p5, i6]
guard_nonnull(p2, descr=<Guard1 key=2>) [p2, i4, p5, i6]
i7 = getfield_gc_i(p2, descr=<FieldS T.step 8>)
{limit}{read}i8 = int_lt(i4, 1000)
guard_true(i8, descr=<Guard0 key=1>) [p2, i4, p5, i6]
i14 = int_add(i4, i7)
{twice}{make}jump(p2, {next}, p13, i6, descr=TargetToken(9))"
    )
}

fn peeled(text: &str) -> Optimized {
    let t = parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    Optimizer::new().optimize(&t, &opts).unwrap()
}

/// A random bridge out of guard `g` of `out`: counts its passes (leaving at resume key 50
/// on the third), may write or read `T.step` of the object, may pass another object, may
/// box a new sum, and jumps to the header.
fn random_bridge(out: &Optimized, g: GuardId, boxed: bool, rng: &mut Rng) -> Trace {
    let at = guard_op(&out.trace, g).unwrap();
    let gd = out.trace.guard_of(at).unwrap();
    let facts = out.guard_facts.iter().find(|f| f.guard == g);
    let mut b = TraceBuilder::new();
    b.guard_ids_from(100);
    let fail: Vec<Value> = bridge_prologue(&out.trace, gd, facts, &mut b)
        .into_iter()
        .map(|v| v.unwrap())
        .collect();
    let (p, i, bx, pass) = (fail[0], fail[1], fail[2], fail[3]);
    let field = |b: &mut TraceBuilder, name: &str| {
        let d = out
            .trace
            .descrs
            .iter()
            .find(|d| d.as_field().is_some_and(|f| &*f.name == name))
            .unwrap()
            .clone();
        b.descr(d)
    };
    let (one, three) = (b.const_int(1), b.const_int(3));
    let pass2 = b.op(Opcode::IntAdd, &[pass, one]);
    let more = b.op(Opcode::IntLt, &[pass2, three]);
    b.guard(Opcode::GuardTrue, &[more], &[p, i, bx, pass2], 50);
    let step = field(&mut b, "T.step");
    match rng.below(4) {
        0 => {
            let k = b.const_int(1 + rng.below(9) as i64);
            b.op_with_descr(Opcode::SetfieldGc, &[p, k], step);
        }
        1 => {
            let s = b.op_with_descr(Opcode::GetfieldGcI, &[p], step);
            let k = b.const_int(1);
            let s2 = b.op(Opcode::IntAdd, &[s, k]);
            b.op_with_descr(Opcode::SetfieldGc, &[p, s2], step);
        }
        2 => {
            b.op_with_descr(Opcode::GetfieldGcI, &[p], step);
        }
        _ => {}
    }
    // Back below 1000 (the counter leaves the loop below 1000 + 22): the recorded bridge's
    // header, whose copy of the loop guard has no bridge, never exits where the body would.
    let k = b.const_int(100 + rng.below(900) as i64);
    let restart = b.op(Opcode::IntSub, &[i, k]);
    let next_box = if boxed && rng.below(2) == 0 {
        let size = b.descr(Descr::Size(trace_ir::SizeDescr { size: 16, vtable: None }));
        let v = field(&mut b, "Box.v");
        let nb = b.op_with_descr(Opcode::New, &[], size);
        let sum = b.const_int(rng.below(50) as i64);
        b.op_with_descr(Opcode::SetfieldGc, &[nb, sum], v);
        nb
    } else {
        bx
    };
    let d = b.descr(Descr::Target(9));
    b.op_with_descr(Opcode::Jump, &[p, restart, next_box, pass2], d);
    b.build().unwrap()
}

#[test]
fn random_bridges_into_carrying_bodies_run_and_validate() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut entered, mut cases, mut entered_pure) = (0, 0, 0);
    for case in 0..120 {
        let (boxed, two, pure) = (case % 2 == 0, case % 3 == 0, case % 4 < 2);
        let out = peeled(&loop_text(boxed, two, pure));
        let Some(entry) = out.body_entries.first() else {
            panic!("no body entry for case {case}:\n{}", trace_ir::print_trace(&out.trace));
        };
        assert!(!entry.carried.is_empty(), "{entry:?}");
        assert_eq!(entry.carried_pure.len(), usize::from(pure), "{entry:?}");
        // The body's loop guard (the last with key 1).
        let g = out.trace.guards.iter().rev().find(|g| g.resume_key == 1).unwrap().id;
        let bridge = random_bridge(&out, g, boxed, &mut rng);
        let opt = Optimizer::new()
            .optimize_bridge(&bridge, &Options::default(), &out.body_entries)
            .unwrap();
        let into_body = matches!(
            opt.trace.ops.last().and_then(|j| j.descr).map(|d| opt.trace.descr(d)),
            Some(Descr::Target(t)) if *t == entry.body
        );
        entered += usize::from(into_body);
        entered_pure += usize::from(into_body && pure);
        cases += 1;
        let cfg = Config {
            body_entries: out.body_entries.clone(),
            ..Config::for_optimized(&opt)
        };
        match validate(&bridge, &opt.trace, &cfg) {
            Verdict::Valid => {}
            v => panic!(
                "case {case}: {v}\nrecorded:\n{}\noptimized:\n{}",
                trace_ir::print_trace(&bridge),
                trace_ir::print_trace(&opt.trace)
            ),
        }
        let tree = |bt: Trace| TraceTree {
            root: out.trace.clone(),
            bridges: vec![Bridge { guard: g, trace: bt }],
        };
        let (recorded, optimized) = (tree(bridge.clone()), tree(opt.trace.clone()));
        trace_ir::verify_tree(&optimized).unwrap();
        let obj = 0x1000;
        let step = 1 + rng.below(20) as i64;
        let mut run_cfg = RunConfig {
            max_iterations: 100_000,
            ..RunConfig::default()
        };
        run_cfg.preset.insert((obj, 8), RtValue::Int(step));
        run_cfg
            .preset
            .insert((obj, 16), RtValue::Int(500 + rng.below(600) as i64));
        let inputs = [
            RtValue::Ref(obj),
            RtValue::Int(rng.below(900) as i64),
            RtValue::Ref(0x2000),
            RtValue::Int(0),
        ];
        run_cfg.preset.insert((0x2000, 8), RtValue::Int(rng.below(100) as i64));
        let (want, got) = (
            run_tree(&recorded, &inputs, &run_cfg),
            run_tree(&optimized, &inputs, &run_cfg),
        );
        outcomes_equivalent_by_resume_key(&want, &got).unwrap_or_else(|e| {
            panic!(
                "case {case}: {e}\nrecorded:\n{}\noptimized:\n{}",
                trace_ir::print_trace(&bridge),
                trace_ir::print_trace(&opt.trace)
            )
        });
        assert!(
            !matches!(got.outcome, Outcome::IterationLimit),
            "case {case}: the run never left the loop"
        );
    }
    // Most bridges know the object non-null (from their guard) and enter the body, also
    // where they must compute the carried product of the count they change.
    assert!(entered * 2 > cases, "{entered} of {cases} bridges entered the body");
    assert!(
        entered_pure * 4 > cases,
        "{entered_pure} bridges entered a body carrying a product"
    );
}
