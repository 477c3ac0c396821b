//! Bad environment values do not stop a loop: each is one warning on stderr
//! and the default, and a global pool that cannot be built runs the loop on
//! the caller. The variables must be set before the process first reads
//! them, so each case runs this test binary again as a child process with
//! its environment, and checks the child's exit status, output and stderr.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use keel::LoopError;

/// Set in the child: the `child` test runs its loops only there.
const CHILD: &str = "KEEL_ENV_WARNINGS_CHILD";
/// Set in the child: which typed error `try_for_each` returns there
/// (`schedule`, `pool`, or unset for none).
const EXPECT: &str = "KEEL_ENV_WARNINGS_EXPECT";

/// The child's loops: plain forms run to the right result whatever the
/// environment, several times (the warnings must not repeat), and the
/// `try_` forms still return the typed error.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for _ in 0..3 {
        let sum = AtomicU64::new(0);
        let summary = keel::for_each(0..1000u64, |i| {
            sum.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 499_500);
        println!("threads={}", summary.threads);
        let total = keel::parallel(0..1000u64).fold_reduce(|| 0, |a, i| a + i, |a, b| a + b);
        assert_eq!(total, 499_500);
        let mut data = vec![0u64; 100];
        keel::parallel(0..data.len()).for_each_chunk_mut(&mut data, |start, chunk| {
            for (k, x) in chunk.iter_mut().enumerate() {
                *x = (start + k) as u64;
            }
        });
        assert!(data.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
    // The typed error the parent expects from the `try_` form, if any.
    let typed = keel::try_for_each(0..10u32, |_| {});
    match std::env::var(EXPECT).as_deref() {
        Ok("schedule") => assert!(
            matches!(
                typed,
                Err(LoopError::Schedule {
                    source_name: "KEEL_SCHEDULE",
                    ..
                })
            ),
            "{typed:?}"
        ),
        Ok("pool") => assert!(matches!(typed, Err(LoopError::Pool(_))), "{typed:?}"),
        _ => assert!(typed.is_ok(), "{typed:?}"),
    }
    println!("child ok");
}

/// Runs the `child` test in a new process with `vars` set; its stdout and
/// the `keel:` lines of its stderr.
fn run_child(vars: &[(&str, &str)]) -> (String, Vec<String>) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    for var in [
        "KEEL_SCHEDULE",
        "KEEL_NUM_THREADS",
        "KEEL_WAIT_POLICY",
        "KEEL_PIN",
        "KEEL_TRACE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied());
    let out = cmd.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{vars:?}: child failed\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("child ok"), "{vars:?}: {stdout}");
    let warnings = stderr
        .lines()
        .filter(|l| l.starts_with("keel: "))
        .map(str::to_string)
        .collect();
    (stdout, warnings)
}

#[test]
fn a_bad_schedule_and_thread_count_warn_once_each_and_the_loops_run() {
    let (stdout, warnings) = run_child(&[
        ("KEEL_SCHEDULE", "garbage"),
        ("KEEL_NUM_THREADS", "abc"),
        ("KEEL_WAIT_POLICY", "sometimes"),
        (EXPECT, "schedule"),
    ]);
    let count = |needle: &str| warnings.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("KEEL_SCHEDULE=\"garbage\" is invalid"),
        1,
        "{warnings:?}"
    );
    assert_eq!(
        count("KEEL_NUM_THREADS=\"abc\" is invalid"),
        1,
        "{warnings:?}"
    );
    assert_eq!(
        count("KEEL_WAIT_POLICY=\"sometimes\" is invalid"),
        1,
        "{warnings:?}"
    );
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[..].iter().any(|l| l.ends_with("using auto")),
        "{warnings:?}"
    );
    // The default pool: the available cores.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        stdout.matches(&format!("threads={cores}\n")).count(),
        3,
        "{stdout}"
    );
}

#[test]
fn an_unbuildable_global_pool_runs_the_loops_on_the_caller_with_one_warning() {
    let too_many = (keel::pool::MAX_THREADS + 1).to_string();
    let (stdout, warnings) = run_child(&[("KEEL_NUM_THREADS", &too_many), (EXPECT, "pool")]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("the global pool could not be built")
            && warnings[0].contains("MAX_THREADS"),
        "{warnings:?}"
    );
    assert_eq!(stdout.matches("threads=1\n").count(), 3, "{stdout}");
}

#[test]
fn a_clean_environment_warns_nothing() {
    let (_, warnings) = run_child(&[("KEEL_NUM_THREADS", "2")]);
    assert!(warnings.is_empty(), "{warnings:?}");
}
