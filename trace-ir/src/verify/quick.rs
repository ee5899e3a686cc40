//! The verifier's fast path: whether a trace passes every check of [`super::verify`], in one
//! pass over the ops with no message to build and no order to keep between the checks (a
//! trace it does not accept goes through the checks in order, which find the first error).
//! It accepts exactly the traces the checks in order accept; the `tests` module compares
//! the two on valid traces and on many broken ones.

use super::{check_final, descr_matches, FxHashSet, LabelParams};
use crate::descr::Descr;
use crate::entity::{OpRef, Value, ValueData};
use crate::opcode::{DescrKind, Kind, OpFlags, Opcode};
use crate::trace::{FailArg, GuardData, Trace};
use std::sync::OnceLock;

/// What the quick pass reads of an opcode, in one table entry (instead of the opcode
/// table's flags, result kind, descriptor kind and operand signature one by one).
#[derive(Copy, Clone)]
struct OpSig {
    flags: OpFlags,
    result: Kind,
    descr: DescrKind,
    /// The number of fixed operands (a `*` is only ever the signature's last letter).
    fixed: u8,
    /// Whether any number of operands may follow the fixed ones.
    variadic: bool,
    /// The operand signature (`OpInfo::args`).
    args: &'static [u8],
}

/// [`OpSig`] of every opcode, by its number.
fn op_sigs() -> &'static [OpSig] {
    static SIGS: OnceLock<Box<[OpSig]>> = OnceLock::new();
    SIGS.get_or_init(|| {
        let len = Opcode::ALL.iter().map(|&o| o as usize + 1).max().unwrap_or(0);
        let mut sigs = vec![
            OpSig {
                flags: OpFlags::empty(),
                result: Kind::Void,
                descr: DescrKind::None,
                fixed: 0,
                variadic: false,
                args: &[],
            };
            len
        ];
        for &o in Opcode::ALL {
            let args = o.info().args.as_bytes();
            let variadic = args.last() == Some(&b'*');
            sigs[o as usize] = OpSig {
                flags: o.flags(),
                result: o.result_kind(),
                descr: o.descr_kind(),
                fixed: (args.len() - usize::from(variadic)) as u8,
                variadic,
                args,
            };
        }
        sigs.into_boxed_slice()
    })
}

/// Guard ids below this are marked in a bit set on the stack (ids are usually numbered from
/// 0); larger ones in a hash set.
const SMALL_IDS: usize = 4096;

/// The guard ids seen so far.
struct GuardIds {
    small: [u64; SMALL_IDS / 64],
    large: FxHashSet<u32>,
}

impl GuardIds {
    fn new() -> GuardIds {
        GuardIds {
            small: [0; SMALL_IDS / 64],
            large: FxHashSet::default(),
        }
    }

    /// Add `id`; whether it was not there yet.
    #[inline]
    fn insert(&mut self, id: u32) -> bool {
        let i = id as usize;
        if i < SMALL_IDS {
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            let fresh = self.small[word] & bit == 0;
            self.small[word] |= bit;
            fresh
        } else {
            self.large.insert(id)
        }
    }
}

/// The kind of `v` read at op `at`, if it is a valid operand there: an earlier op's
/// non-void result or a constant of the pool (`check_value`).
#[inline]
fn value_kind(trace: &Trace, at: usize, v: Value) -> Option<Kind> {
    match v.data() {
        ValueData::Op(o) => {
            if o.index() >= at {
                return None;
            }
            let k = trace.ops[o.index()].opcode.result_kind();
            (k != Kind::Void).then_some(k)
        }
        ValueData::Const(c) => (c.index() < trace.consts.len()).then(|| trace.consts.get(c).kind()),
    }
}

/// The operand kind signature letter `c` asks for (`None`: any kind).
#[inline]
fn sig_kind(c: Option<&u8>) -> Option<Kind> {
    match c {
        Some(b'i') => Some(Kind::Int),
        Some(b'r') => Some(Kind::Ref),
        Some(b'f') => Some(Kind::Float),
        _ => None,
    }
}

/// Whether the resume data `gd` of the guard at `at` names only valid values and virtual
/// objects it has, and its writes are well formed (`check_resume_data`, its id aside).
#[inline]
fn resume_data_ok(trace: &Trace, at: usize, gd: &GuardData) -> bool {
    let nv = gd.virtuals.len();
    let ok = |fa: &FailArg| match *fa {
        FailArg::Value(v) => value_kind(trace, at, v).is_some(),
        FailArg::Virtual(i) => (i as usize) < nv,
        FailArg::Hole => true,
    };
    gd.fail_args.iter().all(ok)
        && gd.virtuals.iter().all(|vo| vo.fields.iter().all(|(_, fa)| ok(fa)))
        && gd.writes.iter().all(|w| {
            ok(&FailArg::Value(w.obj))
                && ok(&w.value)
                && super::check_resume_write(trace, crate::entity::OpRef::new(at), w).is_ok()
        })
}

