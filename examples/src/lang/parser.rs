//! Lexer and recursive-descent parser of the example language: source text to an AST.
//!
//! ```text
//! program   := stmt*
//! stmt      := NAME '=' expr | NAME '[' expr ']' '=' expr
//!            | 'while' expr block | 'if' expr block ('else' (block | if-stmt))?
//!            | 'print' '(' args ')' | expr            (statements end at a newline or ';')
//! block     := '{' stmt* '}'
//! expr      := 'not' expr | cmp
//! cmp       := bitor (('<' | '<=' | '>' | '>=' | '==' | '!=') bitor)?
//! bitor     := bitxor ('|' bitxor)*      bitxor := bitand ('^' bitand)*
//! bitand    := shift ('&' shift)*        shift  := sum (('<<' | '>>') sum)*
//! sum       := term (('+' | '-') term)*  term   := unary (('*' | '/' | '//' | '%') unary)*
//! unary     := ('-' | '~') unary | postfix
//! postfix   := primary ('[' expr ']' | '(' args ')')*
//! primary   := INT | FLOAT | NAME | '(' expr ')'
//! ```
//! Comments run from `#` to the end of the line. Errors carry a line and column.

use std::fmt;

/// A position in the source (1-based).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "syntax error at {}: {}", self.pos, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Binary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (true division, float result)
    Div,
    /// `//` (floor division)
    FloorDiv,
    /// `%` (Python modulo)
    Mod,
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// Unary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `~x`
    Invert,
    /// `not x`
    Not,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A variable.
    Var(String, Pos),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>, Pos),
    /// `op a`.
    Unary(UnOp, Box<Expr>, Pos),
    /// `a[i]`.
    Index(Box<Expr>, Box<Expr>, Pos),
    /// `f(args)` (builtins only).
    Call(String, Vec<Expr>, Pos),
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `name = expr`.
    Assign(String, Expr, Pos),
    /// `a[i] = v`.
    SetItem(Expr, Expr, Expr, Pos),
    /// `while cond { body }`.
    While(Expr, Vec<Stmt>, Pos),
    /// `if cond { then } else { otherwise }`.
    If(Expr, Vec<Stmt>, Vec<Stmt>, Pos),
    /// `print(a, b, ...)`.
    Print(Vec<Expr>, Pos),
    /// An expression evaluated for its effect.
    Expr(Expr, Pos),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(u64),
    Float(f64),
    Name(String),
    Sym(&'static str),
    Newline,
    Eof,
}

const SYMBOLS: &[&str] = &[
    "//", "<<", ">>", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "(", ")",
    "[", "]", "{", "}", ",", ";",
];

fn lex(src: &str) -> Result<Vec<(Tok, Pos)>, ParseError> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let (mut i, mut line, mut line_start) = (0usize, 1u32, 0usize);
    while i < bytes.len() {
        let c = bytes[i];
        let pos = Pos {
            line,
            col: (i - line_start + 1) as u32,
        };
        if c == b'\n' {
            out.push((Tok::Newline, pos));
            i += 1;
            line += 1;
            line_start = i;
        } else if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
        } else if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            let start = i;
            if c == b'0' && i + 1 < bytes.len() && (bytes[i + 1] == b'x' || bytes[i + 1] == b'X') {
                i += 2;
                while i < bytes.len() && (bytes[i].is_ascii_hexdigit() || bytes[i] == b'_') {
                    i += 1;
                }
                let digits: String = src[start + 2..i].chars().filter(|&c| c != '_').collect();
                let v = u64::from_str_radix(&digits, 16)
                    .ok()
                    .filter(|&v| v <= i64::MAX as u64)
                    .ok_or_else(|| ParseError {
                        pos,
                        message: format!("bad hex literal `{}`", &src[start..i]),
                    })?;
                out.push((Tok::Int(v), pos));
                continue;
            }
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            let mut is_float = false;
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                is_float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text: String = src[start..i].chars().filter(|&c| c != '_').collect();
            if is_float {
                let v = text.parse::<f64>().map_err(|e| ParseError {
                    pos,
                    message: format!("bad float literal: {e}"),
                })?;
                out.push((Tok::Float(v), pos));
            } else {
                let v = text
                    .parse::<u64>()
                    .ok()
                    .filter(|&v| v <= 1 << 63)
                    .ok_or_else(|| ParseError {
                        pos,
                        message: format!("integer literal `{text}` does not fit in 64 bits"),
                    })?;
                out.push((Tok::Int(v), pos));
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Name(src[start..i].to_string()), pos));
        } else if let Some(s) = SYMBOLS.iter().find(|s| src[i..].starts_with(**s)) {
            out.push((Tok::Sym(s), pos));
            i += s.len();
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(ParseError {
                pos,
                message: format!("unexpected character `{ch}`"),
            });
        }
    }
    out.push((
        Tok::Eof,
        Pos {
            line,
            col: (i - line_start + 1) as u32,
        },
    ));
    Ok(out)
}

