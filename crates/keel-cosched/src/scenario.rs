//! The paper's verification scenarios (§3.2), run for real on two PEs.
//!
//! The paper used two nodes of two PEs and four-process jobs; this machine
//! has two cores, so every job keeps the paper's structure at half the
//! width (two nodes of one PE):
//!
//! 1. **Fine-grained** (§3.2.1): two identical two-rank ring jobs.
//! 2. **Imbalanced** (§3.2.2, Fig. 3): two two-rank jobs; rank 0 of job 0
//!    computes twice the base amount per step, rank 1 the base; job 1 the
//!    reverse. Both are packed on PEs 0 and 1, so each PE carries one slow
//!    and one fast rank.
//! 3. **Complementing** (§3.2.3, Fig. 4): a two-rank heavy job on PEs 0
//!    and 1 whose rank 0 computes four times the base, beside three
//!    one-rank fillers on PE 1 computing the base amount (the paper's
//!    fillers were two-process jobs on the light node; one rank is their
//!    width here, so they do not communicate).
//!
//! Every rank runs the same number of supersteps; the base amount is
//! [`ScenarioParams::granularity_ms`] of CPU time per step.
//!
//! A scenario by name, its jobs and the policy specs it runs:
//!
//! ```
//! use keel_cosched::scenario::{policy_spec, Scenario, ScenarioParams};
//! let scenario = Scenario::from_name("fine-grained").unwrap();
//! assert_eq!(scenario.jobs(&ScenarioParams::quick()).len(), 2);
//! assert_eq!(policy_spec("gs", 0.05), "gs:t-slice=0.05");
//! assert_eq!(policy_spec("sb", 0.05), "sb");
//! ```

use std::time::Duration;

use crate::bsp::Pattern;
use crate::job::{JobSpec, BSP_COMMAND};
use crate::machine::{Config, JobOutcome, Machine, MachineError, RunReport};

/// The five schedulers, in the paper's table order.
pub const POLICIES: [&str; 5] = ["fcfs", "local", "gs", "sb", "fcs"];

/// Default [`ScenarioParams::max_background`]: 5% of the CPUs.
pub const DEFAULT_MAX_BACKGROUND: f64 = 0.05;
/// Default [`ScenarioParams::retries`].
pub const DEFAULT_RETRIES: usize = 3;

/// The scaled scenarios' parameters, fixed before measuring (see the
/// crate README for the reasons behind each value).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScenarioParams {
    /// Base compute per superstep, ms of CPU time.
    pub granularity_ms: f64,
    /// Supersteps of every rank.
    pub iterations: u64,
    /// Time slice of GS and FCS (and heartbeat period of the others), s.
    pub time_slice: f64,
    /// Communication pattern.
    pub pattern: Pattern,
    /// Repetitions of every (scenario, policy) run; cells are medians.
    pub reps: usize,
    /// A run during which other processes used more than this fraction
    /// of the CPUs ([`RunReport::background_load`]) is run again ...
    pub max_background: f64,
    /// ... up to this many extra times; the least disturbed run counts.
    pub retries: usize,
}

impl ScenarioParams {
    /// The measured configuration: 6 ms steps (one step above the paper's
    /// 5 ms, so that the imbalanced jobs' granularity, 12 ms, and the fast
    /// ranks' compute, 6 ms, sit 20% clear of Table 2's CS_thresh = 10 ms
    /// and F_thresh = 7.5 ms instead of on them), 500 steps (a 3 s job
    /// alone), Table 2's 25 ms slice.
    pub fn full() -> ScenarioParams {
        ScenarioParams {
            granularity_ms: 6.0,
            iterations: 500,
            time_slice: 0.025,
            pattern: Pattern::Ring,
            reps: 1,
            max_background: DEFAULT_MAX_BACKGROUND,
            retries: DEFAULT_RETRIES,
        }
    }

    /// A short version for tests and demos: 40 steps (0.24 s alone); too
    /// short for FCS to classify (10 assigned slots), so it shows the
    /// machinery, not the paper's results.
    pub fn quick() -> ScenarioParams {
        ScenarioParams {
            iterations: 40,
            ..ScenarioParams::full()
        }
    }
}

/// One of the three verification scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// §3.2.1.
    FineGrained,
    /// §3.2.2.
    #[serde(rename = "load-imbalanced")]
    Imbalanced,
    /// §3.2.3.
    Complementing,
}

