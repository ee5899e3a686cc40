//! Facts about values that cross from one trace to another: what an optimizer knew about a
//! guard's exit words when it compiled the guard ([`GuardFacts`]: a bridge out of the guard
//! starts from them, as PyPy keeps them on a guard's resume descriptor), and what a peeled
//! loop's body assumes about its parameters ([`BodyEntry`]: a trace may jump into the body
//! instead of the loop's header only with operands that satisfy it).
//!
//! A fact enters a trace as a hint op ([`WordFacts::record`]: `record_int_range`,
//! `record_int_bits`, `record_exact_class`, `assert_not_none`; [`GuardFacts::record`] adds
//! `record_known_field` for the known fields of the exit words' objects). Hints are promises: the
//! interpreter reports a broken one as an invalid operation, the translation validator
//! assumes them on the original trace, the optimizer learns from them and the backend emits
//! nothing for them. So a wrong fact shows up in differential testing instead of being
//! silently relied on.

use crate::builder::TraceBuilder;
use crate::entity::{DescrRef, GuardId, Value};
use crate::opcode::Opcode;
use crate::trace::{Const, Trace};

/// What is known about one word (an integer, a reference or a float). Each part is optional;
/// the default knows nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordFacts {
    /// An integer in the signed range `[lo, hi]`.
    pub range: Option<(i64, i64)>,
    /// An integer whose bits under the mask (`.0`) are `.1`.
    pub bits: Option<(u64, u64)>,
    /// A reference to an object of exactly this class (so not null).
    pub class: Option<i64>,
    /// A reference that is not null.
    pub nonnull: bool,
}

impl WordFacts {
    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        *self == WordFacts::default()
    }

    /// Append to `b` the hints that state these facts about `x`.
    pub fn record(&self, x: Value, b: &mut TraceBuilder) {
        if let Some((lo, hi)) = self.range {
            let (lo, hi) = (b.const_int(lo), b.const_int(hi));
            b.op(Opcode::RecordIntRange, &[x, lo, hi]);
        }
        if let Some((mask, bits)) = self.bits {
            let (mask, bits) = (b.const_int(mask as i64), b.const_int(bits as i64));
            b.op(Opcode::RecordIntBits, &[x, mask, bits]);
        }
        if let Some(c) = self.class {
            let c = b.const_int(c);
            b.op(Opcode::RecordExactClass, &[x, c]);
        } else if self.nonnull {
            b.op(Opcode::AssertNotNone, &[x]);
        }
    }
}

/// What an optimizer knew at a guard of its output about the guard's exit words (the
/// bridge inputs of [`crate::tree::exit_kinds`], in that order) whenever the guard fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardFacts {
    /// The guard.
    pub guard: GuardId,
    /// One entry per exit word.
    pub words: Vec<WordFacts>,
    /// Fields of exit words' objects whose values are known (PyPy's bridges start from the
    /// heap fields their loop had read the same way). None of them is a field the exit's
    /// writes may touch, so each holds before and after the exit writes.
    pub fields: Vec<FieldFact>,
}

impl GuardFacts {
    /// Append to `b` the hints that state these facts about the exit words `inputs` (one
    /// value per word; a fact about a word beyond them is left out): each word's
    /// ([`WordFacts::record`]), then each known field as `record_known_field`, its descriptor
    /// copied from `parent`, the trace that holds the guard.
    pub fn record(&self, parent: &Trace, inputs: &[Value], b: &mut TraceBuilder) {
        for (f, &x) in self.words.iter().zip(inputs) {
            f.record(x, b);
        }
        for f in &self.fields {
            let Some(&obj) = inputs.get(f.object) else { continue };
            let value = match f.value {
                FieldValue::Word(k) => match inputs.get(k) {
                    Some(&v) => v,
                    None => continue,
                },
                FieldValue::Const(c) => b.constant(c),
            };
            let d = b.descr(parent.descr(f.descr).clone());
            b.op_with_descr(Opcode::RecordKnownField, &[obj, value], d);
        }
    }
}

/// A field of an exit word's object that holds a known value whenever the guard fails. It
/// enters a bridge as `record_known_field`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldFact {
    /// The exit word holding the object (an index into the guard's exit words).
    pub object: usize,
    /// The field descriptor, in the table of the trace that holds the guard.
    pub descr: DescrRef,
    /// What the field holds.
    pub value: FieldValue,
}

/// What a [`FieldFact`]'s field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue {
    /// The exit word at this index.
    Word(usize),
    /// A constant.
    Const(Const),
}

/// A peeled loop's body as a second way into its loop: the label `TargetToken(body)`
/// computes what the header `TargetToken(header)` computes when its operands satisfy
/// `params` (one entry per parameter), which the body was optimized to assume. A `jump` to
/// the header may go to the body instead when it provably passes such operands, and then
/// skips the preamble; when the body label carries loaded values, takes objects field by
/// field or carries results of pure ops, the jump passes those too, as the loop's own final
/// `jump` does (it redoes the loop's short preamble).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyEntry {
    /// The loop header's token.
    pub header: u64,
    /// The body label's token.
    pub body: u64,
    /// What the body assumes about each of its parameters (for a parameter in which
    /// `carried_virtuals` passes an object, nothing: a null placeholder goes there).
    pub params: Vec<WordFacts>,
    /// The loaded values the body label carries, their descriptors indexing `descrs`.
    pub carried: Vec<CarriedLoad>,
    /// The objects the body label takes field by field, their descriptors indexing
    /// `descrs`.
    pub carried_virtuals: Vec<CarriedVirtual>,
    /// The results of pure ops the body label carries.
    pub carried_pure: Vec<CarriedPure>,
    /// The descriptors `carried` and `carried_virtuals` name (the entering trace has a table
    /// of its own and finds them there by value).
    pub descrs: Vec<crate::Descr>,
}

