//! The fuzz checks of `verify::fuzzing` on a bounded number of cases (the same code the
//! `fuzz/` targets and `tracejit fuzz` run), plus regression cases.

use trace_interp::rng::Rng;
use verify::fuzzing::{check_native_diff, check_optimize_diff, check_parse, check_tree_diff, check_validate};

/// A trace from its text (the regression cases are written by hand, so they parse).
fn parse(text: &str) -> trace_ir::Trace {
    trace_ir::text::parse_trace(text).unwrap()
}

fn cases(n: usize, seed: u64, max_len: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let len = rng.below(max_len as u64 + 1) as usize;
            (0..len).map(|_| rng.next_u64() as u8).collect()
        })
        .collect()
}

#[test]
fn parse_never_panics_on_random_bytes_and_mutated_traces() {
    for (i, c) in cases(500, 1, 200).iter().enumerate() {
        check_parse(c).unwrap_or_else(|e| panic!("case {i}: {e}"));
    }
    // Mutations of a valid trace: truncations and byte flips.
    let good = b"[i0, p1]\ni2 = int_add(i0, 1)\nguard_true(i2, descr=<Guard0>) [i0, $0] {$0 = new(descr=<SizeDescr 16>) <FieldS x 8>: i2}\nsetfield_gc(p1, i2, descr=<FieldS x 8>)\nlabel(i2, p1, descr=TargetToken(1))\nfinish(i2)\n";
    let mut rng = Rng::new(7);
    for cut in 0..good.len() {
        check_parse(&good[..cut]).unwrap_or_else(|e| panic!("prefix {cut}: {e}"));
    }
    for _ in 0..500 {
        let mut m = good.to_vec();
        let at = rng.below(m.len() as u64) as usize;
        let alphabet = b"()[],=<>$:;{}0123456789 ipf-_\n";
        m[at] = alphabet[rng.below(alphabet.len() as u64) as usize];
        check_parse(&m).unwrap_or_else(|e| panic!("mutant {}: {e}", String::from_utf8_lossy(&m)));
    }
}

#[test]
fn optimize_diff_smoke() {
    for (i, c) in cases(300, 2, 64).iter().enumerate() {
        check_optimize_diff(c).unwrap_or_else(|e| panic!("case {i} {c:?}: {e}"));
    }
}

/// A quarter of the fuzz inputs that make loops have them peeled by the optimizer (the
/// second byte's two low bits), so the targets check peeled loops too.
#[test]
fn fuzz_inputs_cover_peeled_loops() {
    let mut peeled = 0;
    for c in cases(300, 2, 64) {
        let options = verify::fuzzing::optimizer_options(&c);
        let (cfg, seed) = verify::fuzzing::trace_params(&c, verify::fuzzing::Family::All);
        let (t, _) = trace_interp::random::random_trace(&cfg, seed);
        let out = optimizer::optimize(&t, &options).unwrap();
        if options.peel && trace_ir::is_peeled_form(&t, &out.trace) {
            peeled += 1;
        }
    }
    assert!(peeled >= 20, "only {peeled} of 300 fuzz cases optimized a peeled loop");
}

#[test]
fn native_diff_smoke() {
    for (i, c) in cases(150, 3, 64).iter().enumerate() {
        check_native_diff(c).unwrap_or_else(|e| panic!("case {i} {c:?}: {e}"));
    }
}

/// Whether a bridge of `case`, optimized, jumps into a peeled loop's body.
fn enters_a_body(case: &verify::fuzzing::FuzzTree) -> bool {
    case.tree.bridges.iter().any(|b| {
        let out = optimizer::Optimizer::new()
            .optimize_bridge(&b.trace, &optimizer::Options::default(), &case.entries)
            .unwrap();
        let t = &out.trace;
        let jump = t.ops.last().unwrap();
        let token = match jump.descr.map(|d| t.descr(d)) {
            Some(trace_ir::Descr::Target(x)) if jump.opcode == trace_ir::Opcode::Jump => Some(*x),
            _ => None,
        };
        case.entries.iter().any(|e| Some(e.body) == token)
    })
}

