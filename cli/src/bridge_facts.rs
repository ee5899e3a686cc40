//! What a PyPy bridge starts from: the facts our optimizer finds, in PyPy's optimized trace
//! the bridge leaves, about the guard's fail arguments (PyPy keeps what its optimizer knew
//! on the guard's resume data, known classes and the results of loop-invariant calls among
//! it, and a bridge starts from that). The bridge's inputs are the guard's fail arguments
//! that are not `None`, in order; the facts enter the bridge as hints (`record_exact_class`,
//! `assert_not_none`, `record_int_range`, `record_int_bits`, and `record_known_result` for
//! an input that is the result of a loop-invariant or elidable call of constants), which the
//! validator assumes and the interpreter checks, as for the bridges of a trace tree
//! (`trace_ir::bridge_prologue`).

use std::collections::HashMap;
use trace_interp::RtValue;
use trace_ir::{
    jump_target, Const, FailArg, FieldValue, JumpTarget, Kind, OpRef, Opcode, Trace, TraceBuilder, Value, WordFacts,
};

/// What a bridge starts from: facts about each input, and inputs that are the results of
/// calls that change nothing.
#[derive(Clone)]
pub struct BridgeStart {
    /// One entry per input.
    pub words: Vec<WordFacts>,
    /// Inputs that are what a call returns.
    pub known: Vec<KnownResult>,
    /// Fields of inputs' objects known to hold an input or a constant.
    pub fields: Vec<KnownField>,
}

/// A field of an input's object that holds a known value where the bridge starts.
#[derive(Clone)]
pub struct KnownField {
    /// The input holding the object.
    pub object: usize,
    /// The field.
    pub descr: trace_ir::Descr,
    /// What it holds: an input (by index) or a constant.
    pub value: FieldValue,
}

/// An input that is what a loop-invariant or elidable call of constants returns.
#[derive(Clone)]
pub struct KnownResult {
    /// The input.
    pub input: usize,
    /// The call's operands and descriptor as PyPy's trace prints them
    /// (`ConstClass(f), 64, descr=<Callr 8 i EF=1 OS=5>`).
    pub text: String,
}

/// What is known about PyPy's optimized traces of one file, by their index in the file:
/// each is optimized once (a bridge from its own start, [`Parents::facts`]), and the start of
/// each bridge is found once.
#[derive(Default)]
pub struct Parents {
    optimized: HashMap<usize, Option<optimizer::Optimized>>,
    starts: HashMap<usize, Option<BridgeStart>>,
}

/// The guard a bridge section leaves (`bridge out of Guard 0x7f3d1d559880`): PyPy's guard
/// address, which the parser keeps as the guard's resume key.
fn parent_guard(pypy: &Trace) -> Option<u64> {
    let name = pypy.info.header.as_deref().unwrap_or(&pypy.info.name);
    let rest = name.split("bridge out of Guard ").nth(1)?;
    let hex = rest.split_whitespace().next()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok()
}

impl Parents {
    /// The facts about each input of the noopt bridge `traces[i]`, whose PyPy section
    /// `traces[i + 1]` names the guard it leaves; `None` when the guard's trace is not in
    /// the file or our optimizer's output does not keep the guard's fail arguments in place.
    pub fn facts(&mut self, traces: &[Trace], i: usize) -> Option<BridgeStart> {
        self.start(traces, i + 1).cloned()
    }

    /// The start of PyPy's optimized bridge `traces[b]` (see [`Parents::facts`]). The trace
    /// holding its guard is optimized from its own start when it is a bridge too, and an
    /// input of it that is a known result stays one through its fail arguments.
    fn start(&mut self, traces: &[Trace], b: usize) -> Option<&BridgeStart> {
        if !self.starts.contains_key(&b) {
            let start = self.find_start(traces, b);
            self.starts.insert(b, start);
        }
        self.starts[&b].as_ref()
    }

