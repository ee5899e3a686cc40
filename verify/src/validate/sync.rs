//! Sync points (guards, calls, labels, the final op) and what is proven at each.

use std::collections::{BTreeSet, HashMap};

use trace_ir::{FailArg, GuardData, GuardId, OpFlags, OpRef, Opcode, Trace};
use z3::ast::{Ast, Bool, BV};
use z3::SatResult;

use super::align::{align, optional_call, pairs_with, same_call, same_event, Alignment};
use super::carried::loop_label;
use super::compare::Pairs;
use super::exit_writes::Undo;
use super::naming::one_sided;
use super::side::Sym;
use super::terms::{bv, zero};
use super::validator::Validator;
use super::{unsupported, Stop, R};

/// Which sync point an op is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    Guard(GuardId),
    Call(usize),
    Label(usize),
    Final,
}

pub(super) fn events(trace: &Trace) -> Vec<(OpRef, Event)> {
    let mut out = Vec::new();
    let (mut calls, mut labels) = (0, 0);
    for r in trace.op_refs() {
        let op = trace.op(r);
        if let Some(g) = trace.guard_of(r) {
            out.push((r, Event::Guard(g.id)));
        } else if op.opcode == Opcode::Label {
            out.push((r, Event::Label(labels)));
            labels += 1;
        } else if op.opcode.is_final() {
            out.push((r, Event::Final));
        } else if is_sync_call(trace, r) {
            out.push((r, Event::Call(calls)));
            calls += 1;
        }
    }
    out
}

pub(super) fn is_sync_call(trace: &Trace, op: OpRef) -> bool {
    let o = trace.op(op);
    matches!(
        o.opcode,
        Opcode::CallI
            | Opcode::CallR
            | Opcode::CallF
            | Opcode::CallN
            | Opcode::CallMayForceI
            | Opcode::CallMayForceR
            | Opcode::CallMayForceF
            | Opcode::CallMayForceN
            | Opcode::CallAssemblerI
            | Opcode::CallAssemblerR
            | Opcode::CallAssemblerF
            | Opcode::CallAssemblerN
            | Opcode::CondCallN
            | Opcode::CondCallValueI
            | Opcode::CondCallValueR
    ) && !is_elidable_call(trace, op)
        && pure_call(trace, op).is_none()
}

/// The pure op a call computes by its oopspec (`trace_ir::oopspec::pure_call_opcode`): such
/// a call is translated as that op, and is no sync point.
pub(super) fn pure_call(trace: &Trace, op: OpRef) -> Option<Opcode> {
    let o = trace.op(op);
    let cd = trace.descr(o.descr?).as_call()?;
    trace_ir::oopspec::pure_call_opcode(o.opcode, cd, o.args.len())
}

pub(super) fn is_elidable_call(trace: &Trace, op: OpRef) -> bool {
    let o = trace.op(op);
    match o.opcode {
        Opcode::CallPureI | Opcode::CallPureR | Opcode::CallPureF | Opcode::CallPureN => true,
        Opcode::CallI | Opcode::CallR | Opcode::CallF | Opcode::CallN => o
            .descr
            .and_then(|d| trace.descr(d).as_call().map(|c| c.effect.is_elidable()))
            .unwrap_or(false),
        _ => false,
    }
}

/// One of the original's sync points and what corresponds to it in the optimized trace.
#[derive(Clone, Copy)]
pub(super) enum Step {
    /// A guard the optimized trace removed.
    RemovedGuard(GuardId, OpRef),
    /// A `cond_call`/`cond_call_value` the optimized trace dropped: it never calls.
    SkippedCall(OpRef),
    /// An array copy (`trace_ir::oopspec::is_array_copy`) the optimized trace performed on
    /// its virtual arrays instead of calling.
    CopiedArrays(OpRef),
    /// The same sync point on both sides (the original's op, the optimized op).
    Pair(Event, OpRef, OpRef),
}

