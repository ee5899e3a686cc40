//! `ll_arraycopy` (`trace_ir::oopspec::is_array_copy`) in the reference interpreter: between
//! two arrays the run allocated with one layout it is the copy of their items (a move, for
//! overlapping ranges of one array) and no heap-writing call; out of range it is invalid; on
//! arrays the run did not allocate it is an ordinary call.

use trace_interp::{run, Outcome, RtValue, RunConfig};
use trace_ir::text::parse_trace;

fn go(text: &str, inputs: &[RtValue]) -> trace_interp::RunResult {
    run(&parse_trace(text).unwrap(), inputs, &RunConfig::default())
}

const COPY: &str = "[i0, i1, i2]
     p3 = new_array(3, descr=<ArrayS 8>)
     setarrayitem_gc(p3, 0, 10, descr=<ArrayS 8>)
     setarrayitem_gc(p3, 1, 11, descr=<ArrayS 8>)
     setarrayitem_gc(p3, 2, 12, descr=<ArrayS 8>)
     p4 = new_array_clear(4, descr=<ArrayS 8>)
     call_n(ConstClass(ll_arraycopy), p3, p4, i0, i1, i2, descr=<Callv 0 rriii EF=2 OS=1>)
     i5 = getarrayitem_gc_i(p4, 0, descr=<ArrayS 8>)
     i6 = getarrayitem_gc_i(p4, 1, descr=<ArrayS 8>)
     i7 = getarrayitem_gc_i(p4, 2, descr=<ArrayS 8>)
     i8 = getarrayitem_gc_i(p4, 3, descr=<ArrayS 8>)
     finish(i5, i6, i7, i8)";

fn ints(v: &[i64]) -> Vec<RtValue> {
    v.iter().map(|&x| RtValue::Int(x)).collect()
}

#[test]
fn a_copy_between_allocated_arrays_moves_items_and_calls_nothing() {
    for (args, want) in [
        ([0, 1, 3], [0, 10, 11, 12]),
        ([1, 0, 2], [11, 12, 0, 0]),
        ([2, 3, 1], [0, 0, 0, 12]),
        ([0, 0, 0], [0, 0, 0, 0]),
    ] {
        let r = go(COPY, &ints(&args));
        assert_eq!(r.outcome, Outcome::Finish(ints(&want)), "{args:?}");
        assert!(r.calls.is_empty() && r.heap.epoch == 0, "{args:?}: {:?}", r.calls);
    }
}

#[test]
fn a_copy_out_of_range_is_invalid() {
    for args in [[0, 2, 3], [2, 0, 2], [-1, 0, 1], [0, 0, -1]] {
        let r = go(COPY, &ints(&args));
        assert!(matches!(r.outcome, Outcome::Invalid { .. }), "{args:?}: {}", r.outcome);
    }
}

#[test]
fn an_overlapping_copy_within_one_array_is_a_move() {
    let r = go(
        "[i0]
         p1 = new_array(3, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 0, 10, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 1, 11, descr=<ArrayS 8>)
         setarrayitem_gc(p1, 2, 12, descr=<ArrayS 8>)
         call_n(ConstClass(ll_arraycopy), p1, p1, 0, 1, 2, descr=<Callv 0 rriii EF=2 OS=1>)
         i2 = getarrayitem_gc_i(p1, 1, descr=<ArrayS 8>)
         i3 = getarrayitem_gc_i(p1, 2, descr=<ArrayS 8>)
         finish(i2, i3)",
        &ints(&[0]),
    );
    assert_eq!(r.outcome, Outcome::Finish(ints(&[10, 11])));
}

#[test]
fn a_copy_into_an_array_the_run_did_not_allocate_is_a_call() {
    let r = go(
        "[p0]
         p1 = new_array(1, descr=<ArrayS 8>)
         call_n(ConstClass(ll_arraycopy), p1, p0, 0, 0, 1, descr=<Callv 0 rriii EF=2 OS=1>)
         finish(p0)",
        &[RtValue::Ref(0x5000_0000_1008)],
    );
    assert!(matches!(r.outcome, Outcome::Finish(_)), "{}", r.outcome);
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.heap.epoch, 1);
}
