//! `tracejit synth-rules [--json] [--op NAME]...`: synthesize simple peephole rules with Z3
//! (`verify::synth`) and mark each `covered` if the optimizer already simplifies a
//! one-op trace with it, or `MISSING`. Exits with status 1 if any rule is missing.

use crate::common::{json_str, Args, CliError, CliResult};
use trace_ir::Opcode;
use verify::synth::{synthesize, BINARY_OPS};

/// `tracejit synth-rules [--json] [--op NAME]`.
pub fn synth_rules(args: &[String]) -> CliResult {
    let a = Args::parse(args, &["op"], &["json"])?;
    let ops: Vec<Opcode> = match a.value("op") {
        Some(name) => {
            let op = Opcode::from_name(name).ok_or_else(|| CliError::Usage(format!("unknown operation `{name}`")))?;
            if !BINARY_OPS.contains(&op) {
                return Err(CliError::Usage(format!(
                    "`{name}` is not one of the binary integer ops searched"
                )));
            }
            vec![op]
        }
        None => BINARY_OPS.to_vec(),
    };
    let found = synthesize(&ops);
    let missing = found.iter().filter(|f| !f.covered).count();
    if a.has("json") {
        let items: Vec<String> = found
            .iter()
            .map(|f| {
                let text = f.to_string();
                let rule = text.rsplit_once("    ").map(|(r, _)| r).unwrap_or(&text);
                format!("{{\"rule\":{},\"covered\":{}}}", json_str(rule.trim()), f.covered)
            })
            .collect();
        println!("{{\"found\":[{}],\"missing\":{missing}}}", items.join(","));
    } else {
        for f in &found {
            println!("{f}");
        }
        println!(
            "# {} rules found, {} covered, {missing} MISSING",
            found.len(),
            found.len() - missing
        );
    }
    if missing > 0 {
        return Err(CliError::Failed(format!(
            "{missing} synthesized rule(s) not done by the optimizer"
        )));
    }
    Ok(())
}
