//! Op counts by category (`int`, `guard`, `alloc`, `read`, `write`, `call`, `other`), shared
//! by `eval-pypy` and `view`: `int` is integer and pointer arithmetic, comparisons and
//! casts; `read` / `write` are heap reads and writes (not guards or calls); `call` is every
//! call family; `other` is labels, jumps, finish, floats and hints. Inputs, label
//! parameters and the promises that emit no code (`record_exact_class`, `assert_not_none`,
//! `record_int_range`, `record_int_bits`: facts a bridge starts from) are not counted.

use trace_ir::{Kind, OpFlags, Opcode, Trace};

/// The op categories, in display order.
pub const CATS: [&str; 7] = ["int", "guard", "alloc", "read", "write", "call", "other"];

/// The category of an op (an index into [`CATS`]); `None` for inputs and the promises
/// that emit no code.
pub fn category(op: Opcode) -> Option<usize> {
    if op.is_input()
        || matches!(
            op,
            Opcode::RecordExactClass
                | Opcode::AssertNotNone
                | Opcode::RecordIntRange
                | Opcode::RecordIntBits
                | Opcode::RecordKnownField
        )
    {
        return None;
    }
    let f = op.flags();
    Some(if f.contains(OpFlags::GUARD) {
        1
    } else if f.contains(OpFlags::ALLOC) {
        2
    } else if f.contains(OpFlags::CALL) {
        5
    } else if f.contains(OpFlags::WRITES_HEAP) {
        4
    } else if f.contains(OpFlags::READS_HEAP) {
        3
    } else if op.result_kind() == Kind::Int
        && (op.name().starts_with("int_")
            || op.name().starts_with("uint_")
            || op.name().starts_with("ptr_")
            || op.name().starts_with("instance_ptr_")
            || op.name().starts_with("cast_ptr")
            || op == Opcode::SameAsI)
        || op == Opcode::CastIntToPtr
        || op == Opcode::SameAsR
    {
        0
    } else {
        6
    })
}

/// Op counts: total and per category.
#[derive(Clone, Copy, Default)]
pub struct Counts {
    /// All ops (inputs and label parameters excepted).
    pub total: usize,
    /// Per category of [`CATS`].
    pub cat: [usize; 7],
}

impl Counts {
    /// The ops of `t` from op index `from` on.
    pub fn of(t: &Trace, from: usize) -> Counts {
        let mut c = Counts::default();
        for op in &t.ops[from..] {
            if let Some(k) = category(op.opcode) {
                c.total += 1;
                c.cat[k] += 1;
            }
        }
        c
    }
    /// The ops that run per iteration: those after the last `label` (the closing `jump`
    /// included), or the whole trace when it has no label.
    pub fn per_iteration(t: &Trace) -> Counts {
        Counts::of(t, t.last_label().map_or(0, |l| l.index() + 1))
    }

    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &Counts) {
        self.total += o.total;
        for i in 0..7 {
            self.cat[i] += o.cat[i];
        }
    }
}
