//! `static-steal`: libomp's `static_steal` (`kmp_dispatch.cpp`;
//! Auto4OMP portfolio index 6).
//!
//! The loop is cut into `nch = ⌈N/k⌉` chunks of `k` (the chunk parameter is
//! the unit of stealing, default 1) and each thread gets a contiguous home
//! range of them: thread `t` owns chunks `[t·q + min(t, e), …)` with
//! `q = ⌊nch/P⌋` and `e = nch mod P` (the first `e` threads one more). A
//! thread takes `k` iterations at a time from the front of its own range;
//! when that is empty it scans victims from `(t + 1) mod P` and takes
//! [`StaticSteal::steal_amount`] iterations from the victim's back, which
//! become its new range.
//!
//! Stealing rule: modern libomp's (`llvm-project` `kmp_dispatch.cpp`): a
//! quarter of the victim's remaining chunks when more than
//! [`STEAL_QUARTER_ABOVE`] = 7 remain, else one chunk. LB4OMP's LLVM-8 base
//! took a quarter above 3 and one for 2–3; the modern threshold leaves small
//! ranges to their owners, whose front claims are cheaper than a steal.
//! Counts are in chunks of `k`; the amount is returned in iterations (the
//! victim's last chunk may be short, so `⌈remaining/k⌉` chunks remain).
//! With fewer chunks than threads the first `nch` threads get one chunk
//! each (libomp switches to `static_balanced` there; the partition differs,
//! the exactly-once contract does not).

use super::{Chunk, Claim, LoopShape, Rule};

/// Above this many remaining chunks a thief takes a quarter of them.
pub const STEAL_QUARTER_ABOVE: u64 = 7;

/// The fraction a thief takes from a well-stocked victim: `1/STEAL_DIVISOR`.
pub const STEAL_DIVISOR: u64 = 4;

/// Static stealing for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticSteal {
    n: u64,
    p: u64,
    k: u64,
    /// `⌊nch/P⌋`, `nch mod P`.
    q: u64,
    e: u64,
}

impl StaticSteal {
    /// Plans `shape`; `k` (default 1) is the unit of stealing.
    pub fn new(shape: &LoopShape) -> Self {
        let (n, p, k) = (shape.iterations, shape.threads as u64, shape.min_chunk());
        let chunks = n.div_ceil(k);
        StaticSteal {
            n,
            p,
            k,
            q: chunks / p,
            e: chunks % p,
        }
    }

    /// First chunk index of thread `t`'s home range (`t <= P`).
    fn first_chunk(&self, t: u64) -> u128 {
        t as u128 * self.q as u128 + t.min(self.e) as u128
    }

    /// Iterations a thief takes from a victim with `victim_remaining` left.
    pub fn steal_amount(&self, victim_remaining: u64) -> u64 {
        let chunks = victim_remaining.div_ceil(self.k);
        let take = if chunks > STEAL_QUARTER_ABOVE {
            chunks / STEAL_DIVISOR
        } else {
            1
        };
        take.saturating_mul(self.k).min(victim_remaining)
    }
}

impl Rule for StaticSteal {
    fn claim(&self) -> Claim {
        Claim::Steal
    }

    fn home_range(&self, thread: usize) -> Chunk {
        let t = thread as u64;
        if t >= self.p {
            return self.n..self.n; // not a thread of this loop: owns nothing
        }
        let to_iteration = |chunk: u128| (chunk * self.k as u128).min(self.n as u128) as u64;
        to_iteration(self.first_chunk(t))..to_iteration(self.first_chunk(t + 1))
    }

    fn chunk_unit(&self) -> u64 {
        self.k
    }

    fn steal_amount(&self, victim_remaining: u64) -> u64 {
        StaticSteal::steal_amount(self, victim_remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(n: u64, p: usize, k: Option<u64>) -> Vec<Chunk> {
        let plan = StaticSteal::new(&LoopShape::new(n, p, k).unwrap());
        (0..p).map(|t| plan.home_range(t)).collect()
    }

    #[test]
    fn home_ranges_split_the_chunks_like_static_balanced() {
        // N = 10, k = 1, P = 3: 10 chunks, q = 3, e = 1: 4, 3, 3.
        assert_eq!(ranges(10, 3, None), vec![0..4, 4..7, 7..10]);
        // N = 10, k = 3: 4 chunks (last one short), q = 1, e = 1: 2, 1, 1.
        assert_eq!(ranges(10, 3, Some(3)), vec![0..6, 6..9, 9..10]);
        // Fewer chunks than threads.
        assert_eq!(ranges(2, 4, None), vec![0..1, 1..2, 2..2, 2..2]);
        assert_eq!(ranges(0, 2, Some(5)), vec![0..0, 0..0]);
    }

    #[test]
    fn thieves_take_a_quarter_of_a_rich_victim_else_one_chunk() {
        let plan = StaticSteal::new(&LoopShape::new(1000, 4, Some(5)).unwrap());
        assert_eq!(plan.steal_amount(100), 25); // 20 chunks > 7: 5 chunks
        assert_eq!(plan.steal_amount(40), 10); // 8 chunks: 2 chunks
        assert_eq!(plan.steal_amount(35), 5); // 7 chunks: one
        assert_eq!(plan.steal_amount(3), 3); // a short last chunk
        assert_eq!(plan.steal_amount(0), 0);
        assert_eq!(plan.chunk_unit(), 5);
    }

    #[test]
    fn huge_loops_do_not_overflow() {
        let n = u64::MAX;
        let r = ranges(n, 3, Some(n / 2));
        assert_eq!(r, vec![0..n / 2, n / 2..n - 1, n - 1..n]);
        let plan = StaticSteal::new(&LoopShape::new(n, 3, Some(u64::MAX)).unwrap());
        assert_eq!(plan.steal_amount(n), n);
    }
}
