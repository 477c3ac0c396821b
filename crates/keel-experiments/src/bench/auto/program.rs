//! One configuration's run of a workload, advanced step by step, and the
//! interleaving of a repeat's configurations.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use crate::evaluation::oracle::LoopTimes;
use keel::loops::{record, LoopId, LoopRecord};
use keel::policy::select;
use keel_workloads::steps::SteppedWorkload;

use crate::error::{ExperimentError, Result};

/// One run of a program: the time of every loop call, in program order, and
/// the record of every loop afterwards.
pub(super) struct ProgramRun {
    pub(super) times: Vec<f64>,
    pub(super) records: Vec<(String, LoopRecord)>,
}

impl ProgramRun {
    pub(super) fn total(&self) -> f64 {
        self.times.iter().sum()
    }
}

/// A configuration's total over its repeats, estimated the way Oracle and
/// the fixed configurations are: the sum over instances of each instance's
/// median across the repeats. A method compared by the median of its
/// repeat totals instead would carry every repeat's slow bursts against an
/// Oracle whose per-instance medians filter them out (measured here on
/// LavaMD: the two estimates of the same repeats differed by 1–4 %, and
/// by more, either way, when one repeat ran slow throughout).
pub(super) fn sum_of_instance_medians(runs: &[ProgramRun]) -> Result<f64> {
    // One "schedule" (this configuration) per repeat: `LoopTimes` takes the
    // element-wise medians exactly as it does for the fixed configurations.
    let repeats: Vec<Vec<Vec<f64>>> = runs.iter().map(|r| vec![r.times.clone()]).collect();
    Ok(LoopTimes::from_repeats(&repeats)?.total(0))
}

/// How a fixed configuration sets the chunk.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum ChunkMode {
    Default,
    Expert,
}

/// One configuration's run of a program, advanced a step at a time so that
/// the configurations of a repeat can take turns step by step.
pub(super) struct Program<'a> {
    schedule: &'a str,
    chunk: ChunkMode,
    tag: String,
    ids: HashMap<&'static str, String>,
    times: Vec<f64>,
}

impl<'a> Program<'a> {
    pub(super) fn new(schedule: &'a str, chunk: ChunkMode, tag: String) -> Self {
        Program {
            schedule,
            chunk,
            tag,
            ids: HashMap::new(),
            times: Vec::new(),
        }
    }

    /// Runs the loop calls of `step`, timing each whole call.
    pub(super) fn step(
        &mut self,
        w: &dyn SteppedWorkload,
        step: usize,
        threads: usize,
    ) -> Result<()> {
        let schedule: keel::Schedule = self.schedule.parse().map_err(|e| {
            ExperimentError::Invalid(format!("{}: {}", self.schedule, keel::LoopError::from(e)))
        })?;
        for (c, call) in w.calls(step).iter().enumerate() {
            let tag = &self.tag;
            let id = self
                .ids
                .entry(call.name)
                .or_insert_with(|| format!("{tag}/{}", call.name))
                .clone();
            let mut l = keel::parallel(0..call.iterations)
                .schedule(schedule.clone())
                .id(id)
                // The run's records are read at its end, fixed schedules'
                // as well as `auto`'s.
                .recorded();
            if self.chunk == ChunkMode::Expert {
                if let Some(k) = select::expert_chunk(call.iterations as u64, threads) {
                    l = l.chunk(k);
                }
            }
            let started = Instant::now();
            l.try_for_each(|i| {
                black_box(w.run(step, c, i));
            })
            .map_err(|e| ExperimentError::Invalid(format!("{}: {e}", self.schedule)))?;
            self.times.push(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    pub(super) fn finish(self) -> ProgramRun {
        let records = self
            .ids
            .iter()
            .filter_map(|(name, id)| {
                record(LoopId::named(id.clone())).map(|r| (name.to_string(), r))
            })
            .collect();
        ProgramRun {
            times: self.times,
            records,
        }
    }
}

/// Runs `programs` over the whole workload, taking turns step by step (the
/// order rotating by one each step): a slow phase of a shared machine then
/// falls on the same steps of every configuration, so per-instance
/// comparisons (Oracle, the methods against it) pair instances run
/// moments apart instead of minutes apart.
pub(super) fn run_interleaved(
    w: &dyn SteppedWorkload,
    programs: &mut [Program<'_>],
    threads: usize,
) -> Result<()> {
    let count = programs.len();
    for step in 0..w.steps() {
        for turn in 0..count {
            programs[(turn + step) % count].step(w, step, threads)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(times: &[f64]) -> ProgramRun {
        ProgramRun {
            times: times.to_vec(),
            records: Vec::new(),
        }
    }

    #[test]
    fn a_total_is_the_sum_of_per_instance_medians_not_the_median_total() {
        // Each repeat has one slow burst, on a different instance: the
        // per-instance medians filter all three out, the repeat totals
        // (all 4.0) do not.
        let runs = [
            run(&[2.0, 1.0, 1.0]),
            run(&[1.0, 2.0, 1.0]),
            run(&[1.0, 1.0, 2.0]),
        ];
        assert_eq!(sum_of_instance_medians(&runs).unwrap(), 3.0);
        assert!(runs.iter().all(|r| r.total() == 4.0));
        // An even number of repeats takes the mean of the middle two.
        let runs = [run(&[1.0, 4.0]), run(&[3.0, 2.0])];
        assert_eq!(sum_of_instance_medians(&runs).unwrap(), 2.0 + 3.0);
        // No repeat is a typed error (the bench never asks: --reps ≥ 1).
        assert!(sum_of_instance_medians(&[]).is_err());
    }
}
