//! Translation validation of what the optimizer makes of oopspec calls (`OS_MATH_SQRT` to
//! `float_sqrt`, `OS_INT_PY_DIV`/`OS_INT_PY_MOD` to `int_pydiv`/`int_pymod`) and of division
//! and modulo by constants (shifts, masks, `uint_mul_high`): the optimizer's own output is
//! `Valid`, a wrong replacement is not.

use optimizer::{optimize, Options};
use trace_ir::text::parse_trace;
use trace_ir::{print_trace, Opcode, Trace};
use verify::validate::{validate, Config, Verdict};

fn parse(src: &str) -> Trace {
    parse_trace(src).unwrap_or_else(|e| panic!("{e}"))
}

fn optimized(t: &Trace) -> Trace {
    optimize(t, &Options::default()).unwrap_or_else(|e| panic!("{e}")).trace
}

fn has(t: &Trace, opc: Opcode) -> bool {
    t.ops.iter().any(|o| o.opcode == opc)
}

const SQRT: &str = "
[f0, f1]
f2 = call_f(ConstClass(sqrt), f0, descr=<Callf 8 f EF=2 OS=100>)
f3 = call_f(ConstClass(sqrt), f1, descr=<Callf 8 f EF=2 OS=100>)
f4 = float_add(f2, f3)
f5 = call_f(ConstClass(sqrt), 4.0, descr=<Callf 8 f EF=2 OS=100>)
finish(f4, f5)
";

#[test]
fn sqrt_calls_become_float_sqrt_and_validate() {
    let t = parse(SQRT);
    let o = optimized(&t);
    assert!(has(&o, Opcode::FloatSqrt), "{}", print_trace(&o));
    assert!(!o.ops.iter().any(|op| op.opcode.is_call()), "{}", print_trace(&o));
    let v = validate(&t, &o, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&o));
}

#[test]
fn a_sqrt_call_replaced_by_another_float_op_is_not_valid() {
    let t = parse(SQRT);
    let wrong = parse(
        "
[f0, f1]
f2 = float_abs(f0)
f3 = float_sqrt(f1)
f4 = float_add(f2, f3)
finish(f4, 2.0)
",
    );
    let v = validate(&t, &wrong, &Config::default());
    assert!(!matches!(v, Verdict::Valid), "{v}");
}

#[test]
fn a_raising_sqrt_call_stays_a_call() {
    let t = parse(
        "
[f0]
f1 = call_f(ConstClass(sqrt), f0, descr=<Callf 8 f EF=5 OS=100>)
guard_no_exception(descr=<Guard0>) []
finish(f1)
",
    );
    let o = optimized(&t);
    assert!(
        has(&o, Opcode::CallF) && !has(&o, Opcode::FloatSqrt),
        "{}",
        print_trace(&o)
    );
}

#[test]
fn python_division_calls_by_constants_become_shifts_and_multiplies_and_validate() {
    let t = parse(
        "
[i0, i1]
i2 = call_i(ConstClass(ll_int_py_div), i0, 10, descr=<Calli 8 ii EF=0 OS=12>)
i3 = call_i(ConstClass(ll_int_py_mod), i1, 7, descr=<Calli 8 ii EF=0 OS=14>)
i4 = call_i(ConstClass(ll_int_py_div), i1, 8, descr=<Calli 8 ii EF=0 OS=12>)
i5 = int_add(i2, i3)
i6 = int_add(i5, i4)
finish(i6)
",
    );
    let o = optimized(&t);
    assert!(has(&o, Opcode::UintMulHigh), "{}", print_trace(&o));
    for opc in [Opcode::CallI, Opcode::IntPyDiv, Opcode::IntPyMod] {
        assert!(!has(&o, opc), "{opc} left in\n{}", print_trace(&o));
    }
    let v = validate(&t, &o, &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&o));
}

#[test]
fn c_division_by_constants_validates() {
    for (op, c) in [
        ("int_floordiv", 3),
        ("int_floordiv", -8),
        ("int_mod", 16),
        ("int_mod", -10),
        ("int_pydiv", 1000),
        ("int_pymod", 12),
        ("int_floordiv", i64::MIN),
    ] {
        let t = parse(&format!("[i0]\ni1 = {op}(i0, {c})\nfinish(i1)\n"));
        let o = optimized(&t);
        for d in [Opcode::IntFloorDiv, Opcode::IntMod, Opcode::IntPyDiv, Opcode::IntPyMod] {
            assert!(!has(&o, d), "{op} by {c}: {d} left in\n{}", print_trace(&o));
        }
        let v = validate(&t, &o, &Config::default());
        assert!(matches!(v, Verdict::Valid), "{op} by {c}: {v}\n{}", print_trace(&o));
    }
}

#[test]
fn division_of_a_non_negative_dividend_validates() {
    // The optimizer leaves out the sign corrections; the validator's sequence keeps them.
    for op in ["int_floordiv", "int_mod", "int_pydiv", "int_pymod"] {
        let t = parse(&format!(
            "[i0]\ni1 = int_and(i0, 1048575)\ni2 = {op}(i1, 10)\nfinish(i2)\n"
        ));
        let o = optimized(&t);
        assert!(!has(&o, Opcode::IntRshift), "{op}: {}", print_trace(&o));
        let v = validate(&t, &o, &Config::default());
        assert!(matches!(v, Verdict::Valid), "{op}: {v}\n{}", print_trace(&o));
    }
}

#[test]
fn a_wrong_magic_number_is_invalid() {
    // x // 7 with the multiplier of x // 9 (0x1c71c71c71c71c72 = ceil(2^64 / 9)).
    let t = parse("[i0]\ni1 = int_pydiv(i0, 7)\nfinish(i1)\n");
    let wrong = parse(
        "
[i0]
i1 = int_rshift(i0, 63)
i2 = int_xor(i0, i1)
i3 = uint_mul_high(i2, 2049638230412172402)
i4 = int_xor(i3, i1)
finish(i4)
",
    );
    // Invalid when Z3 finds the counterexample in time, `unknown` otherwise: never valid.
    let v = validate(&t, &wrong, &Config::default());
    assert!(!matches!(v, Verdict::Valid), "{v}");
}
