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
//! would remove — the imbalance of the loads measured since the last one,
//! which is what the balancer's database holds — reaches the balance's
//! cost** (times [`PAYBACK`]). With a constant loss `w` per step it
//! balances after `PAYBACK·C/w` steps; with `b·t` after
//! `√(2·PAYBACK·C/b)`, √2 Meta-Balancer periods; and whatever the loads
//! do, the time spent balancing is bounded by what the imbalance had cost
//! (a rent-or-buy algorithm is 2-competitive).
//!
//! What a balance would remove is measured, not assumed:
//!
//! - **The loss** since the last balance is `max − mean` over the PUs (or
//!   ranks) of their loads summed since it ([`LoadHistory`]). While the
//!   same PUs stay heavy it is the sum of the steps' own losses (each
//!   step's `max − mean`: the time it took beyond a balanced step).
//! - **Persistence.** An imbalance that moves from PU to PU, and
//!   measurement noise, cancel in the sum: the loss since the last balance
//!   then grows far slower than the sum of the steps' losses (noise like
//!   `√t` against `t`), and a balance, which moves objects by what it
//!   measured, would not remove it. A balance needs the loss to be at least
//!   [`PERSISTENT_SHARE`] of the sum of the steps' losses.
//! - **The floor.** What the last balance could not remove (objects larger
//!   than a PU's fair share, a front that moved on before the balance
//!   ended) is the mean loss of the [`SETTLE_STEPS`] steps after it, and
//!   the loss counts only above it (the floor times the steps). A balance
//!   that did not help leaves a floor as high as the loss it was meant to
//!   remove; the floor halves every [`FLOOR_HALF_LIFE_STEPS`] steps, so
//!   that a new phase of the program is not judged by an old one.
//! - **Backoff.** A balance that removed less than [`FUTILE_SHARE`] of the
//!   loss of the step before it doubles what the next one must repay (up
//!   to [`MAX_BACKOFF`] times the cost); one that removed more resets it.
//! - **The cost** is the last balance's, as the context measured it
//!   (decision plus migration, the slowest rank's where there are ranks);
//!   before the first, the context's estimate.
//!
//! [`Invocation::Periodic`] balances every `n` steps, as Charm++'s `+LBPeriod`
//! and `AtSync` counts do; [`Invocation::Never`] only when asked.
//!
//! ```
//! use keel_policy::invoke::{Invocation, LoadHistory, Trigger};
//!
//! // Two PUs, one persistently 4 ms heavier; a balance costs about 1 ms.
//! let mut trigger = Trigger::new(Invocation::Adaptive, 1e-3);
//! let mut history = LoadHistory::new();
//! let mut balanced_after = None;
//! for step in 1..=10 {
//!     let summary = history.add(&[0.010, 0.006]);
//!     let verdict = trigger.after_step(step, &summary, None);
//!     if verdict.balance {
//!         balanced_after = Some(step);
//!         trigger.balanced(1e-3);
//!         history.clear();
//!         break;
//!     }
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

/// The least share of the sum of the steps' losses since the last balance
/// that the loss of the summed loads must reach: half, where noise over
/// `t` steps leaves about `1/√t` of it (a quarter after 16 steps) and a
/// persistent imbalance all of it.
pub const PERSISTENT_SHARE: f64 = 0.5;

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

/// A step's PU (or rank) loads and their sums since the last balance,
/// reduced to what the trigger reads: maxima and sums, which a distributed
/// context can reduce across ranks instead of gathering every load. Loads
/// are seconds in the step (time, as each PU took it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSummary {
    /// PUs counted.
    pub count: usize,
    /// This step's largest load.
    pub max: f64,
    /// Σ of this step's loads.
    pub sum: f64,
    /// The largest of the PUs' loads summed since the last balance (this
    /// step included).
    pub accumulated_max: f64,
    /// Σ of the PUs' loads since the last balance.
    pub accumulated_sum: f64,
}

impl LoadSummary {
    /// The summary of this step's `loads` and the same PUs' `accumulated`
    /// loads since the last balance (this step included). Loads that are
    /// not finite or are negative count as 0: the trigger must not be
    /// steered by a broken clock.
    ///
    /// ```
    /// use keel_policy::invoke::LoadSummary;
    /// let s = LoadSummary::of(&[3.0, 1.0], &[5.0, 3.0]);
    /// assert_eq!((s.count, s.max, s.sum), (2, 3.0, 4.0));
    /// assert_eq!(s.loss(), 1.0);
    /// assert_eq!(s.accumulated_loss(), 1.0);
    /// ```
    pub fn of(loads: &[f64], accumulated: &[f64]) -> Self {
        let mut s = LoadSummary {
            count: loads.len(),
            ..LoadSummary::default()
        };
        for &l in loads {
            let l = non_negative(l);
            s.max = s.max.max(l);
            s.sum += l;
        }
        for &a in accumulated {
            let a = non_negative(a);
            s.accumulated_max = s.accumulated_max.max(a);
            s.accumulated_sum += a;
        }
        s
    }

