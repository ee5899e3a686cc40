//! Every op compared with `trace_ir::eval::eval_pure` on special and random values, casts at
//! their edges, overflow guards at the overflow boundaries.

use super::*;

const BINARY: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
    Opcode::IntLshift,
    Opcode::IntRshift,
    Opcode::UintRshift,
    Opcode::UintMulHigh,
    Opcode::IntLt,
    Opcode::IntLe,
    Opcode::IntEq,
    Opcode::IntNe,
    Opcode::IntGt,
    Opcode::IntGe,
    Opcode::UintLt,
    Opcode::UintLe,
    Opcode::UintGt,
    Opcode::UintGe,
    Opcode::IntSignext,
];
const UNARY: &[Opcode] = &[
    Opcode::IntIsTrue,
    Opcode::IntIsZero,
    Opcode::IntNeg,
    Opcode::IntInvert,
    Opcode::IntForceGeZero,
    Opcode::SameAsI,
];

/// `finish(op(x, y))` with each operand an input or a constant: native = eval_pure.
fn check_binary(opc: Opcode, x: i64, y: i64) {
    let want = eval_pure(opc, &[x as u64, y as u64]);
    for (cx, cy) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut b = TraceBuilder::new();
        let ix = b.input(Kind::Int);
        let iy = b.input(Kind::Int);
        let vx = if cx { b.const_int(x) } else { ix };
        let vy = if cy { b.const_int(y) } else { iy };
        let r = b.op(opc, &[vx, vy]);
        // Keep x alive past the op so the result cannot reuse its register (exercises `lea`).
        b.finish(&[r, ix]);
        let t = b.build().unwrap();
        let got = run_native(&t, &[x as u64, y as u64], &opts());
        match &want {
            Ok(w) => assert_eq!(
                got,
                Exit::Finish {
                    values: vec![ExitValue::from_bits(opc.result_kind(), *w), ExitValue::Int(x)]
                },
                "{opc}({x}, {y}) consts {cx} {cy}"
            ),
            Err(_) => assert!(
                matches!(got, Exit::Invalid { .. }),
                "{opc}({x}, {y}) consts {cx} {cy}: {got:?}"
            ),
        }
    }
}

#[test]
fn binary_ops_on_special_values() {
    let specials: Vec<i64> = SPECIAL_INTS.iter().copied().chain([-63, 65, 4, 5, -8]).collect();
    for &opc in BINARY {
        for &x in &specials {
            for &y in &specials {
                check_binary(opc, x, y);
            }
        }
    }
}

#[test]
fn unary_ops_on_special_values() {
    for &opc in UNARY {
        for &x in SPECIAL_INTS {
            let mut b = TraceBuilder::new();
            let ix = b.input(Kind::Int);
            let r = b.op(opc, &[ix]);
            b.finish(&[r]);
            let t = b.build().unwrap();
            let want = eval_pure(opc, &[x as u64]).unwrap();
            assert_eq!(
                run_native(&t, &[x as u64], &opts()),
                Exit::Finish {
                    values: vec![ExitValue::from_bits(opc.result_kind(), want)]
                },
                "{opc}({x})"
            );
        }
    }
}

