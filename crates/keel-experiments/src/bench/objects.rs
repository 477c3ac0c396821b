//! `keel bench objects`: the Charm++ + OpenMP paper's evaluation
//! (§4.4, §5) on
//! Keel's objects context, on this machine:
//!
//! - **Table 1**: the Lassen-like proxy under No LB, Greedy and Greedy +
//!   stealing (remapping when it pays: the adaptive invocation), No LB +
//!   stealing, and Greedy every 50 steps: λ at the PU level over the run,
//!   total time, and time ÷ ideal (measured busy work ÷ PUs);
//! - **Table 2**: Greedy at periods 20, 50 and 100, time in steps and in
//!   balancing split out;
//! - **Invocation**: the hot-band workloads whose balancing should pay
//!   (`persistent`, `drift`, `phase`) under No LB, adaptive Greedy with and
//!   without stealing, and Greedy every 50 steps;
//! - **Fig. 2**: a balanced stencil with and without stealing (the cost of
//!   exposing potential tasks when nobody needs them);
//! - **lb_test**: ring and mesh under every registry mapping policy.
//!
//! Configurations are interleaved run by run; each row is the run with the
//! median total time.
//!
//! ```no_run
//! use keel_experiments::bench::objects::{self, ObjectsConfig};
//! // Seconds of work on a 2-thread pool.
//! let report = objects::run(&ObjectsConfig { quick: true, ..ObjectsConfig::default() }, &mut |_| {}).unwrap();
//! assert_eq!(report.tables[0].id, "table1");
//! ```

use std::hint::black_box;

use keel::objects::{Object, Objects, RunReport, StepContext};
use keel::ThreadPool;
use keel_policy::invoke::Invocation;
use keel_workloads::objects::{
    run_units, HotBand, LassenLike, LbTestObjects, Motion, ObjectWorkload, Stencil, Topology,
};
use serde::Serialize;

use super::{BackgroundLoad, LoadMeter, Progress};
use crate::error::{ExperimentError, Result};

/// What to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectsConfig {
    /// Worker threads, one PU each (`None`: 2).
    pub threads: Option<usize>,
    /// Runs per configuration (`None`: 3, 1 with `quick`).
    pub reps: Option<usize>,
    /// Scaled-down work (seconds in all).
    pub quick: bool,
}

/// The exposure policy of the "+ stealing" rows.
pub const STEALING: &str = "history-idle";

/// One object of a proxy: it does the workload's work for its id and step.
struct Proxy<'w> {
    id: usize,
    work: &'w dyn ObjectWorkload,
    checksum: f64,
}

impl Object for Proxy<'_> {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let (id, step, w) = (self.id, ctx.step(), self.work);
        self.checksum += black_box(run_units(w.serial_units(id, step), id as u64));
        let cells = w.cells(id);
        if cells > 0 {
            ctx.for_each(0..cells, |c| {
                black_box(run_units(w.cell_units(id, step, c), c as u64));
            });
        }
    }
}

/// A configuration: remap policy and invocation, stealing.
#[derive(Clone, Debug)]
struct Config {
    label: String,
    policy: String,
    invocation: Invocation,
    stealing: &'static str,
}

fn config(label: &str, policy: &str, invocation: Invocation, stealing: &'static str) -> Config {
    Config {
        label: label.to_string(),
        policy: policy.to_string(),
        invocation,
        stealing,
    }
}

/// `Invocation::Periodic(steps)` for a period the bench fixes (≥ 1).
fn every(steps: usize) -> Invocation {
    Invocation::every(steps).unwrap_or(Invocation::Never)
}

/// One measured row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What ran.
    pub config: String,
    /// The remap policy (`block` never remaps here).
    pub policy: String,
    /// When it remapped (the invocation's spec).
    pub invocation: String,
    /// Remaps.
    pub rebalances: usize,
    /// Exposure policy.
    pub stealing: String,
    /// λ at the PU level over the run.
    pub lambda: f64,
    /// Total wall time (median run).
    pub total_s: f64,
    /// Time in steps.
    pub steps_s: f64,
    /// Time in remaps.
    pub balance_s: f64,
    /// Measured busy work ÷ PUs.
    pub ideal_s: f64,
    /// total ÷ ideal.
    pub of_ideal: f64,
    /// `of_ideal` is below [`super::IDEAL_TOLERANCE`]: impossible by
    /// construction (busy time over-measured or the timer), not a fast run.
    pub below_ideal: bool,
    /// Objects moved.
    pub migrations: usize,
    /// Time inside policies' `map`.
    pub decision_s: f64,
    /// Chunks stolen.
    pub stolen: usize,
    /// Chunks exposed.
    pub exposed: usize,
    /// Every run's total time.
    pub runs_s: Vec<f64>,
    /// Each step's wall time in the median run (remaps excluded).
    pub step_times_s: Vec<f64>,
}

