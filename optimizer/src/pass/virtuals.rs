//! Allocation removal: allocations start virtual; field writes and reads on virtuals are
//! recorded and forwarded; a virtual that escapes is materialized just before the escape,
//! recursively and safe against cycles (see the module documentation of [`super`]).

use super::pure::Key;
use super::strings::string_setitem;
use super::{Pass, F_FRESH, F_NONNULL, MAX_VIRTUAL_ARRAY, NO_VIRT};
use smallvec::SmallVec;
use trace_ir::{Const, DescrRef, Kind, Op, Opcode, Value, VirtualField, VirtualKind};

/// A virtual object: an allocation not (yet) emitted, with the fields written so far.
#[derive(Clone, Debug)]
pub(super) struct Virtual {
    pub(super) kind: VirtualKind,
    pub(super) fields: Vec<(VirtualField, Value)>,
}

impl Virtual {
    /// The value recorded for field or item `at`, if any.
    pub(super) fn get(&self, at: VirtualField) -> Option<Value> {
        self.fields.iter().find(|(f, _)| *f == at).map(|x| x.1)
    }

    /// Record `v` as field or item `at`.
    pub(super) fn set(&mut self, at: VirtualField, v: Value) {
        match self.fields.iter_mut().find(|(f, _)| *f == at) {
            Some(slot) => slot.1 = v,
            None => self.fields.push((at, v)),
        }
    }
}

/// One frame of `materialize`'s explicit stack: the object, its recorded fields, the index
/// of the next field to write, and its kind.
pub(super) type MaterializeFrame = (Value, Vec<(VirtualField, Value)>, usize, VirtualKind);

impl<'a> Pass<'a> {
    pub(super) fn known_class(&self, v: Value) -> Option<i64> {
        let Some(o) = v.as_op() else {
            return self.v.const_classes.get(&v).copied();
        };
        let i = &self.v.info[o.index()];
        if i.virt != NO_VIRT {
            return self.virtual_class(i.virt);
        }
        i.class
    }

