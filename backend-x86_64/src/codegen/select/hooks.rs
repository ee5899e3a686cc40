//! Ops handed to the embedder's [`crate::Runtime`] instead of being compiled inline
//! ([`crate::MemoryAccess::Hooks`] mode, and the few ops Direct mode has no inline code for).
//!
//! # Calling sequence
//! The op's operand values (constants included) are stored into a block of frame words
//! reserved for hook operands (one block, grown when an op needs more words, shared by all
//! hooked ops), then `tramp_hook(ctx, &HookOp)` is called with the ordinary call sequence
//! (`call_inner`: live values in caller-saved registers saved, stack aligned). The trampoline
//! builds a [`crate::HookRequest`] from the block, calls [`crate::Runtime::exec`], writes the
//! result into the block's first word and returns a status in `eax`:
//!
//! ```text
//!   mov [rbp + area + 8k], operand k      ; every operand
//!   mov rdi, [rbp]                        ; runtime context
//!   mov rsi, hookop                       ; what to do
//!   call tramp_hook
//!   cmp eax, HOOK_INVALID ; je invalid-exit
//!   cmp eax, HOOK_GUARD_FAILS ; je guard-exit    (guards)
//!   mov dst, [rbp + area]                 ; ops with a result
//! ```
//!
//! In Direct mode the exception ops (`save_exception`, `save_exc_class`, `restore_exception`,
//! `guard_exception`, and `guard_no_exception` when the trace has any of them) use the same
//! sequence but are served by the trampoline from a per-run exception state, without asking
//! the runtime: native functions called in Direct mode cannot raise, so only
//! `restore_exception` sets that state.
//!
//! A guard's fail arguments (and its virtual objects' field values) that sit in caller-saved
//! registers are stored to their spill slots before the call, since the exit stub reads them
//! after it.

use super::calls::ArgSrc;
use crate::codegen::emit::Cond;
use crate::codegen::regs::{RegSet, CALLER_SAVED_GPR};
use crate::codegen::{Gen, R};
use crate::pmove::Loc;
use crate::runtime::{self, HookOp, HOOK_GUARD_FAILS, HOOK_INVALID};
use crate::{CompileOptions, MemoryAccess};
use dynasmrt::{dynasm, DynasmApi};
use std::sync::OnceLock;
use trace_ir::{Kind, OpFlags, OpRef, Opcode, Trace};

/// Per-compilation state of the hook calls.
pub(crate) struct HookState {
    /// Hooks mode (every memory, call and exception op goes to the runtime).
    pub(crate) all: bool,
    /// The operand block: first spill slot and number of words.
    area: Option<(u32, u32)>,
    /// The ops the code hands over (boxed: the code embeds their addresses).
    #[allow(clippy::vec_box)]
    pub(crate) ops: Vec<Box<HookOp>>,
    /// [`Self::routes`] as a bit set over opcodes, one of three tables made once. In Direct
    /// mode, when the trace sets or reads the exception state, exception ops (and
    /// `guard_no_exception`) are served by the per-run state of the trampoline.
    routed: &'static [u64],
}

/// The ops routed to the runtime in each mode as bit sets over opcodes: Direct mode,
/// Direct mode of a trace with exception ops, Hooks mode.
pub(crate) fn routing_tables() -> &'static [Vec<u64>; 3] {
    static TABLES: OnceLock<[Vec<u64>; 3]> = OnceLock::new();
    TABLES.get_or_init(|| {
        let table = |routed: fn(Opcode) -> bool| {
            let mut bits = vec![0u64; Opcode::ALL.len().div_ceil(64)];
            for &opc in Opcode::ALL {
                if routed(opc) {
                    bits[opc as usize / 64] |= 1 << (opc as usize % 64);
                }
            }
            bits
        };
        [
            table(hooked_in_direct_mode),
            table(|opc| hooked_in_direct_mode(opc) || sets_or_reads_exception(opc) || opc == Opcode::GuardNoException),
            table(hooked_in_hooks_mode),
        ]
    })
}

impl HookState {
    pub(in crate::codegen) fn new(t: &Trace, opts: &CompileOptions) -> HookState {
        let all = opts.memory == MemoryAccess::Hooks;
        let direct_exceptions = !all && t.ops.iter().any(|o| sets_or_reads_exception(o.opcode));
        let [direct, direct_exc, hooks] = routing_tables();
        HookState {
            all,
            area: None,
            ops: Vec::new(),
            routed: match (all, direct_exceptions) {
                (true, _) => hooks,
                (false, true) => direct_exc,
                (false, false) => direct,
            },
        }
    }

    /// Whether the op goes to the runtime in this compilation.
    pub(super) fn routes(&self, opc: Opcode) -> bool {
        self.routed[opc as usize / 64] & (1 << (opc as usize % 64)) != 0
    }
}

