//! Overflow ops (`int_*_ovf` and the guard that follows): an op whose bounds rule out
//! overflow becomes the plain op and its `guard_no_overflow` disappears; after a passed
//! `guard_no_overflow` the result's exact range is known, and it is propagated backwards to
//! the operands only through the `_ovf` backward functions.

use super::pure::{map_args, Key};
use super::{Pass, F_OVF_CHECKED};
use crate::domain::IntBound;
use crate::fold::fold_ovf;
use crate::{OptError, Reason};
use trace_ir::{Op, OpRef, Opcode};

impl<'a> Pass<'a> {
    /// An `_ovf` op at input index `i` and its guard at `i + 1`.
    pub(super) fn ovf(&mut self, i: usize) -> Result<(), OptError> {
        let t = self.input;
        let op = &t.ops[i];
        let gop = t
            .ops
            .get(i + 1)
            .filter(|g| matches!(g.opcode, Opcode::GuardNoOverflow | Opcode::GuardOverflow));
        let Some(gop) = gop else {
            return Err(OptError::Unsupported {
                op: OpRef::new(i),
                message: format!("{} is not followed by an overflow guard", op.opcode),
            });
        };
        let no_ovf_guard = gop.opcode == Opcode::GuardNoOverflow;
        let opc = op.opcode;
        let args = map_args(&op.args, |a| self.get(a));
        let plain = opc.ovf_to_wrapping().expect("an _ovf op");
        // folding
        if self.opts.fold {
            if let (Some(a), Some(b)) = (self.const_i64(args[0]), self.const_i64(args[1])) {
                if let Some((r, overflowed)) = fold_ovf(opc, a, b) {
                    if overflowed != no_ovf_guard {
                        // the guard passes: op and guard go
                        self.removed(Reason::Folded);
                        self.removed_at(i + 1, Reason::Overflow);
                        self.v.map[i] = self.make_int(r);
                        return Ok(());
                    }
                    // otherwise the guard always fails: keep both
                }
            }
        }
        let (res, cannot_overflow) = match opc {
            Opcode::IntAddOvf => self.bound_of(args[0]).add_ovf(&self.bound_of(args[1])),
            Opcode::IntSubOvf => self.bound_of(args[0]).sub_ovf(&self.bound_of(args[1])),
            _ => self.bound_of(args[0]).mul_ovf(&self.bound_of(args[1])),
        };
        if self.opts.intbounds && self.opts.ovf && cannot_overflow && no_ovf_guard {
            self.removed_at(i + 1, Reason::Overflow);
            let v = self.pure(plain, &args, None, false);
            self.v.map[i] = v;
            return Ok(());
        }
        let key = Key::new(opc, &args, None);
        if self.opts.cse && no_ovf_guard {
            if let Some(&v) = self.cse.ovf.get(&key) {
                self.removed(Reason::Cse);
                self.removed_at(i + 1, Reason::Overflow);
                self.v.map[i] = self.find(v);
                return Ok(());
            }
        }
        // the guard must follow the op directly: delayed writes its exit does not perform go
        // first
        self.flush_for_exit();
        let v = self.emit(Op::new(opc, &args));
        // the guard's fail arguments may name the op's own result
        self.v.map[i] = v;
        self.cur = i + 1;
        self.emit_guard(gop, &[]);
        if no_ovf_guard {
            let o = v.as_op().unwrap();
            if self.opts.intbounds && !res.is_empty() {
                self.v.info[o.index()].bound = res;
            }
            self.v.info[o.index()].flags |= F_OVF_CHECKED;
            if self.opts.cse {
                self.cse.ovf.insert(key, v);
            }
            if self.opts.intbounds {
                let (ba, bb) = (self.bound_of(args[0]), self.bound_of(args[1]));
                let res = self.bound_of(v);
                match opc {
                    Opcode::IntAddOvf | Opcode::IntSubOvf => {
                        let (na, nb) = if opc == Opcode::IntAddOvf {
                            IntBound::backward_add_ovf(&ba, &bb, &res)
                        } else {
                            IntBound::backward_sub_ovf(&ba, &bb, &res)
                        };
                        self.narrow(args[0], na, 1);
                        self.narrow(args[1], nb, 1);
                    }
                    _ => {
                        for (x, y) in [(args[0], args[1]), (args[1], args[0])] {
                            if self.const_i64(y).map(|c| c > 0).unwrap_or(false) {
                                let na = IntBound::backward_mul_ovf_const(&self.bound_of(x), &self.bound_of(y), &res);
                                self.narrow(x, na, 1);
                                break;
                            }
                        }
                    }
                }
            }
        }
        // The result of an `_ovf` op is the wrapped result, whatever the flag: the plain op
        // computes the same value.
        if self.opts.cse {
            self.cse.pure.insert(Key::new(plain, &args, None), v);
            // `int_mul(x, 2**k)` is rewritten to `int_lshift(x, k)` by the rules before its CSE
            // lookup: record that form too
            if plain == Opcode::IntMul {
                for (x, c) in [(args[0], args[1]), (args[1], args[0])] {
                    if let Some(c) = self.const_i64(c).filter(|&c| c > 1 && c & (c - 1) == 0) {
                        let k = self.make_int(c.trailing_zeros() as i64);
                        self.cse.pure.insert(Key::new(Opcode::IntLshift, &[x, k], None), v);
                        break;
                    }
                }
            }
        }
        self.v.map[i] = v;
        Ok(())
    }
}
