//! A symbolic checker of register allocation (in the spirit of regalloc2's `checker.rs`): it
//! replays the moves, definitions and clobbers the code generator emitted, tracking which
//! trace value each location holds, and asserts that every read finds the value the
//! allocator claimed was there. Enabled in tests and with the `checker` feature; every
//! compilation is then checked and a violation is a `CompileError::Internal`.
//!
//! # Lattice
//! For each location (general-purpose or XMM register, frame word) the abstract state is
//! either `Unknown` or exactly one value `Val` (an op result or a constant). There is no
//! join: a trace is straight-line code whose only merge point is a `label`, and the label
//! resets the state to a fixed shape that every edge into it is checked against.
//!
//! # Transfer rules (events in emission order)
//! - `Move { dst, src }`: `dst := state(src)` (an immediate source gives `Const(bits)`).
//! - `Def { reg, op }`: `reg := Op(op)` (the op's result is written there).
//! - `Clobber { reg }`: `reg := Unknown` (fixed-register instructions, calls).
//! - `Use { loc, val }` / `Expect { loc, val }`: check `state(loc) == val`; an immediate
//!   location holds its own constant.
//! - `Label { params, keep }`: check nothing, then `state := params ∪ keep`: each label
//!   parameter in its fixed location, each value that lives across the label in its slot.
//!   The edges into the label are checked by the `Expect` events emitted after the parallel
//!   move of the label entry and of the `jump`: the fixed locations hold the operands, and
//!   the kept slots still hold their values.
//!
//! Guard exits record a `Use` for each word their stub copies, at the guard's branch, so the
//! stub reads what the resume data names. The checker does not model the scratch registers
//! (`r11`, `xmm15`), which never hold values across instructions.

use crate::pmove::Loc;
use std::collections::HashMap;

/// A value a location may hold.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Val {
    /// The result of the op with this index.
    Op(u32),
    /// A constant (its bits).
    Const(u64),
}

/// One step of the emitted code, as far as register allocation is concerned.
#[derive(Clone, Debug)]
pub(crate) enum Event {
    Move {
        dst: Loc,
        src: Loc,
    },
    Def {
        reg: u8,
        op: u32,
    },
    Clobber {
        reg: u8,
    },
    Use {
        loc: Loc,
        val: Val,
        at: u32,
    },
    Expect {
        loc: Loc,
        val: Val,
        at: u32,
    },
    Label {
        params: Vec<(Loc, u32)>,
        keep: Vec<(Loc, u32)>,
    },
    /// The end of a straight-line path (a `jump`, `finish` or exit): nothing follows it on
    /// this path, and the next event starts at a label.
    End,
}

/// Replay `events` from the state where the trace inputs are in `inputs` and check every read.
pub(crate) fn check(events: &[Event], inputs: &[(Loc, u32)]) -> Result<(), String> {
    let mut st: HashMap<Loc, Val> = inputs.iter().map(|&(l, v)| (l, Val::Op(v))).collect();
    let get = |st: &HashMap<Loc, Val>, l: Loc| -> Option<Val> {
        match l {
            Loc::Imm(b) => Some(Val::Const(b)),
            other => st.get(&other).copied(),
        }
    };
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::Move { dst, src } => match get(&st, *src) {
                Some(v) => {
                    st.insert(*dst, v);
                }
                None => {
                    st.remove(dst);
                }
            },
            Event::Def { reg, op } => {
                st.insert(Loc::Reg(*reg), Val::Op(*op));
            }
            Event::Clobber { reg } => {
                st.remove(&Loc::Reg(*reg));
            }
            Event::Use { loc, val, at } | Event::Expect { loc, val, at } => {
                let have = get(&st, *loc);
                if have != Some(*val) {
                    return Err(format!(
                        "event {i} at op{at}: {loc:?} should hold {val:?} but holds {have:?}"
                    ));
                }
            }
            Event::Label { params, keep } => {
                st.clear();
                for &(l, v) in params.iter().chain(keep) {
                    st.insert(l, Val::Op(v));
                }
            }
            Event::End => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_a_clobbered_value() {
        let ev = vec![
            Event::Def { reg: 3, op: 5 },
            Event::Move {
                dst: Loc::Reg(4),
                src: Loc::Reg(3),
            },
            Event::Clobber { reg: 3 },
            Event::Use {
                loc: Loc::Reg(4),
                val: Val::Op(5),
                at: 6,
            },
        ];
        check(&ev, &[]).unwrap();
        let mut bad = ev.clone();
        bad.push(Event::Use {
            loc: Loc::Reg(3),
            val: Val::Op(5),
            at: 7,
        });
        assert!(check(&bad, &[]).is_err());
    }

    #[test]
    fn labels_reset_the_state() {
        let ev = vec![
            Event::Def { reg: 3, op: 5 },
            Event::Label {
                params: vec![(Loc::Reg(1), 9)],
                keep: vec![(Loc::Mem(64), 2)],
            },
            Event::Use {
                loc: Loc::Reg(1),
                val: Val::Op(9),
                at: 10,
            },
            Event::Use {
                loc: Loc::Mem(64),
                val: Val::Op(2),
                at: 10,
            },
        ];
        check(&ev, &[]).unwrap();
        let mut bad = ev.clone();
        bad.push(Event::Use {
            loc: Loc::Reg(3),
            val: Val::Op(5),
            at: 11,
        });
        assert!(check(&bad, &[]).is_err());
    }
}
