//! Heap accesses on real memory: interior fields, raw memory, class guards, virtual references
//! and offsets that do not fit 32 bits.

use super::*;
use trace_ir::descr::ArrayDescr;

/// Interior fields of an allocated array of structs: stores and loads at `16 + i * item +
/// offset`, index checked against the length like the interpreter does.
#[test]
fn interior_fields_of_an_array_of_structs() {
    use trace_ir::{ArrayDescr, Descr, FieldDescr, InteriorDescr};
    let mut b = TraceBuilder::new();
    let i = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 16,
        signed: false,
        kind: Kind::Int,
        base_offset: 16,
        len_offset: 8,
    }));
    let fk = FieldDescr {
        name: "E.k".into(),
        offset: 0,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    };
    let fv = FieldDescr {
        name: "E.v".into(),
        offset: 8,
        size: 4,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    };
    let dk = b.descr(Descr::Interior(InteriorDescr {
        item_size: 16,
        field: fk,
    }));
    let dv = b.descr(Descr::Interior(InteriorDescr {
        item_size: 16,
        field: fv,
    }));
    let three = b.const_int(3);
    let p = b.op_with_descr(Opcode::NewArrayClear, &[three], ad);
    let one = b.const_int(1);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[p, i, x], dk);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[p, one, x], dv);
    let k = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, i], dk);
    let v = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, one], dv);
    let w = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[p, i], dv);
    b.finish(&[k, v, w]);
    let t = b.build().unwrap();
    for o in [opts(), tight()] {
        for (iv, xv) in [(0i64, 5i64), (1, -7), (2, 1 << 40), (3, 1), (-1, 1)] {
            let inputs = [RtValue::Int(iv), RtValue::Int(xv)];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let native = run_native(&t, &[iv as u64, xv as u64], &o);
            same(&t, &native, &int).unwrap();
        }
    }
}

