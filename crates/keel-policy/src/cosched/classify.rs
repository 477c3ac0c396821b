//! FCS process classification: the measured statistics of Table 1, the
//! constants of Table 2 and the reclassification heuristic of Algorithm 2
//! (FCS paper §2.1, §2.3, §2.4; Fig. 2 is the
//! phase diagram [`classify`] draws).

use super::{kebab_keys, positive_seconds, CoschedError, ProcessClass};
use crate::spec::Spec;

/// Table 2's T_slice: the time-slice quantum, 25 ms.
pub const DEFAULT_T_SLICE: f64 = 0.025;
/// Table 2's T_spin: the spin time of spin-block waits, 100 µs.
pub const DEFAULT_T_SPIN: f64 = 100e-6;
/// Table 2's cslots_MIN: assigned slots in the current class before a
/// process may change class, 10.
pub const DEFAULT_CSLOTS_MIN: u64 = 10;
/// Table 2's DC_thresh: above this granularity a process is DC, 1 s.
pub const DEFAULT_DC_THRESH: f64 = 1.0;
/// Table 2's CS_thresh: below this granularity a process is CS, 10 ms.
pub const DEFAULT_CS_THRESH: f64 = 0.010;
/// Table 2's F_thresh as a fraction of CS_thresh: 0.75.
pub const F_THRESH_RATIO: f64 = 0.75;
/// Table 2's tslots_MAX: every this many assigned slots a process is reset
/// to CS, 16384.
pub const DEFAULT_TSLOTS_MAX: u64 = 16384;

/// FCS's constants (Table 2). Times are in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FcsParams {
    /// Time-slice quantum (T_slice).
    pub t_slice: f64,
    /// Spin time before blocking in spin-block waits (T_spin).
    pub t_spin: f64,
    /// Minimum `cslots` before a process is evaluated for a class change.
    pub cslots_min: u64,
    /// Granularity above which a process is DC.
    pub dc_thresh: f64,
    /// Granularity below which a process is CS.
    pub cs_thresh: f64,
    /// Average computation per communication below which a process of
    /// medium granularity is F (it waits too long on communication).
    pub f_thresh: f64,
    /// Period, in assigned slots, of the forced reset to CS.
    pub tslots_max: u64,
}

impl Default for FcsParams {
    /// Table 2's values, F_thresh = 0.75 × CS_thresh.
    fn default() -> Self {
        FcsParams {
            t_slice: DEFAULT_T_SLICE,
            t_spin: DEFAULT_T_SPIN,
            cslots_min: DEFAULT_CSLOTS_MIN,
            dc_thresh: DEFAULT_DC_THRESH,
            cs_thresh: DEFAULT_CS_THRESH,
            f_thresh: F_THRESH_RATIO * DEFAULT_CS_THRESH,
            tslots_max: DEFAULT_TSLOTS_MAX,
        }
    }
}

/// The spec keys of [`FcsParams`], in field order.
pub(crate) const FCS_KEYS: [&str; 7] = [
    "t-slice",
    "t-spin",
    "cslots-min",
    "dc-thresh",
    "cs-thresh",
    "f-thresh",
    "tslots-max",
];

