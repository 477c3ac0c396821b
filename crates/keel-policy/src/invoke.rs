//! When to balance: the invocation policy every context that remaps
//! objects consults after each step (`keel::objects` among a process's
//! PUs, `keel_mpi::DistributedObjects` among ranks, the simulator).
//!
//! A remap costs time (gathering loads, deciding, moving objects) and pays
//! back only what the imbalance it removes would have cost over the steps
//! that follow. Charm++'s Meta-Balancer (Menon et al., "Automated Load
//! Balancing Invocation based on Application Characteristics", IEEE
//! Cluster 2012, §III–IV) fits the imbalance's growth since the last
//! balance and balances at the period that minimises the time lost to
//! imbalance plus the balancing cost; with imbalance growing linearly at
//! `b` seconds per step per step and a cost `C`, that period is
//! `√(2C/b)`. [`Invocation::Adaptive`] reaches the same period without
//! fitting a model, and holds up when the imbalance does not grow
//! linearly, by the rent-or-buy rule: **balance once the loss a balance
//! would have removed since the last one reaches the balance's cost**
//! (times [`PAYBACK`]). With a constant loss `w` it balances after `C/w`
//! steps; with `b·t` after `√(2C/b)`, Meta-Balancer's period; and whatever
//! the loads do, the time it spends balancing is at most what the
//! imbalance had cost (a rent-or-buy algorithm is 2-competitive).
//!
//! What a balance would remove is measured, not assumed:
//!
//! - **The loss of a step** is `max − mean` of its PUs' (or ranks') loads:
//!   the time the step takes beyond a perfectly balanced one.
//! - **Persistence.** A balance moves objects by the loads it measured;
//!   it helps only if the heavy PUs stay heavy. Each step's loss counts in
//!   proportion to the cosine between this step's and the last step's
//!   deviations from the mean (clamped to `[0, 1]`): an imbalance that
//!   moves from PU to PU every step (a front faster than the steps) counts
//!   for nothing.
//! - **The floor.** What the last balance could not remove (objects larger
//!   than a PU's fair share, a front that moved on before the balance
//!   ended) is measured over the [`SETTLE_STEPS`] steps after it, and only
//!   the loss above it counts. A balance that did not help leaves a floor
//!   as high as the loss it was meant to remove, so the next one waits
//!   until the loss grows beyond it; the floor halves every
//!   [`FLOOR_HALF_LIFE_STEPS`] steps, so that a new phase of the program
//!   is not judged by an old one.
//! - **Backoff.** A balance that removed less than [`FUTILE_SHARE`] of the
//!   loss before it doubles what the next one must repay (up to
//!   [`MAX_BACKOFF`] times the cost); one that removed more resets it. The
//!   floor's decay then brings futile balances back ever more rarely.
//! - **The cost** is the last balance's, as the context measured it
//!   (decision plus migration, the slowest rank's where there are ranks);
//!   before the first, the context's estimate.
//!
//! [`Invocation::Periodic`] balances every `n` steps, as Charm++'s `+LBPeriod`
//! and `AtSync` counts do; [`Invocation::Never`] only when asked.
//!
//! ```
//! use keel_policy::invoke::{Invocation, LoadSummary, Trigger};
//!
//! // Two PUs, one persistently 4 ms heavier; a balance costs about 1 ms.
//! let mut trigger = Trigger::new(Invocation::Adaptive, 1e-3);
//! let mut previous: Option<Vec<f64>> = None;
//! let mut balanced_after = None;
//! for step in 1..=10 {
//!     let loads = vec![0.010, 0.006];
//!     let summary = LoadSummary::of(&loads, previous.as_deref());
//!     let verdict = trigger.after_step(step, &summary, None);
//!     if verdict.balance {
//!         balanced_after = Some(step);
//!         trigger.balanced(1e-3);
//!         break;
//!     }
//!     previous = Some(loads);
//! }
//! // 2 ms lost per step (max − mean): twice the 1 ms cost after one step,
//! // but a balance waits for MIN_STEPS measured steps.
//! assert_eq!(balanced_after, Some(keel_policy::invoke::MIN_STEPS));
//! ```

use std::fmt;
use std::num::NonZeroUsize;

use crate::error::PolicyError;
use crate::spec::Spec;

/// Steps measured since the last balance (or the start) before another
/// may run: the loads of fewer say little about the next ones.
pub const MIN_STEPS: usize = 2;

/// Steps after a balance whose mean loss is the balance's floor (what it
/// could not remove).
pub const SETTLE_STEPS: usize = 2;

/// Steps over which the floor halves.
pub const FLOOR_HALF_LIFE_STEPS: f64 = 64.0;

/// A balance that removed less than this share of the loss of the step
/// before it was futile.
pub const FUTILE_SHARE: f64 = 0.5;

