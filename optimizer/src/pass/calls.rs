//! Calls (those whose oopspec names a pure op become it; elidable and loop-invariant ones
//! CSE'd; their effects on the heap cache and the exception and invalidation knowledge) and
//! every other op without special treatment.

use super::pure::Key;
use super::{Pass, F_FRESH, F_NONNULL};
use crate::domain::IntBound;
use crate::Reason;
use smallvec::SmallVec;
use trace_ir::descr::string_char_size;
use trace_ir::oopspec::{is_array_copy, pure_call_opcode};
use trace_ir::{Aliasing, CallEffect, Kind, Op, OpFlags, Opcode, Value};

impl<'a> Pass<'a> {
    pub(super) fn call(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        use Opcode::*;
        let opc = op.opcode;
        let cd = op.descr.and_then(|d| self.input.descr(d).as_call());
        if let Some(pure) = cd.and_then(|cd| pure_call_opcode(opc, cd, args.len())) {
            if self.opts.oopspec {
                return Some(self.pure(pure, &args[1..], None, true));
            }
        }
        if cd.is_some_and(|cd| is_array_copy(opc, cd, args.len())) && self.virtual_array_copy(args) {
            self.removed(Reason::VirtualAccess);
            return None;
        }
        let effect = cd.map(|c| c.effect).unwrap_or(CallEffect::RandomEffects);
        let elidable = matches!(opc, CallPureI | CallPureR | CallPureF | CallPureN) && effect.is_elidable();
        let loopinv = matches!(
            opc,
            CallLoopinvariantI | CallLoopinvariantR | CallLoopinvariantF | CallLoopinvariantN
        );
        for &a in args {
            self.force(a);
        }
        let key = if self.opts.cse && (elidable || loopinv) {
            Some(Key::new(opc, args, op.descr))
        } else {
            None
        };
        // A call that changes nothing (elidable, loop-invariant) keeps no reference to what
        // it reaches and reads no mutable memory: stores of virtual objects stay delayed
        // across it (docs/memory-model.md).
        let changes_nothing = effect.changes_nothing(opc);
        if key.as_ref().map(|k| !self.cse.pure.contains_key(k)).unwrap_or(true) {
            if changes_nothing {
                self.flush_for_exit();
            } else {
                self.flush_writes();
            }
        }
        if let Some(k) = &key {
            if let Some(v) = self.cse_get(k) {
                self.removed(Reason::Cse);
                return Some(self.find(v));
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        let barrier = opc.has(OpFlags::BARRIER);
        if barrier || effect.may_write_heap() {
            if barrier {
                self.mem.heap.clear();
            } else {
                let facts = &self.mem.descr_facts;
                self.mem.heap.clear_mutable(|d| facts[d.index()].immutable);
            }
            self.effects.not_invalidated = false;
        }
        if barrier || effect.can_raise() || opc.has(OpFlags::CAN_RAISE) {
            self.effects.exc_clear = false;
        }
        if let Some(k) = key {
            self.cse.pure.insert(k, v);
        }
        (opc.result_kind() != Kind::Void).then_some(v)
    }

    /// `record_known_result(v, f, a...)` (a promise) for a function that changes nothing:
    /// a later `call_pure_*` or `call_loopinvariant_*` of `f(a...)` with the same descriptor
    /// is `v`. The hint goes (it emits nothing); another function's record stays as it is.
    pub(super) fn record_known_result(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        use Opcode::*;
        let changes_nothing = op
            .descr
            .and_then(|d| self.input.descr(d).as_call())
            .is_some_and(|cd| cd.effect.is_elidable() || cd.effect == CallEffect::LoopInvariant);
        if !changes_nothing || args.len() < 2 {
            return self.generic(op, args);
        }
        let calls = match self.kind_of(args[0]) {
            Kind::Int => [CallPureI, CallLoopinvariantI],
            Kind::Ref => [CallPureR, CallLoopinvariantR],
            Kind::Float => [CallPureF, CallLoopinvariantF],
            Kind::Void => return self.generic(op, args),
        };
        for opc in calls {
            self.cse.pure.insert(Key::new(opc, &args[1..], op.descr), args[0]);
        }
        self.removed(Reason::Hint);
        None
    }

    /// `cond_call(c, f, a...)` and `cond_call_value_*(v, f, a...)`: when `c` (or `v`) is
    /// known to be zero or not, the call is made unconditionally (`call_*(f, a...)`) or not
    /// at all (PyPy's `optimize_COND_CALL`), so a virtual argument of a call that is never
    /// made does not escape.
    pub(super) fn cond_call(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        use Opcode::*;
        let known = if args.len() >= 2 && self.opts.fold {
            self.known_zero(args[0])
        } else {
            None
        };
        let calls = match (op.opcode, known) {
            (_, None) => return self.call(op, args),
            (CondCallN, Some(zero)) => !zero,
            (_, Some(zero)) => zero,
        };
        if !calls {
            self.removed(Reason::CondCallKnown);
            return (op.opcode != CondCallN).then_some(args[0]);
        }
        let call = Op {
            opcode: op.opcode.unconditional_call().expect("a conditional call"),
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(&args[1..]),
        };
        self.call(&call, &args[1..])
    }

    /// Whether the integer or reference `v` is known to be zero (`Some(true)`), known not to
    /// be (`Some(false)`), or neither.
    pub(super) fn known_zero(&self, v: Value) -> Option<bool> {
        match self.kind_of(v) {
            Kind::Int => {
                let b = self.bound_of(v);
                if b.is_empty() {
                    None
                } else if b.get_constant() == Some(0) {
                    Some(true)
                } else {
                    (!b.contains_i64(0)).then_some(false)
                }
            }
            Kind::Ref if self.known_nonnull(v) => Some(false),
            Kind::Ref => self.const_val(v).map(|c| c.bits() == 0),
            _ => None,
        }
    }

    /// Any op without special treatment: its virtual operands escape; heap writes and
    /// barriers forget the heap. Delayed writes happen before it, unless it is a hint (a
    /// hint observes no memory: `enter_portal_frame` between two writes of a frame field
    /// leaves the first one dead) or, under type-based aliasing, a string op (it reads and
    /// writes only bytes that string ops wrote: no field or item the heap knows).
    pub(super) fn generic(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        let strings_only = self.input.aliasing == Aliasing::TypeBased && string_char_size(op.opcode).is_some();
        if !op.opcode.has(OpFlags::HINT) && !strings_only {
            self.flush_writes();
        }
        for &a in args {
            self.force(a);
        }
        let opc = op.opcode;
        let v = self.emit(Op {
            opcode: opc,
            descr: op.descr,
            guard: None,
            args: SmallVec::from_slice(args),
        });
        let f = opc.flags();
        if f.intersects(OpFlags::WRITES_HEAP | OpFlags::BARRIER) && !strings_only {
            self.mem.heap.clear();
        }
        if f.intersects(OpFlags::BARRIER | OpFlags::CAN_RAISE) || matches!(opc, Opcode::RestoreException) {
            self.effects.exc_clear = false;
        }
        if f.contains(OpFlags::BARRIER) {
            self.effects.not_invalidated = false;
        }
        if self.opts.intbounds && matches!(opc, Opcode::Strlen | Opcode::Unicodelen) {
            self.v.info[v.as_op().unwrap().index()].bound = IntBound::nonnegative();
        }
        if matches!(opc, Opcode::Newstr | Opcode::Newunicode) {
            self.v.info[v.as_op().unwrap().index()].flags |= F_FRESH | F_NONNULL;
        }
        (opc.result_kind() != Kind::Void).then_some(v)
    }
}
