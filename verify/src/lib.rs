//! Z3-based checking for tracejit: proofs of the abstract domains and rules, translation
//! validation of optimizer output, rule synthesis and missing-optimization mining.
//!
//! This crate depends on `z3`; no library crate of the project depends on it.
//!
//! Translation validation proves that an optimized trace behaves like its original on every
//! input, or gives inputs on which they differ:
//!
//! ```
//! use verify::validate::{validate, Config, Verdict};
//! let original = trace_ir::parse_trace("[i0]\ni1 = int_add(i0, 0)\ni2 = int_mul(i1, 2)\nfinish(i2)\n")?;
//! let good = trace_ir::parse_trace("[i0]\ni1 = int_add(i0, i0)\nfinish(i1)\n")?;
//! assert!(validate(&original, &good, &Config::default()).is_valid());
//! let bad = trace_ir::parse_trace("[i0]\ni1 = int_lshift(i0, 2)\nfinish(i1)\n")?;
//! assert!(matches!(validate(&original, &bad, &Config::default()), Verdict::Invalid { .. }));
//! # Ok::<(), trace_ir::ParseError>(())
//! ```
#![deny(missing_docs)]

pub mod divplan;
pub mod fuzzing;
pub mod mine;
pub mod replay;
pub mod rules;
pub mod semantics;
pub mod synth;
pub mod validate;
pub mod z3word;
