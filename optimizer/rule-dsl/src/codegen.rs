//! Code generation: compiles checked rules into the Rust matcher included by
//! `optimizer/src/peephole.rs` (as `$OUT_DIR/generated_rules.rs`, inside its module
//! `generated`): the data `RULES` (one `RuleInfo` per rule; the type, the runtime helpers
//! `rt` and `rt_same`, and everything that reads `RULES` are ordinary Rust code of
//! `peephole.rs`) and the matcher `apply`.
//!
//! The matcher has one function per opcode, trying its rules in
//! order: first those whose result is an existing value or a constant, then those that emit
//! new ops (file order within each group). Each rule is a labelled block that `break`s on
//! the first mismatch. Commutative ops (from the opcode table) are matched both ways: the
//! rule is expanded into its distinct argument orders. Repeated variables match the same
//! value or equal constants; `C`-variables match constants only; nested patterns look
//! through `RuleEnv::def` (pure defining ops only, so never across label parameters).

use crate::ast::{BinOp, Pattern, UnOp};
use crate::check::{CheckedRule, ResultKind, TExpr, TStep, TTarget, Ty};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use trace_ir::Opcode;

/// All distinct argument orders of a pattern, swapping the operands of commutative ops.
pub fn commuted_variants(p: &Pattern) -> Vec<Pattern> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for v in expand(p) {
        if seen.insert(v.to_string()) {
            out.push(v);
        }
    }
    out
}

fn expand(p: &Pattern) -> Vec<Pattern> {
    match p {
        Pattern::Op(op, args, pos) => {
            let mut combos: Vec<Vec<Pattern>> = vec![Vec::new()];
            for a in args {
                let mut next = Vec::new();
                for prefix in &combos {
                    for va in expand(a) {
                        let mut v = prefix.clone();
                        v.push(va);
                        next.push(v);
                    }
                }
                combos = next;
            }
            let mut out = Vec::new();
            // The written order first, then the swapped ones.
            let mut swapped = Vec::new();
            for c in combos {
                if op.is_commutative() && c.len() == 2 {
                    swapped.push(Pattern::Op(*op, vec![c[1].clone(), c[0].clone()], *pos));
                }
                out.push(Pattern::Op(*op, c, *pos));
            }
            out.extend(swapped);
            out
        }
        _ => vec![p.clone()],
    }
}

fn variant_name(op: Opcode) -> String {
    format!("{op:?}")
}

fn lit(c: i64) -> String {
    if c == i64::MIN {
        "i64::MIN".to_string()
    } else {
        format!("({c}i64)")
    }
}

struct Gen<'a> {
    out: String,
    label: String,
    bound: HashMap<String, String>,
    pat_vars: HashSet<String>,
    tmp: usize,
    rule: &'a CheckedRule,
}

