//! Values a peeled loop carries through its body label (PyPy's short preamble): what the heap
//! cache knows when the preamble reaches the body label — fields and constant-index items of
//! the label's operands, of constants, and of such loaded values in turn — becomes extra
//! parameters of the label, so the body finds them in the heap cache instead of loading
//! them again in every iteration. The final jump passes what the body's heap cache knows of
//! the same places; a place it does not know there (or whose value lacks the facts the body
//! assumed), and one the body never reads, is reported, and [`super::run`] repeats the run
//! without it. Each carried parameter leaves the pass as a [`CarriedLoad`], which the
//! translation validator proves on both ways into the label.

use super::virtual_state::VirtualParam;
use super::Pass;
use smallvec::SmallVec;
use trace_ir::fxhash::{FxHashMap, FxHashSet};
use trace_ir::{CarriedBase, CarriedLoad, CarriedValue, Const, DescrRef, Kind, Op, OpRef, Opcode, Value, WordFacts};

/// At most this many carried parameters per loop.
const MAX_CARRIED: usize = 32;

/// Loads of loaded values are carried up to this depth.
const MAX_CHAIN: usize = 3;

/// A place the body label may carry: a root (a label operand or a constant) and the fields
/// or items read from it in turn. Stable from run to run (parameter positions are not).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Place {
    root: Root,
    steps: SmallVec<[(DescrRef, Option<i64>); 2]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Root {
    Param(usize),
    Const(Const),
}

/// One carried place.
#[derive(Clone)]
pub(crate) struct Carried {
    place: Place,
    /// The object read, as the output states it.
    base: CarriedBase,
    /// The label's parameter (a working value) or the constant the place holds; before the
    /// label is emitted, the preamble's value.
    pub(super) param: Value,
    /// What the body assumes about it.
    facts: WordFacts,
}

impl Carried {
    /// The place's descriptor and item index (`None` for a field): its last step.
    fn slot(&self) -> (DescrRef, Option<i64>) {
        *self.place.steps.last().expect("a place reads at least once")
    }
}

/// What the pass carries through the body label of a peeled loop.
#[derive(Default)]
pub(crate) struct Carry {
    /// The body label's input index; `None`: nothing is carried.
    pub label: Option<usize>,
    /// Places not to carry (they failed in an earlier run).
    pub excluded: FxHashSet<Place>,
    /// The body label's number of input parameters.
    pub(super) arity: usize,
    /// The carried parameters, in label order after the input parameters.
    carried: Vec<Carried>,
    /// Places that failed in this run: not known at the jump, or never read.
    pub failed: Vec<Place>,
    /// Label positions whose objects are not to be carried field by field (they failed in
    /// an earlier run).
    pub excluded_virtuals: FxHashSet<usize>,
    /// The objects carried field by field in this run ([`super::virtual_state`]).
    pub(super) virtuals: Vec<VirtualParam>,
    /// Label positions whose objects failed in this run: the final jump passes no such
    /// virtual object there.
    pub failed_virtuals: Vec<usize>,
}

impl Carry {
    /// Forget the state of a run (the label and exclusions stay).
    pub(super) fn reset(&mut self) {
        self.carried.clear();
        self.failed.clear();
        self.virtuals.clear();
        self.failed_virtuals.clear();
    }

    /// The number of label parameters carried loads take.
    pub(super) fn params(&self) -> usize {
        self.carried.iter().filter(|c| !c.param.is_const()).count()
    }
}

