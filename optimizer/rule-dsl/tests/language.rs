//! Tests of the rule language: parsing, type checking, error positions, commutative
//! expansion, priorities, and the shared runtime helpers.

use rule_dsl::codegen::{commuted_variants, generate, rules_by_opcode};
use rule_dsl::{load, load_str, rt, ResultKind, TExpr, TStep, TTarget};
use trace_ir::Opcode;

fn err(src: &str) -> (u32, u32, String) {
    let e = load_str(src, "t.rules").expect_err("expected an error");
    assert_eq!(e.file, "t.rules");
    (e.pos.line, e.pos.col, e.msg)
}

#[test]
fn parses_the_seed_examples() {
    let src = "\
# x + 0 == x
add_zero: int_add(x, 0)
    => x

sub_x_x: int_sub(x, x)
    => 0

is_true_and_minint: int_is_true(int_and(x, MININT))
    => int_lt(x, 0)

sub_add_consts: int_sub(int_add(x, C1), C2)
    C = C2 - C1
    => int_sub(x, C)

mul_pow2_const: int_mul(x, C)
    check C > 0 and C & (C - 1) == 0
    shift = highest_bit(C)
    => int_lshift(x, shift)

and_x_c_in_range: int_and(x, C)
    check x.lower >= 0 and x.upper <= C & ~(C + 1)
    => x

mul_lshift: int_mul(x, int_lshift(1, y))
    check y.known_ge_const(0) and y.known_le_const(LONG_BIT)
    => int_lshift(x, y)
";
    let rules = load_str(src, "t.rules").unwrap();
    assert_eq!(rules.len(), 7);
    assert_eq!(rules[0].name(), "add_zero");
    assert_eq!(rules[0].rule.doc, "x + 0 == x");
    assert_eq!(rules[0].rule.pos.line, 2);
    assert_eq!(rules[0].result, ResultKind::Value);
    assert_eq!(rules[1].result, ResultKind::Constant);
    assert_eq!(rules[1].rule.doc, "", "a blank line separates comments from rules");
    assert_eq!(rules[2].result, ResultKind::NewOp);
    assert_eq!(
        rules[2].rule.pattern.to_string(),
        "int_is_true(int_and(x, -9223372036854775808))"
    );
    assert_eq!(
        rules[3]
            .vars
            .iter()
            .map(|v| (v.name.as_str(), v.is_const))
            .collect::<Vec<_>>(),
        vec![("x", false), ("C1", true), ("C2", true)]
    );
    assert!(matches!(&rules[3].steps[0], TStep::Assign(n, TExpr::Bin(..), _) if n == "C"));
    assert!(
        matches!(&rules[4].target, TTarget::Op(Opcode::IntLshift, a) if a[1] == TTarget::Const(TExpr::IntVar("shift".into())))
    );
    assert_eq!(rules[6].root, Opcode::IntMul);
}

#[test]
fn errors_carry_line_and_column() {
    assert_eq!(err("r: int_frobnicate(x, 0)\n    => x\n").0, 1);
    let (l, c, m) = err("r: int_frobnicate(x, 0)\n    => x\n");
    assert_eq!((l, c), (1, 4));
    assert!(m.contains("unknown operation `int_frobnicate`"), "{m}");
    let (l, c, m) = err("# c\nr: int_add(x)\n    => x\n");
    assert_eq!((l, c), (2, 4));
    assert!(m.contains("takes 2 arguments, found 1"), "{m}");
    let (l, c, m) = err("r: int_add(x, 0)\n    => y\n");
    assert_eq!((l, c), (2, 8));
    assert!(m.contains("unknown name `y`"), "{m}");
    let (l, c, m) = err("r: int_add(x, C)\n    check C + 1\n    => x\n");
    assert_eq!(l, 2);
    assert!(c >= 11, "{c}");
    assert!(m.contains("expected bool, found int"), "{m}");
    let (l, _, m) = err("r: int_add(x, C)\n    check x > 0\n    => x\n");
    assert_eq!(l, 2);
    assert!(m.contains("found bound"), "{m}");
    let (l, c, m) = err("r: int_add(x, 0)\n    check x.known_frob()\n    => x\n");
    assert_eq!((l, c), (2, 13));
    assert!(m.contains("unknown query"), "{m}");
    let (_, _, m) = err("r: int_add(x, 0)\n    check x.lower()\n    => x\n");
    assert!(m.contains("attribute"), "{m}");
    let (l, c, m) = err("r: int_add(x, 0)\n    => x $\n");
    assert_eq!((l, c), (2, 10));
    assert!(m.contains("unexpected character"), "{m}");
    let (l, _, m) = err("r: int_add(x, 0)\n    SORRY_Z3\n    => x\n");
    assert_eq!(l, 2);
    assert!(m.contains("proven"), "{m}");
    let (_, _, m) = err("r: int_add(x, 0)\n");
    assert!(m.contains("no target"), "{m}");
    let (_, _, m) = err("r: x\n    => x\n");
    assert!(m.contains("must be an operation"), "{m}");
    let (_, _, m) = err("r: float_add(x, y)\n    => x\n");
    assert!(m.contains("not a pure integer operation"), "{m}");
    let (_, _, m) = err("r: int_add(x, 0)\n    => int_add(int_add(x, x), x)\n");
    assert!(m.contains("never make the trace bigger"), "{m}");
    let (_, _, m) = err("r: int_add(x, C)\n    C = 1\n    => x\n");
    assert!(m.contains("already defined"), "{m}");
    let (_, _, m) = err("r: int_add(x, 0)\n    check 1 < 2 < 3\n    => x\n");
    assert!(m.contains("chained"), "{m}");
}

