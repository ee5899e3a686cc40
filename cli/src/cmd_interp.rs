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

use crate::common::{load_some_traces, CliResult, Out};
use serde::Serialize;
use trace_interp::guided::guided_inputs;
use trace_interp::random::random_inputs;
use trace_interp::rng::{mix64, Rng};
use trace_interp::{run, Outcome, RtValue, RunConfig};
use trace_ir::Kind;

/// Arguments of `tracejit interp`.
#[derive(clap::Args)]
pub struct InterpArgs {
    /// A trace file (the text format) or a PyPy log
    #[arg(value_name = "FILE")]
    file: String,
    /// One input list for every trace: integers (decimal or 0x hex), floats, references
    /// (null or an address), comma-separated
    #[arg(long, value_name = "LIST", conflicts_with = "random", allow_hyphen_values = true)]
    inputs: Option<String>,
    /// Run N random input sets per trace [default: 1]
    #[arg(long, value_name = "N", value_parser = parse_number)]
    random: Option<u64>,
    /// Seed of the random input sets
    #[arg(long, value_name = "S", default_value = "0", value_parser = parse_number)]
    seed: u64,
    /// Improve each input set first (inputs and external memory chosen so guards hold)
    #[arg(long)]
    guided: bool,
    /// Stop a loop after N iterations [default: the interpreter's]
    #[arg(long, value_name = "N", value_parser = parse_number)]
    max_iterations: Option<u64>,
    /// Print JSON Lines: one object per trace, then a summary (docs/cli.md)
    #[arg(long)]
    json: bool,
}

/// A number in decimal or `0x` hex, for the argument parser.
fn parse_number(s: &str) -> Result<u64, String> {
    parse_u64(s).ok_or_else(|| format!("`{s}` is not a number"))
}

/// One line of `tracejit interp --json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InterpLine<'a> {
    /// The runs of one trace, or why it was not run.
    Trace {
        index: usize,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        runs: Option<Vec<RunJson>>,
    },
    /// The totals, last.
    Summary { file: &'a str, traces: usize, runs: usize },
}

/// One run in JSON.
#[derive(Serialize)]
struct RunJson {
    inputs: Vec<ValueJson>,
    preset_slots: usize,
    outcome: OutcomeJson,
    iterations: u64,
    steps: u64,
}

/// A value in JSON: `{"int": 5}`, `{"float": 2.5}` (non-finite ones as strings: `"NaN"`,
/// `"inf"`), `{"ref": "0x4000"}`.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum ValueJson {
    Int(i64),
    Float(FloatJson),
    Ref(String),
}

#[derive(Serialize)]
#[serde(untagged)]
enum FloatJson {
    Finite(f64),
    Other(String),
}

/// An outcome in JSON, by `kind`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum OutcomeJson {
    Finish {
        values: Vec<ValueJson>,
    },
    GuardFailed {
        guard: u32,
        resume_key: u64,
        values: Vec<ValueJson>,
    },
    ExternalJump {
        target: Option<i64>,
        values: Vec<ValueJson>,
    },
    Invalid {
        op: Option<usize>,
        reason: String,
        broken_promise: bool,
    },
    IterationLimit,
}

/// Entry point of `tracejit interp`.
pub fn interp(args: InterpArgs) -> CliResult {
    let path = &args.file;
    let traces = load_some_traces(path)?;
    let random = args.random.unwrap_or(1);
    let seed = args.seed;
    let cfg = RunConfig {
        max_iterations: args.max_iterations.unwrap_or(RunConfig::default().max_iterations),
        ..RunConfig::default()
    };
    let json = args.json;
    let out = Out::plain();
    let mut total_runs = 0;
    for (ti, t) in traces.iter().enumerate() {
        let sets: Result<Vec<Vec<RtValue>>, String> = match &args.inputs {
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
                    if args.guided {
                        let (inputs, gcfg) = guided_inputs(t, &inputs, &cfg, 64);
                        (run(t, &inputs, &gcfg), inputs, gcfg.preset.len())
                    } else {
                        (run(t, &inputs, &cfg), inputs, 0)
                    }
                })
                .collect::<Vec<_>>(),
            Err(e) => {
                if json {
                    out.json(&InterpLine::Trace {
                        index: ti,
                        name: &t.info.name,
                        error: Some(e),
                        runs: None,
                    });
                } else {
                    out.line(&format!("{ti:4}  {}: {e}", t.info.name));
                }
                continue;
            }
        };
        total_runs += runs.len();
        if json {
            let runs = runs
                .iter()
                .map(|(r, inputs, preset)| RunJson {
                    inputs: json_values(inputs),
                    preset_slots: *preset,
                    outcome: json_outcome(&r.outcome),
                    iterations: r.iterations,
                    steps: r.steps,
                })
                .collect();
            out.json(&InterpLine::Trace {
                index: ti,
                name: &t.info.name,
                error: None,
                runs: Some(runs),
            });
        } else {
            out.line(&format!("{ti:4}  {}", t.info.name));
            for (r, inputs, preset) in &runs {
                let shown: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
                let preset = if *preset > 0 {
                    format!(", {preset} memory slots preset")
                } else {
                    String::new()
                };
                out.line(&format!(
                    "      [{}] => {}  ({} iterations, {} steps{preset})",
                    shown.join(", "),
                    r.outcome,
                    r.iterations,
                    r.steps
                ));
            }
        }
    }
    if json {
        out.json(&InterpLine::Summary {
            file: path,
            traces: traces.len(),
            runs: total_runs,
        });
    }
    out.finish()
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

fn json_value(v: &RtValue) -> ValueJson {
    match *v {
        RtValue::Int(i) => ValueJson::Int(i),
        RtValue::Float(b) => {
            let f = f64::from_bits(b);
            ValueJson::Float(if f.is_finite() {
                FloatJson::Finite(f)
            } else {
                FloatJson::Other(f.to_string())
            })
        }
        RtValue::Ref(a) => ValueJson::Ref(format!("0x{a:x}")),
    }
}

fn json_values(vs: &[RtValue]) -> Vec<ValueJson> {
    vs.iter().map(json_value).collect()
}

fn json_outcome(o: &Outcome) -> OutcomeJson {
    match o {
        Outcome::Finish(v) => OutcomeJson::Finish { values: json_values(v) },
        Outcome::GuardFailed {
            guard,
            resume_key,
            values,
        } => OutcomeJson::GuardFailed {
            guard: guard.0,
            resume_key: *resume_key,
            values: json_values(values),
        },
        Outcome::ExternalJump { target, values } => OutcomeJson::ExternalJump {
            target: *target,
            values: json_values(values),
        },
        Outcome::Invalid { op, reason, promise } => OutcomeJson::Invalid {
            op: op.map(|o| o.index()),
            reason: reason.to_string(),
            broken_promise: *promise,
        },
        Outcome::IterationLimit => OutcomeJson::IterationLimit,
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
