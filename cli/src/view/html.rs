//! The HTML of the viewer: the page (inline style and script), the index of traces, and per
//! trace the two op tables side by side. Every piece of trace text is escaped.

use super::chart;
use super::model::{op_lines, Code, TraceView};
use crate::opcount::Counts;
use optimizer::{Fate, Optimized, Reason};
use std::fmt::Write;
use trace_ir::text::const_to_string;
use trace_ir::{print_trace, GuardId, Opcode, Trace, ValueData};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// `s` with `&`, `<`, `>`, `"` and `'` escaped (for text and attribute values alike).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page.
pub fn page(title: &str, views: &[TraceView]) -> String {
    let mut s = String::with_capacity(1 << 16);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>tracejit view: {t}</title><style>{STYLE}</style></head>\n<body>\n<header>\
         <h1>tracejit view: <span class=\"file\">{t}</span></h1>",
        t = esc(title)
    );
    summary(&mut s, views);
    s.push_str(
        "<div class=\"controls\"><input id=\"filter\" type=\"search\" \
         placeholder=\"filter ops: text, reason, rule (e.g. cse, guard_known, add_zero)\" \
         aria-label=\"filter ops\"> <button type=\"button\" id=\"expand\">expand all</button> \
         <button type=\"button\" id=\"collapse\">collapse all</button> <span id=\"filter-count\"></span></div>",
    );
    s.push_str(LEGEND);
    s.push_str("</header>\n<main>\n");
    for v in views {
        trace_section(&mut s, v);
    }
    let _ = write!(s, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
    s
}

/// How to read the tables (also shown without the script).
const LEGEND: &str = "<details class=\"legend\"><summary>how to read this page</summary><p>Each \
trace shows the recorded ops (left) beside the optimized ops (right). The <b>fate</b> column \
says what became of a recorded op: <span class=\"badge kept\">kept</span> as optimized op #N, or \
removed for a reason: <span class=\"badge r-folded\">folded</span> (constant operands), \
<span class=\"badge r-bounds_constant\">bounds_constant</span> (the integer bounds make it a \
constant), <span class=\"badge r-rule\">rule</span> (a peephole rule, named), <span class=\"badge \
r-cse\">cse</span> (same as an earlier op), <span class=\"badge r-guard_known\">guard_known</span> \
(the guard's condition is already known), <span class=\"badge r-overflow\">overflow</span> (an \
overflow guard of an op that cannot overflow), <span class=\"badge r-virtual_alloc\">virtual_alloc</span> \
and <span class=\"badge r-virtual_access\">virtual_access</span> (allocation removal), \
<span class=\"badge r-heap_cache\">heap_cache</span>, <span class=\"badge \
r-redundant_write\">redundant_write</span>, <span class=\"badge r-dead_store\">dead_store</span>, \
<span class=\"badge r-hint\">hint</span>, <span class=\"badge r-dead\">dead</span> (unused). \
<code>= X</code> is the value that replaces the op's result in the optimized trace. Click an op \
to highlight what it became (or, on the right, where it came from). The code column lists the \
x86-64 instructions of each optimized op (offsets from the start of the trace's code).</p></details>";

/// The totals and the index of traces.
fn summary(s: &mut String, views: &[TraceView]) {
    let (mut input, mut ours, mut pypy) = (Counts::default(), Counts::default(), Counts::default());
    let mut paired = 0;
    for v in views {
        let (i, o, p) = v.counts();
        input.add(&i);
        ours.add(&o.unwrap_or(i));
        if let Some(p) = p {
            pypy.add(&p);
            paired += 1;
        }
    }
    let pypy_txt = if paired > 0 {
        format!(", PyPy {} ({paired} traces paired)", pypy.total)
    } else {
        String::new()
    };
    let _ = write!(
        s,
        "<p class=\"totals\">{} trace{}: {} recorded ops, {} optimized{pypy_txt}</p>",
        views.len(),
        if views.len() == 1 { "" } else { "s" },
        input.total,
        ours.total
    );
    if paired > 0 {
        s.push_str(&chart::bars("chart-total", [Some(&input), Some(&ours), Some(&pypy)]));
    }
    s.push_str(
        "<details class=\"index\" open><summary>traces</summary><table class=\"index\"><thead><tr>\
         <th>trace</th><th>recorded</th><th>optimized</th><th>PyPy</th></tr></thead><tbody>",
    );
    for v in views {
        let (i, o, p) = v.counts();
        let _ = write!(
            s,
            "<tr><td><a href=\"#t{k}\">{name}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i.total,
            o.map_or("error".to_string(), |c| c.total.to_string()),
            p.map_or(String::new(), |c| c.total.to_string()),
            k = v.index,
            name = esc(&v.name())
        );
    }
    s.push_str("</tbody></table></details>");
}

