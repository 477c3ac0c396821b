//! Running policies on one problem and reporting what they decided, as an
//! aligned table or as JSON. `keel map` and the demo share it, so the demo
//! prints exactly what `keel map` would for the same workload.

use std::io::Write;
use std::time::Instant;

use keel_policy::metrics::{self, MappingMetrics};
use keel_policy::{Concept, Mapping, MappingPolicy, PolicyError, NO_PU};
use keel_workloads::MappingProblem;
use serde::Serialize;

use crate::error::CliError;

/// Lines of an aligned table: the first column left-aligned, the others
/// right-aligned, two spaces between columns, indented by two, no trailing
/// spaces (`keel::table`'s layout for the command's tables).
pub use keel::table::align;

/// One policy's decision and how good it is.
#[derive(Debug)]
pub struct Outcome {
    /// The policy spec as the user wrote it (`current` for the starting mapping).
    pub spec: String,
    /// Wall time of the `map` call, seconds; `None` for the starting mapping.
    pub decision_seconds: Option<f64>,
    /// The decision's metrics against the problem.
    pub metrics: MappingMetrics,
    /// The decision.
    pub mapping: Vec<usize>,
}

/// Every policy's outcome on one problem.
#[derive(Debug)]
pub struct Comparison {
    /// The starting mapping, evaluated like a decision, when every task has one.
    pub current: Option<Outcome>,
    /// One outcome per policy that decided, in the order asked.
    pub outcomes: Vec<Outcome>,
    /// The policies that refused the input, in the order asked, with why.
    pub failures: Vec<(String, PolicyError)>,
}

impl Comparison {
    /// `Ok` when every policy decided; otherwise [`CliError::Partial`]
    /// naming each failed policy. `missing` says what the user must add to
    /// the input for a concept the input lacks (e.g. a `current_pu` column
    /// for the current mapping), when there is such a thing to add.
    pub fn check(&self, missing: &dyn Fn(&Concept) -> Option<String>) -> Result<(), CliError> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let failed = self
            .failures
            .iter()
            .map(|(spec, e)| {
                let hint = match e {
                    PolicyError::UnmetRequirement { requirement, .. } => missing(requirement)
                        .map_or(String::new(), |add| format!("; to run it, {add}")),
                    _ => String::new(),
                };
                format!("{spec}: {e}{hint}")
            })
            .collect();
        Err(CliError::Partial {
            what: "policies",
            total: self.outcomes.len() + self.failures.len(),
            failed,
        })
    }
}

/// Builds every policy first (so a bad spec fails before any work), then
/// runs each on `problem` through its context handler, timing the `map` call.
/// A policy that refuses the input is kept in [`Comparison::failures`]; the
/// others still run.
pub fn compare(problem: &MappingProblem, specs: &[&str]) -> Result<Comparison, CliError> {
    let registry = keel_policy::mapping::registry();
    let policies: Vec<(&str, Box<dyn MappingPolicy>)> = specs
        .iter()
        .map(|&spec| Ok((spec.trim(), registry.build(spec)?)))
        .collect::<Result<_, CliError>>()?;
    let input = problem.input()?;
    let current = match &problem.current {
        Some(placement) if !placement.contains(&NO_PU) => {
            let mapping = Mapping::new(placement.clone(), problem.npus())?;
            Some(Outcome {
                spec: "current".to_string(),
                decision_seconds: None,
                metrics: metrics::evaluate(&input, &mapping),
                mapping: mapping.into_vec(),
            })
        }
        _ => None,
    };
    let ctx = problem.context();
    let mut outcomes = Vec::with_capacity(policies.len());
    let mut failures = Vec::new();
    for (spec, policy) in policies {
        let start = Instant::now();
        let decision = policy.map(&ctx);
        let seconds = start.elapsed().as_secs_f64();
        let mapping = match decision {
            Ok(mapping) => mapping,
            Err(e) => {
                failures.push((spec.to_string(), e));
                continue;
            }
        };
        outcomes.push(Outcome {
            spec: spec.to_string(),
            decision_seconds: Some(seconds),
            metrics: metrics::evaluate(&input, &mapping),
            mapping: mapping.into_vec(),
        });
    }
    Ok(Comparison {
        current,
        outcomes,
        failures,
    })
}

