//! The printer: a [`Trace`] in PyPy's syntax (see the `text` module documentation).

use super::descr_text::descr_to_string;
use crate::entity::{OpRef, Value, ValueData};
use crate::opcode::{Kind, Opcode};
use crate::trace::{symbol_address, Const, FailArg, GuardData, Trace, VirtualField, VirtualKind};
use std::fmt::{self, Write};

/// Print a trace in the text format: the inputs line, then one op per line. Printing never
/// fails; references that are out of range (only possible in unverified traces) print as
/// `?op7`, `?const3`, `?descr2`. A guard prints its `<GuardN>` descriptor; a table
/// descriptor attached to a guard op as well (which the verifier allows) is not printed.
pub fn print_trace(trace: &Trace) -> String {
    Printer::new(trace).print().text
}

/// A trace's printed text with the line each op is on: the one numbering of values that
/// every view of a trace shares (the printed trace, the disassembly, debuggers' line
/// tables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The text, as [`print_trace`] prints it.
    pub text: String,
    /// For each op of the trace, the 0-based line of `text` it is printed on (inputs on
    /// the inputs line, label parameters on their label's line).
    pub op_lines: Vec<u32>,
}

impl Listing {
    /// The line op `op` is printed on, without its line break.
    pub fn line_of(&self, op: OpRef) -> Option<&str> {
        let n = *self.op_lines.get(op.index())? as usize;
        self.text.lines().nth(n)
    }
}

/// Print `trace` like [`print_trace`], with the line of each op.
pub fn print_listing(trace: &Trace) -> Listing {
    Printer::new(trace).print()
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_trace(self))
    }
}

/// Whether `name` can be printed inside `ConstClass(...)`/`ConstPtr(...)` and read back.
fn is_plain_symbol(name: &str) -> bool {
    !name.is_empty()
        && name != "null"
        && !name.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+')
        && !name.chars().any(|c| c.is_whitespace() || "()[]{}<>,;=".contains(c))
}

/// The text of a constant.
pub fn const_to_string(c: Const, name: Option<&str>) -> String {
    match (c, name) {
        (Const::Int(v), None) => v.to_string(),
        (Const::Int(v), Some(n)) => {
            if is_plain_symbol(n) && v as u64 == symbol_address(n) {
                format!("ConstClass({n})")
            } else {
                format!("ConstClass({n}={v})")
            }
        }
        (Const::Ref(0), None) => "ConstPtr(null)".to_string(),
        (Const::Ref(a), None) => format!("ConstPtr(0x{a:x})"),
        (Const::Ref(a), Some(n)) => {
            if is_plain_symbol(n) && a == symbol_address(n) {
                format!("ConstPtr({n})")
            } else {
                format!("ConstPtr({n}=0x{a:x})")
            }
        }
        (Const::Float(bits), None) => {
            let f = f64::from_bits(bits);
            if f.is_finite() {
                format!("{f:?}")
            } else {
                format!("ConstFloat(0x{bits:016x})")
            }
        }
        (Const::Float(bits), Some(n)) => format!("ConstFloat({n}=0x{bits:016x})"),
    }
}

struct Printer<'t> {
    trace: &'t Trace,
    names: Vec<String>,
    /// Per label op index: whether its parameters are printed with an explicit `-> [...]`.
    arrow: Vec<bool>,
}

/// Every op value referenced by op `i` (operands, fail arguments, virtual fields).
fn refs_of(trace: &Trace, i: usize, mut f: impl FnMut(OpRef)) {
    trace.ops[i].for_each_value_read(&trace.guards, |v| {
        if let Some(o) = v.as_op() {
            f(o);
        }
    });
}