/// The ops that set or read the exception state, apart from `guard_no_exception`.
pub(crate) fn sets_or_reads_exception(opc: Opcode) -> bool {
    use Opcode::*;
    matches!(opc, SaveException | SaveExcClass | RestoreException | GuardException)
}

/// The ops Hooks mode hands to the runtime: everything that reads or writes memory,
/// allocates, calls, or reads or sets the exception state, `guard_not_invalidated` (whose
/// answer is the embedder's), `record_exact_class` (a promise about an object's class,
/// which the runtime may check or record) and `record_known_result` (a promise about what a
/// call returns, likewise).
pub(crate) fn hooked_in_hooks_mode(opc: Opcode) -> bool {
    use Opcode::*;
    opc.has(OpFlags::READS_HEAP)
        || opc.has(OpFlags::WRITES_HEAP)
        || opc.has(OpFlags::ALLOC)
        || opc.is_call()
        || matches!(
            opc,
            SaveException
                | SaveExcClass
                | RestoreException
                | GuardException
                | GuardNoException
                | GuardNotInvalidated
                | RecordExactClass
                | RecordKnownResult
                | RecordKnownField
        )
}

/// The ops Direct mode hands to the runtime because it has no inline code for them: string
/// and unicode ops, `guard_gc_type` and `guard_is_object` (served on real memory by
/// [`crate::exec_in_memory`], or by the embedder), and `call_assembler_*` (the embedder
/// knows its compiled loops; the default runtime answers that it cannot call them).
pub(crate) fn hooked_in_direct_mode(opc: Opcode) -> bool {
    use Opcode::*;
    matches!(
        opc,
        Newstr
            | Newunicode
            | Strlen
            | Strgetitem
            | Strsetitem
            | Strhash
            | Copystrcontent
            | Unicodelen
            | Unicodegetitem
            | Unicodesetitem
            | Unicodehash
            | Copyunicodecontent
            | GuardGcType
            | GuardIsObject
            | CallAssemblerI
            | CallAssemblerR
            | CallAssemblerF
            | CallAssemblerN
    )
}

impl Gen<'_> {
    /// `n` consecutive frame words for hook operands: the first spill slot.
    pub(super) fn hook_area(&mut self, n: u32) -> u32 {
        match self.hk.area {
            Some((first, len)) if len >= n => first,
            _ => {
                let first = self.r.ra.nslots();
                for _ in 0..n {
                    self.r.ra.new_slot();
                }
                self.hk.area = Some((first, n));
                first
            }
        }
    }

    /// Compile the op at `at` as a call into the runtime (see the module documentation).
    pub(super) fn hook_op(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let n = op.args.len();
        let first = self.hook_area(n.max(1) as u32);
        for (k, &v) in op.args.iter().enumerate() {
            let src = self.loc(v)?;
            let d = self.frame.slot_disp(first + k as u32);
            self.em.mov(Loc::Mem(d), src);
        }
        let guard = opc.is_guard();
        if guard {
            // The exit stub reads the guard's values after the call.
            let mut read = Vec::new();
            op.for_each_value_read(&t.guards, |v| {
                if let Some(o) = v.as_op() {
                    read.push(o.index());
                }
            });
            for v in read {
                if self
                    .r
                    .ra
                    .reg_of(v)
                    .is_some_and(|r| r.is_xmm() || CALLER_SAVED_GPR.contains(&r))
                {
                    self.ensure_slot(v)?;
                }
            }
        }
        let hop = Box::new(HookOp {
            trace: self.bridge.as_ref().map_or(0, |b| b.piece),
            op: OpRef::new(at),
            opcode: opc,
            descr: op.descr.map(|d| t.descr(d).clone()),
            area: self.frame.slot_word(first),
            nargs: n,
            local: !self.hk.all && (sets_or_reads_exception(opc) || opc == Opcode::GuardNoException),
        });
        let hp = &*hop as *const HookOp as u64;
        self.hk.ops.push(hop);
        let f = runtime::tramp_hook as *const () as usize as u64;
        self.call(
            Loc::Imm(f),
            &[ArgSrc::Ctx, ArgSrc::Loc(Loc::Imm(hp), Kind::Int)],
            Kind::Void,
        )?;
        let inv = self.invalid_exit();
        let (invalid, fails) = (HOOK_INVALID as i32, HOOK_GUARD_FAILS as i32);
        dynasm!(self.em.asm ; .arch x64 ; cmp eax, invalid);
        self.jcc_stub(Cond::E, inv);
        if guard {
            dynasm!(self.em.asm ; .arch x64 ; cmp eax, fails);
            self.guard_exit(Cond::E, None)?;
        }
        let kind = opc.result_kind();
        if kind != Kind::Void {
            let d = self.alloc_reg(kind, RegSet::EMPTY)?;
            let src = self.frame.slot_disp(first);
            self.em.mov(d.loc(), Loc::Mem(src));
            self.def(d);
        }
        Ok(())
    }
}
