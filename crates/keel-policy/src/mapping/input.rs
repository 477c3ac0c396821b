//! The inputs every mapping policy reads, gathered once through the context
//! handler and validated in one place, so that no policy sees NaN loads,
//! mismatched lengths or placements on PUs that do not exist.
//!
//! Units follow Charm++'s GreedyLB: a task load is *work* in reference units
//! (its time on a PU of speed 1); a PU load is *time* already committed on
//! that PU (background load); placing a task of load `w` on PU `p` adds
//! `w / speed[p]` to the PU's time.

use crate::concept::{Concept, Requirement};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::NO_PU;

/// Validated, borrowed inputs of a mapping decision.
#[derive(Clone, Copy, Debug)]
pub struct MappingInput<'a> {
    task_loads: &'a [f64],
    pu_loads: &'a [f64],
    speeds: Option<&'a [f64]>,
    available: Option<&'a [bool]>,
    migratable: Option<&'a [bool]>,
    current: Option<&'a [usize]>,
}

impl<'a> MappingInput<'a> {
    /// Task loads and PU background loads; the number of PUs is `pu_loads.len()`.
    pub fn new(task_loads: &'a [f64], pu_loads: &'a [f64]) -> Result<Self, PolicyError> {
        let input = MappingInput {
            task_loads,
            pu_loads,
            speeds: None,
            available: None,
            migratable: None,
            current: None,
        };
        input.validate()?;
        Ok(input)
    }

    /// Adds PU relative speeds.
    pub fn with_speeds(mut self, speeds: &'a [f64]) -> Result<Self, PolicyError> {
        self.speeds = Some(speeds);
        self.validate().map(|_| self)
    }

    /// Adds PU availability.
    pub fn with_availability(mut self, available: &'a [bool]) -> Result<Self, PolicyError> {
        self.available = Some(available);
        self.validate().map(|_| self)
    }

    /// Adds task migratability.
    pub fn with_migratable(mut self, migratable: &'a [bool]) -> Result<Self, PolicyError> {
        self.migratable = Some(migratable);
        self.validate().map(|_| self)
    }

    /// Adds the current placement.
    pub fn with_current(mut self, current: &'a [usize]) -> Result<Self, PolicyError> {
        self.current = Some(current);
        self.validate().map(|_| self)
    }

    /// Step 1–2 of Fig. 1: fetch every concept `requirements` names (the
    /// required ones must be present) and validate them together.
    pub fn gather(
        policy: &str,
        ctx: &'a ContextHandler<'_>,
        requirements: &[Requirement],
    ) -> Result<Self, PolicyError> {
        ctx.check(policy, requirements)?;
        let wants = |concept: Concept| requirements.iter().any(|r| r.concept == concept);
        let input = MappingInput {
            task_loads: ctx.require_values(policy, Concept::TASK_LOADS)?,
            pu_loads: ctx.require_values(policy, Concept::PU_LOADS)?,
            speeds: match wants(Concept::PuSpeed) {
                true => ctx.values(policy, Concept::PuSpeed)?,
                false => None,
            },
            available: match wants(Concept::PuAvailability) {
                true => ctx.flags(policy, Concept::PuAvailability)?,
                false => None,
            },
            migratable: match wants(Concept::TaskMigratable) {
                true => ctx.flags(policy, Concept::TaskMigratable)?,
                false => None,
            },
            current: match wants(Concept::CurrentMapping) {
                true => ctx.placement(policy)?,
                false => None,
            },
        };
        input.validate()?;
        Ok(input)
    }

