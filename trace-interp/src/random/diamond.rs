//! Random loops with one short bridge: the shape `optimizer::ifconv` merges.
//!
//! ```text
//! root    [i, n, p1, p2, p3]  label (TargetToken(1)); guard i < n (the loop's exit);
//!         random integer ops; guard_true or guard_false on a computed condition G, its exit
//!         words i, n and some values; more random ops; jump(i + 1, n, three values)
//! bridge  out of G: random integer ops on the exit words; jump(i + 1, n, three values)
//!         to TargetToken(1)
//! ```
//!
//! The ops are integer ops defined on every operand (shifts by constants), and
//! `int_add_ovf`/`int_sub_ovf`/`int_mul_ovf` with their overflow guards, whose operands reach
//! the overflow edges (constants and inputs near the limits), and guards on comparisons. Both
//! paths count `i` up, so every run leaves through the loop's exit or another guard.

use crate::rng::Rng;
use crate::RtValue;
use trace_ir::descr::Descr;
use trace_ir::entity::Value;
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::tree::{Bridge, TraceTree};
use trace_ir::{Trace, TraceBuilder};

/// Integer ops defined on every operand.
const OPS: &[Opcode] = &[
    Opcode::IntAdd,
    Opcode::IntSub,
    Opcode::IntMul,
    Opcode::IntAnd,
    Opcode::IntOr,
    Opcode::IntXor,
    Opcode::IntLt,
    Opcode::IntEq,
    Opcode::UintLt,
];

/// Constants an operand may be (the overflow edges among them).
const CONSTS: &[i64] = &[1, -1, 7, 255, i64::MAX, i64::MIN, 1 << 40];

/// Append `n` random ops to `b` over `pool` (results added to it); overflow checks carry
/// `keep` as their fail arguments.
fn random_ops(rng: &mut Rng, b: &mut TraceBuilder, pool: &mut Vec<Value>, n: usize, keep: &[Value]) {
    for _ in 0..n {
        let x = *rng.pick(pool);
        let y = if rng.chance(1, 3) {
            b.const_int(*rng.pick(CONSTS))
        } else {
            *rng.pick(pool)
        };
        let v = match rng.below(9) {
            8 => {
                // A guard on a comparison (kept in the pool: it is a value too).
                let c = b.op(*rng.pick(&[Opcode::IntLt, Opcode::IntEq, Opcode::UintLt]), &[x, y]);
                b.guard(*rng.pick(&[Opcode::GuardTrue, Opcode::GuardFalse]), &[c], keep, 4);
                c
            }
            0 => {
                let k = b.const_int(rng.below(64) as i64);
                b.op(
                    *rng.pick(&[Opcode::IntLshift, Opcode::IntRshift, Opcode::UintRshift]),
                    &[x, k],
                )
            }
            1 => {
                let v = b.op(
                    *rng.pick(&[Opcode::IntAddOvf, Opcode::IntSubOvf, Opcode::IntMulOvf]),
                    &[x, y],
                );
                b.guard(Opcode::GuardNoOverflow, &[], keep, 3);
                v
            }
            _ => b.op(*rng.pick(OPS), &[x, y]),
        };
        pool.push(v);
    }
}

/// The values the jump passes back: `i + 1`, `n`, three values of `pool` (past `i`, `n`).
fn jump_back(rng: &mut Rng, b: &mut TraceBuilder, pool: &[Value]) {
    let one = b.const_int(1);
    let next = b.op(Opcode::IntAdd, &[pool[0], one]);
    let mut back = vec![next, pool[1]];
    for _ in 0..3 {
        back.push(*rng.pick(&pool[2..]));
    }
    b.jump(&back);
}

/// `t`'s final jump (and, with `label`, its last label) named `TargetToken(token)`.
fn name_target(t: &mut Trace, token: u64, label: bool) {
    let d = t.make_descr(Descr::Target(token));
    if label {
        if let Some(l) = t.last_label() {
            t.ops[l.index()].descr = Some(d);
        }
    }
    let last = t.ops.len() - 1;
    t.ops[last].descr = Some(d);
}

/// A random loop with a bridge (see the module documentation) and inputs for it: `i = 0`,
/// `n` below 40, and integers near zero, at the edges, or anywhere. A deterministic
/// function of `seed`; the tree passes `trace_ir::verify_tree`.
pub fn random_diamond(seed: u64) -> (TraceTree, Vec<RtValue>) {
    let mut rng = Rng::new(seed);
    let mut b = TraceBuilder::new();
    let inputs: Vec<Value> = (0..5).map(|_| b.input(Kind::Int)).collect();
    let params = b.label(&inputs);
    let more = b.op(Opcode::IntLt, &[params[0], params[1]]);
    b.guard(Opcode::GuardTrue, &[more], &params, 1);
    let mut pool = params.clone();
    let k = 1 + rng.index(4);
    random_ops(&mut rng, &mut b, &mut pool, k, &params);
    let c = *rng.pick(&pool[2..]);
    let c = if rng.chance(1, 2) {
        let mask = b.const_int(*rng.pick(&[1, 3, 7]));
        b.op(Opcode::IntAnd, &[c, mask])
    } else {
        let other = *rng.pick(&pool);
        b.op(Opcode::IntLt, &[c, other])
    };
    // The exit words: the counter and the limit first, then some values of the body.
    let mut words = vec![params[0], params[1]];
    for _ in 0..1 + rng.index(4) {
        words.push(*rng.pick(&pool));
    }
    let polarity = *rng.pick(&[Opcode::GuardTrue, Opcode::GuardFalse]);
    let guard = b.guard(polarity, &[c], &words, 2);
    let k = rng.index(6);
    random_ops(&mut rng, &mut b, &mut pool, k, &params);
    jump_back(&mut rng, &mut b, &pool);
    let mut root = b.build_unverified();
    name_target(&mut root, 1, true);

    let mut bb = TraceBuilder::new();
    bb.guard_ids_from(root.max_guard_id().map_or(0, |g| g.0 + 1));
    let ins: Vec<Value> = words.iter().map(|_| bb.input(Kind::Int)).collect();
    let mut pool = ins.clone();
    let k = rng.index(6);
    random_ops(&mut rng, &mut bb, &mut pool, k, &ins);
    jump_back(&mut rng, &mut bb, &pool);
    let mut bridge = bb.build_unverified();
    name_target(&mut bridge, 1, false);

    let mut values = vec![RtValue::Int(0), RtValue::Int(rng.below(40) as i64)];
    for _ in 0..3 {
        let v = match rng.below(4) {
            0 => *rng.pick(&[0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1]),
            1 => rng.below(100) as i64,
            _ => rng.next_u64() as i64,
        };
        values.push(RtValue::Int(v));
    }
    let tree = TraceTree {
        root,
        bridges: vec![Bridge { guard, trace: bridge }],
    };
    (tree, values)
}
