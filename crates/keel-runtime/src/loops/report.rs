//! A per-loop report of the recorded instances: the table a program (or
//! `keel omp report`, for an OpenMP program run under `libkeel_omp.so`)
//! prints to show where its loops spent their time, how balanced they
//! ran, and which schedules they ran over time.
//!
//! A report is plain data with `serde` on both sides, so a process can
//! write it (as JSON) and a tool read it back.

use serde::{Deserialize, Serialize};

use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::SelectionCost;

use super::record::{all_records, LoopId, LoopRecord, ScheduleRun};

/// One loop's line in a report.
///
/// ```
/// use keel::loops::{report, LoopId, LoopReport};
///
/// for _ in 0..3 {
///     keel::parallel(0..100u32)
///         .schedule("guided".parse()?)
///         .id("doc-report")
///         .recorded()
///         .for_each(|_| {});
/// }
/// let line = report().into_iter().find(|l| l.name == "doc-report").unwrap();
/// assert_eq!(line.instances, 3);
/// assert_eq!(line.schedules[0].schedule, "gss");
/// assert_eq!(line.schedules[0].instances, 3);
/// assert!(line.total_time > 0.0);
/// # Ok::<(), keel::loops::ScheduleError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopReport {
    /// The loop's name (its [`LoopId`] as text).
    pub name: String,
    /// Recorded instances (under `auto`, those it measured: short loops
    /// are measured once in a few instances, and the selection's runs
    /// count every instance).
    pub instances: u64,
    /// Σ T_par over the recorded instances, in seconds.
    pub total_time: f64,
    /// The mean of the instances' LIB, in percent.
    pub mean_lib_percent: f64,
    /// Participants of the latest instance.
    pub threads: usize,
    /// Iterations of the latest instance.
    pub iterations: u64,
    /// The schedule of every instance, run-length encoded
    /// ([`LoopRecord::schedules`]).
    pub schedules: Vec<ScheduleRunReport>,
    /// Instances whose schedule run was not kept.
    pub schedule_runs_dropped: u64,
    /// Under `auto[,method]`: its decisions and why.
    pub selection: Option<SelectionReport>,
}

/// Consecutive instances that ran one schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRunReport {
    /// The schedule's canonical spec.
    pub schedule: String,
    /// Instances in the run.
    pub instances: u64,
}

/// What a selection method (`auto[,method]`) decided over a loop's
/// instances.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionReport {
    /// `keel`, `expert`, `exhaustive` or `random`.
    pub method: String,
    /// Instances spent trying schedules out.
    pub exploration_instances: u64,
    /// Changes of decision not kept (the timeline's capacity).
    pub dropped: u64,
    /// The decisions, run-length encoded.
    pub runs: Vec<SelectionRunReport>,
    /// What selection cost the loop: its time, its exploration
    /// instances' time and their excess over the settled schedule's (absent
    /// from reports written before it was kept).
    #[serde(default)]
    pub cost: Option<SelectionCost>,
    /// Why the latest search ended (`imbalance bound`, `last survivor`,
    /// …), once one has.
    #[serde(default)]
    pub settled_by: Option<String>,
}

/// Consecutive instances with one selected schedule and one reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionRunReport {
    /// The run's first instance (0-based).
    pub first: u64,
    /// Instances in the run.
    pub instances: u64,
    /// The portfolio schedule chosen.
    pub schedule: String,
    /// Why (`explore`, `exploit`, `table-1`, …).
    pub reason: String,
}

impl LoopReport {
    /// The report line of loop `id` from its record.
    pub fn of(id: &LoopId, record: &LoopRecord) -> Self {
        let run = |r: &ScheduleRun| ScheduleRunReport {
            schedule: r.schedule.clone(),
            instances: r.instances,
        };
        LoopReport {
            name: id.to_string(),
            instances: record.instances,
            total_time: record.total_time,
            mean_lib_percent: record.mean_lib_percent,
            threads: record.last.threads,
            iterations: record.last.iterations,
            schedules: record.schedules.iter().map(run).collect(),
            schedule_runs_dropped: record.schedule_runs_dropped,
            selection: record.selection.as_ref().map(|timeline| SelectionReport {
                method: timeline.method.to_string(),
                exploration_instances: timeline.exploration_instances,
                dropped: timeline.dropped,
                cost: Some(timeline.cost),
                settled_by: timeline.settled_by.map(|s| s.label().to_string()),
                runs: timeline
                    .runs
                    .iter()
                    .map(|r| SelectionRunReport {
                        first: r.first,
                        instances: r.len,
                        schedule: AUTO4OMP_PORTFOLIO
                            .get(r.index)
                            .map_or_else(|| format!("#{}", r.index), |s| s.to_string()),
                        reason: r.phase.label().to_string(),
                    })
                    .collect(),
            }),
        }
    }
}