/// `int_select(c, a, b)` with its operands inputs or constants, shared (`c` or `a` the same
/// value as `b`), dying at the select or living on, with few registers too: native =
/// eval_pure.
#[test]
fn int_select_on_shared_constant_and_live_operands() {
    let values = [0i64, 1, -1, 7, i64::MIN];
    for &c in &values {
        for &x in &values {
            for &y in &[3i64, -5] {
                for shape in 0..6 {
                    for o in [opts(), tight()] {
                        let mut b = TraceBuilder::new();
                        let ic = b.input(Kind::Int);
                        let ix = b.input(Kind::Int);
                        let iy = b.input(Kind::Int);
                        let (vc, va, vb) = match shape {
                            0 => (ic, ix, iy),
                            1 => (ic, ix, ic),
                            2 => (ic, iy, iy),
                            3 => (b.const_int(c), ix, iy),
                            4 => (ic, b.const_int(x), b.const_int(y)),
                            _ => (ic, ix, iy),
                        };
                        let r = b.op(Opcode::IntSelect, &[vc, va, vb]);
                        // Shape 5 keeps every operand alive past the select.
                        let out: Vec<_> = if shape == 5 { vec![r, ic, ix, iy] } else { vec![r] };
                        b.finish(&out);
                        let t = b.build().unwrap();
                        let inputs = [c as u64, x as u64, y as u64];
                        let args: Vec<u64> = [vc, va, vb]
                            .iter()
                            .map(|&v| match t.const_int(v) {
                                Some(k) => k as u64,
                                None => inputs[v.as_op().unwrap().index()],
                            })
                            .collect();
                        let mut want = vec![eval_pure(Opcode::IntSelect, &args).unwrap() as i64];
                        if shape == 5 {
                            want.extend([c, x, y]);
                        }
                        assert_eq!(
                            run_native(&t, &inputs, &o),
                            Exit::Finish { values: ints(&want) },
                            "shape {shape}: select({c}, {x}, {y})"
                        );
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn binary_ops_random(i in 0..BINARY.len(), x in any::<i64>(), y in prop_oneof![any::<i64>(), -2i64..70]) {
        check_binary(BINARY[i], x, y);
    }

    #[test]
    fn float_ops_random(x in any::<f64>(), y in prop_oneof![any::<f64>(), Just(0.0), Just(f64::NAN), Just(1.0), Just(-0.0)]) {
        for opc in [Opcode::FloatAdd, Opcode::FloatSub, Opcode::FloatMul, Opcode::FloatTrueDiv, Opcode::FloatLt,
                    Opcode::FloatLe, Opcode::FloatEq, Opcode::FloatNe, Opcode::FloatGt, Opcode::FloatGe] {
            let mut b = TraceBuilder::new();
            let fx = b.input(Kind::Float);
            let fy = b.input(Kind::Float);
            let r = b.op(opc, &[fx, fy]);
            b.finish(&[r]);
            let t = b.build().unwrap();
            let want = eval_pure(opc, &[x.to_bits(), y.to_bits()]).unwrap();
            let got = run_native(&t, &[x.to_bits(), y.to_bits()], &opts());
            prop_assert_eq!(got, Exit::Finish { values: vec![ExitValue::from_bits(opc.result_kind(), want)] }, "{}({}, {})", opc, x, y);
        }
        for opc in [Opcode::FloatNeg, Opcode::FloatAbs, Opcode::FloatSqrt, Opcode::CastFloatToInt, Opcode::ConvertFloatBytesToLonglong] {
            let mut b = TraceBuilder::new();
            let fx = b.input(Kind::Float);
            let r = b.op(opc, &[fx]);
            b.finish(&[r]);
            let t = b.build().unwrap();
            let want = eval_pure(opc, &[x.to_bits()]).unwrap();
            prop_assert_eq!(run_native(&t, &[x.to_bits()], &opts()), Exit::Finish { values: vec![ExitValue::from_bits(opc.result_kind(), want)] }, "{}({})", opc, x);
        }
    }

    #[test]
    fn int_to_float_random(x in any::<i64>()) {
        for opc in [Opcode::CastIntToFloat, Opcode::ConvertLonglongBytesToFloat] {
            let mut b = TraceBuilder::new();
            let ix = b.input(Kind::Int);
            let r = b.op(opc, &[ix]);
            b.finish(&[r]);
            let t = b.build().unwrap();
            let want = eval_pure(opc, &[x as u64]).unwrap();
            prop_assert_eq!(run_native(&t, &[x as u64], &opts()), Exit::Finish { values: vec![ExitValue::from_bits(opc.result_kind(), want)] });
        }
    }
}

#[test]
fn cast_float_to_int_edges() {
    for x in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        9.3e18,
        -9.3e18,
        9.223_372_036_854_776e18,
        -9.223_372_036_854_776e18,
        0.5,
        -0.5,
        1e300,
    ] {
        let mut b = TraceBuilder::new();
        let fx = b.input(Kind::Float);
        let r = b.op(Opcode::CastFloatToInt, &[fx]);
        b.finish(&[r]);
        let t = b.build().unwrap();
        let want = eval_pure(Opcode::CastFloatToInt, &[x.to_bits()]).unwrap();
        assert_eq!(
            run_native(&t, &[x.to_bits()], &opts()),
            Exit::Finish {
                values: ints(&[want as i64])
            },
            "{x}"
        );
    }
}

/// `int_mul_ovf` by a power of two (a shift with its overflow test beside it) for every
/// shift, operands at the edges of fitting, in a register or a slot, living on or not, and
/// both overflow guards: native exit = interpreter outcome.
#[test]
fn multiplication_by_powers_of_two_overflows_at_the_edges() {
    for k in 1..=62u32 {
        let c = 1i64 << k;
        let edge = i64::MAX >> k;
        let xs = [
            0,
            1,
            -1,
            edge,
            edge + 1,
            -edge - 1,
            -edge - 2,
            i64::MAX,
            i64::MIN,
            12345,
        ];
        for guard in [Opcode::GuardNoOverflow, Opcode::GuardOverflow] {
            for (in_reg, lives) in [(false, false), (true, false), (true, true)] {
                let mut b = TraceBuilder::new();
                let ix = b.input(Kind::Int);
                let zero = b.input(Kind::Int);
                let xv = if in_reg { b.op(Opcode::IntXor, &[ix, zero]) } else { ix };
                let kc = b.const_int(c);
                let r = b.op(Opcode::IntMulOvf, &[xv, kc]);
                let fail: Vec<trace_ir::Value> = if lives { vec![xv, r] } else { vec![r] };
                b.guard(guard, &[], &fail, 7);
                let one = b.const_int(1);
                let after = if lives { b.op(Opcode::IntAdd, &[xv, one]) } else { r };
                b.finish(&[r, after]);
                let t = b.build().unwrap();
                for &x in &xs {
                    let native = run_native(&t, &[x as u64, 0], &opts());
                    let int = interp::run(&t, &[RtValue::Int(x), RtValue::Int(0)], &RunConfig::default()).outcome;
                    same(&t, &native, &int).unwrap_or_else(|e| panic!("k {k}, x {x}: {e}"));
                }
            }
        }
    }
}

/// `_ovf` + guard at the overflow edges: native exit = interpreter outcome.
#[test]
fn overflow_guards_at_the_edges() {
    for opc in [Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf] {
        for guard in [Opcode::GuardNoOverflow, Opcode::GuardOverflow] {
            for &x in SPECIAL_INTS {
                for &y in SPECIAL_INTS {
                    let mut b = TraceBuilder::new();
                    let ix = b.input(Kind::Int);
                    let iy = b.input(Kind::Int);
                    let r = b.op(opc, &[ix, iy]);
                    b.guard(guard, &[], &[ix, r], 42);
                    b.finish(&[r]);
                    let t = b.build().unwrap();
                    let native = run_native(&t, &[x as u64, y as u64], &opts());
                    let int = interp::run(&t, &[RtValue::Int(x), RtValue::Int(y)], &RunConfig::default()).outcome;
                    same(&t, &native, &int).unwrap();
                }
            }
        }
    }
}
