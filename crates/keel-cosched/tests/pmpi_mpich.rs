//! The PMPI monitoring wrapper (`pmpi/keel_pmpi.c`) under a real 2-rank
//! MPICH ring: it must fill each rank's shared monitoring page the way the
//! page contract says (FCS paper, section 2.6 and Table 1), honour the wait
//! modes without breaking the program, and leave programs without a usable
//! page alone.
//!
//! Needs MPICH's `mpicc` and `mpiexec` (`scripts/install-mpich.sh`), hence
//! the `mpich` feature: `cargo test -p keel-cosched --features mpich`.
#![cfg(feature = "mpich")]

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// "KEELCSH1", the contract's magic.
const MAGIC: u64 = 0x4b45_454c_4353_4831;
const VERSION: u32 = 1;
const PAGE_SIZE: usize = 4096;
const POLL: u32 = 0;
const SPIN_BLOCK: u32 = 1;
const BLOCK: u32 = 2;
/// Table 2's T_spin, the contract's default.
const SPIN_NS: u64 = 100_000;

/// Iterations of the ring: six rounds of its seven communication patterns.
const ITERATIONS: u64 = 42;
/// Rank r computes `COMPUTE_US * (1 + r)` per iteration: far above the
/// wrapper's 50 us "computed since the last call" threshold.
const COMPUTE_US: u64 = 2_000;
/// Blocking calls the ring makes per round of its seven patterns (2 + 1 + 1
/// + 2 + 3 + 2 + 4), and after its loop (an allreduce and a barrier).
const CALLS_PER_ROUND: u64 = 15;
const FINAL_CALLS: u64 = 2;
/// How long one `mpiexec` may take before the test kills it.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The built wrapper and ring, shared by the tests.
struct Build {
    dir: PathBuf,
    library: PathBuf,
    ring: PathBuf,
    rank_script: PathBuf,
}

fn build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("pmpi");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("keel-pmpi");
        fs::create_dir_all(&dir).unwrap();
        let library = dir.join("libkeel_pmpi.so");
        let ring = dir.join("ring");
        let warnings = ["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-std=gnu11"];
        mpicc(
            Command::new("mpicc")
                .args(warnings)
                .args(["-fPIC", "-shared", "-o"])
                .arg(&library)
                .arg(source.join("keel_pmpi.c"))
                .arg("-lpthread"),
        );
        mpicc(
            Command::new("mpicc")
                .args(warnings)
                .arg("-o")
                .arg(&ring)
                .arg(source.join("tests/ring.c")),
        );
        // Picks this rank's page, and preloads the wrapper into the rank
        // only (not into mpiexec and its proxies).
        let rank_script = dir.join("rank.sh");
        fs::write(
            &rank_script,
            "#!/bin/sh\n\
             rank=\"${PMI_RANK:-${MPI_LOCALRANKID:-}}\"\n\
             if [ -z \"$rank\" ]; then echo 'rank.sh: no PMI_RANK or MPI_LOCALRANKID' >&2; exit 97; fi\n\
             if [ -n \"$TEST_PAGE_PREFIX\" ]; then export KEEL_COSCHED_PAGE=\"$TEST_PAGE_PREFIX-$rank\"; fi\n\
             export LD_PRELOAD=\"$TEST_PRELOAD\"\n\
             exec \"$@\"\n",
        )
        .unwrap();
        fs::set_permissions(&rank_script, fs::Permissions::from_mode(0o755)).unwrap();
        Build {
            dir,
            library,
            ring,
            rank_script,
        }
    })
}

