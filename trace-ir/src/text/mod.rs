//! The text format of traces (PyPy's JIT-log syntax) and the PyPy-log importer.
//!
//! # Syntax
//!
//! ```text
//! # a comment (whole lines only)
//! [i0, p1, f2]                                   inputs: kind prefix i/p/f + a number
//! i3 = int_add(i0, 1)                            result = op(operands[, descr=...])
//! i4 = int_lt(i3, 100)
//! guard_true(i4, descr=<Guard0>) [i0, i3]        guard id 0, fail arguments
//! setfield_gc(p1, i3, descr=<FieldS name 8>)
//! label(i3, p1, descr=TargetToken(1))            parameters rebind the operands' names
//! i9 = int_add(i3, 1)
//! jump(i9, p1, descr=TargetToken(1))
//! ```
//!
//! - **Names** are a kind prefix (`i` integer, `p` reference, `f` float; `r` is read as `p`)
//!   and letters, digits or `_`. Inputs take their kind from the prefix; an op result's
//!   prefix must match the op's result kind. A name is defined once, except that label
//!   parameters rebind names (see below). The printer names every value by its kind and
//!   op position (`i5` is op 5).
//! - **Constants**: decimal (or `0x` hex) integers; floats with a `.` or an exponent
//!   (`1.5`, `0.000000`, `1e300`, `-0.0`; PyPy's `1123...0.000000`, `inf`, `-inf`, `nan`
//!   too, so `inf` and `nan` are not names);
//!   `ConstFloat(0x7ff8000000000000)` gives a float by its bits (printed for NaN and
//!   infinities, so every float round-trips bit for bit); `ConstPtr(null)`; named constants
//!   `ConstPtr(ptr13)` (a reference) and `ConstClass(name)` (an integer), whose value is
//!   [`crate::trace::symbol_address`] of the name (`ConstClass(name=123)`,
//!   `ConstPtr(name=0x10)` give a named constant another value); unnamed pointers
//!   `ConstPtr(0x1234)`; `ConstInt(5)`.
//! - **Descriptors** (`descr=` is always the last argument): `<FieldS name 8>`,
//!   `<FieldU name 81>`, `<FieldP name 48>`, `<FieldF name 8>` (name, offset; a ` pure` word
//!   marks an immutable field), `<SizeDescr 16>`, `<ArrayP 8>`/`<ArrayS 8>`/`<ArrayU 1>`/
//!   `<ArrayF 8>` (item size), `<InteriorFieldDescr <FieldP odictentry.key 0>>`,
//!   `<Calli 8 ii EF=0 OS=12>` (result kind i/r/f/v, result size, argument kinds, effect,
//!   oopspec), `TargetToken(n)`, `<LoopN>`; any other `<...>` is kept verbatim
//!   ([`crate::Descr::Other`]). Extension words, printed only when not the default:
//!   `size=N` on fields (default 8), `signed` on reference/float fields and arrays,
//!   `vtable=N` on sizes, `base=N len=N` on arrays (defaults 16 and 8), `item=N` after the
//!   field of an interior descriptor (default 16).
//! - **Guards**: `descr=<GuardN>` sets the guard id N; `<GuardN key=K>` also sets the resume
//!   key (default: the id). PyPy's `<Guard0x7f31...>` and guards without a descriptor get
//!   fresh ids (not used by explicit ones), and the address as resume key. The fail
//!   arguments follow in brackets; `None` is a hole ([`crate::FailArg::Hole`]). A guard
//!   **without** a fail-argument list (PyPy's unoptimized logs) gets the values defined
//!   before it (inputs included) that anything after it uses.
//! - **Virtual objects** in fail arguments: `$k` names the guard's virtual object k,
//!   described after the list in braces, objects separated by `;`, each
//!   `$k = allocation fields` with fields `descriptor: value` (structs) or `[index]: value`
//!   (arrays), separated by `,`; values may be names, constants, `None` or `$j`:
//!
//!   ```text
//!   guard_true(i3, descr=<Guard2>) [i0, $0, None] {$0 = new_with_vtable(descr=<SizeDescr 16 vtable=7>) <FieldS x 8>: i4, <FieldP next 16>: $1; $1 = new_array(3, descr=<ArrayS 8>) [0]: i5}
//!   ```
//! - **Writes of an exit** ([`crate::GuardData::writes`]) in the same braces, after the
//!   objects: `setfield_gc(obj, value, descr=<Field...>)` or `setarrayitem_gc(obj, index,
//!   value, descr=<Array...>)`, with a constant index; the exit performs them after
//!   rebuilding the objects:
//!
//!   ```text
//!   guard_true(i3, descr=<Guard2>) [i0] {$0 = new(descr=<SizeDescr 16>) <FieldS x 8>: i4; setfield_gc(p1, $0, descr=<FieldP top 8>)}
//!   ```
//! - **Labels**: `label(i3, p4, descr=TargetToken(1))` is followed by one parameter per
//!   operand; without an arrow, parameter k rebinds the name of operand k (so the body
//!   refers to the parameters by the same names, as PyPy's logs do). With constant or
//!   repeated operands, or when the body still uses an operand directly, the parameters are
//!   named explicitly: `label(i3, 5, descr=TargetToken(1)) -> [i10, i11]`.
//! - **Aliasing**: a first line `aliasing type-based` (or `aliasing bytes`, the default)
//!   sets [`crate::Aliasing`], the trace's memory model; the printer writes it when it is not
//!   the default. Traces read from PyPy-log sections are type-based.
//! - Ignored: blank lines, `#` comment lines, `+123:` offsets, `debug_merge_point(...)`,
//!   `--end of the loop--`. The trace ends at its `jump` or `finish`.
//!
//! # Files
//!
//! [`parse_file`] reads a PyPy log (`[hex] {jit-log-noopt` ... `[hex] jit-log-noopt}`,
//! `jit-log-opt-loop`, `jit-log-opt-bridge`; other sections are skipped) or plain text with
//! one or more traces. Errors are [`ParseError`]s with the line and column in the file;
//! the parser never panics, and it runs [`crate::verify()`] on every trace.
//!
//! Trace trees (a loop and its bridges, [`crate::tree`]) are written as the root trace
//! followed by each bridge after a `# bridge out of Guard<N>` header: [`parse_tree`],
//! [`print_tree`]; [`assemble_trees`] links the traces of any file, a PyPy log's bridges
//! (`# bridge out of Guard 0x...`) included, to the guards they leave from.

mod descr_text;
mod equiv;
mod lexer;
mod parser;
mod printer;
mod pypylog;
mod tree_text;

pub use descr_text::{descr_to_string, parse_angle_descr, DEFAULT_FIELD_SIZE, DEFAULT_INTERIOR_ITEM};
pub use equiv::traces_equivalent;
pub use printer::{const_to_string, print_listing, print_trace, Listing};
pub use pypylog::{is_pypy_log, parse_file, parse_trace, TRACE_SECTIONS};
pub use tree_text::{assemble_trees, bridge_origin, parse_tree, print_tree, GuardName};

use std::fmt;

/// A syntax or validity error, with its 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line number (1-based; absolute in the file).
    pub line: usize,
    /// Column (1-based, in characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}
