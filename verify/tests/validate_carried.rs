//! Translation validation of peeled loops whose body label carries loaded values as extra
//! parameters (`Config::carried`): each is proven to hold what its field or item holds where
//! the label is reached (from the preamble and from the back edge), and assumed past it.

use trace_ir::text::parse_angle_descr;
use trace_ir::{parse_trace, CarriedBase, CarriedLoad, CarriedValue, Const, DescrRef, Trace, WordFacts};
use verify::validate::{validate, Config, Verdict};

fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Descriptor `<text>` in `t`'s table (added when the trace does not use it).
fn descr(t: &mut Trace, text: &str) -> DescrRef {
    let d = parse_angle_descr(text).unwrap_or_else(|e| panic!("{e}: <{text}>"));
    t.make_descr(d)
}

/// What a carried parameter reads: `(param, base, descriptor text, index)`.
type Load<'a> = (usize, CarriedBase, &'a str, Option<i64>);

/// The carried load of `load` in `p`'s descriptor table.
fn carried(p: &mut Trace, &(param, base, text, index): &Load) -> CarriedLoad {
    CarriedLoad {
        value: CarriedValue::Param(param),
        base,
        descr: descr(p, text),
        index,
        facts: WordFacts::default(),
    }
}

/// The verdict on `optimized` (whose body label carries `loads`) against `original`.
fn verdict(original: &str, optimized: &str, loads: &[Load]) -> Verdict {
    let o = parse(original);
    let mut p = parse(optimized);
    let carried = loads.iter().map(|l| carried(&mut p, l)).collect();
    let cfg = Config {
        carried,
        ..Config::default()
    };
    validate(&o, &p, &cfg)
}

#[track_caller]
fn assert_valid(original: &str, optimized: &str, loads: &[Load]) {
    let v = verdict(original, optimized, loads);
    assert!(v.is_valid(), "expected valid, got {v}\noptimized:\n{optimized}");
}

/// Invalid, with a message naming `what`.
#[track_caller]
fn assert_invalid(original: &str, optimized: &str, loads: &[Load], what: &str) {
    let v = verdict(original, optimized, loads);
    match &v {
        Verdict::Invalid { counterexample } => assert!(
            counterexample.message.contains(what),
            "expected a message naming `{what}`, got {v}"
        ),
        _ => panic!("expected invalid, got {v}\noptimized:\n{optimized}"),
    }
}

/// Sums the lengths of `p0.items` (a loop-invariant object's field, read in every iteration).
const SUM: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
jump(p0, i4, descr=TargetToken(1))
";

/// `SUM` peeled, `p0.items` carried through the body label as parameter 2.
const SUM_CARRIED: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
label(p0, i4, p2, descr=TargetToken(4611686018427387905)) -> [p5, i6, p7]
i8 = getfield_gc_i(p7, descr=<FieldS T.len 24>)
i9 = int_add(i6, i8)
jump(p5, i9, p7, descr=TargetToken(4611686018427387905))
";

const ITEMS: Load = (2, CarriedBase::Param(0), "FieldP T.items 8", None);

#[test]
fn a_carried_field_of_an_invariant_object_is_valid() {
    assert_valid(SUM, SUM_CARRIED, &[ITEMS]);
}

#[test]
fn a_preamble_passing_another_value_for_a_carried_field_is_invalid() {
    let wrong = SUM_CARRIED.replace("label(p0, i4, p2,", "label(p0, i4, p0,");
    assert_invalid(
        SUM,
        &wrong,
        &[ITEMS],
        "label 1: carried parameter 2 (field <FieldP T.items 8>)",
    );
}

#[test]
fn a_carried_load_naming_another_field_is_invalid() {
    let next = (2, CarriedBase::Param(0), "FieldP T.next 16", None);
    assert_invalid(
        SUM,
        SUM_CARRIED,
        &[next],
        "carried parameter 2 (field <FieldP T.next 16>)",
    );
}

#[test]
fn a_carried_load_reading_another_parameter_is_invalid() {
    let of_i1 = (2, CarriedBase::Param(1), "FieldP T.items 8", None);
    assert_invalid(SUM, SUM_CARRIED, &[of_i1], "carried parameter 2");
}