impl<'t> Printer<'t> {
    fn new(trace: &'t Trace) -> Printer<'t> {
        let n = trace.ops.len();
        // Last position referencing each op.
        let mut last_ref = vec![0usize; n];
        for i in 0..n {
            refs_of(trace, i, |o| {
                if o.index() < n {
                    last_ref[o.index()] = last_ref[o.index()].max(i);
                }
            });
        }
        let mut names: Vec<String> = Vec::with_capacity(n);
        let mut arrow = vec![false; n];
        let mut params_left = 0usize;
        let mut label_args: Vec<Value> = Vec::new();
        let mut shadow = false;
        for (i, op) in trace.ops.iter().enumerate() {
            let prefix = op.opcode.result_kind().prefix();
            let own = format!("{prefix}{i}");
            if op.opcode.is_input() && params_left > 0 {
                let k = label_args.len() - params_left;
                params_left -= 1;
                let name = match label_args[k].as_op() {
                    Some(o) if shadow && o.index() < i => names[o.index()].clone(),
                    _ => own,
                };
                names.push(name);
                continue;
            }
            params_left = 0;
            if op.opcode == Opcode::Label {
                let args: Vec<Value> = op.args.to_vec();
                let mut seen = std::collections::HashSet::new();
                shadow = args.iter().all(|a| match a.as_op() {
                    Some(o) => o.index() < i && seen.insert(o) && last_ref[o.index()] <= i,
                    None => false,
                });
                // The parameters must follow the label for shadowing to make sense.
                let params_ok = (0..args.len()).all(|k| trace.ops.get(i + 1 + k).is_some_and(|p| p.opcode.is_input()));
                shadow &= params_ok;
                arrow[i] = !shadow;
                params_left = args.len();
                label_args = args;
            }
            names.push(own);
        }
        Printer { trace, names, arrow }
    }

    fn value(&self, out: &mut String, v: Value) {
        match v.data() {
            ValueData::Op(o) => match self.names.get(o.index()) {
                Some(n) => out.push_str(n),
                None => {
                    let _ = write!(out, "?{o}");
                }
            },
            ValueData::Const(c) => {
                if c.index() < self.trace.consts.len() {
                    out.push_str(&const_to_string(self.trace.consts.get(c), self.trace.consts.name(c)));
                } else {
                    let _ = write!(out, "?{c}");
                }
            }
        }
    }

    fn fail_arg(&self, out: &mut String, fa: &FailArg) {
        match fa {
            FailArg::Value(v) => self.value(out, *v),
            FailArg::Virtual(k) => {
                let _ = write!(out, "${k}");
            }
            FailArg::Hole => out.push_str("None"),
        }
    }

    fn descr(&self, out: &mut String, d: crate::entity::DescrRef) {
        match self.trace.descrs.get(d.index()) {
            Some(d) => out.push_str(&descr_to_string(d)),
            None => {
                let _ = write!(out, "?{d}");
            }
        }
    }

    fn guard_suffix(&self, out: &mut String, g: &GuardData) {
        out.push_str(" [");
        for (k, fa) in g.fail_args.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            self.fail_arg(out, fa);
        }
        out.push(']');
        if g.virtuals.is_empty() && g.writes.is_empty() {
            return;
        }
        out.push_str(" {");
        for (k, v) in g.virtuals.iter().enumerate() {
            if k > 0 {
                out.push_str("; ");
            }
            let _ = write!(out, "${k} = ");
            match v.kind {
                VirtualKind::Struct { opcode, descr } => {
                    let _ = write!(out, "{}(descr=", opcode.name());
                    self.descr(out, descr);
                    out.push(')');
                }
                VirtualKind::Array { opcode, descr, len } => {
                    let _ = write!(out, "{}({len}, descr=", opcode.name());
                    self.descr(out, descr);
                    out.push(')');
                }
                VirtualKind::Str { opcode, len } => {
                    let _ = write!(out, "{}({len})", opcode.name());
                }
            }
            for (j, (field, fa)) in v.fields.iter().enumerate() {
                out.push_str(if j == 0 { " " } else { ", " });
                match field {
                    VirtualField::Field(d) => self.descr(out, *d),
                    VirtualField::Item(i) => {
                        let _ = write!(out, "[{i}]");
                    }
                }
                out.push_str(": ");
                self.fail_arg(out, fa);
            }
        }
        for (k, w) in g.writes.iter().enumerate() {
            if k > 0 || !g.virtuals.is_empty() {
                out.push_str("; ");
            }
            out.push_str(if w.index.is_some() {
                "setarrayitem_gc("
            } else {
                "setfield_gc("
            });
            self.value(out, w.obj);
            if let Some(i) = w.index {
                let _ = write!(out, ", {i}");
            }
            out.push_str(", ");
            self.fail_arg(out, &w.value);
            out.push_str(", descr=");
            self.descr(out, w.descr);
            out.push(')');
        }
        out.push('}');
    }

    fn print(&self) -> Listing {
        let t = self.trace;
        let mut out = String::new();
        let mut op_lines = Vec::with_capacity(t.ops.len());
        let mut line = 0u32;
        if t.aliasing != crate::trace::Aliasing::default() {
            let _ = writeln!(out, "aliasing {}", t.aliasing.name());
            line += 1;
        }
        op_lines.resize(t.num_inputs.min(t.ops.len()), line);
        out.push('[');
        for i in 0..t.num_inputs.min(t.ops.len()) {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&self.names[i]);
        }
        out.push_str("]\n");
        let mut params_left = 0usize;
        for i in t.num_inputs.min(t.ops.len())..t.ops.len() {
            let op = &t.ops[i];
            if op.opcode.is_input() && params_left > 0 {
                params_left -= 1;
                // On its label's line.
                op_lines.push(line);
                continue;
            }
            params_left = 0;
            line += 1;
            op_lines.push(line);
            if op.opcode.is_input() {
                // A stray input op (unverified trace): show it so nothing is hidden.
                let _ = writeln!(out, "{} = {}()", self.names[i], op.opcode.name());
                continue;
            }
            if op.opcode.result_kind() != Kind::Void {
                let _ = write!(out, "{} = ", self.names[i]);
            }
            out.push_str(op.opcode.name());
            out.push('(');
            for (k, &a) in op.args.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                self.value(&mut out, a);
            }
            let guard = op.guard.and_then(|g| t.guards.get(g.index()));
            let sep = if op.args.is_empty() { "" } else { ", " };
            if let Some(g) = guard {
                let _ = write!(out, "{sep}descr=<{}", g.id);
                if g.resume_key != g.id.0 as u64 {
                    if g.resume_key >= 1 << 16 {
                        let _ = write!(out, " key=0x{:x}", g.resume_key);
                    } else {
                        let _ = write!(out, " key={}", g.resume_key);
                    }
                }
                out.push('>');
            } else if let Some(d) = op.descr {
                out.push_str(sep);
                out.push_str("descr=");
                self.descr(&mut out, d);
            }
            out.push(')');
            if let Some(g) = guard {
                self.guard_suffix(&mut out, g);
            }
            if op.opcode == Opcode::Label {
                params_left = op.args.len();
                if self.arrow[i] && !op.args.is_empty() {
                    out.push_str(" -> [");
                    for k in 0..op.args.len() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        match self.names.get(i + 1 + k) {
                            Some(n) => out.push_str(n),
                            None => out.push('?'),
                        }
                    }
                    out.push(']');
                }
            }
            out.push('\n');
        }
        Listing { text: out, op_lines }
    }
}
