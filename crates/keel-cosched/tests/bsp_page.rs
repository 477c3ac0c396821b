//! The BSP job binary reports through its shared page exactly as the
//! page contract says, and obeys the wait mode written there.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bsp_binary, KillOnDrop};
use keel_cosched::shm::{page_path, Counters, Page, PageWaitMode, PAGE_ENV};

/// One ring at a time: the rings' ranks compute and spin for measured
/// CPU time, and the test harness runs this file's tests in parallel; two
/// rings at once would put four spinning ranks on a two-CPU machine, and
/// a preempted spinner accrues wait without spin CPU time.
static ONE_RING_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs a 2-rank ring with one page per rank created beforehand (as the
/// node manager does) in `mode`; returns each rank's final counters.
fn ring(dir: &Path, tag: u64, mode: PageWaitMode, scale: &str, iterations: u64) -> Vec<Counters> {
    let _cpus = ONE_RING_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let pages: Vec<Page> = (0..2)
        .map(|r| Page::create(&page_path(dir, 0, tag, r), None).unwrap())
        .collect();
    for p in &pages {
        p.set_wait_mode(mode);
    }
    let rendezvous = dir.join(format!("rv-{tag}"));
    std::fs::create_dir_all(&rendezvous).unwrap();
    let mut guard = KillOnDrop::default();
    for (r, p) in pages.iter().enumerate() {
        let child = Command::new(bsp_binary())
            .args([
                "--iterations",
                &iterations.to_string(),
                "--granularity-ms",
                "2",
                "--scale",
                scale,
            ])
            .args(["--rank", &r.to_string(), "--size", "2", "--rendezvous"])
            .arg(&rendezvous)
            .env(PAGE_ENV, p.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        guard.children.push(child);
    }
    for c in &mut guard.children {
        let status = c.wait().unwrap();
        assert!(status.success(), "rank failed: {status}");
    }
    pages.iter().map(|p| p.counters().unwrap()).collect()
}

#[test]
fn counters_follow_the_page_contract() {
    let dir = tempfile::tempdir().unwrap();
    let n = 60;
    // Rank 0 computes 3× as much, so rank 1 waits about 4 ms per step.
    let c = ring(dir.path(), 1, PageWaitMode::Poll, "3,1", n);
    for (r, k) in c.iter().enumerate() {
        // A send and the receive right after it are back to back: one
        // event per superstep.
        assert_eq!(k.comm_count, n, "rank {r}: {k:?}");
        assert!(k.updates >= n, "rank {r}: {k:?}");
    }
    let (slow, fast) = (&c[0], &c[1]);
    let ms = |ns: u64| ns as f64 / 1e6;
    // CPU time less spinning is the compute: ~6 ms and ~2 ms per step.
    assert!(ms(slow.compute_ns()) > 0.9 * 6.0 * n as f64, "{slow:?}");
    assert!(ms(fast.compute_ns()) > 0.9 * 2.0 * n as f64, "{fast:?}");
    assert!(
        ms(fast.compute_ns()) < 1.5 * 2.0 * n as f64 + 50.0,
        "spin must be subtracted: {fast:?}"
    );
    // The fast rank busy-waits about 4 ms a step, and that is spin time.
    assert!(ms(fast.comm_wait_ns) > 0.5 * 4.0 * n as f64, "{fast:?}");
    assert!(ms(fast.spin_ns_total) > 0.5 * 4.0 * n as f64, "{fast:?}");
    assert!(fast.spin_ns_total <= fast.cpu_ns);
}

#[test]
fn block_mode_does_not_spin_and_spin_block_spins_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40;
    let blocked = ring(dir.path(), 2, PageWaitMode::Block, "3,1", n);
    assert_eq!(blocked[1].spin_ns_total, 0, "{:?}", blocked[1]);
    assert!(
        blocked[1].comm_wait_ns > 2 * 1_000_000 * n,
        "it still waited: {:?}",
        blocked[1]
    );
    let spin_ns = 100_000;
    let sb = ring(dir.path(), 3, PageWaitMode::SpinBlock { spin_ns }, "3,1", n);
    // At most one spin per call (two calls per step), plus slack for a
    // preempted spin.
    assert!(sb[1].spin_ns_total <= 2 * n * spin_ns * 2, "{:?}", sb[1]);
    assert!(sb[1].spin_ns_total > 0, "{:?}", sb[1]);
}

#[test]
fn a_process_without_a_page_runs_and_a_bad_page_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(bsp_binary())
        .args(["--iterations", "3", "--granularity-ms", "1"])
        .env_remove(PAGE_ENV)
        .status()
        .unwrap();
    assert!(status.success());
    let bad = dir.path().join("bad");
    std::fs::write(&bad, vec![0u8; 4096]).unwrap();
    let out = Command::new(bsp_binary())
        .args(["--iterations", "3"])
        .env(PAGE_ENV, &bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("magic"));
}

#[test]
fn a_vanished_peer_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let mut guard = KillOnDrop::default();
    for r in 0..2 {
        let mut cmd = Command::new(bsp_binary());
        cmd.args(["--iterations", "100000", "--granularity-ms", "1"])
            .args(["--rank", &r.to_string(), "--size", "2", "--rendezvous"])
            .arg(dir.path())
            .stderr(Stdio::null());
        if r == 1 {
            cmd.args(["--fail-rank", "1", "--fail-at", "5"]);
        }
        guard.children.push(cmd.spawn().unwrap());
    }
    let failed = guard.children[1].wait().unwrap();
    assert_eq!(failed.code(), Some(1));
    let t0 = std::time::Instant::now();
    let survivor = loop {
        if let Some(s) = guard.children[0].try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "rank 0 hangs on a dead peer"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(survivor.code(), Some(3));
}
