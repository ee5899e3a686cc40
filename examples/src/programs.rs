//! The example programs (sources in `examples/programs/*.tj`), their problem sizes, and the
//! same loops written directly in Rust: the "physical reference" the benchmarks compare
//! against and an independent oracle for the tests.

/// One example program.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// Short name (also the file name without `.tj`).
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// The source text (it reads the parameter `N`).
    pub source: &'static str,
    /// `N` for the demo (a fraction of a second per mode in release builds).
    pub demo_n: i64,
    /// `N` for the tests (small, but past the JIT thresholds).
    pub test_n: i64,
    /// Whether the kernel works on boxed ints only (the "integer kernels" of the targets).
    pub integer_kernel: bool,
    /// The same computation in Rust, returning what the program prints.
    pub native: fn(i64) -> String,
    /// The same with an optimization barrier on the loop counter (no vectorization, no
    /// closed form): the scalar physical reference.
    pub scalar: fn(i64) -> String,
}

/// An optimization barrier: with `SCALAR`, the value passes through an empty `asm!` block,
/// so LLVM can neither vectorize the loop nor replace it by a closed form; the loop then
/// compiles to the scalar code a tracing JIT could hope to produce.
#[inline(always)]
fn step<const SCALAR: bool>(x: i64) -> i64 {
    let mut x = x;
    if SCALAR {
        // SAFETY: an empty assembly block that only claims to read and write `x` in a register;
        // it touches no memory and no other register.
        unsafe { std::arch::asm!("/* {0} */", inout(reg) x, options(nomem, nostack, preserves_flags)) };
    }
    x
}

/// The sum of a range.
pub fn native_sum(n: i64) -> String {
    sum_impl::<false>(n)
}

/// [`native_sum`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_sum(n: i64) -> String {
    sum_impl::<true>(n)
}

fn sum_impl<const SCALAR: bool>(n: i64) -> String {
    let mut s: i64 = 0;
    let mut i = 0;
    while i < n {
        s += i;
        i = step::<SCALAR>(i + 1);
    }
    format!("{s}\n")
}

/// The PyPy bit-manipulation kernel.
pub fn native_pypy_kernel(n: i64) -> String {
    pypy_kernel_impl::<false>(n)
}

/// [`native_pypy_kernel`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_pypy_kernel(n: i64) -> String {
    pypy_kernel_impl::<true>(n)
}

fn pypy_kernel_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut s, mut i): (i64, i64) = (0, 0);
    while i < n {
        let x = (i << 3) & 0xff;
        s = (s + (x ^ 5) - 5) & 0x7fff_ffff;
        i = step::<SCALAR>(i + 1);
    }
    format!("{s}\n")
}

/// Alignment checks.
pub fn native_alignment(n: i64) -> String {
    alignment_impl::<false>(n)
}

/// [`native_alignment`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_alignment(n: i64) -> String {
    alignment_impl::<true>(n)
}

fn alignment_impl<const SCALAR: bool>(n: i64) -> String {
    let base: i64 = 4096;
    let (mut bad, mut s, mut i) = (0i64, 0i64, 0i64);
    while i < n {
        let p = base + ((i * 24) & !7);
        if p & 7 != 0 {
            bad += 1;
        }
        let q = p + 16;
        if q & 7 != 0 {
            bad += 1;
        }
        s = (s + (q >> 3)) & 0xff_ffff;
        i = step::<SCALAR>(i + 1);
    }
    format!("{s} {bad}\n")
}

/// The byte array hashed by `fnv_hash`.
pub fn fnv_data() -> Vec<i64> {
    (0..1024i64).map(|j| ((j * 2_654_435_761) >> 7) & 0xff).collect()
}

/// FNV-1a over 1024 bytes, `n` times.
pub fn native_fnv_hash(n: i64) -> String {
    fnv_hash_impl::<false>(n)
}

/// [`native_fnv_hash`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_fnv_hash(n: i64) -> String {
    fnv_hash_impl::<true>(n)
}

fn fnv_hash_impl<const SCALAR: bool>(n: i64) -> String {
    let a = fnv_data();
    let mut h: i64 = 2_166_136_261;
    for _ in 0..n {
        let mut j = 0;
        while j < a.len() {
            h = ((h ^ a[j]) * 16_777_619) & 0xffff_ffff;
            j = step::<SCALAR>(j as i64 + 1) as usize;
        }
    }
    format!("{h}\n")
}

/// Pairs built and dropped (the Rust version has no allocation at all).
pub fn native_pairs(n: i64) -> String {
    pairs_impl::<false>(n)
}

/// [`native_pairs`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_pairs(n: i64) -> String {
    pairs_impl::<true>(n)
}

fn pairs_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut s, mut i) = (0i64, 0i64);
    while i < n {
        let p = (i, i + 1);
        let q = (p.1, p.0 * 2);
        s = (s + q.0 - q.1 + 7) & 0xff_ffff;
        i = step::<SCALAR>(i + 1);
    }
    format!("{s}\n")
}

/// The xorshift branch loop.
pub fn native_branch(n: i64) -> String {
    branch_impl::<false>(n)
}

/// [`native_branch`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_branch(n: i64) -> String {
    branch_impl::<true>(n)
}

