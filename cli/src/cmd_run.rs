//! `tracejit run`: compile every trace of a file to x86-64, run it natively and print its exit
//! next to the reference interpreter's outcome.

use crate::common::{load_some_traces, CliError, CliResult, Out};
use backend_x86_64::{compile, CompileOptions, Exit, ExitValue, MemoryAccess, SimpleHeap};
use trace_interp::heap::external_address;
use trace_interp::rng::Rng;
use trace_interp::{outcomes_equivalent, run as interp_run, ModelHeap, Outcome, RtValue, RunConfig};
use trace_ir::{Kind, Trace};

/// Arguments of `tracejit run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// A trace file (the text format) or a PyPy log; with --tree, a trace tree
    #[arg(value_name = "FILE")]
    file: String,
    /// One input list for every trace: integers (decimal or 0x hex), floats, references
    /// (null; any address in Hooks mode), comma-separated
    #[arg(long, value_name = "LIST", conflicts_with = "random", allow_hyphen_values = true)]
    pub(crate) inputs: Option<String>,
    /// Run N random input vectors per trace
    #[arg(long, value_name = "N")]
    pub(crate) random: Option<usize>,
    /// Seed of the random input vectors
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// Optimize first (the interpreter still runs the original trace)
    #[arg(long)]
    pub(crate) opt: bool,
    /// Run every trace in Hooks mode: memory and calls through the interpreter's model
    #[arg(long)]
    hooks: bool,
    /// FILE is a loop and its bridges: compile them attached and run them as one tree
    /// (Direct mode only)
    #[arg(long, conflicts_with = "hooks")]
    tree: bool,
}

/// How a native run compares with the interpreter's run of the original trace.
pub(crate) enum Verdict {
    /// The same exit and values.
    Same,
    /// The interpreter's run of the original ends in an invalid operation and the native run
    /// does something else: allowed, since an invalid operation may do anything (the
    /// optimizer may remove it, and native code does not check promises).
    Refines,
    /// A difference, with what differs.
    Different(String),
}

impl Verdict {
    /// The verdict of a comparison `cmp` of a native run with the interpreter's outcome
    /// `int` on the original. An invalid original allows any native behaviour when the native
    /// code is of the `optimized` trace, or when the original broke a promise (native code
    /// does not check promises).
    pub(crate) fn of(cmp: Result<(), String>, int: &Outcome, optimized: bool) -> Verdict {
        match (cmp, int) {
            (Ok(()), _) => Verdict::Same,
            (Err(_), Outcome::Invalid { promise, .. }) if optimized || *promise => Verdict::Refines,
            (Err(e), _) => Verdict::Different(e),
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Same => write!(f, "same"),
            Verdict::Refines => write!(f, "refines (original invalid)"),
            Verdict::Different(e) => write!(f, "DIFFERENT: {e}"),
        }
    }
}

