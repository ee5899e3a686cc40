//! The `{$0 = allocation fields; ...; setfield_gc(p, $0, descr=...)}` block after a guard's
//! fail arguments: its virtual objects and the writes its exit performs.

use super::{DescrText, TraceParser};
use crate::descr::Descr;
use crate::entity::DescrRef;
use crate::opcode::Opcode;
use crate::text::descr_text::parse_angle_descr;
use crate::text::lexer::{Cursor, Number};
use crate::text::ParseError;
use crate::trace::{FailArg, ResumeWrite, VirtualField, VirtualKind, VirtualObject};

impl TraceParser {
    /// The `{...}` block (after `{`): virtual objects `$k = ...`, numbered in order, and
    /// writes `setfield_gc(obj, value, descr=...)` / `setarrayitem_gc(obj, index, value,
    /// descr=...)`, separated by `;`. Each `$k` value is added to `refs` with its byte
    /// position.
    pub(super) fn virtuals(
        &mut self,
        cur: &mut Cursor<'_>,
        refs: &mut Vec<(u32, usize)>,
    ) -> Result<(Vec<VirtualObject>, Vec<ResumeWrite>), ParseError> {
        let mut out = Vec::new();
        let mut writes = Vec::new();
        if cur.eat('}') {
            return Ok((out, writes));
        }
        loop {
            let pos = {
                cur.skip_ws();
                cur.pos()
            };
            if cur.eat('$') {
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
                let kind = self.virtual_allocation(cur)?;
                let is_array = kind.length().is_some();
                let fields = self.virtual_fields(cur, is_array, refs)?;
                out.push(VirtualObject { kind, fields });
            } else {
                writes.push(self.resume_write(cur, refs)?);
            }
            if cur.eat('}') {
                return Ok((out, writes));
            }
            cur.expect(';', "or `}` after a virtual object or a write")?;
        }
    }

    /// One write of a guard's exit: `setfield_gc(obj, value, descr=<Field...>)` or
    /// `setarrayitem_gc(obj, index, value, descr=<Array...>)`.
    fn resume_write(&mut self, cur: &mut Cursor<'_>, refs: &mut Vec<(u32, usize)>) -> Result<ResumeWrite, ParseError> {
        let op_pos = cur.pos();
        let opcode = match cur.ident().and_then(Opcode::from_name) {
            Some(o @ (Opcode::SetfieldGc | Opcode::SetarrayitemGc)) => o,
            _ => {
                cur.reset(op_pos);
                return Err(cur
                    .unexpected("`$N = ...` describing a virtual object, or a `setfield_gc`/`setarrayitem_gc` write"));
            }
        };
        cur.expect('(', &format!("after `{}`", opcode.name()))?;
        let (obj, opos) = self.fail_arg(cur)?;
        let FailArg::Value(obj) = obj else {
            return Err(cur.error_at(opos, "the object a write of an exit writes must be a value"));
        };
        cur.expect(',', "after the object")?;
        let mut index = None;
        if opcode == Opcode::SetarrayitemGc {
            cur.skip_ws();
            let ipos = cur.pos();
            index = match cur.number() {
                Ok(Number::Int(n)) if (0..=u32::MAX as i64).contains(&n) => Some(n as u32),
                _ => return Err(cur.error_at(ipos, "expected a constant item index")),
            };
            cur.expect(',', "after the item index")?;
        }
        let (value, vpos) = self.fail_arg(cur)?;
        match value {
            FailArg::Virtual(k) => refs.push((k, vpos)),
            FailArg::Hole => return Err(cur.error_at(vpos, "a write of an exit needs a value")),
            FailArg::Value(_) => {}
        }
        cur.expect(',', "after the value")?;
        cur.skip_ws();
        let descr = self.descr_of(cur, opcode.name(), |d| match opcode {
            Opcode::SetfieldGc => matches!(d, Descr::Field(_)),
            _ => matches!(d, Descr::Array(_)),
        })?;
        cur.expect(')', &format!("to close `{}(`", opcode.name()))?;
        Ok(ResumeWrite {
            obj,
            descr,
            index,
            value,
        })
    }

