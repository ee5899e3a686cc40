//! The trace verifier, run after parsing, building and every optimizer pass (in tests).
//!
//! Invariants checked:
//! 1. the first `num_inputs` ops are inputs; other input ops appear only as the parameters
//!    right after a `label` (one per label operand, of the operand's kind);
//! 2. every operand is defined before it is used (SSA), is not the result of a void op, and
//!    every constant exists in the pool;
//! 3. arity and operand kinds agree with the opcode table (`guard_value`'s two operands have
//!    one kind); a load returns, and a store takes, a value of its descriptor's kind;
//! 4. an op has a descriptor exactly when the table asks for one, of the right kind; the
//!    descriptor table holds no two equal descriptors (a descriptor's identity is its index);
//! 5. guards, and only guards, carry resume data; guard ids are unique; fail arguments are
//!    defined before the guard; virtual references are in range;
//! 6. an `_ovf` op is immediately followed by `guard_no_overflow` or `guard_overflow`, and
//!    those guards follow an `_ovf` op;
//! 7. the trace ends with `jump` or `finish` and has no other final op; a `jump` to a label
//!    of this trace passes one value of the right kind per label parameter.

mod quick;
#[cfg(test)]
mod tests;

use crate::descr::Descr;
use crate::entity::{GuardId, OpRef, Value, ValueData};
use crate::fxhash::FxHasher;
use crate::opcode::{DescrKind, Kind, OpFlags, Opcode};
use crate::trace::{FailArg, Trace};
use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasherDefault;

/// A set hashed with [`FxHasher`] (the keys are small and not attacker-chosen).
type FxHashSet<T> = HashSet<T, BuildHasherDefault<FxHasher>>;

/// A broken invariant: which op, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The offending op, if the problem is local to one.
    pub op: Option<OpRef>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Some(op) => write!(f, "at {}: {}", op, self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for VerifyError {}

fn err<T>(op: Option<OpRef>, message: String) -> Result<T, VerifyError> {
    Err(VerifyError { op, message })
}

/// Which op a `jump` goes to: a label of this trace (by index), the trace start, or
/// somewhere outside the trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum JumpTarget {
    /// The label op at this position.
    Label(OpRef),
    /// The trace start (its inputs are the parameters).
    Start,
    /// Another compiled loop (PyPy's `<LoopN>` with N >= 0): leaving this trace.
    External,
}

/// Resolve the target of the `jump` at `jump` (its descriptor: `TargetToken(n)` names a label,
/// `<Loop-1>` or none means the last label or the start, `<LoopN>` is external).
pub fn jump_target(trace: &Trace, jump: OpRef) -> JumpTarget {
    let op = trace.op(jump);
    match op.descr.map(|d| trace.descr(d)) {
        Some(Descr::Target(t)) => {
            for (i, other) in trace.ops.iter().enumerate() {
                if other.opcode == Opcode::Label && other.descr.map(|d| trace.descr(d)) == Some(&Descr::Target(*t)) {
                    return JumpTarget::Label(OpRef::new(i));
                }
            }
            JumpTarget::External
        }
        Some(Descr::Loop(n)) if *n >= 0 => JumpTarget::External,
        _ => match trace.last_label() {
            Some(l) => JumpTarget::Label(l),
            None => JumpTarget::Start,
        },
    }
}

/// `what` names the value in the error message (formatted only when there is one).
fn check_value(trace: &Trace, at: OpRef, v: Value, what: &dyn fmt::Display) -> Result<Kind, VerifyError> {
    match v.data() {
        ValueData::Op(o) => {
            if o.index() >= at.index() {
                return err(Some(at), format!("{what} {o} is used before it is defined"));
            }
            let k = trace.op(o).opcode.result_kind();
            if k == Kind::Void {
                return err(Some(at), format!("{what} {o} ({}) has no value", trace.op(o).opcode));
            }
            Ok(k)
        }
        ValueData::Const(c) => {
            if c.index() >= trace.consts.len() {
                return err(Some(at), format!("{what} refers to a missing constant {c}"));
            }
            Ok(trace.consts.get(c).kind())
        }
    }
}

/// Whether descriptor `d` is of the kind an opcode asks for (`DescrKind::None`: never).
pub(crate) fn descr_matches(kind: DescrKind, d: &Descr) -> bool {
    match kind {
        DescrKind::None => false,
        DescrKind::Any => true,
        DescrKind::Field => matches!(d, Descr::Field(_)),
        DescrKind::Size => matches!(d, Descr::Size(_)),
        DescrKind::Array => matches!(d, Descr::Array(_)),
        DescrKind::Interior => matches!(d, Descr::Interior(_)),
        DescrKind::Call => matches!(d, Descr::Call(_)),
    }
}