/// Raw memory (a real buffer whose address is an integer input): stores then loads of
/// several widths through `setfield_raw`, `raw_store` and `setarrayitem_raw`.
#[test]
fn raw_memory_round_trips() {
    use trace_ir::{ArrayDescr, Descr, FieldDescr};
    let mut b = TraceBuilder::new();
    let addr = b.input(Kind::Int);
    let x = b.input(Kind::Int);
    let f4 = b.descr(Descr::Field(FieldDescr {
        name: "R.a".into(),
        offset: 8,
        size: 4,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let a2 = b.descr(Descr::Array(ArrayDescr {
        item_size: 2,
        signed: true,
        kind: Kind::Int,
        base_offset: 0,
        len_offset: 0,
    }));
    let a1 = b.descr(Descr::Array(ArrayDescr {
        item_size: 1,
        signed: false,
        kind: Kind::Int,
        base_offset: 0,
        len_offset: 0,
    }));
    b.op_with_descr(Opcode::SetfieldRaw, &[addr, x], f4);
    let r1 = b.op_with_descr(Opcode::GetfieldRawI, &[addr], f4);
    let sixteen = b.const_int(16);
    b.op_with_descr(Opcode::RawStore, &[addr, sixteen, x], a2);
    let r2 = b.op_with_descr(Opcode::RawLoadI, &[addr, sixteen], a2);
    let three = b.const_int(3);
    b.op_with_descr(Opcode::SetarrayitemRaw, &[addr, three, x], a1);
    let r3 = b.op_with_descr(Opcode::GetarrayitemRawI, &[addr, three], a1);
    b.finish(&[r1, r2, r3]);
    let t = b.build().unwrap();
    let mut buf = vec![0u64; 8];
    let p = buf.as_mut_ptr() as i64;
    for o in [opts(), tight()] {
        for xv in [0i64, -1, 0x1234_5678_9abc, i64::MIN, 255, 0x8000] {
            let inputs = [RtValue::Int(p), RtValue::Int(xv)];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let native = run_native(&t, &[p as u64, xv as u64], &o);
            same(&t, &native, &int).unwrap();
        }
    }
    assert_eq!(buf[2] & 0xffff, 0x8000, "the last raw_store wrote the real buffer");
}

/// `guard_class` and `guard_nonnull_class` on allocated instances and on null.
#[test]
fn class_guards() {
    use trace_ir::{Descr, SizeDescr};
    for (opc, with_null) in [
        (Opcode::GuardClass, false),
        (Opcode::GuardClass, true),
        (Opcode::GuardSubclass, false),
        (Opcode::GuardNonnullClass, false),
        (Opcode::GuardNonnullClass, true),
    ] {
        for right in [true, false] {
            let mut b = TraceBuilder::new();
            let x = b.input(Kind::Int);
            let sd = b.descr(Descr::Size(SizeDescr {
                size: 24,
                vtable: Some(0x7000_2000),
            }));
            let p = if with_null {
                b.const_ref(0)
            } else {
                b.op_with_descr(Opcode::NewWithVtable, &[], sd)
            };
            let cls = b.const_int(if right { 0x7000_2000 } else { 0x7000_3000 });
            b.guard(opc, &[p, cls], &[x], 8);
            b.finish(&[x]);
            let t = b.build().unwrap();
            let int = interp::run(&t, &[RtValue::Int(4)], &RunConfig::default()).outcome;
            let native = run_native(&t, &[4], &opts());
            same(&t, &native, &int).unwrap();
            let failed = matches!(native, Exit::Guard { .. });
            if opc != Opcode::GuardNonnullClass && with_null {
                assert!(
                    matches!(native, Exit::Invalid { .. }),
                    "guard_class on null: {native:?}"
                );
            } else {
                assert_eq!(failed, with_null || !right, "{opc} right={right} null={with_null}");
            }
        }
    }
}

/// Field, array, interior and raw accesses whose offsets do not fit 32 bits, on real
/// memory: the base pointers are a buffer's address minus the offset (wrapping), so every
/// access lands in the buffer. Stores then loads, against the interpreter (which treats
/// the reference input as an external object and raw memory by address), and the buffers
/// hold what was stored.
#[test]
fn displacements_beyond_32_bits() {
    use trace_ir::InteriorDescr;
    const BIG: i64 = 0x3_0000_0000; // 12 GiB: no 32-bit displacement reaches it
    const RAW_BIG: i64 = -0x5_0000_0010;
    let fd = |b: &mut TraceBuilder, offset: i64, size: u8, kind: Kind| {
        b.descr(Descr::Field(FieldDescr {
            name: format!("W.f{offset}").into(),
            offset,
            size,
            signed: true,
            kind,
            immutable: false,
        }))
    };
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref); // buf - BIG
    let a = b.input(Kind::Int); // raw - RAW_BIG
    let q = b.input(Kind::Ref); // an array of huge structs (see below), really `inner`
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Float);
    let i = b.input(Kind::Int);
    let j = b.input(Kind::Int); // interior index, always 1
    let f1 = fd(&mut b, BIG + 8, 8, Kind::Int);
    let f2 = fd(&mut b, BIG + 16, 8, Kind::Float);
    let f3 = fd(&mut b, BIG + 24, 8, Kind::Float);
    let f4 = fd(&mut b, BIG + 72, 4, Kind::Int);
    let fraw = fd(&mut b, RAW_BIG + 8, 4, Kind::Int);
    // Array at p: length word at BIG (buf[0]), items from BIG + 32 (buf[4..8]).
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: BIG + 32,
        len_offset: BIG,
    }));
    // Interior: items of 2^32 bytes, field at -2^32 + 8: item 1's field is at q + 24.
    let di = b.descr(Descr::Interior(InteriorDescr {
        item_size: 1 << 32,
        field: FieldDescr {
            name: "H.v".into(),
            offset: -(1 << 32) + 8,
            size: 8,
            signed: true,
            kind: Kind::Int,
            immutable: false,
        },
    }));
    b.op_with_descr(Opcode::SetfieldGc, &[p, x], f1);
    let r1 = b.op_with_descr(Opcode::GetfieldGcI, &[p], f1);
    b.op_with_descr(Opcode::SetfieldGc, &[p, y], f2);
    let r2 = b.op_with_descr(Opcode::GetfieldGcF, &[p], f2);
    // A float constant goes through r11 when it is loaded: the store must not lose it.
    let fc = b.const_float(-3.75);
    b.op_with_descr(Opcode::SetfieldGc, &[p, fc], f3);
    let r3 = b.op_with_descr(Opcode::GetfieldGcF, &[p], f3);
    let c64 = b.const_int(0x1_2345_6789);
    b.op_with_descr(Opcode::SetfieldGc, &[p, c64], f4);
    let r4 = b.op_with_descr(Opcode::GetfieldGcI, &[p], f4);
    b.op_with_descr(Opcode::SetarrayitemGc, &[p, i, x], ad);
    let r5 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, i], ad);
    let two = b.const_int(2);
    let x1 = b.op(Opcode::IntAdd, &[x, two]);
    b.op_with_descr(Opcode::SetarrayitemGc, &[p, two, x1], ad);
    let r6 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, two], ad);
    b.op_with_descr(Opcode::SetfieldRaw, &[a, x], fraw);
    let r7 = b.op_with_descr(Opcode::GetfieldRawI, &[a], fraw);
    b.op_with_descr(Opcode::SetinteriorfieldGc, &[q, j, x1], di);
    let r8 = b.op_with_descr(Opcode::GetinteriorfieldGcI, &[q, j], di);
    b.finish(&[r1, r2, r3, r4, r5, r6, r7, r8]);
    let t = b.build().unwrap();

    let medium = CompileOptions {
        int_regs: 5,
        float_regs: 2,
        ..opts()
    };
    for o in [opts(), medium, tight()] {
        let c = compile(&t, &o).unwrap_or_else(|e| panic!("{e}"));
        for (iv, xv, yv) in [
            (0i64, 5i64, 1.5f64),
            (3, -1, -0.0),
            (1, 0x7fff_ffff_1234, 1e300),
            (2, i64::MIN, 2.0),
        ] {
            let mut buf = vec![0u64; 12];
            buf[0] = 4; // array length
            let mut raw = vec![0u64; 4];
            let mut inner = vec![0u64; 6];
            inner[1] = 2; // interior array length (items 0 and 1; only item 1 is in the buffer)
            let pv = (buf.as_mut_ptr() as u64).wrapping_sub(BIG as u64);
            let av = (raw.as_mut_ptr() as u64).wrapping_sub(RAW_BIG as u64);
            let qv = inner.as_mut_ptr() as u64;
            let inputs = [
                RtValue::Ref(pv),
                RtValue::Int(av as i64),
                RtValue::Ref(qv),
                RtValue::Int(xv),
                RtValue::float(yv),
                RtValue::Int(iv),
                RtValue::Int(1),
            ];
            let int = interp::run(&t, &inputs, &RunConfig::default()).outcome;
            let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
            let native = c.run_test(&words, &mut SimpleHeap::new()).unwrap();
            same(&t, &native, &int).unwrap();
            assert_eq!(buf[1], xv as u64);
            assert_eq!(buf[2], yv.to_bits());
            assert_eq!(buf[3], (-3.75f64).to_bits());
            assert_eq!(buf[9] as u32, 0x2345_6789);
            assert_eq!(
                buf[4 + iv as usize],
                if iv == 2 { xv.wrapping_add(2) } else { xv } as u64
            );
            assert_eq!(buf[6], xv.wrapping_add(2) as u64);
            assert_eq!(raw[1] as u32, xv as u32);
            assert_eq!(inner[3], xv.wrapping_add(2) as u64);
        }
    }
}

