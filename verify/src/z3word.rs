//! `Word` for Z3 bit-vectors: run the optimizer's generic domain code symbolically.
//!
//! [`Z3Word<N>`] wraps a `z3::ast::BV` of width `N` (the width is a const parameter, so
//! `Word::BITS` is known statically and proofs can run at 8, 16, 32 or 64 bits);
//! [`Z3Bool`] wraps a `z3::ast::Bool`. Both live in the thread-local Z3 context of z3 0.22,
//! so build and solve a formula on one thread. The mapping is one Z3 operator per `Word`
//! method; the few composite ones (`umul_high`, `smul_overflows`) are defined by widening to
//! `2N` bits, independently of the domain code.

use optimizer::domain::{Word, WordBool};
use z3::ast::{Bool, BV};

/// A Z3 bit-vector of width `N` as a [`Word`].
#[derive(Clone, Debug)]
pub struct Z3Word<const N: u32>(pub BV);

/// A Z3 boolean as a [`WordBool`].
#[derive(Clone, Debug)]
pub struct Z3Bool(pub Bool);

impl<const N: u32> Z3Word<N> {
    /// A fresh symbolic word named `name`.
    pub fn var(name: &str) -> Self {
        Z3Word(BV::new_const(name, N))
    }
}

impl WordBool for Z3Bool {
    fn from_bool(b: bool) -> Self {
        Z3Bool(Bool::from_bool(b))
    }
    fn and(&self, other: &Self) -> Self {
        Z3Bool(Bool::and(&[self.0.clone(), other.0.clone()]))
    }
    fn or(&self, other: &Self) -> Self {
        Z3Bool(Bool::or(&[self.0.clone(), other.0.clone()]))
    }
    fn not(&self) -> Self {
        Z3Bool(self.0.not())
    }
    fn select(&self, a: &Self, b: &Self) -> Self {
        Z3Bool(self.0.ite(&a.0, &b.0))
    }
    fn implies(&self, other: &Self) -> Self {
        Z3Bool(self.0.implies(other.0.clone()))
    }
    fn iff(&self, other: &Self) -> Self {
        Z3Bool(self.0.iff(other.0.clone()))
    }
}

impl<const N: u32> Word for Z3Word<N> {
    type Bool = Z3Bool;
    const BITS: u32 = N;

    fn from_u64(v: u64) -> Self {
        let v = if N >= 64 { v } else { v & ((1u64 << N) - 1) };
        Z3Word(BV::from_u64(v, N))
    }
    fn add(&self, o: &Self) -> Self {
        Z3Word(self.0.bvadd(o.0.clone()))
    }
    fn sub(&self, o: &Self) -> Self {
        Z3Word(self.0.bvsub(o.0.clone()))
    }
    fn mul(&self, o: &Self) -> Self {
        Z3Word(self.0.bvmul(o.0.clone()))
    }
    fn umul_high(&self, o: &Self) -> Self {
        let p = self.0.zero_ext(N).bvmul(o.0.zero_ext(N));
        Z3Word(p.extract(2 * N - 1, N))
    }
    fn smul_overflows(&self, o: &Self) -> Z3Bool {
        let p = self.0.sign_ext(N).bvmul(o.0.sign_ext(N));
        Z3Bool(p.extract(N - 1, 0).sign_ext(N).eq(&p).not())
    }
    fn sdiv(&self, o: &Self) -> Self {
        Z3Word(self.0.bvsdiv(o.0.clone()))
    }
    fn srem(&self, o: &Self) -> Self {
        Z3Word(self.0.bvsrem(o.0.clone()))
    }
    fn and(&self, o: &Self) -> Self {
        Z3Word(self.0.bvand(o.0.clone()))
    }
    fn or(&self, o: &Self) -> Self {
        Z3Word(self.0.bvor(o.0.clone()))
    }
    fn xor(&self, o: &Self) -> Self {
        Z3Word(self.0.bvxor(o.0.clone()))
    }
    fn not(&self) -> Self {
        Z3Word(self.0.bvnot())
    }
    fn neg(&self) -> Self {
        Z3Word(self.0.bvneg())
    }
    fn shl(&self, amount: &Self) -> Self {
        Z3Word(self.0.bvshl(amount.0.clone()))
    }
    fn lshr(&self, amount: &Self) -> Self {
        Z3Word(self.0.bvlshr(amount.0.clone()))
    }
    fn ashr(&self, amount: &Self) -> Self {
        Z3Word(self.0.bvashr(amount.0.clone()))
    }
    fn equals(&self, o: &Self) -> Z3Bool {
        Z3Bool(self.0.eq(&o.0))
    }
    fn slt(&self, o: &Self) -> Z3Bool {
        Z3Bool(self.0.bvslt(o.0.clone()))
    }
    fn sle(&self, o: &Self) -> Z3Bool {
        Z3Bool(self.0.bvsle(o.0.clone()))
    }
    fn ult(&self, o: &Self) -> Z3Bool {
        Z3Bool(self.0.bvult(o.0.clone()))
    }
    fn ule(&self, o: &Self) -> Z3Bool {
        Z3Bool(self.0.bvule(o.0.clone()))
    }
    fn select(c: &Z3Bool, a: &Self, b: &Self) -> Self {
        Z3Word(c.0.ite(&a.0, &b.0))
    }
}