impl FcsParams {
    /// Checks that every time is finite and positive, that
    /// `f_thresh <= cs_thresh <= dc_thresh`, and that `cslots_min` and
    /// `tslots_max` are at least 1.
    pub fn validate(&self) -> Result<(), CoschedError> {
        const POSITIVE: &str = "a finite number of seconds > 0";
        for (key, value) in [
            ("t-slice", self.t_slice),
            ("t-spin", self.t_spin),
            ("dc-thresh", self.dc_thresh),
            ("cs-thresh", self.cs_thresh),
            ("f-thresh", self.f_thresh),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(CoschedError::Parameter {
                    key,
                    value: crate::error::compact(value),
                    expected: POSITIVE,
                });
            }
        }
        for (key, value) in [
            ("cslots-min", self.cslots_min),
            ("tslots-max", self.tslots_max),
        ] {
            if value == 0 {
                return Err(CoschedError::Parameter {
                    key,
                    value: "0".into(),
                    expected: "an integer >= 1",
                });
            }
        }
        if !(self.f_thresh <= self.cs_thresh && self.cs_thresh <= self.dc_thresh) {
            return Err(CoschedError::ThresholdOrder {
                f_thresh: self.f_thresh,
                cs_thresh: self.cs_thresh,
                dc_thresh: self.dc_thresh,
            });
        }
        Ok(())
    }

    /// Table 2's values overridden by the spec's parameters (keys as in
    /// [`FcsParams::spec_params`]; `_` may stand for `-`), validated. When
    /// `cs-thresh` is given and `f-thresh` is not, F_thresh follows Table 2:
    /// 0.75 × the given CS_thresh.
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        let spec = kebab_keys(spec);
        spec.check_keys(&FCS_KEYS)?;
        let mut p = FcsParams::default();
        let count = |key: &'static str| -> Result<Option<u64>, CoschedError> {
            match spec.parsed::<u64>(key, "an integer >= 1")? {
                Some(0) => Err(CoschedError::Parameter {
                    key,
                    value: "0".into(),
                    expected: "an integer >= 1",
                }),
                other => Ok(other),
            }
        };
        if let Some(v) = positive_seconds(&spec, "t-slice")? {
            p.t_slice = v;
        }
        if let Some(v) = positive_seconds(&spec, "t-spin")? {
            p.t_spin = v;
        }
        if let Some(v) = count("cslots-min")? {
            p.cslots_min = v;
        }
        if let Some(v) = positive_seconds(&spec, "dc-thresh")? {
            p.dc_thresh = v;
        }
        if let Some(v) = positive_seconds(&spec, "cs-thresh")? {
            p.cs_thresh = v;
            p.f_thresh = F_THRESH_RATIO * v;
        }
        if let Some(v) = positive_seconds(&spec, "f-thresh")? {
            p.f_thresh = v;
        }
        if let Some(v) = count("tslots-max")? {
            p.tslots_max = v;
        }
        p.validate()?;
        Ok(p)
    }

    /// The parameters that differ from Table 2, as spec `(key, value)`
    /// pairs in field order (an F_thresh of 0.75 × CS_thresh is implied).
    pub fn spec_params(&self) -> Vec<(&'static str, String)> {
        let d = FcsParams::default();
        let changed = [
            (
                "t-slice",
                self.t_slice != d.t_slice,
                self.t_slice.to_string(),
            ),
            ("t-spin", self.t_spin != d.t_spin, self.t_spin.to_string()),
            (
                "cslots-min",
                self.cslots_min != d.cslots_min,
                self.cslots_min.to_string(),
            ),
            (
                "dc-thresh",
                self.dc_thresh != d.dc_thresh,
                self.dc_thresh.to_string(),
            ),
            (
                "cs-thresh",
                self.cs_thresh != d.cs_thresh,
                self.cs_thresh.to_string(),
            ),
            (
                "f-thresh",
                self.f_thresh != F_THRESH_RATIO * self.cs_thresh,
                self.f_thresh.to_string(),
            ),
            (
                "tslots-max",
                self.tslots_max != d.tslots_max,
                self.tslots_max.to_string(),
            ),
        ];
        let out: Vec<(&'static str, String)> = changed
            .into_iter()
            .filter(|(_, differs, _)| *differs)
            .map(|(key, _, value)| (key, value))
            .collect();
        out
    }
}

/// A process's communication statistics since its last reset (Table 1),
/// validated: every time finite and `>= 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CommStats {
    t_cpu: f64,
    t_comm: f64,
    c_comm: u64,
}

impl CommStats {
    /// `t_cpu`: CPU time (s) with spinning already subtracted (§2.6);
    /// `t_comm`: time waiting in blocking communication (s); `c_comm`:
    /// blocking communication events (back-to-back calls count once).
    pub fn new(t_cpu: f64, t_comm: f64, c_comm: u64) -> Result<Self, CoschedError> {
        for (what, value) in [("T_cpu", t_cpu), ("T_comm", t_comm)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(CoschedError::Statistic { what, value });
            }
        }
        Ok(CommStats {
            t_cpu,
            t_comm,
            c_comm,
        })
    }

    /// T_cpu (s).
    pub fn t_cpu(&self) -> f64 {
        self.t_cpu
    }

    /// T_comm (s).
    pub fn t_comm(&self) -> f64 {
        self.t_comm
    }

    /// C_comm.
    pub fn c_comm(&self) -> u64 {
        self.c_comm
    }

    /// Average CPU time per communication, T_cpu / C_comm; `+∞` when the
    /// process has not communicated (it computes without synchronising).
    pub fn avg_cpu(&self) -> f64 {
        self.per_event(self.t_cpu)
    }

    /// Average wait per communication, T_comm / C_comm; `+∞` when the
    /// process has not communicated.
    pub fn avg_comm(&self) -> f64 {
        self.per_event(self.t_comm)
    }

    /// Granularity g = avg_cpu + avg_comm (s): the average time per
    /// compute/communicate iteration; `+∞` (coarsest) with no communication.
    pub fn granularity(&self) -> f64 {
        self.avg_cpu() + self.avg_comm()
    }

    fn per_event(&self, total: f64) -> f64 {
        if self.c_comm == 0 {
            f64::INFINITY
        } else {
            total / self.c_comm as f64
        }
    }
}

