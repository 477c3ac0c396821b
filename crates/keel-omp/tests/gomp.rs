//! Programs built with `gcc -fopenmp` (and `g++`, `gfortran`) run with and
//! without `LD_PRELOAD=libkeel_omp.so`: each checks its own per-iteration
//! counters and prints `all ok`; the C programs also print how many loop
//! instances the interposer took (`taken=-1` without it).
//!
//! A test whose compiler is missing prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names it (CI: `gcc -fopenmp`, `g++ -fopenmp`,
//! `gfortran`), in which case it fails.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{build, can_run, report, run, scratch};

fn c_loops() -> Option<&'static PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| build("gcc", "loops.c", &[])).as_ref()
}

/// Short loops per run and the long loop's length: small, so that each
/// of the many runs stays short.
const QUICK: [&str; 2] = ["300", "20011"];

#[test]
fn c_loops_run_every_iteration_once_with_and_without_keel() {
    let bin = c_loops();
    if !can_run(
        "c_loops_run_every_iteration_once_with_and_without_keel",
        "gcc -fopenmp",
        bin.is_some(),
    ) {
        return;
    }
    let bin = bin.unwrap();
    let native = report(&run(bin, &QUICK, &[("OMP_NUM_THREADS", "3")], false));
    assert!(
        native.ok,
        "without the preload: {}{}",
        native.stdout, native.stderr
    );
    assert_eq!(
        native.taken, -1,
        "nothing is interposed without the preload"
    );
    for schedule in [
        "static",
        "static,5",
        "dynamic,3",
        "guided",
        "gac",
        "tss",
        "fac2",
        "af",
        "maf",
        "awf-b",
        "static-steal",
        "auto",
        "auto,expert",
        "auto,exhaustive",
        "auto,random",
    ] {
        for threads in ["3", "1"] {
            let env = [
                ("KEEL_SCHEDULE", schedule),
                ("KEEL_OMP_TAKE", "dynamic,guided"),
                ("OMP_NUM_THREADS", threads),
            ];
            let r = report(&run(bin, &QUICK, &env, true));
            assert!(
                r.ok,
                "KEEL_SCHEDULE={schedule} P={threads}: {}{}",
                r.stdout, r.stderr
            );
            assert!(
                r.taken > 300,
                "KEEL_SCHEDULE={schedule}: Keel took {} loops",
                r.taken
            );
            assert!(!r.stderr.contains("warning"), "{schedule}: {}", r.stderr);
        }
    }
}

#[test]
fn omp_schedule_keeps_its_meaning_without_keel_schedule() {
    let Some(bin) = c_loops() else {
        can_run(
            "omp_schedule_keeps_its_meaning_without_keel_schedule",
            "gcc -fopenmp",
            false,
        );
        return;
    };
    for omp in ["static,4", "dynamic,2", "guided", "auto"] {
        let r = report(&run(
            bin,
            &QUICK,
            &[("OMP_SCHEDULE", omp), ("OMP_NUM_THREADS", "4")],
            true,
        ));
        assert!(r.ok, "OMP_SCHEDULE={omp}: {}{}", r.stdout, r.stderr);
        assert!(r.taken > 300, "OMP_SCHEDULE={omp}: took {}", r.taken);
    }
    // Neither set: Keel's auto.
    let r = report(&run(bin, &QUICK, &[], true));
    assert!(r.ok && r.taken > 300, "{}{}", r.stdout, r.stderr);
}

