//! The paper's experiments (§3.2–3.4) in the cluster model: each
//! scenario of `keel_workloads::bsp` under several policies, laid out as
//! the paper's tables (Algorithm × Job 0 / Job 1 / … / Max, termination
//! times in seconds from the common launch) beside the paper's own
//! figures, with the checks the paper's text makes: which scheduler is
//! best, how far FCS is from it, and whether the schedulers come in the
//! paper's order. Fig. 5's sweep returns one point per (pattern,
//! granularity, variability, policy) and [`fig5_findings`] checks the
//! paper's five observations on it.
//!
//! The paper's figures below are copied from its tables; they are never
//! used by the model, only printed beside its results.
//!
//! A scenario, the paper's table for it and the model it runs on:
//!
//! ```
//! use keel_sim::cluster::scenarios::{model_for, paper_table};
//! use keel_workloads::bsp::fine_grained;
//! let scenario = fine_grained();
//! let table = paper_table(&scenario.name).unwrap();
//! assert_eq!(table.max_of("gs"), Some(118.08));
//! let model = model_for(&scenario, 1).unwrap();
//! assert_eq!(model.cluster.pes_per_node, scenario.pes_per_node);
//! ```

use keel_workloads::bsp::{self, BspJob, BspScenario, Pattern};
use serde::Serialize;

use super::model::simulate_spec;
use super::params::CoschedModel;
use super::run::{ClassChange, CoschedRun};
use crate::error::SimError;

/// The verification tables' schedulers, in the paper's row order.
pub const VERIFY_POLICIES: [&str; 5] = ["fcfs", "local", "gs", "sb", "fcs"];
/// §3.3 and §3.4's schedulers ("from this point on, local scheduling will
/// no longer be considered").
pub const APP_POLICIES: [&str; 4] = ["fcfs", "gs", "sb", "fcs"];
/// FCS must be within this fraction of the best scheduler (Keel's goal;
/// the paper's FCS was 0.3 %, 2.3 % and 2.7 % from the best).
pub const FCS_GOAL: f64 = 0.03;

/// One of the paper's tables: per scheduler, each job's termination time
/// (when the paper gives them) and the Max column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperTable {
    /// Scenario name ([`BspScenario::name`]).
    pub scenario: &'static str,
    /// `(scheduler, per-job times, max)`.
    pub rows: &'static [(&'static str, &'static [f64], f64)],
}

impl PaperTable {
    /// The paper's Max for `policy`, if it has that row.
    pub fn max_of(&self, policy: &str) -> Option<f64> {
        self.rows.iter().find(|r| r.0 == policy).map(|r| r.2)
    }
}

/// §3.2.1's table.
pub const PAPER_FINE_GRAINED: PaperTable = PaperTable {
    scenario: "fine-grained",
    rows: &[
        ("fcfs", &[60.00, 119.95], 119.95),
        ("local", &[234.79, 230.95], 234.79),
        ("gs", &[118.08, 118.06], 118.08),
        ("sb", &[125.36, 125.38], 125.38),
        ("fcs", &[118.34, 118.39], 118.39),
    ],
};

/// §3.2.2's table.
pub const PAPER_LOAD_IMBALANCED: PaperTable = PaperTable {
    scenario: "load-imbalanced",
    rows: &[
        ("fcfs", &[116.57, 233.61], 233.61),
        ("local", &[301.82, 300.79], 301.82),
        ("gs", &[231.36, 231.91], 231.91),
        ("sb", &[177.86, 179.49], 179.49),
        ("fcs", &[176.26, 177.64], 177.64),
    ],
};

/// §3.2.3's table (its FCFS cells are run times, not termination times:
/// their sum is the Max).
pub const PAPER_COMPLEMENTING: PaperTable = PaperTable {
    scenario: "complementing",
    rows: &[
        ("fcfs", &[231.25, 58.99, 59.60, 58.97], 408.26),
        ("local", &[356.14, 233.13, 233.58, 233.73], 356.14),
        ("gs", &[404.72, 232.11, 232.21, 232.19], 404.72),
        ("sb", &[261.15, 229.20, 229.22, 229.22], 261.15),
        ("fcs", &[236.33, 233.44, 233.54, 231.96], 236.33),
    ],
};

