//! `keel bench farm`: the experiments of the FastFlow ARRS paper
//! (§III) on Keel's farm,
//! on this machine, plus the per-item cost of dispatch with empty tasks.
//!
//! Every experiment times each policy's farm on the same tasks, the
//! policies interleaved run by run, and prints the paper's relative
//! performance `S = ⟨t_RR⟩ / ⟨t_X⟩` (Eq. 1) with its standard error,
//! propagated from the standard errors of the two means:
//!
//! - **(a)** uniform prime-counting tasks (primes up to 7,500) on 2
//!   workers, 1K–16K tasks (Fig. 6);
//! - **(b)** two workers, the first counting primes only up to 2,000, against
//!   the model `S = Σsᵢ / (p·s₁)` (Eq. 2) with the speed ratio measured now
//!   (Figs. 7–8);
//! - **(c)** three workers, two pinned to core 0 and one to core 1, uniform
//!   tasks: more workers than cores, unevenly placed (Fig. 10);
//! - **(d)** very short uniform tasks: MD-like pair forces (Fig. 11);
//! - **(e)** the material-optimisation farm with feedback, two workers of
//!   strategy costs 1 and 4 (Fig. 13);
//! - **overhead**: nanoseconds per item with empty tasks.
//!
//! `--workers N` (default 2, the paper's setting on this 2-core machine)
//! sets the workers of (a), (b) (one fast worker among `N`, model
//! `(s + N − 1)/N`), (d) and the overhead's second row, for runs on machines
//! with more cores (`scripts/scaling.sh`); (c) and (e) keep their layouts.

use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use keel::farm::{Decision, Dispatch, Farm, FarmConfig, FarmReport, QueueView};
use keel_workloads::farm::{count_primes, Material, MdPairs, Primes};
use serde::Serialize;

use crate::cli::BenchFarmArgs;
use crate::error::CliError;
use crate::report::{self, mean_se, median};

/// The experiments, in order.
pub const EXPERIMENTS: [&str; 6] = ["a", "b", "c", "d", "e", "overhead"];

/// Runs per point unless `--runs` says otherwise (the paper's minimum).
pub const DEFAULT_RUNS: usize = 10;

/// One policy at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Tasks (or pool size for (e)).
    pub size: usize,
    /// The policy spec.
    pub policy: String,
    /// Mean wall time, seconds.
    pub mean_s: f64,
    /// Standard error of that mean.
    pub se_s: f64,
    /// S = ⟨t_RR⟩ / ⟨t_X⟩.
    pub speedup: f64,
    /// Standard error of S.
    pub speedup_se: f64,
    /// Eq. 2's S, where the experiment has a model.
    pub model: Option<f64>,
    /// Items each worker ran in the last run.
    pub per_worker: Vec<u64>,
    /// Where measured ((b)), each worker's time in tasks as a percentage of
    /// the run's wall time, averaged over the runs: near 100 for every
    /// worker means the policy left no one waiting, so what separates its S
    /// from the model is how fast the tasks ran, not the dispatch.
    pub busy_percent: Option<Vec<f64>>,
}

/// One experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// `a`..`e`.
    pub id: String,
    /// What it is.
    pub title: String,
    /// Workers of the farm.
    pub workers: usize,
    /// The workload spec.
    pub workload: String,
    /// Notes (measured constants, placement).
    pub notes: Vec<String>,
    /// One row per size and policy.
    pub rows: Vec<Row>,
}

