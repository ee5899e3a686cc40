//! Shared pieces of the subcommands: errors, argument helpers, JSON output.

/// Why a subcommand failed.
#[derive(Debug)]
pub enum CliError {
    /// The command line is wrong (exit code 2, usage printed).
    Usage(String),
    /// The input is bad or a check failed (exit code 1).
    Failed(String),
}

/// Result of a subcommand.
pub type CliResult = Result<(), CliError>;

/// Split arguments into positional ones and `--flag [value]` options. `with_value` lists the
/// flags that take a value.
pub struct Args {
    /// Positional arguments.
    pub positional: Vec<String>,
    /// Flags and their values (`None` for switches).
    pub flags: Vec<(String, Option<String>)>,
}

impl Args {
    /// Parse `args`; flags in `with_value` consume the next argument.
    pub fn parse(args: &[String], with_value: &[&str], switches: &[&str]) -> Result<Args, CliError> {
        let mut positional = Vec::new();
        let mut flags = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                if with_value.contains(&name) {
                    let v = it
                        .next()
                        .ok_or_else(|| CliError::Usage(format!("--{name} needs a value")))?;
                    flags.push((name.to_string(), Some(v.clone())));
                } else if switches.contains(&name) {
                    flags.push((name.to_string(), None));
                } else {
                    return Err(CliError::Usage(format!("unknown option --{name}")));
                }
            } else {
                positional.push(a.clone());
            }
        }
        Ok(Args { positional, flags })
    }
    /// Whether switch `name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| n == name)
    }
    /// The value of option `name`, if given.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }
    /// Exactly one positional argument (a file).
    pub fn one_file(&self) -> Result<&str, CliError> {
        match self.positional.as_slice() {
            [f] => Ok(f),
            [] => Err(CliError::Usage("missing FILE".into())),
            _ => Err(CliError::Usage("expected exactly one FILE".into())),
        }
    }
}

/// Read a file to a string, as a `Failed` error when it cannot be read.
pub fn read_file(path: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::Failed(format!("{path}: {e}")))
}

/// Quote a string as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Read and parse a trace file, turning a parse error into `FILE:LINE:COLUMN: message`.
pub fn load_traces(path: &str) -> Result<Vec<trace_ir::Trace>, CliError> {
    let text = read_file(path)?;
    trace_ir::parse_file(&text).map_err(|e| CliError::Failed(format!("{path}:{}:{}: {}", e.line, e.column, e.message)))
}