/// Check every invariant listed in the module documentation.
///
/// The checks run in a fixed order (the trace-wide ones, then each op's in op order), so the
/// error reported is always the first one found in that order. A first pass
/// (`quick::accepts`) only decides whether the trace is valid, with no message to build
/// and no order to keep; a trace it does not accept goes through the checks in order, which
/// find the first error.
pub fn verify(trace: &Trace) -> Result<(), VerifyError> {
    if quick::accepts(trace) {
        return Ok(());
    }
    verify_in_order(trace)
}

/// The checks of [`verify`] in their fixed order: the first error found.
fn verify_in_order(trace: &Trace) -> Result<(), VerifyError> {
    check_inputs(trace)?;
    check_descr_table(trace)?;
    let mut labels = LabelParams::default();
    let mut guard_ids = FxHashSet::default();
    let mut kinds = Vec::new();
    for r in trace.op_refs().skip(trace.num_inputs) {
        if labels.check_param(trace, r)? {
            continue;
        }
        check_operands(trace, r, &mut kinds)?;
        check_descr(trace, r)?;
        check_load_store_kinds(trace, r, &kinds)?;
        check_resume_data(trace, r, &mut guard_ids)?;
        check_overflow_pairing(trace, r)?;
        labels.check_label(trace, r)?;
        check_final(trace, r, &kinds)?;
    }
    labels.check_none_pending()?;
    check_ends_with_final(trace)
}

/// Invariant 1, at the trace start: the first `num_inputs` ops exist and are inputs.
fn check_inputs(trace: &Trace) -> Result<(), VerifyError> {
    let n = trace.ops.len();
    if trace.num_inputs > n {
        return err(None, format!("{} inputs but only {} ops", trace.num_inputs, n));
    }
    for r in trace.inputs() {
        if !trace.op(r).opcode.is_input() {
            return err(Some(r), "trace inputs must come first".into());
        }
    }
    Ok(())
}

/// Invariant 4, for the descriptor table: no two equal descriptors.
fn check_descr_table(trace: &Trace) -> Result<(), VerifyError> {
    let mut seen = FxHashSet::default();
    for (i, d) in trace.descrs.iter().enumerate() {
        if !seen.insert(d) {
            return err(None, format!("descriptor {i} repeats an earlier one: {d:?}"));
        }
    }
    Ok(())
}

/// Invariant 1, after the trace start: the label whose parameters are being read, and how
/// many of them are still expected.
#[derive(Default)]
struct LabelParams {
    label: Option<OpRef>,
    pending: usize,
}

impl LabelParams {
    /// If `r` is an input op, check that it is the next expected parameter of the current
    /// label, of its operand's kind, and return `true` (the op needs no other check).
    /// Otherwise check that no parameter is missing and return `false`.
    fn check_param(&mut self, trace: &Trace, r: OpRef) -> Result<bool, VerifyError> {
        let opc = trace.op(r).opcode;
        if !opc.is_input() {
            if self.pending != 0 {
                return err(Some(r), format!("label is missing {} parameter(s)", self.pending));
            }
            return Ok(false);
        }
        if self.pending == 0 {
            return err(
                Some(r),
                "an input op outside the trace start and label parameters".into(),
            );
        }
        let label = self.label.expect("pending params imply a label");
        let idx = trace.op(label).args.len() - self.pending;
        let arg_kind = trace.kind_of(trace.op(label).args[idx]);
        if arg_kind != opc.result_kind() {
            return err(
                Some(r),
                format!(
                    "label parameter of kind {:?} for an operand of kind {:?}",
                    opc.result_kind(),
                    arg_kind
                ),
            );
        }
        self.pending -= 1;
        Ok(true)
    }

    /// If `r` is a label, check that one input op of each operand's kind follows it, and
    /// expect them as its parameters.
    fn check_label(&mut self, trace: &Trace, r: OpRef) -> Result<(), VerifyError> {
        let op = trace.op(r);
        if op.opcode != Opcode::Label {
            return Ok(());
        }
        for (i, &a) in op.args.iter().enumerate() {
            let want = Opcode::input_for(trace.kind_of(a)).unwrap();
            let got = trace.ops.get(r.index() + 1 + i).map(|o| o.opcode);
            if got != Some(want) {
                return err(
                    Some(r),
                    format!(
                        "label parameter {} must be {} right after the label",
                        i + 1,
                        want.name()
                    ),
                );
            }
        }
        self.pending = op.args.len();
        self.label = Some(r);
        Ok(())
    }

