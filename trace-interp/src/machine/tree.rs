//! Running a trace tree (a loop and its bridges, `trace_ir::tree`): a failing guard with a
//! bridge goes on in the bridge with the guard's exit words as inputs, and a `jump` naming
//! another trace's label goes on there (one iteration). The heap, the exception state, the
//! calls and the iteration count are the run's; each trace keeps its own values, so a label
//! entered from a bridge reads values defined before it as last computed (the tree's
//! verifier makes sure they were).

use super::*;
use trace_ir::entity::{DescrRef, GuardId};
use trace_ir::tree::{TraceIndex, TraceTree};

/// Where a run goes on in the trace it moves to.
pub(crate) enum Entry {
    /// At the start: these are the trace's inputs.
    Start(Vec<RtValue>),
    /// At the label at this position, with these values for its parameters.
    Label(usize, Vec<RtValue>),
}

/// What the links of a tree are, computed once per run.
pub(crate) struct Links {
    /// The bridge attached to each guard.
    bridge_of: HashMap<GuardId, TraceIndex>,
    /// The trace and position of each label by its `TargetToken`.
    labels: HashMap<u64, (TraceIndex, usize)>,
    /// For each trace, its descriptors' identities in the tree (equal descriptors of two
    /// traces are one identity: the memory model's writer of a byte).
    descr_ids: Vec<Vec<u32>>,
}

impl Links {
    fn new(tree: &TraceTree) -> Links {
        let mut ids: HashMap<&Descr, u32> = HashMap::new();
        let mut descr_ids = Vec::with_capacity(tree.len());
        let mut labels = HashMap::new();
        for (k, t) in tree.traces().enumerate() {
            descr_ids.push(
                t.descrs
                    .iter()
                    .map(|d| {
                        let next = ids.len() as u32;
                        *ids.entry(d).or_insert(next)
                    })
                    .collect(),
            );
            for (i, op) in t.ops.iter().enumerate() {
                if let (Opcode::Label, Some(Some(Descr::Target(token)))) =
                    (op.opcode, op.descr.map(|d| t.descrs.get(d.index())))
                {
                    labels.entry(*token).or_insert((k, i));
                }
            }
        }
        let bridge_of = tree
            .bridges
            .iter()
            .enumerate()
            .map(|(b, br)| (br.guard, b + 1))
            .collect();
        Links {
            bridge_of,
            labels,
            descr_ids,
        }
    }
}

/// The machine of one trace of a tree: the tree's links, which trace runs, and where the
/// run goes on once it leaves the trace for another one.
pub(crate) struct TreeStep<'a> {
    links: &'a Links,
    k: TraceIndex,
    next: Option<(TraceIndex, Entry)>,
}

impl<'a> Machine<'a> {
    /// The identity of descriptor `d` of the running trace as the memory model's writer:
    /// its index, or in a tree the tree-wide identity of equal descriptors.
    pub(crate) fn descr_id(&self, d: DescrRef) -> u32 {
        match &self.tree {
            Some(ts) => ts.links.descr_ids[ts.k].get(d.index()).copied().unwrap_or(u32::MAX),
            None => d.index() as u32,
        }
    }

    /// The bridge attached to the guard `id`, if the run is in a tree that has one.
    pub(crate) fn bridge_of(&self, id: GuardId) -> Option<TraceIndex> {
        self.tree.as_ref().and_then(|ts| ts.links.bridge_of.get(&id).copied())
    }

    /// The trace and label a `jump` naming `TargetToken(token)` enters, if the run is in a
    /// tree that has it.
    pub(crate) fn tree_label(&self, token: u64) -> Option<(TraceIndex, usize)> {
        self.tree.as_ref().and_then(|ts| ts.links.labels.get(&token).copied())
    }

    /// Leave this trace for trace `to`: the returned stop ends this trace's part of the run,
    /// and the tree runner goes on at `entry` of `to` (the stop itself is not reported).
    pub(crate) fn go_to(&mut self, to: TraceIndex, entry: Entry) -> Stop {
        if let Some(ts) = self.tree.as_mut() {
            ts.next = Some((to, entry));
        }
        Outcome::IterationLimit
    }

    /// The guard at `at` failed and bridge `to` is attached to it: go on there with the
    /// guard's exit words.
    pub(crate) fn enter_bridge(&mut self, at: OpRef, gd: &GuardData, to: TraceIndex) -> Stop {
        let mut words = Vec::new();
        let mut stop = None;
        gd.for_each_value(|v| match self.get(at, v) {
            Ok(w) => words.push(w),
            Err(e) => {
                stop.get_or_insert(e);
            }
        });
        match stop {
            Some(e) => e,
            None => self.go_to(to, Entry::Start(words)),
        }
    }
}

/// Run the trace tree `tree` on `inputs` (the root's inputs): like [`run`], but a failing
/// guard that has a bridge goes on in the bridge (its inputs are the guard's exit words),
/// and a `jump` whose `TargetToken` names a label of another trace of the tree goes on
/// there, counting one iteration. The run ends where a trace leaves the tree: `finish`, a
/// guard without a bridge, a `jump` out of the tree, an invalid operation, or the iteration
/// limit. Never panics; a malformed tree ends the run with [`Outcome::Invalid`] where it
/// matters (check trees with [`trace_ir::verify_tree`]).
pub fn run_tree(tree: &TraceTree, inputs: &[RtValue], cfg: &RunConfig) -> RunResult {
    let links = Links::new(tree);
    let mut st = State::new(&tree.root, cfg);
    for t in tree.bridges.iter().map(|b| &b.trace) {
        let refs = t.consts.iter().filter(|c| c.kind() == Kind::Ref).map(|c| c.bits());
        st.heap.taken.extend(refs);
    }
    let mut vals: Vec<Vec<RtValue>> = tree.traces().map(|t| vec![RtValue::Int(0); t.ops.len()]).collect();
    let mut k = 0;
    let mut entry = Entry::Start(inputs.to_vec());
    loop {
        st.vals = std::mem::take(&mut vals[k]);
        let mut m = Machine {
            trace: tree.trace(k),
            cfg,
            st,
            tree: Some(TreeStep {
                links: &links,
                k,
                next: None,
            }),
        };
        let outcome = match entry {
            Entry::Start(words) => m.execute(&words),
            Entry::Label(l, args) => match m.enter(OpRef::new(l), l, args) {
                Ok(pc) => m.execute_from(pc),
                Err(stop) => stop,
            },
        };
        let next = m.tree.take().and_then(|ts| ts.next);
        st = m.st;
        vals[k] = std::mem::take(&mut st.vals);
        match next {
            Some((to, e)) => {
                k = to;
                entry = e;
            }
            None => {
                return RunResult {
                    outcome,
                    heap: st.heap,
                    calls: st.calls,
                    exception: st.exception,
                    iterations: st.iterations,
                    loop_entries: st.loop_entries,
                    steps: st.steps,
                }
            }
        }
    }
}
