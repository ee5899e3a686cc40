//! The trace recorder: while the interpreter executes one iteration of a hot loop, it mirrors
//! every instruction into a [`TraceBuilder`], the way PyPy's meta-interpreter does.
//!
//! # What a recorded trace looks like
//!
//! Every value of the language is a boxed heap object, so each arithmetic result is a fresh
//! box in the trace:
//! ```text
//! guard_class(p1, INT)          ; once per value: the recorder remembers known classes
//! i2 = getfield_gc_i(p1)        ; read the int field (never cached by the recorder)
//! i3 = int_add_ovf(i2, i4)
//! guard_no_overflow() [...]
//! p5 = new_with_vtable()        ; box the result
//! setfield_gc(p5, i3)
//! ```
//! Each guard's resume key is the bytecode position of the instruction being recorded and its
//! fail arguments are the boxes of the slots live on entry to that instruction (from the
//! compiler's liveness analysis). On a guard failure the interpreter writes the values back
//! into those slots and re-executes the instruction, which is safe because every guard of an
//! instruction is recorded before the instruction's side effects.
//!
//! # Two shapes of loop header
//!
//! - **Boxed** (used for "JIT unoptimized"): the trace inputs are the boxes of the live slots
//!   and the `label` carries boxes, exactly what was executed.
//! - **Unboxed** (used for "JIT optimized"): the recorder specializes the loop on the classes
//!   seen at the header. A preamble guards the class of each live slot and unboxes ints and
//!   floats; the `label` carries raw ints and floats; the iteration starts by re-boxing them
//!   (`new_with_vtable` + `setfield_gc`), and the `jump` unboxes again. Our optimizer has no
//!   loop peeling, so this is how loop-carried values get out of their boxes: the re-boxing
//!   allocations are removed by the optimizer's allocation removal (without it this shape
//!   would be *slower*, because it allocates a box per loop variable per iteration).

use crate::lang::bytecode::{Builtin, Instr, Program, Slot};
use crate::lang::heap::*;
use crate::lang::parser::{BinOp, UnOp};

mod bridge;
mod descrs;
use std::collections::HashMap;
use trace_ir::{Descr, DescrRef, FieldDescr, GuardId, Kind, Opcode, Trace, TraceBuilder, Value};

/// The float square root the traces call (`call_f`) through a real function pointer.
pub extern "sysv64" fn sqrt_f64(x: f64) -> f64 {
    x.sqrt()
}

/// How a live slot crosses the loop header in an unboxed-shape trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Passed as a box (boxed shape, or an unboxed-shape slot of another class).
    Boxed,
    /// An int box, unboxed across the back edge.
    Int,
    /// A float box, unboxed across the back edge.
    Float,
    /// An object of this class (arrays, pairs, None), passed as a reference.
    Object(u64),
}

/// Why recording stopped without a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Abort(pub String);

/// How a recorded loop's header looks: what entering it and a bridge back to it need.
#[derive(Clone, Debug)]
pub struct LoopShape {
    /// The loop header's position.
    pub header_pc: usize,
    /// The live slots at the header, in input order (the trace inputs are their boxes).
    pub entry_slots: Vec<Slot>,
    /// How the live slots cross the loop's label (in its parameter order).
    pub params: Vec<(Slot, ParamKind)>,
}

/// A finished recording.
#[derive(Debug)]
pub struct Recorded {
    /// The trace.
    pub trace: Trace,
    /// The loop's header.
    pub shape: LoopShape,
    /// Guard ids of the loop's own exit test (expected to fail once per loop run).
    pub loop_exit_guards: Vec<GuardId>,
}

struct Descrs {
    int_field: DescrRef,
    float_field: DescrRef,
    first: DescrRef,
    second: DescrRef,
    int_size: DescrRef,
    float_size: DescrRef,
    pair_size: DescrRef,
    array: DescrRef,
    sqrt: DescrRef,
}

