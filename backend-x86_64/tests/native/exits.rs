//! Guard exits whose resume data names virtual objects: rebuilt through the runtime.

use super::random::same_with_heap;
use super::*;

/// A guard whose fail arguments name virtual objects (a struct with a vtable pointing to an
/// array and to itself): the exit rebuilds them through the runtime with the same content as
/// the interpreter's rebuilt objects.
#[test]
fn exits_rebuild_virtual_objects() {
    use trace_ir::{ArrayDescr, Descr, FailArg, FieldDescr, SizeDescr, VirtualField, VirtualKind, VirtualObject};
    let mut b = TraceBuilder::new();
    let x = b.input(Kind::Int);
    let y = b.input(Kind::Float);
    let sd = b.descr(Descr::Size(SizeDescr {
        size: 48,
        vtable: Some(0x7000_1000),
    }));
    let fa = b.descr(Descr::Field(FieldDescr {
        name: "T.a".into(),
        offset: 8,
        size: 8,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let fb = b.descr(Descr::Field(FieldDescr {
        name: "T.b".into(),
        offset: 16,
        size: 2,
        signed: true,
        kind: Kind::Int,
        immutable: false,
    }));
    let fp = b.descr(Descr::Field(FieldDescr {
        name: "T.p".into(),
        offset: 24,
        size: 8,
        signed: false,
        kind: Kind::Ref,
        immutable: false,
    }));
    let ff = b.descr(Descr::Field(FieldDescr {
        name: "T.f".into(),
        offset: 32,
        size: 8,
        signed: false,
        kind: Kind::Float,
        immutable: false,
    }));
    let fs = b.descr(Descr::Field(FieldDescr {
        name: "T.s".into(),
        offset: 40,
        size: 8,
        signed: false,
        kind: Kind::Ref,
        immutable: false,
    }));
    let ad = b.descr(Descr::Array(ArrayDescr {
        item_size: 8,
        signed: true,
        kind: Kind::Int,
        base_offset: 16,
        len_offset: 8,
    }));
    let seven = b.const_int(7);
    let y2 = b.op(Opcode::IntMul, &[x, seven]);
    let ten = b.const_int(10);
    let lt = b.op(Opcode::IntLt, &[x, ten]);
    b.guard(Opcode::GuardTrue, &[lt], &[], 77);
    b.finish(&[y2]);
    let mut t = b.build().unwrap();
    let c99 = t.make_const_int(-99);
    t.guards[0].fail_args = vec![
        FailArg::Value(x),
        FailArg::Virtual(0),
        FailArg::Hole,
        FailArg::Virtual(1),
    ];
    t.guards[0].virtuals = vec![
        VirtualObject {
            kind: VirtualKind::Struct {
                opcode: Opcode::NewWithVtable,
                descr: sd,
            },
            fields: vec![
                (VirtualField::Field(fa), FailArg::Value(y2)),
                (VirtualField::Field(fb), FailArg::Value(c99)),
                (VirtualField::Field(fp), FailArg::Virtual(1)),
                (VirtualField::Field(ff), FailArg::Value(y)),
                (VirtualField::Field(fs), FailArg::Virtual(0)),
            ],
        },
        VirtualObject {
            kind: VirtualKind::Array {
                opcode: Opcode::NewArray,
                descr: ad,
                len: 3,
            },
            fields: vec![
                (VirtualField::Item(0), FailArg::Value(x)),
                (VirtualField::Item(2), FailArg::Value(y2)),
            ],
        },
    ];
    trace_ir::verify(&t).unwrap();
    for o in [opts(), tight()] {
        let inputs = [RtValue::Int(12), RtValue::float(2.5)];
        let int = interp::run(&t, &inputs, &RunConfig::default());
        let words: Vec<u64> = inputs.iter().map(|v| v.bits()).collect();
        let c = compile(&t, &o).unwrap();
        let mut heap = SimpleHeap::new();
        let native = c.run_test(&words, &mut heap).unwrap();
        assert!(matches!(native, Exit::Guard { ref values, .. } if values.len() == 4 && values[2] == ExitValue::Hole));
        assert_eq!(heap.allocations.len(), 2);
        same_with_heap(&t, &native, &heap, &int).unwrap();
    }
}

/// The trace of the exit-write tests: a guard whose exit stores a rebuilt virtual object into
/// field `top` (offset 16) of the input object p0 and into item 1 of the input array p1.
pub(super) fn exit_write_trace() -> Trace {
    trace_ir::parse_trace(
        "[p0, p1, i2]
         guard_true(i2, descr=<Guard1>) [i2] {$0 = new_with_vtable(descr=<SizeDescr 16>) <FieldS f 8>: 41; setfield_gc(p0, $0, descr=<FieldP top 16>); setarrayitem_gc(p1, 1, $0, descr=<ArrayP 8>)}
         finish(i2)",
    )
    .unwrap()
}

/// Direct mode: the exit writes the rebuilt object's address into real memory, after filling
/// in its fields; a null object makes the exit invalid instead of writing.
#[test]
fn exits_perform_their_writes_into_memory() {
    let t = exit_write_trace();
    for o in [opts(), tight()] {
        let c = compile(&t, &o).unwrap();
        let obj = vec![0u64; 3].into_boxed_slice();
        let arr = vec![0u64, 2, 0, 0].into_boxed_slice();
        let (po, pa) = (obj.as_ptr() as u64, arr.as_ptr() as u64);
        let mut heap = SimpleHeap::new();
        let exit = c.run_test(&[po, pa, 0], &mut heap).unwrap();
        assert!(
            matches!(exit, Exit::Guard { ref values, .. } if values == &ints(&[0])),
            "{exit:?}"
        );
        assert_eq!(heap.allocations.len(), 1);
        let rebuilt = obj[2];
        assert_ne!(rebuilt, 0);
        assert_eq!(arr[3], rebuilt, "item 1 of the array holds the same object");
        // SAFETY: `rebuilt` is the 16-byte object the runtime allocated for the exit.
        assert_eq!(unsafe { (rebuilt as *const u64).add(1).read() }, 41);
        // the guard holds: nothing written
        let mut heap = SimpleHeap::new();
        let obj2 = vec![0u64; 3].into_boxed_slice();
        let exit = c.run_test(&[obj2.as_ptr() as u64, pa, 1], &mut heap).unwrap();
        assert!(matches!(exit, Exit::Finish { .. }), "{exit:?}");
        assert_eq!(obj2[2], 0);
        let exit = c.run_test(&[0, pa, 0], &mut SimpleHeap::new()).unwrap();
        assert!(matches!(exit, Exit::Invalid { .. }), "{exit:?}");
    }
}