const KEYWORDS: &[&str] = &["while", "if", "else", "not", "print"];

/// Deepest nesting of expressions and blocks accepted (deeper input is an error, not a
/// stack overflow).
pub const MAX_NESTING: u32 = 200;

struct Parser {
    toks: Vec<(Tok, Pos)>,
    at: usize,
    depth: u32,
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }
    fn pos(&self) -> Pos {
        self.toks[self.at].1
    }
    fn bump(&mut self) -> Tok {
        let t = self.toks[self.at].0.clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
    fn error<T>(&self, message: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            pos: self.pos(),
            message: message.into(),
        })
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(t) if *t == s)
    }
    fn is_name(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Name(t) if t == s)
    }
    fn expect_sym(&mut self, s: &str) -> PResult<()> {
        if self.is_sym(s) {
            self.bump();
            Ok(())
        } else {
            let found = self.describe();
            self.error(format!("expected `{s}`, found {found}"))
        }
    }
    fn describe(&self) -> String {
        match self.peek() {
            Tok::Int(v) => format!("`{v}`"),
            Tok::Float(v) => format!("`{v}`"),
            Tok::Name(n) => format!("`{n}`"),
            Tok::Sym(s) => format!("`{s}`"),
            Tok::Newline => "end of line".into(),
            Tok::Eof => "end of input".into(),
        }
    }
    fn skip_separators(&mut self) {
        while matches!(self.peek(), Tok::Newline) || self.is_sym(";") {
            self.bump();
        }
    }
    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
    }

    fn program(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        self.skip_separators();
        while !matches!(self.peek(), Tok::Eof) {
            out.push(self.stmt()?);
            self.end_of_stmt()?;
            self.skip_separators();
        }
        Ok(out)
    }

    fn end_of_stmt(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Newline | Tok::Eof => Ok(()),
            Tok::Sym(";") | Tok::Sym("}") => Ok(()),
            _ => {
                let found = self.describe();
                self.error(format!("expected end of statement, found {found}"))
            }
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.error(format!("nesting deeper than {MAX_NESTING} levels"));
        }
        Ok(())
    }

    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.enter()?;
        let r = self.block_inner();
        self.depth -= 1;
        r
    }

    fn block_inner(&mut self) -> PResult<Vec<Stmt>> {
        self.skip_newlines();
        self.expect_sym("{")?;
        let mut out = Vec::new();
        self.skip_separators();
        while !self.is_sym("}") {
            if matches!(self.peek(), Tok::Eof) {
                return self.error("unclosed block: expected `}`");
            }
            out.push(self.stmt()?);
            self.end_of_stmt()?;
            self.skip_separators();
        }
        self.bump();
        Ok(out)
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        if self.is_name("while") {
            self.bump();
            let cond = self.expr()?;
            let body = self.block()?;
            return Ok(Stmt::While(cond, body, pos));
        }
        if self.is_name("if") {
            return self.if_stmt();
        }
        if self.is_name("print") {
            self.bump();
            self.expect_sym("(")?;
            let args = self.args()?;
            return Ok(Stmt::Print(args, pos));
        }
        if self.is_name("else") {
            return self.error("`else` without `if`");
        }
        let e = self.expr()?;
        if self.is_sym("=") {
            self.bump();
            let value = self.expr()?;
            return match e {
                Expr::Var(name, _) => Ok(Stmt::Assign(name, value, pos)),
                Expr::Index(a, i, _) => Ok(Stmt::SetItem(*a, *i, value, pos)),
                _ => Err(ParseError {
                    pos,
                    message: "cannot assign to this expression".into(),
                }),
            };
        }
        Ok(Stmt::Expr(e, pos))
    }

    fn if_stmt(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        self.bump(); // `if`
        let cond = self.expr()?;
        let then = self.block()?;
        // `else` may follow on the next line.
        let save = self.at;
        self.skip_newlines();
        if self.is_name("else") {
            self.bump();
            if self.is_name("if") {
                let nested = self.if_stmt()?;
                return Ok(Stmt::If(cond, then, vec![nested], pos));
            }
            let otherwise = self.block()?;
            return Ok(Stmt::If(cond, then, otherwise, pos));
        }
        self.at = save;
        Ok(Stmt::If(cond, then, Vec::new(), pos))
    }

    /// Arguments after `(`, up to and including `)`.
    fn args(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.is_sym(")") {
            self.bump();
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.is_sym(",") {
                self.bump();
                continue;
            }
            self.expect_sym(")")?;
            return Ok(args);
        }
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.expr_inner();
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        if self.is_name("not") {
            let pos = self.pos();
            self.bump();
            let e = self.expr()?;
            return Ok(Expr::Unary(UnOp::Not, Box::new(e), pos));
        }
        let left = self.bitor()?;
        let op = match self.peek() {
            Tok::Sym("<") => BinOp::Lt,
            Tok::Sym("<=") => BinOp::Le,
            Tok::Sym(">") => BinOp::Gt,
            Tok::Sym(">=") => BinOp::Ge,
            Tok::Sym("==") => BinOp::Eq,
            Tok::Sym("!=") => BinOp::Ne,
            _ => return Ok(left),
        };
        let pos = self.pos();
        self.bump();
        let right = self.bitor()?;
        if matches!(self.peek(), Tok::Sym("<" | "<=" | ">" | ">=" | "==" | "!=")) {
            return self.error("chained comparisons are not supported; use parentheses");
        }
        Ok(Expr::Binary(op, Box::new(left), Box::new(right), pos))
    }

    fn binary_level(&mut self, ops: &[(&str, BinOp)], next: fn(&mut Parser) -> PResult<Expr>) -> PResult<Expr> {
        let mut left = next(self)?;
        loop {
            let found = ops.iter().find(|(s, _)| self.is_sym(s)).map(|&(_, op)| op);
            let Some(op) = found else { return Ok(left) };
            let pos = self.pos();
            self.bump();
            let right = next(self)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right), pos);
        }
    }
    fn bitor(&mut self) -> PResult<Expr> {
        self.binary_level(&[("|", BinOp::Or)], Parser::bitxor)
    }
    fn bitxor(&mut self) -> PResult<Expr> {
        self.binary_level(&[("^", BinOp::Xor)], Parser::bitand)
    }
    fn bitand(&mut self) -> PResult<Expr> {
        self.binary_level(&[("&", BinOp::And)], Parser::shift)
    }
    fn shift(&mut self) -> PResult<Expr> {
        self.binary_level(&[("<<", BinOp::Shl), (">>", BinOp::Shr)], Parser::sum)
    }
    fn sum(&mut self) -> PResult<Expr> {
        self.binary_level(&[("+", BinOp::Add), ("-", BinOp::Sub)], Parser::term)
    }
    fn term(&mut self) -> PResult<Expr> {
        self.binary_level(
            &[
                ("*", BinOp::Mul),
                ("//", BinOp::FloorDiv),
                ("/", BinOp::Div),
                ("%", BinOp::Mod),
            ],
            Parser::unary,
        )
    }
    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let pos = self.pos();
        if self.is_sym("-") {
            self.bump();
            // Fold `-literal` so that the most negative integer can be written.
            return match self.peek().clone() {
                Tok::Int(v) if !self.next_is_postfix() => {
                    self.bump();
                    Ok(Expr::Int((v as i64).wrapping_neg()))
                }
                _ => Ok(Expr::Unary(UnOp::Neg, Box::new(self.unary()?), pos)),
            };
        }
        if self.is_sym("~") {
            self.bump();
            return Ok(Expr::Unary(UnOp::Invert, Box::new(self.unary()?), pos));
        }
        self.postfix()
    }
    fn next_is_postfix(&self) -> bool {
        matches!(self.toks.get(self.at + 1), Some((Tok::Sym("[" | "("), _)))
    }
    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            let pos = self.pos();
            if self.is_sym("[") {
                self.bump();
                let idx = self.expr()?;
                self.expect_sym("]")?;
                e = Expr::Index(Box::new(e), Box::new(idx), pos);
            } else if self.is_sym("(") {
                let Expr::Var(name, _) = e else {
                    return self.error("only builtin functions can be called");
                };
                self.bump();
                let args = self.args()?;
                e = Expr::Call(name, args, pos);
            } else {
                return Ok(e);
            }
        }
    }
    fn primary(&mut self) -> PResult<Expr> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Int(v) => {
                if v > i64::MAX as u64 {
                    return self.error(format!("integer literal `{v}` does not fit in 64 bits"));
                }
                self.bump();
                Ok(Expr::Int(v as i64))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(Expr::Float(v))
            }
            Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                self.bump();
                Ok(Expr::Var(n, pos))
            }
            Tok::Sym("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_sym(")")?;
                Ok(e)
            }
            _ => {
                let found = self.describe();
                self.error(format!("expected an expression, found {found}"))
            }
        }
    }
}

