//! Conditional calls whose condition the optimizer knows: `cond_call` of zero and
//! `cond_call_value` of a non-zero value call nothing and are dropped (a virtual argument then
//! stays virtual); the opposite cases become plain calls; unknown conditions stay.

mod common;
use common::{check, parse, same_behaviour};
use optimizer::{optimize, Options, Reason};
use trace_interp::RtValue;

#[test]
fn cond_call_of_zero_is_dropped_and_its_virtual_argument_stays_virtual() {
    let out = check(
        "[i0]
         p1 = new_with_vtable(descr=<SizeDescr 16>)
         setfield_gc(p1, 0, descr=<FieldS T.flag 8>)
         i2 = getfield_gc_i(p1, descr=<FieldS T.flag 8>)
         cond_call(i2, ConstClass(force), p1, descr=<Callv 0 r EF=2 OS=121>)
         finish(i0)",
        "[i0]
         finish(i0)",
    );
    assert_eq!(out.stats.removed(Reason::CondCallKnown), 1);
    assert_eq!(out.stats.virtuals_removed, 1);
}

#[test]
fn cond_call_of_a_nonzero_value_is_a_plain_call() {
    check(
        "[i0]
         i1 = int_or(i0, 1)
         cond_call(i1, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
         finish(i0)",
        "[i0]
         call_n(ConstClass(f), i0, descr=<Callv 0 i EF=2>)
         finish(i0)",
    );
}

#[test]
fn cond_call_value_of_a_nonnull_reference_is_that_reference() {
    let out = check(
        "[p0]
         guard_nonnull(p0, descr=<Guard0>) []
         p1 = cond_call_value_r(p0, ConstClass(make), descr=<Callr 8 EF=2>)
         finish(p1)",
        "[p0]
         guard_nonnull(p0, descr=<Guard0>) []
         finish(p0)",
    );
    assert_eq!(out.stats.removed(Reason::CondCallKnown), 1);
}

#[test]
fn cond_call_value_of_zero_is_a_plain_call() {
    check(
        "[i0]
         i1 = cond_call_value_i(0, ConstClass(g), i0, descr=<Calli 8 i EF=2>)
         finish(i1)",
        "[i0]
         i1 = call_i(ConstClass(g), i0, descr=<Calli 8 i EF=2>)
         finish(i1)",
    );
}

#[test]
fn cond_calls_on_unknown_conditions_stay() {
    check(
        "[i0, p1]
         cond_call(i0, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
         p2 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
         finish(p2)",
        "[i0, p1]
         cond_call(i0, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
         p2 = cond_call_value_r(p1, ConstClass(make), descr=<Callr 8 EF=2>)
         finish(p2)",
    );
}

/// The interpreter runs the original and the optimized trace alike, on inputs where the
/// condition is zero and where it is not.
#[test]
fn folded_cond_calls_behave_as_the_original() {
    let t = parse(
        "[i0, i1]
         i2 = int_and(i1, 0)
         cond_call(i2, ConstClass(f), i0, descr=<Callv 0 i EF=2>)
         i3 = int_or(i1, 4)
         cond_call(i3, ConstClass(f), i1, descr=<Callv 0 i EF=2>)
         i4 = cond_call_value_i(i3, ConstClass(g), i0, descr=<Calli 8 i EF=2>)
         i5 = cond_call_value_i(i2, ConstClass(g), i1, descr=<Calli 8 i EF=2>)
         i6 = cond_call_value_i(i0, ConstClass(g), i1, descr=<Calli 8 i EF=2>)
         finish(i4, i5, i6)",
    );
    let out = optimize(&t, &Options::default()).expect("optimizes");
    assert_eq!(out.stats.removed(Reason::CondCallKnown), 2);
    for inputs in [[0, 0], [0, 5], [3, 0], [-1, 9]] {
        let inputs: Vec<RtValue> = inputs.iter().map(|&i| RtValue::Int(i)).collect();
        assert_eq!(same_behaviour(&t, &out.trace, &inputs), Ok(true), "inputs {inputs:?}");
    }
}
