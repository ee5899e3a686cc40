//! Parser of rule files (syntax of PyPy's `real.rules`):
//!
//! ```text
//! # x + 0 == x
//! add_zero: int_add(x, 0)
//!     => x
//!
//! # x * 2**k == x << k
//! mul_pow2_const: int_mul(x, C)
//!     check C > 0 and C & (C - 1) == 0
//!     shift = highest_bit(C)
//!     => int_lshift(x, shift)
//! ```
//!
//! One rule header per line (`name: pattern`), then any number of `check <expr>` and
//! `name = <expr>` lines, then `=> target`. Newlines inside parentheses are ignored. The
//! `#` comment lines directly above a rule (no blank line in between) or after its header
//! are its documentation.

use crate::ast::*;
use crate::lexer::{lex, Tok, Token};
use crate::RuleError;
use trace_ir::Opcode;

/// The named constants usable anywhere a number is (`MININT`, `MAXINT`, `LONG_BIT`).
pub fn named_constant(name: &str) -> Option<i64> {
    match name {
        "MININT" => Some(i64::MIN),
        "MAXINT" => Some(i64::MAX),
        "LONG_BIT" => Some(64),
        _ => None,
    }
}

/// Whether `name` is a `C`-variable (matches constants only): `C` followed by nothing, digits,
/// or `_`/lowercase suffix (`C`, `C1`, `C_mask`).
pub fn is_const_var(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next() == Some('C') && cs.all(|c| c.is_ascii_digit() || c == '_' || c.is_ascii_lowercase())
}

struct Parser<'a> {
    toks: Vec<Token>,
    i: usize,
    file: &'a str,
}

