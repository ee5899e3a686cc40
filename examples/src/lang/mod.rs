//! The example language: a small dynamically typed language whose values are boxed heap
//! objects (as in PyPy), parsed to register bytecode and run by an interpreter that embeds
//! the JIT.

pub mod bytecode;
pub mod heap;
pub mod parser;
pub mod vm;
