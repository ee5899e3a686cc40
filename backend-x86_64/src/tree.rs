//! Trace trees in native code: guard failure counters, and bridges attached to guards.
//!
//! Every guard's exit stub first increments the guard's failure counter (one memory
//! increment), then reaches its patch point, from which it stores the guard's exit values
//! into the frame and returns (see the `exits` module of code generation). Attaching a
//! bridge compiles it into the tree (its frame words after every word of the traces compiled
//! before it, its exit codes after theirs) and overwrites the patch point with a jump to
//! the bridge (`jmp rel32` when the bridge is within reach, else `mov r11, imm64; jmp
//! r11`). The bridge starts with its inputs (the guard's exit words) where the guard left
//! them: in registers, in the frame words they were spilled to, or as constants; nothing
//! goes through the exit buffer. A `jump` naming a label of the tree moves its operands into
//! the label's parameter locations and jumps there. The loop and its bridges are one
//! [`CompiledTrace`]: run together, freed together.

use crate::codegen::{self, BridgeEnv, GuardTail, TreeLabel, WordFact, PATCH_LEN};
use crate::codemem::CodeMemory;
use crate::runtime;
use crate::{CompileError, CompileOptions, CompiledTrace, Compiler, ExitInfo};
use std::sync::atomic::{AtomicU64, Ordering};
use trace_ir::fxhash::FxHashMap;
use trace_ir::{GuardId, Kind, Trace};

/// A guard of the tree, as a bridge sees it.
#[derive(Clone, Debug)]
struct GuardSite {
    /// The trace that has it: 0 is the root, `k + 1` is bridge `k`.
    piece: usize,
    /// Its index in that trace's guard table (its failure counter).
    index: usize,
    /// Its exit code, stub patch point and exit words (word ranges into `Tree::word_facts`).
    tail: GuardTail,
    /// Whether a bridge is attached.
    bridged: bool,
}

/// A bridge's code and the data its code refers to.
struct Piece {
    code: CodeMemory,
    counters: Box<[AtomicU64]>,
    #[allow(clippy::vec_box)]
    _array_layouts: Vec<Box<runtime::ArrayLayout>>,
    #[allow(clippy::vec_box)]
    _hook_ops: Vec<Box<runtime::HookOp>>,
}

/// What a compiled trace knows of its tree: the guards (with their counters), the labels
/// bridges may enter, and the bridges' code.
#[derive(Default)]
pub(crate) struct Tree {
    /// The root's failure counters, by guard index.
    counters: Box<[AtomicU64]>,
    guards: FxHashMap<GuardId, GuardSite>,
    labels: FxHashMap<u64, TreeLabel>,
    /// The exit words of every guard: kind, known non-null, where the guard leaves each.
    word_facts: Vec<WordFact>,
    /// The jumps to guard stubs a bridge takes over (see `GuardTail::jumps`): code offsets
    /// in their piece.
    guard_jumps: Vec<u32>,
    bridges: Vec<Piece>,
}

impl Tree {
    /// The tree of a root trace just compiled to `code` (at `base`).
    pub(crate) fn new(trace: &Trace, g: &mut codegen::Generated, base: u64) -> Tree {
        let mut tree = Tree {
            counters: std::mem::take(&mut g.counters),
            ..Tree::default()
        };
        tree.register(trace, g, base, 0);
        tree
    }

    /// Register the guards and labels of trace `piece` (compiled at `base`).
    fn register(&mut self, trace: &Trace, g: &mut codegen::Generated, base: u64, piece: usize) {
        let first = self.word_facts.len() as u32;
        self.word_facts.append(&mut g.word_facts);
        let first_jump = self.guard_jumps.len() as u32;
        self.guard_jumps.append(&mut g.guard_jumps);
        self.guards.reserve(trace.guards.len());
        for (index, (gd, tail)) in trace.guards.iter().zip(&g.tails).enumerate() {
            let mut tail = *tail;
            tail.words = (tail.words.0 + first, tail.words.1 + first);
            tail.jumps = (tail.jumps.0 + first_jump, tail.jumps.1 + first_jump);
            let site = GuardSite {
                piece,
                index,
                tail,
                bridged: false,
            };
            self.guards.insert(gd.id, site);
        }
        for (token, offset, params, nonnull) in g.labels.drain(..) {
            let addr = base + u64::from(offset);
            self.labels.insert(token, TreeLabel { addr, params, nonnull });
        }
    }

