//! `keel omp run`: the program's exit status is keel's, a bad schedule is
//! a usage error before anything runs, a missing library a runtime error.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

/// Whether `libkeel_omp.so` sits where `keel omp run` looks for it (it does
/// when the workspace, or keel-omp, was built into the same target folder).
fn library_beside_keel() -> bool {
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let dir = keel.parent().unwrap();
    dir.join("libkeel_omp.so").is_file() || dir.join("deps/libkeel_omp.so").is_file()
}

#[test]
fn a_bad_schedule_or_kind_is_a_usage_error_and_runs_nothing() {
    let out = keel()
        .args([
            "omp",
            "run",
            "--schedule",
            "bogus",
            "--",
            "sh",
            "-c",
            "echo ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
    let out = keel()
        .args(["omp", "run", "--take", "static", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = keel().args(["omp", "run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no program");
}

#[test]
fn a_missing_library_is_a_runtime_error() {
    let out = keel()
        .args([
            "omp",
            "run",
            "--library",
            "/nonexistent/libkeel_omp.so",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
}

#[test]
fn the_program_runs_preloaded_and_its_status_is_keels() {
    if !library_beside_keel() {
        // `keel omp run` says where the library should be instead.
        let out = keel().args(["omp", "run", "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("libkeel_omp.so"));
        eprintln!("SKIPPED: the_program_runs_preloaded_and_its_status_is_keels needs libkeel_omp.so beside keel");
        return;
    }
    let out = keel()
        .args(["omp", "run", "--schedule", "af", "--take", "dynamic", "--"])
        .args([
            "sh",
            "-c",
            "echo \"$LD_PRELOAD|$KEEL_SCHEDULE|$KEEL_OMP_TAKE\"; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("libkeel_omp.so|af|dynamic"), "{stdout}");
}

/// Whether `<cc> -fopenmp` builds (and links) a program here.
fn openmp_compiler(cc: &str) -> bool {
    let dir = tempfile::TempDir::new().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(
        &src,
        "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n",
    )
    .unwrap();
    std::process::Command::new(cc)
        .args(["-fopenmp", "-o"])
        .arg(dir.path().join("t"))
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn omp_bench_quick_prints_every_workload_configuration_and_goal() {
    if !can_run_openmp("omp_bench_quick_prints_every_workload_configuration_and_goal") {
        return;
    }
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compiler"], "gcc");
    assert_eq!(doc["openmp_runtime"], "libgomp");
    assert_eq!(doc["threads"], 2);
    assert_eq!(doc["rounds"], 2);
    let workloads = doc["workloads"].as_array().unwrap();
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["mandelbrot-zoom", "lavamd-steps", "balanced", "short-loops"]
    );
    for w in workloads {
        let configs = w["configs"].as_array().unwrap();
        let expected = match w["name"].as_str().unwrap() {
            "balanced" | "short-loops" => 2,
            _ => 10,
        };
        assert_eq!(configs.len(), expected, "{w}");
        for c in configs {
            let seconds = c["seconds"].as_array().unwrap();
            assert_eq!(seconds.len(), 2, "one time per round: {c}");
            assert!(seconds.iter().all(|s| s.as_f64().unwrap() > 0.0), "{c}");
        }
        let goals = w["goals"].as_array().unwrap();
        assert_eq!(goals.len(), if expected == 2 { 1 } else { 3 }, "{w}");
        for g in goals {
            let verdict = g["verdict"].as_str().unwrap();
            assert!(
                ["met", "not_met", "not_applicable", "no_figure"].contains(&verdict),
                "{g}"
            );
        }
        // Two rounds give a held-out Oracle but no 95 % intervals.
        if expected == 10 {
            assert_eq!(w["oracle_held_out"]["seconds"].as_array().unwrap().len(), 2);
            assert_eq!(w["goals"][1]["verdict"], "no_figure");
        }
    }
    // The text form: one block per workload, each with its goals.
    let out = keel()
        .args([
            "omp",
            "bench",
            "--quick",
            "--quiet",
            "--workloads",
            "balanced,short-loops",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("keel omp bench: programs built by gcc (libgomp), 2 threads, 2 round(s)"),
        "{text}"
    );
    assert!(text.contains("\nbalanced ("), "{text}");
    assert!(text.contains("\nshort-loops ("), "{text}");
    assert!(!text.contains("mandelbrot-zoom"), "{text}");
    assert_eq!(text.matches("  goal: ").count(), 2, "{text}");
}

/// The same programs built by clang run on LLVM's libomp: its schedules
/// are the reference, under their own names, and libomp's default
/// (`static`) is the one the default goal names.
#[test]
fn omp_bench_builds_with_clang_and_compares_with_libomp() {
    if !can_run_with(
        "omp_bench_builds_with_clang_and_compares_with_libomp",
        "clang",
    ) {
        return;
    }
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--json"])
        .args([
            "--compiler",
            "clang",
            "--workloads",
            "lavamd-steps,short-loops",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compiler"], "clang");
    assert_eq!(doc["openmp_runtime"], "libomp");
    let workloads = doc["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 2);
    let names = |w: &serde_json::Value| -> Vec<String> {
        w["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&workloads[0]),
        [
            "libomp static",
            "libomp dynamic",
            "libomp guided",
            "libomp default",
            "keel static",
            "keel dynamic",
            "keel guided",
            "keel af",
            "keel awf-b",
            "keel auto"
        ]
    );
    assert_eq!(names(&workloads[1]), ["libomp dynamic", "keel dynamic"]);
    let goals = workloads[0]["goals"].to_string();
    assert!(goals.contains("libomp default (static)"), "{goals}");
    assert!(!goals.contains("libgomp"), "{goals}");
    // Every configuration reproduced the program's checksum (the bench
    // stops otherwise), under libomp and under Keel.
    assert_eq!(workloads[0]["checksum"], 5_300_550);
}

/// The workloads measured loop by loop: the runtime's `dynamic,k` among
/// the configurations (k = largest instance / (16 · threads)), each loop's
/// times under each configuration, the per-loop report and its goals.
#[test]
fn omp_bench_runs_the_unseen_workloads_loop_by_loop() {
    if !can_run_openmp("omp_bench_runs_the_unseen_workloads_loop_by_loop") {
        return;
    }
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--json"])
        .args(["--workloads", "multi-loop,triangular"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let workloads = doc["workloads"].as_array().unwrap();
    // Report order, not the order asked.
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["triangular", "multi-loop"]);
    for (w, k, loops) in [
        (&workloads[0], 93, &["rows"][..]),
        (&workloads[1], 125_000, &["mandel", "tasks", "triad"]),
    ] {
        let configs: Vec<&str> = w["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            configs,
            [
                "libgomp static",
                "libgomp dynamic",
                &format!("libgomp dynamic,{k}"),
                "libgomp guided",
                "libgomp default",
                "keel static",
                "keel dynamic",
                "keel guided",
                "keel af",
                "keel awf-b",
                "keel auto"
            ]
        );
        for c in w["configs"].as_array().unwrap() {
            let got: Vec<&str> = c["loops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["name"].as_str().unwrap())
                .collect();
            assert_eq!(got, loops, "{c}");
            assert_eq!(c["loops"][0]["seconds"].as_array().unwrap().len(), 2);
        }
        let per_loop = &w["per_loop"];
        assert_eq!(per_loop["loops"].as_array().unwrap().len(), loops.len());
        for l in per_loop["loops"].as_array().unwrap() {
            // The best is a fixed configuration, never auto.
            let best = l["best_fixed"].as_str().unwrap();
            assert!(configs.contains(&best) && best != "keel auto", "{l}");
            assert_eq!(l["held_out"].as_array().unwrap().len(), 2);
        }
        assert_eq!(
            per_loop["sum_of_best"]["held_out"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        // The sum's goal, then two per loop; two rounds give no interval.
        let goals = w["goals"].as_array().unwrap();
        assert_eq!(goals.len(), 1 + 2 * loops.len(), "{w}");
        assert_eq!(goals[2]["verdict"], "no_figure");
    }
    // The text form: the per-loop table and the sum of the best.
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--rounds", "2"])
        .args(["--workloads", "triangular"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\ntriangular ("), "{text}");
    assert!(text.contains("  per loop (best held out"), "{text}");
    assert!(text.contains("keel auto ÷ that sum: held out "), "{text}");
    assert_eq!(text.matches("  goal: ").count(), 3, "{text}");
}

/// Whether `gfortran -fopenmp` builds a Fortran program here.
fn openmp_fortran() -> bool {
    let dir = tempfile::TempDir::new().unwrap();
    let src = dir.path().join("t.f90");
    std::fs::write(
        &src,
        "program t\n  use omp_lib\n  if (omp_get_max_threads() < 1) stop 1\nend program\n",
    )
    .unwrap();
    std::process::Command::new("gfortran")
        .args(["-fopenmp", "-o"])
        .arg(dir.path().join("t"))
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Under gfortran the Fortran versions run on libgomp, with the C
/// versions' checksums; a workload without one is skipped with a note.
#[test]
fn omp_bench_builds_the_fortran_versions_with_gfortran() {
    let test = "omp_bench_builds_the_fortran_versions_with_gfortran";
    if !can_run_with_library(test, "gfortran -fopenmp", openmp_fortran()) {
        return;
    }
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--json"])
        .args([
            "--compiler",
            "gfortran",
            "--workloads",
            "balanced,triangular",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compiler"], "gfortran");
    assert_eq!(doc["openmp_runtime"], "libgomp");
    let workloads = doc["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 1);
    assert_eq!(workloads[0]["name"], "triangular");
    // The C program's checksum (unseen.rs pins both).
    assert_eq!(workloads[0]["checksum"], 12_861_275_764_012u64);
    assert_eq!(doc["skipped"][0]["workload"], "balanced");
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--rounds", "2"])
        .args([
            "--compiler",
            "gfortran",
            "--workloads",
            "balanced,triangular",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("skipped under gfortran: balanced (no Fortran version of balanced.c)"),
        "{text}"
    );
}

#[test]
fn omp_bench_refuses_bad_arguments_before_running_anything() {
    for args in [
        &["--rounds", "1"][..],
        &["--threads", "0"],
        &["--workloads", "nbody"],
        &["--compiler", "icc"],
        // None of the original four has a Fortran version.
        &["--compiler", "gfortran"],
        &["--compiler", "gfortran", "--workloads", "balanced"],
    ] {
        let out = keel()
            .args(["omp", "bench", "--quiet"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Skips (with a line CI counts) where gcc or the library is missing;
/// CI names `gcc -fopenmp` in KEEL_TESTS_REQUIRE, where a missing
/// compiler fails instead.
fn can_run_openmp(test: &str) -> bool {
    can_run_with(test, "gcc")
}

/// [`can_run_openmp`] for the programs `cc -fopenmp` builds.
fn can_run_with(test: &str, cc: &str) -> bool {
    can_run_with_library(test, &format!("{cc} -fopenmp"), openmp_compiler(cc))
}

/// The shared rule for a compiler `need` (`have`: whether it works here),
/// then a plain skip where `libkeel_omp.so` is not beside keel: keel-cli
/// does not depend on keel-omp, so `cargo test -p keel-cli` alone does not
/// build it, and no environment is required to.
fn can_run_with_library(test: &str, need: &str, have: bool) -> bool {
    if have && !library_beside_keel() {
        eprintln!("SKIPPED: {test} needs libkeel_omp.so beside keel");
        return false;
    }
    keel_testkit::can_run(test, need, have)
}

/// Two `schedule(runtime)` loops run `steps` times (argv[1]), then, with
/// a second argument, a fork whose child exits: it must not write a report.
const TWO_LOOPS: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 1;
    long s = 0;
    for (int t = 0; t < steps; t++) {
        #pragma omp parallel for schedule(runtime) reduction(+:s)
        for (int i = 0; i < 1000; i++) s += i % 7;
        #pragma omp parallel for schedule(runtime) reduction(+:s)
        for (int i = 0; i < 10; i++) s += i;
    }
    if (argc > 2) {
        pid_t child = fork();
        if (child == 0) exit(0);
        waitpid(child, NULL, 0);
    }
    printf("%ld\n", s);
    return 0;
}
"#;

fn build_two_loops(dir: &std::path::Path) -> std::path::PathBuf {
    let src = dir.join("two.c");
    let exe = dir.join("two");
    std::fs::write(&src, TWO_LOOPS).unwrap();
    let out = std::process::Command::new("gcc")
        .args(["-fopenmp", "-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

#[test]
fn the_report_names_each_loop_and_counts_its_instances() {
    if !can_run_openmp("the_report_names_each_loop_and_counts_its_instances") {
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let exe = build_two_loops(dir.path());
    let report = dir.path().join("report.jsonl");
    // A stale line in the file is replaced: --report-file creates it afresh.
    std::fs::write(&report, "stale\n").unwrap();
    let out = keel()
        .env("OMP_NUM_THREADS", "2")
        .args(["omp", "run", "--schedule", "guided", "--report-file"])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["5", "fork"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (5 * ((0..1000).map(|i| i % 7).sum::<i64>() + 45)).to_string()
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        text.lines().count(),
        1,
        "the forked child wrote nothing: {text}"
    );

    let out = keel()
        .args(["omp", "report", "--json"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let process = &doc["processes"][0];
    assert_eq!(process["taken"], 10);
    let loops = process["loops"].as_array().unwrap();
    assert_eq!(loops.len(), 2, "{doc}");
    for l in loops {
        assert_eq!(l["instances"], 5, "{l}");
        assert_eq!(l["schedules"][0]["schedule"], "gss", "{l}");
        assert_eq!(l["threads"], 2, "{l}");
        // GCC names outlined regions `main._omp_fn.N`; the table shows it.
        let symbol = l["symbol"].as_str().unwrap_or_default();
        assert!(symbol.starts_with("main._omp_fn."), "{l}");
        assert!(l["total_time"].as_f64().unwrap() > 0.0, "{l}");
    }
    let iterations: Vec<u64> = loops
        .iter()
        .map(|l| l["iterations"].as_u64().unwrap())
        .collect();
    assert!(
        iterations.contains(&1000) && iterations.contains(&10),
        "{iterations:?}"
    );

    let out = keel()
        .args(["omp", "report"])
        .arg(&report)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("Keel took 10 loop instances"), "{table}");
    assert_eq!(table.matches("main._omp_fn.").count(), 2, "{table}");
    assert!(table.contains("gss×5"), "{table}");
}

#[test]
fn run_with_report_prints_every_process_after_the_program() {
    if !can_run_openmp("run_with_report_prints_every_process_after_the_program") {
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let exe = build_two_loops(dir.path());
    let exe = exe.to_str().unwrap();
    // Two OpenMP processes under one report: one table each.
    let out = keel()
        .env("OMP_NUM_THREADS", "2")
        .args(["omp", "run", "--report", "--schedule", "static", "--"])
        .args(["sh", "-c", &format!("{exe} 3 && {exe} 4")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("keel omp report:").count(), 1, "{stderr}");
    assert!(stderr.contains("Keel took 6 loop instances"), "{stderr}");
    assert!(stderr.contains("Keel took 8 loop instances"), "{stderr}");
    assert!(
        stderr.contains("static×3") && stderr.contains("static×4"),
        "{stderr}"
    );

    // A program that takes no loop leaves no report, and says so.
    let out = keel()
        .args(["omp", "run", "--report", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no loop report"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_library_never_writes_its_report_through_a_symbolic_link() {
    if !can_run_openmp("the_library_never_writes_its_report_through_a_symbolic_link") {
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let exe = build_two_loops(dir.path());
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep me\n").unwrap();
    let link = dir.path().join("report.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let library = [
        keel.with_file_name("libkeel_omp.so"),
        keel.parent().unwrap().join("deps/libkeel_omp.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .unwrap();
    let out = std::process::Command::new(&exe)
        .arg("2")
        .env("LD_PRELOAD", &library)
        .env("OMP_NUM_THREADS", "2")
        .env("KEEL_SCHEDULE", "static")
        .env("KEEL_OMP_REPORT", &link)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
}