    fn find_start(&mut self, traces: &[Trace], b: usize) -> Option<BridgeStart> {
        let key = parent_guard(traces.get(b)?)?;
        let p = (0..b).rev().find(|&p| {
            traces[p]
                .info
                .section
                .as_deref()
                .is_some_and(|s| s.starts_with("jit-log-opt"))
                && traces[p].guards.iter().any(|g| g.resume_key == key)
        })?;
        let parent_known: Vec<Option<String>> = match self.start(traces, p) {
            Some(s) => {
                let mut k = vec![None; traces[p].num_inputs];
                for r in &s.known {
                    if let Some(x) = k.get_mut(r.input) {
                        *x = Some(r.text.clone());
                    }
                }
                k
            }
            None => Vec::new(),
        };
        if !self.optimized.contains_key(&p) {
            let parent_start = self.start(traces, p);
            let hinted = parent_start.and_then(|s| with_entry_facts(&traces[p], s));
            let t = hinted.as_ref().unwrap_or(&traces[p]);
            let out = optimizer::optimize(t, &optimizer::Options::default()).ok();
            self.optimized.insert(p, out);
        }
        let out = self.optimized[&p].as_ref()?;
        let theirs = traces[p].guards.iter().find(|g| g.resume_key == key)?;
        let ours = out.trace.guards.iter().find(|g| g.resume_key == key)?;
        let words = &out.guard_facts.iter().find(|f| f.guard == ours.id)?.words;
        if ours.fail_args.len() != theirs.fail_args.len() {
            return None;
        }
        let ours_facts = out.guard_facts.iter().find(|f| f.guard == ours.id)?;
        let mut facts = Vec::new();
        let mut known = Vec::new();
        let mut word = 0;
        // Our exit word -> the bridge input it is.
        let mut input_of = vec![None; words.len()];
        // The parent's text, printed when a call's operands are first needed.
        let mut listing = None;
        for (t, o) in theirs.fail_args.iter().zip(&ours.fail_args) {
            let f = match o {
                FailArg::Value(_) => {
                    word += 1;
                    if matches!(t, FailArg::Value(_)) {
                        if let Some(slot) = input_of.get_mut(word - 1) {
                            *slot = Some(facts.len());
                        }
                    }
                    words.get(word - 1).cloned().unwrap_or_default()
                }
                _ => WordFacts::default(),
            };
            if let FailArg::Value(v) = t {
                let source = call_source(&traces[p], *v, &parent_known, &mut Vec::new(), &mut listing);
                if let Some(text) = source.filter(|s| !s.is_empty()) {
                    known.push(KnownResult {
                        input: facts.len(),
                        text,
                    });
                }
                facts.push(f);
            }
        }
        let fields = ours_facts
            .fields
            .iter()
            .filter_map(|f| {
                let object = (*input_of.get(f.object)?)?;
                let value = match f.value {
                    FieldValue::Word(k) => FieldValue::Word((*input_of.get(k)?)?),
                    // A PyPy log names each constant pointer anew (`ptrN`), so one of another
                    // trace names nothing the bridge could compare with.
                    FieldValue::Const(Const::Ref(a)) if a != 0 => return None,
                    c => c,
                };
                let descr = out.trace.descrs.get(f.descr.index())?.clone();
                Some(KnownField { object, descr, value })
            })
            .collect();
        let inputs = traces[b].num_inputs;
        (facts.len() == inputs).then_some(BridgeStart {
            words: facts,
            known,
            fields,
        })
    }
}

/// The operands and descriptor (as printed, `ConstClass(f), 64, descr=<Callr 8 i EF=1 OS=5>`)
/// of the call of constants that changes nothing (loop-invariant or elidable effect) whose
/// result `v` in PyPy's trace `t` is: the call's result itself, an input that `inputs` (the
/// known results among the inputs of a bridge) names, or a label parameter that every
/// entry of its label passes such a result (PyPy's loop body takes the preamble's
/// `threadlocalref_get` through its label). Label parameters are followed through every
/// value their label receives (its operands and those of the jumps to it); `seen` holds the
/// parameters being followed, which a jump passing one back leaves as it is (an empty
/// string: no call found on that path yet). `listing` is `t` printed (printed here when
/// `None`).
fn call_source(
    t: &Trace,
    v: Value,
    inputs: &[Option<String>],
    seen: &mut Vec<OpRef>,
    listing: &mut Option<trace_ir::text::Listing>,
) -> Option<String> {
    let r = v.as_op()?;
    if r.index() < t.num_inputs {
        return inputs.get(r.index()).cloned().flatten();
    }
    if let Some((label, k)) = label_param(t, r) {
        if seen.contains(&r) {
            return Some(String::new());
        }
        seen.push(r);
        let mut found: Option<String> = None;
        let jumps = t
            .op_refs()
            .filter(|&j| t.op(j).opcode == Opcode::Jump && jump_target(t, j) == JumpTarget::Label(label));
        for entry in std::iter::once(label).chain(jumps) {
            let text = call_source(t, *t.op(entry).args.get(k)?, inputs, seen, listing)?;
            match &found {
                _ if text.is_empty() => {}
                Some(f) if *f != text => return None,
                _ => found = Some(text),
            }
        }
        seen.pop();
        return Some(found.unwrap_or_default());
    }
    let op = t.op(r);
    let cd = t.descr(op.descr?).as_call()?;
    let changes_nothing = cd.effect.is_elidable() || cd.effect == trace_ir::CallEffect::LoopInvariant;
    if !op.opcode.is_call() || !changes_nothing || op.opcode.result_kind() == Kind::Void {
        return None;
    }
    if !op.args.iter().all(|a| a.is_const()) {
        return None;
    }
    let name = format!("{} = {}(", value_name(t, v), op.opcode.name());
    let line = listing
        .get_or_insert_with(|| trace_ir::text::print_listing(t))
        .line_of(r)?
        .trim_start();
    let line = line.strip_prefix(&name)?;
    Some(line.strip_suffix(')')?.to_string())
}

