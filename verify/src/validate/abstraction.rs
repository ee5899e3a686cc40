//! Multiplication and division as uninterpreted functions, for abstraction refinement.

use std::collections::HashSet;

use trace_ir::Opcode;
use z3::ast::{Ast, Bool, Dynamic, BV};

use crate::semantics::{no_overflow, op_semantics};

use super::terms::{bv, uf_bool, uf_bv, zero};

/// Ops whose bit-blasted circuits make Z3 slow.
pub(super) const HEAVY_OPS: &[Opcode] = &[
    Opcode::IntMul,
    Opcode::IntMulOvf,
    Opcode::UintMulHigh,
    Opcode::IntFloorDiv,
    Opcode::IntMod,
    Opcode::IntPyDiv,
    Opcode::IntPyMod,
];

/// Which semantics a query uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Heavy ops are uninterpreted ([`Abstraction`]).
    Abstract,
    /// Heavy ops with a constant operand have their bit-vector semantics, the others are
    /// uninterpreted.
    Partial,
    /// The full bit-vector semantics; `light`: without the facts that involve heavy ops.
    Concrete { light: bool },
}

/// One application of an abstracted op.
pub(super) struct Def {
    /// The abstract term: an application of an uninterpreted function.
    pub(super) app: Dynamic,
    /// Its full meaning, built from the full meanings of the operands (no application in it).
    pub(super) concrete: Dynamic,
    /// For an op with a constant operand, its meaning in [`Mode::Partial`]: the op's
    /// semantics on the operands' partial meanings (only applications of ops without a
    /// constant operand in it).
    pub(super) partial: Option<Dynamic>,
}

/// The abstraction of the ops whose bit-blasted circuits are expensive ([`HEAVY_OPS`], see
/// the documentation of the `validate` module): each such op that is not a constant, not a
/// product with 0, 1 or -1 and not a quotient by 1 or -1 is an application of an
/// uninterpreted function (one symbol per op, shared by both traces), and the overflow flag
/// of `int_mul_ovf` an uninterpreted predicate of the same operands. The concrete meaning of
/// every application is remembered, so a query can be re-checked with the full bit-vector
/// semantics by substitution; so is the meaning of an application with a constant operand
/// in terms of the other applications, for [`Mode::Partial`].
pub(super) struct Abstraction {
    /// Whether heavy ops are abstracted at all ([`Config::abstract_heavy_ops`]).
    ///
    /// [`Config::abstract_heavy_ops`]: super::Config::abstract_heavy_ops
    pub(super) enabled: bool,
    /// The applications made so far, in creation order.
    pub(super) defs: Vec<Def>,
    /// The abstract terms already in `defs`.
    pub(super) known: HashSet<Dynamic>,
    /// Cheap facts about the applications that hold in the full semantics (`x * 0 == 0`,
    /// `x * 1 == x`, `x / 1 == x`, ...), assumed by abstract queries.
    pub(super) axioms: Vec<Bool>,
}

impl Abstraction {
    pub(super) fn new(enabled: bool) -> Abstraction {
        Abstraction {
            enabled,
            defs: Vec::new(),
            known: HashSet::new(),
            axioms: Vec::new(),
        }
    }

    /// `x` with every application replaced by its concrete meaning.
    pub(super) fn concrete<T: Ast + Clone>(&self, x: &T) -> T {
        if self.defs.is_empty() {
            return x.clone();
        }
        let pairs: Vec<(&Dynamic, &Dynamic)> = self.defs.iter().map(|d| (&d.app, &d.concrete)).collect();
        x.substitute(&pairs)
    }

    /// `x` with every application that has a constant operand replaced by its meaning in
    /// [`Mode::Partial`].
    pub(super) fn partial<T: Ast + Clone>(&self, x: &T) -> T {
        let pairs: Vec<(&Dynamic, &Dynamic)> = self
            .defs
            .iter()
            .filter_map(|d| Some((&d.app, d.partial.as_ref()?)))
            .collect();
        if pairs.is_empty() {
            return x.clone();
        }
        x.substitute(&pairs)
    }

    /// `x` in the semantics of `mode`.
    pub(super) fn in_mode<T: Ast + Clone>(&self, x: &T, mode: Mode) -> T {
        match mode {
            Mode::Abstract => x.clone(),
            Mode::Partial => self.partial(x),
            Mode::Concrete { .. } => self.concrete(x),
        }
    }

    /// Whether some application has a constant operand (so that [`Mode::Partial`] differs
    /// from [`Mode::Abstract`]).
    pub(super) fn has_partial(&self) -> bool {
        self.defs.iter().any(|d| d.partial.is_some())
    }

