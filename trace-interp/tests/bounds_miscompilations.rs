//! The three wrongly optimized traces that translation validation found in PyPy's integer bounds, each as an (original, wrongly optimized)
//! pair: the interpreter tells them apart on the inputs that expose the bug and agrees on a
//! benign input. A correct optimization of the same shape is the control.

use trace_interp::{outcomes_equivalent, run, Outcome, RtValue, RunConfig};
use trace_ir::{Kind, Opcode, Trace, TraceBuilder};

fn go(t: &Trace, inputs: &[i64]) -> trace_interp::RunResult {
    let inputs: Vec<RtValue> = inputs.iter().map(|&i| RtValue::Int(i)).collect();
    run(t, &inputs, &RunConfig::default())
}

fn assert_differ(orig: &Trace, opt: &Trace, inputs: &[i64]) {
    let (a, b) = (go(orig, inputs), go(opt, inputs));
    assert!(
        outcomes_equivalent(&a, &b).is_err(),
        "{inputs:?}: expected a difference, got {} and {}",
        a.outcome,
        b.outcome
    );
}

fn assert_agree(orig: &Trace, opt: &Trace, inputs: &[i64]) {
    let (a, b) = (go(orig, inputs), go(opt, inputs));
    if let Err(e) = outcomes_equivalent(&a, &b) {
        panic!("{inputs:?}: expected agreement: {e}");
    }
}

/// `int_add(x, 10) < 15` does not imply `x < 6` when the addition wraps.
fn wrapping_add_pair() -> (Trace, Trace) {
    let build = |keep_second: bool| {
        let mut b = TraceBuilder::new();
        let i0 = b.input(Kind::Int);
        let ten = b.const_int(10);
        let i1 = b.op(Opcode::IntAdd, &[i0, ten]);
        let c15 = b.const_int(15);
        let i2 = b.op(Opcode::IntLt, &[i1, c15]);
        b.guard(Opcode::GuardTrue, &[i2], &[i0], 1);
        if keep_second {
            let c6 = b.const_int(6);
            let i3 = b.op(Opcode::IntLt, &[i0, c6]);
            b.guard(Opcode::GuardTrue, &[i3], &[i0], 2);
        }
        let zero = b.const_int(0);
        b.finish(&[zero]);
        b.build().unwrap()
    };
    (build(true), build(false))
}

/// `int_sub(0, x) < 0` does not imply `x > 0` for x = MININT.
fn neg_pair() -> (Trace, Trace) {
    let build = |keep_second: bool| {
        let mut b = TraceBuilder::new();
        let i0 = b.input(Kind::Int);
        let zero = b.const_int(0);
        let i1 = b.op(Opcode::IntSub, &[zero, i0]);
        let i2 = b.op(Opcode::IntLt, &[i1, zero]);
        b.guard(Opcode::GuardTrue, &[i2], &[i0], 1);
        if keep_second {
            let i3 = b.op(Opcode::IntGt, &[i0, zero]);
            b.guard(Opcode::GuardTrue, &[i3], &[i0], 2);
        }
        b.finish(&[i0]);
        b.build().unwrap()
    };
    (build(true), build(false))
}

/// `int_sub_ovf(int_add(a, b), b)` is not `a`: the wrapping addition may have overflowed, so
/// the subtraction's overflow guard can fail.
fn add_sub_ovf_pair() -> (Trace, Trace) {
    let mut b = TraceBuilder::new();
    let a = b.input(Kind::Int);
    let bb = b.input(Kind::Int);
    let c = b.op(Opcode::IntAdd, &[a, bb]);
    let r = b.op(Opcode::IntSubOvf, &[c, bb]);
    b.guard(Opcode::GuardNoOverflow, &[], &[a, bb], 1);
    b.finish(&[r]);
    let orig = b.build().unwrap();

    let mut b = TraceBuilder::new();
    let a = b.input(Kind::Int);
    let _bb = b.input(Kind::Int);
    b.finish(&[a]);
    (orig, b.build().unwrap())
}

#[test]
fn bug1_wrapping_add_then_lt() {
    let (orig, wrong) = wrapping_add_pair();
    // The counterexample of the post and MAXINT itself.
    for x in [i64::MAX, 9223372036854775803, 9223372036854775800] {
        let r = go(&orig, &[x]);
        assert!(
            matches!(r.outcome, Outcome::GuardFailed { guard, .. } if guard.0 == 1),
            "{x}: {}",
            r.outcome
        );
        assert!(matches!(go(&wrong, &[x]).outcome, Outcome::Finish(_)));
        assert_differ(&orig, &wrong, &[x]);
    }
    for x in [0, 3, 5, -100, 100] {
        assert_agree(&orig, &wrong, &[x]);
    }
}

#[test]
fn bug2_sub_from_zero_of_minint() {
    let (orig, wrong) = neg_pair();
    assert_differ(&orig, &wrong, &[i64::MIN]);
    let r = go(&orig, &[i64::MIN]);
    assert!(
        matches!(r.outcome, Outcome::GuardFailed { guard, ref values, .. } if guard.0 == 1 && values == &[RtValue::Int(i64::MIN)])
    );
    for x in [1, 5, i64::MAX, 0, -3] {
        assert_agree(&orig, &wrong, &[x]);
    }
}

#[test]
fn bug3_add_then_sub_ovf() {
    let (orig, wrong) = add_sub_ovf_pair();
    for (a, b) in [(i64::MAX, 1), (i64::MIN, -1), (1 << 62, 1 << 62)] {
        let r = go(&orig, &[a, b]);
        assert!(
            matches!(r.outcome, Outcome::GuardFailed { guard, .. } if guard.0 == 0),
            "{a},{b}: {}",
            r.outcome
        );
        assert_differ(&orig, &wrong, &[a, b]);
    }
    for (a, b) in [(3, 4), (-10, 7), (i64::MAX, 0), (i64::MIN, 5)] {
        assert_agree(&orig, &wrong, &[a, b]);
    }
}

#[test]
fn control_add_ovf_then_sub_is_a() {
    // The correct relative of bug 3: after a non-overflowing int_add_ovf, int_sub(c, b) is a.
    let mut b = TraceBuilder::new();
    let a = b.input(Kind::Int);
    let bb = b.input(Kind::Int);
    let c = b.op(Opcode::IntAddOvf, &[a, bb]);
    b.guard(Opcode::GuardNoOverflow, &[], &[a, bb], 1);
    let r = b.op(Opcode::IntSub, &[c, bb]);
    b.finish(&[r]);
    let orig = b.build().unwrap();
    let mut b = TraceBuilder::new();
    let a = b.input(Kind::Int);
    let bb = b.input(Kind::Int);
    let _c = b.op(Opcode::IntAddOvf, &[a, bb]);
    b.guard(Opcode::GuardNoOverflow, &[], &[a, bb], 1);
    b.finish(&[a]);
    let good = b.build().unwrap();
    let specials = [
        0,
        1,
        -1,
        2,
        i64::MAX,
        i64::MIN,
        i64::MAX - 1,
        i64::MIN + 1,
        1 << 62,
        -(1 << 62),
    ];
    for &x in &specials {
        for &y in &specials {
            assert_agree(&orig, &good, &[x, y]);
        }
    }
}
