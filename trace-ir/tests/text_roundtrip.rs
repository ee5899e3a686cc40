//! Round trip on random traces built with the `TraceBuilder`: printing then parsing gives an
//! equivalent trace (constants and descriptors compared by value), and printing that again
//! gives the same text.

use proptest::prelude::*;
use trace_ir::descr::{ArrayDescr, CallDescr, CallEffect, Descr, FieldDescr, InteriorDescr, SizeDescr};
use trace_ir::text::{parse_trace, print_trace, traces_equivalent};
use trace_ir::trace::symbol_address;
use trace_ir::{
    verify, Const, FailArg, Kind, Opcode, ResumeWrite, Trace, TraceBuilder, Value, VirtualField, VirtualKind,
    VirtualObject,
};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

const SPECIAL_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    7,
    8,
    255,
    256,
    -256,
    1 << 31,
    i64::MIN,
    i64::MAX,
    i64::MIN + 1,
];

fn special_float(r: &mut Rng) -> f64 {
    match r.below(10) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => f64::MIN_POSITIVE / 4.0,
        5 => f64::MAX,
        6 => f64::from_bits(r.next()),
        7 => 0.1,
        _ => (r.next() % 1000) as f64 / 8.0 - 60.0,
    }
}

struct Gen {
    r: Rng,
    b: TraceBuilder,
    ints: Vec<Value>,
    refs: Vec<Value>,
    floats: Vec<Value>,
}

impl Gen {
    fn pool(&mut self, k: Kind) -> &mut Vec<Value> {
        match k {
            Kind::Int => &mut self.ints,
            Kind::Ref => &mut self.refs,
            _ => &mut self.floats,
        }
    }
    fn int(&mut self) -> Value {
        if self.ints.is_empty() || self.r.chance(25) {
            let v = if self.r.chance(50) {
                self.r.pick(SPECIAL_INTS)
            } else {
                self.r.next() as i64 >> self.r.below(64)
            };
            self.b.const_int(v)
        } else {
            let i = self.r.below(self.ints.len());
            self.ints[i]
        }
    }
    fn float(&mut self) -> Value {
        if self.floats.is_empty() || self.r.chance(30) {
            let f = special_float(&mut self.r);
            self.b.const_float(f)
        } else {
            let i = self.r.below(self.floats.len());
            self.floats[i]
        }
    }
    fn any_ref(&mut self) -> Value {
        if self.refs.is_empty() || self.r.chance(10) {
            let a = if self.r.chance(50) { 0 } else { self.r.next() & !7 };
            self.b.const_ref(a)
        } else {
            let i = self.r.below(self.refs.len());
            self.refs[i]
        }
    }
    fn value(&mut self, k: Kind) -> Value {
        match k {
            Kind::Int => self.int(),
            Kind::Ref => self.any_ref(),
            _ => self.float(),
        }
    }
    fn kind(&mut self) -> Kind {
        self.r.pick(&[Kind::Int, Kind::Int, Kind::Ref, Kind::Float])
    }
    fn field(&mut self, kind: Kind) -> Descr {
        let names = [
            "a.x",
            "a.y",
            "pypy.objspace.std.intobject.W_IntObject.inst_intval",
            "list.items",
        ];
        Descr::Field(FieldDescr {
            name: self.r.pick(&names).into(),
            offset: 8 * self.r.below(6) as i64,
            size: if kind == Kind::Int {
                self.r.pick(&[1, 2, 4, 8, 8])
            } else {
                8
            },
            signed: self.r.chance(50),
            kind,
            immutable: self.r.chance(30),
        })
    }
    fn array(&mut self, kind: Kind) -> Descr {
        Descr::Array(ArrayDescr {
            item_size: if kind == Kind::Int {
                self.r.pick(&[1, 2, 4, 8])
            } else {
                8
            },
            signed: self.r.chance(50),
            kind,
            base_offset: self.r.pick(&[16, 16, 24, 8]),
            len_offset: self.r.pick(&[8, 8, 0, 16]),
        })
    }
    fn fail_args(&mut self) -> Vec<Value> {
        let n = self.r.below(5);
        (0..n)
            .map(|_| {
                let k = self.kind();
                self.value(k)
            })
            .collect()
    }
    fn result(&mut self, v: Value, k: Kind) {
        self.pool(k).push(v);
    }

