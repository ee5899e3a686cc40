//! Executing one bytecode instruction: the dispatch, array indexing, binary and unary operators.

use super::results::RuntimeError;
use super::values::type_name;
use super::Vm;
use crate::lang::bytecode::{Instr, Slot};
use crate::lang::heap::*;
use crate::lang::parser::{BinOp, UnOp};

impl Vm<'_> {
    /// Execute one instruction (not a loop header); `None` at the end of the program.
    pub(super) fn step(&mut self, pc: usize, instr: Instr) -> Result<Option<usize>, RuntimeError> {
        match instr {
            Instr::LoadConst { dst, k } => self.slots[dst as usize] = self.const_boxes[k as usize],
            Instr::Move { dst, src } => self.slots[dst as usize] = self.slots[src as usize],
            Instr::Binary { op, dst, a, b } => {
                let r = self.binary(pc, op, a, b)?;
                self.slots[dst as usize] = r;
            }
            Instr::Unary { op, dst, a } => {
                let r = self.unary(pc, op, a)?;
                self.slots[dst as usize] = r;
            }
            Instr::GetItem { dst, arr, idx } => {
                let (o, i) = self.index(pc, arr, idx)?;
                let v = self.heap.array_get(o, i);
                self.slots[dst as usize] = self.heap.new_int(v);
            }
            Instr::SetItem { arr, idx, val } => {
                let (o, i) = self.index(pc, arr, idx)?;
                if self.class(val) != INT_CLASS {
                    return Err(self.error(pc, format!("arrays hold ints, not {}", type_name(self.class(val)))));
                }
                let v = self.int(val);
                self.heap.array_set(o, i, v);
            }
            Instr::Call { dst, builtin, args, .. } => {
                let r = self.call(pc, builtin, args)?;
                self.slots[dst as usize] = r;
            }
            Instr::Print { arg, last } => {
                let s = self.format_value(self.slots[arg as usize]);
                self.output.push_str(&s);
                self.output.push(if last { '\n' } else { ' ' });
            }
            Instr::Jump { target } => return Ok(Some(target as usize)),
            Instr::JumpIfFalse { cond, target, .. } => {
                if !self.truthy(cond) {
                    return Ok(Some(target as usize));
                }
            }
            Instr::LoopHeader { .. } => unreachable!("handled by loop_header"),
            Instr::Halt => return Ok(None),
        }
        Ok(Some(pc + 1))
    }

    fn index(&self, pc: usize, arr: Slot, idx: Slot) -> Result<(u64, usize), RuntimeError> {
        if self.class(arr) != ARRAY_CLASS {
            return Err(self.error(
                pc,
                format!("cannot index a value of type {}", type_name(self.class(arr))),
            ));
        }
        if self.class(idx) != INT_CLASS {
            return Err(self.error(
                pc,
                format!("array index must be an int, not {}", type_name(self.class(idx))),
            ));
        }
        let o = self.slots[arr as usize];
        let i = self.int(idx);
        let len = self.heap.array_len(o);
        if i < 0 || i as u64 >= len as u64 {
            return Err(self.error(pc, format!("index {i} out of range for an array of length {len}")));
        }
        Ok((o, i as usize))
    }

    fn binary(&mut self, pc: usize, op: BinOp, a: Slot, b: Slot) -> Result<u64, RuntimeError> {
        let (ca, cb) = (self.class(a), self.class(b));
        if ca == INT_CLASS && cb == INT_CLASS && op != BinOp::Div {
            let (x, y) = (self.int(a), self.int(b));
            let r = match op {
                BinOp::Add => x.checked_add(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::Sub => x.checked_sub(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::Mul => x.checked_mul(y).ok_or_else(|| self.overflow(pc))?,
                BinOp::FloorDiv | BinOp::Mod => {
                    if y == 0 {
                        return Err(self.error(pc, "division by zero"));
                    }
                    if x == i64::MIN && y == -1 {
                        return Err(self.overflow(pc));
                    }
                    if op == BinOp::FloorDiv {
                        trace_ir::eval::py_div(x, y)
                    } else {
                        trace_ir::eval::py_mod(x, y)
                    }
                }
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl | BinOp::Shr => {
                    if !(0..64).contains(&y) {
                        return Err(self.error(pc, format!("shift amount {y} outside 0..63")));
                    }
                    if op == BinOp::Shr {
                        x >> y
                    } else {
                        let r = x << y;
                        if r >> y != x {
                            return Err(self.overflow(pc));
                        }
                        r
                    }
                }
                BinOp::Lt => (x < y) as i64,
                BinOp::Le => (x <= y) as i64,
                BinOp::Gt => (x > y) as i64,
                BinOp::Ge => (x >= y) as i64,
                BinOp::Eq => (x == y) as i64,
                BinOp::Ne => (x != y) as i64,
                BinOp::Div => unreachable!(),
            };
            return Ok(self.heap.new_int(r));
        }
        let (Some(x), Some(y)) = (self.num(a), self.num(b)) else {
            return Err(self.error(
                pc,
                format!(
                    "unsupported operand types for {op:?}: {} and {}",
                    type_name(ca),
                    type_name(cb)
                ),
            ));
        };
        let f = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => {
                if y == 0.0 {
                    return Err(self.error(pc, "division by zero"));
                }
                x / y
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                let r = match op {
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    BinOp::Ge => x >= y,
                    BinOp::Eq => x == y,
                    _ => x != y,
                };
                return Ok(self.heap.new_int(r as i64));
            }
            _ => return Err(self.error(pc, format!("{op:?} is not defined on floats"))),
        };
        Ok(self.heap.new_float(f))
    }

    fn unary(&mut self, pc: usize, op: UnOp, a: Slot) -> Result<u64, RuntimeError> {
        let c = self.class(a);
        match (op, c) {
            (UnOp::Neg, INT_CLASS) => {
                let r = self.int(a).checked_neg().ok_or_else(|| self.overflow(pc))?;
                Ok(self.heap.new_int(r))
            }
            (UnOp::Neg, FLOAT_CLASS) => {
                let f = -self.heap.float_value(self.slots[a as usize]);
                Ok(self.heap.new_float(f))
            }
            (UnOp::Invert, INT_CLASS) => {
                let r = !self.int(a);
                Ok(self.heap.new_int(r))
            }
            (UnOp::Not, _) => {
                let r = !self.truthy(a) as i64;
                Ok(self.heap.new_int(r))
            }
            _ => Err(self.error(pc, format!("bad operand type for unary {op:?}: {}", type_name(c)))),
        }
    }
}
