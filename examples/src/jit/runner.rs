//! The trace runner: an engine that runs a loop trace by interpreting its ops on the
//! interpreter's real heap (it needs no backend, and is what the tests use to check the
//! recorder independently of native code). It has no bridges: the driver records a loop
//! again when its guards fail too often.

use crate::lang::heap::Heap;
use driver::{Exit, ExitValue};
use trace_ir::{
    eval_ovf, eval_pure, Descr, FailArg, Kind, OpRef, Opcode, Trace, Value, ValueData, VirtualField, VirtualKind,
};

/// Runs a trace by interpreting its ops on real memory.
///
/// It supports the ops the recorder emits (and what the optimizer turns them into): integer
/// and float arithmetic through `trace_ir::eval`, guards, `new_with_vtable`, struct fields
/// and integer arrays of 8-byte words, `call_f`/`call_i` with one argument, and the rebuilding
/// of virtual objects described by a guard's resume data (and the writes it performs).
pub struct TraceRunner {
    trace: Trace,
    /// Position of the `label` (the loop start), if any.
    label: Option<usize>,
    regs: Vec<u64>,
}

impl TraceRunner {
    /// Prepare `trace` (which must verify) for running.
    pub fn new(trace: Trace) -> TraceRunner {
        let label = trace.last_label().map(|l| l.index());
        let n = trace.ops.len();
        TraceRunner {
            trace,
            label,
            regs: vec![0; n],
        }
    }

    fn value(&self, v: Value) -> u64 {
        match v.data() {
            ValueData::Op(o) => self.regs[o.index()],
            ValueData::Const(c) => self.trace.consts.get(c).bits(),
        }
    }

    fn field_offset(&self, op: OpRef) -> Result<i64, String> {
        let d = self.trace.op(op).descr.ok_or("missing descriptor")?;
        match self.trace.descr(d) {
            Descr::Field(f) if f.size == 8 => Ok(f.offset),
            other => Err(format!("unsupported field descriptor {other:?}")),
        }
    }

    fn array_layout(&self, op: OpRef) -> Result<(i64, i64), String> {
        let d = self.trace.op(op).descr.ok_or("missing descriptor")?;
        match self.trace.descr(d) {
            Descr::Array(a) if a.item_size == 8 => Ok((a.base_offset, a.len_offset)),
            other => Err(format!("unsupported array descriptor {other:?}")),
        }
    }

    /// Rebuild the fail arguments of guard op `at`.
    fn exit(&self, at: usize, heap: &mut Heap) -> Result<Exit, String> {
        let g = self.trace.guard_of(OpRef::new(at)).ok_or("guard without resume data")?;
        let mut built: Vec<Option<u64>> = vec![None; g.virtuals.len()];
        let mut values = Vec::with_capacity(g.fail_args.len());
        for fa in &g.fail_args {
            let kind = match *fa {
                FailArg::Value(v) => self.trace.kind_of(v),
                FailArg::Virtual(_) => Kind::Ref,
                FailArg::Hole => Kind::Void,
            };
            let bits = self.fail_arg(fa, &g.virtuals, &mut built, heap)?;
            values.push(ExitValue::from_bits(kind, bits));
        }
        // The writes the optimizer delayed into the exit, after the objects are rebuilt.
        for w in &g.writes {
            let obj = self.value(w.obj);
            if obj == 0 {
                return Err("an exit's write through a null pointer".into());
            }
            let x = self.fail_arg(&w.value, &g.virtuals, &mut built, heap)?;
            match (self.trace.descr(w.descr), w.index) {
                (Descr::Field(f), None) if f.size == 8 => heap.store(obj, f.offset, x),
                (Descr::Array(ad), Some(k)) if ad.item_size == 8 => heap.store(obj, ad.base_offset + 8 * k as i64, x),
                other => return Err(format!("unsupported write in resume data {other:?}")),
            }
        }
        Ok(Exit::Guard {
            guard: g.id,
            resume_key: g.resume_key,
            values,
        })
    }

