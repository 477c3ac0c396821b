//! What a cluster machine manager reports: its steps and the switch skew
//! its node managers measured.
//!
//! Each NM reports, for every slot, the instant it finished enacting the
//! switch, on its own clock and converted to the MM's by its offset
//! estimate. The skew of a slot is the latest node's enactment minus the
//! switch time the heartbeat carried (max over nodes): on the estimated
//! clock always, and on the true clock when the NM shares the MM's host
//! (one monotonic clock, so no estimate is involved).
//!
//! ```
//! use keel_cosched::cluster::report::SkewLog;
//! let mut log = SkewLog::default();
//! log.switch(0, 1_000_000);
//! log.enacted(0, 0, 1_000_300, 1_000_250, true);
//! log.enacted(0, 1, 1_000_700, 1_000_650, true);
//! let s = log.summary().unwrap();
//! assert_eq!(s.slots, 1);
//! assert!((s.estimated.max - 650e-9).abs() < 1e-12);
//! assert!((s.true_clock.unwrap().max - 700e-9).abs() < 1e-12);
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use super::wire::{StepId, TaskEnd};

/// Slots whose enactments are kept (the oldest go first).
pub const SKEW_SLOTS_KEPT: usize = 1 << 16;

/// One step as the machine manager saw it.
#[derive(Clone, Debug, Serialize)]
pub struct StepRecord {
    /// Slurm job id.
    pub job: u32,
    /// Step id.
    pub step: u32,
    /// Tasks in the step.
    pub size: u32,
    /// When its first task registered, s since the MM started.
    pub first_task_s: f64,
    /// When it was packed into the matrix.
    pub packed_s: Option<f64>,
    /// When its last task ended.
    pub ended_s: Option<f64>,
    /// How its tasks ended, as their NMs saw it.
    pub ends: Vec<TaskEnd>,
    /// Class changes FCS made.
    pub reclassified: u64,
    /// Each rank's latest FCS class (`cs` until changed), by rank.
    pub classes: Vec<String>,
}

impl StepRecord {
    /// A step whose first task registered `at` after the MM started.
    pub fn new(id: StepId, size: u32, at: std::time::Duration) -> StepRecord {
        StepRecord {
            job: id.job,
            step: id.step,
            size,
            first_task_s: at.as_secs_f64(),
            packed_s: None,
            ended_s: None,
            ends: Vec::new(),
            reclassified: 0,
            classes: vec!["cs".into(); size.min(4096) as usize],
        }
    }
}

/// Quantiles of a set of delays, s.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Quantiles {
    fn of(mut v: Vec<f64>) -> Option<Quantiles> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Some(Quantiles {
            median: at(0.5),
            p99: at(0.99),
            max: v[v.len() - 1],
        })
    }
}

/// The switch skew over the slots every node reported.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SkewReport {
    /// Slots counted (those with an enactment from every node that
    /// reported in the run's slots, at least one).
    pub slots: usize,
    /// Nodes that reported.
    pub nodes: usize,
    /// Latest enactment minus switch time, by the NMs' clock estimates.
    pub estimated: Quantiles,
    /// The same on the true clock, when every NM shares the MM's host.
    pub true_clock: Option<Quantiles>,
    /// Latest minus earliest node's enactment in a slot (true clock when
    /// available, else estimated).
    pub spread: Option<Quantiles>,
}

#[derive(Default, Debug)]
struct SlotLog {
    switch_ns: Option<u64>,
    /// (node, local ns, MM ns by estimate, same host)
    enacted: Vec<(usize, u64, i64, bool)>,
}

/// Switch times and enactments, slot by slot.
#[derive(Default, Debug)]
pub struct SkewLog {
    slots: BTreeMap<u64, SlotLog>,
}

impl SkewLog {
    /// The MM sent slot `slot` to switch at `switch_ns` (its clock).
    pub fn switch(&mut self, slot: u64, switch_ns: u64) {
        self.slots.entry(slot).or_default().switch_ns = Some(switch_ns);
        while self.slots.len() > SKEW_SLOTS_KEPT {
            self.slots.pop_first();
        }
    }

    /// Node `node` enacted slot `slot` at `local_ns` (its clock), `mm_ns`
    /// by its estimate of the MM's clock.
    pub fn enacted(&mut self, slot: u64, node: usize, local_ns: u64, mm_ns: i64, same_host: bool) {
        if let Some(s) = self.slots.get_mut(&slot) {
            if s.enacted.len() < 4096 && !s.enacted.iter().any(|e| e.0 == node) {
                s.enacted.push((node, local_ns, mm_ns, same_host));
            }
        }
    }

    /// The skew over the slots that every reporting node enacted.
    pub fn summary(&self) -> Option<SkewReport> {
        let nodes = self
            .slots
            .values()
            .map(|s| s.enacted.len())
            .max()
            .unwrap_or(0);
        if nodes == 0 {
            return None;
        }
        let full = || {
            self.slots
                .values()
                .filter(move |s| s.switch_ns.is_some() && s.enacted.len() == nodes)
        };
        let lag = |t: i128, sw: u64| (t - i128::from(sw)) as f64 * 1e-9;
        let estimated: Vec<f64> = full()
            .map(|s| {
                let sw = s.switch_ns.unwrap_or(0);
                s.enacted
                    .iter()
                    .map(|e| lag(i128::from(e.2), sw))
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let all_same_host = full().all(|s| s.enacted.iter().all(|e| e.3));
        let true_lags: Vec<f64> = if all_same_host {
            full()
                .map(|s| {
                    let sw = s.switch_ns.unwrap_or(0);
                    s.enacted
                        .iter()
                        .map(|e| lag(i128::from(e.1), sw))
                        .fold(f64::NEG_INFINITY, f64::max)
                })
                .collect()
        } else {
            Vec::new()
        };
        let spread: Vec<f64> = full()
            .filter(|s| s.enacted.len() >= 2)
            .map(|s| {
                let times: Vec<i128> = s
                    .enacted
                    .iter()
                    .map(|e| {
                        if all_same_host {
                            i128::from(e.1)
                        } else {
                            i128::from(e.2)
                        }
                    })
                    .collect();
                let (lo, hi) = (
                    times.iter().min().copied().unwrap_or(0),
                    times.iter().max().copied().unwrap_or(0),
                );
                (hi - lo) as f64 * 1e-9
            })
            .collect();
        Some(SkewReport {
            slots: estimated.len(),
            nodes,
            estimated: Quantiles::of(estimated)?,
            true_clock: Quantiles::of(true_lags),
            spread: Quantiles::of(spread),
        })
    }
}

/// The machine manager's report at exit.
#[derive(Clone, Debug, Serialize)]
pub struct MmReport {
    /// The policy's canonical spec.
    pub policy: String,
    /// Slot length, s.
    pub slot_s: f64,
    /// Heartbeats sent.
    pub slots: u64,
    /// Nodes that joined, in index order.
    pub nodes: Vec<String>,
    /// Steps, ended ones first.
    pub steps: Vec<StepRecord>,
    /// The switch skew.
    pub skew: Option<SkewReport>,
    /// What the operator should know.
    pub notices: Vec<String>,
}

impl MmReport {
    /// An empty report.
    pub fn new(policy: String, slot_s: f64) -> MmReport {
        MmReport {
            policy,
            slot_s,
            slots: 0,
            nodes: Vec::new(),
            steps: Vec::new(),
            skew: None,
            notices: Vec::new(),
        }
    }
}
