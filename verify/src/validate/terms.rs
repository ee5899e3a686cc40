//! Small Z3 term builders: numerals, booleans as words, uninterpreted functions.

use z3::ast::{Ast, Bool, BV};
use z3::{FuncDecl, Sort};

pub(super) fn bv(v: u64) -> BV {
    BV::from_u64(v, 64)
}

pub(super) fn zero() -> BV {
    bv(0)
}

pub(super) fn bool_to_bv(b: &Bool) -> BV {
    b.ite(&bv(1), &bv(0))
}

pub(super) fn class_of(p: &BV) -> BV {
    let f = FuncDecl::new("class_of", &[&Sort::bitvector(64)], &Sort::bitvector(64));
    f.apply(&[p]).as_bv().expect("class_of returns a bit-vector")
}

pub(super) fn uf_bv(name: &str, args: &[BV]) -> BV {
    let sorts: Vec<Sort> = args.iter().map(|a| Sort::bitvector(a.get_size())).collect();
    let sort_refs: Vec<&Sort> = sorts.iter().collect();
    let f = FuncDecl::new(format!("{name}/{}", args.len()), &sort_refs, &Sort::bitvector(64));
    let arg_refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
    f.apply(&arg_refs)
        .as_bv()
        .expect("uninterpreted functions return bit-vectors")
}

pub(super) fn uf_bool(name: &str, args: &[BV]) -> Bool {
    let sorts: Vec<Sort> = args.iter().map(|a| Sort::bitvector(a.get_size())).collect();
    let sort_refs: Vec<&Sort> = sorts.iter().collect();
    let f = FuncDecl::new(format!("{name}/{}", args.len()), &sort_refs, &Sort::bool());
    let arg_refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
    f.apply(&arg_refs).as_bool().expect("predicate returns a boolean")
}
