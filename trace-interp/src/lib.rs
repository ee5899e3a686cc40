//! The reference interpreter of tracejit's trace IR: its executable semantics. Every op of
//! the opcode table runs here, deterministically, on concrete values with a modelled heap.
//! Every other stage (optimizer, backend, validator) is tested against it.
//!
//! Besides [`run`]: [`ModelHeap`], the interpreter's heap and call model driven op by op from
//! outside (native code in the backend's Hooks mode); [`compare`], the comparison of two runs;
//! [`guided`], inputs that make a trace run further. Features: `random`, the random trace
//! generator (module `random`); `native`, the backend's `Runtime` for [`ModelHeap`] and the outcome
//! of a native exit (module `native`).
//!
//! ```
//! use trace_ir::{TraceBuilder, Kind, Opcode};
//! use trace_interp::{run, Outcome, RtValue, RunConfig};
//! // sum = 0; i = 0; while i < n: sum += i; i += 1
//! let mut b = TraceBuilder::new();
//! let n = b.input(Kind::Int);
//! let zero = b.const_int(0);
//! let p = b.label(&[zero, zero, n]);
//! let (i, sum, n) = (p[0], p[1], p[2]);
//! let lt = b.op(Opcode::IntLt, &[i, n]);
//! b.guard(Opcode::GuardTrue, &[lt], &[sum], 0);
//! let sum2 = b.op(Opcode::IntAdd, &[sum, i]);
//! let one = b.const_int(1);
//! let i2 = b.op(Opcode::IntAdd, &[i, one]);
//! b.jump(&[i2, sum2, n]);
//! let trace = b.build().unwrap();
//! let r = run(&trace, &[RtValue::Int(5)], &RunConfig::default());
//! assert!(matches!(r.outcome, Outcome::GuardFailed { ref values, .. } if values == &[RtValue::Int(10)]));
//! ```
//!
//! # Values
//!
//! [`RtValue`] is a value with its kind: `Int(i64)`, `Float(bits)` or `Ref(address)`. Pure ops
//! are evaluated by [`trace_ir::eval::eval_pure`] on the bits (the function the optimizer's
//! constant folder calls too); overflow ops by [`trace_ir::eval::eval_ovf`].
//!
//! # Control flow
//!
//! Execution starts after the inputs. A `label` reached from above copies its operands into
//! its parameters. A `jump` resolves its target with [`trace_ir::jump_target`]: for a label it
//! assigns its operands to that label's parameters, for the trace start to the inputs, and
//! continues after them; this counts one iteration, and more than
//! [`RunConfig::max_iterations`] iterations stop the run with [`Outcome::IterationLimit`]. A
//! jump to another loop (`<LoopN>`, N >= 0) ends the run with [`Outcome::ExternalJump`].
//!
//! # Guards and exits
//!
//! A failing guard ends the run with [`Outcome::GuardFailed`] carrying its fail arguments:
//! `FailArg::Value` gives the value, `FailArg::Hole` gives `Int(0)`, and `FailArg::Virtual(i)`
//! allocates a fresh object in the heap from the guard's `virtuals[i]` (fields filled in,
//! nested virtuals rebuilt, each virtual at most once per exit so shared and cyclic
//! structures come out shared and cyclic) and passes its address. Guard conditions:
//! - `guard_true`/`guard_false`/`guard_value` on the operands' bits;
//! - `guard_no_overflow`/`guard_overflow` on the flag the last `_ovf` op recorded;
//! - `guard_nonnull`/`guard_isnull` on the address;
//! - class checks (`guard_class`, `guard_nonnull_class`, `guard_subclass`, `guard_gc_type`):
//!   an allocated object's class is its vtable (0 for `new` and arrays; no class hierarchy is
//!   modelled, so `guard_subclass` tests equality); for an external object see
//!   [`ClassPolicy`]; `guard_is_object` holds for external objects and instances allocated by
//!   `new_with_vtable`;
//! - `guard_no_exception`/`guard_exception` on the modelled exception state;
//! - `guard_not_invalidated` fails exactly when [`RunConfig::invalidated`];
//!   `guard_not_forced`, `guard_not_forced_2` and `guard_future_condition` always hold.
//!
//! # Heap and calls
//!
//! This is the executable form of the memory model, `docs/memory-model.md`; see [`heap`] for
//! its data (bytes and cells, allocated vs external objects, derived values of unwritten
//! memory, escape, the effect of heap-writing calls). A field access through null, an index
//! outside an allocated array's items or a string, or a negative or too large allocation
//! (over [`trace_ir::descr::MAX_ALLOC_BYTES`]) is an [`Outcome::Invalid`]; so is a broken promise
//! (`promise: true`): under [`trace_ir::Aliasing::TypeBased`] an access to bytes another
//! descriptor wrote, a write to a class or length word, a write to an immutable field of an
//! object the trace did not allocate, an immutable read of external bytes the trace wrote, an
//! `assert_not_none` of null or a `record_exact_class` naming another class. Raw memory (`*_raw`, `raw_load`, `raw_store`) is external
//! memory addressed by integer: `getfield_raw` at `addr + offset`, `getarrayitem_raw` at
//! `addr + index * item_size`, `raw_load` at `addr + offset`.
//!
//! Calls (`call_*`, `call_pure_*`, `call_loopinvariant_*`, `call_may_force_*`,
//! `call_assembler_*`, `cond_call*`): the function is the first operand's bits (for
//! `call_assembler`, an id derived from its descriptor). A function registered in
//! [`RunConfig::functions`] is called with the remaining operands; otherwise the result is
//! derived from the function and the arguments (allocated objects among the arguments count
//! as one anonymous tag, so the result does not depend on allocation addresses). Reference
//! arguments escape. A call **may write the heap** when its descriptor's effect says so
//! (`CallEffect::may_write_heap`), or it is a `call_assembler`; `call_pure_*` and
//! `call_loopinvariant_*` never do. Such a call clobbers the heap ([`heap::Heap::clobber`])
//! and is appended to [`RunResult::calls`]. Calls never raise. A call whose descriptor's
//! oopspec names a pure op (`trace_ir::oopspec::pure_call_opcode`: `OS_MATH_SQRT`,
//! `OS_INT_PY_DIV`, `OS_INT_PY_MOD`) is that op, evaluated by `eval_pure`: no function is
//! called, nothing escapes or is clobbered.
//!
//! # Other state
//!
//! The exception state is `Option<(class, value)>`: `save_exc_class` reads the class (0 if
//! none), `save_exception` reads the value (null if none) and clears the state,
//! `restore_exception(cls, v)` sets it (clears it when both are 0), `guard_exception(cls)`
//! returns the value and clears it. Hints other than `assert_not_none` and
//! `record_exact_class` (promises, checked: see above) do nothing; `force_token` returns a
//! fixed reference ([`trace_ir::abi::FORCE_TOKEN`]); `virtual_ref(p, i)` allocates a
//! `JitVirtualRef` holding that token and `virtual_ref_finish` writes it, as
//! [`trace_ir::abi::VirtualRefLayout`] says (no call forces a reference).

#![deny(missing_docs)]

pub mod compare;
pub mod guided;
pub mod heap;
mod machine;
pub mod model;
#[cfg(feature = "native")]
pub mod native;
mod outcome;
#[cfg(feature = "random")]
pub mod random;
pub mod rng;
mod value;

pub use compare::{outcomes_equivalent, outcomes_equivalent_by_resume_key, runs_equivalent};
pub use heap::{Cell, Heap, HeapObject, ObjKind, View};
#[cfg(feature = "random")]
pub(crate) use machine::step_op;
pub use machine::{call_value, run, run_tree};
pub(crate) use machine::{run_recording, State};
pub use model::ModelHeap;
pub use outcome::{CallRecord, ClassPolicy, HostFn, Outcome, RunConfig, RunResult, StopAt};
pub use value::RtValue;