/// One trace: header, statistics, chart, the two tables, extra code and PyPy's version.
fn trace_section(s: &mut String, v: &TraceView) {
    let k = v.index;
    let (i, o, p) = v.counts();
    let counts = match (o, p) {
        (Some(o), Some(p)) => format!("{} → {} ops (PyPy {})", i.total, o.total, p.total),
        (Some(o), None) => format!("{} → {} ops", i.total, o.total),
        (None, _) => format!("{} ops, not optimized", i.total),
    };
    let _ = write!(
        s,
        "<section class=\"trace\" id=\"t{k}\" data-name=\"{name}\"><details class=\"trace-d\" open>\
         <summary><span class=\"tname\">{name}</span> <span class=\"tcounts\">{counts}</span></summary>\
         <div class=\"tbody\">",
        name = esc(&v.name())
    );
    s.push_str("<div class=\"thead\"><div>");
    match &v.optimized {
        Err(e) => {
            let _ = write!(s, "<p class=\"error\">optimizer: {}</p>", esc(e));
        }
        Ok(opt) => stats_line(s, opt),
    }
    if let (Ok(opt), Some(pt)) = (&v.optimized, v.pypy) {
        let _ = write!(
            s,
            "<p class=\"periter\">per iteration (after the last label): ours {}, PyPy {}</p>",
            Counts::per_iteration(&opt.trace).total,
            Counts::per_iteration(pt).total
        );
    }
    runs_line(s, v);
    if let Some((j, parent)) = &v.parent {
        let _ = write!(
            s,
            "<p class=\"bridge-of\">{} of <a href=\"#t{j}\">{}</a></p>",
            esc(v.input.info.header.as_deref().unwrap_or_default()),
            esc(parent)
        );
    }
    s.push_str("</div>");
    if let (Some(o), Some(p)) = (o, p) {
        s.push_str(&chart::bars(&format!("chart-t{k}"), [Some(&i), Some(&o), Some(&p)]));
    }
    s.push_str("</div>");
    s.push_str("<div class=\"cols\">");
    input_table(s, v);
    if let Ok(opt) = &v.optimized {
        output_table(s, v, opt);
    }
    s.push_str("</div>");
    code_extra(s, v);
    if let Some(p) = v.pypy {
        let _ = write!(
            s,
            "<details class=\"pypy\"><summary>PyPy's optimized trace ({}, {} ops)</summary><pre>{}</pre></details>",
            esc(p.info.section.as_deref().unwrap_or("")),
            p.num_real_ops(),
            esc(&print_trace(p))
        );
    }
    s.push_str("</div></details></section>\n");
}

/// The exits of the sample runs (`--runs`).
fn runs_line(s: &mut String, v: &TraceView) {
    let Some((rec, opt)) = &v.runs else { return };
    let n: usize = rec.guards.values().sum::<usize>() + rec.other.values().sum::<usize>();
    let _ = write!(
        s,
        "<p class=\"runs\">exits of {n} runs in the reference interpreter (guided random inputs): \
         recorded: {}; optimized: {}</p>",
        esc(&rec.summary()),
        esc(&opt.as_ref().map_or("not optimized".to_string(), |t| t.summary()))
    );
}