/// Random trees: most have a bridge that jumps back into the loop, some grown on an
/// optimized loop whose guards carry virtual objects, some whose bridges start from the
/// optimizer's facts at their guard and, optimized, jump into the peeled loop's body.
#[test]
fn tree_diff_smoke() {
    let (mut reentered, mut with_virtuals, mut with_facts, mut into_body) = (0, 0, 0, 0);
    for (i, c) in cases(2000, 5, 64).iter().enumerate() {
        check_tree_diff(c).unwrap_or_else(|e| panic!("case {i} {c:?}: {e}"));
        let case = verify::fuzzing::bytes_tree(c).unwrap();
        let (tree, inputs) = (&case.tree, &case.inputs);
        let cfg = trace_interp::RunConfig::default();
        if trace_interp::run_tree(tree, inputs, &cfg).iterations
            > trace_interp::run(&tree.root, inputs, &cfg).iterations
        {
            reentered += 1;
        }
        if tree.root.guards.iter().any(|g| !g.virtuals.is_empty()) {
            with_virtuals += 1;
        }
        if case.unhinted.as_ref().is_some_and(|u| u != tree) {
            with_facts += 1;
        }
        if enters_a_body(&case) {
            into_body += 1;
        }
    }
    assert!(
        reentered > 700,
        "only {reentered} trees went back into the loop from a bridge"
    );
    assert!(
        with_virtuals > 90,
        "only {with_virtuals} trees have guards with virtual objects"
    );
    assert!(
        with_facts > 600,
        "only {with_facts} trees have bridges that start from facts"
    );
    assert!(
        into_body > 100,
        "only {into_body} trees have a bridge that enters a loop body"
    );
}

/// Translation validation of the optimized bridges of random trees.
#[test]
fn tree_validate_smoke() {
    for (i, c) in cases(200, 6, 64).iter().enumerate() {
        let case = verify::fuzzing::bytes_tree(c).unwrap();
        if let Some(e) = verify::fuzzing::tree_failure(&case, true) {
            panic!("case {i} {c:?}: {e}");
        }
    }
}

#[test]
fn validate_smoke() {
    for (i, c) in cases(40, 4, 64).iter().enumerate() {
        check_validate(c).unwrap_or_else(|e| panic!("case {i} {c:?}: {e}"));
    }
}

