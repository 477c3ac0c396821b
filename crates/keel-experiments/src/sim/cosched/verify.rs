//! `verify` (§3.2's tables), `verify --scaled` (the real runs' scenarios in
//! the model, against their real runs) and the demo's coscheduling table.

use std::path::Path;

use keel_cosched::scenario::{self as real, ScenarioParams};
use keel_sim::cluster::scenarios::{run_table, ScenarioTable, VERIFY_POLICIES};
use keel_sim::cluster::{scenarios, CoschedModel, OsModel};
use keel_workloads::bsp;
use serde::Serialize;

use super::{pick, sim_error, tables, AgainstRow, AgainstTable, CoschedSetup, TablesReport};
use crate::error::{ExperimentError, Result};
use crate::sim::Progress;

/// §3.2's verification tables (`scenario`: `all`, `fine-grained`,
/// `load-imbalanced` or `complementing`) under the paper's schedulers.
pub fn verify(
    scenario: &str,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TablesReport> {
    // `imbalanced` is the old spelling `keel cosched run` used.
    let scenario = match scenario {
        "imbalanced" => "load-imbalanced",
        other => other,
    };
    let chosen = pick(scenario, scenarios::verification_scenarios(), "--scenario")?;
    tables(
        chosen,
        &VERIFY_POLICIES,
        OsModel::linux_2_4(),
        common,
        progress,
    )
}

/// The real runs' policy specs: `keel cosched run`'s five schedulers with
/// its time slice.
pub fn scaled_policies() -> Vec<String> {
    let slice = ScenarioParams::full().time_slice;
    real::POLICIES
        .iter()
        .map(|p| real::policy_spec(p, slice))
        .collect()
}

/// The scaled scenarios `name` stands for (`imbalanced` and the names
/// without `scaled-` are accepted).
fn scaled_scenarios(name: &str) -> Result<Vec<bsp::BspScenario>> {
    let name = match name {
        "all" => "all".to_string(),
        "imbalanced" | "load-imbalanced" => "scaled-load-imbalanced".to_string(),
        n if n.starts_with("scaled-") => n.to_string(),
        n => format!("scaled-{n}"),
    };
    pick(&name, bsp::scaled_verification(), "--scenario")
}

/// `verify --scaled`: the real runs' scenarios (2 nodes × 1 PE) in the
/// model, on this machine's kernel unless the setup names one.
pub fn verify_scaled(
    scenario: &str,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TablesReport> {
    let chosen = scaled_scenarios(scenario)?;
    let defaults = scaled_policies();
    let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
    tables(chosen, &defaults, OsModel::host(), common, progress)
}

/// `verify --scaled --against FILE`: the scaled tables, each against the
/// real runs of `keel cosched run --json-file` in `file` (read first: a bad
/// file fails before minutes of simulation).
pub fn verify_against(
    scenario: &str,
    file: &Path,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(TablesReport, Vec<AgainstTable>)> {
    let chosen = scaled_scenarios(scenario)?;
    let real_runs = read_real_runs(file)?;
    let defaults = scaled_policies();
    let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
    let report = tables(chosen, &defaults, OsModel::host(), common, progress)?;
    let against = report
        .tables
        .iter()
        .map(|t| compare_with_real(t, &real_runs))
        .collect::<Result<Vec<_>>>()?;
    Ok((report, against))
}

/// Per real scenario name, each scheduler's Max and run makespans.
pub type RealRuns = Vec<(String, Vec<(String, f64, Vec<f64>)>)>;

/// Reads a `keel cosched run --json-file` document.
pub fn read_real_runs(file: &Path) -> Result<RealRuns> {
    let bad =
        |why: String| ExperimentError::Invalid(format!("--against {}: {why}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON ({e}); expected `keel cosched run --json-file` output"
        ))
    })?;
    let tables = doc["tables"].as_array().ok_or_else(|| {
        bad("no `tables` array; expected `keel cosched run --json-file` output".into())
    })?;
    let mut out = Vec::new();
    for t in tables {
        let scenario = t["scenario"]
            .as_str()
            .ok_or_else(|| bad("a table without a `scenario` name".into()))?;
        let mut rows = Vec::new();
        for r in t["rows"].as_array().into_iter().flatten() {
            let policy = r["policy"]
                .as_str()
                .ok_or_else(|| bad(format!("{scenario}: a row without a `policy`")))?;
            // A scheduler whose runs did not all complete has no Max.
            let Some(max) = r["max"].as_f64() else {
                continue;
            };
            let runs = r["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|run| run["makespan"].as_f64())
                .collect();
            rows.push((policy.to_string(), max, runs));
        }
        // Files written before the scenario's rename say `imbalanced`.
        let scenario = real::Scenario::from_name(scenario).map_or(scenario, |s| s.name());
        out.push((scenario.to_string(), rows));
    }
    Ok(out)
}

/// The simulated table `t` against its real runs.
fn compare_with_real(t: &ScenarioTable, real_runs: &RealRuns) -> Result<AgainstTable> {
    let name = real_scenario(&t.scenario).name();
    let (_, real_rows) = real_runs.iter().find(|(s, _)| s == name).ok_or_else(|| {
        ExperimentError::Invalid(format!(
            "--against: the real runs have no `{name}` scenario (run `keel cosched run` with it)"
        ))
    })?;
    let rows: Vec<AgainstRow> = t
        .rows
        .iter()
        .filter_map(|r| {
            let (_, real_max, runs) = real_rows.iter().find(|(p, _, _)| *p == r.policy)?;
            Some(AgainstRow {
                policy: r.policy.clone(),
                real_max: *real_max,
                real_runs: runs.clone(),
                simulated_max: r.max,
                error_percent: (r.max - real_max) / real_max * 100.0,
            })
        })
        .collect();
    let range = |r: &AgainstRow| {
        let lo = r.real_runs.iter().copied().fold(r.real_max, f64::min);
        let hi = r.real_runs.iter().copied().fold(r.real_max, f64::max);
        (lo, hi)
    };
    let mut against = AgainstTable {
        scenario: t.scenario.clone(),
        rows: Vec::new(),
        pairs: 0,
        pairs_alike: 0,
        separated_pairs: 0,
        separated_alike: 0,
        disagreements: Vec::new(),
    };
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            let alike = (a.real_max < b.real_max) == (a.simulated_max < b.simulated_max);
            let (a_lo, a_hi) = range(a);
            let (b_lo, b_hi) = range(b);
            let separated = a_hi < b_lo || b_hi < a_lo;
            against.pairs += 1;
            against.pairs_alike += usize::from(alike);
            against.separated_pairs += usize::from(separated);
            against.separated_alike += usize::from(separated && alike);
            if !alike {
                against
                    .disagreements
                    .push((a.policy.clone(), b.policy.clone(), separated));
            }
        }
    }
    against.rows = rows;
    Ok(against)
}

