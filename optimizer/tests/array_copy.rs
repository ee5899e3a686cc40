//! `ll_arraycopy` (`trace_ir::oopspec::is_array_copy`) between virtual arrays: the items move
//! between the virtuals and the call goes; a copy the optimizer cannot follow stays a call.

mod common;
use common::{check, parse, same_behaviour};
use optimizer::{optimize, Options, Reason};
use trace_interp::RtValue;

const COPY: &str = "[i0, i1]
     p2 = new_array(2, descr=<ArrayS 8>)
     setarrayitem_gc(p2, 0, i0, descr=<ArrayS 8>)
     setarrayitem_gc(p2, 1, i1, descr=<ArrayS 8>)
     p3 = new_array_clear(3, descr=<ArrayS 8>)
     call_n(ConstClass(ll_arraycopy), p2, p3, 0, 1, 2, descr=<Callv 0 rriii EF=2 OS=1>)
     i4 = getarrayitem_gc_i(p3, 0, descr=<ArrayS 8>)
     i5 = getarrayitem_gc_i(p3, 1, descr=<ArrayS 8>)
     i6 = getarrayitem_gc_i(p3, 2, descr=<ArrayS 8>)
     finish(i4, i5, i6)";

#[test]
fn a_copy_between_virtual_arrays_moves_their_items() {
    let out = check(
        COPY,
        "[i0, i1]
         finish(0, i0, i1)",
    );
    assert_eq!(out.stats.virtuals_removed, 2);
    let t = parse(COPY);
    for inputs in [[5, 7], [-1, 0]] {
        let inputs = inputs.map(RtValue::Int);
        assert_eq!(same_behaviour(&t, &out.trace, &inputs), Ok(true));
    }
}

#[test]
fn an_overlapping_copy_within_one_array_reads_every_item_first() {
    let t = "[i0, i1, i2]
         p3 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p3, 0, i0, descr=<ArrayS 8>)
         setarrayitem_gc(p3, 1, i1, descr=<ArrayS 8>)
         setarrayitem_gc(p3, 2, i2, descr=<ArrayS 8>)
         call_n(ConstClass(ll_arraycopy), p3, p3, 0, 1, 2, descr=<Callv 0 rriii EF=2 OS=1>)
         i4 = getarrayitem_gc_i(p3, 0, descr=<ArrayS 8>)
         i5 = getarrayitem_gc_i(p3, 1, descr=<ArrayS 8>)
         i6 = getarrayitem_gc_i(p3, 2, descr=<ArrayS 8>)
         finish(i4, i5, i6)";
    let out = check(
        t,
        "[i0, i1, i2]
         finish(i0, i0, i1)",
    );
    let inputs = [1, 2, 3].map(RtValue::Int);
    assert_eq!(same_behaviour(&parse(t), &out.trace, &inputs), Ok(true));
}

/// Kept as calls: a length that is not a constant, a range past an array's end, arrays of
/// two layouts, an array that is not virtual.
#[test]
fn copies_the_optimizer_cannot_follow_stay_calls() {
    for (n, dst, src) in [
        ("i1", "new_array(3, descr=<ArrayS 8>)", "new_array(2, descr=<ArrayS 8>)"),
        ("3", "new_array(3, descr=<ArrayS 8>)", "new_array(2, descr=<ArrayS 8>)"),
        ("1", "new_array(3, descr=<ArrayU 1>)", "new_array(2, descr=<ArrayS 8>)"),
        (
            "1",
            "getfield_gc_r(p0, descr=<FieldP T.a 8>)",
            "new_array(2, descr=<ArrayS 8>)",
        ),
    ] {
        let text = format!(
            "[p0, i1]
             p2 = {src}
             p3 = {dst}
             call_n(ConstClass(ll_arraycopy), p2, p3, 0, 0, {n}, descr=<Callv 0 rriii EF=2 OS=1>)
             finish(i1)"
        );
        let out = optimize(&parse(&text), &Options::default()).unwrap();
        assert_eq!(out.stats.removed(Reason::VirtualAccess), 0, "{text}");
        let calls = out.trace.ops.iter().filter(|o| o.opcode.is_call()).count();
        assert_eq!(calls, 1, "{text}");
    }
}

/// Random traces with calls: the copies the optimizer performs between virtual arrays keep
/// the traces' behaviour, and some copies are performed.
#[test]
fn random_traces_with_array_copies_agree_with_their_originals() {
    use trace_interp::random::{random_trace, RandomConfig};
    let cfg = RandomConfig {
        calls: 3,
        heap: 6,
        ..RandomConfig::default()
    };
    let copies = |t: &trace_ir::Trace| {
        t.ops
            .iter()
            .filter(|o| {
                o.descr
                    .and_then(|d| t.descr(d).as_call())
                    .is_some_and(|c| c.oopspec == Some(1))
            })
            .count()
    };
    let (mut performed, mut compared) = (0, 0);
    let mut inputs = common::Inputs::new(11);
    for seed in 0..3000u64 {
        let (t, example) = random_trace(&cfg, seed);
        if copies(&t) == 0 {
            continue;
        }
        let out = optimize(&t, &Options::default()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        performed += copies(&t) - copies(&out.trace);
        for inp in [example, inputs.for_trace(&t)] {
            match same_behaviour(&t, &out.trace, &inp) {
                Ok(true) => compared += 1,
                Ok(false) => {}
                Err(e) => panic!("seed {seed}: {e}"),
            }
        }
    }
    assert!(
        performed >= 50,
        "only {performed} copies performed ({compared} runs compared)"
    );
}
