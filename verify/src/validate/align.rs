//! Which sync point of the optimized trace each sync point of the original is: the
//! alignment of the two traces' sync points (removed guards, calls left out, pairs).

use std::collections::BTreeSet;

use trace_ir::{GuardId, OpRef, Trace};

use super::layout::descr_key;
use super::sync::{Event, Step};

/// Whether the optimized call `rp` is the original call `ro`: the same op, or the plain call
/// an original conditional call becomes (its operands without the condition), with no
/// operand (the function included) that both name by different constants, or that the
/// original names by a constant and the optimized call computes.
pub(super) fn same_call(ot: &Trace, ro: OpRef, pt: &Trace, rp: OpRef) -> bool {
    let (opo, opp) = (ot.op(ro), pt.op(rp));
    let shape = match opo.args.len().checked_sub(opp.args.len()) {
        Some(0) => opo.opcode == opp.opcode,
        Some(1) => opo.opcode.unconditional_call() == Some(opp.opcode),
        _ => false,
    };
    if !shape {
        return false;
    }
    // The operands (the function included; a conditional call's condition too unless the
    // optimized call is its plain form): two different constants in one place are two
    // different calls, and so is a constant of the original where the optimized call has a
    // computed value (the optimizer replaces values by constants, never the reverse). So a
    // conditional call that never calls is not paired with a later one that does.
    let skip = usize::from(opo.args.len() > opp.args.len());
    let same_consts = opo.args[skip..]
        .iter()
        .zip(&opp.args)
        .all(|(&a, &b)| match (ot.const_of(a), pt.const_of(b)) {
            (Some(x), Some(y)) => x == y,
            (Some(_), None) => false,
            _ => true,
        });
    descr_key(ot, ro) == descr_key(pt, rp) && same_consts
}

/// Whether the call at `op` is `ll_arraycopy` (`trace_ir::oopspec::is_array_copy`).
fn is_array_copy_call(trace: &Trace, op: OpRef) -> bool {
    let o = trace.op(op);
    let cd = o.descr.and_then(|d| trace.descr(d).as_call());
    cd.is_some_and(|cd| trace_ir::oopspec::is_array_copy(o.opcode, cd, o.args.len()))
}

/// Whether two sync points are the same kind of point (calls are numbered per side).
pub(super) fn same_event(a: Event, b: Event) -> bool {
    match (a, b) {
        (Event::Call(_), Event::Call(_)) => true,
        _ => a == b,
    }
}

/// What an original call the optimized trace may leave out becomes: a conditional call that
/// never calls, or an array copy done on virtual arrays; `None` for a call that must stay.
pub(super) fn optional_call(ot: &Trace, ro: OpRef) -> Option<Step> {
    if ot.op(ro).opcode.unconditional_call().is_some() {
        Some(Step::SkippedCall(ro))
    } else if is_array_copy_call(ot, ro) {
        Some(Step::CopiedArrays(ro))
    } else {
        None
    }
}

/// Whether the optimized sync point `next` is a call that is the original call `ro`.
pub(super) fn pairs_with(ot: &Trace, ro: OpRef, pt: &Trace, next: Option<(OpRef, Event)>) -> bool {
    matches!(next, Some((rp, Event::Call(_))) if same_call(ot, ro, pt, rp))
}

/// What [`align`] found.
pub(super) enum Alignment {
    /// The alignment asked for.
    Found(Vec<Step>),
    /// There is an alignment, but not as many as asked for.
    NoMore,
    /// There is none.
    None,
}

/// The most alignments [`align`] enumerates, and the steps it takes doing so.
const ENUMERATION_STEPS: usize = 100_000;

/// An alignment of the original's sync points `ev_o` with the optimized trace's `ev_p` in
/// which every removed guard is one the optimized trace does not have (`kept`), every call
/// left out may be (`optional_call`), and every pair of calls is the same call
/// (`same_call`). A call that may be left out and has the same call next in the optimized
/// trace is first paired, then left out when the rest does not align (a conditional call that
/// never calls followed by a plain call of the same function). Backtracking search; a choice
/// point that failed is not tried again. `skip`: the number of alignments to pass over first,
/// in the order of the search (the validator tries the next one when a pair of calls the
/// first one made turns out to differ: whether a conditional call calls is not known here).
pub(super) fn align(
    ot: &Trace,
    pt: &Trace,
    ev_o: &[(OpRef, Event)],
    ev_p: &[(OpRef, Event)],
    kept: &BTreeSet<GuardId>,
    skip: usize,
) -> Alignment {
    let (mut skip, mut found_any, mut budget) = (skip, false, ENUMERATION_STEPS);
    // A choice point: where it was taken, how many steps were made before it, and the
    // alternatives left (the step and the optimized events it consumes).
    struct Choice {
        at: usize,
        pi: usize,
        len: usize,
        rest: Option<(Step, usize)>,
    }
    let mut steps: Vec<Step> = Vec::with_capacity(ev_o.len());
    let mut trail: Vec<Choice> = Vec::new();
    let mut failed: BTreeSet<(usize, usize)> = BTreeSet::new();
    let (mut at, mut pi) = (0usize, 0usize);
    loop {
        budget = budget.saturating_sub(1);
        if budget == 0 {
            return if found_any { Alignment::NoMore } else { Alignment::None };
        }
        let chosen = if at == ev_o.len() {
            if pi == ev_p.len() {
                if skip == 0 {
                    return Alignment::Found(steps);
                }
                // Passed over: search on (the choice points under it did not fail).
                skip -= 1;
                found_any = true;
                failed.clear();
            }
            None
        } else {
            let (ro, e) = ev_o[at];
            let next = ev_p.get(pi).copied();
            let pair = match next {
                Some((rp, ep)) if same_event(e, ep) && (!matches!(e, Event::Call(_)) || same_call(ot, ro, pt, rp)) => {
                    Some((Step::Pair(e, ro, rp), 1))
                }
                _ => None,
            };
            match e {
                Event::Guard(g) if !kept.contains(&g) => Some((Step::RemovedGuard(g, ro), 0)),
                Event::Call(_) => match (pair, optional_call(ot, ro)) {
                    (Some(p), Some(skip)) if !failed.contains(&(at, pi)) => {
                        trail.push(Choice {
                            at,
                            pi,
                            len: steps.len(),
                            rest: Some((skip, 0)),
                        });
                        Some(p)
                    }
                    (Some(_), Some(_)) => None,
                    (p, skip) => p.or(skip.map(|s| (s, 0))),
                },
                _ => pair,
            }
        };
        if let Some((step, consumed)) = chosen {
            steps.push(step);
            at += 1;
            pi += consumed;
            continue;
        }
        // Back to the last choice point with an alternative left.
        loop {
            let Some(c) = trail.last_mut() else {
                return if found_any { Alignment::NoMore } else { Alignment::None };
            };
            if let Some((step, consumed)) = c.rest.take() {
                steps.truncate(c.len);
                steps.push(step);
                (at, pi) = (c.at + 1, c.pi + consumed);
                break;
            }
            failed.insert((c.at, c.pi));
            trail.pop();
        }
    }
}
