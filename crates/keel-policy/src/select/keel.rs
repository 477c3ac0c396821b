//! `auto,keel`: Keel's own selection method, what `auto` alone means.
//!
//! Successive elimination over the portfolio on relative (per-iteration)
//! times, with an imbalance bound and the cheapest schedule on ties; then
//! exploitation of the winner under Holt smoothing and CUSUM detectors
//! (on its time, on its imbalance, and on its mean imbalance over a
//! window) that re-open the search only on a sustained change. Why each
//! choice is made, against Auto4OMP's methods, is in `docs/auto-keel.md`
//! (the constants below are the ones it names).
//!
//! Everything lives in fixed arrays: no allocation after construction.
//!
//! A loop on which schedule 5 is clearly the fastest: once it is found,
//! it runs while the exploration budget pays for the rest of round 1 (the
//! other schedules take twice its time, so each sample of them waits for
//! about 50 instances of it), and exploration ends with it.
//!
//! ```
//! use keel_policy::select::{KeelSel, Measurement, Phase, Select};
//! let mut sel = KeelSel::new();
//! assert_eq!(sel.winner(), None);
//! let (mut phase, mut fives) = (Phase::Explore, 0);
//! for _ in 0..1000 {
//!     let (index, p) = sel.next();
//!     phase = p;
//!     if phase == Phase::Exploit {
//!         break;
//!     }
//!     fives += usize::from(index == 5);
//!     let t_par = if index == 5 { 0.010 } else { 0.020 };
//!     sel.observe(&Measurement::new(t_par, 5.0));
//! }
//! assert_eq!(phase, Phase::Exploit);
//! assert_eq!(sel.winner(), Some(5));
//! assert!(fives > 200, "the best so far ran while the budget refilled");
//! // Exploring cost at most the budget, and one sample more.
//! let budget = sel.budget();
//! assert!(budget.spent() <= 0.02 * budget.total() + 0.010);
//! ```

mod budget;
mod exploit;
mod noise;
mod search;
mod settled;

pub use budget::{Budget, EXPLORATION_BUDGET};
use noise::{difference_noise, noise_of_differences, robust_sigma};
pub use settled::SettledBy;

use super::{median_in_place, Measurement, Phase, Select, PORTFOLIO_LEN};

/// Samples per schedule an exploration takes at most (rounds of successive
/// elimination). Later rounds only re-measure schedules still within the
/// noise of the best, so they are cheap: their times are close to the best.
pub const ROUNDS: usize = 8;
/// After round 1, a schedule slower than this ratio × the fastest is
/// dropped: clearly dominated even under noise and a moderate drift.
pub const DOMINATED_RATIO: f64 = 1.20;
/// Relative difference below which two schedules tie (the cheaper one
/// wins), the smallest elimination margin, and round 1's early-stop margin
/// against the imbalance bound.
pub const TIE_MARGIN: f64 = 0.02;
/// Rounds 2 on drop a schedule whose median exceeds the best median by more
/// than this many standard errors of the difference of two medians of `n`
/// samples (`1.25·σ·√(2/n)`, σ the measured relative noise).
pub const ELIMINATION_NOISE_K: f64 = 2.0;
/// Exploitation instances that only learn level, trend and noise before
/// change detection starts.
pub const WARMUP: u32 = 8;
/// Holt's level gain `α` on log times.
pub const LEVEL_GAIN: f64 = 0.1;
/// Holt's trend gain `β` (the trend moves by `α·β·residual`).
pub const TREND_GAIN: f64 = 0.2;
/// Residuals kept for the robust noise scale.
pub const NOISE_WINDOW: usize = 64;
/// Smallest relative noise assumed (1 %): timers and caches never do better.
pub const NOISE_FLOOR: f64 = 0.01;
/// CUSUM allowance in noise standard deviations.
pub const DRIFT_SIGMAS: f64 = 1.0;
/// The smallest relative shift of the chosen schedule's time worth a
/// re-exploration (5 %): the allowance is at least half of it.
pub const MIN_SHIFT: f64 = 0.05;
/// CUSUM threshold in noise standard deviations.
pub const ALARM_SIGMAS: f64 = 8.0;
/// One instance adds at most `threshold / CONFIRM_INSTANCES` to a CUSUM sum:
/// an alarm needs at least this many instances past the shift.
pub const CONFIRM_INSTANCES: f64 = 3.0;
/// Exploited instances over which the mean imbalance is watched.
pub const IMBALANCE_WINDOW: usize = 16;

