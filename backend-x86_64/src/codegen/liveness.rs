//! Liveness: the last and next use of every value, computed in one forward and one backward
//! pass before code generation, and the queries the allocator and instruction selection ask.

use trace_ir::{FailArg, Opcode, Trace};

/// "No further use", in [`Liveness::next_use`] and [`Liveness::reads`].
pub(super) const NEVER: u32 = u32::MAX;

/// The liveness tables of a trace (reused from trace to trace: [`Liveness::compute`] clears
/// them). Values are op indices; index `n` (one past the last op) stands for every constant
/// and non-value operand.
#[derive(Default)]
pub(super) struct Liveness {
    /// The last use of each op's value, 0 if it has none (no op reads at position 0), so
    /// "`v` is live after position `p`" is `last_use[v] > p`.
    last_use: Vec<u32>,
    /// Per value, its first use at or after the current op (`NEVER`: none), kept current by
    /// [`Liveness::pass`] from `reads` (the spill choice reads it for the owner of each
    /// register).
    next_use: Vec<u32>,
    /// Everything op `p` reads is `reads[reads_start[p]..reads_start[p + 1]]`, in the order
    /// of [`reads`]: `(value, the value's next use after p)` (`NEVER`: `p` is its last).
    reads_start: Vec<u32>,
    /// See `reads_start`.
    reads: Vec<(u32, u32)>,
    /// Working memory of the backward pass.
    after: Vec<u32>,
}

impl Liveness {
    /// Fill the tables for `t`, and return the exit buffer size: the largest `finish`/`jump`
    /// or guard exit (a guard's exit words are the values it reads beyond its arguments:
    /// fail arguments, virtual fields).
    ///
    /// A forward pass lists everything each op reads, as `(value, op)`, and records each
    /// value's last use; a backward pass over that list replaces each op by the value's next
    /// use after it, leaving in `next_use` every value's first use. Written without
    /// data-dependent branches, since operands mix constants and op results (and fail
    /// arguments values and holes) at random: index `n` stands for every constant and
    /// non-value, and an op reading a value twice is handled by a select. The backward pass
    /// is one flat loop (no loop per op, whose exits would be mispredicted).
    pub(super) fn compute(&mut self, t: &Trace) -> usize {
        const PREFETCH_AHEAD: usize = 8;
        let n = t.ops.len();
        self.last_use.clear();
        self.last_use.resize(n + 1, 0);
        self.reads_start.clear();
        self.reads_start.reserve(n + 1);
        let mut nreads = 0;
        let mut exit_len = 0;
        for (i, op) in t.ops.iter().enumerate() {
            self.reads_start.push(nreads as u32);
            let i = i as u32;
            let words = op.guard.map_or(0, |g| {
                // The fail arguments of a guard a few guards ahead (guards are usually
                // numbered in trace order): a separate allocation each, often not in the
                // cache.
                if let Some(ahead) = t.guards.get(g.index() + PREFETCH_AHEAD) {
                    prefetch(ahead.fail_args.as_ptr());
                }
                t.guard(g).entry_count()
            });
            let need = nreads + op.args.len() + words;
            if need > self.reads.len() {
                self.reads.resize(need.max(2 * self.reads.len()).max(1024), (0, 0));
            }
            let (last_use, list) = (&mut self.last_use[..], &mut self.reads[..]);
            let mut nvalues = 0;
            op.for_each_read(&t.guards, |fa| {
                let (o, is_value) = match fa {
                    FailArg::Value(v) => (v.op_index_or(n), 1),
                    _ => (n, 0),
                };
                nvalues += is_value;
                last_use[o] = i;
                list[nreads] = (o as u32, i);
                nreads += 1;
            });
            if matches!(op.opcode, Opcode::Finish | Opcode::Jump) {
                exit_len = exit_len.max(op.args.len());
            }
            if op.guard.is_some() {
                exit_len = exit_len.max(nvalues - op.args.len());
            }
        }
        self.reads_start.push(nreads as u32);
        self.last_use[n] = 0;
        // Backward: `next[v]` is `v`'s earliest use seen so far, `after[v]` the one after
        // that (needed when an op reads `v` twice: its second read, seen first here, moved
        // `next[v]`).
        self.next_use.clear();
        self.next_use.resize(n + 1, NEVER);
        self.after.clear();
        self.after.resize(n + 1, NEVER);
        let (next, after) = (&mut self.next_use[..], &mut self.after[..]);
        for r in self.reads[..nreads].iter_mut().rev() {
            let (o, i) = (r.0 as usize, r.1);
            let c = next[o];
            let a = if c != i { c } else { after[o] };
            after[o] = a;
            next[o] = i;
            r.1 = a;
        }
        exit_len
    }

