//! A small deterministic pseudo-random number generator (SplitMix64) for the random trace
//! generator and tests, with the mixing and hashing functions of [`trace_ir::abi`] the
//! interpreter derives its deterministic values from. Nothing here is for cryptography.

pub use trace_ir::abi::{hash_words, mix64};

/// A SplitMix64 generator: 64 bits of state, full period, good enough for test generation.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed` (every seed, including 0, is fine).
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }
    /// A uniform number in `0..n` (`n > 0`; returns 0 when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: negligible bias for the small ranges used here.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A uniform index into a collection of `len` items (`len > 0`).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
    /// A uniform integer in `lo..=hi` (`lo <= hi`).
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1) as u128;
        if span > u64::MAX as u128 {
            return self.next_u64() as i64;
        }
        (lo as i128 + self.below(span as u64) as i128) as i64
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
    /// Pick an index with probability proportional to `weights[i]`; `None` when all are 0.
    pub fn weighted(&mut self, weights: &[u32]) -> Option<usize> {
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        if total == 0 {
            return None;
        }
        let mut r = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if r < w as u64 {
                return Some(i);
            }
            r -= w as u64;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.range_i64(-3, 5);
            assert!((-3..=5).contains(&x));
            b.range_i64(-3, 5);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
        let mut c = Rng::new(7);
        let picks: Vec<usize> = (0..200).filter_map(|_| c.weighted(&[0, 3, 0, 1])).collect();
        assert!(picks.iter().all(|&i| i == 1 || i == 3));
        assert!(picks.contains(&1) && picks.contains(&3));
        assert_eq!(c.weighted(&[0, 0]), None);
    }
}
