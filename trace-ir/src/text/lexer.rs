//! A cursor over one line of trace text: whitespace, identifiers, numbers, punctuation and
//! balanced `<...>` blocks, with the 1-based column of every position for error messages.

use super::ParseError;

/// A number as written in the text: integers have no `.` and no exponent.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Number {
    /// A decimal or `0x` hexadecimal integer.
    Int(i64),
    /// A float with a `.` or an exponent (`1.5`, `0.000000`, `1e300`).
    Float(f64),
}

/// A position in one line of text. Byte offsets always sit on character boundaries.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at byte `pos` of `text`, which is line `line` of the input.
    pub(crate) fn new(text: &'a str, line: usize, pos: usize) -> Cursor<'a> {
        let pos = if text.is_char_boundary(pos) { pos } else { 0 };
        Cursor { text, pos, line }
    }

    /// The current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Move back to an earlier position (from [`Cursor::pos`]).
    pub(crate) fn reset(&mut self, pos: usize) {
        if self.text.is_char_boundary(pos) {
            self.pos = pos;
        }
    }

    /// The line number.
    pub(crate) fn line(&self) -> usize {
        self.line
    }

    /// The 1-based column of byte offset `pos` (counted in characters).
    pub(crate) fn column_of(&self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        self.text.char_indices().take_while(|&(i, _)| i < pos).count() + 1
    }

    /// An error at byte offset `pos`.
    pub(crate) fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line: self.line,
            column: self.column_of(pos),
            message: message.into(),
        }
    }

    /// An error at the current position.
    pub(crate) fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    /// The text from the current position on.
    pub(crate) fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// Skip spaces and tabs.
    pub(crate) fn skip_ws(&mut self) {
        while let Some(c) = self.peek_raw() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
    }

    fn peek_raw(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// The next character after whitespace.
    pub(crate) fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.peek_raw()
    }

    /// Whether the text after whitespace starts with `s`.
    pub(crate) fn looking_at(&mut self, s: &str) -> bool {
        self.skip_ws();
        self.rest().starts_with(s)
    }

    /// Consume `s` (after whitespace) if it comes next.
    pub(crate) fn eat_str(&mut self, s: &str) -> bool {
        if self.looking_at(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Consume `c` (after whitespace) if it comes next.
    pub(crate) fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Consume `c` or fail with "expected `c` ...".
    pub(crate) fn expect(&mut self, c: char, context: &str) -> Result<(), ParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{c}` {context}")))
        }
    }

    /// "expected X, found Y" (or "unexpected end of line") at the current position.
    pub(crate) fn unexpected(&mut self, expected: &str) -> ParseError {
        match self.peek() {
            None => self.error(format!("unexpected end of line: expected {expected}")),
            Some(c) => self.error(format!("expected {expected}, found `{c}`")),
        }
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// An identifier `[A-Za-z_][A-Za-z0-9_]*` (after whitespace), if one comes next.
    pub(crate) fn ident(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
            if !ok {
                break;
            }
            end = i + c.len_utf8();
        }
        if end == 0 {
            return None;
        }
        self.pos += end;
        Some(&rest[..end])
    }

    /// A symbol name as in `ConstClass(rbigint.int_and_)`: a run of characters other than
    /// whitespace, brackets, `,`, `;` and `=`.
    pub(crate) fn symbol(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let end = rest
            .char_indices()
            .find(|&(_, c)| c.is_whitespace() || "()[]{}<>,;=".contains(c))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        self.pos += end;
        Some(&rest[..end])
    }

    /// A number (after whitespace): `-12`, `0x1f`, `1.5`, `-0.000000`, `1e300`.
    pub(crate) fn number(&mut self) -> Result<Number, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let rest = self.rest();
        let b = rest.as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if matches!(b.first(), Some(b'-' | b'+')) {
            i += 1;
        }
        if b.get(i) == Some(&b'0') && matches!(b.get(i + 1), Some(b'x' | b'X')) {
            let digits_start = i + 2;
            let mut j = digits_start;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            self.check_number_end(start, j)?;
            let digits = &rest[digits_start..j];
            let v = u64::from_str_radix(digits, 16)
                .map_err(|_| self.error_at(start, format!("bad hexadecimal constant `{}`", &rest[..j])))?;
            self.pos += j;
            let v = v as i64;
            return Ok(Number::Int(if neg { v.wrapping_neg() } else { v }));
        }
        let digits_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == digits_start {
            return Err(self.error_at(start, "expected a number"));
        }
        let mut is_float = false;
        if b.get(i) == Some(&b'.') {
            is_float = true;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let exp_start = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j == exp_start {
                return Err(self.error_at(start, format!("bad constant `{}`", &rest[..j])));
            }
            is_float = true;
            i = j;
        }
        self.check_number_end(start, i)?;
        let text = &rest[..i];
        self.pos += i;
        if is_float {
            text.parse::<f64>()
                .map(Number::Float)
                .map_err(|_| self.error_at(start, format!("bad float constant `{text}`")))
        } else {
            match text.parse::<i128>() {
                Ok(v) if v >= i64::MIN as i128 && v <= i64::MAX as i128 => Ok(Number::Int(v as i64)),
                _ => Err(self.error_at(start, format!("integer constant `{text}` does not fit in 64 bits"))),
            }
        }
    }

    fn check_number_end(&self, start: usize, len: usize) -> Result<(), ParseError> {
        let rest = &self.text[start..];
        if let Some(c) = rest[len..].chars().next() {
            if c.is_alphanumeric() || c == '_' || c == '.' {
                let end = rest[len..]
                    .char_indices()
                    .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .map(|(i, _)| len + i)
                    .unwrap_or(rest.len());
                return Err(self.error_at(start, format!("bad constant `{}`", &rest[..end])));
            }
        }
        Ok(())
    }

    /// A balanced `<...>` block (after whitespace); returns the text between the outer
    /// brackets.
    pub(crate) fn angle_block(&mut self) -> Result<&'a str, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let rest = self.rest();
        if !rest.starts_with('<') {
            return Err(self.unexpected("`<`"));
        }
        let mut depth = 0usize;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += i + 1;
                        return Ok(&rest[1..i]);
                    }
                }
                _ => {}
            }
        }
        Err(self.error_at(start, "unterminated descriptor: missing `>`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Result<Number, ParseError> {
        Cursor::new(s, 1, 0).number()
    }

    #[test]
    fn numbers() {
        assert_eq!(num("12"), Ok(Number::Int(12)));
        assert_eq!(num("-9223372036854775808"), Ok(Number::Int(i64::MIN)));
        assert_eq!(num("0x10"), Ok(Number::Int(16)));
        assert_eq!(num("0.000000"), Ok(Number::Float(0.0)));
        assert_eq!(num("1e300"), Ok(Number::Float(1e300)));
        assert_eq!(num("-2.5e-3,"), Ok(Number::Float(-2.5e-3)));
        assert!(num("9223372036854775808").is_err());
        assert!(num("12abc").is_err());
        assert!(num("1e").is_err());
        assert!(num("x").is_err());
    }

    #[test]
    fn angle_blocks_nest() {
        let mut c = Cursor::new("<A <B 1>> tail", 1, 0);
        assert_eq!(c.angle_block(), Ok("A <B 1>"));
        assert_eq!(c.rest(), " tail");
        assert!(Cursor::new("<A <B>", 3, 0).angle_block().is_err());
    }

    #[test]
    fn columns_count_characters() {
        let c = Cursor::new("é = x", 1, 0);
        assert_eq!(c.column_of(3), 3);
    }
}
