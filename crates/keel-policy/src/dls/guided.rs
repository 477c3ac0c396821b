//! Guided self-scheduling (Polychronopoulos & Kuck; OpenMP's `guided`).
//!
//! - `gss` = `guided`: the classic rule and libgomp's, `⌈R/P⌉`, at least `k`.
//! - `gss-llvm`: LLVM's `guided_iterative_chunked`: `⌊R/(2P)⌋` while
//!   `R ≥ 2P(k+1)`, then exactly `k` (dynamic); the whole loop is dynamic,k
//!   when `(2k+1)·P ≥ N`.

use super::{Claim, LoopShape, Request, Rule, ThreadLocal, TimingBoard};

/// Which guided rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuidedRule {
    /// ⌈R/P⌉ (classic, libgomp).
    Classic,
    /// ⌊R/2P⌋ with LLVM's switch to dynamic,k.
    Llvm,
}

/// A guided schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guided {
    rule: GuidedRule,
    p: u64,
    k: u64,
    /// LLVM: the loop is too short for guided; hand out k throughout.
    all_dynamic: bool,
}

impl Guided {
    /// Plans `shape` with `rule`; `k` defaults to 1.
    pub fn new(shape: &LoopShape, rule: GuidedRule) -> Self {
        let (p, k) = (shape.threads as u64, shape.min_chunk());
        let all_dynamic =
            rule == GuidedRule::Llvm && (2 * k as u128 + 1) * p as u128 >= shape.iterations as u128;
        Guided {
            rule,
            p,
            k,
            all_dynamic,
        }
    }
}

impl Rule for Guided {
    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        _request: Request,
        _local: &mut ThreadLocal,
        _board: &B,
    ) -> u64 {
        match self.rule {
            GuidedRule::Classic => remaining.div_ceil(self.p).max(self.k),
            GuidedRule::Llvm => {
                let threshold = 2 * self.p as u128 * (self.k as u128 + 1);
                if self.all_dynamic || (remaining as u128) < threshold {
                    self.k
                } else {
                    remaining / (2 * self.p)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    fn sizes(n: u64, p: usize, k: Option<u64>, rule: GuidedRule) -> Vec<u64> {
        let plan = Guided::new(&LoopShape::new(n, p, k).unwrap(), rule);
        let mut local = ThreadLocal::default();
        let board: Vec<ThreadTiming> = Vec::new();
        let (mut remaining, mut out, mut number) = (n, Vec::new(), 0);
        while remaining > 0 {
            let request = Request { thread: 0, number };
            let size = plan
                .next_size(remaining, request, &mut local, &board)
                .clamp(1, remaining);
            out.push(size);
            remaining -= size;
            number += 1;
        }
        out
    }

    #[test]
    fn classic_guided_takes_a_ceiling_share_of_what_remains() {
        assert_eq!(
            sizes(20, 2, None, GuidedRule::Classic),
            vec![10, 5, 3, 1, 1]
        );
        assert_eq!(
            sizes(20, 2, Some(4), GuidedRule::Classic),
            vec![10, 5, 4, 1]
        );
    }

    #[test]
    fn llvm_guided_halves_the_share_then_switches_to_k() {
        // R >= 2P(k+1) = 8 while guided: 40/4 = 10, 30/4 = 7, 23/4 = 5, 18/4 = 4,
        // 14/4 = 3, 11/4 = 2, 9/4 = 2, then 7 < 8: ones.
        let got = sizes(40, 2, None, GuidedRule::Llvm);
        assert_eq!(&got[..7], &[10, 7, 5, 4, 3, 2, 2]);
        assert!(got[7..].iter().all(|&s| s == 1));
        assert_eq!(got.iter().sum::<u64>(), 40);
        // (2k+1)P >= N: dynamic,k throughout.
        assert_eq!(sizes(10, 2, Some(2), GuidedRule::Llvm), vec![2, 2, 2, 2, 2]);
    }
}
