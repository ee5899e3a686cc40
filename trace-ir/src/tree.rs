//! Trace trees: a loop and the bridges attached to its guards.
//!
//! A **bridge** is a trace attached to a guard of a trace of its tree (the root, or a
//! bridge attached before it): when that guard fails, execution goes on in the bridge
//! instead of leaving the tree. The bridge's inputs are the guard's **exit words**: the
//! values of the [`FailArg::Value`] entries of its resume data, in
//! [`GuardData::for_each_value`] order (the fail arguments, then the fields of its virtual
//! objects). A virtual object of the guard is therefore not rebuilt on the way into the
//! bridge: a bridge that needs it as an object allocates it from those words itself (an
//! allocation the optimizer can remove again), so virtual objects stay virtual across the
//! guard.
//!
//! A bridge ends like any trace: with `finish`, with a `jump` to one of its own labels (or
//! its start), or with a `jump` whose `TargetToken(n)` names a label of another trace of
//! the tree (the loop it enters: the usual ending), or a loop outside the tree.
//!
//! **Entering a label from outside its trace.** The ops after a label may read values
//! defined before it, not only its parameters (a peeled loop's body reading a preamble
//! value). Such a label can be entered from a bridge only when every such value was
//! computed on the way to the bridge: the bridge descends (through its chain of guards)
//! from a guard of the label's trace placed after every such value's definition.
//! [`verify_tree`] checks it; the interpreter and native code then agree that the value is
//! the one last computed.
//!
//! The text format writes a tree as its root trace followed by one section per bridge,
//! each headed by `# bridge out of Guard<N>` (see [`crate::text`]).

use crate::builder::TraceBuilder;
use crate::descr::Descr;
use crate::entity::{GuardId, OpRef, Value};
use crate::facts::GuardFacts;
use crate::opcode::{Kind, Opcode};
use crate::trace::{FailArg, GuardData, Trace, VirtualField, VirtualKind};
use crate::verify::{jump_target, verify, JumpTarget, VerifyError};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A trace attached to a guard of its tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Bridge {
    /// The guard it leaves from (in the root or in a bridge before it).
    pub guard: GuardId,
    /// The bridge's trace: its inputs are the guard's exit words ([`exit_kinds`]).
    pub trace: Trace,
}

/// A root trace (usually a loop) and the bridges attached to guards of the tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceTree {
    /// The trace the tree is entered through.
    pub root: Trace,
    /// The bridges, each attached to a guard of the root or of a bridge before it.
    pub bridges: Vec<Bridge>,
}

/// Which trace of a tree: 0 is the root, `k + 1` is bridge `k`.
pub type TraceIndex = usize;

impl TraceTree {
    /// A tree of `root` alone.
    pub fn new(root: Trace) -> TraceTree {
        TraceTree {
            root,
            bridges: Vec::new(),
        }
    }

    /// The trace at `k` (0 is the root, `k + 1` is bridge `k`).
    pub fn trace(&self, k: TraceIndex) -> &Trace {
        if k == 0 {
            &self.root
        } else {
            &self.bridges[k - 1].trace
        }
    }

    /// The number of traces (the root and the bridges).
    pub fn len(&self) -> usize {
        1 + self.bridges.len()
    }

    /// Never: a tree has a root.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every trace, the root first, then the bridges in order.
    pub fn traces(&self) -> impl Iterator<Item = &Trace> {
        std::iter::once(&self.root).chain(self.bridges.iter().map(|b| &b.trace))
    }

    /// The trace and position of the guard with id `id`, if the tree has it.
    pub fn find_guard(&self, id: GuardId) -> Option<(TraceIndex, OpRef)> {
        self.traces()
            .enumerate()
            .find_map(|(k, t)| guard_op(t, id).map(|op| (k, op)))
    }

    /// The trace and position of the label whose descriptor is `TargetToken(token)`, if
    /// one trace of the tree has it.
    pub fn find_label(&self, token: u64) -> Option<(TraceIndex, OpRef)> {
        self.traces()
            .enumerate()
            .find_map(|(k, t)| label_op(t, token).map(|op| (k, op)))
    }

