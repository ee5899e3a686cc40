//! Differential tests on random traces: native runs against the reference interpreter
//! (integer traces, loops with floats, register pressure, heap traces compared by content,
//! the optimizer's output with virtual objects in resume data).

use super::*;

fn no_heap() -> RandomConfig {
    RandomConfig {
        max_ref_inputs: 0,
        heap: 0,
        calls: 0,
        frames: 0,
        gc_bytes: 0,
        ..RandomConfig::default()
    }
}

fn differential(cfg: &RandomConfig, seeds: std::ops::Range<u64>, o: &CompileOptions) {
    let mut compiled = 0;
    let mut loops_left_by_guard = 0;
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
        let c = match compile(&t, o) {
            Ok(c) => c,
            Err(e) => panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)),
        };
        compiled += 1;
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let native = c.run_test(&words, &mut SimpleHeap::new()).unwrap();
        if let Err(e) = same(&t, &native, &int) {
            panic!("seed {seed}: {e}");
        }
        if t.last_label().is_some() && matches!(native, Exit::Guard { .. }) {
            loops_left_by_guard += 1;
        }
    }
    // The generator must really have produced loops that ran natively.
    if cfg.loops {
        assert!(
            loops_left_by_guard * 5 > compiled,
            "only {loops_left_by_guard} of {compiled} traces looped"
        );
    }
}

#[test]
fn random_integer_traces() {
    differential(&RandomConfig::integers_only(), 0..1500, &opts());
}

#[test]
fn random_loops_with_floats() {
    differential(&no_heap(), 0..1500, &opts());
}

#[test]
fn random_loops_under_register_pressure() {
    differential(
        &RandomConfig {
            length: 60,
            ..no_heap()
        },
        0..1000,
        &tight(),
    );
}

#[test]
fn values_are_never_lost_reading_the_argument_twice() {
    // x - x and x op x with x dying here (the result reuses x's register).
    for opc in [Opcode::IntSub, Opcode::IntAdd, Opcode::IntXor, Opcode::IntMul] {
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        let one = b.const_int(1);
        let y = b.op(Opcode::IntAdd, &[x, one]);
        let r = b.op(opc, &[y, y]);
        b.finish(&[r]);
        let t = b.build().unwrap();
        let yv = 6u64;
        let want = eval_pure(opc, &[yv, yv]).unwrap();
        assert_eq!(
            run_native(&t, &[5], &opts()),
            Exit::Finish {
                values: ints(&[want as i64])
            }
        );
    }
}

/// Compares interpreter values (with its heap) against native words (with real memory),
/// pairing interpreter objects with native objects as they are reached.
struct HeapCmp<'a> {
    iheap: &'a trace_interp::Heap,
    nheap: &'a SimpleHeap,
    pairs: std::collections::HashMap<u64, u64>,
}

impl HeapCmp<'_> {
    fn value(&mut self, what: &str, i: RtValue, n: u64) -> Result<(), String> {
        match i {
            RtValue::Ref(a) => self.refs(what, a, n),
            other if other.bits() == n => Ok(()),
            other => Err(format!("{what}: interpreter {other} vs native {n:#x}")),
        }
    }

    fn refs(&mut self, what: &str, a: u64, n: u64) -> Result<(), String> {
        if (a == 0) != (n == 0) {
            return Err(format!("{what}: interpreter {a:#x} vs native {n:#x}"));
        }
        let Some(obj) = self.iheap.objects.get(&a) else {
            return if a == n {
                Ok(())
            } else {
                Err(format!("{what}: external {a:#x} vs {n:#x}"))
            };
        };
        if let Some(&seen) = self.pairs.get(&a) {
            return if seen == n {
                Ok(())
            } else {
                Err(format!("{what}: object shared differently"))
            };
        }
        self.pairs.insert(a, n);
        let alloc = self
            .nheap
            .find(n)
            .ok_or_else(|| format!("{what}: native {n:#x} is not an allocation"))?;
        // SAFETY (reads below): `n` is the start of a live SimpleHeap allocation of
        // `alloc.size` bytes and every offset read is checked against that size.
        let read = |off: u64, size: u8, signed: bool| -> Result<u64, String> {
            if off + size as u64 > alloc.size + 64 {
                return Err(format!("{what}: read at {off} outside {} bytes", alloc.size));
            }
            let bytes = unsafe { std::slice::from_raw_parts((n + off) as *const u8, size as usize) };
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            let v = u64::from_le_bytes(word);
            let shift = 64 - 8 * size as u32;
            Ok(if signed && shift > 0 {
                (((v << shift) as i64) >> shift) as u64
            } else {
                v
            })
        };
        if obj.class != 0 && read(0, 8, false)? != obj.class {
            return Err(format!("{what}: class differs"));
        }
        let obj_len = match obj.kind {
            trace_interp::ObjKind::Struct { .. } => None,
            trace_interp::ObjKind::Array { len, .. }
            | trace_interp::ObjKind::Str { len }
            | trace_interp::ObjKind::Unicode { len } => Some(len),
        };
        if let Some(len) = obj_len {
            if alloc.len != Some(len) {
                return Err(format!("{what}: array length {len} vs {:?}", alloc.len));
            }
        }
        // Every byte the interpreter wrote (its cells: fields, items, the class and length
        // words) against native memory.
        let cells: Vec<(i64, u8, RtValue)> = obj.cells.iter().map(|(&s, c)| (s, c.size, c.value)).collect();
        for (off, size, v) in cells {
            let at = format!("{what}@{off}..{}", off + size as i64);
            let off = u64::try_from(off).map_err(|_| format!("{at}: negative offset"))?;
            let w = read(off, size, false)?;
            match v {
                RtValue::Ref(_) if size == 8 => self.value(&at, v, w)?,
                _ => {
                    let mask = if size >= 8 { u64::MAX } else { (1u64 << (8 * size)) - 1 };
                    if v.bits() & mask != w {
                        return Err(format!("{at}: interpreter {v:?} vs native {w:#x}"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Native exit (with real memory) vs interpreter run (with its modelled heap) of `t`,
/// objects compared by content.
pub(super) fn same_with_heap(
    t: &Trace,
    native: &Exit,
    nheap: &SimpleHeap,
    int: &interp::RunResult,
) -> Result<(), String> {
    let mut c = HeapCmp {
        iheap: &int.heap,
        nheap,
        pairs: Default::default(),
    };
    let pairwise = |c: &mut HeapCmp, x: &[RtValue], y: &[ExitValue]| -> Result<(), String> {
        if x.len() != y.len() {
            return Err("different number of values".into());
        }
        for (k, (&a, &b)) in x.iter().zip(y).enumerate() {
            c.value(&format!("value {k}"), a, b.bits())?;
        }
        Ok(())
    };
    match (native, &int.outcome) {
        (Exit::Finish { values }, Outcome::Finish(w)) => pairwise(&mut c, w, values),
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
        ) if guard == g && resume_key == k => pairwise(&mut c, w, values),
        (Exit::Invalid { .. }, Outcome::Invalid { .. }) => Ok(()),
        // native code does not check the memory model's promises
        (_, Outcome::Invalid { promise: true, .. }) => Ok(()),
        (n, i) => Err(format!(
            "native {n:?} vs interpreter {i}\n{}",
            trace_ir::text::print_trace(t)
        )),
    }
}

fn heap_differential(cfg: &RandomConfig, seeds: std::ops::Range<u64>, o: &CompileOptions) -> usize {
    let mut with_heap = 0;
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        let int = interp::run(&t, &inputs, &RunConfig::default());
        let c = compile(&t, o).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)));
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let mut heap = SimpleHeap::new();
        let native = c.run_test(&words, &mut heap).unwrap();
        if !heap.allocations.is_empty() {
            with_heap += 1;
        }
        if let Err(e) = same_with_heap(&t, &native, &heap, &int) {
            panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t));
        }
    }
    with_heap
}

