//! Rule synthesis (Z3 searches for rewrites of small op patterns): the rules Z3 finds
//! include known ones, and the optimizer does every one of them (no `MISSING`).
//!
//! The division ops are left out here: their exists-forall queries take tens of seconds
//! each at 64 bits; `tracejit synth-rules` searches them too.

use trace_ir::Opcode;
use verify::synth::{synthesize, Found, Lhs, Rhs, BINARY_OPS};

fn has(found: &[Found], lhs: Lhs, rhs: Rhs) -> bool {
    found.iter().any(|f| f.lhs == lhs && f.rhs == rhs)
}

#[test]
fn synthesized_rules_are_all_covered() {
    let ops: Vec<Opcode> = BINARY_OPS
        .iter()
        .copied()
        .filter(|op| {
            !matches!(
                op,
                Opcode::IntPyDiv | Opcode::IntPyMod | Opcode::IntFloorDiv | Opcode::IntMod
            )
        })
        .collect();
    let found = synthesize(&ops);
    // A few rules the search is known to find, as a check that it works.
    assert!(has(&found, Lhs::ConstRight(Opcode::IntAdd, 0), Rhs::X));
    assert!(has(&found, Lhs::Same(Opcode::IntAnd), Rhs::X));
    assert!(has(&found, Lhs::Same(Opcode::IntSub), Rhs::Const(0)));
    assert!(has(
        &found,
        Lhs::ConstLeft(Opcode::IntSub, 0),
        Rhs::Unary(Opcode::IntNeg)
    ));
    assert!(has(
        &found,
        Lhs::ConstRight(Opcode::UintLt, 1),
        Rhs::Unary(Opcode::IntIsZero)
    ));
    assert!(has(&found, Lhs::ConstRight(Opcode::IntLt, i64::MIN), Rhs::Const(0)));
    // valid_if is an implication: every valid amount gives 0.
    assert!(has(&found, Lhs::Same(Opcode::UintRshift), Rhs::Const(0)));
    // ...but a shift by a constant that is never valid is not a rule.
    assert!(!found
        .iter()
        .any(|f| matches!(f.lhs, Lhs::ConstRight(Opcode::IntLshift, c) if !(0..64).contains(&c))));
    let missing: Vec<String> = found.iter().filter(|f| !f.covered).map(|f| f.to_string()).collect();
    assert!(
        missing.is_empty(),
        "{} of {} synthesized rules MISSING in the optimizer:\n{}",
        missing.len(),
        found.len(),
        missing.join("\n")
    );
}