    /// This step's loss to imbalance: `max − mean` seconds.
    pub fn loss(&self) -> f64 {
        loss(self.max, self.sum, self.count)
    }

    /// The loss of the loads summed since the last balance: `max − mean`
    /// of the sums.
    pub fn accumulated_loss(&self) -> f64 {
        loss(self.accumulated_max, self.accumulated_sum, self.count)
    }
}

fn loss(max: f64, sum: f64, count: usize) -> f64 {
    if count == 0 {
        0.0
    } else {
        non_negative(max - sum / count as f64)
    }
}

/// Each PU's loads summed since the last balance: what a context keeps to
/// feed its trigger.
///
/// ```
/// use keel_policy::invoke::LoadHistory;
/// let mut h = LoadHistory::new();
/// h.add(&[2.0, 1.0]);
/// // The heavy PU changes: the sums even out, and so does their loss.
/// let s = h.add(&[1.0, 2.0]);
/// assert_eq!((s.loss(), s.accumulated_loss()), (0.5, 0.0));
/// h.clear();
/// assert_eq!(h.add(&[1.0, 2.0]).accumulated_loss(), 0.5);
/// ```
#[derive(Clone, Debug, Default)]
pub struct LoadHistory {
    accumulated: Vec<f64>,
}

impl LoadHistory {
    /// An empty history.
    pub fn new() -> Self {
        LoadHistory::default()
    }

    /// Adds a step's loads and returns its summary; loads of another PU
    /// count than the last step's start the sums afresh.
    pub fn add(&mut self, loads: &[f64]) -> LoadSummary {
        if self.accumulated.len() != loads.len() {
            self.accumulated = vec![0.0; loads.len()];
        }
        for (a, &l) in self.accumulated.iter_mut().zip(loads) {
            *a += non_negative(l);
        }
        LoadSummary::of(loads, &self.accumulated)
    }

    /// Forgets the sums: after a balance, whose new placement they do not
    /// describe.
    pub fn clear(&mut self) {
        self.accumulated.clear();
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
    /// The imbalance moves, or is noise: the loss of the loads summed
    /// since the last balance is less than [`PERSISTENT_SHARE`] of the sum
    /// of the steps' losses.
    Transient {
        /// That share.
        persistent_share: f64,
    },
    /// The remaining steps cannot pay the cost back at the present loss.
    TooFewStepsLeft {
        /// The loss since the last balance above the floor, per step, seconds.
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
            Reason::Transient { persistent_share } => write!(
                f,
                "the imbalance moves: {:.0} % of it persisted since the last balance",
                100.0 * persistent_share
            ),
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
    /// Σ of the steps' own losses since the last balance, seconds.
    step_losses: f64,
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
            step_losses: 0.0,
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
    /// the context counts them (its periods are multiples of it); `loads`
    /// from the context's [`LoadHistory`], cleared at every balance — and
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
        self.step_losses += loss;
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
        if self.since < MIN_STEPS {
            return Verdict::skip(Reason::TooFewSteps);
        }
        let accumulated = non_negative(loads.accumulated_loss());
        let persistent_share = if self.step_losses > 0.0 {
            accumulated / self.step_losses
        } else {
            0.0
        };
        if persistent_share < PERSISTENT_SHARE {
            return Verdict::skip(Reason::Transient { persistent_share });
        }
        let removable = non_negative(accumulated - self.floor * self.since as f64);
        let due = PAYBACK * self.backoff * self.cost;
        let cost_s = self.backoff * self.cost;
        if let Some(remaining) = remaining {
            let per_step = removable / self.since as f64;
            if per_step * remaining as f64 <= due {
                return Verdict::skip(Reason::TooFewStepsLeft {
                    loss_per_step_s: per_step,
                    remaining,
                    cost_s,
                });
            }
        }
        if removable >= due && removable > 0.0 {
            Verdict {
                balance: true,
                reason: Reason::Pays {
                    loss_s: removable,
                    cost_s,
                },
            }
        } else {
            Verdict::skip(Reason::CostsMore {
                loss_s: removable,
                cost_s,
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
        self.step_losses = 0.0;
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