    /// The counter of a guard site.
    fn counter(&self, site: &GuardSite) -> &AtomicU64 {
        match site.piece {
            0 => &self.counters[site.index],
            k => &self.bridges[k - 1].counters[site.index],
        }
    }
}

/// The displacement of a jump to `target` from the instruction ending at `next`, when it
/// fits in 32 bits.
fn rel32_between(next: u64, target: u64) -> Option<i32> {
    i32::try_from(target.wrapping_sub(next) as i64).ok()
}

fn refuse<T>(msg: String) -> Result<T, CompileError> {
    Err(CompileError::Bridge(msg))
}

impl CompiledTrace {
    /// How many times the guard with id `guard` (in the loop or in a bridge of it) failed
    /// and left native code, counted by its exit stub: once a bridge is attached, the
    /// guard's failures run the bridge and are no longer counted; `None`
    /// when the tree has no such guard, or the guard never fails natively (its condition
    /// is always true in native code, e.g. `guard_not_forced` in Direct mode). Runs on
    /// several threads at once may lose counts (the increment is not atomic): a count is a
    /// heuristic for deciding when a guard is hot.
    pub fn guard_failures(&self, guard: GuardId) -> Option<u64> {
        let site = self.tree.guards.get(&guard)?;
        (site.tail.tail != u32::MAX).then(|| self.tree.counter(site).load(Ordering::Relaxed))
    }

    /// Whether a bridge is attached to the guard with id `guard`.
    pub fn has_bridge(&self, guard: GuardId) -> bool {
        self.tree.guards.get(&guard).is_some_and(|s| s.bridged)
    }

    /// The number of bridges attached.
    pub fn num_bridges(&self) -> usize {
        self.tree.bridges.len()
    }

    /// Compile `bridge` and attach it to the guard with id `guard` of this tree (the loop
    /// or a bridge attached before): from now on, when that guard fails, native code goes
    /// on in the bridge instead of leaving, with the guard's exit words as the bridge's
    /// inputs (see `trace_ir::tree`). A `jump` of the bridge whose `TargetToken` names a
    /// label of the tree enters it. Uses a fresh [`Compiler`] context; see
    /// [`Compiler::attach_bridge`].
    pub fn attach_bridge(&mut self, guard: GuardId, bridge: &Trace, opts: &CompileOptions) -> Result<(), CompileError> {
        Compiler::new().attach_bridge(self, guard, bridge, opts)
    }