/// Findings of the libFuzzer runs (bytes as the fuzzer saved them), fixed:
/// - `optimize_diff`: a commuted `float_mul` of two NaNs returned the other NaN's payload
///   (the IR keeps NaN payloads: `float_mul` and `float_add` are not commutative, so CSE
///   never swaps their operands);
/// - `validate`: a byte array stored into an external object before an item store at a
///   variable index was reported invalid against the optimizer's order (array still fresh
///   at the item store): the validator knew the fresh array's zero items only on one side
///   and compared full-width values of narrow stores.
#[test]
fn fuzz_findings_stay_fixed() {
    // native_diff: a loop wrote a reference into an array item, and the next iteration read a
    // byte of it through a struct field descriptor: the address differs between the
    // interpreter and native code. A number read of a reference's bytes is a broken promise
    // (`trace_interp` test `a_number_read_of_a_reference_is_a_broken_promise`).
    check_native_diff(&[
        236, 215, 0, 0, 0, 246, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 65, 1, 65, 64, 0, 44, 236, 215,
    ])
    .unwrap();
    // native_diff: a loop stored an array into its own item and the next iteration wrote a
    // struct field over half of it, then dereferenced the item: the interpreter read the
    // forged address as an external object, native code crashed. Reading a reference from
    // bytes not written as one is now a broken promise, and a run that breaks a promise is
    // not made natively (`trace_interp` test `a_reference_read_from_other_bytes_is_a_broken_promise`).
    for bytes in [
        &[
            236, 215, 0, 48, 48, 4, 0, 0, 0, 89, 89, 89, 89, 89, 89, 0, 59, 47, 48, 48, 45, 52, 48, 48, 48, 203, 0,
            111, 109, 89, 89, 89, 89, 56, 0, 254, 255, 255, 255, 255, 255, 255, 15, 112, 0, 0, 114, 111, 109, 93,
        ][..],
        &[
            236, 215, 0, 0, 120, 95, 26, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 128, 128, 128, 124, 40, 127, 127, 118, 127,
            128, 128, 128, 175, 128, 241, 112, 0, 0, 65, 174, 3, 65, 174, 3, 97, 0, 176, 176, 176, 176, 176, 176, 176,
            176, 176, 176, 176, 3, 65, 0,
        ][..],
    ] {
        check_native_diff(bytes).unwrap();
    }
    check_optimize_diff(&[
        190, 0, 0, 0, 0, 190, 1, 6, 245, 0, 0, 0, 0, 0, 76, 245, 0, 155, 0, 0, 11, 0, 8, 0, 0, 0,
    ])
    .unwrap();
    check_validate(&[92, 92, 97, 114, 105, 116, 185]).unwrap();
    // optimize_diff: under type-based aliasing a float field was read, then an integer
    // `record_known_field` promised the same bytes, then the float was stored back. The
    // optimizer dropped the store and the dead load; without the load first, the promise
    // decided the initial bytes the float view read too. A promise decides only reads of
    // its kind (`trace_interp` test `a_known_field_decides_only_reads_of_its_kind`).
    check_optimize_diff(&[
        231, 1, 5, 0, 128, 0, 0, 8, 143, 0, 0, 46, 100, 4, 111, 114, 95, 105, 100, 101, 110, 116, 105, 0, 148, 0,
    ])
    .unwrap();
    // optimize_diff: a loop stored an array into its own item, then wrote a byte field over
    // part of that item and exited with the array. The bytes left of the reference are an
    // address's (allocation order differs between the original and the optimized run), so
    // they are compared as the bytes of corresponding references, and reading them as a
    // number is a broken promise (`trace_interp` test `the_bytes_left_of_a_reference_are_not_a_number`).
    check_optimize_diff(&[
        114, 183, 0, 0, 0, 6, 16, 112, 49, 0, 0, 0, 233, 129, 0, 38, 16, 108, 108, 108, 254, 108, 251, 255, 203, 43,
        203, 203, 213, 109, 44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ])
    .unwrap();
    // optimize_diff: an `assert_not_none` the original breaks on some inputs, after which a
    // guard's exit word is null; the optimizer states what the promise said (non-null) at
    // the guard. A run that breaks a promise has no defined outcome, so the stated facts are
    // checked only on runs of originals that break none.
    check_optimize_diff(&[
        74, 63, 172, 0, 0, 63, 0, 0, 129, 0, 193, 0, 0, 0, 0, 0, 10, 0, 188, 0, 0, 0, 0, 0, 0, 0, 0, 193, 193, 193,
        193, 193, 193, 193, 13, 0, 10, 0, 0, 0, 35, 254, 255, 255, 255, 0, 193,
    ])
    .unwrap();
    // optimize_diff: a float item of a fresh array that escaped into a call, cut by a narrower
    // store after another heap-writing call, and a byte of it read before (optimized) or after
    // (original) the store: the interpreter applied the calls' effect per cell, so cutting the
    // cell changed what the earlier call had done to its other bytes (the optimizer's order is
    // right: the byte and the store do not overlap).
    check_optimize_diff(&[
        74, 39, 0, 0, 0, 10, 35, 0, 10, 0, 0, 4, 0, 0, 0, 109, 109, 109, 255, 0, 0, 109, 0, 0, 1, 167, 0, 255, 28, 0,
        0, 255, 0, 170, 255, 0, 167, 0, 255, 28, 0, 0, 255, 170, 255, 0, 0, 0, 211, 251, 0, 0, 10, 0, 0, 10, 0, 0, 0,
        64, 0, 0, 0, 16,
    ])
    .unwrap();
    // optimize_diff: a materialized object whose zero field was not written, then read
    // through a narrower view after a heap-writing call: the interpreter's effect of a call
    // on memory the trace did not write goes by the view read, so a zero field is left
    // unwritten only when its descriptor alone reads its bytes.
    for bytes in [
        &[
            109, 3, 0, 38, 25, 255, 255, 255, 255, 255, 255, 5, 63, 81, 81, 81, 255, 255, 255, 255, 81, 28, 28, 22, 0,
            94, 116, 209, 69, 23, 93, 116, 1, 80, 182, 38, 38, 38, 114, 38, 38, 38, 81, 28, 28, 22, 0, 94, 116, 209,
            69, 23, 93, 154, 154, 154, 154, 38, 114,
        ][..],
        &[
            114, 95, 0, 0, 255, 255, 255, 255, 255, 223, 0, 111, 114, 95, 105, 0, 115, 0, 111, 49, 114, 95, 46, 231,
            255, 0, 23, 0, 0, 0, 129, 100, 102, 108, 0, 103, 102, 102, 102, 102, 102, 102, 6, 41, 100, 105, 122, 228,
            118, 38, 115, 114, 0, 0, 0, 0, 192,
        ][..],
    ] {
        check_optimize_diff(bytes).unwrap();
    }
    // optimize_diff: a peeled loop that never leaves, run to the iteration limit: the peeled
    // form makes one more call before the limit (its first iteration precedes the back edge
    // the limit counts); runs cut by the limit are compared up to the shorter one.
    check_optimize_diff(&[
        114, 255, 255, 255, 255, 255, 255, 255, 255, 0, 255, 95, 255, 114, 255, 255, 0, 0, 0, 1, 0, 0, 6, 0, 0, 0, 0,
        229, 229, 229, 229, 229, 229, 229, 229, 229, 229, 0, 0, 33, 38, 0, 41, 64, 38, 214, 179, 38, 114, 114, 8, 36,
    ])
    .unwrap();
    // optimize_diff: an array read from a pointer array was accessed
    // with another array descriptor than its allocation's on inputs other than the
    // generator's example (a pointer array written as an integer one): under byte views the
    // optimizer orders and forwards such accesses by their bytes, under type-based aliasing
    // the access is a broken promise of the original.
    for bytes in [
        &[
            79, 1, 0, 0, 65, 255, 129, 0, 0, 0, 0, 206, 122, 5, 0, 61, 129, 0, 20, 0, 2, 0, 63, 0, 0, 116, 0, 0, 0, 0,
            0, 206, 122, 5, 0, 61, 129, 0, 20, 0, 2, 0, 0, 0, 116, 4, 0, 0, 0, 179, 0, 255, 39, 255, 0, 255, 154, 0,
            18, 83, 91,
        ][..],
        &[
            78, 1, 0, 0, 16, 255, 0, 0, 0, 0, 2, 0, 10, 0, 0, 0, 114, 115, 104, 105, 102, 116, 95, 110, 111, 110, 110,
            101, 0, 0, 0, 139, 255, 122, 1, 29, 255, 255, 255, 115, 255, 43, 26, 122, 48, 249,
        ],
    ] {
        check_optimize_diff(bytes).unwrap();
    }
    // validate: fresh objects the validator gave an address on one side
    // only (escaped there, still tracked on the other) had their length and zero fields
    // compared as heap contents; and at an exit the original passed a self-referencing array
    // the validator had escaped (stored into itself at an index a later guard pins to 0),
    // the optimized trace an equal virtual one, which were not compared by contents.
    check_validate(&[77, 130, 77, 195, 194, 130, 77, 194, 194]).unwrap();
    // validate (three false `Invalid`s of the validator):
    // - a fresh array escaped on one side only (read at a non-constant index) against the
    //   other side's tracked copy after a heap-writing call: the call made the escaped
    //   object's contents unknown (now carried over the call: nothing can reach it);
    // - two arrays of the same descriptor escaping in the opposite order on the two sides
    //   (the optimizer delays a store): escaped addresses were numbered in escape order over
    //   all objects (now per shape and constant length);
    // - the same with a struct and an array.
    for bytes in [
        &[
            16, 0, 243, 32, 0, 255, 255, 0, 0, 0, 191, 5, 0, 10, 0, 91, 0, 2, 0, 0, 0, 255, 255, 255, 137, 137, 137,
            137, 137, 137, 137, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 137, 137, 137, 137, 137, 137,
            65, 137, 137, 137, 137, 137,
        ][..],
        &[
            32, 0, 0, 0, 0, 63, 0, 0, 0, 0, 0, 0, 0, 32, 5, 32, 108, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 52, 52, 52, 52,
            52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 0, 5, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 35,
        ],
        &[
            32, 0, 0, 0, 0, 63, 0, 0, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 52, 0, 0, 0, 0, 0, 0,
            0, 0, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 54, 52, 5, 0, 0, 5, 2, 0, 0, 0, 0, 0, 0, 0, 35,
        ],
    ] {
        check_validate(bytes).unwrap();
    }
    check_validate(&[
        117, 27, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 116, 255,
        255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ])
    .unwrap();
    // validate: a `cond_call` whose condition a guard had made zero was dropped, and the
    // validator paired it with the next `cond_call` of the same function (different
    // constant arguments) instead of proving it never calls
    // (`validate_cond_calls::a_dropped_cond_call_is_not_paired_with_a_later_one_of_the_same_function`).
    check_validate(&[
        32, 32, 32, 32, 32, 32, 63, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 32, 32, 32, 32, 32, 0, 0, 0, 32, 32, 32, 32,
        101, 120, 110, 255, 101, 120, 116, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 36, 32, 32, 32, 32, 32,
        0, 32, 32, 32, 247, 32, 9,
    ])
    .unwrap();
    // validate: a `cond_call_value_i` whose value is known non-zero was dropped, and the
    // validator paired it with the later plain `call_i` of the same function
    // (`validate_cond_calls::a_dropped_cond_call_value_is_not_paired_with_a_later_plain_call_of_the_same_function`).
    check_validate(&[
        10, 10, 0, 96, 2, 0, 255, 12, 3, 255, 255, 1, 14, 3, 255, 203, 203, 203, 203, 203, 255, 36, 76, 46, 76, 76, 76,
        76, 76, 76, 76, 76, 76, 76, 76, 76, 76, 76, 76, 76, 76, 86, 76, 76, 255, 255, 255, 255, 255, 0, 0, 0, 0, 255,
        255,
    ])
    .unwrap();
    // validate: an item of a fresh array read through another descriptor, moved before the
    // store that lets the array escape, was compared with an unknown item of the escaped
    // array (`validate_memory::fresh_array_read_through_another_descriptor_after_it_escaped_is_zero_under_type_based_aliasing`).
    check_validate(&[
        97, 122, 105, 116, 104, 95, 108, 104, 255, 255, 255, 255, 112, 65, 10, 67, 5,
    ])
    .unwrap();
    // validate: a `cond_call_value_i` on a constant non-zero value (it never calls, dropped)
    // was paired with the later one of the same function the optimized trace keeps
    // (`validate_cond_calls::a_cond_call_value_on_a_constant_is_not_paired_with_one_on_a_computed_value`).
    check_validate(&[255, 255, 255, 255, 46, 255, 255, 255, 96, 223]).unwrap();
    // validate: under byte views the original let a temporary object escape (read through an
    // overlapping descriptor), so the object both traces store into a field the byte memory
    // holds escaped in another order on each side and was not paired by role there
    // (`validate_memory::fresh_objects_stored_into_byte_memory_are_paired_by_role`).
    check_validate(&[
        193, 193, 193, 193, 193, 70, 62, 0, 193, 193, 193, 70, 19, 0, 62, 0, 0, 49, 255, 255, 9, 10,
    ])
    .unwrap();
    // validate: the same at a variable item of a fresh array, whose bytes the byte memory
    // holds at a symbolic offset
    // (`validate_memory::fresh_objects_stored_at_a_variable_item_of_byte_memory_are_paired_by_role`).
    check_validate(&[
        37, 1, 0, 0, 0, 7, 2, 0, 251, 62, 62, 62, 153, 153, 153, 153, 153, 153, 153, 153, 153, 153, 153, 153, 153, 153,
        153, 153, 153, 153, 153, 153, 153, 153, 153, 110, 153, 0, 0, 231, 193, 70, 62, 139, 70, 62, 139, 193, 193, 24,
        193, 93, 37, 193, 193, 24, 193, 70, 62, 139, 10,
    ])
    .unwrap();
    // validate: a conditional call whose condition is zero (a field of a fresh object) and a
    // later one of the same function that always calls, which the optimized trace keeps as a
    // plain call, were paired the wrong way by the alignment of sync points
    // (`validate_cond_calls::the_plain_call_a_later_cond_call_became_is_found_by_the_next_alignment`).
    check_validate(&[
        37, 1, 0, 0, 0, 255, 193, 24, 193, 93, 193, 37, 1, 0, 82, 0, 255, 193, 24, 193, 93, 193, 193, 255, 193,
    ])
    .unwrap();
    // validate: a store of a fresh object delayed past an elidable call whose reference
    // result the trace writes through: the validator let the result be the object in the
    // original (`validate_memory::an_elidable_call_does_not_return_an_object_only_mutable_memory_holds`).
    check_validate(&[
        116, 3, 133, 116, 105, 109, 6, 0, 0, 35, 0, 255, 255, 255, 155, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        25, 255, 9, 0, 0, 128, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 193, 193, 0, 0, 0, 255, 139,
        63,
    ])
    .unwrap();
    // validate: a fresh object that holds itself in a field (a virtual reference finished
    // with itself) stored by a guard's exit, under byte views where a narrower descriptor
    // reads a byte of that field: the comparison of its contents asked for that byte of a
    // reference to a tracked object, which has no address, and gave up; those bytes are
    // compared as the field that holds them
    // (`validate_memory::an_object_holding_itself_is_compared_through_its_field`).
    for bytes in [
        &[93, 50, 37, 156, 2, 84, 156, 156, 156, 156, 46, 2, 84][..],
        &[
            26, 9, 0, 0, 0, 26, 26, 18, 26, 26, 26, 33, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 249, 26, 26, 26,
            26, 26, 26, 0, 0, 0, 255, 255, 255, 255, 26, 255, 191, 191, 191, 191, 191, 191, 191, 191, 191, 26, 26, 26,
            26, 26, 26, 61, 26, 26, 26, 26, 26, 249, 247, 249, 247,
        ][..],
    ] {
        check_validate(bytes).unwrap();
    }
    // validate: a fresh virtual reference stored into a field and overwritten there escapes
    // in the original only; the objects that escape on both sides were not paired where the
    // field of the survivor may hold a third object
    // (`validate_memory::an_object_whose_store_is_overwritten_escapes_in_the_original_only`).
    check_validate(&[
        58, 178, 0, 0, 0, 0, 0, 0, 0, 16, 16, 138, 87, 1, 0, 0, 0, 0, 0, 0, 25, 119, 87, 87, 87, 87, 87, 87, 87, 87,
        87, 87, 87, 87, 87, 87, 87, 64, 87, 87, 87, 87, 87, 87, 87, 50, 87, 87, 87, 87, 87, 87, 87, 87, 87,
    ])
    .unwrap();
}

