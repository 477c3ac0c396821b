//! `keel bench farm` and the demo's farm section, end to end. Timings are
//! printed, never asserted; the structure is.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

/// `keel bench farm --quick --runs 1 <extra> --json`, which must succeed.
fn quick_farm_json(extra: &[&str]) -> serde_json::Value {
    let output = keel()
        .args(["bench", "farm", "--quick", "--runs", "1"])
        .args(extra)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A row's items per worker.
fn per_worker(row: &serde_json::Value) -> Vec<u64> {
    row["per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn bench_farm_json_has_every_policy_row_and_the_overhead() {
    let json = quick_farm_json(&["-e", "b", "-e", "overhead"]);
    let experiments = json["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 1);
    let b = &experiments[0];
    assert_eq!(b["id"], "b");
    let policies: Vec<&str> = b["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    for p in [
        "rr",
        "arrs",
        "arrs-adaptive",
        "on-demand",
        "shortest-queue",
        "known-split",
    ] {
        assert!(policies.contains(&p), "{p} missing: {policies:?}");
    }
    // The known-speed baseline gives the fast worker 0 the model's share:
    // S = (s + 1)/2, so worker 0 gets s/(s + 1) = 1 − 1/(2S) of the items.
    for r in b["rows"].as_array().unwrap() {
        if r["policy"] != "known-split" {
            continue;
        }
        let per: Vec<f64> = per_worker(r).into_iter().map(|n| n as f64).collect();
        let share = per[0] / (per[0] + per[1]);
        let expected = 1.0 - 1.0 / (2.0 * r["model"].as_f64().unwrap());
        let n = per[0] + per[1];
        assert!(
            (share - expected).abs() <= 1.0 / n,
            "worker 0 got {share} of the items, the speeds say {expected}"
        );
    }
    for r in b["rows"].as_array().unwrap() {
        assert!(r["mean_s"].as_f64().unwrap() > 0.0);
        // Time in tasks is measured inside the run: within (0, 100] %.
        let busy = r["busy_percent"].as_array().unwrap();
        assert_eq!(busy.len(), 2);
        assert!(busy
            .iter()
            .map(|b| b.as_f64().unwrap())
            .all(|b| b > 0.0 && b <= 100.0));
        assert!(r["model"].as_f64().unwrap() > 1.0);
        let items: u64 = per_worker(r).iter().sum();
        assert_eq!(items, r["size"].as_u64().unwrap());
    }
    let overhead = json["overhead"].as_array().unwrap();
    assert_eq!(overhead.len(), 4);
    assert!(overhead
        .iter()
        .all(|o| o["ns_per_item"].as_f64().unwrap() > 0.0));
    // arrs's rows carry the paired ratio to rr; rr's do not.
    for o in overhead {
        let paired = &o["vs_rr"];
        if o["policy"] == "rr" {
            assert!(paired.is_null());
        } else {
            assert!(paired.as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn bench_farm_rejects_bad_arguments() {
    keel()
        .args(["bench", "farm", "-e", "z"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("valid: a, b, c, d, e, overhead"));
    keel()
        .args(["bench", "farm", "--runs", "0"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--runs"));
    keel()
        .args(["bench", "farm", "--workers", "0"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--workers"));
}

#[test]
fn workers_scale_experiment_b_with_one_fast_worker_and_its_model() {
    let json = quick_farm_json(&["-e", "b", "--workers", "3"]);
    let b = &json["experiments"][0];
    assert_eq!(b["workers"], 3);
    for r in b["rows"].as_array().unwrap() {
        let per = per_worker(r);
        assert_eq!(per.len(), 3, "{r}");
        assert_eq!(per.iter().sum::<u64>(), r["size"].as_u64().unwrap(), "{r}");
        // (s + 2)/3 for a fast speed s > 1 lies strictly between 1 and s.
        let model = r["model"].as_f64().unwrap();
        assert!(model > 1.0, "{r}");
        if r["policy"] == "known-split" {
            // Worker 0's share s/(s + 2) = 1 − 2/(3S): the 3-worker model.
            let share = per[0] as f64 / per.iter().sum::<u64>() as f64;
            let expected = 1.0 - 2.0 / (3.0 * model);
            assert!((share - expected).abs() < 0.01, "{share} vs {expected}");
        }
    }
}

#[test]
fn the_demo_has_a_farm_section() {
    let output = keel().args(["demo", "farm"]).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for p in ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(p)),
            "{p}: {text}"
        );
    }
}
