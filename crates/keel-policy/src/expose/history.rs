//! One worker's stolen-to-local history (paper §4.3.2): a ring of the last
//! `history` ratios and their running sum, so a decision is O(1).

use super::{chunks_for_helpers, Expose, Scheme};

/// A worker's exposure state. Each worker keeps its own, as each Charm++
/// PE does; the runtime calls [`ExposeState::decide`] when a potential task
/// starts and [`ExposeState::record`] when it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct ExposeState {
    ring: Vec<f64>,
    next: usize,
    sum: f64,
}

impl ExposeState {
    /// A history full of the policy's initial ratio.
    pub fn new(policy: &Expose) -> Self {
        let len = policy.history.max(1);
        ExposeState {
            ring: vec![policy.initial; len],
            next: 0,
            sum: policy.initial * len as f64,
        }
    }

    /// The moving average of the recorded ratios, in helpers.
    pub fn average(&self) -> f64 {
        (self.sum / self.ring.len() as f64).max(0.0)
    }

    /// The helpers the policy expects: the larger of `idle` and the moving
    /// average (per scheme), at most `workers − 1` (nobody else exists).
    pub fn helpers(&self, policy: &Expose, idle: usize, workers: usize) -> f64 {
        let others = workers.saturating_sub(1) as f64;
        let h = match policy.scheme {
            Scheme::None => 0.0,
            Scheme::All => return others.max(0.0),
            Scheme::Idle => idle as f64,
            Scheme::History => self.average(),
            Scheme::HistoryIdle => (idle as f64).max(self.average()),
        };
        h.min(others)
    }

    /// How many of `chunks` to expose now, with `idle` workers idle out of
    /// `workers`. [`Scheme::All`] exposes every chunk; [`Scheme::None`] none.
    pub fn decide(&self, policy: &Expose, chunks: usize, idle: usize, workers: usize) -> usize {
        match policy.scheme {
            Scheme::All if workers > 1 => chunks,
            _ => chunks_for_helpers(chunks, self.helpers(policy, idle, workers)),
        }
    }

    /// How many more of the `hidden` chunks the owner still holds to
    /// expose now, part-way through a task, with `idle` workers idle out of
    /// `workers`: the idle workers' share `⌈hidden·i/(1+i)⌉`, or 0 when the
    /// policy has no idle term, `late` is off, or nobody is idle.
    ///
    /// The decision at the start of a task sees the idle count of that
    /// moment only; a worker that runs dry just after would find nothing
    /// to take while the owner works through a long private part — on two
    /// workers that wait is the whole tail of a step. The context asks
    /// between the owner's chunks, and only once thieves have emptied its
    /// deque (anything still there is theirs to take first).
    pub fn late(&self, policy: &Expose, hidden: usize, idle: usize, workers: usize) -> usize {
        if !(policy.late && policy.scheme.has_idle_term()) {
            return 0;
        }
        let others = workers.saturating_sub(1);
        chunks_for_helpers(hidden, idle.min(others) as f64)
    }

    /// Records a finished potential task: `stolen` chunks ran on thieves,
    /// `local` on the owner. The ratio is `stolen / local` (all stolen
    /// counts as `stolen / 1`).
    pub fn record(&mut self, stolen: usize, local: usize) {
        let ratio = stolen as f64 / local.max(1) as f64;
        self.sum += ratio - self.ring[self.next];
        self.ring[self.next] = ratio;
        self.next = (self.next + 1) % self.ring.len();
        // Re-sum once per lap so floating-point drift cannot accumulate.
        if self.next == 0 {
            self.sum = self.ring.iter().sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: &str) -> Expose {
        Expose::parse(spec).unwrap()
    }

    #[test]
    fn starts_from_the_initial_ratio() {
        let p = policy("history-idle");
        let s = ExposeState::new(&p);
        assert_eq!(s.average(), 1.0);
        assert_eq!(s.decide(&p, 16, 0, 4), 8);
        // Three idle workers outweigh the history.
        assert_eq!(s.decide(&p, 16, 3, 4), 12);
    }

    #[test]
    fn the_history_is_a_moving_average_over_its_window() {
        let p = policy("history:history=4,initial=0");
        let mut s = ExposeState::new(&p);
        assert_eq!(s.decide(&p, 8, 5, 4), 0, "history alone ignores idle");
        s.record(4, 4); // ratio 1
        assert_eq!(s.average(), 0.25);
        s.record(6, 2); // ratio 3
        assert_eq!(s.average(), 1.0);
        assert_eq!(s.decide(&p, 8, 0, 4), 4);
        for _ in 0..4 {
            s.record(0, 8);
        }
        assert_eq!(s.average(), 0.0, "old ratios leave the window");
        s.record(8, 0); // all stolen: 8 / 1
        assert_eq!(s.average(), 2.0);
        assert_eq!(s.helpers(&p, 0, 2), 1.0, "capped at the other workers");
    }

    #[test]
    fn history_idle_takes_the_larger_term() {
        let p = policy("history-idle:history=2,initial=0");
        let mut s = ExposeState::new(&p);
        assert_eq!(s.decide(&p, 10, 0, 8), 0);
        assert_eq!(s.decide(&p, 10, 1, 8), 5);
        s.record(6, 2);
        s.record(6, 2);
        assert_eq!(s.helpers(&p, 1, 8), 3.0);
        assert_eq!(s.decide(&p, 10, 1, 8), 8);
        assert_eq!(s.helpers(&p, 5, 8), 5.0);
    }

    #[test]
    fn idle_none_and_all() {
        let idle = policy("idle");
        let s = ExposeState::new(&idle);
        assert_eq!(s.decide(&idle, 8, 0, 2), 0);
        assert_eq!(s.decide(&idle, 8, 1, 2), 4);
        let none = policy("none");
        assert_eq!(ExposeState::new(&none).decide(&none, 8, 7, 8), 0);
        let all = policy("all");
        assert_eq!(ExposeState::new(&all).decide(&all, 8, 0, 2), 8);
        assert_eq!(
            ExposeState::new(&all).decide(&all, 8, 0, 1),
            0,
            "alone: nobody to steal"
        );
    }

    #[test]
    fn late_exposure_gives_idle_workers_their_share_of_what_is_left() {
        let p = policy("history-idle:history=2,initial=0");
        let s = ExposeState::new(&p);
        assert_eq!(s.late(&p, 6, 0, 2), 0, "nobody idle");
        assert_eq!(s.late(&p, 6, 1, 2), 3);
        assert_eq!(s.late(&p, 1, 1, 2), 1, "a last chunk goes to the idle one");
        assert_eq!(s.late(&p, 0, 1, 2), 0);
        assert_eq!(s.late(&p, 8, 3, 4), 6);
        assert_eq!(s.late(&p, 8, 9, 4), 6, "at most the other workers help");
        let off = policy("history-idle:late=off");
        assert_eq!(ExposeState::new(&off).late(&off, 6, 1, 2), 0);
        let hist = policy("history");
        assert_eq!(ExposeState::new(&hist).late(&hist, 6, 1, 2), 0);
        let idle = policy("idle");
        assert_eq!(ExposeState::new(&idle).late(&idle, 4, 1, 2), 2);
    }

    #[test]
    fn long_runs_do_not_drift() {
        let p = policy("history:history=3,initial=0");
        let mut s = ExposeState::new(&p);
        for i in 0..10_000 {
            s.record(i % 7, 3);
        }
        let exact: f64 = s.ring.iter().sum::<f64>() / 3.0;
        assert!((s.average() - exact).abs() < 1e-12);
    }
}