    fn step(&mut self) {
        use Opcode::*;
        match self.r.below(16) {
            0..=3 => {
                let op = self.r.pick(&[
                    IntAdd, IntSub, IntMul, IntAnd, IntOr, IntXor, IntLt, IntEq, UintGe, IntRshift,
                ]);
                let (a, b) = (self.int(), self.int());
                let v = self.b.op(op, &[a, b]);
                self.result(v, Kind::Int);
            }
            4 => {
                let op = self.r.pick(&[FloatAdd, FloatMul, FloatTrueDiv, FloatSub]);
                let (a, b) = (self.float(), self.float());
                let v = self.b.op(op, &[a, b]);
                self.result(v, Kind::Float);
            }
            5 => {
                let a = self.float();
                let v = self.b.op(CastFloatToInt, &[a]);
                self.result(v, Kind::Int);
                let i = self.int();
                let f = self.b.op(CastIntToFloat, &[i]);
                self.result(f, Kind::Float);
            }
            6 => {
                let op = self.r.pick(&[IntAddOvf, IntSubOvf, IntMulOvf]);
                let (a, b) = (self.int(), self.int());
                let v = self.b.op(op, &[a, b]);
                let fa = self.fail_args();
                let key = self.r.next() % 1000;
                self.b.guard(
                    if self.r.chance(80) {
                        GuardNoOverflow
                    } else {
                        GuardOverflow
                    },
                    &[],
                    &fa,
                    key,
                );
                self.result(v, Kind::Int);
            }
            7 | 8 => {
                let c = self.int();
                let fa = self.fail_args();
                let op = self.r.pick(&[GuardTrue, GuardFalse]);
                let key = if self.r.chance(50) { self.r.next() } else { 0 };
                self.b.guard(op, &[c], &fa, key);
            }
            9 => {
                let k = self.kind();
                let (a, c) = (self.value(k), self.value(k));
                let fa = self.fail_args();
                self.b.guard(GuardValue, &[a, c], &fa, 3);
            }
            10 => {
                let obj = self.any_ref();
                let k = self.kind();
                let d = self.field(k);
                let d = self.b.descr(d);
                if self.r.chance(50) {
                    let op = match k {
                        Kind::Int => GetfieldGcI,
                        Kind::Ref => GetfieldGcR,
                        _ => GetfieldGcF,
                    };
                    let v = self.b.op_with_descr(op, &[obj], d);
                    self.result(v, k);
                } else {
                    let x = self.value(k);
                    self.b.op_with_descr(SetfieldGc, &[obj, x], d);
                }
            }
            11 => {
                let vt = if self.r.chance(50) {
                    Some(self.r.next() as i64 & 0xfff8)
                } else {
                    None
                };
                let d = self.b.descr(Descr::Size(SizeDescr {
                    size: 8 * (1 + self.r.below(8) as i64),
                    vtable: vt,
                }));
                let op = if vt.is_some() { NewWithVtable } else { New };
                let v = self.b.op_with_descr(op, &[], d);
                self.result(v, Kind::Ref);
            }
            12 => {
                let k = self.kind();
                let d = self.array(k);
                let d = self.b.descr(d);
                let n = self.int();
                let arr = self.b.op_with_descr(NewArrayClear, &[n], d);
                self.result(arr, Kind::Ref);
                let i = self.int();
                let op = match k {
                    Kind::Int => GetarrayitemGcI,
                    Kind::Ref => GetarrayitemGcR,
                    _ => GetarrayitemGcF,
                };
                let v = self.b.op_with_descr(op, &[arr, i], d);
                self.result(v, k);
                let len = self.b.op_with_descr(ArraylenGc, &[arr], d);
                self.result(len, Kind::Int);
            }
            13 => {
                let k = self.kind();
                let d = self.field(k);
                let d = self.b.descr(Descr::Interior(InteriorDescr {
                    item_size: self.r.pick(&[16, 24]),
                    field: match d {
                        Descr::Field(f) => f,
                        _ => unreachable!(),
                    },
                }));
                let (a, i) = (self.any_ref(), self.int());
                let op = match k {
                    Kind::Int => GetinteriorfieldGcI,
                    Kind::Ref => GetinteriorfieldGcR,
                    _ => GetinteriorfieldGcF,
                };
                let v = self.b.op_with_descr(op, &[a, i], d);
                self.result(v, k);
            }
            14 => {
                let n = self.r.below(4);
                let kinds: Vec<Kind> = (0..n).map(|_| self.kind()).collect();
                let mut args = vec![self.b.const_int(symbol_address("f") as i64)];
                for &k in &kinds {
                    let v = self.value(k);
                    args.push(v);
                }
                let res = self.r.pick(&[Kind::Int, Kind::Ref, Kind::Float, Kind::Void]);
                let d = self.b.descr(Descr::Call(CallDescr {
                    result: res,
                    result_size: if res == Kind::Void { 0 } else { 8 },
                    args: kinds,
                    effect: CallEffect::from_number(self.r.below(8) as u8).unwrap(),
                    oopspec: if self.r.chance(30) {
                        Some(self.r.below(200) as u32)
                    } else {
                        None
                    },
                }));
                let op = match res {
                    Kind::Int => CallI,
                    Kind::Ref => CallR,
                    Kind::Float => CallF,
                    Kind::Void => CallN,
                };
                let v = self.b.op_with_descr(op, &args, d);
                if res != Kind::Void {
                    self.result(v, res);
                }
            }
            _ => {
                let (a, b) = (self.any_ref(), self.any_ref());
                let v = self.b.op(PtrEq, &[a, b]);
                self.result(v, Kind::Int);
            }
        }
    }

