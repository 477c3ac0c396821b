//! `keel bench auto`: the Auto4OMP evaluation (paper §4, Table 3) on this
//! machine. Each time-stepping workload of `keel_workloads::steps` runs
//! under every portfolio schedule, with its default chunk and with the
//! expert chunk, and under each selection method, `reps` times. Within a
//! repeat the configurations take turns step by step (each keeps its own
//! loop ids, so its schedule state and selection evolve as in a run of its
//! own): on a shared machine whose speed drifts over seconds, instance `k`
//! of every configuration then runs within moments of the others. From the
//! fixed runs come **Oracle** (the best fixed configuration *per loop
//! instance*, from the medians of the repeats) and **ManualBest** (the best
//! fixed schedule *per loop* with the default chunk, found after the fact).
//! Every configuration is reported as % degradation relative to Oracle.
//! Beside it, two readings the goals need: **Oracle held out**, whose
//! excess over Oracle is the luck of taking, per instance, the smallest of
//! many noisy medians; and `auto,keel` against each Auto4OMP method with
//! the 95 % interval of their paired per-repeat differences, so that "ahead
//! where they differ by more than noise" is read off, not guessed.
//!
//! Times are taken around each whole loop call, so the selection's own
//! bookkeeping (choosing before the fork, observing after the join) counts
//! against the methods. Loop ids are unique per configuration and repeat,
//! so every run starts with fresh records and selection state.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use keel::loops::{record, LoopId, LoopRecord};
use keel::policy::dls::AUTO4OMP_PORTFOLIO;
use keel::policy::select::oracle::{held_out_oracle, LoopTimes};
use keel::policy::select::{self, degradation_percent, Run};
use keel_workloads::steps::{stepped_workload, SteppedWorkload};
use serde::Serialize;

use crate::bench::global_threads;
use crate::cli::BenchAutoArgs;
use crate::error::CliError;
use crate::report::{self, median};

/// The workloads the bench runs by default (their pinned defaults).
pub const WORKLOADS: [&str; 5] = [
    "mandelbrot-zoom",
    "lavamd-steps",
    "sphynx",
    "gromacs",
    "phase-change",
];

/// Small versions for `--quick` (and `keel demo`): seconds, not minutes.
pub const QUICK_WORKLOADS: [&str; 2] = [
    "mandelbrot-zoom:width=96,height=64,max-iter=200,steps=16",
    "phase-change:iterations=60000,steps=16,switch=8",
];

/// The methods, in report order.
pub const METHODS: [&str; 4] = ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"];

/// `auto,keel` with every instance pinned to plain STATIC: what the
/// selection mechanism costs by itself.
pub const PINNED_STATIC: &str = "auto:method=keel,expert-chunk=0,pin=static";

/// A workload must spread its best and worst fixed schedules by this much
/// (or be balanced by design) to discriminate between schedules.
pub const DISCRIMINATION: f64 = 0.20;

/// One fixed or selecting configuration's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigResult {
    /// `static`, `static+expert`, `auto,keel`, …
    pub config: String,
    /// Seconds over the whole program: the sum over loop instances of each
    /// instance's median across the repeats (for every configuration,
    /// fixed or selecting, and for Oracle and ManualBest alike).
    pub total: f64,
    /// `(total − Oracle) / Oracle · 100`.
    pub degradation_percent: f64,
}

/// A selection method's outcome on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct MethodResult {
    /// The configuration and its total.
    pub result: ConfigResult,
    /// Every repeat's total, seconds, in increasing order: the spread of a
    /// method's own runs, against which differences between methods are
    /// read. `result.total` is not their median but the sum of the
    /// per-instance medians, as for every other configuration.
    pub repeat_totals: Vec<f64>,
    /// Seconds spent in exploration instances beyond Oracle's time for
    /// them (in the repeat with the median total).
    pub exploration_cost: f64,
    /// Exploration instances (same repeat).
    pub exploration_instances: u64,
    /// Each loop's selection timeline (same repeat).
    pub timelines: Vec<(String, Vec<Run>)>,
    /// `auto,keel` against this method (`None` for `auto,keel` itself).
    pub versus_keel: Option<VersusKeel>,
}

