//! Fuzz target `validate`: runs `verify::fuzzing::check_validate` (see that module for the oracle).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = verify::fuzzing::check_validate(data) { panic!("{e}") }
});