/// Records one iteration of the loop whose header is at `header_pc`.
pub struct Recorder {
    b: TraceBuilder,
    d: Descrs,
    header_pc: usize,
    loop_id: u32,
    /// Trace value of each slot (the box).
    vals: Vec<Option<Value>>,
    /// Classes known for trace values (allocated in the trace, guarded, or constants).
    known_class: HashMap<Value, u64>,
    params: Vec<(Slot, ParamKind)>,
    entry_slots: Vec<Slot>,
    loop_exit_guards: Vec<GuardId>,
}

/// The interpreter's state at the instruction being recorded.
#[derive(Copy, Clone)]
struct Frame<'a> {
    program: &'a Program,
    pc: usize,
    slots: &'a [u64],
    heap: &'a Heap,
}

impl Frame<'_> {
    /// The class of the object in slot `s`.
    fn class(&self, s: Slot) -> u64 {
        self.heap.class_of(self.slots[s as usize])
    }
}

fn field(name: &str, offset: i64, kind: Kind) -> Descr {
    Descr::Field(FieldDescr {
        name: name.into(),
        offset,
        size: 8,
        signed: true,
        kind,
        immutable: true,
    })
}

impl Recorder {
    /// Start recording at the loop header `header_pc` (a `LoopHeader` instruction), with the
    /// frame's current slot values. `unbox` selects the unboxed header shape.
    pub fn start(program: &Program, header_pc: usize, slots: &[u64], heap: &Heap, unbox: bool) -> Recorder {
        let Instr::LoopHeader { id } = program.code[header_pc] else {
            panic!("recording must start at a loop header");
        };
        let mut b = TraceBuilder::new();
        let d = Descrs::new(&mut b);
        let entry_slots = program.live_slots(header_pc);
        let inputs: Vec<Value> = entry_slots.iter().map(|_| b.input(Kind::Ref)).collect();
        let mut r = Recorder {
            b,
            d,
            header_pc,
            loop_id: id,
            vals: vec![None; program.num_slots],
            known_class: HashMap::new(),
            params: Vec::new(),
            entry_slots: entry_slots.clone(),
            loop_exit_guards: Vec::new(),
        };
        for (&s, &v) in entry_slots.iter().zip(&inputs) {
            r.vals[s as usize] = Some(v);
        }
        if !unbox {
            let params = r.b.label(&inputs);
            for (&s, &p) in entry_slots.iter().zip(&params) {
                r.vals[s as usize] = Some(p);
                r.params.push((s, ParamKind::Boxed));
            }
            return r;
        }
        // Unboxed shape: preamble, label, re-boxing.
        let mut label_args = Vec::new();
        for &s in &entry_slots {
            let obj = slots[s as usize];
            let class = heap.class_of(obj);
            let v = r.vals[s as usize].expect("input");
            r.guard_class_at(v, class, header_pc);
            let (kind, arg) = match class {
                INT_CLASS => (
                    ParamKind::Int,
                    r.b.op_with_descr(Opcode::GetfieldGcI, &[v], r.d.int_field),
                ),
                FLOAT_CLASS => (
                    ParamKind::Float,
                    r.b.op_with_descr(Opcode::GetfieldGcF, &[v], r.d.float_field),
                ),
                c => (ParamKind::Object(c), v),
            };
            r.params.push((s, kind));
            label_args.push(arg);
        }
        let params = r.b.label(&label_args);
        for (k, &p) in params.iter().enumerate() {
            let (s, kind) = r.params[k];
            let v = match kind {
                ParamKind::Int => r.box_int(p),
                ParamKind::Float => r.box_float(p),
                ParamKind::Object(c) => {
                    r.known_class.insert(p, c);
                    p
                }
                ParamKind::Boxed => p,
            };
            r.vals[s as usize] = Some(v);
        }
        r
    }

    /// The loop (`LoopHeader` id) being recorded.
    pub fn loop_id(&self) -> u32 {
        self.loop_id
    }