    fn validate(&self) -> Result<(), PolicyError> {
        let (ntasks, npus) = (self.task_loads.len(), self.pu_loads.len());
        if npus == 0 {
            return Err(PolicyError::NoPus);
        }
        let task_work = sum_non_negative("task load", self.task_loads)?;
        sum_non_negative("PU load", self.pu_loads)?;
        let pu_len = |concept, found| check_len(concept, npus, found, "PUs");
        let task_len = |concept, found| check_len(concept, ntasks, found, "tasks");
        if let Some(speeds) = self.speeds {
            pu_len(Concept::PuSpeed, speeds.len())?;
            if let Some((index, &value)) = speeds
                .iter()
                .enumerate()
                .find(|(_, s)| !(s.is_finite() && **s > 0.0))
            {
                return Err(PolicyError::InvalidNumber {
                    what: "PU speed",
                    index,
                    value,
                    expected: "speeds must be finite and > 0",
                });
            }
        }
        if let Some(available) = self.available {
            pu_len(Concept::PuAvailability, available.len())?;
            if !available.iter().any(|&a| a) {
                return Err(PolicyError::NoAvailablePu(npus));
            }
        }
        if let Some(migratable) = self.migratable {
            task_len(Concept::TaskMigratable, migratable.len())?;
        }
        if let Some(current) = self.current {
            task_len(Concept::CurrentMapping, current.len())?;
            if let Some((task, &pu)) = current
                .iter()
                .enumerate()
                .find(|(_, &p)| p != NO_PU && p >= npus)
            {
                return Err(PolicyError::PuOutOfRange { task, pu, npus });
            }
        }
        // Every PU time is at most its background plus all work at the
        // slowest speed; if that bound is finite, no policy's sum overflows.
        let slowest = self
            .speeds
            .map_or(1.0, |s| s.iter().copied().fold(f64::INFINITY, f64::min));
        let max_background = self.pu_loads.iter().copied().fold(0.0, f64::max);
        let total_work: f64 = task_work
            + self
                .pu_loads
                .iter()
                .enumerate()
                .map(|(p, &b)| b * self.speed(p))
                .sum::<f64>();
        let bound = max_background + total_work / slowest;
        if !bound.is_finite() {
            return Err(PolicyError::LoadOverflow { bound });
        }
        // Without migratability flags every task may move: nothing to check
        // (and no pass over the tasks on the policies' hot path).
        let pinned = self.migratable.map_or(&[][..], |m| m);
        for task in (0..pinned.len()).filter(|&t| !pinned[t]) {
            match self.current(task) {
                None => return Err(PolicyError::UnplacedUnmigratable { task }),
                Some(pu) if !self.is_available(pu) => {
                    return Err(PolicyError::PinnedToUnavailable { task, pu })
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Number of tasks.
    pub fn ntasks(&self) -> usize {
        self.task_loads.len()
    }

    /// Number of PUs, available or not.
    pub fn npus(&self) -> usize {
        self.pu_loads.len()
    }

    /// Task loads (work, reference units).
    pub fn task_loads(&self) -> &'a [f64] {
        self.task_loads
    }

    /// PU background loads (time).
    pub fn pu_loads(&self) -> &'a [f64] {
        self.pu_loads
    }

    /// Speed of PU `pu` (1.0 when the context gave none).
    #[inline]
    pub fn speed(&self, pu: usize) -> f64 {
        self.speeds.map_or(1.0, |s| s[pu])
    }

    /// PU speeds, when the context gave any that differ from 1.
    pub fn speeds(&self) -> Option<&'a [f64]> {
        self.speeds.filter(|s| s.iter().any(|&v| v != 1.0))
    }

    /// Whether PU `pu` may receive work.
    #[inline]
    pub fn is_available(&self, pu: usize) -> bool {
        self.available.is_none_or(|a| a[pu])
    }

    /// Whether task `task` may move.
    #[inline]
    pub fn is_migratable(&self, task: usize) -> bool {
        self.migratable.is_none_or(|m| m[task])
    }

    /// The migratability flags, if the context gave any.
    pub(crate) fn migratable(&self) -> Option<&'a [bool]> {
        self.migratable
    }

    /// Where task `task` runs now, if the context said.
    #[inline]
    pub fn current(&self, task: usize) -> Option<usize> {
        self.current.map(|c| c[task]).filter(|&pu| pu != NO_PU)
    }

