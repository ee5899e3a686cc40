//! The validator: both sides, the path condition, the walk from sync point to sync point.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use trace_ir::abi::VirtualRefLayout;
use trace_ir::descr::Descr;
use trace_ir::{Kind, OpRef, Opcode, Trace, VirtualField, VirtualKind};
use z3::ast::{Bool, BV};

use super::abstraction::{Abstraction, HEAVY_OPS};
use super::equalities::Candidate;
use super::layout::{field_key, field_key_of, Layout};
use super::query::Claim;
use super::side::{struct_shape, Side, Sym};
use super::slice::Symbols;
use super::sync::{Event, Step};
use super::{unsupported, Config, Counterexample, Stats, R};

pub(super) struct Validator<'t> {
    pub(super) o: Side<'t>,
    pub(super) p: Side<'t>,
    /// The path condition: guards passed, original ops defined, hints.
    /// Each with whether it involves a multiplication or division.
    pub(super) facts: Vec<(Bool, bool)>,
    /// The concrete meaning of `facts[i]` once computed (see [`Abstraction`]).
    pub(super) concrete_facts: Vec<Bool>,
    /// The meaning of `facts[i]` in [`Mode::Partial`] once computed.
    ///
    /// [`Mode::Partial`]: super::abstraction::Mode::Partial
    pub(super) partial_facts: Vec<Bool>,
    pub(super) abs: Abstraction,
    /// Query statistics.
    pub(super) stats: Stats,
    /// Claims collected while a batch is open.
    pub(super) batch: Option<Vec<Claim>>,
    pub(super) cfg: Config,
    pub(super) unknown: Option<String>,
    pub(super) float_uf: bool,
    /// The first counterexample that depends on uninterpreted float operations, for a
    /// concrete confirmation ([`crate::replay`]).
    pub(super) float_witness: Option<Counterexample>,
    /// Whether objects are being compared in one of several alternatives
    /// ([`Validator::escaped_vs_tracked`]): no pairing by role there.
    pub(super) tentative: bool,
    /// The facts of the pairs made by role ([`Validator::try_pair`]).
    pub(super) pair_facts: Vec<Bool>,
    /// The addresses paired by role so far: (original's, optimized's).
    pub(super) pairs: Vec<(BV, BV)>,
    /// Whether Z3 could not decide whether a pairing by role was consistent (then a
    /// difference found is not a verdict).
    pub(super) pairing_undecided: bool,
    /// Values compared since the last [`Validator::learn_equalities`].
    pub(super) equal_candidates: Vec<Candidate>,
    /// The pairs of values already tried by [`Validator::learn_equalities`].
    pub(super) tried_equal: HashSet<(BV, BV)>,
    /// The symbols of the facts and claims seen ([`Validator::proved_by_slice`]).
    pub(super) symbols: Symbols,
    /// Which alignment of the sync points to use, in the order of the search (`align`).
    pub(super) alignment: usize,
    /// Whether the sync points were aligned by the search (rather than greedily).
    pub(super) aligned_by_search: bool,
    /// Whether there is no alignment number `alignment` (but one before it).
    pub(super) alignment_missing: bool,
}