    /// The bytecode position of the header being recorded.
    pub fn header_pc(&self) -> usize {
        self.header_pc
    }

    fn val(&self, s: Slot) -> Result<Value, Abort> {
        self.vals[s as usize].ok_or_else(|| Abort(format!("slot {s} read before it has a trace value")))
    }

    fn fail_args(&self, program: &Program, pc: usize) -> Result<Vec<Value>, Abort> {
        program.live_slots(pc).into_iter().map(|s| self.val(s)).collect()
    }

    fn guard(&mut self, program: &Program, op: Opcode, args: &[Value], pc: usize) -> Result<GuardId, Abort> {
        let fa = self.fail_args(program, pc)?;
        Ok(self.b.guard(op, args, &fa, pc as u64))
    }

    /// A guard in the preamble or at the back edge: fail arguments are the current boxes of
    /// the slots live at the header.
    fn guard_class_at(&mut self, v: Value, class: u64, pc: usize) {
        if self.known_class.get(&v) == Some(&class) || v.is_const() {
            return;
        }
        let fa: Vec<Value> = self
            .entry_slots
            .iter()
            .map(|&s| self.vals[s as usize].expect("live at header"))
            .collect();
        let c = self.b.const_int(class as i64);
        self.b.guard(Opcode::GuardClass, &[v, c], &fa, pc as u64);
        self.known_class.insert(v, class);
    }

    fn ensure_class(&mut self, program: &Program, v: Value, class: u64, pc: usize) -> Result<(), Abort> {
        if self.known_class.get(&v) == Some(&class) || v.is_const() {
            return Ok(());
        }
        let c = self.b.const_int(class as i64);
        self.guard(program, Opcode::GuardClass, &[v, c], pc)?;
        self.known_class.insert(v, class);
        Ok(())
    }

    fn box_int(&mut self, i: Value) -> Value {
        let p = self.b.op_with_descr(Opcode::NewWithVtable, &[], self.d.int_size);
        self.b.op_with_descr(Opcode::SetfieldGc, &[p, i], self.d.int_field);
        self.known_class.insert(p, INT_CLASS);
        p
    }

    fn box_float(&mut self, f: Value) -> Value {
        let p = self.b.op_with_descr(Opcode::NewWithVtable, &[], self.d.float_size);
        self.b.op_with_descr(Opcode::SetfieldGc, &[p, f], self.d.float_field);
        self.known_class.insert(p, FLOAT_CLASS);
        p
    }

    /// The int inside the box in `slot` (concretely `obj`).
    fn int_of(&mut self, program: &Program, slot: Slot, obj: u64, heap: &Heap, pc: usize) -> Result<Value, Abort> {
        let v = self.val(slot)?;
        if heap.class_of(obj) != INT_CLASS {
            return Err(Abort("type error while recording".into()));
        }
        if v.is_const() {
            // An immutable field of a constant object: read it now (as PyPy's tracer does).
            return Ok(self.b.const_int(heap.int_value(obj)));
        }
        self.ensure_class(program, v, INT_CLASS, pc)?;
        Ok(self.b.op_with_descr(Opcode::GetfieldGcI, &[v], self.d.int_field))
    }

    /// The float inside the box in `slot`; an int is converted (`cast_int_to_float`).
    fn float_of(&mut self, program: &Program, slot: Slot, obj: u64, heap: &Heap, pc: usize) -> Result<Value, Abort> {
        let v = self.val(slot)?;
        match heap.class_of(obj) {
            FLOAT_CLASS => {
                if v.is_const() {
                    return Ok(self.b.const_float(heap.float_value(obj)));
                }
                self.ensure_class(program, v, FLOAT_CLASS, pc)?;
                Ok(self.b.op_with_descr(Opcode::GetfieldGcF, &[v], self.d.float_field))
            }
            INT_CLASS => {
                if v.is_const() {
                    return Ok(self.b.const_float(heap.int_value(obj) as f64));
                }
                let i = self.int_of(program, slot, obj, heap, pc)?;
                Ok(self.b.op(Opcode::CastIntToFloat, &[i]))
            }
            _ => Err(Abort("type error while recording".into())),
        }
    }