impl<'t> Validator<'t> {
    /// The sync points of both traces, checked to correspond, as a step per sync point of the
    /// original, in order: the optimized trace's are the original's without the guards the
    /// optimizer removed and the conditional calls it found never call. `Invalid` when the
    /// optimized trace adds a guard with a new id, `Unknown` when they do not come in the same
    /// order on both sides.
    pub(super) fn sync_points(&mut self) -> R<Vec<Step>> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let ev_o = events(ot);
        let ev_p = events(pt);
        let orig_ids: HashMap<GuardId, usize> = ev_o
            .iter()
            .enumerate()
            .filter_map(|(i, (_, e))| match e {
                Event::Guard(g) => Some((*g, i)),
                _ => None,
            })
            .collect();
        for (r, e) in &ev_p {
            if let Event::Guard(g) = e {
                if !orig_ids.contains_key(g) {
                    return Err(Stop::Invalid(self.structural(format!(
                        "the optimized trace adds a guard with a new id: {g} ({} at {r})",
                        pt.op(*r).opcode
                    ))));
                }
            }
        }
        // The original's events with removed guards (and conditional calls that never call)
        // dropped must equal the optimized events.
        let kept: BTreeSet<GuardId> = ev_p
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Guard(g) => Some(*g),
                _ => None,
            })
            .collect();
        let differ = |at: usize, o: Option<Event>, p: Option<Event>| {
            unsupported(format!(
                "sync points differ at position {at}: original {o:?}, optimized {p:?} (guards reordered, calls or labels added or removed)"
            ))
        };
        match align(ot, pt, &ev_o, &ev_p, &kept, self.alignment) {
            Alignment::Found(steps) => {
                self.aligned_by_search = true;
                return Ok(steps);
            }
            Alignment::NoMore => {
                self.alignment_missing = true;
                return unsupported(format!("no alignment number {} of the sync points", self.alignment));
            }
            Alignment::None => {}
        }
        // No alignment pairs every call with the same call: pair greedily, so that a call
        // the optimizer changed is compared (and found different) rather than left unknown.
        let mut steps = Vec::with_capacity(ev_o.len());
        let mut pi = 0usize;
        for (at, &(ro, e)) in ev_o.iter().enumerate() {
            let next = ev_p.get(pi).copied();
            let step = match e {
                Event::Guard(g) if !kept.contains(&g) => Step::RemovedGuard(g, ro),
                Event::Call(_) if optional_call(ot, ro).is_some() && !pairs_with(ot, ro, pt, next) => {
                    optional_call(ot, ro).expect("checked")
                }
                _ => match next {
                    Some((rp, ep)) if same_event(e, ep) => {
                        pi += 1;
                        Step::Pair(e, ro, rp)
                    }
                    _ => return differ(at, Some(e), next.map(|(_, e)| e)),
                },
            };
            steps.push(step);
        }
        if let Some(&(_, e)) = ev_p.get(pi) {
            return differ(ev_o.len(), None, Some(e));
        }
        Ok(steps)
    }

    /// An array copy of the original the optimized trace does not call: it is the copy
    /// between two arrays the original allocated with one layout (tracked, or escaped since), at
    /// constant positions within both, performed on the original's objects (all items read,
    /// then written). Anything else is `unknown`.
    pub(super) fn copied_arrays(&mut self, ro: OpRef) -> R<()> {
        let ot = self.o.trace;
        let op = ot.op(ro).clone();
        let why = |what: &str| {
            unsupported(format!(
                "the array copy at {ro} is not performed by a call in the optimized trace, and {what}"
            ))
        };
        let (src, dst) = (self.o.value(op.args[1])?, self.o.value(op.args[2])?);
        // (Allocated by the trace, so of known layout and length: tracked, or escaped since.)
        let (Sym::Obj(s), Sym::Obj(d)) = (&src, &dst) else {
            return why("its arrays are not both allocated by the trace");
        };
        let (s, d) = (*s, *d);
        let shape = self.o.objs[s].shape.clone();
        if shape != self.o.objs[d].shape {
            return why("its arrays have different layouts");
        }
        let Some(descr) = ot.descrs.iter().find(|x| format!("array:{x:?}") == shape).cloned() else {
            return why("its arrays are not arrays");
        };
        let mut k = [0u64; 3];
        for (i, &a) in op.args[3..6].iter().enumerate() {
            match self.o.bv_of(a)?.simplify().as_u64() {
                Some(c) => k[i] = c,
                None => return why("its positions or length are not constants"),
            }
        }
        let [ss, ds, n] = k;
        let len = |v: &mut Self, id: usize| v.o.objs[id].len.as_ref().and_then(|l| l.simplify().as_u64());
        let within = |start: u64, len: Option<u64>| len.is_some_and(|l| start.checked_add(n).is_some_and(|e| e <= l));
        if (n as i64) < 0 || !within(ss, len(self, s)) || !within(ds, len(self, d)) {
            return why("its range is not within both arrays");
        }
        let items: Vec<Sym> = (0..n)
            .map(|i| self.o.load_item(&src, &descr, &bv(ss + i), false).0)
            .collect();
        let akey = format!("{descr:?}");
        for (i, v) in items.into_iter().enumerate() {
            let ix = ds + i as u64;
            if self.o.tracked(&dst).is_some() {
                self.o.store_item(d, &akey, ix as u32, v);
            } else {
                let (p, v) = (self.o.escape(&dst), self.o.escape(&v));
                self.o.expose(&v);
                let place = self.o.item_place(&p, &akey, &bv(ix), false);
                self.o.write_place(&place, &v, true);
            }
        }
        Ok(())
    }

    /// When the original's conditional call at `ro` calls: `cond_call` when its condition is
    /// non-zero, `cond_call_value` when its value is zero.
    fn calls(&mut self, ro: OpRef) -> R<Bool> {
        let op = self.o.trace.op(ro);
        let zero = self.o.bv_of(op.args[0])?.eq(zero());
        Ok(if op.opcode == Opcode::CondCallN {
            zero.not()
        } else {
            zero
        })
    }

    /// A conditional call the optimizer dropped: under the path condition it never calls
    /// ([`Validator::calls`]), and the value of a `cond_call_value` is its first operand.
    pub(super) fn skipped_call(&mut self, ro: OpRef) -> R<()> {
        let claim = self.calls(ro)?.not();
        let opcode = self.o.trace.op(ro).opcode;
        let what = if opcode == Opcode::CondCallN {
            "its condition may be non-zero"
        } else {
            "its value may be zero"
        };
        self.prove(&claim, || format!("{opcode} at {ro} was removed but {what}"), None)?;
        self.assume(claim, false);
        if opcode != Opcode::CondCallN {
            let v = self.o.bv_of(self.o.trace.op(ro).args[0])?;
            self.o.vals[ro.index()] = Some(Sym::Bv(v));
        }
        Ok(())
    }

    /// A guard the optimizer removed: it cannot fail under the path condition; past it, its
    /// condition holds.
    pub(super) fn removed_guard(&mut self, g: GuardId, ro: OpRef) -> R<()> {
        let ot = self.o.trace;
        let cond = self.guard_cond(true, ro)?;
        self.prove(
            &cond,
            || format!("guard {g} ({}) was removed but can fail", ot.op(ro).opcode),
            None,
        )?;
        let h = self.guard_heavy(true, ro);
        self.assume(cond, h);
        self.learn_constant(true, ro);
        self.guard_result(true, ro);
        Ok(())
    }

    pub(super) fn sync_guard(&mut self, g: GuardId, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let co = self.guard_cond(true, ro)?;
        let cp = self.guard_cond(false, rp)?;
        let (opname, optname) = (ot.op(ro).opcode, pt.op(rp).opcode);
        // A `guard_nonnull` with a later class check fused into it (`guard_nonnull_class`)
        // may fail where the original passes it: wherever the original fails it, and then
        // with the original's state there (an interpreter resuming at it redoes the steps
        // the original would have taken up to the class check).
        let fused = opname == Opcode::GuardNonnull && optname == Opcode::GuardNonnullClass;
        let claim = if fused { cp.implies(&co) } else { co.iff(&cp) };
        let what = if fused {
            "passes where the original fails"
        } else {
            "fails on different inputs"
        };
        self.prove(&claim, || format!("guard {g} ({opname} / {optname}) {what}"), None)?;
        // When the guard fails, the interpreter resumes with the fail arguments.
        if self.cfg.check_fail_args || self.cfg.check_heap {
            self.drain_escape_facts();
            let n = self.facts.len();
            // (the optimized guard's failure; the same as the original's unless fused)
            let (fails, h) = if fused {
                (cp.not(), self.guard_heavy(false, rp))
            } else {
                (co.not(), self.guard_heavy(true, ro))
            };
            self.assume(fails, h);
            let pairs_before = self.pair_facts.len();
            self.open_batch();
            let r = self.compare_exit(g, ro, rp).and_then(|()| self.flush());
            self.batch = None;
            self.facts.truncate(n);
            self.concrete_facts.truncate(n);
            self.partial_facts.truncate(n);
            // Objects paired by role at the exit stay paired: a pairing only chooses which
            // runs are compared, whether or not the guard fails (and what was consistent with
            // the exit's path condition is consistent with the weaker one here).
            self.facts
                .extend(self.pair_facts[pairs_before..].iter().map(|f| (f.clone(), false)));
            r?;
            // (Back on the path where the guard passes: facts proven here hold from now on.)
            self.learn_equalities();
        }
        let (ho, hp) = (self.guard_heavy(true, ro), self.guard_heavy(false, rp));
        self.assume(co, ho);
        self.assume(cp, hp);
        self.learn_constant(true, ro);
        self.learn_constant(false, rp);
        self.guard_result(true, ro);
        self.guard_result(false, rp);
        Ok(())
    }

    /// Compare what the two traces leave when guard `g` fails: the optimized exit's writes
    /// (performed on the optimized side for the comparison only), the fail arguments and the
    /// heap, and the facts stated about the exit words.
    pub(super) fn compare_exit(&mut self, g: GuardId, ro: OpRef, rp: OpRef) -> R<()> {
        let go = self.o.trace.guard_of(ro).cloned().expect("guard data");
        let gp = self.p.trace.guard_of(rp).cloned().expect("guard data");
        let mut memo_p = HashMap::new();
        let mut pairs = Pairs::default();
        let mut undo = self.p.undo_point();
        let r = self.compare_exit_state(g, &go, &gp, &mut memo_p, &mut pairs, &mut undo);
        self.p.undo(undo);
        r?;
        self.prove_guard_facts(g, rp)
    }

    fn compare_exit_state(
        &mut self,
        g: GuardId,
        go: &GuardData,
        gp: &GuardData,
        memo_p: &mut HashMap<u32, Sym>,
        pairs: &mut Pairs,
        undo: &mut Undo,
    ) -> R<()> {
        if self.cfg.check_heap {
            self.exit_writes(g, gp, memo_p, pairs, undo)?;
        }
        if self.cfg.check_fail_args {
            if go.fail_args.len() != gp.fail_args.len() {
                return Err(Stop::Invalid(self.structural(format!(
                    "guard {g}: {} fail arguments in the original, {} in the optimized trace",
                    go.fail_args.len(),
                    gp.fail_args.len()
                ))));
            }
            let mut memo_o = HashMap::new();
            for (i, (fo, fp)) in go.fail_args.iter().zip(&gp.fail_args).enumerate() {
                if matches!(fo, FailArg::Hole) || matches!(fp, FailArg::Hole) {
                    continue;
                }
                let so = self.fail_arg(true, go, fo, &mut memo_o)?;
                let sp = self.fail_arg(false, gp, fp, memo_p)?;
                self.prove_equal(&so, &sp, pairs, &|| {
                    format!("guard {g}: fail argument {i} differs when the guard fails")
                })?;
            }
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("when guard {g} fails"))?;
        }
        Ok(())
    }

    /// What `Config::guard_facts` states about the exit words of the optimized guard at `rp`
    /// holds (the guard failing): each word's facts, and what each known field holds.
    fn prove_guard_facts(&mut self, g: GuardId, rp: OpRef) -> R<()> {
        let Some(facts) = self.cfg.guard_facts.iter().find(|f| f.guard == g).cloned() else {
            return Ok(());
        };
        let gp = self.p.trace.guard_of(rp).expect("guard data");
        let mut words = Vec::new();
        gp.for_each_value(|v| words.push(v));
        for (k, (&v, f)) in words.iter().zip(&facts.words).enumerate() {
            if f.is_empty() {
                continue;
            }
            let x = self.p.value(v)?;
            let claim = self.p.satisfies(&x, f);
            self.prove(
                &claim,
                || format!("guard {g}: exit word {k} may not satisfy what the optimizer states of it ({f:?})"),
                None,
            )?;
        }
        for f in &facts.fields {
            let (Some(&obj), Some(descr)) = (words.get(f.object), self.p.trace.descrs.get(f.descr.index())) else {
                return Err(Stop::Invalid(
                    self.structural(format!("guard {g}: a field fact names no exit word ({f:?})")),
                ));
            };
            let value = match f.value {
                trace_ir::FieldValue::Word(k) => match words.get(k) {
                    Some(&w) => self.p.value(w)?,
                    None => {
                        return Err(Stop::Invalid(
                            self.structural(format!("guard {g}: a field fact names no exit word ({f:?})")),
                        ))
                    }
                },
                trace_ir::FieldValue::Const(c) => Sym::Bv(crate::validate::terms::bv(c.bits())),
            };
            let base = self.p.value(obj)?;
            let held = self.p.load_field(&base, &descr.clone());
            // (Objects the trace allocated are compared as objects, not made to escape.)
            let claim = match (&held, &value) {
                (Sym::Obj(a), Sym::Obj(b)) => z3::ast::Bool::from_bool(a == b),
                (Sym::Bv(a), Sym::Bv(b)) => a.eq(b),
                _ => {
                    let (held, value) = (self.p.escape(&held), self.p.escape(&value));
                    held.eq(&value)
                }
            };
            self.prove(
                &claim,
                || {
                    format!(
                        "guard {g}: exit word {} may not hold what the optimizer states of a field ({f:?})",
                        f.object
                    )
                },
                None,
            )?;
        }
        Ok(())
    }

    pub(super) fn sync_call(&mut self, k: usize, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (opo, opp) = (ot.op(ro), pt.op(rp));
        if !same_call(ot, ro, pt, rp) {
            return Err(Stop::Invalid(self.structural(format!(
                "call {k}: `{}` in the original, `{}` in the optimized trace",
                opo.opcode, opp.opcode
            ))));
        }
        // A conditional call made a plain call: it must always call (`cond_call`'s condition
        // non-zero, `cond_call_value`'s value zero); the condition is not an argument.
        let off = opo.args.len() - opp.args.len();
        if off == 1 {
            let claim = self.calls(ro)?;
            self.prove(
                &claim,
                || format!("call {k}: `{}` became `{}` but may not call", opo.opcode, opp.opcode),
                None,
            )?;
            self.assume(claim, false);
        }
        self.open_batch();
        for i in 0..opp.args.len() {
            let a = self.o.bv_of(opo.args[i + off])?;
            let b = self.p.bv_of(opp.args[i])?;
            self.o.expose(&a);
            self.p.expose(&b);
            self.note_equal_candidate(&a, &b);
            self.try_pair(&a, &b);
            self.prove(
                &a.eq(&b),
                || format!("call {k} ({}): argument {} differs", opo.opcode, i + off),
                Some((&a, &b)),
            )?;
        }
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("before call {k} ({})", opo.opcode))?;
        }
        self.flush()?;
        self.learn_equalities();
        let effect = opo.descr.and_then(|d| ot.descr(d).as_call().map(|c| c.effect));
        let may_write = effect.map(|e| e.may_write_heap()).unwrap_or(true) || opo.opcode.has(OpFlags::BARRIER);
        if may_write {
            self.o.expose_all();
            self.p.expose_all();
        }
        let can_raise = effect.map(|e| e.can_raise()).unwrap_or(true);
        let mut res = BV::new_const(format!("call{k}"), 64);
        if matches!(opo.opcode, Opcode::CondCallValueI | Opcode::CondCallValueR) {
            // The value if non-zero, else the call's result.
            let v = self.o.bv_of(opo.args[0])?;
            res = v.eq(zero()).ite(&res, &v);
        }
        let res = Sym::Bv(res);
        let only = (one_sided(&self.o, &self.p), one_sided(&self.p, &self.o));
        for orig in [true, false] {
            let r = if orig { ro } else { rp };
            let only_here = if orig { &only.0 } else { &only.1 };
            let s = self.side(orig);
            s.vals[r.index()] = Some(res.clone());
            s.calls += 1;
            s.exc = if can_raise {
                Bool::new_const(format!("raised{k}"))
            } else {
                Bool::from_bool(false)
            };
            if opo.opcode.has(OpFlags::BARRIER) {
                s.not_forced = Bool::new_const(format!("not_forced{k}"));
            }
            if may_write {
                s.new_epoch_after_call(format!("call{k}"), only_here);
            }
        }
        Ok(())
    }

    pub(super) fn sync_label(&mut self, k: usize, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (ao, ap) = (ot.op(ro).args.clone(), pt.op(rp).args.clone());
        let n = ao.len();
        // Parameters past the original's carry loaded values (`Config::carried`), then the
        // fields of objects the label takes field by field (`Config::carried_virtuals`).
        let own_loop = loop_label(pt) == Some(rp);
        let pure = if own_loop { self.own_carries().pure } else { Vec::new() };
        let loads = match ap.len() {
            m if m >= n && own_loop => {
                let own: Vec<_> = pt.descrs.iter().map(Some).collect();
                self.carried_extras(n, m, &self.own_carries(), &own)
            }
            m if m == n => Ok((Vec::new(), Vec::new())),
            m if m > n => Err("its extra parameters carry nothing (it is not the loop's label)".into()),
            _ => Err("the optimized label drops parameters".into()),
        };
        let (loads, objs) = match loads {
            Ok(l) => l,
            Err(why) => {
                return unsupported(format!(
                    "label {k} has {n} parameters in the original and {} in the optimized trace: {why}",
                    ap.len()
                ))
            }
        };
        self.open_batch();
        let mut pairs = Pairs::default();
        let mut operands = Vec::with_capacity(n);
        for i in 0..n {
            let so = self.o.value(ao[i])?;
            if !objs.iter().any(|c| c.param() == i) {
                let sp = self.p.value(ap[i])?;
                self.prove_equal(&so, &sp, &mut pairs, &|| format!("label {k}: operand {i} differs"))?;
            }
            operands.push(so);
        }
        let extra = ap[n..].iter().map(|&a| self.p.value(a)).collect::<R<Vec<_>>>()?;
        self.prove_carried(&format!("label {k}"), &loads, &operands, &extra, &mut pairs)?;
        self.prove_carried_objects(&format!("label {k}"), &objs, &operands, &ap, &mut pairs)?;
        self.prove_carried_pure(&format!("label {k}"), &pure, &operands, &extra, &mut pairs)?;
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("at label {k}"))?;
        }
        self.flush()?;
        // A parameter of the loop header that the optimized trace's final jump passes back
        // unchanged equals its operand in every iteration, on both sides: by induction, the
        // jump's operands being proven equal (so the original's jump passes that value back
        // too). The others become fresh symbols.
        let header = |t: &Trace, l: OpRef| trace_ir::invariant_params(t).filter(|(h, _)| *h == l).map(|(_, v)| v);
        let same = match (header(ot, ro), header(pt, rp)) {
            (Some(_), Some(v)) => v,
            _ => Vec::new(),
        };
        // A parameter the optimized jump masks (`trace_ir::masked_params`: the back edge
        // brings `x & C`, `C = 2^k - 1`) is in `[0, C]` in every iteration when its operand
        // here is: by induction, the jump's operand is in it by its shape, and the original's
        // is proven equal to it. The optimizer assumes exactly that (and only keeps a peeled
        // loop whose jump masks what it assumed masked). An operand shown not to be in
        // `[0, C]` gives no assumption; one Z3 cannot decide gives it, but the verdict can
        // then be `Unknown` at best (so a time-out never turns into a false `Invalid`).
        let masks = match (header(ot, ro), trace_ir::masked_params(pt).filter(|(h, _)| *h == rp)) {
            (Some(_), Some((_, m))) => m,
            _ => Vec::new(),
        };
        let mut masked: Vec<Option<u64>> = vec![None; operands.len()];
        let carried_object = |j: usize| objs.iter().any(|c| c.param() == j);
        for (j, so) in operands.iter().enumerate() {
            if carried_object(j) {
                continue;
            }
            if let (Some(&Some(c)), Sym::Bv(b), false) = (masks.get(j), so, same.get(j) == Some(&true)) {
                let within = b.bvule(BV::from_u64(c, 64));
                match self.decide(&within).0 {
                    SatResult::Unsat => masked[j] = Some(c),
                    SatResult::Unknown => {
                        if self.unknown.is_none() {
                            self.unknown = Some(format!("Z3 gave up proving label {k}: operand {j} in [0, {c:#x}]"));
                        }
                        masked[j] = Some(c);
                    }
                    SatResult::Sat => {}
                }
            }
        }
        // A parameter that the optimized label and jump both pass the same constant for
        // (`trace_ir::constant_params`) is that constant in every iteration, on both sides:
        // the same induction.
        let constant = match (header(ot, ro), trace_ir::constant_params(pt).filter(|(h, _)| *h == rp)) {
            (Some(_), Some((_, c))) => c,
            _ => Vec::new(),
        };
        let invariant: Vec<Option<BV>> = operands
            .into_iter()
            .enumerate()
            .map(|(j, so)| match so {
                Sym::Bv(b)
                    if !carried_object(j)
                        && (same.get(j) == Some(&true) || constant.get(j).is_some_and(Option::is_some)) =>
                {
                    Some(b)
                }
                _ => None,
            })
            .collect();
        let mut assumptions = Vec::new();
        for orig in [true, false] {
            let r = if orig { ro } else { rp };
            let s = self.side(orig);
            for o in s.objs.iter_mut() {
                if o.addr.is_none() {
                    o.dead = true;
                }
            }
            s.new_epoch(format!("label{k}"), true);
            s.labels += 1;
            s.no_ovf = None;
            // (The carried parameters, past the original's, come below.)
            for (j, param) in s.trace.label_params(r).enumerate().take(n) {
                let kind = s.trace.op(param).opcode.result_kind();
                let sym = match &invariant[j] {
                    Some(b) => b.clone(),
                    None => BV::new_const(format!("L{k}_{}{j}", kind.prefix()), 64),
                };
                if let (Some(c), true) = (masked[j], orig) {
                    assumptions.push(sym.bvule(BV::from_u64(c, 64)));
                }
                s.vals[param.index()] = Some(Sym::Bv(sym));
            }
        }
        // Both sides share the parameters' symbols: one assumption each.
        for a in assumptions {
            self.assume(a, false);
        }
        self.enter_carried(k, rp, &loads);
        self.enter_carried_objects(k, ro, rp, &objs);
        self.enter_carried_pure(rp, &pure)?;
        // `run` then continues right after the label; `translate` keeps the parameters'
        // values set here.
        Ok(())
    }

    pub(super) fn sync_final(&mut self, ro: OpRef, rp: OpRef) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        let (opo, opp) = (ot.op(ro), pt.op(rp));
        if opo.opcode != opp.opcode {
            return Err(Stop::Invalid(self.structural(format!(
                "the original ends with {}, the optimized trace with {}",
                opo.opcode, opp.opcode
            ))));
        }
        // A `jump` to a label with carried parameters passes them past the original's
        // operands (`Config::carried`).
        let n = opo.args.len();
        let to_loop = opp.opcode == Opcode::Jump && loop_label(pt).is_some() && rp.index() + 1 == pt.ops.len();
        // A `jump` into another loop's body passes what its label carries
        // (`Config::body_entries`).
        let entry = self.entered_body(ro, rp);
        let mut pure = Vec::new();
        let loads = match (opp.args.len(), entry) {
            (m, _) if m >= n && to_loop => {
                let own: Vec<_> = pt.descrs.iter().map(Some).collect();
                let carries = self.own_carries();
                pure = carries.pure.clone();
                self.carried_extras(n, m, &carries, &own)
            }
            (m, Some((carries, descrs))) if m > n => {
                pure = carries.pure.clone();
                self.carried_extras(n, m, &carries, &descrs)
            }
            (m, _) if m == n => Ok((Vec::new(), Vec::new())),
            _ => Err(String::new()),
        };
        let (loads, objs) = match loads {
            Ok(l) => l,
            Err(why) => {
                let why = if why.is_empty() { why } else { format!(" ({why})") };
                return Err(Stop::Invalid(self.structural(format!(
                    "{}: {n} operands in the original, {} in the optimized trace{why}",
                    opo.opcode,
                    opp.args.len()
                ))));
            }
        };
        self.open_batch();
        let mut pairs = Pairs::default();
        let name = opo.opcode;
        let mut outputs = Vec::with_capacity(n);
        for i in 0..n {
            let so = self.o.value(opo.args[i])?;
            if !objs.iter().any(|c| c.param() == i) {
                let sp = self.p.value(opp.args[i])?;
                self.prove_equal(&so, &sp, &mut pairs, &|| format!("{name}: output {i} differs"))?;
            }
            outputs.push(so);
        }
        let extra = opp.args[n..].iter().map(|&a| self.p.value(a)).collect::<R<Vec<_>>>()?;
        self.prove_carried(&name.to_string(), &loads, &outputs, &extra, &mut pairs)?;
        let args = opp.args.clone();
        self.prove_carried_objects(&name.to_string(), &objs, &outputs, &args, &mut pairs)?;
        self.prove_carried_pure(&name.to_string(), &pure, &outputs, &extra, &mut pairs)?;
        if self.cfg.check_heap {
            self.prove_heap_equal(&format!("at {}", opo.opcode))?;
        }
        self.flush()?;
        self.check_jump_target(ro, rp)
    }

    /// Both final `jump`s go to the same label, or the optimized one to the body of the
    /// loop whose header the original names, with operands that satisfy what the body
    /// assumes (`Config::body_entries`).
    fn check_jump_target(&mut self, ro: OpRef, rp: OpRef) -> R<()> {
        let target = |t: &Trace, r: OpRef| match t.op(r).descr.map(|d| t.descr(d)) {
            Some(trace_ir::Descr::Target(x)) if t.op(r).opcode == trace_ir::Opcode::Jump => Some(*x),
            _ => None,
        };
        let (to, tp) = (target(self.o.trace, ro), target(self.p.trace, rp));
        if to == tp {
            return Ok(());
        }
        let entry = self
            .cfg
            .body_entries
            .iter()
            .find(|e| Some(e.header) == to && Some(e.body) == tp)
            .cloned();
        let Some(entry) = entry else {
            return Err(Stop::Invalid(self.structural(format!(
                "the original jumps to {to:?}, the optimized trace to {tp:?}"
            ))));
        };
        let args = self.p.trace.op(rp).args.clone();
        if args.len() != entry.arity() {
            return Err(Stop::Invalid(self.structural(format!(
                "the jump passes {} operands to a loop body of {} parameters",
                args.len(),
                entry.arity()
            ))));
        }
        self.open_batch();
        for (j, (f, &a)) in entry.params.iter().zip(&args).enumerate() {
            // A placeholder stands where the body takes an object field by field.
            if entry.carried_virtuals.iter().any(|c| c.param == j) {
                continue;
            }
            let x = self.p.value(a)?;
            let claim = self.p.satisfies(&x, f);
            self.prove(
                &claim,
                || format!("jump into the loop body: operand {j} may not satisfy what the body assumes ({f:?})"),
                None,
            )?;
        }
        self.flush()
    }
}