/// The class Algorithm 2 gives a process that is due for evaluation — its
/// four last branches, Fig. 2's phase diagram. Comparisons are strict, as
/// in the paper: `g == DC_thresh` is not DC by the first test, `g ==
/// CS_thresh` is not CS, and `avg_cpu == F_thresh` is not F (so it is DC).
pub fn classify(stats: &CommStats, params: &FcsParams) -> ProcessClass {
    let g = stats.granularity();
    if g > params.dc_thresh {
        ProcessClass::Dc
    } else if g < params.cs_thresh {
        ProcessClass::Cs
    } else if stats.avg_cpu() < params.f_thresh {
        ProcessClass::F
    } else {
        ProcessClass::Dc
    }
}

/// A process's scheduling state (Table 1, "Scheduling").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessSched {
    /// Its class.
    pub class: ProcessClass,
    /// Assigned time slots spent in the current class.
    pub cslots: u64,
    /// Assigned time slots since the process started.
    pub tslots: u64,
}

impl ProcessSched {
    /// A new process: class CS, no slots yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends the process's assigned slot: counts it in `cslots` and
    /// `tslots`, then runs Algorithm 2 ([`reclassify`]). On
    /// [`Reclass::Changed`] or [`Reclass::Reset`] the caller resets the
    /// process's statistics baseline.
    pub fn finish_slot(&mut self, stats: &CommStats, params: &FcsParams) -> Reclass {
        self.cslots = self.cslots.saturating_add(1);
        self.tslots = self.tslots.saturating_add(1);
        reclassify(self, stats, params)
    }
}

/// What [`reclassify`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclass {
    /// No change (held off by `cslots_min`, or the class stands); keep
    /// accumulating statistics.
    Unchanged,
    /// The class changed; `cslots` restarted at 0.
    Changed {
        /// The previous class.
        from: ProcessClass,
        /// The new class.
        to: ProcessClass,
    },
    /// `tslots` reached a multiple of `tslots_max`: back to CS, `cslots`
    /// restarted at 0 (even if it was CS already).
    Reset,
}

impl Reclass {
    /// Whether the caller must reset the process's statistics baseline.
    pub fn resets_stats(self) -> bool {
        !matches!(self, Reclass::Unchanged)
    }
}

/// Algorithm 2 for a process that has just finished its assigned slot,
/// with `cslots` and `tslots` already counting that slot (see
/// [`ProcessSched::finish_slot`]):
///
/// 1. `tslots mod tslots_max == 0` → reset to CS (all processes of a job
///    reach this together, since they share their assigned slots);
/// 2. `cslots < cslots_min` → no change;
/// 3. otherwise the class is [`classify`]'s; a new class restarts `cslots`.
///
/// `tslots` is not cleared by a reset (it counts slots since the start), so
/// the next reset comes `tslots_max` slots later. A `tslots` of 0 counts as
/// a multiple. `params` is assumed valid ([`FcsParams::validate`]); a
/// `tslots_max` of 0 is treated as 1 rather than dividing by zero.
pub fn reclassify(sched: &mut ProcessSched, stats: &CommStats, params: &FcsParams) -> Reclass {
    if sched.tslots.is_multiple_of(params.tslots_max.max(1)) {
        sched.class = ProcessClass::Cs;
        sched.cslots = 0;
        return Reclass::Reset;
    }
    if sched.cslots < params.cslots_min {
        return Reclass::Unchanged;
    }
    let to = classify(stats, params);
    if to == sched.class {
        return Reclass::Unchanged;
    }
    let from = sched.class;
    sched.class = to;
    sched.cslots = 0;
    Reclass::Changed { from, to }
}
