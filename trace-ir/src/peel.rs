//! Loop peeling: the loop's first iteration copied in front of it, as PyPy's `unroll` does,
//! so an optimizer sees the body twice: once as a preamble whose guards establish facts
//! about the loop-invariant values, once as the loop that can rely on them.
//!
//! ```text
//!  before:  inputs  preamble  label(a) [q]  body(q)  jump(j(q))
//!  after:   inputs  preamble  label(a) [q]  body(q)  label(j(q)) [q']  body'(q')  jump(j'(q'))
//! ```
//! `body'` is `body` with the parameters `q` renamed to `q'` and every op to its copy. The
//! first label keeps its parameters and its `TargetToken(t)`: it is still the loop's header,
//! which a bridge may enter with any values. The new label gets `TargetToken(t | 2^62)`
//! ([`peeled_body_token`]), and the copied `jump` names it: the optimizer may specialize the
//! body for what the preamble establishes, so only the loop itself jumps there. (A label
//! with another descriptor hands it to the new label; one without stays without.) A loop
//! without a label (its `jump` goes to the trace start) peels the same way, the inputs
//! playing the parameters. Guards of the copy get fresh [`GuardId`]s after the trace's
//! largest and keep their resume key: an exit of the copy resumes the interpreter where the
//! original guard would, and the ids stay unique (the verifier's rule).
//!
//! The peeled trace computes what the original computes: the second iteration of the
//! original is the first of the copy, and every later one runs the copy again.

use crate::descr::Descr;
use crate::entity::{GuardId, GuardRef, OpRef, Value, ValueData};
use crate::opcode::Opcode;
use crate::trace::{FailArg, GuardData, Op, ResumeWrite, Trace};
use crate::verify::{jump_target, JumpTarget};

/// The `TargetToken` [`peel_loop`] gives the label of the peeled loop body whose header
/// label is `TargetToken(header)`.
pub fn peeled_body_token(header: u64) -> u64 {
    header | 1 << 62
}

/// The loop's header: the first parameter and their number.
fn header(t: &Trace) -> Option<(Option<OpRef>, usize, usize)> {
    let jump = t.ops.len().checked_sub(1)?;
    if t.ops[jump].opcode != Opcode::Jump {
        return None;
    }
    match jump_target(t, OpRef::new(jump)) {
        JumpTarget::Label(l) if Some(l) == t.last_label() => {
            let n = t.op(l).args.len();
            Some((Some(l), l.index() + 1, n))
        }
        JumpTarget::Start if t.last_label().is_none() => Some((None, 0, t.num_inputs)),
        _ => None,
    }
}

/// The loop header of `t` (the label its final `jump` goes back to) and, per parameter of
/// it, whether the jump passes that parameter back unchanged: such a parameter is
/// loop-invariant, it holds the label's operand in every iteration. `None` when `t` does not
/// end with a jump to one of its labels.
pub fn invariant_params(t: &Trace) -> Option<(OpRef, Vec<bool>)> {
    let last = t.ops.len().checked_sub(1)?;
    let jump = &t.ops[last];
    if jump.opcode != Opcode::Jump {
        return None;
    }
    let JumpTarget::Label(l) = jump_target(t, OpRef::new(last)) else {
        return None;
    };
    let same = t
        .label_params(l)
        .enumerate()
        .map(|(k, p)| jump.args.get(k) == Some(&Value::op(p)))
        .collect();
    Some((l, same))
}

/// The loop header of `t` (as in [`invariant_params`]) and, per parameter of it, the low
/// mask `C` (`2^k - 1`, `0 <= k <= 63`) when the final `jump` passes `int_and(x, C)` (or
/// `int_and(C, x)`) for that parameter: every value the back edge brings it is then in
/// `[0, C]`. With an entry operand in `[0, C]` too, the parameter is in `[0, C]` in every
/// iteration (the masked accumulator of `s = (s + x) & 0xffffff`); the optimizer assumes
/// that at the loop header of a peeled loop and the translation validator checks it by the
/// same definition.
pub fn masked_params(t: &Trace) -> Option<(OpRef, Vec<Option<u64>>)> {
    let (header, _) = invariant_params(t)?;
    let jump = t.ops.last()?;
    let mask_of = |v: Value| -> Option<u64> {
        let op = t.op(v.as_op()?);
        if op.opcode != Opcode::IntAnd {
            return None;
        }
        let c = op.args.iter().find_map(|&a| t.const_int(a))?;
        (c >= 0 && (c as u64 & (c as u64).wrapping_add(1)) == 0).then_some(c as u64)
    };
    let masks = (0..t.op(header).args.len())
        .map(|k| jump.args.get(k).copied().and_then(mask_of))
        .collect();
    Some((header, masks))
}

/// The loop header of `t` (as in [`invariant_params`]) and, per parameter of it, the
/// constant (as a value of `t`) that both the label and the final `jump` pass for it: such
/// a parameter holds that constant in every iteration (the optimizer of a peeled loop
/// assumes so, and the translation validator checks it by the same definition).
pub fn constant_params(t: &Trace) -> Option<(OpRef, Vec<Option<Value>>)> {
    let (header, _) = invariant_params(t)?;
    let jump = t.ops.last()?;
    let label = t.op(header);
    let consts = label
        .args
        .iter()
        .zip(&jump.args)
        .map(|(&entry, &back)| {
            let (a, b) = (entry.as_const()?, back.as_const()?);
            (t.consts.get(a) == t.consts.get(b)).then_some(entry)
        })
        .collect();
    Some((header, consts))
}

