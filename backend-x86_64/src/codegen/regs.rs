//! Registers: the register type, register sets, the fixed roles (arguments, callee-saved,
//! scratch), the allocatable pools and their preference order.

use crate::pmove::Loc;
use crate::CompileOptions;
use std::ops::{BitAnd, BitOr, Not};

/// A machine register: general-purpose registers 0..16 (hardware numbering), XMM registers
/// 16..32 (`xmm0` is 16). Its number is the one [`Loc::Reg`] and the checker use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Reg(u8);

impl Reg {
    /// The register numbered `n` (general-purpose 0..16, XMM 16..32).
    #[inline]
    pub(super) const fn new(n: u8) -> Reg {
        debug_assert!(n < 32);
        Reg(n)
    }

    /// XMM register `n` (0..16).
    #[inline]
    pub(super) const fn xmm_reg(n: u8) -> Reg {
        Reg(16 + n)
    }

    /// The register's number (see [`Reg`]).
    #[inline]
    pub(super) const fn number(self) -> u8 {
        self.0
    }

    /// The register's number as an index (of tables with one entry per register).
    #[inline]
    pub(super) const fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether this is an XMM register.
    #[inline]
    pub(super) const fn is_xmm(self) -> bool {
        self.0 >= 16
    }

    /// The XMM register's own number (0..16), as `dynasm!`'s `Rx(..)` wants it.
    #[inline]
    pub(super) fn xmm(self) -> u8 {
        debug_assert!(self.is_xmm());
        self.0 - 16
    }

    /// The register as a move location.
    #[inline]
    pub(super) const fn loc(self) -> Loc {
        Loc::Reg(self.0)
    }
}

/// The register's assembly name (`rax`, `r12`, `xmm3`).
impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const GPRS: [&str; 16] = [
            "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
            "r15",
        ];
        match self.0 {
            n @ 0..16 => f.write_str(GPRS[n as usize]),
            n => write!(f, "xmm{}", n - 16),
        }
    }
}

/// A general-purpose register's hardware number, as `dynasm!`'s `Rq(..)`, `Rd(..)`,
/// `Rw(..)` and `Rb(..)` convert it.
impl From<Reg> for u8 {
    #[inline]
    fn from(r: Reg) -> u8 {
        debug_assert!(!r.is_xmm(), "an XMM register as a general-purpose one");
        r.0
    }
}

/// A set of registers (a bit per register number).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RegSet(u32);

impl RegSet {
    /// No register.
    pub(super) const EMPTY: RegSet = RegSet(0);
    /// Every XMM register.
    pub(super) const XMMS: RegSet = RegSet(0xffff_0000);

    /// The set of `regs`.
    pub(super) const fn of(regs: &[Reg]) -> RegSet {
        let mut bits = 0;
        let mut i = 0;
        while i < regs.len() {
            bits |= 1 << regs[i].0;
            i += 1;
        }
        RegSet(bits)
    }

    /// The set of the registers whose bits are set in `bits`.
    #[inline]
    pub(super) const fn from_bits(bits: u32) -> RegSet {
        RegSet(bits)
    }

    /// The set as bits (bit `n` for register number `n`).
    #[inline]
    pub(super) const fn bits(self) -> u32 {
        self.0
    }

    /// Whether `r` is in the set.
    #[inline]
    pub(super) const fn contains(self, r: Reg) -> bool {
        self.0 & (1 << r.0) != 0
    }

    /// The set with `r` added.
    #[inline]
    pub(super) const fn with(self, r: Reg) -> RegSet {
        RegSet(self.0 | 1 << r.0)
    }

    /// The registers of either set.
    #[inline]
    pub(super) const fn union(self, o: RegSet) -> RegSet {
        RegSet(self.0 | o.0)
    }

    /// Add `r`.
    #[inline]
    pub(super) fn insert(&mut self, r: Reg) {
        self.0 |= 1 << r.0;
    }

    /// Remove `r`.
    #[inline]
    pub(super) fn remove(&mut self, r: Reg) {
        self.0 &= !(1 << r.0);
    }

    /// Whether the set is empty.
    #[inline]
    pub(super) const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Remove and return the lowest-numbered register, if any.
    #[inline]
    pub(super) fn pop_first(&mut self) -> Option<Reg> {
        if self.0 == 0 {
            return None;
        }
        let r = Reg(self.0.trailing_zeros() as u8);
        self.0 &= self.0 - 1;
        Some(r)
    }
}

impl BitOr for RegSet {
    type Output = RegSet;
    #[inline]
    fn bitor(self, o: RegSet) -> RegSet {
        RegSet(self.0 | o.0)
    }
}

impl BitAnd for RegSet {
    type Output = RegSet;
    #[inline]
    fn bitand(self, o: RegSet) -> RegSet {
        RegSet(self.0 & o.0)
    }
}