/// Per-item cost with empty tasks.
#[derive(Clone, Debug, Serialize)]
pub struct Overhead {
    /// The policy.
    pub policy: String,
    /// Workers.
    pub workers: usize,
    /// Items per run.
    pub items: usize,
    /// Median nanoseconds per item.
    pub ns_per_item: f64,
    /// Fastest and slowest run, ns per item.
    pub range: (f64, f64),
    /// For `arrs`: the median over paired runs of its time over `rr`'s.
    pub vs_rr: Option<f64>,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct FarmBenchReport {
    /// Quick mode.
    pub quick: bool,
    /// Runs per point.
    pub runs: usize,
    /// Cores the OS reports.
    pub cores: usize,
    /// The experiments run.
    pub experiments: Vec<Experiment>,
    /// The per-item cost rows.
    pub overhead: Vec<Overhead>,
}

struct Plan {
    quick: bool,
    runs: usize,
    /// Workers of the experiments that scale: (a), (b), (d), overhead.
    workers: usize,
}

fn build(policy: &str, workers: usize, pin: Option<Vec<usize>>) -> Result<Farm, CliError> {
    let mut b = Farm::builder().workers(workers).policy(policy);
    if let Some(cores) = pin {
        b = b.pin(cores);
    }
    b.build()
        .map_err(|e| CliError::Usage(format!("farm `{policy}`: {e}")))
}

/// One farm per policy, labelled with its spec.
fn build_labelled(
    policies: &[&str],
    workers: usize,
    pin: Option<Vec<usize>>,
) -> Result<Vec<(String, Farm)>, CliError> {
    policies
        .iter()
        .map(|p| Ok((p.to_string(), build(p, workers, pin.clone())?)))
        .collect()
}

/// Times `policies` on one task set, interleaved run by run; the first
/// policy is the reference (`rr`).
fn compare(
    plan: &Plan,
    size: usize,
    policies: &[&str],
    workers: usize,
    pin: Option<Vec<usize>>,
    model: Option<f64>,
    mut run: impl FnMut(&mut Farm) -> Result<FarmReport, CliError>,
) -> Result<Vec<Row>, CliError> {
    let farms = build_labelled(policies, workers, pin)?;
    compare_farms(plan, size, farms, model, |farm| {
        Ok(Measured {
            report: run(farm)?,
            busy_s: None,
        })
    })
}

/// One timed run, and where measured, each worker's seconds in tasks.
struct Measured {
    report: FarmReport,
    busy_s: Option<Vec<f64>>,
}

/// [`compare`] over farms already built, each with its row label.
fn compare_farms(
    plan: &Plan,
    size: usize,
    mut farms: Vec<(String, Farm)>,
    model: Option<f64>,
    mut run: impl FnMut(&mut Farm) -> Result<Measured, CliError>,
) -> Result<Vec<Row>, CliError> {
    let policies: Vec<String> = farms.iter().map(|(label, _)| label.clone()).collect();
    let mut times = vec![Vec::with_capacity(plan.runs); policies.len()];
    let mut last = vec![Vec::new(); policies.len()];
    // Per policy, per worker: the sum over runs of busy / wall.
    let mut busy_sum: Vec<Option<Vec<f64>>> = vec![None; policies.len()];
    for _ in 0..plan.runs {
        for (i, (_, farm)) in farms.iter_mut().enumerate() {
            let start = Instant::now();
            let measured = run(farm)?;
            let wall = start.elapsed().as_secs_f64();
            times[i].push(wall);
            last[i] = measured.report.per_worker;
            if let Some(busy) = measured.busy_s {
                let sum = busy_sum[i].get_or_insert_with(|| vec![0.0; busy.len()]);
                for (acc, b) in sum.iter_mut().zip(busy) {
                    *acc += b / wall;
                }
            }
        }
    }
    let (rr_mean, rr_se) = mean_se(&times[0]);
    Ok(policies
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (mean, se) = mean_se(&times[i]);
            let s = rr_mean / mean;
            let rel = ((rr_se / rr_mean).powi(2) + (se / mean).powi(2)).sqrt();
            Row {
                size,
                policy: p.to_string(),
                mean_s: mean,
                se_s: se,
                speedup: s,
                speedup_se: if i == 0 { 0.0 } else { s * rel },
                model,
                per_worker: std::mem::take(&mut last[i]),
                busy_percent: busy_sum[i]
                    .take()
                    .map(|sum| sum.iter().map(|b| 100.0 * b / plan.runs as f64).collect()),
            }
        })
        .collect())
}

fn farm_error(e: keel::farm::FarmError) -> CliError {
    CliError::Usage(format!("farm: {e}"))
}

