//! Translation validation of bridges: the facts stated at a bridge's start are assumed, and
//! a bridge whose optimized form jumps into a peeled loop's body must prove what the body
//! assumes of each operand; a jump to any other label than the original's is invalid.

mod common;

use trace_ir::{parse_trace, BodyEntry, Trace, WordFacts};
use verify::validate::{validate, Config, Verdict};

fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The body of the loop with header `TargetToken(7)` assumes its second parameter in
/// `[0, 255]`, its third of class 0x50 and its fourth not null.
fn entries() -> Vec<BodyEntry> {
    vec![BodyEntry {
        header: 7,
        body: trace_ir::peeled_body_token(7),
        params: vec![
            WordFacts::default(),
            WordFacts {
                range: Some((0, 255)),
                ..WordFacts::default()
            },
            WordFacts {
                class: Some(0x50),
                nonnull: true,
                ..WordFacts::default()
            },
            WordFacts {
                nonnull: true,
                ..WordFacts::default()
            },
        ],
        ..BodyEntry::default()
    }]
}

fn verdict(original: &str, optimized: &str) -> Verdict {
    let cfg = Config {
        body_entries: entries(),
        ..Config::default()
    };
    validate(&parse(original), &parse(optimized), &cfg)
}

#[track_caller]
fn assert_valid(original: &str, optimized: &str) {
    let v = verdict(original, optimized);
    assert!(v.is_valid(), "expected valid, got {v}\noptimized:\n{optimized}");
}

#[track_caller]
fn assert_invalid(original: &str, optimized: &str) {
    let v = verdict(original, optimized);
    assert!(v.is_invalid(), "expected invalid, got {v}\noptimized:\n{optimized}");
}

/// A bridge whose inputs come with the facts of its guard, jumping to the header.
const BRIDGE: &str = "
[i0, i1, p2, p3]
record_int_range(i1, 0, 200)
record_exact_class(p2, 80)
assert_not_none(p3)
i4 = int_add(i1, 55)
jump(i0, i4, p2, p3, descr=TargetToken(7))
";

const INTO_BODY: &str = "
[i0, i1, p2, p3]
i4 = int_add(i1, 55)
jump(i0, i4, p2, p3, descr=TargetToken(4611686018427387911))
";

#[test]
fn a_jump_into_the_body_with_what_it_assumes_is_valid() {
    assert_valid(BRIDGE, INTO_BODY);
}

#[test]
fn a_jump_into_the_body_out_of_range_is_invalid() {
    // 200 + 56 leaves [0, 255].
    let original = BRIDGE.replace("int_add(i1, 55)", "int_add(i1, 56)");
    let optimized = INTO_BODY.replace("int_add(i1, 55)", "int_add(i1, 56)");
    assert_invalid(&original, &optimized);
}

#[test]
fn a_jump_into_the_body_without_the_class_is_invalid() {
    let original = BRIDGE.replace("record_exact_class(p2, 80)", "record_exact_class(p2, 81)");
    assert_invalid(&original, INTO_BODY);
}

#[test]
fn a_jump_into_the_body_with_a_null_is_invalid() {
    let original = BRIDGE.replace("assert_not_none(p3)\n", "");
    assert_invalid(&original, INTO_BODY);
}

#[test]
fn a_jump_to_another_label_is_invalid() {
    let optimized = INTO_BODY.replace("4611686018427387911", "8");
    assert_invalid(BRIDGE, &optimized);
    // Without the body as an entry, jumping into it is invalid too.
    let v = validate(&parse(BRIDGE), &parse(INTO_BODY), &Config::default());
    assert!(v.is_invalid(), "{v}");
}

#[test]
fn integer_hints_are_promises_on_the_original() {
    // The hint makes the comparison known; dropping it from the optimized side is fine.
    assert_valid(
        "
[i0]
record_int_bits(i0, 255, 7)
i1 = int_and(i0, 15)
finish(i1)
",
        "
[i0]
finish(7)
",
    );
    assert_invalid(
        "
[i0]
record_int_bits(i0, 255, 7)
i1 = int_and(i0, 511)
finish(i1)
",
        "
[i0]
finish(7)
",
    );
}

