//! What compiled code, the optimizer and the reference interpreter must agree on beyond the
//! descriptors' layout ([`crate::descr`] holds the allocation limit and the string and array
//! layout): the class `new_with_vtable` stores without an explicit vtable, the reference
//! `force_token` returns, the bound on string copies, and the deterministic hash behind
//! `strhash`/`unicodehash` and default classes.

use crate::descr::SizeDescr;

/// The reference `force_token` returns.
pub const FORCE_TOKEN: u64 = 0x3000_0000_0000;

/// Largest length `copystrcontent`/`copyunicodecontent` may copy (external strings have no
/// known length, so this bounds the work); a longer copy is an invalid operation.
pub const MAX_COPY_LEN: i64 = 1 << 20;

/// The class `new_with_vtable` stores for a size descriptor without an explicit vtable.
pub fn default_class(sd: &SizeDescr) -> u64 {
    sd.vtable
        .map(|v| v as u64)
        .unwrap_or_else(|| 0x6000_0000_0000 | (hash_words(&[0xc1a55, sd.size as u64]) & 0x0fff_ffff_fff8))
}

/// The hash `strhash`/`unicodehash` give a string of `len` characters: [`hash_words`] of
/// `[0x57a, len, chars...]`, each character zero-extended.
pub fn string_hash(len: u64, chars: impl IntoIterator<Item = u64>) -> u64 {
    let mut words = vec![0x57a, len];
    words.extend(chars);
    hash_words(&words)
}

/// The SplitMix64 finalizer: a bijective mix of 64 bits (Steele, Lea, Flood 2014).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hash a sequence of words into one (order-sensitive), deterministic across runs and
/// platforms; not for cryptography.
pub fn hash_words(words: &[u64]) -> u64 {
    let mut h: u64 = 0x6a09_e667_f3bc_c908;
    for &w in words {
        h = mix64(h ^ mix64(w.wrapping_add(0x9e37_79b9_7f4a_7c15)));
    }
    h
}