impl Scenario {
    /// All three, in the paper's order.
    pub const ALL: [Scenario; 3] = [
        Scenario::FineGrained,
        Scenario::Imbalanced,
        Scenario::Complementing,
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::FineGrained => "fine-grained",
            Scenario::Imbalanced => "load-imbalanced",
            Scenario::Complementing => "complementing",
        }
    }

    /// Parses a CLI name; `imbalanced` (the old spelling) is accepted for
    /// [`Scenario::Imbalanced`].
    pub fn from_name(name: &str) -> Result<Scenario, String> {
        if name == "imbalanced" {
            return Ok(Scenario::Imbalanced);
        }
        Scenario::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown scenario `{name}`; valid: {}",
                    Scenario::ALL.map(|s| s.name()).join(", ")
                )
            })
    }

    /// A title like the paper's subsection.
    pub fn title(self) -> &'static str {
        match self {
            Scenario::FineGrained => "§3.2.1 Fine-grained jobs: two 2-rank ring jobs",
            Scenario::Imbalanced => "§3.2.2 Load-imbalanced jobs: ranks computing 2:1 and 1:2",
            Scenario::Complementing => {
                "§3.2.3 Complementing jobs: a 2-rank job (4:1) and three 1-rank fillers on PE 1"
            }
        }
    }

    /// The scenario's jobs.
    pub fn jobs(self, p: &ScenarioParams) -> Vec<JobSpec> {
        let pattern = match p.pattern {
            Pattern::Ring => "ring",
            Pattern::Barrier => "barrier",
        };
        let bsp = |scale: Option<&str>| -> Vec<String> {
            let mut c = vec![
                BSP_COMMAND.to_string(),
                "--iterations".into(),
                p.iterations.to_string(),
                "--granularity-ms".into(),
                p.granularity_ms.to_string(),
                "--pattern".into(),
                pattern.into(),
            ];
            if let Some(s) = scale {
                c.push("--scale".into());
                c.push(s.into());
            }
            c
        };
        match self {
            Scenario::FineGrained => vec![
                JobSpec::new("job0", 2, bsp(None)),
                JobSpec::new("job1", 2, bsp(None)),
            ],
            Scenario::Imbalanced => vec![
                JobSpec::new("job0", 2, bsp(Some("2,1"))),
                JobSpec::new("job1", 2, bsp(Some("1,2"))),
            ],
            Scenario::Complementing => {
                let mut jobs = vec![JobSpec::new("job0", 2, bsp(Some("4,1"))).on_pes(vec![0, 1])];
                for i in 1..=3 {
                    jobs.push(JobSpec::new(&format!("job{i}"), 1, bsp(None)).on_pes(vec![1]));
                }
                jobs
            }
        }
    }
}

/// The policy spec for `name` with the scenario's time slice.
pub fn policy_spec(name: &str, time_slice: f64) -> String {
    match name {
        "gs" | "fcs" => format!("{name}:t-slice={time_slice}"),
        other => other.to_string(),
    }
}

/// One table row: a scheduler's result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// The policy name.
    pub policy: String,
    /// Each job's termination time, s since the workload started (median
    /// over repetitions); `None` if a job did not complete.
    pub jobs: Vec<Option<f64>>,
    /// The latest termination (median over repetitions).
    pub max: Option<f64>,
    /// Each job's final FCS classes, per rank (last repetition).
    pub classes: Vec<Vec<String>>,
    /// Problems worth reporting (failed jobs, refused boosts, ...).
    pub notes: Vec<String>,
    /// The full run reports.
    pub runs: Vec<RunReport>,
}

/// One scenario's table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Table {
    /// Which scenario.
    pub scenario: Scenario,
    /// Its title.
    pub title: String,
    /// The job names, in column order.
    pub job_names: Vec<String>,
    /// One row per scheduler.
    pub rows: Vec<Row>,
}

fn median(v: Vec<f64>) -> Option<f64> {
    keel_policy::stats::median_of(&v)
}

