//! Guards: dropped when their condition is known, otherwise emitted with their resume data
//! (virtual objects described, not materialized) and learnt from (comparisons narrow their
//! operands by the domain's backward functions, `guard_value` forwards the value to the
//! constant, class and nullness are remembered).

use super::pure::{map_args, Key};
use super::{Pass, F_NONNULL, F_OVF_CHECKED, MAX_DEPTH};
use crate::alias::{Index, Loc};
use crate::domain::{Cmp, IntBound};
use crate::{OptError, Reason};
use smallvec::SmallVec;
use trace_ir::fxhash::FxHashMap;
use trace_ir::{
    Const, FailArg, GuardData, GuardRef, Kind, Op, OpFlags, OpRef, Opcode, ResumeWrite, Value, VirtualObject,
};

/// The resume data of the emitted guards and the scratch of building it.
#[derive(Default)]
pub(crate) struct Resume {
    /// Resume data of emitted guards, by `GuardRef`.
    pub guards: Vec<GuardData>,
    /// Scratch of `emit_guard`: virtual op -> index in the guard's resume data (empty between
    /// guards; kept only to reuse its allocation).
    pub memo: FxHashMap<OpRef, u32>,
    /// What is known about the exit words of each emitted guard, by `GuardRef`.
    pub facts: Vec<Vec<trace_ir::WordFacts>>,
    /// The known fields of exit words' objects at each emitted guard, by `GuardRef`.
    pub fields: Vec<Vec<trace_ir::FieldFact>>,
    /// Scratch of `resume_value`: virtuals whose description is pending.
    pub work: Vec<(OpRef, u32)>,
    /// Scratch of `emit_guard`: the virtual objects of the guard being emitted (moved out
    /// into an exactly sized vector, so the guard's data does not grow step by step).
    pub objects: Vec<VirtualObject>,
    /// Scratch of `resume_arg`: input virtual index -> output index, for the guard being
    /// emitted.
    pub in_memo: Vec<(u32, u32)>,
    /// Scratch of `emit_guard`: the facts of the guard's exit words.
    pub words: Vec<trace_ir::WordFacts>,
    /// While a `guard_true`/`guard_false` is emitted: its condition and the constant the
    /// condition has whenever the guard fails. Resume data names that constant instead of the
    /// condition, so the comparison is not kept alive only for the exit (the backend then
    /// fuses it into the guard's jump).
    pub exit_subst: Option<(Value, Value)>,
    /// Scratch of `field_facts`: per output op, the stamp of the last guard it was an exit
    /// word of and its first index there (a lookup without a search or a sort per guard).
    pub word_at: Vec<(u32, u32)>,
    /// The stamp of the guard `field_facts` last looked at (0: none yet).
    pub stamp: u32,
}

impl Clone for Resume {
    fn clone(&self) -> Resume {
        let mut r = Resume::default();
        r.clone_from(self);
        r
    }

    /// The resume data and facts of the emitted guards, keeping this value's allocations
    /// (the scratch tables are empty between guards and not copied).
    fn clone_from(&mut self, o: &Resume) {
        self.guards.clone_from(&o.guards);
        self.facts.clone_from(&o.facts);
        self.fields.clone_from(&o.fields);
        self.exit_subst = o.exit_subst;
    }
}

/// What passed guards established about effects, until an op undoes it.
#[derive(Clone, Default)]
pub(crate) struct Effects {
    /// No exception can be pending (a `guard_no_exception` passed since the last op that may
    /// raise).
    pub exc_clear: bool,
    /// A `guard_not_invalidated` passed since the last call.
    pub not_invalidated: bool,
    /// Object -> its `guard_nonnull` emitted since the last label, which a later
    /// `guard_class` may turn into `guard_nonnull_class` ([`crate::Options::guardfusion`]).
    pub nonnull_guards: FxHashMap<OpRef, OpRef>,
}

