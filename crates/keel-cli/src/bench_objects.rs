//! `keel bench objects`: the Charm++ + OpenMP paper's evaluation
//! (§4.4, §5) on
//! Keel's objects context, on this machine:
//!
//! - **Table 1**: the Lassen-like proxy under No LB, Greedy, Greedy +
//!   stealing and No LB + stealing: λ at the PU level over the run, total
//!   time, and time ÷ ideal (measured busy work ÷ PUs);
//! - **Table 2**: Greedy at periods 20, 50 and 100, time in steps and in
//!   balancing split out;
//! - **Fig. 2**: a balanced stencil with and without stealing (the cost of
//!   exposing potential tasks when nobody needs them);
//! - **lb_test**: ring and mesh under every registry mapping policy.
//!
//! Configurations are interleaved run by run; each row is the run with the
//! median total time.

use std::hint::black_box;
use std::io::Write;

use keel::objects::{Object, Objects, RunReport, StepContext};
use keel::ThreadPool;
use keel_workloads::objects::{
    run_units, LassenLike, LbTestObjects, ObjectWorkload, Stencil, Topology,
};
use serde::Serialize;

use crate::cli::BenchObjectsArgs;
use crate::error::CliError;
use crate::report;

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

/// A configuration: remap policy and period, stealing.
#[derive(Clone, Debug)]
struct Config {
    label: String,
    policy: String,
    period: Option<usize>,
    stealing: &'static str,
}

fn config(label: &str, policy: &str, period: Option<usize>, stealing: &'static str) -> Config {
    Config {
        label: label.to_string(),
        policy: policy.to_string(),
        period,
        stealing,
    }
}

/// One measured row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What ran.
    pub config: String,
    /// The remap policy (`block` never remaps here).
    pub policy: String,
    /// Remap period, steps.
    pub period: Option<usize>,
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
}

fn run_once(
    pool: &ThreadPool,
    work: &dyn ObjectWorkload,
    c: &Config,
) -> Result<RunReport, CliError> {
    let objects: Vec<Proxy<'_>> = (0..work.objects())
        .map(|id| Proxy {
            id,
            work,
            checksum: 0.0,
        })
        .collect();
    let mut b = Objects::builder()
        .policy(c.policy.as_str())
        .initial("block")
        .stealing(c.stealing);
    if let Some(p) = c.period {
        b = b.period(p);
    }
    let mut run = b.build(pool, objects).map_err(objects_error)?;
    run.run(work.steps()).map_err(objects_error)
}

fn objects_error(e: keel::objects::ObjectsError) -> CliError {
    CliError::Usage(format!("objects: {e}"))
}

fn measure(
    pool: &ThreadPool,
    work: &dyn ObjectWorkload,
    configs: &[Config],
    reps: usize,
) -> Result<Vec<Row>, CliError> {
    let mut runs: Vec<Vec<RunReport>> = vec![Vec::new(); configs.len()];
    for _ in 0..reps {
        for (c, out) in configs.iter().zip(&mut runs) {
            out.push(run_once(pool, work, c)?);
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
                period: c.period,
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
                migrations: r.migrations(),
                decision_s: r.rebalances.iter().map(|x| x.decision_s).sum(),
                stolen: r.tasks.stolen_from,
                exposed: r.tasks.exposed,
                runs_s,
            }
        })
        .collect())
}

/// Table 1's configurations.
fn table1_configs() -> Vec<Config> {
    vec![
        config("No LB", "block", None, "none"),
        config("Greedy", "greedy", Some(50), "none"),
        config("Greedy + stealing", "greedy", Some(50), STEALING),
        config("No LB + stealing", "block", None, STEALING),
    ]
}