fn primes_run(w: Primes) -> impl FnMut(&mut Farm) -> Result<FarmReport, CliError> {
    move |farm| {
        farm.run(0..w.tasks, |me, _| {
            black_box(w.run(me.index));
        })
        .map_err(farm_error)
    }
}

/// [`primes_run`], also timing each worker's tasks (two clock reads per
/// task: under 0.1 % of a 0.14 ms task).
fn primes_run_timed(w: Primes, farm: &mut Farm) -> Result<Measured, CliError> {
    let busy_ns: Vec<AtomicU64> = (0..farm.workers()).map(|_| AtomicU64::new(0)).collect();
    let report = farm
        .run(0..w.tasks, |me, _| {
            let start = Instant::now();
            black_box(w.run(me.index));
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            busy_ns[me.index].fetch_add(ns, Ordering::Relaxed);
        })
        .map_err(farm_error)?;
    Ok(Measured {
        report,
        busy_s: Some(
            busy_ns
                .iter()
                .map(|b| b.load(Ordering::Relaxed) as f64 * 1e-9)
                .collect(),
        ),
    })
}

fn sizes(plan: &Plan, quick: &[usize], full: &[usize]) -> Vec<usize> {
    if plan.quick { quick } else { full }.to_vec()
}

/// (a) uniform tasks.
fn experiment_a(plan: &Plan) -> Result<Experiment, CliError> {
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand"];
    let mut rows = Vec::new();
    for n in sizes(plan, &[1000, 4000], &[1000, 2000, 4000, 8000, 16000]) {
        let w = Primes::parse(&format!("primes:tasks={n}"))?;
        rows.extend(compare(
            plan,
            n,
            &policies,
            plan.workers,
            None,
            None,
            primes_run(w),
        )?);
    }
    Ok(Experiment {
        id: "a".into(),
        title: format!(
            "uniform tasks (primes up to 7,500), {} workers: ARRS should cost nothing (Fig. 6)",
            plan.workers
        ),
        workers: plan.workers,
        workload: Primes::default().spec(),
        notes: vec![],
        rows,
    })
}

/// The fast worker's speed relative to a slow one, measured now: slow and
/// fast batches alternate and the median of the paired ratios is taken, so
/// that a drift of this machine's speed during the measurement (tens of
/// percent within minutes here) does not enter the ratio.
fn fast_speed(w: &Primes) -> f64 {
    let batch = |limit: u32| {
        let t = Instant::now();
        for _ in 0..20 {
            black_box(count_primes(black_box(limit)));
        }
        t.elapsed().as_secs_f64()
    };
    let mut ratios: Vec<f64> = (0..21)
        .map(|_| batch(w.limit) / batch(w.fast_limit))
        .collect();
    median(&mut ratios)
}

/// The row label of [`KnownSpeedSplit`] in (b).
pub const KNOWN_SPLIT: &str = "known-split";

/// A baseline for (b), not a farm policy: it is told the workers' speeds
/// in advance and sends each worker its share of the items (proportional
/// to its speed) by smooth weighted round-robin, never reading a queue.
/// Eq. 2's model assumes each worker keeps its solo speed; on this machine
/// both workers computing at once may run slower than either alone, so
/// this split's S is what balancing can reach here, measured beside the
/// policies, and the policies' shortfall from the model splits into theirs
/// and the machine's.
#[derive(Debug)]
struct KnownSpeedSplit {
    /// Relative speed of each worker (workers past the list count as 1).
    speeds: Vec<f64>,
    /// `speeds` resolved for the stream's workers, and their sum.
    weights: Vec<f64>,
    total: f64,
    credit: Vec<f64>,
}

impl KnownSpeedSplit {
    fn new(speeds: Vec<f64>) -> Self {
        KnownSpeedSplit {
            speeds,
            weights: Vec::new(),
            total: 0.0,
            credit: Vec::new(),
        }
    }
}

