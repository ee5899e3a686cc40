//! Shared pieces of the subcommands: errors, reading trace files, output on stdout (text lines
//! and JSON Lines) and progress bars on stderr.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Why a subcommand failed.
#[derive(Debug)]
pub enum CliError {
    /// The command line is wrong in a way the argument parser cannot see (exit status 2).
    Usage(String),
    /// The input is bad or a check failed (exit status 1).
    Failed(String),
}

/// Result of a subcommand.
pub type CliResult = Result<(), CliError>;

/// Read a file as UTF-8 text: a missing file, an unreadable one, and one that is not text
/// (not UTF-8, or holding a NUL byte) are `Failed` errors naming the file (and the byte
/// offset of the first byte that is not text).
pub fn read_file(path: &str) -> Result<String, CliError> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::Failed(match e.kind() {
            std::io::ErrorKind::NotFound => format!("{path}: no such file"),
            _ => format!("{path}: cannot read: {e}"),
        })
    })?;
    text_of(path, bytes)
}

/// `bytes` as text, or the error naming the first byte that is not text.
fn text_of(path: &str, bytes: Vec<u8>) -> Result<String, CliError> {
    let valid = match std::str::from_utf8(&bytes) {
        Ok(_) => bytes.len(),
        Err(e) => e.valid_up_to(),
    };
    if let Some(at) = bytes[..valid].iter().position(|&b| b == 0) {
        return Err(CliError::Failed(format!(
            "{path}: not a text file: NUL byte at byte {at}"
        )));
    }
    String::from_utf8(bytes).map_err(|_| CliError::Failed(format!("{path}: not UTF-8 text at byte {valid}")))
}

/// Read and parse a trace file (a parse error becomes `FILE:LINE:COLUMN: message`). A file
/// without traces gives the warning `warning: FILE: no traces found` on stderr and an empty
/// list.
pub fn load_traces(path: &str) -> Result<Vec<trace_ir::Trace>, CliError> {
    let text = read_file(path)?;
    let traces = trace_ir::parse_file(&text)
        .map_err(|e| CliError::Failed(format!("{path}:{}:{}: {}", e.line, e.column, e.message)))?;
    if traces.is_empty() {
        eprintln!("warning: {path}: no traces found");
    }
    Ok(traces)
}

/// [`load_traces`] for a command whose job is to process the traces of this one file: no
/// traces is a failure ([`no_traces`]).
pub fn load_some_traces(path: &str) -> Result<Vec<trace_ir::Trace>, CliError> {
    let traces = load_traces(path)?;
    if traces.is_empty() {
        return Err(no_traces());
    }
    Ok(traces)
}

/// The failure of a command whose files held no trace at all.
pub fn no_traces() -> CliError {
    CliError::Failed("no traces to process".into())
}

/// Where a subcommand writes: lines of text or JSON on stdout, and a progress bar on stderr
/// (drawn only when stderr is a terminal). Lines are written between redraws of the bar, so
/// the two do not garble each other on one terminal. A closed stdout (`tracejit ... | head`)
/// is not an error: later lines are dropped.
pub struct Out {
    bar: ProgressBar,
    closed: AtomicBool,
    error: Mutex<Option<String>>,
}

impl Out {
    /// Output without a progress bar.
    pub fn plain() -> Out {
        Out {
            bar: ProgressBar::hidden(),
            closed: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// Output with a progress bar of `len` steps (`what` is its label), drawn on stderr when
    /// stderr is a terminal.
    pub fn with_progress(len: u64, what: &str) -> Out {
        let out = Out::plain();
        if !std::io::stderr().is_terminal() {
            return out;
        }
        let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg} {elapsed}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::new(len).with_style(style).with_prefix(what.to_string());
        Out { bar, ..out }
    }

    /// The progress bar (hidden when stderr is not a terminal).
    pub fn bar(&self) -> &ProgressBar {
        &self.bar
    }

    /// Write `text` and a newline to stdout.
    pub fn line(&self, text: &str) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        self.bar.suspend(|| {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.write_all(b"\n"))
                .and_then(|()| stdout.flush())
            {
                self.closed.store(true, Ordering::Relaxed);
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    self.fail(format!("writing output: {e}"));
                }
            }
        });
    }

    /// Write `value` as one line of JSON (JSON Lines).
    pub fn json<T: Serialize>(&self, value: &T) {
        match serde_json::to_string(value) {
            Ok(s) => self.line(&s),
            Err(e) => self.fail(format!("writing JSON: {e}")),
        }
    }

    /// Write `text` and a newline to stderr.
    pub fn warn(&self, text: &str) {
        self.bar.suspend(|| eprintln!("{text}"));
    }

    fn fail(&self, msg: String) {
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        error.get_or_insert(msg);
    }

    /// Clear the progress bar; an error writing the output is the result.
    pub fn finish(self) -> CliResult {
        self.bar.finish_and_clear();
        match self.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(msg) => Err(CliError::Failed(msg)),
            None => Ok(()),
        }
    }
}

/// Serializes a list of `(name, value)` pairs as one JSON object, in list order.
pub struct JsonMap<K, V>(pub Vec<(K, V)>);

impl<K: AsRef<str>, V: Serialize> Serialize for JsonMap<K, V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k.as_ref(), v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<String, CliError>) -> String {
        match r {
            Err(CliError::Failed(m)) => m,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn text_is_accepted_and_the_first_non_text_byte_is_named() {
        assert_eq!(
            text_of("f", b"[i0]\nfinish(i0)\n".to_vec()).unwrap(),
            "[i0]\nfinish(i0)\n"
        );
        assert_eq!(
            message(text_of("f", b"ab\xffcd".to_vec())),
            "f: not UTF-8 text at byte 2"
        );
        assert_eq!(
            message(text_of("f", b"abc\0\xff".to_vec())),
            "f: not a text file: NUL byte at byte 3"
        );
        assert_eq!(
            message(text_of("f", b"a\xff\0".to_vec())),
            "f: not UTF-8 text at byte 1"
        );
    }
}