    /// Remember the meaning of `app` (and its axioms), when it is new: `meaning(x)` applies the
    /// op to operands `x` (their concrete or their partial meanings); `by_constant`: whether
    /// an operand is a constant.
    pub(super) fn define(
        &mut self,
        app: Dynamic,
        by_constant: bool,
        meaning: impl Fn(&Self, Mode) -> Dynamic,
        axioms: impl FnOnce() -> Vec<Bool>,
    ) {
        if self.known.contains(&app) {
            return;
        }
        let concrete = meaning(self, Mode::Concrete { light: false });
        let partial = by_constant.then(|| meaning(self, Mode::Partial));
        self.known.insert(app.clone());
        self.defs.push(Def { app, concrete, partial });
        self.axioms.extend(axioms());
    }

    /// The operands of a heavy op in canonical form: simplified (so that `x + 0` and `x`
    /// give the same application) and, for the commutative ones, ordered (a constant second,
    /// so that products of the same constant with operands written differently on the two
    /// sides are applications to the same constant in the same place).
    pub(super) fn operands(opc: Opcode, a: &BV, b: &BV) -> (BV, BV) {
        if is_commutative(opc) {
            ordered(a, b)
        } else {
            (a.simplify(), b.simplify())
        }
    }

    /// Whether `opc(a, b)` is abstracted: a heavy op that is not a constant, a product with 0,
    /// 1 or -1, or a quotient by 0, 1 or -1 (those cost no circuit).
    pub(super) fn abstracts(&self, opc: Opcode, a: &BV, b: &BV) -> bool {
        let trivial = |x: &BV| matches!(x.as_u64(), Some(0 | 1 | u64::MAX));
        let num = |x: &BV| x.as_u64().is_some();
        self.enabled
            && HEAVY_OPS.contains(&opc)
            && !(num(a) && num(b))
            && if is_commutative(opc) {
                !trivial(a) && !trivial(b)
            } else {
                !trivial(b)
            }
    }

    /// Whether an operand of `opc(a, b)` (the divisor of a division) is a constant: its
    /// circuit is cheaper, and it has a meaning in [`Mode::Partial`].
    fn by_constant(opc: Opcode, a: &BV, b: &BV) -> bool {
        b.as_u64().is_some() || (is_commutative(opc) && a.as_u64().is_some())
    }

    /// The value of heavy op `opc(args)` (and its `valid_if`), abstracted; `None` when the op
    /// is not abstracted.
    pub(super) fn value(&mut self, opc: Opcode, args: &[BV]) -> Option<(BV, Bool)> {
        if args.len() != 2 || !self.enabled || !HEAVY_OPS.contains(&opc) {
            return None;
        }
        let (mut a, mut b) = Abstraction::operands(opc, &args[0], &args[1]);
        let is_div = matches!(
            opc,
            Opcode::IntFloorDiv | Opcode::IntMod | Opcode::IntPyDiv | Opcode::IntPyMod
        );
        let valid = if is_div {
            b.eq(zero()).not()
        } else {
            Bool::from_bool(true)
        };
        if is_div && a.ast_eq(&b) {
            // `x / x` and `x % x`: exact without a division circuit (1 and 0 where
            // defined; at zero whatever the semantics gives).
            let at_zero = op_semantics(opc, &[zero(), zero()]).ok()?.0.simplify();
            let one = matches!(opc, Opcode::IntFloorDiv | Opcode::IntPyDiv);
            let v = a.eq(zero()).ite(&at_zero, &bv(one as u64));
            return Some((v, valid));
        }
        if is_div && a.as_u64() == Some(0) {
            // `0 / y`, `0 % y`: 0 where defined, without a division circuit.
            let at_zero = op_semantics(opc, &[zero(), zero()]).ok()?.0.simplify();
            return Some((b.eq(zero()).ite(&at_zero, &zero()), valid));
        }
        if matches!(opc, Opcode::IntMul | Opcode::IntMulOvf) {
            // (-x) * (-y) == x * y (wrapping).
            if let (Some(x), Some(y)) = (negated(&a), negated(&b)) {
                (a, b) = Abstraction::operands(opc, &x, &y);
            }
        }
        if let Some(k) = power_of_two_factor(opc, &b) {
            // `x * 2^k` is `x << k` (wrapping): exact, and no circuit; the form a strength
            // reduction writes, so both sides give the same term.
            return Some((a.bvshl(bv(k)), valid));
        }
        if !self.abstracts(opc, &a, &b) {
            return None;
        }
        // `int_mul_ovf` computes the same wrapped product as `int_mul`.
        let symbol = if opc == Opcode::IntMulOvf { Opcode::IntMul } else { opc };
        let app = uf_bv(&format!("abs:{}", symbol.name()), &[a.clone(), b.clone()]);
        self.define(
            Dynamic::from_ast(&app),
            Abstraction::by_constant(opc, &a, &b),
            |abs, mode| {
                let (ma, mb) = (abs.in_mode(&a, mode), abs.in_mode(&b, mode));
                let (v, _) = op_semantics(symbol, &[ma, mb]).expect("heavy ops have semantics");
                Dynamic::from_ast(&v)
            },
            || heavy_axioms(symbol, &a, &b, &app),
        );
        Some((app, valid))
    }

