//! If-conversion of a bridge into its loop: a short bridge that leaves a `guard_true` /
//! `guard_false` of a loop body and jumps straight back to the body's label becomes part of
//! the loop body, both paths computed and the loop's next values picked by `int_select`.
//!
//! ```text
//! loop body                          bridge out of G           merged loop body
//! label(p...)                        [exit words of G]         label(p...)
//! ...                                ops B                     ...
//! guard_true(c) G  ──fails──────▶    jump(q...) to the label   ops T; ops B (inputs: G's exit words)
//! ops T                                                        jump(select(c, p', q')...)
//! jump(p'...)
//! ```
//!
//! A branch that goes either way at random costs a mispredicted jump each time it changes
//! direction; after the merge there is no branch left (`int_select` is a conditional move).
//! Both paths run on every iteration, so both must be cheap and safe to run when not taken:
//!
//! - `T` (the ops after `G` up to the loop's `jump`) and `B` (the bridge's ops) are pure ops
//!   defined on every operand (no `PARTIAL` op, except shifts, divisions and
//!   `int_signext` by constants for which they are defined), and `int_add_ovf`,
//!   `int_sub_ovf` and `int_mul_ovf` each followed by its `guard_no_overflow`, and
//!   `guard_true`/`guard_false`; no other guard, no memory access, call or allocation; at
//!   most [`MAX_PATH_OPS`] ops each.
//! - A path's values are only used where that path is taken (by the `int_select`s of the
//!   jump), so they may be anything where it is not. An overflow check of a path keeps its
//!   guard (and the guard's resume data and id) but gets its second operand through a select
//!   that gives the operation's neutral value (0, or 1 for a multiplication) where the path
//!   is not taken: `int_add_ovf(x, int_select(c, y, 0))` overflows exactly where the tree
//!   would have left through that guard, with the same exit words. A `guard_true(x)` of a
//!   path becomes `guard_true(int_select(c, x, 1))` (1 where the path is not taken), a
//!   `guard_false(x)` likewise with 0.
//! - `G` must be after the loop's last label, the loop's `jump` and the bridge's must go to
//!   that label, and where the two paths pass different values for a parameter it must be
//!   an integer (`int_select` picks integers).
//!
//! The merged loop computes, on every path through the tree that stays in the loop, the
//! values the tree computes; on every path that leaves, it leaves through the same guard
//! with the same exit words. The differential tests (`verify/tests/ifconv.rs`) run random
//! loops with such bridges through the interpreter as trees and as merged loops, and the
//! merged loops natively.

use std::collections::HashMap;
use trace_ir::descr::Descr;
use trace_ir::{
    jump_target, Const, DescrRef, FailArg, GuardData, GuardId, GuardRef, JumpTarget, Op, OpFlags, OpRef, Opcode, Trace,
    Value, ValueData, VirtualField, VirtualKind, VirtualObject,
};

/// The longest path (ops of `T` or of `B`, converted overflow checks included) merged.
pub const MAX_PATH_OPS: usize = 24;

