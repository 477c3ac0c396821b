//! Programs built with `clang -fopenmp` (LLVM's libomp) run with and
//! without `LD_PRELOAD=libkeel_omp.so`: `loops.c` (its libgomp-only parts
//! left out by `-DKEEL_LIBOMP`) and `kmpc.c`, which calls libomp's
//! dispatch entry points directly with bounds clang never passes. Each
//! checks its own per-iteration counters and prints `all ok` and how many
//! loop instances the interposer took (`taken=-1` without it).
//!
//! Without clang or libomp a test prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names `clang -fopenmp` (CI as root), in which case
//! it fails.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{report, run, scratch};

const NEEDS: &str = "clang -fopenmp";

/// Whether a test can run; see the module doc.
fn can_run(test: &str, have: bool) -> bool {
    common::can_run(test, NEEDS, have)
}

/// Builds `source` with `clang -fopenmp -O2 -DKEEL_LIBOMP`; `None` when
/// clang or libomp is missing here.
fn build(source: &str) -> Option<PathBuf> {
    common::build("clang", source, &["-DKEEL_LIBOMP"])
}

fn loops() -> Option<&'static PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| build("loops.c")).as_ref()
}

fn kmpc() -> Option<&'static PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| build("kmpc.c")).as_ref()
}

/// Short loops per run and the long loop's length.
const QUICK: [&str; 2] = ["300", "20011"];

/// Loop instances `loops.c` starts through libomp's dispatch per run on a
/// team of more than one thread (QUICK's 300 short loops among them),
/// counted by a run under `dynamic,3` (which takes every one).
const LOOPS_C_DISPATCHED: i64 = 413;

#[test]
fn clang_loops_run_every_iteration_once_with_and_without_keel() {
    let test = "clang_loops_run_every_iteration_once_with_and_without_keel";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    let native = report(&run(bin, &QUICK, &[("OMP_NUM_THREADS", "3")], false));
    assert!(native.ok, "without the preload: {}", native.text);
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
        "awf-b",
        "static-steal",
        "auto",
        "auto,expert",
    ] {
        for threads in ["3", "1"] {
            let env = [
                ("KEEL_SCHEDULE", schedule),
                ("KEEL_OMP_TAKE", "dynamic,guided"),
                ("OMP_NUM_THREADS", threads),
            ];
            let r = report(&run(bin, &QUICK, &env, true));
            assert!(r.ok, "KEEL_SCHEDULE={schedule} P={threads}: {}", r.text);
            // Every dispatched loop is decided once; the monotonic ones
            // are forwarded under schedules that are not monotonic.
            assert_eq!(
                r.taken + r.forwarded,
                LOOPS_C_DISPATCHED,
                "KEEL_SCHEDULE={schedule} P={threads}: {}",
                r.text
            );
            assert!(r.taken > 300, "KEEL_SCHEDULE={schedule}: took {}", r.taken);
            if keel_omp::is_monotonic(&schedule.parse().unwrap()) {
                assert_eq!(r.forwarded, 0, "{schedule}: {}", r.text);
            }
            assert!(!r.stderr.contains("warning"), "{schedule}: {}", r.stderr);
        }
    }
}

#[test]
fn libomp_dispatch_hands_out_any_bounds_exactly_once() {
    let test = "libomp_dispatch_hands_out_any_bounds_exactly_once";
    let Some(bin) = kmpc() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    let native = report(&run(bin, &[], &[], false));
    assert!(native.ok, "without the preload: {}", native.text);
    // 5 schedule encodings times 11 loops, each on a team of 3.
    for schedule in [
        "static",
        "dynamic,3",
        "guided",
        "af",
        "static-steal",
        "auto",
    ] {
        let env = [
            ("KEEL_SCHEDULE", schedule),
            ("KEEL_OMP_TAKE", "dynamic,guided"),
        ];
        let r = report(&run(bin, &[], &env, true));
        assert!(r.ok, "KEEL_SCHEDULE={schedule}: {}", r.text);
        assert_eq!(r.taken + r.forwarded, 55, "{schedule}: {}", r.text);
        // The two monotonic encodings (no modifier, monotonic) are
        // forwarded under a schedule that is not monotonic.
        let monotonic = keel_omp::is_monotonic(&schedule.parse().unwrap());
        assert_eq!(
            r.taken,
            if monotonic { 55 } else { 33 },
            "{schedule}: {}",
            r.text
        );
    }
}