impl<'a> Pass<'a> {
    /// At the body label `i` (its operands `args`, forced): the places to carry, each with
    /// the value the preamble's heap cache holds for it (those not constant are appended to
    /// the label's operands).
    pub(super) fn carry_places(&mut self, i: usize, args: &[Value]) -> Vec<Carried> {
        let mut out = Vec::new();
        if self.carry.label != Some(i) || !self.opts.heapcache {
            return out;
        }
        let mut known: FxHashMap<Value, (Place, CarriedBase)> = FxHashMap::default();
        for (k, &a) in args.iter().enumerate() {
            let place = Place {
                root: Root::Param(k),
                steps: SmallVec::new(),
            };
            let a = self.find(a);
            known.entry(a).or_insert((place, CarriedBase::Param(k)));
        }
        // Only places the body reads (a field, or an item at a constant index) and that it
        // does not seem to clobber after its last access are worth trying: the others would
        // be dropped after a run.
        let read = self.body_reads(i);
        let mut entries = self.mem.heap.entries();
        entries.retain(|e| read.contains(&(e.0, e.1)));
        entries.sort_by_key(|e| (e.0.index(), e.1));
        let mut taken = vec![false; entries.len()];
        let mut params = 0;
        for _ in 0..MAX_CHAIN {
            for (e, &(d, index, obj, val)) in entries.iter().enumerate() {
                if taken[e] || params == MAX_CARRIED {
                    continue;
                }
                let (obj, val) = (self.find(obj), self.find(val));
                let (mut place, base) = match (known.get(&obj), self.const_val(obj)) {
                    (Some(k), _) => k.clone(),
                    (None, Some(c @ Const::Ref(_))) => (
                        Place {
                            root: Root::Const(c),
                            steps: SmallVec::new(),
                        },
                        CarriedBase::Const(c),
                    ),
                    _ => continue,
                };
                place.steps.push((d, index));
                taken[e] = true;
                if self.is_virtual(val) || self.carry.excluded.contains(&place) {
                    continue;
                }
                if self.kind_of(val) == Kind::Ref && !val.is_const() {
                    let at = args.len() + params;
                    known.entry(val).or_insert((place.clone(), CarriedBase::Param(at)));
                }
                params += usize::from(!val.is_const());
                out.push(Carried {
                    place,
                    base,
                    param: val,
                    facts: WordFacts::default(),
                });
            }
        }
        out
    }

    /// The fields and constant-index items (by descriptor) the input reads after its op `i`
    /// and, for a mutable one, accesses again after the last call or other op there that may
    /// write the heap: those the body's heap cache likely knows at the final jump. (A guess
    /// that only spares runs: the jump checks every place.)
    fn body_reads(&self, i: usize) -> FxHashSet<(DescrRef, Option<i64>)> {
        use Opcode::*;
        let t = self.input;
        let mut read = FxHashSet::default();
        let mut last_access: FxHashMap<(DescrRef, Option<i64>), usize> = FxHashMap::default();
        let mut last_clobber = 0;
        for (at, op) in t.ops.iter().enumerate().skip(i + 1) {
            let index = || match t.const_of(op.args[1]) {
                Some(Const::Int(k)) => Some(k),
                _ => None,
            };
            let place = match (op.opcode, op.descr) {
                (GetfieldGcI | GetfieldGcR | GetfieldGcF, Some(d)) => {
                    read.insert((d, None));
                    Some((d, None))
                }
                (SetfieldGc, Some(d)) => Some((d, None)),
                (GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF, Some(d)) => index().map(|k| {
                    read.insert((d, Some(k)));
                    (d, Some(k))
                }),
                (SetarrayitemGc, Some(d)) => index().map(|k| (d, Some(k))),
                (opc, descr) if opc.is_call() => {
                    let effect = descr
                        .and_then(|d| t.descr(d).as_call())
                        .map_or(trace_ir::CallEffect::RandomEffects, |c| c.effect);
                    if !effect.changes_nothing(opc) {
                        last_clobber = at;
                    }
                    None
                }
                (opc, _) if opc.has(trace_ir::OpFlags::BARRIER) => {
                    last_clobber = at;
                    None
                }
                _ => None,
            };
            if let Some(p) = place {
                last_access.insert(p, at);
            }
        }
        let facts = &self.mem.descr_facts;
        read.retain(|p| facts[p.0.index()].immutable || last_access.get(p).is_some_and(|&a| a > last_clobber));
        read
    }

    /// After the body label and its `arity` input parameters: the carried parameters, each
    /// with the facts of the value the preamble passes, in the heap cache from here on.
    pub(super) fn carry_params(&mut self, arity: usize, places: Vec<Carried>) {
        self.carry.reset();
        self.carry.arity = arity;
        for mut c in places {
            let val = c.param;
            if !val.is_const() {
                let opcode = Opcode::input_for(self.kind_of(val)).expect("a value kind");
                c.param = self.emit(Op::new(opcode, &[]));
                self.import_facts(c.param, val);
                c.facts = self.word_facts(c.param);
            }
            self.carry.carried.push(c);
        }
    }

    /// After the body label's caches were cleared: the carried places hold their parameters.
    pub(super) fn carry_remember(&mut self, label: OpRef) {
        let n = self.v.ops[label.index()].args.len();
        let params: Vec<Value> = (0..n).map(|k| self.label_param(label, k)).collect();
        for j in 0..self.carry.carried.len() {
            let c = &self.carry.carried[j];
            let ((descr, index), param) = (c.slot(), c.param);
            let obj = match c.base {
                CarriedBase::Param(k) => params[k],
                CarriedBase::Const(c) => self.make_const(c),
            };
            match index {
                None => self.mem.heap.remember_field(descr, obj, param),
                Some(i) => self.mem.heap.remember_item(descr, i, obj, param),
            }
        }
    }