/// Runs the bench's tables.
pub fn tables(quick: bool, reps: usize, pool: &ThreadPool) -> Result<Vec<Table>, CliError> {
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
        title: "Table 1: Lassen-like, λ at the PU level and total time (Greedy every 50 steps)"
            .into(),
        workload: lassen.spec(),
        rows: measure(pool, &lassen, &table1_configs(), reps)?,
    });
    let t2: Vec<Config> = [20, 50, 100]
        .iter()
        .map(|&p| config(&format!("Greedy, period {p}"), "greedy", Some(p), "none"))
        .collect();
    out.push(Table {
        id: "table2".into(),
        title: "Table 2: Lassen-like, Greedy at three periods, balancing time split out".into(),
        workload: lassen.spec(),
        rows: measure(pool, &lassen, &t2, reps)?,
    });
    out.push(Table {
        id: "stencil".into(),
        title: "Fig. 2: a balanced stencil, the cost of stealing when nobody needs it".into(),
        workload: stencil.spec(),
        rows: measure(
            pool,
            &stencil,
            &[
                config("no stealing", "block", None, "none"),
                config("stealing", "block", None, STEALING),
            ],
            reps,
        )?,
    });
    let specs: Vec<String> = keel_policy::mapping::registry()
        .names()
        .into_iter()
        .map(|n| {
            if n == "hier" {
                "hier:nodes=1".into()
            } else {
                n
            }
        })
        .collect();
    for topology in [Topology::Ring, Topology::Mesh] {
        let (steps, scale) = if quick { (80, 0.05) } else { (120, 0.25) };
        let lb = LbTestObjects::new(topology, 64, pus, steps, 40, 10.0, 3000.0, 12345, scale);
        let configs: Vec<Config> = specs
            .iter()
            .map(|s| config(s, s, Some(40), "none"))
            .collect();
        let name = match topology {
            Topology::Ring => "ring",
            Topology::Mesh => "mesh",
        };
        out.push(Table {
            id: format!("lb-test-{name}"),
            title: format!("lb_test ({name}): every mapping policy, balancing every 40 steps"),
            workload: lb.spec(),
            rows: measure(pool, &lb, &configs, reps)?,
        });
    }
    Ok(out)
}

fn write_tables(out: &mut dyn Write, tables: &[Table]) -> Result<(), CliError> {
    for t in tables {
        writeln!(out)?;
        writeln!(out, "{}", t.title)?;
        writeln!(out, "  workload: {}", t.workload)?;
        let mut rows: Vec<Vec<String>> = vec![[
            "config",
            "λ PU",
            "total",
            "steps",
            "balancing",
            "÷ ideal",
            "migrations",
            "stolen",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()];
        for r in &t.rows {
            rows.push(vec![
                r.config.clone(),
                format!("{:.1} %", r.lambda * 100.0),
                report::duration(r.total_s),
                report::duration(r.steps_s),
                report::duration(r.balance_s),
                format!("{:.3}", r.of_ideal),
                r.migrations.to_string(),
                format!("{}/{}", r.stolen, r.exposed),
            ]);
        }
        for line in report::align(&rows) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// `keel bench objects`.
pub fn run_objects(args: &BenchObjectsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let pus = args.threads.unwrap_or(2);
    if pus == 0 {
        return Err(CliError::Usage("--threads must be at least 1".into()));
    }
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    if reps == 0 {
        return Err(CliError::Usage("--reps must be at least 1".into()));
    }
    let pool = ThreadPool::builder()
        .threads(pus)
        .build()
        .map_err(|e| CliError::Usage(format!("thread pool: {e}")))?;
    let tables = tables(args.quick, reps, &pool)?;
    if args.json {
        let report = ObjectsBenchReport {
            quick: args.quick,
            pus,
            reps,
            tables,
        };
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel bench objects: {pus} PUs, {reps} run(s) per configuration (median shown); stolen = chunks stolen/exposed"
    )?;
    writeln!(
        out,
        "λ PU = Σ_t max_p busy / Σ_t mean_p busy − 1; ÷ ideal = total / (measured busy work ÷ PUs)"
    )?;
    write_tables(out, &tables)
}

/// The demo's section: a short Lassen-like run, Table 1's four rows.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let pool = ThreadPool::builder()
        .threads(2)
        .build()
        .map_err(|e| CliError::Usage(format!("thread pool: {e}")))?;
    let lassen = LassenLike {
        steps: 60,
        scale: 0.05,
        ..LassenLike::for_pus(2)
    };
    let configs: Vec<Config> = table1_configs()
        .into_iter()
        .map(|mut c| {
            if c.period.is_some() {
                c.period = Some(10);
            }
            c
        })
        .collect();
    let rows = measure(&pool, &lassen, &configs, 1)?;
    write_tables(
        out,
        &[Table {
            id: "demo".into(),
            title: "Lassen-like front on 2 PUs (Greedy every 10 steps)".into(),
            workload: lassen.spec(),
            rows,
        }],
    )
}
