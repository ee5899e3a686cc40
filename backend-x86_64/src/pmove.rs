//! Parallel moves: sequentialize a set of simultaneous `dst <- src` copies (the `jump` back
//! edge, label entry, call argument set-up), breaking cycles through a temporary location.
//!
//! Input: moves with pairwise distinct destinations; sources may repeat and may be
//! destinations of other moves. Output: a sequence of single moves that, executed in order,
//! leaves every destination holding the value its source held before the sequence.
//!
//! Algorithm: repeatedly emit a move whose destination is not read by any pending move. When
//! every pending move is blocked, the pending moves contain a cycle: save one blocked
//! destination `d` in the temporary, redirect pending reads of `d` to the temporary, and
//! continue. At most one temporary value is pending at a time: a chain that starts at the
//! temporary cannot end in a cycle (every location has at most one writer), so it drains
//! before the next cycle is broken.

/// A location a value can be moved from or to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Loc {
    /// A general-purpose register (hardware number 0..16) or an XMM register (16 + n).
    Reg(u8),
    /// A frame word at this byte displacement from the frame base register.
    Mem(i32),
    /// An immediate 64-bit constant (sources only).
    Imm(u64),
}

/// Sequentialize `moves` (`(dst, src)`), using `temp` to break cycles. `temp` must not occur in
/// `moves`. Moves whose source equals their destination are dropped.
pub fn sequentialize(moves: &[(Loc, Loc)], temp: Loc) -> Vec<(Loc, Loc)> {
    let mut out = Vec::with_capacity(moves.len() + 2);
    sequentialize_into(moves, temp, &mut Vec::new(), &mut out);
    out
}

/// [`sequentialize`] appending to `out`, with `pending` as working memory (both reused by a
/// caller that sequentializes often, so no allocation happens once they have grown).
pub fn sequentialize_into(moves: &[(Loc, Loc)], temp: Loc, pending: &mut Vec<(Loc, Loc)>, out: &mut Vec<(Loc, Loc)>) {
    pending.clear();
    pending.extend(moves.iter().copied().filter(|(d, s)| d != s));
    debug_assert!(pending.iter().all(|&(d, s)| d != temp && s != temp));
    debug_assert!(pending.iter().all(|&(d, _)| !matches!(d, Loc::Imm(_))));
    // Common case (call arguments, most jumps): no move reads another's destination, so
    // the moves can go in any order.
    let key = |l: Loc| match l {
        Loc::Reg(r) => r as u64,
        Loc::Mem(d) => 1 << 32 | d as u32 as u64,
        Loc::Imm(_) => u64::MAX,
    };
    let mut dsts = 0u64;
    let mut conflict = false;
    for &(d, _) in pending.iter() {
        if let Loc::Reg(r) = d {
            dsts |= 1 << r;
        } else {
            dsts = u64::MAX;
        }
    }
    if dsts != u64::MAX {
        // Register destinations only: a bit set of them answers "is this source one".
        for &(_, s) in pending.iter() {
            conflict |= matches!(s, Loc::Reg(r) if dsts & (1 << r) != 0);
        }
    } else {
        for &(d, _) in pending.iter() {
            for &(_, s) in pending.iter() {
                conflict |= key(s) == key(d);
            }
        }
    }
    if !conflict {
        out.extend_from_slice(pending);
        return;
    }
    while !pending.is_empty() {
        let ready = (0..pending.len()).find(|&i| {
            let d = pending[i].0;
            !pending.iter().enumerate().any(|(j, &(_, s))| j != i && s == d)
        });
        match ready {
            Some(i) => {
                out.push(pending.remove(i));
            }
            None => {
                // Every destination is read by another pending move: break the cycle at the
                // first move's destination.
                let d = pending[0].0;
                out.push((temp, d));
                for m in pending.iter_mut() {
                    if m.1 == d {
                        m.1 = temp;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn simulate(seq: &[(Loc, Loc)], init: &HashMap<Loc, u64>) -> HashMap<Loc, u64> {
        let mut st = init.clone();
        for &(d, s) in seq {
            let v = match s {
                Loc::Imm(v) => v,
                other => *st.get(&other).unwrap_or(&0),
            };
            st.insert(d, v);
        }
        st
    }

    fn check(moves: &[(Loc, Loc)]) {
        let temp = Loc::Mem(-8);
        let mut init = HashMap::new();
        for (i, &(d, s)) in moves.iter().enumerate() {
            init.insert(d, 1000 + i as u64);
            if !matches!(s, Loc::Imm(_)) {
                init.entry(s).or_insert(5000 + i as u64);
            }
        }
        let seq = sequentialize(moves, temp);
        let after = simulate(&seq, &init);
        for &(d, s) in moves {
            let want = match s {
                Loc::Imm(v) => v,
                other => init[&other],
            };
            assert_eq!(after[&d], want, "moves {moves:?} seq {seq:?}");
        }
        // Locations that are not destinations keep their value (except the temporary).
        for (l, v) in &init {
            if !moves.iter().any(|(d, _)| d == l) {
                assert_eq!(after[l], *v);
            }
        }
    }

    #[test]
    fn swap_and_rotations() {
        let r = Loc::Reg;
        check(&[(r(0), r(1)), (r(1), r(0))]);
        check(&[(r(0), r(1)), (r(1), r(2)), (r(2), r(0))]);
        check(&[(r(0), r(1)), (r(1), r(2)), (r(2), r(3)), (r(3), r(4)), (r(4), r(0))]);
        check(&[(r(0), r(1)), (r(1), r(0)), (r(2), r(3)), (r(3), r(2)), (r(5), r(0))]);
        check(&[(Loc::Mem(8), r(1)), (r(1), Loc::Mem(8)), (r(2), Loc::Imm(7))]);
    }

    fn loc() -> impl Strategy<Value = Loc> {
        prop_oneof![(0u8..6).prop_map(Loc::Reg), (0i32..4).prop_map(|i| Loc::Mem(i * 8))]
    }

    proptest! {
        #[test]
        fn random_parallel_moves(srcs in proptest::collection::vec(prop_oneof![loc(), (0u64..3).prop_map(Loc::Imm)], 0..10),
                                 dst_perm in Just(()).prop_perturb(|_, mut rng| {
                                     let mut all: Vec<Loc> = (0u8..6).map(Loc::Reg).chain((0i32..4).map(|i| Loc::Mem(i * 8))).collect();
                                     for i in (1..all.len()).rev() { let j = (rng.next_u32() as usize) % (i + 1); all.swap(i, j); }
                                     all
                                 })) {
            let moves: Vec<(Loc, Loc)> = srcs.iter().zip(dst_perm.iter()).map(|(&s, &d)| (d, s)).collect();
            check(&moves);
        }
    }
}
