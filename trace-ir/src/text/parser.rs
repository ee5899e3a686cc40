//! The trace parser: one trace, fed line by line (for each section by the PyPy-log reader); syntax: see `text`.

mod op_line;
mod operand;
mod virtuals;

use super::lexer::{Cursor, Number};
use super::ParseError;
use crate::descr::Descr;
use crate::entity::{DescrRef, GuardId, GuardRef, OpRef, Value, ValueData};
use crate::opcode::{Kind, Opcode};
use crate::trace::{FailArg, Op, Trace};
use crate::verify::verify;
use std::collections::{HashMap, HashSet};

/// What a line is, before parsing it as an op.
pub(crate) enum LineKind<'a> {
    /// Blank, `--end of the loop--`, or `debug_merge_point(...)`: ignored.
    Skip,
    /// A `#` comment (its text, without the `#`).
    Comment(&'a str),
    /// Content starting at this byte offset (after any `+123:` prefix).
    Content(usize),
}

/// Classify a line: comments, blank lines and the lines PyPy logs carry that are not ops.
pub(crate) fn classify(line: &str) -> LineKind<'_> {
    let trimmed = line.trim_start();
    let mut start = line.len() - trimmed.len();
    if trimmed.is_empty() {
        return LineKind::Skip;
    }
    if let Some(c) = trimmed.strip_prefix('#') {
        return LineKind::Comment(c.trim());
    }
    // `+123: ` offsets of opt logs.
    if let Some(after) = trimmed.strip_prefix('+') {
        let digits = after.bytes().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && after[digits..].starts_with(':') {
            start += 1 + digits + 1;
        }
    }
    let content = line[start..].trim_start();
    start = line.len() - content.len();
    if content.is_empty() || content.starts_with("--end of the loop--") || content.starts_with("debug_merge_point(") {
        return LineKind::Skip;
    }
    LineKind::Content(start)
}

/// Whether the parser wants more lines.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// The trace has not ended yet.
    More,
    /// The final `jump` or `finish` has been read.
    Done,
}

struct PendingGuard {
    op: OpRef,
    guard: GuardRef,
    /// No explicit id: assign a fresh one at the end (with this resume key, if any).
    fresh: Option<Option<u64>>,
    /// No fail-argument list: compute it at the end.
    infer: bool,
}

/// A parsed operand with the name it was written with (if it was a name).
struct Arg<'a> {
    value: Value,
    pos: usize,
    name: Option<&'a str>,
}

/// Parses one trace from lines fed one at a time.
pub(crate) struct TraceParser {
    trace: Trace,
    /// Current binding of every name, and the line it was bound on.
    names: HashMap<String, (Value, usize)>,
    descr_index: HashMap<Descr, DescrRef>,
    /// The line and column of each op (for verifier errors).
    op_pos: Vec<(usize, usize)>,
    guards: Vec<PendingGuard>,
    explicit_ids: HashMap<u32, usize>,
    started: bool,
    done: bool,
    last_line: usize,
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Int => "an integer",
        Kind::Ref => "a reference",
        Kind::Float => "a float",
        Kind::Void => "no value",
    }
}

/// The kind a variable name announces (`i5` → Int), if it is a variable name.
fn name_kind(name: &str) -> Option<Kind> {
    let mut cs = name.chars();
    let k = Kind::from_prefix(cs.next()?)?;
    if cs.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Some(k)
    } else {
        None
    }
}

impl TraceParser {
    pub(crate) fn new() -> TraceParser {
        TraceParser {
            trace: Trace::default(),
            names: HashMap::new(),
            descr_index: HashMap::new(),
            op_pos: Vec::new(),
            guards: Vec::new(),
            explicit_ids: HashMap::new(),
            started: false,
            done: false,
            last_line: 0,
        }
    }

