//! Fuzz target `parse`: runs `verify::fuzzing::check_parse` (see that module for the oracle).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = verify::fuzzing::check_parse(data) { panic!("{e}") }
});