/// The real scenario a scaled simulated one stands for.
fn real_scenario(name: &str) -> real::Scenario {
    match name.trim_start_matches("scaled-") {
        "fine-grained" => real::Scenario::FineGrained,
        "complementing" => real::Scenario::Complementing,
        _ => real::Scenario::Imbalanced,
    }
}

/// A simulated table in `keel cosched run`'s form (FCS's classes are the
/// ones each rank held longest).
pub fn as_real_table(t: &ScenarioTable) -> real::Table {
    real::Table {
        scenario: real_scenario(&t.scenario),
        title: t.title.clone(),
        job_names: t.jobs.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| real::Row {
                policy: r.policy.clone(),
                jobs: r.ends.iter().map(|&e| Some(e)).collect(),
                max: Some(r.max),
                classes: r
                    .classes
                    .iter()
                    .map(|c| c.iter().map(|x| x.to_string()).collect())
                    .collect(),
                notes: Vec::new(),
                runs: Vec::new(),
            })
            .collect(),
    }
}

/// The policies of the demo's coscheduling section.
const DEMO_POLICIES: [&str; 3] = ["gs", "sb", "fcs"];

/// The demo's coscheduling section: the scaled load-imbalanced scenario
/// (the one `keel cosched run` runs for real) under GS, SB and FCS.
#[derive(Debug, Clone, Serialize)]
pub struct CoschedDemo {
    /// The simulated table.
    pub table: ScenarioTable,
    /// Perfect packing of the jobs' compute on the PEs, seconds.
    pub perfect_packing: f64,
    /// One job alone on the machine, seconds.
    pub alone: f64,
}

/// Simulates [`CoschedDemo`].
pub fn demo_table() -> Result<CoschedDemo> {
    let scenario = bsp::scaled_load_imbalanced();
    // The seed `keel sim cosched verify --scaled` uses by default, so the
    // demo's numbers are that table's.
    let mut model = CoschedModel::new(scenario.nodes, scenario.pes_per_node)
        .map_err(sim_error)?
        .with_seed(1);
    model.os = OsModel::host();
    let slice = ScenarioParams::full().time_slice;
    let specs: Vec<String> = DEMO_POLICIES
        .iter()
        .map(|p| real::policy_spec(p, slice))
        .collect();
    let table = run_table(&scenario, &model, &specs, &mut || {}).map_err(sim_error)?;
    Ok(CoschedDemo {
        table,
        perfect_packing: scenarios::ideal_time(&scenario.jobs, scenario.pes()),
        alone: scenario.jobs[0].dedicated_time(0.0),
    })
}
