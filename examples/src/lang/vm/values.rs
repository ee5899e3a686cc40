//! Reading the boxed values in the VM's slots: class, int, number, truthiness, printed form.

use super::Vm;
use crate::lang::bytecode::Slot;
use crate::lang::heap::*;

/// The name of a class, for error messages.
pub(super) fn type_name(class: u64) -> &'static str {
    match class {
        INT_CLASS => "int",
        FLOAT_CLASS => "float",
        PAIR_CLASS => "pair",
        ARRAY_CLASS => "array",
        NONE_CLASS => "None",
        _ => "<corrupt object>",
    }
}

impl Vm<'_> {
    pub(super) fn class(&self, s: Slot) -> u64 {
        self.heap.class_of(self.slots[s as usize])
    }

    pub(super) fn int(&self, s: Slot) -> i64 {
        self.heap.int_value(self.slots[s as usize])
    }

    pub(super) fn num(&self, s: Slot) -> Option<f64> {
        let o = self.slots[s as usize];
        match self.heap.class_of(o) {
            INT_CLASS => Some(self.heap.int_value(o) as f64),
            FLOAT_CLASS => Some(self.heap.float_value(o)),
            _ => None,
        }
    }

    /// Format a value the way `print` does.
    pub fn format_value(&self, obj: u64) -> String {
        let h = &self.heap;
        match h.class_of(obj) {
            INT_CLASS => h.int_value(obj).to_string(),
            FLOAT_CLASS => format!("{:?}", h.float_value(obj)),
            NONE_CLASS => "None".into(),
            PAIR_CLASS => format!(
                "({}, {})",
                self.format_value(h.load(obj, PAIR_FIRST_OFFSET)),
                self.format_value(h.load(obj, PAIR_SECOND_OFFSET))
            ),
            ARRAY_CLASS => {
                let items: Vec<String> = (0..h.array_len(obj)).map(|i| h.array_get(obj, i).to_string()).collect();
                format!("[{}]", items.join(", "))
            }
            _ => "<corrupt object>".into(),
        }
    }

    pub(super) fn truthy(&self, s: Slot) -> bool {
        let o = self.slots[s as usize];
        match self.heap.class_of(o) {
            INT_CLASS => self.heap.int_value(o) != 0,
            FLOAT_CLASS => self.heap.float_value(o) != 0.0,
            NONE_CLASS => false,
            _ => true,
        }
    }
}
