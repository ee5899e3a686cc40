//! Fuzz target `ifconv_diff`: runs `verify::fuzzing::check_ifconv_diff` (see that module for the oracle).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = verify::fuzzing::check_ifconv_diff(data) { panic!("{e}") }
});
