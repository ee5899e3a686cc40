//! The driver with an engine of the embedder's (traces run in the reference interpreter,
//! no bridges): loops recorded again when their guards fail too often, loop exits that do
//! not count, and what the driver reports per compilation and overall.

mod common;
use common::loop_trace;
use driver::{AtHeader, Driver, DriverConfig, Engine, EngineError, Exit, ExitValue, Native};
use trace_interp::{Outcome, RtValue, RunConfig};
use trace_ir::Trace;

/// Runs integer traces in `trace_interp`; counts what it compiles.
#[derive(Default)]
struct Interp {
    compiled: u32,
}

impl Engine for Interp {
    type Code = Trace;
    type Runtime = ();

    fn compile(&mut self, trace: &Trace) -> Result<Trace, EngineError> {
        self.compiled += 1;
        Ok(trace.clone())
    }

    unsafe fn run(&mut self, code: &mut Trace, inputs: &[u64], _: &mut ()) -> Result<Exit, EngineError> {
        let ins: Vec<RtValue> = inputs.iter().map(|&i| RtValue::Int(i as i64)).collect();
        match trace_interp::run(code, &ins, &RunConfig::default()).outcome {
            Outcome::GuardFailed {
                guard,
                resume_key,
                values,
            } => Ok(Exit::Guard {
                guard,
                resume_key,
                values: values.iter().map(|v| ExitValue::Int(v.bits() as i64)).collect(),
            }),
            other => Err(format!("unexpected outcome {other}").into()),
        }
    }
}

fn config() -> DriverConfig {
    DriverConfig {
        hot_loop: 2,
        retrace_after: 3,
        max_retraces: 1,
        ..DriverConfig::default()
    }
}

/// Record and compile loop 0 (`loop_header` until it says so).
fn compile<E: Engine>(d: &mut Driver<u32, E>) {
    while d.loop_header(0) != AtHeader::Record {}
    let (t, exit) = loop_trace();
    d.finish_recording(t, &[exit]).unwrap();
    assert_eq!(d.loop_header(0), AtHeader::Run);
}

fn run(d: &mut Driver<u32, Interp>, inputs: [u64; 3]) -> u64 {
    // SAFETY: the engine interprets the trace: it touches no memory of ours.
    match unsafe { d.run(0, &inputs, &mut ()) }.unwrap() {
        Exit::Guard { resume_key, .. } => resume_key,
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_engine_without_bridges_gets_its_loop_recorded_again() {
    let mut d = Driver::with_engine(config(), Interp::default());
    assert!(!d.engine().supports_bridges());
    compile(&mut d);
    assert_eq!(d.engine().compiled, 1);
    // Runs from a multiple of 4 leave through guard 1 (or its peeled copy: same resume key).
    for k in 1..=3 {
        assert_eq!(d.loop_header(0), AtHeader::Run);
        assert_eq!(run(&mut d, [4 * k, 100, 0]), 1);
        assert!(d.bridge_to_record().is_none());
    }
    // Three failures: the code is gone, and the loop is counted and recorded again.
    assert_eq!(d.stats().retraces, 1);
    assert_eq!(d.loop_header(0), AtHeader::Interpret);
    compile(&mut d);
    // At most once: from now on the code stays.
    for k in 1..=5 {
        assert_eq!(run(&mut d, [4 * k, 100, 0]), 1);
        assert_eq!(d.loop_header(0), AtHeader::Run);
    }
    let s = d.stats();
    assert_eq!((s.loops, s.retraces, s.entries, s.exits), (2, 1, 8, 8), "{s:?}");
    assert_eq!(s.exits_after_warmup, 5, "{s:?}");
}

#[test]
fn the_loops_own_exits_count_toward_no_retrace_and_no_bridge() {
    let mut d = Driver::with_engine(config(), Interp::default());
    compile(&mut d);
    for _ in 0..10 {
        assert_eq!(run(&mut d, [5, 5, 0]), 0);
    }
    assert_eq!(d.stats().retraces, 0);
    assert_eq!(d.loop_header(0), AtHeader::Run);
    // Native code: the exit guard (and its copy in the peeled body) never gets a bridge.
    let mut n: Driver<u32, Native> = Driver::new(DriverConfig {
        hot_guard: 2,
        ..config()
    });
    compile(&mut n);
    for i in [5, 5, 5, 1, 1, 1] {
        // SAFETY: the loop works on integers only.
        let exit = unsafe { n.run(0, &[i, 2, 0], &mut backend_x86_64::SimpleHeap::new()) }.unwrap();
        assert!(matches!(exit, Exit::Guard { resume_key: 0, .. }), "{exit:?}");
        assert!(n.bridge_to_record().is_none());
    }
}

#[test]
fn each_compilation_is_reported_and_the_engine_compiles_what_the_optimizer_made() {
    for optimize in [false, true] {
        let mut d = Driver::with_engine(DriverConfig { optimize, ..config() }, Interp::default());
        while d.loop_header(9) != AtHeader::Record {}
        let (t, exit) = loop_trace();
        let r = d.finish_recording(t.clone(), &[exit]).unwrap();
        assert_eq!((r.key, r.bridge_of), (9, None));
        assert_eq!(r.recorded.ops.len(), t.ops.len());
        // The loop's label carries the token its bridges jump to.
        let label = r.recorded.last_label().unwrap();
        assert!(r.recorded.op(label).descr.is_some());
        assert_eq!(r.optimizer.is_some(), optimize);
        if optimize {
            // Peeled: a preamble and the loop body, each with its guards.
            assert!(r.compiled.guards.len() > t.guards.len(), "{:?}", r.compiled);
        } else {
            assert_eq!(r.compiled.ops.len(), t.ops.len());
        }
        assert_eq!(d.stats().loops, 1);
        assert!(d.stats().loop_time >= r.optimize_time + r.compile_time);
    }
}

#[test]
fn exits_after_warmup_count_from_the_last_compilation() {
    let mut d = Driver::with_engine(config(), Interp::default());
    compile(&mut d);
    assert_eq!(run(&mut d, [4, 100, 0]), 1);
    assert_eq!(run(&mut d, [8, 100, 0]), 1);
    assert_eq!(d.stats().exits_after_warmup, 2);
    assert_eq!(run(&mut d, [12, 100, 0]), 1);
    // The third failure threw the code away; compiling it again starts the count afresh.
    compile(&mut d);
    assert_eq!(d.stats().exits_after_warmup, 0);
    assert_eq!(d.stats().exits, 3);
}