impl Dispatch for KnownSpeedSplit {
    /// A label only: the bench builds this baseline itself, the farm
    /// registry does not know it.
    fn spec(&self) -> keel_policy::Spec {
        keel_policy::Spec::named(KNOWN_SPLIT)
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), keel_policy::farm::FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        self.weights = (0..config.workers)
            .map(|w| self.speeds.get(w).copied().unwrap_or(1.0))
            .collect();
        self.total = self.weights.iter().sum();
        self.credit = vec![0.0; config.workers];
        Ok(())
    }

    fn next(&mut self, view: &dyn QueueView) -> Decision {
        // Each item adds every worker's speed to its credit; the richest
        // worker gets the item and pays the total, so worker `w` receives
        // a `speed(w) / Σ speeds` share, evenly spread over the stream.
        let after = |w: usize| self.credit[w] + self.weights[w];
        let mut best = 0;
        for w in 1..self.credit.len() {
            if after(w) > after(best) {
                best = w;
            }
        }
        if !view.has_room(best) {
            return Decision::WaitForRoom;
        }
        for (credit, weight) in self.credit.iter_mut().zip(&self.weights) {
            *credit += weight;
        }
        self.credit[best] -= self.total;
        Decision::Send(best)
    }
}

/// (b) one fast worker, against Eq. 2.
fn experiment_b(plan: &Plan) -> Result<Experiment, CliError> {
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"];
    let base = Primes::parse("primes:fast-workers=1")?;
    let s = fast_speed(&base);
    let p = plan.workers;
    let model = base.model_speedup(p, s);
    let mut rows = Vec::new();
    for n in sizes(plan, &[1000, 4000], &[1000, 2000, 4000, 8000, 16000]) {
        let w = Primes { tasks: n, ..base };
        let mut farms = build_labelled(&policies, p, None)?;
        // Worker 0 is the fast one (`fast-workers=1`).
        let split = Farm::builder()
            .workers(p)
            .dispatch(Box::new(KnownSpeedSplit::new(vec![s, 1.0])))
            .build()
            .map_err(farm_error)?;
        farms.push((KNOWN_SPLIT.into(), split));
        rows.extend(compare_farms(plan, n, farms, Some(model), |farm| {
            primes_run_timed(w, farm)
        })?);
    }
    Ok(Experiment {
        id: "b".into(),
        title: format!("{p} workers, worker 0 counts primes only to 2,000: S against the model Σsᵢ/(p·s₁) (Figs. 7–8)"),
        workers: p,
        workload: base.spec(),
        notes: vec![
            if p > 1 {
                format!(
                    "fast task measured {s:.2}× cheaper here; model S = ({s:.2} + {})/{p} = {model:.3}",
                    p - 1
                )
            } else {
                format!("fast task measured {s:.2}× cheaper here; one worker gets every item: model S = 1")
            },
            format!(
                "{KNOWN_SPLIT}: a baseline told the speeds in advance (worker 0 gets {s:.2}/({s:.2} + {}) of the items, spread evenly): the S balancing can reach on this machine",
                p - 1
            ),
            "busy %: each worker's time in tasks over the run's wall time (mean of the runs); the model assumes solo task speeds, so busy workers below the model ran slower tasks, not idle ones".into(),
        ],
        rows,
    })
}

/// (c) three workers, two sharing core 0.
fn experiment_c(plan: &Plan) -> Result<Experiment, CliError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = (cores >= 2).then(|| vec![0, 0, 1]);
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand"];
    let mut rows = Vec::new();
    for n in sizes(plan, &[1500, 6000], &[1500, 3000, 6000, 12000]) {
        let w = Primes::parse(&format!("primes:tasks={n}"))?;
        rows.extend(compare(
            plan,
            n,
            &policies,
            3,
            pin.clone(),
            None,
            primes_run(w),
        )?);
    }
    let note = if pin.is_some() {
        "workers 0 and 1 pinned to core 0, worker 2 to core 1; the emitter is not pinned"
    } else {
        "fewer than 2 cores visible: workers not pinned"
    };
    Ok(Experiment {
        id: "c".into(),
        title: "three workers, two pinned to one core, uniform tasks (Fig. 10)".into(),
        workers: 3,
        workload: Primes::default().spec(),
        notes: vec![note.into()],
        rows,
    })
}