/// The bounds check reads the length word at a wide offset: indices at or beyond it and
/// negative ones are invalid operations; `arraylen_gc` reads the same word.
#[test]
fn wide_length_word_bounds_check() {
    const BIG: i64 = -0x2_0000_0000;
    let mut b = TraceBuilder::new();
    let p = b.input(Kind::Ref);
    let i = b.input(Kind::Int);
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: BIG + 16,
        len_offset: BIG + 8,
    }));
    let n = b.op_with_descr(Opcode::ArraylenGc, &[p], ad);
    let r = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, i], ad);
    let k = b.const_int(2);
    let r2 = b.op_with_descr(Opcode::GetarrayitemGcI, &[p, k], ad);
    b.finish(&[n, r, r2]);
    let t = b.build().unwrap();
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        for len in [2u64, 3, 5] {
            let mut buf = vec![0u64, len, 100, 101, 102, 103, 104];
            let pv = (buf.as_mut_ptr() as u64).wrapping_sub(BIG as u64);
            for iv in [-1i64, 0, 1, 2, 4, 5] {
                let native = c.run_test(&[pv, iv as u64], &mut SimpleHeap::new()).unwrap();
                if iv < 0 || iv as u64 >= len || len <= 2 {
                    assert!(
                        matches!(native, Exit::Invalid { .. }),
                        "len {len} index {iv}: {native:?}"
                    );
                } else {
                    assert_eq!(
                        native,
                        Exit::Finish {
                            values: ints(&[len as i64, 100 + iv, 102])
                        },
                        "len {len} index {iv}"
                    );
                }
            }
            buf[0] = 0;
        }
    }
}

