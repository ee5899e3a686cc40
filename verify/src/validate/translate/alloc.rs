//! Translation of allocations: tracked objects, arrays and strings.

use std::collections::BTreeMap;

use trace_ir::{Op, OpRef};

use crate::validate::side::{alloc_class, struct_shape, LocalObj, Side};
use crate::validate::{unsupported, R};

impl<'t> Side<'t> {
    /// `new`, `new_with_vtable`: a tracked object with no fields set, and its class.
    pub(super) fn new_struct(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let d = op.descr.map(|d| trace.descr(d));
        let class = alloc_class(opc, d);
        let shape = match d {
            Some(d) => struct_shape(opc, d),
            None => return unsupported(format!("{opc} without a size descriptor")),
        };
        let o = self.new_obj(LocalObj {
            shape,
            class,
            len: None,
            fields: BTreeMap::new(),
            item_of: BTreeMap::new(),
            addr: None,
            dead: false,
        });
        self.set(r, o);
        Ok(())
    }

    /// `new_array`, `new_array_clear`: a tracked array of the given length.
    pub(super) fn new_array(&mut self, r: OpRef, op: &Op) -> R<()> {
        let trace = self.trace;
        let opc = op.opcode;
        let len = self.bv_of(op.args[0])?;
        let d = op.descr.map(|d| trace.descr(d));
        let Some(d) = d else {
            return unsupported(format!("{opc} without an array descriptor"));
        };
        let shape = format!("array:{d:?}");
        let o = self.new_obj(LocalObj {
            shape,
            class: None,
            len: Some(len.clone()),
            fields: BTreeMap::new(),
            item_of: BTreeMap::new(),
            addr: None,
            dead: false,
        });
        self.set(r, o);
        Ok(())
    }

    /// `newstr`, `newunicode`: a tracked string of the given length.
    pub(super) fn new_string(&mut self, r: OpRef, op: &Op) -> R<()> {
        let opc = op.opcode;
        let len = self.bv_of(op.args[0])?;
        let o = self.new_obj(LocalObj {
            shape: opc.name().into(),
            class: None,
            len: Some(len),
            fields: BTreeMap::new(),
            item_of: BTreeMap::new(),
            addr: None,
            dead: false,
        });
        self.set(r, o);
        Ok(())
    }
}
