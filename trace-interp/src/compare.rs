//! Comparison of two runs for differential testing (original trace against optimized trace,
//! or against native code): allocation addresses differ between the runs, so objects the runs
//! allocated are compared by content.
//!
//! [`outcomes_equivalent`] compares, in order:
//! 1. the kind of outcome; for a guard failure the guard id and resume key; for an external
//!    jump the target; for an invalid outcome only that both are invalid (reasons may differ);
//! 2. the exit values, one by one: integers and floats by bits (NaN payloads included: the
//!    IR's float semantics is exact, see `trace_ir::eval`), null only to null, an external
//!    reference only to the same address, and a reference to an object allocated by the run
//!    (or rebuilt at the exit) only to an allocated object of the other run with the same
//!    kind, length and class whose bytes read the same: every view either run wrote (each
//!    as a read would see it at the end of the run, see [`super::heap::HeapObject::read`];
//!    unwritten bytes are zero), compared recursively; bytes a write left of a reference
//!    ([`crate::heap::Cell::reference`]) only to the same bytes of a corresponding
//!    reference. The correspondence between allocated
//!    objects must be one-to-one across the whole comparison: two references to one object in
//!    one run must be two references to one object in the other. Cycles are handled (a pair
//!    already in the correspondence is taken as equal);
//! 3. the sequence of heap-writing calls (function and canonical arguments);
//! 4. the heap epoch (number of heap-writing calls);
//! 5. the observable state of every external object either run wrote: for each view either
//!    run wrote, the value a read would return in each run (the written bytes, or the value
//!    derived from the address, offset and epoch), compared as in 2; and the same for raw
//!    memory;
//! 6. the pending exception state (class by value, exception object as in 2).
//!
//! Not compared: objects allocated by a run that are unreachable from the compared values,
//! external objects' decided classes, iteration, loop entry and step counts.
//!
//! [`runs_equivalent`] compares a run of an original trace with a run of its optimized form:
//! by resume key for a peeled form, and allowing an early exit at a fused guard.

use crate::heap::{Cell, Cells, Heap, View};
use crate::{run, Outcome, RtValue, RunConfig, RunResult, StopAt};
use std::collections::{BTreeSet, HashMap};
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::Trace;

struct Cmp<'a> {
    a: &'a Heap,
    b: &'a Heap,
    a_to_b: HashMap<u64, u64>,
    b_to_a: HashMap<u64, u64>,
}

impl<'a> Cmp<'a> {
    fn value(&mut self, what: &str, va: RtValue, vb: RtValue) -> Result<(), String> {
        match (va, vb) {
            (RtValue::Ref(x), RtValue::Ref(y)) => self.refs(what, x, y),
            _ if va.kind() == vb.kind() && va.bits() == vb.bits() => Ok(()),
            _ => Err(format!("{what}: {va:?} != {vb:?}")),
        }
    }

    fn refs(&mut self, what: &str, x: u64, y: u64) -> Result<(), String> {
        let (ax, by) = (self.a.objects.get(&x), self.b.objects.get(&y));
        match (ax, by) {
            (None, None) if x == y => Ok(()),
            (None, None) => Err(format!("{what}: external reference 0x{x:x} != 0x{y:x}")),
            (Some(_), None) | (None, Some(_)) => Err(format!(
                "{what}: 0x{x:x} and 0x{y:x} are not both objects allocated by the run"
            )),
            (Some(oa), Some(ob)) => {
                match (self.a_to_b.get(&x), self.b_to_a.get(&y)) {
                    (Some(&m), _) if m == y => return Ok(()),
                    (Some(&m), _) => {
                        return Err(format!(
                            "{what}: object 0x{x:x} already corresponds to 0x{m:x}, not 0x{y:x}"
                        ))
                    }
                    (None, Some(&m)) => {
                        return Err(format!(
                            "{what}: object 0x{y:x} already corresponds to 0x{m:x}, not 0x{x:x}"
                        ))
                    }
                    (None, None) => {}
                }
                self.a_to_b.insert(x, y);
                self.b_to_a.insert(y, x);
                if oa.kind != ob.kind {
                    return Err(format!("{what}: object kinds differ: {:?} != {:?}", oa.kind, ob.kind));
                }
                if oa.class != ob.class {
                    return Err(format!(
                        "{what}: object classes differ: 0x{:x} != 0x{:x}",
                        oa.class, ob.class
                    ));
                }
                let views: BTreeSet<(View, Kind)> = oa
                    .cells
                    .iter()
                    .chain(&ob.cells)
                    .map(|(&s, c)| (View::new(s, c.size), c.value.kind()))
                    .collect();
                for (view, kind) in views {
                    let at = format!("{what}@{}..{}", view.offset, view.end());
                    if let Some(r) = self.reference_bytes(&at, cell_at(&oa.cells, view), cell_at(&ob.cells, view)) {
                        r?;
                        continue;
                    }
                    let fa = oa.read(view, kind, self.a.epoch, false);
                    let fb = ob.read(view, kind, self.b.epoch, false);
                    self.value(&at, fa, fb)?;
                }
                Ok(())
            }
        }
    }

