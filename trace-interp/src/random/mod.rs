//! The random trace generator (as in translation validation of PyPy's optimizer): every input gets a concrete example value,
//! every op is executed by the reference interpreter as soon as it is generated, and only
//! guards that hold for those example values are emitted, so the trace runs to its end on the
//! example inputs.
//!
//! ```
//! use trace_interp::random::{random_trace, RandomConfig};
//! use trace_interp::{run, RunConfig};
//! let (trace, inputs) = random_trace(&RandomConfig::default(), 7);
//! trace_ir::verify(&trace).unwrap();
//! let r = run(&trace, &inputs, &RunConfig::default());
//! assert!(trace_interp::random::is_expected_exit(&trace, &r.outcome));
//! ```
//!
//! # Shape
//!
//! ```text
//! [inputs]                    ints (special values), refs (external objects, sometimes the
//!                             same one twice, or null), floats
//! preamble ops                integer/overflow/float/heap/call ops, guards
//! label(i, n, params...)      optional loop (RandomConfig::loops)
//!   guard_true(int_lt(i, n))  the loop's exit: fails after `n - i` iterations
//!   body ops                  only on label parameters, body values and constants
//!   jump(int_add(i, 1), n, ...)
//! finish(...)                 (straight-line traces)
//! ```
//!
//! Inside a loop body, guards are only placed on values that are the same in every iteration
//! (computed by pure ops from loop-invariant parameters), shift amounts are masked, divisors
//! are made non-zero, and array indices are constants or masked by the (power-of-two) length,
//! so later iterations stay valid. If a generated loop nevertheless does not leave through its
//! exit guard on the example inputs (say an overflow guard fails in a later iteration), the
//! generator retries with a derived seed, and finally falls back to a straight-line trace; the
//! result is a deterministic function of `(cfg, seed)`.
//!
//! Run generated traces with [`RunConfig::default()`] (the class policy matters: a class
//! guard on an external object is generated expecting the first check to decide the class).

use crate::heap::{external_address, ObjKind};
use crate::rng::{mix64, Rng};
use crate::{self as interp, Outcome, RtValue, RunConfig, State};
use smallvec::SmallVec;

mod diamond;
mod gen;
mod heap;
mod ops;
mod strings;
mod tree;
pub use diamond::random_diamond;
use trace_ir::descr::{ArrayDescr, CallDescr, CallEffect, Descr, FieldDescr, SizeDescr};
use trace_ir::entity::{DescrRef, GuardId, GuardRef, OpRef, Value};
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::trace::{Aliasing, Const, FailArg, GuardData, Op, Trace};
pub use tree::{grow_tree, random_tree};

/// What to generate. Weights are relative (0 disables a category).
#[derive(Clone, Debug)]
pub struct RandomConfig {
    /// Number of ops to generate (not counting inputs; a loop body counts in it).
    pub length: usize,
    /// Maximum number of integer inputs (at least one is always present).
    pub max_int_inputs: usize,
    /// Maximum number of reference inputs.
    pub max_ref_inputs: usize,
    /// Maximum number of float inputs (used only when `floats > 0`).
    pub max_float_inputs: usize,
    /// Weight of pure integer ops.
    pub int_ops: u32,
    /// Weight of `int_*_ovf` ops (each followed by its overflow guard).
    pub ovf_ops: u32,
    /// Weight of extra guards (`guard_true`/`false` on comparisons, `guard_value`, pointer guards).
    pub guards: u32,
    /// Weight of heap ops (allocations, field and array accesses).
    pub heap: u32,
    /// Weight of calls.
    pub calls: u32,
    /// Weight of float ops.
    pub floats: u32,
    /// Weight of accesses through views: field and array descriptors of other widths,
    /// signedness or kinds over the bytes of the trace's fields and arrays, and a mutable
    /// view of an immutable field (see `docs/memory-model.md`).
    pub views: u32,
    /// Weight of hints that are promises (`assert_not_none`, `record_exact_class`); true on
    /// the example inputs, possibly broken on others.
    pub hints: u32,
    /// Weight of virtual references: `virtual_ref` of an object (stored into a field, as an
    /// interpreter links its frames) and `virtual_ref_finish`.
    pub frames: u32,
    /// Weight of byte-offset accesses (`gc_load*`, `gc_store*`) at the offsets of the
    /// generator's fields.
    pub gc_bytes: u32,
    /// Weight of string ops: `newstr`/`newunicode` (mostly of constant lengths), characters
    /// read and written, lengths, hashes and copies between the trace's strings. 0 by
    /// default (so each seed's trace of the default mix stays the trace it is); the string
    /// tests and the fuzz targets turn it on.
    pub strings: u32,
    /// Weight of `record_known_field` hints: a promise of what a field holds now (true on
    /// the example inputs, possibly broken on others). 0 by default, like `strings`; the
    /// fuzz targets turn it on.
    pub field_hints: u32,
    /// The memory model of the generated traces; `None`: type-based for about a third of the
    /// seeds, byte views otherwise.
    pub aliasing: Option<Aliasing>,
    /// Whether to generate a `label`/`jump` loop (in about half of the traces).
    pub loops: bool,
    /// Whether a loop may take an object the trace allocates and pass a new one like it to
    /// its next iteration (an object that can stay virtual across the back edge).
    pub loop_objects: bool,
    /// Maximum loop iterations on the example inputs.
    pub max_iterations: u32,
}

