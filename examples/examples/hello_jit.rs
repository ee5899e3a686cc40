//! The shortest use of tracejit: build a loop trace by hand, optimize it, compile it, run it.
//! `cargo run -p examples --example hello_jit`
use backend_x86_64::{compile, CompileOptions, Exit, SimpleHeap};
use optimizer::{optimize, Options};
use trace_ir::{print_trace, Kind, Opcode, TraceBuilder};

/// `s = s0; i = 0; while i < n { s += i; i += 1 }` as a compiled loop; returns `s`
/// (`None` if the sum overflows). Prints the traces when `verbose`.
pub fn sum_below(n: i64, s0: i64, verbose: bool) -> Option<i64> {
    let mut b = TraceBuilder::new();
    let inputs = [b.input(Kind::Int), b.input(Kind::Int), b.input(Kind::Int)];
    let p = b.label(&inputs); // loop-carried values: i, s, n
    let (i, s, n_) = (p[0], p[1], p[2]);
    let more = b.op(Opcode::IntLt, &[i, n_]);
    b.guard(Opcode::GuardTrue, &[more], &[s], 0); // resume key 0: the loop is done
    let s2 = b.op(Opcode::IntAddOvf, &[s, i]);
    b.guard(Opcode::GuardNoOverflow, &[], &[s], 1); // resume key 1: overflow
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAddOvf, &[i, one]); // cannot overflow since i < n:
    b.guard(Opcode::GuardNoOverflow, &[], &[s2], 1); // the optimizer drops this guard
    b.jump(&[i2, s2, n_]);
    let trace = b.build().expect("the trace verifies");

    let opt = optimize(&trace, &Options::default()).expect("the optimizer accepts it");
    if verbose {
        println!(
            "recorded:\n{}\noptimized:\n{}",
            print_trace(&trace),
            print_trace(&opt.trace)
        );
    }
    let code = compile(&opt.trace, &CompileOptions::default()).expect("the backend compiles it");
    // SAFETY: the loop works on integers only: it reads no memory and calls nothing.
    let exit = unsafe { code.run(&[0, s0 as u64, n as u64], &mut SimpleHeap::new()) }.expect("inputs match");
    match exit {
        Exit::Guard {
            resume_key: 0, values, ..
        } => Some(values[0].bits() as i64),
        Exit::Guard { resume_key: 1, .. } => None,
        other => panic!("unexpected exit {other:?}"),
    }
}

#[allow(dead_code)] // `main` is unused when a test includes this file as a module
fn main() {
    let n = 1_000_000;
    println!("sum of 0..{n} = {:?}", sum_below(n, 0, true));
}