    /// The whole current placement, if the context gave one.
    pub fn current_mapping(&self) -> Option<&'a [usize]> {
        self.current
    }

    /// Indices of the available PUs, in order.
    pub fn available_pus(&self) -> Vec<usize> {
        (0..self.npus()).filter(|&p| self.is_available(p)).collect()
    }

    /// The starting point every policy shares: unmigratable tasks stay on
    /// their PU and count toward its load; every other task is unplaced.
    /// Returns the placement and each PU's time.
    pub fn pinned_start(&self) -> (Vec<usize>, Vec<f64>) {
        let mut placement = vec![NO_PU; self.ntasks()];
        let mut loads = self.pu_loads.to_vec();
        if self.migratable.is_some() {
            for task in (0..self.ntasks()).filter(|&t| !self.is_migratable(t)) {
                let pu = self
                    .current(task)
                    .expect("validated: pinned tasks are placed");
                placement[task] = pu;
                loads[pu] += self.task_loads[task] / self.speed(pu);
            }
        }
        (placement, loads)
    }

    /// Each PU's time under `placement` (background plus its tasks).
    pub fn loads_of(&self, placement: &[usize]) -> Vec<f64> {
        let mut loads = self.pu_loads.to_vec();
        for (task, &pu) in placement.iter().enumerate() {
            if pu != NO_PU {
                loads[pu] += self.task_loads[task] / self.speed(pu);
            }
        }
        loads
    }
}

fn check_len(
    concept: Concept,
    expected: usize,
    found: usize,
    unit: &'static str,
) -> Result<(), PolicyError> {
    if expected == found {
        Ok(())
    } else {
        Err(PolicyError::LengthMismatch {
            concept,
            expected,
            found,
            unit,
        })
    }
}

