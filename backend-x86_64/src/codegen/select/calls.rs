//! Instruction selection of calls (System V) and allocations.

use crate::checker::Event;
use crate::codegen::emit::{Cond, CHECK};
use crate::codegen::regs::{Reg, CALLER_SAVED_GPR, CALL_CLOBBERED, INT_ARG_REGS, R11, RAX, XMM0};
use crate::codegen::{bad, kind_of, Gen, R};
use crate::pmove::Loc;
use crate::runtime::{self, ArrayLayout};
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};
use trace_ir::{Kind, OpRef, Opcode, SizeDescr, Value};

/// The working memory of calls (reused from trace to trace) and the data the code of
/// allocations points to.
#[derive(Default)]
pub(in crate::codegen) struct Calls {
    /// The register moves of the current call's arguments.
    pub(in crate::codegen) moves: Vec<(Loc, Loc)>,
    /// The arguments of the current call op.
    pub(in crate::codegen) args: Vec<ArgSrc>,
    /// Layouts whose addresses the code embeds (boxed so they never move).
    #[allow(clippy::vec_box)]
    pub(in crate::codegen) array_layouts: Vec<Box<ArrayLayout>>,
}

impl Gen<'_> {
    /// `new`, `new_with_vtable`.
    pub(super) fn new_object(&mut self, at: usize) -> R<()> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let sd = op
            .descr
            .and_then(|d| t.descr(d).as_size())
            .ok_or_else(|| bad("allocation without a size descriptor"))?;
        let class = if opc == NewWithVtable {
            trace_ir::abi::default_class(sd)
        } else {
            0
        };
        self.allocate_object(at, sd, class)
    }

    /// An instance of `sd` (with class `class`, 0 for none) as the result of the op at `at`,
    /// in `rax`.
    pub(super) fn allocate_object(&mut self, at: usize, sd: &SizeDescr, class: u64) -> R<()> {
        let size = sd.size.max(if class != 0 { 8 } else { 0 }) as u64;
        let f = runtime::tramp_new as *const () as usize as u64;
        self.call(
            Loc::Imm(f),
            &[
                ArgSrc::Ctx,
                ArgSrc::Loc(Loc::Imm(size), Kind::Int),
                ArgSrc::Loc(Loc::Imm(class), Kind::Int),
            ],
            Kind::Ref,
        )?;
        let inv = self.invalid_exit();
        dynasm!(self.em.asm ; .arch x64 ; test rax, rax);
        self.jcc_stub(Cond::E, inv);
        // A failed allocation has left: the object is not null from here on.
        self.r.heap.make_nonnull(Value::op(OpRef::new(at)));
        Ok(())
    }

    /// `new_array`, `new_array_clear`.
    pub(super) fn new_array(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let ad = self.array(op)?;
        let layout = Box::new(ArrayLayout {
            item_size: ad.item_size as u64,
            base_offset: ad.base_offset.max(0) as u64,
            len_offset: ad.len_offset.max(0) as u64,
        });
        let lp = &*layout as *const ArrayLayout as u64;
        self.r.calls.array_layouts.push(layout);
        let f = runtime::tramp_new_array as *const () as usize as u64;
        self.call(
            Loc::Imm(f),
            &[ArgSrc::Ctx, ArgSrc::Value(a(0)), ArgSrc::Loc(Loc::Imm(lp), Kind::Int)],
            Kind::Ref,
        )?;
        let inv = self.invalid_exit();
        dynasm!(self.em.asm ; .arch x64 ; test rax, rax);
        self.jcc_stub(Cond::E, inv);
        // A failed allocation has left: the object is not null from here on.
        self.r.heap.make_nonnull(Value::op(OpRef::new(at)));
        Ok(())
    }

    /// `call_*`.
    pub(super) fn call_op(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let cd = op.descr.and_then(|d| t.descr(d).as_call());
        let nargs = op.args.len() - 1;
        let mut args = std::mem::take(&mut self.r.calls.args);
        args.clear();
        for k in 0..nargs {
            let v = a(k + 1);
            let kind = match cd.and_then(|c| c.args.get(k)) {
                Some(&k) => k,
                None => kind_of(t, v),
            };
            if kind != kind_of(t, v) {
                return Err(bad("call argument kind differs from its descriptor"));
            }
            args.push(ArgSrc::Value(v));
        }
        self.call_inner(None, Some(a(0)), &args, opc.result_kind(), None)?;
        self.r.calls.args = args;
        Ok(())
    }

    /// `cond_call`, `cond_call_value_*`.
    pub(super) fn cond_call_op(&mut self, at: usize) -> R<()> {
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        let nargs = op.args.len() - 2;
        let mut args = std::mem::take(&mut self.r.calls.args);
        args.clear();
        args.extend((0..nargs).map(|k| ArgSrc::Value(a(k + 2))));
        self.call_inner(None, Some(a(1)), &args, opc.result_kind(), Some(a(0)))?;
        self.r.calls.args = args;
        Ok(())
    }

    /// Move every value that lives past the current op out of the registers a call
    /// clobbers (to free callee-saved registers when possible, else to their slots).
    fn save_live_caller_saved(&mut self) -> R<()> {
        let (ra, mut cx) = self.ra();
        ra.save_live_across_call(&mut cx, CALL_CLOBBERED)
    }

    /// A call of `f` with `args`, its result of kind `result` defined (see
    /// [`Gen::call_inner`]).
    pub(super) fn call(&mut self, f: Loc, args: &[ArgSrc], result: Kind) -> R<()> {
        self.call_inner(Some(f), None, args, result, None)
    }

    /// A System V call: live caller-saved values saved, arguments beyond the 6 integer and
    /// 8 float argument registers pushed (right to left, padded to keep `rsp` 16-byte
    /// aligned, popped after the call), the others moved in parallel into their registers
    /// (function address into `rax`), result in `rax`/`xmm0`.
    ///
    /// With `cond` (`cond_call`, `cond_call_value_*`): `cond_call` calls only when the
    /// condition is non-zero; `cond_call_value` returns the value when it is non-zero and
    /// calls otherwise. Saving live values happens before the branch, so both paths leave
    /// the same allocation state (the skipping path clobbers a subset of the registers).
    pub(super) fn call_inner(
        &mut self,
        f: Option<Loc>,
        fv: Option<Value>,
        args: &[ArgSrc],
        result: Kind,
        cond: Option<Value>,
    ) -> R<()> {
        self.save_live_caller_saved()?;
        let skip = match cond {
            Some(c) => Some(self.skip_unless(c, result)?),
            None => None,
        };
        let mut moves = std::mem::take(&mut self.r.calls.moves);
        moves.clear();
        // Arguments beyond the argument registers go on the stack (System V: the first
        // stack argument at `[rsp]` at the call, 8 bytes each, `rsp` 16-byte aligned there;
        // the body runs with `rsp` aligned, see the prologue). Their sources, in argument
        // order; empty (no allocation) for calls with register arguments only.
        let mut stack: Vec<Loc> = Vec::new();
        let (mut ni, mut nf) = (0, 0);
        for a in args {
            let (src, kind) = match *a {
                ArgSrc::Ctx => (Loc::Mem(0), Kind::Int),
                ArgSrc::Loc(l, k) => (l, k),
                ArgSrc::Value(v) => (self.loc(v)?, kind_of(self.t, v)),
            };
            match arg_reg(kind, &mut ni, &mut nf) {
                Some(d) => moves.push((d.loc(), src)),
                None => stack.push(src),
            }
        }
        let fsrc = match (f, fv) {
            (Some(l), _) => l,
            (None, Some(v)) => self.loc(v)?,
            _ => unreachable!(),
        };
        // Stack arguments first, pushed right to left, while every source still holds its
        // value (the register moves below may overwrite them). Pushing touches no register
        // or frame word the allocator tracks (only `rsp` and the scratch `r11`).
        let stack_bytes = 8 * (stack.len() + stack.len() % 2) as i32;
        if stack.len() % 2 == 1 {
            dynasm!(self.em.asm ; .arch x64 ; sub rsp, 8);
            self.em.sp_moved(8);
        }
        for &src in stack.iter().rev() {
            self.em.push_arg(src);
        }
        moves.push((RAX.loc(), fsrc));
        self.r.pm.emit(&mut self.em, &moves);
        if CHECK {
            self.expect_register_arguments(args, &moves);
        }
        self.r.calls.moves = moves;
        dynasm!(self.em.asm ; .arch x64 ; call rax);
        if stack_bytes != 0 {
            // The caller pops the stack arguments (`lea` keeps the flags, though nothing
            // reads them after a call).
            dynasm!(self.em.asm ; .arch x64 ; lea rsp, [rsp + stack_bytes]);
            self.em.sp_moved(-stack_bytes);
        }
        if let Some(skip) = skip {
            if result == Kind::Void {
                dynasm!(self.em.asm ; .arch x64 ; =>skip);
            } else {
                let done = self.em.asm.new_dynamic_label();
                dynasm!(self.em.asm ; .arch x64 ; jmp =>done ; =>skip ; mov rax, r11 ; =>done);
            }
        }
        self.after_call(result);
        Ok(())
    }

    /// The branch of a conditional call: past the call (to the returned label) when `cond`
    /// is zero for `cond_call` (`result` void), when it is non-zero for `cond_call_value`
    /// (its value, left in `r11`, is then the result).
    fn skip_unless(&mut self, cond: Value, result: Kind) -> R<DynamicLabel> {
        let l = self.loc(cond)?;
        self.em.mov(R11.loc(), l);
        let skip = self.em.asm.new_dynamic_label();
        if result == Kind::Void {
            dynasm!(self.em.asm ; .arch x64 ; test r11, r11 ; jz =>skip);
        } else {
            dynasm!(self.em.asm ; .arch x64 ; test r11, r11 ; jnz =>skip);
        }
        Ok(skip)
    }

    /// For the checker: the argument registers hold the argument values (the register
    /// arguments are `moves[..]` in argument order).
    fn expect_register_arguments(&self, args: &[ArgSrc], moves: &[(Loc, Loc)]) {
        let mut regs = moves.iter();
        let (mut ni, mut nf) = (0, 0);
        for a in args {
            let kind = match *a {
                ArgSrc::Ctx => Kind::Int,
                ArgSrc::Loc(_, k) => k,
                ArgSrc::Value(v) => kind_of(self.t, v),
            };
            if arg_reg(kind, &mut ni, &mut nf).is_none() {
                continue;
            }
            let d = regs.next().map(|m| m.0);
            if let (ArgSrc::Value(v), Some(d)) = (*a, d) {
                self.em.expect(d, self.val(v), self.pos);
            }
        }
    }

    /// After a call: every caller-saved register is clobbered (values living on are in
    /// slots or callee-saved registers now), and the result of kind `result` is in `rax` or
    /// `xmm0`.
    fn after_call(&mut self, result: Kind) {
        if CHECK {
            for r in CALLER_SAVED_GPR.into_iter().chain((0..16).map(Reg::xmm_reg)) {
                self.em.record(Event::Clobber { reg: r.number() });
            }
        }
        self.r.ra.release_all(CALL_CLOBBERED);
        match result {
            Kind::Int | Kind::Ref => self.def(RAX),
            Kind::Float => self.def(XMM0),
            Kind::Void => {}
        }
    }
}

/// A call argument.
#[derive(Copy, Clone, Debug)]
pub(crate) enum ArgSrc {
    /// The runtime context pointer (frame word 0).
    Ctx,
    /// A fixed location of the given kind.
    Loc(Loc, Kind),
    /// A trace value (its location is looked up when the arguments are moved).
    Value(Value),
}

/// The System V register of the next argument of kind `kind`, given the integer (`ni`) and
/// float (`nf`) arguments before it (counted here): `None` when it goes on the stack.
fn arg_reg(kind: Kind, ni: &mut u8, nf: &mut u8) -> Option<Reg> {
    if kind == Kind::Float {
        *nf += 1;
        (*nf <= 8).then(|| Reg::xmm_reg(*nf - 1))
    } else {
        *ni += 1;
        (*ni <= 6).then(|| INT_ARG_REGS[*ni as usize - 1])
    }
}