/// One line describing the problem.
pub fn write_summary(
    out: &mut dyn Write,
    source: &str,
    problem: &MappingProblem,
) -> Result<(), CliError> {
    let available = problem
        .pu_available
        .as_ref()
        .map_or(problem.npus(), |a| a.iter().filter(|&&x| x).count());
    let start = match &problem.current {
        None => "none",
        Some(c) if c.contains(&NO_PU) => "partial",
        Some(_) => "given",
    };
    writeln!(
        out,
        "{source}: {} tasks, {} PUs ({available} available), total load {}, current mapping: {start}",
        problem.ntasks(),
        problem.npus(),
        sig(problem.total_load()),
    )?;
    Ok(())
}

const HEADER: [&str; 9] = [
    "policy",
    "makespan",
    "mean",
    "λ (%)",
    "LIB (%)",
    "of bound (%)",
    "migrations",
    "splits",
    "decision",
];

fn row(o: &Outcome, time: &dyn Fn(f64) -> String) -> [String; 9] {
    let m = &o.metrics;
    [
        o.spec.clone(),
        time(m.makespan),
        time(m.mean),
        format!("{:.2}", m.lambda * 100.0),
        format!("{:.2}", m.lib_percent),
        format!("{:.2}", m.percent_of_bound()),
        m.migrations.map_or("-".to_string(), |n| n.to_string()),
        m.splits.to_string(),
        o.decision_seconds.map_or("-".to_string(), duration),
    ]
}

/// The comparison as an aligned table: the policy column left-aligned,
/// numbers right-aligned, the starting mapping first when there is one.
/// Makespan and mean share one number of decimals (four significant digits
/// of the largest makespan) so that their decimal points line up.
pub fn write_table(out: &mut dyn Write, cmp: &Comparison) -> Result<(), CliError> {
    let all = || cmp.current.iter().chain(&cmp.outcomes);
    let largest = all().map(|o| o.metrics.makespan).fold(0.0, f64::max);
    let time = |x: f64| match decimals_for(largest) {
        Some(decimals) => format!("{x:.decimals$}"),
        None => sig(x),
    };
    let mut rows = vec![HEADER.map(String::from)];
    rows.extend(all().map(|o| row(o, &time)));
    for line in align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Each decision's mapping, one line per policy: the PU of each task in
/// task order, or `id=PU` pairs when the trace names its tasks.
pub fn write_mappings(
    out: &mut dyn Write,
    cmp: &Comparison,
    task_ids: Option<&[String]>,
) -> Result<(), CliError> {
    for o in &cmp.outcomes {
        let pus: Vec<String> = match task_ids {
            Some(ids) => ids
                .iter()
                .zip(&o.mapping)
                .map(|(id, pu)| format!("{id}={pu}"))
                .collect(),
            None => o.mapping.iter().map(usize::to_string).collect(),
        };
        writeln!(out, "mapping of {}: {}", o.spec, pus.join(" "))?;
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonReport<'a> {
    source: &'a str,
    tasks: usize,
    pus: usize,
    total_load: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_ids: Option<&'a [String]>,
    current: Option<JsonOutcome<'a>>,
    results: Vec<JsonOutcome<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<JsonFailure>,
}

#[derive(Serialize)]
struct JsonFailure {
    policy: String,
    error: String,
}

#[derive(Serialize)]
struct JsonOutcome<'a> {
    policy: &'a str,
    decision_seconds: Option<f64>,
    percent_of_bound: f64,
    metrics: &'a MappingMetrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    mapping: Option<&'a [usize]>,
}

/// The comparison as one JSON document.
pub fn write_json(
    out: &mut dyn Write,
    source: &str,
    problem: &MappingProblem,
    cmp: &Comparison,
    show_mapping: bool,
) -> Result<(), CliError> {
    fn outcome(o: &Outcome, show_mapping: bool) -> JsonOutcome<'_> {
        JsonOutcome {
            policy: &o.spec,
            decision_seconds: o.decision_seconds,
            percent_of_bound: o.metrics.percent_of_bound(),
            metrics: &o.metrics,
            mapping: show_mapping.then_some(o.mapping.as_slice()),
        }
    }
    let report = JsonReport {
        source,
        tasks: problem.ntasks(),
        pus: problem.npus(),
        total_load: problem.total_load(),
        task_ids: problem.task_ids.as_deref().filter(|_| show_mapping),
        current: cmp.current.as_ref().map(|o| outcome(o, show_mapping)),
        results: cmp
            .outcomes
            .iter()
            .map(|o| outcome(o, show_mapping))
            .collect(),
        failed: cmp
            .failures
            .iter()
            .map(|(spec, e)| JsonFailure {
                policy: spec.clone(),
                error: e.to_string(),
            })
            .collect(),
    };
    // Compact: mappings can hold millions of entries, and jq pretty-prints.
    serde_json::to_writer(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}

/// A number with four significant digits, in plain notation where that
/// stays short (loads are seconds for generated workloads, any unit for traces).
pub fn sig(x: f64) -> String {
    match decimals_for(x) {
        _ if x == 0.0 => "0".to_string(),
        Some(decimals) => format!("{x:.decimals$}"),
        None => format!("{x:.3e}"),
    }
}

/// Decimals giving `x` four significant digits, or `None` where plain
/// notation would be too long or too short.
fn decimals_for(x: f64) -> Option<usize> {
    let magnitude = x.abs();
    (1e-3..1e7)
        .contains(&magnitude)
        .then(|| (3 - magnitude.log10().floor() as i32).max(0) as usize)
}

/// A duration in the unit that keeps it readable.
///
/// Every table shows durations through this one helper: seconds, or `ms`
/// and `µs` where that reads better, the unit always in the cell.
pub fn duration(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.1} µs", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{seconds:.3} s")
    }
}