/// The most a run of futile balances multiplies what the next must repay.
pub const MAX_BACKOFF: f64 = 64.0;

/// How many times its measured cost the loss must reach before a balance
/// runs: a remap also costs what the context does not measure (caches
/// cold after objects moved, the next step's first touches). At twice the
/// cost a linearly growing imbalance is balanced every `√2` Meta-Balancer
/// periods, which loses about 6 % more than the optimum to imbalance and
/// balancing together.
pub const PAYBACK: f64 = 2.0;

/// The invocation policies' names, as [`Invocation::parse`] takes them.
pub const NAMES: [&str; 3] = ["adaptive", "periodic", "never"];

/// When a context balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Invocation {
    /// When the loss since the last balance pays for another (the module's
    /// rule): `adaptive`.
    #[default]
    Adaptive,
    /// After every `n` steps: `periodic:steps=n`.
    Periodic(NonZeroUsize),
    /// Only when the program asks: `never`.
    Never,
}

impl Invocation {
    /// Parses `adaptive`, `periodic:steps=N` (N ≥ 1) or `never`.
    ///
    /// ```
    /// use keel_policy::invoke::Invocation;
    /// assert_eq!(Invocation::parse("adaptive").unwrap(), Invocation::Adaptive);
    /// let every = Invocation::parse("periodic:steps=50").unwrap();
    /// assert_eq!(every.period(), Some(50));
    /// assert_eq!(every.spec(), "periodic:steps=50");
    /// assert!(Invocation::parse("periodic:steps=0").is_err());
    /// assert!(Invocation::parse("sometimes").unwrap_err().to_string().contains("adaptive"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let spec = Spec::parse(text.trim())?;
        match spec.name.as_str() {
            "adaptive" => {
                spec.check_keys(&[])?;
                Ok(Invocation::Adaptive)
            }
            "never" => {
                spec.check_keys(&[])?;
                Ok(Invocation::Never)
            }
            "periodic" => {
                spec.check_keys(&["steps"])?;
                let steps = spec
                    .count_in("steps", 1, u32::MAX as usize)?
                    .ok_or_else(|| spec.invalid("steps", "", "an integer >= 1 (required)"))?;
                Ok(Invocation::every(steps).expect("checked above"))
            }
            other => Err(PolicyError::UnknownPolicy {
                family: "invocation",
                name: other.to_string(),
                valid: NAMES.iter().map(|s| s.to_string()).collect(),
            }),
        }
    }

    /// `Periodic(steps)`, or `None` for 0 steps.
    pub fn every(steps: usize) -> Option<Self> {
        NonZeroUsize::new(steps).map(Invocation::Periodic)
    }

    /// The fixed period, if periodic.
    pub fn period(&self) -> Option<usize> {
        match self {
            Invocation::Periodic(n) => Some(n.get()),
            _ => None,
        }
    }

    /// The canonical spec ([`parse`](Self::parse) gives it back).
    pub fn spec(&self) -> String {
        match self {
            Invocation::Adaptive => "adaptive".into(),
            Invocation::Periodic(n) => format!("periodic:steps={n}"),
            Invocation::Never => "never".into(),
        }
    }
}

impl serde::Serialize for Invocation {
    /// As its spec.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.spec())
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec())
    }
}

/// A step's PU (or rank) loads, reduced to what the trigger reads: sums a
/// distributed context can add up across ranks instead of gathering every
/// load. Loads are seconds of work in the step, each already divided by
/// its PU's speed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSummary {
    /// PUs counted.
    pub count: usize,
    /// The largest load.
    pub max: f64,
    /// Σ loads.
    pub sum: f64,
    /// Σ loads².
    pub sum_sq: f64,
    /// Σ this step's load × the previous step's, PU by PU (0 without a
    /// previous step).
    pub cross: f64,
    /// Σ of the previous step's loads (0 without one).
    pub previous_sum: f64,
    /// Σ of the previous step's loads² (0 without one).
    pub previous_sum_sq: f64,
    /// Whether the previous step's loads were given (the same PUs).
    pub has_previous: bool,
}

impl LoadSummary {
    /// The summary of `loads`, with `previous` (the same PUs' loads in the
    /// step before, if any and of the same length). Loads that are not
    /// finite or are negative count as 0: the trigger must not be steered
    /// by a broken clock.
    ///
    /// ```
    /// use keel_policy::invoke::LoadSummary;
    /// let s = LoadSummary::of(&[3.0, 1.0], Some(&[2.0, 2.0]));
    /// assert_eq!((s.count, s.max, s.sum), (2, 3.0, 4.0));
    /// assert_eq!(s.loss(), 1.0);
    /// assert_eq!(s.cross, 8.0);
    /// ```
    pub fn of(loads: &[f64], previous: Option<&[f64]>) -> Self {
        let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        let mut s = LoadSummary {
            count: loads.len(),
            ..LoadSummary::default()
        };
        for &l in loads {
            let l = clean(l);
            s.max = s.max.max(l);
            s.sum += l;
            s.sum_sq += l * l;
        }
        if let Some(prev) = previous.filter(|p| p.len() == loads.len()) {
            s.has_previous = true;
            for (&l, &p) in loads.iter().zip(prev) {
                let (l, p) = (clean(l), clean(p));
                s.cross += l * p;
                s.previous_sum += p;
                s.previous_sum_sq += p * p;
            }
        }
        s
    }

