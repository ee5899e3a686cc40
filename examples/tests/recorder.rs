//! Properties of recorded traces, and a differential test on random programs: every mode and
//! executor must print the same or fail with the same error.

use examples::lang::bytecode::compile;
use examples::lang::vm::{run_source, Config, Engine, LogFlags, Mode, Vm};
use examples::programs::EXAMPLES;
use trace_ir::{Kind, Opcode};

fn config(mode: Mode, engine: Engine) -> Config {
    let mut cfg = Config::new(mode, engine);
    cfg.log = LogFlags::default();
    cfg
}

#[test]
fn guards_resume_at_bytecode_positions_with_the_live_slots() {
    for ex in EXAMPLES {
        let program = compile(ex.source, &["N"]).unwrap();
        for mode in [Mode::JitUnoptimized, Mode::JitOptimized] {
            let out = Vm::new(&program, &[ex.test_n], config(mode, Engine::TraceRunner))
                .run()
                .unwrap();
            for ts in &out.stats.traces {
                let t = &ts.recorded;
                trace_ir::verify(t).unwrap();
                for g in &t.guards {
                    let pc = g.resume_key as usize;
                    assert!(pc < program.code.len(), "{}: resume key {pc}", ex.name);
                    assert_eq!(g.fail_args.len(), program.live_slots(pc).len(), "{}: {}", ex.name, g.id);
                }
                // Every arithmetic result is boxed in the recorded trace.
                let ovf = t.ops.iter().filter(|o| o.opcode.is_ovf()).count();
                let allocs = t.ops.iter().filter(|o| o.opcode == Opcode::NewWithVtable).count();
                assert!(
                    allocs >= ovf,
                    "{}: {allocs} allocations for {ovf} arithmetic ops",
                    ex.name
                );
                let label = t.last_label().expect("a loop has a label");
                let kinds: Vec<Kind> = t.label_params(label).map(|p| t.op(p).opcode.result_kind()).collect();
                if mode == Mode::JitUnoptimized {
                    assert!(kinds.iter().all(|&k| k == Kind::Ref), "{}: {kinds:?}", ex.name);
                } else {
                    assert!(kinds.contains(&Kind::Int), "{}: {kinds:?}", ex.name);
                }
            }
        }
    }
}

/// SplitMix64, for reproducible random programs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const VARS: [&str; 4] = ["a", "b", "c", "i"];

fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 || r.below(3) == 0 {
        return match r.below(4) {
            0 => ["0", "1", "3", "7", "64", "-5", "1000003", "0.5"][r.below(8) as usize].to_string(),
            _ => VARS[r.below(4) as usize].to_string(),
        };
    }
    match r.below(12) {
        0 => return format!("abs({})", expr(r, depth - 1)),
        1 => return format!("(-{})", expr(r, depth - 1)),
        2 => return format!("(~{})", expr(r, depth - 1)),
        3 => return format!("(not {})", expr(r, depth - 1)),
        4 => return format!("int(sqrt(abs({})))", expr(r, depth - 1)),
        5 => return format!("fst(pair({}, {}))", expr(r, depth - 1), expr(r, depth - 1)),
        6 => return format!("arr[{} & 7]", expr(r, depth - 1)),
        _ => {}
    }
    let ops = [
        "+", "-", "*", "&", "|", "^", "<<", ">>", "//", "%", "<", "==", "!=", "/",
    ];
    let op = ops[r.below(ops.len() as u64) as usize];
    let (x, y) = (expr(r, depth - 1), expr(r, depth - 1));
    // Keep shift amounts mostly in range so that programs run long enough to be compiled.
    let y = if op == "<<" || op == ">>" {
        format!("({y} & 15)")
    } else {
        y
    };
    format!("({x} {op} {y})")
}

fn program(r: &mut Rng) -> String {
    let mut s = String::from("arr = array(8)\na = 1\nb = 2\nc = 3\ni = 0\nwhile i < N {\n");
    for _ in 0..1 + r.below(4) {
        if r.below(4) == 0 {
            s += &format!("    arr[{} & 7] = {} & 255\n", expr(r, 2), expr(r, 2));
            continue;
        }
        let v = VARS[r.below(3) as usize];
        let e = expr(r, 3);
        if r.below(3) == 0 {
            // Half of the conditions change with `i`: their guards fail every few
            // iterations, and get bridges (and bridges out of bridges).
            let cond = match r.below(2) {
                0 => expr(r, 2),
                _ => format!("((i ^ {}) & {}) == 0", expr(r, 1), [1, 3, 7][r.below(3) as usize]),
            };
            s += &format!("    if {cond} {{ {v} = {e} & 65535 }} else {{ {v} = {v} + 1 }}\n");
        } else {
            s += &format!("    {v} = ({e}) & 65535\n");
        }
    }
    s += "    i = i + 1\n}\nprint(a, b, c, arr)\n";
    s
}

#[test]
fn random_programs_agree_in_all_modes() {
    let mut r = Rng(2024);
    let (mut compiled, mut bridges) = (0, 0);
    for case in 0..1000 {
        let src = program(&mut r);
        let reference = run_source(&src, &[("N", 300)], config(Mode::Interpreter, Engine::TraceRunner));
        for engine in [Engine::TraceRunner, Engine::Native] {
            for mode in [Mode::JitUnoptimized, Mode::JitOptimized] {
                // Guards get bridges after a few failures (bridges out of bridges too).
                let mut cfg = config(mode, engine);
                cfg.driver.hot_guard = 3;
                let got = run_source(&src, &[("N", 300)], cfg);
                match (&reference, &got) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.output, b.output, "case {case} {mode:?} {engine:?}:\n{src}");
                        compiled += b.stats.traces.len();
                        bridges += b.stats.driver.bridges;
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b, "case {case} {mode:?} {engine:?}:\n{src}"),
                    _ => panic!("case {case} {mode:?} {engine:?}: {reference:?} vs {got:?}\n{src}"),
                }
            }
        }
    }
    // Most programs run long enough to be compiled (the rest fail early with an error).
    assert!(compiled > 2000, "only {compiled} traces compiled");
    // Native code attaches bridges to the guards that fail often.
    assert!(bridges > 250, "only {bridges} bridges attached");
}
