//! The cost model `auto` consults before it runs a candidate: what one
//! chunk and one measured instance cost in the context that runs the loop
//! ([`DispatchCost`], measured and published by each context), and what
//! the loop's own iterations cost ([`LoopModel`], learnt from its
//! instances). From the two come a lower bound on every candidate's chunk
//! (so that a claim never costs more than [`CHUNK_OVERHEAD_SHARE`] of the
//! chunk's work), the candidates whose unavoidable overhead alone exceeds
//! that share of the loop's time (not tried), and how often an exploited
//! instance needs measuring (so that the selector's own bookkeeping stays
//! under [`MEASURE_SHARE`] of the loop's time). The reasons are in
//! `docs/auto-keel.md#what-a-choice-costs`.
//!
//! A loop of 4,000,000 iterations of 1.25 ns each on 2 threads, in a
//! context whose claims cost 50 ns: no chunk below about 2,000 iterations.
//!
//! ```
//! use keel_policy::select::cost::{DispatchCost, LoopModel};
//! let cost = DispatchCost { per_chunk: 50e-9, ..DispatchCost::default() };
//! let mut model = LoopModel::default();
//! // A STATIC instance: both threads finished after 2.5 ms, balanced.
//! model.observe(0.0025, 0.0, 4_000_000, 2);
//! assert_eq!(model.min_chunk(&cost, 1, 4_000_000, 2), 2_003);
//! ```

use serde::{Deserialize, Serialize};

use crate::dls::AUTO4OMP_PORTFOLIO;

/// At most this share of a chunk's work may go to claiming it (2 %).
pub const CHUNK_OVERHEAD_SHARE: f64 = 0.02;
/// At most this share of a loop's time may go to `auto`'s bookkeeping of
/// measured instances while it exploits a choice (1 %).
pub const MEASURE_SHARE: f64 = 0.01;
/// An exploited choice is measured at least once in this many instances,
/// however short the loop: its change detectors still see every shift,
/// later.
pub const MAX_MEASURE_INTERVAL: u32 = 64;
/// Gain of the per-iteration time's upward tracking (a smaller sample
/// replaces the estimate at once: overheads only ever add time).
const WORK_TRACKING_GAIN: f64 = 0.1;

/// What dispatching costs in one context, in seconds, as the context
/// measured it (each context documents how: `docs/auto-keel.md`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchCost {
    /// One claim of a chunk by a thread of a team claiming at once (the
    /// shared counter's cache line moving between cores included).
    pub per_chunk: f64,
    /// One clock read: schedules that time their chunks (AF, mAF,
    /// AWF-B…E) pay two per chunk.
    pub per_clock_read: f64,
    /// What a measured instance costs beyond an unmeasured one of the same
    /// schedule: the participants' clock reads, the record, the selector's
    /// observation.
    pub per_measured_instance: f64,
}

impl Default for DispatchCost {
    /// A context that publishes nothing: a contended claim of 100 ns, a
    /// 25 ns clock, 3 µs of bookkeeping — on the pessimistic side of what
    /// Keel's contexts measure on current x86 cores, so that bounds err
    /// towards larger chunks and rarer measurements.
    fn default() -> Self {
        DispatchCost {
            per_chunk: 100e-9,
            per_clock_read: 25e-9,
            per_measured_instance: 3e-6,
        }
    }
}

impl DispatchCost {
    /// Whether every figure is finite and non-negative.
    pub fn is_valid(&self) -> bool {
        [
            self.per_chunk,
            self.per_clock_read,
            self.per_measured_instance,
        ]
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0)
    }

    /// What one chunk of portfolio schedule `index` costs its thread: a
    /// claim, and two clock reads for the schedules that time chunks.
    pub fn chunk_cost(&self, index: usize) -> f64 {
        let timed = matches!(
            AUTO4OMP_PORTFOLIO.get(index),
            Some(&("awf-b" | "awf-c" | "awf-d" | "awf-e" | "maf"))
        );
        self.per_chunk
            + if timed {
                2.0 * self.per_clock_read
            } else {
                0.0
            }
    }
}

/// The largest imbalance fraction a model keeps: a thread that did
/// everything while the others idled shows `LIB` near 100 %, whose
/// `g / (1 − g)` would be unbounded.
const MAX_IMBALANCE: f64 = 0.95;

/// What a loop's iterations cost, learnt from its measured instances (one
/// model per class of alike instances).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoopModel {
    /// Seconds of one iteration on one thread, overhead included: the
    /// instances' mean finish time × threads / iterations, tracked from
    /// below.
    work_per_iteration: Option<f64>,
    /// The imbalance fraction (`LIB/100`) of the last measured instance
    /// that ran STATIC (the warm-up included: its time is cold, its
    /// imbalance is the loop's).
    static_imbalance: Option<f64>,
}