    fn fail_arg(
        &self,
        fa: &FailArg,
        virtuals: &[trace_ir::VirtualObject],
        built: &mut Vec<Option<u64>>,
        heap: &mut Heap,
    ) -> Result<u64, String> {
        match *fa {
            FailArg::Value(v) => Ok(self.value(v)),
            FailArg::Hole => Ok(0),
            FailArg::Virtual(i) => {
                let i = i as usize;
                if let Some(addr) = built[i] {
                    return Ok(addr);
                }
                let vo = virtuals.get(i).ok_or("virtual index out of range")?;
                let addr = match vo.kind {
                    VirtualKind::Struct { descr, .. } => {
                        let Descr::Size(sd) = self.trace.descr(descr) else {
                            return Err("bad size descriptor".into());
                        };
                        let p = heap.alloc(sd.size as usize);
                        if let Some(c) = sd.vtable {
                            heap.store(p, 0, c as u64);
                        }
                        p
                    }
                    VirtualKind::Array { descr, len, .. } => {
                        let Descr::Array(ad) = self.trace.descr(descr) else {
                            return Err("bad array descriptor".into());
                        };
                        let p = heap.alloc(ad.base_offset as usize + 8 * len as usize);
                        heap.store(p, ad.len_offset, len as u64);
                        p
                    }
                    // The recorder emits no string ops, so its traces' exits rebuild none.
                    VirtualKind::Str { .. } => return Err("a virtual string in resume data".into()),
                };
                // Register before filling the fields, so cycles terminate.
                built[i] = Some(addr);
                for (field, value) in &vo.fields {
                    let x = self.fail_arg(value, virtuals, built, heap)?;
                    match *field {
                        VirtualField::Field(d) => match self.trace.descr(d) {
                            Descr::Field(f) => heap.store(addr, f.offset, x),
                            _ => return Err("bad field descriptor in resume data".into()),
                        },
                        VirtualField::Item(k) => {
                            let VirtualKind::Array { descr, .. } = vo.kind else {
                                return Err("item of a struct".into());
                            };
                            let Descr::Array(ad) = self.trace.descr(descr) else {
                                return Err("bad array descriptor".into());
                            };
                            heap.store(addr, ad.base_offset + 8 * k as i64, x);
                        }
                    }
                }
                Ok(addr)
            }
        }
    }
}

fn call1(fnptr: u64, kind: Kind, arg: u64) -> Result<u64, String> {
    match kind {
        Kind::Float => {
            // SAFETY: the recorder only emits `call_f` with the address of an
            // `extern "sysv64" fn(f64) -> f64` (`recorder::sqrt_f64`) and a matching descriptor.
            let f: extern "sysv64" fn(f64) -> f64 = unsafe { std::mem::transmute(fnptr as usize) };
            Ok(f(f64::from_bits(arg)).to_bits())
        }
        Kind::Int => {
            // SAFETY: as above, for `extern "sysv64" fn(i64) -> i64` functions.
            let f: extern "sysv64" fn(i64) -> i64 = unsafe { std::mem::transmute(fnptr as usize) };
            Ok(f(arg as i64) as u64)
        }
        _ => Err("unsupported call signature".into()),
    }
}

