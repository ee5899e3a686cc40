//! Printing a finding as a rule-like pattern: leaves named `x`, `y`, ..., constants `C1`, `C2`, ...

use std::collections::HashMap;

use trace_ir::{Const, OpFlags, Trace, Value, ValueData};

use super::encode::Enc;
use super::miner::{Claim, Problem};

const LEAF_NAMES: &[&str] = &["x", "y", "z", "w", "u", "v", "s", "t"];

struct Render<'a> {
    t: &'a Trace,
    p: &'a Problem,
    abstract_consts: bool,
    leaves: HashMap<usize, String>,
    consts: HashMap<i64, String>,
}

/// An integer literal: decimal when small, hex otherwise.
pub fn literal(v: i64) -> String {
    if (-65536..65536).contains(&v) {
        v.to_string()
    } else {
        format!("0x{:x}", v as u64)
    }
}

impl Render<'_> {
    fn lit(&mut self, v: i64) -> String {
        if !self.abstract_consts || matches!(v, -1..=1) {
            return literal(v);
        }
        let n = self.consts.len() + 1;
        self.consts.entry(v).or_insert_with(|| format!("C{n}")).clone()
    }

    fn leaf(&mut self, k: usize) -> String {
        let n = self.leaves.len();
        self.leaves
            .entry(k)
            .or_insert_with(|| {
                LEAF_NAMES
                    .get(n)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| format!("x{n}"))
            })
            .clone()
    }

    fn value(&mut self, v: Value) -> String {
        match v.data() {
            ValueData::Op(o) => self.expr(o.index()),
            ValueData::Const(c) => match self.t.consts.get(c) {
                Const::Int(i) => self.lit(i),
                other => trace_ir::text::const_to_string(other, self.t.consts.name(c)),
            },
        }
    }

    fn apply(&mut self, k: usize) -> String {
        let op = &self.t.ops[k];
        let args: Vec<String> = op.args.clone().iter().map(|&a| self.value(a)).collect();
        format!("{}({})", op.opcode.name(), args.join(", "))
    }

    fn expr(&mut self, k: usize) -> String {
        if self.p.defined.contains(&k) {
            self.apply(k)
        } else {
            self.leaf(k)
        }
    }
}

pub(super) fn render(t: &Trace, p: &Problem, c: Claim, abstract_consts: bool) -> String {
    let mut r = Render {
        t,
        p,
        abstract_consts,
        leaves: HashMap::new(),
        consts: HashMap::new(),
    };
    let head = match c {
        Claim::Const(x, v) => {
            let lhs = r.expr(x);
            let bool_result = t.ops[x].opcode.has(OpFlags::BOOL_RESULT);
            let rhs = if bool_result {
                literal(v as i64)
            } else {
                r.lit(v as i64)
            };
            format!("{lhs} => {rhs}")
        }
        Claim::Same(x, y) => {
            let lhs = r.expr(x);
            let rhs = r.expr(y);
            // The same computation twice (what CSE removes).
            let note = if lhs == rhs { "   (computed twice)" } else { "" };
            format!("{lhs} => {rhs}{note}")
        }
        Claim::NoOverflow(x) => {
            let lhs = r.apply(x);
            let plain = t.ops[x].opcode.ovf_to_wrapping().map(|o| o.name()).unwrap_or("?");
            let rhs = lhs.replacen(t.ops[x].opcode.name(), plain, 1);
            format!("{lhs} => {rhs} (never overflows)")
        }
        Claim::Guard(g) => format!("{} => (always passes)", guard_text(&mut r, g)),
    };
    let mut conds: Vec<String> = p.guards.iter().map(|&g| guard_text(&mut r, g)).collect();
    for &o in &p.ovf {
        let e = r.apply(o);
        conds.push(format!("guard_no_overflow({e})"));
    }
    for &k in &p.ranges {
        let label = Enc::new(t).load_range(k).map(|(_, _, l)| l).unwrap_or_default();
        let e = r.expr(k);
        conds.push(if label.starts_with(':') {
            format!("{e}{label}")
        } else {
            format!("{e} {label}")
        });
    }
    if conds.is_empty() {
        head
    } else {
        format!("{head}   if {}", conds.join(" and "))
    }
}

fn guard_text(r: &mut Render<'_>, g: usize) -> String {
    let op = &r.t.ops[g];
    let args: Vec<String> = op.args.clone().iter().map(|&a| r.value(a)).collect();
    format!("{}({})", op.opcode.name(), args.join(", "))
}
