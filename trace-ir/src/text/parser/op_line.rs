//! Op lines: `[name =] opname(operands[, descr=...])`, then a guard's resume data or a label's `-> [names]`.

use super::{kind_name, name_kind, Arg, DescrText, PendingGuard, TraceParser};
use crate::descr::Descr;
use crate::entity::{DescrRef, GuardId, GuardRef, OpRef, Value};
use crate::opcode::{DescrKind, Kind, Opcode};
use crate::text::descr_text::{parse_angle_descr, parse_guard_descr, GuardSpec};
use crate::text::lexer::Cursor;
use crate::text::ParseError;
use crate::trace::{FailArg, GuardData, Op};
use crate::verify::descr_matches;

/// An op's name and what its parentheses hold.
struct OpCall<'a> {
    opcode: Opcode,
    /// The op name as written.
    name: &'a str,
    /// Byte position of the op name.
    pos: usize,
    args: Vec<Arg<'a>>,
    descr: Option<DescrText<'a>>,
}

/// A guard's resume data as written, before it joins the trace.
struct ResumeText {
    data: GuardData,
    /// See [`PendingGuard::fresh`].
    fresh: Option<Option<u64>>,
    /// See [`PendingGuard::infer`].
    infer: bool,
}

impl TraceParser {
    /// One op line (see the `text` module documentation for the syntax). Each step checks
    /// what it reads, so errors come in the order of the line's parts.
    pub(super) fn op_line(&mut self, cur: &mut Cursor<'_>) -> Result<(), ParseError> {
        let result = result_name(cur);
        let call = self.op_call(cur)?;
        self.check_operand_kinds(cur, &call)?;
        let (descr, guard_spec) = self.op_descr(cur, &call)?;
        self.check_result_name(cur, &call, result)?;
        let resume = if call.opcode.is_guard() {
            Some(self.resume_text(cur, guard_spec, call.pos)?)
        } else {
            None
        };
        let params = if call.opcode == Opcode::Label && cur.eat_str("->") {
            Some(label_param_names(cur, &call)?)
        } else {
            None
        };
        if !cur.at_end() {
            return Err(cur.error("unexpected text after the operation"));
        }
        let (line, col) = self.add_op(cur, &call, descr, resume, result)?;
        if call.opcode == Opcode::Label {
            self.label_params(cur, &call.args, params, line, col)?;
        }
        if call.opcode.is_final() {
            self.done = true;
        }
        Ok(())
    }

