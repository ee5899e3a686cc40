//! Abstract integer domains (knownbits × interval), generic over [`Word`] so that the code
//! that runs in the optimizer is the code that `verify` proves with Z3.