#[test]
fn duplicate_names_are_rejected_across_files() {
    let files = vec![
        ("a.rules".to_string(), "r: int_add(x, 0)\n    => x\n".to_string()),
        ("b.rules".to_string(), "\n\nr: int_sub(x, 0)\n    => x\n".to_string()),
    ];
    let e = load(&files).unwrap_err();
    assert_eq!((e.file.as_str(), e.pos.line, e.pos.col), ("b.rules", 3, 1));
    assert!(
        e.msg.contains("duplicate rule name `r`") && e.msg.contains("a.rules:1:1"),
        "{}",
        e.msg
    );
}

#[test]
fn commutative_ops_are_expanded_once_per_distinct_order() {
    let rules = load_str(
        "a: int_sub(int_add(x, y), y)\n    => x\nb: int_and(x, x)\n    => x\nc: int_xor(int_xor(x, y), x)\n    => y\nd: int_sub(x, y)\n    check x.known_lt(y)\n    => 0\n",
        "t.rules",
    )
    .unwrap();
    let v: Vec<String> = commuted_variants(&rules[0].rule.pattern)
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(v, vec!["int_sub(int_add(x, y), y)", "int_sub(int_add(y, x), y)"]);
    assert_eq!(commuted_variants(&rules[1].rule.pattern).len(), 1);
    assert_eq!(commuted_variants(&rules[2].rule.pattern).len(), 4);
    assert_eq!(
        commuted_variants(&rules[3].rule.pattern).len(),
        1,
        "int_sub is not commutative"
    );
}

#[test]
fn value_and_constant_rules_come_before_new_op_rules() {
    let rules = load_str(
        "a: int_sub(int_add(x, C1), C2)\n    => int_sub(x, C2 - C1)\nb: int_sub(x, x)\n    => 0\nc: int_sub(int_add(x, y), y)\n    => x\n",
        "t.rules",
    )
    .unwrap();
    let by = rules_by_opcode(&rules);
    let order: Vec<&str> = by[&Opcode::IntSub].iter().map(|r| r.name()).collect();
    assert_eq!(order, vec!["b", "c", "a"]);
    let code = generate(&rules);
    let (pb, pc, pa) = (
        code.find("// b (").unwrap(),
        code.find("// c (").unwrap(),
        code.find("// a (").unwrap(),
    );
    assert!(pb < pc && pc < pa);
    assert!(code.contains("pub fn apply(") && code.contains("pub static RULES"));
}

#[test]
fn literals_and_named_constants() {
    let rules = load_str(
        "a: int_and(x, 0xffffffff00000000)\n    check x.known_ge_const(LONG_BIT - 1) or not x.is_bool()\n    => int_and(x, -9223372036854775808 | 1)\n",
        "t.rules",
    )
    .unwrap();
    assert_eq!(
        rules[0].rule.pattern.to_string(),
        format!("int_and(x, {})", 0xffffffff00000000u64 as i64)
    );
    // `>>u`, `<u` and friends are operators only when not followed by a name character.
    let rules = load_str(
        "a: int_and(x, C)\n    check C >>u 1 <u C and C <=u 3\n    upper = 1\n    => x\n",
        "t.rules",
    )
    .unwrap();
    assert_eq!(rules[0].steps.len(), 2);
}

#[test]
fn runtime_helpers_are_total() {
    assert_eq!(rt::shl(1, 63), i64::MIN);
    assert_eq!(rt::shl(1, 64), 0);
    assert_eq!(rt::shl(1, -1), 0);
    assert_eq!(rt::ashr(-8, 1), -4);
    assert_eq!(rt::ashr(-8, 100), -1);
    assert_eq!(rt::ashr(8, 100), 0);
    assert_eq!(rt::lshr(-1, 60), 15);
    assert_eq!(rt::lshr(-1, 64), 0);
    assert_eq!(rt::highest_bit(0), -1);
    assert_eq!(rt::highest_bit(1), 0);
    assert_eq!(rt::highest_bit(i64::MIN), 63);
    assert_eq!(rt::highest_bit(40), 5);
    assert_eq!(rt::lowest_bit(40), 3);
    assert_eq!(rt::lowest_bit(0), -1);
}

#[test]
fn the_project_rule_files_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rules") {
            files.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
        }
    }
    let rules = load(&files).unwrap_or_else(|e| panic!("{e}"));
    assert!(rules.len() >= 80, "only {} rules", rules.len());
    for r in &rules {
        assert!(
            !r.rule.doc.is_empty(),
            "rule `{}` has no `# identity` comment",
            r.name()
        );
    }
}