    /// The op name and its parenthesized operands and descriptor.
    fn op_call<'a>(&mut self, cur: &mut Cursor<'a>) -> Result<OpCall<'a>, ParseError> {
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
        Ok(OpCall {
            opcode,
            name: opname,
            pos: op_pos,
            args,
            descr,
        })
    }

    /// The number of operands and their kinds agree with the opcode table.
    fn check_operand_kinds(&self, cur: &Cursor<'_>, call: &OpCall<'_>) -> Result<(), ParseError> {
        let (opcode, opname, args) = (call.opcode, call.name, &call.args);
        if !opcode.arity_ok(args.len()) {
            return Err(cur.error_at(
                call.pos,
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
        Ok(())
    }

    /// The op's descriptor, interned, or for a guard what its descriptor says of its id; an
    /// error if the op takes no descriptor, or another kind, or needs one and has none.
    fn op_descr(
        &mut self,
        cur: &Cursor<'_>,
        call: &OpCall<'_>,
    ) -> Result<(Option<DescrRef>, Option<GuardSpec>), ParseError> {
        let (opcode, opname) = (call.opcode, call.name);
        match call.descr {
            Some(DescrText::Angle(text, pos)) if opcode.is_guard() => {
                let spec = parse_guard_descr(text).map_err(|m| cur.error_at(pos, format!("bad descriptor: {m}")))?;
                Ok((None, Some(spec)))
            }
            Some(DescrText::Target(_, pos)) if opcode.is_guard() => {
                Err(cur.error_at(pos, "bad descriptor: a guard's descriptor must be `<GuardN>`"))
            }
            Some(d) => {
                let (descr, pos) = match d {
                    DescrText::Target(n, pos) => (Descr::Target(n), pos),
                    DescrText::Angle(text, pos) => (
                        parse_angle_descr(text).map_err(|m| cur.error_at(pos, format!("bad descriptor: {m}")))?,
                        pos,
                    ),
                };
                if !descr_matches(opcode.descr_kind(), &descr) {
                    return Err(cur.error_at(
                        pos,
                        match opcode.descr_kind() {
                            DescrKind::None => format!("bad descriptor: `{opname}` takes no descriptor"),
                            k => format!("bad descriptor: `{opname}` needs a {k:?} descriptor"),
                        },
                    ));
                }
                Ok((Some(self.intern_descr(descr)), None))
            }
            None => {
                if !matches!(opcode.descr_kind(), DescrKind::None | DescrKind::Any) {
                    return Err(cur.error_at(call.pos, format!("`{opname}` needs a descriptor (`descr=<...>`)")));
                }
                Ok((None, None))
            }
        }
    }

    /// The result name, if there is one: the op has a result, the name announces its kind,
    /// and the name is not bound yet.
    fn check_result_name(
        &self,
        cur: &Cursor<'_>,
        call: &OpCall<'_>,
        result: Option<(&str, usize)>,
    ) -> Result<(), ParseError> {
        let Some((name, pos)) = result else {
            return Ok(());
        };
        let opname = call.name;
        let result_kind = call.opcode.result_kind();
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
        Ok(())
    }

    /// A guard's resume data: its `[fail args]` and `{virtuals; writes}` (both optional), and its id
    /// from `spec`, what its descriptor said (`op_pos` is where the op name is).
    fn resume_text(
        &mut self,
        cur: &mut Cursor<'_>,
        spec: Option<GuardSpec>,
        op_pos: usize,
    ) -> Result<ResumeText, ParseError> {
        let mut virtual_refs: Vec<(u32, usize)> = Vec::new();
        let fail_args = self.fail_arg_list(cur, &mut virtual_refs)?;
        let infer = fail_args.is_none();
        let mut virtuals = Vec::new();
        let mut writes = Vec::new();
        if cur.looking_at("{") {
            if infer {
                return Err(cur.error("virtual objects need a fail-argument list `[...]` before them"));
            }
            cur.eat('{');
            (virtuals, writes) = self.virtuals(cur, &mut virtual_refs)?;
        }
        for (k, pos) in virtual_refs {
            if k as usize >= virtuals.len() {
                return Err(cur.error_at(pos, format!("`${k}` names a virtual object that is not described")));
            }
        }
        let (id, resume_key, fresh) = self.guard_id(cur, spec, op_pos)?;
        Ok(ResumeText {
            data: GuardData {
                id,
                resume_key,
                fail_args: fail_args.unwrap_or_default(),
                virtuals,
                writes,
            },
            fresh,
            infer,
        })
    }

    /// The `[...]` list of fail arguments, if the line has one. Each `$k` in it is added to
    /// `virtual_refs` with its byte position.
    fn fail_arg_list(
        &mut self,
        cur: &mut Cursor<'_>,
        virtual_refs: &mut Vec<(u32, usize)>,
    ) -> Result<Option<Vec<FailArg>>, ParseError> {
        if !cur.eat('[') {
            return Ok(None);
        }
        let mut fail_args = Vec::new();
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
        Ok(Some(fail_args))
    }

    /// A guard's id and resume key as `spec` gives them, and whether they are assigned at the
    /// end instead (see [`PendingGuard::fresh`]). An explicit id must not repeat.
    fn guard_id(
        &mut self,
        cur: &Cursor<'_>,
        spec: Option<GuardSpec>,
        op_pos: usize,
    ) -> Result<(GuardId, u64, Option<Option<u64>>), ParseError> {
        let (id, fresh) = match spec {
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
        Ok((GuardId(id.0), id.1, fresh))
    }

    /// Add the op and its resume data to the trace and bind its result name; returns the
    /// op's line and column.
    fn add_op(
        &mut self,
        cur: &Cursor<'_>,
        call: &OpCall<'_>,
        descr: Option<DescrRef>,
        resume: Option<ResumeText>,
        result: Option<(&str, usize)>,
    ) -> Result<(usize, usize), ParseError> {
        let mut op = Op {
            opcode: call.opcode,
            descr,
            guard: None,
            args: call.args.iter().map(|a| a.value).collect(),
        };
        let line = cur.line();
        let col = cur.column_of(call.pos);
        let mut pending = None;
        if let Some(ResumeText { data, fresh, infer }) = resume {
            self.trace.guards.push(data);
            let g = GuardRef::new(self.trace.guards.len() - 1);
            op.guard = Some(g);
            pending = Some((g, fresh, infer));
        }
        let r = match result {
            Some((name, pos)) => self.define(cur, name, pos, call.pos, |p, l, c| p.push_op(op, l, c))?,
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
        Ok((line, col))
    }

    /// Push a label's parameters (one input op per operand, at the label's `line` and `col`)
    /// and bind their names: the explicit `params`, or else the operands' own names.
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
}

/// An optional `name =` at the start of an op line: the name and its byte position.
fn result_name<'a>(cur: &mut Cursor<'a>) -> Option<(&'a str, usize)> {
    let start = cur.pos();
    cur.skip_ws();
    let name_pos = cur.pos();
    if let Some(id) = cur.ident() {
        if cur.eat('=') {
            return Some((id, name_pos));
        }
        cur.reset(start);
    }
    None
}

/// A label's `[names]` after its `->`, one per operand: each name with its byte position.
fn label_param_names<'a>(cur: &mut Cursor<'a>, call: &OpCall<'_>) -> Result<Vec<(&'a str, usize)>, ParseError> {
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
    if names.len() != call.args.len() {
        return Err(cur.error_at(
            call.pos,
            format!(
                "label has {} operand(s) but {} parameter name(s)",
                call.args.len(),
                names.len()
            ),
        ));
    }
    Ok(names)
}