/// §3.4's SWEEP3D table (Max only).
pub const PAPER_SWEEP3D: PaperTable = PaperTable {
    scenario: "sweep3d",
    rows: &[
        ("fcfs", &[], 193.03),
        ("gs", &[], 194.57),
        ("sb", &[], 208.47),
        ("fcs", &[], 197.49),
    ],
};

/// §3.4's SAGE table.
pub const PAPER_SAGE: PaperTable = PaperTable {
    scenario: "sage",
    rows: &[
        ("fcfs", &[39.24, 125.36, 220.16], 220.16),
        ("gs", &[120.41, 222.03, 227.02], 227.02),
        ("sb", &[124.22, 189.95, 200.46], 200.46),
        ("fcs", &[112.9, 194.95, 205.81], 205.81),
    ],
};

/// The paper's table for a scenario name.
pub fn paper_table(scenario: &str) -> Option<&'static PaperTable> {
    [
        &PAPER_FINE_GRAINED,
        &PAPER_LOAD_IMBALANCED,
        &PAPER_COMPLEMENTING,
        &PAPER_SWEEP3D,
        &PAPER_SAGE,
    ]
    .into_iter()
    .find(|t| t.scenario == scenario)
}

/// The model for a scenario's machine with every default and `seed`.
pub fn model_for(scenario: &BspScenario, seed: u64) -> Result<CoschedModel, SimError> {
    Ok(CoschedModel::new(scenario.nodes, scenario.pes_per_node)?.with_seed(seed))
}

/// One scheduler's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableRow {
    /// The policy's registry name (`fcfs`, `gs`, ...).
    pub policy: String,
    /// Its canonical spec.
    pub spec: String,
    /// Each job's termination time, seconds.
    pub ends: Vec<f64>,
    /// The last termination: the scenario's turnaround.
    pub max: f64,
    /// Mean job turnaround.
    pub mean_turnaround: f64,
    /// Fraction of PE time spent computing.
    pub utilisation: f64,
    /// Context switches.
    pub context_switches: u64,
    /// Per job, each rank's dominant class (FCS only).
    pub classes: Vec<Vec<&'static str>>,
    /// FCS's class timeline (empty for other policies).
    pub class_changes: Vec<ClassChange>,
    /// The paper's Max for this scheduler, if it reports one.
    pub paper_max: Option<f64>,
}

/// Whether the schedulers come in the paper's order (by Max).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ordering {
    /// The paper's order, best first.
    pub paper: Vec<String>,
    /// Ours, best first.
    pub ours: Vec<String>,
    /// Pairs of schedulers ordered alike.
    pub concordant: usize,
    /// Pairs compared.
    pub pairs: usize,
    /// The pairs ordered differently: `(a, b, paper's relative gap a vs b
    /// in %, ours in %)`, where `a` is better than `b` in the paper.
    pub discordant: Vec<(String, String, f64, f64)>,
}

/// A scenario under several schedulers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioTable {
    /// Scenario name.
    pub scenario: String,
    /// What it reproduces.
    pub title: String,
    /// Job labels, in column order.
    pub jobs: Vec<String>,
    /// One row per scheduler, in the order asked.
    pub rows: Vec<TableRow>,
    /// The scheduler with the smallest Max.
    pub best: String,
    /// FCS's Max over the best Max, minus 1 (`None` without an FCS row).
    pub fcs_gap: Option<f64>,
    /// Whether `fcs_gap` is within [`FCS_GOAL`].
    pub fcs_goal_met: Option<bool>,
    /// Ordering against the paper (`None` without a paper table).
    pub ordering: Option<Ordering>,
}

fn policy_name(spec: &str) -> String {
    spec.split(':').next().unwrap_or(spec).trim().to_string()
}

/// Runs `scenario` under each policy spec in `specs`, calling `tick` after
/// each run.
pub fn run_table(
    scenario: &BspScenario,
    model: &CoschedModel,
    specs: &[String],
    tick: &mut dyn FnMut(),
) -> Result<ScenarioTable, SimError> {
    let paper = paper_table(&scenario.name);
    let mut rows = Vec::with_capacity(specs.len());
    for spec in specs {
        let run = simulate_spec(model, spec, &scenario.jobs)?;
        tick();
        rows.push(row_of(spec, &run, paper));
    }
    Ok(table_of(scenario, rows, paper))
}

