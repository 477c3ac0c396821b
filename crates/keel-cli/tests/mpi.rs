//! `keel mpi bench`'s refusals, which need no MPI: bad counts are usage
//! errors before anything runs; a missing per-rank program or launcher is
//! a runtime error that says what to build. The runs themselves are
//! tested by keel-mpi's MPI tests (`--features mpi`, under MPICH in CI).

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

#[test]
fn bad_counts_are_usage_errors() {
    for args in [
        &["mpi", "bench", "--ranks", "0"][..],
        &["mpi", "bench", "--ranks", "2,5000"],
        &["mpi", "bench", "--threads", "0"],
        &["mpi", "bench", "--reps", "0"],
        &["mpi", "bench", "--ranks", "x"],
    ] {
        let out = keel().args(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_missing_program_or_launcher_says_what_to_do() {
    let out = keel()
        .args([
            "mpi",
            "bench",
            "--quick",
            "--program",
            "/nonexistent/keel-mpi-bench",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cargo build --release -p keel-mpi --features mpi"),
        "{stderr}"
    );

    // A program that exists but a launcher that does not.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("keel-mpi-bench");
    std::fs::write(&program, "").unwrap();
    let out = keel()
        .args([
            "mpi",
            "bench",
            "--quick",
            "--quiet",
            "--launcher",
            "/nonexistent/mpiexec",
            "--program",
        ])
        .arg(&program)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot start /nonexistent/mpiexec"),
        "{stderr}"
    );
}
