//! Automatic schedule selection per loop: Auto4OMP's expert chunk and its
//! three selection methods (Auto4OMP paper §3.1–3.4, as its released code,
//! LB4OMP's `kmp_dispatch.cpp`, implements them),
//! Keel's own method `auto,keel`, and the Oracle / ManualBest yardsticks the
//! evaluation reports.
//!
//! | file | mechanism |
//! |---|---|
//! | [`expert_chunk`](mod@expert_chunk) | the expert ("golden") chunk `⌊N / (2^{μ+1}·P)⌋`, §3.1 |
//! | [`random`] | RandomSel: jump with probability LIB/10, seeded, §3.3.1 |
//! | [`exhaustive`] | ExhaustiveSel: one trial per instance, keep the fastest, 10-point LIB re-trigger, §3.3.2 |
//! | [`membership`] | ExpertSel's membership functions, rules and defuzzification constants (Table 1, Algorithm 1) |
//! | [`expert`] | ExpertSel: STATIC, then Table 1, then Algorithm 1, §3.3.3 |
//! | [`keel`] | `auto,keel`: successive elimination on relative times, then change detection |
//!
//! # Protocol (what `keel::loops` does per loop id)
//!
//! A context keeps one [`LoopSelector`] per loop identity, built once from
//! the `KEEL_SCHEDULE` text (`auto[,keel|expert|exhaustive|random]`, see
//! [`parse_setting`]); loops never share selection state, however they
//! interleave. For every instance of that loop:
//! 1. [`LoopSelector::choose`] with the instance's `N` and `P` returns a
//!    [`Choice`]: the portfolio index ([`crate::dls::AUTO4OMP_PORTFOLIO`]
//!    order, `docs/conventions.md#auto4omp-portfolio-order`) and the chunk
//!    parameter to run it with
//!    (the expert chunk when enabled, else `None`: the schedule's default).
//! 2. The context runs the loop with that schedule and measures it.
//! 3. [`LoopSelector::observe`] takes a [`Measurement`]: `T_par` in seconds,
//!    LIB in percent (`docs/conventions.md#metrics`: `(1 − mean/max)·100`,
//!    no `P/(P−1)`), and
//!    optionally per-thread finish times and the iteration count.
//!
//! The decision for instance `k` uses the measurements up to instance
//! `k − 1` (Auto4OMP's decision point: the first thread at dispatch init).
//! Everything here is pure: no clock is read, randomness comes from a seeded
//! ChaCha stream, so a run is reproducible from its measurements. After
//! [`LoopSelector::new`] nothing allocates: per-method state lives in fixed
//! arrays and the [`Record`] of decisions has a preallocated capacity
//! (run-length encoded, so a stable selection costs one entry).
//!
//! The protocol with `auto,exhaustive`, which tries the portfolio in order:
//!
//! ```
//! use keel_policy::select::{parse_auto, Measurement, Phase};
//! let spec = parse_auto("auto,exhaustive").unwrap().unwrap();
//! let mut selector = spec.selector(0);
//! let first = selector.choose(10_000, 4);
//! assert_eq!((first.index, first.phase), (0, Phase::Explore));
//! // Four threads finished at these times (seconds): T_par 0.012, LIB 25 %.
//! selector.observe(&Measurement::from_finish_times(&[0.006, 0.012, 0.009, 0.009])).unwrap();
//! assert_eq!(selector.choose(10_000, 4).index, 1);
//! assert_eq!(selector.record().instances(), 2);
//! ```

pub mod cost;
pub mod exhaustive;
pub mod expert;
pub mod expert_chunk;
pub mod keel;
pub mod membership;
pub mod random;
mod selector;
mod setting;

use std::fmt;

use serde::Serialize;

use crate::dls::{self, LoopSchedule, AUTO4OMP_PORTFOLIO};
use crate::error::PolicyError;

pub use exhaustive::ExhaustiveSel;
pub use expert::ExpertSel;
pub use expert_chunk::expert_chunk;
pub use keel::{KeelSel, SettledBy};
pub use random::RandomSel;
pub use selector::{LoopSelector, SelectionCost};
pub use setting::{parse_auto, parse_setting, AutoSpec, Method, Setting, METHOD_NAMES};

/// Number of schedules in the Auto4OMP portfolio.
pub const PORTFOLIO_LEN: usize = AUTO4OMP_PORTFOLIO.len();

/// Decision runs a [`LoopSelector`]'s record holds unless told otherwise
/// (32 bytes each: 32 KiB per loop). A stable selection uses one run; a
/// method that changes schedule at every instance uses one per instance.
pub const DEFAULT_RECORD_RUNS: usize = 1024;

