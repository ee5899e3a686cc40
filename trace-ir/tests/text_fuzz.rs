//! The parser never panics: random bytes, random strings over the format's alphabet, and
//! real PyPy trace sections with random mutations all give `Ok` or an `Err` with a line and
//! column. Whatever is accepted prints and parses back to the same text.

use proptest::prelude::*;
use std::sync::OnceLock;
use trace_ir::text::{parse_file, parse_trace, print_trace, traces_equivalent};

/// The trace sections of the fannkuch log (each as its lines, markers included).
fn sections() -> &'static Vec<Vec<String>> {
    static S: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    S.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/corpus/pypy-dev/fannkuch.pypylog"
        );
        let text = std::fs::read_to_string(path).expect("corpus file");
        let mut out = Vec::new();
        let mut cur: Vec<String> = Vec::new();
        for line in text.lines() {
            cur.push(line.to_string());
            if line.ends_with('}') && line.starts_with('[') {
                out.push(std::mem::take(&mut cur));
            }
        }
        assert!(out.len() >= 40, "fannkuch has 42 sections");
        out
    })
}

/// Parse as a file and as one trace; anything accepted must survive a round trip.
fn check(text: &str) {
    if let Ok(traces) = parse_file(text) {
        for t in &traces {
            let printed = print_trace(t);
            let back =
                parse_trace(&printed).unwrap_or_else(|e| panic!("accepted trace does not reparse: {e}\n{printed}"));
            traces_equivalent(t, &back).unwrap();
        }
    }
    match parse_trace(text) {
        Ok(t) => {
            let printed = print_trace(&t);
            assert_eq!(print_trace(&parse_trace(&printed).unwrap()), printed);
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "{e}");
            assert!(e.line <= text.lines().count().max(1), "line out of range: {e}");
        }
    }
}

const ALPHABET: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    ",",
    " ",
    "=",
    ":",
    ";",
    "$0",
    "-",
    "->",
    "None",
    "i1",
    "p0",
    "f2",
    "0",
    "-1",
    "1.5",
    "0x",
    "descr=",
    "<Guard0>",
    "<Guard0x7f>",
    "TargetToken(1)",
    "<FieldS x 8>",
    "<ArrayP 8>",
    "<SizeDescr 16>",
    "ConstPtr(null)",
    "ConstClass(x)",
    "ConstFloat(0x7ff8000000000000)",
    "label",
    "jump",
    "finish",
    "int_add",
    "guard_true",
    "new_array",
    "\n",
    "#",
    "+12: ",
    "é",
    "\u{0}",
    "inf",
    "-nan",
];

/// One random edit of a section's lines.
fn mutate(lines: &mut Vec<String>, choice: u64, pos: u64, extra: u64) {
    if lines.is_empty() {
        lines.push(String::new());
    }
    let li = (pos as usize) % lines.len();
    let line = &mut lines[li];
    let chars: Vec<char> = line.chars().collect();
    let ci = if chars.is_empty() {
        0
    } else {
        (extra as usize) % (chars.len() + 1)
    };
    match choice % 7 {
        0 => {
            // Delete a run of characters.
            let end = (ci + 1 + (extra as usize >> 8) % 8).min(chars.len());
            *line = chars[..ci.min(chars.len())]
                .iter()
                .chain(&chars[end.max(ci).min(chars.len())..])
                .collect();
        }
        1 => {
            // Insert a token.
            let tok = ALPHABET[(extra as usize >> 16) % ALPHABET.len()];
            let mut s: String = chars[..ci].iter().collect();
            s.push_str(tok);
            s.extend(&chars[ci..]);
            *line = s;
        }
        2 => {
            // Truncate the line.
            *line = chars[..ci].iter().collect();
        }
        3 => {
            let copy = line.clone();
            lines.insert(li, copy);
        }
        4 => {
            lines.remove(li);
        }
        5 => {
            let lj = (extra as usize) % lines.len();
            lines.swap(li, lj);
        }
        _ => {
            // Replace a digit (renames values, changes numbers).
            let mut s: Vec<char> = chars.clone();
            if let Some(k) = (ci..s.len()).find(|&k| s[k].is_ascii_digit()) {
                s[k] = char::from(b'0' + (extra % 10) as u8);
            }
            *line = s.into_iter().collect();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_token_strings_never_panic(toks in prop::collection::vec(0..ALPHABET.len(), 0..60)) {
        let text: String = toks.iter().map(|&i| ALPHABET[i]).collect();
        check(&text);
        check(&format!("[i1, p0, f2]\n{text}\nfinish(i1)\n"));
    }

    #[test]
    fn mutated_corpus_sections_never_panic(
        section in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 1..6),
    ) {
        let all = sections();
        let mut lines = all[section.index(all.len())].clone();
        for (c, p, e) in edits {
            mutate(&mut lines, c, p, e);
        }
        let text = lines.join("\n");
        check(&text);
        // The same text without the section markers, as a plain trace.
        let inner: Vec<&str> = lines.iter().map(String::as_str).filter(|l| !(l.starts_with("[") && (l.ends_with('}') || l.contains("] {")))).collect();
        check(&inner.join("\n"));
    }
}

#[test]
fn unmutated_sections_parse() {
    // The mutation test starts from valid input: without edits, every section parses.
    for s in sections() {
        let text = s.join("\n");
        assert_eq!(parse_file(&text).unwrap().len(), 1);
    }
}