/// The loop `root` with the bridge `bridge` out of its guard `guard` merged into it (see the
/// module documentation), or `None` when the shapes do not allow it.
pub fn merge_bridge(root: &Trace, guard: GuardId, bridge: &Trace) -> Option<Trace> {
    let g_at = trace_ir::tree::guard_op(root, guard)?;
    let g_op = root.op(g_at);
    let taken_if_true = match g_op.opcode {
        // T runs when the guard passes.
        Opcode::GuardTrue => true,
        Opcode::GuardFalse => false,
        _ => return None,
    };
    let last = OpRef::new(root.ops.len().checked_sub(1)?);
    let label = root.last_label()?;
    if g_at <= label || root.op(last).opcode != Opcode::Jump || jump_target(root, last) != JumpTarget::Label(label) {
        return None;
    }
    let token = match root.op(label).descr.map(|d| root.descr(d)) {
        Some(Descr::Target(t)) => *t,
        _ => return None,
    };
    let b_last = bridge.ops.len().checked_sub(1)?;
    let b_jump = &bridge.ops[b_last];
    let b_token = match b_jump.descr.map(|d| bridge.descr(d)) {
        Some(Descr::Target(t)) => *t,
        _ => return None,
    };
    let tail = g_at.index() + 1..last.index();
    let body = bridge.num_inputs..b_last;
    if b_jump.opcode != Opcode::Jump
        || b_token != token
        || !path_ok(root, tail.clone())
        || !path_ok(bridge, body.clone())
        || b_jump.args.len() != root.op(label).args.len()
    {
        return None;
    }
    let gd = root.guard(g_op.guard?);
    if !gd.writes.is_empty() {
        // (The bridge performs them: not a pure path.)
        return None;
    }
    let mut words = Vec::with_capacity(bridge.num_inputs);
    gd.for_each_value(|v| words.push(v));
    if words.len() != bridge.num_inputs {
        return None;
    }
    let mut m = Merge::start(root, g_at);
    let cond = g_op.args[0];
    // T's values are the root's own; B's inputs are G's exit words.
    let mut t_map: Vec<Value> = (0..root.ops.len()).map(|i| Value::op(OpRef::new(i))).collect();
    let mut b_map: Vec<Value> = words;
    b_map.resize(bridge.ops.len(), Value::op(OpRef::new(0)));
    // The path with guards first, where the other path's values are not computed yet (the
    // guards' resume data would keep their operands alive past them).
    let checks = |t: &Trace, r: &std::ops::Range<usize>| t.ops[r.clone()].iter().any(|o| o.guard.is_some());
    if checks(bridge, &body) && !checks(root, &tail) {
        m.path(bridge, body, &mut b_map, cond, !taken_if_true);
        m.path(root, tail, &mut t_map, cond, taken_if_true);
    } else {
        m.path(root, tail, &mut t_map, cond, taken_if_true);
        m.path(bridge, body, &mut b_map, cond, !taken_if_true);
    }
    // The jump: one value per parameter, picked where the paths differ.
    let root_jump = root.op(last);
    let mut args = Vec::with_capacity(root_jump.args.len());
    for (k, (&tv, &bv)) in root_jump.args.iter().zip(&b_jump.args).enumerate() {
        let tv = m.value_from(root, tv, &t_map);
        let bv = m.value_from(bridge, bv, &b_map);
        // The same value on both paths, or a path's checked result that is the other
        // path's value where that one is taken.
        if tv == bv || m.same_elsewhere.get(&bv) == Some(&tv) {
            args.push(bv);
            continue;
        }
        if m.same_elsewhere.get(&tv) == Some(&bv) {
            args.push(tv);
            continue;
        }
        let param = root.label_params(label).nth(k)?;
        if root.op(param).opcode.result_kind() != trace_ir::Kind::Int {
            return None;
        }
        let (yes, no) = if taken_if_true { (tv, bv) } else { (bv, tv) };
        args.push(m.push(Opcode::IntSelect, &[cond, yes, no]));
    }
    m.out.ops.push(Op {
        opcode: Opcode::Jump,
        descr: root_jump.descr,
        guard: None,
        args: args.into_iter().collect(),
    });
    trace_ir::verify(&m.out).ok()?;
    Some(m.out)
}

/// Whether the ops `range` of `t` may be run when their path is not taken (see the module
/// documentation), and are few enough.
fn path_ok(t: &Trace, range: std::ops::Range<usize>) -> bool {
    let mut n = 0usize;
    let mut i = range.start;
    while i < range.end {
        let op = &t.ops[i];
        let opc = op.opcode;
        if opc.is_ovf() {
            if t.ops.get(i + 1).map(|o| o.opcode) != Some(Opcode::GuardNoOverflow) || i + 1 >= range.end {
                return false;
            }
            n += 3;
            i += 2;
            continue;
        }
        if matches!(opc, Opcode::GuardTrue | Opcode::GuardFalse) && op.guard.is_some() {
            n += 2;
            i += 1;
            continue;
        }
        if !opc.is_pure() || op.descr.is_some() || (opc.has(OpFlags::PARTIAL) && !defined_by_constants(t, op)) {
            return false;
        }
        n += 1;
        i += 1;
    }
    n <= MAX_PATH_OPS
}

