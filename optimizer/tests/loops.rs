//! Peeled loops: what crosses the back edge.

use optimizer::{Optimizer, Options};
use trace_interp::{outcomes_equivalent_by_resume_key, run, RtValue, RunConfig};
use trace_ir::{parse_trace, print_trace, Opcode};

/// A parameter that the loop passes the same constant for on entry to the body and on its
/// back edge is that constant in the body: its uses fold.
#[test]
fn a_parameter_the_loop_keeps_constant_is_a_constant_in_the_body() {
    let t = parse_trace(
        "
[i0, i1]
label(i0, i1, descr=TargetToken(3)) -> [i2, i3]
i4 = int_lt(i2, 100)
guard_true(i4, descr=<Guard0 key=1>) [i2, i3]
i5 = int_mul(i3, 7)
i6 = int_add(i2, i5)
i7 = int_add(i6, 1)
jump(i7, 2, descr=TargetToken(3))
",
    )
    .unwrap();
    let opts = Options {
        peel: true,
        ..Options::default()
    };
    let out = Optimizer::new().optimize(&t, &opts).unwrap();
    let body = out.trace.last_label().unwrap().index();
    let muls = out.trace.ops[body..]
        .iter()
        .filter(|o| o.opcode == Opcode::IntMul)
        .count();
    assert_eq!(muls, 0, "{}", print_trace(&out.trace));
    // What the body assumes: the parameter is 2.
    let entry = &out.body_entries[0];
    assert_eq!(entry.params[1].range, Some((2, 2)));
    let cfg = RunConfig::default();
    for (i, k) in [(0, 5), (50, -3), (99, 2), (100, 0)] {
        let inputs = [RtValue::Int(i), RtValue::Int(k)];
        let (want, got) = (run(&t, &inputs, &cfg), run(&out.trace, &inputs, &cfg));
        outcomes_equivalent_by_resume_key(&want, &got).unwrap_or_else(|e| panic!("({i}, {k}): {e}"));
    }
}
