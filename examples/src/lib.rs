//! An interpreter that embeds tracejit (the `lang` module), the embedding itself (`jit`),
//! and the example programs the demo, the tests and the benchmarks run (`programs`).
//!
//! Start with `cargo run --release -p examples --bin demo`, or read
//! `examples/examples/hello_jit.rs` for the shortest use of the library.
#![deny(missing_docs)]

pub mod jit;
pub mod lang;
pub mod programs;

/// The README, whose quick start runs as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctest;