impl Default for RandomConfig {
    fn default() -> Self {
        RandomConfig {
            length: 30,
            max_int_inputs: 4,
            max_ref_inputs: 2,
            max_float_inputs: 2,
            int_ops: 10,
            ovf_ops: 3,
            guards: 4,
            heap: 5,
            calls: 2,
            floats: 2,
            views: 2,
            hints: 1,
            frames: 1,
            gc_bytes: 1,
            strings: 0,
            field_hints: 0,
            aliasing: None,
            loops: true,
            loop_objects: true,
            max_iterations: 6,
        }
    }
}

impl RandomConfig {
    /// Traces that touch only memory they allocate and call nothing (no reference inputs, no
    /// calls): native code in Direct mode runs them on real memory, views included.
    pub fn self_contained() -> RandomConfig {
        RandomConfig {
            max_ref_inputs: 0,
            calls: 0,
            heap: 8,
            views: 4,
            ..RandomConfig::default()
        }
    }

    /// Only integer, overflow and guard ops on integer inputs, straight-line (the traces of
    /// translation validation).
    pub fn integers_only() -> RandomConfig {
        RandomConfig {
            max_ref_inputs: 0,
            heap: 0,
            calls: 0,
            floats: 0,
            views: 0,
            hints: 0,
            frames: 0,
            gc_bytes: 0,
            strings: 0,
            field_hints: 0,
            loops: false,
            loop_objects: false,
            ..RandomConfig::default()
        }
    }
}

/// Special integers mixed into inputs and constants.
pub const SPECIAL_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    -2,
    3,
    7,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    63,
    64,
    100,
    255,
    256,
    -256,
    1000,
    (1 << 31) - 1,
    1 << 31,
    -(1 << 31),
    (1 << 32) - 1,
    1 << 32,
    (1 << 62) - 1,
    1 << 62,
    i64::MAX,
    i64::MAX - 1,
    i64::MIN,
    i64::MIN + 1,
];

/// Random inputs of the kinds `t` takes: special integers (see [`special_int`]), small
/// finite floats, and deterministic external references.
pub fn random_inputs(rng: &mut Rng, t: &Trace) -> Vec<RtValue> {
    t.input_kinds()
        .into_iter()
        .map(|k| match k {
            Kind::Float => RtValue::float(rng.range_i64(-1000, 1000) as f64 / 8.0),
            Kind::Ref => RtValue::Ref(external_address(rng.next_u64())),
            _ => RtValue::Int(special_int(rng)),
        })
        .collect()
}

/// A random integer: a special value, a power of two or its neighbour, a small number, or
/// any 64-bit value.
pub fn special_int(rng: &mut Rng) -> i64 {
    match rng.below(4) {
        0 => *rng.pick(SPECIAL_INTS),
        1 => {
            let p = 1i64.wrapping_shl(rng.below(64) as u32);
            p.wrapping_add(rng.range_i64(-1, 1))
        }
        2 => rng.range_i64(-20, 20),
        _ => rng.next_u64() as i64,
    }
}

/// NaNs with payloads (quiet and signaling, both signs): their bits become visible through
/// `convert_float_bytes_to_longlong` and stores.
const PAYLOAD_NANS: &[u64] = &[
    0x7ff8_0000_0000_0001,
    0xfff8_0000_dead_beef,
    0x7ff0_0000_0000_0001,
    0xfff4_0000_0000_0000,
];

fn special_float(rng: &mut Rng) -> f64 {
    if rng.chance(1, 8) {
        return f64::from_bits(*rng.pick(PAYLOAD_NANS));
    }
    *rng.pick(&[
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        3.25,
        1e10,
        -2.5e-3,
        1e300,
        f64::INFINITY,
        f64::NAN,
        7.0,
    ])
}

/// Whether `outcome` is the exit a generated trace must reach on its example inputs: `finish`
/// for a straight-line trace, the loop's exit guard (the first guard after the label) for a
/// loop.
pub fn is_expected_exit(trace: &Trace, outcome: &Outcome) -> bool {
    match (expected_exit_guard(trace), outcome) {
        (None, Outcome::Finish(_)) => true,
        (Some(g), Outcome::GuardFailed { guard, .. }) => g == *guard,
        _ => false,
    }
}