/// Consistency constant of the median absolute deviation for a normal law.
const MAD_TO_SIGMA: f64 = 1.4826;
/// Mean range of `n` normal samples in standard deviations (`d2`), n = 0..=8.
const RANGE_TO_SIGMA: [f64; ROUNDS + 1] =
    [1.0, 1.0, 1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847];
/// Relative standard deviation of the MAD scale estimate from `m` normal
/// samples, times `√m`.
const MAD_RELATIVE_SD: f64 = 1.17;
/// Standard deviation of the median of `n` normal samples, times `√n`, in σ
/// (`√(π/2)` for large `n`).
const MEDIAN_EFFICIENCY: f64 = 1.25;

const ALL: u16 = (1 << PORTFOLIO_LEN) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Explore,
    Exploit,
}

/// `auto,keel`'s state for one loop.
#[derive(Clone, Debug)]
pub struct KeelSel {
    mode: Mode,
    /// The schedule of the last decision.
    current: usize,
    /// Explorations started (1 = only the first).
    explorations: u32,
    // --- exploration ---
    /// Schedules still in the race.
    active: u16,
    /// Active schedules not yet sampled in this round.
    remaining: u16,
    round: usize,
    /// Per-iteration times, `counts[i]` of them per schedule.
    samples: [[f64; ROUNDS]; PORTFOLIO_LEN],
    /// The imbalance fractions (`LIB/100`) of those samples.
    sample_imbalance: [[f64; ROUNDS]; PORTFOLIO_LEN],
    counts: [u8; PORTFOLIO_LEN],
    /// The exploration instance each sample was taken at (every instance
    /// of an exploration is one sample, so the samples so far count them).
    sampled_at: [[u16; ROUNDS]; PORTFOLIO_LEN],
    /// Smallest per-iteration mean finish time seen in this exploration.
    bound: f64,
    // --- exploitation ---
    winner: usize,
    exploited: u32,
    level: f64,
    trend: f64,
    residuals: [f64; NOISE_WINDOW],
    filled: usize,
    next_slot: usize,
    up: f64,
    down: f64,
    /// The winner of the last exploration, measured first by the next one.
    incumbent: Option<usize>,
    /// Imbalance fractions (`LIB/100`) of the warm-up instances.
    warmup_imbalance: [f64; WARMUP as usize],
    imbalance_seen: usize,
    /// The imbalance the exploration accepted (the winner's median sample
    /// imbalance), and the robust noise scale learnt in the warm-up.
    imbalance_base: f64,
    imbalance_noise: f64,
    imbalance_up: f64,
    /// Whether the winner ended round 1 through the imbalance bound.
    within_bound: bool,
    /// Why the last search ended.
    settled_by: SettledBy,
    /// In a search opened by the window rule: the incumbent and the
    /// imbalance fraction each of its samples is charged at least.
    charged: Option<(usize, f64)>,
    /// Imbalance fractions of the last [`IMBALANCE_WINDOW`] exploited
    /// instances (a ring).
    recent_imbalance: [f64; IMBALANCE_WINDOW],
    recent_filled: usize,
    recent_next: usize,
    // --- what a choice costs ---
    /// Candidates the cost model lets run (bit `i`: portfolio index `i`;
    /// STATIC always runs).
    allowed: u16,
    /// The explorations' spending against the loop's time.
    budget: Budget,
    /// Whether the last decision held the best schedule so far instead of
    /// exploring (the budget was spent), or warmed the loop up: its
    /// instance is not a sample.
    holding: bool,
    /// Whether the next decision is the warm-up: a loop's (a class's) first
    /// instance runs STATIC (or the neighbouring class's winner) and is
    /// not compared with anything, since a first instance pays what later
    /// ones do not (cold caches, a core waking from sleep: 3-6 ms at a
    /// process's start on the development machine).
    warming: bool,
    /// Whether the held instance was the warm-up (whose time says nothing).
    held_warmup: bool,
    /// Each schedule's rank by expected cost ([`KeelSel::rank_by_cost`]):
    /// round 1's order and the tie-breaker.
    order: [u8; PORTFOLIO_LEN],
    /// Per schedule, the sum of per-iteration times and the count of the
    /// instances it ran while held as the best so far: a schedule that
    /// became the best on one lucky sample is measured on and loses its
    /// place when it is not.
    held: [(f64, u32); PORTFOLIO_LEN],
}

