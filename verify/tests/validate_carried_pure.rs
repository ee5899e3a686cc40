//! Translation validation of peeled loops whose body label carries results of pure ops on
//! loop-invariant parameters (`Config::carried_pure`): each is proven, wherever the label is
//! reached (the preamble, the back edge, a bridge entering the body), to be its op on the
//! label's input operands, defined there and with the facts the body assumes; past the
//! label the parameter is that op of the input parameters.

use trace_ir::{parse_trace, BodyEntry, CarriedBase, CarriedPure, Const, Opcode, Trace, WordFacts};
use verify::validate::{validate, Config, Verdict};

fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A counter whose step is three times a parameter the loop passes on unchanged.
const STEP: &str = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_mul(i1, 3)
i3 = int_add(i0, i2)
jump(i3, i1, descr=TargetToken(1))
";

/// `STEP` peeled: the body label carries `i1 * 3` as its parameter 2.
const STEP_CARRIED: &str = "
[i0, i1]
label(i0, i1, descr=TargetToken(1))
i2 = int_mul(i1, 3)
i3 = int_add(i0, i2)
label(i3, i1, i2, descr=TargetToken(4611686018427387905)) -> [i4, i5, i6]
i7 = int_add(i4, i6)
jump(i7, i5, i6, descr=TargetToken(4611686018427387905))
";

/// `opcode(args)` in parameter `param`, with `facts`.
fn pure(param: usize, opcode: Opcode, args: &[CarriedBase], facts: WordFacts) -> CarriedPure {
    CarriedPure {
        param,
        opcode,
        args: args.to_vec(),
        facts,
    }
}

fn times(k: i64) -> CarriedPure {
    pure(
        2,
        Opcode::IntMul,
        &[CarriedBase::Param(1), CarriedBase::Const(Const::Int(k))],
        WordFacts::default(),
    )
}

fn verdict(original: &str, optimized: &str, carried: &[CarriedPure]) -> Verdict {
    let cfg = Config {
        carried_pure: carried.to_vec(),
        ..Config::default()
    };
    validate(&parse(original), &parse(optimized), &cfg)
}

#[track_caller]
fn assert_invalid_naming(v: &Verdict, what: &str) {
    match v {
        Verdict::Invalid { counterexample } => assert!(
            counterexample.message.contains(what),
            "expected a message naming `{what}`, got {v}"
        ),
        _ => panic!("expected invalid, got {v}"),
    }
}

#[test]
fn a_carried_invariant_product_is_valid() {
    let v = verdict(STEP, STEP_CARRIED, &[times(3)]);
    assert!(v.is_valid(), "{v}");
}

#[test]
fn a_carried_result_stated_as_another_op_is_invalid() {
    let v = verdict(STEP, STEP_CARRIED, &[times(4)]);
    assert_invalid_naming(&v, "label 1: carried parameter 2 is not its int_mul");
}

#[test]
fn a_back_edge_passing_another_value_is_invalid() {
    // The jump passes the counter where the product goes: the next iteration's product
    // would not be `i1 * 3`.
    let wrong = STEP_CARRIED.replace("jump(i7, i5, i6,", "jump(i7, i5, i7,");
    let v = verdict(STEP, &wrong, &[times(3)]);
    assert_invalid_naming(&v, "jump: carried parameter 2 is not its int_mul");
}

#[test]
fn a_carried_result_without_the_facts_the_body_assumes_is_invalid() {
    // `i1 & 255` is in [0, 255]; claiming [0, 127] is wrong.
    let and = |hi: i64| {
        pure(
            2,
            Opcode::IntAnd,
            &[CarriedBase::Param(1), CarriedBase::Const(Const::Int(255))],
            WordFacts {
                range: Some((0, hi)),
                ..WordFacts::default()
            },
        )
    };
    let original = STEP.replace("int_mul(i1, 3)", "int_and(i1, 255)");
    let optimized = STEP_CARRIED.replace("int_mul(i1, 3)", "int_and(i1, 255)");
    let v = verdict(&original, &optimized, &[and(255)]);
    assert!(v.is_valid(), "{v}");
    let v = verdict(&original, &optimized, &[and(127)]);
    assert_invalid_naming(&v, "may not satisfy what the loop assumes");
}

#[test]
fn a_carried_division_by_a_variable_is_rejected() {
    // Defined where the preamble computes it does not make it defined at every way in.
    let bad = pure(
        2,
        Opcode::IntFloorDiv,
        &[CarriedBase::Param(1), CarriedBase::Param(0)],
        WordFacts::default(),
    );
    let original = STEP.replace("int_mul(i1, 3)", "int_floordiv(i1, i0)");
    let optimized = STEP_CARRIED.replace("int_mul(i1, 3)", "int_floordiv(i1, i0)");
    let v = verdict(&original, &optimized, &[bad]);
    assert!(!v.is_valid(), "{v}");
}

#[test]
fn an_extra_parameter_carrying_nothing_is_not_valid() {
    let v = verdict(STEP, STEP_CARRIED, &[]);
    assert!(v.is_unknown(), "expected unknown, got {v}");
}

/// A bridge entering `STEP`'s body computes the product on its own operands.
#[test]
fn a_jump_into_the_body_computes_the_carried_result() {
    let body = trace_ir::peeled_body_token(1);
    let cfg = Config {
        body_entries: vec![BodyEntry {
            header: 1,
            body,
            params: vec![WordFacts::default(); 2],
            carried_pure: vec![times(3)],
            ..BodyEntry::default()
        }],
        ..Config::default()
    };
    let bridge = "[i0, i1]\ni2 = int_add(i1, 1)\njump(0, i2, descr=TargetToken(1))";
    let check = |optimized: &str| validate(&parse(bridge), &parse(optimized), &cfg);
    let entering =
        format!("[i0, i1]\ni2 = int_add(i1, 1)\ni3 = int_mul(i2, 3)\njump(0, i2, i3, descr=TargetToken({body}))");
    let v = check(&entering);
    assert!(v.is_valid(), "{v}\n{entering}");
    // The product of the old operand is not the body's.
    let stale =
        format!("[i0, i1]\ni2 = int_add(i1, 1)\ni3 = int_mul(i1, 3)\njump(0, i2, i3, descr=TargetToken({body}))");
    let v = check(&stale);
    assert_invalid_naming(&v, "carried parameter 2 is not its int_mul");
    // Nor may it be left out.
    let short = format!("[i0, i1]\ni2 = int_add(i1, 1)\njump(0, i2, descr=TargetToken({body}))");
    let v = check(&short);
    assert!(v.is_invalid(), "{v}\n{short}");
}

/// The optimizer's own output for `STEP` with peeling carries the product, and is valid.
#[test]
fn the_optimizers_peeled_loop_with_a_carried_product_is_valid() {
    let opts = optimizer::Options {
        peel: true,
        ..optimizer::Options::default()
    };
    let input = parse(STEP);
    let out = optimizer::optimize(&input, &opts).unwrap();
    assert_eq!(out.carried_pure.len(), 1, "{}", trace_ir::print_trace(&out.trace));
    let v = validate(&input, &out.trace, &Config::for_optimized(&out));
    assert!(v.is_valid(), "{v}\n{}", trace_ir::print_trace(&out.trace));
}
