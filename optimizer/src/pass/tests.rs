//! Unit tests of the pass driver: the release-build input check.

use super::precheck::precheck;
use super::*;
use trace_interp::random::{random_trace, RandomConfig};
use trace_ir::{FailArg, Value};

/// The release-build input check must accept everything the verifier accepts.
#[test]
fn precheck_accepts_valid_traces() {
    for seed in 0..400u64 {
        let (t, _) = random_trace(&RandomConfig::default(), seed);
        assert!(precheck(&t).is_ok(), "seed {seed}");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pypy-dev/fannkuch.pypylog");
    let text = std::fs::read_to_string(dir).unwrap();
    for t in trace_ir::parse_file(&text).unwrap() {
        assert!(precheck(&t).is_ok(), "{}", t.info.name);
    }
}

/// ... and reject what the pass cannot handle, with an error instead of a panic.
#[test]
fn precheck_rejects_malformed_traces() {
    let good = trace_ir::parse_trace(
        "[i0, p1]
         i2 = int_add(i0, 1)
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         guard_true(i2, descr=<Guard1>) [i3]
         finish(i3)",
    )
    .unwrap();
    assert!(precheck(&good).is_ok());
    let mut t = good.clone();
    t.ops[2].args[0] = Value::op(OpRef::new(3)); // use before definition
    assert!(precheck(&t).is_err());
    let mut t = good.clone();
    t.ops[3].descr = None; // getfield without descriptor
    assert!(precheck(&t).is_err());
    let mut t = good.clone();
    t.ops[4].guard = None; // guard without resume data
    assert!(precheck(&t).is_err());
    let mut t = good.clone();
    t.ops[2].args.pop(); // wrong arity
    assert!(precheck(&t).is_err());
    let mut t = good.clone();
    t.guards[0].fail_args[0] = FailArg::Virtual(3); // missing virtual
    assert!(precheck(&t).is_err());
    let mut t = good;
    t.ops[2].args[1] = Value::constant(trace_ir::ConstRef::new(999)); // missing constant
    assert!(precheck(&t).is_err());
}
