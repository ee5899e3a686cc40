//! The syntax tree of rule files, before and after type checking.

use std::fmt;
use trace_ir::Opcode;

/// A position in a rule file (1-based line and column).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column (in characters), from 1.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A pattern: what an operation and its arguments must look like for a rule to apply.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// A variable matching any value (`x`); repeated variables must match equal values.
    Var(String, Pos),
    /// A `C`-prefixed variable: matches constants only.
    ConstVar(String, Pos),
    /// A literal constant (`0`, `-1`, `MININT`, `LONG_BIT - 1`): matches exactly this constant.
    Lit(i64, Pos),
    /// An operation whose arguments match the sub-patterns (`int_add(x, y)`).
    Op(Opcode, Vec<Pattern>, Pos),
}

impl Pattern {
    /// The position of the pattern in the rule file.
    pub fn pos(&self) -> Pos {
        match self {
            Pattern::Var(_, p) | Pattern::ConstVar(_, p) | Pattern::Lit(_, p) | Pattern::Op(_, _, p) => *p,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Var(n, _) | Pattern::ConstVar(n, _) => f.write_str(n),
            Pattern::Lit(v, _) => write!(f, "{v}"),
            Pattern::Op(op, args, _) => {
                write!(f, "{}(", op.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Unary operators of expressions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-a` (wrapping).
    Neg,
    /// `~a`.
    Invert,
    /// `not a`.
    Not,
}

/// Binary operators of expressions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+` (wrapping).
    Add,
    /// `-` (wrapping).
    Sub,
    /// `*` (wrapping).
    Mul,
    /// `&`.
    And,
    /// `|`.
    Or,
    /// `^`.
    Xor,
    /// `<<` (see [`crate::rt::shl`]).
    Shl,
    /// `>>` arithmetic (see [`crate::rt::ashr`]).
    Ashr,
    /// `>>u` logical (see [`crate::rt::lshr`]).
    Lshr,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// Signed `<`.
    Lt,
    /// Signed `<=`.
    Le,
    /// Signed `>`.
    Gt,
    /// Signed `>=`.
    Ge,
    /// Unsigned `<u`.
    Ult,
    /// Unsigned `<=u`.
    Ule,
    /// Unsigned `>u`.
    Ugt,
    /// Unsigned `>=u`.
    Uge,
    /// Boolean `and`.
    LogAnd,
    /// Boolean `or`.
    LogOr,
}

impl BinOp {
    /// The operator as written in rule files.
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            And => "&",
            Or => "|",
            Xor => "^",
            Shl => "<<",
            Ashr => ">>",
            Lshr => ">>u",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Ult => "<u",
            Ule => "<=u",
            Ugt => ">u",
            Uge => ">=u",
            LogAnd => "and",
            LogOr => "or",
        }
    }
    /// Whether the operator compares two integers, giving a boolean.
    pub fn is_comparison(self) -> bool {
        use BinOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | Ult | Ule | Ugt | Uge)
    }
    /// Whether the operator combines two booleans.
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::LogAnd | BinOp::LogOr)
    }
}

/// An expression as parsed (names not yet resolved).
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Where it starts.
    pub pos: Pos,
    /// What it is.
    pub kind: ExprKind,
}

/// The forms of [`Expr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// A name: pattern variable, assigned variable or named constant.
    Name(String),
    /// A unary operation.
    Unary(UnOp, Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A helper function call (`highest_bit(C)`).
    Call(String, Vec<Expr>),
    /// A method call on an abstract value (`x.known_ge_const(0)`).
    Method(Box<Expr>, String, Vec<Expr>),
    /// An attribute of an abstract value (`x.lower`).
    Attr(Box<Expr>, String),
}

/// A step between the pattern and the target.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `check <expr>`: the rule applies only if the boolean expression holds.
    Check(Expr),
    /// `name = <expr>`: computes an intermediate value.
    Assign(String, Expr, Pos),
}

/// The target of a rule as parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// An op tree to emit (`int_lshift(x, shift)`).
    Op(Opcode, Vec<Target>, Pos),
    /// An expression: a pattern variable (an existing value) or a constant expression.
    Expr(Expr),
}

/// A rule as parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The rule's name (unique over all rule files).
    pub name: String,
    /// The rule file it comes from (as given to the parser).
    pub file: String,
    /// Where the name is.
    pub pos: Pos,
    /// The `#` comment lines directly above the rule (or after its header), joined.
    pub doc: String,
    /// The pattern.
    pub pattern: Pattern,
    /// Checks and assignments, in order.
    pub steps: Vec<Step>,
    /// The target.
    pub target: Target,
}