impl Default for KeelSel {
    fn default() -> Self {
        KeelSel {
            mode: Mode::Explore,
            current: 0,
            explorations: 1,
            active: ALL,
            remaining: ALL,
            round: 0,
            samples: [[0.0; ROUNDS]; PORTFOLIO_LEN],
            sample_imbalance: [[0.0; ROUNDS]; PORTFOLIO_LEN],
            counts: [0; PORTFOLIO_LEN],
            sampled_at: [[0; ROUNDS]; PORTFOLIO_LEN],
            bound: f64::INFINITY,
            winner: 0,
            exploited: 0,
            level: 0.0,
            trend: 0.0,
            residuals: [0.0; NOISE_WINDOW],
            filled: 0,
            next_slot: 0,
            up: 0.0,
            down: 0.0,
            incumbent: None,
            warmup_imbalance: [0.0; WARMUP as usize],
            imbalance_seen: 0,
            imbalance_base: 0.0,
            imbalance_noise: NOISE_FLOOR,
            imbalance_up: 0.0,
            within_bound: false,
            settled_by: SettledBy::default(),
            charged: None,
            recent_imbalance: [0.0; IMBALANCE_WINDOW],
            recent_filled: 0,
            recent_next: 0,
            allowed: ALL,
            budget: Budget::default(),
            holding: false,
            warming: true,
            held_warmup: false,
            held: [(0.0, 0); PORTFOLIO_LEN],
            order: std::array::from_fn(|i| i as u8),
        }
    }
}

impl KeelSel {
    /// A fresh state: exploring, every schedule eligible.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh state whose explorations may spend `share` of the loop's
    /// time beyond the best schedule known (`f64::INFINITY`: the search
    /// runs as if it cost nothing, every round at once).
    pub fn with_exploration_budget(share: f64) -> Self {
        KeelSel {
            budget: Budget::with_share(share),
            ..Self::default()
        }
    }

    /// The same state without the warm-up instance: the search samples
    /// from the first instance on (for studies and tests of the search
    /// itself).
    pub fn without_warmup(self) -> Self {
        KeelSel {
            warming: false,
            ..self
        }
    }

    /// A fresh state whose search measures schedule `first` first: a new
    /// class of a loop's instances starts from what a neighbouring class
    /// settled on, and ends at once if that one is within the imbalance
    /// bound.
    pub fn measuring_first(first: usize) -> Self {
        KeelSel {
            incumbent: Some(first.min(PORTFOLIO_LEN - 1)),
            ..Self::default()
        }
    }

    /// The schedule the last exploration selected, once one has ended.
    pub fn winner(&self) -> Option<usize> {
        (self.mode == Mode::Exploit).then_some(self.winner)
    }

    /// Explorations started so far (the first one included).
    pub fn explorations(&self) -> u32 {
        self.explorations
    }

    /// Lets only the schedules in `allowed` (bit `i`: portfolio index `i`)
    /// run from the next decision on: the cost model's verdict on what the
    /// loop can afford. STATIC always may. A schedule taken out of a
    /// search does not come back into it; the winner of a finished search
    /// keeps running (it was measured).
    pub fn restrict(&mut self, allowed: u16) {
        self.allowed = (allowed & ALL) | 1;
    }

    /// The exploration budget's account.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Counts instances that ran the exploited schedule unmeasured (their
    /// time estimated by the selector) into the loop's total, which the
    /// exploration budget is a share of; a negative time takes back what
    /// was counted for instances that did not run after all.
    pub fn account_unmeasured(&mut self, seconds: f64) {
        if seconds < 0.0 {
            self.budget.remove_instances(-seconds);
        } else {
            self.budget.add_instance(seconds);
        }
    }

