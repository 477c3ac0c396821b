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
