//! Loop peeling (`trace_ir::peel`) keeps the meaning of a loop: hand-written loops and random
//! loops run the same in the interpreter before and after peeling.

use trace_interp::random::{random_trace, RandomConfig};
use trace_interp::{run, Outcome, RunConfig};
use trace_ir::peel::*;
use trace_ir::text::{parse_trace, print_trace};
use trace_ir::{GuardId, OpRef, Opcode, Trace};

#[test]
fn peels_a_labelled_loop() {
    let t = parse_trace(
        "[i0, i1]\n\
         label(i0, i1, descr=TargetToken(7))\n\
         i2 = int_lt(i0, i1)\n\
         guard_true(i2, descr=<Guard3 key=40>) [i0]\n\
         i3 = int_add(i0, 1)\n\
         jump(i3, i1, descr=TargetToken(7))\n",
    )
    .unwrap();
    let p = peel_loop(&t).unwrap();
    trace_ir::verify(&p).unwrap();
    assert!(is_peeled_form(&t, &p) && !is_peeled_form(&p, &t) && !is_peeled_form(&t, &t));
    let text = print_trace(&p);
    // The header keeps its token; the body's label gets its own.
    assert_eq!(trace_ir::peeled_body_token(7), 7 | 1 << 62);
    let want = "[i0, i1]\n\
         label(i0, i1, descr=TargetToken(7)) -> [i3, i4]\n\
         i5 = int_lt(i3, i4)\n\
         guard_true(i5, descr=<Guard3 key=40>) [i3]\n\
         i7 = int_add(i3, 1)\n\
         label(i7, i4, descr=TargetToken(4611686018427387911)) -> [i9, i10]\n\
         i11 = int_lt(i9, i10)\n\
         guard_true(i11, descr=<Guard4 key=40>) [i9]\n\
         i13 = int_add(i9, 1)\n\
         jump(i13, i10, descr=TargetToken(4611686018427387911))\n";
    if let Err(e) = trace_ir::traces_equivalent(&p, &parse_trace(want).unwrap()) {
        panic!("{e}; got\n{text}");
    }
}

#[test]
fn finds_loop_invariant_parameters() {
    let t = parse_trace("[i0, i1]\nlabel(i0, i1)\ni2 = int_add(i0, i1)\njump(i2, i1)\n").unwrap();
    assert_eq!(invariant_params(&t), Some((OpRef::new(2), vec![false, true])));
    let swapped = parse_trace("[i0, i1]\nlabel(i0, i1)\njump(i1, i0)\n").unwrap();
    assert_eq!(invariant_params(&swapped), Some((OpRef::new(2), vec![false, false])));
    let no_label = parse_trace("[i0]\njump(i0)\n").unwrap();
    assert_eq!(invariant_params(&no_label), None);
}

#[test]
fn finds_masked_loop_parameters() {
    let t = parse_trace(
        "[i0, i1, i2]\nlabel(i0, i1, i2)\ni3 = int_add(i0, i1)\ni4 = int_and(i3, 16777215)\n\
         i5 = int_and(255, i1)\ni6 = int_and(i2, 12)\njump(i4, i5, i6)\n",
    )
    .unwrap();
    // 12 is not a low mask.
    assert_eq!(
        masked_params(&t),
        Some((OpRef::new(3), vec![Some(0xff_ffff), Some(0xff), None]))
    );
    let negative = parse_trace("[i0]\nlabel(i0)\ni1 = int_and(i0, -1)\njump(i1)\n").unwrap();
    assert_eq!(masked_params(&negative), Some((OpRef::new(1), vec![None])));
    let zero = parse_trace("[i0]\nlabel(i0)\ni1 = int_and(i0, 0)\njump(i1)\n").unwrap();
    assert_eq!(masked_params(&zero), Some((OpRef::new(1), vec![Some(0)])));
    let finish = parse_trace("[i0]\ni1 = int_and(i0, 255)\nfinish(i1)\n").unwrap();
    assert_eq!(masked_params(&finish), None);
}

#[test]
fn peels_a_loop_without_label() {
    let t = parse_trace("[i0]\ni1 = int_sub(i0, 1)\nguard_true(i1, descr=<Guard0>) [i1]\njump(i1)\n").unwrap();
    let p = peel_loop(&t).unwrap();
    trace_ir::verify(&p).unwrap();
    assert_eq!(p.ops.iter().filter(|o| o.opcode == Opcode::Label).count(), 1);
    assert_eq!(p.guards.len(), 2);
    assert_eq!(p.guards[1].id, GuardId(1));
    assert_eq!(p.guards[1].resume_key, p.guards[0].resume_key);
    assert_eq!(peeled_guard_copies(&t), vec![(GuardId(0), GuardId(1))]);
}

#[test]
fn does_not_peel_what_is_not_a_loop() {
    let fin = parse_trace("[i0]\ni1 = int_add(i0, 1)\nfinish(i1)\n").unwrap();
    assert!(peel_loop(&fin).is_none() && !is_peelable(&fin));
    let ext = parse_trace("[i0]\nlabel(i0)\ni1 = int_add(i0, 1)\njump(i1, descr=<Loop3>)\n").unwrap();
    assert!(peel_loop(&ext).is_none());
    // A jump to an earlier label than the last one.
    let early = parse_trace(
        "[i0]\nlabel(i0, descr=TargetToken(1))\ni1 = int_add(i0, 1)\nlabel(i1, descr=TargetToken(2))\n\
         i2 = int_add(i1, 1)\njump(i2, descr=TargetToken(1))\n",
    )
    .unwrap();
    assert!(peel_loop(&early).is_none());
}

/// The peeled trace runs like the original on random traces (loops, heap, calls): the same
/// outcome, an exit of a copied guard reporting the original guard's resume key.
#[test]
fn peeled_random_traces_run_like_the_original() {
    let cfg = RandomConfig::default();
    let (mut peeled, mut compared) = (0, 0);
    for seed in 0..1500 {
        let (t, inputs) = random_trace(&cfg, seed);
        let Some(p) = peel_loop(&t) else { continue };
        trace_ir::verify(&p).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", print_trace(&p)));
        peeled += 1;
        let key = |tr: &Trace, id: GuardId| tr.guards.iter().find(|g| g.id == id).map(|g| g.resume_key);
        for (o, c) in peeled_guard_copies(&t) {
            assert!(
                key(&t, o).is_some() && key(&t, o) == key(&p, c),
                "seed {seed}: {o} -> {c}"
            );
        }
        assert_eq!(peeled_guard_copies(&t).len(), p.guards.len() - t.guards.len());
        let rc = RunConfig::default();
        let (a, b) = (run(&t, &inputs, &rc), run(&p, &inputs, &rc));
        // The peeled trace runs one more body before the limit (its first iteration is
        // not a jump).
        if [&a, &b].iter().any(|r| matches!(r.outcome, Outcome::IterationLimit)) {
            continue;
        }
        if let Err(e) = trace_interp::outcomes_equivalent_by_resume_key(&a, &b) {
            panic!("seed {seed}: {e}\n{}\n{}", print_trace(&t), print_trace(&p));
        }
        compared += 1;
    }
    assert!(peeled > 300 && compared > 300, "{peeled} loops, {compared} compared");
}