/// Parses one rule file. `file` names it in errors and in [`Rule::file`].
pub fn parse_file(src: &str, file: &str) -> Result<Vec<Rule>, RuleError> {
    let toks = lex(src, file)?;
    let mut p = Parser { toks, i: 0, file };
    p.rules()
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.toks[self.i].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.i + n).min(self.toks.len() - 1)].tok
    }
    fn pos(&self) -> Pos {
        self.toks[self.i].pos
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.i].clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }
    fn err<T>(&self, pos: Pos, msg: impl Into<String>) -> Result<T, RuleError> {
        Err(RuleError::new(self.file, pos, msg))
    }
    fn describe(t: &Tok) -> String {
        match t {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Comment(_) => "a comment".into(),
            Tok::Newline => "end of line".into(),
            Tok::Eof => "end of file".into(),
        }
    }
    fn expect(&mut self, p: &'static str) -> Result<Pos, RuleError> {
        if self.peek() == &Tok::Punct(p) {
            Ok(self.bump().pos)
        } else {
            self.err(
                self.pos(),
                format!("expected `{p}`, found {}", Self::describe(self.peek())),
            )
        }
    }
    fn eat(&mut self, p: &'static str) -> bool {
        if self.peek() == &Tok::Punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    /// Skips comments inside a line; expects the end of the line. Returns trailing comments.
    fn end_of_line(&mut self) -> Result<Vec<String>, RuleError> {
        let mut comments = Vec::new();
        while let Tok::Comment(c) = self.peek() {
            comments.push(c.clone());
            self.bump();
        }
        match self.peek() {
            Tok::Newline => {
                self.bump();
                Ok(comments)
            }
            Tok::Eof => Ok(comments),
            t => self.err(self.pos(), format!("expected end of line, found {}", Self::describe(t))),
        }
    }

    fn rules(&mut self) -> Result<Vec<Rule>, RuleError> {
        let mut rules = Vec::new();
        let mut doc: Vec<String> = Vec::new();
        let mut at_line_start = true;
        loop {
            match self.peek().clone() {
                Tok::Eof => return Ok(rules),
                Tok::Newline => {
                    // A blank line separates comments from the next rule.
                    if at_line_start {
                        doc.clear();
                    }
                    at_line_start = true;
                    self.bump();
                }
                Tok::Comment(c) => {
                    doc.push(c);
                    self.bump();
                    at_line_start = false;
                }
                Tok::Ident(name) => {
                    let pos = self.pos();
                    self.bump();
                    self.expect(":")?;
                    let rule = self.rule(name, pos, std::mem::take(&mut doc))?;
                    rules.push(rule);
                    at_line_start = true;
                }
                t => {
                    return self.err(
                        self.pos(),
                        format!("expected a rule (`name: pattern`), found {}", Self::describe(&t)),
                    )
                }
            }
        }
    }

    fn rule(&mut self, name: String, pos: Pos, mut doc: Vec<String>) -> Result<Rule, RuleError> {
        let pattern = self.pattern()?;
        doc.extend(self.end_of_line()?);
        let mut steps = Vec::new();
        loop {
            match self.peek().clone() {
                Tok::Newline => {
                    self.bump();
                }
                Tok::Comment(_) => {
                    self.end_of_line()?;
                }
                Tok::Punct("=>") => {
                    self.bump();
                    let target = self.target()?;
                    doc.extend(self.end_of_line()?);
                    return Ok(Rule {
                        name,
                        file: self.file.to_string(),
                        pos,
                        doc: doc.join(" "),
                        pattern,
                        steps,
                        target,
                    });
                }
                Tok::Ident(kw) if kw == "check" => {
                    self.bump();
                    steps.push(Step::Check(self.expr()?));
                    self.end_of_line()?;
                }
                Tok::Ident(kw) if kw == "SORRY_Z3" => {
                    return self.err(self.pos(), "`SORRY_Z3` is not supported: every rule must be proven");
                }
                Tok::Ident(var) if self.peek_at(1) == &Tok::Punct("=") => {
                    let vpos = self.pos();
                    self.bump();
                    self.bump();
                    steps.push(Step::Assign(var, self.expr()?, vpos));
                    self.end_of_line()?;
                }
                Tok::Eof => return self.err(self.pos(), format!("rule `{name}` has no target (`=> ...`)")),
                t => {
                    return self.err(
                        self.pos(),
                        format!(
                            "expected `check`, an assignment or `=>` in rule `{name}`, found {}",
                            Self::describe(&t)
                        ),
                    )
                }
            }
        }
    }

    fn opcode(&self, name: &str, pos: Pos) -> Result<Opcode, RuleError> {
        Opcode::from_name(name).ok_or_else(|| RuleError::new(self.file, pos, format!("unknown operation `{name}`")))
    }

    fn pattern(&mut self) -> Result<Pattern, RuleError> {
        let pos = self.pos();
        if let Tok::Ident(name) = self.peek().clone() {
            if self.peek_at(1) == &Tok::Punct("(") {
                let op = self.opcode(&name, pos)?;
                self.bump();
                self.bump();
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.pattern()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                return Ok(Pattern::Op(op, args, pos));
            }
            if named_constant(&name).is_none() && !matches!(self.peek_at(1), Tok::Punct(p) if !matches!(*p, "," | ")"))
            {
                self.bump();
                return Ok(if is_const_var(&name) {
                    Pattern::ConstVar(name, pos)
                } else {
                    Pattern::Var(name, pos)
                });
            }
        }
        // A constant expression (`0`, `-1`, `MININT`, `LONG_BIT - 1`).
        let e = self.expr()?;
        match crate::check::eval_const(&e) {
            Some(v) => Ok(Pattern::Lit(v, pos)),
            None => self.err(
                pos,
                "a pattern argument must be a variable, an operation or a constant expression",
            ),
        }
    }

    fn target(&mut self) -> Result<Target, RuleError> {
        let pos = self.pos();
        if let Tok::Ident(name) = self.peek().clone() {
            if self.peek_at(1) == &Tok::Punct("(") && Opcode::from_name(&name).is_some() {
                let op = self.opcode(&name, pos)?;
                self.bump();
                self.bump();
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.target()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                return Ok(Target::Op(op, args, pos));
            }
        }
        Ok(Target::Expr(self.expr()?))
    }

    // ---- expressions, loosest first: or, and, not, comparison, |, ^, &, shifts, +-, *, unary, postfix

    fn expr(&mut self) -> Result<Expr, RuleError> {
        self.or_expr()
    }
    fn kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == k)
    }
    fn or_expr(&mut self) -> Result<Expr, RuleError> {
        let mut l = self.and_expr()?;
        while self.kw("or") {
            let pos = self.bump().pos;
            let r = self.and_expr()?;
            l = Expr {
                pos,
                kind: ExprKind::Binary(BinOp::LogOr, Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn and_expr(&mut self) -> Result<Expr, RuleError> {
        let mut l = self.not_expr()?;
        while self.kw("and") {
            let pos = self.bump().pos;
            let r = self.not_expr()?;
            l = Expr {
                pos,
                kind: ExprKind::Binary(BinOp::LogAnd, Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn not_expr(&mut self) -> Result<Expr, RuleError> {
        if self.kw("not") {
            let pos = self.bump().pos;
            let e = self.not_expr()?;
            return Ok(Expr {
                pos,
                kind: ExprKind::Unary(UnOp::Not, Box::new(e)),
            });
        }
        self.cmp_expr()
    }
    fn cmp_expr(&mut self) -> Result<Expr, RuleError> {
        let l = self.bin_level(0)?;
        let op = match self.peek() {
            Tok::Punct("==") => BinOp::Eq,
            Tok::Punct("!=") => BinOp::Ne,
            Tok::Punct("<") => BinOp::Lt,
            Tok::Punct("<=") => BinOp::Le,
            Tok::Punct(">") => BinOp::Gt,
            Tok::Punct(">=") => BinOp::Ge,
            Tok::Punct("<u") => BinOp::Ult,
            Tok::Punct("<=u") => BinOp::Ule,
            Tok::Punct(">u") => BinOp::Ugt,
            Tok::Punct(">=u") => BinOp::Uge,
            _ => return Ok(l),
        };
        let pos = self.bump().pos;
        let r = self.bin_level(0)?;
        if matches!(
            self.peek(),
            Tok::Punct("==" | "!=" | "<" | "<=" | ">" | ">=" | "<u" | "<=u" | ">u" | ">=u")
        ) {
            return self.err(self.pos(), "chained comparisons are not supported: use `and`");
        }
        Ok(Expr {
            pos,
            kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
        })
    }
    fn bin_level(&mut self, level: usize) -> Result<Expr, RuleError> {
        const LEVELS: &[&[(&str, BinOp)]] = &[
            &[("|", BinOp::Or)],
            &[("^", BinOp::Xor)],
            &[("&", BinOp::And)],
            &[("<<", BinOp::Shl), (">>", BinOp::Ashr), (">>u", BinOp::Lshr)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul)],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut l = self.bin_level(level + 1)?;
        'outer: loop {
            for (sym, op) in LEVELS[level] {
                if self.peek() == &Tok::Punct(sym) {
                    let pos = self.bump().pos;
                    let r = self.bin_level(level + 1)?;
                    l = Expr {
                        pos,
                        kind: ExprKind::Binary(*op, Box::new(l), Box::new(r)),
                    };
                    continue 'outer;
                }
            }
            return Ok(l);
        }
    }
    fn unary(&mut self) -> Result<Expr, RuleError> {
        let pos = self.pos();
        if self.eat("-") {
            // Fold `-literal` right away so that `-9223372036854775808` is representable.
            if let Tok::Int(v) = *self.peek() {
                self.bump();
                return self.postfix(Expr {
                    pos,
                    kind: ExprKind::Int((v as i64).wrapping_neg()),
                });
            }
            let e = self.unary()?;
            return Ok(Expr {
                pos,
                kind: ExprKind::Unary(UnOp::Neg, Box::new(e)),
            });
        }
        if self.eat("~") {
            let e = self.unary()?;
            return Ok(Expr {
                pos,
                kind: ExprKind::Unary(UnOp::Invert, Box::new(e)),
            });
        }
        let prim = self.primary()?;
        self.postfix(prim)
    }
    fn postfix(&mut self, mut e: Expr) -> Result<Expr, RuleError> {
        while self.eat(".") {
            let pos = self.pos();
            let Tok::Ident(name) = self.peek().clone() else {
                return self.err(
                    pos,
                    format!(
                        "expected a method or attribute name after `.`, found {}",
                        Self::describe(self.peek())
                    ),
                );
            };
            self.bump();
            if self.eat("(") {
                let args = self.call_args()?;
                e = Expr {
                    pos,
                    kind: ExprKind::Method(Box::new(e), name, args),
                };
            } else {
                e = Expr {
                    pos,
                    kind: ExprKind::Attr(Box::new(e), name),
                };
            }
        }
        Ok(e)
    }
    fn call_args(&mut self) -> Result<Vec<Expr>, RuleError> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }
    fn primary(&mut self) -> Result<Expr, RuleError> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                // Literals are 64-bit patterns: `0xffffffff00000000` is a valid mask.
                Ok(Expr {
                    pos,
                    kind: ExprKind::Int(v as i64),
                })
            }
            Tok::Ident(name) => {
                if matches!(name.as_str(), "and" | "or" | "not" | "check") {
                    return self.err(pos, format!("unexpected keyword `{name}`"));
                }
                self.bump();
                if self.eat("(") {
                    let args = self.call_args()?;
                    return Ok(Expr {
                        pos,
                        kind: ExprKind::Call(name, args),
                    });
                }
                Ok(Expr {
                    pos,
                    kind: ExprKind::Name(name),
                })
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            t => self.err(pos, format!("expected an expression, found {}", Self::describe(&t))),
        }
    }
}
