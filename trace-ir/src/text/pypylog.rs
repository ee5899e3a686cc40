//! Reading files: one plain trace (or several, each after the previous one's final op), or a
//! PyPy log (`PYPYLOG=jit-log-noopt,jit-log-opt:file`) whose `jit-log-noopt`,
//! `jit-log-opt-loop` and `jit-log-opt-bridge` sections each hold one trace.

use super::parser::{classify, LineKind, Status, TraceParser};
use super::ParseError;
use crate::descr::Descr;
use crate::opcode::Kind;
use crate::trace::{Trace, TraceInfo};
use std::collections::{BTreeMap, BTreeSet};

/// The sections whose traces are read; other sections are skipped.
pub const TRACE_SECTIONS: &[&str] = &["jit-log-noopt", "jit-log-opt-loop", "jit-log-opt-bridge"];

/// `[6b4b952ad08] {jit-log-noopt` → `jit-log-noopt`.
fn section_start(line: &str) -> Option<&str> {
    let rest = timestamp(line)?;
    let cat = rest.strip_prefix('{')?.trim_end();
    (!cat.is_empty() && !cat.contains(char::is_whitespace)).then_some(cat)
}

/// `[6b4b958dbde] jit-log-noopt}` → `jit-log-noopt`.
fn section_end(line: &str) -> Option<&str> {
    let rest = timestamp(line)?;
    let cat = rest.trim_end().strip_suffix('}')?;
    (!cat.is_empty() && !cat.contains(char::is_whitespace)).then_some(cat)
}

/// The text after a `[hex] ` timestamp.
fn timestamp(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find(']')?;
    let hex = &rest[..close];
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    rest[close + 1..].strip_prefix(' ')
}

/// Whether `text` looks like a PyPy log (has at least one section start line).
pub fn is_pypy_log(text: &str) -> bool {
    text.lines().any(|l| section_start(l).is_some())
}

/// Parse lines `lines[from..to]` (file line numbers are index + 1) as traces. With `multi`,
/// a new trace starts after each final op; otherwise text after it is an error. Returns each
/// trace with its header comment and first line.
fn parse_lines(
    lines: &[&str],
    from: usize,
    to: usize,
    multi: bool,
) -> Result<Vec<(Trace, Option<String>, usize)>, ParseError> {
    let mut out = Vec::new();
    let mut parser = TraceParser::new();
    let mut header: Option<String> = None;
    let mut first_line = 0;
    for (i, &line) in lines.iter().enumerate().take(to).skip(from) {
        let lineno = i + 1;
        match classify(line) {
            LineKind::Skip => {}
            LineKind::Comment(c) => {
                if !parser.started() {
                    header = Some(c.to_string());
                }
            }
            LineKind::Content(start) => {
                if !parser.started() {
                    first_line = lineno;
                }
                if parser.feed(line, lineno, start)? == Status::Done && multi {
                    let done = std::mem::replace(&mut parser, TraceParser::new());
                    out.push((done.finish()?, header.take(), first_line));
                }
            }
        }
    }
    if parser.started() || (!multi && out.is_empty()) {
        if !parser.started() {
            return Err(ParseError {
                line: to.max(1),
                column: 1,
                message: "no trace in the input".into(),
            });
        }
        out.push((parser.finish()?, header, first_line));
    }
    Ok(out)
}

/// Parse exactly one trace: plain text (text after its final op is an error), or a PyPy log
/// holding exactly one trace section.
pub fn parse_trace(text: &str) -> Result<Trace, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().any(|l| section_start(l).is_some()) {
        let mut traces = parse_file(text)?;
        if traces.len() != 1 {
            return Err(ParseError {
                line: 1,
                column: 1,
                message: format!("expected one trace, the log holds {}", traces.len()),
            });
        }
        return Ok(traces.pop().expect("one trace"));
    }
    let mut traces = parse_lines(&lines, 0, lines.len(), false)?;
    let (mut trace, header, _) = traces.pop().expect("single mode yields one trace or an error");
    trace.info.header = header;
    Ok(trace)
}