    /// What the bridge compiler needs to attach a bridge to `guard`, after checking that it
    /// can be.
    fn bridge_env(&self, guard: GuardId, bridge: &Trace, opts: &CompileOptions) -> Result<BridgeEnv<'_>, CompileError> {
        if opts.memory != self.memory {
            return refuse(format!(
                "the tree runs in {:?} mode, the bridge would be compiled in {:?} mode",
                self.memory, opts.memory
            ));
        }
        let Some(site) = self.tree.guards.get(&guard) else {
            return refuse(format!("the tree has no {guard}"));
        };
        if site.tail.tail == u32::MAX {
            return refuse(format!("{guard} never fails in native code"));
        }
        if site.bridged {
            return refuse(format!("{guard} already has a bridge"));
        }
        let facts = &self.tree.word_facts[site.tail.words.0 as usize..site.tail.words.1 as usize];
        let want: Vec<Kind> = facts.iter().map(|f| f.kind).collect();
        if bridge.input_kinds() != want {
            return refuse(format!(
                "the bridge takes inputs {:?}, {guard} exits with {want:?}",
                bridge.input_kinds()
            ));
        }
        if let Some(gd) = bridge.guards.iter().find(|gd| self.tree.guards.contains_key(&gd.id)) {
            return refuse(format!("the bridge's {} is also a guard of the tree", gd.id));
        }
        for op in bridge.ops.iter().filter(|op| op.opcode == trace_ir::Opcode::Label) {
            if let Some(trace_ir::Descr::Target(token)) = op.descr.and_then(|d| bridge.descrs.get(d.index())) {
                if self.tree.labels.contains_key(token) {
                    return refuse(format!(
                        "the bridge's label TargetToken({token}) is also a label of the tree"
                    ));
                }
            }
        }
        Ok(BridgeEnv {
            entry: facts.to_vec(),
            exit_at: self.frame_words,
            code_base: self.exits.len() as u32,
            piece: self.tree.bridges.len() + 1,
            labels: &self.tree.labels,
        })
    }

    /// Add the generated code of `bridge` to the tree and redirect `guard`'s stub to it.
    fn add_bridge(&mut self, guard: GuardId, bridge: &Trace, mut g: codegen::Generated) -> Result<(), CompileError> {
        // Next to the loop where its region has room.
        let mut code =
            CodeMemory::new_near(&g.code, Some(self.code.as_ptr())).map_err(|e| CompileError::Memory(e.to_string()))?;
        let base = code.as_ptr() as u64;
        // Jumps into the tree's labels within reach: `jmp rel32` (E9 rel32) over the
        // `mov r11, imm64; jmp r11`, the rest `int3`.
        for &(at, addr) in &g.tree_jumps {
            let next = base + u64::from(at) + 5;
            if let Some(rel) = rel32_between(next, addr) {
                let mut bytes = [0xcc; 13];
                bytes[0] = 0xe9;
                bytes[1..5].copy_from_slice(&rel.to_le_bytes());
                // SAFETY: the bridge's code is not attached yet: nothing runs it.
                unsafe { code.patch(at as usize, &bytes) }.map_err(|e| CompileError::Memory(e.to_string()))?;
            }
        }
        let slot_base = self.exit_slots.len() as u32;
        let virtual_base = self.virtuals.len() as u32;
        let field_base = self.virtual_fields.len() as u32;
        let write_base = self.exit_writes.len() as u32;
        self.exit_kinds.append(&g.exit_kinds);
        self.exits.extend(g.exits.drain(..).map(|e| match e {
            ExitInfo::Guard {
                guard,
                resume_key,
                fail,
                virtuals,
                writes,
                op,
            } => ExitInfo::Guard {
                guard,
                resume_key,
                fail: (fail.0 + slot_base, fail.1 + slot_base),
                virtuals: (virtuals.0 + virtual_base, virtuals.1 + virtual_base),
                writes: (writes.0 + write_base, writes.1 + write_base),
                op,
            },
            other => other,
        }));
        self.exit_slots.append(&mut g.exit_slots);
        self.virtuals.extend(g.virtuals.drain(..).map(|mut v| {
            v.fields = (v.fields.0 + field_base, v.fields.1 + field_base);
            v
        }));
        self.virtual_fields.append(&mut g.virtual_fields);
        self.exit_writes.append(&mut g.exit_writes);
        self.frame_words = self.frame_words.max(g.frame_words);
        let piece = self.tree.bridges.len() + 1;
        self.tree.register(bridge, &mut g, base, piece);
        self.tree.bridges.push(Piece {
            code,
            counters: std::mem::take(&mut g.counters),
            _array_layouts: std::mem::take(&mut g.array_layouts),
            _hook_ops: std::mem::take(&mut g.hook_ops),
        });
        let site = self.tree.guards.get_mut(&guard).expect("checked by bridge_env");
        site.bridged = true;
        let (from, at) = (site.piece, site.tail.tail as usize);
        let jumps = site.tail.jumps;
        let target = match from {
            0 => &mut self.code,
            k => &mut self.tree.bridges[k - 1].code,
        };
        // The guard's own jumps go straight to the bridge where it is within reach.
        for &d in &self.tree.guard_jumps[jumps.0 as usize..jumps.1 as usize] {
            let next = target.as_ptr() as u64 + u64::from(d) + 4;
            if let Some(rel) = rel32_between(next, base) {
                // SAFETY: `&mut self`: no run of this tree is in progress, so no thread runs the
                // code being patched.
                unsafe { target.patch(d as usize, &rel.to_le_bytes()) }
                    .map_err(|e| CompileError::Memory(e.to_string()))?;
            }
        }
        let next = target.as_ptr() as u64 + at as u64 + 5;
        let bytes = match rel32_between(next, base) {
            // jmp rel32 (E9 rel32).
            Some(rel) => [&[0xe9][..], &rel.to_le_bytes()].concat(),
            // mov r11, imm64 (49 BB imm64); jmp r11 (41 FF E3).
            None => [&[0x49, 0xbb][..], &base.to_le_bytes(), &[0x41, 0xff, 0xe3]].concat(),
        };
        debug_assert!(bytes.len() <= PATCH_LEN);
        // SAFETY: `&mut self`: no run of this tree is in progress, so no thread runs the
        // code being patched.
        unsafe { target.patch(at, &bytes) }.map_err(|e| CompileError::Memory(e.to_string()))
    }
}