/// Random traces with allocations, field and array accesses (objects allocated in the trace,
/// so native code works on real memory from the runtime; no reference inputs).
#[test]
fn random_heap_traces() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        ..RandomConfig::default()
    };
    let n = heap_differential(&cfg, 0..1500, &opts());
    assert!(n > 500, "only {n} traces allocated");
    heap_differential(&cfg, 1500..2000, &tight());
    // Strings: lengths, characters, hashes and copies on real memory.
    let strings = RandomConfig { strings: 12, ..cfg };
    let n = heap_differential(&strings, 2000..3000, &opts());
    assert!(n > 500, "only {n} string traces allocated");
}

/// Random heap traces, optimized (see [`optimized_differential`]).
#[test]
fn random_optimized_traces() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 12,
        ..RandomConfig::default()
    };
    let (compared, with_virtuals) = optimized_differential(&cfg, 0..1500, |_| true);
    assert!(compared > 1000, "only {compared} traces compared");
    assert!(
        with_virtuals > 100,
        "only {with_virtuals} optimized traces have virtuals in resume data"
    );
}

/// Random string traces, optimized: the exits rebuild virtual strings (byte and unicode)
/// through the runtime, as the interpreter does.
#[test]
fn random_optimized_string_traces() {
    let cfg = RandomConfig {
        max_ref_inputs: 0,
        calls: 0,
        heap: 3,
        strings: 12,
        ..RandomConfig::default()
    };
    let is_string = |v: &trace_ir::VirtualObject| matches!(v.kind, trace_ir::VirtualKind::Str { .. });
    let (compared, with_strings) = optimized_differential(&cfg, 0..1500, is_string);
    assert!(compared > 1000, "only {compared} traces compared");
    assert!(
        with_strings > 300,
        "only {with_strings} optimized traces have virtual strings in resume data"
    );
}

/// Random traces of `cfg` optimized by `optimizer::optimize`, compiled and run natively,
/// against the interpreter running the same optimized trace (so an optimizer bug cannot fail
/// this test, only a backend one). Allocation removal puts virtual objects into resume data,
/// which the exits rebuild through the runtime. Returns how many traces were compared and in
/// how many a guard's resume data holds a virtual that `counts` selects.
fn optimized_differential(
    cfg: &RandomConfig,
    seeds: std::ops::Range<u64>,
    counts: impl Fn(&trace_ir::VirtualObject) -> bool,
) -> (usize, usize) {
    let mut with_virtuals = 0;
    let mut compared = 0;
    for seed in seeds {
        let (t, inputs) = random_trace(cfg, seed);
        let Ok(opt) = optimizer::optimize(&t, &optimizer::Options::default()) else {
            continue;
        };
        let t = opt.trace;
        if t.guards.iter().any(|g| g.virtuals.iter().any(&counts)) {
            with_virtuals += 1;
        }
        let int = interp::run(&t, &inputs, &RunConfig::default());
        if int.outcome == Outcome::IterationLimit {
            continue;
        }
        let c =
            compile(&t, &opts()).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t)));
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let mut heap = SimpleHeap::new();
        let native = c.run_test(&words, &mut heap).unwrap();
        if let Err(e) = same_with_heap(&t, &native, &heap, &int) {
            panic!("seed {seed}: {e}\n{}", trace_ir::text::print_trace(&t));
        }
        compared += 1;
    }
    (compared, with_virtuals)
}