    fn set(&mut self, dst: Slot, v: Value) {
        self.vals[dst as usize] = Some(v);
    }

    /// The trace recorded so far.
    pub fn builder(&self) -> &TraceBuilder {
        &self.b
    }

    /// Record instruction `pc` before the interpreter executes it, given the frame's slots
    /// and the boxes of the program's constants.
    /// An `Err` abandons the recording (the interpreter then just continues).
    pub fn record(
        &mut self,
        program: &Program,
        pc: usize,
        slots: &[u64],
        heap: &Heap,
        const_boxes: &[u64],
    ) -> Result<(), Abort> {
        let frame = Frame {
            program,
            pc,
            slots,
            heap,
        };
        match program.code[pc] {
            Instr::LoadConst { dst, k } => {
                // Constants are prebuilt boxes: the trace refers to them by address.
                let obj = const_boxes[k as usize];
                let v = self.b.const_ref(obj);
                self.known_class.insert(v, heap.class_of(obj));
                self.set(dst, v);
            }
            Instr::Move { dst, src } => {
                let v = self.val(src)?;
                self.set(dst, v);
            }
            Instr::Binary { op, dst, a, b } => {
                let v = self.record_binary(frame, op, a, b)?;
                self.set(dst, v);
            }
            Instr::Unary { op, dst, a } => {
                let v = self.record_unary(frame, op, a)?;
                self.set(dst, v);
            }
            Instr::GetItem { dst, arr, idx } => {
                let (av, i) = self.array_index(program, arr, idx, slots, heap, pc)?;
                let item = self.b.op_with_descr(Opcode::GetarrayitemGcI, &[av, i], self.d.array);
                let v = self.box_int(item);
                self.set(dst, v);
            }
            Instr::SetItem { arr, idx, val } => {
                if frame.class(val) != INT_CLASS {
                    return Err(Abort("type error while recording".into()));
                }
                let (av, i) = self.array_index(program, arr, idx, slots, heap, pc)?;
                let x = self.int_of(program, val, slots[val as usize], heap, pc)?;
                self.b.op_with_descr(Opcode::SetarrayitemGc, &[av, i, x], self.d.array);
            }
            Instr::Call {
                dst,
                builtin,
                args,
                argc: _,
            } => {
                let v = self.record_call(frame, builtin, args)?;
                self.set(dst, v);
            }
            Instr::Print { .. } => return Err(Abort("print is not traced".into())),
            Instr::Jump { .. } => {}
            Instr::JumpIfFalse {
                cond,
                loop_test,
                target,
            } => self.record_branch(frame, cond, loop_test, target)?,
            Instr::LoopHeader { .. } => return Err(Abort("nested loop while recording".into())),
            Instr::Halt => return Err(Abort("program ended while recording".into())),
        }
        Ok(())
    }

    /// The boxed result of a binary operator: int arithmetic when both operands are ints (and
    /// the operator is not `/`), float arithmetic when both are numbers.
    fn record_binary(&mut self, frame: Frame<'_>, op: BinOp, a: Slot, b: Slot) -> Result<Value, Abort> {
        let (program, pc, slots, heap) = (frame.program, frame.pc, frame.slots, frame.heap);
        let (ca, cb) = (frame.class(a), frame.class(b));
        if ca == INT_CLASS && cb == INT_CLASS && op != BinOp::Div {
            let ia = self.int_of(program, a, slots[a as usize], heap, pc)?;
            let ib = self.int_of(program, b, slots[b as usize], heap, pc)?;
            self.int_binary(program, op, ia, ib, heap.int_value(slots[b as usize]), pc)
        } else if matches!(ca, INT_CLASS | FLOAT_CLASS) && matches!(cb, INT_CLASS | FLOAT_CLASS) {
            let fa = self.float_of(program, a, slots[a as usize], heap, pc)?;
            let fb = self.float_of(program, b, slots[b as usize], heap, pc)?;
            self.float_binary(program, op, fa, fb, pc)
        } else {
            Err(Abort("unsupported operand types".into()))
        }
    }