    /// The trace index of the bridge attached to guard `id`, if any.
    pub fn bridge_of(&self, id: GuardId) -> Option<TraceIndex> {
        self.bridges.iter().position(|b| b.guard == id).map(|k| k + 1)
    }
}

/// The guard op of `t` whose id is `id`.
pub fn guard_op(t: &Trace, id: GuardId) -> Option<OpRef> {
    t.op_refs().find(|&r| {
        t.op(r)
            .guard
            .and_then(|g| t.guards.get(g.index()))
            .is_some_and(|gd| gd.id == id)
    })
}

/// The label op of `t` whose descriptor is `TargetToken(token)`.
pub fn label_op(t: &Trace, token: u64) -> Option<OpRef> {
    t.op_refs().find(|&r| {
        let op = t.op(r);
        op.opcode == Opcode::Label && op.descr.map(|d| t.descr(d)) == Some(&Descr::Target(token))
    })
}

/// The kinds of a guard's exit words (the inputs a bridge attached to it takes), in order.
pub fn exit_kinds(t: &Trace, gd: &GuardData) -> Vec<Kind> {
    let mut kinds = Vec::new();
    gd.for_each_value(|v| kinds.push(t.kind_of(v)));
    kinds
}

/// Start a bridge out of guard `gd` of `parent` in `b` (an empty builder): one input per
/// exit word, the hints that state `facts` about them (what the optimizer of `parent` knew
/// at the guard, [`crate::GuardFacts`]: `record_*` and `assert_not_none` of the words, then
/// `record_known_field` of the known fields; `None`, or fewer words: nothing more), then the
/// guard's virtual objects rebuilt from them (allocations and field writes, which the
/// optimizer can remove again) and the writes its exit performs. Returns the value of each fail argument, in order (`None`
/// for a hole): what an interpreter recording the bridge from the guard's resume point has
/// in the places the fail arguments fill.
pub fn bridge_prologue(
    parent: &Trace,
    gd: &GuardData,
    facts: Option<&GuardFacts>,
    b: &mut TraceBuilder,
) -> Vec<Option<Value>> {
    let mut words = Vec::new();
    gd.for_each_value(|v| words.push(v));
    let inputs: Vec<Value> = words.iter().map(|&v| b.input(parent.kind_of(v))).collect();
    if let Some(facts) = facts {
        facts.record(parent, &inputs, b);
    }
    // The exit words in order: fail arguments first, then the fields of each virtual.
    let mut next = inputs.iter().copied();
    let fail: Vec<FailArg> = gd.fail_args.clone();
    let mut word_of_fail = Vec::with_capacity(fail.len());
    for fa in &fail {
        word_of_fail.push(match fa {
            FailArg::Value(_) => next.next(),
            _ => None,
        });
    }
    let objects: Vec<Value> = gd
        .virtuals
        .iter()
        .map(|vo| match vo.kind {
            VirtualKind::Struct { opcode, descr } => {
                let d = b.descr(parent.descr(descr).clone());
                b.op_with_descr(opcode, &[], d)
            }
            VirtualKind::Array { opcode, descr, len } => {
                let d = b.descr(parent.descr(descr).clone());
                let n = b.const_int(i64::from(len));
                b.op_with_descr(opcode, &[n], d)
            }
            VirtualKind::Str { opcode, len } => {
                let n = b.const_int(i64::from(len));
                b.op(opcode, &[n])
            }
        })
        .collect();
    for (vo, &obj) in gd.virtuals.iter().zip(&objects) {
        for &(place, fa) in &vo.fields {
            let value = match fa {
                FailArg::Value(_) => next.next().expect("one exit word per value"),
                FailArg::Virtual(k) => objects[k as usize],
                FailArg::Hole => continue,
            };
            match (place, vo.kind) {
                (VirtualField::Field(d), _) => {
                    let d = b.descr(parent.descr(d).clone());
                    b.op_with_descr(Opcode::SetfieldGc, &[obj, value], d);
                }
                (VirtualField::Item(i), VirtualKind::Array { descr, .. }) => {
                    let d = b.descr(parent.descr(descr).clone());
                    let i = b.const_int(i64::from(i));
                    b.op_with_descr(Opcode::SetarrayitemGc, &[obj, i, value], d);
                }
                (VirtualField::Item(i), VirtualKind::Str { opcode, .. }) => {
                    let set = if opcode == Opcode::Newstr {
                        Opcode::Strsetitem
                    } else {
                        Opcode::Unicodesetitem
                    };
                    let i = b.const_int(i64::from(i));
                    b.op(set, &[obj, i, value]);
                }
                (VirtualField::Item(_), VirtualKind::Struct { .. }) => {}
            }
        }
    }
    // Then the writes the exit performs, in order.
    for w in &gd.writes {
        let obj = next.next().expect("one exit word per value");
        let value = match w.value {
            FailArg::Value(_) => next.next().expect("one exit word per value"),
            FailArg::Virtual(k) => objects[k as usize],
            FailArg::Hole => continue,
        };
        let d = b.descr(parent.descr(w.descr).clone());
        match w.index {
            None => b.op_with_descr(Opcode::SetfieldGc, &[obj, value], d),
            Some(i) => {
                let i = b.const_int(i64::from(i));
                b.op_with_descr(Opcode::SetarrayitemGc, &[obj, i, value], d)
            }
        };
    }
    fail.iter()
        .zip(word_of_fail)
        .map(|(fa, w)| match fa {
            FailArg::Value(_) => w,
            FailArg::Virtual(k) => Some(objects[*k as usize]),
            FailArg::Hole => None,
        })
        .collect()
}