fn row_of(spec: &str, run: &CoschedRun, paper: Option<&PaperTable>) -> TableRow {
    let policy = policy_name(spec);
    let classes = (0..run.jobs.len())
        .map(|j| run.classes_of(j).into_iter().flatten().collect())
        .collect();
    TableRow {
        paper_max: paper.and_then(|t| t.max_of(&policy)),
        policy,
        spec: run.policy.clone(),
        ends: run.ends(),
        max: run.jobs.iter().map(|j| j.end).fold(0.0, f64::max),
        mean_turnaround: run.mean_turnaround(),
        utilisation: run.utilisation(),
        context_switches: run.context_switches,
        classes,
        class_changes: run.class_changes.clone(),
    }
}

fn table_of(
    scenario: &BspScenario,
    rows: Vec<TableRow>,
    paper: Option<&PaperTable>,
) -> ScenarioTable {
    let best_row = rows.iter().min_by(|a, b| a.max.total_cmp(&b.max));
    let best = best_row.map_or(String::new(), |r| r.policy.clone());
    let best_max = best_row.map_or(f64::NAN, |r| r.max);
    let fcs_gap = rows
        .iter()
        .find(|r| r.policy == "fcs")
        .map(|r| r.max / best_max - 1.0);
    let ordering = paper.map(|t| ordering(t, &rows));
    ScenarioTable {
        scenario: scenario.name.clone(),
        title: scenario.title.clone(),
        jobs: scenario
            .jobs
            .iter()
            .enumerate()
            .map(|(k, j)| {
                if j.name.is_empty() {
                    format!("job {k}")
                } else {
                    j.name.clone()
                }
            })
            .collect(),
        rows,
        best,
        fcs_goal_met: fcs_gap.map(|g| g <= FCS_GOAL),
        fcs_gap,
        ordering,
    }
}

fn ordering(paper: &PaperTable, rows: &[TableRow]) -> Ordering {
    let both: Vec<(&str, f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            paper
                .max_of(&r.policy)
                .map(|p| (r.policy.as_str(), p, r.max))
        })
        .collect();
    let sorted = |key: fn(&(&str, f64, f64)) -> f64| {
        let mut v = both.clone();
        v.sort_by(|a, b| key(a).total_cmp(&key(b)));
        v.into_iter().map(|x| x.0.to_string()).collect::<Vec<_>>()
    };
    let mut concordant = 0;
    let mut pairs = 0;
    let mut discordant = Vec::new();
    for i in 0..both.len() {
        for j in i + 1..both.len() {
            let (a, b) = if both[i].1 <= both[j].1 {
                (both[i], both[j])
            } else {
                (both[j], both[i])
            };
            pairs += 1;
            if a.2 <= b.2 {
                concordant += 1;
            } else {
                discordant.push((
                    a.0.to_string(),
                    b.0.to_string(),
                    100.0 * (a.1 / b.1 - 1.0),
                    100.0 * (a.2 / b.2 - 1.0),
                ));
            }
        }
    }
    Ordering {
        paper: sorted(|x| x.1),
        ours: sorted(|x| x.2),
        concordant,
        pairs,
        discordant,
    }
}

/// The three verification scenarios of §3.2, in the paper's order.
pub fn verification_scenarios() -> Vec<BspScenario> {
    vec![
        bsp::fine_grained(),
        bsp::load_imbalanced(),
        bsp::complementing(),
    ]
}

/// The two application mixes of §3.4.
pub fn application_scenarios() -> Vec<BspScenario> {
    vec![bsp::sweep3d_mix(), bsp::sage_mix()]
}

// ---------------------------------------------------------------------
// Fig. 5.

/// One point of Fig. 5.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fig5Point {
    /// `nn` or `barrier`.
    pub pattern: &'static str,
    /// Compute granularity, seconds.
    pub granularity: f64,
    /// Variability (1 = ±100 %).
    pub variability: f64,
    /// The policy's registry name.
    pub policy: String,
    /// Turnaround of the four jobs, seconds.
    pub makespan: f64,
    /// Makespan over the jobs' total CPU work divided by the PEs (1 =
    /// perfect packing, no communication or waste).
    pub normalised: f64,
    /// Fraction of process time (FCS only) spent as `[CS, F, DC]`.
    pub class_share: Option<[f64; 3]>,
}