/// How a figure compares with the target a paper sets for it, in a note:
/// `meets` or `misses` (the JSON keeps the boolean).
pub fn meets(met: bool) -> &'static str {
    if met {
        "meets"
    } else {
        "misses"
    }
}

/// The footnote under a table with a figure flagged by [`ratio`].
pub const BELOW_IDEAL_NOTE: &str = "! below its own ideal (ratio < 0.97): impossible by construction, so a measurement artefact (a noisy reference time or the timer), not a faster-than-ideal run";

/// A ratio to an ideal, two decimals, marked `!` when it is impossibly
/// low (`keel_experiments::bench::IDEAL_TOLERANCE`).
pub fn ratio(x: f64, below_ideal: bool) -> String {
    if below_ideal {
        format!("{x:.2}!")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(7.0), "7.000");
        assert_eq!(sig(0.12071), "0.1207");
        assert_eq!(sig(1234.4), "1234");
        assert_eq!(sig(123456.0), "123456");
        assert_eq!(sig(2.5e-5), "2.500e-5");
        assert_eq!(sig(3e9), "3.000e9");
        assert_eq!(duration(2.5e-6), "2.5 µs");
        assert_eq!(duration(0.0125), "12.50 ms");
        assert_eq!(duration(1.5), "1.500 s");
    }

    #[test]
    fn impossible_ratios_are_marked() {
        assert_eq!(ratio(0.934, true), "0.93!");
        assert_eq!(ratio(1.204, false), "1.20");
    }

    #[test]
    fn the_table_is_aligned() {
        let problem = MappingProblem::new(
            vec![3.0, 3.0, 2.0, 2.0, 2.0],
            2,
            keel_policy::Model::Dynamic,
        );
        let cmp = compare(&problem, &["greedy", "binlpt:chunks=2"]).unwrap();
        let mut out = Vec::new();
        write_table(&mut out, &cmp).unwrap();
        let text = String::from_utf8(out).unwrap();
        let widths: Vec<usize> = text.lines().map(|l| l.chars().count()).collect();
        assert_eq!(widths.len(), 3, "{text}");
        assert!(widths.iter().all(|&w| w == widths[0]), "{text}");
    }
}
