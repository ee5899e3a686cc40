//! Rule coverage: every peephole rule of `optimizer/rules/*.rules` fires at least once when
//! `optimizer::optimize` runs on a small trace made for it, and its firing is counted in
//! `Stats::rules` under the rule's name.
//!
//! The trace for a rule is built from the rule's own pattern: each plain variable becomes a
//! trace input (optionally narrowed by guards to a range, or a value with known low zero
//! bits), each `C`-variable a constant, each op an op, and the pattern's root is returned by
//! `finish`. The test searches (deterministically) over a few candidate constants and
//! variable shapes until the rule fires, first with all optimizations on, then with the
//! abstract domain off (some rules compute what the domain would already fold, e.g.
//! `mul_zero`; they still fire for users who turn `intbounds` off). Rules that never fire are
//! named in the failure message.

use optimizer::peephole::RULES;
use optimizer::{optimize, Options};
use rule_dsl::{CheckedRule, Pattern};
use std::collections::HashMap;
use trace_ir::{Kind, Opcode, TraceBuilder, Value};

const CONSTS: &[i64] = &[
    5,
    3,
    12,
    4,
    8,
    1,
    2,
    7,
    15,
    16,
    60,
    0,
    -1,
    -2,
    -8,
    255,
    63,
    32,
    62,
    64,
    100,
    -256,
    i64::MIN,
    i64::MAX,
];
/// Variable shapes: 0 plain input, 1..=6 input narrowed to a range, 7 `input << 3`.
const RANGES: &[(i64, i64)] = &[(0, 1), (0, 100), (-1, 0), (1, 100), (-100, -1), (0, 7)];
const SHAPES: usize = 2 + RANGES.len();
const MAX_TRIES: usize = 40_000;

fn load_rules() -> Vec<CheckedRule> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rules"))
        .collect();
    paths.sort();
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap()))
        .collect();
    rule_dsl::load(&files).unwrap_or_else(|e| panic!("{e}"))
}

struct Builder<'a> {
    b: TraceBuilder,
    vals: HashMap<String, Value>,
    consts: &'a HashMap<String, i64>,
    shapes: &'a HashMap<String, usize>,
    key: u64,
}

impl Builder<'_> {
    /// Creates every variable up front: all inputs first (inputs precede ops in a trace), then
    /// the guards or ops that give them their shapes, then the constants.
    fn vars(&mut self, rule: &CheckedRule) {
        let mut inputs = Vec::new();
        for v in rule.vars.iter().filter(|v| !v.is_const) {
            inputs.push((v.name.clone(), self.b.input(Kind::Int)));
        }
        for (name, x) in inputs {
            let shape = self.shapes[&name];
            let v = if shape == SHAPES - 1 {
                let three = self.b.const_int(3);
                self.b.op(Opcode::IntLshift, &[x, three])
            } else {
                if shape >= 1 {
                    let (lo, hi) = RANGES[shape - 1];
                    for (opc, c) in [(Opcode::IntGe, lo), (Opcode::IntLe, hi)] {
                        let c = self.b.const_int(c);
                        let cond = self.b.op(opc, &[x, c]);
                        self.key += 1;
                        self.b.guard(Opcode::GuardTrue, &[cond], &[x], self.key);
                    }
                }
                x
            };
            self.vals.insert(name, v);
        }
        for v in rule.vars.iter().filter(|v| v.is_const) {
            let c = self.b.const_int(self.consts[&v.name]);
            self.vals.insert(v.name.clone(), c);
        }
    }

    fn var(&mut self, name: &str) -> Value {
        self.vals[name]
    }

    fn pattern(&mut self, p: &Pattern) -> Value {
        match p {
            Pattern::Var(n, _) | Pattern::ConstVar(n, _) => self.var(n),
            Pattern::Lit(c, _) => self.b.const_int(*c),
            Pattern::Op(op, args, _) => {
                let args: Vec<Value> = args.iter().map(|a| self.pattern(a)).collect();
                self.b.op(*op, &args)
            }
        }
    }
}