/// Checks every value is finite and `>= 0` and returns their sum, in one
/// pass of eight independent lanes: validation sits on every policy call, and
/// a single serial `f64` sum (one add latency per value) cost as much as
/// several percent of a greedy decision at 16,000 tasks.
///
/// The pass only sums and keeps each lane's least value, which compiles to
/// packed adds and minimums: a NaN or an infinity makes the sum NaN or
/// infinite, a negative value (−∞ included) makes a minimum negative. Only
/// then are the values searched for the culprit; a sum that overflowed from
/// finite values finds none and is returned as it is (the caller's bound
/// check rejects it).
fn sum_non_negative(what: &'static str, values: &[f64]) -> Result<f64, PolicyError> {
    const LANES: usize = 8;
    let mut sums = [0.0f64; LANES];
    let mut mins = [0.0f64; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for lane in 0..LANES {
            let v = chunk[lane];
            sums[lane] += v;
            // Written as a comparison, not `f64::min`, to get `minpd`.
            mins[lane] = if v < mins[lane] { v } else { mins[lane] };
        }
    }
    let mut sum: f64 = sums.iter().sum();
    let mut least = mins.iter().copied().fold(0.0, f64::min);
    for &v in tail {
        sum += v;
        least = least.min(v);
    }
    if sum.is_finite() && least >= 0.0 {
        return Ok(sum);
    }
    match values
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
    {
        None => Ok(sum),
        Some((index, &value)) => Err(PolicyError::InvalidNumber {
            what,
            index,
            value,
            expected: "loads must be finite and >= 0",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_numbers_with_their_index() {
        for bad in [f64::NAN, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
            let loads = [1.0, bad];
            let err = MappingInput::new(&loads, &[0.0]).unwrap_err();
            assert!(
                matches!(
                    err,
                    PolicyError::InvalidNumber {
                        index: 1,
                        what: "task load",
                        ..
                    }
                ),
                "{err}"
            );
        }
        let err = MappingInput::new(&[1.0], &[f64::NAN]).unwrap_err();
        assert!(err.to_string().contains("PU load 0"), "{err}");
    }

    #[test]
    fn names_the_first_bad_value_anywhere_in_a_long_slice() {
        for bad in [
            f64::NAN,
            -1.0,
            -f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            for at in [0, 5, 8, 13, 16, 17] {
                let mut loads = vec![2.0; 18];
                loads[at] = bad;
                if at + 1 < loads.len() {
                    loads[at + 1] = f64::NAN;
                }
                let err = MappingInput::new(&loads, &[0.0]).unwrap_err();
                assert!(
                    matches!(err, PolicyError::InvalidNumber { index, .. } if index == at),
                    "{bad} at {at}: {err}"
                );
            }
        }
        // Negative zero is zero; a sum that overflows from finite loads is
        // the bound's error, not a bad number.
        let mut loads = vec![1.0; 17];
        loads[3] = -0.0;
        loads[16] = -0.0;
        assert!(MappingInput::new(&loads, &[0.0]).is_ok());
        let huge = vec![f64::MAX / 4.0; 16];
        assert!(matches!(
            MappingInput::new(&huge, &[0.0]).unwrap_err(),
            PolicyError::LoadOverflow { .. }
        ));
    }

    #[test]
    fn rejects_loads_whose_sums_would_overflow() {
        let huge = [f64::MAX, f64::MAX];
        assert!(matches!(
            MappingInput::new(&huge, &[0.0]).unwrap_err(),
            PolicyError::LoadOverflow { .. }
        ));
        let input = MappingInput::new(&[1e300], &[0.0, 0.0]).unwrap();
        assert!(input.with_speeds(&[1.0, 1e-10]).is_err());
    }

    #[test]
    fn rejects_zero_pus_and_all_unavailable() {
        assert_eq!(
            MappingInput::new(&[1.0], &[]).unwrap_err(),
            PolicyError::NoPus
        );
        let err = MappingInput::new(&[1.0], &[0.0, 0.0])
            .unwrap()
            .with_availability(&[false, false])
            .unwrap_err();
        assert_eq!(err, PolicyError::NoAvailablePu(2));
    }

    #[test]
    fn rejects_mismatched_lengths() {
        let input = MappingInput::new(&[1.0, 2.0], &[0.0]).unwrap();
        assert!(matches!(
            input.with_speeds(&[1.0, 1.0]).unwrap_err(),
            PolicyError::LengthMismatch {
                expected: 1,
                found: 2,
                ..
            }
        ));
        assert!(matches!(
            input.with_migratable(&[true]).unwrap_err(),
            PolicyError::LengthMismatch {
                expected: 2,
                found: 1,
                ..
            }
        ));
    }

    #[test]
    fn rejects_bad_speeds_and_placements() {
        let input = MappingInput::new(&[1.0], &[0.0, 0.0]).unwrap();
        assert!(input.with_speeds(&[1.0, 0.0]).is_err());
        assert!(input.with_speeds(&[1.0, f64::NAN]).is_err());
        assert_eq!(
            input.with_current(&[2]).unwrap_err(),
            PolicyError::PuOutOfRange {
                task: 0,
                pu: 2,
                npus: 2
            }
        );
        assert_eq!(
            input.with_migratable(&[false]).unwrap_err(),
            PolicyError::UnplacedUnmigratable { task: 0 }
        );
        let err = input
            .with_current(&[1])
            .unwrap()
            .with_availability(&[true, false])
            .unwrap()
            .with_migratable(&[false])
            .unwrap_err();
        assert_eq!(err, PolicyError::PinnedToUnavailable { task: 0, pu: 1 });
    }

    #[test]
    fn pinned_tasks_count_toward_their_pu_at_its_speed() {
        let input = MappingInput::new(&[4.0, 3.0], &[1.0, 0.0])
            .unwrap()
            .with_speeds(&[2.0, 1.0])
            .unwrap()
            .with_current(&[0, 1])
            .unwrap()
            .with_migratable(&[false, true])
            .unwrap();
        let (placement, loads) = input.pinned_start();
        assert_eq!(placement, vec![0, NO_PU]);
        assert_eq!(loads, vec![3.0, 0.0]);
    }
}