/// A bridge starts from what its loop computed: `record_known_result` of a loop-invariant
/// function states the call's result, which the bridge's own call of it then is.
#[test]
fn a_known_result_of_a_loop_invariant_call_is_proven_against_the_call() {
    let orig = "[i0, p1]
         record_known_result(p1, ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         p2 = call_loopinvariant_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
         i3 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i3)";
    common::assert_valid(
        orig,
        "[i0, p1]
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3)",
    );
    // Another argument: another call.
    common::assert_invalid(
        &orig.replace(
            "p2 = call_loopinvariant_r(ConstClass(tl), 64,",
            "p2 = call_loopinvariant_r(ConstClass(tl), 65,",
        ),
        "[i0, p1]
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3)",
    );
    common::assert_optimizer_output_not_invalid(orig);
}

/// A bridge starts from the fields its loop had read: `record_known_field` states one, and
/// the bridge's own load of it is that value.
#[test]
fn a_known_field_is_proven_against_the_load() {
    let orig = "[p0, p1]
         record_known_field(p0, p1, descr=<FieldP map 8>)
         p2 = getfield_gc_r(p0, descr=<FieldP map 8>)
         i3 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i3)";
    common::assert_valid(
        orig,
        "[p0, p1]
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3)",
    );
    // Another field: nothing is known of it.
    common::assert_invalid(
        &orig.replace(
            "p2 = getfield_gc_r(p0, descr=<FieldP map 8>)",
            "p2 = getfield_gc_r(p0, descr=<FieldP other 16>)",
        ),
        "[p0, p1]
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3)",
    );
    // After a store that may touch the field, the promise says nothing of the load.
    common::assert_invalid(
        "[p0, p1, p4]
         record_known_field(p0, p1, descr=<FieldP map 8>)
         setfield_gc(p4, ConstPtr(null), descr=<FieldP map 8>)
         p2 = getfield_gc_r(p0, descr=<FieldP map 8>)
         i3 = getfield_gc_i(p2, descr=<FieldS a 8>)
         finish(i3)",
        "[p0, p1, p4]
         setfield_gc(p4, ConstPtr(null), descr=<FieldP map 8>)
         i3 = getfield_gc_i(p1, descr=<FieldS a 8>)
         finish(i3)",
    );
    common::assert_optimizer_output_not_invalid(orig);
}

/// A loop's body takes what an immutable field of an object defined before its label held
/// there (the same object, the same field, in every iteration); a mutable field it may not.
#[test]
fn an_immutable_field_read_before_the_label_is_proven_in_the_body() {
    let orig = "[p0, i0]
         p1 = getfield_gc_r(p0, descr=<FieldP ec 8 pure>)
         p2 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
         guard_isnull(p2, descr=<Guard1>) [i0]
         label(i0, descr=TargetToken(5)) -> [i3]
         p4 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
         guard_isnull(p4, descr=<Guard2>) [i3]
         i5 = int_add(i3, 1)
         jump(i5, descr=TargetToken(5))";
    let opt = "[p0, i0]
         p1 = getfield_gc_r(p0, descr=<FieldP ec 8 pure>)
         p2 = getfield_gc_r(p1, descr=<FieldP tracefunc 16 pure>)
         guard_isnull(p2, descr=<Guard1>) [i0]
         label(i0, descr=TargetToken(5)) -> [i3]
         i5 = int_add(i3, 1)
         jump(i5, descr=TargetToken(5))";
    common::assert_valid(orig, opt);
    common::assert_invalid(
        &orig.replace("tracefunc 16 pure", "tracefunc 16"),
        &opt.replace("tracefunc 16 pure", "tracefunc 16"),
    );
    common::assert_optimizer_output_not_invalid(orig);
}

