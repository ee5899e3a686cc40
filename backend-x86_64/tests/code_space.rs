//! The code space at scale: a million small traces compiled and dropped with 100,000 alive at
//! once, every one of them right, packed into a few shared regions, and no mapping of the
//! process ever writable and executable.

use backend_x86_64::{code_space_usage, CompileOptions, CompiledTrace, Compiler, Exit, ExitValue, SimpleHeap};
use trace_ir::{Kind, Opcode, Trace, TraceBuilder};

/// `finish(i0 * a + b)`: a small trace whose code differs with `a` and `b`.
fn small(a: i64, b: i64) -> Trace {
    let mut tb = TraceBuilder::new();
    let x = tb.input(Kind::Int);
    let (ca, cb) = (tb.const_int(a), tb.const_int(b));
    let m = tb.op(Opcode::IntMul, &[x, ca]);
    let r = tb.op(Opcode::IntAdd, &[m, cb]);
    tb.finish(&[r]);
    tb.build().unwrap()
}

/// Run `code` on 3 and check it computes `3 * a + b`.
fn check(code: &CompiledTrace, a: i64, b: i64) {
    // SAFETY: the trace reads no memory and calls nothing.
    let exit = unsafe { code.run(&[3], &mut SimpleHeap::new()) }.unwrap();
    assert_eq!(
        exit,
        Exit::Finish {
            values: vec![ExitValue::Int(3 * a + b)]
        }
    );
}

/// The mappings of the process that are writable and executable.
fn writable_and_executable() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.contains('w') && p.contains('x'))
        })
        .map(str::to_string)
        .collect()
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().count()
}

#[test]
fn a_million_traces_with_a_hundred_thousand_alive() {
    const TOTAL: usize = 1_000_000;
    const ALIVE: usize = 100_000;
    let opts = CompileOptions::default();
    let mut compiler = Compiler::new();
    let mappings_before = mappings();
    let mut live: Vec<(CompiledTrace, i64, i64)> = Vec::with_capacity(ALIVE);
    // A few distinct traces, compiled once each; the million compilations reuse them with a
    // different constant so every piece of code differs from its neighbours.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..TOTAL {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let (a, b) = ((k % 7) as i64 + 1, k as i64);
        let code = compiler.compile(&small(a, b), &opts).unwrap();
        if live.len() < ALIVE {
            live.push((code, a, b));
        } else {
            // Drop a random live trace: frees a block in the middle of the regions.
            let slot = (state % ALIVE as u64) as usize;
            let (old, oa, ob) = std::mem::replace(&mut live[slot], (code, a, b));
            if k % 1000 == 0 {
                check(&old, oa, ob);
            }
        }
        if k % 100_000 == 0 {
            assert!(writable_and_executable().is_empty(), "{:?}", writable_and_executable());
        }
    }
    // Every live trace still computes what it should.
    for (code, a, b) in &live {
        check(code, *a, *b);
    }
    let usage = code_space_usage();
    let code_bytes: usize = live.iter().map(|(c, _, _)| c.code_size()).sum();
    assert!(
        usage.live_bytes <= code_bytes + 64 * live.len(),
        "{usage:?}: at most 64 bytes beyond the code of each of {} traces ({code_bytes} bytes)",
        live.len()
    );
    assert!(
        usage.mapped_bytes <= 2 * usage.live_bytes + (8 << 20),
        "{usage:?}: the regions are mostly in use"
    );
    assert!(
        mappings() < mappings_before + 3 * usage.regions + 16,
        "{} mappings for {} regions",
        mappings(),
        usage.regions
    );
    assert!(writable_and_executable().is_empty(), "{:?}", writable_and_executable());
    drop(live);
    let after = code_space_usage();
    assert_eq!(after.live_bytes, 0, "{after:?}");
    assert!(after.regions <= 1, "empty regions are unmapped but one: {after:?}");
}
