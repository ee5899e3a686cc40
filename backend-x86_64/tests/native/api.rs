//! The compiled trace as the embedder sees it: what `compile` refuses, input count checks,
//! `Send`/`Sync`, code in recycled memory, the perf map, the disassembly listing, exits to
//! other loops.

use super::*;

/// `compile` verifies the trace: an ill-typed one is an error, not code.
#[test]
fn an_ill_typed_trace_does_not_compile() {
    let mut b = TraceBuilder::new();
    let f = b.input(Kind::Float);
    let one = b.const_int(1);
    let r = b.op(Opcode::IntAdd, &[f, one]); // a float where an integer belongs
    b.finish(&[r]);
    let t = b.build_unverified();
    match compile(&t, &opts()) {
        Err(CompileError::BadTrace(m)) => assert!(m.contains("int_add"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Register counts outside what the allocator supports are errors, not clamped.
#[test]
fn register_counts_out_of_range_are_errors() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.finish(&[i]);
    let t = b.build().unwrap();
    for (int_regs, float_regs) in [(2, 15), (14, 15), (13, 1), (13, 16)] {
        let o = CompileOptions {
            int_regs,
            float_regs,
            ..opts()
        };
        assert!(
            matches!(compile(&t, &o), Err(CompileError::Options(_))),
            "{int_regs} {float_regs}"
        );
    }
    for (int_regs, float_regs) in [(3, 2), (13, 15)] {
        let o = CompileOptions {
            int_regs,
            float_regs,
            ..opts()
        };
        assert!(compile(&t, &o).is_ok());
    }
}

/// The disassembly names the trace and shows each op as the printed trace does.
#[test]
fn disassembly_shares_the_printed_trace_s_names() {
    let mut b = TraceBuilder::new();
    b.name("sum loop");
    let (x, y) = (b.input(Kind::Int), b.input(Kind::Int));
    let s = b.op(Opcode::IntAdd, &[x, y]);
    let lt = b.op(Opcode::IntLt, &[s, y]);
    b.guard(Opcode::GuardTrue, &[lt], &[s], 0);
    b.finish(&[s]);
    let t = b.build().unwrap();
    let listing = compile(&t, &opts()).unwrap().disassembly(&t);
    assert!(listing.starts_with("; trace sum loop at "), "{listing}");
    for line in trace_ir::print_trace(&t).lines().skip(1) {
        assert!(listing.contains(&format!("; {line}\n")), "{line} in\n{listing}");
    }
}

#[test]
fn wrong_input_count_is_an_error() {
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.finish(&[i]);
    let t = b.build().unwrap();
    let c = compile(&t, &opts()).unwrap();
    assert_eq!(
        c.run_test(&[], &mut SimpleHeap::new()),
        Err(RunError::InputCount { expected: 1, got: 0 })
    );
}

#[test]
fn compiled_trace_is_send_and_sync_and_drops() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledTrace>();
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    b.finish(&[i]);
    let t = b.build().unwrap();
    let c = compile(&t, &opts()).unwrap();
    let h = std::thread::spawn(move || c.run_test(&[5], &mut SimpleHeap::new()).unwrap());
    assert_eq!(h.join().unwrap(), Exit::Finish { values: ints(&[5]) });
}

/// Code compiled into a recycled mapping runs like code in a fresh one: traces compiled
/// and dropped in turn, each run after the previous one's mapping went back to the cache.
#[test]
fn code_in_recycled_memory_runs() {
    for k in 0..50u64 {
        let mut b = TraceBuilder::new();
        let i = b.input(Kind::Int);
        let c = b.const_int(k as i64);
        let s = b.op(Opcode::IntAdd, &[i, c]);
        b.finish(&[s]);
        let t = b.build().unwrap();
        let c = compile(&t, &opts()).unwrap();
        assert_eq!(
            c.run_test(&[5], &mut SimpleHeap::new()).unwrap(),
            Exit::Finish {
                values: ints(&[5 + k as i64])
            }
        );
    }
}

#[test]
fn perf_map_gets_an_entry() {
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    b.finish(&[x]);
    let mut t = b.build().unwrap();
    t.info.name = "perf map test trace".into();
    let c = compile(
        &t,
        &CompileOptions {
            perf_map: true,
            ..opts()
        },
    )
    .unwrap();
    let map = std::fs::read_to_string(format!("/tmp/perf-{}.map", std::process::id())).unwrap();
    let start = c.code().as_ptr() as u64;
    assert!(
        map.lines()
            .any(|l| l.starts_with(&format!("{start:x} {:x} tracejit_perf_map_test_trace_", c.code_size()))),
        "{map}"
    );
    let listing = c.disassembly(&t);
    assert!(listing.contains("; finish(i0)"), "{listing}");
}

/// A jump to another loop (`<Loop3>`) leaves the trace with its operands.
#[test]
fn external_jump_reports_its_values() {
    let t = trace_ir::parse_trace("[i0, f1]\ni2 = int_add(i0, 5)\njump(i2, f1, descr=<Loop3>)\n").unwrap();
    let native = run_native(&t, &[4, 2.5f64.to_bits()], &opts());
    assert_eq!(
        native,
        Exit::ExternalJump {
            target: Some(3),
            values: vec![ExitValue::Int(9), ExitValue::Float(2.5f64.to_bits())]
        }
    );
    let int = interp::run(&t, &[RtValue::Int(4), RtValue::float(2.5)], &RunConfig::default()).outcome;
    same(&t, &native, &int).unwrap();
}

#[cfg(feature = "disasm")]
#[test]
fn disassembly_names_instructions() {
    let t = super::loops::rotation_loop(3, 0);
    let c = compile(&t, &opts()).unwrap();
    let listing = c.disassembly(&t);
    let label = trace_ir::print_listing(&t)
        .line_of(trace_ir::OpRef::new(4))
        .unwrap()
        .to_string();
    assert!(label.starts_with("label("), "{label}");
    assert!(listing.contains(&format!("; {label}\n")), "{listing}");
    assert!(listing.contains("jmp") && listing.contains("cmp"), "{listing}");
    if std::env::var("SHOW_LISTING").is_ok() {
        eprintln!("{listing}");
    }
}

/// Two code buffers are the same but for 64-bit immediates that are user-space addresses
/// (descriptors and hook ops the compiled trace keeps, allocated per compilation): every
/// byte that differs lies in an 8-byte window that reads as such an address in both.
fn same_but_addresses(a: &[u8], b: &[u8]) -> bool {
    let addr = |c: &[u8], s: usize| {
        c.get(s..s + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .is_some_and(|v| (1 << 40..1 << 48).contains(&v))
    };
    a.len() == b.len()
        && (0..a.len()).all(|i| a[i] == b[i] || (i.saturating_sub(7)..=i).any(|s| addr(a, s) && addr(b, s)))
}

/// A reused `Compiler` context gives the same code as a fresh one for every trace, whatever
/// the traces compiled before (large then small, loops, heap ops, calls), and a failed
/// compilation in between does not disturb the next.
#[test]
fn a_reused_compiler_gives_the_code_of_a_fresh_one() {
    // A trace the backend refuses: an overflow guard without its `_ovf` op.
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.op(Opcode::IntAddOvf, &[x, x]);
    b.guard(Opcode::GuardNoOverflow, &[], &[x], 0);
    b.finish(&[y]);
    let mut bad = b.build().unwrap();
    let add = bad.ops.iter().position(|o| o.opcode == Opcode::IntAddOvf).unwrap();
    bad.ops[add].opcode = Opcode::IntAdd;
    let mut compiler = Compiler::new();
    assert!(matches!(
        compiler.compile(&bad, &opts()),
        Err(CompileError::BadTrace(_))
    ));
    let cfg = RandomConfig::default();
    for seed in 0..60u64 {
        let len = [400, 30, 120][seed as usize % 3];
        let (t, _) = random_trace(
            &RandomConfig {
                length: len,
                ..cfg.clone()
            },
            seed,
        );
        let fresh = compile(&t, &opts()).unwrap();
        let reused = compiler.compile(&t, &opts()).unwrap();
        assert!(same_but_addresses(fresh.code(), reused.code()), "seed {seed}");
        if seed % 20 == 7 {
            assert!(compiler.compile(&bad, &opts()).is_err());
        }
    }
}