/// A table of rows for one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Short id (`table1`, `table2`, `stencil`, `lb-test-ring`, ...).
    pub id: String,
    /// Title.
    pub title: String,
    /// Workload spec.
    pub workload: String,
    /// Rows.
    pub rows: Vec<Row>,
}

/// The whole bench.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectsBenchReport {
    /// Quick mode.
    pub quick: bool,
    /// PUs (pool threads).
    pub pus: usize,
    /// Runs per configuration.
    pub reps: usize,
    /// Tables.
    pub tables: Vec<Table>,
    /// The machine's background load over the run (`None` without `/proc`).
    pub background_load: Option<BackgroundLoad>,
}

fn run_once(pool: &ThreadPool, work: &dyn ObjectWorkload, c: &Config) -> Result<RunReport> {
    let objects: Vec<Proxy<'_>> = (0..work.objects())
        .map(|id| Proxy {
            id,
            work,
            checksum: 0.0,
        })
        .collect();
    let mut run = Objects::builder()
        .policy(c.policy.as_str())
        .initial("block")
        .stealing(c.stealing)
        .invocation(c.invocation)
        .build(pool, objects)
        .map_err(objects_error)?;
    run.run(work.steps()).map_err(objects_error)
}

fn objects_error(e: keel::objects::ObjectsError) -> ExperimentError {
    ExperimentError::Invalid(format!("objects: {e}"))
}

