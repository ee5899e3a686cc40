//! The memory and value model (`docs/memory-model.md`) against the miscompilations it rules
//! out: each trace is checked in the interpreter before and after `optimize`, natively in
//! Direct mode (original against optimized, on real buffers, and against a value worked out
//! by hand) and in Hooks mode (against the interpreter's whole run), and by translation
//! validation; and a wrong optimization of it (a load moved past a store of its bytes, a
//! store merged across another view, a value forwarded between views, a commuted float op)
//! must be `Invalid` for the validator and differ in the interpreter.

use backend_x86_64::{compile, CompileOptions, Exit, ExitValue, MemoryAccess, SimpleHeap};
use trace_interp::{outcomes_equivalent, run, ModelHeap, Outcome, RtValue, RunConfig, RunResult};
use trace_ir::text::{parse_trace, print_trace};
use trace_ir::Trace;
use verify::validate::{validate, Config, Verdict};

fn parse(text: &str) -> Trace {
    parse_trace(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn interp(t: &Trace, inputs: &[RtValue]) -> RunResult {
    run(t, inputs, &RunConfig::default())
}

fn options(memory: MemoryAccess) -> CompileOptions {
    CompileOptions {
        memory,
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    }
}

/// A zeroed buffer laid out as an array of `len` 8-byte items (length word at 8, items from
/// 16) that native code can read and write as an external object.
struct Buffer(Vec<u64>);

impl Buffer {
    fn new(len: u64) -> Buffer {
        let mut words = vec![0u64; 2 + len as usize + 8];
        words[1] = len;
        Buffer(words)
    }
    fn addr(&mut self) -> u64 {
        self.0.as_mut_ptr() as u64
    }
}

/// Run `t` natively in Direct mode; reference inputs are fresh buffers. Returns the exit and
/// the buffers' final contents.
fn direct(t: &Trace, inputs: &[RtValue]) -> (Exit, Vec<Vec<u64>>) {
    let code = compile(t, &options(MemoryAccess::Direct)).unwrap_or_else(|e| panic!("{e}\n{}", print_trace(t)));
    let mut buffers: Vec<Buffer> = Vec::new();
    let words: Vec<u64> = inputs
        .iter()
        .map(|v| match v {
            RtValue::Ref(_) => {
                buffers.push(Buffer::new(16));
                buffers.last_mut().expect("just pushed").addr()
            }
            other => other.bits(),
        })
        .collect();
    let mut heap = SimpleHeap::new();
    // SAFETY: every reference input is a buffer of this function, alive during the run, and
    // the tests' traces access only the bytes of those buffers the test chose.
    let exit = unsafe { code.run(&words, &mut heap) }.expect("runs");
    (exit, buffers.into_iter().map(|b| b.0).collect())
}

/// Run `t` natively in Hooks mode against the interpreter's model; the whole run.
fn hooks(t: &Trace, inputs: &[RtValue]) -> RunResult {
    let cfg = RunConfig::default();
    let code = compile(t, &options(MemoryAccess::Hooks)).unwrap_or_else(|e| panic!("{e}\n{}", print_trace(t)));
    let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
    let mut model = ModelHeap::new(t, &cfg);
    // SAFETY: in Hooks mode every access goes to the interpreter's model.
    let exit = unsafe { code.run(&words, &mut model) }.expect("runs");
    model.into_result(trace_interp::native::exit_outcome(&exit))
}

fn finish_values(r: &RunResult) -> Vec<u64> {
    match &r.outcome {
        Outcome::Finish(v) => v.iter().map(|x| x.bits()).collect(),
        other => panic!("expected a finish, got {other}"),
    }
}

/// `original` optimized by `optimize` behaves the same everywhere on `inputs` (see the module
/// documentation) and finishes with `expected` (worked out by hand; `None`: not checked).
/// Returns the optimized trace.
fn holds(original: &str, inputs: &[RtValue], expected: Option<&[u64]>) -> Trace {
    let t = parse(original);
    let out = optimizer::optimize(&t, &optimizer::Options::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .trace;
    trace_ir::verify(&out).unwrap_or_else(|e| panic!("optimized trace fails the verifier: {e}\n{}", print_trace(&out)));
    let reparsed = parse(&print_trace(&out));
    trace_ir::traces_equivalent(&out, &reparsed).expect("the optimized trace re-parses");
    let (a, b) = (interp(&t, inputs), interp(&out, inputs));
    outcomes_equivalent(&a, &b).unwrap_or_else(|e| panic!("interpreter: {e}\n{}", print_trace(&out)));
    if let Some(want) = expected {
        assert_eq!(finish_values(&a), want, "interpreter, original");
    }
    // Direct mode: the original and the optimized trace on equal real buffers.
    let (ea, ma) = direct(&t, inputs);
    let (eb, mb) = direct(&out, inputs);
    match (&ea, &eb) {
        (Exit::Finish { values: x }, Exit::Finish { values: y }) => {
            assert_eq!(x, y, "native, original vs optimized\n{}", print_trace(&out));
            if let Some(want) = expected {
                assert_eq!(Exit::Finish { values: x.clone() }.words(), want, "native, original");
            }
        }
        other => panic!("native exits: {other:?}"),
    }
    assert_eq!(ma, mb, "native buffers, original vs optimized");
    // Hooks mode: both traces against the interpreter's own model.
    for tr in [&t, &out] {
        let want = interp(tr, inputs);
        outcomes_equivalent(&want, &hooks(tr, inputs))
            .unwrap_or_else(|e| panic!("hooks mode: {e}\n{}", print_trace(tr)));
    }
    match validate(&t, &out, &Config::default()) {
        Verdict::Valid => {}
        other => panic!("validator: {other}\n{}", print_trace(&out)),
    }
    out
}

/// `wrong` is not a correct optimization of `original`: the validator calls it `Invalid`,
/// and on `inputs` the interpreter's runs differ.
fn refuted(original: &str, wrong: &str, inputs: &[RtValue]) {
    let (t, w) = (parse(original), parse(wrong));
    match validate(&t, &w, &Config::default()) {
        Verdict::Invalid { .. } => {}
        other => panic!("validator: expected invalid, got {other}\n{wrong}"),
    }
    assert!(
        outcomes_equivalent(&interp(&t, inputs), &interp(&w, inputs)).is_err(),
        "the interpreter does not tell the wrong optimization apart"
    );
}

fn ints(v: &[i64]) -> Vec<RtValue> {
    v.iter().map(|&x| RtValue::Int(x)).collect()
}

const EXT: RtValue = RtValue::Ref(0x5000_0000_1008);

// ---- stores and loads through other array descriptors of one object -----------------------

const WORD_STORE_BYTE_LOAD: &str = "
[p0]
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
finish(i1)
";

/// A byte load after a word store to the same item of an input array reads the word's low
/// byte (0x1234 -> 0x34): the delayed store is not moved past it.
#[test]
fn a_byte_load_after_a_word_store_of_the_same_bytes_stays_after_it() {
    holds(WORD_STORE_BYTE_LOAD, &[EXT], Some(&[0x34]));
    refuted(
        WORD_STORE_BYTE_LOAD,
        "
[p0]
i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
finish(i1)
",
        &[EXT],
    );
}

const THREE_STORES: &str = "
[p0, i1, i2, i3]
setarrayitem_gc(p0, 0, i1, descr=<ArrayS 8>)
setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
i4 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 8>)
finish(i4)
";

/// Three stores to item 0 through `ArrayS 8`, `ArrayU 8`, `ArrayS 8`: the last one wins; it
/// is not merged into the first one's place (before the second).
#[test]
fn a_store_is_not_merged_across_a_store_through_another_descriptor() {
    let inputs = [EXT, RtValue::Int(1), RtValue::Int(2), RtValue::Int(3)];
    holds(THREE_STORES, &inputs, Some(&[3]));
    refuted(
        THREE_STORES,
        "
[p0, i1, i2, i3]
setarrayitem_gc(p0, 0, i3, descr=<ArrayS 8>)
setarrayitem_gc(p0, 0, i2, descr=<ArrayU 8>)
i4 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 8>)
finish(i4)
",
        &inputs,
    );
}

const BUFFER_VIEWS: &str = "
[i0]
p1 = new_array_clear(16, descr=<ArrayU 1>)
setarrayitem_gc(p1, 0, i0, descr=<ArrayS 8>)
i2 = getarrayitem_gc_i(p1, 1, descr=<ArrayU 1>)
finish(i2)
";

/// A word store then a byte load at index 1 of a byte buffer the trace allocated: the
/// second byte of the word (0x1234 -> 0x12), in the interpreter and in native code.
#[test]
fn byte_and_word_views_of_an_allocated_buffer() {
    holds(BUFFER_VIEWS, &ints(&[0x1234]), Some(&[0x12]));
    refuted(
        BUFFER_VIEWS,
        "
[i0]
finish(0)
",
        &ints(&[0x1234]),
    );
}

/// Under PyPy's type-based rule the same accesses break a promise: the original has no
/// defined outcome, and the optimizer may keep the two descriptors apart.
#[test]
fn type_based_traces_promise_descriptors_never_alias() {
    let t = parse(&format!("aliasing type-based\n{WORD_STORE_BYTE_LOAD}"));
    match interp(&t, &[EXT]).outcome {
        Outcome::Invalid {
            promise: true, reason, ..
        } => assert!(reason.contains("type-based"), "{reason}"),
        other => panic!("expected a broken promise, got {other}"),
    }
    let reordered = parse(
        "aliasing type-based
[p0]
i1 = getarrayitem_gc_i(p0, 0, descr=<ArrayU 1>)
setarrayitem_gc(p0, 0, 4660, descr=<ArrayS 8>)
finish(i1)
",
    );
    assert!(!validate(&t, &reordered, &Config::default()).is_invalid());
}

// ---- values of another kind ---------------------------------------------------------------

/// A load's kind is its descriptor's: the verifier rejects an integer load of a float field.
#[test]
fn loads_and_stores_of_another_kind_than_their_descriptor_are_rejected() {
    for text in [
        "[p0]\ni1 = getfield_gc_i(p0, descr=<FieldF x 8>)\nfinish(i1)",
        "[p0, f1]\nsetarrayitem_gc(p0, 0, f1, descr=<ArrayS 8>)\nfinish()",
        "[p0]\nf1 = getarrayitem_gc_f(p0, 0, descr=<ArrayP 8>)\nfinish(f1)",
    ] {
        let e = parse_trace(text).expect_err(text);
        assert!(e.message.contains("descriptor of"), "{e}");
    }
}

const FLOAT_INT_VIEWS: &str = "
[]
p1 = new(descr=<SizeDescr 16>)
setfield_gc(p1, -0.0, descr=<FieldF x 8>)
i2 = getfield_gc_i(p1, descr=<FieldS y 8>)
i3 = int_lt(i2, 0)
i4 = int_is_true(i2)
finish(i3, i4)
";

/// `-0.0` stored through a float view and read through an integer view of the same bytes is
/// the integer `MININT` (its bits): negative and true. The float itself is never forwarded
/// into the integer use.
#[test]
fn a_float_stored_through_one_view_is_read_as_its_bits_through_another() {
    holds(FLOAT_INT_VIEWS, &[], Some(&[1, 1]));
    refuted(
        FLOAT_INT_VIEWS,
        "
[]
finish(0, 1)
",
        &[],
    );
}

/// In a loop, a value read through an integer view of a float field's bytes reaches an
/// integer label parameter and an integer fail argument as an integer.
#[test]
fn views_in_loops_keep_label_parameters_and_fail_arguments_typed() {
    let text = "
[i0, f1]
p2 = new(descr=<SizeDescr 16>)
label(i0, 0, p2, f1, descr=TargetToken(1)) -> [i3, i4, p5, f6]
setfield_gc(p5, f6, descr=<FieldF x 8>)
i7 = getfield_gc_i(p5, descr=<FieldS y 8>)
i8 = int_lt(i3, 3)
guard_true(i8, descr=<Guard0>) [i3, i4]
i9 = int_add(i3, 1)
jump(i9, i7, p5, f6, descr=TargetToken(1))
";
    let out = holds_loop(text, &[RtValue::Int(0), RtValue::float(2.5)]);
    let t = parse(text);
    let r = interp(&t, &[RtValue::Int(0), RtValue::float(2.5)]);
    match r.outcome {
        Outcome::GuardFailed { values, .. } => {
            assert_eq!(values, vec![RtValue::Int(3), RtValue::Int(2.5f64.to_bits() as i64)])
        }
        other => panic!("{other}"),
    }
    trace_ir::verify(&out).unwrap();
}

/// [`holds`] for a loop that leaves through a guard: interpreter, Hooks mode and the
/// validator.
fn holds_loop(text: &str, inputs: &[RtValue]) -> Trace {
    let t = parse(text);
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap().trace;
    trace_ir::verify(&out).unwrap_or_else(|e| panic!("{e}\n{}", print_trace(&out)));
    outcomes_equivalent(&interp(&t, inputs), &interp(&out, inputs)).unwrap();
    for tr in [&t, &out] {
        outcomes_equivalent(&interp(tr, inputs), &hooks(tr, inputs)).unwrap();
    }
    assert!(!validate(&t, &out, &Config::default()).is_invalid());
    out
}

// ---- NaN payloads -------------------------------------------------------------------------

const COMMUTED_FLOAT_ADD: &str = "
[f0, f1]
f2 = float_add(f0, f1)
f3 = float_add(f1, f0)
i4 = convert_float_bytes_to_longlong(f2)
i5 = convert_float_bytes_to_longlong(f3)
finish(i4, i5)
";

/// `float_add(a, b)` and `float_add(b, a)` of two NaNs carry different payloads (the first
/// NaN operand's, quieted): they are not one CSE entry.
#[test]
fn commuted_float_ops_keep_their_nan_payloads() {
    let (a, b) = (0x7ff0_0000_0000_0001u64, 0xfff8_0000_0000_0002u64);
    let inputs = [RtValue::Float(a), RtValue::Float(b)];
    let quiet = |x: u64| x | (1 << 51);
    holds(COMMUTED_FLOAT_ADD, &inputs, Some(&[quiet(a), quiet(b)]));
    refuted(
        COMMUTED_FLOAT_ADD,
        "
[f0, f1]
f2 = float_add(f0, f1)
i3 = convert_float_bytes_to_longlong(f2)
finish(i3, i3)
",
        &inputs,
    );
}

// ---- immutable reads ----------------------------------------------------------------------

/// An immutable item read of an array the trace allocated sees what the trace wrote, and a
/// heap-writing call does not change it: the read after the call may reuse the one before.
#[test]
fn immutable_item_reads_of_an_allocated_array_survive_calls() {
    let text = "
[i0]
p1 = new_array(2, descr=<ArrayS 8>)
setarrayitem_gc(p1, 0, i0, descr=<ArrayS 8>)
i2 = getarrayitem_gc_pure_i(p1, 0, descr=<ArrayS 8>)
call_n(ConstClass(f), p1, descr=<Callv 0 r EF=5>)
i3 = getarrayitem_gc_pure_i(p1, 0, descr=<ArrayS 8>)
finish(i2, i3)
";
    let t = parse(text);
    let r = interp(&t, &ints(&[7]));
    assert_eq!(finish_values(&r), vec![7, 7]);
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap().trace;
    outcomes_equivalent(&r, &interp(&out, &ints(&[7]))).unwrap();
    assert!(validate(&t, &out, &Config::default()).is_valid());
}

/// An immutable item read of an input array promises the trace did not write the item: after
/// a mutable write to it, the read is a broken promise (so no cached value can be wrong).
#[test]
fn an_immutable_read_of_an_item_the_trace_wrote_breaks_a_promise() {
    let t = parse(
        "
[p0]
setarrayitem_gc(p0, 0, 5, descr=<ArrayS 8>)
call_n(ConstClass(f), 1, descr=<Callv 0 i EF=5>)
i1 = getarrayitem_gc_pure_i(p0, 0, descr=<ArrayS 8>)
finish(i1)
",
    );
    assert!(matches!(
        interp(&t, &[EXT]).outcome,
        Outcome::Invalid { promise: true, .. }
    ));
}

const MUTABLE_AND_PURE_VIEW: &str = "
[i0]
p1 = new(descr=<SizeDescr 24>)
setfield_gc(p1, i0, descr=<FieldS a 8>)
call_n(ConstClass(f), p1, descr=<Callv 0 r EF=5>)
i2 = getfield_gc_i(p1, descr=<FieldS a 8>)
i3 = getfield_gc_i(p1, descr=<FieldS k 8 pure>)
finish(i2, i3)
";

/// A mutable and an immutable field at one offset of an object that escaped into a
/// heap-writing call: the mutable read after the call sees what the call left, the immutable
/// read what the trace wrote; neither is forwarded from the store across the call.
#[test]
fn mutable_and_immutable_views_of_one_field_across_a_call() {
    let t = parse(MUTABLE_AND_PURE_VIEW);
    let r = interp(&t, &ints(&[7]));
    let v = finish_values(&r);
    assert_eq!(v[1], 7, "the immutable view");
    assert_ne!(v[0], 7, "the call changed the mutable view");
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap().trace;
    outcomes_equivalent(&r, &interp(&out, &ints(&[7]))).unwrap();
    outcomes_equivalent(&interp(&out, &ints(&[7])), &hooks(&out, &ints(&[7]))).unwrap();
    assert!(validate(&t, &out, &Config::default()).is_valid());
    refuted(
        MUTABLE_AND_PURE_VIEW,
        "
[i0]
p1 = new(descr=<SizeDescr 24>)
setfield_gc(p1, i0, descr=<FieldS a 8>)
call_n(ConstClass(f), p1, descr=<Callv 0 r EF=5>)
i3 = getfield_gc_i(p1, descr=<FieldS k 8 pure>)
finish(i0, i3)
",
        &ints(&[7]),
    );
}

// ---- hints --------------------------------------------------------------------------------

const EXACT_CLASS: &str = "
[p0]
record_exact_class(p0, 4096)
guard_class(p0, 8192, descr=<Guard0>) [p0]
finish(1)
";

/// `record_exact_class` naming another class than the guard's, and `assert_not_none` of
/// null, are broken promises: the original has no defined outcome (so removing the guard the
/// hint implies is right).
#[test]
fn broken_hints_are_invalid_operations() {
    let t = parse(EXACT_CLASS);
    assert!(matches!(interp(&t, &[EXT]).outcome, Outcome::GuardFailed { .. }));
    let t = parse(
        "
[p0]
guard_class(p0, 8192, descr=<Guard0>) [p0]
record_exact_class(p0, 4096)
finish(1)
",
    );
    assert!(matches!(
        interp(&t, &[EXT]).outcome,
        Outcome::Invalid { promise: true, .. }
    ));
    let t = parse(
        "
[p0]
assert_not_none(p0)
guard_nonnull(p0, descr=<Guard0>) [p0]
finish(1)
",
    );
    assert!(matches!(
        interp(&t, &[RtValue::Ref(0)]).outcome,
        Outcome::Invalid { promise: true, .. }
    ));
    let out = holds_guards(&t, &[EXT]);
    assert!(!print_trace(&out).contains("guard_nonnull"), "{}", print_trace(&out));
}

/// A kept promise removes the guard it implies; dropping a guard the hint does not imply is
/// refuted.
#[test]
fn kept_hints_remove_the_guards_they_imply() {
    let text = "
[p0]
record_exact_class(p0, 4096)
guard_class(p0, 4096, descr=<Guard0>) [p0]
finish(1)
";
    let t = parse(text);
    let out = holds_guards(&t, &[EXT]);
    assert!(!print_trace(&out).contains("guard_class"), "{}", print_trace(&out));
    refuted(
        "
[p0]
record_exact_class(p0, 4096)
guard_nonnull(p0, descr=<Guard0>) [p0]
guard_value(p0, ConstPtr(0x5000), descr=<Guard1>) [p0]
finish(1)
",
        "
[p0]
record_exact_class(p0, 4096)
finish(1)
",
        &[EXT],
    );
}

/// The interpreter and Hooks mode agree before and after `optimize`, and the validator
/// proves the pair.
fn holds_guards(t: &Trace, inputs: &[RtValue]) -> Trace {
    let out = optimizer::optimize(t, &optimizer::Options::default()).unwrap().trace;
    outcomes_equivalent(&interp(t, inputs), &interp(&out, inputs)).unwrap();
    for tr in [t, &out] {
        outcomes_equivalent(&interp(tr, inputs), &hooks(tr, inputs)).unwrap();
    }
    assert!(validate(t, &out, &Config::default()).is_valid());
    out
}

// ---- fresh objects ------------------------------------------------------------------------

const FRESH_VS_CONSTANT: &str = "
[]
p1 = new(descr=<SizeDescr 16>)
i2 = instance_ptr_eq(ConstPtr(0x100000001000), p1)
finish(i2)
";

/// A fresh object is never a pointer constant of the trace, even one at the address the
/// interpreter would give its first allocation.
#[test]
fn a_fresh_object_is_never_a_pointer_constant() {
    holds(FRESH_VS_CONSTANT, &[], Some(&[0]));
    refuted(FRESH_VS_CONSTANT, "[]\nfinish(1)\n", &[]);
}

// ---- bytes of fields ----------------------------------------------------------------------

const BYTE_INTO_WORD: &str = "
[i0]
p1 = new(descr=<SizeDescr 24>)
setfield_gc(p1, i0, descr=<FieldS w 8>)
setfield_gc(p1, 0, descr=<FieldU b 9 size=1>)
i2 = getfield_gc_i(p1, descr=<FieldS w 8>)
finish(i2)
";

/// A one-byte store at offset 9 changes one byte of the word at offset 8 (0x12345678 ->
/// 0x12340078), in the interpreter as in native code.
#[test]
fn a_narrow_store_changes_only_its_bytes_of_a_wider_field() {
    holds(BYTE_INTO_WORD, &ints(&[0x1234_5678]), Some(&[0x1234_0078]));
    refuted(
        BYTE_INTO_WORD,
        "
[i0]
finish(i0)
",
        &ints(&[0x1234_5678]),
    );
}

/// Raw memory is byte-addressed: a byte store then a word load of the same address.
#[test]
fn raw_memory_views_assemble_bytes() {
    let text = "
[i0]
raw_store(i0, 0, 0x1122334455667788, descr=<ArrayS 8>)
raw_store(i0, 1, 0, descr=<ArrayU 1>)
i1 = raw_load_i(i0, 0, descr=<ArrayS 8>)
finish(i1)
";
    let t = parse(text);
    let mut buffer = Buffer::new(2);
    let addr = buffer.addr() + 16;
    let r = interp(&t, &ints(&[addr as i64]));
    assert_eq!(finish_values(&r), vec![0x1122_3344_5566_0088]);
    let out = optimizer::optimize(&t, &optimizer::Options::default()).unwrap().trace;
    outcomes_equivalent(&r, &interp(&out, &ints(&[addr as i64]))).unwrap();
    let code = compile(&out, &options(MemoryAccess::Direct)).unwrap();
    // SAFETY: `addr` points into `buffer`, which the trace reads and writes 8 bytes of.
    match unsafe { code.run(&[addr], &mut SimpleHeap::new()) }.unwrap() {
        Exit::Finish { values } => assert_eq!(values, vec![ExitValue::Int(0x1122_3344_5566_0088)]),
        other => panic!("{other:?}"),
    }
    assert!(validate(&t, &out, &Config::default()).is_valid());
    refuted(
        text,
        "
[i0]
raw_store(i0, 0, 0x1122334455667788, descr=<ArrayS 8>)
raw_store(i0, 1, 0, descr=<ArrayU 1>)
finish(0x1122334455667788)
",
        &ints(&[addr as i64]),
    );
}

// ---- allocation limits --------------------------------------------------------------------

/// An allocation over `MAX_ALLOC_BYTES` is an invalid operation in the interpreter and in
/// native code alike; one just under it runs in both.
#[test]
fn the_allocation_limit_is_the_same_everywhere() {
    let text = "[i0]\np1 = new_array_clear(i0, descr=<ArrayU 1>)\ni2 = arraylen_gc(p1, descr=<ArrayU 1>)\nfinish(i2)";
    let t = parse(text);
    let limit = trace_ir::descr::MAX_ALLOC_BYTES as i64;
    let code = compile(&t, &options(MemoryAccess::Direct)).unwrap();
    let fits = limit - 16;
    assert_eq!(finish_values(&interp(&t, &ints(&[fits]))), vec![fits as u64]);
    // SAFETY: the trace touches only the array it allocates.
    match unsafe { code.run(&[fits as u64], &mut SimpleHeap::new()) }.unwrap() {
        Exit::Finish { values } => assert_eq!(values, vec![ExitValue::Int(fits)]),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        interp(&t, &ints(&[fits + 1])).outcome,
        Outcome::Invalid { promise: false, .. }
    ));
    // SAFETY: as above; the allocation is refused.
    let over = unsafe { code.run(&[fits as u64 + 1], &mut SimpleHeap::new()) }.unwrap();
    assert!(matches!(over, Exit::Invalid { .. }));
}