    /// The time per iteration (per instance when no iteration counts were
    /// given) the loop takes under the schedule it settled on: the
    /// exploited schedule's smoothed level, its median sample before any
    /// exploited instance, or during a search the best median so far.
    pub fn reference_rate(&self) -> Option<f64> {
        match self.mode {
            Mode::Exploit if self.exploited > 0 => Some(self.level.exp()),
            Mode::Exploit => self.median_sample(self.winner),
            Mode::Explore => self.provisional().map(|j| self.estimate(j)),
        }
    }

    /// Why the last search ended, once one has.
    pub fn settled_by(&self) -> Option<SettledBy> {
        (self.mode == Mode::Exploit).then_some(self.settled_by)
    }

    /// The robust relative noise scale of the exploited schedule's time:
    /// 1.4826 × the median absolute residual of the window, raised by one
    /// standard error of that estimate (`× (1 + 1.17/√m)` for `m`
    /// residuals, so a short window cannot under-estimate the noise and
    /// make the detector trigger-happy), at least [`NOISE_FLOOR`].
    pub fn noise(&self) -> f64 {
        let mut window = self.residuals;
        let window = &mut window[..self.filled];
        for r in window.iter_mut() {
            *r = r.abs();
        }
        if window.is_empty() {
            return NOISE_FLOOR;
        }
        robust_sigma(window).max(NOISE_FLOOR)
    }

    /// Re-opens the search; the incumbent is measured first. With
    /// `charge` (an imbalance fraction), each of the incumbent's samples in
    /// this search counts as if at least that imbalanced.
    fn start_exploration(&mut self, charge: Option<f64>) {
        let explorations = self.explorations + 1;
        let incumbent = self.winner;
        *self = KeelSel {
            explorations,
            incumbent: Some(incumbent),
            charged: charge.map(|g| (incumbent, g)),
            allowed: self.allowed,
            budget: self.budget,
            order: self.order,
            warming: false,
            ..KeelSel::default()
        };
    }

    /// Rounds every schedule in `set` has been sampled in.
    fn rounds_of(&self, set: u16) -> usize {
        Self::members(set)
            .map(|j| usize::from(self.counts[j]))
            .min()
            .unwrap_or(0)
    }

    /// The loop's drift per instance in log time while `set` was sampled.
    /// A schedule's log-time difference between two consecutive rounds is
    /// the rounds' common offset plus the drift times the instances between
    /// its two samples, free of the schedule's own level; and since the
    /// rounds alternate direction, those gaps range from 1 to twice the
    /// round's length. The least-squares slope of differences on gaps,
    /// per pair of rounds, and the median over the pairs.
    fn drift_per_instance(&self, set: u16) -> f64 {
        let rounds = self.rounds_of(set);
        let mut slopes = [0.0; ROUNDS];
        let mut count = 0;
        for q in 1..rounds {
            let mut points = [(0.0, 0.0); PORTFOLIO_LEN];
            let mut len = 0;
            for j in Self::members(set) {
                let gap = f64::from(self.sampled_at[j][q]) - f64::from(self.sampled_at[j][q - 1]);
                let change = (self.samples[j][q] / self.samples[j][q - 1]).ln();
                points[len] = (gap, change);
                len += 1;
            }
            let points = &points[..len];
            let n = len as f64;
            let mean_gap = points.iter().map(|p| p.0).sum::<f64>() / n;
            let mean_change = points.iter().map(|p| p.1).sum::<f64>() / n;
            let spread: f64 = points.iter().map(|p| (p.0 - mean_gap).powi(2)).sum();
            if spread > 0.0 && len >= 3 {
                let covariance: f64 = points
                    .iter()
                    .map(|p| (p.0 - mean_gap) * (p.1 - mean_change))
                    .sum();
                slopes[count] = covariance / spread;
                count += 1;
            }
        }
        if count == 0 || !slopes[..count].iter().all(|b| b.is_finite()) {
            return 0.0;
        }
        median_in_place(&mut slopes[..count])
    }

