//! Oopspec calls and division by constants in the optimizer: a call whose descriptor says
//! `OS_MATH_SQRT` becomes `float_sqrt` (and `OS_INT_PY_DIV`/`OS_INT_PY_MOD` the Python
//! division ops), a division or modulo by a constant becomes the shifts and multiply-high of
//! `optimizer::divconst` (the expected sequences are written out here by hand: the magic
//! pair of 10 is `ceil(2^66 / 10)` and 2), and each rewrite runs like its original in the
//! reference interpreter on special dividends.

mod common;
use common::{check, check_with, parse, same_behaviour};
use optimizer::{optimize, Options};
use trace_interp::RtValue;

#[test]
fn a_sqrt_call_becomes_float_sqrt() {
    check(
        "[f0]\nf1 = call_f(ConstClass(sqrt), f0, descr=<Callf 8 f EF=2 OS=100>)\nfinish(f1)\n",
        "[f0]\nf1 = float_sqrt(f0)\nfinish(f1)\n",
    );
    // Constant operands fold (through `trace_ir::eval`).
    check(
        "[]\nf1 = call_pure_f(ConstClass(sqrt), 9.0, descr=<Callf 8 f EF=0 OS=100>)\nfinish(f1)\n",
        "[]\nfinish(3.0)\n",
    );
}

#[test]
fn the_oopspec_part_can_be_switched_off() {
    let src = "[f0]\nf1 = call_f(ConstClass(sqrt), f0, descr=<Callf 8 f EF=2 OS=100>)\nfinish(f1)\n";
    let opts = Options {
        oopspec: false,
        ..Options::default()
    };
    check_with(src, src, &opts);
}

#[test]
fn python_division_by_ten_is_a_multiply_high() {
    check(
        "[i0]\ni1 = call_i(ConstClass(ll_int_py_div), i0, 10, descr=<Calli 8 ii EF=0 OS=12>)\nfinish(i1)\n",
        "[i0]
i1 = int_rshift(i0, 63)
i2 = int_xor(i0, i1)
i3 = uint_mul_high(i2, 7378697629483820647)
i4 = uint_rshift(i3, 2)
i5 = int_xor(i4, i1)
finish(i5)
",
    );
}

#[test]
fn a_non_negative_dividend_needs_no_sign_correction() {
    check(
        "[i0]\ni1 = int_and(i0, 4095)\ni2 = int_floordiv(i1, 10)\nfinish(i2)\n",
        "[i0]
i1 = int_and(i0, 4095)
i2 = uint_mul_high(i1, 7378697629483820647)
i3 = uint_rshift(i2, 2)
finish(i3)
",
    );
}

#[test]
fn c_division_by_eight_rounds_toward_zero() {
    check(
        "[i0]\ni1 = int_floordiv(i0, 8)\nfinish(i1)\n",
        "[i0]
i1 = int_rshift(i0, 63)
i2 = uint_rshift(i1, 61)
i3 = int_add(i0, i2)
i4 = int_rshift(i3, 3)
finish(i4)
",
    );
}

#[test]
fn the_divconst_part_can_be_switched_off() {
    let src = "[i0]\ni1 = int_pydiv(i0, 10)\nfinish(i1)\n";
    let opts = Options {
        divconst: false,
        ..Options::default()
    };
    check_with(src, src, &opts);
}

#[test]
fn rewritten_divisions_run_like_their_originals() {
    let dividends = [
        0i64,
        1,
        -1,
        9,
        -9,
        10,
        -10,
        11,
        -11,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
        1 << 62,
        -(1 << 62),
    ];
    for op in ["int_floordiv", "int_mod", "int_pydiv", "int_pymod"] {
        for c in [2i64, 3, 7, 10, 16, -8, -10, 1000, i64::MAX, i64::MIN, (1 << 40) + 1] {
            let t = parse(&format!("[i0]\ni1 = {op}(i0, {c})\nfinish(i1)\n"));
            let o = optimize(&t, &Options::default()).unwrap().trace;
            for &x in &dividends {
                let r = same_behaviour(&t, &o, &[RtValue::Int(x)]);
                assert_eq!(r, Ok(true), "{op}({x}, {c})\n{}", trace_ir::print_trace(&o));
            }
        }
    }
}