/// (d) very short uniform tasks.
fn experiment_d(plan: &Plan) -> Result<Experiment, CliError> {
    let policies = ["rr", "arrs", "arrs-adaptive"];
    let mut rows = Vec::new();
    for n in sizes(plan, &[68_000], &[68_000, 136_000, 272_000]) {
        let md = MdPairs::new(n, 4096, 16.0, 2015);
        let run = |farm: &mut Farm| {
            let mut sum = 0.0;
            let report = farm
                .run_collect(0..md.pairs, |_, i| md.run(i), |f| sum += f)
                .map_err(farm_error);
            black_box(sum);
            report
        };
        rows.extend(compare(plan, n, &policies, plan.workers, None, None, run)?);
    }
    Ok(Experiment {
        id: "d".into(),
        title: format!(
            "very short uniform tasks: MD-like pair forces, {} workers, with a collector (Fig. 11)",
            plan.workers
        ),
        workers: plan.workers,
        workload: MdPairs::default().spec(),
        notes: vec![],
        rows,
    })
}

/// (e) the feedback farm.
fn experiment_e(plan: &Plan) -> Result<Experiment, CliError> {
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand"];
    let tasks = if plan.quick { 300 } else { 1000 };
    let mut rows = Vec::new();
    for pool in sizes(plan, &[8, 32], &[4, 8, 16, 32, 64]) {
        let spec = keel_policy::Spec::parse(&format!("material:pool={pool},tasks={tasks}"))
            .map_err(keel_workloads::WorkloadError::from)?;
        let m = Material::from_spec(&spec)?;
        let run = |farm: &mut Farm| {
            let mut search = m.search();
            let report = farm
                .run_feedback(
                    m.initial(),
                    |me, s| m.improve(me.index, s),
                    |s, fb| {
                        if let Some(next) = search.collect(s) {
                            fb.send(next);
                        }
                    },
                )
                .map_err(farm_error);
            black_box(search.best);
            report
        };
        rows.extend(compare(plan, pool, &policies, 2, None, None, run)?);
    }
    Ok(Experiment {
        id: "e".into(),
        title: format!("material optimisation with feedback, {tasks} tasks, 2 workers of strategy cost 1 and 4; size = pool (Fig. 13)"),
        workers: 2,
        workload: Material::default().spec(),
        notes: vec![],
        rows,
    })
}

/// Per-item cost with empty tasks: `rr` and `arrs` alternate run by run
/// (this machine's speed drifts by tens of percent within minutes), and
/// `arrs`'s ratio to `rr` is the median of the ratios of paired runs.
fn overhead(plan: &Plan) -> Result<Vec<Overhead>, CliError> {
    let items = if plan.quick { 300_000 } else { 2_000_000 };
    let reps = plan.runs.max(3);
    let policies = ["rr", "arrs"];
    let mut out = Vec::new();
    let mut worker_counts = vec![1, plan.workers];
    worker_counts.dedup();
    for workers in worker_counts {
        let mut farms: Vec<Farm> = policies
            .iter()
            .map(|p| build(p, workers, None))
            .collect::<Result<_, _>>()?;
        let mut ns = vec![Vec::with_capacity(reps); policies.len()];
        for _ in 0..reps {
            for (i, farm) in farms.iter_mut().enumerate() {
                let t = Instant::now();
                farm.run(0..items, |_, i| {
                    black_box(i);
                })
                .map_err(farm_error)?;
                ns[i].push(t.elapsed().as_secs_f64() * 1e9 / items as f64);
            }
        }
        let mut ratios: Vec<f64> = ns[1].iter().zip(&ns[0]).map(|(x, rr)| x / rr).collect();
        for (i, policy) in policies.iter().enumerate() {
            let mut sorted = ns[i].clone();
            sorted.sort_by(f64::total_cmp);
            out.push(Overhead {
                policy: policy.to_string(),
                workers,
                items,
                ns_per_item: sorted[sorted.len() / 2],
                range: (sorted[0], sorted[sorted.len() - 1]),
                vs_rr: (i > 0).then(|| median(&mut ratios)),
            });
        }
    }
    Ok(out)
}

