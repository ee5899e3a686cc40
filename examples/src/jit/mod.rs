//! The embedding of tracejit in the example interpreter: the trace recorder, the executors
//! of compiled loops (a trace runner on real memory, and native code), and the glue to the
//! backend's `Runtime`.

pub mod exec;
pub mod native;
pub mod recorder;
