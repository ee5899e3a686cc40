//! Translation validation of peeled loops whose body label takes an object field by field
//! (`Config::carried_virtuals`): where the label is reached, the original's operand must be
//! an object it allocated that nothing else refers to, equal to what the field parameters
//! hold; past the label both sides have such a fresh object.

use trace_ir::text::parse_angle_descr;
use trace_ir::{parse_trace, CarriedVirtual, DescrRef, Opcode, Trace, VirtualKind};
use verify::validate::{validate, Config, Verdict};

fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Descriptor `<text>` in `t`'s table (added when the trace does not use it).
fn descr(t: &mut Trace, text: &str) -> DescrRef {
    let d = parse_angle_descr(text).unwrap_or_else(|e| panic!("{e}: <{text}>"));
    t.make_descr(d)
}

/// The verdict on `optimized` against `original`, the optimized body label taking a
/// `new_with_vtable` of `<SizeDescr 16>` in input parameter `param` with `fields`
/// (descriptor text, label parameter).
fn verdict(original: &str, optimized: &str, param: usize, fields: &[(&str, usize)]) -> Verdict {
    let o = parse(original);
    let mut p = parse(optimized);
    let size = descr(&mut p, "SizeDescr 16");
    let fields = fields.iter().map(|&(d, pos)| (descr(&mut p, d), pos)).collect();
    let cfg = Config {
        carried_virtuals: vec![CarriedVirtual {
            param,
            kind: VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr: size,
            },
            fields,
        }],
        ..Config::default()
    };
    validate(&o, &p, &cfg)
}

/// A loop that boxes its running sum in a new object for the next iteration.
const BOX: &str = "
[i0, p1]
label(i0, p1, descr=TargetToken(1))
i2 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i3 = int_add(i2, i0)
i4 = int_lt(i3, 100)
guard_true(i4, descr=<Guard1>) [i0, p1]
p5 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p5, i3, descr=<FieldS T.v 8>)
jump(i0, p5, descr=TargetToken(1))
";

/// `BOX` peeled, the box taken field by field: a null placeholder in its parameter, its
/// field in parameter 2; a failing guard in the body rebuilds it.
const BOX_CARRIED: &str = "
[i0, p1]
label(i0, p1, descr=TargetToken(1))
i5 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i6 = int_add(i5, i0)
i7 = int_lt(i6, 100)
guard_true(i7, descr=<Guard1>) [i0, p1]
label(i0, ConstPtr(null), i6, descr=TargetToken(4611686018427387905)) -> [i10, p11, i12]
i13 = int_add(i12, i10)
i14 = int_lt(i13, 100)
guard_true(i14, descr=<Guard2 key=1>) [i10, $0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS T.v 8>: i12}
jump(i10, ConstPtr(null), i13, descr=TargetToken(4611686018427387905))
";

const FIELD: &[(&str, usize)] = &[("FieldS T.v 8", 2)];

#[test]
fn a_box_taken_field_by_field_is_valid() {
    let v = verdict(BOX, BOX_CARRIED, 1, FIELD);
    assert!(v.is_valid(), "expected valid, got {v}");
}

#[test]
fn a_wrong_field_on_the_back_edge_is_invalid() {
    let wrong = BOX_CARRIED.replace("jump(i10, ConstPtr(null), i13,", "jump(i10, ConstPtr(null), i12,");
    let v = verdict(BOX, &wrong, 1, FIELD);
    assert!(
        v.is_invalid() && v.to_string().contains("field parameters"),
        "expected invalid, got {v}"
    );
}

#[test]
fn a_wrong_field_in_the_exit_is_invalid() {
    let wrong = BOX_CARRIED.replace("<FieldS T.v 8>: i12}", "<FieldS T.v 8>: i13}");
    let v = verdict(BOX, &wrong, 1, FIELD);
    assert!(v.is_invalid(), "expected invalid, got {v}");
}

/// The original writes a second field the optimized label does not take: the object passed
/// is not the one rebuilt from the parameters.
#[test]
fn a_field_left_out_is_invalid() {
    let original = BOX.replace(
        "setfield_gc(p5, i3, descr=<FieldS T.v 8>)",
        "setfield_gc(p5, i3, descr=<FieldS T.v 8>)\nsetfield_gc(p5, 7, descr=<FieldS T.w 16>)",
    );
    let v = verdict(&original, BOX_CARRIED, 1, FIELD);
    assert!(v.is_invalid(), "expected invalid, got {v}");
}

