//! The driver's state machine: counting, recording, aborting and blacklisting, compiled
//! loops, hot guards and their bridges (out of bridges too), and the errors of calls that
//! do not fit the state.

mod common;
use backend_x86_64::{Exit, ExitValue, SimpleHeap};
use common::loop_trace;
use driver::{AtHeader, Driver, DriverConfig, DriverError};
use trace_ir::{Kind, Opcode, TraceBuilder};

fn config(hot_loop: u32, hot_guard: u32, max_aborts: u32) -> DriverConfig {
    DriverConfig {
        hot_loop,
        hot_guard,
        max_aborts,
        ..DriverConfig::default()
    }
}

#[test]
fn a_hot_location_is_recorded_and_one_that_keeps_failing_is_blacklisted() {
    let mut d: Driver<u32> = Driver::new(config(3, 5, 2));
    assert_eq!(d.loop_header(7), AtHeader::Interpret);
    assert_eq!(d.loop_header(7), AtHeader::Interpret);
    assert_eq!(d.loop_header(7), AtHeader::Record);
    assert!(d.is_recording());
    // Another loop's header while recording: keep interpreting (and recording).
    assert_eq!(d.loop_header(8), AtHeader::Interpret);
    assert_eq!(d.loop_header(7), AtHeader::Close);
    d.abort_recording();
    assert!(!d.is_recording());
    for _ in 0..2 {
        assert_eq!(d.loop_header(7), AtHeader::Interpret);
    }
    assert_eq!(d.loop_header(7), AtHeader::Record);
    d.abort_recording();
    // Two aborts: never recorded again.
    for _ in 0..10 {
        assert_eq!(d.loop_header(7), AtHeader::Interpret);
    }
    assert_eq!(d.stats().aborts, 2);
}

#[test]
fn calls_that_do_not_fit_the_state_are_errors() {
    let mut d: Driver<u32> = Driver::new(config(1, 5, 2));
    assert!(matches!(
        d.finish_recording(loop_trace().0, &[]),
        Err(DriverError::State(_))
    ));
    // SAFETY: nothing runs: no loop is compiled at 3.
    let nothing = unsafe { d.run(3, &[0, 0, 0], &mut SimpleHeap::new()) };
    assert!(matches!(nothing, Err(DriverError::State(_))));
    // A trace that does not compile abandons the recording.
    assert_eq!(d.loop_header(3), AtHeader::Record);
    let mut bad = loop_trace().0;
    bad.ops.pop();
    assert!(d.finish_recording(bad, &[]).is_err());
    assert!(!d.is_recording());
    assert_eq!(d.stats().aborts, 1);
    // So does one longer than the limit.
    let mut short: Driver<u32> = Driver::new(DriverConfig {
        max_trace_ops: 8,
        ..config(1, 5, 2)
    });
    assert_eq!(short.loop_header(3), AtHeader::Record);
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    assert!(!short.too_long(&b));
    for _ in 0..8 {
        b.op(Opcode::IntAdd, &[x, x]);
    }
    assert!(short.too_long(&b));
    let long = short.finish_recording(loop_trace().0, &[]);
    assert!(matches!(long, Err(DriverError::TooLong { max: 8, .. })), "{long:?}");
    assert!(!short.is_recording());
}

#[test]
fn hot_guards_get_bridges_and_bridges_get_bridges() {
    let mut d: Driver<u32> = Driver::new(config(1, 2, 3));
    assert_eq!(d.loop_header(0), AtHeader::Record);
    d.finish_recording(loop_trace().0, &[]).unwrap();
    assert_eq!(d.loop_header(0), AtHeader::Run);
    // Each run from a multiple of 4 leaves through the guard at once.
    // SAFETY: the loop and its bridges work on integers only.
    let run = |d: &mut Driver<u32>, i: u64| unsafe { d.run(0, &[i, 1000, 0], &mut SimpleHeap::new()) }.unwrap();
    assert!(matches!(run(&mut d, 4), Exit::Guard { resume_key: 1, .. }));
    assert!(d.bridge_to_record().is_none());
    assert!(matches!(run(&mut d, 8), Exit::Guard { resume_key: 1, .. }));
    // Hot: record the rare path as a bridge (s += 100 * i while i < 40, back into the loop).
    let rare_path = |d: &mut Driver<u32>| {
        let mut s = d.bridge_to_record().expect("a hot guard");
        let v: Vec<_> = s.fail_values.iter().map(|v| v.unwrap()).collect();
        let b = &mut s.builder;
        let forty = b.const_int(40);
        let lt = b.op(Opcode::IntLt, &[v[0], forty]);
        b.guard(Opcode::GuardTrue, &[lt], &v, 2);
        let hundred = b.const_int(100);
        let x = b.op(Opcode::IntMul, &[v[0], hundred]);
        let s2 = b.op(Opcode::IntAdd, &[v[2], x]);
        let one = b.const_int(1);
        let i2 = b.op(Opcode::IntAdd, &[v[0], one]);
        d.close_jump(b, &[i2, v[1], s2]);
        d.finish_recording(s.builder.build().unwrap(), &[]).unwrap();
    };
    rare_path(&mut d);
    assert_eq!(d.stats().bridges, 1);
    // The loop is peeled: the guard's copy in the loop body fails next, and gets the same
    // bridge once hot.
    for _ in 0..2 {
        assert!(matches!(run(&mut d, 0), Exit::Guard { resume_key: 1, .. }));
    }
    rare_path(&mut d);
    assert_eq!(d.stats().bridges, 2);
    // From 0 up to 40 the loop stays native; at 40 the bridge's guard leaves.
    let expected: u64 = (0..40).map(|i| if i % 4 == 0 { 100 * i } else { i }).sum();
    for _ in 0..2 {
        match run(&mut d, 0) {
            Exit::Guard {
                resume_key: 2, values, ..
            } => assert_eq!(values, ints(&[40, 1000, expected as i64])),
            other => panic!("{other:?}"),
        }
    }
    // The bridge's guard is hot in turn: a bridge out of the bridge that finishes.
    let mut s = d.bridge_to_record().expect("the bridge's guard is hot");
    let v: Vec<_> = s.fail_values.iter().map(|v| v.unwrap()).collect();
    s.builder.finish(&[v[2]]);
    d.finish_recording(s.builder.build().unwrap(), &[]).unwrap();
    assert_eq!(d.stats().bridges, 3);
    match run(&mut d, 0) {
        Exit::Finish { values } => assert_eq!(values, ints(&[expected as i64])),
        other => panic!("{other:?}"),
    }
}

/// Integer exit values.
fn ints(v: &[i64]) -> Vec<ExitValue> {
    v.iter().map(|&i| ExitValue::Int(i)).collect()
}
