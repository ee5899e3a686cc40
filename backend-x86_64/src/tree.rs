//! Trace trees in native code: guard failure counters, and bridges attached to guards.
//!
//! Every guard's exit stub first increments the guard's failure counter (one memory
//! increment), then stores the guard's exit values into the frame, and ends in a patchable
//! tail: `jmp` to the epilogue, with room after it for `mov r11, imm64; jmp r11`. Attaching
//! a bridge compiles it into the tree (its frame words after every word of the traces
//! compiled before it, its exit codes after theirs) and rewrites that tail to jump to the
//! bridge. The bridge's entry copies its inputs (the guard's exit words, from the frame words
//! the stub left them in, or constants) into its own input slots; a `jump` naming a label
//! of the tree moves its operands into the label's parameter locations and jumps there.
//! The loop and its bridges are one [`CompiledTrace`]: run together, freed together.

use crate::codegen::{self, BridgeEnv, GuardTail, TreeLabel, TAIL_PAD};
use crate::codemem::CodeMemory;
use crate::runtime;
use crate::{CompileError, CompileOptions, CompiledTrace, Compiler, ExitInfo, ExitSlot, MemoryAccess};
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
    /// Its exit code, stub tail and exit words (word ranges into `Tree::word_facts`).
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
    /// The exit words of every guard: kind, known non-null.
    word_facts: Vec<(Kind, bool)>,
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
        if self.word_facts.is_empty() {
            self.word_facts = std::mem::take(&mut g.word_facts);
        } else {
            self.word_facts.append(&mut g.word_facts);
        }
        self.guards.reserve(trace.guards.len());
        for (index, (gd, tail)) in trace.guards.iter().zip(&g.tails).enumerate() {
            let mut tail = *tail;
            tail.words = (tail.words.0 + first, tail.words.1 + first);
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

fn refuse<T>(msg: String) -> Result<T, CompileError> {
    Err(CompileError::Bridge(msg))
}

impl CompiledTrace {
    /// How many times the guard with id `guard` failed in this code (in the loop or in a
    /// bridge of it), counted by its exit stub whether or not a bridge is attached; `None`
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
        if self.memory != MemoryAccess::Direct || opts.memory != MemoryAccess::Direct {
            return refuse("bridges are compiled in Direct mode only".into());
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
        let want: Vec<Kind> = facts.iter().map(|f| f.0).collect();
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
        let ExitInfo::Guard {
            fail, virtuals, writes, ..
        } = self.exits[site.tail.exit as usize]
        else {
            return Err(CompileError::Internal(format!("{guard}'s exit is not a guard exit")));
        };
        let entry: Vec<ExitSlot> = self
            .exit_entries(fail, virtuals, writes)
            .filter(|s| matches!(s, ExitSlot::Frame(_) | ExitSlot::Const(_)))
            .cloned()
            .collect();
        if entry.len() != want.len() {
            return Err(CompileError::Internal(format!(
                "{guard}: exit words and their slots disagree"
            )));
        }
        Ok(BridgeEnv {
            entry,
            nonnull: facts.iter().map(|f| f.1).collect(),
            exit_at: self.frame_words,
            code_base: self.exits.len() as u32,
            labels: &self.tree.labels,
        })
    }

    /// Add the generated code of `bridge` to the tree and redirect `guard`'s stub to it.
    fn add_bridge(&mut self, guard: GuardId, bridge: &Trace, mut g: codegen::Generated) -> Result<(), CompileError> {
        // Next to the loop where its region has room.
        let code =
            CodeMemory::new_near(&g.code, Some(self.code.as_ptr())).map_err(|e| CompileError::Memory(e.to_string()))?;
        let base = code.as_ptr() as u64;
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
        // mov r11, imm64 (49 BB imm64); jmp r11 (41 FF E3): 13 bytes over the tail's
        // `jmp rel32` and its padding.
        let mut bytes = vec![0x49, 0xbb];
        bytes.extend_from_slice(&base.to_le_bytes());
        bytes.extend_from_slice(&[0x41, 0xff, 0xe3]);
        debug_assert_eq!(bytes.len(), 5 + TAIL_PAD);
        let target = match from {
            0 => &mut self.code,
            k => &mut self.tree.bridges[k - 1].code,
        };
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
    /// check that a label it enters only reads values the path computed). Both the tree and
    /// the bridge must be compiled in [`MemoryAccess::Direct`] mode. A refused bridge leaves
    /// the tree as it was.
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