/// A fresh array escaping on one side only is not compared as heap contents, but a
/// reference to it that the other side does not store still is.
#[test]
fn one_sided_escape_is_visible_through_references() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[p1, i0]
p2 = new_array_clear(4, descr=<ArrayP 8>)
setfield_gc(p1, p2, descr=<FieldP T.inst_p 24>)
finish(i0)
",
    );
    let wrong = parse(
        "[p1, i0]
setfield_gc(p1, ConstPtr(null), descr=<FieldP T.inst_p 24>)
finish(i0)
",
    );
    let v = validate(&original, &wrong, &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
    let unobserved = parse(
        "[p1, i0]
p2 = new_array_clear(4, descr=<ArrayP 8>)
p3 = new_array_clear(2, descr=<ArrayP 8>)
setarrayitem_gc(p3, i0, p2, descr=<ArrayP 8>)
finish(i0)
",
    );
    let dropped = parse(
        "[p1, i0]
finish(i0)
",
    );
    let v = validate(&unobserved, &dropped, &Config::default());
    assert!(!matches!(v, Verdict::Invalid { .. }), "{v:?}");
}

/// The validate finding, minimized: the optimizer keeps the byte array fresh until after the
/// item store and stores it into `p4` afterwards. Valid; and storing a different byte is not.
#[test]
fn fresh_byte_array_stored_late_is_valid() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[i0, p4, i5]
p7 = new_array(4, descr=<ArrayU 1>)
setfield_gc(p4, p7, descr=<FieldP T.inst_p 24>)
i10 = int_and(i5, 3)
setarrayitem_gc(p7, i10, i0, descr=<ArrayU 1>)
finish(i0)
",
    );
    let optimized = |stored: &str| {
        parse(&format!(
            "[i0, p4, i5]
p6 = new_array(4, descr=<ArrayU 1>)
i7 = int_and(i5, 3)
{stored}
setarrayitem_gc(p6, i7, i8, descr=<ArrayU 1>)
setfield_gc(p4, p6, descr=<FieldP T.inst_p 24>)
finish(i0)
"
        ))
    };
    let cfg = Config::default();
    // Only the low byte is stored: adding 256 changes nothing a read can see.
    let same = validate(&original, &optimized("i8 = int_add(i0, 256)"), &cfg);
    assert!(matches!(same, Verdict::Valid), "{same:?}");
    let wrong = validate(&original, &optimized("i8 = int_add(i0, 1)"), &cfg);
    assert!(matches!(wrong, Verdict::Invalid { .. }), "{wrong:?}");
}