impl<'a> Gen<'a> {
    fn line(&mut self, indent: usize, s: &str) {
        for _ in 0..indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn pattern(&mut self, p: &Pattern, val: &str, ind: usize) {
        let l = self.label.clone();
        match p {
            Pattern::Var(n, _) | Pattern::ConstVar(n, _) => {
                if let Some(prev) = self.bound.get(n).cloned() {
                    self.line(ind, &format!("if !rt_same(&*env, {prev}, {val}) {{ break '{l}; }}"));
                } else {
                    self.line(ind, &format!("let a_{n}: Value = {val};"));
                    if matches!(p, Pattern::ConstVar(..)) {
                        self.line(
                            ind,
                            &format!("let Some(v_{n}) = env.const_int(a_{n}) else {{ break '{l}; }};"),
                        );
                    }
                    self.bound.insert(n.clone(), format!("a_{n}"));
                }
            }
            Pattern::Lit(c, _) => {
                self.line(
                    ind,
                    &format!("if env.const_int({val}) != Some({}) {{ break '{l}; }}", lit(*c)),
                );
            }
            Pattern::Op(op, args, _) => {
                self.tmp += 1;
                let k = self.tmp;
                self.line(
                    ind,
                    &format!("let Some((op_{k}, args_{k})) = env.def({val}) else {{ break '{l}; }};"),
                );
                self.line(
                    ind,
                    &format!(
                        "if op_{k} != Opcode::{} || args_{k}.len() != {} {{ break '{l}; }}",
                        variant_name(*op),
                        args.len()
                    ),
                );
                for (i, a) in args.iter().enumerate() {
                    self.pattern(a, &format!("args_{k}[{i}]"), ind);
                }
            }
        }
    }

    fn expr(&self, e: &TExpr) -> String {
        match e {
            TExpr::Const(c) => lit(*c),
            TExpr::IntVar(n) => {
                if self.pat_vars.contains(n) {
                    format!("v_{n}")
                } else {
                    format!("s_{n}")
                }
            }
            TExpr::BoolVar(n) => format!("s_{n}"),
            TExpr::Bound(n) => format!("b_{n}"),
            TExpr::Un(op, a) => {
                let a = self.expr(a);
                match op {
                    UnOp::Neg => format!("({a}).wrapping_neg()"),
                    UnOp::Invert | UnOp::Not => format!("(!{a})"),
                }
            }
            TExpr::Bin(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match op {
                    BinOp::Add => format!("({a}).wrapping_add({b})"),
                    BinOp::Sub => format!("({a}).wrapping_sub({b})"),
                    BinOp::Mul => format!("({a}).wrapping_mul({b})"),
                    BinOp::And => format!("({a} & {b})"),
                    BinOp::Or => format!("({a} | {b})"),
                    BinOp::Xor => format!("({a} ^ {b})"),
                    BinOp::Shl => format!("rt::shl({a}, {b})"),
                    BinOp::Ashr => format!("rt::ashr({a}, {b})"),
                    BinOp::Lshr => format!("rt::lshr({a}, {b})"),
                    BinOp::Eq => format!("({a} == {b})"),
                    BinOp::Ne => format!("({a} != {b})"),
                    BinOp::Lt => format!("({a} < {b})"),
                    BinOp::Le => format!("({a} <= {b})"),
                    BinOp::Gt => format!("({a} > {b})"),
                    BinOp::Ge => format!("({a} >= {b})"),
                    BinOp::Ult => format!("(({a} as u64) < ({b} as u64))"),
                    BinOp::Ule => format!("(({a} as u64) <= ({b} as u64))"),
                    BinOp::Ugt => format!("(({a} as u64) > ({b} as u64))"),
                    BinOp::Uge => format!("(({a} as u64) >= ({b} as u64))"),
                    BinOp::LogAnd => format!("({a} && {b})"),
                    BinOp::LogOr => format!("({a} || {b})"),
                }
            }
            TExpr::Query(q, recv, args) => {
                let r = self.expr(recv);
                let args: Vec<String> = args
                    .iter()
                    .zip(q.args)
                    .map(|(a, ty)| match ty {
                        Ty::Int => format!("&(({}) as u64)", self.expr(a)),
                        _ => format!("&{}", self.expr(a)),
                    })
                    .collect();
                let call = format!("{r}.{}({})", q.name, args.join(", "));
                match q.result {
                    Ty::Int => format!("(({call}) as i64)"),
                    _ => call,
                }
            }
            TExpr::Func(f, a) => format!("rt::{}({})", f.name(), self.expr(a)),
        }
    }

    fn target(&mut self, t: &TTarget, ind: usize) -> String {
        match t {
            TTarget::Var(n) => self.bound[n].clone(),
            TTarget::Const(e) => {
                self.tmp += 1;
                let k = self.tmp;
                let e = self.expr(e);
                self.line(ind, &format!("let t_{k} = env.make_const({e});"));
                format!("t_{k}")
            }
            TTarget::Op(op, args) => {
                let args: Vec<String> = args.iter().map(|a| self.target(a, ind)).collect();
                self.tmp += 1;
                let k = self.tmp;
                self.line(
                    ind,
                    &format!(
                        "let t_{k} = env.emit(Opcode::{}, &[{}]);",
                        variant_name(*op),
                        args.join(", ")
                    ),
                );
                format!("t_{k}")
            }
        }
    }
}

fn collect_bounds(e: &TExpr, out: &mut Vec<String>) {
    match e {
        TExpr::Bound(n) if !out.contains(n) => out.push(n.clone()),
        TExpr::Un(_, a) | TExpr::Func(_, a) => collect_bounds(a, out),
        TExpr::Bin(_, a, b) => {
            collect_bounds(a, out);
            collect_bounds(b, out);
        }
        TExpr::Query(_, r, args) => {
            collect_bounds(r, out);
            args.iter().for_each(|a| collect_bounds(a, out));
        }
        _ => {}
    }
}

fn collect_target_bounds(t: &TTarget, out: &mut Vec<String>) {
    match t {
        TTarget::Const(e) => collect_bounds(e, out),
        TTarget::Op(_, args) => args.iter().for_each(|a| collect_target_bounds(a, out)),
        TTarget::Var(_) => {}
    }
}

/// The rules of each opcode in the order they are tried (value/constant results first).
pub fn rules_by_opcode(rules: &[CheckedRule]) -> BTreeMap<Opcode, Vec<&CheckedRule>> {
    let mut by_op: BTreeMap<Opcode, Vec<&CheckedRule>> = BTreeMap::new();
    for r in rules {
        by_op.entry(r.root).or_default().push(r);
    }
    for v in by_op.values_mut() {
        v.sort_by_key(|r| r.result == ResultKind::NewOp);
    }
    by_op
}

fn str_lit(s: &str) -> String {
    format!("{s:?}")
}

/// Generates the Rust source of the matcher (see the module documentation).
pub fn generate(rules: &[CheckedRule]) -> String {
    let mut out = String::new();
    let by_op = rules_by_opcode(rules);
    out.push_str("// @generated by optimizer/build.rs from optimizer/rules/*.rules (rule-dsl). Do not edit.\n");
    out.push_str("// Included by `optimizer/src/peephole.rs` inside its module `generated`.\n\n");
    out.push_str("use super::{rt, rt_same, RuleEnv, RuleInfo};\nuse trace_ir::{Opcode, Value};\n\n");
    out.push_str(
        "/// Every rule, grouped by opcode, in the order the rules are tried.\npub static RULES: &[RuleInfo] = &[\n",
    );
    for (op, rs) in &by_op {
        for r in rs {
            let _ = writeln!(
                out,
                "    RuleInfo {{ name: {}, opcode: Opcode::{}, file: {}, line: {}, doc: {} }},",
                str_lit(r.name()),
                variant_name(*op),
                str_lit(&r.rule.file),
                r.rule.pos.line,
                str_lit(&r.rule.doc)
            );
        }
    }
    out.push_str("];\n\n");
    out.push_str("/// Tries the rules of `opcode` on an op with these (already forwarded) arguments;\n/// on success returns the rule's name and the value that replaces the op.\n");
    out.push_str("pub fn apply(env: &mut dyn RuleEnv, opcode: Opcode, args: &[Value]) -> Option<(&'static str, Value)> {\n    match opcode {\n");
    for op in by_op.keys() {
        let _ = writeln!(
            out,
            "        Opcode::{} => rules_{}(env, args),",
            variant_name(*op),
            op.name()
        );
    }
    out.push_str("        _ => None,\n    }\n}\n");
    for (op, rs) in &by_op {
        let _ = writeln!(
            out,
            "\nfn rules_{}(env: &mut dyn RuleEnv, args: &[Value]) -> Option<(&'static str, Value)> {{",
            op.name()
        );
        let _ = writeln!(
            out,
            "    if args.len() != {} {{\n        return None;\n    }}",
            op.fixed_arity()
        );
        let mut n = 0;
        for r in rs {
            for variant in commuted_variants(&r.rule.pattern) {
                n += 1;
                let mut g = Gen {
                    out: String::new(),
                    label: format!("r{n}"),
                    bound: HashMap::new(),
                    pat_vars: r.vars.iter().map(|v| v.name.clone()).collect(),
                    tmp: 0,
                    rule: r,
                };
                let _ = writeln!(
                    g.out,
                    "    // {} ({}:{}): {}",
                    g.rule.name(),
                    r.rule.file,
                    r.rule.pos.line,
                    variant
                );
                g.line(1, &format!("'r{n}: {{"));
                let Pattern::Op(_, args, _) = &variant else {
                    unreachable!("checked: root is an op")
                };
                for (i, a) in args.iter().enumerate() {
                    g.pattern(a, &format!("args[{i}]"), 2);
                }
                let mut bounds = Vec::new();
                for s in &r.steps {
                    match s {
                        TStep::Check(e) | TStep::Assign(_, e, _) => collect_bounds(e, &mut bounds),
                    }
                }
                collect_target_bounds(&r.target, &mut bounds);
                for b in &bounds {
                    let v = g.bound[b].clone();
                    g.line(2, &format!("let b_{b} = env.bound({v});"));
                }
                for s in &r.steps {
                    match s {
                        TStep::Check(e) => {
                            let e = g.expr(e);
                            g.line(2, &format!("if !{e} {{ break 'r{n}; }}"));
                        }
                        TStep::Assign(name, e, _) => {
                            let e = g.expr(e);
                            g.line(2, &format!("let s_{name} = {e};"));
                        }
                    }
                }
                let res = g.target(&r.target, 2);
                g.line(2, &format!("return Some(({}, {res}));", str_lit(r.name())));
                g.line(1, "}");
                out.push_str(&g.out);
            }
        }
        out.push_str("    None\n}\n");
    }
    out
}