impl TraceRunner {
    /// Run the loop with the boxes of the live slots at its header until a guard fails.
    /// `Err` reports an invalid operation or an unsupported trace (a bug, not a guard).
    pub fn run(&mut self, inputs: &[u64], heap: &mut Heap) -> Result<Exit, String> {
        if inputs.len() != self.trace.num_inputs {
            return Err(format!(
                "expected {} inputs, got {}",
                self.trace.num_inputs,
                inputs.len()
            ));
        }
        self.regs[..inputs.len()].copy_from_slice(inputs);
        let mut pc = self.trace.num_inputs;
        let mut overflow = false;
        loop {
            let op = &self.trace.ops[pc];
            let opcode = op.opcode;
            let arg = |i: usize| self.value(op.args[i]);
            let mut result = 0u64;
            match opcode {
                Opcode::Label => {
                    let params: Vec<u64> = (0..op.args.len()).map(arg).collect();
                    self.regs[pc + 1..pc + 1 + params.len()].copy_from_slice(&params);
                    pc += 1 + params.len();
                    continue;
                }
                Opcode::Jump => {
                    let vals: Vec<u64> = (0..op.args.len()).map(arg).collect();
                    match self.label {
                        Some(l) => {
                            self.regs[l + 1..l + 1 + vals.len()].copy_from_slice(&vals);
                            pc = l + 1 + vals.len();
                        }
                        None => {
                            self.regs[..vals.len()].copy_from_slice(&vals);
                            pc = self.trace.num_inputs;
                        }
                    }
                    continue;
                }
                Opcode::Finish => return Err("finish is not expected in a loop".into()),
                Opcode::IntAddOvf | Opcode::IntSubOvf | Opcode::IntMulOvf => {
                    let (r, o) = eval_ovf(opcode, arg(0) as i64, arg(1) as i64).map_err(|e| e.to_string())?;
                    overflow = o;
                    result = r as u64;
                }
                Opcode::GuardTrue
                | Opcode::GuardFalse
                | Opcode::GuardValue
                | Opcode::GuardNoOverflow
                | Opcode::GuardOverflow
                | Opcode::GuardClass
                | Opcode::GuardNonnullClass
                | Opcode::GuardNonnull
                | Opcode::GuardIsnull => {
                    let ok = match opcode {
                        Opcode::GuardTrue => arg(0) != 0,
                        Opcode::GuardFalse => arg(0) == 0,
                        Opcode::GuardValue => arg(0) == arg(1),
                        Opcode::GuardNoOverflow => !overflow,
                        Opcode::GuardOverflow => overflow,
                        Opcode::GuardNonnull => arg(0) != 0,
                        Opcode::GuardIsnull => arg(0) == 0,
                        Opcode::GuardClass => heap.class_of(arg(0)) == arg(1),
                        _ => arg(0) != 0 && heap.class_of(arg(0)) == arg(1),
                    };
                    if !ok {
                        return self.exit(pc, heap);
                    }
                }
                Opcode::New | Opcode::NewWithVtable => {
                    let d = op.descr.ok_or("missing descriptor")?;
                    let Descr::Size(sd) = self.trace.descr(d) else {
                        return Err("bad size descriptor".into());
                    };
                    result = heap.alloc(sd.size as usize);
                    if let (Opcode::NewWithVtable, Some(c)) = (opcode, sd.vtable) {
                        heap.store(result, 0, c as u64);
                    }
                }
                Opcode::GetfieldGcI | Opcode::GetfieldGcR | Opcode::GetfieldGcF => {
                    let off = self.field_offset(OpRef::new(pc))?;
                    result = heap.load(arg(0), off);
                }
                Opcode::SetfieldGc => {
                    let off = self.field_offset(OpRef::new(pc))?;
                    let (p, x) = (arg(0), arg(1));
                    heap.store(p, off, x);
                }
                Opcode::ArraylenGc => {
                    let (_, len_off) = self.array_layout(OpRef::new(pc))?;
                    result = heap.load(arg(0), len_off);
                }
                Opcode::GetarrayitemGcI
                | Opcode::GetarrayitemGcPureI
                | Opcode::GetarrayitemGcR
                | Opcode::GetarrayitemGcF => {
                    let (base, _) = self.array_layout(OpRef::new(pc))?;
                    result = heap.load(arg(0), base + 8 * arg(1) as i64);
                }
                Opcode::SetarrayitemGc => {
                    let (base, _) = self.array_layout(OpRef::new(pc))?;
                    let (p, i, x) = (arg(0), arg(1), arg(2));
                    heap.store(p, base + 8 * i as i64, x);
                }
                Opcode::CallF | Opcode::CallI | Opcode::CallPureF | Opcode::CallPureI if op.args.len() == 2 => {
                    result = call1(arg(0), opcode.result_kind(), arg(1))?;
                }
                Opcode::Keepalive | Opcode::GuardFutureCondition => {}
                _ if opcode.is_pure() => {
                    let mut buf = [0u64; 4];
                    let n = op.args.len().min(4);
                    for (i, slot) in buf[..n].iter_mut().enumerate() {
                        *slot = arg(i);
                    }
                    result = eval_pure(opcode, &buf[..n]).map_err(|e| format!("{opcode}: {e}"))?;
                }
                _ => return Err(format!("the trace runner does not support {opcode}")),
            }
            self.regs[pc] = result;
            pc += 1;
        }
    }
}
