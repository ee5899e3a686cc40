//! The verifier's fast path ([`super::quick::accepts`]) accepts exactly the traces the
//! checks in order accept: compared on valid traces (random ones and the text format's
//! golden files) and on many copies of them broken at random.

use super::{quick, verify_in_order};
use crate::entity::{ConstRef, DescrRef, GuardId, GuardRef, OpRef, Value};
use crate::opcode::Opcode;
use crate::trace::{FailArg, Op, Trace};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Valid traces to break: random traces of several sizes and shapes, and the golden files.
fn valid_traces() -> Vec<Trace> {
    let mut v = Vec::new();
    for seed in 0..48u64 {
        let cfg = trace_interp::random::RandomConfig {
            length: [12, 40, 120][seed as usize % 3],
            loops: seed % 2 == 0,
            ..trace_interp::random::RandomConfig::default()
        };
        // The generator's traces are of the library's own copy of these types: through text.
        let text = trace_interp::random::random_trace(&cfg, seed).0.to_string();
        v.push(crate::parse_trace(&text).expect("a printed random trace parses"));
    }
    for text in [
        include_str!("../../tests/text_golden/constants.trace"),
        include_str!("../../tests/text_golden/descriptors.trace"),
        include_str!("../../tests/text_golden/virtuals.trace"),
        include_str!("../../tests/text_golden/label_arrow.trace"),
        include_str!("../../tests/text_golden/loop_label_shadowing.trace"),
    ] {
        v.extend(crate::parse_file(text).expect("a golden file parses"));
    }
    v
}

/// Any value: an op result or a constant, in range or just past it.
fn any_value(t: &Trace, rng: &mut Rng) -> Value {
    if rng.below(3) == 0 {
        Value::constant(ConstRef::new(rng.below(t.consts.len() + 1)))
    } else {
        Value::op(OpRef::new(rng.below(t.ops.len() + 2)))
    }
}

/// Break `t` in one random way (the result may still be valid).
fn mutate(t: &mut Trace, rng: &mut Rng) {
    let n = t.ops.len();
    let at = rng.below(n);
    let ng = t.guards.len();
    match rng.below(19) {
        0 => {
            if !t.ops[at].args.is_empty() {
                let k = rng.below(t.ops[at].args.len());
                t.ops[at].args[k] = any_value(t, rng);
            }
        }
        1 => {
            t.ops[at].args.pop();
        }
        2 => {
            let v = any_value(t, rng);
            t.ops[at].args.push(v);
        }
        3 => t.ops[at].opcode = Opcode::ALL[rng.below(Opcode::ALL.len())],
        4 => t.ops[at].descr = None,
        5 => t.ops[at].descr = Some(DescrRef::new(rng.below(t.descrs.len() + 1))),
        6 => t.ops[at].guard = None,
        7 => t.ops[at].guard = Some(GuardRef::new(rng.below(ng + 1))),
        8 if ng > 0 => {
            let id = t.guards[rng.below(ng)].id;
            t.guards[rng.below(ng)].id = id;
        }
        9 if ng > 0 => {
            let g = rng.below(ng);
            let fa = match rng.below(3) {
                0 => FailArg::Virtual(rng.below(3) as u32),
                1 => FailArg::Hole,
                _ => FailArg::Value(any_value(t, rng)),
            };
            let gd = &mut t.guards[g];
            if let Some(vo) = gd
                .virtuals
                .first_mut()
                .filter(|vo| !vo.fields.is_empty() && rng.below(2) == 0)
            {
                vo.fields[0].1 = fa;
            } else if !gd.fail_args.is_empty() {
                let k = rng.below(gd.fail_args.len());
                gd.fail_args[k] = fa;
            } else {
                gd.fail_args.push(fa);
            }
        }
        10 => {
            t.ops.remove(at);
        }
        11 => t.ops.swap(at, rng.below(n)),
        12 => t.num_inputs = (t.num_inputs + rng.below(3)).saturating_sub(1),
        13 if !t.descrs.is_empty() => {
            let d = t.descrs[rng.below(t.descrs.len())].clone();
            t.descrs.push(d);
        }
        14 => {
            t.ops.pop();
        }
        15 => {
            let input = [Opcode::InputI, Opcode::InputR, Opcode::InputF][rng.below(3)];
            t.ops.insert(at, Op::new(input, &[]));
        }
        16 => {
            // An operand of any kind (`guard_value`'s, a store's value): another kind.
            let any: Vec<usize> = (0..n)
                .filter(|&i| t.ops[i].opcode.info().args.contains('a') && !t.ops[i].args.is_empty())
                .collect();
            if !any.is_empty() {
                let i = any[rng.below(any.len())];
                let k = rng.below(t.ops[i].args.len());
                t.ops[i].args[k] = any_value(t, rng);
            }
        }
        17 if ng > 0 => {
            // A write of the exit: any object, descriptor, index and value.
            let value = match rng.below(3) {
                0 => FailArg::Virtual(rng.below(3) as u32),
                1 => FailArg::Hole,
                _ => FailArg::Value(any_value(t, rng)),
            };
            let w = crate::trace::ResumeWrite {
                obj: any_value(t, rng),
                descr: DescrRef::new(rng.below(t.descrs.len() + 1)),
                index: (rng.below(2) == 0).then(|| rng.below(4) as u32),
                value,
            };
            let g = rng.below(ng);
            t.guards[g].writes.push(w);
        }
        _ => t.guards.push(crate::trace::GuardData {
            id: GuardId(rng.below(8) as u32),
            resume_key: 0,
            fail_args: Vec::new(),
            virtuals: Vec::new(),
            writes: Vec::new(),
        }),
    }
}

#[test]
fn quick_path_accepts_the_valid_traces() {
    for t in valid_traces() {
        assert_eq!(verify_in_order(&t), Ok(()), "{t}");
        assert!(quick::accepts(&t), "the quick path rejects a valid trace:\n{t}");
    }
}

#[test]
fn quick_path_accepts_exactly_what_the_checks_in_order_accept() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut broken, mut total) = (0, 0);
    for t in valid_traces() {
        for _ in 0..300 {
            let mut m = t.clone();
            for _ in 0..1 + rng.below(3) {
                if m.ops.is_empty() {
                    break;
                }
                mutate(&mut m, &mut rng);
            }
            let in_order = verify_in_order(&m);
            assert_eq!(
                quick::accepts(&m),
                in_order.is_ok(),
                "the quick path and the checks in order ({in_order:?}) disagree on:\n{m:?}"
            );
            broken += usize::from(in_order.is_err());
            total += 1;
        }
    }
    // Most mutations break the trace, and some leave it valid: both sides are exercised.
    assert!(broken > total / 2 && broken < total, "{broken} of {total} broken");
}

#[test]
fn a_star_is_only_the_last_letter_of_an_operand_signature() {
    // The quick path's arity check relies on it.
    for &opc in Opcode::ALL {
        let sig = opc.info().args;
        let variadic = sig.ends_with('*');
        assert_eq!(sig.len() - usize::from(variadic), opc.fixed_arity(), "{opc}");
        assert_eq!(variadic, opc.is_variadic(), "{opc}");
    }
}