fn section_name(section: &str, header: Option<&str>, noopt_index: usize) -> String {
    if section == "jit-log-noopt" {
        return format!("noopt #{noopt_index}");
    }
    let Some(h) = header else { return section.to_string() };
    if let Some(rest) = h.strip_prefix("bridge out of ") {
        let base = rest.split(" with ").next().unwrap_or(rest);
        return format!("bridge out of {base}");
    }
    if h.starts_with("Loop ") {
        let base = h.split(" (").next().unwrap_or(h);
        let base = base.split(" :").next().unwrap_or(base);
        return base.to_string();
    }
    h.split(" :").next().unwrap_or(h).to_string()
}

/// Parse a file: a PyPy log (every trace section, in order) or plain text (one or more
/// traces; a `#` comment line before a trace becomes its name). Errors name the absolute
/// line in the file.
pub fn parse_file(text: &str) -> Result<Vec<Trace>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    if !lines.iter().any(|l| section_start(l).is_some()) {
        let traces = parse_lines(&lines, 0, lines.len(), true)?;
        return Ok(traces
            .into_iter()
            .enumerate()
            .map(|(k, (mut t, header, line))| {
                t.info.name = match &header {
                    Some(h) => h.clone(),
                    None => format!("trace #{} (line {line})", k + 1),
                };
                t.info.header = header;
                t
            })
            .collect());
    }
    let mut out = Vec::new();
    let mut noopt = 0;
    let mut i = 0;
    while i < lines.len() {
        let Some(cat) = section_start(lines[i]) else {
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len())
            .find(|&k| section_end(lines[k]) == Some(cat))
            .ok_or_else(|| ParseError {
                line: i + 1,
                column: 1,
                message: format!("section `{cat}` is not closed"),
            })?;
        if TRACE_SECTIONS.contains(&cat) {
            if cat == "jit-log-noopt" {
                noopt += 1;
            }
            let mut traces = parse_lines(&lines, i + 1, end, false).map_err(|mut e| {
                if e.message == "no trace in the input" {
                    e.message = format!("section `{cat}` holds no trace");
                }
                e
            })?;
            let (mut t, header, _) = traces.pop().expect("single mode yields one trace or an error");
            let base = section_name(cat, header.as_deref(), noopt);
            t.info = TraceInfo {
                name: format!("{base} (line {})", i + 1),
                section: Some(cat.to_string()),
                header,
            };
            // PyPy's optimizer relies on its type-based rule: different descriptors never
            // alias (its GC types guarantee it).
            t.aliasing = crate::trace::Aliasing::TypeBased;
            out.push(t);
        }
        i = end + 1;
    }
    infer_field_sizes(&mut out);
    Ok(out)
}