    /// The mean load.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// The step's loss to imbalance: `max − mean` seconds.
    pub fn loss(&self) -> f64 {
        (self.max - self.mean()).max(0.0)
    }

    /// How much of the imbalance stayed where it was: the cosine between
    /// this step's and the previous step's deviations from their means,
    /// clamped to `[0, 1]`; 1 without a previous step or where either
    /// step was balanced (nothing moved that could be measured).
    ///
    /// ```
    /// use keel_policy::invoke::LoadSummary;
    /// let same = LoadSummary::of(&[3.0, 1.0], Some(&[4.0, 2.0]));
    /// assert!((same.persistence() - 1.0).abs() < 1e-12);
    /// let swapped = LoadSummary::of(&[1.0, 3.0], Some(&[3.0, 1.0]));
    /// assert_eq!(swapped.persistence(), 0.0);
    /// ```
    pub fn persistence(&self) -> f64 {
        if !self.has_previous || self.count < 2 {
            return 1.0;
        }
        let n = self.count as f64;
        let (m, pm) = (self.sum / n, self.previous_sum / n);
        let dot = self.cross - n * m * pm;
        let now = self.sum_sq - n * m * m;
        let before = self.previous_sum_sq - n * pm * pm;
        // Relative to the loads' own scale: rounding leaves about 1e-16 of
        // Σ l² in a variance that is really 0.
        let tiny = 1e-12 * (self.sum_sq + self.previous_sum_sq);
        if now <= tiny || before <= tiny {
            return 1.0;
        }
        (dot / (now * before).sqrt()).clamp(0.0, 1.0)
    }
}

/// Why a [`Verdict`] balances or not.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Reason {
    /// Periodic, and this step ends a period.
    Period,
    /// Periodic, and it does not.
    NotDue,
    /// Never balances on its own.
    Never,
    /// Measuring what the last balance left (its floor).
    Settling,
    /// Fewer than [`MIN_STEPS`] steps measured since the last balance.
    TooFewSteps,
    /// The remaining steps cannot pay the cost back at the present loss.
    TooFewStepsLeft {
        /// The present persistent loss above the floor, seconds per step.
        loss_per_step_s: f64,
        /// Steps left.
        remaining: usize,
        /// The expected cost times the backoff, seconds.
        cost_s: f64,
    },
    /// The loss since the last balance has not yet paid for another.
    CostsMore {
        /// The persistent loss above the floor since the last balance, seconds.
        loss_s: f64,
        /// The expected cost times the backoff, seconds.
        cost_s: f64,
    },
    /// The loss since the last balance pays for another.
    Pays {
        /// The persistent loss above the floor since the last balance, seconds.
        loss_s: f64,
        /// The expected cost times the backoff, seconds.
        cost_s: f64,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |s: f64| s * 1e3;
        match *self {
            Reason::Period => f.write_str("the period ends"),
            Reason::NotDue => f.write_str("within the period"),
            Reason::Never => f.write_str("only on request"),
            Reason::Settling => f.write_str("measuring what the last balance left"),
            Reason::TooFewSteps => write!(f, "fewer than {MIN_STEPS} steps measured"),
            Reason::TooFewStepsLeft {
                loss_per_step_s,
                remaining,
                cost_s,
            } => write!(
                f,
                "{remaining} steps left at {:.3} ms lost per step cannot repay {:.3} ms",
                ms(loss_per_step_s),
                ms(cost_s)
            ),
            Reason::CostsMore { loss_s, cost_s } => write!(
                f,
                "{:.3} ms lost since the last balance < {PAYBACK} × {:.3} ms it costs",
                ms(loss_s),
                ms(cost_s)
            ),
            Reason::Pays { loss_s, cost_s } => write!(
                f,
                "{:.3} ms lost since the last balance ≥ {PAYBACK} × {:.3} ms it costs",
                ms(loss_s),
                ms(cost_s)
            ),
        }
    }
}

/// What [`Trigger::after_step`] decided.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// Balance now.
    pub balance: bool,
    /// Why.
    #[serde(flatten)]
    pub reason: Reason,
}

impl Verdict {
    fn skip(reason: Reason) -> Self {
        Verdict {
            balance: false,
            reason,
        }
    }
}