/// The body of the loop with header `TargetToken(9)` carries field `T.step` of its first
/// parameter (non-null) as its fourth; that of `TargetToken(11)` takes its first parameter,
/// a `Box` the loop makes, field by field (its `v` as its third).
fn carrying_entries() -> Vec<BodyEntry> {
    use trace_ir::{CarriedBase, CarriedLoad, CarriedValue, CarriedVirtual, Descr, DescrRef, VirtualKind};
    let field = |name: &str| {
        let t = parse(&format!(
            "[p0]\ni1 = getfield_gc_i(p0, descr=<FieldS {name} 8>)\nfinish(i1)"
        ));
        t.descrs[0].clone()
    };
    let size = parse("[]\np0 = new(descr=<SizeDescr 16>)\nfinish(p0)").descrs[0].clone();
    assert!(matches!(size, Descr::Size(_)));
    vec![
        BodyEntry {
            header: 9,
            body: trace_ir::peeled_body_token(9),
            params: vec![
                WordFacts {
                    nonnull: true,
                    ..WordFacts::default()
                },
                WordFacts::default(),
                WordFacts::default(),
            ],
            carried: vec![CarriedLoad {
                value: CarriedValue::Param(3),
                base: CarriedBase::Param(0),
                descr: DescrRef::new(0),
                index: None,
                facts: WordFacts::default(),
            }],
            carried_virtuals: Vec::new(),
            carried_pure: Vec::new(),
            descrs: vec![field("T.step")],
        },
        BodyEntry {
            header: 11,
            body: trace_ir::peeled_body_token(11),
            params: vec![WordFacts::default(), WordFacts::default()],
            carried: Vec::new(),
            carried_virtuals: vec![CarriedVirtual {
                param: 0,
                kind: VirtualKind::Struct {
                    opcode: trace_ir::Opcode::New,
                    descr: DescrRef::new(0),
                },
                fields: vec![(DescrRef::new(1), 2)],
            }],
            carried_pure: Vec::new(),
            descrs: vec![size, field("Box.v")],
        },
    ]
}

fn carrying_verdict(original: &str, optimized: &str) -> Verdict {
    let cfg = Config {
        body_entries: carrying_entries(),
        ..Config::default()
    };
    validate(&parse(original), &parse(optimized), &cfg)
}

const LOAD_BRIDGE: &str = "
[p0, i1, i2]
assert_not_none(p0)
jump(p0, 0, i2, descr=TargetToken(9))
";

#[test]
fn a_jump_into_a_body_passes_the_field_its_label_carries() {
    let body = trace_ir::peeled_body_token(9);
    let loaded = format!(
        "[p0, i1, i2]\ni3 = getfield_gc_i(p0, descr=<FieldS T.step 8>)\njump(p0, 0, i2, i3, descr=TargetToken({body}))"
    );
    let v = carrying_verdict(LOAD_BRIDGE, &loaded);
    assert!(v.is_valid(), "{v}\n{loaded}");
    // Any other value is not what the field holds.
    let wrong = format!("[p0, i1, i2]\njump(p0, 0, i2, i1, descr=TargetToken({body}))");
    let v = carrying_verdict(LOAD_BRIDGE, &wrong);
    assert!(v.is_invalid(), "{v}\n{wrong}");
    // Nor may the carried operand be left out.
    let short = format!("[p0, i1, i2]\njump(p0, 0, i2, descr=TargetToken({body}))");
    let v = carrying_verdict(LOAD_BRIDGE, &short);
    assert!(v.is_invalid(), "{v}\n{short}");
}

#[test]
fn a_jump_into_a_body_passes_the_fields_of_the_object_it_takes_field_by_field() {
    let original = "
[i0, i1]
p2 = new(descr=<SizeDescr 16>)
setfield_gc(p2, i0, descr=<FieldS Box.v 8>)
jump(p2, i1, descr=TargetToken(11))
";
    let body = trace_ir::peeled_body_token(11);
    let fields = format!("[i0, i1]\njump(ConstPtr(null), i1, i0, descr=TargetToken({body}))");
    let v = carrying_verdict(original, &fields);
    assert!(v.is_valid(), "{v}\n{fields}");
    let wrong = format!("[i0, i1]\njump(ConstPtr(null), i1, i1, descr=TargetToken({body}))");
    let v = carrying_verdict(original, &wrong);
    assert!(v.is_invalid(), "{v}\n{wrong}");
}