/// What one loop instance measured, handed to [`LoopSelector::observe`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measurement<'a> {
    /// `T_par`: seconds from the instance's start until the last thread
    /// finished its share (no barrier time).
    pub t_par: f64,
    /// LIB in percent, `(1 − mean/max)·100` of the threads' finish times.
    pub lib: f64,
    /// Per-thread finish times in seconds since the instance's start, when
    /// the context has them (no built-in method needs them beyond LIB).
    pub finish_times: Option<&'a [f64]>,
    /// The instance's iteration count `N`. `auto,keel` compares times per
    /// iteration when it is given, so a loop whose `N` changes between
    /// instances is still compared with itself fairly.
    pub iterations: Option<u64>,
}

impl<'a> Measurement<'a> {
    /// `T_par` (seconds) and LIB (percent) only.
    pub fn new(t_par: f64, lib: f64) -> Self {
        Measurement {
            t_par,
            lib,
            finish_times: None,
            iterations: None,
        }
    }

    /// From per-thread finish times (seconds since the instance started):
    /// `T_par` is the largest, LIB is [`crate::metrics::lib_percent`].
    pub fn from_finish_times(finish_times: &'a [f64]) -> Self {
        let t_par = finish_times.iter().copied().fold(0.0, f64::max);
        Measurement {
            t_par,
            lib: crate::metrics::lib_percent(finish_times),
            finish_times: Some(finish_times),
            iterations: None,
        }
    }

    /// The same measurement with the instance's iteration count.
    pub fn with_iterations(self, iterations: u64) -> Self {
        Measurement {
            iterations: Some(iterations),
            ..self
        }
    }

    /// Typed error for a time or LIB no loop can produce.
    fn validate(&self) -> Result<(), PolicyError> {
        if !(self.t_par.is_finite() && self.t_par >= 0.0) {
            return Err(PolicyError::InvalidNumber {
                what: "loop time T_par",
                index: 0,
                value: self.t_par,
                expected: "a finite number of seconds >= 0",
            });
        }
        if !(self.lib.is_finite() && (0.0..=100.0).contains(&self.lib)) {
            return Err(PolicyError::InvalidNumber {
                what: "load imbalance LIB",
                index: 0,
                value: self.lib,
                expected: "a percentage in [0, 100]",
            });
        }
        Ok(())
    }
}

/// Why a schedule was chosen for an instance: the phase of its method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// ExpertSel's first instance: STATIC, to measure the loop; `auto,keel`'s
    /// warm-up instance of a loop (or of a class of its instances), which
    /// is not compared with anything.
    First,
    /// A trial of a search (ExhaustiveSel's sweep, `auto,keel`'s rounds).
    Explore,
    /// A trial of a search that a change re-opened (ExhaustiveSel's LIB
    /// re-trigger, `auto,keel`'s change detector).
    Reexplore,
    /// Running the schedule a search selected.
    Exploit,
    /// RandomSel jumped to a random schedule.
    Jump,
    /// RandomSel kept the current schedule.
    Keep,
    /// ExpertSel's Table 1 rules (the second instance).
    Initial,
    /// ExpertSel's Algorithm 1 rules (the third instance on).
    Adjust,
    /// The spec pins every instance to one schedule ([`AutoSpec::pin`]):
    /// the method still runs, its choice is overridden.
    Pinned,
    /// `auto,keel`'s exploration budget is spent: the best schedule found
    /// so far runs while the loop's further instances refill it.
    Provisional,
}

impl Phase {
    /// Whether instances in this phase are spent trying schedules out: the
    /// exploration cost a report counts separately.
    pub fn is_exploration(self) -> bool {
        matches!(self, Phase::Explore | Phase::Reexplore)
    }

    /// A short lower-case label for timelines.
    pub fn label(self) -> &'static str {
        match self {
            Phase::First => "first",
            Phase::Explore => "explore",
            Phase::Reexplore => "re-explore",
            Phase::Exploit => "exploit",
            Phase::Jump => "jump",
            Phase::Keep => "keep",
            Phase::Initial => "table-1",
            Phase::Adjust => "algorithm-1",
            Phase::Pinned => "pinned",
            Phase::Provisional => "provisional",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The schedule for one loop instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The instance's index among this loop's instances (0-based).
    pub instance: u64,
    /// Portfolio index ([`AUTO4OMP_PORTFOLIO`] order).
    pub index: usize,
    /// The chunk parameter to plan with: the expert chunk when it is enabled
    /// and non-zero (it then takes the chunk parameter's place for every
    /// schedule, as in Auto4OMP; under `auto,keel` STATIC excepted, which
    /// runs as one block per thread), raised to the cost model's smallest
    /// affordable chunk ([`cost::LoopModel::min_chunk`]); else `None` (the
    /// schedule's default).
    pub chunk: Option<u64>,
    /// Why this schedule.
    pub phase: Phase,
    /// Whether the context should measure this instance and hand the
    /// measurement to [`LoopSelector::observe`]. An exploited choice on a
    /// short loop is measured once in a few instances
    /// ([`cost::LoopModel::measure_interval`]); the others run like the
    /// fixed schedule, unrecorded.
    pub measure: bool,
    /// The instances this choice stands for, this one included (1 unless
    /// unmeasured): a context may run the next `lease − 1` instances of
    /// the loop over the same iteration count and team with it without
    /// asking again. The selector counts them when it chooses: a context
    /// that asks again before they all ran (the loop's shape changed, or
    /// it keeps no leases) first hands the rest back with
    /// [`LoopSelector::return_lease`].
    pub lease: u32,
}

impl Choice {
    /// The schedule's name (`static`, `ss`, ..., `maf`).
    pub fn name(&self) -> &'static str {
        AUTO4OMP_PORTFOLIO[self.index]
    }
}