    /// The cells at `view` of two runs, compared as bytes of references when either holds
    /// what a write left of one ([`crate::heap::Cell::reference`]): the same bytes of
    /// corresponding references. `None` when neither does.
    fn reference_bytes(&mut self, what: &str, ca: Option<&Cell>, cb: Option<&Cell>) -> Option<Result<(), String>> {
        let (ra, rb) = (ca.and_then(|c| c.reference), cb.and_then(|c| c.reference));
        if ra.is_none() && rb.is_none() {
            return None;
        }
        Some(match (ra, rb) {
            (Some((x, i)), Some((y, j))) if i == j => self.refs(what, x, y),
            _ => Err(format!(
                "{what}: bytes of a reference in one run, other bytes in the other: {ca:?} != {cb:?}"
            )),
        })
    }

    fn values(&mut self, what: &str, a: &[RtValue], b: &[RtValue]) -> Result<(), String> {
        if a.len() != b.len() {
            return Err(format!("{what}: {} values != {} values", a.len(), b.len()));
        }
        for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
            self.value(&format!("{what}[{i}]"), x, y)?;
        }
        Ok(())
    }
}

/// The cell that is exactly `view`, if any.
fn cell_at(cells: &Cells, view: View) -> Option<&Cell> {
    cells.get(&view.offset).filter(|c| c.size == view.size)
}

/// Whether two runs behaved the same, as listed in the module documentation; `Err` explains
/// the first difference found.
pub fn outcomes_equivalent(a: &RunResult, b: &RunResult) -> Result<(), String> {
    compare(a, b, true)
}

/// [`outcomes_equivalent`] for two traces whose guards may carry different ids for the same
/// resume point (a trace and its peeled form, [`trace_ir::peel::peel_loop`]): a guard exit
/// matches one with the same resume key, whatever its id.
pub fn outcomes_equivalent_by_resume_key(a: &RunResult, b: &RunResult) -> Result<(), String> {
    compare(a, b, false)
}