impl<'a> Pass<'a> {
    /// Emit the guard `op` (of the input) with operands `args`, translating its resume data.
    pub(super) fn emit_guard(&mut self, op: &Op, args: &[Value]) -> Value {
        let t = self.input;
        let gd = t.guard(op.guard.expect("verified: guards carry resume data"));
        for &a in args {
            self.force(a);
        }
        // (the objects the input's exit writes into exist)
        for w in &gd.writes {
            let obj = self.get(w.obj);
            self.force(obj);
        }
        // an exit observes the heap: delayed writes happen before it, except stores of
        // virtual objects, which its resume data performs (the objects stay virtual)
        self.flush_for_exit();
        // scratch tables kept in the pass between guards (no allocation per guard)
        let mut objects = std::mem::take(&mut self.resume.objects);
        objects.clear();
        let mut memo = std::mem::take(&mut self.resume.memo);
        memo.clear();
        let mut in_memo = std::mem::take(&mut self.resume.in_memo);
        in_memo.clear();
        let mut fail_args = Vec::with_capacity(gd.fail_args.len());
        for fa in &gd.fail_args {
            let out = self.resume_arg(*fa, gd, &mut objects, &mut memo, &mut in_memo);
            fail_args.push(out);
        }
        let mut writes = Vec::with_capacity(self.mem.pending.len());
        for k in 0..self.mem.pending.len() {
            let w = self.mem.pending[k];
            let value = self.find(w.val);
            let value = self.resume_value(value, &mut objects, &mut memo);
            let obj = self.find(w.obj);
            writes.push(ResumeWrite {
                obj: self.at_exit(obj),
                descr: w.loc.descr,
                index: match w.loc.index {
                    Index::Item(k) => Some(k as u32),
                    _ => None,
                },
                value,
            });
        }
        // the input's own exit writes come after the writes delayed before the guard
        for w in &gd.writes {
            let obj = self.get(w.obj);
            let value = self.resume_arg(w.value, gd, &mut objects, &mut memo, &mut in_memo);
            writes.push(ResumeWrite {
                obj: self.at_exit(obj),
                value,
                ..*w
            });
        }
        if !objects.is_empty() {
            self.counts.stats.guards_with_virtuals += 1;
        }
        let mut virtuals = Vec::with_capacity(objects.len());
        virtuals.append(&mut objects);
        self.resume.objects = objects;
        self.resume.memo = memo;
        self.resume.in_memo = in_memo;
        let g = GuardRef::new(self.resume.guards.len());
        let data = GuardData {
            id: gd.id,
            resume_key: gd.resume_key,
            fail_args,
            virtuals,
            writes,
        };
        // What holds whenever the guard fails: known before the guard learns from passing.
        let mut words = std::mem::take(&mut self.resume.words);
        words.clear();
        data.for_each_value(|v| words.push(self.word_facts(v)));
        self.resume.facts.push(words.as_slice().to_vec());
        self.resume.words = words;
        let fields = self.field_facts(&data);
        self.resume.fields.push(fields);
        self.resume.guards.push(data);
        self.emit(Op {
            opcode: op.opcode,
            descr: op.descr,
            guard: Some(g),
            args: SmallVec::from_slice(args),
        })
    }

    /// The fields of the guard's exit words' objects that the heap cache knows to hold a
    /// constant or an exit word, leaving out any field an exit write may touch (PyPy's
    /// `serialize_optheap` likewise skips lazy stores).
    fn field_facts(&mut self, data: &GuardData) -> Vec<trace_ir::FieldFact> {
        use trace_ir::{FieldFact, FieldValue};
        let mut facts = Vec::new();
        if !self.opts.heapcache || self.mem.heap.no_fields() {
            return facts;
        }
        // The first index of each exit word, by output op (stamped with this guard).
        let mut at = std::mem::take(&mut self.resume.word_at);
        at.resize(at.len().max(self.v.ops.len()), (0, 0));
        self.resume.stamp = self.resume.stamp.wrapping_add(1);
        if self.resume.stamp == 0 {
            at.fill((0, 0));
            self.resume.stamp = 1;
        }
        let stamp = self.resume.stamp;
        let mut k = 0u32;
        data.for_each_value(|v| {
            if let Some(o) = self.find(v).as_op() {
                if at[o.index()].0 != stamp {
                    at[o.index()] = (stamp, k);
                }
            }
            k += 1;
        });
        let word = |v: Value| {
            let o = v.as_op()?;
            let &(s, k) = at.get(o.index())?;
            (s == stamp).then_some(k as usize)
        };
        let layout = &self.mem.layout;
        let written = |d| {
            data.writes.iter().any(|w| {
                let loc = match w.index {
                    None => Loc::field(w.descr),
                    Some(i) => Loc::item(w.descr, Some(i64::from(i))),
                };
                layout.may_overlap(loc, Loc::field(d))
            })
        };
        let (heap, values) = (&self.mem.heap, &mut self.v);
        heap.for_each_field(|d, obj, val| {
            let obj = values.uf.find(obj);
            let Some(object) = word(obj) else {
                return;
            };
            let val = values.uf.find(val);
            let value = match val.as_const() {
                Some(c) => FieldValue::Const(values.consts.get(c)),
                None => match word(val) {
                    Some(k) => FieldValue::Word(k),
                    None => return,
                },
            };
            if !written(d) {
                facts.push(FieldFact {
                    object,
                    descr: d,
                    value,
                });
            }
        });
        self.resume.word_at = at;
        facts.sort_by_key(|f| (f.object, f.descr.index()));
        facts
    }