/// The body reads the placeholder as if it were the object: it is null.
#[test]
fn the_placeholder_is_not_the_object() {
    let wrong = BOX_CARRIED.replace(
        "i13 = int_add(i12, i10)",
        "i20 = getfield_gc_i(p11, descr=<FieldS T.v 8>)\ni13 = int_add(i20, i10)",
    );
    let v = verdict(BOX, &wrong, 1, FIELD);
    assert!(!v.is_valid(), "expected not valid, got {v}");
}

/// The original passes back the object it got (one that exists outside the loop, which
/// others may refer to): it cannot be taken field by field.
#[test]
fn an_object_the_trace_did_not_allocate_is_not_taken_apart() {
    let original = "
[i0, p1]
label(i0, p1, descr=TargetToken(1))
i2 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i3 = int_add(i2, i0)
i4 = int_lt(i3, 100)
guard_true(i4, descr=<Guard1>) [i0, p1]
setfield_gc(p1, i3, descr=<FieldS T.v 8>)
jump(i0, p1, descr=TargetToken(1))
";
    let optimized = "
[i0, p1]
label(i0, p1, descr=TargetToken(1))
i5 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i6 = int_add(i5, i0)
i7 = int_lt(i6, 100)
guard_true(i7, descr=<Guard1>) [i0, p1]
label(i0, ConstPtr(null), i6, descr=TargetToken(4611686018427387905)) -> [i10, p11, i12]
i13 = int_add(i12, i10)
i14 = int_lt(i13, 100)
guard_true(i14, descr=<Guard2 key=1>) [i10, $0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS T.v 8>: i12}
jump(i10, ConstPtr(null), i13, descr=TargetToken(4611686018427387905))
";
    let v = verdict(original, optimized, 1, FIELD);
    assert!(!v.is_valid(), "expected not valid, got {v}");
}

/// The original passes its new object in two parameters: after the label they are one
/// object, which two separate ones cannot stand for.
#[test]
fn an_object_passed_twice_is_not_taken_apart() {
    let original = "
[i0, p1, p2]
label(i0, p1, p2, descr=TargetToken(1))
i3 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i4 = int_add(i3, i0)
i5 = int_lt(i4, 100)
guard_true(i5, descr=<Guard1>) [i0, p1]
p6 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p6, i4, descr=<FieldS T.v 8>)
jump(i0, p6, p6, descr=TargetToken(1))
";
    let optimized = "
[i0, p1, p2]
label(i0, p1, p2, descr=TargetToken(1))
i3 = getfield_gc_i(p1, descr=<FieldS T.v 8>)
i4 = int_add(i3, i0)
i5 = int_lt(i4, 100)
guard_true(i5, descr=<Guard1>) [i0, p1]
p6 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p6, i4, descr=<FieldS T.v 8>)
label(i0, ConstPtr(null), p6, i4, descr=TargetToken(4611686018427387905)) -> [i10, p11, p12, i13]
i14 = int_add(i13, i10)
i15 = int_lt(i14, 100)
guard_true(i15, descr=<Guard2 key=1>) [i10, $0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS T.v 8>: i13}
p16 = new_with_vtable(descr=<SizeDescr 16>)
setfield_gc(p16, i14, descr=<FieldS T.v 8>)
jump(i10, ConstPtr(null), p16, i14, descr=TargetToken(4611686018427387905))
";
    let v = verdict(original, optimized, 1, &[("FieldS T.v 8", 3)]);
    assert!(!v.is_valid(), "expected not valid, got {v}");
}

/// Metadata that does not fit the label is refused, never trusted.
#[test]
fn field_parameters_that_do_not_fit_are_refused() {
    // a field parameter past the label's end
    let v = verdict(BOX, BOX_CARRIED, 1, &[("FieldS T.v 8", 3)]);
    assert!(!v.is_valid(), "expected not valid, got {v}");
    // an input parameter beyond the original's
    let v = verdict(BOX, BOX_CARRIED, 2, FIELD);
    assert!(!v.is_valid(), "expected not valid, got {v}");
}
