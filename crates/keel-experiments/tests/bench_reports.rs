//! `keel bench loops` and `keel bench auto` as typed reports. Timings are
//! never asserted; the structure, the chunk counts each schedule promises,
//! the error rows and the relations between the summaries are.

use std::sync::{Mutex, MutexGuard};

use keel_experiments::bench::auto::{self, AutoConfig};
use keel_experiments::bench::loops::{self, LoopsConfig};
use keel_experiments::bench::Progress;
use keel_experiments::ExperimentError;

/// The benches run on Keel's global pool and read back their loops'
/// records, as each would in a process of its own: tests in this binary
/// take turns.
static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn small() -> Vec<String> {
    vec![
        "mandelbrot:width=32,height=24,max-iter=60".into(),
        "lavamd:boxes1d=3".into(),
    ]
}

#[test]
fn every_schedule_gets_a_row_and_failures_are_rows() {
    let _alone = alone();
    let mut steps = Vec::new();
    let report = loops::run(
        &LoopsConfig {
            workloads: small(),
            reps: 1,
            ..LoopsConfig::default()
        },
        &mut |p| steps.push(format!("{p:?}")),
    )
    .unwrap();
    // The total first (two workloads × (29 schedules + T_serial)), then
    // one step each.
    assert_eq!(steps[0], "Total(60)");
    assert_eq!(steps.len(), 61);
    assert!(report.threads >= 1);
    assert_eq!(report.workloads.len(), 2);
    for w in &report.workloads {
        let names: Vec<&str> = w.rows.iter().map(|r| r.schedule.as_str()).collect();
        assert_eq!(names.len(), 29, "{names:?}");
        for name in [
            "static",
            "dynamic",
            "guided",
            "awf-b",
            "maf",
            "static-steal",
            "auto",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        assert!(w.t_serial > 0.0);
        for r in &w.rows {
            // Either it ran and has every measurement, or it has an error.
            match &r.error {
                None => {
                    assert!(r.t_par.unwrap() > 0.0, "{r:?}");
                    let ratio = r.ratio_to_ideal_same_round.unwrap();
                    assert!(ratio > 0.0, "{r:?}");
                    assert_eq!(r.below_ideal, ratio < 0.97, "{r:?}");
                    // Against the fastest schedule of the same round: never
                    // below 1, whatever the machine did.
                    assert!(r.ratio_to_best.unwrap() >= 1.0, "{r:?}");
                    let lib = r.lib_percent.unwrap();
                    assert!((0.0..=100.0).contains(&lib), "{r:?}");
                    assert!(r.chunks.unwrap() >= 1, "{r:?}");
                }
                Some(e) => {
                    assert!(!e.is_empty());
                    assert!(r.t_par.is_none());
                }
            }
        }
    }
}

#[test]
fn chosen_schedules_chunks_and_an_unknown_schedule() {
    let _alone = alone();
    let config = |schedules: &[&str]| LoopsConfig {
        schedules: schedules.iter().map(|s| s.to_string()).collect(),
        workloads: vec!["mandelbrot:width=32,height=24,max-iter=60".into()],
        reps: 2,
        chunk: None,
    };
    let mut steps = Vec::new();
    let report = loops::run(&config(&["dynamic,4"]), &mut |p| {
        steps.push(format!("{p:?}"))
    })
    .unwrap();
    // Two rounds of two entries (the sequential reference and dynamic,4),
    // the order rotating: the reference leads the first round only.
    assert_eq!(steps[0], "Total(4)");
    assert_eq!(steps.len(), 5, "{steps:?}");
    assert!(steps[1].contains("1/2: T_serial"), "{steps:?}");
    assert!(steps[3].contains("2/2: dynamic,4"), "{steps:?}");
    let w = &report.workloads[0];
    let (lo, hi) = w.t_serial_range;
    assert!(0.0 < lo && lo <= w.t_serial && w.t_serial <= hi, "{w:?}");
    let rows = &w.rows;
    assert_eq!(rows.len(), 1);
    // The only schedule is the best of every round.
    assert_eq!(rows[0].ratio_to_best, Some(1.0), "{:?}", rows[0]);
    // dynamic,4 over 32 columns: exactly 8 chunks.
    assert_eq!(rows[0].chunks, Some(8), "{:?}", rows[0]);
    // A schedule that does not parse is refused before anything runs.
    let e = loops::run(&config(&["dynamic,4", "no-such-schedule"]), &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, keel_experiments::ExperimentError::Invalid(_)),
        "{e:?}"
    );
    assert!(e.to_string().contains("no-such-schedule"), "{e}");
}

