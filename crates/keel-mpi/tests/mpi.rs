//! The plan-only API under real MPI (MPICH's `mpiexec`): every rank's
//! lists pair up, a bad input on one rank is the same error on the
//! others, and a rank that dies ends the job with its message instead of
//! a hang. Built with `--features mpi` (CI: after scripts/install-mpich.sh);
//! each job runs under a deadline.
#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// The example `cargo test --features mpi` builds beside the tests.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join("mpi_plan");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test -p keel-mpi --features mpi` (all targets), which builds it",
        path.display()
    );
    path
}

/// Runs `mpiexec -n ranks program args` with a deadline: (status,
/// stdout, stderr); a job still running after 120 s is a hang.
fn launch(ranks: usize, program: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new("mpiexec")
        .arg("-n")
        .arg(ranks.to_string())
        .arg(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpiexec runs (scripts/install-mpich.sh installs it)");
    let status = match child.wait_timeout(Duration::from_secs(120)).unwrap() {
        Some(status) => status,
        None => {
            let _ = child.kill();
            panic!(
                "mpiexec -n {ranks} {} {args:?} still ran after 120 s: a hang",
                program.display()
            );
        }
    };
    let out = child.wait_with_output().unwrap();
    (
        status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mpi_plan` on `ranks` ranks.
fn mpiexec(ranks: usize, args: &[&str]) -> (Option<i32>, String, String) {
    launch(ranks, &example(), args)
}

fn field(line: &str, name: &str) -> usize {
    let mut words = line.split_whitespace();
    words.find(|w| *w == name);
    words.next().unwrap().parse().unwrap()
}

#[test]
fn exports_and_imports_pair_up_on_one_two_and_four_ranks() {
    for ranks in [1, 2, 4] {
        let (status, stdout, stderr) = mpiexec(ranks, &[]);
        assert_eq!(status, Some(0), "{stdout}{stderr}");
        let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("rank ")).collect();
        assert_eq!(lines.len(), ranks, "{stdout}");
        let exports: usize = lines.iter().map(|l| field(l, "exports")).sum();
        let imports: usize = lines.iter().map(|l| field(l, "imports")).sum();
        let kept: usize = lines.iter().map(|l| field(l, "keeps")).sum();
        assert_eq!(exports, imports, "{stdout}");
        // Every object is somewhere exactly once: kept or imported.
        assert_eq!(kept + imports, 16 * ranks, "{stdout}");
        let summary = stdout.lines().find(|l| l.starts_with("lambda")).unwrap();
        let words: Vec<&str> = summary.split_whitespace().collect();
        let (before, after): (f64, f64) = (words[1].parse().unwrap(), words[3].parse().unwrap());
        assert!(after <= before, "{summary}");
        if ranks > 1 {
            assert!(after < 0.05 && before > 0.5, "{summary}");
        }
    }
}

#[test]
fn a_bad_input_on_one_rank_is_one_error_everywhere() {
    let (status, stdout, stderr) = mpiexec(3, &["bad", "1"]);
    assert_ne!(status, Some(0), "{stdout}{stderr}");
    let errors: Vec<&str> = stdout.lines().filter(|l| l.contains("error:")).collect();
    assert!(!errors.is_empty(), "{stdout}{stderr}");
    for line in errors {
        assert!(
            line.ends_with(
                "error: rank 1: object 3 (id 19) has weight NaN (must be finite and ≥ 0)"
            ),
            "{line}"
        );
    }
}

#[test]
fn a_rank_that_dies_ends_the_job_with_its_message() {
    let (status, stdout, stderr) = mpiexec(3, &["die", "2"]);
    assert_ne!(status, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "keel-mpi: rank 2 of 3 panicked: rank 2 dies before the plan, as asked; aborting the MPI job"
        ),
        "{stderr}"
    );
}

/// `mpiexec -n ranks mpi_objects steps 1`.
fn objects_job(ranks: usize, steps: usize) -> String {
    let steps = steps.to_string();
    let (status, stdout, stderr) = launch(
        ranks,
        &example().with_file_name("mpi_objects"),
        &[&steps, "1"],
    );
    assert_eq!(status, Some(0), "{stdout}{stderr}");
    stdout
}

#[test]
fn distributed_objects_are_conserved_on_one_two_and_four_ranks() {
    // The example checks every object's final state against its own
    // recomputation and every object's step count after every step, and
    // exits non-zero on a difference.
    for ranks in [1, 2, 4] {
        let stdout = objects_job(ranks, 9);
        let last = stdout
            .lines()
            .find(|l| l.starts_with("conserved"))
            .expect(&stdout);
        assert!(
            last.starts_with(&format!("conserved all={} ", 16 * ranks)),
            "{stdout}"
        );
        if ranks > 1 {
            // Rank 0's heavy objects are spread at the first balancing step.
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with("step 3:") && !l.contains(" 0 objects move")),
                "{stdout}"
            );
        }
    }
}

#[test]
fn the_bench_runs_every_configuration_with_one_checksum() {
    let config = keel_mpi::bench::MpiBenchConfig {
        workloads: vec!["persistent".into(), "lassen".into()],
        ranks: vec![1, 2],
        threads: 1,
        reps: 1,
        quick: true,
        program: PathBuf::from(env!("CARGO_BIN_EXE_keel-mpi-bench")),
        launcher: "mpiexec".into(),
        timeout: Duration::from_secs(120),
    };
    let mut heard = 0;
    let report = keel_mpi::bench::run(&config, &mut |_| heard += 1).unwrap();
    assert_eq!(heard, 16);
    assert_eq!(report.rows.len(), 16);
    for row in &report.rows {
        assert_eq!(row.median.steps, 100);
        assert!(row.median.total_s > 0.0 && row.vs_no_lb > 0.0, "{row:?}");
        match (row.config.as_str(), row.ranks) {
            ("no-lb", _) => assert_eq!(row.median.rebalances, 0, "{row:?}"),
            // Every 50 steps: once in 100 (not after the last).
            ("greedy-periodic", _) => assert_eq!(row.median.rebalances, 1, "{row:?}"),
            // One rank has nothing to balance against.
            (_, 1) => assert_eq!(row.median.rebalances, 0, "{row:?}"),
            _ => {}
        }
        // A heavy band that stays on rank 0 is balanced when it pays.
        if row.workload == "persistent" && row.ranks == 2 && row.config.starts_with("greedy") {
            assert!(row.median.migrations > 0, "{row:?}");
        }
    }
    let unknown = keel_mpi::bench::MpiBenchConfig {
        workloads: vec!["stencil".into()],
        ..config.clone()
    };
    assert!(keel_mpi::bench::run(&unknown, &mut |_| {}).is_err());
    let bad = keel_mpi::bench::MpiBenchConfig {
        ranks: vec![0],
        ..config.clone()
    };
    assert!(keel_mpi::bench::run(&bad, &mut |_| {}).is_err());
    let missing = keel_mpi::bench::MpiBenchConfig {
        program: "/nonexistent/keel-mpi-bench".into(),
        ..config
    };
    assert!(keel_mpi::bench::run(&missing, &mut |_| {})
        .unwrap_err()
        .to_string()
        .contains("not there"));
}

#[test]
fn hybrid_sphynx_runs_every_particle_once_under_every_schedule() {
    let exe = example().with_file_name("mpi_sphynx");
    let mut checksums = Vec::new();
    for ranks in [1, 2] {
        for schedule in ["auto", "static", "dynamic,4"] {
            let (status, stdout, stderr) = launch(
                ranks,
                &exe,
                &[
                    "--schedule",
                    schedule,
                    "--threads",
                    "2",
                    "--workload",
                    "sphynx:particles=2000,short-particles=1000,steps=5",
                ],
            );
            assert_eq!(status, Some(0), "{stdout}{stderr}");
            assert!(stdout.contains("\"once\":true"), "{stdout}");
            let checksum: f64 = stdout
                .split("\"checksum\":")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{stdout}"));
            checksums.push(checksum);
        }
    }
    // Every schedule and rank count computes the same results; the ranks'
    // partial sums only change the rounding.
    for c in &checksums {
        assert!(
            (c - checksums[0]).abs() <= 1e-12 * checksums[0].abs(),
            "{checksums:?}"
        );
    }
}