/// eval-pypy on the dev corpus (fannkuch, float, richards: the same loop): the optimizer
/// knows a fresh array's length as a constant where the original computes it, and the array
/// escapes with an item never written. Its zero items are an assumption about the heap both
/// sides start from, so the side with the symbolic length reads the same zeros.
#[test]
fn fresh_array_of_symbolic_vs_constant_length_is_valid() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[i0, p1, p5]
i2 = uint_rshift(i0, 63)
i3 = int_lt(i2, 2)
i6 = int_add(i3, 1)
p4 = new_array_clear(i6, descr=<ArrayP 8>)
setfield_gc(p1, p4, descr=<FieldP T.inst_p 24>)
setarrayitem_gc(p4, 0, p5, descr=<ArrayP 8>)
finish(i0)
",
    );
    let optimized = |item: &str| {
        parse(&format!(
            "[i0, p1, p5]
p4 = new_array_clear(2, descr=<ArrayP 8>)
setarrayitem_gc(p4, {item}, p5, descr=<ArrayP 8>)
setfield_gc(p1, p4, descr=<FieldP T.inst_p 24>)
finish(i0)
"
        ))
    };
    let cfg = Config::default();
    let same = validate(&original, &optimized("0"), &cfg);
    assert!(matches!(same, Verdict::Valid), "{same:?}");
    // Storing into the other item is a real difference.
    let wrong = validate(&original, &optimized("1"), &cfg);
    assert!(matches!(wrong, Verdict::Invalid { .. }), "{wrong:?}");
}