#[test]
fn bad_loop_configurations_are_refused_before_any_run() {
    let bad = |config: LoopsConfig| loops::run(&config, &mut |_| {}).unwrap_err().to_string();
    let reps = LoopsConfig {
        reps: 0,
        ..LoopsConfig::default()
    };
    assert_eq!(bad(reps), "--reps must be at least 1");
    let chunk = LoopsConfig {
        chunk: Some(0),
        ..LoopsConfig::default()
    };
    assert_eq!(bad(chunk), "--chunk must be at least 1");
    let workload = LoopsConfig {
        workloads: vec!["nope".into()],
        ..LoopsConfig::default()
    };
    assert!(matches!(
        loops::run(&workload, &mut |_| {}),
        Err(ExperimentError::Workload(_))
    ));
}

/// Two tiny stepped workloads, two repeats: every fixed configuration and
/// method is reported, each method with its repeats' totals and a timeline
/// covering every instance, and the pinned probe of the selection
/// mechanism's cost.
#[test]
fn bench_auto_reports_every_configuration_the_repeats_and_the_mechanism_probe() {
    let _alone = alone();
    let config = AutoConfig {
        workloads: vec![
            "phase-change:iterations=4000,steps=6,switch=3".into(),
            "sphynx:particles=400,short-particles=200,steps=3".into(),
        ],
        reps: Some(2),
        quick: false,
    };
    let mut heard = Vec::new();
    let report = auto::run(&config, &mut |p| match p {
        Progress::Total(n) => heard.push(format!("total {n}")),
        Progress::Step(what) => heard.push(what.to_string()),
    })
    .unwrap();
    // Two workloads: a warm-up and two repeats each, announced first.
    assert_eq!(heard.len(), 7);
    assert_eq!(heard[0], "total 6");
    assert!(!heard.is_empty(), "progress is reported");
    assert_eq!(report.reps, 2);
    assert_eq!(report.workloads.len(), 2);
    for (w, instances) in report.workloads.iter().zip([6usize, 9]) {
        assert_eq!(w.instances, instances, "{}", w.spec);
        assert_eq!(w.fixed.len(), 24);
        let oracle = w.oracle;
        for fixed in &w.fixed {
            // Oracle is the best per instance: no fixed total beats it.
            assert!(fixed.total >= oracle * (1.0 - 1e-9), "{fixed:?}");
        }
        assert!(w.mechanism_cost_vs_static.is_finite());
        assert_eq!(w.oracle_instance_times_s.len(), instances);
        // auto,keel loop by loop: the loops' times add up to its total,
        // each loop's best over both chunk modes is at most ManualBest's,
        // and the goals are read from the ratios.
        let per_loop = &w.per_loop;
        let loops: Vec<&str> = per_loop.loops.iter().map(|l| l.name.as_str()).collect();
        let expected: &[&str] = if w.spec.starts_with("sphynx") {
            &["sphynx-density", "sphynx-forces"]
        } else {
            &["phase-change"]
        };
        assert_eq!(loops, expected);
        assert_eq!(
            per_loop.loops.iter().map(|l| l.instances).sum::<usize>(),
            instances
        );
        let keel_total = w.methods[0].result.total;
        assert!((per_loop.auto_keel - keel_total).abs() <= 1e-9 * keel_total);
        for l in &per_loop.loops {
            assert!(l.best_fixed_total <= l.manual_best_total, "{l:?}");
            assert!(l.best_fixed_held_out.unwrap() >= l.best_fixed_total * (1.0 - 1e-9));
            assert_eq!(l.ratio, l.auto_keel / l.best_fixed_total);
        }
        assert!((per_loop.per_loop_best - w.manual_best.total) <= 1e-9 * w.manual_best.total);
        let goals: Vec<&str> = per_loop.goals.iter().map(|g| g.goal.as_str()).collect();
        assert_eq!(
            goals,
            ["auto / per-loop best <= 1.03", "every loop <= 1.05"]
        );
        assert_eq!(per_loop.goals[0].value, per_loop.program_ratio);
        assert_eq!(per_loop.goals[1].value, per_loop.worst_loop_ratio);
        // With two repeats each fold chooses from the other repeat alone,
        // and an instance's held-out time (the mean of its two folds)
        // cannot beat Oracle's best mean of the two.
        let held_out = w.oracle_held_out.unwrap();
        assert!(held_out >= oracle * (1.0 - 1e-9), "{held_out} < {oracle}");
        let names: Vec<&str> = w.methods.iter().map(|m| m.result.config.as_str()).collect();
        assert_eq!(
            names,
            ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"]
        );
        for m in &w.methods {
            let totals = &m.repeat_totals;
            assert_eq!(totals.len(), 2, "{m:?}");
            assert!(totals[0] <= totals[1], "{totals:?}");
            let total = m.result.total;
            // The sum of per-instance medians, which with two repeats is
            // the mean of the two totals.
            let mean = (totals[0] + totals[1]) / 2.0;
            assert!(
                (total - mean).abs() <= 1e-9 * mean,
                "{total} is not the sum of per-instance medians {mean}"
            );
            let covered: u64 = m
                .timelines
                .iter()
                .flat_map(|(_, runs)| runs)
                .map(|run| run.len)
                .sum();
            assert_eq!(covered, instances as u64, "{m:?}");
            assert_eq!(m.instance_times_s.len(), instances);
            assert_eq!(m.selected_per_instance.len(), instances);
            assert!(m.selected_per_instance.iter().all(Option::is_some));
            match &m.versus_keel {
                None => assert_eq!(m.result.config, "auto,keel", "{m:?}"),
                Some(versus) => {
                    assert_ne!(m.result.config, "auto,keel");
                    let keel_total = w.methods[0].result.total;
                    let difference = (keel_total - total) / oracle * 100.0;
                    assert!(
                        (versus.difference_points - difference).abs() < 1e-9,
                        "{versus:?}"
                    );
                    assert!(versus.noise_points.unwrap() >= 0.0, "{versus:?}");
                    assert!(
                        ["ahead", "behind", "within noise"].contains(&versus.verdict),
                        "{}",
                        versus.verdict
                    );
                }
            }
        }
    }
}