    /// The last use of `v`, 0 if none.
    #[inline]
    pub(super) fn last_use(&self, v: usize) -> usize {
        self.last_use[v] as usize
    }

    /// The first use of `v` at or after the current op ([`NEVER`]: none).
    #[inline]
    pub(super) fn next_use(&self, v: usize) -> u32 {
        self.next_use[v]
    }

    /// Whether the only use of the value of op `at` is the op right after it.
    pub(super) fn used_only_next(&self, at: usize) -> bool {
        // Uses come after the definition (a trace reading a value earlier fails in `loc`).
        self.last_use[at] as usize == at + 1
    }

    /// Whether `v` is used at or after position `from`.
    #[inline]
    pub(super) fn used_from(&self, v: usize, from: usize) -> bool {
        self.last_use[v] as usize >= from
    }

    /// Whether `v` is used after the op at `pos`.
    #[inline]
    pub(super) fn live_after(&self, v: usize, pos: usize) -> bool {
        self.used_from(v, pos + 1)
    }

    /// What the op at `pos` reads, `(value, its next use after pos)` in the order of
    /// [`reads`], with the next-use table for moving on past the op (each value read gets
    /// the next use listed), and whether nobody reads the op's own result. See
    /// [`super::regalloc::Allocator::end_op`].
    #[inline]
    pub(super) fn pass(&mut self, pos: usize) -> (&[(u32, u32)], &mut [u32], bool) {
        let reads = &self.reads[self.reads_start[pos] as usize..self.reads_start[pos + 1] as usize];
        (reads, &mut self.next_use[..], self.last_use[pos] == 0)
    }

    /// What op `p` reads: `(value, its next use after p)`, in the order of [`reads`].
    #[cfg(test)]
    pub(super) fn reads_at(&self, p: usize) -> &[(u32, u32)] {
        &self.reads[self.reads_start[p] as usize..self.reads_start[p + 1] as usize]
    }
}

/// Ask the processor to bring the cache line at `p` closer (a hint: no effect on results).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch never faults nor reads
        // memory visibly, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_interp::random::{random_trace, RandomConfig};

    /// The liveness tables (`last_use`, `next_use` as [`Liveness::pass`] moves it on,
    /// `reads`) agree with a direct scan of the trace, also when the tables are reused by
    /// traces of different sizes.
    #[test]
    fn liveness_tables_match_a_direct_scan() {
        let mut live = Liveness::default();
        for seed in 0..300u64 {
            let cfg = RandomConfig {
                length: [5, 60, 300][seed as usize % 3],
                ..RandomConfig::default()
            };
            let (t, _) = random_trace(&cfg, seed);
            live.compute(&t);
            let n = t.ops.len();
            // Direct scan: the positions reading each value, ascending, without repeats.
            let mut want: Vec<Vec<u32>> = vec![Vec::new(); n];
            for (i, op) in t.ops.iter().enumerate() {
                op.for_each_value_read(&t.guards, |v| {
                    if let Some(o) = v.as_op() {
                        if want[o.index()].last() != Some(&(i as u32)) {
                            want[o.index()].push(i as u32);
                        }
                    }
                });
            }
            for (v, w) in want.iter().enumerate() {
                assert_eq!(
                    live.last_use(v) as u32,
                    w.last().copied().unwrap_or(0),
                    "seed {seed}: op{v}"
                );
            }
            // Walking forward as code generation does: before each op, every value's next
            // use is its first use not before the op; the values whose reads say "never
            // again" are those whose last use is the op.
            for p in 0..n {
                for (v, w) in want.iter().enumerate() {
                    let first = w.iter().copied().find(|&u| u as usize >= p).unwrap_or(NEVER);
                    assert_eq!(live.next_use(v), first, "seed {seed}: next use of op{v} at {p}");
                }
                let mut dying: Vec<u32> = live
                    .reads_at(p)
                    .iter()
                    .filter(|&&(v, next)| (v as usize) < n && next == NEVER)
                    .map(|&(v, _)| v)
                    .collect();
                dying.sort_unstable();
                dying.dedup();
                let expect: Vec<u32> = (0..n as u32)
                    .filter(|&v| want[v as usize].last() == Some(&(p as u32)))
                    .collect();
                assert_eq!(dying, expect, "seed {seed}: values dying at op{p}");
                let (reads, next_use, _) = live.pass(p);
                for &(v, next) in reads {
                    next_use[v as usize] = next;
                }
            }
        }
    }
}