/// What a guard row shows besides its fate: how many sample runs failed it, and a link to
/// the bridge out of it.
fn guard_extra(v: &TraceView, g: GuardId, optimized: bool) -> String {
    let mut h = String::new();
    if let Some(n) = v.failures(g, optimized) {
        let _ = write!(
            h,
            " <span class=\"fails{}\" title=\"sample runs that failed this guard\">failed {n}</span>",
            if n > 0 { " hot" } else { "" }
        );
    }
    for &(_, k) in v.bridges.iter().filter(|(b, _)| *b == g) {
        let _ = write!(h, " <a class=\"bridge\" href=\"#t{k}\">bridge</a>");
    }
    h
}

/// Removals by reason and rule firings of one trace.
fn stats_line(s: &mut String, opt: &Optimized) {
    s.push_str("<p class=\"why\">");
    if opt.stats.removed.is_empty() {
        s.push_str("nothing removed");
    }
    for (r, n) in &opt.stats.removed {
        let _ = write!(s, "<span class=\"badge r-{r}\">{r} {n}</span> ", r = r.name());
    }
    if !opt.stats.rules.is_empty() {
        s.push_str(" rules:");
        for (name, n) in &opt.stats.rules {
            let _ = write!(s, " <span class=\"rule\">{} {n}</span>", esc(name));
        }
    }
    s.push_str("</p>");
}

/// The recorded ops with their fates.
fn input_table(s: &mut String, v: &TraceView) {
    let k = v.index;
    let (header, lines) = op_lines(v.input);
    let _ = write!(
        s,
        "<div class=\"col\"><h3>recorded</h3><table class=\"ops in-ops\"><thead><tr><th>#</th>\
         <th>op</th><th>fate</th></tr></thead><tbody><tr class=\"inputs\"><td></td><td><code>{}</code></td>\
         <td>inputs</td></tr>",
        esc(&header)
    );
    let opt = v.optimized.as_ref().ok();
    let fates = opt.and_then(|o| o.explanation.as_ref()).map(|e| &e.fates);
    for (i, line) in lines.iter().enumerate() {
        let Some(line) = line else { continue };
        let fate = fates.and_then(|f| f.get(i)).copied();
        let class = match fate {
            Some(Fate::Kept(_)) => "kept".to_string(),
            Some(Fate::Removed { reason, .. }) => format!("removed r-{}", reason.name()),
            Some(Fate::Unaccounted) | None => "unknown".to_string(),
        };
        let to: Vec<String> = v.outputs_of(i).iter().map(|o| format!("t{k}-o{o}")).collect();
        let gid = v.input.ops[i].guard.map(|g| v.input.guard(g).id);
        let guard = gid.map(|g| format!(" data-guard=\"{g}\"")).unwrap_or_default();
        let extra = gid.map(|g| guard_extra(v, g, false)).unwrap_or_default();
        let _ = write!(
            s,
            "<tr id=\"t{k}-i{i}\" class=\"op in {class}\" data-to=\"{}\"{guard}><td class=\"n\">{i}</td>\
             <td class=\"txt\"><code>{}</code></td><td class=\"fate\">{}{extra}</td></tr>",
            to.join(" "),
            esc(line),
            fate.map_or("—".to_string(), |f| {
                fate_html(f, v.input.ops[i].opcode, opt.map(|o| &o.trace))
            })
        );
    }
    s.push_str("</tbody></table></div>");
}

