//! A complete toy interpreter on `driver::Driver`: integer registers, a hot loop with a rare
//! path that gets a bridge. `cargo run --release -p examples --example hello_driver`
use backend_x86_64::{Exit, SimpleHeap};
use driver::{AtHeader, Driver, DriverConfig};
use trace_ir::{Kind, Opcode, TraceBuilder, Value};

#[rustfmt::skip]
#[derive(Copy, Clone)]
enum Ins { Loop, Lt(usize, usize, usize), AndI(usize, usize, i64), Add(usize, usize, usize), AddI(usize, usize, i64), JumpIfZero(usize, usize), Jump(usize), Halt }
use Ins::*;

/// i = r0, n = r1, a = r2, b = r3: `while i < n { if i & 7 != 0 { a += i } else { b += 1 }; i += 1 }`
#[rustfmt::skip]
const PROGRAM: [Ins; 11] = [Loop, Lt(4, 0, 1), JumpIfZero(4, 10), AndI(5, 0, 7), JumpIfZero(5, 7), Add(2, 2, 0), Jump(8), AddI(3, 3, 1), AddI(0, 0, 1), Jump(0), Halt];

/// A trace being recorded: the builder and the trace value of each register.
struct Rec(TraceBuilder, Vec<Value>);

pub fn run(n: i64, driver: &mut Driver<usize>) -> Vec<i64> {
    let mut regs = vec![0i64, n, 0, 0, 0, 0];
    let (mut pc, mut rec): (usize, Option<Rec>) = (0, None);
    loop {
        let ins = PROGRAM[pc];
        if let Loop = ins {
            match driver.loop_header(pc) {
                AtHeader::Record => {
                    let mut b = TraceBuilder::new();
                    let inputs: Vec<Value> = regs.iter().map(|_| b.input(Kind::Int)).collect();
                    let values = b.label(&inputs);
                    rec = Some(Rec(b, values));
                }
                AtHeader::Close => {
                    let Rec(mut b, values) = rec.take().expect("recording");
                    driver.close_jump(&mut b, &values);
                    // A trace that cannot be compiled just stays interpreted.
                    let _ = driver.finish_recording(b.build().expect("a well-formed trace"), &[]);
                    continue;
                }
                AtHeader::Run => {
                    let inputs: Vec<u64> = regs.iter().map(|&r| r as u64).collect();
                    // SAFETY: the toy language has integer registers only: its loops read no
                    // memory and call nothing.
                    let exit = unsafe { driver.run(pc, &inputs, &mut SimpleHeap::new()) };
                    if let Ok(Exit::Guard { resume_key, values, .. }) = exit {
                        regs = values.iter().map(|v| v.bits() as i64).collect();
                        pc = resume_key as usize;
                        if let Some(s) = driver.bridge_to_record() {
                            let values = s.fail_values.iter().map(|v| v.expect("registers are values")).collect();
                            rec = Some(Rec(s.builder, values));
                        }
                        continue;
                    }
                }
                AtHeader::Interpret => {}
            }
            pc += 1;
            continue;
        }
        if let Some(r) = rec.as_mut() {
            record(r, ins, &regs, pc);
        }
        match ins {
            Lt(d, x, y) => regs[d] = (regs[x] < regs[y]) as i64,
            AndI(d, x, k) => regs[d] = regs[x] & k,
            Add(d, x, y) => regs[d] = regs[x].wrapping_add(regs[y]),
            AddI(d, x, k) => regs[d] = regs[x].wrapping_add(k),
            Halt => return regs,
            Loop | Jump(_) | JumpIfZero(..) => {}
        }
        pc = match ins {
            JumpIfZero(c, t) if regs[c] == 0 => t,
            Jump(t) => t,
            _ => pc + 1,
        };
    }
}

/// Mirror `ins` into the trace: ops on the registers' values, and for a branch a guard
/// that the way taken is taken again (fail arguments: every register; resume at `pc`).
fn record(Rec(b, vals): &mut Rec, ins: Ins, regs: &[i64], pc: usize) {
    let (opc, d, x, y) = match ins {
        Lt(d, x, y) => (Opcode::IntLt, d, vals[x], vals[y]),
        AndI(d, x, k) => (Opcode::IntAnd, d, vals[x], b.const_int(k)),
        Add(d, x, y) => (Opcode::IntAdd, d, vals[x], vals[y]),
        AddI(d, x, k) => (Opcode::IntAdd, d, vals[x], b.const_int(k)),
        JumpIfZero(c, _) => {
            let g = [Opcode::GuardTrue, Opcode::GuardFalse][usize::from(regs[c] == 0)];
            b.guard(g, &[vals[c]], vals, pc as u64);
            return;
        }
        Loop | Jump(_) | Halt => return,
    };
    vals[d] = b.op(opc, &[x, y]);
}

fn main() {
    let mut driver = Driver::new(DriverConfig::default());
    let n = 1_000_000;
    let regs = run(n, &mut driver);
    let (a, b) = (0..n).fold((0, 0), |(a, b), i| if i & 7 != 0 { (a + i, b) } else { (a, b + 1) });
    assert_eq!((regs[2], regs[3]), (a, b));
    println!("a = {}, b = {}; {:?}", regs[2], regs[3], driver.stats());
}