    /// The working value of parameter `k` of the emitted label `label`.
    fn label_param(&self, label: OpRef, k: usize) -> Value {
        Value::op(OpRef::new(label.index() + 1 + k))
    }

    /// At the final `jump` (input op `i`), with operands `args` (forced), to the body label:
    /// the operands of its carried parameters, from the heap cache. A place the cache does
    /// not know (or whose value lacks the assumed facts) is reported failed and gets a
    /// placeholder: the run is then repeated without it.
    pub(super) fn carry_jump_operands(&mut self, i: usize, args: &[Value]) -> Vec<Value> {
        let n = self.carry.carried.len();
        if n == 0 || i + 1 != self.input.ops.len() {
            return Vec::new();
        }
        if args.len() != self.carry.arity {
            let failed = self.carry.carried.iter().map(|c| c.place.clone());
            self.carry.failed.extend(failed);
            return Vec::new();
        }
        // The operands by label position: the jump's, then the carried ones (`None`: failed).
        let mut at: Vec<Option<Value>> = args.iter().map(|&a| Some(self.find(a))).collect();
        let mut out = Vec::new();
        for j in 0..n {
            let c = self.carry.carried[j].clone();
            let base = match c.base {
                CarriedBase::Param(k) => at[k],
                CarriedBase::Const(k) => Some(self.make_const(k)),
            };
            let (descr, index) = c.slot();
            let known = base.and_then(|b| match index {
                None => self.mem.heap.field(descr, b),
                Some(i) => self.mem.heap.item(descr, i, b),
            });
            let ok = known.map(|v| self.find(v)).filter(|&v| {
                if c.param.is_const() {
                    v == c.param
                } else {
                    !self.is_virtual(v) && self.satisfies(v, &c.facts)
                }
            });
            if ok.is_none() {
                self.carry.failed.push(c.place.clone());
            }
            if !c.param.is_const() {
                at.push(ok);
                out.push(ok.unwrap_or_else(|| {
                    let kind = self.kind_of(c.param);
                    self.zero_of(kind)
                }));
            }
        }
        out
    }

    /// After the sweep marked the live ops: carried parameters that no live op but the final
    /// jump reads (and that no read one is loaded from) are reported, so the next run does
    /// not carry them.
    pub(super) fn carry_unused(&mut self) {
        let n = self.carry.carried.len();
        if n == 0 {
            return;
        }
        let jump = self.v.order.last().copied();
        let mut reads = Vec::new();
        for &r in &self.v.order {
            if Some(r) == jump || !self.sweep.live[r.index()] {
                continue;
            }
            self.v.ops[r.index()].for_each_value_read(&self.resume.guards, |v| reads.push(v));
        }
        let index: FxHashMap<Value, usize> = self
            .carry
            .carried
            .iter()
            .enumerate()
            .map(|(j, c)| (c.param, j))
            .collect();
        let mut used = vec![false; n];
        for v in reads {
            if let Some(&j) = index.get(&self.find(v)) {
                used[j] = true;
            }
        }
        // A place carried as a constant costs nothing; one carried in a parameter is kept
        // when read or when a read one is loaded from it.
        let position: FxHashMap<usize, usize> = self
            .carry
            .carried
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.param.is_const())
            .enumerate()
            .map(|(p, (j, _))| (self.carry.arity + p, j))
            .collect();
        for j in (0..n).rev() {
            let c = &self.carry.carried[j];
            if used[j] || c.param.is_const() {
                if let Some(&b) = match c.base {
                    CarriedBase::Param(k) => position.get(&k),
                    CarriedBase::Const(_) => None,
                } {
                    used[b] = true;
                }
            } else {
                let place = c.place.clone();
                self.carry.failed.push(place);
            }
        }
    }

    /// Whether the body label carries something (loads or objects field by field).
    pub(super) fn carries(&self) -> bool {
        !self.carry.carried.is_empty() || !self.carry.virtuals.is_empty()
    }

    /// The carried parameters as the output states them: each parameter's position after the
    /// label's input parameters.
    pub(super) fn carried_loads(&self) -> Vec<CarriedLoad> {
        let mut next = self.carry.arity;
        self.carry
            .carried
            .iter()
            .map(|c| CarriedLoad {
                value: match self.const_val(c.param) {
                    Some(k) => CarriedValue::Const(k),
                    None => {
                        next += 1;
                        CarriedValue::Param(next - 1)
                    }
                },
                base: c.base,
                descr: c.slot().0,
                index: c.slot().1,
                facts: c.facts.clone(),
            })
            .collect()
    }
}
