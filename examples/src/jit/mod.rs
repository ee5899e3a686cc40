//! The embedding of tracejit in the example interpreter: the trace recorder (how each
//! bytecode is recorded) and the engines that run compiled loops; the `driver` crate does
//! the rest.

pub mod engine;
pub mod recorder;
pub mod runner;
