//! `tracejit parse` and `tracejit print`.

use crate::common::{CliError, CliResult};

/// `tracejit parse FILE [--json]`.
pub fn parse(_args: &[String]) -> CliResult {
    Err(CliError::Failed("parse: not implemented yet".into()))
}

/// `tracejit print FILE`.
pub fn print(_args: &[String]) -> CliResult {
    Err(CliError::Failed("print: not implemented yet".into()))
}