fn compare(a: &RunResult, b: &RunResult, same_ids: bool) -> Result<(), String> {
    let mut c = Cmp {
        a: &a.heap,
        b: &b.heap,
        a_to_b: HashMap::new(),
        b_to_a: HashMap::new(),
    };
    match (&a.outcome, &b.outcome) {
        (Outcome::Finish(x), Outcome::Finish(y)) => c.values("finish", x, y)?,
        (
            Outcome::GuardFailed {
                guard: g1,
                resume_key: k1,
                values: x,
            },
            Outcome::GuardFailed {
                guard: g2,
                resume_key: k2,
                values: y,
            },
        ) => {
            if (same_ids && g1 != g2) || k1 != k2 {
                return Err(format!("different guards failed: {g1} (key {k1}) vs {g2} (key {k2})"));
            }
            c.values(&format!("fail args of {g1}"), x, y)?;
        }
        (Outcome::ExternalJump { target: t1, values: x }, Outcome::ExternalJump { target: t2, values: y }) => {
            if t1 != t2 {
                return Err(format!("jumps to different loops: {t1:?} vs {t2:?}"));
            }
            c.values("jump", x, y)?;
        }
        (Outcome::Invalid { .. }, Outcome::Invalid { .. }) | (Outcome::IterationLimit, Outcome::IterationLimit) => {}
        (x, y) => return Err(format!("different outcomes: {x} vs {y}")),
    }
    if (&a.outcome, &b.outcome) == (&Outcome::IterationLimit, &Outcome::IterationLimit) {
        // Both runs were cut at the limit, at points that need not correspond (a peeled loop
        // runs its first iteration before the back edge the limit counts): what both did up
        // to the shorter run is all there is to compare.
        let n = a.calls.iter().zip(&b.calls).take_while(|(x, y)| x == y).count();
        if n < a.calls.len().min(b.calls.len()) {
            return Err(format!(
                "heap-writing calls differ at call {n}: {:?} vs {:?}",
                a.calls[n], b.calls[n]
            ));
        }
        return Ok(());
    }
    if a.calls != b.calls {
        let n = a.calls.iter().zip(&b.calls).take_while(|(x, y)| x == y).count();
        return Err(format!(
            "heap-writing calls differ at call {n}: {:?} vs {:?}",
            a.calls.get(n),
            b.calls.get(n)
        ));
    }
    if a.heap.epoch != b.heap.epoch {
        return Err(format!("heap epochs differ: {} vs {}", a.heap.epoch, b.heap.epoch));
    }
    // External objects and raw memory.
    let mut addrs: Vec<u64> = a.heap.external.keys().chain(b.heap.external.keys()).copied().collect();
    addrs.sort_unstable();
    addrs.dedup();
    for addr in addrs {
        let cells = |h: &Heap| h.external.get(&addr).map(|e| e.cells.clone()).unwrap_or_default();
        let (ca, cb) = (cells(&a.heap), cells(&b.heap));
        let views: BTreeSet<(View, Kind)> = ca
            .iter()
            .chain(&cb)
            .map(|(&s, c)| (View::new(s, c.size), c.value.kind()))
            .collect();
        for (view, kind) in views {
            let at = format!("external 0x{addr:x}@{}..{}", view.offset, view.end());
            if let Some(r) = c.reference_bytes(&at, cell_at(&ca, view), cell_at(&cb, view)) {
                r?;
                continue;
            }
            let va = a.heap.read(addr, view, kind, false);
            let vb = b.heap.read(addr, view, kind, false);
            c.value(&at, va, vb)?;
        }
    }
    let raw: BTreeSet<(i64, u8, Kind)> = a
        .heap
        .raw
        .iter()
        .chain(b.heap.raw.iter())
        .map(|(&k, c)| (k, c.size, c.value.kind()))
        .collect();
    for (addr, size, kind) in raw {
        let (va, vb) = (
            a.heap.read_raw(addr as u64, size, kind),
            b.heap.read_raw(addr as u64, size, kind),
        );
        c.value(&format!("raw 0x{addr:x}"), va, vb)?;
    }
    match (a.exception, b.exception) {
        (None, None) => {}
        (Some((c1, v1)), Some((c2, v2))) if c1 == c2 => c.refs("pending exception", v1, v2)?,
        (x, y) => return Err(format!("pending exceptions differ: {x:?} vs {y:?}")),
    }
    Ok(())
}

/// Whether a run `b` of `optimized` behaves as the run `a` of `original` on the same `inputs`
/// under `cfg`: [`outcomes_equivalent`] (by resume key when `optimized` is `original`'s
/// peeled form, [`trace_ir::is_peeled_form`]), except that `optimized` may exit at a guard
/// the original passed when the optimizer fused a later class check into it: a
/// `guard_nonnull_class` whose original is a `guard_nonnull` (same resume key). The original,
/// stopped at that guard where the optimized run failed it ([`RunConfig::stop_at`]: the same
/// loop-header entry), must then leave exactly what the optimized run left; an interpreter
/// resuming there redoes the original's steps from that guard on.
pub fn runs_equivalent(
    original: &Trace,
    optimized: &Trace,
    inputs: &[RtValue],
    cfg: &RunConfig,
    a: &RunResult,
    b: &RunResult,
) -> Result<(), String> {
    let same_ids = !trace_ir::is_peeled_form(original, optimized);
    let err = match compare(a, b, same_ids) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let Outcome::GuardFailed { guard, resume_key, .. } = b.outcome else {
        return Err(err);
    };
    let opcode_of = |t: &Trace, hit: &dyn Fn(&trace_ir::GuardData) -> bool| {
        t.ops
            .iter()
            .find(|o| o.guard.and_then(|g| t.guards.get(g.index())).is_some_and(hit))
            .map(|o| o.opcode)
    };
    let fused = opcode_of(optimized, &|g| g.id == guard) == Some(Opcode::GuardNonnullClass)
        && opcode_of(original, &|g| g.resume_key == resume_key) == Some(Opcode::GuardNonnull);
    if !fused {
        return Err(err);
    }
    let stop = RunConfig {
        stop_at: Some(StopAt {
            loop_entries: b.loop_entries,
            resume_key,
        }),
        ..cfg.clone()
    };
    let stopped = run(original, inputs, &stop);
    compare(&stopped, b, same_ids)
        .map_err(|e| format!("{err}; and the original stopped where the optimized trace exited early: {e}"))
}