/// One context's invocation state: fed every step's loads, told every
/// balance's cost. Deterministic: contexts whose ranks each keep one, fed
/// the same summaries and costs, decide alike.
#[derive(Clone, Debug)]
pub struct Trigger {
    invocation: Invocation,
    /// Steps since the last balance (or the start).
    since: usize,
    /// Steps of the settle window still to measure, and their loss so far.
    settling: usize,
    settle_loss: f64,
    floor: f64,
    /// The loss of the step before the last balance.
    before_balance: f64,
    /// What futile balances multiply the cost by.
    backoff: f64,
    /// The last step's loss.
    last_loss: f64,
    /// Persistent loss above the floor since the last balance, seconds.
    loss: f64,
    cost: f64,
}

impl Trigger {
    /// A trigger for `invocation`, expecting a balance to cost
    /// `initial_cost_s` seconds until one has been measured (a value that
    /// is not finite or is negative counts as 0).
    pub fn new(invocation: Invocation, initial_cost_s: f64) -> Self {
        Trigger {
            invocation,
            since: 0,
            settling: 0,
            settle_loss: 0.0,
            floor: 0.0,
            before_balance: 0.0,
            backoff: 1.0,
            last_loss: 0.0,
            loss: 0.0,
            cost: non_negative(initial_cost_s),
        }
    }

    /// The invocation policy.
    pub fn invocation(&self) -> Invocation {
        self.invocation
    }

    /// The expected cost of the next balance, seconds.
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// What futile balances multiply the cost by (1 after a useful one).
    pub fn backoff(&self) -> f64 {
        self.backoff
    }

    /// The loss the last balance left, seconds per step (decayed).
    pub fn floor(&self) -> f64 {
        self.floor
    }

    /// Steps since the last balance (or the start).
    pub fn steps_since_balance(&self) -> usize {
        self.since
    }

    /// Reads a finished step — `steps_done` steps are complete, counted as
    /// the context counts them (its periods are multiples of it) — and
    /// says whether to balance now. `remaining` is the number of steps
    /// still to run, when the context knows it.
    pub fn after_step(
        &mut self,
        steps_done: usize,
        loads: &LoadSummary,
        remaining: Option<usize>,
    ) -> Verdict {
        self.since += 1;
        match self.invocation {
            Invocation::Never => return Verdict::skip(Reason::Never),
            Invocation::Periodic(n) => {
                return if steps_done.is_multiple_of(n.get()) {
                    Verdict {
                        balance: true,
                        reason: Reason::Period,
                    }
                } else {
                    Verdict::skip(Reason::NotDue)
                };
            }
            Invocation::Adaptive => {}
        }
        let loss = non_negative(loads.loss());
        if self.settling > 0 {
            self.settle_loss += loss;
            self.settling -= 1;
            if self.settling == 0 {
                self.floor = self.settle_loss / SETTLE_STEPS as f64;
                let removed = self.before_balance - self.floor;
                self.backoff = if removed < FUTILE_SHARE * self.before_balance {
                    (self.backoff * 2.0).min(MAX_BACKOFF)
                } else {
                    1.0
                };
            }
            return Verdict::skip(Reason::Settling);
        }
        self.last_loss = loss;
        self.floor *= (-std::f64::consts::LN_2 / FLOOR_HALF_LIFE_STEPS).exp();
        let excess = (loss - self.floor).max(0.0) * loads.persistence();
        self.loss += excess;
        if self.since < MIN_STEPS {
            return Verdict::skip(Reason::TooFewSteps);
        }
        let due = PAYBACK * self.backoff * self.cost;
        if let Some(remaining) = remaining {
            if excess * remaining as f64 <= due {
                return Verdict::skip(Reason::TooFewStepsLeft {
                    loss_per_step_s: excess,
                    remaining,
                    cost_s: self.backoff * self.cost,
                });
            }
        }
        if self.loss >= due && self.loss > 0.0 {
            Verdict {
                balance: true,
                reason: Reason::Pays {
                    loss_s: self.loss,
                    cost_s: self.backoff * self.cost,
                },
            }
        } else {
            Verdict::skip(Reason::CostsMore {
                loss_s: self.loss,
                cost_s: self.backoff * self.cost,
            })
        }
    }

    /// A balance ran (the trigger's, the period's or the program's own)
    /// and cost `cost_s` seconds as measured; the next balance is expected
    /// to cost as much. A value that is not finite or is negative keeps
    /// the previous expectation.
    pub fn balanced(&mut self, cost_s: f64) {
        if cost_s.is_finite() && cost_s >= 0.0 {
            self.cost = cost_s;
        }
        self.since = 0;
        self.loss = 0.0;
        self.before_balance = self.last_loss;
        self.settling = SETTLE_STEPS;
        self.settle_loss = 0.0;
    }
}

fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests;
