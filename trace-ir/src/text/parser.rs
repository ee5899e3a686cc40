//! The trace parser: one trace, line by line (the PyPy-log reader feeds it the lines of each
//! section). See the `text` module documentation for the syntax.

use super::descr_text::{parse_angle_descr, parse_guard_descr, GuardSpec};
use super::lexer::{Cursor, Number};
use super::ParseError;
use crate::descr::Descr;
use crate::entity::{DescrRef, GuardId, GuardRef, OpRef, Value};
use crate::opcode::{DescrKind, Kind, Opcode};
use crate::trace::{symbol_address, Const, FailArg, GuardData, Op, Trace, VirtualField, VirtualKind, VirtualObject};
use crate::verify::verify;
use smallvec::SmallVec;
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

/// PyPy's spelling of non-finite floats (`inf`, `-inf`, `nan`), consumed if next.
fn special_float(cur: &mut Cursor<'_>) -> Option<f64> {
    cur.skip_ws();
    let rest = cur.rest();
    let (sign, body) = match rest.as_bytes().first() {
        Some(b'-') => (-1.0, &rest[1..]),
        Some(b'+') => (1.0, &rest[1..]),
        _ => (1.0, rest),
    };
    let (word, value) = if body.starts_with("inf") {
        ("inf", f64::INFINITY)
    } else if body.starts_with("nan") {
        ("nan", f64::NAN)
    } else {
        return None;
    };
    let after = body[word.len()..].chars().next();
    if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '(') {
        return None;
    }
    cur.reset(cur.pos() + (rest.len() - body.len()) + word.len());
    Some(sign * value)
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

    fn constant(&mut self, c: Const, name: Option<&str>) -> Value {
        Value::constant(self.trace.consts.intern_named(c, name.map(str::to_string)))
    }

    /// `ConstPtr(...)`, `ConstClass(...)`, `ConstInt(...)`, `ConstFloat(...)` after its name.
    fn const_form(&mut self, cur: &mut Cursor<'_>, form: &str, pos: usize) -> Result<Value, ParseError> {
        cur.expect('(', &format!("after `{form}`"))?;
        let inner_pos = cur.pos();
        let value = match form {
            "ConstInt" => match cur.number()? {
                Number::Int(v) => self.constant(Const::Int(v), None),
                Number::Float(_) => return Err(cur.error_at(inner_pos, "ConstInt needs an integer")),
            },
            "ConstFloat" | "ConstClass" | "ConstPtr" => {
                let c = cur.peek();
                let is_num = matches!(c, Some(c) if c.is_ascii_digit() || c == '-' || c == '+');
                if is_num {
                    let n = cur.number()?;
                    match (form, n) {
                        ("ConstFloat", Number::Int(bits)) => self.constant(Const::Float(bits as u64), None),
                        ("ConstFloat", Number::Float(f)) => self.constant(Const::float(f), None),
                        ("ConstPtr", Number::Int(a)) => self.constant(Const::Ref(a as u64), None),
                        ("ConstClass", Number::Int(a)) => self.constant(Const::Int(a), None),
                        _ => return Err(cur.error_at(inner_pos, format!("{form} needs an integer"))),
                    }
                } else {
                    let name = cur
                        .symbol()
                        .ok_or_else(|| cur.unexpected(&format!("a name or a number in `{form}(...)`")))?;
                    if cur.eat('=') {
                        let n = cur.number()?;
                        let c = match (form, n) {
                            ("ConstFloat", Number::Int(bits)) => Const::Float(bits as u64),
                            ("ConstFloat", Number::Float(f)) => Const::float(f),
                            ("ConstPtr", Number::Int(a)) => Const::Ref(a as u64),
                            ("ConstClass", Number::Int(a)) => Const::Int(a),
                            _ => return Err(cur.error_at(inner_pos, format!("bad value in `{form}(...)`"))),
                        };
                        self.constant(c, Some(name))
                    } else {
                        match form {
                            "ConstPtr" if name == "null" => self.constant(Const::Ref(0), None),
                            "ConstPtr" => self.constant(Const::Ref(symbol_address(name)), Some(name)),
                            "ConstClass" => self.constant(Const::Int(symbol_address(name) as i64), Some(name)),
                            _ => {
                                return Err(cur.error_at(inner_pos, "ConstFloat needs a number or `name=bits`"));
                            }
                        }
                    }
                }
            }
            _ => return Err(cur.error_at(pos, format!("unknown constant form `{form}`"))),
        };
        cur.expect(')', &format!("to close `{form}(`"))?;
        Ok(value)
    }

    /// An operand: a name or a constant.
    fn operand<'a>(&mut self, cur: &mut Cursor<'a>) -> Result<Arg<'a>, ParseError> {
        cur.skip_ws();
        let pos = cur.pos();
        if let Some(f) = special_float(cur) {
            let value = self.constant(Const::float(f), None);
            return Ok(Arg { value, pos, name: None });
        }
        match cur.peek() {
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => {
                let value = match cur.number()? {
                    Number::Int(i) => self.constant(Const::Int(i), None),
                    Number::Float(f) => self.constant(Const::float(f), None),
                };
                Ok(Arg { value, pos, name: None })
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let name = cur.ident().unwrap_or("");
                if cur.rest().starts_with('(') {
                    let value = self.const_form(cur, name, pos)?;
                    return Ok(Arg { value, pos, name: None });
                }
                if name_kind(name).is_none() {
                    return Err(cur.error_at(pos, format!("expected a value, found `{name}`")));
                }
                let value = self.lookup(cur, name, pos)?;
                Ok(Arg {
                    value,
                    pos,
                    name: Some(name),
                })
            }
            _ => Err(cur.unexpected("a value (a name like `i3` or a constant)")),
        }
    }

    /// A fail argument: an operand, `None` (a hole) or `$k` (virtual object k); with its
    /// byte position.
    fn fail_arg(&mut self, cur: &mut Cursor<'_>) -> Result<(FailArg, usize), ParseError> {
        cur.skip_ws();
        let pos = cur.pos();
        if cur.eat('$') {
            return match cur.number() {
                Ok(Number::Int(k)) if (0..u32::MAX as i64).contains(&k) => Ok((FailArg::Virtual(k as u32), pos)),
                _ => Err(cur.error_at(pos, "expected a virtual object number after `$`")),
            };
        }
        if cur.ident() == Some("None") && !cur.rest().starts_with('(') {
            return Ok((FailArg::Hole, pos));
        }
        cur.reset(pos);
        Ok((FailArg::Value(self.operand(cur)?.value), pos))
    }

    fn kind_of(&self, v: Value) -> Kind {
        match v.data() {
            crate::entity::ValueData::Op(o) => self.trace.ops[o.index()].opcode.result_kind(),
            crate::entity::ValueData::Const(c) => self.trace.consts.get(c).kind(),
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

    fn op_line(&mut self, cur: &mut Cursor<'_>) -> Result<(), ParseError> {
        // Optional `name =`.
        let start = cur.pos();
        let mut result: Option<(&str, usize)> = None;
        cur.skip_ws();
        let name_pos = cur.pos();
        if let Some(id) = cur.ident() {
            if cur.eat('=') {
                result = Some((id, name_pos));
            } else {
                cur.reset(start);
            }
        }
        cur.skip_ws();
        let op_pos = cur.pos();
        let opname = cur.ident().ok_or_else(|| cur.unexpected("an operation name"))?;
        let opcode =
            Opcode::from_name(opname).ok_or_else(|| cur.error_at(op_pos, format!("unknown operation `{opname}`")))?;
        if cur.rest().trim_start().is_empty() {
            return Err(cur.error(format!("truncated line: expected `(` after `{opname}`")));
        }
        cur.expect('(', &format!("after `{opname}`"))?;
        let mut args: Vec<Arg<'_>> = Vec::new();
        let mut descr: Option<DescrText<'_>> = None;
        if !cur.eat(')') {
            loop {
                if cur.eat_str("descr=") {
                    descr = Some(self.descr_text(cur)?);
                    cur.expect(')', "after the descriptor (it must be the last argument)")?;
                    break;
                }
                let arg = self.operand(cur)?;
                args.push(arg);
                if cur.eat(')') {
                    break;
                }
                cur.expect(',', "or `)` in the argument list")?;
            }
        }
        // Arity and operand kinds.
        if !opcode.arity_ok(args.len()) {
            return Err(cur.error_at(
                op_pos,
                format!(
                    "`{opname}` takes {}{} operand(s), got {}",
                    if opcode.is_variadic() { "at least " } else { "" },
                    opcode.fixed_arity(),
                    args.len()
                ),
            ));
        }
        for (i, a) in args.iter().enumerate() {
            let k = self.kind_of(a.value);
            if let Some(want) = opcode.arg_kind(i) {
                if k != want {
                    return Err(cur.error_at(
                        a.pos,
                        format!(
                            "kind mismatch: operand {} of `{opname}` must be {}, got {}",
                            i + 1,
                            kind_name(want),
                            kind_name(k)
                        ),
                    ));
                }
            }
        }
        // Descriptor.
        let mut guard_spec: Option<GuardSpec> = None;
        let mut descr_ref = None;
        match descr {
            Some(DescrText::Angle(text, pos)) if opcode.is_guard() => {
                guard_spec =
                    Some(parse_guard_descr(text).map_err(|m| cur.error_at(pos, format!("bad descriptor: {m}")))?);
            }
            Some(DescrText::Target(_, pos)) if opcode.is_guard() => {
                return Err(cur.error_at(pos, "bad descriptor: a guard's descriptor must be `<GuardN>`"));
            }
            Some(d) => {
                let (descr, pos) = match d {
                    DescrText::Target(n, pos) => (Descr::Target(n), pos),
                    DescrText::Angle(text, pos) => (
                        parse_angle_descr(text).map_err(|m| cur.error_at(pos, format!("bad descriptor: {m}")))?,
                        pos,
                    ),
                };
                let ok = match opcode.descr_kind() {
                    DescrKind::None => false,
                    DescrKind::Any => true,
                    DescrKind::Field => matches!(descr, Descr::Field(_)),
                    DescrKind::Size => matches!(descr, Descr::Size(_)),
                    DescrKind::Array => matches!(descr, Descr::Array(_)),
                    DescrKind::Interior => matches!(descr, Descr::Interior(_)),
                    DescrKind::Call => matches!(descr, Descr::Call(_)),
                };
                if !ok {
                    return Err(cur.error_at(
                        pos,
                        match opcode.descr_kind() {
                            DescrKind::None => format!("bad descriptor: `{opname}` takes no descriptor"),
                            k => format!("bad descriptor: `{opname}` needs a {k:?} descriptor"),
                        },
                    ));
                }
                descr_ref = Some(self.intern_descr(descr));
            }
            None => {
                if !matches!(opcode.descr_kind(), DescrKind::None | DescrKind::Any) {
                    return Err(cur.error_at(op_pos, format!("`{opname}` needs a descriptor (`descr=<...>`)")));
                }
            }
        }
        // Result name.
        let result_kind = opcode.result_kind();
        if let Some((name, pos)) = result {
            if result_kind == Kind::Void {
                return Err(cur.error_at(pos, format!("`{opname}` has no result to name")));
            }
            match name_kind(name) {
                None => return Err(cur.error_at(pos, format!("bad name `{name}`: names start with i, p or f"))),
                Some(k) if k != result_kind => {
                    return Err(cur.error_at(
                        pos,
                        format!(
                            "kind mismatch: `{name}` names {} but `{opname}` returns {}",
                            kind_name(k),
                            kind_name(result_kind)
                        ),
                    ))
                }
                Some(_) => {}
            }
            if let Some(&(_, line)) = self.names.get(name) {
                return Err(cur.error_at(pos, format!("`{name}` is already defined (on line {line})")));
            }
        }
        // Guard suffix: `[fail args]` and `{virtuals}`.
        let mut guard_data = None;
        if opcode.is_guard() {
            let mut infer = true;
            let mut fail_args = Vec::new();
            let mut virtual_refs: Vec<(u32, usize)> = Vec::new();
            if cur.eat('[') {
                infer = false;
                if !cur.eat(']') {
                    loop {
                        let (fa, pos) = self.fail_arg(cur)?;
                        if let FailArg::Virtual(k) = fa {
                            virtual_refs.push((k, pos));
                        }
                        fail_args.push(fa);
                        if cur.eat(']') {
                            break;
                        }
                        cur.expect(',', "or `]` in the fail-argument list")?;
                    }
                }
            }
            let mut virtuals = Vec::new();
            if cur.looking_at("{") {
                if infer {
                    return Err(cur.error("virtual objects need a fail-argument list `[...]` before them"));
                }
                cur.eat('{');
                virtuals = self.virtuals(cur, &mut virtual_refs)?;
            }
            for (k, pos) in virtual_refs {
                if k as usize >= virtuals.len() {
                    return Err(cur.error_at(pos, format!("`${k}` names a virtual object that is not described")));
                }
            }
            let (id, fresh) = match guard_spec {
                Some(GuardSpec::Id(n, key)) => {
                    if let Some(line) = self.explicit_ids.get(&n) {
                        return Err(cur.error_at(op_pos, format!("duplicate guard id {n} (also on line {line})")));
                    }
                    self.explicit_ids.insert(n, cur.line());
                    ((n, key.unwrap_or(n as u64)), None)
                }
                Some(GuardSpec::Address(a)) => ((0, a), Some(Some(a))),
                None => ((0, 0), Some(None)),
            };
            guard_data = Some((
                GuardData {
                    id: GuardId(id.0),
                    resume_key: id.1,
                    fail_args,
                    virtuals,
                },
                fresh,
                infer,
            ));
        }
        // Label parameters.
        let mut params: Option<Vec<(&str, usize)>> = None;
        if opcode == Opcode::Label && cur.eat_str("->") {
            cur.expect('[', "after `->`")?;
            let mut names = Vec::new();
            if !cur.eat(']') {
                loop {
                    let pos = {
                        cur.skip_ws();
                        cur.pos()
                    };
                    let name = cur.ident().ok_or_else(|| cur.unexpected("a parameter name"))?;
                    names.push((name, pos));
                    if cur.eat(']') {
                        break;
                    }
                    cur.expect(',', "or `]` in the parameter list")?;
                }
            }
            if names.len() != args.len() {
                return Err(cur.error_at(
                    op_pos,
                    format!(
                        "label has {} operand(s) but {} parameter name(s)",
                        args.len(),
                        names.len()
                    ),
                ));
            }
            params = Some(names);
        }
        if !cur.at_end() {
            return Err(cur.error("unexpected text after the operation"));
        }
        // Build the op.
        let mut op = Op {
            opcode,
            descr: descr_ref,
            guard: None,
            args: args.iter().map(|a| a.value).collect::<SmallVec<[Value; 3]>>(),
        };
        let line = cur.line();
        let col = cur.column_of(op_pos);
        let mut pending = None;
        if let Some((gd, fresh, infer)) = guard_data {
            self.trace.guards.push(gd);
            let g = GuardRef::new(self.trace.guards.len() - 1);
            op.guard = Some(g);
            pending = Some((g, fresh, infer));
        }
        let r = match result {
            Some((name, pos)) => self.define(cur, name, pos, op_pos, |p, l, c| p.push_op(op, l, c))?,
            None => self.push_op(op, line, col),
        };
        if let Some((guard, fresh, infer)) = pending {
            self.guards.push(PendingGuard {
                op: r,
                guard,
                fresh,
                infer,
            });
        }
        if opcode == Opcode::Label {
            self.label_params(cur, &args, params, line, col)?;
        }
        if opcode.is_final() {
            self.done = true;
        }
        Ok(())
    }

    fn label_params(
        &mut self,
        cur: &Cursor<'_>,
        args: &[Arg<'_>],
        params: Option<Vec<(&str, usize)>>,
        line: usize,
        col: usize,
    ) -> Result<(), ParseError> {
        let mut binds: Vec<(String, OpRef)> = Vec::new();
        for (k, a) in args.iter().enumerate() {
            let kind = self.kind_of(a.value);
            let name =
                match &params {
                    Some(names) => {
                        let (name, pos) = names[k];
                        match name_kind(name) {
                            Some(nk) if nk == kind => name,
                            Some(nk) => {
                                return Err(cur.error_at(
                                    pos,
                                    format!(
                                        "kind mismatch: parameter `{name}` names {} but its operand is {}",
                                        kind_name(nk),
                                        kind_name(kind)
                                    ),
                                ))
                            }
                            None => return Err(cur.error_at(pos, format!("bad parameter name `{name}`"))),
                        }
                    }
                    None => match a.name {
                        Some(n) => n,
                        None => return Err(cur.error_at(
                            a.pos,
                            "a constant label operand needs explicit parameter names: write `label(...) -> [names]`",
                        )),
                    },
                };
            let opcode = Opcode::input_for(kind).expect("operand kinds are never void");
            let r = self.push_op(Op::new(opcode, &[]), line, col);
            binds.push((name.to_string(), r));
        }
        for (name, r) in binds {
            self.names.insert(name, (Value::op(r), line));
        }
        Ok(())
    }

    /// The `{...}` block of virtual objects (after `{`).
    fn virtuals(
        &mut self,
        cur: &mut Cursor<'_>,
        refs: &mut Vec<(u32, usize)>,
    ) -> Result<Vec<VirtualObject>, ParseError> {
        let mut out = Vec::new();
        if cur.eat('}') {
            return Ok(out);
        }
        loop {
            let pos = {
                cur.skip_ws();
                cur.pos()
            };
            if !cur.eat('$') {
                return Err(cur.unexpected("`$N = ...` describing a virtual object"));
            }
            match cur.number() {
                Ok(Number::Int(k)) if k == out.len() as i64 => {}
                _ => {
                    return Err(cur.error_at(
                        pos,
                        format!("expected `${}` (virtual objects are numbered in order)", out.len()),
                    ))
                }
            }
            cur.expect('=', "after the virtual object's number")?;
            let op_pos = {
                cur.skip_ws();
                cur.pos()
            };
            let opname = cur
                .ident()
                .ok_or_else(|| cur.unexpected("an allocation (new, new_with_vtable, new_array)"))?;
            let opcode = match Opcode::from_name(opname) {
                Some(o @ (Opcode::New | Opcode::NewWithVtable | Opcode::NewArray | Opcode::NewArrayClear)) => o,
                _ => return Err(cur.error_at(op_pos, format!("`{opname}` cannot describe a virtual object"))),
            };
            cur.expect('(', &format!("after `{opname}`"))?;
            let is_array = matches!(opcode, Opcode::NewArray | Opcode::NewArrayClear);
            let mut len = 0u32;
            if is_array {
                let lpos = cur.pos();
                len = match cur.number() {
                    Ok(Number::Int(n)) if (0..=u32::MAX as i64).contains(&n) => n as u32,
                    _ => return Err(cur.error_at(lpos, "a virtual array needs a constant length")),
                };
                cur.expect(',', "after the array length")?;
            }
            if !cur.eat_str("descr=") {
                return Err(cur.unexpected("`descr=`"));
            }
            let d = match self.descr_text(cur)? {
                DescrText::Angle(text, dpos) => {
                    let d = parse_angle_descr(text).map_err(|m| cur.error_at(dpos, format!("bad descriptor: {m}")))?;
                    let ok = if is_array {
                        matches!(d, Descr::Array(_))
                    } else {
                        matches!(d, Descr::Size(_))
                    };
                    if !ok {
                        return Err(cur.error_at(dpos, format!("bad descriptor for `{opname}`")));
                    }
                    self.intern_descr(d)
                }
                DescrText::Target(_, dpos) => return Err(cur.error_at(dpos, format!("bad descriptor for `{opname}`"))),
            };
            cur.expect(')', &format!("to close `{opname}(`"))?;
            let kind = if is_array {
                VirtualKind::Array { opcode, descr: d, len }
            } else {
                VirtualKind::Struct { opcode, descr: d }
            };
            let mut fields = Vec::new();
            loop {
                cur.skip_ws();
                let fpos = cur.pos();
                let field = if is_array && cur.eat('[') {
                    let ipos = cur.pos();
                    let i = match cur.number() {
                        Ok(Number::Int(n)) if (0..=u32::MAX as i64).contains(&n) => n as u32,
                        _ => return Err(cur.error_at(ipos, "expected an item index")),
                    };
                    cur.expect(']', "after the item index")?;
                    VirtualField::Item(i)
                } else if !is_array && cur.peek() == Some('<') {
                    let text = cur.angle_block()?;
                    let d = parse_angle_descr(text).map_err(|m| cur.error_at(fpos, format!("bad descriptor: {m}")))?;
                    if !matches!(d, Descr::Field(_)) {
                        return Err(cur.error_at(fpos, "bad descriptor: a virtual's field needs a field descriptor"));
                    }
                    VirtualField::Field(self.intern_descr(d))
                } else {
                    break;
                };
                cur.expect(':', "after the field")?;
                let (fa, pos) = self.fail_arg(cur)?;
                if let FailArg::Virtual(k) = fa {
                    refs.push((k, pos));
                }
                fields.push((field, fa));
                if !cur.eat(',') {
                    break;
                }
            }
            out.push(VirtualObject { kind, fields });
            if cur.eat('}') {
                return Ok(out);
            }
            cur.expect(';', "or `}` after a virtual object")?;
        }
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

enum DescrText<'a> {
    Target(u64, usize),
    Angle(&'a str, usize),
}
