//! The listing: each op's line in the printed trace.

use trace_ir::{parse_trace, print_listing, print_trace, OpRef};

#[test]
fn each_op_is_on_the_line_that_prints_it() {
    let text = "aliasing type-based
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i4 = int_add(i0, i1)
guard_true(i4, descr=<Guard0>) [i0]
jump(i4, i1, descr=TargetToken(1))
";
    let t = parse_trace(text).unwrap();
    let l = print_listing(&t);
    assert_eq!(l.text, print_trace(&t));
    // Inputs on the inputs line, label parameters on the label's line (printed under the
    // names of the values the label takes, which they shadow).
    assert_eq!(l.op_lines, vec![1, 1, 2, 2, 2, 3, 4, 5]);
    assert_eq!(l.line_of(OpRef::new(0)), Some("[i0, i1]"));
    assert_eq!(l.line_of(OpRef::new(5)), Some("i5 = int_add(i0, i1)"));
    assert_eq!(l.line_of(OpRef::new(7)), Some("jump(i5, i1, descr=TargetToken(1))"));
    assert_eq!(l.line_of(OpRef::new(8)), None);
}
