//! What a loop remembers between its instances for the schedules that
//! learn from earlier ones: the iteration-time profile FSC, FAC, TAP and
//! BOLD read ([`Concept::IterationProfile`](crate::Concept::IterationProfile)),
//! and AWF's time-step-weighted history
//! ([`Concept::ThreadHistory`](crate::Concept::ThreadHistory)). One type for
//! every context — the thread runtime's loop records and the simulator's
//! stepper both keep a [`LoopMemory`] and feed it the same quantities — so
//! that a schedule learns the same way wherever it runs.
//!
//! The history follows AWF (Banicescu and Velusamy, "Load balancing highly
//! irregular computations with the adaptive factoring", and the AWF
//! variants of Auto4OMP's portfolio): after time step `s` (the loop's
//! `s`-th instance), thread `i` has done `W_i` iterations in `T_i` seconds
//! of its own *busy* time, from the moment it joined the instance to the
//! moment it found no more work — not the time since the fork, which would
//! charge a thread that woke late with time it did not spend working. The
//! history holds `Σ s·W_i` and `Σ s·T_i` for every thread, so that recent
//! steps weigh more; AWF's weight of thread `i` is its rate
//! `Σ s·W_i / Σ s·T_i` against the mean rate.

use serde::Serialize;

/// A loop's memory across its instances (see the [module](self)).
///
/// ```
/// use keel_policy::dls::LoopMemory;
/// let mut memory = LoopMemory::default();
/// // Step 1: thread 0 did 60 iterations in 2 s, thread 1 40 in 2 s.
/// memory.record(&[60, 40], &[2.0, 2.0], None);
/// // Step 2, weighted twice: 50 and 50 iterations in 1 s each.
/// memory.record(&[50, 50], &[1.0, 1.0], Some((0.02, 0.001)));
/// assert_eq!(memory.history_for(2), Some(&[160.0, 4.0, 140.0, 4.0][..]));
/// assert_eq!(memory.history_for(3), None, "kept for two threads");
/// assert_eq!(memory.profile(), Some((0.02, 0.001)));
/// assert_eq!(memory.steps(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoopMemory {
    /// Mean and standard deviation of the time per iteration, in seconds,
    /// from the latest instance that measured one (the schedules that read
    /// a profile); instances that did not leave it unchanged.
    profile: Option<(f64, f64)>,
    /// AWF's time-step-weighted history, two entries per thread:
    /// Σ s·W_i (iterations) and Σ s·T_i (busy seconds) over steps s = 1, 2, ….
    history: Vec<f64>,
    /// Instances recorded: the next one is step `steps + 1`.
    #[serde(skip)]
    steps: u64,
}

impl LoopMemory {
    /// Records one instance: each thread's iterations and busy seconds (in
    /// thread order) and, when the instance measured one, its profile. A
    /// team of another size starts the history afresh.
    pub fn record(&mut self, thread_iterations: &[u64], busy: &[f64], profile: Option<(f64, f64)>) {
        self.steps += 1;
        if let Some(profile) = profile {
            self.profile = Some(profile);
        }
        let threads = thread_iterations.len().min(busy.len());
        if self.history.len() != 2 * threads {
            self.history.clear();
            self.history.resize(2 * threads, 0.0);
        }
        let step = self.steps as f64;
        for (i, (&work, &time)) in thread_iterations.iter().zip(busy).enumerate() {
            self.history[2 * i] += step * work as f64;
            self.history[2 * i + 1] += step * time;
        }
    }

    /// The latest profile, `(mean, standard deviation)` seconds per
    /// iteration.
    pub fn profile(&self) -> Option<(f64, f64)> {
        self.profile
    }

    /// The history, when it was kept for a team of `threads`.
    pub fn history_for(&self, threads: usize) -> Option<&[f64]> {
        (self.history.len() == 2 * threads).then_some(&self.history[..])
    }

    /// The history as it stands (two entries per thread of the last team).
    pub fn history(&self) -> &[f64] {
        &self.history
    }

    /// Instances recorded.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}