/// PyPy's logs print no field sizes, so every integer field would be 8 bytes wide and two
/// byte fields of the same struct at offsets 80 and 81 would overlap (a store to one would
/// clobber the other). Infer each integer field's width from the layout the whole log
/// shows: the widest of 8, 4, 2, 1 bytes that its offset is aligned to and that ends at or
/// before the next field of the same struct (the qualified name up to its last `.`).
/// Reference and float fields stay 8 bytes; so does a field with no known neighbour above.
fn infer_field_sizes(traces: &mut [Trace]) {
    let struct_of = |name: &str| name.rsplit_once('.').map_or(name, |(s, _)| s).to_string();
    let mut layout: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for t in traces.iter() {
        for d in &t.descrs {
            if let Descr::Field(f) = d {
                layout.entry(struct_of(&f.name)).or_default().insert(f.offset);
            }
        }
    }
    for t in traces.iter_mut() {
        for d in &mut t.descrs {
            let Descr::Field(f) = d else { continue };
            if f.kind != Kind::Int {
                continue;
            }
            let next = layout
                .get(&struct_of(&f.name))
                .and_then(|offs| offs.range(f.offset + 1..).next().copied());
            let gap = next.map_or(i64::MAX, |n| n - f.offset);
            f.size = [8u8, 4, 2, 1]
                .into_iter()
                .find(|&p| f.offset.rem_euclid(i64::from(p)) == 0 && i64::from(p) <= gap)
                .unwrap_or(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_lines() {
        assert_eq!(section_start("[6b4b952ad08] {jit-log-noopt"), Some("jit-log-noopt"));
        assert_eq!(section_end("[6b4b958dbde] jit-log-noopt}"), Some("jit-log-noopt"));
        assert_eq!(section_start("[p0, p1]"), None);
        assert_eq!(section_end("[p0] x}"), None);
    }

    #[test]
    fn one_section_is_one_trace() {
        let log = "[1] {jit-log-opt-loop\n# Loop 3 (f) : loop with 1 ops\n[i0]\n+5: finish(i0)\n+9: --end of the loop--\n[2] jit-log-opt-loop}\n";
        let t = parse_trace(log).unwrap();
        assert_eq!(t.info.name, "Loop 3 (line 1)");
        assert_eq!(t.info.section.as_deref(), Some("jit-log-opt-loop"));
        let two = format!("{log}{log}");
        assert_eq!(
            parse_trace(&two).unwrap_err().to_string(),
            "line 1, column 1: expected one trace, the log holds 2"
        );
        assert_eq!(parse_file(&two).unwrap().len(), 2);
    }

    #[test]
    fn field_sizes_inferred_from_neighbours() {
        let log = "[1] {jit-log-noopt\n[p0]\n\
            i1 = getfield_gc_i(p0, descr=<FieldU a.Frame.inst_escaped 80>)\n\
            i2 = getfield_gc_i(p0, descr=<FieldU a.Frame.inst_finished 81>)\n\
            i3 = getfield_gc_i(p0, descr=<FieldS a.Frame.inst_depth 72>)\n\
            i4 = getfield_gc_i(p0, descr=<FieldS a.Other.inst_x 81>)\n\
            p5 = getfield_gc_r(p0, descr=<FieldP a.Frame.inst_code 84>)\n\
            finish()\n[2] jit-log-noopt}\n";
        let traces = parse_file(log).unwrap();
        let sizes: Vec<(String, u8)> = traces[0]
            .descrs
            .iter()
            .filter_map(|d| d.as_field().map(|f| (f.name.to_string(), f.size)))
            .collect();
        let size = |n: &str| sizes.iter().find(|(m, _)| m.ends_with(n)).map(|x| x.1);
        assert_eq!(size("inst_escaped"), Some(1), "{sizes:?}");
        assert_eq!(size("inst_finished"), Some(1), "81 is odd: {sizes:?}");
        assert_eq!(size("inst_depth"), Some(8), "{sizes:?}");
        assert_eq!(size("inst_x"), Some(1), "no neighbour, offset 81 is odd: {sizes:?}");
        assert_eq!(size("inst_code"), Some(8), "references stay 8 bytes: {sizes:?}");
    }

    #[test]
    fn names_from_headers() {
        assert_eq!(
            section_name(
                "jit-log-opt-loop",
                Some("Loop 8 (fannkuch;x:14-25~#70 LOAD_FAST) : loop with 90 ops"),
                0
            ),
            "Loop 8"
        );
        assert_eq!(
            section_name(
                "jit-log-opt-bridge",
                Some("bridge out of Guard 0x7f316aa4e698 with 78 ops"),
                0
            ),
            "bridge out of Guard 0x7f316aa4e698"
        );
        assert_eq!(
            section_name("jit-log-noopt", Some("Traced loop or bridge with 53 ops"), 3),
            "noopt #3"
        );
    }
}