/// At an exit the original passes a fresh array the validator had to give an address (a
/// store of the array into itself at an index only a later guard pins to 0), the optimized
/// trace an equal virtual one: equal by contents. A virtual with a different item is not; nor
/// are two virtuals where the original passes one array twice; nor a virtual where the
/// original also stored the array into an external object.
#[test]
fn escaped_and_virtual_objects_compare_by_contents() {
    use verify::validate::{validate, Config, Verdict};
    let original = |twice: bool, stored: bool| {
        parse(&format!(
            "[i0, p1]
p5 = new_array_clear(4, descr=<ArrayP 8>)
i7 = int_and(i0, 3)
setarrayitem_gc(p5, i7, p5, descr=<ArrayP 8>)
guard_false(i7, descr=<Guard2>) []
{}i20 = getfield_gc_i(p1, descr=<FieldU T.inst_c 20 size=1>)
guard_value(i20, 24, descr=<Guard7>) [p5{}]
finish()
",
            if stored {
                "setfield_gc(p1, p5, descr=<FieldP T.inst_p 24>)\n"
            } else {
                ""
            },
            if twice { ", p5" } else { "" },
        ))
    };
    let optimized = |args: &str, virtuals: &str| {
        parse(&format!(
            "[i0, p1]
i7 = int_and(i0, 3)
guard_false(i7, descr=<Guard2>) []
i5 = getfield_gc_i(p1, descr=<FieldU T.inst_c 20 size=1>)
guard_value(i5, 24, descr=<Guard7>) [{args}] {{{virtuals}}}
finish()
"
        ))
    };
    let array = |name: &str, item: &str| format!("{name} = new_array_clear(4, descr=<ArrayP 8>) [0]: {item}");
    let cfg = Config::default();
    let v = validate(&original(false, false), &optimized("$0", &array("$0", "$0")), &cfg);
    assert!(matches!(v, Verdict::Valid), "{v:?}");
    let wrong_item = "$0 = new_array_clear(4, descr=<ArrayP 8>) [1]: $0";
    let v = validate(&original(false, false), &optimized("$0", wrong_item), &cfg);
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
    let v = validate(&original(true, false), &optimized("$0, $0", &array("$0", "$0")), &cfg);
    assert!(matches!(v, Verdict::Valid), "{v:?}");
    let two = format!("{}; {}", array("$0", "$0"), array("$1", "$1"));
    let v = validate(&original(true, false), &optimized("$0, $1", &two), &cfg);
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
    let v = validate(&original(false, true), &optimized("$0", &array("$0", "$0")), &cfg);
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
}