    /// A label over some live values (sometimes constants or repeats); afterwards the pools
    /// hold its parameters (and, sometimes, still the old values, so the body uses an
    /// operand directly and the printer must name the parameters explicitly).
    fn label(&mut self, token: u64) -> Vec<Kind> {
        let n = 1 + self.r.below(4);
        let mut args = Vec::new();
        for _ in 0..n {
            let k = self.kind();
            let v = self.value(k);
            args.push(v);
        }
        if self.r.chance(20) {
            let v = args[0];
            args.push(v);
        }
        let kinds: Vec<Kind> = args.iter().map(|&a| self.b.kind_of(a)).collect();
        let d = self.b.descr(Descr::Target(token));
        let label = self.b.op_with_descr(Opcode::Label, &args, d);
        let _ = label;
        let params: Vec<Value> = kinds
            .iter()
            .map(|&k| self.b.op(Opcode::input_for(k).unwrap(), &[]))
            .collect();
        if !self.r.chance(25) {
            self.ints.clear();
            self.refs.clear();
            self.floats.clear();
        }
        for (&p, &k) in params.iter().zip(&kinds) {
            self.pool(k).push(p);
        }
        kinds
    }
}

/// Add what the builder cannot make: holes, virtual objects, named constants, explicit ids.
fn decorate(t: &mut Trace, r: &mut Rng) {
    // Named constants: replace some integer/pointer constant operands.
    for i in 0..t.ops.len() {
        for k in 0..t.ops[i].args.len() {
            let a = t.ops[i].args[k];
            let Some(c) = t.const_of(a) else { continue };
            if !r.chance(30) {
                continue;
            }
            let name = format!("ptr{}", r.below(50));
            let named = match c {
                Const::Int(_) if !t.ops[i].opcode.is_guard() => Const::Int(symbol_address(&name) as i64),
                Const::Ref(_) => Const::Ref(symbol_address(&name)),
                _ => continue,
            };
            let cls = if matches!(named, Const::Int(_)) {
                format!("cls.{name}")
            } else {
                name
            };
            let named = match named {
                Const::Int(_) => Const::Int(symbol_address(&cls) as i64),
                other => other,
            };
            t.ops[i].args[k] = Value::constant(t.consts.intern_named(named, Some(cls)));
        }
    }
    // Guard ids: unique but not sequential; fail arguments: holes and virtuals.
    let mut ids: Vec<u32> = (0..t.guards.len() as u32)
        .map(|i| i * 3 + (r.below(3) as u32))
        .collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, r.below(i + 1));
    }
    let guard_ops: Vec<usize> = (0..t.ops.len()).filter(|&i| t.ops[i].guard.is_some()).collect();
    for (gi, &at) in guard_ops.iter().enumerate() {
        let g = t.ops[at].guard.unwrap().index();
        t.guards[g].id = trace_ir::GuardId(ids[gi]);
        if r.chance(30) {
            t.guards[g].resume_key = ids[gi] as u64;
        }
        for fa in t.guards[g].fail_args.iter_mut() {
            if r.chance(15) {
                *fa = FailArg::Hole;
            }
        }
        if r.chance(35) {
            // Values defined before the guard, for virtual fields.
            let defined: Vec<Value> = (0..at)
                .filter(|&o| t.ops[o].opcode.result_kind() != Kind::Void)
                .map(|o| Value::op(trace_ir::OpRef::new(o)))
                .collect();
            let nv = 1 + r.below(3);
            let mut virtuals = Vec::new();
            for v in 0..nv {
                let pick = |r: &mut Rng, t: &mut Trace, want: Kind| -> FailArg {
                    let cands: Vec<Value> = defined.iter().copied().filter(|&d| t.kind_of(d) == want).collect();
                    if want == Kind::Ref && r.chance(30) {
                        return FailArg::Virtual(r.below(nv) as u32);
                    }
                    if !cands.is_empty() && r.chance(70) {
                        return FailArg::Value(cands[r.below(cands.len())]);
                    }
                    match want {
                        Kind::Int => FailArg::Value(t.make_const_int(r.next() as i64)),
                        Kind::Float => FailArg::Value(t.make_const(Const::float(special_float(r)))),
                        _ => FailArg::Hole,
                    }
                };
                let obj = if r.chance(60) {
                    let d = t.make_descr(Descr::Size(SizeDescr {
                        size: 32,
                        vtable: if r.chance(50) { Some(64 + v as i64) } else { None },
                    }));
                    let mut fields = Vec::new();
                    for f in 0..r.below(4) {
                        let kind = [Kind::Int, Kind::Ref, Kind::Float][r.below(3)];
                        let fd = t.make_descr(Descr::Field(FieldDescr {
                            name: format!("obj.f{f}").into(),
                            offset: 8 * (f as i64 + 1),
                            size: 8,
                            signed: true,
                            kind,
                            immutable: r.chance(20),
                        }));
                        let val = pick(r, t, kind);
                        fields.push((VirtualField::Field(fd), val));
                    }
                    let opcode = if r.chance(50) {
                        Opcode::New
                    } else {
                        Opcode::NewWithVtable
                    };
                    VirtualObject {
                        kind: VirtualKind::Struct { opcode, descr: d },
                        fields,
                    }
                } else if r.chance(25) {
                    let len = r.below(5) as u32;
                    let mut fields = Vec::new();
                    for i in 0..len {
                        if r.chance(60) {
                            fields.push((VirtualField::Item(i), pick(r, t, Kind::Int)));
                        }
                    }
                    let opcode = if r.chance(50) {
                        Opcode::Newstr
                    } else {
                        Opcode::Newunicode
                    };
                    VirtualObject {
                        kind: VirtualKind::Str { opcode, len },
                        fields,
                    }
                } else {
                    let kind = [Kind::Int, Kind::Ref, Kind::Float][r.below(3)];
                    let d = t.make_descr(Descr::Array(ArrayDescr {
                        item_size: 8,
                        signed: true,
                        kind,
                        base_offset: 16,
                        len_offset: 8,
                    }));
                    let len = r.below(5) as u32;
                    let mut fields = Vec::new();
                    for i in 0..len {
                        if r.chance(60) {
                            let val = pick(r, t, kind);
                            fields.push((VirtualField::Item(i), val));
                        }
                    }
                    let opcode = if r.chance(50) {
                        Opcode::NewArray
                    } else {
                        Opcode::NewArrayClear
                    };
                    VirtualObject {
                        kind: VirtualKind::Array { opcode, descr: d, len },
                        fields,
                    }
                };
                virtuals.push(obj);
            }
            // Writes the exit performs: of a virtual (or a value) into a reference the
            // trace has, through a field or an array item.
            let refs: Vec<Value> = defined.iter().copied().filter(|&d| t.kind_of(d) == Kind::Ref).collect();
            let mut writes = Vec::new();
            if !refs.is_empty() && r.chance(50) {
                for w in 0..1 + r.below(2) {
                    let obj = refs[r.below(refs.len())];
                    let value = if r.chance(70) {
                        FailArg::Virtual(r.below(nv) as u32)
                    } else {
                        FailArg::Value(refs[r.below(refs.len())])
                    };
                    let (descr, index) = if r.chance(50) {
                        let fd = t.make_descr(Descr::Field(FieldDescr {
                            name: format!("holder.w{w}").into(),
                            offset: 8 * (1 + w as i64),
                            size: 8,
                            signed: false,
                            kind: Kind::Ref,
                            immutable: false,
                        }));
                        (fd, None)
                    } else {
                        let ad = t.make_descr(Descr::Array(ArrayDescr {
                            item_size: 8,
                            signed: false,
                            kind: Kind::Ref,
                            base_offset: 16,
                            len_offset: 8,
                        }));
                        (ad, Some(r.below(5) as u32))
                    };
                    writes.push(ResumeWrite {
                        obj,
                        descr,
                        index,
                        value,
                    });
                }
            }
            let g = &mut t.guards[g];
            g.fail_args.push(FailArg::Virtual(0));
            g.virtuals = virtuals;
            g.writes = writes;
        }
    }
}