    /// The samples of the schedules in `set`, the loop's drift removed
    /// ([`KeelSel::drift_per_instance`]) and each divided by the median of
    /// its round over `set` (every schedule in `set` has one sample per
    /// round), and the number of rounds. A round is a block: whatever
    /// moved the loop's time between rounds moved every schedule in it
    /// alike, and drops out; the drift removes what moved it within one.
    fn blocked(&self, set: u16) -> ([[f64; ROUNDS]; PORTFOLIO_LEN], usize) {
        let rounds = self.rounds_of(set);
        let drift = self.drift_per_instance(set);
        let mut relative = [[0.0; ROUNDS]; PORTFOLIO_LEN];
        for j in Self::members(set) {
            for (q, value) in relative[j].iter_mut().enumerate().take(rounds) {
                let at = f64::from(self.sampled_at[j][q]);
                *value = self.samples[j][q] * (-drift * at).exp();
            }
        }
        let mut centres = [1.0; ROUNDS];
        for (q, centre) in centres.iter_mut().enumerate().take(rounds) {
            let mut column = [0.0; PORTFOLIO_LEN];
            let mut len = 0;
            for j in Self::members(set) {
                column[len] = relative[j][q];
                len += 1;
            }
            *centre = median_in_place(&mut column[..len]);
        }
        for j in Self::members(set) {
            for (value, centre) in relative[j].iter_mut().zip(centres).take(rounds) {
                *value /= centre;
            }
        }
        (relative, rounds)
    }

    /// Each member's median of its first `rounds` values; infinite outside.
    fn medians(
        set: u16,
        relative: [[f64; ROUNDS]; PORTFOLIO_LEN],
        rounds: usize,
    ) -> [f64; PORTFOLIO_LEN] {
        Self::medians_over(set, relative, 0..rounds)
    }

    /// Each member's median of its values in `rounds`; infinite outside.
    fn medians_over(
        set: u16,
        mut relative: [[f64; ROUNDS]; PORTFOLIO_LEN],
        rounds: std::ops::Range<usize>,
    ) -> [f64; PORTFOLIO_LEN] {
        let mut medians = [f64::INFINITY; PORTFOLIO_LEN];
        for j in Self::members(set) {
            medians[j] = median_in_place(&mut relative[j][rounds.clone()]);
        }
        medians
    }

    /// The scores a search ends on: each survivor's median relative sample
    /// over every round, unless some survivor's standing moved between the
    /// earlier and the later half of the rounds by more than the
    /// elimination margin for half as many samples. Then the loop changed
    /// under the search (a phase of the program began: the schedule that
    /// was best before it can be the worst after), and only the later half
    /// speaks for the loop as it now is. Blocking already took out what
    /// moved every schedule alike, so only a change of their order counts,
    /// and a half's median shrugs off a single outlier. The noise here
    /// comes from the differences between consecutive rounds (a change of
    /// order is one large difference among many small ones), not from
    /// each schedule's range, which the change itself would widen until it
    /// hid.
    fn final_scores(&self, set: u16) -> [f64; PORTFOLIO_LEN] {
        let (relative, rounds) = self.blocked(set);
        let all = Self::medians(set, relative, rounds);
        if rounds < 4 || set.count_ones() < 2 {
            return all;
        }
        let mut differences = [0.0; PORTFOLIO_LEN * ROUNDS];
        let mut len = 0;
        for j in Self::members(set) {
            for pair in relative[j][..rounds].windows(2) {
                differences[len] = (pair[1] / pair[0]).ln();
                len += 1;
            }
        }
        // As in `end_round`: `√(k/(k − 1))` restores what the centring on
        // the round's median took out of each sample's noise.
        let survivors = f64::from(set.count_ones());
        let noise =
            noise_of_differences(&mut differences[..len]) * (survivors / (survivors - 1.0)).sqrt();
        let half = rounds / 2;
        let early = Self::medians_over(set, relative, 0..half);
        let late = Self::medians_over(set, relative, rounds - half..rounds);
        let standard_error = MEDIAN_EFFICIENCY * noise * (2.0 / half as f64).sqrt();
        let margin = (ELIMINATION_NOISE_K * standard_error).max(TIE_MARGIN);
        let moved = Self::members(set).any(|j| (late[j] / early[j]).ln().abs() > margin);
        if moved {
            late
        } else {
            all
        }
    }

