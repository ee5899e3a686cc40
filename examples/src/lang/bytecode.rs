//! Register bytecode of the example language, its compiler from the AST, and the liveness
//! analysis that tells the recorder which frame slots a guard must save.
//!
//! Every variable and every temporary is a slot of the frame (a register machine, so that a
//! guard's fail arguments are simply "the slots live at the guard's bytecode position").
//! Loops compile to
//! ```text
//! H:   loop_header n          ; counts iterations, enters native code when compiled
//!      <cond into t>
//!      jump_if_false t, END   ; flagged as the loop's own exit test
//!      <body>
//!      jump H                 ; back edge
//! END:
//! ```

use super::parser::{parse, BinOp, Expr, ParseError, Pos, Stmt, UnOp};
use std::collections::HashMap;
use std::fmt;

/// A frame slot index.
pub type Slot = u16;

/// Maximum number of slots of a program (liveness sets are 128-bit masks).
pub const MAX_SLOTS: usize = 128;

/// The builtin functions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `len(array)`.
    Len,
    /// `abs(x)` (int or float).
    Abs,
    /// `sqrt(x)`: float square root (a call to a Rust function in traces).
    Sqrt,
    /// `float(x)`.
    Float,
    /// `int(x)`: truncation toward zero.
    Int,
    /// `array(n)`: a zero-filled integer array.
    Array,
    /// `pair(a, b)`.
    Pair,
    /// `fst(p)`.
    Fst,
    /// `snd(p)`.
    Snd,
}

impl Builtin {
    /// The builtin named `name`, with its arity.
    pub fn lookup(name: &str) -> Option<(Builtin, usize)> {
        Some(match name {
            "len" => (Builtin::Len, 1),
            "abs" => (Builtin::Abs, 1),
            "sqrt" => (Builtin::Sqrt, 1),
            "float" => (Builtin::Float, 1),
            "int" => (Builtin::Int, 1),
            "array" => (Builtin::Array, 1),
            "pair" => (Builtin::Pair, 2),
            "fst" => (Builtin::Fst, 1),
            "snd" => (Builtin::Snd, 1),
            _ => return None,
        })
    }
}

/// A constant of the program (boxed once when the program is loaded).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Constant {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

/// One instruction.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Instr {
    /// `dst = constants[k]`.
    LoadConst {
        /// Destination.
        dst: Slot,
        /// Constant index.
        k: u32,
    },
    /// `dst = src`.
    Move {
        /// Destination.
        dst: Slot,
        /// Source.
        src: Slot,
    },
    /// `dst = a op b`.
    Binary {
        /// Operator.
        op: BinOp,
        /// Destination.
        dst: Slot,
        /// Left operand.
        a: Slot,
        /// Right operand.
        b: Slot,
    },
    /// `dst = op a`.
    Unary {
        /// Operator.
        op: UnOp,
        /// Destination.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `dst = arr[idx]`.
    GetItem {
        /// Destination.
        dst: Slot,
        /// The array.
        arr: Slot,
        /// The index.
        idx: Slot,
    },
    /// `arr[idx] = val`.
    SetItem {
        /// The array.
        arr: Slot,
        /// The index.
        idx: Slot,
        /// The value.
        val: Slot,
    },
    /// `dst = builtin(args[0], ..)` (the first `argc` entries of `args` are used).
    Call {
        /// Destination.
        dst: Slot,
        /// Which builtin.
        builtin: Builtin,
        /// Argument slots.
        args: [Slot; 2],
        /// Number of arguments.
        argc: u8,
    },
    /// Print a value, followed by a newline when `last`, else by a space.
    Print {
        /// The value.
        arg: Slot,
        /// Whether this ends the line.
        last: bool,
    },
    /// Unconditional jump (a back edge when `target` is a `LoopHeader` before it).
    Jump {
        /// Target position.
        target: u32,
    },
    /// Jump when the condition is false (zero).
    JumpIfFalse {
        /// The condition slot.
        cond: Slot,
        /// Target position.
        target: u32,
        /// Whether this is the exit test of the loop whose header precedes it.
        loop_test: bool,
    },
    /// The header of loop number `id`: counts iterations and enters compiled code.
    LoopHeader {
        /// Loop number (index into per-loop tables).
        id: u32,
    },
    /// End of the program.
    Halt,
}