    /// The boxed result of a unary operator on the value in slot `a`.
    fn record_unary(&mut self, frame: Frame<'_>, op: UnOp, a: Slot) -> Result<Value, Abort> {
        let (program, pc, slots, heap) = (frame.program, frame.pc, frame.slots, frame.heap);
        let obj = slots[a as usize];
        Ok(match (op, heap.class_of(obj)) {
            (UnOp::Neg, INT_CLASS) => {
                let i = self.int_of(program, a, obj, heap, pc)?;
                let zero = self.b.const_int(0);
                let r = self.b.op(Opcode::IntSubOvf, &[zero, i]);
                self.guard(program, Opcode::GuardNoOverflow, &[], pc)?;
                self.box_int(r)
            }
            (UnOp::Neg, FLOAT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                let r = self.b.op(Opcode::FloatNeg, &[f]);
                self.box_float(r)
            }
            (UnOp::Invert, INT_CLASS) => {
                let i = self.int_of(program, a, obj, heap, pc)?;
                let r = self.b.op(Opcode::IntInvert, &[i]);
                self.box_int(r)
            }
            (UnOp::Not, INT_CLASS) => {
                let i = self.int_of(program, a, obj, heap, pc)?;
                let r = self.b.op(Opcode::IntIsZero, &[i]);
                self.box_int(r)
            }
            (UnOp::Not, FLOAT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                let zero = self.b.const_float(0.0);
                let r = self.b.op(Opcode::FloatEq, &[f, zero]);
                self.box_int(r)
            }
            (UnOp::Not, c) => {
                let v = self.val(a)?;
                self.ensure_class(program, v, c, pc)?;
                let r = self.b.const_int((c == NONE_CLASS) as i64);
                self.box_int(r)
            }
            _ => return Err(Abort("unsupported operand type".into())),
        })
    }

