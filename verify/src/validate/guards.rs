//! Guards: their conditions, the constants they pin, their results, their resume data.

use std::collections::{BTreeMap, HashMap};

use trace_ir::{FailArg, Kind, OpFlags, OpRef, Opcode, Value, VirtualField, VirtualKind};
use z3::ast::{Bool, BV};

use super::layout::field_key_of;
use super::side::{alloc_class, struct_shape, LocalObj, Side, Sym};
use super::terms::{bv, class_of, uf_bool, uf_bv, zero};
use super::translate::{narrow_to, string_items};
use super::validator::Validator;
use super::{unsupported, R};

impl<'t> Validator<'t> {
    /// Whether a guard's condition depends on a multiplication or division (facts that make
    /// Z3 slow; see [`Validator::prove`]).
    pub(super) fn guard_heavy(&mut self, orig: bool, r: OpRef) -> bool {
        let s = self.side(orig);
        let op = s.trace.op(r);
        (op.opcode.is_guard() && matches!(op.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow) && s.ovf_heavy)
            || op.args.iter().any(|a| a.as_op().is_some_and(|o| s.heavy[o.index()]))
    }

    pub(super) fn guard_cond(&mut self, orig: bool, r: OpRef) -> R<Bool> {
        let s = self.side(orig);
        let op = s.trace.op(r).clone();
        let gid = s.trace.guard_of(r).map(|g| g.id).expect("guard data");
        let arg = |s: &mut Side, i: usize| s.value(op.args[i]);
        Ok(match op.opcode {
            Opcode::GuardTrue => {
                let x = arg(s, 0)?;
                s.escape(&x).eq(zero()).not()
            }
            Opcode::GuardFalse => {
                let x = arg(s, 0)?;
                s.escape(&x).eq(zero())
            }
            Opcode::GuardValue => {
                let x = arg(s, 0)?;
                let c = arg(s, 1)?;
                if s.tracked(&x).is_some() || s.tracked(&c).is_some() {
                    Bool::from_bool(matches!((&x, &c), (Sym::Obj(a), Sym::Obj(b)) if a == b))
                } else {
                    s.escape(&x).eq(s.escape(&c))
                }
            }
            Opcode::GuardNoOverflow | Opcode::GuardOverflow => {
                let Some(f) = s.no_ovf.clone() else {
                    return unsupported(format!(
                        "{} trace: {} without a preceding overflow op",
                        s.tag, op.opcode
                    ));
                };
                if op.opcode == Opcode::GuardNoOverflow {
                    f
                } else {
                    f.not()
                }
            }
            Opcode::GuardNonnull | Opcode::GuardIsnull => {
                let x = arg(s, 0)?;
                let nonnull = if s.tracked(&x).is_some() {
                    Bool::from_bool(true)
                } else {
                    s.escape(&x).eq(zero()).not()
                };
                if op.opcode == Opcode::GuardNonnull {
                    nonnull
                } else {
                    nonnull.not()
                }
            }
            Opcode::GuardClass | Opcode::GuardNonnullClass => {
                let x = arg(s, 0)?;
                let c = arg(s, 1)?;
                let c = s.escape(&c);
                let (nonnull, class) = match s.tracked(&x) {
                    Some(id) => (
                        Bool::from_bool(true),
                        s.objs[id]
                            .class
                            .clone()
                            .unwrap_or_else(|| uf_bv("class_of_shape", &[bv(id as u64)])),
                    ),
                    None => {
                        let p = s.escape(&x);
                        let nonnull = p.eq(zero()).not();
                        if orig && op.opcode == Opcode::GuardClass {
                            // `guard_class` on null is undefined in the original.
                            self.facts.push((nonnull.clone(), false));
                        }
                        (nonnull, class_of(&p))
                    }
                };
                if op.opcode == Opcode::GuardClass {
                    class.eq(&c)
                } else {
                    Bool::and(&[nonnull, class.eq(&c)])
                }
            }
            Opcode::GuardGcType | Opcode::GuardSubclass | Opcode::GuardIsObject => {
                let x = arg(s, 0)?;
                let p = s.escape(&x);
                if orig {
                    // The interpreter rejects these guards on null: the original is
                    // defined only where the pointer is not null.
                    self.facts.push((p.eq(zero()).not(), false));
                }
                let s = self.side(orig);
                match op.opcode {
                    Opcode::GuardGcType => {
                        let c = arg(s, 1)?;
                        uf_bv("gc_type", &[p]).eq(s.escape(&c))
                    }
                    Opcode::GuardSubclass => {
                        let c = arg(s, 1)?;
                        uf_bool("subclass", &[class_of(&p), s.escape(&c)])
                    }
                    _ => uf_bool("is_object", &[p]),
                }
            }
            Opcode::GuardNoException => s.exc.not(),
            Opcode::GuardException => {
                let c = arg(s, 0)?;
                let c = s.escape(&c);
                Bool::and(&[
                    s.exc.clone(),
                    uf_bv("exc_class", &[BV::new_const(format!("excval_{}", s.calls), 64)]).eq(&c),
                ])
            }
            Opcode::GuardNotInvalidated => Bool::new_const("not_invalidated"),
            Opcode::GuardNotForced | Opcode::GuardNotForced2 => s.not_forced.clone(),
            Opcode::GuardFutureCondition => Bool::from_bool(true),
            other => return unsupported(format!("guard {other} ({gid}) is not modelled")),
        })
    }