impl LoopModel {
    /// Learns from one measured instance: `t_par` seconds, `lib` percent,
    /// `iterations` over `threads`. Instances with no iteration or no time
    /// teach nothing.
    pub fn observe(&mut self, t_par: f64, lib: f64, iterations: u64, threads: usize) {
        if iterations == 0 || threads == 0 || !(t_par.is_finite() && t_par > 0.0) {
            return;
        }
        let mean_finish = t_par * (1.0 - (lib / 100.0).clamp(0.0, 1.0));
        let sample = mean_finish * threads as f64 / iterations as f64;
        if !(sample.is_finite() && sample > 0.0) {
            return;
        }
        self.work_per_iteration = Some(match self.work_per_iteration {
            Some(w) if sample > w => w + WORK_TRACKING_GAIN * (sample - w),
            _ => sample,
        });
    }

    /// Seconds per iteration on one thread, once an instance was measured.
    pub fn work_per_iteration(&self) -> Option<f64> {
        self.work_per_iteration
    }

    /// Learns which schedule the measured instance of `lib` percent ran:
    /// STATIC's imbalance is kept for [`imbalance_cost`](Self::imbalance_cost).
    pub fn observe_schedule(&mut self, index: usize, lib: f64) {
        if index == 0 && lib.is_finite() {
            self.static_imbalance = Some((lib / 100.0).clamp(0.0, MAX_IMBALANCE));
        }
    }

    /// Seconds portfolio schedule `index` is expected to lose to
    /// imbalance on an instance of `iterations` over `threads`, beyond a
    /// perfectly balanced run: for STATIC, whose blocks are fixed, what
    /// its last measured instance showed (a fraction `g` of its time is
    /// the slowest thread's excess over the mean: `mean · g / (1 − g)`),
    /// counted only beyond [`TIE_MARGIN`](super::keel::TIE_MARGIN) of the
    /// mean, within which the selector takes times as tied and the
    /// cheaper schedule wins anyway. The dynamic schedules balance by
    /// construction: 0, as for STATIC before it was measured.
    ///
    /// Only on loops measured at every instance (their bookkeeping is at
    /// most [`MEASURE_SHARE`] of an instance): on shorter ones the team's
    /// arrival skew is much of any imbalance, and a balancing schedule's
    /// claims and preparation cost about what they would win back.
    ///
    /// ```
    /// use keel_policy::select::cost::{DispatchCost, LoopModel};
    /// let cost = DispatchCost::default();
    /// let mut model = LoopModel::default();
    /// model.observe(2e-3, 40.0, 1000, 2);
    /// model.observe_schedule(0, 40.0);
    /// // 1.2 ms of mean work per thread; 40 % imbalance: 0.8 ms lost,
    /// // less the 2 % tie margin of the mean.
    /// let lost = model.imbalance_cost(&cost, 0, 1000, 2);
    /// assert!((lost - (0.8e-3 - 0.024e-3)).abs() < 1e-9);
    /// assert_eq!(model.imbalance_cost(&cost, 1, 1000, 2), 0.0);
    /// // Ten iterations of the same loop: 12 µs, measured rarely.
    /// assert_eq!(model.imbalance_cost(&cost, 0, 10, 2), 0.0);
    /// ```
    pub fn imbalance_cost(
        &self,
        cost: &DispatchCost,
        index: usize,
        iterations: u64,
        threads: usize,
    ) -> f64 {
        let (Some(w), Some(g), 0) = (self.work_per_iteration, self.static_imbalance, index) else {
            return 0.0;
        };
        if self.measure_interval(cost, iterations, threads) > 1 {
            return 0.0;
        }
        let mean = w * iterations as f64 / threads.max(1) as f64;
        let excess = g / (1.0 - g) - super::keel::TIE_MARGIN;
        if excess > 0.0 && mean.is_finite() {
            mean * excess
        } else {
            0.0
        }
    }