    /// The result of calling `builtin` on the values in `args` (the first one decides which
    /// specialization is recorded).
    fn record_call(&mut self, frame: Frame<'_>, builtin: Builtin, args: [Slot; 2]) -> Result<Value, Abort> {
        let (program, pc, slots, heap) = (frame.program, frame.pc, frame.slots, frame.heap);
        let a = args[0];
        let obj = slots[a as usize];
        Ok(match (builtin, heap.class_of(obj)) {
            (Builtin::Len, ARRAY_CLASS) => {
                let av = self.val(a)?;
                self.ensure_class(program, av, ARRAY_CLASS, pc)?;
                let n = self.b.op_with_descr(Opcode::ArraylenGc, &[av], self.d.array);
                self.box_int(n)
            }
            (Builtin::Abs, INT_CLASS) => {
                let i = self.int_of(program, a, obj, heap, pc)?;
                let zero = self.b.const_int(0);
                let neg = self.b.op(Opcode::IntLt, &[i, zero]);
                if heap.int_value(obj) < 0 {
                    self.guard(program, Opcode::GuardTrue, &[neg], pc)?;
                    let r = self.b.op(Opcode::IntSubOvf, &[zero, i]);
                    self.guard(program, Opcode::GuardNoOverflow, &[], pc)?;
                    self.box_int(r)
                } else {
                    self.guard(program, Opcode::GuardFalse, &[neg], pc)?;
                    self.box_int(i)
                }
            }
            (Builtin::Abs, FLOAT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                let r = self.b.op(Opcode::FloatAbs, &[f]);
                self.box_float(r)
            }
            (Builtin::Sqrt, INT_CLASS | FLOAT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                let fp = self
                    .b
                    .const_int(sqrt_f64 as extern "sysv64" fn(f64) -> f64 as usize as i64);
                let r = self.b.op_with_descr(Opcode::CallF, &[fp, f], self.d.sqrt);
                self.box_float(r)
            }
            (Builtin::Float, INT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                self.box_float(f)
            }
            (Builtin::Float, FLOAT_CLASS) | (Builtin::Int, INT_CLASS) => {
                let v = self.val(a)?;
                self.ensure_class(program, v, heap.class_of(obj), pc)?;
                v
            }
            (Builtin::Int, FLOAT_CLASS) => {
                let f = self.float_of(program, a, obj, heap, pc)?;
                let i = self.b.op(Opcode::CastFloatToInt, &[f]);
                self.box_int(i)
            }
            (Builtin::Pair, _) => {
                let (x, y) = (self.val(args[0])?, self.val(args[1])?);
                let p = self.b.op_with_descr(Opcode::NewWithVtable, &[], self.d.pair_size);
                self.b.op_with_descr(Opcode::SetfieldGc, &[p, x], self.d.first);
                self.b.op_with_descr(Opcode::SetfieldGc, &[p, y], self.d.second);
                self.known_class.insert(p, PAIR_CLASS);
                p
            }
            (Builtin::Fst | Builtin::Snd, PAIR_CLASS) => {
                let pv = self.val(a)?;
                self.ensure_class(program, pv, PAIR_CLASS, pc)?;
                let d = if builtin == Builtin::Fst {
                    self.d.first
                } else {
                    self.d.second
                };
                self.b.op_with_descr(Opcode::GetfieldGcR, &[pv], d)
            }
            (Builtin::Array, _) => return Err(Abort("array allocation is not traced".into())),
            _ => return Err(Abort("type error while recording".into())),
        })
    }

    /// A conditional jump: guards the truth of `cond` as it is now, and abandons the recording
    /// when the loop's own exit test exits the loop.
    fn record_branch(&mut self, frame: Frame<'_>, cond: Slot, loop_test: bool, target: u32) -> Result<(), Abort> {
        let (program, pc, slots, heap) = (frame.program, frame.pc, frame.slots, frame.heap);
        let obj = slots[cond as usize];
        let v = self.val(cond)?;
        let (truth, test) = match heap.class_of(obj) {
            INT_CLASS => {
                let i = self.int_of(program, cond, obj, heap, pc)?;
                (heap.int_value(obj) != 0, Some(i))
            }
            FLOAT_CLASS => {
                let f = self.float_of(program, cond, obj, heap, pc)?;
                let zero = self.b.const_float(0.0);
                (
                    heap.float_value(obj) != 0.0,
                    Some(self.b.op(Opcode::FloatNe, &[f, zero])),
                )
            }
            c => {
                self.ensure_class(program, v, c, pc)?;
                (c != NONE_CLASS, None)
            }
        };
        if loop_test && !truth && (target as usize) > self.header_pc && pc > self.header_pc {
            return Err(Abort("the loop exited while recording".into()));
        }
        if let Some(t) = test {
            if !t.is_const() {
                let op = if truth { Opcode::GuardTrue } else { Opcode::GuardFalse };
                let g = self.guard(program, op, &[t], pc)?;
                if loop_test {
                    self.loop_exit_guards.push(g);
                }
            }
        }
        Ok(())
    }

    /// Class, type and bounds checks of `arr[idx]`; returns the array and the raw index.
    fn array_index(
        &mut self,
        program: &Program,
        arr: Slot,
        idx: Slot,
        slots: &[u64],
        heap: &Heap,
        pc: usize,
    ) -> Result<(Value, Value), Abort> {
        let (ao, io) = (slots[arr as usize], slots[idx as usize]);
        if heap.class_of(ao) != ARRAY_CLASS || heap.class_of(io) != INT_CLASS {
            return Err(Abort("type error while recording".into()));
        }
        let av = self.val(arr)?;
        self.ensure_class(program, av, ARRAY_CLASS, pc)?;
        let i = self.int_of(program, idx, io, heap, pc)?;
        let len = self.b.op_with_descr(Opcode::ArraylenGc, &[av], self.d.array);
        let ok = self.b.op(Opcode::UintLt, &[i, len]);
        self.guard(program, Opcode::GuardTrue, &[ok], pc)?;
        Ok((av, i))
    }