/// Runs every configuration `reps` times, interleaved; one progress step
/// per run.
fn measure(
    pool: &ThreadPool,
    work: &dyn ObjectWorkload,
    configs: &[Config],
    reps: usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Row>> {
    let mut runs: Vec<Vec<RunReport>> = vec![Vec::new(); configs.len()];
    for _ in 0..reps {
        for (c, out) in configs.iter().zip(&mut runs) {
            out.push(run_once(pool, work, c)?);
            progress(Progress::Step(&c.label));
        }
    }
    let pus = pool.threads() as f64;
    Ok(configs
        .iter()
        .zip(runs)
        .map(|(c, mut rs)| {
            let runs_s: Vec<f64> = rs.iter().map(|r| r.wall_s).collect();
            rs.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
            let r = &rs[rs.len() / 2];
            let ideal_s = r.busy_s / pus;
            Row {
                config: c.label.clone(),
                policy: c.policy.clone(),
                invocation: c.invocation.spec(),
                rebalances: r.rebalances.len(),
                stealing: c.stealing.to_string(),
                lambda: r.lambda,
                total_s: r.wall_s,
                steps_s: r.steps_s,
                balance_s: r.balance_s,
                ideal_s,
                of_ideal: if ideal_s > 0.0 {
                    r.wall_s / ideal_s
                } else {
                    0.0
                },
                below_ideal: ideal_s > 0.0 && super::below_ideal(r.wall_s / ideal_s),
                migrations: r.migrations(),
                decision_s: r.rebalances.iter().map(|x| x.decision_s).sum(),
                stolen: r.tasks.stolen_from,
                exposed: r.tasks.exposed,
                runs_s,
                step_times_s: r.step_s.clone(),
            }
        })
        .collect())
}

/// Table 1's configurations: the paper's four, remapping when it pays,
/// and Greedy at the paper's fixed period.
fn table1_configs() -> Vec<Config> {
    vec![
        config("No LB", "block", Invocation::Never, "none"),
        config("Greedy", "greedy", Invocation::Adaptive, "none"),
        config(
            "Greedy + stealing",
            "greedy",
            Invocation::Adaptive,
            STEALING,
        ),
        config("No LB + stealing", "block", Invocation::Never, STEALING),
        config("Greedy every 50", "greedy", every(50), "none"),
    ]
}

/// The invocation tables' configurations: Table 1's without No LB +
/// stealing.
fn invocation_configs() -> Vec<Config> {
    table1_configs()
        .into_iter()
        .filter(|c| !(c.invocation == Invocation::Never && c.stealing != "none"))
        .collect()
}

/// The hot-band workloads of the invocation tables.
const MOTIONS: [Motion; 3] = [Motion::Persistent, Motion::Drift, Motion::Phase];

/// The mapping policies of the lb_test tables (`hier` on one node).
fn lb_test_specs() -> Vec<String> {
    keel_policy::mapping::registry()
        .names()
        .into_iter()
        .map(|n| {
            if n == "hier" {
                "hier:nodes=1".into()
            } else {
                n
            }
        })
        .collect()
}

/// The runs [`tables`] makes with `reps` runs per configuration: Table 1's
/// five configurations, Table 2's three, the invocation tables' four per
/// workload, the stencil's two, and every mapping policy on the ring and
/// on the mesh.
pub fn total_runs(reps: usize) -> u64 {
    ((5 + 3 + 4 * MOTIONS.len() + 2 + 2 * lb_test_specs().len()) * reps) as u64
}

/// Runs the bench's tables; `progress` hears one step per run of a
/// configuration ([`total_runs`] in all).
pub fn tables(
    quick: bool,
    reps: usize,
    pool: &ThreadPool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Table>> {
    let pus = pool.threads();
    let mut lassen = LassenLike::for_pus(pus);
    let mut stencil = Stencil {
        pus,
        objects: 8 * pus,
        ..Stencil::default()
    };
    if quick {
        lassen.scale = 0.1;
        stencil.scale = 0.25;
        stencil.steps = 20;
    }
    let mut out = Vec::new();
    out.push(Table {
        id: "table1".into(),
        title: "Table 1: Lassen-like, λ at the PU level and total time (Greedy when it pays, and every 50 steps)"
            .into(),
        workload: lassen.spec(),
        rows: measure(pool, &lassen, &table1_configs(), reps, progress)?,
    });
    let t2: Vec<Config> = [20, 50, 100]
        .iter()
        .map(|&p| config(&format!("Greedy, period {p}"), "greedy", every(p), "none"))
        .collect();
    out.push(Table {
        id: "table2".into(),
        title: "Table 2: Lassen-like, Greedy at three periods, balancing time split out".into(),
        workload: lassen.spec(),
        rows: measure(pool, &lassen, &t2, reps, progress)?,
    });
    for motion in MOTIONS {
        let mut band = HotBand::for_pus(motion, pus);
        if quick {
            band.scale = 0.1;
        }
        out.push(Table {
            id: format!("invocation-{}", motion.name()),
            title: format!(
                "Invocation: a hot band, {}; remapping when it pays against every 50 steps",
                match motion {
                    Motion::Persistent => "persistent",
                    Motion::Drift => "drifting slowly",
                    Motion::Phase => "jumping half-way",
                }
            ),
            workload: band.spec(),
            rows: measure(pool, &band, &invocation_configs(), reps, progress)?,
        });
    }
    out.push(Table {
        id: "stencil".into(),
        title: "Fig. 2: a balanced stencil, the cost of stealing when nobody needs it".into(),
        workload: stencil.spec(),
        rows: measure(
            pool,
            &stencil,
            &[
                config("no stealing", "block", Invocation::Never, "none"),
                config("stealing", "block", Invocation::Never, STEALING),
            ],
            reps,
            progress,
        )?,
    });
    let specs = lb_test_specs();
    for topology in [Topology::Ring, Topology::Mesh] {
        let (steps, scale) = if quick { (80, 0.05) } else { (120, 0.25) };
        let lb = LbTestObjects::new(topology, 64, pus, steps, 40, 10.0, 3000.0, 12345, scale);
        let configs: Vec<Config> = specs
            .iter()
            .map(|s| config(s, s, every(40), "none"))
            .collect();
        let name = match topology {
            Topology::Ring => "ring",
            Topology::Mesh => "mesh",
        };
        out.push(Table {
            id: format!("lb-test-{name}"),
            title: format!("lb_test ({name}): every mapping policy, balancing every 40 steps"),
            workload: lb.spec(),
            rows: measure(pool, &lb, &configs, reps, progress)?,
        });
    }
    Ok(out)
}

/// Every table on a pool of `threads` PUs; `progress` hears
/// [`Progress::Total`] ([`total_runs`]) first, then one step per run.
pub fn run(
    config: &ObjectsConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ObjectsBenchReport> {
    let pus = config.threads.unwrap_or(2);
    if pus == 0 {
        return Err(ExperimentError::Invalid(
            "--threads must be at least 1".into(),
        ));
    }
    let reps = config.reps.unwrap_or(if config.quick { 1 } else { 3 });
    if reps == 0 {
        return Err(ExperimentError::Invalid("--reps must be at least 1".into()));
    }
    let pool = ThreadPool::builder()
        .threads(pus)
        .build()
        .map_err(|e| ExperimentError::Invalid(format!("thread pool: {e}")))?;
    progress(Progress::Total(total_runs(reps)));
    let meter = LoadMeter::start();
    let tables = tables(config.quick, reps, &pool, progress)?;
    Ok(ObjectsBenchReport {
        quick: config.quick,
        pus,
        reps,
        tables,
        background_load: meter.finish(),
    })
}

/// The demo's section: a short Lassen-like run on 2 PUs, Table 1's rows
/// with the fixed period at 10 steps.
pub fn demo_table() -> Result<Table> {
    let pool = ThreadPool::builder()
        .threads(2)
        .build()
        .map_err(|e| ExperimentError::Invalid(format!("thread pool: {e}")))?;
    let lassen = LassenLike {
        steps: 60,
        scale: 0.05,
        ..LassenLike::for_pus(2)
    };
    let configs: Vec<Config> = table1_configs()
        .into_iter()
        .map(|mut c| {
            if c.invocation.period().is_some() {
                c.invocation = every(10);
                c.label = "Greedy every 10".into();
            }
            c
        })
        .collect();
    let rows = measure(&pool, &lassen, &configs, 1, &mut |_| {})?;
    Ok(Table {
        id: "demo".into(),
        title: "Lassen-like front on 2 PUs (Greedy when it pays, and every 10 steps)".into(),
        workload: lassen.spec(),
        rows,
    })
}