    /// `descr=<...>` of a write or an allocation named `opname`: a descriptor for which `ok`
    /// holds, interned.
    fn descr_of(
        &mut self,
        cur: &mut Cursor<'_>,
        opname: &str,
        ok: impl Fn(&Descr) -> bool,
    ) -> Result<DescrRef, ParseError> {
        if !cur.eat_str("descr=") {
            return Err(cur.unexpected("`descr=`"));
        }
        match self.descr_text(cur)? {
            DescrText::Angle(text, dpos) => {
                let d = parse_angle_descr(text).map_err(|m| cur.error_at(dpos, format!("bad descriptor: {m}")))?;
                if !ok(&d) {
                    return Err(cur.error_at(dpos, format!("bad descriptor for `{opname}`")));
                }
                Ok(self.intern_descr(d))
            }
            DescrText::Target(_, dpos) => Err(cur.error_at(dpos, format!("bad descriptor for `{opname}`"))),
        }
    }

    /// A virtual object's allocation after `$k =`: `new(descr=...)`, `new_with_vtable(...)`,
    /// `new_array(len, descr=...)`, `new_array_clear(len, descr=...)`, `newstr(len)` or
    /// `newunicode(len)`.
    fn virtual_allocation(&mut self, cur: &mut Cursor<'_>) -> Result<VirtualKind, ParseError> {
        let op_pos = {
            cur.skip_ws();
            cur.pos()
        };
        let opname = cur
            .ident()
            .ok_or_else(|| cur.unexpected("an allocation (new, new_with_vtable, new_array)"))?;
        let opcode = match Opcode::from_name(opname) {
            Some(
                o @ (Opcode::New
                | Opcode::NewWithVtable
                | Opcode::NewArray
                | Opcode::NewArrayClear
                | Opcode::Newstr
                | Opcode::Newunicode),
            ) => o,
            _ => return Err(cur.error_at(op_pos, format!("`{opname}` cannot describe a virtual object"))),
        };
        cur.expect('(', &format!("after `{opname}`"))?;
        let is_string = matches!(opcode, Opcode::Newstr | Opcode::Newunicode);
        let is_array = is_string || matches!(opcode, Opcode::NewArray | Opcode::NewArrayClear);
        let mut len = 0u32;
        if is_array {
            let lpos = cur.pos();
            len = match cur.number() {
                Ok(Number::Int(n)) if (0..=u32::MAX as i64).contains(&n) => n as u32,
                _ => return Err(cur.error_at(lpos, "a virtual array or string needs a constant length")),
            };
            if is_string {
                cur.expect(')', &format!("to close `{opname}(`"))?;
                return Ok(VirtualKind::Str { opcode, len });
            }
            cur.expect(',', "after the array length")?;
        }
        let d = self.descr_of(cur, opname, |d| {
            if is_array {
                matches!(d, Descr::Array(_))
            } else {
                matches!(d, Descr::Size(_))
            }
        })?;
        cur.expect(')', &format!("to close `{opname}(`"))?;
        Ok(if is_array {
            VirtualKind::Array { opcode, descr: d, len }
        } else {
            VirtualKind::Struct { opcode, descr: d }
        })
    }

    /// A virtual object's fields after its allocation: `<field descriptor>: value` (structs)
    /// or `[index]: value` (arrays), separated by `,`. Each `$k` value is added to `refs`.
    fn virtual_fields(
        &mut self,
        cur: &mut Cursor<'_>,
        is_array: bool,
        refs: &mut Vec<(u32, usize)>,
    ) -> Result<Vec<(VirtualField, FailArg)>, ParseError> {
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
        Ok(fields)
    }
}
