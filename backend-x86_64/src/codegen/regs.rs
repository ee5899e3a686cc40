//! Registers: hardware numbers, the allocatable pools and their preference order.

use crate::CompileOptions;

/// A register: general-purpose 0..16 (hardware numbering), XMM registers 16..32.
pub(crate) type Reg = u8;

pub(super) const RAX: Reg = 0;
pub(super) const RCX: Reg = 1;
pub(super) const RDX: Reg = 2;
pub(super) const RBX: Reg = 3;
pub(super) const RSI: Reg = 6;
pub(super) const RDI: Reg = 7;
pub(super) const R8: Reg = 8;
pub(super) const R9: Reg = 9;
pub(super) const R10: Reg = 10;
pub(super) const R12: Reg = 12;
pub(super) const R13: Reg = 13;
pub(super) const R14: Reg = 14;
pub(super) const R15: Reg = 15;
pub(super) const XMM0: Reg = 16;
/// "No register": one past the last register, an index of the dummy owner entry.
pub(super) const NO_REG: Reg = 32;

/// Allocatable general-purpose registers in order of preference (callee-saved first, so
/// values survive calls). `rsp`, `rbp` (frame) and `r11` (scratch) are reserved.
pub(super) const GPR_ORDER: [Reg; 13] = [RBX, R12, R13, R14, R15, RSI, RDI, R8, R9, R10, RAX, RCX, RDX];
pub(super) const CALLEE_SAVED: [Reg; 5] = [RBX, R12, R13, R14, R15];
pub(super) const INT_ARG_REGS: [Reg; 6] = [RDI, RSI, RDX, RCX, R8, R9];
pub(super) const CALLER_SAVED_GPR: [Reg; 8] = [RAX, RCX, RDX, RSI, RDI, R8, R9, R10];
/// The registers a call clobbers (caller-saved GPRs and every XMM register) as a bit set.
pub(super) const CALL_CLOBBERED: u32 =
    (1 << RAX) | (1 << RCX) | (1 << RDX) | (1 << RSI) | (1 << RDI) | (1 << R8) | (1 << R9) | (1 << R10) | 0xffff_0000;

pub(super) fn is_xmm(r: Reg) -> bool {
    r >= 16
}
pub(super) fn x(r: Reg) -> u8 {
    debug_assert!(is_xmm(r));
    r - 16
}

/// An allocatable register pool: its registers in order of preference, as a set, and its
/// order as bit sets (see [`pool_runs`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Pool {
    /// The registers, most preferred first.
    pub(super) order: Vec<Reg>,
    /// The registers as a bit set.
    pub(super) set: u32,
    /// The preference order as bit sets (see [`pool_runs`]).
    runs: [u32; 4],
}

impl Pool {
    /// The pool of `order`.
    pub(super) fn new(order: Vec<Reg>) -> Pool {
        Pool {
            set: order.iter().fold(0u32, |m, &r| m | 1 << r),
            runs: pool_runs(&order),
            order,
        }
    }

    /// The first register of the set `free` in pool order, if any (see [`first_free`]).
    #[inline]
    pub(super) fn first_free(&self, free: u32) -> Option<Reg> {
        first_free(&self.runs, free)
    }
}

/// The allocatable registers in order of preference: general-purpose and XMM, as many as
/// `opts` allows (at least 3 and 2).
pub(super) fn pools(opts: &CompileOptions) -> (Pool, Pool) {
    let ni = opts.int_regs.clamp(3, GPR_ORDER.len());
    // With a restricted pool keep rax, rcx, rdx (needed by div, mul, shifts) in it.
    let gpr_pool: Vec<Reg> = if ni == GPR_ORDER.len() {
        GPR_ORDER.to_vec()
    } else {
        let mut p = vec![RAX, RCX, RDX];
        p.extend(
            GPR_ORDER
                .iter()
                .copied()
                .filter(|r| ![RAX, RCX, RDX].contains(r))
                .take(ni - 3),
        );
        p
    };
    let nf = opts.float_regs.clamp(2, 15);
    let xmm_pool: Vec<Reg> = (0..nf as u8).map(|i| XMM0 + i).collect();
    (Pool::new(gpr_pool), Pool::new(xmm_pool))
}

/// A register pool's preference order as bit sets: its maximal runs of ascending register
/// numbers, in pool order (`GPR_ORDER` has three: `rbx r12..r15`, `rsi rdi r8..r10`,
/// `rax rcx rdx`). The first free register in pool order is then the lowest free register
/// of the first run that has one ([`first_free`]): a few bit operations instead of a scan.
fn pool_runs(pool: &[Reg]) -> [u32; 4] {
    let mut runs = [0u32; 4];
    let mut k = 0;
    for (i, &r) in pool.iter().enumerate() {
        if i > 0 && r < pool[i - 1] {
            k += 1;
        }
        runs[k] |= 1 << r;
    }
    runs
}

/// The first register of the set `free` in the pool order that `runs` describes
/// ([`pool_runs`]), if any. Without branches (which run has one is unpredictable): the runs'
/// free registers side by side in 32-bit lanes, the lowest set bit is in the first non-empty
/// run, and its lane position is the register.
#[inline]
fn first_free(runs: &[u32; 4], free: u32) -> Option<Reg> {
    let lanes = runs
        .iter()
        .enumerate()
        .fold(0u128, |acc, (k, &m)| acc | ((m & free) as u128) << (32 * k));
    (lanes != 0).then(|| (lanes.trailing_zeros() % 32) as Reg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Pool::first_free`] finds what a scan of the pool in order finds, for every
    /// pool size the options allow and random sets of free registers.
    #[test]
    fn first_free_is_the_first_free_register_in_pool_order() {
        let mut rng = trace_ir::rng::Rng::new(7);
        for (ni, nf) in (0..16).flat_map(|i| (0..17).map(move |f| (i, f))) {
            let opts = CompileOptions {
                int_regs: ni,
                float_regs: nf,
                ..CompileOptions::default()
            };
            let (gprs, xmms) = pools(&opts);
            for pool in [&gprs, &xmms] {
                for k in 0..200 {
                    // Sparse and dense free sets.
                    let bits = rng.next_u64() as u32;
                    let free = if k % 2 == 0 {
                        bits
                    } else {
                        bits & (rng.next_u64() as u32) & (rng.next_u64() as u32)
                    };
                    let want = pool.order.iter().copied().find(|&r| free & (1 << r) != 0);
                    assert_eq!(pool.first_free(free), want, "pool {:?}, free {free:#x}", pool.order);
                }
            }
        }
    }
}
