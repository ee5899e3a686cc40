//! `rule-dsl`: parser, type checker and code generator of tracejit's peephole rule language
//! (the syntax of PyPy's `real.rules`; see `optimizer/rules/README.md` for the language and
//! the rule contract).
//!
//! - [`parse_file`]: text to [`Rule`]s, errors with file, line and column;
//! - [`check_rule`]: type checking and name resolution, giving [`CheckedRule`]s;
//! - [`load`]: both for several files, rejecting duplicate rule names;
//! - [`codegen::generate`]: the Rust matcher `optimizer/build.rs` writes to
//!   `$OUT_DIR/rules_gen.rs`;
//! - [`rt`]: the integer helpers of rule expressions, shared by the generated code.
//!
//! `verify` uses the same [`CheckedRule`]s to prove every rule with Z3.
//!
//! ```
//! let rules = rule_dsl::parse_file("# x + 0 == x\nadd_zero: int_add(x, 0)\n    => x\n", "arith.rules")?;
//! assert_eq!(rules.len(), 1);
//! let checked = rule_dsl::check_rule(&rules[0])?;
//! assert_eq!(checked.rule.name, "add_zero");
//! // A mistake comes back with its place.
//! let err = rule_dsl::parse_file("broken: int_add(x, \n", "bad.rules").unwrap_err();
//! assert!(err.to_string().starts_with("bad.rules:"), "{err}");
//! # Ok::<(), rule_dsl::RuleError>(())
//! ```
#![deny(missing_docs)]

pub mod ast;
pub mod check;
pub mod codegen;
pub mod lexer;
pub mod parser;
pub mod rt;

pub use ast::{BinOp, Pattern, Pos, Rule, Step, Target, UnOp};
pub use check::{check_rule, CheckedRule, Func, PatVar, Query, ResultKind, TExpr, TStep, TTarget, Ty, QUERIES};
pub use parser::{is_const_var, named_constant, parse_file};

use std::fmt;

/// An error in a rule file, with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// The rule file (as named by the caller).
    pub file: String,
    /// Where the problem is.
    pub pos: Pos,
    /// What is wrong.
    pub msg: String,
}

impl RuleError {
    /// A new error.
    pub fn new(file: &str, pos: Pos, msg: impl Into<String>) -> Self {
        RuleError {
            file: file.to_string(),
            pos,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file, self.pos.line, self.pos.col, self.msg
        )
    }
}

impl std::error::Error for RuleError {}

/// Parses and type-checks rule files given as `(name, source)` pairs; rule names must be
/// unique over all files. Rules keep their file order.
pub fn load(files: &[(String, String)]) -> Result<Vec<CheckedRule>, RuleError> {
    let mut out: Vec<CheckedRule> = Vec::new();
    let mut seen: std::collections::HashMap<String, (String, Pos)> = Default::default();
    for (name, src) in files {
        for rule in parse_file(src, name)? {
            if let Some((f, p)) = seen.get(&rule.name) {
                return Err(RuleError::new(
                    name,
                    rule.pos,
                    format!(
                        "duplicate rule name `{}` (first defined at {f}:{}:{})",
                        rule.name, p.line, p.col
                    ),
                ));
            }
            seen.insert(rule.name.clone(), (name.clone(), rule.pos));
            out.push(check_rule(&rule)?);
        }
    }
    Ok(out)
}

/// Parses and type-checks one rule file.
pub fn load_str(src: &str, file: &str) -> Result<Vec<CheckedRule>, RuleError> {
    load(&[(file.to_string(), src.to_string())])
}
