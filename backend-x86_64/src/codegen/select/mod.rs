//! Instruction selection: the op dispatch, one function per op family in the files below.

mod calls;
mod float;
mod guards;
mod heap;
pub(super) mod hooks;
mod int;

pub(super) use calls::Calls;
pub(super) use heap::HeapFacts;

use super::fusion::Fusion;
use super::{Gen, R};
use crate::{CompileError, ExitInfo};
use trace_ir::{OpRef, Opcode, Value};

impl Gen<'_> {
    /// Compile the op at `at`, given what the op before it left in the flags (`fusion`);
    /// returns what this op leaves for the next one.
    pub(super) fn op(&mut self, at: usize, fusion: Fusion) -> R<Fusion> {
        use Opcode::*;
        let t = self.t;
        let op = &t.ops[at];
        let opc = op.opcode;
        // The operands as a plain slice: one look at the small vector's inline/heap state.
        let args: &[Value] = &op.args;
        let a = |i: usize| args[i];
        if at > 0 && self.may_write(t.ops[at - 1].opcode) {
            self.r.heap.forget_memory();
        }
        if opc == ArraylenGc {
            self.r.heap.note_len(at);
        }
        if self.hk.routes(opc) {
            self.hook_op(at)?;
            return Ok(Fusion::None);
        }
        match opc {
            IntAdd | IntSub | IntAnd | IntOr | IntXor | IntMul | IntAddOvf | IntSubOvf | IntMulOvf => {
                return self.int_binary(at)
            }
            IntNeg | IntInvert => self.int_neg_invert(at)?,
            SameAsI | SameAsR | SameAsF | CastPtrToInt | CastIntToPtr => self.int_copy(at)?,
            IntForceGeZero => self.int_force_ge_zero(at)?,
            IntSelect => self.int_select(at)?,
            IntLshift | IntRshift | UintRshift => self.shift(opc, a(0), a(1))?,
            IntFloorDiv | IntMod | IntPyDiv | IntPyMod => self.divide(opc, a(0), a(1))?,
            UintMulHigh => self.uint_mul_high(at)?,
            IntSignext => self.signext(a(0), a(1))?,
            IntLt | IntLe | IntGt | IntGe | IntEq | IntNe | UintLt | UintLe | UintGt | UintGe | PtrEq | PtrNe
            | InstancePtrEq | InstancePtrNe => return self.int_compare(at, fusion),
            IntIsTrue | IntIsZero => return self.int_is_true_zero(at, fusion),
            FloatAdd | FloatSub | FloatMul | FloatTrueDiv => self.float_binary(at)?,
            FloatNeg | FloatAbs => self.float_neg_abs(at)?,
            FloatSqrt => self.float_sqrt(at)?,
            FloatLt | FloatLe | FloatGt | FloatGe | FloatEq | FloatNe => self.float_compare(at)?,
            CastIntToFloat => self.cast_int_to_float(at)?,
            CastFloatToInt => self.cast_float_to_int(at)?,
            ConvertFloatBytesToLonglong | ConvertLonglongBytesToFloat => self.convert_bytes(at)?,
            GuardTrue | GuardFalse => self.guard_bool(at, fusion)?,
            GuardNoOverflow | GuardOverflow => self.guard_overflow(at, fusion)?,
            GuardValue => self.guard_value(at)?,
            GuardNonnull | GuardIsnull => self.guard_null(at)?,
            GuardClass | GuardNonnullClass | GuardSubclass => self.guard_class(at)?,
            GuardNotInvalidated | GuardFutureCondition | GuardNotForced | GuardNotForced2 | GuardNoException => {
                // Never fail in this backend: nothing invalidates or forces compiled code, and
                // no exception can be pending (calls never raise, as in the interpreter, and
                // the ops that set the exception state are not supported).
            }
            ForceToken => self.force_token()?,
            VirtualRef => self.virtual_ref(at)?,
            VirtualRefFinish => self.virtual_ref_finish(at)?,
            // ---- hints -------------------------------------------------------------------
            Keepalive | EnterPortalFrame | LeavePortalFrame | RecordKnownResult | RecordKnownField
            | RecordExactClass | AssertNotNone | RecordIntRange | RecordIntBits | RecordExactValueR
            | RecordExactValueI | QuasiimmutField => {}
            GetfieldGcI | GetfieldGcR | GetfieldGcF | GetfieldRawI | GetfieldRawR | GetfieldRawF => {
                self.getfield(at)?
            }
            SetfieldGc | SetfieldRaw => self.setfield(at)?,
            ArraylenGc => self.arraylen(at)?,
            GetinteriorfieldGcI | GetinteriorfieldGcR | GetinteriorfieldGcF => self.getinteriorfield(at)?,
            SetinteriorfieldGc | SetinteriorfieldRaw => self.setinteriorfield(at)?,
            GcLoadI | GcLoadR | GcLoadF | GcLoadIndexedI | GcLoadIndexedR | GcLoadIndexedF | GcStore
            | GcStoreIndexed => self.gc_access(at)?,
            GetarrayitemGcI | GetarrayitemGcR | GetarrayitemGcF | GetarrayitemGcPureI | GetarrayitemGcPureR
            | GetarrayitemGcPureF | GetarrayitemRawI | GetarrayitemRawF | RawLoadI | RawLoadF => {
                self.getarrayitem(at)?
            }
            SetarrayitemGc | SetarrayitemRaw | RawStore => self.setarrayitem(at)?,
            New | NewWithVtable => self.new_object(at)?,
            NewArray | NewArrayClear => self.new_array(at)?,
            CallI | CallR | CallF | CallN | CallPureI | CallPureR | CallPureF | CallPureN | CallLoopinvariantI
            | CallLoopinvariantR | CallLoopinvariantF | CallLoopinvariantN | CallMayForceI | CallMayForceR
            | CallMayForceF | CallMayForceN => self.call_op(at)?,
            CondCallN | CondCallValueI | CondCallValueR => self.cond_call_op(at)?,

            Jump => self.jump(at)?,
            Finish => {
                let at = self.frame.exit_word(0) as u32;
                self.leave(&op.args, ExitInfo::Finish { at, n: op.args.len() })?
            }
            _ => {
                return Err(Box::new(CompileError::Unsupported {
                    op: OpRef::new(at),
                    opcode: opc,
                }))
            }
        }
        Ok(Fusion::None)
    }
}