/// `keel bench farm`.
pub fn run_farm(args: &BenchFarmArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let runs = args.runs.unwrap_or(DEFAULT_RUNS);
    if runs == 0 {
        return Err(CliError::Usage("--runs must be at least 1".into()));
    }
    for e in &args.experiments {
        if !EXPERIMENTS.contains(&e.as_str()) {
            return Err(CliError::Usage(format!(
                "unknown farm experiment `{e}`; valid: {}",
                EXPERIMENTS.join(", ")
            )));
        }
    }
    let chosen = |id: &str| args.experiments.is_empty() || args.experiments.iter().any(|e| e == id);
    let workers = args.workers.unwrap_or(2);
    if workers == 0 {
        return Err(CliError::Usage("--workers must be at least 1".into()));
    }
    let plan = Plan {
        quick: args.quick,
        runs,
        workers,
    };
    let mut report = FarmBenchReport {
        quick: args.quick,
        runs,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        experiments: Vec::new(),
        overhead: Vec::new(),
    };
    type Run = fn(&Plan) -> Result<Experiment, CliError>;
    let all: [(&str, Run); 5] = [
        ("a", experiment_a),
        ("b", experiment_b),
        ("c", experiment_c),
        ("d", experiment_d),
        ("e", experiment_e),
    ];
    if !args.json {
        writeln!(
            out,
            "keel bench farm{}: {} runs per point, policies interleaved; {} cores; S = ⟨t_rr⟩/⟨t_X⟩ ± standard error",
            if args.quick { " --quick" } else { "" },
            runs,
            report.cores
        )?;
    }
    for (id, run) in all {
        if chosen(id) {
            let e = run(&plan)?;
            if !args.json {
                writeln!(out)?;
                write_experiment(out, &e)?;
                out.flush()?;
            }
            report.experiments.push(e);
        }
    }
    if chosen("overhead") {
        report.overhead = overhead(&plan)?;
        if !args.json {
            writeln!(out)?;
            write_overhead(out, &report.overhead)?;
        }
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    }
    Ok(())
}