/// Whether the `PARTIAL` op `op` is defined whatever its first operand, by its constant other
/// operands: a shift by 0..=63, a division by a non-zero constant, `int_signext` by 1, 2, 4
/// or 8 bytes.
fn defined_by_constants(t: &Trace, op: &Op) -> bool {
    let k = op.args.get(1).and_then(|&v| t.const_int(v));
    match op.opcode {
        Opcode::IntLshift | Opcode::IntRshift | Opcode::UintRshift => k.is_some_and(|k| (0..64).contains(&k)),
        Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod => k.is_some_and(|k| k != 0),
        Opcode::IntSignext => k.is_some_and(|k| matches!(k, 1 | 2 | 4 | 8)),
        _ => false,
    }
}

/// The merged trace under construction.
struct Merge {
    out: Trace,
    /// The pure ops made so far, by opcode and operands (one op computes each value: the
    /// two paths often compute the same one).
    made: HashMap<(Opcode, Vec<Value>), Value>,
    /// The result of each overflow-checked op of a path, to its first operand: what it
    /// equals where its path is not taken (its second operand is then neutral).
    same_elsewhere: HashMap<Value, Value>,
}

impl Merge {
    /// The root's ops before the guard at `g_at` (and the resume data of their guards).
    fn start(root: &Trace, g_at: OpRef) -> Merge {
        let mut out = Trace {
            ops: Vec::with_capacity(root.ops.len() + 8),
            num_inputs: root.num_inputs,
            consts: root.consts.clone(),
            descrs: root.descrs.clone(),
            guards: Vec::new(),
            info: root.info.clone(),
            aliasing: root.aliasing,
        };
        for op in &root.ops[..g_at.index()] {
            let mut op = op.clone();
            if let Some(g) = op.guard {
                out.guards.push(root.guard(g).clone());
                op.guard = Some(GuardRef::new(out.guards.len() - 1));
            }
            out.ops.push(op);
        }
        Merge {
            out,
            made: HashMap::new(),
            same_elsewhere: HashMap::new(),
        }
    }

    /// The pure op `opcode(args)`: the one made before with these operands, or a new one;
    /// an `int_select` of one value is that value, of 1 and 0 the condition's truth.
    fn push(&mut self, opcode: Opcode, args: &[Value]) -> Value {
        if opcode == Opcode::IntSelect {
            let k = |v: Value| self.out.const_int(v);
            match (k(args[1]), k(args[2])) {
                _ if args[1] == args[2] => return args[1],
                (Some(1), Some(0)) => return self.push(Opcode::IntIsTrue, &args[..1]),
                (Some(0), Some(1)) => return self.push(Opcode::IntIsZero, &args[..1]),
                _ => {}
            }
        }
        let mut key = (opcode, args.to_vec());
        if opcode.is_commutative() && key.1.len() == 2 && key.1[1] < key.1[0] {
            key.1.swap(0, 1);
        }
        if let Some(&v) = self.made.get(&key) {
            return v;
        }
        self.out.ops.push(Op::new(opcode, args));
        let v = Value::op(OpRef::new(self.out.ops.len() - 1));
        self.made.insert(key, v);
        v
    }

    fn int(&mut self, k: i64) -> Value {
        self.out.make_const(Const::Int(k))
    }

    /// `v` of trace `t` in the merged trace: an op through `map`, a constant re-interned.
    fn value_from(&mut self, t: &Trace, v: Value, map: &[Value]) -> Value {
        match v.data() {
            ValueData::Op(o) => map[o.index()],
            ValueData::Const(c) => Value::constant(
                self.out
                    .consts
                    .intern_named(t.consts.get(c), t.consts.name(c).map(str::to_string)),
            ),
        }
    }

    /// A descriptor of trace `t` in the merged trace.
    fn descr_from(&mut self, t: &Trace, d: DescrRef) -> DescrRef {
        self.out.make_descr(t.descr(d).clone())
    }

