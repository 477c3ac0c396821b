//! `keel sim loops`, `farm`, `objects` and `perf` as typed reports on small
//! configurations: the structure, the relations the experiments promise,
//! determinism under a seed, and typed refusals.

use keel_experiments::sim::farm::{self, FarmConfig};
use keel_experiments::sim::loops::{self, LoopsConfig, BATHTUB_SCHEDULES, METHODS};
use keel_experiments::sim::objects::{self, ObjectsConfig, ObjectsProgress};
use keel_experiments::sim::perf::{self, PerfConfig};
use keel_experiments::sim::Progress;
use keel_experiments::ExperimentError;

#[test]
fn loops_bathtub_and_selection_against_oracle() {
    let config = LoopsConfig {
        threads: vec![8],
        steps: Some(2),
        seed: 3,
        ..LoopsConfig::default()
    };
    let (mut total, mut steps) = (0, 0);
    let report = loops::run(&config, &mut |p| match p {
        Progress::Total(n) => total = n,
        Progress::Step(_) => steps += 1,
    })
    .unwrap();
    assert_eq!(steps, total, "every simulation is reported once");
    let b = &report.bathtub;
    assert_eq!(b.points.first().map(|p| p.chunk), Some(25_000));
    assert_eq!(b.points.last().map(|p| p.chunk), Some(1));
    assert!(b
        .points
        .iter()
        .all(|p| p.t_par.len() == BATHTUB_SCHEDULES.len()));
    for (_, chunk, best, ratio) in &b.best {
        assert!(b.points.iter().any(|p| p.chunk == *chunk));
        assert!(*best > 0.0 && *ratio >= 1.0, "{best} {ratio}");
    }
    let s = &report.selection[0];
    assert_eq!((s.threads, s.instances), (8, 2));
    // Oracle is the best fixed configuration per instance: nothing fixed
    // beats it, and ManualBest is one of the fixed rows.
    for row in &s.fixed {
        assert!(row.total >= s.oracle * (1.0 - 1e-12), "{row:?}");
        assert!(row.degradation_percent >= -1e-9);
    }
    assert!(s.manual_best.total >= s.oracle * (1.0 - 1e-12));
    let methods: Vec<&str> = s.methods.iter().map(|m| m.config.as_str()).collect();
    assert_eq!(methods, METHODS);
    assert!(s.methods.iter().all(|m| m.last_choice.is_some()));
    // The same seed gives the same report.
    let again = loops::run(&config, &mut |_| {}).unwrap();
    assert_eq!(
        serde_json::to_string(&report).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

#[test]
fn loops_refuse_bad_settings() {
    let bad = |config: LoopsConfig| loops::run(&config, &mut |_| {}).unwrap_err().to_string();
    let zero = LoopsConfig {
        threads: vec![0],
        ..LoopsConfig::default()
    };
    assert_eq!(bad(zero), "thread counts must be at least 1");
    let steps = LoopsConfig {
        steps: Some(99),
        ..LoopsConfig::default()
    };
    assert!(bad(steps).starts_with("--steps must be in 1..="));
    let noise = LoopsConfig {
        noise_cv: f64::NAN,
        ..LoopsConfig::default()
    };
    assert!(bad(noise).contains("finite number"));
}

#[test]
fn farm_rows_against_rr_and_the_model() {
    let config = FarmConfig {
        workers: vec![4],
        tasks: vec![1000, 2000],
        seed: 2,
        ..FarmConfig::default()
    };
    let mut ticks = 0;
    let report = farm::run(&config, &mut || ticks += 1).unwrap();
    assert_eq!(ticks, farm::simulations(&config));
    assert_eq!(report.rows.len(), 2 * farm::DEFAULT_POLICIES.len());
    for r in &report.rows {
        assert_eq!(r.workers, 4);
        // One fast worker 5.8× faster of four: Eq. 2's S = (5.8 + 3)/4.
        assert!((r.model - (config.fast_speed + 3.0) / 4.0).abs() < 1e-12);
        if r.policy == "rr" {
            assert_eq!(r.speedup, 1.0);
        }
        let items = r.fast_items as f64 + 3.0 * r.slow_items;
        assert!((items - r.tasks as f64).abs() < 1e-6, "{r:?}");
    }
    // ARRS adapts to the fast worker: well above rr.
    let arrs = report.rows.iter().find(|r| r.policy == "arrs").unwrap();
    assert!(arrs.speedup > 1.2, "{arrs:?}");
    let e = farm::run(
        &FarmConfig {
            policies: vec!["nope".into()],
            ..config
        },
        &mut || {},
    )
    .unwrap_err();
    assert!(
        matches!(&e, ExperimentError::Invalid(m) if m.starts_with("farm policy `nope`")),
        "{e}"
    );
}

#[test]
fn farm_with_one_slow_worker_eft_beats_rr_near_the_model() {
    let config = FarmConfig {
        workers: vec![4],
        tasks: vec![4000],
        slow_speed: Some(0.1),
        seed: 2,
        ..FarmConfig::default()
    };
    let report = farm::run(&config, &mut || {}).unwrap();
    let row = |p: &str| report.rows.iter().find(|r| r.policy == p).unwrap();
    // Σs / (p · s_slowest) = 3.1 / 0.4.
    assert!((row("rr").model - 7.75).abs() < 1e-12);
    // rr gives the slow worker its quarter: 1,000 items.
    assert_eq!(row("rr").fast_items, 1000);
    let eft = row("eft:capacity=4");
    assert!(
        eft.speedup > 0.9 * eft.model && eft.speedup <= eft.model + 1e-9,
        "{eft:?}"
    );
    assert!(eft.fast_items < 200, "{eft:?}");
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = farm::run(
            &FarmConfig {
                slow_speed: Some(bad),
                ..config.clone()
            },
            &mut || {},
        )
        .unwrap_err();
        assert!(
            matches!(&e, ExperimentError::Invalid(m) if m.contains("--slow-speed")),
            "{e}"
        );
    }
}

#[test]
fn objects_tables_and_gains() {
    let config = ObjectsConfig {
        nodes: 2,
        pus_per_node: 4,
        period: 10,
        periods: vec![5, 10],
        ..ObjectsConfig::default()
    };
    let (mut configs, mut steps) = (Vec::new(), 0u64);
    let report = objects::run(&config, &mut |p| match p {
        ObjectsProgress::Config(label) => configs.push(label.to_string()),
        ObjectsProgress::Step => steps += 1,
    })
    .unwrap();
    assert_eq!(steps, objects::total_steps(&config).unwrap());
    assert_eq!(configs.len(), 5 + 2);
    let labels: Vec<&str> = report.table1.iter().map(|r| r.config.as_str()).collect();
    assert_eq!(
        labels,
        [
            "No LB",
            "Greedy (hier)",
            "Greedy (hier) + stealing",
            "No LB + stealing",
            "Greedy (hier), every 10"
        ]
    );
    let invocations: Vec<&str> = report
        .table1
        .iter()
        .map(|r| r.run.invocation.as_str())
        .collect();
    assert_eq!(
        invocations,
        [
            "never",
            "adaptive",
            "adaptive",
            "never",
            "periodic:steps=10"
        ]
    );
    // The fixed period remaps after steps 10, 20, ...; the adaptive rows
    // say why each of theirs ran.
    let fixed = &report.table1[4].run.remaps;
    assert!(fixed
        .iter()
        .all(|r| r.step % 10 == 0 && r.reason == "the period ends"));
    assert!(report.table1[1]
        .run
        .remaps
        .iter()
        .all(|r| r.reason.contains('≥')));
    assert_eq!(report.table2.len(), 2);
    let t = |i: usize| report.table1[i].run.total_s;
    assert_eq!(report.gain_vs_no_lb, t(0) / t(2));
    assert_eq!(report.gain_vs_greedy, t(1) / t(2));
    assert_eq!(report.policy, "hier:nodes=2,outer=(greedy),inner=(greedy)");
    let zero = ObjectsConfig {
        period: 0,
        ..config
    };
    let e = objects::run(&zero, &mut |_| {}).unwrap_err();
    assert_eq!(e.to_string(), "periods must be at least 1 step");
}

#[test]
fn objects_table3_puts_greedy_against_lpt_eft_on_slow_pus() {
    let config = ObjectsConfig {
        nodes: 1,
        pus_per_node: 4,
        workload: Some("lassen:pus=4,steps=20".into()),
        period: 5,
        periods: vec![5],
        slow_speed: Some(0.25),
        ..ObjectsConfig::default()
    };
    let mut steps = 0u64;
    let report = objects::run(&config, &mut |p| {
        if p == ObjectsProgress::Step {
            steps += 1;
        }
    })
    .unwrap();
    assert_eq!(steps, objects::total_steps(&config).unwrap());
    let policies: Vec<&str> = report
        .table3
        .iter()
        .map(|r| r.run.policy.as_str())
        .collect();
    assert_eq!(
        policies,
        [
            "hier:nodes=1,outer=(greedy),inner=(greedy)",
            "hier:nodes=1,outer=(greedy),inner=(lpt-eft)"
        ]
    );
    for row in &report.table3 {
        assert!(
            row.run.object_steps.iter().all(|&s| s == 20),
            "{}",
            row.config
        );
        // Slow PUs make the same steps last longer than in Table 1.
        assert!(
            row.run.steps_s > report.table1[1].run.steps_s,
            "{}",
            row.config
        );
    }
    let none = objects::run(
        &ObjectsConfig {
            slow_speed: None,
            ..config.clone()
        },
        &mut |_| {},
    );
    assert!(none.unwrap().table3.is_empty());
    for bad in [0.0, -1.0, f64::NAN] {
        let e = objects::run(
            &ObjectsConfig {
                slow_speed: Some(bad),
                ..config.clone()
            },
            &mut |_| {},
        );
        assert!(matches!(e, Err(ExperimentError::Invalid(_))), "{bad}");
    }
}

#[test]
fn perf_counts_one_event_per_claim() {
    let config = PerfConfig {
        iterations: 2000,
        threads: vec![2, 4],
        reps: 1,
        ..PerfConfig::default()
    };
    let report = perf::run(&config, &mut |_| {}).unwrap();
    assert_eq!(report.rows.len(), 2);
    for r in report.rows.iter().chain([&report.headline]) {
        assert!(r.events >= 2000, "{r:?}");
        assert!(r.simulated_t_par > 0.0 && r.wall_s > 0.0);
    }
    assert_eq!(report.headline.threads, 20);
}