fn mpicc(command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| {
        panic!("cannot run mpicc ({e}); install MPICH with scripts/install-mpich.sh")
    });
    assert!(
        output.status.success(),
        "mpicc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One rank's page as the process left it.
#[derive(Debug)]
struct Page {
    magic: u64,
    version: u32,
    wait_mode: u32,
    spin_ns: u64,
    seq: u64,
    comm_count: u64,
    comm_wait_ns: u64,
    spin_ns_total: u64,
    cpu_ns: u64,
    updates: u64,
    pid: u64,
}

/// The pages of one run, removed from `/dev/shm` when dropped.
struct Pages {
    prefix: String,
    paths: Vec<PathBuf>,
}

impl Pages {
    /// Creates one page per rank the way the node manager does: 4096 bytes,
    /// mode 0600, magic, version, wait mode and spin time set, the rest 0.
    fn new(modes: &[u32]) -> Pages {
        let pages = Pages::named(modes.len());
        for (path, &mode) in pages.paths.iter().zip(modes) {
            let mut bytes = vec![0u8; PAGE_SIZE];
            bytes[0..8].copy_from_slice(&MAGIC.to_ne_bytes());
            bytes[8..12].copy_from_slice(&VERSION.to_ne_bytes());
            bytes[12..16].copy_from_slice(&mode.to_ne_bytes());
            bytes[16..24].copy_from_slice(&SPIN_NS.to_ne_bytes());
            write_page(path, &bytes);
        }
        pages
    }

    /// Unique page paths, `keel-cosched-<uid>-<jobid>-<rank>`, not created.
    fn named(ranks: usize) -> Pages {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let uid = fs::metadata("/proc/self").unwrap().uid();
        let job = format!(
            "pmpitest{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let prefix = format!("/dev/shm/keel-cosched-{uid}-{job}");
        let paths = (0..ranks)
            .map(|r| PathBuf::from(format!("{prefix}-{r}")))
            .collect();
        Pages { prefix, paths }
    }

    fn read(&self, rank: usize) -> Page {
        let bytes = fs::read(&self.paths[rank]).unwrap();
        assert_eq!(bytes.len(), PAGE_SIZE, "the wrapper resized the page");
        let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        Page {
            magic: u64_at(0),
            version: u32_at(8),
            wait_mode: u32_at(12),
            spin_ns: u64_at(16),
            seq: u64_at(24),
            comm_count: u64_at(32),
            comm_wait_ns: u64_at(40),
            spin_ns_total: u64_at(48),
            cpu_ns: u64_at(56),
            updates: u64_at(64),
            pid: u64_at(72),
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = fs::remove_file(path);
        }
    }
}

fn write_page(path: &Path, bytes: &[u8]) {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

/// Runs `mpiexec -n 2 rank.sh ring ITERATIONS compute_us` with the wrapper
/// preloaded, each rank reporting to `prefix-<rank>` when a prefix is given.
fn run_ring(prefix: Option<&str>, compute_us: u64, extra_env: &[(&str, &str)]) -> Output {
    let build = build();
    let mut command = Command::new("mpiexec");
    command
        .args(["-n", "2"])
        .arg(&build.rank_script)
        .arg(&build.ring)
        .arg(ITERATIONS.to_string())
        .arg(compute_us.to_string())
        .env("TEST_PRELOAD", &build.library)
        .env("TEST_PAGE_PREFIX", prefix.unwrap_or(""))
        .env_remove("KEEL_COSCHED_PAGE")
        .env_remove("KEEL_PMPI_NBC")
        .env_remove("KEEL_PMPI_SLEEP_NS")
        .env_remove("KEEL_PMPI_COMPUTE_EPSILON_NS")
        .current_dir(&build.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap_or_else(|e| {
        panic!("cannot run mpiexec ({e}); install MPICH with scripts/install-mpich.sh")
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            // SIGTERM first: Hydra passes it on to the ranks it started.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "mpiexec ran past {RUN_TIMEOUT:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(&format!("{ITERATIONS} iterations, 0 errors")),
        "the ring failed ({}): stdout {stdout} stderr {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Checks what every run with a valid page must leave in it.
fn check_common(page: &Page, rank: usize, mode: u32) {
    // The node manager's fields are the node manager's.
    assert_eq!(page.magic, MAGIC, "rank {rank}: {page:?}");
    assert_eq!(page.version, VERSION, "rank {rank}: {page:?}");
    assert_eq!(page.wait_mode, mode, "rank {rank}: {page:?}");
    assert_eq!(page.spin_ns, SPIN_NS, "rank {rank}: {page:?}");
    assert_eq!(page.pid, 0, "rank {rank}: {page:?}");
    // Stable, and one seqlock round (+2) per update from a fresh page.
    assert_eq!(page.seq % 2, 0, "rank {rank}: seq odd: {page:?}");
    assert_eq!(page.seq, 2 * page.updates, "rank {rank}: {page:?}");
    // One update when it attaches, one per blocking call, one at
    // MPI_Finalize: a call the wrapper missed shows here.
    let calls = ITERATIONS / 7 * CALLS_PER_ROUND + FINAL_CALLS;
    assert_eq!(page.updates, calls + 2, "rank {rank}: {page:?}");
    assert!(page.comm_wait_ns > 0, "rank {rank}: {page:?}");
    assert!(page.spin_ns_total <= page.cpu_ns, "rank {rank}: {page:?}");
}

#[test]
fn ring_counts_one_event_per_iteration_in_every_wait_mode() {
    // (wait mode of rank 0, of rank 1, collectives made nonblocking)
    let cases = [
        (POLL, POLL, false),
        (SPIN_BLOCK, BLOCK, false),
        (BLOCK, SPIN_BLOCK, true),
        (BLOCK, BLOCK, true),
    ];
    for (mode0, mode1, nbc) in cases {
        let modes = [mode0, mode1];
        let pages = Pages::new(&modes);
        let env: &[(&str, &str)] = if nbc { &[("KEEL_PMPI_NBC", "1")] } else { &[] };
        run_ring(Some(&pages.prefix), COMPUTE_US, env);
        for (rank, &mode) in modes.iter().enumerate() {
            let page = pages.read(rank);
            let case = format!("rank {rank}, modes {modes:?}, nbc {nbc}: {page:?}");
            check_common(&page, rank, mode);
            // Every iteration computes, then makes several blocking calls
            // back to back: one event each.
            assert!(
                (ITERATIONS - 1..=ITERATIONS + 1).contains(&page.comm_count),
                "comm_count should be {ITERATIONS}; {case}"
            );
            // The computation is CPU time outside the calls, so it survives
            // the subtraction of the time spent inside them.
            let computed = ITERATIONS * COMPUTE_US * 1_000 * (1 + rank as u64);
            assert!(
                page.cpu_ns - page.spin_ns_total >= computed,
                "T_cpu below the {computed} ns computed; {case}"
            );
            // Rank 0 waits for rank 1's longer computation each iteration;
            // blocking must give that time back to the machine. Checked
            // only when the wait was long enough to measure (a loaded
            // machine can delay rank 0 as much as rank 1).
            if rank == 0 && mode == BLOCK && nbc && page.comm_wait_ns > 20_000_000 {
                assert!(
                    page.spin_ns_total * 2 < page.comm_wait_ns,
                    "blocking waits still burn the CPU; {case}"
                );
            }
        }
    }
}

#[test]
fn back_to_back_calls_without_computation_are_one_event() {
    let modes = [POLL, SPIN_BLOCK];
    let pages = Pages::new(&modes);
    run_ring(Some(&pages.prefix), 0, &[]);
    for (rank, &mode) in modes.iter().enumerate() {
        let page = pages.read(rank);
        check_common(&page, rank, mode);
        // Nothing but a few instructions between 92 calls: they merge. A
        // little slack for a first call that finds the process had just
        // finished MPI_Init's own work.
        assert!(
            (1..=3).contains(&page.comm_count),
            "rank {rank}: {ITERATIONS} iterations without computation gave {} events: {page:?}",
            page.comm_count
        );
    }
}

#[test]
fn programs_without_a_usable_page_run_unchanged() {
    // Rank 0: the right size but no magic; rank 1: too short for the layout.
    let pages = Pages::named(2);
    write_page(&pages.paths[0], &[0u8; PAGE_SIZE]);
    write_page(&pages.paths[1], &[7u8; 10]);
    let output = run_ring(Some(&pages.prefix), 100, &[]);
    assert_eq!(fs::read(&pages.paths[0]).unwrap(), vec![0u8; PAGE_SIZE]);
    assert_eq!(fs::read(&pages.paths[1]).unwrap(), vec![7u8; 10]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("wrong magic or version"), "{stderr}");
    assert!(
        stderr.contains("not a regular file large enough for the page layout"),
        "{stderr}"
    );

    // A page path that does not exist.
    let missing = Pages::named(2);
    let output = run_ring(Some(&missing.prefix), 100, &[]);
    assert!(!missing.paths[0].exists() && !missing.paths[1].exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("No such file or directory"), "{stderr}");

    // No KEEL_COSCHED_PAGE at all: silence, and the collectives still work
    // when made nonblocking without a page.
    let output = run_ring(None, 100, &[("KEEL_PMPI_NBC", "1")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("keel_pmpi"), "{stderr}");
}
