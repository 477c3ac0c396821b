//! `keel sim cosched`'s experiments as typed reports: the tables' rows and
//! cells, the model each scenario ran on, the SWF replay and the
//! comparison with real runs.

use keel_experiments::sim::cosched::{self, CoschedSetup, SwfConfig};
use keel_experiments::sim::Progress;

fn quick() -> CoschedSetup {
    CoschedSetup {
        quick: true,
        ..CoschedSetup::default()
    }
}

fn silent(_: Progress<'_>) {}

#[test]
fn verify_scaled_runs_the_real_runs_scenarios_on_this_kernel() {
    let report = cosched::verify_scaled("imbalanced", &quick(), &mut silent).unwrap();
    assert_eq!(report.tables.len(), 1);
    assert_eq!(report.tables[0].scenario, "scaled-load-imbalanced");
    let rows = &report.tables[0].rows;
    let policies: Vec<&str> = rows.iter().map(|r| r.policy.as_str()).collect();
    assert_eq!(policies, ["fcfs", "local", "gs", "sb", "fcs"]);
    for r in rows {
        assert_eq!(r.ends.len(), 2);
    }
    assert_eq!(report.setup.model.cluster.nodes, 2);
    // The scaled scenarios stand for the real runs, so their kernel is
    // this machine's, not the paper's.
    assert_eq!(report.setup.model.os.kernel, "host");
    assert_eq!(report.setup.model.os.quantum, 0.004);

    let err = cosched::verify_scaled("nope", &quick(), &mut silent).unwrap_err();
    assert!(err.to_string().contains("scaled-fine-grained"), "{err}");
}

#[test]
fn verify_has_a_row_per_policy_and_a_cell_per_job() {
    let setup = CoschedSetup {
        policies: vec!["gs".into(), "fcs:cs-thresh=0.02".into()],
        ..quick()
    };
    let mut total = None;
    let mut steps = 0;
    let report = cosched::verify("load-imbalanced", &setup, &mut |p| match p {
        Progress::Total(n) => total = Some(n),
        Progress::Step(_) => steps += 1,
    })
    .unwrap();
    // One scenario × two policies, each reported as it ends.
    assert_eq!((total, steps), (Some(2), 2));
    assert_eq!(report.tables.len(), 1);
    let rows = &report.tables[0].rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].spec, "fcs:cs-thresh=0.02");
    for r in rows {
        assert_eq!(r.ends.len(), 2);
        assert!(r.ends.iter().all(|&e| e <= r.max));
        assert!(r.max > 0.0);
    }
    assert_eq!(report.setup.scale, 0.02);
}

#[test]
fn apps_run_the_papers_schedulers() {
    let report = cosched::apps("sage", &quick(), &mut silent).unwrap();
    let names: Vec<&str> = report.tables[0]
        .rows
        .iter()
        .map(|r| r.policy.as_str())
        .collect();
    assert_eq!(names, ["fcfs", "gs", "sb", "fcs"]);
    let err = cosched::apps("nope", &quick(), &mut silent).unwrap_err();
    assert!(err.to_string().contains("--mix `nope` is unknown"), "{err}");
}

#[test]
fn swf_logs_replay_under_every_policy() {
    let dir = tempfile::TempDir::new().unwrap();
    let log = dir.path().join("tiny.swf");
    std::fs::write(
        &log,
        "; Version: 2.2\n; MaxProcs: 8\n\
         1 0 0 20 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
         2 5 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
         3 6 0 10 64 -1 -1 64 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
    )
    .unwrap();
    let config = SwfConfig {
        nodes: 2,
        pes_per_node: 4,
        ..SwfConfig::new(log.clone())
    };
    let report = cosched::swf(&config, &CoschedSetup::default(), &mut silent).unwrap();
    assert_eq!((report.jobs, report.skipped), (2, 1));
    let names: Vec<&str> = report.rows.iter().map(|r| r.policy.as_str()).collect();
    assert_eq!(names, ["fcfs", "gs", "sb", "fcs"]);
    // FCFS: job 2 (2 PEs) fits beside job 1 (4 PEs) on 8 PEs and starts at
    // its arrival, so the log takes job 1's 20 s.
    let makespan = report.rows[0].makespan;
    assert!((makespan - 20.0).abs() < 0.5, "{makespan}");
    let reject = SwfConfig {
        reject_wide: true,
        ..config
    };
    let e = cosched::swf(&reject, &CoschedSetup::default(), &mut silent).unwrap_err();
    assert!(e.to_string().contains("64"), "{e}");
}

#[test]
fn verify_scaled_against_real_runs_counts_pairs_ordered_alike() {
    let dir = tempfile::TempDir::new().unwrap();
    // Real runs where GS beat everything by far and SB came last: the
    // simulation orders it the other way, and the runs are apart.
    let real = serde_json::json!({
        "tables": [{
            "scenario": "imbalanced",
            "rows": [
                {"policy": "gs", "max": 1.0, "runs": [{"makespan": 0.9}, {"makespan": 1.0}, {"makespan": 1.1}]},
                {"policy": "sb", "max": 5.0, "runs": [{"makespan": 4.9}, {"makespan": 5.0}]},
                {"policy": "fcs", "max": 4.0, "runs": [{"makespan": 3.0}, {"makespan": 5.5}]},
                {"policy": "local", "max": null, "runs": []}
            ]
        }]
    });
    let file = dir.path().join("real.json");
    std::fs::write(&file, real.to_string()).unwrap();
    let setup = CoschedSetup {
        scale: 0.2,
        ..CoschedSetup::default()
    };
    let (report, against) =
        cosched::verify_against("imbalanced", &file, &setup, &mut silent).unwrap();
    assert_eq!(report.tables[0].scenario, "scaled-load-imbalanced");
    // fcfs has no real row and local no Max: three schedulers, three pairs.
    // Apart: gs–sb and gs–fcs; fcs's runs overlap sb's. SB beats GS in the
    // model of this scenario.
    let a = &against[0];
    assert_eq!(a.pairs, 3);
    assert_eq!(a.separated_pairs, 2);
    assert_eq!(a.rows.len(), 3);
    assert!(
        a.disagreements
            .contains(&("gs".to_string(), "sb".to_string(), true)),
        "{:?}",
        a.disagreements
    );

    std::fs::write(&file, "{ not json").unwrap();
    let err = cosched::verify_against("imbalanced", &file, &setup, &mut silent).unwrap_err();
    assert!(err.to_string().contains("not JSON"), "{err}");
    std::fs::write(
        &file,
        r#"{"tables": [{"scenario": "fine-grained", "rows": []}]}"#,
    )
    .unwrap();
    let err = cosched::verify_against("imbalanced", &file, &setup, &mut silent).unwrap_err();
    assert!(
        err.to_string().contains("no `load-imbalanced` scenario"),
        "{err}"
    );
}