/// `tracejit run FILE [--inputs 1,2.5,0 | --random N --seed S] [--opt] [--hooks]`; with
/// `--tree` the file is one trace tree, run with its bridges attached
/// ([`crate::cmd_run_tree`]).
///
/// Each trace runs in one of the backend's two memory modes:
/// - **Direct** (traces that only touch objects they allocate): native code reads and writes
///   real memory from a `SimpleHeap` and calls nothing foreign. Reference inputs can only be
///   null (`0`/`null`), since native code would dereference them.
/// - **Hooks** (traces that call functions, use non-null pointer constants, raw memory,
///   `cast_int_to_ptr` or reference inputs, and every trace with `--hooks`): the trace names
///   memory and functions of the process that wrote it, so native code hands every memory
///   access, allocation, call and exception-state op to the interpreter's heap and call model
///   (`trace_interp::ModelHeap`) instead of dereferencing or calling anything. Reference
///   inputs may then be any address (decimal or `0x` hex), standing for external objects of
///   the model, and the whole run (exit, values, allocated objects by content, calls,
///   external memory, exception state) is compared with the interpreter's.
///
/// Inputs are given per trace input in order: integers (decimal or `0x` hex), floats,
/// references. `--random N` runs N input vectors drawn from special integers and floats
/// (references null in Direct mode, external addresses in Hooks mode). `--opt` runs
/// `optimizer::optimize` first (the interpreter still runs the original trace, so the line
/// also checks the optimizer; when the original hits an invalid operation, whatever the
/// optimized code does refines it: reported as `refines (original invalid)`, not as a
/// difference). Exit status 1 when a native run differs from the interpreter's or a trace
/// cannot be compiled. Inputs for which the interpreter hits its
/// iteration limit are not run natively (native loops have no limit).
pub fn run(a: RunArgs) -> CliResult {
    let file = &a.file;
    let count = a.random.unwrap_or(1);
    let seed = a.seed;
    if a.tree {
        return crate::cmd_run_tree::run_tree_file(&a, file, count, seed);
    }
    let traces = load_some_traces(file)?;
    let out = Out::plain();
    let mut failures = 0;
    for (ti, t) in traces.iter().enumerate() {
        let name = if t.info.name.is_empty() {
            format!("trace {ti}")
        } else {
            t.info.name.clone()
        };
        let compiled_trace: Trace = if a.opt {
            match optimizer::optimize(t, &optimizer::Options::default()) {
                Ok(o) => o.trace,
                Err(e) => {
                    out.line(&format!("{name}: optimizer: {e}"));
                    failures += 1;
                    continue;
                }
            }
        } else {
            t.clone()
        };
        // Native code must not call function addresses written in the trace nor dereference
        // memory it names (a non-null pointer constant like `ConstPtr(ptr13)`, raw memory, a
        // pointer made from an integer, a reference input): such traces run in Hooks mode
        // against the interpreter's memory model.
        let why_hooks = if a.hooks {
            Some("--hooks".to_string())
        } else {
            foreign(&compiled_trace)
        };
        let memory = if why_hooks.is_some() {
            MemoryAccess::Hooks
        } else {
            MemoryAccess::Direct
        };
        let opts = CompileOptions {
            memory,
            ..CompileOptions::from_env()
        };
        let code = match compile(&compiled_trace, &opts) {
            Ok(c) => c,
            Err(e) => {
                out.line(&format!("{name}: not compiled: {e}"));
                failures += 1;
                continue;
            }
        };
        if let Some(why) = &why_hooks {
            out.line(&format!(
                "{name}: Hooks mode (memory and calls through the interpreter's model): {why}"
            ));
        }
        let hooks = why_hooks.is_some();
        let kinds = t.input_kinds();
        let mut rng = Rng::new(seed ^ (ti as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for k in 0..count {
            let inputs = next_inputs(&a, &mut rng, &kinds, hooks, &name)?;
            let shown: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
            let cfg = RunConfig::default();
            let int_run = interp_run(t, &inputs, &cfg);
            let int = int_run.outcome.clone();
            if int == Outcome::IterationLimit {
                // Native code has no iteration limit: it would run until the loop exits.
                out.line(&format!(
                    "{name} [{}]\n  interp: {int}\n  not run natively (the loop may run for a very long time)",
                    shown.join(", ")
                ));
                continue;
            }
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            let (native, cmp) = if hooks {
                let mut model = ModelHeap::new(&compiled_trace, &cfg);
                // SAFETY: in Hooks mode every memory access and call goes to the model.
                let native =
                    unsafe { code.run(&words, &mut model) }.map_err(|e| CliError::Failed(format!("{name}: {e}")))?;
                let native_run = model.into_result(trace_interp::native::exit_outcome(&native));
                (native, outcomes_equivalent(&int_run, &native_run))
            } else {
                let mut heap = SimpleHeap::new();
                // SAFETY: Direct mode is chosen only for traces that name no foreign memory
                // or function (`why_hooks`) and get integer and float inputs.
                let native =
                    unsafe { code.run(&words, &mut heap) }.map_err(|e| CliError::Failed(format!("{name}: {e}")))?;
                let v = if agree(&native, &int) {
                    Ok(())
                } else {
                    Err("different exit".to_string())
                };
                (native, v)
            };
            let verdict = Verdict::of(cmp, &int, a.opt);
            if matches!(verdict, Verdict::Different(_)) {
                failures += 1;
            }
            out.line(&format!(
                "{name} [{}]{}\n  native: {}\n  interp: {int}\n  {verdict}",
                shown.join(", "),
                if count > 1 { format!(" (#{k})") } else { String::new() },
                show_exit(&native),
            ));
        }
    }
    out.finish()?;
    if failures > 0 {
        return Err(CliError::Failed(format!("{failures} run(s) differ or failed")));
    }
    Ok(())
}

/// The next input vector for `what` (taking `kinds`): `--inputs`, or drawn from `rng` with
/// `--random`; none needed when it takes no inputs.
pub(crate) fn next_inputs(
    a: &RunArgs,
    rng: &mut Rng,
    kinds: &[Kind],
    hooks: bool,
    what: &str,
) -> Result<Vec<RtValue>, CliError> {
    Ok(match (&a.inputs, a.random) {
        (Some(list), _) => parse_inputs(list, kinds, hooks)?,
        (None, Some(_)) => random_inputs(rng, kinds, hooks),
        (None, None) if kinds.is_empty() => Vec::new(),
        (None, None) => {
            return Err(CliError::Usage(format!(
                "{what} takes {} inputs: give --inputs or --random",
                kinds.len()
            )))
        }
    })
}

fn parse_inputs(list: &str, kinds: &[Kind], hooks: bool) -> Result<Vec<RtValue>, CliError> {
    let items: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.len() != kinds.len() {
        return Err(CliError::Usage(format!(
            "the trace takes {} inputs, --inputs gives {}",
            kinds.len(),
            items.len()
        )));
    }
    items
        .iter()
        .zip(kinds)
        .map(|(s, k)| {
            let bad = || CliError::Usage(format!("bad {k:?} input `{s}`"));
            Ok(match k {
                Kind::Float => RtValue::float(s.parse::<f64>().map_err(|_| bad())?),
                Kind::Ref => match *s {
                    "0" | "null" | "NULL" => RtValue::Ref(0),
                    _ if hooks => RtValue::Ref(parse_int(s).ok_or_else(bad)? as u64),
                    _ => {
                        return Err(CliError::Usage(format!(
                            "reference input `{s}`: only null can be given to a trace that runs on real memory \
                             (--hooks runs it against the interpreter's memory model)"
                        )))
                    }
                },
                _ => RtValue::Int(parse_int(s).ok_or_else(bad)?),
            })
        })
        .collect()
}

fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()? as i64,
        None => body
            .parse::<i64>()
            .ok()
            .or_else(|| body.parse::<u64>().ok().map(|u| u as i64))?,
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn random_inputs(rng: &mut Rng, kinds: &[Kind], hooks: bool) -> Vec<RtValue> {
    kinds
        .iter()
        .map(|k| match k {
            Kind::Float => RtValue::float(*rng.pick(&[0.0, -0.0, 1.0, -1.5, 0.1, 1e300, f64::INFINITY, f64::NAN, 7.0])),
            // An external object of the interpreter's model.
            Kind::Ref if hooks => RtValue::Ref(external_address(rng.next_u64())),
            Kind::Ref => RtValue::Ref(0),
            _ => RtValue::Int(trace_interp::random::special_int(rng)),
        })
        .collect()
}

pub(crate) fn show_exit(e: &Exit) -> String {
    let list = |vs: &[ExitValue]| {
        vs.iter()
            .map(|&v| match v {
                ExitValue::Hole => "None".to_string(),
                v => RtValue::from_bits(v.kind(), v.bits()).to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match e {
        Exit::Finish { values } => format!("finish({})", list(values)),
        Exit::Guard {
            guard,
            resume_key,
            values,
        } => format!("guard {guard} failed (resume key {resume_key}) [{}]", list(values)),
        Exit::ExternalJump {
            target: Some(n),
            values,
        } => format!("jump to Loop{n} ({})", list(values)),
        Exit::ExternalJump { target: None, values } => format!("jump out ({})", list(values)),
        Exit::Invalid { op } => format!("invalid at {op}"),
    }
}

/// Whether a native exit matches the interpreter's outcome: same exit, same non-reference
/// values, references agreeing on null-ness (addresses differ between the two heaps).
pub(crate) fn agree(native: &Exit, int: &Outcome) -> bool {
    let vals = |n: &[ExitValue], i: &[RtValue]| {
        n.len() == i.len()
            && n.iter().zip(i).all(|(w, v)| match v {
                RtValue::Ref(a) => (*a == 0) == (w.bits() == 0),
                other => other.bits() == w.bits(),
            })
    };
    match (native, int) {
        (Exit::Finish { values }, Outcome::Finish(w)) => vals(values, w),
        (
            Exit::Guard {
                guard,
                resume_key,
                values,
            },
            Outcome::GuardFailed {
                guard: g,
                resume_key: k,
                values: w,
            },
        ) => guard == g && resume_key == k && vals(values, w),
        (Exit::ExternalJump { target, values }, Outcome::ExternalJump { target: t, values: w }) => {
            target == t && vals(values, w)
        }
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => true,
        _ => false,
    }
}

/// Why `t` would touch memory or functions named by the trace file rather than objects it
/// allocates, if it would: a call, a reference input, a non-null reference constant, a
/// raw-memory op, or `cast_int_to_ptr`.
pub(crate) fn foreign(t: &trace_ir::Trace) -> Option<String> {
    use trace_ir::{Const, OpFlags, Opcode};
    if let Some(op) = t.ops.iter().find(|op| op.opcode.is_call()) {
        return Some(format!("it calls `{}` at an address from the trace file", op.opcode));
    }
    if t.input_kinds().contains(&Kind::Ref) {
        return Some("it takes references (objects outside the trace)".into());
    }
    for op in &t.ops {
        if op.opcode.has(OpFlags::RAW) || op.opcode == Opcode::CastIntToPtr {
            return Some(format!(
                "`{}` accesses memory at an address from the trace file",
                op.opcode
            ));
        }
        for &a in &op.args {
            if let Some(Const::Ref(addr)) = t.const_of(a) {
                if addr != 0 {
                    return Some(format!("`{}` uses a pointer constant from the trace file", op.opcode));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_ir::OpRef;

    fn invalid(promise: bool) -> Outcome {
        Outcome::Invalid {
            op: Some(OpRef::new(1)),
            reason: "shift amount 64 outside 0..64".into(),
            promise,
        }
    }

    #[test]
    fn an_invalid_original_is_refined_by_optimized_code_or_when_it_broke_a_promise() {
        let differ = || Err("different exit".to_string());
        let finish = Outcome::Finish(vec![RtValue::Int(5)]);
        assert!(matches!(Verdict::of(Ok(()), &finish, true), Verdict::Same));
        assert!(matches!(Verdict::of(differ(), &invalid(false), true), Verdict::Refines));
        assert!(matches!(Verdict::of(differ(), &invalid(true), false), Verdict::Refines));
        // Native code of the trace as written must stop at the invalid op itself.
        assert!(matches!(
            Verdict::of(differ(), &invalid(false), false),
            Verdict::Different(_)
        ));
        assert!(matches!(Verdict::of(differ(), &finish, true), Verdict::Different(_)));
        assert_eq!(Verdict::Refines.to_string(), "refines (original invalid)");
    }
}