impl<'t> Validator<'t> {
    pub(super) fn new(original: &'t Trace, optimized: &'t Trace, cfg: &Config) -> Validator<'t> {
        let mut keys = BTreeSet::new();
        for t in [original, optimized] {
            for r in t.op_refs() {
                if matches!(
                    t.op(r).opcode,
                    Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF
                ) {
                    keys.insert(field_key(t, r));
                }
            }
        }
        // The optimized trace reads what its loop body parameters carry, too.
        let carried: Vec<&Descr> = cfg
            .carried
            .iter()
            .map(|c| c.descr)
            .chain(cfg.carried_virtuals.iter().flat_map(|c| c.fields.iter().map(|f| f.0)))
            .filter_map(|d| optimized.descrs.get(d.index()))
            .collect();
        keys.extend(
            carried
                .iter()
                .filter(|d| matches!(d, Descr::Field(_)))
                .map(|d| field_key_of(d)),
        );
        let keys = Rc::new(keys.into_iter().collect::<Vec<_>>());
        let written = Rc::new(written_keys([original, optimized]));
        let layout = Rc::new(Layout::new([original, optimized], &carried));
        let consts: BTreeSet<u64> = [original, optimized]
            .iter()
            .flat_map(|t| t.consts.iter())
            .filter(|c| c.kind() == Kind::Ref && c.bits() != 0)
            .map(|c| c.bits())
            .collect();
        let consts = Rc::new(consts.into_iter().collect::<Vec<_>>());
        let mut o = Side::new(original, "original");
        let mut p = Side::new(optimized, "optimized");
        let zeros = Rc::new(RefCell::new(Vec::new()));
        for s in [&mut o, &mut p] {
            s.zeros = zeros.clone();
            s.read_keys = keys.clone();
            s.written_keys = written.clone();
            s.layout = layout.clone();
            s.consts = consts.clone();
        }
        Validator {
            o,
            p,
            facts: Vec::new(),
            concrete_facts: Vec::new(),
            partial_facts: Vec::new(),
            abs: Abstraction::new(cfg.abstract_heavy_ops),
            stats: Stats::default(),
            batch: None,
            cfg: cfg.clone(),
            unknown: None,
            float_uf: false,
            float_witness: None,
            tentative: false,
            pair_facts: Vec::new(),
            pairs: Vec::new(),
            pairing_undecided: false,
            equal_candidates: Vec::new(),
            tried_equal: HashSet::new(),
            symbols: Symbols::default(),
            alignment: 0,
            aligned_by_search: false,
            alignment_missing: false,
        }
    }

    /// Give both sides' inputs the same symbols (the traces must have the same number of
    /// inputs, of the same kinds), and start both walks after them.
    fn bind_inputs(&mut self) -> R<()> {
        let (ot, pt) = (self.o.trace, self.p.trace);
        if ot.num_inputs != pt.num_inputs {
            return unsupported(format!(
                "the traces have different numbers of inputs ({} and {})",
                ot.num_inputs, pt.num_inputs
            ));
        }
        for i in 0..ot.num_inputs {
            let (ko, kp) = (ot.ops[i].opcode.result_kind(), pt.ops[i].opcode.result_kind());
            if ko != kp {
                return unsupported(format!(
                    "input {i} has kind {ko:?} in the original and {kp:?} in the optimized trace"
                ));
            }
            let name = format!("{}{}", ko.prefix(), i);
            let s = Sym::Bv(BV::new_const(name, 64));
            self.o.vals[i] = Some(s.clone());
            self.p.vals[i] = Some(s);
        }
        self.o.pos = ot.num_inputs;
        self.p.pos = pt.num_inputs;
        Ok(())
    }

    /// Walk both traces from sync point to sync point, proving what each requires (see
    /// [`Validator::sync_points`]); a removed guard or conditional call is proven on the
    /// original alone.
    pub(super) fn run(&mut self) -> R<()> {
        self.bind_inputs()?;
        for step in self.sync_points()? {
            match step {
                Step::RemovedGuard(g, ro) => {
                    self.run_side_until(true, ro)?;
                    self.removed_guard(g, ro)?;
                    self.o.pos = ro.index() + 1;
                }
                Step::SkippedCall(ro) => {
                    self.run_side_until(true, ro)?;
                    self.skipped_call(ro)?;
                    self.o.pos = ro.index() + 1;
                }
                Step::CopiedArrays(ro) => {
                    self.run_side_until(true, ro)?;
                    self.copied_arrays(ro)?;
                    self.o.pos = ro.index() + 1;
                }
                Step::Pair(e, ro, rp) => {
                    self.run_side_until(true, ro)?;
                    self.run_side_until(false, rp)?;
                    match e {
                        Event::Guard(g) => self.sync_guard(g, ro, rp)?,
                        Event::Call(k) => self.sync_call(k, ro, rp)?,
                        Event::Label(k) => self.sync_label(k, ro, rp)?,
                        Event::Final => self.sync_final(ro, rp)?,
                    }
                    self.o.pos = ro.index() + 1;
                    self.p.pos = rp.index() + 1;
                }
            }
        }
        Ok(())
    }

    pub(super) fn side(&mut self, orig: bool) -> &mut Side<'t> {
        if orig {
            &mut self.o
        } else {
            &mut self.p
        }
    }

    /// Translate the ops of one side up to (not including) `stop`.
    pub(super) fn run_side_until(&mut self, orig: bool, stop: OpRef) -> R<()> {
        while self.side(orig).pos < stop.index() {
            let r = OpRef::new(self.side(orig).pos);
            let t = self.translate(orig, r)?;
            let heavy = {
                let s = self.side(orig);
                let op = s.trace.op(r);
                let h = HEAVY_OPS.contains(&op.opcode)
                    || op.args.iter().any(|a| a.as_op().is_some_and(|o| s.heavy[o.index()]));
                s.heavy[r.index()] = h;
                if op.opcode.is_ovf() {
                    s.ovf_heavy = h;
                }
                h
            };
            if let Some(f) = t.fact {
                self.assume(f, false);
            }
            if let Some(valid) = t.valid {
                if orig {
                    self.assume(valid, heavy);
                } else {
                    let opcode = self.p.trace.op(r).opcode;
                    self.prove(
                        &valid,
                        || format!("optimized op {r} ({opcode}) may be undefined (shift out of range or division by zero) where the original is defined"),
                        None,
                    )?;
                }
            }
            self.side(orig).pos += 1;
        }
        Ok(())
    }
}