/// The same for a struct: the original escapes it (stored into an external field, then
/// overwritten), the optimized trace keeps it virtual; equal exactly when the fields are.
#[test]
fn escaped_and_virtual_structs_compare_by_fields() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[i0, p1]
p5 = new_with_vtable(descr=<SizeDescr 48 vtable=4096>)
setfield_gc(p5, i0, descr=<FieldS T.inst_a 8>)
setfield_gc(p1, p5, descr=<FieldP T.inst_p 24>)
setfield_gc(p1, ConstPtr(null), descr=<FieldP T.inst_p 24>)
guard_true(i0, descr=<Guard7>) [p5]
finish()
",
    );
    let optimized = |a: &str| {
        parse(&format!(
            "[i0, p1]
setfield_gc(p1, ConstPtr(null), descr=<FieldP T.inst_p 24>)
guard_true(i0, descr=<Guard7>) [$0] {{$0 = new_with_vtable(descr=<SizeDescr 48 vtable=4096>) <FieldS T.inst_a 8>: {a}}}
finish()
"
        ))
    };
    let v = validate(&original, &optimized("i0"), &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v:?}");
    let v = validate(&original, &optimized("1"), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
}

/// Two arrays of one descriptor that escape in the opposite order on the two sides (the
/// optimizer delays the store that escapes the first one) validate; storing the other array
/// does not.
#[test]
fn escape_order_of_arrays_does_not_matter() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[p0, i1]
p4 = new_array(2, descr=<ArrayP 8>)
p5 = new_array(8, descr=<ArrayP 8>)
setarrayitem_gc(p5, 4, p4, descr=<ArrayP 8>)
setfield_gc(p0, p4, descr=<FieldP T.inst_p 24>)
i12 = int_and(i1, 7)
p13 = getarrayitem_gc_r(p5, i12, descr=<ArrayP 8>)
finish(p13)
",
    );
    let optimized = |stored: &str| {
        parse(&format!(
            "[p0, i1]
p3 = new_array(2, descr=<ArrayP 8>)
i5 = int_and(i1, 7)
p6 = new_array(8, descr=<ArrayP 8>)
setarrayitem_gc(p6, 4, p3, descr=<ArrayP 8>)
p8 = getarrayitem_gc_r(p6, i5, descr=<ArrayP 8>)
setfield_gc(p0, {stored}, descr=<FieldP T.inst_p 24>)
finish(p8)
"
        ))
    };
    let v = validate(&original, &optimized("p3"), &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v:?}");
    let v = validate(&original, &optimized("p6"), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
}

/// An array escaped on one side only keeps its contents over a call that may write the heap
/// (the call cannot reach it): at the end it equals the other side's tracked array, and not
/// one with a different item.
#[test]
fn one_sided_escaped_object_survives_heap_writing_calls() {
    use verify::validate::{validate, Config, Verdict};
    let original = parse(
        "[i0, i1]
p2 = new_array_clear(4, descr=<ArrayP 8>)
setarrayitem_gc(p2, 0, p2, descr=<ArrayP 8>)
i3 = int_and(i0, 3)
p4 = getarrayitem_gc_r(p2, i3, descr=<ArrayP 8>)
call_n(268466320, i1, descr=<Callv 0 i EF=4>)
finish(p2)
",
    );
    let optimized = |item: &str| {
        parse(&format!(
            "[i0, i1]
p2 = new_array_clear(4, descr=<ArrayP 8>)
setarrayitem_gc(p2, {item}, p2, descr=<ArrayP 8>)
call_n(268466320, i1, descr=<Callv 0 i EF=4>)
finish(p2)
"
        ))
    };
    let v = validate(&original, &optimized("0"), &Config::default());
    assert!(matches!(v, Verdict::Valid), "{v:?}");
    let v = validate(&original, &optimized("1"), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
}