    /// After a passed guard that pins an integer to a constant (`guard_value(x, C)`,
    /// `guard_true(int_eq(x, C))`, `guard_false(int_ne(x, C))`, `guard_false(x)`,
    /// `guard_true(x)` of a comparison), later ops of that side use the constant for `x`, as
    /// the optimizer does. Sound: on the path past the guard `x` equals the constant. It keeps
    /// terms small and multiplications and divisions by `x` cheap (by a constant).
    pub(super) fn learn_constant(&mut self, orig: bool, r: OpRef) {
        let s = self.side(orig);
        let trace = s.trace;
        let op = trace.op(r);
        let is_const = |v: Value| v.as_op().is_none();
        let (x, c): (Value, Option<Value>) = match op.opcode {
            Opcode::GuardValue => (op.args[0], Some(op.args[1])),
            Opcode::GuardTrue | Opcode::GuardFalse => {
                let x = op.args[0];
                let Some(xr) = x.as_op() else { return };
                let xop = trace.op(xr);
                let (eq, ne) = (xop.opcode == Opcode::IntEq, xop.opcode == Opcode::IntNe);
                let pinned = if (eq && op.opcode == Opcode::GuardTrue) || (ne && op.opcode == Opcode::GuardFalse) {
                    match (is_const(xop.args[0]), is_const(xop.args[1])) {
                        (false, true) => Some((xop.args[0], xop.args[1])),
                        (true, false) => Some((xop.args[1], xop.args[0])),
                        _ => None,
                    }
                } else {
                    None
                };
                if let Some((y, c)) = pinned {
                    self.pin(orig, y, c);
                }
                // The guarded value itself: 0 past guard_false, 1 past guard_true of a
                // comparison.
                let s = self.side(orig);
                let boolean =
                    xop.opcode.flags().contains(OpFlags::BOOL_RESULT) && xop.opcode.result_kind() == Kind::Int;
                if op.opcode == Opcode::GuardFalse {
                    if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
                        s.vals[xr.index()] = Some(Sym::Bv(zero()));
                    }
                } else if boolean {
                    if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
                        s.vals[xr.index()] = Some(Sym::Bv(bv(1)));
                    }
                }
                return;
            }
            _ => return,
        };
        if let Some(c) = c {
            if is_const(c) {
                self.pin(orig, x, c);
            }
        }
    }

    /// Use constant `c` for op `x` from now on (see [`Validator::learn_constant`]).
    pub(super) fn pin(&mut self, orig: bool, x: Value, c: Value) {
        let s = self.side(orig);
        let Some(xr) = x.as_op() else { return };
        if s.trace.kind_of(x) != Kind::Int {
            return;
        }
        let Ok(Sym::Bv(cv)) = s.value(c) else { return };
        if let Some(Sym::Bv(_)) = &s.vals[xr.index()] {
            s.vals[xr.index()] = Some(Sym::Bv(cv));
        }
    }

    /// Give a guard with a result (`guard_exception`) its value, shared by both sides
    /// (named after the guard id).
    pub(super) fn guard_result(&mut self, orig: bool, r: OpRef) {
        let s = self.side(orig);
        let op = s.trace.op(r);
        if op.opcode.result_kind() != Kind::Void {
            let id = s.trace.guard_of(r).map(|g| g.id.0).unwrap_or(0);
            s.vals[r.index()] = Some(Sym::Bv(BV::new_const(format!("guard_result{id}"), 64)));
        }
    }

    pub(super) fn fail_arg(
        &mut self,
        orig: bool,
        g: &trace_ir::GuardData,
        fa: &FailArg,
        memo: &mut HashMap<u32, Sym>,
    ) -> R<Sym> {
        match fa {
            FailArg::Value(v) => self.side(orig).value(*v),
            FailArg::Hole => Ok(Sym::Bv(zero())),
            FailArg::Virtual(i) => {
                if let Some(s) = memo.get(i) {
                    return Ok(s.clone());
                }
                let Some(vo) = g.virtuals.get(*i as usize) else {
                    return unsupported(format!("virtual {i} out of range"));
                };
                let s = self.side(orig);
                let trace = s.trace;
                let (shape, class, len) = match vo.kind {
                    VirtualKind::Struct { opcode, descr } => {
                        let sd = trace.descr(descr);
                        let class = alloc_class(opcode, Some(sd));
                        (struct_shape(opcode, sd), class, None)
                    }
                    VirtualKind::Array { opcode, descr, len } => {
                        let _ = opcode;
                        (format!("array:{:?}", trace.descr(descr)), None, Some(bv(len as u64)))
                    }
                    VirtualKind::Str { opcode, len } => (opcode.name().to_string(), None, Some(bv(len as u64))),
                };
                let id_sym = s.new_obj(LocalObj {
                    shape,
                    class,
                    len,
                    fields: BTreeMap::new(),
                    item_of: BTreeMap::new(),
                    addr: None,
                    dead: false,
                });
                let Sym::Obj(id) = id_sym else { unreachable!() };
                memo.insert(*i, id_sym.clone());
                for (field, val) in &vo.fields {
                    let v = self.fail_arg(orig, g, val, memo)?;
                    let s = self.side(orig);
                    let key = match (field, vo.kind) {
                        (VirtualField::Field(d), _) => field_key_of(trace.descr(*d)),
                        (VirtualField::Item(ix), VirtualKind::Array { descr, .. }) => {
                            let akey = format!("{:?}", trace.descr(descr));
                            let key = format!("item:{akey}#{ix}");
                            s.objs[id].item_of.insert(key.clone(), (akey, *ix));
                            key
                        }
                        (VirtualField::Item(ix), VirtualKind::Str { opcode, .. }) => {
                            let (akey, width) = string_items(opcode);
                            let v = match v {
                                Sym::Bv(b) => Sym::Bv(narrow_to(b, width, false)),
                                Sym::Obj(_) => return unsupported("a reference as a character of a string virtual"),
                            };
                            s.store_item(id, akey, *ix, v);
                            continue;
                        }
                        (VirtualField::Item(_), _) => return unsupported("array item of a struct virtual"),
                    };
                    s.objs[id].fields.insert(key, v);
                }
                Ok(id_sym)
            }
        }
    }
}
