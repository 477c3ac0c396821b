//! The team's loop ring under stress: a program built with `gcc -fopenmp`
//! runs thousands of short `nowait` loops on more threads than this
//! machine has CPUs, each loop with a different slow thread, so that fast
//! threads run ahead up to the ring's length and every slot is reused
//! many times; every iteration must run exactly once, and Keel must have
//! taken every loop.
//!
//! Without `gcc -fopenmp` the test prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names `gcc -fopenmp` (CI), in which case it fails.

mod common;

use common::{build, can_run, report, run};

#[test]
fn many_nowait_loops_on_more_threads_than_cpus_run_every_iteration_once() {
    let test = "many_nowait_loops_on_more_threads_than_cpus";
    let bin = build("gcc", "nowait_stress.c", &[]);
    if !can_run(test, "gcc -fopenmp", bin.is_some()) {
        return;
    }
    let bin = bin.unwrap();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (2 * cpus + 1).clamp(5, 33).to_string();
    let loops = 20_000;
    for (schedule, wait) in [
        ("dynamic", "passive"),
        ("static", "active"),
        ("auto", "passive"),
    ] {
        let out = run(
            &bin,
            &[&loops.to_string()],
            &[
                ("OMP_NUM_THREADS", &threads),
                ("OMP_WAIT_POLICY", wait),
                ("KEEL_SCHEDULE", schedule),
            ],
            true,
        );
        let r = report(&out);
        assert!(r.ok, "{schedule} on {threads} threads: {}", r.text);
        let taken = r.taken;
        let stdout = r.stdout;
        assert_eq!(taken, loops, "{schedule} on {threads} threads: {stdout}");
    }
}