/// Where a `jump` of a tree's trace goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TreeJump {
    /// Inside its own trace (a label of it, or its start).
    Local(JumpTarget),
    /// A label of another trace of the tree.
    Enter(TraceIndex, OpRef),
    /// Out of the tree.
    Out,
}

/// Where the `jump` at `jump` of trace `k` goes.
pub fn tree_jump(tree: &TraceTree, k: TraceIndex, jump: OpRef) -> TreeJump {
    let t = tree.trace(k);
    match jump_target(t, jump) {
        JumpTarget::External => match t.op(jump).descr.map(|d| t.descr(d)) {
            Some(Descr::Target(token)) => match tree.find_label(*token) {
                Some((k2, l)) => TreeJump::Enter(k2, l),
                None => TreeJump::Out,
            },
            _ => TreeJump::Out,
        },
        local => TreeJump::Local(local),
    }
}

/// A broken invariant of a tree: in which trace, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeError {
    /// The trace (0 is the root, `k + 1` is bridge `k`).
    pub trace: TraceIndex,
    /// What is wrong there.
    pub error: VerifyError,
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.trace {
            0 => write!(f, "root trace: {}", self.error),
            k => write!(f, "bridge {}: {}", k - 1, self.error),
        }
    }
}

impl std::error::Error for TreeError {}

fn tree_err<T>(trace: TraceIndex, op: Option<OpRef>, message: String) -> Result<T, TreeError> {
    Err(TreeError {
        trace,
        error: VerifyError { op, message },
    })
}