/// The fate of one recorded op, as the table shows it.
fn fate_html(f: Fate, recorded: Opcode, out: Option<&Trace>) -> String {
    match f {
        Fate::Kept(o) => {
            let mut h = format!("<span class=\"badge kept\">kept</span> #{}", o.index());
            // an op kept in another form (an `_ovf` op that cannot overflow)
            match out.and_then(|t| t.ops.get(o.index())) {
                Some(op) if op.opcode != recorded => {
                    let _ = write!(h, " as <code>{}</code>", op.opcode.name());
                }
                _ => {}
            }
            h
        }
        Fate::Removed { reason, rule, value } => {
            let mut h = format!("<span class=\"badge r-{r}\">{r}</span>", r = reason.name());
            if let Some(rule) = rule {
                let _ = write!(h, " <span class=\"rule\">{}</span>", esc(rule));
            }
            let shown = match (value.map(|v| v.data()), out) {
                (Some(ValueData::Op(o)), _) => Some(format!("#{}", o.index())),
                (Some(ValueData::Const(c)), Some(t)) => Some(const_to_string(t.consts.get(c), t.consts.name(c))),
                _ => None,
            };
            if let Some(x) = shown {
                let _ = write!(h, " = <code>{}</code>", esc(&x));
            }
            if reason == Reason::Dead {
                h.push_str(" (unused)");
            }
            h
        }
        Fate::Unaccounted => "<span class=\"badge unknown\">?</span>".to_string(),
    }
}

/// The optimized ops with where they came from and their code.
fn output_table(s: &mut String, v: &TraceView, opt: &Optimized) {
    let k = v.index;
    let (header, lines) = op_lines(&opt.trace);
    // per output op: the recorded ops that lead to it
    let mut from: Vec<Vec<usize>> = vec![Vec::new(); opt.trace.ops.len()];
    for i in 0..v.input.ops.len() {
        for o in v.outputs_of(i) {
            from[o].push(i);
        }
    }
    let code_head = if matches!(v.code, Code::Compiled { .. }) {
        "<th>code</th>"
    } else {
        ""
    };
    let _ = write!(
        s,
        "<div class=\"col\"><h3>optimized</h3><table class=\"ops out-ops\"><thead><tr><th>#</th>\
         <th>op</th><th>from</th>{code_head}</tr></thead><tbody><tr class=\"inputs\"><td></td>\
         <td><code>{}</code></td><td>inputs</td>{}</tr>",
        esc(&header),
        if code_head.is_empty() { "" } else { "<td></td>" }
    );
    for (o, line) in lines.iter().enumerate() {
        let Some(line) = line else { continue };
        let ids: Vec<String> = from[o].iter().map(|i| format!("t{k}-i{i}")).collect();
        let nums: Vec<String> = from[o].iter().map(|i| format!("#{i}")).collect();
        let extra = opt.trace.ops[o]
            .guard
            .map(|g| guard_extra(v, opt.trace.guard(g).id, true))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<tr id=\"t{k}-o{o}\" class=\"op out\" data-from=\"{}\"><td class=\"n\">{o}</td>\
             <td class=\"txt\"><code>{}</code></td><td class=\"from\">{}{extra}</td>",
            ids.join(" "),
            esc(line),
            nums.join(" ")
        );
        if let Code::Compiled { per_op, .. } = &v.code {
            let ins = per_op.get(o).map(Vec::as_slice).unwrap_or(&[]);
            if ins.is_empty() {
                s.push_str("<td class=\"asm\"></td>");
            } else {
                let _ = write!(
                    s,
                    "<td class=\"asm\"><details class=\"asm\"><summary>{} insn</summary><pre>{}</pre></details></td>",
                    ins.len(),
                    esc(&ins.join("\n"))
                );
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
}

/// The code outside the ops (prologue, exit stubs), or why there is none.
fn code_extra(s: &mut String, v: &TraceView) {
    match &v.code {
        Code::None => {}
        Code::Failed(e) => {
            let _ = write!(s, "<p class=\"error\">backend: {}</p>", esc(e));
        }
        Code::Compiled {
            size, prologue, stubs, ..
        } => {
            let _ = write!(
                s,
                "<details class=\"code-extra\"><summary>{size} bytes of code: prologue ({} insn), \
                 exit stubs and epilogue ({} insn)</summary><pre>; prologue\n{}\n; exit stubs and epilogue\n{}</pre></details>",
                prologue.len(),
                stubs.len(),
                esc(&prologue.join("\n")),
                esc(&stubs.join("\n"))
            );
        }
    }
}