/// `virtual_ref` and `virtual_ref_finish` natively, in both memory modes, against the
/// interpreter: the reference's class, token and `forced` field before and after finishing
/// (with null, which keeps `forced`, and with the object), and a finish of null reference.
#[test]
fn virtual_references_natively() {
    let class = trace_ir::abi::default_class(&trace_ir::abi::VirtualRefLayout::get().size);
    let text = |finish_with: &str| {
        format!(
            "[i0]
            p1 = new_with_vtable(descr=<SizeDescr 32>)
            setfield_gc(p1, i0, descr=<FieldS Frame.pc 8>)
            p2 = virtual_ref(p1, 0)
            guard_class(p2, {class}, descr=<Guard1>) []
            p3 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
            i4 = ptr_eq(p3, ConstPtr(null))
            virtual_ref_finish(p2, ConstPtr(null))
            p5 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.virtual_token 8>)
            virtual_ref_finish(p2, {finish_with})
            p6 = getfield_gc_r(p2, descr=<FieldP JitVirtualRef.forced 16>)
            i7 = ptr_eq(p6, p1)
            i8 = ptr_eq(p6, ConstPtr(null))
            i9 = ptr_eq(p5, ConstPtr(null))
            finish(i4, i7, i8, i9)"
        )
    };
    for (finish_with, want) in [("p1", [0, 1, 0, 1]), ("ConstPtr(null)", [0, 0, 1, 1])] {
        let t = trace_ir::parse_trace(&text(finish_with)).unwrap();
        let int = interp::run(&t, &[RtValue::Int(5)], &RunConfig::default()).outcome;
        assert_eq!(int, Outcome::Finish(want.iter().map(|&v| RtValue::Int(v)).collect()));
        for memory in [MemoryAccess::Direct, MemoryAccess::Hooks] {
            let o = CompileOptions { memory, ..opts() };
            let native = run_native(&t, &[5], &o);
            same(&t, &native, &int).unwrap_or_else(|e| panic!("{memory:?}: {e}"));
        }
    }
    // Finishing a null reference is an invalid operation.
    let t = trace_ir::parse_trace("[p0]\nvirtual_ref_finish(p0, ConstPtr(null))\nfinish()").unwrap();
    let int = interp::run(&t, &[RtValue::Ref(0)], &RunConfig::default()).outcome;
    assert!(matches!(int, Outcome::Invalid { promise: false, .. }), "{int}");
    for memory in [MemoryAccess::Direct, MemoryAccess::Hooks] {
        let native = run_native(&t, &[0], &CompileOptions { memory, ..opts() });
        assert!(matches!(native, Exit::Invalid { .. }), "{memory:?}: {native:?}");
    }
}

/// `gc_load*` and `gc_store*` (byte offsets into an object, sizes signed for sign
/// extension) and `setinteriorfield_raw`, natively in both memory modes, against the
/// interpreter.
#[test]
fn byte_offset_accesses_natively() {
    // (`i11`: the address of a real buffer, raw memory)
    let t = trace_ir::parse_trace(
        "[i0, i1, i11]
        p2 = new(descr=<SizeDescr 48>)
        gc_store(p2, 8, i0, 8)
        gc_store(p2, 16, i1, -2)
        gc_store_indexed(p2, 3, 1.5, 8, 0, 8)
        gc_store_indexed(p2, 1, p2, 8, 32, 8)
        i3 = gc_load_i(p2, 16, -2)
        i4 = gc_load_i(p2, 16, 2)
        i5 = gc_load_indexed_i(p2, 2, 4, 0, 8)
        f6 = gc_load_f(p2, 24, 8)
        p7 = gc_load_indexed_r(p2, 5, 8, 0, 8)
        i8 = ptr_eq(p7, p2)
        i9 = gc_load_i(p2, 9, 1)
        setinteriorfield_raw(i11, 1, i0, descr=<InteriorFieldDescr <FieldS T.x 8> item=16>)
        i12 = raw_load_i(i11, 24, descr=<ArrayS 8>)
        finish(i3, i4, i5, f6, i8, i9, i12)",
    )
    .unwrap();
    let mut buf = vec![0u64; 8];
    let inputs = [0x1234_5678_9abc_def0u64, 0xffff, buf.as_mut_ptr() as u64];
    let int = interp::run(&t, &inputs.map(|i| RtValue::Int(i as i64)), &RunConfig::default()).outcome;
    let Outcome::Finish(v) = &int else { panic!("{int}") };
    assert_eq!(v[0], RtValue::Int(-1), "sign-extended");
    assert_eq!(v[1], RtValue::Int(0xffff), "zero-extended");
    assert_eq!(v[2], RtValue::Int(0x1234_5678_9abc_def0), "index * scale + base");
    assert_eq!(v[3], RtValue::Float(1.5f64.to_bits()));
    assert_eq!(v[4], RtValue::Int(1));
    assert_eq!(v[5], RtValue::Int(0xde), "a byte of the word");
    assert_eq!(v[6], RtValue::Int(0x1234_5678_9abc_def0), "item 1's field at 16 + 8");
    for memory in [MemoryAccess::Direct, MemoryAccess::Hooks] {
        let native = run_native(&t, &inputs, &CompileOptions { memory, ..opts() });
        same(&t, &native, &int).unwrap_or_else(|e| panic!("{memory:?}: {e}"));
    }
    assert_eq!(buf[3], 0x1234_5678_9abc_def0, "the raw store wrote the real buffer");
}