/// The id of the loop's exit guard (first guard after the last label), if the trace loops.
pub fn expected_exit_guard(trace: &Trace) -> Option<GuardId> {
    if trace.ops.last()?.opcode != Opcode::Jump {
        return None;
    }
    let l = trace.last_label()?;
    trace.ops[l.index()..]
        .iter()
        .find_map(|op| op.guard.map(|g| trace.guard(g).id))
}

/// A random trace and example inputs on which it runs to its end (see the module
/// documentation). Deterministic in `(cfg, seed)`; the trace always passes
/// [`trace_ir::verify::verify`].
pub fn random_trace(cfg: &RandomConfig, seed: u64) -> (Trace, Vec<RtValue>) {
    for attempt in 0..8u64 {
        let s = if attempt == 0 {
            seed
        } else {
            mix64(seed ^ attempt.wrapping_mul(0x9e37_79b9))
        };
        let (t, inputs) = Gen::new(cfg, s, cfg.loops).generate();
        if trace_ir::verify::verify(&t).is_ok() {
            let r = interp::run(&t, &inputs, &RunConfig::default());
            if is_expected_exit(&t, &r.outcome) {
                return (t, inputs);
            }
        }
    }
    // Straight-line generation executes every op as it is emitted, so it always succeeds.
    Gen::new(cfg, seed, false).generate()
}

#[derive(Copy, Clone)]
struct Live {
    v: Value,
    kind: Kind,
    /// May differ between loop iterations.
    variant: bool,
}

struct Descrs {
    size_plain: DescrRef,
    size_vt: DescrRef,
    size_vt2: DescrRef,
    f_int: DescrRef,
    f_int4: DescrRef,
    f_u1: DescrRef,
    f_ref: DescrRef,
    f_float: DescrRef,
    f_imm: DescrRef,
    a_int: DescrRef,
    a_ref: DescrRef,
    a_u1: DescrRef,
    /// Field views: the low half of `inst_a`, the second byte of `inst_b`, `inst_f` as an
    /// integer, `inst_a` as a float, `inst_k` (immutable) as a mutable field. (No view of a
    /// reference field: its bytes are an address, which the runs of one program need not
    /// share.)
    v_a4: DescrRef,
    v_b1: DescrRef,
    v_fi: DescrRef,
    v_af: DescrRef,
    v_k: DescrRef,
    /// Array views: other widths, signedness and kinds over the same items.
    v_s1: DescrRef,
    v_u2: DescrRef,
    v_u8: DescrRef,
    v_f8: DescrRef,
    c_pure: DescrRef,
    c_write: DescrRef,
    c_raise_n: DescrRef,
    c_float: DescrRef,
    c_ref: DescrRef,
    c_force: DescrRef,
    c_cond: DescrRef,
    /// `ll_arraycopy` (`trace_ir::oopspec::is_array_copy`).
    c_copy: DescrRef,
}

struct Gen<'c> {
    cfg: &'c RandomConfig,
    rng: Rng,
    t: Trace,
    st: State,
    run_cfg: RunConfig,
    live: Vec<Live>,
    next_guard: u32,
    /// Per op: whether its value may differ between loop iterations.
    variant: Vec<bool>,
    d: Descrs,
    loops: bool,
    /// The loop being generated: (counter param, limit param, params to re-assign at the jump).
    in_loop: Option<LoopInfo>,
}

struct LoopInfo {
    counter: Value,
    limit: Value,
    /// Every label parameter and whether it is loop-variant.
    params: Vec<(Value, Kind, bool)>,
}

fn field(name: &str, offset: i64, size: u8, signed: bool, kind: Kind, immutable: bool) -> Descr {
    Descr::Field(FieldDescr {
        name: name.into(),
        offset,
        size,
        signed,
        kind,
        immutable,
    })
}

fn array(item_size: u8, signed: bool, kind: Kind) -> Descr {
    Descr::Array(ArrayDescr {
        item_size,
        signed,
        kind,
        base_offset: 16,
        len_offset: 8,
    })
}

fn call(result: Kind, args: &[Kind], effect: CallEffect) -> Descr {
    Descr::Call(call_descr(result, args, effect))
}

fn call_descr(result: Kind, args: &[Kind], effect: CallEffect) -> CallDescr {
    CallDescr {
        result,
        result_size: if result == Kind::Void { 0 } else { 8 },
        args: args.to_vec(),
        effect,
        oopspec: None,
    }
}

const FUNCS: &[i64] = &[0x1000_1230, 0x1000_4560, 0x1000_7890];