    /// Whether any content line has been read.
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// Feed the content of line `line` starting at byte `start` (see [`classify`]).
    pub(crate) fn feed(&mut self, text: &str, line: usize, start: usize) -> Result<Status, ParseError> {
        let mut cur = Cursor::new(text, line, start);
        self.last_line = line;
        if self.done {
            return Err(cur.error("text after the end of the trace (its final jump or finish)"));
        }
        if !self.started {
            if cur.looking_at("aliasing") && cur.rest()["aliasing".len()..].starts_with(char::is_whitespace) {
                cur.eat_str("aliasing");
                cur.skip_ws();
                let pos = cur.pos();
                let name = cur.rest().trim_end();
                self.trace.aliasing = crate::trace::Aliasing::from_name(name).ok_or_else(|| {
                    cur.error_at(pos, format!("unknown aliasing model `{name}` (bytes or type-based)"))
                })?;
                return Ok(Status::More);
            }
            self.started = true;
            if cur.peek() == Some('[') {
                self.inputs_line(&mut cur)?;
                return Ok(Status::More);
            }
        }
        self.op_line(&mut cur)?;
        Ok(if self.done { Status::Done } else { Status::More })
    }

    fn push_op(&mut self, op: Op, line: usize, col: usize) -> OpRef {
        self.trace.ops.push(op);
        self.op_pos.push((line, col));
        OpRef::new(self.trace.ops.len() - 1)
    }

    fn inputs_line(&mut self, cur: &mut Cursor<'_>) -> Result<(), ParseError> {
        cur.expect('[', "")?;
        if !cur.eat(']') {
            loop {
                cur.skip_ws();
                let pos = cur.pos();
                let name = cur
                    .ident()
                    .ok_or_else(|| cur.unexpected("an input name like `i0` or `p1`"))?;
                let kind = name_kind(name)
                    .ok_or_else(|| cur.error_at(pos, format!("bad input name `{name}`: names start with i, p or f")))?;
                self.define(cur, name, pos, pos, |p, line, col| {
                    let op = Opcode::input_for(kind).expect("variable kinds are never void");
                    p.push_op(Op::new(op, &[]), line, col)
                })?;
                self.trace.num_inputs += 1;
                if cur.eat(']') {
                    break;
                }
                cur.expect(',', "or `]` in the input list")?;
            }
        }
        if !cur.at_end() {
            return Err(cur.error("unexpected text after the input list"));
        }
        Ok(())
    }

    /// Bind a fresh `name` (an error if it is bound already) to the op `make` pushes.
    fn define(
        &mut self,
        cur: &Cursor<'_>,
        name: &str,
        pos: usize,
        op_pos: usize,
        make: impl FnOnce(&mut Self, usize, usize) -> OpRef,
    ) -> Result<OpRef, ParseError> {
        if let Some(&(_, line)) = self.names.get(name) {
            return Err(cur.error_at(pos, format!("`{name}` is already defined (on line {line})")));
        }
        let r = make(self, cur.line(), cur.column_of(op_pos));
        self.names.insert(name.to_string(), (Value::op(r), cur.line()));
        Ok(r)
    }

    fn lookup(&self, cur: &Cursor<'_>, name: &str, pos: usize) -> Result<Value, ParseError> {
        match self.names.get(name) {
            Some(&(v, _)) => Ok(v),
            None => Err(cur.error_at(pos, format!("use of undefined value `{name}`"))),
        }
    }

    fn intern_descr(&mut self, d: Descr) -> DescrRef {
        if let Some(&r) = self.descr_index.get(&d) {
            return r;
        }
        self.trace.descrs.push(d.clone());
        let r = DescrRef::new(self.trace.descrs.len() - 1);
        self.descr_index.insert(d, r);
        r
    }

    fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            ValueData::Op(o) => self.trace.ops[o.index()].opcode.result_kind(),
            ValueData::Const(c) => self.trace.consts.get(c).kind(),
        }
    }

    /// `descr=...` after `descr=` has been consumed: `TargetToken(n)` or `<...>`.
    fn descr_text<'a>(&mut self, cur: &mut Cursor<'a>) -> Result<DescrText<'a>, ParseError> {
        let pos = {
            cur.skip_ws();
            cur.pos()
        };
        if cur.eat_str("TargetToken") {
            cur.expect('(', "after `TargetToken`")?;
            let npos = cur.pos();
            let n = match cur.number() {
                Ok(Number::Int(n)) => n as u64,
                _ => return Err(cur.error_at(npos, "bad descriptor: TargetToken needs an integer")),
            };
            cur.expect(')', "to close `TargetToken(`")?;
            return Ok(DescrText::Target(n, pos));
        }
        if cur.peek() == Some('<') {
            let text = cur.angle_block().map_err(|e| ParseError {
                message: format!("bad descriptor: {}", e.message),
                ..e
            })?;
            return Ok(DescrText::Angle(text, pos));
        }
        Err(cur.error_at(
            pos,
            "bad descriptor: expected `<...>` or `TargetToken(n)` after `descr=`",
        ))
    }

    /// Finish the trace: assign guard ids, infer missing fail arguments, verify.
    pub(crate) fn finish(mut self) -> Result<Trace, ParseError> {
        if !self.done {
            return Err(ParseError {
                line: self.last_line.max(1),
                column: 1,
                message: "the trace ends without a final `jump` or `finish`".into(),
            });
        }
        // Fresh guard ids, avoiding explicit ones.
        let mut next = 0u32;
        for pg in &self.guards {
            if let Some(key) = pg.fresh {
                while self.explicit_ids.contains_key(&next) {
                    next = next.wrapping_add(1);
                }
                let g = &mut self.trace.guards[pg.guard.index()];
                g.id = GuardId(next);
                g.resume_key = key.unwrap_or(next as u64);
                next = next.wrapping_add(1);
            }
        }
        // Fail arguments of guards written without a list: the values defined before the
        // guard that something after it uses.
        if self.guards.iter().any(|g| g.infer) {
            let n = self.trace.ops.len();
            let inferred: HashSet<usize> = self
                .guards
                .iter()
                .filter(|g| g.infer)
                .map(|g| g.guard.index())
                .collect();
            let mut last_use = vec![0usize; n];
            for (i, op) in self.trace.ops.iter().enumerate() {
                let mut note = |v: &Value| {
                    if let Some(o) = v.as_op() {
                        last_use[o.index()] = last_use[o.index()].max(i);
                    }
                };
                op.args.iter().for_each(&mut note);
                if let Some(g) = op.guard {
                    if !inferred.contains(&g.index()) {
                        self.trace.guards[g.index()].for_each_value(|v| note(&v));
                    }
                }
            }
            for pg in self.guards.iter().filter(|g| g.infer) {
                let at = pg.op.index();
                let fail_args: Vec<FailArg> = (0..at)
                    .filter(|&o| self.trace.ops[o].opcode.result_kind() != Kind::Void && last_use[o] > at)
                    .map(|o| FailArg::Value(Value::op(OpRef::new(o))))
                    .collect();
                self.trace.guards[pg.guard.index()].fail_args = fail_args;
            }
        }
        if let Err(e) = verify(&self.trace) {
            let (line, column) = match e.op {
                Some(op) => self.op_pos.get(op.index()).copied().unwrap_or((self.last_line, 1)),
                None => (self.last_line.max(1), 1),
            };
            return Err(ParseError {
                line,
                column,
                message: format!("invalid trace: {}", e.message),
            });
        }
        Ok(self.trace)
    }
}
/// A descriptor as written after `descr=`, with its byte position.
#[derive(Copy, Clone)]
enum DescrText<'a> {
    /// `TargetToken(n)`.
    Target(u64, usize),
    /// `<...>`: the text between the angle brackets.
    Angle(&'a str, usize),
}
