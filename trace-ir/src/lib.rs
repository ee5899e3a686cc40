//! The trace IR of tracejit: opcodes, values, descriptors, guards and traces; union-find
//! forwarding; a builder; a text format that also reads PyPy's JIT logs; a verifier; the
//! evaluation of pure ops; PyPy's oopspec indexes ([`oopspec`]); the ABI facts compiled code and the interpreter share ([`abi`]);
//! and loop peeling. The reference interpreter and the random trace generator are the
//! `trace-interp` crate.
//!
//! What memory and values mean — bytes and views, the aliasing of descriptors
//! ([`Aliasing`]), kinds, immutability, hints as promises, NaN payloads, allocation limits —
//! is one model that the interpreter, the optimizer, the validator and the backend obey:
//! `docs/memory-model.md` in the repository. The reference interpreter (`trace-interp`) is its
//! executable form.
//!
//! Traces are built with [`TraceBuilder`] (see the [`builder`] module) or read from text:
//!
//! ```
//! use trace_ir::{parse_trace, print_trace, verify::verify, Opcode};
//! let t = parse_trace("[i0, i1]\ni2 = int_add(i0, i1)\nguard_true(i2, descr=<Guard0>) [i0]\nfinish(i2)\n")?;
//! verify(&t)?; // the invariants every stage relies on
//! assert_eq!(t.ops[2].opcode, Opcode::IntAdd);
//! assert_eq!(print_trace(&t), "[i0, i1]\ni2 = int_add(i0, i1)\nguard_true(i2, descr=<Guard0>) [i0]\nfinish(i2)\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod abi;
pub mod builder;
pub mod descr;
pub mod entity;
pub mod eval;
pub mod facts;
pub mod fxhash;
pub mod oopspec;
pub mod opcode;
pub mod peel;
pub mod text;
pub mod trace;
pub mod tree;
pub mod unionfind;
pub mod verify;

pub use builder::TraceBuilder;
pub use descr::{ArrayDescr, CallDescr, CallEffect, Descr, FieldDescr, InteriorDescr, SizeDescr};
pub use entity::{ConstRef, DescrRef, GuardId, GuardRef, OpRef, Value, ValueData};
pub use eval::{eval_ovf, eval_pure, EvalError};
pub use facts::{
    BodyEntry, CarriedBase, CarriedLoad, CarriedPure, CarriedValue, CarriedVirtual, FieldFact, FieldValue, GuardFacts,
    WordFacts,
};
pub use opcode::{DescrKind, GcAccess, Kind, OpFlags, OpInfo, Opcode};
pub use peel::{
    constant_params, invariant_params, is_peelable, is_peeled_form, masked_params, peel_loop, peeled_body_token,
    peeled_guard_copies,
};
pub use text::{
    parse_file, parse_trace, parse_tree, print_listing, print_trace, print_tree, traces_equivalent, Listing, ParseError,
};
pub use trace::{
    Aliasing, Const, ConstPool, FailArg, GuardData, Op, ResumeWrite, Trace, TraceInfo, VirtualField, VirtualKind,
    VirtualObject,
};
pub use tree::{bridge_prologue, exit_kinds, verify_tree, Bridge, TraceTree, TreeError, TreeJump};
pub use unionfind::UnionFind;
pub use verify::{jump_target, verify, JumpTarget, VerifyError};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_stays_small() {
        // Growth of `Op` should be a decision: update this number knowingly.
        assert!(
            std::mem::size_of::<Op>() <= 40,
            "Op is {} bytes",
            std::mem::size_of::<Op>()
        );
    }
}