/// Tries candidate traces for `rule` until it fires; returns the number of tries if it did.
fn fire(rule: &CheckedRule, opts: &Options) -> Option<usize> {
    let cvars: Vec<&str> = rule
        .vars
        .iter()
        .filter(|v| v.is_const)
        .map(|v| v.name.as_str())
        .collect();
    let xvars: Vec<&str> = rule
        .vars
        .iter()
        .filter(|v| !v.is_const)
        .map(|v| v.name.as_str())
        .collect();
    let radices: Vec<usize> = cvars
        .iter()
        .map(|_| CONSTS.len())
        .chain(xvars.iter().map(|_| SHAPES))
        .collect();
    let mut digits = vec![0usize; radices.len()];
    for tries in 1..=MAX_TRIES {
        let consts: HashMap<String, i64> = cvars
            .iter()
            .zip(&digits)
            .map(|(n, &d)| (n.to_string(), CONSTS[d]))
            .collect();
        let shapes: HashMap<String, usize> = xvars
            .iter()
            .zip(&digits[cvars.len()..])
            .map(|(n, &d)| (n.to_string(), d))
            .collect();
        let mut bld = Builder {
            b: TraceBuilder::new(),
            vals: HashMap::new(),
            consts: &consts,
            shapes: &shapes,
            key: 0,
        };
        bld.vars(rule);
        let root = bld.pattern(&rule.rule.pattern);
        bld.b.finish(&[root]);
        let trace = bld
            .b
            .build()
            .unwrap_or_else(|e| panic!("{}: invalid test trace: {e}", rule.name()));
        // A trace the optimizer refuses is a bug in the optimizer, not a reason to skip.
        let out = optimize(&trace, opts).unwrap_or_else(|e| panic!("{}: optimize failed: {e}", rule.name()));
        if out.stats.rules.get(rule.name()).copied().unwrap_or(0) > 0 {
            return Some(tries);
        }
        // next candidate (mixed-radix counter, first digit fastest)
        let mut i = 0;
        loop {
            if i == digits.len() {
                return None;
            }
            digits[i] += 1;
            if digits[i] < radices[i] {
                break;
            }
            digits[i] = 0;
            i += 1;
        }
    }
    None
}

#[test]
fn every_rule_fires_and_is_counted() {
    let rules = load_rules();
    assert_eq!(
        rules.len(),
        RULES.len(),
        "the test and the build see different rule files"
    );
    let no_bounds = Options {
        intbounds: false,
        ..Options::default()
    };
    let mut never = Vec::new();
    for r in &rules {
        if fire(r, &Options::default()).or_else(|| fire(r, &no_bounds)).is_none() {
            never.push(format!("{} ({}:{})", r.name(), r.rule.file, r.rule.pos.line));
        }
    }
    assert!(
        never.is_empty(),
        "{} of {} rules never fired:\n  {}",
        never.len(),
        rules.len(),
        never.join("\n  ")
    );
}

#[test]
fn generated_rule_table_matches_the_rule_files() {
    let rules = load_rules();
    for r in &rules {
        let info = RULES
            .iter()
            .find(|i| i.name == r.name())
            .unwrap_or_else(|| panic!("{} missing from RULES", r.name()));
        assert_eq!(info.opcode, r.root);
        assert_eq!(info.line, r.rule.pos.line);
        assert!(!info.doc.is_empty(), "{} has no identity comment", r.name());
    }
    // Grouped by opcode, and within an opcode, rules producing values/constants come first.
    for w in RULES.windows(2) {
        assert!(
            w[0].opcode <= w[1].opcode,
            "RULES not grouped by opcode at {}",
            w[1].name
        );
    }
}

#[test]
fn a_simple_rule_rewrites_and_counts() {
    // int_sub(int_add(x, y), y) => x: the trace returns the input itself.
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Int);
    let s = b.op(Opcode::IntAdd, &[y, x]);
    let d = b.op(Opcode::IntSub, &[s, y]);
    b.finish(&[d]);
    let out = optimize(&b.build().unwrap(), &Options::default()).unwrap();
    assert_eq!(out.stats.rules.get("sub_add"), Some(&1));
    assert_eq!(out.trace.num_real_ops(), 1, "only the finish is left");
}

#[test]
fn stats_are_printed_per_opcode() {
    use optimizer::peephole::format_stats;
    let mut counts = std::collections::BTreeMap::new();
    counts.insert("add_zero", 3usize);
    counts.insert("and_identity", 1usize);
    let text = format_stats(&counts);
    assert!(text.starts_with("int_add\n"), "{text}");
    assert!(text.contains("\n    add_zero 3\n"), "{text}");
    assert!(text.contains("\n    add_reassoc_consts 0\n"), "{text}");
    assert!(!text.contains("int_sub"), "{text}");
    assert!(text.ends_with("other\n    and_identity 1\n"), "{text}");
}