#[test]
fn an_extra_parameter_without_a_carried_load_is_not_valid() {
    let v = verdict(SUM, SUM_CARRIED, &[]);
    assert!(v.is_unknown(), "expected unknown, got {v}");
    assert!(v.to_string().contains("parameter 2"), "{v}");
}

#[test]
fn a_carried_load_naming_a_parameter_the_label_lacks_does_not_count() {
    let v = verdict(
        SUM,
        SUM_CARRIED,
        &[(3, CarriedBase::Param(0), "FieldP T.items 8", None)],
    );
    assert!(v.is_unknown(), "expected unknown, got {v}");
}

/// `SUM` with the object's `items` a constant: the body label carries that constant
/// without a parameter, and the body reads the constant's field.
const SUM_CONSTANT: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
guard_value(p2, ConstPtr(0x7000), descr=<Guard1>) [i1]
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
jump(p0, i4, descr=TargetToken(1))
";

#[test]
fn a_field_carried_as_a_constant_is_valid_only_with_that_constant() {
    let optimized = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
guard_value(p2, ConstPtr(0x7000), descr=<Guard1>) [i1]
i3 = getfield_gc_i(ConstPtr(0x7000), descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
label(p0, i4, descr=TargetToken(4611686018427387905)) -> [p5, i6]
i8 = getfield_gc_i(ConstPtr(0x7000), descr=<FieldS T.len 24>)
i9 = int_add(i6, i8)
jump(p5, i9, descr=TargetToken(4611686018427387905))
";
    let check = |addr: u64| {
        let o = parse(SUM_CONSTANT);
        let mut p = parse(optimized);
        let mut load = carried(&mut p, &(0, CarriedBase::Param(0), "FieldP T.items 8", None));
        load.value = CarriedValue::Const(Const::Ref(addr));
        validate(
            &o,
            &p,
            &Config {
                carried: vec![load],
                ..Config::default()
            },
        )
    };
    let v = check(0x7000);
    assert!(v.is_valid(), "expected valid, got {v}");
    let v = check(0x7008);
    assert!(
        v.is_invalid() && v.to_string().contains("carried constant"),
        "expected invalid, got {v}"
    );
}

/// `SUM` with a class check of the loaded object: the body drops it, assuming the class
/// of the carried parameter, which holds on both ways in.
#[test]
fn facts_assumed_of_a_carried_parameter_are_proven() {
    let original = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
guard_class(p2, 4096, descr=<Guard1>) [i1]
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
jump(p0, i4, descr=TargetToken(1))
";
    let optimized = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
guard_class(p2, 4096, descr=<Guard1>) [i1]
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
label(p0, i4, p2, descr=TargetToken(4611686018427387905)) -> [p5, i6, p7]
i8 = getfield_gc_i(p7, descr=<FieldS T.len 24>)
i9 = int_add(i6, i8)
jump(p5, i9, p7, descr=TargetToken(4611686018427387905))
";
    let check = |class: Option<i64>| {
        let o = parse(original);
        let mut p = parse(optimized);
        let mut load = carried(&mut p, &ITEMS);
        load.facts = WordFacts {
            class,
            ..WordFacts::default()
        };
        validate(
            &o,
            &p,
            &Config {
                carried: vec![load],
                ..Config::default()
            },
        )
    };
    let v = check(Some(4096));
    assert!(v.is_valid(), "expected valid, got {v}");
    // Without the fact the body's missing class check cannot be proven.
    let v = check(None);
    assert!(!v.is_valid(), "expected not valid, got {v}");
    // A fact that does not hold on the way in is invalid.
    let v = check(Some(8192));
    assert!(v.is_invalid(), "expected invalid, got {v}");
}

/// Walks a list: `p0.items` advances to its `next` in every iteration.
const WALK: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
p5 = getfield_gc_r(p2, descr=<FieldP T.next 16>)
setfield_gc(p0, p5, descr=<FieldP T.items 8>)
jump(p0, i4, descr=TargetToken(1))
";

/// `WALK` peeled with `p0.items` carried: the back edge passes what the body stored.
const WALK_CARRIED: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
p5 = getfield_gc_r(p2, descr=<FieldP T.next 16>)
setfield_gc(p0, p5, descr=<FieldP T.items 8>)
label(p0, i4, p5, descr=TargetToken(4611686018427387905)) -> [p6, i7, p8]
i9 = getfield_gc_i(p8, descr=<FieldS T.len 24>)
i10 = int_add(i7, i9)
p11 = getfield_gc_r(p8, descr=<FieldP T.next 16>)
setfield_gc(p6, p11, descr=<FieldP T.items 8>)
jump(p6, i10, p11, descr=TargetToken(4611686018427387905))
";

#[test]
fn a_carried_field_the_body_writes_is_valid_when_the_jump_passes_the_new_value() {
    assert_valid(WALK, WALK_CARRIED, &[ITEMS]);
}

#[test]
fn a_jump_passing_the_stale_value_of_a_written_field_is_invalid() {
    let stale = WALK_CARRIED.replace("jump(p6, i10, p11,", "jump(p6, i10, p8,");
    assert_invalid(
        WALK,
        &stale,
        &[ITEMS],
        "jump: carried parameter 2 (field <FieldP T.items 8>)",
    );
}

/// `SUM` peeled with `p0.items` and its `len` carried: the second load reads from the first.
const SUM_CHAINED: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
label(p0, i4, p2, i3, descr=TargetToken(4611686018427387905)) -> [p5, i6, p7, i8]
i9 = int_add(i6, i8)
jump(p5, i9, p7, i8, descr=TargetToken(4611686018427387905))
";

const LEN: Load = (3, CarriedBase::Param(2), "FieldS T.len 24", None);

#[test]
fn a_chained_carried_load_is_valid() {
    assert_valid(SUM, SUM_CHAINED, &[ITEMS, LEN]);
}

#[test]
fn a_chained_carried_load_from_the_wrong_parameter_is_invalid() {
    let of_p0 = (3, CarriedBase::Param(0), "FieldS T.len 24", None);
    assert_invalid(
        SUM,
        SUM_CHAINED,
        &[ITEMS, of_p0],
        "carried parameter 3 (field <FieldS T.len 24>)",
    );
}

#[test]
fn a_chained_carried_load_the_body_invalidates_is_invalid() {
    // The body writes the carried object's length; the jump passes the old one.
    let original = SUM.replace(
        "i4 = int_add(i1, i3)\n",
        "i4 = int_add(i1, i3)\nsetfield_gc(p2, i4, descr=<FieldS T.len 24>)\n",
    );
    let right = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
p2 = getfield_gc_r(p0, descr=<FieldP T.items 8>)
i3 = getfield_gc_i(p2, descr=<FieldS T.len 24>)
i4 = int_add(i1, i3)
setfield_gc(p2, i4, descr=<FieldS T.len 24>)
label(p0, i4, p2, i4, descr=TargetToken(4611686018427387905)) -> [p5, i6, p7, i8]
i9 = int_add(i6, i8)
setfield_gc(p7, i9, descr=<FieldS T.len 24>)
jump(p5, i9, p7, i9, descr=TargetToken(4611686018427387905))
";
    assert_valid(&original, right, &[ITEMS, LEN]);
    let stale = right.replace("jump(p5, i9, p7, i9,", "jump(p5, i9, p7, i8,");
    assert_invalid(&original, &stale, &[ITEMS, LEN], "jump: carried parameter 3");
}

/// Sums item 3 of an invariant array.
const ITEM: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
i2 = getarrayitem_gc_i(p0, 3, descr=<ArrayS 8>)
i3 = int_add(i1, i2)
jump(p0, i3, descr=TargetToken(1))
";

/// `ITEM` peeled with item 3 carried.
const ITEM_CARRIED: &str = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
i2 = getarrayitem_gc_i(p0, 3, descr=<ArrayS 8>)
i3 = int_add(i1, i2)
label(p0, i3, i2, descr=TargetToken(4611686018427387905)) -> [p4, i5, i6]
i7 = int_add(i5, i6)
jump(p4, i7, i6, descr=TargetToken(4611686018427387905))
";

#[test]
fn a_carried_array_item_with_a_constant_index_is_valid() {
    assert_valid(ITEM, ITEM_CARRIED, &[(2, CarriedBase::Param(0), "ArrayS 8", Some(3))]);
}

#[test]
fn a_carried_array_item_at_another_index_is_invalid() {
    assert_invalid(
        ITEM,
        ITEM_CARRIED,
        &[(2, CarriedBase::Param(0), "ArrayS 8", Some(2))],
        "carried parameter 2 (item 2 of <ArrayS 8>)",
    );
}

#[test]
fn a_carried_item_the_body_overwrites_must_be_passed_anew() {
    let original = ITEM.replace(
        "i3 = int_add(i1, i2)\n",
        "i3 = int_add(i1, i2)\nsetarrayitem_gc(p0, 3, i3, descr=<ArrayS 8>)\n",
    );
    let right = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
i2 = getarrayitem_gc_i(p0, 3, descr=<ArrayS 8>)
i3 = int_add(i1, i2)
setarrayitem_gc(p0, 3, i3, descr=<ArrayS 8>)
label(p0, i3, i3, descr=TargetToken(4611686018427387905)) -> [p4, i5, i6]
i7 = int_add(i5, i6)
setarrayitem_gc(p4, 3, i7, descr=<ArrayS 8>)
jump(p4, i7, i7, descr=TargetToken(4611686018427387905))
";
    let loads = [(2, CarriedBase::Param(0), "ArrayS 8", Some(3))];
    assert_valid(&original, right, &loads);
    let stale = right.replace("jump(p4, i7, i7,", "jump(p4, i7, i6,");
    assert_invalid(
        &original,
        &stale,
        &loads,
        "jump: carried parameter 2 (item 3 of <ArrayS 8>)",
    );
}

#[test]
fn a_carried_narrow_field_is_what_a_read_gives() {
    let original = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
i2 = getfield_gc_i(p0, descr=<FieldU T.flag 9 size=1>)
i3 = int_and(i2, 255)
i4 = int_add(i1, i3)
jump(p0, i4, descr=TargetToken(1))
";
    // The body drops the mask: the carried value is a byte, as a read of the field gives it.
    let optimized = "
[p0, i1]
label(p0, i1, descr=TargetToken(1))
i2 = getfield_gc_i(p0, descr=<FieldU T.flag 9 size=1>)
i3 = int_and(i2, 255)
i4 = int_add(i1, i3)
label(p0, i4, i2, descr=TargetToken(4611686018427387905)) -> [p5, i6, i7]
i8 = int_add(i6, i7)
jump(p5, i8, i7, descr=TargetToken(4611686018427387905))
";
    assert_valid(
        original,
        optimized,
        &[(2, CarriedBase::Param(0), "FieldU T.flag 9 size=1", None)],
    );
    // A wider field gives no such bound.
    let (o, p) = (
        original.replace("size=1", "size=2"),
        optimized.replace("size=1", "size=2"),
    );
    assert_invalid(
        &o,
        &p,
        &[(2, CarriedBase::Param(0), "FieldU T.flag 9 size=2", None)],
        "output 1",
    );
}

#[test]
fn a_carried_field_of_a_constant_is_valid() {
    let original = "
[i0]
label(i0, descr=TargetToken(1))
i1 = getfield_gc_i(ConstPtr(0x5000), descr=<FieldS G.count 8>)
i2 = int_add(i0, i1)
jump(i2, descr=TargetToken(1))
";
    let optimized = "
[i0]
label(i0, descr=TargetToken(1))
i1 = getfield_gc_i(ConstPtr(0x5000), descr=<FieldS G.count 8>)
i2 = int_add(i0, i1)
label(i2, i1, descr=TargetToken(4611686018427387905)) -> [i3, i4]
i5 = int_add(i3, i4)
jump(i5, i4, descr=TargetToken(4611686018427387905))
";
    let of = |addr| [(1, CarriedBase::Const(Const::Ref(addr)), "FieldS G.count 8", None)];
    assert_valid(original, optimized, &of(0x5000));
    assert_invalid(original, optimized, &of(0x6000), "carried parameter 1");
}