    /// At the end of the trace: no label parameter is still expected.
    fn check_none_pending(&self) -> Result<(), VerifyError> {
        if self.pending != 0 {
            return err(None, "trace ends inside a label's parameters".into());
        }
        Ok(())
    }
}

/// Invariants 2 and 3 for the operands of `r`: arity, definition before use, kinds
/// (`guard_value`'s two operands have one kind). Leaves the operands' kinds in `kinds`.
fn check_operands(trace: &Trace, r: OpRef, kinds: &mut Vec<Kind>) -> Result<(), VerifyError> {
    let op = trace.op(r);
    let opc = op.opcode;
    if !opc.arity_ok(op.args.len()) {
        return err(
            Some(r),
            format!(
                "{} takes {}{} operand(s), got {}",
                opc,
                if opc.is_variadic() { "at least " } else { "" },
                opc.fixed_arity(),
                op.args.len()
            ),
        );
    }
    kinds.clear();
    for (i, &a) in op.args.iter().enumerate() {
        let k = check_value(trace, r, a, &format_args!("operand {}", i + 1))?;
        if let Some(want) = opc.arg_kind(i) {
            if want != k {
                return err(
                    Some(r),
                    format!("{} operand {} must be {:?}, got {:?}", opc, i + 1, want, k),
                );
            }
        }
        kinds.push(k);
    }
    if opc == Opcode::GuardValue && kinds[0] != kinds[1] {
        return err(Some(r), "guard_value compares values of different kinds".into());
    }
    Ok(())
}

/// Invariant 4 for `r`: a descriptor exactly when the opcode table asks for one, of the
/// right kind.
fn check_descr(trace: &Trace, r: OpRef) -> Result<(), VerifyError> {
    let op = trace.op(r);
    let opc = op.opcode;
    match (opc.descr_kind(), op.descr) {
        (DescrKind::None, Some(_)) => err(Some(r), format!("{opc} takes no descriptor")),
        (DescrKind::None | DescrKind::Any, None) => Ok(()),
        (k, None) => err(Some(r), format!("{opc} needs a {k:?} descriptor")),
        (k, Some(d)) => {
            if d.index() >= trace.descrs.len() {
                return err(Some(r), format!("missing descriptor {d}"));
            }
            if !descr_matches(k, trace.descr(d)) {
                return err(
                    Some(r),
                    format!("{opc} needs a {k:?} descriptor, got {:?}", trace.descr(d)),
                );
            }
            Ok(())
        }
    }
}

/// Invariant 3 for loads and stores: they move values of their descriptor's kind, so no op
/// reinterprets the bits of a slot as another kind (two descriptors viewing the same bytes
/// may). `kinds` are the operands' kinds.
fn check_load_store_kinds(trace: &Trace, r: OpRef, kinds: &[Kind]) -> Result<(), VerifyError> {
    let op = trace.op(r);
    let opc = op.opcode;
    let Some(dk) = op
        .descr
        .and_then(|d| trace.descrs.get(d.index()))
        .and_then(Descr::value_kind)
    else {
        return Ok(());
    };
    if opc.has(OpFlags::READS_HEAP) && opc != Opcode::ArraylenGc && opc.result_kind() != dk {
        return err(
            Some(r),
            format!(
                "{opc} loads a {:?} through a descriptor of {:?} values",
                opc.result_kind(),
                dk
            ),
        );
    }
    if opc.has(OpFlags::WRITES_HEAP) && kinds.last() != Some(&dk) {
        return err(
            Some(r),
            format!(
                "{opc} stores a {:?} through a descriptor of {dk:?} values",
                kinds.last()
            ),
        );
    }
    Ok(())
}

/// Invariant 5 for `r`: resume data exactly on guards, a guard id not in `guard_ids` (which
/// collects them), fail arguments defined before the guard, virtual references in range.
fn check_resume_data(trace: &Trace, r: OpRef, guard_ids: &mut FxHashSet<GuardId>) -> Result<(), VerifyError> {
    let op = trace.op(r);
    let opc = op.opcode;
    let g = match (opc.is_guard(), op.guard) {
        (true, None) => return err(Some(r), format!("{opc} has no resume data")),
        (false, Some(_)) => return err(Some(r), format!("{opc} is not a guard but has resume data")),
        (false, None) => return Ok(()),
        (true, Some(g)) => g,
    };
    if g.index() >= trace.guards.len() {
        return err(Some(r), format!("missing guard data {g}"));
    }
    let gd = trace.guard(g);
    if !guard_ids.insert(gd.id) {
        return err(Some(r), format!("duplicate guard id {}", gd.id));
    }
    let check_fail = |fa: &FailArg| -> Result<(), VerifyError> {
        match *fa {
            FailArg::Value(v) => check_value(trace, r, v, &"fail argument").map(|_| ()),
            FailArg::Virtual(i) if (i as usize) < gd.virtuals.len() => Ok(()),
            FailArg::Virtual(i) => err(Some(r), format!("fail argument names missing virtual {i}")),
            FailArg::Hole => Ok(()),
        }
    };
    let mut checked = Ok(());
    gd.for_each_entry(|fa| {
        if checked.is_ok() {
            checked = check_fail(&fa);
        }
    });
    checked?;
    for w in &gd.writes {
        check_resume_write(trace, r, w)?;
    }
    Ok(())
}