fn random_trace(seed: u64) -> Trace {
    let mut g = Gen {
        r: Rng(seed | 1),
        b: TraceBuilder::new(),
        ints: vec![],
        refs: vec![],
        floats: vec![],
    };
    let n_inputs = g.r.below(5);
    let mut input_kinds = Vec::new();
    for _ in 0..n_inputs {
        let k = g.kind();
        let v = g.b.input(k);
        g.result(v, k);
        input_kinds.push(k);
    }
    let mut target: Option<Vec<Kind>> = None;
    let n_ops = 1 + g.r.below(30);
    let mut token = 100;
    for _ in 0..n_ops {
        if g.r.chance(6) {
            token += 1;
            target = Some(g.label(token));
        } else {
            g.step();
        }
    }
    if g.r.chance(60) {
        // Jump to the last label, or to the start.
        let kinds = target.clone().unwrap_or(input_kinds.clone());
        let args: Vec<Value> = kinds.iter().map(|&k| g.value(k)).collect();
        if target.is_some() {
            let d = g.b.descr(Descr::Target(token));
            g.b.op_with_descr(Opcode::Jump, &args, d);
        } else {
            g.b.jump(&args);
        }
    } else {
        let args = g.fail_args();
        g.b.finish(&args);
    }
    let mut t = g.b.build_unverified();
    let mut r = Rng(seed.wrapping_mul(31) | 1);
    decorate(&mut t, &mut r);
    verify(&t).unwrap_or_else(|e| panic!("the test generator made an invalid trace: {e}\n{t}"));
    t
}

