//! One policy, every context (the ARTful portability
//! claim): the same registry mapping policy, built from the same spec, is
//! run on the same measured inputs in
//!
//! 1. the objects runtime (`keel::objects`): objects are stepped on real
//!    threads, their measured loads fill the load database, and
//!    `Objects::rebalance` remaps from exactly those measurements;
//! 2. `keel map` (the CLI), given those measurements as a trace file;
//! 3. the simulator's objects model (`keel_sim::objects::decide`, the
//!    remap path of `keel sim objects`);
//! 4. a thread-runtime loop (`keel::loops` with `.workload(&hints)`), with
//!    the measured loads as its per-iteration hints.
//!
//! keel::objects has no API to inject a load database, so the test uses
//! the closest real path: it *measures* one (real steps on real threads)
//! and reads it back through `object_loads()` / `pu_background()` before
//! calling `rebalance()`, which decides from that same database. A loop
//! context has no background load and no current placement, so the loop
//! is compared with `keel map` and the simulator on the loads alone.

use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use keel::objects::{Object, Objects, StepContext};
use keel::ThreadPool;
use keel_sim::objects::{decide, RemapInput};
use keel_workloads::objects::run_units;

const PUS: usize = 2;
const OBJECTS: usize = 12;
const SPECS: [&str; 3] = ["greedy", "binlpt:chunks=4", "refine:tolerance=1.02"];

/// An object whose step spins a load that depends on its id.
struct Spinner {
    id: usize,
    sum: f64,
}

impl Object for Spinner {
    fn step(&mut self, _: &StepContext<'_>) {
        let units = 20_000 + 15_000 * ((self.id * 7) % OBJECTS) as u64;
        self.sum += black_box(run_units(units, self.id as u64));
    }
}

struct Measured {
    loads: Vec<f64>,
    background: Vec<f64>,
    current: Vec<usize>,
    available: Vec<bool>,
    decided: Vec<usize>,
}

/// Context 1: the objects runtime measures and remaps.
fn objects_runtime(pool: &ThreadPool, spec: &str) -> Measured {
    let objects: Vec<Spinner> = (0..OBJECTS).map(|id| Spinner { id, sum: 0.0 }).collect();
    let mut run = Objects::builder()
        .policy(spec)
        .initial("block")
        .stealing("none")
        .invocation(keel_policy::invoke::Invocation::Never)
        .build(pool, objects)
        .unwrap();
    for _ in 0..2 {
        run.step().unwrap();
    }
    let loads = run.object_loads();
    let background = run.pu_background().to_vec();
    let current = run.placement().to_vec();
    let available = run.available().to_vec();
    run.rebalance().unwrap();
    Measured {
        loads,
        background,
        current,
        available,
        decided: run.placement().to_vec(),
    }
}

/// Context 2: `keel map` on a CSV trace of the same numbers (Rust prints
/// an f64 with the shortest digits that read back to the same bits).
fn keel_map(spec: &str, m: &Measured, with_runtime_state: bool) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.csv");
    let mut f = std::fs::File::create(&tasks).unwrap();
    if with_runtime_state {
        writeln!(f, "load,current_pu").unwrap();
        for (l, p) in m.loads.iter().zip(&m.current) {
            writeln!(f, "{l},{p}").unwrap();
        }
    } else {
        writeln!(f, "load").unwrap();
        for l in &m.loads {
            writeln!(f, "{l}").unwrap();
        }
    }
    let pus = dir.path().join("pus.csv");
    let mut g = std::fs::File::create(&pus).unwrap();
    writeln!(g, "background,available").unwrap();
    for (b, a) in m.background.iter().zip(&m.available) {
        let b = if with_runtime_state { *b } else { 0.0 };
        writeln!(g, "{b},{a}").unwrap();
    }
    let out = Command::cargo_bin("keel")
        .unwrap()
        .args([
            "map",
            "--policy",
            spec,
            "--json",
            "--show-mapping",
            "--tasks",
        ])
        .arg(&tasks)
        .arg("--pu-file")
        .arg(&pus)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["results"][0]["mapping"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect()
}

/// Context 3: the simulator's remap.
fn simulator(spec: &str, m: &Measured, with_runtime_state: bool) -> Vec<usize> {
    let policy = keel_policy::mapping::registry().build(spec).unwrap();
    let zeros = vec![0.0; PUS];
    let migratable = vec![true; OBJECTS];
    let d = decide(
        policy.as_ref(),
        &RemapInput {
            loads: &m.loads,
            background: if with_runtime_state {
                &m.background
            } else {
                &zeros
            },
            migratable: &migratable,
            available: &m.available,
            current: &m.current,
            speeds: None,
        },
    )
    .unwrap();
    d.mapping.into_vec()
}

/// Context 4: a workload-aware loop schedule; which participant ran each
/// iteration (the caller is participant 0, pool workers are named
/// `keel-worker-i`).
fn thread_loop(pool: &ThreadPool, schedule: &str, hints: &[f64]) -> Vec<usize> {
    let owner: Vec<AtomicUsize> = (0..hints.len())
        .map(|_| AtomicUsize::new(usize::MAX))
        .collect();
    pool.parallel(0..hints.len())
        .schedule(schedule.parse().unwrap())
        .id(format!("one-policy-{schedule}"))
        .workload(hints)
        .for_each_chunk(|range| {
            let me = std::thread::current()
                .name()
                .and_then(|n| n.strip_prefix("keel-worker-"))
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            for i in range {
                owner[i].store(me, Ordering::Relaxed);
            }
        });
    owner.into_iter().map(AtomicUsize::into_inner).collect()
}

#[test]
fn the_same_policy_decides_the_same_in_every_context() {
    let pool = ThreadPool::builder().threads(PUS).build().unwrap();
    for spec in SPECS {
        let m = objects_runtime(&pool, spec);
        assert!(
            m.loads.iter().all(|&l| l > 0.0),
            "{spec}: measured {:?}",
            m.loads
        );
        // The full runtime state: objects runtime = keel map = simulator.
        let map = keel_map(spec, &m, true);
        let sim = simulator(spec, &m, true);
        assert_eq!(m.decided, map, "{spec}: keel::objects vs keel map");
        assert_eq!(m.decided, sim, "{spec}: keel::objects vs keel-sim");
        // Loads alone: a loop schedule = keel map = simulator. (`refine`
        // needs a current placement, which a loop does not have.)
        if spec.starts_with("refine") {
            continue;
        }
        let map = keel_map(spec, &m, false);
        let sim = simulator(spec, &m, false);
        let lp = thread_loop(&pool, spec, &m.loads);
        assert_eq!(map, sim, "{spec}: keel map vs keel-sim on loads alone");
        assert_eq!(map, lp, "{spec}: keel map vs keel::loops");
    }
}