    pub(super) fn virtual_class(&self, id: u32) -> Option<i64> {
        match self.virtuals[id as usize].kind {
            VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr,
            } => self
                .descr(descr)
                .as_size()
                .map(|s| trace_ir::abi::default_class(s) as i64),
            _ => None,
        }
    }

    pub(super) fn alloc(&mut self, op: &Op, args: &[Value]) -> Value {
        let opc = op.opcode;
        let descr = op.descr.expect("verified: allocations have a descriptor");
        let kind = match opc {
            Opcode::New | Opcode::NewWithVtable => Some(VirtualKind::Struct { opcode: opc, descr }),
            _ => match self.const_i64(args[0]) {
                Some(n) if (0..=MAX_VIRTUAL_ARRAY).contains(&n) => Some(VirtualKind::Array {
                    opcode: opc,
                    descr,
                    len: n as u32,
                }),
                _ => None,
            },
        };
        if self.opts.virtuals {
            if let Some(kind) = kind {
                let r = self.push_arena(Op {
                    opcode: opc,
                    descr: Some(descr),
                    guard: None,
                    args: SmallVec::from_slice(args),
                });
                self.v.info[r.index()].virt = self.virtuals.len() as u32;
                self.virtuals.push(Virtual {
                    kind,
                    fields: Vec::new(),
                });
                return Value::op(r);
            }
        }
        let v = self.emit(Op {
            opcode: opc,
            descr: Some(descr),
            guard: None,
            args: SmallVec::from_slice(args),
        });
        self.after_alloc_emitted(v);
        v
    }

    /// Facts about an allocation just emitted (directly or by materialization).
    pub(super) fn after_alloc_emitted(&mut self, v: Value) {
        let o = v.as_op().unwrap();
        let op = &self.v.ops[o.index()];
        let (opc, descr) = (op.opcode, op.descr);
        let len = op.args.first().copied();
        self.v.info[o.index()].flags |= F_FRESH | F_NONNULL;
        if opc == Opcode::NewWithVtable {
            // the class `new_with_vtable` stores (the interpreter's definition)
            self.v.info[o.index()].class = descr
                .and_then(|d| self.descr(d).as_size())
                .map(|s| trace_ir::abi::default_class(s) as i64);
        }
        if matches!(opc, Opcode::NewArray | Opcode::NewArrayClear) && self.opts.cse {
            if let Some(len) = len {
                self.cse.pure.insert(Key::new(Opcode::ArraylenGc, &[v], descr), len);
            }
        }
        // (A string's length: `strlen`, `unicodelen` read it.)
        let strlen = match opc {
            Opcode::Newstr => Some(Opcode::Strlen),
            Opcode::Newunicode => Some(Opcode::Unicodelen),
            _ => None,
        };
        if let (Some(strlen), Some(len), true) = (strlen, len, self.opts.cse) {
            self.cse.pure.insert(Key::new(strlen, &[v], None), len);
        }
    }

    /// Materialize `v` if it is virtual: emit its allocation and its field writes, recursively
    /// (fields first, each object once, so cycles end).
    pub(super) fn force(&mut self, v: Value) {
        if !self.is_virtual(v) {
            return;
        }
        // An explicit stack instead of recursion, so long chains of virtuals cannot overflow
        // the thread's stack. Each frame: the object, its recorded fields, the next field.
        let mut stack: Vec<MaterializeFrame> = Vec::new();
        self.start_materializing(v, &mut stack);
        while let Some(top) = stack.last_mut() {
            let (obj, next, kind) = (top.0, top.2, top.3);
            let Some(&(f, val)) = top.1.get(next) else {
                stack.pop();
                continue;
            };
            let val = self.find(val);
            if self.is_virtual(val) {
                // the value first (fields before the store); cycles end because an object
                // stops being virtual when its allocation is emitted
                self.start_materializing(val, &mut stack);
                continue;
            }
            stack.last_mut().unwrap().2 += 1;
            // A new object's memory is zero: a zero field or item needs no write, when only
            // its own descriptor reads its bytes and it is mutable (the interpreter's model
            // of what calls do to memory the trace did not write goes by the view read, and
            // leaves immutable fields to what the trace wrote).
            let zero = self.const_val(val).is_some_and(|c| c.bits() == 0);
            match (f, kind) {
                (VirtualField::Field(d), _) => {
                    let immutable = self.descr(d).as_field().is_some_and(|f| f.immutable);
                    if !zero || immutable || !self.mem.layout.alone(d) {
                        self.emit(Op {
                            opcode: Opcode::SetfieldGc,
                            descr: Some(d),
                            guard: None,
                            args: SmallVec::from_slice(&[obj, val]),
                        });
                    }
                    if self.opts.heapcache && self.fits(d, val) {
                        self.mem.heap.remember_field(d, obj, val);
                    }
                }
                (VirtualField::Item(k), VirtualKind::Array { descr, .. }) => {
                    if !zero || !self.mem.layout.alone(descr) {
                        let idx = self.make_int(k as i64);
                        self.emit(Op {
                            opcode: Opcode::SetarrayitemGc,
                            descr: Some(descr),
                            guard: None,
                            args: SmallVec::from_slice(&[obj, idx, val]),
                        });
                    }
                    if self.opts.heapcache && self.fits(descr, val) {
                        self.mem.heap.remember_item(descr, k as i64, obj, val);
                    }
                }
                (VirtualField::Item(k), VirtualKind::Str { opcode, .. }) => {
                    let idx = self.make_int(k as i64);
                    self.emit(Op {
                        opcode: string_setitem(opcode),
                        descr: None,
                        guard: None,
                        args: SmallVec::from_slice(&[obj, idx, val]),
                    });
                }
                (VirtualField::Item(_), VirtualKind::Struct { .. }) => {
                    unreachable!("items are only recorded on arrays and strings")
                }
            }
        }
    }

    /// Emit the allocation of the virtual `v`, mark it non-virtual and push its fields.
    pub(super) fn start_materializing(&mut self, v: Value, stack: &mut Vec<MaterializeFrame>) {
        let id = self.virt_of(v).expect("only virtuals are materialized");
        let o = v.as_op().unwrap();
        self.v.info[o.index()].virt = NO_VIRT;
        self.counts.stats.virtuals_materialized += 1;
        self.v.order.push(o);
        self.after_alloc_emitted(v);
        let fields = std::mem::take(&mut self.virtuals[id as usize].fields);
        let kind = self.virtuals[id as usize].kind;
        stack.push((v, fields, 0, kind));
    }

    /// Whether field `d` of the struct virtual `id` can be tracked exactly (no overlap with
    /// another recorded field or with the class word of an instance).
    pub(super) fn virtual_field_ok(&self, id: u32, d: DescrRef) -> bool {
        let vo = &self.virtuals[id as usize];
        let VirtualKind::Struct { opcode, .. } = vo.kind else {
            return false;
        };
        let f = &self.mem.descr_facts[d.index()];
        if !f.is_field {
            return false;
        }
        if opcode == Opcode::NewWithVtable && f.offset < 8 {
            return false;
        }
        let overlapping = self.mem.layout.overlapping(d);
        !vo.fields
            .iter()
            .any(|(vf, _)| matches!(vf, VirtualField::Field(o) if overlapping.contains(o)))
    }

    /// `ll_arraycopy(src, dst, src_start, dst_start, length)` (`args`: the call's operands,
    /// the function first; `trace_ir::oopspec::is_array_copy`) between two virtual arrays of
    /// one descriptor, at constant positions within both: the items move between the virtuals
    /// (all read, then all written) and the call goes; whether it did.
    pub(super) fn virtual_array_copy(&mut self, args: &[Value]) -> bool {
        if !self.opts.virtuals {
            return false;
        }
        let (Some(s), Some(d)) = (self.virt_of(args[1]), self.virt_of(args[2])) else {
            return false;
        };
        let kind = |p: &Self, id: u32| match p.virtuals[id as usize].kind {
            VirtualKind::Array { descr, len, .. } => Some((descr, len as i64)),
            VirtualKind::Struct { .. } | VirtualKind::Str { .. } => None,
        };
        let (Some((sd, slen)), Some((dd, dlen))) = (kind(self, s), kind(self, d)) else {
            return false;
        };
        let [Some(ss), Some(ds), Some(n)] = [args[3], args[4], args[5]].map(|a| self.const_i64(a)) else {
            return false;
        };
        let within = |start: i64, len: i64| start >= 0 && n >= 0 && start.checked_add(n).is_some_and(|e| e <= len);
        if sd != dd || !within(ss, slen) || !within(ds, dlen) {
            return false;
        }
        let item_kind = self.descr(sd).as_array().map_or(Kind::Int, |a| a.kind);
        let zero = self.zero_of(item_kind);
        self.move_virtual_items(s, ss as u32, d, ds as u32, n as u32, Some(zero));
        true
    }

    /// Move items `src_start..src_start + n` of virtual `s` to `dst_start..` of virtual `d`
    /// (all read, then all written); an item `s` has not recorded becomes `missing`, or is
    /// left unrecorded in `d` when `missing` is `None`.
    pub(super) fn move_virtual_items(
        &mut self,
        s: u32,
        src_start: u32,
        d: u32,
        dst_start: u32,
        n: u32,
        missing: Option<Value>,
    ) {
        let moved: Vec<Option<Value>> = (0..n)
            .map(|k| {
                let v = self.virtuals[s as usize].get(VirtualField::Item(src_start + k));
                v.map(|v| self.find(v)).or(missing)
            })
            .collect();
        let dst = &mut self.virtuals[d as usize];
        for (k, v) in moved.into_iter().enumerate() {
            let at = VirtualField::Item(dst_start + k as u32);
            match v {
                Some(v) => dst.set(at, v),
                None => dst.fields.retain(|(f, _)| *f != at),
            }
        }
    }

    /// The constant index of a virtual array access, if the access can be tracked.
    pub(super) fn virtual_item(&self, id: u32, d: DescrRef, idx: Value) -> Option<u32> {
        let VirtualKind::Array { descr, len, .. } = self.virtuals[id as usize].kind else {
            return None;
        };
        if descr != d {
            return None;
        }
        let k = self.const_i64(idx)?;
        (0..len as i64).contains(&k).then_some(k as u32)
    }

    /// `virtual_ref(p, i)`: a virtual `JitVirtualRef` ([`trace_ir::abi::VirtualRefLayout`]) whose token is a
    /// `force_token` emitted here (dropped when nothing uses it) and whose `forced` is null.
    /// `p` is stored nowhere: it stays virtual when only the reference escapes.
    pub(super) fn virtual_ref(&mut self) -> Value {
        let [size, token, forced] = self.vref.expect("a pass over virtual references knows their layout");
        let t = self.force_token(true);
        let null = self.make_const(Const::Ref(0));
        let fields = vec![(VirtualField::Field(token), t), (VirtualField::Field(forced), null)];
        self.virtual_struct(Opcode::NewWithVtable, size, fields)
    }

    /// A new virtual struct (`opcode` `new` or `new_with_vtable`, size descriptor `descr`)
    /// whose fields hold `fields` (when [`crate::Options::virtuals`] is on).
    pub(super) fn virtual_struct(
        &mut self,
        opcode: Opcode,
        descr: DescrRef,
        fields: Vec<(VirtualField, Value)>,
    ) -> Value {
        let new = Op {
            opcode,
            descr: Some(descr),
            guard: None,
            args: SmallVec::new(),
        };
        let v = self.alloc(&new, &[]);
        let id = self.virt_of(v).expect("allocations start virtual");
        self.virtuals[id as usize].fields = fields;
        v
    }

    /// Materialize the values the fields of `v` (a virtual) hold.
    pub(super) fn force_fields(&mut self, v: Value) {
        let id = self.virt_of(v).expect("a virtual") as usize;
        let values: Vec<Value> = self.virtuals[id].fields.iter().map(|f| f.1).collect();
        for v in values {
            let v = self.find(v);
            self.force(v);
        }
    }

    /// The frame's `force_token`: one per trace (or per loop iteration, as CSE knows it),
    /// emitted where first asked for; `attached`: asked for by another op (a virtual
    /// reference), so not an input op of its own. An input `force_token` that finds it is
    /// removed by CSE.
    pub(super) fn force_token(&mut self, attached: bool) -> Value {
        let key = Key::new(Opcode::ForceToken, &[], None);
        if self.opts.cse {
            if let Some(t) = self.cse_get(&key) {
                if !attached {
                    self.removed(super::Reason::Cse);
                }
                return t;
            }
        }
        let t = self.emit(Op::new(Opcode::ForceToken, &[]));
        if attached {
            self.counts.attached.extend(t.as_op());
        }
        if self.opts.cse {
            self.cse.pure.insert(key, t);
        }
        t
    }

    /// `virtual_ref_finish(r, p)`: `forced` becomes `p` unless `p` is null, then the token
    /// null: field writes (on a virtual reference, its recorded fields). When whether `p` is
    /// null is not known, the op itself is emitted (its operands escape).
    pub(super) fn virtual_ref_finish(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        let [_, token, forced] = self.vref.expect("a pass over virtual references knows their layout");
        let (r, p) = (args[0], args[1]);
        let Some(p_null) = self.known_zero(p) else {
            return self.generic(op, args);
        };
        let null = self.make_const(Const::Ref(0));
        let writes = [(forced, p), (token, null)];
        let writes = if p_null { &writes[1..] } else { &writes[..] };
        let store = |d: DescrRef| Op {
            opcode: Opcode::SetfieldGc,
            descr: Some(d),
            guard: None,
            args: SmallVec::new(),
        };
        match self.virt_of(r) {
            Some(id) => {
                for &(d, v) in writes {
                    self.virtuals[id as usize].set(VirtualField::Field(d), v);
                }
                self.removed(super::Reason::VirtualAccess);
            }
            None => {
                for &(d, v) in writes {
                    self.setfield(&store(d), &[r, v]);
                }
            }
        }
        None
    }
}