/// One experiment's header and table.
pub fn write_experiment(out: &mut dyn Write, e: &Experiment) -> Result<(), CliError> {
    writeln!(out, "({}) {}", e.id, e.title)?;
    writeln!(out, "  workload {}", e.workload)?;
    for note in &e.notes {
        writeln!(out, "  {note}")?;
    }
    let has_model = e.rows.iter().any(|r| r.model.is_some());
    let has_busy = e.rows.iter().any(|r| r.busy_percent.is_some());
    let size = if e.id == "e" { "pool" } else { "tasks" };
    let mut rows = vec![[
        size.to_string(),
        "policy".into(),
        "⟨t⟩".into(),
        "± se".into(),
        "S".into(),
        "± se".into(),
        if has_model {
            "% of model".into()
        } else {
            String::new()
        },
        "items per worker".into(),
        if has_busy {
            "busy % per worker".into()
        } else {
            String::new()
        },
    ]];
    for r in &e.rows {
        let items: Vec<String> = r.per_worker.iter().map(u64::to_string).collect();
        rows.push([
            r.size.to_string(),
            r.policy.clone(),
            report::duration(r.mean_s),
            report::duration(r.se_s),
            format!("{:.3}", r.speedup),
            format!("{:.3}", r.speedup_se),
            r.model
                .map_or(String::new(), |m| format!("{:.1}", 100.0 * r.speedup / m)),
            items.join("/"),
            r.busy_percent.as_ref().map_or(String::new(), |busy| {
                let each: Vec<String> = busy.iter().map(|b| format!("{b:.0}")).collect();
                each.join("/")
            }),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn write_overhead(out: &mut dyn Write, rows: &[Overhead]) -> Result<(), CliError> {
    writeln!(
        out,
        "(overhead) per-item cost with empty tasks, no collector, rr and arrs alternating run by run (median; goal rr ≤ 50 ns, arrs ≤ 1.2 × rr)"
    )?;
    let mut table = vec![[
        "policy".to_string(),
        "workers".into(),
        "items".into(),
        "ns/item".into(),
        "range".into(),
        "× rr (paired)".into(),
    ]];
    for r in rows {
        table.push([
            r.policy.clone(),
            r.workers.to_string(),
            r.items.to_string(),
            format!("{:.1}", r.ns_per_item),
            format!("{:.1}–{:.1}", r.range.0, r.range.1),
            r.vs_rr.map_or(String::new(), |x| format!("{x:.3}")),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The demo's farm section: (b) in miniature, one run per policy.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let w = Primes::parse("primes:tasks=400,fast-workers=1")?;
    let model = w.model_speedup(2, fast_speed(&w));
    let mut rows = vec![[
        "policy".to_string(),
        "time".into(),
        "S vs rr".into(),
        "% of model".into(),
        "items per worker".into(),
    ]];
    let mut t_rr = None;
    for policy in ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"] {
        let mut farm = build(policy, 2, None)?;
        let start = Instant::now();
        let report = primes_run(w)(&mut farm)?;
        let t = start.elapsed().as_secs_f64();
        let rr = *t_rr.get_or_insert(t);
        let items: Vec<String> = report.per_worker.iter().map(u64::to_string).collect();
        rows.push([
            policy.into(),
            report::duration(t),
            format!("{:.2}", rr / t),
            format!("{:.0}", 100.0 * rr / t / model),
            items.join("/"),
        ]);
    }
    writeln!(
        out,
        "{} tasks on 2 workers, worker 0's tasks {:.1}× cheaper; model S = {model:.2}; one run each (keel bench farm repeats)",
        w.tasks,
        2.0 * model - 1.0
    )?;
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_policy::farm::ScriptedQueues;

    fn shares(speeds: Vec<f64>, items: usize) -> Vec<usize> {
        let mut split = KnownSpeedSplit::new(speeds);
        let view = ScriptedQueues::new(3);
        split.start(&FarmConfig::new(3, None).unwrap()).unwrap();
        let mut got = vec![0; 3];
        for _ in 0..items {
            let w = split.next(&view).worker().unwrap();
            got[w] += 1;
        }
        got
    }

    #[test]
    fn known_split_gives_each_worker_its_speeds_share_evenly_spread() {
        // Speeds 6.5 : 1 : (unlisted) 1, 85 items = 65 + 10 + 10.
        assert_eq!(shares(vec![6.5, 1.0], 85), vec![65, 10, 10]);
        // Every prefix stays within one item of its share: no worker waits
        // for the end of the stream to get its items.
        let mut split = KnownSpeedSplit::new(vec![6.5, 1.0]);
        let view = ScriptedQueues::new(3);
        split.start(&FarmConfig::new(3, None).unwrap()).unwrap();
        let mut got = [0.0; 3];
        for n in 1..=850 {
            got[split.next(&view).worker().unwrap()] += 1.0;
            for (w, share) in [6.5 / 8.5, 1.0 / 8.5, 1.0 / 8.5].iter().enumerate() {
                assert!(
                    (got[w] - share * n as f64).abs() <= 1.0,
                    "item {n}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn known_split_waits_when_its_worker_is_full() {
        let mut split = KnownSpeedSplit::new(vec![1.0, 1.0]);
        split.start(&FarmConfig::new(2, Some(1)).unwrap()).unwrap();
        let mut view = ScriptedQueues::new(2);
        view.capacity = Some(1);
        view.levels = vec![1, 1];
        assert_eq!(split.next(&view), Decision::WaitForRoom);
        view.levels = vec![0, 0];
        // The wait cost nothing: the first item still goes to worker 0.
        assert_eq!(split.next(&view), Decision::Send(0));
        assert_eq!(split.next(&view), Decision::Send(1));
    }
}