    /// The smallest chunk of portfolio schedule `index` on an instance of
    /// `iterations` over `threads` whose claims cost at most
    /// [`CHUNK_OVERHEAD_SHARE`] of their work: a thread's claims of chunks
    /// that size and its last, empty, claim (see
    /// [`affordable`](Self::affordable)); where even one chunk per thread
    /// cannot pay for that, the chunk whose own claim costs that share of
    /// it. 1 before anything was measured.
    pub fn min_chunk(
        &self,
        cost: &DispatchCost,
        index: usize,
        iterations: u64,
        threads: usize,
    ) -> u64 {
        let Some(w) = self.work_per_iteration else {
            return 1;
        };
        let claim = cost.chunk_cost(index);
        // Chunks per thread c: (n/(p·c) + 1)·claim ≤ share·w·n/p, so
        // c ≥ claim / (share·w − claim·p/n).
        let empty_claim_share = claim * threads.max(1) as f64 / iterations.max(1) as f64;
        let room = CHUNK_OVERHEAD_SHARE * w - empty_claim_share;
        let per_chunk_room = if room > 0.0 {
            room
        } else {
            CHUNK_OVERHEAD_SHARE * w
        };
        // The tolerance keeps an exact quotient from rounding up a whole
        // iteration.
        let chunk = (claim / per_chunk_room - 1e-9).ceil();
        if chunk.is_finite() && chunk >= 1.0 {
            chunk.min(u64::MAX as f64) as u64
        } else {
            1
        }
    }

    /// Whether portfolio schedule `index` may run an instance of
    /// `iterations` over `threads` with chunk parameter `chunk`: its claims
    /// per thread must cost at most [`CHUNK_OVERHEAD_SHARE`] of a thread's
    /// work. A thread claims each of its chunks and once more to find
    /// nothing left; STATIC, whose blocks each thread computes alone, claims
    /// nothing, and always may. Anything may before the loop's work is
    /// known.
    ///
    /// ```
    /// use keel_policy::select::cost::{DispatchCost, LoopModel};
    /// let cost = DispatchCost { per_chunk: 50e-9, ..DispatchCost::default() };
    /// let mut model = LoopModel::default();
    /// // 64 iterations of 0.3 µs on 2 threads: 9.6 µs per thread, of which
    /// // 2 % (192 ns) pays for under 4 claims.
    /// model.observe(9.6e-6, 0.0, 64, 2);
    /// assert!(model.affordable(&cost, 0, 64, 2, 1));
    /// // One chunk each and the empty claim: 100 ns.
    /// assert!(model.affordable(&cost, 1, 64, 2, 32));
    /// // Chunks of 8: four each and the empty claim, 250 ns.
    /// assert!(!model.affordable(&cost, 1, 64, 2, 8));
    /// ```
    pub fn affordable(
        &self,
        cost: &DispatchCost,
        index: usize,
        iterations: u64,
        threads: usize,
        chunk: u64,
    ) -> bool {
        let Some(w) = self.work_per_iteration else {
            return true;
        };
        if index == 0 {
            return true;
        }
        let threads = threads.max(1) as f64;
        let per_thread_work = w * iterations as f64 / threads;
        let claims = predicted_chunks(index, iterations, threads, chunk.max(1)) / threads + 1.0;
        claims * cost.chunk_cost(index) <= CHUNK_OVERHEAD_SHARE * per_thread_work
    }

    /// How many exploited instances share one measurement: enough that a
    /// measured instance's bookkeeping stays under [`MEASURE_SHARE`] of the
    /// loop's time over them (1 for loops of milliseconds, up to
    /// [`MAX_MEASURE_INTERVAL`] for loops of microseconds).
    pub fn measure_interval(&self, cost: &DispatchCost, iterations: u64, threads: usize) -> u32 {
        let Some(w) = self.work_per_iteration else {
            return 1;
        };
        let instance = w * iterations as f64 / threads.max(1) as f64;
        let interval = (cost.per_measured_instance / (MEASURE_SHARE * instance)).ceil();
        if interval.is_finite() && interval >= 1.0 {
            interval.min(f64::from(MAX_MEASURE_INTERVAL)) as u32
        } else if interval.is_nan() {
            MAX_MEASURE_INTERVAL
        } else {
            1
        }
    }
}