/// `keel bench objects --quick`: the total announced first, then one step
/// per run of a configuration; every row's flag agrees with its ratio.
#[test]
fn bench_objects_counts_its_runs_and_flags_impossible_ratios() {
    use keel_experiments::bench::objects::{self, total_runs, ObjectsConfig};
    let mut total = None;
    let mut steps = 0u64;
    let report = objects::run(
        &ObjectsConfig {
            quick: true,
            ..ObjectsConfig::default()
        },
        &mut |p| match p {
            Progress::Total(n) => total = Some(n),
            Progress::Step(_) => steps += 1,
        },
    )
    .unwrap();
    assert_eq!(total, Some(total_runs(1)));
    assert_eq!(steps, total_runs(1));
    let rows: usize = report.tables.iter().map(|t| t.rows.len()).sum();
    assert_eq!(rows as u64, total_runs(1));
    for r in report.tables.iter().flat_map(|t| &t.rows) {
        assert_eq!(r.below_ideal, r.of_ideal < 0.97, "{r:?}");
        assert!(!r.step_times_s.is_empty(), "{r:?}");
        let sum: f64 = r.step_times_s.iter().sum();
        assert!(
            (sum - r.steps_s).abs() <= 1e-9 * r.steps_s.max(1.0),
            "{r:?}"
        );
    }
}
