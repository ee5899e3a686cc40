//! Translation validation of fused guards (`optimizer::Options::guardfusion`): a
//! `guard_nonnull` that became `guard_nonnull_class` may fail where the original passes it,
//! and must then leave the original's state at that guard; past it, the class check it
//! absorbed is proven. Each wrong variant is `Invalid`.

use optimizer::{optimize, Options, Reason};
use trace_ir::text::parse_trace;
use trace_ir::{print_trace, Trace};
use verify::validate::{validate, Config, Verdict};

fn parse(src: &str) -> Trace {
    parse_trace(src).unwrap_or_else(|e| panic!("{e}"))
}

const ORIGINAL: &str = "
[p0, p1, i2]
guard_nonnull(p0, descr=<Guard1>) [i2]
setfield_gc(p1, i2, descr=<FieldS T.x 8>)
i3 = int_add(i2, 1)
guard_class(p0, 4096, descr=<Guard2>) [i3, p1]
i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
finish(i4)
";

#[test]
fn the_optimizers_fused_guard_validates() {
    let t = parse(ORIGINAL);
    for opts in [
        Options::default(),
        Options {
            peel: true,
            ..Options::default()
        },
    ] {
        let out = optimize(&t, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.stats.removed(Reason::GuardFused), 1, "{}", print_trace(&out.trace));
        let v = validate(&t, &out.trace, &Config::for_optimized(&out));
        assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
    }
}

#[test]
fn a_fused_guard_in_a_loop_validates() {
    let t = parse(
        "[p0, i1]
         label(p0, i1, descr=TargetToken(3))
         p2 = getfield_gc_r(p0, descr=<FieldP T.next 8>)
         guard_nonnull(p2, descr=<Guard1>) [p0, i1]
         i3 = int_add(i1, 1)
         guard_class(p2, 4096, descr=<Guard2>) [p0, i3]
         i4 = int_lt(i3, 100)
         guard_true(i4, descr=<Guard3>) [p2, i3]
         jump(p2, i3, descr=TargetToken(3))",
    );
    for opts in [
        Options::default(),
        Options {
            peel: true,
            ..Options::default()
        },
    ] {
        let out = optimize(&t, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.stats.removed(Reason::GuardFused) >= 1,
            "{}",
            print_trace(&out.trace)
        );
        let v = validate(&t, &out.trace, &Config::for_optimized(&out));
        assert!(matches!(v, Verdict::Valid), "{v}\n{}", print_trace(&out.trace));
    }
}

/// `wrong`, validated as the optimized form of `ORIGINAL`, is `Invalid`.
#[track_caller]
fn assert_invalid(wrong: &str) {
    let v = validate(&parse(ORIGINAL), &parse(wrong), &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}");
}

#[test]
fn a_fused_guard_with_another_class_is_invalid() {
    // Past the guard the original's class check is gone, but the class differs.
    assert_invalid(
        "[p0, p1, i2]
         guard_nonnull_class(p0, 8192, descr=<Guard1>) [i2]
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
    );
}

#[test]
fn a_fused_guard_after_the_write_it_skips_is_invalid() {
    // Failing early, the exit has already written p1.x: not the original's state there.
    assert_invalid(
        "[p0, p1, i2]
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         guard_nonnull_class(p0, 4096, descr=<Guard1>) [i2]
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
    );
}

#[test]
fn a_fused_guard_on_another_object_is_invalid() {
    // It passes where the original's `guard_nonnull(p0)` fails.
    assert_invalid(
        "[p0, p1, i2]
         guard_nonnull_class(p1, 4096, descr=<Guard1>) [i2]
         setfield_gc(p1, i2, descr=<FieldS T.x 8>)
         i4 = getfield_gc_i(p0, descr=<FieldS T.x 8>)
         finish(i4)",
    );
}

#[test]
fn no_other_guard_may_fail_early() {
    // Only a `guard_nonnull` may absorb a check: a `guard_true` failing where the original's
    // passes, with the original's state, is still a difference.
    let original = parse(
        "[i0, i1]
         guard_true(i0, descr=<Guard1>) [i1]
         i2 = int_add(i1, 1)
         finish(i2)",
    );
    let wrong = parse(
        "[i0, i1]
         i3 = int_gt(i0, 5)
         guard_true(i3, descr=<Guard1>) [i1]
         i2 = int_add(i1, 1)
         finish(i2)",
    );
    let v = validate(&original, &wrong, &Config::default());
    assert!(matches!(v, Verdict::Invalid { .. }), "{v}");
}