/// A write of a guard's exit ([`crate::ResumeWrite`]): a reference object, a field descriptor
/// (or an array descriptor with an index), and a value of the descriptor's kind.
fn check_resume_write(trace: &Trace, r: OpRef, w: &crate::ResumeWrite) -> Result<(), VerifyError> {
    if check_value(trace, r, w.obj, &"the object of an exit's write")? != Kind::Ref {
        return err(
            Some(r),
            "an exit's write writes into a value that is not a reference".into(),
        );
    }
    let kind = match (trace.descrs.get(w.descr.index()), w.index) {
        (Some(Descr::Field(f)), None) => f.kind,
        (Some(Descr::Array(a)), Some(_)) => a.kind,
        (Some(_), _) => {
            return err(
                Some(r),
                "an exit's write needs a field descriptor, or an array descriptor and an index".into(),
            )
        }
        (None, _) => {
            return err(
                Some(r),
                format!("an exit's write names a missing descriptor {}", w.descr),
            )
        }
    };
    let vk = match w.value {
        FailArg::Value(v) => check_value(trace, r, v, &"the value of an exit's write")?,
        FailArg::Virtual(_) => Kind::Ref,
        FailArg::Hole => return err(Some(r), "an exit's write has no value".into()),
    };
    if vk != kind {
        return err(
            Some(r),
            format!("an exit's write stores a {vk:?} through a descriptor of {kind:?} values"),
        );
    }
    Ok(())
}

/// Invariant 6 for `r`: an `_ovf` op is immediately followed by an overflow guard, and an
/// overflow guard immediately follows an `_ovf` op.
fn check_overflow_pairing(trace: &Trace, r: OpRef) -> Result<(), VerifyError> {
    let opc = trace.op(r).opcode;
    if opc.is_ovf() {
        let next = trace.ops.get(r.index() + 1).map(|o| o.opcode);
        if !matches!(next, Some(Opcode::GuardNoOverflow | Opcode::GuardOverflow)) {
            return err(
                Some(r),
                format!("{opc} must be followed by guard_no_overflow or guard_overflow"),
            );
        }
    }
    if matches!(opc, Opcode::GuardNoOverflow | Opcode::GuardOverflow)
        && !(r.index() > 0 && trace.ops[r.index() - 1].opcode.is_ovf())
    {
        return err(Some(r), format!("{opc} must follow an _ovf operation"));
    }
    Ok(())
}

/// Invariant 7 for `r`: a final op is the last op, and a `jump` passes one value of the
/// right kind per parameter of its target. `kinds` are the operands' kinds.
fn check_final(trace: &Trace, r: OpRef, kinds: &[Kind]) -> Result<(), VerifyError> {
    let opc = trace.op(r).opcode;
    if !opc.is_final() {
        return Ok(());
    }
    if r.index() + 1 != trace.ops.len() {
        return err(Some(r), format!("{opc} must be the last op"));
    }
    if opc == Opcode::Jump {
        let params: Vec<Kind> = match jump_target(trace, r) {
            JumpTarget::Label(l) => trace
                .label_params(l)
                .map(|p| trace.op(p).opcode.result_kind())
                .collect(),
            JumpTarget::Start => trace.input_kinds(),
            JumpTarget::External => kinds.to_vec(),
        };
        if params != kinds {
            return err(
                Some(r),
                format!("jump passes {:?} but its target expects {:?}", kinds, params),
            );
        }
    }
    Ok(())
}

/// Invariant 7 for the whole trace: it ends with `jump` or `finish`.
fn check_ends_with_final(trace: &Trace) -> Result<(), VerifyError> {
    match trace.ops.last() {
        Some(op) if op.opcode.is_final() => Ok(()),
        _ => err(None, "a trace must end with jump or finish".into()),
    }
}
