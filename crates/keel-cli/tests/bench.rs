//! `keel bench loops` and the demo's loop section, end to end. Timings are
//! printed, never asserted; the structure, the chunk counts each schedule
//! promises and the error rows are.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

const SMALL: [&str; 4] = [
    "--workload",
    "mandelbrot:width=32,height=24,max-iter=60",
    "--workload",
    "lavamd:boxes1d=3",
];

fn json_of(args: &[&str]) -> serde_json::Value {
    let output = keel().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON document")
}

#[test]
fn every_schedule_gets_a_row_and_failures_are_rows() {
    let mut args = vec!["bench", "loops", "--reps", "1", "--json"];
    args.extend(SMALL);
    let json = json_of(&args);
    assert!(json["threads"].as_u64().unwrap() >= 1);
    let workloads = json["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 2);
    for w in workloads {
        let rows = w["rows"].as_array().unwrap();
        let names: Vec<&str> = rows
            .iter()
            .map(|r| r["schedule"].as_str().unwrap())
            .collect();
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
        assert!(w["t_serial"].as_f64().unwrap() > 0.0);
        for r in rows {
            // Either it ran and has every measurement, or it has an error.
            if r["error"].is_null() {
                assert!(r["t_par"].as_f64().unwrap() > 0.0, "{r}");
                assert!(r["ratio_to_ideal"].as_f64().unwrap() > 0.0, "{r}");
                let lib = r["lib_percent"].as_f64().unwrap();
                assert!((0.0..=100.0).contains(&lib), "{r}");
                assert!(r["chunks"].as_u64().unwrap() >= 1, "{r}");
            } else {
                assert!(!r["error"].as_str().unwrap().is_empty());
                assert!(r["t_par"].is_null());
            }
        }
    }
}

#[test]
fn chosen_schedules_chunks_and_an_unknown_schedule() {
    let mut args = vec![
        "bench",
        "loops",
        "--reps",
        "2",
        "--json",
        "--schedule",
        "dynamic,4",
        "--schedule",
        "no-such-schedule",
        "--workload",
        "mandelbrot:width=32,height=24,max-iter=60",
    ];
    let json = json_of(&args);
    let rows = json["workloads"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    // dynamic,4 over 32 columns: exactly 8 chunks.
    assert_eq!(rows[0]["chunks"], 8, "{}", rows[0]);
    assert!(
        rows[1]["error"]
            .as_str()
            .unwrap()
            .contains("no-such-schedule"),
        "{}",
        rows[1]
    );

    // The table says the same, with the error on its own line.
    args.retain(|a| *a != "--json");
    let out = keel().args(&args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dynamic,4"), "{text}");
    assert!(text.contains("no-such-schedule: error:"), "{text}");
    assert!(text.contains("T_serial"), "{text}");
}

#[test]
fn threads_come_from_keel_num_threads() {
    let json: serde_json::Value = {
        let output = keel()
            .env("KEEL_NUM_THREADS", "1")
            .args([
                "bench",
                "loops",
                "--reps",
                "1",
                "--json",
                "--schedule",
                "static",
            ])
            .args(&SMALL[..2])
            .output()
            .unwrap();
        assert!(output.status.success());
        serde_json::from_slice(&output.stdout).unwrap()
    };
    assert_eq!(json["threads"], 1);
    let row = &json["workloads"][0]["rows"][0];
    if row["error"].is_null() {
        assert_eq!(
            row["lib_percent"], 0.0,
            "one thread is never imbalanced: {row}"
        );
    }
}

#[test]
fn bad_arguments_fail_with_exit_code_2() {
    for args in [
        &["bench", "loops", "--workload", "mandel"][..],
        &["bench", "loops", "--workload", "lavamd:gamma=0"],
        &["bench", "loops", "--reps", "0"],
        &["bench", "loops", "--chunk", "0"],
    ] {
        let output = keel().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // `keel bench` alone shows the benchmarks it has, as a usage error.
    let output = keel().arg("bench").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("loops"));
}

#[test]
fn the_demo_has_a_loop_section() {
    let out = keel().args(["demo", "loops"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("== loops: "), "{text}");
    for schedule in ["static", "dynamic,4", "guided", "fac2", "awf-b", "auto"] {
        assert!(text.contains(schedule), "{schedule} missing:\n{text}");
    }
    assert!(text.contains("T_serial"), "{text}");
}

/// `keel bench auto` on two tiny stepped workloads, two repeats: every fixed
/// configuration and method is reported, each method with its repeats'
/// totals and a timeline covering every instance, and the pinned probe of
/// the selection mechanism's cost.
#[test]
fn bench_auto_reports_every_configuration_the_repeats_and_the_mechanism_probe() {
    let workloads = [
        "phase-change:iterations=4000,steps=6,switch=3",
        "sphynx:particles=400,short-particles=200,steps=3",
    ];
    let mut args = vec!["bench", "auto", "--reps", "2", "--quiet", "--json"];
    for w in &workloads {
        args.extend(["-w", w]);
    }
    let json = json_of(&args);
    assert_eq!(json["reps"], 2);
    let reports = json["workloads"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    for (w, instances) in reports.iter().zip([6u64, 9]) {
        assert_eq!(w["instances"], instances, "{}", w["spec"]);
        assert_eq!(w["fixed"].as_array().unwrap().len(), 24);
        let oracle = w["oracle"].as_f64().unwrap();
        for fixed in w["fixed"].as_array().unwrap() {
            // Oracle is the best per instance: no fixed total beats it.
            assert!(
                fixed["total"].as_f64().unwrap() >= oracle * (1.0 - 1e-9),
                "{fixed}"
            );
        }
        assert!(w["mechanism_cost_vs_static"].as_f64().unwrap().is_finite());
        // With two repeats each fold chooses from the other repeat alone,
        // and an instance's held-out time (the mean of its two folds)
        // cannot beat Oracle's best mean of the two.
        let held_out = w["oracle_held_out"].as_f64().unwrap();
        assert!(held_out >= oracle * (1.0 - 1e-9), "{held_out} < {oracle}");
        let methods = w["methods"].as_array().unwrap();
        let names: Vec<&str> = methods
            .iter()
            .map(|m| m["result"]["config"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"]
        );
        for m in methods {
            let totals: Vec<f64> = m["repeat_totals"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_f64().unwrap())
                .collect();
            assert_eq!(totals.len(), 2, "{m}");
            assert!(totals[0] <= totals[1], "{totals:?}");
            let total = m["result"]["total"].as_f64().unwrap();
            // The sum of per-instance medians, which with two repeats is
            // the mean of the two totals.
            let mean = (totals[0] + totals[1]) / 2.0;
            assert!(
                (total - mean).abs() <= 1e-9 * mean,
                "{total} is not the sum of per-instance medians {mean}"
            );
            let covered: u64 = m["timelines"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|loop_runs| loop_runs[1].as_array().unwrap())
                .map(|run| run["len"].as_u64().unwrap())
                .sum();
            assert_eq!(covered, instances, "{m}");
            let versus = &m["versus_keel"];
            if m["result"]["config"] == "auto,keel" {
                assert!(versus.is_null(), "{m}");
            } else {
                let keel_total = methods[0]["result"]["total"].as_f64().unwrap();
                let difference = (keel_total - total) / oracle * 100.0;
                assert!(
                    (versus["difference_points"].as_f64().unwrap() - difference).abs() < 1e-9,
                    "{versus}"
                );
                assert!(versus["noise_points"].as_f64().unwrap() >= 0.0, "{versus}");
                let verdict = versus["verdict"].as_str().unwrap();
                assert!(
                    ["ahead", "behind", "within noise"].contains(&verdict),
                    "{verdict}"
                );
            }
        }
    }

    args.retain(|a| *a != "--json");
    let out = keel().args(&args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mechanism (pinned static) %"), "{text}");
    assert!(text.contains("Oracle held out %"), "{text}");
    assert!(text.contains("keel − random (points)"), "{text}");
    assert!(
        text.contains("auto:method=keel,expert-chunk=0,pin=static"),
        "{text}"
    );
}
