//! `keel cosched run`'s checks, before any process starts: the scenario
//! and scheduler names, the numbers, and the parameters they set. The real
//! runs are the CLI's end-to-end test (they start the `keel` executable as
//! the BSP job).

use keel_experiments::cosched::{prepare, RunConfig};

fn config() -> RunConfig {
    RunConfig::new(vec!["keel-bsp-job".into()])
}

#[test]
fn names_are_checked_against_the_valid_ones() {
    let bogus = RunConfig {
        scenarios: vec!["bogus".into()],
        ..config()
    };
    let e = prepare(&bogus).unwrap_err().to_string();
    assert!(
        e.contains("fine-grained, load-imbalanced, complementing"),
        "{e}"
    );
    let lottery = RunConfig {
        policies: vec!["lottery".into()],
        ..config()
    };
    let e = prepare(&lottery).unwrap_err().to_string();
    assert!(e.contains("fcfs, local, gs, sb, fcs"), "{e}");
}

#[test]
fn numbers_are_checked_and_set_the_parameters() {
    for (bad, flag) in [
        (
            RunConfig {
                slice_ms: Some(-1.0),
                ..config()
            },
            "--slice-ms",
        ),
        (
            RunConfig {
                granularity_ms: Some(f64::NAN),
                ..config()
            },
            "--granularity-ms",
        ),
        (
            RunConfig {
                max_background: Some(2.0),
                ..config()
            },
            "--max-background",
        ),
    ] {
        let e = prepare(&bad).unwrap_err().to_string();
        assert!(e.starts_with("cosched: ") && e.contains(flag), "{e}");
    }
    let quick = RunConfig {
        quick: true,
        iterations: Some(20),
        slice_ms: Some(10.0),
        reps: Some(0),
        scenarios: vec!["imbalanced".into()],
        ..config()
    };
    let p = prepare(&quick).unwrap();
    assert_eq!(p.params.iterations, 20);
    assert_eq!(p.params.time_slice, 0.01);
    // At least one run per cell; --quick retries nothing.
    assert_eq!((p.params.reps, p.params.retries), (1, 0));
    assert_eq!(p.scenarios.len(), 1);
    assert_eq!(p.policies, ["fcfs", "local", "gs", "sb", "fcs"]);
    assert_eq!(p.config.bsp_command, ["keel-bsp-job"]);
    // No table run: no suspend method to report.
    let report = p.report(Vec::new());
    assert!(report.tables.is_empty() && report.suspend.is_empty());
}