    fn int_binary(
        &mut self,
        program: &Program,
        op: BinOp,
        a: Value,
        b: Value,
        b_concrete: i64,
        pc: usize,
    ) -> Result<Value, Abort> {
        let simple = |o: Opcode| Some(o);
        let plain = match op {
            BinOp::And => simple(Opcode::IntAnd),
            BinOp::Or => simple(Opcode::IntOr),
            BinOp::Xor => simple(Opcode::IntXor),
            BinOp::Lt => simple(Opcode::IntLt),
            BinOp::Le => simple(Opcode::IntLe),
            BinOp::Gt => simple(Opcode::IntGt),
            BinOp::Ge => simple(Opcode::IntGe),
            BinOp::Eq => simple(Opcode::IntEq),
            BinOp::Ne => simple(Opcode::IntNe),
            _ => None,
        };
        if let Some(o) = plain {
            let r = self.b.op(o, &[a, b]);
            return Ok(self.box_int(r));
        }
        let r = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul => {
                let o = match op {
                    BinOp::Add => Opcode::IntAddOvf,
                    BinOp::Sub => Opcode::IntSubOvf,
                    _ => Opcode::IntMulOvf,
                };
                let r = self.b.op(o, &[a, b]);
                self.guard(program, Opcode::GuardNoOverflow, &[], pc)?;
                r
            }
            BinOp::FloorDiv | BinOp::Mod => {
                let b_const = b.is_const();
                if !b_const {
                    // Division by zero and MININT // -1 are errors of the interpreter: exit there.
                    let zero = self.b.const_int(0);
                    let nz = self.b.op(Opcode::IntNe, &[b, zero]);
                    self.guard(program, Opcode::GuardTrue, &[nz], pc)?;
                }
                if !b_const || b_concrete == -1 {
                    let min = self.b.const_int(i64::MIN);
                    let m1 = self.b.const_int(-1);
                    let amin = self.b.op(Opcode::IntEq, &[a, min]);
                    let bm1 = self.b.op(Opcode::IntEq, &[b, m1]);
                    let both = self.b.op(Opcode::IntAnd, &[amin, bm1]);
                    self.guard(program, Opcode::GuardFalse, &[both], pc)?;
                }
                let o = if op == BinOp::FloorDiv {
                    Opcode::IntPyDiv
                } else {
                    Opcode::IntPyMod
                };
                self.b.op(o, &[a, b])
            }
            BinOp::Shl | BinOp::Shr => {
                if !(b.is_const() && (0..64).contains(&b_concrete)) {
                    let n64 = self.b.const_int(64);
                    let ok = self.b.op(Opcode::UintLt, &[b, n64]);
                    self.guard(program, Opcode::GuardTrue, &[ok], pc)?;
                }
                if op == BinOp::Shr {
                    self.b.op(Opcode::IntRshift, &[a, b])
                } else if b.is_const() && (0..63).contains(&b_concrete) {
                    // `a << k` overflows exactly when `a * 2**k` does (k < 63): one checked
                    // multiplication (`imul` + `jo`) instead of shift, shift back, compare, guard.
                    let m = self.b.const_int(1i64 << b_concrete);
                    let r = self.b.op(Opcode::IntMulOvf, &[a, m]);
                    self.guard(program, Opcode::GuardNoOverflow, &[], pc)?;
                    r
                } else {
                    // Overflow check of a left shift: shifting back must give the operand.
                    let r = self.b.op(Opcode::IntLshift, &[a, b]);
                    let back = self.b.op(Opcode::IntRshift, &[r, b]);
                    let same = self.b.op(Opcode::IntEq, &[back, a]);
                    self.guard(program, Opcode::GuardTrue, &[same], pc)?;
                    r
                }
            }
            _ => return Err(Abort(format!("unsupported int operator {op:?}"))),
        };
        Ok(self.box_int(r))
    }

    fn float_binary(&mut self, program: &Program, op: BinOp, a: Value, b: Value, pc: usize) -> Result<Value, Abort> {
        let arith = match op {
            BinOp::Add => Some(Opcode::FloatAdd),
            BinOp::Sub => Some(Opcode::FloatSub),
            BinOp::Mul => Some(Opcode::FloatMul),
            BinOp::Div => Some(Opcode::FloatTrueDiv),
            _ => None,
        };
        if let Some(o) = arith {
            if op == BinOp::Div && !b.is_const() {
                let zero = self.b.const_float(0.0);
                let nz = self.b.op(Opcode::FloatNe, &[b, zero]);
                self.guard(program, Opcode::GuardTrue, &[nz], pc)?;
            }
            let r = self.b.op(o, &[a, b]);
            return Ok(self.box_float(r));
        }
        let cmp = match op {
            BinOp::Lt => Opcode::FloatLt,
            BinOp::Le => Opcode::FloatLe,
            BinOp::Gt => Opcode::FloatGt,
            BinOp::Ge => Opcode::FloatGe,
            BinOp::Eq => Opcode::FloatEq,
            BinOp::Ne => Opcode::FloatNe,
            _ => return Err(Abort(format!("unsupported float operator {op:?}"))),
        };
        let r = self.b.op(cmp, &[a, b]);
        Ok(self.box_int(r))
    }

    /// Close the loop: called when the interpreter reaches the header again, with the slots;
    /// `close_jump` appends the `jump` with the label's arguments (`driver::Driver::close_jump`).
    pub fn close(
        mut self,
        slots: &[u64],
        heap: &Heap,
        close_jump: impl FnOnce(&mut TraceBuilder, &[Value]),
    ) -> Result<Recorded, Abort> {
        let mut args = Vec::new();
        let params = self.params.clone();
        for (s, kind) in params {
            let v = self.val(s)?;
            let obj = slots[s as usize];
            let class = heap.class_of(obj);
            let arg = match kind {
                ParamKind::Boxed => v,
                ParamKind::Int | ParamKind::Float | ParamKind::Object(_) => {
                    let want = match kind {
                        ParamKind::Int => INT_CLASS,
                        ParamKind::Float => FLOAT_CLASS,
                        ParamKind::Object(c) => c,
                        ParamKind::Boxed => unreachable!(),
                    };
                    if class != want {
                        return Err(Abort(format!("slot {s} changes class across the loop")));
                    }
                    self.guard_class_at(v, want, self.header_pc);
                    match kind {
                        ParamKind::Int if v.is_const() => self.b.const_int(heap.int_value(obj)),
                        ParamKind::Float if v.is_const() => self.b.const_float(heap.float_value(obj)),
                        ParamKind::Int => self.b.op_with_descr(Opcode::GetfieldGcI, &[v], self.d.int_field),
                        ParamKind::Float => self.b.op_with_descr(Opcode::GetfieldGcF, &[v], self.d.float_field),
                        _ => v,
                    }
                }
            };
            args.push(arg);
        }
        close_jump(&mut self.b, &args);
        let trace = self
            .b
            .build()
            .map_err(|e| Abort(format!("recorded trace does not verify: {e}")))?;
        Ok(Recorded {
            trace,
            shape: LoopShape {
                header_pc: self.header_pc,
                entry_slots: self.entry_slots,
                params: self.params,
            },
            loop_exit_guards: self.loop_exit_guards,
        })
    }
}