/// The label whose `k`-th parameter `r` is.
fn label_param(t: &Trace, r: OpRef) -> Option<(OpRef, usize)> {
    if !t.op(r).opcode.is_input() || r.index() < t.num_inputs {
        return None;
    }
    let label = (0..r.index())
        .rev()
        .map(OpRef::new)
        .find(|&l| t.op(l).opcode == Opcode::Label)?;
    let k = r.index() - label.index() - 1;
    (k < t.op(label).args.len()).then_some((label, k))
}

/// How the printer names op result `v` (its kind's letter and its index).
fn value_name(t: &Trace, v: Value) -> String {
    let letter = match t.kind_of(v) {
        Kind::Int => 'i',
        Kind::Ref => 'p',
        Kind::Float => 'f',
        Kind::Void => 'v',
    };
    format!("{letter}{}", v.as_op().map_or(0, |r| r.index()))
}

/// `t` with hints stating `facts` about its inputs before its first op (`None` if the
/// result does not parse back, which a well-formed trace never causes).
pub fn with_entry_facts(t: &Trace, start: &BridgeStart) -> Option<Trace> {
    if start.words.iter().all(WordFacts::is_empty) && start.known.is_empty() && start.fields.is_empty() {
        return None;
    }
    let mut b = TraceBuilder::new();
    let inputs: Vec<_> = t.input_kinds().into_iter().map(|k| b.input(k)).collect();
    for (f, &x) in start.words.iter().zip(&inputs) {
        f.record(x, &mut b);
    }
    for f in &start.fields {
        let value = match f.value {
            FieldValue::Word(k) => *inputs.get(k)?,
            FieldValue::Const(c) => b.constant(c),
        };
        let d = b.descr(f.descr.clone());
        b.op_with_descr(Opcode::RecordKnownField, &[*inputs.get(f.object)?, value], d);
    }
    b.finish(&[]);
    let printed = trace_ir::print_trace(&b.build_unverified());
    let mut hints: Vec<String> = printed
        .lines()
        .skip_while(|l| !l.starts_with('['))
        .skip(1)
        .filter(|l| !l.starts_with("finish("))
        .map(str::to_string)
        .collect();
    for k in &start.known {
        let x = *inputs.get(k.input)?;
        hints.push(format!("record_known_result({}, {})", value_name(t, x), k.text));
    }
    let text = trace_ir::print_trace(t);
    let mut out = String::with_capacity(text.len() + 64 * hints.len());
    let mut done = false;
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if !done && line.starts_with('[') {
            for h in &hints {
                out.push_str(h);
                out.push('\n');
            }
            done = true;
        }
    }
    let mut hinted = trace_ir::parse_trace(&out).ok()?;
    hinted.info = t.info.clone();
    Some(hinted)
}