/// Runs `scenario` under each of `policies` with `base` as the machine
/// configuration (its policy and tick are replaced); `progress` is called
/// before each run.
pub fn run_scenario(
    scenario: Scenario,
    params: &ScenarioParams,
    policies: &[String],
    base: &Config,
    mut progress: impl FnMut(&str),
) -> Result<Table, MachineError> {
    let jobs = scenario.jobs(params);
    let mut rows = Vec::new();
    for name in policies {
        let mut config = base.clone();
        config.policy = policy_spec(name, params.time_slice);
        config.tick = params.time_slice;
        if config.time_limit.is_none() {
            // Far beyond any schedule of these jobs, short of a hang.
            let alone = params.iterations as f64 * params.granularity_ms * 1e-3;
            config.time_limit = Some(Duration::from_secs_f64(60.0 + 40.0 * alone));
        }
        let machine = Machine::new(config)?;
        let mut runs = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        for rep in 0..params.reps.max(1) {
            let mut best: Option<RunReport> = None;
            for attempt in 0..=params.retries {
                progress(&format!(
                    "{} / {name} / run {}{}",
                    scenario.name(),
                    rep + 1,
                    if attempt > 0 {
                        format!(" (retry {attempt}: the machine was busy)")
                    } else {
                        String::new()
                    }
                ));
                let r = machine.run(jobs.clone())?;
                let load = r.background_load.unwrap_or(0.0);
                let better = best
                    .as_ref()
                    .is_none_or(|b| load < b.background_load.unwrap_or(0.0));
                if better {
                    best = Some(r);
                }
                if load <= params.max_background {
                    break;
                }
            }
            let r = best.expect("at least one attempt");
            if let Some(load) = r.background_load.filter(|l| *l > params.max_background) {
                notes.push(format!(
                    "run {}: other processes used {:.0}% of the CPUs (over {:.0}%); its times are inflated",
                    rep + 1,
                    load * 100.0,
                    params.max_background * 100.0
                ));
            }
            runs.push(r);
        }
        let per_job: Vec<Option<f64>> = (0..jobs.len())
            .map(|j| {
                let ends: Vec<f64> = runs
                    .iter()
                    .filter(|r| r.jobs[j].outcome == JobOutcome::Completed)
                    .filter_map(|r| r.jobs[j].ended)
                    .collect();
                (ends.len() == runs.len()).then(|| median(ends)).flatten()
            })
            .collect();
        let complete: Vec<f64> = runs
            .iter()
            .filter(|r| r.jobs.iter().all(|j| j.outcome == JobOutcome::Completed))
            .map(|r| r.makespan)
            .collect();
        let max = (complete.len() == runs.len())
            .then(|| median(complete))
            .flatten();
        for r in &runs {
            for j in &r.jobs {
                if j.outcome != JobOutcome::Completed {
                    let n = format!("{}: {:?}", j.name, j.outcome);
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
            }
            for n in &r.notices {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
        }
        let last = runs.last().expect("at least one run");
        rows.push(Row {
            policy: name.clone(),
            jobs: per_job,
            max,
            classes: last.jobs.iter().map(|j| j.classes.clone()).collect(),
            notes,
            runs,
        });
    }
    Ok(Table {
        scenario,
        title: scenario.title().to_string(),
        job_names: jobs.iter().map(|j| j.name.clone()).collect(),
        rows,
    })
}

/// The table as text, like the paper's: Algorithm × per-job termination
/// times × Max, the best Max marked with `*`, then FCS's classes.
pub fn format_table(t: &Table) -> String {
    let mut out = format!("{}\n", t.title);
    out.push_str(&format!("{:<10}", "Algorithm"));
    for (i, _) in t.job_names.iter().enumerate() {
        out.push_str(&format!("{:>9}", format!("Job {i}")));
    }
    // Job times are in seconds too; the caller's note says so.
    out.push_str(&format!("{:>10}\n", "Max (s)"));
    let best = t
        .rows
        .iter()
        .filter_map(|r| r.max)
        .fold(f64::INFINITY, f64::min);
    for r in &t.rows {
        out.push_str(&format!("{:<10}", r.policy.to_uppercase()));
        for j in &r.jobs {
            out.push_str(&match j {
                Some(v) => format!("{v:>9.3}"),
                None => format!("{:>9}", "failed"),
            });
        }
        out.push_str(&match r.max {
            Some(v) if v == best => format!("{:>9.3}*", v),
            Some(v) => format!("{v:>9.3} "),
            None => format!("{:>9} ", "failed"),
        });
        out.push('\n');
    }
    for r in &t.rows {
        if r.policy == "fcs" {
            let classes: Vec<String> = r
                .classes
                .iter()
                .enumerate()
                .map(|(i, c)| format!("job {i}: {}", c.join(",")))
                .collect();
            out.push_str(&format!("FCS final classes: {}\n", classes.join("; ")));
        }
        for n in &r.notes {
            out.push_str(&format!("note ({}): {n}\n", r.policy));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_have_the_papers_shapes() {
        let p = ScenarioParams::full();
        let fine = Scenario::FineGrained.jobs(&p);
        assert_eq!(fine.iter().map(|j| j.ranks).collect::<Vec<_>>(), vec![2, 2]);
        let imb = Scenario::Imbalanced.jobs(&p);
        assert!(imb[0].command.join(" ").contains("--scale 2,1"));
        assert!(imb[1].command.join(" ").contains("--scale 1,2"));
        let comp = Scenario::Complementing.jobs(&p);
        assert_eq!(comp.len(), 4);
        assert_eq!(comp[0].pes, Some(vec![0, 1]));
        assert!(comp[1..]
            .iter()
            .all(|j| j.ranks == 1 && j.pes == Some(vec![1])));
        assert_eq!(Scenario::from_name("imbalanced"), Ok(Scenario::Imbalanced));
        assert!(Scenario::from_name("x")
            .unwrap_err()
            .contains("fine-grained"));
    }

    #[test]
    fn gang_policies_get_the_slice() {
        assert_eq!(policy_spec("fcs", 0.05), "fcs:t-slice=0.05");
        assert_eq!(policy_spec("sb", 0.05), "sb");
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