/// The ideal makespan of `jobs` on `pes` PEs: their expected CPU work
/// spread evenly.
pub fn ideal_time(jobs: &[BspJob], pes: usize) -> f64 {
    let work: f64 = jobs
        .iter()
        .map(|j| (0..j.processes).map(|r| j.expected_work(r)).sum::<f64>())
        .sum();
    work / pes.max(1) as f64
}

/// Fig. 5's grid: every pattern × granularity × variability × policy on
/// `base`'s constants (reshaped to the scenario's machine), each job's
/// iterations scaled by `scale` (1 = the paper's scenario), `tick` after
/// each run.
pub fn fig5_sweep(
    patterns: &[Pattern],
    granularities: &[f64],
    variabilities: &[f64],
    specs: &[String],
    base: &CoschedModel,
    scale: f64,
    tick: &mut dyn FnMut(),
) -> Result<Vec<Fig5Point>, SimError> {
    let mut out = Vec::new();
    for &pattern in patterns {
        for &g in granularities {
            for &v in variabilities {
                let scenario = bsp::fig5(g, v, pattern)
                    .and_then(|s| s.scaled(scale))
                    .map_err(|e| SimError::invalid("Fig. 5 point", e, "a valid BSP scenario"))?;
                let model = base.reshaped(scenario.nodes, scenario.pes_per_node)?;
                let ideal = ideal_time(&scenario.jobs, scenario.pes());
                for spec in specs {
                    let run = simulate_spec(&model, spec, &scenario.jobs)?;
                    tick();
                    let class_share = run.processes.first().and_then(|p| p.final_class).map(|_| {
                        let mut t = [0.0; 3];
                        for p in &run.processes {
                            for (c, x) in t.iter_mut().zip(p.class_time) {
                                *c += x;
                            }
                        }
                        let total: f64 = t.iter().sum();
                        t.map(|x| if total > 0.0 { x / total } else { 0.0 })
                    });
                    out.push(Fig5Point {
                        pattern: pattern.name(),
                        granularity: g,
                        variability: v,
                        policy: policy_name(spec),
                        makespan: run.makespan,
                        normalised: run.makespan / ideal,
                        class_share,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// One of the paper's observations on Fig. 5, checked on a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The pattern it was checked on.
    pub pattern: &'static str,
    /// The paper's claim, in short.
    pub claim: &'static str,
    /// Whether it holds here (`None`: the sweep lacks the points).
    pub holds: Option<bool>,
    /// The numbers behind the verdict.
    pub detail: String,
}

fn point<'p>(
    points: &'p [Fig5Point],
    pattern: &str,
    g: f64,
    v: f64,
    policy: &str,
) -> Option<&'p Fig5Point> {
    points.iter().find(|p| {
        p.pattern == pattern && p.granularity == g && p.variability == v && p.policy == policy
    })
}

/// Checks the paper's Fig. 5 observations (§3.3) on `points`, per
/// pattern, at the sweep's finest and coarsest granularities and its
/// lowest and highest variabilities:
///
/// 1. GS and FCFS perform alike (within 5 % everywhere);
/// 2. SB and FCS degrade less with variability than GS (at the coarsest
///    granularity, from the lowest to the highest variability);
/// 3. FCS converges to GS at the finest granularity, whatever the
///    variability (within 5 %);
/// 4. at the finest granularity SB beats FCS when variability is high and
///    is worse than GS when it is low;
/// 5. at the coarsest granularity and highest variability FCS beats SB.
pub fn fig5_findings(points: &[Fig5Point]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut patterns: Vec<&'static str> = points.iter().map(|p| p.pattern).collect();
    patterns.dedup();
    let extreme = |f: fn(f64, f64) -> f64, get: fn(&Fig5Point) -> f64| {
        points.iter().map(get).fold(f64::NAN, f)
    };
    let (gmin, gmax) = (
        extreme(f64::min, |p| p.granularity),
        extreme(f64::max, |p| p.granularity),
    );
    let (vmin, vmax) = (
        extreme(f64::min, |p| p.variability),
        extreme(f64::max, |p| p.variability),
    );
    let pct = |a: f64, b: f64| 100.0 * (a / b - 1.0);
    for pattern in patterns {
        let at = |g, v, pol| point(points, pattern, g, v, pol).map(|p| p.makespan);
        // 1.
        let mut worst: Option<(f64, f64, f64)> = None;
        for p in points
            .iter()
            .filter(|p| p.pattern == pattern && p.policy == "gs")
        {
            if let Some(f) = at(p.granularity, p.variability, "fcfs") {
                let gap = pct(p.makespan, f).abs();
                if worst.is_none_or(|w| gap > w.2) {
                    worst = Some((p.granularity, p.variability, gap));
                }
            }
        }
        out.push(Finding {
            pattern,
            claim: "GS and FCFS perform alike",
            holds: worst.map(|w| w.2 <= 5.0),
            detail: worst.map_or("no GS/FCFS pairs".into(), |w| {
                format!(
                    "largest GS–FCFS gap {:.1} % (g = {} ms, v = {:.0} %)",
                    w.2,
                    w.0 * 1e3,
                    w.1 * 100.0
                )
            }),
        });
        // 2.
        let growth = |pol| Some(at(gmax, vmax, pol)? / at(gmax, vmin, pol)?);
        let (gs, sb, fcs) = (growth("gs"), growth("sb"), growth("fcs"));
        out.push(Finding {
            pattern,
            claim: "SB and FCS degrade less with variability than GS",
            holds: match (gs, sb, fcs) {
                (Some(gs), Some(sb), Some(fcs)) => Some(sb < gs && fcs < gs),
                _ => None,
            },
            detail: format!(
                "makespan growth from v = {:.0} % to {:.0} % at g = {} ms: GS ×{:.3}, SB ×{:.3}, FCS ×{:.3}",
                vmin * 100.0,
                vmax * 100.0,
                gmax * 1e3,
                gs.unwrap_or(f64::NAN),
                sb.unwrap_or(f64::NAN),
                fcs.unwrap_or(f64::NAN)
            ),
        });
        // 3.
        let gaps: Vec<f64> = [vmin, vmax]
            .iter()
            .filter_map(|&v| Some(pct(at(gmin, v, "fcs")?, at(gmin, v, "gs")?)))
            .collect();
        out.push(Finding {
            pattern,
            claim: "FCS converges to GS at the finest granularity",
            holds: (!gaps.is_empty()).then(|| gaps.iter().all(|g| g.abs() <= 5.0)),
            detail: format!(
                "FCS vs GS at g = {} ms: {} %",
                gmin * 1e3,
                gaps.iter()
                    .map(|g| format!("{g:+.1}"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            ),
        });
        // 4.
        let high = at(gmin, vmax, "sb").zip(at(gmin, vmax, "fcs"));
        let low = at(gmin, vmin, "sb").zip(at(gmin, vmin, "gs"));
        out.push(Finding {
            pattern,
            claim: "finest granularity: SB beats FCS at high variability, loses to GS at low",
            holds: high
                .zip(low)
                .map(|((sbh, fcsh), (sbl, gsl))| sbh < fcsh && sbl > gsl),
            detail: format!(
                "g = {} ms, v = {:.0} %: SB {} s vs FCS {} s; v = {:.0} %: SB {} s vs GS {} s",
                gmin * 1e3,
                vmax * 100.0,
                fmt(high.map(|h| h.0)),
                fmt(high.map(|h| h.1)),
                vmin * 100.0,
                fmt(low.map(|l| l.0)),
                fmt(low.map(|l| l.1))
            ),
        });
        // 5.
        let coarse = at(gmax, vmax, "fcs").zip(at(gmax, vmax, "sb"));
        out.push(Finding {
            pattern,
            claim: "coarsest granularity, highest variability: FCS beats SB",
            holds: coarse.map(|(f, s)| f < s),
            detail: format!(
                "g = {} ms, v = {:.0} %: FCS {} s vs SB {} s",
                gmax * 1e3,
                vmax * 100.0,
                fmt(coarse.map(|c| c.0)),
                fmt(coarse.map(|c| c.1))
            ),
        });
    }
    out
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.2}"))
}