/// The guards [`peel_loop`] copies, as `(original id, id of the copy)` pairs in trace order
/// (empty when `t` is not peelable). An embedder that treats some guards specially (a
/// loop's normal exit, say) extends that to their copies with this.
pub fn peeled_guard_copies(t: &Trace) -> Vec<(GuardId, GuardId)> {
    let Some((_, first_param, nparams)) = header(t) else {
        return Vec::new();
    };
    let first = t.max_guard_id().map_or(0, |g| g.0 + 1);
    t.ops[first_param + nparams..]
        .iter()
        .filter_map(|op| op.guard)
        .enumerate()
        .map(|(k, g)| (t.guard(g).id, GuardId(first + k as u32)))
        .collect()
}

/// Whether `other` has the shape of a trace derived from `original` peeled with
/// [`peel_loop`] (its optimization, say): `original` is a loop `peel_loop` peels and `other`
/// has exactly one `label` more.
pub fn is_peeled_form(original: &Trace, other: &Trace) -> bool {
    let labels = |t: &Trace| t.ops.iter().filter(|o| o.opcode == Opcode::Label).count();
    labels(other) == labels(original) + 1 && is_peelable(original)
}

/// Whether [`peel_loop`] would peel `t`: it ends with a `jump` back to its last label (or,
/// without labels, to its start).
pub fn is_peelable(t: &Trace) -> bool {
    header(t).is_some()
}

/// `t` with its loop's first iteration peeled off (see the module doc), or `None` when `t`
/// is not a loop that jumps back to its last label or start (a `finish`, a jump to another
/// loop). The result satisfies [`crate::verify()`] when `t` does.
pub fn peel_loop(t: &Trace) -> Option<Trace> {
    let (label, first_param, nparams) = header(t)?;
    let jump = t.ops.len() - 1;
    let body = first_param + nparams..jump;
    let mut out = t.clone();
    let jump_op = out.ops.pop().expect("the trace ends with its jump");
    // New position of each parameter and body op of the original (identity elsewhere).
    let mut rename: Vec<u32> = (0..t.ops.len() as u32).collect();
    let header_descr = label.and_then(|l| out.ops[l.index()].descr);
    let header_token = header_descr.and_then(|d| match out.descr(d) {
        Descr::Target(token) => Some(*token),
        _ => None,
    });
    let body_descr = match header_token {
        Some(token) => Some(out.make_descr(Descr::Target(peeled_body_token(token)))),
        None => label.and_then(|l| out.ops[l.index()].descr.take()),
    };
    out.ops.push(Op {
        opcode: Opcode::Label,
        descr: body_descr,
        guard: None,
        args: jump_op.args.clone(),
    });
    for (slot, param) in rename[first_param..first_param + nparams]
        .iter_mut()
        .zip(&t.ops[first_param..first_param + nparams])
    {
        *slot = out.ops.len() as u32;
        out.ops.push(Op::new(param.opcode, &[]));
    }
    let map = |rename: &[u32], v: Value| match v.data() {
        ValueData::Op(o) => Value::op(OpRef::new(rename[o.index()] as usize)),
        ValueData::Const(_) => v,
    };
    let map_fa = |rename: &[u32], fa: FailArg| match fa {
        FailArg::Value(v) => FailArg::Value(map(rename, v)),
        other => other,
    };
    let mut next_id = t.max_guard_id().map_or(0, |g| g.0 + 1);
    for i in body.chain(jump..jump + 1) {
        let op = &t.ops[i];
        let named_header = op.opcode == Opcode::Jump && op.descr.is_some() && op.descr == header_descr;
        let mut copy = Op {
            opcode: op.opcode,
            descr: if named_header && header_token.is_some() {
                body_descr
            } else {
                op.descr
            },
            guard: None,
            args: op.args.iter().map(|&a| map(&rename, a)).collect(),
        };
        if let Some(g) = op.guard {
            let gd = t.guard(g);
            let mut virtuals = gd.virtuals.clone();
            for vo in &mut virtuals {
                for f in &mut vo.fields {
                    f.1 = map_fa(&rename, f.1);
                }
            }
            out.guards.push(GuardData {
                id: GuardId(next_id),
                resume_key: gd.resume_key,
                fail_args: gd.fail_args.iter().map(|&fa| map_fa(&rename, fa)).collect(),
                virtuals,
                writes: gd
                    .writes
                    .iter()
                    .map(|w| ResumeWrite {
                        obj: map(&rename, w.obj),
                        value: map_fa(&rename, w.value),
                        ..*w
                    })
                    .collect(),
            });
            next_id += 1;
            copy.guard = Some(GuardRef::new(out.guards.len() - 1));
        }
        rename[i] = out.ops.len() as u32;
        out.ops.push(copy);
    }
    debug_assert_eq!(
        jump_target(&out, OpRef::new(out.ops.len() - 1)),
        JumpTarget::Label(OpRef::new(jump))
    );
    Some(out)
}