    pub(super) fn resume_arg(
        &mut self,
        fa: FailArg,
        gd: &GuardData,
        out: &mut Vec<VirtualObject>,
        memo: &mut FxHashMap<OpRef, u32>,
        in_memo: &mut Vec<(u32, u32)>,
    ) -> FailArg {
        match fa {
            FailArg::Hole => FailArg::Hole,
            FailArg::Value(v) => {
                let v = self.get(v);
                self.resume_value(v, out, memo)
            }
            FailArg::Virtual(i) => {
                if let Some(&(_, k)) = in_memo.iter().find(|m| m.0 == i) {
                    return FailArg::Virtual(k);
                }
                let k = out.len() as u32;
                in_memo.push((i, k));
                let src = &gd.virtuals[i as usize];
                out.push(VirtualObject {
                    kind: src.kind,
                    fields: Vec::new(),
                });
                let mut fields = Vec::with_capacity(src.fields.len());
                for &(f, fa) in &src.fields {
                    let x = self.resume_arg(fa, gd, out, memo, in_memo);
                    fields.push((f, x));
                }
                out[k as usize].fields = fields;
                FailArg::Virtual(k)
            }
        }
    }

    /// A working value in resume data: virtual objects are described, not materialized.
    /// Objects get their index when first seen and are described breadth first (no recursion,
    /// so long chains cannot overflow the stack); shared and cyclic structures stay so.
    pub(super) fn resume_value(
        &mut self,
        v: Value,
        out: &mut Vec<VirtualObject>,
        memo: &mut FxHashMap<OpRef, u32>,
    ) -> FailArg {
        if !self.is_virtual(v) {
            return FailArg::Value(self.at_exit(v));
        }
        let mut work = std::mem::take(&mut self.resume.work);
        work.clear();
        let first = self.virtual_index(v, out, memo, &mut work);
        while let Some((o, k)) = work.pop() {
            let id = self.v.info[o.index()].virt as usize;
            let n = self.virtuals[id].fields.len();
            let mut fields = Vec::with_capacity(n);
            for j in 0..n {
                let (f, val) = self.virtuals[id].fields[j];
                let val = self.find(val);
                let x = if self.is_virtual(val) {
                    self.virtual_index(val, out, memo, &mut work)
                } else {
                    FailArg::Value(self.at_exit(val))
                };
                fields.push((f, x));
            }
            out[k as usize].fields = fields;
        }
        self.resume.work = work;
        first
    }

    /// The value resume data names for the non-virtual `v` at the exit of the guard being
    /// emitted (see `Resume::exit_subst`).
    #[inline]
    pub(super) fn at_exit(&self, v: Value) -> Value {
        match self.resume.exit_subst {
            Some((c, k)) if c == v => k,
            _ => v,
        }
    }