fn branch_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut x, mut rare, mut acc, mut i) = (2_463_534_242i64, 0i64, 0i64, 0i64);
    while i < n {
        x ^= (x << 13) & 0xffff_ffff;
        x ^= x >> 17;
        x ^= (x << 5) & 0xffff_ffff;
        if x & 7 == 0 {
            rare += 1;
        } else {
            acc = (acc + (x & 0xff)) & 0xff_ffff;
        }
        i = step::<SCALAR>(i + 1);
    }
    format!("{rare} {acc}\n")
}

/// The nested branch loop.
pub fn native_nested_branch(n: i64) -> String {
    nested_branch_impl::<false>(n)
}

/// [`native_nested_branch`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_nested_branch(n: i64) -> String {
    nested_branch_impl::<true>(n)
}

fn nested_branch_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut x, mut rare, mut rarer, mut acc, mut i) = (2_463_534_242i64, 0i64, 0i64, 0i64, 0i64);
    while i < n {
        x ^= (x << 13) & 0xffff_ffff;
        x ^= x >> 17;
        x ^= (x << 5) & 0xffff_ffff;
        if x & 3 == 0 {
            if x & 12 == 0 {
                rarer += 1;
            } else {
                rare += x & 15;
            }
        } else {
            acc = (acc + (x & 0xff)) & 0xff_ffff;
        }
        i = step::<SCALAR>(i + 1);
    }
    format!("{rare} {rarer} {acc}\n")
}

/// The loop whose hot path changes mid-run.
pub fn native_phase_change(n: i64) -> String {
    phase_change_impl::<false>(n)
}

/// [`native_phase_change`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_phase_change(n: i64) -> String {
    phase_change_impl::<true>(n)
}

fn phase_change_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut s, mut t, mut i, h) = (0i64, 0i64, 0i64, n / 2);
    while i < n {
        if i < h {
            s = (s + i * 3) & 0xff_ffff;
        } else {
            t = (t + (i ^ 5)) & 0xff_ffff;
        }
        i = step::<SCALAR>(i + 1);
    }
    format!("{s} {t}\n")
}

/// The float loop.
pub fn native_float(n: i64) -> String {
    float_impl::<false>(n)
}

/// [`native_float`] with an optimization barrier on the loop counter (scalar code).
pub fn scalar_float(n: i64) -> String {
    float_impl::<true>(n)
}

fn float_impl<const SCALAR: bool>(n: i64) -> String {
    let (mut s, mut i) = (0.0f64, 0i64);
    while i < n {
        s += (i as f64).sqrt() * 0.5;
        i = step::<SCALAR>(i + 1);
    }
    format!("{} {:?}\n", trace_ir::eval::float_to_int(s), s)
}

/// Every example, in the demo's order.
pub const EXAMPLES: &[Example] = &[
    Example {
        name: "sum",
        about: "sum of a range",
        source: include_str!("../programs/sum.tj"),
        demo_n: 600_000,
        test_n: 3_000,
        integer_kernel: true,
        native: native_sum,
        scalar: scalar_sum,
    },
    Example {
        name: "pypy_kernel",
        about: "(i << 3) & 0xff kernel",
        source: include_str!("../programs/pypy_kernel.tj"),
        demo_n: 500_000,
        test_n: 3_000,
        integer_kernel: true,
        native: native_pypy_kernel,
        scalar: scalar_pypy_kernel,
    },
    Example {
        name: "alignment",
        about: "alignment checks",
        source: include_str!("../programs/alignment.tj"),
        demo_n: 300_000,
        test_n: 3_000,
        integer_kernel: true,
        native: native_alignment,
        scalar: scalar_alignment,
    },
    Example {
        name: "fnv_hash",
        about: "FNV-1a over an array",
        source: include_str!("../programs/fnv_hash.tj"),
        demo_n: 500,
        test_n: 4,
        integer_kernel: true,
        native: native_fnv_hash,
        scalar: scalar_fnv_hash,
    },
    Example {
        name: "pairs",
        about: "boxed pairs built and dropped",
        source: include_str!("../programs/pairs.tj"),
        demo_n: 300_000,
        test_n: 3_000,
        integer_kernel: false,
        native: native_pairs,
        scalar: scalar_pairs,
    },
    Example {
        name: "branch",
        about: "data-dependent branch",
        source: include_str!("../programs/branch.tj"),
        demo_n: 300_000,
        test_n: 5_000,
        integer_kernel: false,
        native: native_branch,
        scalar: scalar_branch,
    },
    Example {
        name: "nested_branch",
        about: "a branch inside a branch (bridge out of a bridge)",
        source: include_str!("../programs/nested_branch.tj"),
        demo_n: 300_000,
        test_n: 5_000,
        integer_kernel: false,
        native: native_nested_branch,
        scalar: scalar_nested_branch,
    },
    Example {
        name: "phase_change",
        about: "the hot path changes mid-run",
        source: include_str!("../programs/phase_change.tj"),
        demo_n: 600_000,
        test_n: 5_000,
        integer_kernel: false,
        native: native_phase_change,
        scalar: scalar_phase_change,
    },
    Example {
        name: "float",
        about: "sqrt and float arithmetic",
        source: include_str!("../programs/float.tj"),
        demo_n: 400_000,
        test_n: 3_000,
        integer_kernel: false,
        native: native_float,
        scalar: scalar_float,
    },
];

/// The example called `name`.
pub fn example(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.name == name)
}
