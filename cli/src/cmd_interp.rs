//! `tracejit interp FILE [--inputs 1,2,3 | --random N --seed S] [--guided] [--max-iterations N] [--json]`:
//! run every trace of FILE in the reference interpreter and print the outcome per trace and
//! per input set.
//!
//! Inputs: `--inputs` gives one comma-separated list used for every trace (integers in
//! decimal or `0x` hex, floats as Rust parses them (`nan`, `inf` too), references as `null`
//! or an address); a trace whose input count differs is reported and skipped. `--random N`
//! runs N input sets per trace drawn from `--seed S` (default 0) and the trace index:
//! special integers, small floats, and deterministic external addresses for references.
//! Without either, one random input set is used. `--guided` first improves each input set
//! with `trace_interp::guided::guided_inputs` (inputs and initial external memory chosen
//! from the constants of failing guards, so real traces run further) and reports how many
//! external memory slots it preset.

use crate::common::{json_str, Args, CliError, CliResult};
use std::fmt::Write as _;
use trace_interp::guided::guided_inputs;
use trace_interp::random::random_inputs;
use trace_interp::rng::{mix64, Rng};
use trace_interp::{run, Outcome, RtValue, RunConfig};
use trace_ir::Kind;

/// Entry point of `tracejit interp`.
pub fn interp(args: &[String]) -> CliResult {
    let args = Args::parse(
        args,
        &["inputs", "random", "seed", "max-iterations"],
        &["json", "guided"],
    )?;
    let path = args.one_file()?;
    let traces = crate::common::load_traces(path)?;
    let number = |name: &str, default: u64| -> Result<u64, CliError> {
        match args.value(name) {
            None => Ok(default),
            Some(s) => parse_u64(s).ok_or_else(|| CliError::Usage(format!("--{name}: `{s}` is not a number"))),
        }
    };
    if args.value("inputs").is_some() && args.value("random").is_some() {
        return Err(CliError::Usage("--inputs and --random exclude each other".into()));
    }
    let random = number("random", 1)?;
    let seed = number("seed", 0)?;
    let cfg = RunConfig {
        max_iterations: number("max-iterations", RunConfig::default().max_iterations)?,
        ..RunConfig::default()
    };
    let json = args.has("json");
    let mut out = String::new();
    let mut items = Vec::new();
    for (ti, t) in traces.iter().enumerate() {
        let sets: Result<Vec<Vec<RtValue>>, String> = match args.value("inputs") {
            Some(list) => parse_inputs(list, &t.input_kinds()).map(|v| vec![v]),
            None => {
                let mut rng = Rng::new(mix64(seed ^ mix64(ti as u64)));
                Ok((0..random).map(|_| random_inputs(&mut rng, t)).collect())
            }
        };
        let runs = match sets {
            Ok(sets) => sets
                .into_iter()
                .map(|inputs| {
                    if args.has("guided") {
                        let (inputs, gcfg) = guided_inputs(t, &inputs, &cfg, 64);
                        (run(t, &inputs, &gcfg), inputs, gcfg.preset.len())
                    } else {
                        (run(t, &inputs, &cfg), inputs, 0)
                    }
                })
                .collect::<Vec<_>>(),
            Err(e) => {
                if json {
                    items.push(format!(
                        "{{\"index\":{ti},\"name\":{},\"error\":{}}}",
                        json_str(&t.info.name),
                        json_str(&e)
                    ));
                } else {
                    let _ = writeln!(out, "{ti:4}  {}: {e}", t.info.name);
                }
                continue;
            }
        };
        if json {
            let rs: Vec<String> = runs
                .iter()
                .map(|(r, inputs, preset)| {
                    format!(
                        "{{\"inputs\":{},\"preset_slots\":{preset},\"outcome\":{},\"iterations\":{},\"steps\":{}}}",
                        json_values(inputs),
                        json_outcome(&r.outcome),
                        r.iterations,
                        r.steps
                    )
                })
                .collect();
            items.push(format!(
                "{{\"index\":{ti},\"name\":{},\"runs\":[{}]}}",
                json_str(&t.info.name),
                rs.join(",")
            ));
        } else {
            let _ = writeln!(out, "{ti:4}  {}", t.info.name);
            for (r, inputs, preset) in &runs {
                let shown: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
                let preset = if *preset > 0 {
                    format!(", {preset} memory slots preset")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "      [{}] => {}  ({} iterations, {} steps{preset})",
                    shown.join(", "),
                    r.outcome,
                    r.iterations,
                    r.steps
                );
            }
        }
    }
    if json {
        let _ = writeln!(out, "{{\"file\":{},\"traces\":[{}]}}", json_str(path), items.join(","));
    }
    print!("{out}");
    Ok(())
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()? as i64,
        None => body.parse::<u64>().ok().and_then(|u| {
            if neg && u == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(u).ok()
            }
        })?,
    };
    Some(if neg && v != i64::MIN { -v } else { v })
}