    /// The resume-data index of the virtual `v` (allocating it and queueing its description
    /// on first sight).
    pub(super) fn virtual_index(
        &self,
        v: Value,
        out: &mut Vec<VirtualObject>,
        memo: &mut FxHashMap<OpRef, u32>,
        work: &mut Vec<(OpRef, u32)>,
    ) -> FailArg {
        let o = v.as_op().unwrap();
        if let Some(&k) = memo.get(&o) {
            return FailArg::Virtual(k);
        }
        let k = out.len() as u32;
        memo.insert(o, k);
        let id = self.v.info[o.index()].virt as usize;
        out.push(VirtualObject {
            kind: self.virtuals[id].kind,
            fields: Vec::new(),
        });
        work.push((o, k));
        FailArg::Virtual(k)
    }

    pub(super) fn guard(&mut self, i: usize, op: &Op, args: &[Value]) -> Result<Option<Value>, OptError> {
        use Opcode::*;
        let g = self.opts.guards;
        match op.opcode {
            GuardTrue | GuardFalse => return self.guard_bool(op, args),
            GuardValue => return self.guard_value(op, args),
            GuardNonnull => {
                let p = args[0];
                if g && self.known_nonnull(p) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                let emitted = self.emit_guard(op, args);
                if g {
                    self.set_nonnull(p);
                    if let (Some(o), Some(e), true) = (p.as_op(), emitted.as_op(), self.opts.guardfusion) {
                        self.effects.nonnull_guards.insert(o, e);
                    }
                }
            }
            GuardIsnull => {
                let p = args[0];
                if g && self.const_val(p).map(|c| c.bits() == 0).unwrap_or(false) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.force(p);
                self.emit_guard(op, args);
                if g && !p.is_const() && !self.known_nonnull(p) {
                    let null = self.make_const(Const::Ref(0));
                    self.make_equal(p, null);
                }
            }
            GuardClass | GuardNonnullClass => {
                let (p, cls) = (args[0], args[1]);
                let cls_c = self.const_i64(cls);
                if g && cls_c.is_some() && self.known_class(p) == cls_c && self.known_nonnull(p) {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                let fused = g && op.opcode == GuardClass && cls_c.is_some() && self.fuse_class_guard(p, cls);
                if fused {
                    self.removed(Reason::GuardFused);
                } else {
                    self.force(p);
                    self.emit_guard(op, args);
                }
                if g {
                    if let Some(o) = p.as_op() {
                        self.v.info[o.index()].flags |= F_NONNULL;
                        if cls_c.is_some() {
                            self.v.info[o.index()].class = cls_c;
                        }
                    } else if let Some(c) = cls_c {
                        self.v.const_classes.insert(p, c);
                    }
                }
            }
            GuardNoException => {
                if g && self.effects.exc_clear {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.emit_guard(op, args);
                self.effects.exc_clear = true;
            }
            GuardNotInvalidated => {
                if g && self.effects.not_invalidated {
                    self.removed(Reason::GuardKnown);
                    return Ok(None);
                }
                self.emit_guard(op, args);
                self.effects.not_invalidated = true;
            }
            GuardFutureCondition if g => {
                self.removed(Reason::GuardKnown);
                return Ok(None);
            }
            GuardNoOverflow | GuardOverflow => {
                return Err(OptError::Unsupported {
                    op: OpRef::new(i),
                    message: format!("{} does not follow an _ovf op", op.opcode),
                })
            }
            _ => {
                for &a in args {
                    self.force(a);
                }
                let v = self.emit_guard(op, args);
                if op.opcode == GuardException {
                    self.effects.exc_clear = true;
                }
                if op.opcode.result_kind() != Kind::Void {
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    }

    /// Turn the `guard_nonnull(p)` emitted since the last label into
    /// `guard_nonnull_class(p, cls)`, when there is one and `p`'s class is unknown
    /// ([`crate::Options::guardfusion`]); whether it did.
    fn fuse_class_guard(&mut self, p: Value, cls: Value) -> bool {
        if !self.opts.guardfusion || self.known_class(p).is_some() {
            return false;
        }
        let Some(&at) = p.as_op().and_then(|o| self.effects.nonnull_guards.get(&o)) else {
            return false;
        };
        let earlier = &self.v.ops[at.index()];
        if earlier.opcode != Opcode::GuardNonnull || self.find(earlier.args[0]) != p {
            return false;
        }
        let earlier = &mut self.v.ops[at.index()];
        earlier.opcode = Opcode::GuardNonnullClass;
        earlier.args.push(cls);
        self.effects.nonnull_guards.remove(&p.as_op().expect("checked above"));
        true
    }

    /// `guard_true`/`guard_false`: dropped when the condition is known, otherwise emitted
    /// (resume data names the condition's value at the exit) and learnt from.
    pub(super) fn guard_bool(&mut self, op: &Op, args: &[Value]) -> Result<Option<Value>, OptError> {
        let g = self.opts.guards;
        let want = op.opcode == Opcode::GuardTrue;
        let c = args[0];
        if g {
            let b = self.bound_of(c);
            let holds = if want {
                !b.contains_i64(0)
            } else {
                b.get_constant() == Some(0)
            };
            if holds && !b.is_empty() {
                self.removed(Reason::GuardKnown);
                return Ok(None);
            }
        }
        // When the guard fails, `c` is 0 (`guard_true`), or 1 (`guard_false` on a boolean).
        if g && !c.is_const() && self.kind_of(c) == Kind::Int {
            let b = self.bound_of(c);
            let at_exit = if want {
                Some(0)
            } else if !b.is_empty() && b.lower_i64() >= 0 && b.upper_i64() <= 1 {
                Some(1)
            } else {
                None
            };
            if let Some(k) = at_exit {
                let k = self.make_int(k);
                self.resume.exit_subst = Some((c, k));
            }
        }
        // `guard_true(int_is_true(x))` tests `x` itself, and `guard_true(int_is_zero(x))` is
        // `guard_false(x)` (the same for `guard_false`): the test op is left to the sweep.
        match self.bool_test_of(c).filter(|_| g) {
            Some((x, negate)) => {
                let opcode = if want != negate {
                    Opcode::GuardTrue
                } else {
                    Opcode::GuardFalse
                };
                let direct = Op {
                    opcode,
                    descr: op.descr,
                    guard: op.guard,
                    args: SmallVec::from_slice(&[x]),
                };
                self.emit_guard(&direct, &[x]);
            }
            None => {
                self.emit_guard(op, args);
            }
        }
        self.resume.exit_subst = None;
        if g {
            self.learn_bool(c, want, 0);
        }
        Ok(None)
    }

    /// `(x, false)` when `c` is `int_is_true(x)`, `(x, true)` when it is `int_is_zero(x)`.
    fn bool_test_of(&mut self, c: Value) -> Option<(Value, bool)> {
        let def = &self.v.ops[c.as_op()?.index()];
        let negate = match def.opcode {
            Opcode::IntIsTrue => false,
            Opcode::IntIsZero => true,
            _ => return None,
        };
        let x = def.args[0];
        Some((self.find(x), negate))
    }

    /// `guard_value(x, c)`: dropped when `x` is known to be `c`; otherwise emitted, and `x`
    /// is `c` from there on.
    pub(super) fn guard_value(&mut self, op: &Op, args: &[Value]) -> Result<Option<Value>, OptError> {
        let g = self.opts.guards;
        let (x, c) = (args[0], args[1]);
        if g {
            let known = x == c
                || match (self.const_val(x), self.const_val(c)) {
                    (Some(a), Some(b)) => a == b,
                    (None, Some(Const::Int(k))) => self.bound_of(x).get_constant() == Some(k),
                    _ => false,
                };
            if known {
                self.removed(Reason::GuardKnown);
                return Ok(None);
            }
        }
        self.force(x);
        self.force(c);
        self.emit_guard(op, args);
        if g && c.is_const() && !x.is_const() && self.kind_of(x) != Kind::Float {
            if let Some(Const::Ref(bits)) = self.const_val(c) {
                if bits != 0 {
                    self.set_nonnull(x);
                }
            }
            self.make_equal(x, c);
        }
        Ok(None)
    }

    /// Learn from a passed guard that `c` is non-zero (`truth`) or zero.
    pub(super) fn learn_bool(&mut self, c: Value, truth: bool, depth: u32) {
        let c = self.find(c);
        let Some(o) = c.as_op() else { return };
        if depth > MAX_DEPTH {
            return;
        }
        let def = self.v.ops[o.index()].clone();
        if self.kind_of(c) != Kind::Int {
            return;
        }
        if truth {
            if def.opcode.has(OpFlags::BOOL_RESULT) {
                let one = self.make_int(1);
                self.make_equal(c, one);
            } else {
                let mut b = self.bound_of(c);
                b.make_nonzero();
                self.narrow(c, b, depth);
            }
        } else {
            let zero = self.make_int(0);
            self.make_equal(c, zero);
            if !def.opcode.has(OpFlags::BOOL_RESULT) {
                // e.g. `guard_false(int_and(x, 7))`: x's low three bits are 0
                self.narrow_operands(o, &IntBound::from_i64(0), depth);
            }
        }
        if !def.opcode.is_pure() {
            return;
        }
        let args = map_args(&def.args, |a| self.v.uf.find(a));
        use Opcode::*;
        let cmp = match def.opcode {
            IntLt => Some(Cmp::Lt),
            IntLe => Some(Cmp::Le),
            IntGt => Some(Cmp::Gt),
            IntGe => Some(Cmp::Ge),
            IntEq => Some(Cmp::Eq),
            IntNe => Some(Cmp::Ne),
            UintLt => Some(Cmp::Ult),
            UintLe => Some(Cmp::Ule),
            UintGt => Some(Cmp::Ugt),
            UintGe => Some(Cmp::Uge),
            _ => None,
        };
        if let Some(cmp) = cmp {
            self.remember_cmp(def.opcode, args[0], args[1], truth);
            let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
            let (na, nb) = IntBound::learn_cmp(cmp, truth, &ba, &bb);
            let equal = (cmp == Cmp::Eq && truth) || (cmp == Cmp::Ne && !truth);
            if equal {
                for (x, k) in [(args[0], args[1]), (args[1], args[0])] {
                    if k.is_const() {
                        self.make_equal(x, k);
                        // e.g. `int_eq(int_and(x, 7), 0)`: x's low three bits are 0
                        if let (Some(xo), Some(kc)) = (x.as_op(), self.const_i64(k)) {
                            self.narrow_operands(xo, &IntBound::from_i64(kc), depth);
                        }
                        return;
                    }
                }
            }
            self.narrow(args[0], na, depth);
            self.narrow(args[1], nb, depth);
            return;
        }
        match def.opcode {
            IntIsTrue | IntIsZero => {
                let nonzero = (def.opcode == IntIsTrue) == truth;
                if self.opts.cse {
                    let zero = self.make_int(0);
                    let (t, f) = (self.make_int(nonzero as i64), self.make_int(!nonzero as i64));
                    self.cse.pure.insert(Key::new(IntIsTrue, &[args[0]], None), t);
                    self.cse.pure.insert(Key::new(IntIsZero, &[args[0]], None), f);
                    self.cse.pure.insert(Key::new(IntNe, &[args[0], zero], None), t);
                    self.cse.pure.insert(Key::new(IntEq, &[args[0], zero], None), f);
                }
                self.learn_bool(args[0], nonzero, depth + 1)
            }
            PtrEq | PtrNe | InstancePtrEq | InstancePtrNe => {
                let eq = matches!(def.opcode, PtrEq | InstancePtrEq) == truth;
                let null = |p: &Self, v: Value| p.const_val(v).map(|c| c.bits() == 0).unwrap_or(false);
                if eq {
                    if args[1].is_const() {
                        self.make_equal(args[0], args[1]);
                    } else if args[0].is_const() {
                        self.make_equal(args[1], args[0]);
                    }
                } else if null(self, args[1]) {
                    self.set_nonnull(args[0]);
                } else if null(self, args[0]) {
                    self.set_nonnull(args[1]);
                }
            }
            _ => {}
        }
    }

    /// After a guard established `opc(a, b) == truth` for a comparison: the same comparison,
    /// its negation and their mirrored forms are known constants from here on (CSE table).
    pub(super) fn remember_cmp(&mut self, opc: Opcode, a: Value, b: Value, truth: bool) {
        use Opcode::*;
        if !self.opts.cse {
            return;
        }
        let (neg, mirror) = match opc {
            IntLt => (IntGe, IntGt),
            IntLe => (IntGt, IntGe),
            IntGt => (IntLe, IntLt),
            IntGe => (IntLt, IntLe),
            IntEq => (IntNe, IntEq),
            IntNe => (IntEq, IntNe),
            UintLt => (UintGe, UintGt),
            UintLe => (UintGt, UintGe),
            UintGt => (UintLe, UintLt),
            UintGe => (UintLt, UintLe),
            _ => return,
        };
        let neg_mirror = match neg {
            IntLt => IntGt,
            IntLe => IntGe,
            IntGt => IntLt,
            IntGe => IntLe,
            UintLt => UintGt,
            UintLe => UintGe,
            UintGt => UintLt,
            UintGe => UintLe,
            other => other,
        };
        let (t, f) = (self.make_int(truth as i64), self.make_int(!truth as i64));
        self.cse.pure.insert(Key::new(opc, &[a, b], None), t);
        self.cse.pure.insert(Key::new(mirror, &[b, a], None), t);
        self.cse.pure.insert(Key::new(neg, &[a, b], None), f);
        self.cse.pure.insert(Key::new(neg_mirror, &[b, a], None), f);
    }

    /// Intersect the abstract value of `v` with `b` (knowledge from a passed guard), and
    /// propagate it backwards through the definition of `v` where the domain says it is sound.
    pub(super) fn narrow(&mut self, v: Value, b: IntBound<u64>, depth: u32) {
        let v = self.find(v);
        let Some(o) = v.as_op() else { return };
        if self.kind_of(v) != Kind::Int || !self.opts.intbounds {
            return;
        }
        let cur = self.v.info[o.index()].bound.clone();
        let n = cur.intersect(&b);
        if n.is_empty() || n == cur {
            return;
        }
        self.v.info[o.index()].bound = n.clone();
        if let Some(c) = n.get_constant() {
            let k = self.make_int(c);
            self.make_equal(v, k);
        }
        self.narrow_operands(o, &n, depth);
    }

    /// `o`'s value is known to lie in `n` (from a passed guard): narrow the operands of its
    /// definition where the domain's backward functions say it is sound.
    pub(super) fn narrow_operands(&mut self, o: OpRef, n: &IntBound<u64>, depth: u32) {
        if depth >= MAX_DEPTH || !self.opts.intbounds {
            return;
        }
        let n = n.clone();
        let def = self.v.ops[o.index()].clone();
        let args = map_args(&def.args, |a| self.v.uf.find(a));
        let checked = self.v.info[o.index()].flags & F_OVF_CHECKED != 0;
        use Opcode::*;
        match def.opcode {
            IntAdd | IntSub | IntAddOvf | IntSubOvf => {
                if matches!(def.opcode, IntAddOvf | IntSubOvf) && !checked {
                    return;
                }
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let (na, nb) = match def.opcode {
                    IntAdd => IntBound::backward_add(&ba, &bb, &n),
                    IntSub => IntBound::backward_sub(&ba, &bb, &n),
                    IntAddOvf => IntBound::backward_add_ovf(&ba, &bb, &n),
                    _ => IntBound::backward_sub_ovf(&ba, &bb, &n),
                };
                self.narrow(args[0], na, depth + 1);
                self.narrow(args[1], nb, depth + 1);
            }
            IntMulOvf if checked => {
                for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
                    if self.const_i64(y).map(|c| c > 0).unwrap_or(false) {
                        let na = IntBound::backward_mul_ovf_const(&self.bound_of(x), &self.bound_of(y), &n);
                        self.narrow(x, na, depth + 1);
                        break;
                    }
                }
            }
            IntNeg => {
                let na = IntBound::backward_neg(&self.bound_of(args[0]), &n);
                self.narrow(args[0], na, depth + 1);
            }
            IntInvert => {
                let na = IntBound::backward_invert(&self.bound_of(args[0]), &n);
                self.narrow(args[0], na, depth + 1);
            }
            IntAnd | IntOr | IntXor => {
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let (na, nb) = match def.opcode {
                    IntAnd => IntBound::backward_and(&ba, &bb, &n),
                    IntOr => IntBound::backward_or(&ba, &bb, &n),
                    _ => IntBound::backward_xor(&ba, &bb, &n),
                };
                self.narrow(args[0], na, depth + 1);
                self.narrow(args[1], nb, depth + 1);
            }
            _ => {}
        }
    }
}