/// The chunks portfolio schedule `index` hands out for `iterations` over
/// `threads` with chunk parameter (minimum chunk) `chunk`: exact for
/// STATIC and SS, the schedules' asymptotic counts for the others (guided
/// halves the remainder over `threads` per chunk, factoring per batch of
/// `threads` chunks, TSS decreases linearly from `N/2P`).
pub fn predicted_chunks(index: usize, iterations: u64, threads: f64, chunk: u64) -> f64 {
    let n = iterations as f64;
    let c = chunk.max(1) as f64;
    let p = threads.max(1.0);
    let halvings = (n / (p * c)).max(1.0).log2();
    match AUTO4OMP_PORTFOLIO.get(index).copied() {
        Some("static") => p,
        Some("ss") => (n / c).ceil(),
        Some("tss") => {
            let first = (n / (2.0 * p)).max(c);
            (2.0 * n / (first + c)).ceil()
        }
        Some("gac" | "gss-llvm") => p * (1.0 + std::f64::consts::LN_2 * halvings) + p,
        Some("static-steal") => 2.0 * p,
        // Factoring and its adaptive forms: a batch of P chunks per halving.
        _ => p * (1.0 + halvings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(per_chunk: f64) -> DispatchCost {
        DispatchCost {
            per_chunk,
            per_clock_read: 25e-9,
            per_measured_instance: 2e-6,
        }
    }

    #[test]
    fn nothing_is_bounded_before_the_loop_was_measured() {
        let model = LoopModel::default();
        assert_eq!(model.min_chunk(&cost(1e-6), 1, 10, 2), 1);
        assert!(model.affordable(&cost(1e-6), 1, 10, 2, 1));
        assert_eq!(model.measure_interval(&cost(1e-6), 10, 2), 1);
    }

    #[test]
    fn a_chunk_claim_costs_at_most_two_percent_of_the_chunks_work() {
        let mut model = LoopModel::default();
        // 1 µs per iteration and thread.
        model.observe(0.001, 0.0, 2000, 2);
        let c = cost(100e-9);
        // 100 ns / (0.02 · 1 µs − 100 ns · 2 / 2000) = 5.3 iterations.
        assert_eq!(model.min_chunk(&c, 1, 2000, 2), 6);
        // On a loop too short for even one chunk each, the chunk that
        // pays for its own claim: 100 ns / (0.02 · 1 µs) = 5.
        assert_eq!(model.min_chunk(&c, 1, 8, 2), 5);
        // A timed schedule pays two clock reads more: 150 ns → 8.
        let maf = AUTO4OMP_PORTFOLIO.iter().position(|n| *n == "maf").unwrap();
        assert_eq!(model.min_chunk(&c, maf, 200_000, 2), 8);
        // A slower instance moves the estimate a tenth of the way up (its
        // excess may be overhead); a faster one replaces it.
        model.observe(0.002, 0.0, 2000, 2);
        assert!((model.work_per_iteration().unwrap() - 1.1e-6).abs() < 1e-12);
        model.observe(0.0005, 0.0, 2000, 2);
        assert_eq!(model.work_per_iteration(), Some(0.5e-6));
    }

    #[test]
    fn the_issue_triad_bounds_ss_away_from_one_iteration_chunks() {
        let mut model = LoopModel::default();
        model.observe(0.0025, 1.0, 4_000_000, 2);
        let c = cost(50e-9);
        let chunk = model.min_chunk(&c, 1, 4_000_000, 2);
        assert!((1_900..=2_100).contains(&chunk), "{chunk}");
        // SS at chunk 1 would cost 4,000,000 claims: not affordable.
        assert!(!model.affordable(&c, 1, 4_000_000, 2, 1));
        assert!(model.affordable(&c, 1, 4_000_000, 2, chunk));
    }

    #[test]
    fn loops_of_microseconds_run_static_alone_and_are_measured_rarely() {
        let mut model = LoopModel::default();
        // 2 µs per instance on 2 threads, 16 iterations.
        model.observe(2e-6, 0.0, 16, 2);
        let c = cost(50e-9);
        for index in 1..AUTO4OMP_PORTFOLIO.len() {
            let chunk = model.min_chunk(&c, index, 16, 2);
            assert!(!model.affordable(&c, index, 16, 2, chunk), "{index}");
        }
        assert!(model.affordable(&c, 0, 16, 2, 1));
        assert_eq!(model.measure_interval(&c, 16, 2), MAX_MEASURE_INTERVAL);
        // A 10 ms loop is measured every time.
        model.observe(0.01, 0.0, 1, 1);
        assert_eq!(model.measure_interval(&c, 10_000, 1), 1);
    }

    #[test]
    fn predicted_chunk_counts_are_exact_where_the_schedule_is_fixed() {
        assert_eq!(predicted_chunks(0, 1000, 4.0, 1), 4.0);
        assert_eq!(predicted_chunks(1, 1000, 4.0, 7), 143.0);
        for index in 2..AUTO4OMP_PORTFOLIO.len() {
            let few = predicted_chunks(index, 1000, 4.0, 1);
            let many = predicted_chunks(index, 1_000_000, 4.0, 1);
            assert!(few >= 4.0 && many >= few, "{index}: {few} {many}");
            assert!(many < 1_000_000.0 / 10.0, "{index}: {many}");
        }
    }

    #[test]
    fn invalid_costs_are_recognised() {
        assert!(DispatchCost::default().is_valid());
        assert!(!cost(f64::NAN).is_valid());
        assert!(!cost(-1.0).is_valid());
    }
}
