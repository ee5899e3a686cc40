//! The builtin functions of the language: len, abs, sqrt, float, int, array, pair, fst, snd.

use super::results::RuntimeError;
use super::values::type_name;
use super::Vm;
use crate::lang::bytecode::{Builtin, Slot};
use crate::lang::heap::*;

impl Vm<'_> {
    pub(super) fn call(&mut self, pc: usize, builtin: Builtin, args: [Slot; 2]) -> Result<u64, RuntimeError> {
        let a = args[0];
        let obj = self.slots[a as usize];
        let c = self.class(a);
        let bad = |vm: &Self| vm.error(pc, format!("{builtin:?}: unsupported argument type {}", type_name(c)));
        Ok(match (builtin, c) {
            (Builtin::Len, ARRAY_CLASS) => {
                let n = self.heap.array_len(obj) as i64;
                self.heap.new_int(n)
            }
            (Builtin::Abs, INT_CLASS) => {
                let r = self.int(a).checked_abs().ok_or_else(|| self.overflow(pc))?;
                self.heap.new_int(r)
            }
            (Builtin::Abs, FLOAT_CLASS) => {
                let f = self.heap.float_value(obj).abs();
                self.heap.new_float(f)
            }
            (Builtin::Sqrt, INT_CLASS | FLOAT_CLASS) => {
                let x = self.num(a).expect("number");
                let r = crate::jit::recorder::sqrt_f64(x);
                self.heap.new_float(r)
            }
            (Builtin::Float, INT_CLASS) => {
                let x = self.int(a) as f64;
                self.heap.new_float(x)
            }
            (Builtin::Float, FLOAT_CLASS) | (Builtin::Int, INT_CLASS) => obj,
            (Builtin::Int, FLOAT_CLASS) => {
                let x = trace_ir::eval::float_to_int(self.heap.float_value(obj));
                self.heap.new_int(x)
            }
            (Builtin::Array, INT_CLASS) => {
                let n = self.int(a);
                if !(0..=1 << 24).contains(&n) {
                    return Err(self.error(pc, format!("array length {n} outside 0..2^24")));
                }
                self.heap.new_array(n as usize)
            }
            (Builtin::Pair, _) => {
                let second = self.slots[args[1] as usize];
                self.heap.new_pair(obj, second)
            }
            (Builtin::Fst, PAIR_CLASS) => self.heap.load(obj, PAIR_FIRST_OFFSET),
            (Builtin::Snd, PAIR_CLASS) => self.heap.load(obj, PAIR_SECOND_OFFSET),
            _ => return Err(bad(self)),
        })
    }
}
