//! Trace trees in the text format: the root trace, then each bridge after a header comment
//! naming the guard it leaves from, in PyPy's spelling:
//!
//! ```text
//! [i0, i1]
//! label(i0, i1, descr=TargetToken(1))
//! i2 = int_lt(i0, i1)
//! guard_true(i2, descr=<Guard0>) [i0, i1]
//! i3 = int_add(i0, 1)
//! jump(i3, i1, descr=TargetToken(1))
//!
//! # bridge out of Guard0
//! [i0, i1]
//! i2 = int_sub(i0, i1)
//! jump(i2, i1, descr=TargetToken(1))
//! ```
//!
//! `# bridge out of Guard<N>` names the guard by its id. PyPy's logs write `# bridge out of
//! Guard 0x7f31... with 78 ops` and print that guard as `descr=<Guard0x7f31...>`, whose
//! address the reader keeps as the guard's resume key: [`bridge_origin`] reads either
//! spelling from a trace's header, and [`assemble_trees`] links the traces of a file (a
//! PyPy log or plain text) into trees by it.

use super::pypylog::parse_file;
use super::{print_trace, ParseError};
use crate::entity::GuardId;
use crate::trace::{Trace, TraceInfo};
use crate::tree::{verify_tree, Bridge, TraceTree};

/// How a bridge's header names the guard it leaves from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GuardName {
    /// `Guard<N>`: the guard's id.
    Id(GuardId),
    /// `Guard 0x7f31...` (PyPy): the guard's address, which the reader keeps as the guard's
    /// resume key.
    Address(u64),
}

/// The guard a trace is a bridge out of, as its header comment (`bridge out of Guard<N>`,
/// or PyPy's `bridge out of Guard 0x...`) names it; `None` for a trace that is no bridge.
pub fn bridge_origin(info: &TraceInfo) -> Option<GuardName> {
    let h = info.header.as_deref()?.trim();
    let rest = h.strip_prefix("bridge out of Guard")?;
    let word = rest.split_whitespace().next()?;
    if let Some(hex) = word.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(GuardName::Address);
    }
    word.parse().ok().map(|n| GuardName::Id(GuardId(n)))
}

/// Print a tree: the root, then each bridge after its `# bridge out of Guard<N>` header.
pub fn print_tree(tree: &TraceTree) -> String {
    let mut out = print_trace(&tree.root);
    for b in &tree.bridges {
        out.push_str(&format!("\n# bridge out of {}\n", b.guard));
        out.push_str(&print_trace(&b.trace));
    }
    out
}

/// Link traces into trees: a trace that is no bridge ([`bridge_origin`]) starts a tree; a
/// bridge joins the tree that holds its guard (by id, or by address as resume key) as a
/// bridge of that guard. Bridges are taken in order, so a bridge out of a bridge follows
/// it. A bridge whose guard no earlier trace has (the log did not keep its loop) starts a
/// tree of its own. The guards of a bridge named by address (PyPy's, whose ids the reader
/// numbers from 0 in each trace) get ids after the tree's. The trees are not verified (see
/// [`verify_tree`]).
pub fn assemble_trees(traces: Vec<Trace>) -> Vec<TraceTree> {
    let mut trees: Vec<TraceTree> = Vec::new();
    for t in traces {
        let found = bridge_origin(&t.info).and_then(|name| {
            trees.iter().enumerate().find_map(|(k, tree)| {
                tree.traces()
                    .flat_map(|tr| tr.guards.iter())
                    .find(|gd| match name {
                        GuardName::Id(id) => gd.id == id,
                        GuardName::Address(a) => gd.resume_key == a,
                    })
                    .map(|gd| (k, gd.id))
            })
        });
        match found {
            Some((k, guard)) => {
                let mut t = t;
                if let Some(GuardName::Address(_)) = bridge_origin(&t.info) {
                    // PyPy's guards are named by address; their ids are the reader's and
                    // start from 0 in every trace: renumber after the tree's.
                    let first = trees[k]
                        .traces()
                        .filter_map(|tr| tr.max_guard_id())
                        .max()
                        .map_or(0, |g| g.0 + 1);
                    for (i, gd) in t.guards.iter_mut().enumerate() {
                        gd.id = GuardId(first + i as u32);
                    }
                }
                trees[k].bridges.push(Bridge { guard, trace: t })
            }
            None => trees.push(TraceTree::new(t)),
        }
    }
    trees
}

/// Parse one tree: a root trace and its bridges (see the module documentation), verified
/// with [`verify_tree`].
pub fn parse_tree(text: &str) -> Result<TraceTree, ParseError> {
    let traces = parse_file(text)?;
    let n = traces.len();
    let mut trees = assemble_trees(traces);
    let whole = |message: String| ParseError {
        line: 1,
        column: 1,
        message,
    };
    if trees.len() != 1 {
        let stray: Vec<String> = trees[1..].iter().map(|t| t.root.info.name.clone()).collect();
        return Err(whole(format!(
            "expected one tree, {n} traces make {} (not linked to the first: {})",
            trees.len(),
            stray.join("; ")
        )));
    }
    let tree = trees.pop().expect("one tree");
    verify_tree(&tree).map_err(|e| whole(e.to_string()))?;
    Ok(tree)
}