    /// Copy the ops `range` of `t` (a path, checked by [`path_ok`]), their values in `map`;
    /// the path is taken when `cond != 0` is `when_true`.
    fn path(&mut self, t: &Trace, range: std::ops::Range<usize>, map: &mut [Value], cond: Value, when_true: bool) {
        let mut i = range.start;
        while i < range.end {
            let op = &t.ops[i];
            let args: Vec<Value> = op.args.iter().map(|&a| self.value_from(t, a, map)).collect();
            if op.opcode.is_ovf() {
                // The operation with its neutral second operand where the path is not
                // taken: it cannot overflow there.
                let neutral = self.int(i64::from(op.opcode == Opcode::IntMulOvf));
                let y = self.on_path(cond, when_true, args[1], neutral);
                self.out.ops.push(Op::new(op.opcode, &[args[0], y]));
                map[i] = Value::op(OpRef::new(self.out.ops.len() - 1));
                self.same_elsewhere.insert(map[i], args[0]);
                self.guard(t, &t.ops[i + 1], None, map);
                i += 2;
            } else if matches!(op.opcode, Opcode::GuardTrue | Opcode::GuardFalse) {
                // The condition where the path is taken, and one that passes elsewhere.
                let passes = self.int(i64::from(op.opcode == Opcode::GuardTrue));
                let c = self.on_path(cond, when_true, args[0], passes);
                self.guard(t, op, Some(c), map);
                i += 1;
            } else {
                map[i] = self.push(op.opcode, &args);
                i += 1;
            }
        }
    }

    /// `v` where the path taken when `cond != 0` is `when_true` runs, `elsewhere` where not.
    fn on_path(&mut self, cond: Value, when_true: bool, v: Value, elsewhere: Value) -> Value {
        let (yes, no) = if when_true { (v, elsewhere) } else { (elsewhere, v) };
        self.push(Opcode::IntSelect, &[cond, yes, no])
    }

    /// The guard `op` of trace `t` (on `arg`, if any) with its resume data, in the merged
    /// trace.
    fn guard(&mut self, t: &Trace, op: &Op, arg: Option<Value>, map: &[Value]) {
        let gd = op.guard.map(|g| self.guard_from(t, t.guard(g), map));
        self.out.guards.extend(gd);
        self.out.ops.push(Op {
            opcode: op.opcode,
            descr: None,
            guard: Some(GuardRef::new(self.out.guards.len() - 1)),
            args: arg.into_iter().collect(),
        });
    }

    /// The resume data `gd` of trace `t` in the merged trace.
    fn guard_from(&mut self, t: &Trace, gd: &GuardData, map: &[Value]) -> GuardData {
        let fa = |m: &mut Merge, f: FailArg| match f {
            FailArg::Value(v) => FailArg::Value(m.value_from(t, v, map)),
            other => other,
        };
        let fail_args = gd.fail_args.iter().map(|&f| fa(self, f)).collect();
        let virtuals = gd
            .virtuals
            .iter()
            .map(|vo| VirtualObject {
                kind: match vo.kind {
                    VirtualKind::Struct { opcode, descr } => VirtualKind::Struct {
                        opcode,
                        descr: self.descr_from(t, descr),
                    },
                    VirtualKind::Array { opcode, descr, len } => VirtualKind::Array {
                        opcode,
                        descr: self.descr_from(t, descr),
                        len,
                    },
                    VirtualKind::Str { opcode, len } => VirtualKind::Str { opcode, len },
                },
                fields: vo
                    .fields
                    .iter()
                    .map(|&(f, v)| {
                        let f = match f {
                            VirtualField::Field(d) => VirtualField::Field(self.descr_from(t, d)),
                            item => item,
                        };
                        (f, fa(self, v))
                    })
                    .collect(),
            })
            .collect();
        let writes = gd
            .writes
            .iter()
            .map(|w| trace_ir::ResumeWrite {
                obj: self.value_from(t, w.obj, map),
                descr: self.descr_from(t, w.descr),
                value: fa(self, w.value),
                ..*w
            })
            .collect();
        GuardData {
            id: gd.id,
            resume_key: gd.resume_key,
            fail_args,
            virtuals,
            writes,
        }
    }
}