#[test]
fn a_bad_keel_schedule_warns_once_and_libgomp_runs_every_loop() {
    let Some(bin) = c_loops() else {
        can_run(
            "a_bad_keel_schedule_warns_once_and_libgomp_runs_every_loop",
            "gcc -fopenmp",
            false,
        );
        return;
    };
    for bad in ["bogus", "dynamic,x", "auto,nonsense"] {
        let r = report(&run(
            bin,
            &QUICK,
            &[("KEEL_SCHEDULE", bad), ("OMP_NUM_THREADS", "3")],
            true,
        ));
        assert!(r.ok, "KEEL_SCHEDULE={bad}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.taken, 0, "KEEL_SCHEDULE={bad}");
        assert_eq!(
            r.stderr.matches("keel-omp: warning").count(),
            1,
            "{bad}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("KEEL_SCHEDULE"), "{}", r.stderr);
    }
    // A schedule that cannot plan a loop without hints: one warning too.
    let r = report(&run(
        bin,
        &QUICK,
        &[("KEEL_SCHEDULE", "binlpt"), ("OMP_NUM_THREADS", "2")],
        true,
    ));
    assert!(r.ok && r.taken == 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.matches("keel-omp: warning").count(),
        1,
        "{}",
        r.stderr
    );
}

#[test]
fn a_hundred_thousand_short_loops() {
    let Some(bin) = c_loops() else {
        can_run("a_hundred_thousand_short_loops", "gcc -fopenmp", false);
        return;
    };
    let r = report(&run(
        bin,
        &["100000", "1000"],
        &[("OMP_NUM_THREADS", "2")],
        true,
    ));
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    assert!(r.taken > 100_000, "took {}", r.taken);
}

#[test]
fn cancellation_on_leaves_every_loop_to_libgomp() {
    let Some(bin) = c_loops() else {
        can_run(
            "cancellation_on_leaves_every_loop_to_libgomp",
            "gcc -fopenmp",
            false,
        );
        return;
    };
    let r = report(&run(
        bin,
        &QUICK,
        &[("OMP_CANCELLATION", "true"), ("OMP_NUM_THREADS", "2")],
        true,
    ));
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.taken, 0);
}

#[test]
fn cxx_loops_with_and_without_keel() {
    let bin = build("g++", "loops.c", &["-x", "c++"]);
    if !can_run(
        "cxx_loops_with_and_without_keel",
        "g++ -fopenmp",
        bin.is_some(),
    ) {
        return;
    }
    let bin = bin.unwrap();
    for (preload, schedule) in [
        (false, "auto"),
        (true, "auto"),
        (true, "af"),
        (true, "dynamic,2"),
    ] {
        let env = [("KEEL_SCHEDULE", schedule), ("OMP_NUM_THREADS", "3")];
        let r = report(&run(&bin, &QUICK, &env, preload));
        assert!(
            r.ok,
            "preload={preload} {schedule}: {}{}",
            r.stdout, r.stderr
        );
        assert_eq!(r.taken > 0, preload);
    }
}

#[test]
fn fortran_loops_with_and_without_keel() {
    let bin = build("gfortran", "loops.f90", &[]);
    if !can_run(
        "fortran_loops_with_and_without_keel",
        "gfortran",
        bin.is_some(),
    ) {
        return;
    }
    let bin = bin.unwrap();
    for (preload, schedule) in [
        (false, "auto"),
        (true, "auto"),
        (true, "static-steal"),
        (true, "guided"),
    ] {
        let env = [("KEEL_SCHEDULE", schedule), ("OMP_NUM_THREADS", "3")];
        let r = report(&run(&bin, &[], &env, preload));
        assert!(
            r.ok,
            "preload={preload} {schedule}: {}{}",
            r.stdout, r.stderr
        );
    }
}

#[test]
fn a_program_that_forks_after_the_runtime_started() {
    let bin = build("gcc", "fork.c", &[]);
    if !can_run(
        "a_program_that_forks_after_the_runtime_started",
        "gcc -fopenmp",
        bin.is_some(),
    ) {
        return;
    }
    let bin = bin.unwrap();
    for preload in [false, true] {
        let r = report(&run(&bin, &[], &[("OMP_NUM_THREADS", "3")], preload));
        assert!(r.ok, "preload={preload}: {}{}", r.stdout, r.stderr);
    }
}

#[test]
fn keel_trace_is_complete_json_naming_each_loop_by_its_call_site() {
    let Some(bin) = c_loops() else {
        can_run(
            "keel_trace_is_complete_json_naming_each_loop_by_its_call_site",
            "gcc -fopenmp",
            false,
        );
        return;
    };
    let trace = scratch().join("trace.json");
    let path = trace.to_str().unwrap();
    let env = [
        ("KEEL_SCHEDULE", "dynamic,64"),
        ("OMP_NUM_THREADS", "2"),
        ("KEEL_TRACE", path),
    ];
    let r = report(&run(bin, &["10", "1000"], &env, true));
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap())
        .expect("the trace is complete JSON after the program exits");
    let names: std::collections::BTreeSet<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("omp:") && n.contains("+0x")),
        "{names:?}"
    );
    // Each call site is its own loop: the program has dozens.
    assert!(names.len() > 20, "{names:?}");
}