impl Compiler {
    /// Compile `bridge` and attach it to the guard with id `guard` of `tree` (see
    /// [`CompiledTrace::attach_bridge`]), reusing this context's buffers.
    ///
    /// The bridge must verify (`trace_ir::verify`), take one input per exit word of the
    /// guard, of its kind, and have guard ids the tree does not have; a `jump` into a label
    /// of the tree must pass values known to be non-null (in native code: constants,
    /// allocations, checked values, exit words the loop knew to be non-null) where the
    /// loop's code takes a parameter to be non-null. With the loop and the bridges attached
    /// before it, it must form a tree `trace_ir::verify_tree` accepts (native code does not
    /// check that a label it enters only reads values the path computed). The bridge is
    /// compiled in the tree's [`crate::MemoryAccess`] mode (`opts.memory` must be the
    /// tree's; in Hooks mode a [`crate::HookRequest`] says which trace of the tree its op
    /// is in). A refused bridge leaves the tree as it was.
    ///
    /// Patching needs `&mut` access to the tree: no thread can be running it meanwhile (an
    /// embedder that shares compiled code between threads attaches bridges while it holds
    /// the tree exclusively, e.g. behind a `RwLock`).
    pub fn attach_bridge(
        &mut self,
        tree: &mut CompiledTrace,
        guard: GuardId,
        bridge: &Trace,
        opts: &CompileOptions,
    ) -> Result<(), CompileError> {
        opts.check()?;
        trace_ir::verify(bridge).map_err(|e| CompileError::BadTrace(e.to_string()))?;
        let env = tree.bridge_env(guard, bridge, opts)?;
        let rooms = std::mem::take(&mut self.rooms);
        let (mut g, rooms) = codegen::Gen::new(bridge, opts, rooms, Some(env))
            .and_then(codegen::Gen::generate)
            .map_err(|e| *e)?;
        self.rooms = rooms;
        let len = g.code.len();
        let (ranges, unwind) = (std::mem::take(&mut g.ranges), std::mem::take(&mut g.unwind));
        tree.add_bridge(guard, bridge, g)?;
        let code = &mut tree.tree.bridges.last_mut().expect("just added").code;
        if opts.log_asm {
            eprintln!("; bridge out of {guard} at {:#x}, {len} bytes", code.as_ptr() as u64);
            eprint!("{}", crate::disasm(code.bytes(), code.as_ptr() as u64));
        }
        if crate::debuginfo::wanted(opts) {
            let piece = crate::debuginfo::Piece {
                trace: bridge,
                code: code.bytes(),
                ranges: &ranges,
                unwind: &unwind,
                bridge_of: Some(guard),
            };
            let reg = crate::debuginfo::register(opts, &piece);
            code.set_registration(reg);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmove::Loc;

    /// A loop whose `Guard1` has a bridge (`trace-ir/tests/data/branchy.tree`), with the
    /// guard's last exit word replaced by `last` when given.
    fn branchy(last: Option<&str>) -> trace_ir::TraceTree {
        let mut text = include_str!("../../trace-ir/tests/data/branchy.tree").to_string();
        if let Some(w) = last {
            text = text.replace(
                "descr=<Guard1>) [i0, i1, i2]",
                &format!("descr=<Guard1>) [i0, i1, {w}]"),
            );
        }
        trace_ir::parse_tree(&text).unwrap()
    }

    fn opts(int_regs: usize) -> CompileOptions {
        CompileOptions {
            int_regs,
            ..CompileOptions::default()
        }
    }

    /// The bridge of `tree` generated for its guard of `root` (not attached): the facts
    /// it starts from and its code.
    fn bridge_code(
        tree: &trace_ir::TraceTree,
        root: &CompiledTrace,
        o: &CompileOptions,
    ) -> (Vec<WordFact>, codegen::Generated) {
        let b = &tree.bridges[0];
        let env = root.bridge_env(b.guard, &b.trace, o).unwrap();
        let facts = env.entry.clone();
        let (g, _) = codegen::Gen::new(&b.trace, o, codegen::Rooms::default(), Some(env))
            .and_then(codegen::Gen::generate)
            .unwrap();
        (facts, g)
    }

    /// The first op's code starts at offset `at` of `g` (what the entry emitted before it).
    fn first_op_at(g: &codegen::Generated) -> u32 {
        g.ranges.first().expect("an op").1
    }

    #[test]
    fn a_bridge_starts_with_its_inputs_where_the_guard_left_them() {
        // In registers, or with three registers some in the loop's spill slots: the bridge
        // adopts every location, and its entry moves nothing.
        for int_regs in [13, 3] {
            let tree = branchy(None);
            let root = crate::compile(&tree.root, &opts(int_regs)).unwrap();
            let (facts, g) = bridge_code(&tree, &root, &opts(int_regs));
            assert_eq!(facts.len(), 3);
            assert!(
                facts.iter().all(|f| matches!(f.at, Loc::Reg(_) | Loc::Mem(_))),
                "{facts:?}"
            );
            let in_slots = facts.iter().filter(|f| matches!(f.at, Loc::Mem(_))).count();
            assert_eq!(in_slots > 0, int_regs == 3, "{facts:?}");
            assert_eq!(first_op_at(&g), 0, "int_regs={int_regs}: the entry moved inputs");
        }
    }

    #[test]
    fn a_constant_exit_word_is_moved_into_a_slot_of_the_bridge() {
        let tree = branchy(Some("5"));
        let root = crate::compile(&tree.root, &opts(13)).unwrap();
        let (facts, g) = bridge_code(&tree, &root, &opts(13));
        assert_eq!(facts[2].at, Loc::Imm(5));
        assert!(first_op_at(&g) > 0, "the constant needs a home");
    }

    #[test]
    fn attaching_a_bridge_retargets_the_guards_jumps() {
        let tree = branchy(None);
        let mut root = crate::compile(&tree.root, &opts(13)).unwrap();
        let b = &tree.bridges[0];
        let site = root.tree.guards[&b.guard].clone();
        let jumps = root.tree.guard_jumps[site.tail.jumps.0 as usize..site.tail.jumps.1 as usize].to_vec();
        assert!(!jumps.is_empty(), "the guard's jcc is listed");
        let target = |code: &[u8], base: u64, d: u32| {
            let rel = i32::from_le_bytes(code[d as usize..d as usize + 4].try_into().unwrap());
            (base + u64::from(d) + 4).wrapping_add(rel as i64 as u64)
        };
        let base = root.code.as_ptr() as u64;
        for &d in &jumps {
            assert_eq!(
                target(root.code(), base, d),
                base + u64::from(site.tail.tail),
                "to the stub"
            );
        }
        root.attach_bridge(b.guard, &b.trace, &opts(13)).unwrap();
        let bridge = root.tree.bridges[0].code.as_ptr() as u64;
        for &d in &jumps {
            assert_eq!(target(root.code(), base, d), bridge, "to the bridge");
        }
    }
}