fn check_round_trip(t: &Trace) {
    let text = print_trace(t);
    let back = parse_trace(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    traces_equivalent(t, &back).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(print_trace(&back), text);
}

#[test]
fn many_random_traces_round_trip() {
    let mut arrows = 0;
    let mut virtuals = 0;
    for seed in 0..3000u64 {
        let t = random_trace(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let text = print_trace(&t);
        arrows += text.contains("-> [") as usize;
        virtuals += text.contains("$0 =") as usize;
        check_round_trip(&t);
    }
    // The generator exercises the interesting syntax, so the test means something.
    assert!(arrows > 50, "only {arrows} traces with explicit label parameters");
    assert!(virtuals > 200, "only {virtuals} traces with virtual objects");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn random_traces_round_trip(seed in any::<u64>()) {
        check_round_trip(&random_trace(seed));
    }
}

#[test]
fn display_is_print_trace() {
    let t = random_trace(42);
    assert_eq!(t.to_string(), print_trace(&t));
}

#[test]
fn equivalence_sees_differences_but_not_pool_order() {
    let a = parse_trace(
        "[i0, p1]\ni2 = int_add(i0, 5)\ni3 = getfield_gc_i(p1, descr=<FieldS a.x 8>)\nguard_true(i3, descr=<Guard4>) [i2, None]\nfinish(i2, 7)\n",
    )
    .unwrap();
    // Same trace with constants and descriptors interned in another order.
    let mut b = a.clone();
    b.consts = Default::default();
    let seven = b.make_const_int(7);
    let five = b.make_const_int(5);
    b.ops[2].args[1] = five;
    b.ops[5].args[1] = seven;
    b.descrs.insert(0, Descr::Size(SizeDescr { size: 8, vtable: None }));
    b.ops[3].descr = Some(trace_ir::DescrRef::new(1));
    assert_eq!(traces_equivalent(&a, &b), Ok(()));
    assert_eq!(print_trace(&a), print_trace(&b));

    let mut c = b.clone();
    c.ops[5].args[1] = five;
    assert!(traces_equivalent(&a, &c).unwrap_err().contains("operand 1"));
    let mut d = b.clone();
    d.guards[0].id = trace_ir::GuardId(5);
    assert!(traces_equivalent(&a, &d).unwrap_err().contains("guard"));
    let mut e = b.clone();
    e.guards[0].fail_args[1] = FailArg::Value(seven);
    assert!(traces_equivalent(&a, &e).unwrap_err().contains("fail arg 1"));
    let mut f = b.clone();
    f.ops[3].descr = Some(trace_ir::DescrRef::new(0));
    assert!(traces_equivalent(&a, &f).unwrap_err().contains("descriptor"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// The library's random generator (`trace_interp::random`), with and without loops.
    #[test]
    fn library_random_traces_round_trip(seed in any::<u64>(), loops in any::<bool>(), ints_only in any::<bool>()) {
        let mut cfg = if ints_only {
            trace_interp::random::RandomConfig::integers_only()
        } else {
            trace_interp::random::RandomConfig::default()
        };
        cfg.loops = loops;
        let (t, _) = trace_interp::random::random_trace(&cfg, seed);
        check_round_trip(&t);
    }
}

#[test]
fn guard_ids_extremes_round_trip() {
    let text = "[i0]\nguard_true(i0, descr=<Guard4294967295 key=0xffffffffffffffff>) []\nguard_true(i0) []\nguard_false(i0, descr=<Guard0>) []\nfinish(i0)\n";
    let t = parse_trace(text).unwrap();
    let ids: Vec<u32> = t.guards.iter().map(|g| g.id.0).collect();
    // The guard without a descriptor gets the first id no explicit guard uses.
    assert_eq!(ids, vec![u32::MAX, 1, 0]);
    assert_eq!(t.guards[0].resume_key, u64::MAX);
    assert_eq!(t.guards[1].resume_key, 1);
    let printed = print_trace(&t);
    assert_eq!(
        printed,
        "[i0]\nguard_true(i0, descr=<Guard4294967295 key=0xffffffffffffffff>) []\nguard_true(i0, descr=<Guard1>) []\nguard_false(i0, descr=<Guard0>) []\nfinish(i0)\n"
    );
}

#[test]
fn exit_writes_round_trip_in_the_resume_data_block() {
    let text = "[p0, p1, i2]
guard_true(i2, descr=<Guard3>) [p0, $0] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS f 8>: i2; setfield_gc(p0, $0, descr=<FieldP top 8>); setarrayitem_gc(p1, 2, p0, descr=<ArrayP 8>)}
guard_false(i2, descr=<Guard4>) [p0] {setfield_gc(p1, p0, descr=<FieldP top 8>)}
finish()
";
    let t = parse_trace(text).unwrap();
    let g = &t.guards[0];
    assert_eq!(g.writes.len(), 2);
    assert_eq!(g.writes[0].value, FailArg::Virtual(0));
    assert_eq!(g.writes[0].index, None);
    assert_eq!(g.writes[1].index, Some(2));
    assert_eq!(t.guards[1].writes.len(), 1);
    assert!(t.guards[1].virtuals.is_empty());
    // the exit reads the writes' objects and values after the fail arguments and fields
    let mut entries = Vec::new();
    g.for_each_entry(|fa| entries.push(fa));
    assert_eq!(entries.len(), 2 + 1 + 4);
    assert_eq!(entries[3], FailArg::Value(Value::op(trace_ir::OpRef::new(0))));
    assert_eq!(entries[4], FailArg::Virtual(0));
    assert_eq!(print_trace(&t), text);
    check_round_trip(&t);
}

#[test]
fn malformed_exit_writes_are_rejected() {
    let bad = |body: &str| {
        let text = format!("[p0, i1]\nguard_true(i1, descr=<Guard1>) [p0] {{{body}}}\nfinish()\n");
        match parse_trace(&text) {
            Err(e) => e.to_string(),
            Ok(t) => verify(&t).map(|()| panic!("accepted: {body}")).unwrap_err().to_string(),
        }
    };
    assert!(bad("setfield_gc(p0, $0, descr=<FieldP top 8>)").contains("virtual object that is not described"));
    assert!(bad("setfield_gc(p0, None, descr=<FieldP top 8>)").contains("needs a value"));
    assert!(bad("setfield_gc(p0, p0, descr=<ArrayP 8>)").contains("bad descriptor"));
    assert!(bad("setarrayitem_gc(p0, x, p0, descr=<ArrayP 8>)").contains("constant item index"));
    assert!(bad("setfield_gc(p0, i1, descr=<FieldP top 8>)").contains("stores a Int through a descriptor of Ref"));
    assert!(bad("setfield_gc(i1, p0, descr=<FieldP top 8>)").contains("not a reference"));
    assert!(bad("int_add(p0, p0)").contains("setfield_gc"));
}

#[test]
fn virtual_strings_in_resume_data_round_trip() {
    let text = "[i0, i1]
guard_true(i1, descr=<Guard0>) [$0, $1] {$0 = newstr(3) [0]: i0, [2]: 98; $1 = newunicode(0)}
finish()
";
    let t = trace_ir::parse_trace(text).unwrap();
    let vs = &t.guards[0].virtuals;
    assert_eq!(
        vs[0].kind,
        VirtualKind::Str {
            opcode: Opcode::Newstr,
            len: 3
        }
    );
    assert_eq!(
        vs[1].kind,
        VirtualKind::Str {
            opcode: Opcode::Newunicode,
            len: 0
        }
    );
    let printed = trace_ir::print_trace(&t);
    assert!(
        printed.contains("{$0 = newstr(3) [0]: i0, [2]: 98; $1 = newunicode(0)}"),
        "{printed}"
    );
    trace_ir::traces_equivalent(&t, &trace_ir::parse_trace(&printed).unwrap()).unwrap();
    // A string has no descriptor, and its length is a constant.
    for bad in ["{$0 = newstr(3, descr=<ArrayU 1>)}", "{$0 = newstr(i0)}"] {
        let text = format!("[i0, i1]\nguard_true(i1, descr=<Guard0>) [$0] {bad}\nfinish()\n");
        assert!(trace_ir::parse_trace(&text).is_err(), "{bad}");
    }
}