    /// The "no overflow" flag of `int_mul_ovf(a, b)`, abstracted; `None` when not abstracted.
    pub(super) fn no_overflow(&mut self, opc: Opcode, a: &BV, b: &BV) -> Option<Bool> {
        if opc != Opcode::IntMulOvf {
            return None;
        }
        let (a, b) = Abstraction::operands(opc, a, b);
        if !self.abstracts(opc, &a, &b) {
            return None;
        }
        let app = uf_bool("abs:int_mul_ovf_ok", &[a.clone(), b.clone()]);
        self.define(
            Dynamic::from_ast(&app),
            Abstraction::by_constant(opc, &a, &b),
            |abs, mode| {
                let (ma, mb) = (abs.in_mode(&a, mode), abs.in_mode(&b, mode));
                Dynamic::from_ast(&no_overflow(opc, &ma, &mb).expect("int_mul_ovf has an overflow flag"))
            },
            || {
                // Multiplying by 0 or 1 never overflows.
                let trivial = [a.eq(zero()), b.eq(zero()), a.eq(bv(1)), b.eq(bv(1))];
                vec![Bool::or(&trivial).implies(&app)]
            },
        );
        Some(app)
    }
}

/// Facts about `f = opc(a, b)` that hold in the full semantics and cost no circuit:
/// multiplication by 0, 1 and -1, division of 0, division by 1 and -1.
pub(super) fn heavy_axioms(opc: Opcode, a: &BV, b: &BV, f: &BV) -> Vec<Bool> {
    let (zero, one, minus_one) = (zero(), bv(1), bv(u64::MAX));
    let when = |c: Bool, v: &BV| c.implies(f.eq(v));
    match opc {
        Opcode::IntMul => vec![
            when(Bool::or(&[a.eq(&zero), b.eq(&zero)]), &zero),
            when(a.eq(&one), b),
            when(b.eq(&one), a),
            when(a.eq(&minus_one), &b.bvneg()),
            when(b.eq(&minus_one), &a.bvneg()),
        ],
        Opcode::UintMulHigh => vec![when(
            Bool::or(&[a.eq(&zero), b.eq(&zero), a.eq(&one), b.eq(&one)]),
            &zero,
        )],
        Opcode::IntFloorDiv | Opcode::IntPyDiv => vec![
            when(Bool::and(&[a.eq(&zero), b.eq(&zero).not()]), &zero),
            when(b.eq(&one), a),
            when(b.eq(&minus_one), &a.bvneg()),
        ],
        Opcode::IntMod | Opcode::IntPyMod => vec![
            when(Bool::and(&[a.eq(&zero), b.eq(&zero).not()]), &zero),
            when(Bool::or(&[b.eq(&one), b.eq(&minus_one)]), &zero),
        ],
        _ => Vec::new(),
    }
}

/// `k` when `opc` is a product and `b` (the constant operand, second after
/// [`Abstraction::operands`]) is `2^k` with `1 <= k <= 63`.
fn power_of_two_factor(opc: Opcode, b: &BV) -> Option<u64> {
    let c = b.as_u64()?;
    (matches!(opc, Opcode::IntMul | Opcode::IntMulOvf) && c.is_power_of_two() && c > 1)
        .then(|| c.trailing_zeros() as u64)
}

/// `x` when `t` is `-x` (Z3's simplifier writes it `-1 * x`).
pub(super) fn negated(t: &BV) -> Option<BV> {
    let decl = t.safe_decl().ok()?;
    let kids = t.children();
    match (decl.kind(), kids.as_slice()) {
        (z3::DeclKind::Bneg, [x]) => x.as_bv(),
        (z3::DeclKind::Bmul, [c, x]) | (z3::DeclKind::Bmul, [x, c]) if c.as_bv()?.as_u64() == Some(u64::MAX) => {
            x.as_bv()
        }
        _ => None,
    }
}

pub(super) fn is_commutative(opc: Opcode) -> bool {
    matches!(opc, Opcode::IntMul | Opcode::IntMulOvf | Opcode::UintMulHigh)
}

/// The two operands of a commutative op, simplified, in one order whichever way they come
/// (a constant second, otherwise by [`ast_hash`]): equal computations written either way
/// are then one term.
pub(super) fn ordered(a: &BV, b: &BV) -> (BV, BV) {
    let (a, b) = (a.simplify(), b.simplify());
    let num = |x: &BV| x.as_u64().is_some();
    let swap = match (num(&a), num(&b)) {
        (true, false) => true,
        (false, true) => false,
        _ => ast_hash(&a) > ast_hash(&b),
    };
    if swap {
        (b, a)
    } else {
        (a, b)
    }
}

/// Z3's structural hash of a term (stable for equal terms).
pub(super) fn ast_hash(x: &BV) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}
