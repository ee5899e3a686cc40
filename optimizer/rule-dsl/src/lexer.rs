//! Tokens of rule files. Newlines are significant outside parentheses (one step per line);
//! `#` comments are kept as tokens so the parser can attach them to rules as documentation.

use crate::ast::Pos;
use crate::RuleError;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (`int_add`, `x`, `check`, `and`).
    Ident(String),
    /// An unsigned integer literal (decimal or `0x` hex), as a 64-bit pattern.
    Int(u64),
    /// Punctuation or an operator (`(`, `=>`, `>>u`, ...).
    Punct(&'static str),
    /// A comment, without the `#` and surrounding spaces.
    Comment(String),
    /// End of a line (only outside parentheses).
    Newline,
    /// End of the file.
    Eof,
}

/// A token with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The kind.
    pub tok: Tok,
    /// Where it starts.
    pub pos: Pos,
}

const PUNCTS: &[&str] = &[
    ">>u", "<=u", ">=u", "=>", "==", "!=", "<=", ">=", "<<", ">>", "<u", ">u", "(", ")", ",", ":", ".", "=", "<", ">",
    "+", "-", "*", "&", "|", "^", "~",
];

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `src` into tokens; `file` names the file in errors.
pub fn lex(src: &str, file: &str) -> Result<Vec<Token>, RuleError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut depth = 0i32;
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, col };
        if c == '\n' {
            if depth == 0 {
                toks.push(Token { tok: Tok::Newline, pos });
            }
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if c == '#' {
            let start = i + 1;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
                col += 1;
            }
            let text: String = chars[start..i].iter().collect();
            toks.push(Token {
                tok: Tok::Comment(text.trim().to_string()),
                pos,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                u64::from_str_radix(&hex.replace('_', ""), 16)
            } else {
                text.replace('_', "").parse::<u64>()
            };
            let v = parsed.map_err(|_| RuleError::new(file, pos, format!("invalid integer literal `{text}`")))?;
            col += (i - start) as u32;
            toks.push(Token { tok: Tok::Int(v), pos });
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            col += (i - start) as u32;
            toks.push(Token {
                tok: Tok::Ident(chars[start..i].iter().collect()),
                pos,
            });
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
        let mut found = None;
        for p in PUNCTS {
            if rest.starts_with(p) {
                // `<u`, `>>u`, ... only when the `u` is not the start of a name (`a <upper`).
                if p.ends_with('u') {
                    let after = chars.get(i + p.chars().count());
                    if after.is_some_and(|&c| is_ident_char(c)) {
                        continue;
                    }
                }
                found = Some(*p);
                break;
            }
        }
        let Some(p) = found else {
            return Err(RuleError::new(file, pos, format!("unexpected character `{c}`")));
        };
        match p {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return Err(RuleError::new(file, pos, "unbalanced `)`"));
        }
        let n = p.chars().count();
        i += n;
        col += n as u32;
        toks.push(Token {
            tok: Tok::Punct(p),
            pos,
        });
    }
    if depth != 0 {
        return Err(RuleError::new(file, Pos { line, col }, "unclosed `(` at end of file"));
    }
    toks.push(Token {
        tok: Tok::Newline,
        pos: Pos { line, col },
    });
    toks.push(Token {
        tok: Tok::Eof,
        pos: Pos { line, col },
    });
    Ok(toks)
}
