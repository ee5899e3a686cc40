//! Z3-based checking for tracejit: proofs of the abstract domains and rules, translation
//! validation of optimizer output, rule synthesis and missing-optimization mining.
//!
//! This crate depends on `z3`; no library crate of the project depends on it.
#![deny(missing_docs)]

pub mod fuzzing;
pub mod mine;
pub mod replay;
pub mod rules;
pub mod semantics;
pub mod synth;
pub mod validate;
pub mod z3word;
