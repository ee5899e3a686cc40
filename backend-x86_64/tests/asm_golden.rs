//! Assembly golden tests: a trace in the text format in, the annotated disassembly of its
//! compiled code out, compared with the expectation kept in the same file
//! (`tests/golden/NAME.txt`). Needs the `disasm` feature (iced-x86):
//! `cargo test -p backend-x86_64 --features disasm --test asm_golden`.
//!
//! A golden file is the trace (with `#` comment lines, which the parser skips; a line
//! `# options: ...` sets compile options: `hooks`, `int_regs=N`, `float_regs=N`), then a line
//! `==== code`, then the listing: each op of the trace as printed by `trace_ir::print_trace`
//! (as a `;` comment; values are named by op position) followed by its instructions, offsets
//! from 0. Addresses the code embeds (trampolines, data the compiled trace keeps) differ
//! between builds and runs: a 64-bit immediate that looks like a user-space address (2^40 up
//! to 2^47) and is not a constant of the trace prints as `<address>`.
//!
//! `BLESS=1 cargo test -p backend-x86_64 --features disasm --test asm_golden` rewrites every
//! listing that no longer matches with the current output; review the change with `git diff`.
#![cfg(feature = "disasm")]

use backend_x86_64::{compile, CompileOptions, MemoryAccess};
use iced_x86::{
    Decoder, DecoderOptions, Formatter, FormatterOutput, FormatterTextKind, Instruction, IntelFormatter, NumberKind,
    OpKind,
};
use std::collections::HashSet;
use std::fmt::Write;
use std::path::PathBuf;
use trace_ir::Trace;

/// The line between the trace and its expected listing.
const SEPARATOR: &str = "==== code";

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compile options from the `# options:` comment lines of a golden file.
fn options(header: &str) -> CompileOptions {
    let mut o = CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    };
    for line in header.lines() {
        let Some(rest) = line.trim().strip_prefix("# options:") else {
            continue;
        };
        for word in rest.split_whitespace() {
            match word.split_once('=') {
                None if word == "hooks" => o.memory = MemoryAccess::Hooks,
                Some(("int_regs", n)) => o.int_regs = n.parse().expect("int_regs=N"),
                Some(("float_regs", n)) => o.float_regs = n.parse().expect("float_regs=N"),
                _ => panic!("unknown option `{word}`"),
            }
        }
    }
    o
}

/// Formatter output that prints the 64-bit immediates that are addresses (see the module
/// documentation) as `<address>`; `consts` are the bits of the trace's constants.
struct Masked<'a> {
    out: &'a mut String,
    consts: &'a HashSet<u64>,
}

impl FormatterOutput for Masked<'_> {
    fn write(&mut self, text: &str, _kind: FormatterTextKind) {
        self.out.push_str(text);
    }
    fn write_number(
        &mut self,
        ins: &Instruction,
        _operand: u32,
        instruction_operand: Option<u32>,
        text: &str,
        value: u64,
        _number_kind: NumberKind,
        _kind: FormatterTextKind,
    ) {
        let imm64 = instruction_operand.is_some_and(|k| ins.op_kind(k) == OpKind::Immediate64);
        if imm64 && (1 << 40..=1 << 47).contains(&value) && !self.consts.contains(&value) {
            self.out.push_str("<address>");
        } else {
            self.out.push_str(text);
        }
    }
}

/// The instructions of `code[range]`, one a line, at their offsets in `code`.
fn disassemble(code: &[u8], range: std::ops::Range<usize>, consts: &HashSet<u64>, out: &mut String) {
    let mut dec = Decoder::with_ip(64, &code[range.clone()], range.start as u64, DecoderOptions::NONE);
    let mut fmt = IntelFormatter::new();
    let mut text = String::new();
    while dec.can_decode() {
        let ins = dec.decode();
        text.clear();
        fmt.format(&ins, &mut Masked { out: &mut text, consts });
        let _ = writeln!(out, "{:5x}  {text}", ins.ip());
    }
}

/// The annotated listing of `t` compiled with `opts`.
fn listing(t: &Trace, opts: &CompileOptions) -> String {
    let code = match compile(t, opts) {
        Ok(c) => c,
        Err(e) => return format!("error: {e}\n"),
    };
    // Each op as the printed trace shows it.
    let printed = trace_ir::print_listing(t);
    let consts: HashSet<u64> = t.consts.iter().map(|c| c.bits()).collect();
    let bytes = code.code();
    let mut out = String::from("; prologue\n");
    let mut last = 0;
    for (op, range) in code.op_ranges() {
        disassemble(bytes, last..range.start, &consts, &mut out);
        let _ = writeln!(out, "; {}", printed.line_of(op).unwrap_or("?").trim());
        disassemble(bytes, range.clone(), &consts, &mut out);
        last = range.end;
    }
    out.push_str("; exit stubs and epilogue\n");
    disassemble(bytes, last..bytes.len(), &consts, &mut out);
    out
}

/// Whether `BLESS` asks for expectations to be rewritten.
fn bless() -> bool {
    std::env::var("BLESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Compile the trace of `tests/golden/NAME.txt` and compare its listing with the one in
/// the file (or rewrite it with `BLESS=1`).
fn check(name: &str) {
    let path = golden_dir().join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (trace_text, expected) = match text.split_once(&format!("\n{SEPARATOR}\n")) {
        Some((t, e)) => (t, Some(e)),
        None => (text.trim_end(), None),
    };
    let t = trace_ir::parse_trace(trace_text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = listing(&t, &options(trace_text));
    if expected == Some(got.as_str()) {
        return;
    }
    if bless() {
        std::fs::write(&path, format!("{trace_text}\n{SEPARATOR}\n{got}")).expect("writable golden file");
        eprintln!("BLESS: rewrote {}", path.display());
        return;
    }
    let expected = expected.unwrap_or("");
    let first = expected
        .lines()
        .zip(got.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(got.lines().count()));
    let show = |s: &str| -> String {
        let lines: Vec<&str> = s.lines().collect();
        let from = first.saturating_sub(3);
        lines[from.min(lines.len())..(first + 4).min(lines.len())].join("\n")
    };
    panic!(
        "{name}: the listing differs from {} at line {} (BLESS=1 rewrites it)\n--- expected\n{}\n--- got\n{}\n--- whole listing\n{got}",
        path.display(),
        first + 1,
        show(expected),
        show(&got),
    );
}

macro_rules! golden {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name));
            }
        )*
        /// Every golden file has its test above.
        #[test]
        fn every_golden_file_is_checked() {
            let listed = [$(stringify!($name)),*];
            for entry in std::fs::read_dir(golden_dir()).expect("tests/golden") {
                let path = entry.expect("directory entry").path();
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
                assert!(listed.contains(&stem.as_str()), "{} has no test in asm_golden.rs", path.display());
            }
        }
    };
}

golden!(
    int_alu,
    int_select,
    compare_fused_into_guard,
    and_tested_for_zero,
    overflow,
    shift_overflow,
    shifts,
    division,
    floats,
    heap_fields,
    heap_arrays,
    heap_interior_and_raw,
    allocation,
    calls_register_arguments,
    calls_stack_arguments,
    conditional_calls,
    guards,
    guard_exits_with_virtuals,
    loop_back_edge,
    loop_rotated,
    jump_to_start,
    external_jump,
    register_pressure,
    hooks_mode,
    exceptions_direct,
);