/// The report of every loop with a recorded instance, the loop that took
/// the most time first (then by name).
pub fn report() -> Vec<LoopReport> {
    let mut lines: Vec<LoopReport> = all_records()
        .iter()
        .map(|(id, record)| LoopReport::of(id, record))
        .collect();
    lines.sort_by(|a, b| {
        b.total_time
            .total_cmp(&a.total_time)
            .then_with(|| a.name.cmp(&b.name))
    });
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::record;

    #[test]
    fn schedule_history_is_run_length_encoded_and_bounded() {
        let id = LoopId::named("report-history");
        let run = |spec: &str| {
            crate::parallel(0..64u32)
                .schedule(spec.parse().unwrap())
                .id("report-history")
                .recorded()
                .for_each(|_| {});
        };
        for spec in ["static", "static", "guided", "static"] {
            run(spec);
        }
        let rec = record(id.clone()).unwrap();
        let line = LoopReport::of(&id, &rec);
        let runs: Vec<(&str, u64)> = line
            .schedules
            .iter()
            .map(|r| (r.schedule.as_str(), r.instances))
            .collect();
        assert_eq!(runs, [("static", 2), ("gss", 1), ("static", 1)]);
        assert_eq!(line.instances, 4);
        assert!(line.total_time > 0.0 && line.total_time.is_finite());
        assert!((0.0..=100.0).contains(&line.mean_lib_percent));

        // Past the capacity, later instances are counted, not stored, and
        // no earlier run grows by instances that came after a dropped one.
        for i in 0..(crate::loops::SCHEDULE_RUNS as u32 + 3) {
            run(if i % 2 == 0 { "guided" } else { "static" });
        }
        let rec = record(id.clone()).unwrap();
        assert_eq!(rec.schedules.len(), crate::loops::SCHEDULE_RUNS);
        let kept: u64 = rec.schedules.iter().map(|r| r.instances).sum();
        assert_eq!(kept + rec.schedule_runs_dropped, rec.instances);
        assert!(rec.schedule_runs_dropped > 0);
        run("static");
        let after = record(id.clone()).unwrap();
        assert_eq!(after.schedules, rec.schedules);
        assert_eq!(after.schedule_runs_dropped, rec.schedule_runs_dropped + 1);
    }

    #[test]
    fn auto_reports_its_selection_with_portfolio_names() {
        for _ in 0..20 {
            crate::parallel(0..256u32)
                .schedule("auto".parse().unwrap())
                .id("report-auto")
                .for_each(|_| {});
        }
        let line = report()
            .into_iter()
            .find(|l| l.name == "report-auto")
            .unwrap();
        let selection = line.selection.clone().expect("auto keeps a timeline");
        assert_eq!(selection.method, "keel");
        let counted: u64 = selection.runs.iter().map(|r| r.instances).sum();
        assert!(counted <= 20);
        if selection.dropped == 0 {
            assert_eq!(counted, 20);
        }
        for run in &selection.runs {
            assert!(
                AUTO4OMP_PORTFOLIO.contains(&run.schedule.as_str()),
                "{run:?}"
            );
        }
        let json = serde_json::to_string(&line).unwrap();
        let back: LoopReport = serde_json::from_str(&json).unwrap();
        // serde_json's float parsing may differ in the last bit: the
        // numbers are compared to a relative 1e-12, the rest exactly.
        let (sel, back_sel) = (
            line.selection.as_ref().unwrap(),
            back.selection.as_ref().unwrap(),
        );
        assert_eq!(back_sel.runs, sel.runs);
        assert_eq!(back_sel.settled_by, sel.settled_by);
        let (cost, back_cost) = (sel.cost.unwrap(), back_sel.cost.unwrap());
        assert_eq!(back_cost.unmeasured_instances, cost.unmeasured_instances);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
        assert!(close(back_cost.loop_seconds, cost.loop_seconds));
        assert!(close(
            back_cost.exploration_excess_seconds,
            cost.exploration_excess_seconds
        ));
        assert_eq!(back.instances, line.instances);
        // A loop this short is measured only now and then; the selection's
        // runs count every instance.
        assert!((1..=20).contains(&back.instances), "{}", back.instances);
    }
}