/// Parse a whole program.
pub fn parse(src: &str) -> Result<Vec<Stmt>, ParseError> {
    let toks = lex(src)?;
    Parser { toks, at: 0, depth: 0 }.program()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_follows_python() {
        let p = parse("x = 1 + 2 * 3 & 7 << 1").unwrap();
        // & binds looser than <<, which binds looser than +, which binds looser than *.
        let Stmt::Assign(_, Expr::Binary(BinOp::And, l, r, _), _) = &p[0] else {
            panic!("{p:?}")
        };
        assert!(matches!(**l, Expr::Binary(BinOp::Add, _, _, _)));
        assert!(matches!(**r, Expr::Binary(BinOp::Shl, _, _, _)));
    }

    #[test]
    fn statements_and_blocks() {
        let src = "i = 0\nwhile i < 10 {\n  if i % 2 == 0 { a[i] = i } else if i > 5 { print(i) }\n  else { i = i + 0 }\n  i = i + 1\n}\n";
        let p = parse(src).unwrap();
        assert_eq!(p.len(), 2);
        let Stmt::While(_, body, _) = &p[1] else { panic!() };
        assert_eq!(body.len(), 2);
        let Stmt::If(_, then, otherwise, _) = &body[0] else {
            panic!()
        };
        assert!(matches!(then[0], Stmt::SetItem(..)));
        assert!(matches!(otherwise[0], Stmt::If(..)));
    }

    #[test]
    fn literals() {
        let p = parse("x = 0xff; y = 1_000; z = 2.5; w = -9223372036854775808").unwrap();
        let vals: Vec<&Expr> = p
            .iter()
            .map(|s| match s {
                Stmt::Assign(_, e, _) => e,
                _ => panic!(),
            })
            .collect();
        assert_eq!(vals[0], &Expr::Int(255));
        assert_eq!(vals[1], &Expr::Int(1000));
        assert_eq!(vals[2], &Expr::Float(2.5));
        assert_eq!(vals[3], &Expr::Int(i64::MIN));
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("x = 1\ny = (2 + \n").unwrap_err();
        assert_eq!(e.pos.line, 2);
        let e = parse("x = 1 $ 2").unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (1, 7));
        assert!(e.message.contains('$'));
        let e = parse("while x { y = 1").unwrap_err();
        assert!(e.message.contains("unclosed"), "{e}");
        let e = parse("1 < 2 < 3").unwrap_err();
        assert!(e.message.contains("chained"));
        let e = parse("x = 99999999999999999999").unwrap_err();
        assert!(e.message.contains("64 bits"));
        let e = parse("3 = x").unwrap_err();
        assert!(e.message.contains("assign"));
        let deep = format!("x = {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse(&deep).unwrap_err().message.contains("nesting"));
        let deep = format!("x = {}1", "-".repeat(5000));
        assert!(parse(&deep).unwrap_err().message.contains("nesting"));
        let deep = format!("{}{}", "while 1 {\n".repeat(1000), "}\n".repeat(1000));
        assert!(parse(&deep).unwrap_err().message.contains("nesting"));
    }
}