/// A compiled program.
#[derive(Clone, Debug)]
pub struct Program {
    /// The instructions.
    pub code: Vec<Instr>,
    /// The source position of each instruction (for error messages).
    pub positions: Vec<Pos>,
    /// The constants.
    pub constants: Vec<Constant>,
    /// Number of frame slots.
    pub num_slots: usize,
    /// Variable names by slot (temporaries are named `$tN`).
    pub slot_names: Vec<String>,
    /// Number of loops (`LoopHeader` ids are `0..num_loops`).
    pub num_loops: usize,
    /// Slots live on entry to each instruction, as a bit mask.
    pub live_in: Vec<u128>,
    /// Variables given a value before the program starts (`name`, slot).
    pub params: Vec<(String, Slot)>,
}

impl Program {
    /// The slots live on entry to instruction `pc`, in increasing order.
    pub fn live_slots(&self, pc: usize) -> Vec<Slot> {
        let mask = self.live_in[pc];
        (0..self.num_slots as Slot)
            .filter(|&s| mask & (1u128 << s) != 0)
            .collect()
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (pc, i) in self.code.iter().enumerate() {
            writeln!(f, "{pc:4}  {i:?}")?;
        }
        Ok(())
    }
}

/// A compile error (a syntax error or a semantic one such as an unknown builtin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error at {}: {}", self.pos, self.message)
    }
}

impl std::error::Error for CompileError {}

impl From<ParseError> for CompileError {
    fn from(e: ParseError) -> Self {
        CompileError {
            pos: e.pos,
            message: e.message,
        }
    }
}

struct Compiler {
    code: Vec<Instr>,
    positions: Vec<Pos>,
    constants: Vec<Constant>,
    vars: HashMap<String, Slot>,
    slot_names: Vec<String>,
    /// Number of temporaries in use; temporaries are a stack, released per expression.
    temp_top: usize,
    /// The slots of the temporaries (slot of temporary k).
    temps: Vec<Slot>,
    num_loops: u32,
    pos: Pos,
}

type CResult<T> = Result<T, CompileError>;