/// Move the integer inputs into what the facts say of them where they are not (the known
/// bits set, then a value outside the range wrapped into it), so that the interpreter runs
/// a bridge on inputs its guard can give it. (An input a call returns needs nothing: the
/// call then returns it in the run.)
pub fn satisfy(start: &BridgeStart, inputs: &mut [RtValue]) {
    for (f, x) in start.words.iter().zip(inputs.iter_mut()) {
        let RtValue::Int(v) = x else { continue };
        let mut v = *v;
        if let Some((mask, bits)) = f.bits {
            v = ((v as u64 & !mask) | (bits & mask)) as i64;
        }
        if let Some((lo, hi)) = f.range {
            if v < lo || v > hi {
                let span = hi as i128 - lo as i128 + 1;
                v = (lo as i128 + (v as i128).rem_euclid(span)) as i64;
            }
        }
        *x = RtValue::Int(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop PyPy optimized, then a bridge out of its second guard (noopt and optimized).
    const LOG: &str = "[1a] {jit-log-opt-loop
# Loop 1 (f) : loop with 6 ops
[p0, i1]
guard_class(p0, 4096, descr=<Guard0x1000>) [p0, i1]
i2 = int_lt(i1, 10)
i3 = int_and(i1, 15)
p4 = call_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
guard_true(i2, descr=<Guard0x2000>) [p0, None, i3, p4]
finish()
[1b] jit-log-opt-loop}
[2a] {jit-log-noopt
# Traced loop or bridge with 5 ops
[p0, i1, p2]
guard_class(p0, 4096, descr=<Guard0>) [p0, i1]
p3 = call_loopinvariant_r(ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>)
i4 = getfield_gc_i(p3, descr=<FieldS a 8>)
i5 = int_add(i1, i4)
finish(i5)
[2b] jit-log-noopt}
[3a] {jit-log-opt-bridge
# bridge out of Guard 0x2000 with 2 ops
[p0, i1, p2]
i3 = getfield_gc_i(p2, descr=<FieldS a 8>)
i4 = int_add(i1, i3)
finish(i4)
[3b] jit-log-opt-bridge}
";

    #[test]
    fn a_bridge_starts_from_what_is_known_where_its_guard_fails() {
        let traces = trace_ir::parse_file(LOG).unwrap();
        let start = Parents::default().facts(&traces, 1).expect("the parent guard is found");
        // The class its earlier guard checked; the bounds of a masked value; the result of
        // a loop-invariant call.
        assert_eq!(start.words[0].class, Some(4096));
        assert_eq!(start.words[1].range, Some((0, 15)));
        assert_eq!(start.known.len(), 1);
        assert_eq!(start.known[0].input, 2);
        assert_eq!(start.known[0].text, "ConstClass(tl), 64, descr=<Callr 8 i EF=1 OS=5>");
        let hinted = with_entry_facts(&traces[1], &start).unwrap();
        let opcodes: Vec<Opcode> = hinted.ops.iter().map(|o| o.opcode).collect();
        for hint in [
            Opcode::RecordExactClass,
            Opcode::RecordIntRange,
            Opcode::RecordKnownResult,
        ] {
            assert!(opcodes.contains(&hint), "{opcodes:?}");
        }
        assert_eq!(hinted.info.name, traces[1].info.name);
        // The bridge's own class check is known to pass, its call is its input.
        let out = optimizer::optimize(&hinted, &optimizer::Options::default()).unwrap();
        assert!(out
            .trace
            .ops
            .iter()
            .all(|o| o.opcode != Opcode::GuardClass && !o.opcode.is_call()));
        // Inputs the guard cannot give are moved into what is known, and they run as the
        // optimized bridge does.
        let mut inputs = vec![RtValue::Ref(0x1000), RtValue::Int(300), RtValue::Ref(0x2000)];
        satisfy(&start, &mut inputs);
        assert!(
            matches!(inputs[1], RtValue::Int(v) if (0..=15).contains(&v)),
            "{inputs:?}"
        );
        let cfg = trace_interp::RunConfig::default();
        let a = trace_interp::run(&hinted, &inputs, &cfg);
        let b = trace_interp::run(&out.trace, &inputs, &cfg);
        assert!(matches!(a.outcome, trace_interp::Outcome::Finish(_)), "{}", a.outcome);
        trace_interp::runs_equivalent(&hinted, &out.trace, &inputs, &cfg, &a, &b).unwrap();
    }

    #[test]
    fn a_bridge_whose_guard_is_not_in_the_file_starts_from_nothing() {
        let text = LOG.replace("Guard 0x2000", "Guard 0x3000");
        let traces = trace_ir::parse_file(&text).unwrap();
        assert!(Parents::default().facts(&traces, 1).is_none());
        let nothing = BridgeStart {
            words: vec![WordFacts::default(); 3],
            known: Vec::new(),
            fields: Vec::new(),
        };
        assert!(with_entry_facts(&traces[1], &nothing).is_none());
    }
}