/// Check a tree: every trace verifies (`crate::verify`); guard ids and label tokens are
/// unique in the tree; each bridge leaves from a guard of the root or of a bridge before
/// it, one bridge per guard, and takes one input per exit word of that guard, of its kind;
/// a `jump` into another trace's label passes one value of the right kind per parameter,
/// and may enter there (see the module documentation).
pub fn verify_tree(tree: &TraceTree) -> Result<(), TreeError> {
    let mut guard_ids = HashSet::new();
    let mut tokens = HashSet::new();
    for (k, t) in tree.traces().enumerate() {
        verify(t).map_err(|error| TreeError { trace: k, error })?;
        for gd in &t.guards {
            if !guard_ids.insert(gd.id) {
                return tree_err(
                    k,
                    None,
                    format!("{} is also a guard of an earlier trace of the tree", gd.id),
                );
            }
        }
        for r in t.op_refs() {
            let op = t.op(r);
            if let (Opcode::Label, Some(Descr::Target(token))) = (op.opcode, op.descr.map(|d| t.descr(d))) {
                if !tokens.insert(*token) {
                    return tree_err(k, Some(r), format!("TargetToken({token}) labels two ops of the tree"));
                }
            }
        }
    }
    let mut attached = HashSet::new();
    for (b, bridge) in tree.bridges.iter().enumerate() {
        let k = b + 1;
        let Some((from, g)) = tree.find_guard(bridge.guard).filter(|&(from, _)| from < k) else {
            return tree_err(
                k,
                None,
                format!("{} is not a guard of the root or of an earlier bridge", bridge.guard),
            );
        };
        if !attached.insert(bridge.guard) {
            return tree_err(k, None, format!("{} already has a bridge", bridge.guard));
        }
        let parent = tree.trace(from);
        let want = exit_kinds(parent, parent.guard_of(g).expect("a guard op has resume data"));
        let have = bridge.trace.input_kinds();
        if want != have {
            return tree_err(
                k,
                None,
                format!("the bridge takes inputs {have:?}, {} exits with {want:?}", bridge.guard),
            );
        }
    }
    for (k, t) in tree.traces().enumerate() {
        for r in t.op_refs().filter(|&r| t.op(r).opcode == Opcode::Jump) {
            if let TreeJump::Enter(k2, label) = tree_jump(tree, k, r) {
                check_entry(tree, k, r, k2, label)?;
            }
        }
    }
    Ok(())
}

/// The `jump` at `jump` of trace `k` enters the label `label` of trace `to`: the operands
/// fit the parameters, and every value read after the label but defined before it was
/// computed on the way (see the module documentation).
fn check_entry(tree: &TraceTree, k: TraceIndex, jump: OpRef, to: TraceIndex, label: OpRef) -> Result<(), TreeError> {
    let (t, target) = (tree.trace(k), tree.trace(to));
    let args = &t.op(jump).args;
    let params = &target.op(label).args;
    if args.len() != params.len() {
        return tree_err(
            k,
            Some(jump),
            format!(
                "jump passes {} values to a label of {} parameters",
                args.len(),
                params.len()
            ),
        );
    }
    for (i, (&a, &p)) in args.iter().zip(params).enumerate() {
        if t.kind_of(a) != target.kind_of(p) {
            return tree_err(
                k,
                Some(jump),
                format!("jump operand {i} has the wrong kind for the label"),
            );
        }
    }
    // The position in `to` this execution left it from, if it passed through `to`.
    let left_at = chain_position(tree, k, to);
    let bad = read_before_label(target, label, |o| left_at.is_none_or(|at| o.index() >= at.index()));
    match bad {
        Some(o) => tree_err(
            k,
            Some(jump),
            format!(
                "the jump enters the label at {label} of trace {to}, whose loop reads {o} defined before it, \
                 which this path has not computed"
            ),
        ),
        None => Ok(()),
    }
}

/// The first value defined before `label` that an op after its parameters reads, among
/// those `counts` accepts (`None`: the ops after the label read only its parameters and
/// what they define, apart from values `counts` excuses). A label for which this is `None`
/// with every value counted can be entered from anywhere.
pub fn read_before_label(t: &Trace, label: OpRef, mut counts: impl FnMut(OpRef) -> bool) -> Option<OpRef> {
    let after = label.index() + 1 + t.op(label).args.len();
    let mut bad = None;
    for op in &t.ops[after..] {
        op.for_each_value_read(&t.guards, |v| {
            if let Some(o) = v.as_op() {
                if o.index() < label.index() && bad.is_none() && counts(o) {
                    bad = Some(o);
                }
            }
        });
        if bad.is_some() {
            break;
        }
    }
    bad
}

/// Following trace `k`'s chain of bridges back to the root: the guard op of trace `to`
/// it descends from, if it passes through `to` (`to == k`: none, the jump is local).
fn chain_position(tree: &TraceTree, mut k: TraceIndex, to: TraceIndex) -> Option<OpRef> {
    let parents: HashMap<TraceIndex, (TraceIndex, OpRef)> = tree
        .bridges
        .iter()
        .enumerate()
        .filter_map(|(b, br)| tree.find_guard(br.guard).map(|p| (b + 1, p)))
        .collect();
    while let Some(&(from, g)) = parents.get(&k) {
        if from == to {
            return Some(g);
        }
        k = from;
    }
    None
}