impl Compiler {
    fn err<T>(&self, pos: Pos, message: impl Into<String>) -> CResult<T> {
        Err(CompileError {
            pos,
            message: message.into(),
        })
    }
    fn emit(&mut self, i: Instr) -> usize {
        self.code.push(i);
        self.positions.push(self.pos);
        self.code.len() - 1
    }
    fn var_slot(&mut self, name: &str) -> CResult<Slot> {
        if let Some(&s) = self.vars.get(name) {
            return Ok(s);
        }
        let s = self.new_slot(name.to_string())?;
        self.vars.insert(name.to_string(), s);
        Ok(s)
    }
    fn new_slot(&mut self, name: String) -> CResult<Slot> {
        if self.slot_names.len() >= MAX_SLOTS {
            return self.err(
                self.pos,
                format!("too many variables and temporaries (at most {MAX_SLOTS})"),
            );
        }
        self.slot_names.push(name);
        Ok((self.slot_names.len() - 1) as Slot)
    }
    /// A temporary: temporaries are allocated as a stack and released per statement.
    fn temp(&mut self) -> CResult<Slot> {
        let s = self.temp_top;
        self.temp_top += 1;
        while self.temps.len() <= s {
            let name = format!("$t{}", self.temps.len());
            let slot = self.new_slot(name)?;
            self.temps.push(slot);
        }
        Ok(self.temps[s])
    }
    fn constant(&mut self, c: Constant) -> u32 {
        if let Some(i) = self.constants.iter().position(|&x| match (x, c) {
            (Constant::Int(a), Constant::Int(b)) => a == b,
            (Constant::Float(a), Constant::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }) {
            return i as u32;
        }
        self.constants.push(c);
        (self.constants.len() - 1) as u32
    }

    fn block(&mut self, stmts: &[Stmt]) -> CResult<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> CResult<()> {
        self.temp_top = 0;
        match s {
            Stmt::Assign(name, e, pos) => {
                self.pos = *pos;
                let dst = self.var_slot(name)?;
                self.expr_into(e, dst)?;
            }
            Stmt::SetItem(a, i, v, pos) => {
                self.pos = *pos;
                let arr = self.expr(a)?;
                let idx = self.expr(i)?;
                let val = self.expr(v)?;
                self.pos = *pos;
                self.emit(Instr::SetItem { arr, idx, val });
            }
            Stmt::Print(args, pos) => {
                self.pos = *pos;
                if args.is_empty() {
                    return self.err(*pos, "print needs at least one argument");
                }
                for (k, a) in args.iter().enumerate() {
                    self.temp_top = 0;
                    let arg = self.expr(a)?;
                    self.pos = *pos;
                    self.emit(Instr::Print {
                        arg,
                        last: k + 1 == args.len(),
                    });
                }
            }
            Stmt::Expr(e, pos) => {
                self.pos = *pos;
                self.expr(e)?;
            }
            Stmt::If(cond, then, otherwise, pos) => {
                self.pos = *pos;
                let c = self.expr(cond)?;
                self.pos = *pos;
                let jf = self.emit(Instr::JumpIfFalse {
                    cond: c,
                    target: 0,
                    loop_test: false,
                });
                self.block(then)?;
                if otherwise.is_empty() {
                    let end = self.code.len() as u32;
                    self.patch(jf, end);
                } else {
                    self.pos = *pos;
                    let j = self.emit(Instr::Jump { target: 0 });
                    let else_start = self.code.len() as u32;
                    self.patch(jf, else_start);
                    self.block(otherwise)?;
                    let end = self.code.len() as u32;
                    self.patch(j, end);
                }
            }
            Stmt::While(cond, body, pos) => {
                self.pos = *pos;
                let id = self.num_loops;
                self.num_loops += 1;
                let header = self.emit(Instr::LoopHeader { id }) as u32;
                let c = self.expr(cond)?;
                self.pos = *pos;
                let jf = self.emit(Instr::JumpIfFalse {
                    cond: c,
                    target: 0,
                    loop_test: true,
                });
                self.block(body)?;
                self.pos = *pos;
                self.emit(Instr::Jump { target: header });
                let end = self.code.len() as u32;
                self.patch(jf, end);
            }
        }
        Ok(())
    }

    fn patch(&mut self, at: usize, to: u32) {
        match &mut self.code[at] {
            Instr::Jump { target } | Instr::JumpIfFalse { target, .. } => *target = to,
            _ => unreachable!("patching a non-jump"),
        }
    }

    /// Evaluate `e` into some slot (a variable's own slot when `e` is a variable).
    fn expr(&mut self, e: &Expr) -> CResult<Slot> {
        if let Expr::Var(name, pos) = e {
            return match self.vars.get(name) {
                Some(&s) => Ok(s),
                None => self.err(*pos, format!("variable `{name}` is never assigned")),
            };
        }
        let t = self.temp()?;
        self.expr_into(e, t)?;
        Ok(t)
    }

    /// Evaluate `e` into `dst`.
    fn expr_into(&mut self, e: &Expr, dst: Slot) -> CResult<()> {
        match e {
            Expr::Int(v) => {
                let k = self.constant(Constant::Int(*v));
                self.emit(Instr::LoadConst { dst, k });
            }
            Expr::Float(v) => {
                let k = self.constant(Constant::Float(*v));
                self.emit(Instr::LoadConst { dst, k });
            }
            Expr::Var(name, pos) => {
                let Some(&src) = self.vars.get(name) else {
                    return self.err(*pos, format!("variable `{name}` is never assigned"));
                };
                if src != dst {
                    self.pos = *pos;
                    self.emit(Instr::Move { dst, src });
                }
            }
            Expr::Binary(op, a, b, pos) => {
                let mark = self.temp_top;
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.pos = *pos;
                self.emit(Instr::Binary { op: *op, dst, a, b });
                self.temp_top = mark;
            }
            Expr::Unary(op, a, pos) => {
                let mark = self.temp_top;
                let a = self.expr(a)?;
                self.pos = *pos;
                self.emit(Instr::Unary { op: *op, dst, a });
                self.temp_top = mark;
            }
            Expr::Index(a, i, pos) => {
                let mark = self.temp_top;
                let arr = self.expr(a)?;
                let idx = self.expr(i)?;
                self.pos = *pos;
                self.emit(Instr::GetItem { dst, arr, idx });
                self.temp_top = mark;
            }
            Expr::Call(name, args, pos) => {
                let Some((builtin, arity)) = Builtin::lookup(name) else {
                    return self.err(*pos, format!("unknown function `{name}`"));
                };
                if args.len() != arity {
                    return self.err(*pos, format!("`{name}` takes {arity} argument(s), got {}", args.len()));
                }
                let mark = self.temp_top;
                let mut slots = [0 as Slot; 2];
                for (k, a) in args.iter().enumerate() {
                    slots[k] = self.expr(a)?;
                }
                self.pos = *pos;
                self.emit(Instr::Call {
                    dst,
                    builtin,
                    args: slots,
                    argc: args.len() as u8,
                });
                self.temp_top = mark;
            }
        }
        Ok(())
    }
}

/// Compute the slots live on entry to each instruction (backward dataflow to a fixed point).
fn liveness(code: &[Instr]) -> Vec<u128> {
    let bit = |s: Slot| 1u128 << s;
    let n = code.len();
    let mut live_in = vec![0u128; n];
    loop {
        let mut changed = false;
        for pc in (0..n).rev() {
            let succ = |t: usize| if t < n { live_in[t] } else { 0 };
            let (out, uses, defs) = match code[pc] {
                Instr::LoadConst { dst, .. } => (succ(pc + 1), 0, bit(dst)),
                Instr::Move { dst, src } => (succ(pc + 1), bit(src), bit(dst)),
                Instr::Binary { dst, a, b, .. } => (succ(pc + 1), bit(a) | bit(b), bit(dst)),
                Instr::Unary { dst, a, .. } => (succ(pc + 1), bit(a), bit(dst)),
                Instr::GetItem { dst, arr, idx } => (succ(pc + 1), bit(arr) | bit(idx), bit(dst)),
                Instr::SetItem { arr, idx, val } => (succ(pc + 1), bit(arr) | bit(idx) | bit(val), 0),
                Instr::Call { dst, args, argc, .. } => (
                    succ(pc + 1),
                    args[..argc as usize].iter().fold(0, |m, &a| m | bit(a)),
                    bit(dst),
                ),
                Instr::Print { arg, .. } => (succ(pc + 1), bit(arg), 0),
                Instr::Jump { target } => (succ(target as usize), 0, 0),
                Instr::JumpIfFalse { cond, target, .. } => (succ(pc + 1) | succ(target as usize), bit(cond), 0),
                Instr::LoopHeader { .. } => (succ(pc + 1), 0, 0),
                Instr::Halt => (0, 0, 0),
            };
            let new = uses | (out & !defs);
            if new != live_in[pc] {
                live_in[pc] = new;
                changed = true;
            }
        }
        if !changed {
            return live_in;
        }
    }
}

/// Compile source text. `params` names variables that the runner sets before the program
/// starts (e.g. `N`, the problem size).
pub fn compile(src: &str, params: &[&str]) -> Result<Program, CompileError> {
    let ast = parse(src)?;
    let mut c = Compiler {
        code: Vec::new(),
        positions: Vec::new(),
        constants: Vec::new(),
        vars: HashMap::new(),
        slot_names: Vec::new(),
        temp_top: 0,
        temps: Vec::new(),
        num_loops: 0,
        pos: Pos { line: 1, col: 1 },
    };
    let mut ps = Vec::new();
    for p in params {
        let s = c.var_slot(p)?;
        ps.push((p.to_string(), s));
    }
    c.block(&ast)?;
    c.emit(Instr::Halt);
    let live_in = liveness(&c.code);
    Ok(Program {
        code: c.code,
        positions: c.positions,
        constants: c.constants,
        num_slots: c.slot_names.len(),
        slot_names: c.slot_names,
        num_loops: c.num_loops as usize,
        live_in,
        params: ps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn while_loop_shape_and_liveness() {
        let p = compile("s = 0\ni = 0\nwhile i < n { s = s + i; i = i + 1 }\nprint(s)", &["n"]).unwrap();
        let header = p
            .code
            .iter()
            .position(|i| matches!(i, Instr::LoopHeader { .. }))
            .unwrap();
        let names = |pc: usize| -> Vec<String> {
            p.live_slots(pc)
                .iter()
                .map(|&s| p.slot_names[s as usize].clone())
                .collect()
        };
        // At the loop header, n, s and i are live; temporaries are not.
        assert_eq!(names(header), vec!["n", "s", "i"]);
        let jf = p
            .code
            .iter()
            .position(|i| matches!(i, Instr::JumpIfFalse { loop_test: true, .. }))
            .unwrap();
        let Instr::JumpIfFalse { target, .. } = p.code[jf] else {
            unreachable!()
        };
        assert!(matches!(p.code[target as usize - 1], Instr::Jump { target: t } if t as usize == header));
        // After the loop only s is live (for the print).
        assert_eq!(names(target as usize), vec!["s"]);
        assert_eq!(p.num_loops, 1);
    }

    #[test]
    fn semantic_errors() {
        let e = compile("x = y + 1", &[]).unwrap_err();
        assert!(e.message.contains("`y`"), "{e}");
        assert_eq!((e.pos.line, e.pos.col), (1, 5));
        let e = compile("x = foo(1)", &[]).unwrap_err();
        assert!(e.message.contains("unknown function"));
        let e = compile("x = pair(1)", &[]).unwrap_err();
        assert!(e.message.contains("takes 2"));
    }

    #[test]
    fn nested_calls_use_distinct_temporaries() {
        let p = compile("x = pair(1 + 2, pair(3, 4 * 5))", &[]).unwrap();
        let calls: Vec<_> = p
            .code
            .iter()
            .filter_map(|i| match i {
                Instr::Call { args, .. } => Some(*args),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 2);
        // The inner call's arguments must not overwrite the outer call's first argument.
        assert!(!calls[0].contains(&calls[1][0]), "{calls:?}");
    }
}