/// Parse a comma-separated input list for inputs of `kinds`.
fn parse_inputs(list: &str, kinds: &[Kind]) -> Result<Vec<RtValue>, String> {
    let parts: Vec<&str> = if list.trim().is_empty() {
        Vec::new()
    } else {
        list.split(',').map(str::trim).collect()
    };
    if parts.len() != kinds.len() {
        return Err(format!(
            "the trace has {} inputs, --inputs gives {}",
            kinds.len(),
            parts.len()
        ));
    }
    parts
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(i, (s, k))| {
            let bad = || format!("input {}: `{s}` is not a valid {k:?} value", i + 1);
            match k {
                Kind::Float => s.parse::<f64>().map(RtValue::float).map_err(|_| bad()),
                Kind::Ref if *s == "null" => Ok(RtValue::Ref(0)),
                Kind::Ref => parse_int(s).map(|v| RtValue::Ref(v as u64)).ok_or_else(bad),
                _ => parse_int(s).map(RtValue::Int).ok_or_else(bad),
            }
        })
        .collect()
}

fn json_value(v: &RtValue) -> String {
    match *v {
        RtValue::Int(i) => format!("{{\"int\":{i}}}"),
        RtValue::Float(b) => {
            let f = f64::from_bits(b);
            if f.is_finite() {
                format!("{{\"float\":{f:?}}}")
            } else {
                format!("{{\"float\":{}}}", json_str(&f.to_string()))
            }
        }
        RtValue::Ref(a) => format!("{{\"ref\":\"0x{a:x}\"}}"),
    }
}

fn json_values(vs: &[RtValue]) -> String {
    format!("[{}]", vs.iter().map(json_value).collect::<Vec<_>>().join(","))
}

fn json_outcome(o: &Outcome) -> String {
    match o {
        Outcome::Finish(v) => format!("{{\"kind\":\"finish\",\"values\":{}}}", json_values(v)),
        Outcome::GuardFailed {
            guard,
            resume_key,
            values,
        } => format!(
            "{{\"kind\":\"guard_failed\",\"guard\":{},\"resume_key\":{resume_key},\"values\":{}}}",
            guard.0,
            json_values(values)
        ),
        Outcome::ExternalJump { target, values } => format!(
            "{{\"kind\":\"external_jump\",\"target\":{},\"values\":{}}}",
            target.map_or("null".to_string(), |t| t.to_string()),
            json_values(values)
        ),
        Outcome::Invalid { op, reason, promise } => format!(
            "{{\"kind\":\"invalid\",\"op\":{},\"reason\":{},\"broken_promise\":{promise}}}",
            op.map_or("null".to_string(), |o| o.index().to_string()),
            json_str(reason)
        ),
        Outcome::IterationLimit => "{\"kind\":\"iteration_limit\"}".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lists_parse_by_kind() {
        let kinds = [Kind::Int, Kind::Float, Kind::Ref, Kind::Int, Kind::Ref];
        let v = parse_inputs("-5, 2.5, null, 0x10, 0x4000", &kinds).unwrap();
        assert_eq!(
            v,
            vec![
                RtValue::Int(-5),
                RtValue::float(2.5),
                RtValue::Ref(0),
                RtValue::Int(16),
                RtValue::Ref(0x4000)
            ]
        );
        assert!(parse_inputs("1,2", &kinds).unwrap_err().contains("5 inputs"));
        assert!(parse_inputs("x", &[Kind::Int]).unwrap_err().contains("input 1"));
        assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int("9223372036854775808"), None);
        assert_eq!(parse_inputs("", &[]).unwrap(), vec![]);
    }
}