    fn members(set: u16) -> impl Iterator<Item = usize> {
        (0..PORTFOLIO_LEN).filter(move |i| set & (1 << i) != 0)
    }

    /// The cheapest member (lowest [`KeelSel::order`] rank) whose value is
    /// within [`TIE_MARGIN`] of the best.
    fn cheapest_tie(&self, set: u16, value: impl Fn(usize) -> f64) -> usize {
        let best = Self::members(set).map(&value).fold(f64::INFINITY, f64::min);
        Self::members(set)
            .filter(|&i| value(i) <= (1.0 + TIE_MARGIN) * best)
            .min_by_key(|&i| self.order[i])
            .unwrap_or(0)
    }

    /// The member of `set` of lowest (`cheapest`) or highest rank.
    fn by_rank(&self, set: u16, cheapest: bool) -> usize {
        let ranked = Self::members(set).map(|i| (self.order[i], i));
        let pick = if cheapest { ranked.min() } else { ranked.max() };
        pick.map_or(0, |(_, i)| i)
    }

    /// Ranks the schedules by what they are expected to cost the loop
    /// beyond their work (`costs[i]` for portfolio index `i`; ties keep
    /// portfolio order, itself by increasing scheduling overhead): round 1
    /// tries them cheapest first and ties go to the cheapest. Without a
    /// ranking, portfolio order.
    pub fn rank_by_cost(&mut self, costs: &[f64; PORTFOLIO_LEN]) {
        let mut indices: [usize; PORTFOLIO_LEN] = std::array::from_fn(|i| i);
        indices.sort_by(|&a, &b| costs[a].total_cmp(&costs[b]).then(a.cmp(&b)));
        for (rank, &i) in indices.iter().enumerate() {
            self.order[i] = rank as u8;
        }
    }

    fn observe_exploration(&mut self, x: f64, lib: f64, scale: f64) {
        if x <= 0.0 {
            // An empty instance says nothing about the schedule's time (and
            // a zero would break the ratios below): it is offered again.
            return;
        }
        if let Some(best) = self.provisional().map(|j| self.estimate(j)) {
            self.budget.charge((x - best) * scale);
        }
        let i = self.current;
        let g = (lib / 100.0).clamp(0.0, 1.0);
        let balanced = x * (1.0 - g);
        let (x, g) = match self.charged {
            Some((incumbent, charge)) if incumbent == i && charge > g && charge < 1.0 => {
                (balanced / (1.0 - charge), charge)
            }
            _ => (x, g),
        };
        let n = usize::from(self.counts[i]);
        if n < ROUNDS {
            self.samples[i][n] = x;
            self.sample_imbalance[i][n] = g;
            self.sampled_at[i][n] = self.counts.iter().map(|&c| u16::from(c)).sum();
            self.counts[i] += 1;
        }
        self.remaining &= !(1 << i);
        if self.round == 0 {
            self.bound = self.bound.min(balanced);
            let tried = self.active & !self.remaining;
            let first = |j: usize| self.samples[j][0];
            let near_bound = (1.0 + TIE_MARGIN) * self.bound;
            // The tie is among the schedules within the margin of the
            // bound themselves: a cheaper one that ties the fastest only
            // through its own imbalance is not what ended the search.
            let balanced_set = Self::members(tried)
                .filter(|&j| first(j) <= near_bound)
                .fold(0u16, |set, j| set | (1 << j));
            if balanced_set != 0 {
                let winner = self.cheapest_tie(balanced_set, first);
                self.exploit(winner, SettledBy::ImbalanceBound);
                return;
            }
        }
        if self.remaining == 0 {
            self.end_round();
        }
    }