#[test]
fn omp_schedule_keeps_its_meaning_under_libomp() {
    let test = "omp_schedule_keeps_its_meaning_under_libomp";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    for omp in ["static,4", "dynamic,2", "guided", "auto"] {
        let env = [("OMP_SCHEDULE", omp), ("OMP_NUM_THREADS", "4")];
        let r = report(&run(bin, &QUICK, &env, true));
        assert!(r.ok, "OMP_SCHEDULE={omp}: {}", r.text);
        assert!(r.taken > 300, "OMP_SCHEDULE={omp}: took {}", r.taken);
    }
}

#[test]
fn without_ompt_every_clang_loop_stays_libomps() {
    let test = "without_ompt_every_clang_loop_stays_libomps";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    // Another tool named: Keel declines with one warning, and no loop is
    // matched to a team, so libomp runs each whole. (The named library
    // does not exist; libomp then runs with no tool.)
    let env = [
        ("OMP_TOOL_LIBRARIES", "/nonexistent/libtool.so"),
        ("OMP_NUM_THREADS", "3"),
    ];
    let r = report(&run(bin, &QUICK, &env, true));
    assert!(r.ok, "{}", r.text);
    assert_eq!((r.taken, r.forwarded), (0, 0), "{}", r.text);
    assert_eq!(
        r.stderr.matches("keel-omp: warning").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("OMP_TOOL_LIBRARIES"), "{}", r.stderr);
    // OMPT switched off: the same, silently.
    let env = [("OMP_TOOL", "disabled"), ("OMP_NUM_THREADS", "3")];
    let r = report(&run(bin, &QUICK, &env, true));
    assert!(r.ok, "{}", r.text);
    assert_eq!((r.taken, r.forwarded), (0, 0), "{}", r.text);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

#[test]
fn a_bad_keel_schedule_warns_once_and_libomp_runs_every_loop() {
    let test = "a_bad_keel_schedule_warns_once_and_libomp_runs_every_loop";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    for bad in ["bogus", "dynamic,x", "binlpt"] {
        let env = [("KEEL_SCHEDULE", bad), ("OMP_NUM_THREADS", "3")];
        let r = report(&run(bin, &QUICK, &env, true));
        assert!(r.ok, "KEEL_SCHEDULE={bad}: {}", r.text);
        assert_eq!(r.taken, 0, "KEEL_SCHEDULE={bad}");
        assert_eq!(
            r.stderr.matches("keel-omp: warning").count(),
            1,
            "{bad}: {}",
            r.stderr
        );
    }
}

#[test]
fn with_cancellation_on_every_clang_loop_stays_libomps() {
    let test = "with_cancellation_on_every_clang_loop_stays_libomps";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    let env = [("OMP_CANCELLATION", "true"), ("OMP_NUM_THREADS", "3")];
    let r = report(&run(bin, &QUICK, &env, true));
    assert!(r.ok, "{}", r.text);
    assert_eq!(
        (r.taken, r.forwarded),
        (0, LOOPS_C_DISPATCHED),
        "{}",
        r.text
    );
}

#[test]
fn a_clang_program_that_forks_after_the_runtime_started() {
    let test = "a_clang_program_that_forks_after_the_runtime_started";
    let Some(bin) = build("fork.c") else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    for preload in [false, true] {
        let r = report(&run(&bin, &[], &[("OMP_NUM_THREADS", "3")], preload));
        assert!(r.ok, "preload={preload}: {}", r.text);
    }
}

#[test]
fn clang_loops_are_named_by_the_return_address_of_their_init() {
    let test = "clang_loops_are_named_by_the_return_address_of_their_init";
    let Some(bin) = loops() else {
        can_run(test, false);
        return;
    };
    can_run(test, true);
    let trace = scratch().join("libomp-trace.json");
    let path = trace.to_str().unwrap();
    let env = [
        ("KEEL_SCHEDULE", "dynamic,64"),
        ("OMP_NUM_THREADS", "2"),
        ("KEEL_TRACE", path),
    ];
    let r = report(&run(bin, &["10", "1000"], &env, true));
    assert!(r.ok, "{}", r.text);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap())
        .expect("the trace is complete JSON after the program exits");
    let names: std::collections::BTreeSet<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect();
    // Named within the program itself (not libomp, not this library).
    assert!(
        names.iter().all(|n| n.starts_with("omp:clang-loops_c+0x")),
        "{names:?}"
    );
    // clang gives the loops of one function one ident_t; the call sites
    // still tell them apart: the program has dozens.
    assert!(names.len() > 20, "{names:?}");
}