/// `auto,keel` against another method on one workload, with the noise of
/// the difference: the two took turns step by step in every repeat, so
/// each repeat gives one paired difference, and their scatter is the noise
/// the goal "ahead where they differ by more than noise" is read against.
#[derive(Clone, Debug, Serialize)]
pub struct VersusKeel {
    /// `(T_keel − T_method) / Oracle · 100` from the two totals of the
    /// table (sums of per-instance medians): negative when `auto,keel` is
    /// faster.
    pub difference_points: f64,
    /// Half-width of the 95 % interval of the mean paired per-repeat
    /// difference (Student's t over the repeats), in the same points;
    /// `None` with a single repeat.
    pub noise_points: Option<f64>,
    /// `ahead`, `behind`, `within noise`, or `no noise estimate`.
    pub verdict: &'static str,
}

/// One workload's report.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadReport {
    /// The workload's full spec.
    pub spec: String,
    /// Loop instances per run.
    pub instances: usize,
    /// Oracle's total, seconds.
    pub oracle: f64,
    /// Oracle held out ([`select::oracle::held_out_oracle`]): each
    /// instance's choice made from the other repeats and timed in the one
    /// left out, seconds; `None` with a single repeat. Its excess over
    /// Oracle is Oracle's luck, a lead no run can repeat.
    pub oracle_held_out: Option<f64>,
    /// ManualBest's total and its schedule per loop.
    pub manual_best: ConfigResult,
    /// ManualBest's choice per loop name.
    pub manual_best_schedules: Vec<(String, String)>,
    /// Every fixed configuration.
    pub fixed: Vec<ConfigResult>,
    /// Every method.
    pub methods: Vec<MethodResult>,
    /// (worst − best) / best over the default-chunk fixed schedules.
    pub spread: f64,
    /// Balanced by design (exempt from the spread rule).
    pub balanced: bool,
    /// The selection mechanism's own cost: `auto,keel` pinned to STATIC
    /// with the expert chunk off ([`PINNED_STATIC`]: the method decides and
    /// observes every instance, the context times every thread, the record
    /// grows, but every instance runs plain STATIC) over fixed `static`,
    /// the two taking turns step by step in every repeat; the median of the
    /// per-repeat ratios of the totals, minus 1.
    pub mechanism_cost_vs_static: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct AutoReport {
    /// Threads of the global pool.
    pub threads: usize,
    /// Repeats of every configuration.
    pub reps: usize,
    /// One per workload.
    pub workloads: Vec<WorkloadReport>,
}

/// One run of a program: the time of every loop call, in program order, and
/// the record of every loop afterwards.
struct ProgramRun {
    times: Vec<f64>,
    records: Vec<(String, LoopRecord)>,
}

impl ProgramRun {
    fn total(&self) -> f64 {
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
fn sum_of_instance_medians(runs: &[ProgramRun]) -> Result<f64, CliError> {
    // One "schedule" (this configuration) per repeat: `LoopTimes` takes the
    // element-wise medians exactly as it does for the fixed configurations.
    let repeats: Vec<Vec<Vec<f64>>> = runs.iter().map(|r| vec![r.times.clone()]).collect();
    Ok(LoopTimes::from_repeats(&repeats)?.total(0))
}

/// How a fixed configuration sets the chunk.
#[derive(Clone, Copy, PartialEq)]
enum ChunkMode {
    Default,
    Expert,
}

/// One configuration's run of a program, advanced a step at a time so that
/// the configurations of a repeat can take turns step by step.
struct Program<'a> {
    schedule: &'a str,
    chunk: ChunkMode,
    tag: String,
    ids: HashMap<&'static str, String>,
    times: Vec<f64>,
}

impl<'a> Program<'a> {
    fn new(schedule: &'a str, chunk: ChunkMode, tag: String) -> Self {
        Program {
            schedule,
            chunk,
            tag,
            ids: HashMap::new(),
            times: Vec::new(),
        }
    }

