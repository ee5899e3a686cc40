//! Rewriting the expectations of golden tests in their source files (`BLESS=1`).

use std::panic::Location;
use std::sync::Mutex;

/// Whether `BLESS=1` (or any value but `0` and empty) is set.
pub fn enabled() -> bool {
    std::env::var("BLESS")
        .map(|v| !v.is_empty() && v != "0")
        .unwrap_or(false)
}

/// Line-count changes made so far by this process: (file, original line of the call, lines
/// added). Tests run in parallel; the lock serializes the read-modify-write of a file, and the
/// deltas map the compiled-in line numbers to the lines of the file as rewritten.
static SHIFTS: Mutex<Vec<(String, usize, isize)>> = Mutex::new(Vec::new());

/// Replace the second argument (a string literal) of the `check`/`check_with` call at
/// `loc` by `text` (one line per trace line, aligned one column after the opening quote,
/// as the hand-written expectations are).
pub fn rewrite_expectation(loc: &Location<'_>, text: &str) {
    // (the caller's file as the compiler named it, from the crate's `tests/` directory on)
    let Some(within) = loc.file().find("tests/golden/").map(|k| &loc.file()[k..]) else {
        panic!("BLESS: the call at {loc} is not in tests/golden/")
    };
    let path = format!("{}/{within}", env!("CARGO_MANIFEST_DIR"));
    let mut shifts = SHIFTS.lock().unwrap_or_else(|e| e.into_inner());
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("BLESS: cannot read {path}: {e}"));
    let shift: isize = shifts
        .iter()
        .filter(|(f, l, _)| *f == path && *l < loc.line() as usize)
        .map(|(_, _, d)| d)
        .sum();
    let line = (loc.line() as isize + shift) as usize;
    let call = line_start(&src, line).map(|p| p + loc.column() as usize - 1);
    let Some((start, end)) = call.and_then(|c| second_argument_literal(&src, c)) else {
        panic!("BLESS: the expectation of the call at {loc} is not a string literal; update it by hand to:\n{text}")
    };
    let quote_col = start - src[..start].rfind('\n').map(|p| p + 1).unwrap_or(0);
    let indent = " ".repeat(quote_col + 1);
    let body: Vec<String> = text
        .trim_end()
        .lines()
        .map(|l| l.trim().replace('\\', "\\\\").replace('"', "\\\""))
        .collect();
    let literal = format!("\"{}\"", body.join(&format!("\n{indent}")));
    let old_lines = src[start..end].matches('\n').count() as isize;
    let new_lines = literal.matches('\n').count() as isize;
    let out = format!("{}{}{}", &src[..start], literal, &src[end..]);
    std::fs::write(&path, out).unwrap_or_else(|e| panic!("BLESS: cannot write {path}: {e}"));
    shifts.push((path, loc.line() as usize, new_lines - old_lines));
    eprintln!("BLESS: rewrote the expectation of the call at {loc}");
}

/// Byte offset of the start of 1-based `line`.
fn line_start(src: &str, line: usize) -> Option<usize> {
    if line == 1 {
        return Some(0);
    }
    src.match_indices('\n').nth(line - 2).map(|(p, _)| p + 1)
}

/// The byte span (quotes included) of the second argument of the call starting at `call`,
/// if that argument is a plain string literal.
fn second_argument_literal(src: &str, call: usize) -> Option<(usize, usize)> {
    let b = src.as_bytes();
    let mut i = call + src[call..].find('(')? + 1;
    let (mut depth, mut arg) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i)?;
                if arg == 1 && depth == 0 {
                    // the literal must be the whole argument
                    let rest = src[end..].trim_start();
                    return (rest.starts_with(',') || rest.starts_with(')')).then_some((i, end));
                }
                i = end;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => return None,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => arg += 1,
            c if arg == 1 && depth == 0 && !c.is_ascii_whitespace() => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The offset just past the closing quote of the string literal opening at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}