/// By shape of struct (as [`LocalObj::shape`] names it), the field keys `traces` write into
/// new structs of that shape: `setfield_gc` on an allocation's result, the fields of virtual
/// structs in resume data, and a virtual reference's fields.
///
/// [`LocalObj::shape`]: super::side::LocalObj
fn written_keys(traces: [&Trace; 2]) -> HashMap<String, Vec<String>> {
    let mut by_shape: HashMap<String, BTreeSet<String>> = HashMap::new();
    let shape = struct_shape;
    for t in traces {
        for op in &t.ops {
            if op.opcode == Opcode::VirtualRef {
                let l = VirtualRefLayout::get();
                let keys = by_shape
                    .entry(shape(Opcode::NewWithVtable, &Descr::Size(l.size)))
                    .or_default();
                keys.insert(field_key_of(&Descr::Field(l.token)));
                keys.insert(field_key_of(&Descr::Field(l.forced)));
            }
            if op.opcode != Opcode::SetfieldGc {
                continue;
            }
            let (Some(d), Some(base)) = (op.descr, op.args[0].as_op()) else {
                continue;
            };
            let alloc = t.op(base);
            if let (Opcode::New | Opcode::NewWithVtable, Some(sd)) = (alloc.opcode, alloc.descr) {
                by_shape
                    .entry(shape(alloc.opcode, t.descr(sd)))
                    .or_default()
                    .insert(field_key_of(t.descr(d)));
            }
        }
        for g in &t.guards {
            for v in &g.virtuals {
                if let VirtualKind::Struct { opcode, descr } = v.kind {
                    let keys = by_shape.entry(shape(opcode, t.descr(descr))).or_default();
                    for (f, _) in &v.fields {
                        if let VirtualField::Field(d) = f {
                            keys.insert(field_key_of(t.descr(*d)));
                        }
                    }
                }
            }
        }
    }
    by_shape
        .into_iter()
        .map(|(s, keys)| (s, keys.into_iter().collect()))
        .collect()
}