impl Not for RegSet {
    type Output = RegSet;
    #[inline]
    fn not(self) -> RegSet {
        RegSet(!self.0)
    }
}

/// `rax` (results, `div`/`mul` operand, call target).
pub(super) const RAX: Reg = Reg(0);
/// `rcx` (shift counts).
pub(super) const RCX: Reg = Reg(1);
/// `rdx` (`div`/`mul` high half).
pub(super) const RDX: Reg = Reg(2);
/// `rbx`.
pub(super) const RBX: Reg = Reg(3);
/// `rsi`.
pub(super) const RSI: Reg = Reg(6);
/// `rdi`.
pub(super) const RDI: Reg = Reg(7);
/// `r8`.
pub(super) const R8: Reg = Reg(8);
/// `r9`.
pub(super) const R9: Reg = Reg(9);
/// `r10`.
pub(super) const R10: Reg = Reg(10);
/// `r11`: the scratch register, never allocated (no value lives in it across
/// instructions).
pub(super) const R11: Reg = Reg(11);
/// `r12`.
pub(super) const R12: Reg = Reg(12);
/// `r13`.
pub(super) const R13: Reg = Reg(13);
/// `r14`.
pub(super) const R14: Reg = Reg(14);
/// `r15`.
pub(super) const R15: Reg = Reg(15);
/// `xmm0` (float results and the first float argument).
pub(super) const XMM0: Reg = Reg(16);
/// "No register": one past the last register, the index of the allocator's dummy owner
/// entry.
pub(super) const NO_REG: Reg = Reg(32);

/// Allocatable general-purpose registers in order of preference (callee-saved first, so
/// values survive calls). `rsp`, `rbp` (frame) and `r11` (scratch) are reserved.
pub(super) const GPR_ORDER: [Reg; 13] = [RBX, R12, R13, R14, R15, RSI, RDI, R8, R9, R10, RAX, RCX, RDX];
/// The callee-saved registers the allocator uses (the prologue saves them).
pub(super) const CALLEE_SAVED: [Reg; 5] = [RBX, R12, R13, R14, R15];
/// The System V integer argument registers, in order.
pub(super) const INT_ARG_REGS: [Reg; 6] = [RDI, RSI, RDX, RCX, R8, R9];
/// The caller-saved general-purpose registers the allocator uses.
pub(super) const CALLER_SAVED_GPR: [Reg; 8] = [RAX, RCX, RDX, RSI, RDI, R8, R9, R10];
/// The registers a call clobbers: the caller-saved general-purpose registers and every XMM
/// register.
pub(super) const CALL_CLOBBERED: RegSet = RegSet::of(&[RAX, RCX, RDX, RSI, RDI, R8, R9, R10]).union(RegSet::XMMS);

/// An allocatable register pool: its registers in order of preference, as a set, and its
/// order as bit sets (see [`pool_runs`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Pool {
    /// The registers, most preferred first.
    pub(super) order: Vec<Reg>,
    /// The registers as a set.
    pub(super) set: RegSet,
    /// The preference order as bit sets (see [`pool_runs`]).
    runs: [u32; 4],
}

impl Pool {
    /// The pool of `order`.
    pub(super) fn new(order: Vec<Reg>) -> Pool {
        Pool {
            set: RegSet::of(&order),
            runs: pool_runs(&order),
            order,
        }
    }

    /// The first register of the set `free` in pool order, if any (see [`first_free`]).
    #[inline]
    pub(super) fn first_free(&self, free: RegSet) -> Option<Reg> {
        first_free(&self.runs, free.bits())
    }
}

/// The allocatable registers in order of preference: general-purpose and XMM, as many as
/// `opts` allows (`CompileOptions::check` keeps the counts in range).
pub(super) fn pools(opts: &CompileOptions) -> (Pool, Pool) {
    let ni = opts.int_regs;
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
    let nf = opts.float_regs;
    let xmm_pool: Vec<Reg> = (0..nf as u8).map(Reg::xmm_reg).collect();
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
        runs[k] |= 1 << r.number();
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
    (lanes != 0).then(|| Reg((lanes.trailing_zeros() % 32) as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Pool::first_free`] finds what a scan of the pool in order finds, for every
    /// pool size the options allow and random sets of free registers.
    #[test]
    fn first_free_is_the_first_free_register_in_pool_order() {
        let mut rng = trace_interp::rng::Rng::new(7);
        for (ni, nf) in (3..=13).flat_map(|i| (2..=15).map(move |f| (i, f))) {
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
                    let want = pool.order.iter().copied().find(|&r| free & (1 << r.number()) != 0);
                    assert_eq!(
                        pool.first_free(RegSet::from_bits(free)),
                        want,
                        "pool {:?}, free {free:#x}",
                        pool.order
                    );
                }
            }
        }
    }
}
