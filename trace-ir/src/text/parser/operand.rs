//! Operands: names, numbers, `Const...(...)` forms, and the fail arguments of resume data.

use super::{name_kind, Arg, TraceParser};
use crate::entity::Value;
use crate::text::lexer::{Cursor, Number};
use crate::text::ParseError;
use crate::trace::{symbol_address, Const, FailArg};

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
    /// The value of constant `c`, interned in the pool (under `name`, if named).
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
    pub(super) fn operand<'a>(&mut self, cur: &mut Cursor<'a>) -> Result<Arg<'a>, ParseError> {
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
    pub(super) fn fail_arg(&mut self, cur: &mut Cursor<'_>) -> Result<(FailArg, usize), ParseError> {
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
}
