//! The encoding of a trace's integer ops as Z3 terms, and their bounded backward cones.

use std::collections::{BTreeSet, HashMap};

use trace_ir::{Const, Descr, Kind, OpFlags, Opcode, Trace, Value, ValueData};
use z3::ast::{Bool, BV};

use crate::semantics::{bv, no_overflow, op_semantics, INTEGER_OPS, WIDTH};

/// Lazily built Z3 terms of one trace.
pub(super) struct Enc<'t> {
    pub(super) t: &'t Trace,
    vars: HashMap<usize, BV>,
    defs: HashMap<usize, Option<(BV, Bool)>>,
    cones: HashMap<(usize, usize), Cone>,
}

/// A bounded backward cone: the ops defined in it and every op it touches.
#[derive(Clone, Debug, Default)]
pub(super) struct Cone {
    pub(super) defined: BTreeSet<usize>,
    pub(super) all: BTreeSet<usize>,
}

impl<'t> Enc<'t> {
    pub(super) fn new(t: &'t Trace) -> Self {
        Enc {
            t,
            vars: HashMap::new(),
            defs: HashMap::new(),
            cones: HashMap::new(),
        }
    }

    pub(super) fn var(&mut self, k: usize) -> BV {
        self.vars
            .entry(k)
            .or_insert_with(|| BV::new_const(format!("v{k}"), WIDTH))
            .clone()
    }

    pub(super) fn is_int(&self, k: usize) -> bool {
        self.t.ops[k].opcode.result_kind() == Kind::Int
    }

    /// The term of an integer operand (`None` for references and floats).
    pub(super) fn value(&mut self, v: Value) -> Option<BV> {
        match v.data() {
            ValueData::Op(o) => self.is_int(o.index()).then(|| self.var(o.index())),
            ValueData::Const(c) => match self.t.consts.get(c) {
                Const::Int(i) => Some(bv(i)),
                _ => None,
            },
        }
    }

    pub(super) fn definable(&self, k: usize) -> bool {
        let op = &self.t.ops[k];
        INTEGER_OPS.contains(&op.opcode) && op.args.iter().all(|&a| self.t.kind_of(a) == Kind::Int)
    }

    /// `(op(args), valid_if)` of a definable op.
    pub(super) fn def(&mut self, k: usize) -> Option<(BV, Bool)> {
        if let Some(d) = self.defs.get(&k) {
            return d.clone();
        }
        let d = if self.definable(k) {
            let args: Option<Vec<BV>> = self.t.ops[k].args.clone().iter().map(|&a| self.value(a)).collect();
            args.and_then(|a| op_semantics(self.t.ops[k].opcode, &a).ok())
        } else {
            None
        };
        self.defs.insert(k, d.clone());
        d
    }

    pub(super) fn cone(&mut self, root: usize, depth: usize, max: usize) -> Cone {
        if let Some(c) = self.cones.get(&(root, depth)) {
            return c.clone();
        }
        let mut c = Cone::default();
        let mut level = vec![root];
        c.all.insert(root);
        for d in 0..=depth {
            let mut next = Vec::new();
            for k in level {
                if d < depth && c.defined.len() < max && self.definable(k) && c.defined.insert(k) {
                    for &a in &self.t.ops[k].args {
                        if let Some(o) = a.as_op() {
                            if c.all.insert(o.index()) {
                                next.push(o.index());
                            }
                        }
                    }
                }
            }
            level = next;
        }
        self.cones.insert((root, depth), c.clone());
        c
    }

    /// The fact a passed guard establishes (`None` for other guards or non-integer ones).
    pub(super) fn guard_fact(&mut self, g: usize) -> Option<Bool> {
        let op = self.t.ops[g].clone();
        let c = self.value(*op.args.first()?)?;
        match op.opcode {
            Opcode::GuardTrue => Some(c.eq(bv(0)).not()),
            Opcode::GuardFalse => Some(c.eq(bv(0))),
            Opcode::GuardValue => Some(c.eq(self.value(op.args[1])?)),
            _ => None,
        }
    }

    /// The op a guard fact is about, if it is an op.
    pub(super) fn guard_subject(&self, g: usize) -> Option<usize> {
        let op = &self.t.ops[g];
        if !matches!(op.opcode, Opcode::GuardTrue | Opcode::GuardFalse | Opcode::GuardValue) {
            return None;
        }
        let o = op.args.first()?.as_op()?.index();
        if !self.is_int(o) || op.args.iter().any(|&a| self.t.kind_of(a) != Kind::Int) {
            return None;
        }
        Some(o)
    }

    pub(super) fn no_ovf(&mut self, k: usize) -> Option<Bool> {
        let op = self.t.ops[k].clone();
        let a = self.value(op.args[0])?;
        let b = self.value(op.args[1])?;
        no_overflow(op.opcode, &a, &b)
    }

    /// The range the optimizer also knows for a load: narrow integer fields and array items
    /// (by size and signedness; e.g. `<ArrayU 1>` gives 0..=255) and lengths (`strlen`,
    /// `unicodelen`, `arraylen_gc` are >= 0). With a short label for patterns.
    pub(super) fn load_range(&self, k: usize) -> Option<(i64, i64, String)> {
        let op = &self.t.ops[k];
        if op.opcode.result_kind() != Kind::Int || !op.opcode.has(OpFlags::READS_HEAP) || op.opcode.is_call() {
            return None;
        }
        if matches!(op.opcode, Opcode::Strlen | Opcode::Unicodelen | Opcode::ArraylenGc) {
            return Some((0, i64::MAX, ">= 0".into()));
        }
        let (size, signed) = match self.t.descr(op.descr?) {
            Descr::Field(f) if f.kind == Kind::Int => (f.size, f.signed),
            Descr::Array(a) if a.kind == Kind::Int => (a.item_size, a.signed),
            Descr::Interior(i) if i.field.kind == Kind::Int => (i.field.size, i.field.signed),
            _ => return None,
        };
        if !(1..8).contains(&size) {
            return None;
        }
        let bits = 8 * u32::from(size);
        Some(if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1, format!(": i{bits}"))
        } else {
            (0, (1i64 << bits) - 1, format!(": u{bits}"))
        })
    }

    /// Whether ovf op `k` is followed by a `guard_no_overflow` before position `limit`.
    pub(super) fn ovf_guarded_before(&self, k: usize, limit: usize) -> bool {
        self.t.ops[k].opcode.is_ovf() && k + 1 < limit && self.t.ops[k + 1].opcode == Opcode::GuardNoOverflow
    }
}