    fn end_round(&mut self) {
        // Whether the noise is too small for more samples to separate the
        // survivors by more than a tie.
        let mut resolved = false;
        if self.round == 0 {
            let first = |j: usize| self.samples[j][0];
            let fastest = Self::members(self.active)
                .map(first)
                .fold(f64::INFINITY, f64::min);
            for j in Self::members(self.active) {
                if first(j) > DOMINATED_RATIO * fastest {
                    self.active &= !(1 << j);
                }
            }
        } else {
            let (relative, n) = self.blocked(self.active);
            let medians = Self::medians(self.active, relative, n);
            let mut spreads = [0.0; PORTFOLIO_LEN];
            let mut spread_count = 0;
            for j in Self::members(self.active) {
                if n >= 2 && medians[j] > 0.0 {
                    let s = &relative[j][..n];
                    let hi = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let lo = s.iter().copied().fold(f64::INFINITY, f64::min);
                    spreads[spread_count] = (hi - lo) / (RANGE_TO_SIGMA[n] * medians[j]);
                    spread_count += 1;
                }
            }
            // Dividing by the round's centre removes part of each sample's
            // own noise with the common part (all of a pair's mean, for
            // two survivors): `√(k/(k − 1))` restores it, as for
            // deviations from a mean of `k`.
            let survivors = f64::from(self.active.count_ones());
            let noise = if spread_count == 0 {
                0.0
            } else {
                median_in_place(&mut spreads[..spread_count])
                    * (survivors / (survivors - 1.0)).sqrt()
            };
            let n = (self.round + 1) as f64;
            let standard_error = MEDIAN_EFFICIENCY * noise * (2.0 / n).sqrt();
            resolved = ELIMINATION_NOISE_K * standard_error <= TIE_MARGIN;
            let margin = (ELIMINATION_NOISE_K * standard_error).max(TIE_MARGIN);
            let best = medians.iter().copied().fold(f64::INFINITY, f64::min);
            for j in Self::members(self.active) {
                if medians[j] > (1.0 + margin) * best {
                    self.active &= !(1 << j);
                }
            }
        }
        self.round += 1;
        if self.active.count_ones() <= 1 || self.round >= ROUNDS || resolved {
            let scores = self.final_scores(self.active);
            let winner = self.cheapest_tie(self.active, |j| scores[j]);
            let settled_by = if self.active.count_ones() <= 1 && self.allowed == 1 {
                SettledBy::Overhead
            } else if self.active.count_ones() <= 1 {
                SettledBy::LastSurvivor
            } else if resolved {
                SettledBy::Resolved
            } else {
                SettledBy::Rounds
            };
            self.exploit(winner, settled_by);
        } else {
            self.remaining = self.active;
        }
    }
}

impl Select for KeelSel {
    fn next(&mut self) -> (usize, Phase) {
        match self.mode {
            Mode::Exploit => {
                self.current = self.winner;
                (self.winner, Phase::Exploit)
            }
            Mode::Explore => {
                if let Some(decision) = self.before_sampling() {
                    return decision;
                }
                let set = self.remaining;
                let incumbent_untried = self
                    .incumbent
                    .filter(|&i| self.round == 0 && set & (1 << i) != 0);
                // Even rounds walk the ranking upwards, odd rounds down.
                let next = if let Some(i) = incumbent_untried {
                    i
                } else {
                    self.by_rank(set, self.round.is_multiple_of(2))
                };
                self.current = next.min(PORTFOLIO_LEN - 1);
                let phase = if self.explorations > 1 {
                    Phase::Reexplore
                } else {
                    Phase::Explore
                };
                (self.current, phase)
            }
        }
    }

    fn observe(&mut self, measurement: &Measurement<'_>) {
        let scale = match measurement.iterations {
            Some(n) if n > 0 => n as f64,
            _ => 1.0,
        };
        let x = measurement.t_par / scale;
        self.budget.add_instance(measurement.t_par);
        if std::mem::take(&mut self.holding) {
            if !std::mem::take(&mut self.held_warmup) && x > 0.0 {
                let (sum, count) = &mut self.held[self.current];
                *sum += x;
                *count += 1;
            }
            return;
        }
        match self.mode {
            Mode::Explore => self.observe_exploration(x, measurement.lib, scale),
            Mode::Exploit => self.observe_exploitation(x, measurement.lib),
        }
    }
}

#[cfg(test)]
mod tests;
