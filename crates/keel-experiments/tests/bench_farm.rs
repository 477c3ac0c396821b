//! `keel bench farm` as a typed report: every policy row, the known-speed
//! baseline's share, the overhead rows. Timings are never asserted; the
//! structure and the item counts are.

use keel_experiments::bench::farm::{self, FarmBenchConfig, FarmBenchReport, KNOWN_SPLIT};

/// `--quick --runs 1` with these experiments and workers.
fn quick(experiments: &[&str], workers: Option<usize>) -> FarmBenchReport {
    farm::run(&FarmBenchConfig {
        quick: true,
        runs: Some(1),
        experiments: experiments.iter().map(|e| e.to_string()).collect(),
        workers,
    })
    .unwrap()
}

#[test]
fn bench_farm_has_every_policy_row_and_the_overhead() {
    let report = quick(&["b", "overhead"], None);
    assert_eq!(report.experiments.len(), 1);
    let b = &report.experiments[0];
    assert_eq!(b.id, "b");
    let policies: Vec<&str> = b.rows.iter().map(|r| r.policy.as_str()).collect();
    for p in [
        "rr",
        "arrs",
        "arrs-adaptive",
        "on-demand",
        "shortest-queue",
        KNOWN_SPLIT,
    ] {
        assert!(policies.contains(&p), "{p} missing: {policies:?}");
    }
    // The known-speed baseline gives the fast worker 0 the model's share:
    // S = (s + 1)/2, so worker 0 gets s/(s + 1) = 1 − 1/(2S) of the items.
    for r in b.rows.iter().filter(|r| r.policy == KNOWN_SPLIT) {
        let per: Vec<f64> = r.per_worker.iter().map(|&n| n as f64).collect();
        let share = per[0] / (per[0] + per[1]);
        let expected = 1.0 - 1.0 / (2.0 * r.model.unwrap());
        let n = per[0] + per[1];
        assert!(
            (share - expected).abs() <= 1.0 / n,
            "worker 0 got {share} of the items, the speeds say {expected}"
        );
    }
    for r in &b.rows {
        assert!(r.mean_s > 0.0);
        // Time in tasks is measured inside the run: within (0, 100] %.
        let busy = r.busy_percent.as_ref().unwrap();
        assert_eq!(busy.len(), 2);
        assert!(busy.iter().all(|&b| b > 0.0 && b <= 100.0));
        assert!(r.model.unwrap() > 1.0);
        let items: u64 = r.per_worker.iter().sum();
        assert_eq!(items, r.size as u64);
    }
    assert_eq!(report.overhead.len(), 4);
    assert!(report.overhead.iter().all(|o| o.ns_per_item > 0.0));
    // arrs's rows carry the paired ratio to rr; rr's do not.
    for o in &report.overhead {
        if o.policy == "rr" {
            assert!(o.vs_rr.is_none());
        } else {
            assert!(o.vs_rr.unwrap() > 0.0);
        }
    }
}

#[test]
fn workers_scale_experiment_b_with_one_fast_worker_and_its_model() {
    let report = quick(&["b"], Some(3));
    let b = &report.experiments[0];
    assert_eq!(b.workers, 3);
    for r in &b.rows {
        let per = &r.per_worker;
        assert_eq!(per.len(), 3, "{r:?}");
        assert_eq!(per.iter().sum::<u64>(), r.size as u64, "{r:?}");
        // (s + 2)/3 for a fast speed s > 1 lies strictly between 1 and s.
        let model = r.model.unwrap();
        assert!(model > 1.0, "{r:?}");
        if r.policy == KNOWN_SPLIT {
            // Worker 0's share s/(s + 2) = 1 − 2/(3S): the 3-worker model.
            let share = per[0] as f64 / per.iter().sum::<u64>() as f64;
            let expected = 1.0 - 2.0 / (3.0 * model);
            assert!((share - expected).abs() < 0.01, "{share} vs {expected}");
        }
    }
}

#[test]
fn bad_plans_are_refused() {
    let plan = |experiments: &[&str], runs, workers| {
        FarmBenchConfig {
            quick: true,
            runs,
            experiments: experiments.iter().map(|e| e.to_string()).collect(),
            workers,
        }
        .plan()
    };
    let e = plan(&["z"], None, None).unwrap_err().to_string();
    assert!(e.contains("valid: a, b, c, d, e, overhead"), "{e}");
    assert!(plan(&[], Some(0), None).is_err());
    assert!(plan(&[], None, Some(0)).is_err());
    let p = plan(&["overhead", "a"], None, None).unwrap();
    // In the experiments' order, whatever the order asked.
    assert_eq!(p.experiments, ["a", "overhead"]);
    assert_eq!((p.runs, p.workers), (farm::DEFAULT_RUNS, 2));
}
