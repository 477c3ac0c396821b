//! The whole evaluation of one workload: every fixed configuration, the
//! pinned mechanism probe and the methods, Oracle and ManualBest.

use std::collections::HashMap;

use crate::evaluation::oracle::{degradation_percent, held_out_oracle, LoopTimes};
use keel::policy::dls::AUTO4OMP_PORTFOLIO;
use keel_workloads::steps::SteppedWorkload;

use super::goals::{held_out_best, LoopVersusBest, PerLoopGoals};
use super::noise::versus_keel;
use super::program::{run_interleaved, sum_of_instance_medians, ChunkMode, Program, ProgramRun};
use super::{ConfigResult, MethodResult, WorkloadReport, METHODS, PINNED_STATIC};
use crate::error::Result;
use crate::sim::Progress;
use keel_policy::stats::median;

/// Runs the whole evaluation of one workload.
pub fn bench_workload(
    w: &dyn SteppedWorkload,
    reps: usize,
    threads: usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<WorkloadReport> {
    let spec = w.spec();
    // Loop name of every instance, in program order.
    let names: Vec<&'static str> = (0..w.steps())
        .flat_map(|s| w.calls(s).into_iter().map(|c| c.name))
        .collect();

    // One untimed pass first: page faults, caches and the pool's first
    // wake-ups would otherwise fall on whichever configuration runs first.
    let mut warm_up = [Program::new(
        "static",
        ChunkMode::Default,
        format!("bench-auto/{spec}/warm-up"),
    )];
    run_interleaved(w, &mut warm_up, threads)?;
    let name = spec.split(':').next().unwrap_or(&spec).to_string();
    progress(Progress::Step(&format!("{name}: warm-up")));

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
        progress(Progress::Step(&format!(
            "{name}: repeat {}/{reps}",
            rep + 1
        )));
    }
    // Per loop: its instances' times `[repeat][configuration][instance]`,
    // reduced to medians by `evaluation::oracle::LoopTimes` — once over every
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
    let mut per_loop = Vec::with_capacity(loop_names.len());
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
        // auto,keel on this loop, its instances' medians summed as every
        // configuration's are (METHODS[0] is auto,keel).
        let keel_repeats: Vec<Vec<Vec<f64>>> = method_runs[0]
            .iter()
            .map(|run| vec![at.iter().map(|&i| run.times[i]).collect()])
            .collect();
        let keel_time = LoopTimes::from_repeats(&keel_repeats)?.total(0);
        let (best_any, best_any_time) = all.manual_best();
        per_loop.push(LoopVersusBest::new(
            name,
            at.len(),
            keel_time,
            (&configs[best_any].0, best_any_time),
            held_out_best(&every_repeat)?,
            (&configs[defaults[best]].0, time),
        ));
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
        let mut selected = Vec::with_capacity(names.len());
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
            selected.push(decision.map(|d| d.index));
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
            instance_times_s: run.times.clone(),
            selected_per_instance: selected,
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
        oracle_instance_times_s: oracle_per_instance,
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
        per_loop: PerLoopGoals::new(per_loop),
    })
}
