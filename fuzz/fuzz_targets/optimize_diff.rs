//! Fuzz target `optimize_diff`: runs `verify::fuzzing::check_optimize_diff` (see that module for the oracle).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = verify::fuzzing::check_optimize_diff(data) { panic!("{e}") }
});