/// Tables up to this size are checked for repeated descriptors pair by pair (cheaper than
/// hashing every descriptor, names included); larger ones with a hash set.
const PAIRWISE_DESCRS: usize = 8;

/// Whether no two descriptors of `descrs` are equal (`check_descr_table`).
fn descrs_distinct(descrs: &[Descr]) -> bool {
    if descrs.len() <= PAIRWISE_DESCRS {
        return descrs.iter().enumerate().all(|(i, d)| !descrs[..i].contains(d));
    }
    let mut seen = FxHashSet::default();
    descrs.iter().all(|d| seen.insert(d))
}

/// Whether `trace` passes every check of [`super::verify`].
pub(super) fn accepts(trace: &Trace) -> bool {
    let ops = &trace.ops[..];
    let n = ops.len();
    if trace.num_inputs > n || !ops[..trace.num_inputs].iter().all(|o| o.opcode.is_input()) {
        return false;
    }
    if !descrs_distinct(&trace.descrs) {
        return false;
    }
    let sigs = op_sigs();
    let mut ids = GuardIds::new();
    // The label whose parameters come next, and how many of them are still expected.
    let mut labels = LabelParams::default();
    for r in trace.num_inputs..n {
        let op = &ops[r];
        let opc = op.opcode;
        let s = sigs[opc as usize];
        let flags = s.flags;
        if flags.contains(OpFlags::INPUT) {
            let Some(label) = labels.label.filter(|_| labels.pending != 0) else {
                return false;
            };
            let largs = &ops[label.index()].args;
            if trace.kind_of(largs[largs.len() - labels.pending]) != s.result {
                return false;
            }
            labels.pending -= 1;
            continue;
        }
        if labels.pending != 0 {
            return false;
        }
        // Operands: arity, definition before use, kinds.
        let (sig, fixed) = (s.args, usize::from(s.fixed));
        let nargs = op.args.len();
        if nargs < fixed || (!s.variadic && nargs != fixed) {
            return false;
        }
        let (mut first, mut second, mut last) = (Kind::Void, Kind::Void, Kind::Void);
        for (i, &a) in op.args.iter().enumerate() {
            let Some(k) = value_kind(trace, r, a) else {
                return false;
            };
            if sig_kind(sig.get(i)).is_some_and(|want| want != k) {
                return false;
            }
            match i {
                0 => first = k,
                1 => second = k,
                _ => {}
            }
            last = k;
        }
        if opc == Opcode::GuardValue && first != second {
            return false;
        }
        // The descriptor, and the kind of the values a load or store moves through it.
        let dk = s.descr;
        let descr: Option<&Descr> = match (dk, op.descr) {
            (DescrKind::None, Some(_)) => return false,
            (DescrKind::None | DescrKind::Any, None) => None,
            (_, None) => return false,
            (k, Some(d)) => match trace.descrs.get(d.index()) {
                Some(d) if descr_matches(k, d) => Some(d),
                _ => return false,
            },
        };
        if let Some(vk) = descr.and_then(Descr::value_kind) {
            if flags.contains(OpFlags::READS_HEAP) && opc != Opcode::ArraylenGc && s.result != vk {
                return false;
            }
            if flags.contains(OpFlags::WRITES_HEAP) && (nargs == 0 || last != vk) {
                return false;
            }
        }
        // Resume data.
        match (flags.contains(OpFlags::GUARD), op.guard) {
            (false, None) => {}
            (true, Some(g)) => match trace.guards.get(g.index()) {
                Some(gd) if ids.insert(gd.id.0) && resume_data_ok(trace, r, gd) => {}
                _ => return false,
            },
            _ => return false,
        }
        // Overflow pairing.
        if flags.contains(OpFlags::OVF)
            && !matches!(
                ops.get(r + 1).map(|o| o.opcode),
                Some(Opcode::GuardNoOverflow | Opcode::GuardOverflow)
            )
        {
            return false;
        }
        if matches!(opc, Opcode::GuardNoOverflow | Opcode::GuardOverflow) && !(r > 0 && ops[r - 1].opcode.is_ovf()) {
            return false;
        }
        // Labels and the final op (one each per trace or so): the checks in order.
        if opc == Opcode::Label && labels.check_label(trace, OpRef::new(r)).is_err() {
            return false;
        }
        if flags.contains(OpFlags::FINAL) {
            let kinds: Vec<Kind> = op.args.iter().map(|&a| trace.kind_of(a)).collect();
            if check_final(trace, OpRef::new(r), &kinds).is_err() {
                return false;
            }
        }
    }
    labels.pending == 0 && ops.last().is_some_and(|o| o.opcode.is_final())
}
