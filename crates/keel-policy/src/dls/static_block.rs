//! `static` and `static,k` (libomp's `kmp_sched.cpp`; OpenMP's static
//! schedule). Without `k`: libomp's `static_balanced` — thread `t` gets one
//! block of `⌊N/P⌋` iterations, the first `N mod P` threads one more. With
//! `k`: blocks of exactly `k` dealt round-robin, block `r·P + t` to thread
//! `t` in round `r`.

use super::{Chunk, Claim, LoopShape, Rule};

/// The static schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticBlock {
    n: u64,
    p: u64,
    chunk: Option<u64>,
}

impl StaticBlock {
    /// Plans `shape`; `shape.chunk` is the exact round-robin block size.
    pub fn new(shape: &LoopShape) -> Self {
        StaticBlock {
            n: shape.iterations,
            p: shape.threads as u64,
            chunk: shape.chunk,
        }
    }
}

impl Rule for StaticBlock {
    fn claim(&self) -> Claim {
        Claim::Static
    }

    fn static_block(&self, thread: usize, round: u64) -> Option<Chunk> {
        let t = thread as u64;
        match self.chunk {
            None => {
                if round > 0 {
                    return None;
                }
                let (q, e) = (self.n / self.p, self.n % self.p);
                let start = t * q + t.min(e);
                let end = start + q + u64::from(t < e);
                (start < end).then_some(start..end)
            }
            Some(k) => {
                let index = round.checked_mul(self.p)?.checked_add(t)?;
                let start = index.checked_mul(k).filter(|&s| s < self.n)?;
                Some(start..start.saturating_add(k).min(self.n))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(n: u64, p: usize, k: Option<u64>) -> Vec<Vec<Chunk>> {
        let plan = StaticBlock::new(&LoopShape::new(n, p, k).unwrap());
        (0..p)
            .map(|t| (0..).map_while(|r| plan.static_block(t, r)).collect())
            .collect()
    }

    #[test]
    fn balanced_blocks_give_the_remainder_to_the_first_threads() {
        assert_eq!(
            blocks(10, 3, None),
            vec![vec![0..4], vec![4..7], vec![7..10]]
        );
        assert_eq!(blocks(2, 3, None), vec![vec![0..1], vec![1..2], vec![]]);
        assert_eq!(blocks(0, 2, None), vec![Vec::<Chunk>::new(), vec![]]);
    }

    #[test]
    fn chunked_blocks_are_dealt_round_robin() {
        assert_eq!(
            blocks(10, 2, Some(3)),
            vec![vec![0..3, 6..9], vec![3..6, 9..10]]
        );
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        let plan = StaticBlock::new(&LoopShape::new(u64::MAX, 2, Some(u64::MAX / 2)).unwrap());
        assert_eq!(plan.static_block(0, 0), Some(0..u64::MAX / 2));
        assert_eq!(plan.static_block(1, 0), Some(u64::MAX / 2..u64::MAX - 1));
        assert_eq!(plan.static_block(0, 1), Some(u64::MAX - 1..u64::MAX));
        assert_eq!(plan.static_block(1, 1), None);
    }
}