impl BodyEntry {
    /// The number of operands a `jump` into the body passes: one per parameter, then one
    /// per carried load that is not a constant, then the objects' fields, then the results
    /// of pure ops.
    pub fn arity(&self) -> usize {
        let loads = self
            .carried
            .iter()
            .filter(|c| matches!(c.value, CarriedValue::Param(_)));
        self.params.len()
            + loads.count()
            + self.carried_virtuals.iter().map(|c| c.fields.len()).sum::<usize>()
            + self.carried_pure.len()
    }

    /// Set `carried` and `carried_virtuals` to the loop trace `t`'s (whose descriptors index
    /// `t`'s table), their descriptors copied into `descrs`.
    pub fn own_descrs(&mut self, t: &Trace, carried: &[CarriedLoad], virtuals: &[CarriedVirtual]) {
        let mut descrs = std::mem::take(&mut self.descrs);
        let mut own = |d: DescrRef| {
            let x = t.descr(d);
            let i = descrs.iter().position(|y| y == x).unwrap_or_else(|| {
                descrs.push(x.clone());
                descrs.len() - 1
            });
            DescrRef::new(i)
        };
        self.carried = carried
            .iter()
            .map(|c| CarriedLoad {
                descr: own(c.descr),
                ..c.clone()
            })
            .collect();
        self.carried_virtuals = virtuals
            .iter()
            .map(|c| CarriedVirtual {
                param: c.param,
                kind: match c.kind {
                    crate::VirtualKind::Struct { opcode, descr } => crate::VirtualKind::Struct {
                        opcode,
                        descr: own(descr),
                    },
                    crate::VirtualKind::Array { opcode, descr, len } => crate::VirtualKind::Array {
                        opcode,
                        descr: own(descr),
                        len,
                    },
                    s @ crate::VirtualKind::Str { .. } => s,
                },
                fields: c.fields.iter().map(|&(d, pos)| (own(d), pos)).collect(),
            })
            .collect();
        self.descrs = descrs;
    }
}

/// What a peeled loop's body label (the label the trace's final `jump` goes to) carries
/// about memory: at the label, reached from the preamble or from the final `jump`, the field
/// `descr` (or, with `index`, the array item `index` of the array descriptor `descr`) of
/// `base` holds `value`, a parameter of the label or a constant. The optimizer passes such a
/// value through the label instead of loading it again in every iteration (PyPy's short
/// preamble); the translation validator proves it on both ways in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarriedLoad {
    /// What the place holds at the label.
    pub value: CarriedValue,
    /// The object read.
    pub base: CarriedBase,
    /// The field descriptor, or the array descriptor with `index`.
    pub descr: DescrRef,
    /// The item's index, for an array item; `None` for a field.
    pub index: Option<i64>,
    /// What the body assumes about the value besides (its bounds, class, non-nullness):
    /// it holds on both ways in too.
    pub facts: WordFacts,
}

/// An object a peeled loop's body label takes field by field (PyPy's virtual state): the
/// object passed in the label's input parameter `param` is, wherever the label is reached
/// (the preamble's operands, the final `jump`'s), an allocation of `kind` made by the trace
/// that nothing else refers to, and its fields hold the label's parameters `fields` (a
/// field not listed is zero). The optimized trace allocates no such object per iteration:
/// it passes a null placeholder in `param` and the fields in their own parameters (after
/// the [`CarriedLoad`] parameters), and past the label the body has an object of that kind
/// with those fields, distinct from every other. The translation validator proves it on
/// both ways in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarriedVirtual {
    /// The label's input parameter the object is passed in.
    pub param: usize,
    /// The object's allocation: a struct's `new` or `new_with_vtable` and size descriptor.
    pub kind: crate::VirtualKind,
    /// Each field's descriptor and the position of the label parameter that holds it.
    pub fields: Vec<(DescrRef, usize)>,
}

/// The result of a pure op a peeled loop's body label carries (loop-invariant code motion
/// that a second way into the body can redo): wherever the label is reached, its parameter
/// `param` holds `opcode(args)` of the label's operands (input parameters the body passes
/// back unchanged, so the value is the same in every iteration) and has the `facts` the body
/// assumes of it. The preamble computes it once and passes it; the final `jump` passes the
/// parameter back; a trace entering the body computes it at its `jump`. Only ops defined on
/// every operand (no division by a variable, no shift by a variable amount) and without
/// descriptor, on integer or float operands and of such a result, are carried; their
/// parameters come last, after the objects' fields. The translation validator proves it on
/// both ways in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarriedPure {
    /// The label's parameter that holds the result.
    pub param: usize,
    /// The pure op.
    pub opcode: crate::Opcode,
    /// Its operands: the label's input parameters (by position) or constants.
    pub args: Vec<CarriedBase>,
    /// What the body assumes about the result.
    pub facts: WordFacts,
}

/// What a [`CarriedLoad`]'s place holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarriedValue {
    /// The label's parameter at this position (after the label's own parameters).
    Param(usize),
    /// This constant (on both ways in; the label has no parameter for it).
    Const(Const),
}

/// The object a [`CarriedLoad`] reads, or an operand of a [`CarriedPure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarriedBase {
    /// A parameter of the same label, by position (one before the carried parameter).
    Param(usize),
    /// A constant reference.
    Const(Const),
}