/// One instance's decision, as a timeline shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The instance's index among the loop's instances (0-based).
    pub instance: u64,
    /// Portfolio index.
    pub index: usize,
    /// Why.
    pub phase: Phase,
}

/// Consecutive instances with the same schedule and phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Run {
    /// First instance of the run.
    pub first: u64,
    /// Number of instances.
    pub len: u64,
    /// Portfolio index.
    pub index: usize,
    /// Why.
    pub phase: Phase,
}

/// The decisions of one loop, run-length encoded, with a capacity fixed when
/// the selector is built (so recording never allocates). Once full, further
/// changes are counted in [`Record::dropped`] instead of stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    runs: Vec<Run>,
    capacity: usize,
    instances: u64,
    dropped: u64,
}

impl Record {
    /// An empty record that holds up to `capacity` runs.
    pub fn with_capacity(capacity: usize) -> Self {
        Record {
            runs: Vec::with_capacity(capacity),
            capacity,
            instances: 0,
            dropped: 0,
        }
    }

    fn push(&mut self, index: usize, phase: Phase) {
        self.push_many(index, phase, 1);
    }

    /// Takes back the last `count` instances (fewer if fewer were stored
    /// in the last run or dropped): a lease's instances that never ran.
    pub(crate) fn take_back(&mut self, count: u64) {
        let from_dropped = count.min(self.dropped);
        self.dropped -= from_dropped;
        let mut count = count - from_dropped;
        if let Some(last) = self.runs.last_mut() {
            let taken = count.min(last.len);
            last.len -= taken;
            count -= taken;
            self.instances -= taken;
            if last.len == 0 {
                self.runs.pop();
            }
        }
        self.instances -= from_dropped;
        debug_assert_eq!(count, 0, "taken back beyond the last run");
    }

    /// `count` consecutive instances with one decision.
    fn push_many(&mut self, index: usize, phase: Phase, count: u64) {
        if count == 0 {
            return;
        }
        let instance = self.instances;
        self.instances += count;
        if let Some(last) = self.runs.last_mut() {
            if last.index == index && last.phase == phase && last.first + last.len == instance {
                last.len += count;
                return;
            }
        }
        if self.runs.len() < self.capacity {
            self.runs.push(Run {
                first: instance,
                len: count,
                index,
                phase,
            });
        } else {
            self.dropped += count;
        }
    }

    /// The stored runs, in instance order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Every stored instance's decision, in order.
    pub fn decisions(&self) -> impl Iterator<Item = Decision> + '_ {
        self.runs.iter().flat_map(|run| {
            (run.first..run.first + run.len).map(move |instance| Decision {
                instance,
                index: run.index,
                phase: run.phase,
            })
        })
    }

    /// Instances decided so far (stored or not).
    pub fn instances(&self) -> u64 {
        self.instances
    }

    /// Instances not stored because the record was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Stored instances spent exploring ([`Phase::is_exploration`]).
    pub fn exploration_instances(&self) -> u64 {
        self.runs
            .iter()
            .filter(|r| r.phase.is_exploration())
            .map(|r| r.len)
            .sum()
    }
}

/// A selection method's state machine over the portfolio, driven once per
/// loop instance. [`LoopSelector`] wraps one with the expert chunk and the
/// record; the machines are public so they can be tested step by step.
pub trait Select: Send + fmt::Debug {
    /// The portfolio index for the next instance and the phase it belongs
    /// to. Called once per instance, before it runs.
    fn next(&mut self) -> (usize, Phase);

    /// The measurements of the instance that ran the last [`Select::next`]
    /// choice. Already validated: finite, `t_par >= 0`, LIB in `[0, 100]`.
    fn observe(&mut self, measurement: &Measurement<'_>);
}

/// The twelve portfolio schedules, built once through the loop-schedule
/// registry, in [`AUTO4OMP_PORTFOLIO`] order (index = [`Choice::index`]).
pub fn portfolio() -> Vec<Box<dyn LoopSchedule>> {
    let registry = dls::registry();
    AUTO4OMP_PORTFOLIO
        .iter()
        .map(|name| {
            registry
                .build(name)
                .expect("every portfolio name is a registered schedule")
        })
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count),
/// sorting them in place; NaN for none. See [`crate::stats::median`].
pub(crate) use crate::stats::median as median_in_place;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cost;