    /// Runs the loop calls of `step`, timing each whole call.
    fn step(
        &mut self,
        w: &dyn SteppedWorkload,
        step: usize,
        threads: usize,
    ) -> Result<(), CliError> {
        let schedule: keel::Schedule = self.schedule.parse().map_err(|e| {
            CliError::Usage(format!("{}: {}", self.schedule, keel::LoopError::from(e)))
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
                .id(id);
            if self.chunk == ChunkMode::Expert {
                if let Some(k) = select::expert_chunk(call.iterations as u64, threads) {
                    l = l.chunk(k);
                }
            }
            let started = Instant::now();
            l.for_each(|i| {
                black_box(w.run(step, c, i));
            })
            .map_err(|e| CliError::Usage(format!("{}: {e}", self.schedule)))?;
            self.times.push(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    fn finish(self) -> ProgramRun {
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
fn run_interleaved(
    w: &dyn SteppedWorkload,
    programs: &mut [Program<'_>],
    threads: usize,
) -> Result<(), CliError> {
    let count = programs.len();
    for step in 0..w.steps() {
        for turn in 0..count {
            programs[(turn + step) % count].step(w, step, threads)?;
        }
    }
    Ok(())
}

/// Runs the whole evaluation of one workload.
pub fn bench_workload(
    w: &dyn SteppedWorkload,
    reps: usize,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<WorkloadReport, CliError> {
    let spec = w.spec();
    // Loop name of every instance, in program order.
    let names: Vec<&'static str> = (0..w.steps())
        .flat_map(|s| w.calls(s).into_iter().map(|c| c.name))
        .collect();

    // One untimed pass first: page faults, caches and the pool's first
    // wake-ups would otherwise fall on whichever configuration runs first.
    progress(&format!("{spec}: warm-up"));
    let mut warm_up = [Program::new(
        "static",
        ChunkMode::Default,
        format!("bench-auto/{spec}/warm-up"),
    )];
    run_interleaved(w, &mut warm_up, threads)?;

    // Every fixed configuration, the pinned mechanism probe and the
    // methods take turns step by step within each repeat.
    let mut configs: Vec<(String, &str, ChunkMode)> = Vec::new();
    for name in AUTO4OMP_PORTFOLIO {
        configs.push((name.to_string(), name, ChunkMode::Default));
        configs.push((format!("{name}+expert"), name, ChunkMode::Expert));
    }
    let mut fixed_runs: Vec<Vec<ProgramRun>> = configs.iter().map(|_| Vec::new()).collect();
    let mut method_runs: Vec<Vec<ProgramRun>> = METHODS.iter().map(|_| Vec::new()).collect();
    let mut mechanism_ratios = Vec::with_capacity(reps);
    for rep in 0..reps {
        progress(&format!(
            "{spec}: repeat {}/{reps}: {} fixed configurations, {PINNED_STATIC} and {} methods, step by step",
            rep + 1,
            configs.len(),
            METHODS.len()
        ));
        let mut programs: Vec<Program<'_>> = configs
            .iter()
            .map(|(label, schedule, chunk)| {
                Program::new(schedule, *chunk, format!("bench-auto/{spec}/{label}/{rep}"))
            })
            .collect();
        programs.push(Program::new(
            PINNED_STATIC,
            ChunkMode::Default,
            format!("bench-auto/{spec}/pinned/{rep}"),
        ));
        programs.extend(METHODS.iter().map(|method| {
            Program::new(
                method,
                ChunkMode::Default,
                format!("bench-auto/{spec}/{method}/{rep}"),
            )
        }));
        run_interleaved(w, &mut programs, threads)?;
        let mut runs = programs.into_iter().map(Program::finish);
        for runs_of in fixed_runs.iter_mut() {
            runs_of.push(runs.next().expect("one run per configuration"));
        }
        let pinned = runs.next().expect("the pinned run");
        mechanism_ratios.push(pinned.total() / fixed_runs[0][rep].total() - 1.0);
        for runs_of in method_runs.iter_mut() {
            runs_of.push(runs.next().expect("one run per method"));
        }
    }
    // Per loop: its instances' times `[repeat][configuration][instance]`,
    // reduced to medians by `select::oracle::LoopTimes` — once over every
    // configuration (Oracle), once over the default chunks (ManualBest).
    let mut loop_names: Vec<&'static str> = names.clone();
    loop_names.sort_unstable();
    loop_names.dedup();
    let defaults: Vec<usize> = (0..configs.len())
        .filter(|&k| configs[k].2 == ChunkMode::Default)
        .collect();
    // Per-instance medians of every configuration, in program order.
    let mut medians = vec![vec![0.0; names.len()]; configs.len()];
    let mut oracle_per_instance = vec![0.0; names.len()];
    let mut held_out_total = Some(0.0);
    let mut manual_total = 0.0;
    let mut manual_best_schedules = Vec::new();
    for name in &loop_names {
        let at: Vec<usize> = (0..names.len()).filter(|&i| names[i] == *name).collect();
        let repeats = |ks: &[usize]| -> Vec<Vec<Vec<f64>>> {
            (0..reps)
                .map(|rep| {
                    ks.iter()
                        .map(|&k| at.iter().map(|&i| fixed_runs[k][rep].times[i]).collect())
                        .collect()
                })
                .collect()
        };
        let every: Vec<usize> = (0..configs.len()).collect();
        let every_repeat = repeats(&every);
        let all = LoopTimes::from_repeats(&every_repeat)?;
        let default_only = LoopTimes::from_repeats(&repeats(&defaults))?;
        for (k, row) in medians.iter_mut().enumerate() {
            for (j, &i) in at.iter().enumerate() {
                row[i] = all.time(k, j);
            }
        }
        for (j, (&i, &best)) in at.iter().zip(&all.oracle_choices()).enumerate() {
            oracle_per_instance[i] = all.time(best, j);
        }
        held_out_total = match (held_out_total, held_out_oracle(&every_repeat)?) {
            (Some(sum), Some(times)) => Some(sum + times.iter().sum::<f64>()),
            _ => None,
        };
        let (best, time) = default_only.manual_best();
        manual_total += time;
        manual_best_schedules.push((name.to_string(), configs[defaults[best]].0.clone()));
    }
    let oracle: f64 = oracle_per_instance.iter().sum();
    let fixed: Vec<ConfigResult> = configs
        .iter()
        .zip(&medians)
        .map(|((label, _, _), m)| {
            let total = m.iter().sum();
            ConfigResult {
                config: label.clone(),
                total,
                degradation_percent: degradation_percent(total, oracle),
            }
        })
        .collect();
    let default_totals: Vec<f64> = defaults.iter().map(|&k| fixed[k].total).collect();
    let best = default_totals.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = default_totals.iter().copied().fold(0.0, f64::max);

    // The methods.
    let mut methods = Vec::new();
    for (method, runs) in METHODS.iter().zip(&method_runs) {
        let total = sum_of_instance_medians(runs)?;
        let mut totals: Vec<(f64, usize)> = runs
            .iter()
            .enumerate()
            .map(|(k, r)| (r.total(), k))
            .collect();
        totals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (_, typical) = totals[totals.len() / 2];
        let run = &runs[typical];
        // Which instances explored: from each loop's timeline, mapped back
        // to program order through the loop's own instance counter.
        let mut seen: HashMap<&str, u64> = HashMap::new();
        let mut exploration_cost = 0.0;
        let mut exploration_instances = 0;
        for (i, name) in names.iter().enumerate() {
            let k = seen.entry(name).or_insert(0);
            let runs_of = run
                .records
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, r)| r.selection.as_ref());
            let decision = runs_of.and_then(|t| {
                t.runs
                    .iter()
                    .find(|r| (r.first..r.first + r.len).contains(k))
            });
            if let Some(d) = decision {
                if d.phase.is_exploration() {
                    exploration_instances += 1;
                    exploration_cost += run.times[i] - oracle_per_instance[i];
                }
            }
            *k += 1;
        }
        let timelines = run
            .records
            .iter()
            .filter_map(|(n, r)| r.selection.as_ref().map(|t| (n.clone(), t.runs.clone())))
            .collect();
        methods.push(MethodResult {
            result: ConfigResult {
                config: method.to_string(),
                total,
                degradation_percent: degradation_percent(total, oracle),
            },
            exploration_cost,
            exploration_instances,
            timelines,
            repeat_totals: totals.iter().map(|&(t, _)| t).collect(),
            versus_keel: None,
        });
    }
    // METHODS[0] is auto,keel.
    let keel_total = methods[0].result.total;
    for (m, runs) in methods.iter_mut().zip(&method_runs).skip(1) {
        let paired: Vec<f64> = method_runs[0]
            .iter()
            .zip(runs)
            .map(|(k, r)| (k.total() - r.total()) / oracle * 100.0)
            .collect();
        m.versus_keel = Some(versus_keel(
            (keel_total - m.result.total) / oracle * 100.0,
            &paired,
        ));
    }

    Ok(WorkloadReport {
        spec,
        instances: names.len(),
        oracle,
        oracle_held_out: held_out_total,
        manual_best: ConfigResult {
            config: "ManualBest".into(),
            total: manual_total,
            degradation_percent: degradation_percent(manual_total, oracle),
        },
        manual_best_schedules,
        fixed,
        methods,
        spread: (worst - best) / best,
        balanced: w.balanced(),
        mechanism_cost_vs_static: median(&mut mechanism_ratios),
    })
}

/// Two-sided 95 % quantiles of Student's t for 1 … 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Half-width of the 95 % interval of the mean of `samples` (`None` for
/// fewer than two). With three repeats t is 4.3: an interval from so few
/// runs is wide, and says so, rather than calling a difference real.
fn interval_95(samples: &[f64]) -> Option<f64> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let t = T_975.get(n - 2).copied().unwrap_or(1.96);
    Some(t * report::mean_se(samples).1)
}

/// The verdict on `difference` (points, negative when `auto,keel` is
/// faster) against the interval of the paired per-repeat differences.
fn versus_keel(difference: f64, paired: &[f64]) -> VersusKeel {
    let noise = interval_95(paired);
    let verdict = match noise {
        None => "no noise estimate",
        Some(half) if difference.abs() <= half => "within noise",
        Some(_) if difference < 0.0 => "ahead",
        Some(_) => "behind",
    };
    VersusKeel {
        difference_points: difference,
        noise_points: noise,
        verdict,
    }
}

/// `keel bench auto`.
pub fn run_auto(args: &BenchAutoArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    if reps == 0 {
        return Err(CliError::Usage("--reps must be at least 1".into()));
    }
    let specs: Vec<String> = match (&args.workloads[..], args.quick) {
        ([], true) => QUICK_WORKLOADS.iter().map(|s| s.to_string()).collect(),
        ([], false) => WORKLOADS.iter().map(|s| s.to_string()).collect(),
        (given, _) => given.to_vec(),
    };
    let workloads: Vec<Box<dyn SteppedWorkload>> = specs
        .iter()
        .map(|s| stepped_workload(s))
        .collect::<Result<_, _>>()?;
    let threads = global_threads()?;
    let quiet = args.quiet || args.quick;
    let mut progress = |what: &str| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "keel bench auto: {what}");
        }
    };
    let report = AutoReport {
        threads,
        reps,
        workloads: workloads
            .iter()
            .map(|w| bench_workload(w.as_ref(), reps, threads, &mut progress))
            .collect::<Result<_, _>>()?,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    write_report(out, &report, args.quick)
}

/// The tables: a Table-3-style summary, then each workload's detail.
pub fn write_report(out: &mut dyn Write, r: &AutoReport, brief: bool) -> Result<(), CliError> {
    writeln!(
        out,
        "keel bench auto: {} threads, {} repeat(s) of every configuration, taking turns step by step; every total sums each loop instance's median over the repeats; % degradation relative to Oracle (best fixed configuration per loop instance)",
        r.threads, r.reps
    )?;
    // Summary: one column per workload.
    let mut header = vec!["".to_string()];
    header.extend(r.workloads.iter().map(|w| short_name(&w.spec)));
    let mut rows = vec![header];
    let mut row_of = |label: &str, pick: &dyn Fn(&WorkloadReport) -> String| {
        let mut row = vec![label.to_string()];
        row.extend(r.workloads.iter().map(pick));
        rows.push(row);
    };
    row_of("Oracle (s)", &|w| format!("{:.3}", w.oracle));
    row_of("ManualBest %", &|w| {
        format!("{:.1}", w.manual_best.degradation_percent)
    });
    for (k, method) in METHODS.iter().enumerate() {
        row_of(&format!("{method} %"), &|w| {
            format!("{:.1}", w.methods[k].result.degradation_percent)
        });
    }
    // One repeat (the demo, `--quick`) has neither a held-out Oracle nor
    // a noise estimate: no rows of dashes.
    if r.reps >= 2 {
        row_of("Oracle held out %", &|w| match w.oracle_held_out {
            Some(t) => format!("{:+.1}", degradation_percent(t, w.oracle)),
            None => "-".to_string(),
        });
        for (k, method) in METHODS.iter().enumerate().skip(1) {
            row_of(
                &format!("keel − {} (points)", short_method(method)),
                &|w| match &w.methods[k].versus_keel {
                    Some(v) => compact_versus(v),
                    None => "-".to_string(),
                },
            );
        }
    }
    row_of("best fixed %", &|w| {
        let best = w
            .fixed
            .iter()
            .min_by(|a, b| a.total.total_cmp(&b.total))
            .unwrap();
        format!("{:.1} {}", best.degradation_percent, best.config)
    });
    row_of("worst fixed %", &|w| {
        let worst = w
            .fixed
            .iter()
            .max_by(|a, b| a.total.total_cmp(&b.total))
            .unwrap();
        format!("{:.1} {}", worst.degradation_percent, worst.config)
    });
    row_of("spread (default chunks)", &|w| {
        let verdict = if w.balanced {
            "balanced"
        } else if w.spread >= DISCRIMINATION {
            "discriminates"
        } else {
            "does NOT discriminate"
        };
        format!("{:.0}% {verdict}", w.spread * 100.0)
    });
    row_of("mechanism (pinned static) %", &|w| {
        format!("{:+.1}", w.mechanism_cost_vs_static * 100.0)
    });
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    for w in &r.workloads {
        writeln!(out)?;
        write_workload(out, w, brief)?;
    }
    Ok(())
}

fn short_method(method: &str) -> &str {
    method.strip_prefix("auto,").unwrap_or(method)
}

fn compact_versus(v: &VersusKeel) -> String {
    match v.noise_points {
        Some(half) => format!("{:+.1} ±{half:.1} {}", v.difference_points, v.verdict),
        None => format!("{:+.1} {}", v.difference_points, v.verdict),
    }
}

fn short_name(spec: &str) -> String {
    spec.split(':').next().unwrap_or(spec).to_string()
}

fn write_workload(out: &mut dyn Write, w: &WorkloadReport, brief: bool) -> Result<(), CliError> {
    writeln!(
        out,
        "{}: {} loop instances; Oracle {}",
        w.spec,
        w.instances,
        report::duration(w.oracle)
    )?;
    if let Some(held_out) = w.oracle_held_out {
        writeln!(
            out,
            "  Oracle held out (each instance's choice made from the other repeats, timed in the one left out): {} ({:+.1}%: Oracle's luck)",
            report::duration(held_out),
            degradation_percent(held_out, w.oracle)
        )?;
    }
    let manual: Vec<String> = w
        .manual_best_schedules
        .iter()
        .map(|(l, s)| format!("{l} = {s}"))
        .collect();
    writeln!(
        out,
        "  ManualBest ({}): {} ({:+.1}%)",
        manual.join(", "),
        report::duration(w.manual_best.total),
        w.manual_best.degradation_percent
    )?;
    for m in &w.methods {
        writeln!(
            out,
            "  {}: {} ({:+.1}%; repeats {:+.1} … {:+.1}%); exploration {} instances costing {} over Oracle",
            m.result.config,
            report::duration(m.result.total),
            m.result.degradation_percent,
            degradation_percent(m.repeat_totals[0], w.oracle),
            degradation_percent(m.repeat_totals[m.repeat_totals.len() - 1], w.oracle),
            m.exploration_instances,
            report::duration(m.exploration_cost.max(0.0)),
        )?;
        for (name, runs) in &m.timelines {
            writeln!(out, "    {name}: {}", timeline(runs))?;
        }
        if let Some(v) = m.versus_keel.as_ref().filter(|v| v.noise_points.is_some()) {
            writeln!(
                out,
                "    auto,keel − {}: {:+.1} ± {:.1} points (95 % interval of the paired repeats): {}",
                m.result.config,
                v.difference_points,
                v.noise_points.unwrap_or(f64::NAN),
                v.verdict
            )?;
        }
    }
    writeln!(
        out,
        "  selection mechanism ({PINNED_STATIC}) vs fixed static: {:+.1}% (median of paired repeats)",
        w.mechanism_cost_vs_static * 100.0
    )?;
    if brief {
        return Ok(());
    }
    let mut rows = vec![[
        "fixed".to_string(),
        "total".to_string(),
        "% vs Oracle".to_string(),
    ]];
    for f in &w.fixed {
        rows.push([
            f.config.clone(),
            report::duration(f.total),
            format!("{:+.1}", f.degradation_percent),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// A loop's decisions in one line: exploring stretches are summarised by
/// their length, exploiting ones name their schedule.
fn timeline(runs: &[Run]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        let run = runs[k];
        if run.phase.is_exploration() {
            let mut end = k;
            while end + 1 < runs.len() && runs[end + 1].phase == run.phase {
                end += 1;
            }
            let last = runs[end].first + runs[end].len - 1;
            let span = if last == run.first {
                run.first.to_string()
            } else {
                format!("{}–{last}", run.first)
            };
            parts.push(format!("{span} {}", run.phase));
            k = end + 1;
        } else {
            let last = run.first + run.len - 1;
            let span = if run.len == 1 {
                run.first.to_string()
            } else {
                format!("{}–{last}", run.first)
            };
            parts.push(format!(
                "{span} {} ({})",
                AUTO4OMP_PORTFOLIO[run.index], run.phase
            ));
            k += 1;
        }
    }
    if parts.len() > 12 {
        let shown = parts[..12].join(", ");
        return format!("{shown}, … ({} more runs)", parts.len() - 12);
    }
    parts.join(", ")
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

    #[test]
    fn the_noise_interval_is_students_by_hand() {
        // Mean 2, sample sd 1, n = 3: t(0.975, 2) · 1/√3.
        let half = interval_95(&[1.0, 2.0, 3.0]).unwrap();
        assert!((half - 4.303 / 3f64.sqrt()).abs() < 1e-9, "{half}");
        // n = 2: t(0.975, 1) · sd/√2 with sd = √2 → 12.706.
        assert!((interval_95(&[0.0, 2.0]).unwrap() - 12.706).abs() < 1e-9);
        // Past the table: the normal quantile.
        let many: Vec<f64> = (0..40).map(|k| (k % 2) as f64).collect();
        let sd = (10.0f64 / 39.0).sqrt();
        assert!((interval_95(&many).unwrap() - 1.96 * sd / 40f64.sqrt()).abs() < 1e-9);
        assert_eq!(interval_95(&[5.0]), None);
        assert_eq!(interval_95(&[]), None);
    }

    #[test]
    fn a_difference_counts_only_outside_the_paired_noise() {
        // Consistent repeats: keel 2 points faster in each, interval 0.
        let v = versus_keel(-2.0, &[-2.0, -2.0, -2.0]);
        assert_eq!((v.verdict, v.noise_points), ("ahead", Some(0.0)));
        assert_eq!(versus_keel(1.5, &[1.0, 1.5, 2.0]).verdict, "behind");
        // The same difference among scattered repeats is noise.
        let v = versus_keel(-2.0, &[-12.0, 3.0, 3.0]);
        assert_eq!(v.verdict, "within noise");
        assert!(v.noise_points.unwrap() > 2.0);
        assert_eq!(versus_keel(-2.0, &[-2.0]).verdict, "no noise estimate");
    }
}
