//! `KEEL_TRACE`: the file is strict JSON (the Chrome trace object format)
//! once `keel::trace::finish` ran, with one complete event per loop chunk,
//! farm item, object step and potential-task chunk, each on a named track.
//!
//! The variable is read once per process, so each case runs in a child
//! process of this test binary: the parent sets `KEEL_TRACE` to a fresh
//! path, runs the ignored `child_*` test of the same name, and parses what
//! it wrote. The child prints what it knows (`EXPECT {json}`) for the
//! parent to check the trace against.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use keel::farm::Farm;
use keel::objects::{Object, Objects, StepContext};
use keel::{ThreadPool, WaitPolicy};
use serde_json::{json, Value};

fn pool(threads: usize) -> ThreadPool {
    ThreadPool::builder()
        .threads(threads)
        .wait_policy(WaitPolicy::Spins(1000))
        .build()
        .unwrap()
}

/// Runs `child` in a child process with `KEEL_TRACE=path`; returns its
/// `EXPECT` value and its stderr.
fn run_child(child: &str, path: &Path) -> (Value, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([child, "--exact", "--ignored", "--nocapture"])
        .env("KEEL_TRACE", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{child}: {stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{child} did not run: {stdout}");
    let expect = stdout
        .lines()
        .find_map(|l| l.strip_prefix("EXPECT "))
        .map(|j| serde_json::from_str(j).unwrap())
        .unwrap_or(Value::Null);
    (expect, stderr)
}

/// The file parsed strictly, and its events; checks what every trace
/// holds: the process name, and a name for every track that has events.
fn parse(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    assert_eq!(trace["displayTimeUnit"], "ms");
    let events = trace["traceEvents"].as_array().unwrap().clone();
    let process = &events[0];
    assert_eq!(process["name"], "process_name");
    assert_eq!(process["ph"], "M");
    assert!(
        process["args"]["name"]
            .as_str()
            .unwrap()
            .starts_with("keel: trace"),
        "{process}"
    );
    let named: BTreeSet<u64> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(named.contains(&e["tid"].as_u64().unwrap()), "{e}");
        assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
    }
    events
}

/// The name of track `tid`.
fn track_name(events: &[Value], tid: u64) -> String {
    events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["tid"] == tid)
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

fn arg(e: &Value, key: &str) -> u64 {
    e["args"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: {e}"))
}

#[test]
fn loops_every_chunk_once_named_by_loop_and_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let (expect, _) = run_child("child_loops", &path);
    let events = parse(&path);
    let sweep: Vec<&Value> = events
        .iter()
        .filter(|e| e["name"] == "sweep [ss:chunk=7]")
        .collect();
    assert_eq!(sweep.len() as u64, expect["chunks"].as_u64().unwrap());
    let mut covered = vec![0u8; 1000];
    for e in &sweep {
        assert_eq!(e["ph"], "X");
        assert_eq!(e["cat"], "loop");
        assert_eq!(e["args"]["schedule"], "ss:chunk=7");
        assert_eq!(e["args"]["loop"], "sweep");
        let tid = e["tid"].as_u64().unwrap();
        assert!(tid < 2, "{e}");
        assert_eq!(track_name(&events, tid), format!("loop participant {tid}"));
        for i in arg(e, "from")..arg(e, "to") {
            covered[i as usize] += 1;
        }
    }
    assert!(covered.iter().all(|&c| c == 1), "{covered:?}");
    // Under `auto`, the schedule names the method, its choice and why:
    // ExhaustiveSel's first two trials are static and ss.
    let names: BTreeSet<&str> = events.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(
        names.contains("traced-auto [exhaustive → static (explore)]"),
        "{names:?}"
    );
    assert!(
        names.contains("traced-auto [exhaustive → ss (explore)]"),
        "{names:?}"
    );
    // Traced measuring schedules: every iteration in exactly one chunk.
    for (schedule, chunks) in expect["adaptive"].as_object().unwrap() {
        let loop_id = format!("traced-{schedule}");
        let chunks_of: Vec<&Value> = events
            .iter()
            .filter(|e| e["args"]["loop"] == loop_id.as_str())
            .collect();
        assert_eq!(
            chunks_of.len() as u64,
            chunks.as_u64().unwrap(),
            "{schedule}"
        );
        let mut covered = vec![0u8; 1000];
        for e in &chunks_of {
            for i in arg(e, "from")..arg(e, "to") {
                covered[i as usize] += 1;
            }
        }
        assert!(covered.iter().all(|&c| c == 1), "{schedule}: {covered:?}");
    }
    // The loop after `finish` left no event behind (and the file parsed).
    assert!(
        !names.iter().any(|n| n.starts_with("after-finish")),
        "{names:?}"
    );
}

#[ignore = "run by loops_every_chunk_once_named_by_loop_and_schedule in a child process"]
#[test]
fn child_loops() {
    let pool = pool(2);
    let summary = pool
        .parallel(0..1000u32)
        .schedule("dynamic,7".parse().unwrap())
        .id("sweep")
        .for_each(|i| {
            std::hint::black_box(i);
        });
    for _ in 0..2 {
        pool.parallel(0..100u32)
            .schedule("auto,exhaustive".parse().unwrap())
            .id("traced-auto")
            .for_each(|i| {
                std::hint::black_box(i);
            });
    }
    // The measuring schedules run their general participant when traced:
    // the per-chunk timing of `af` (a pair of clock reads) and of `maf`
    // and `awf-d` (one read, the end of a chunk starting the next request).
    let mut adaptive = serde_json::Map::new();
    for schedule in ["af", "maf", "awf-b", "awf-d"] {
        let summary = pool
            .parallel(0..1000u32)
            .schedule(schedule.parse().unwrap())
            .id(format!("traced-{schedule}"))
            .for_each(|i| {
                std::hint::black_box(i);
            });
        adaptive.insert(schedule.to_string(), json!(summary.chunks));
    }
    keel::trace::finish();
    keel::trace::finish();
    pool.parallel(0..100u32)
        .schedule("static".parse().unwrap())
        .id("after-finish")
        .for_each(|i| {
            std::hint::black_box(i);
        });
    keel::trace::finish();
    println!(
        "EXPECT {}",
        json!({ "chunks": summary.chunks, "adaptive": adaptive })
    );
}

#[test]
fn farm_every_item_once_across_worker_tracks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let (expect, _) = run_child("child_farm", &path);
    let events = parse(&path);
    let per_worker: Vec<u64> = serde_json::from_value(expect["per_worker"].clone()).unwrap();
    assert_eq!(per_worker.iter().sum::<u64>(), 2000);
    let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["name"] == "item") {
        assert_eq!(e["cat"], "farm");
        seen.entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push(arg(e, "n"));
    }
    for (w, &count) in per_worker.iter().enumerate() {
        let tid = 10_000 + w as u64;
        let mut ns = seen.remove(&tid).unwrap_or_default();
        ns.sort_unstable();
        assert_eq!(ns, (0..count).collect::<Vec<_>>(), "worker {w}");
        if count > 0 {
            assert_eq!(track_name(&events, tid), format!("farm worker {w}"));
        }
    }
    assert!(seen.is_empty(), "items on unknown tracks: {seen:?}");
    for e in events.iter().filter(|e| e["name"] == "wait") {
        assert_eq!(e["tid"], 19_999);
        assert_eq!(track_name(&events, 19_999), "farm emitter/collector");
    }
}

#[ignore = "run by farm_every_item_once_across_worker_tracks in a child process"]
#[test]
fn child_farm() {
    let mut farm = Farm::builder()
        .workers(3)
        .policy("arrs:chunk=50")
        .build()
        .unwrap();
    let mut collected = 0u64;
    let report = farm
        .run_collect(
            0..2000u64,
            |_, i| std::hint::black_box(i),
            |_| collected += 1,
        )
        .unwrap();
    assert_eq!(collected, 2000);
    let _guard = keel::trace::FinishGuard::new();
    println!("EXPECT {}", json!({ "per_worker": report.per_worker }));
}

/// An object whose step is a potential task of `len` iterations, each
/// sleeping `sleep_us` (sleeping, so that thieves get to run even when
/// the test shares few cores).
struct Sleeper {
    len: usize,
    sleep_us: u64,
}

impl Object for Sleeper {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let us = self.sleep_us;
        ctx.for_each_with_chunks(0..self.len, 8, |_| {
            std::thread::sleep(Duration::from_micros(us))
        });
    }
}

#[test]
fn objects_every_object_and_chunk_once_per_step_steals_marked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let (expect, _) = run_child("child_objects", &path);
    let events = parse(&path);
    let (objects, steps) = (8u64, 3u64);
    let lens: Vec<u64> = serde_json::from_value(expect["lens"].clone()).unwrap();
    let mut steps_seen: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    for e in events.iter().filter(|e| e["cat"] == "object") {
        let (step, object) = (arg(e, "step"), arg(e, "object"));
        assert_eq!(e["name"], format!("object {object}"));
        let pu = e["tid"].as_u64().unwrap() - 20_000;
        assert!(pu < 2, "{e}");
        assert_eq!(track_name(&events, 20_000 + pu), format!("objects PU {pu}"));
        *steps_seen.entry((step, object)).or_default() += 1;
    }
    let all: BTreeMap<(u64, u64), u32> = (0..steps)
        .flat_map(|s| (0..objects).map(move |o| ((s, o), 1)))
        .collect();
    assert_eq!(steps_seen, all);
    let mut covered: BTreeMap<(u64, u64), Vec<u8>> = BTreeMap::new();
    let mut stolen = 0u64;
    for e in events
        .iter()
        .filter(|e| e["cat"] == "task" || e["cat"] == "stolen")
    {
        let (step, object) = (arg(e, "step"), arg(e, "object"));
        let pu = e["tid"].as_u64().unwrap() - 20_000;
        let thief = e["args"]["stolen"].as_bool().unwrap();
        // Stolen exactly when it ran away from its owner's track.
        assert_eq!(thief, pu != arg(e, "owner"), "{e}");
        assert_eq!(e["cat"] == "stolen", thief, "{e}");
        assert_eq!(
            e["name"],
            if thief { "stolen chunk" } else { "chunk" },
            "{e}"
        );
        stolen += u64::from(thief);
        let hits = covered
            .entry((step, object))
            .or_insert_with(|| vec![0; lens[object as usize] as usize]);
        for i in arg(e, "from")..arg(e, "to") {
            hits[i as usize] += 1;
        }
    }
    assert_eq!(covered.len() as u64, steps * objects);
    for (key, hits) in &covered {
        assert!(hits.iter().all(|&h| h == 1), "{key:?}: {hits:?}");
    }
    assert_eq!(stolen, expect["steals"].as_u64().unwrap());
    // PU 1's objects are light, PU 0's heavy and all exposed: PU 1 steals.
    assert!(stolen > 0, "no steal happened");
}

#[ignore = "run by objects_every_object_and_chunk_once_per_step_steals_marked in a child process"]
#[test]
fn child_objects() {
    let pool = pool(2);
    // The block placement puts objects 0..4 on PU 0 (heavy) and 4..8 on
    // PU 1 (light).
    let objects: Vec<Sleeper> = (0..8)
        .map(|i| Sleeper {
            len: 16 + i,
            sleep_us: if i < 4 { 500 } else { 1 },
        })
        .collect();
    let lens: Vec<usize> = objects.iter().map(|o| o.len).collect();
    let mut run = Objects::builder()
        .initial("block")
        .stealing("all")
        .build(&pool, objects)
        .unwrap();
    let report = run.run(3).unwrap();
    keel::trace::finish();
    println!(
        "EXPECT {}",
        json!({ "steals": report.tasks.steals, "lens": lens })
    );
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_at_the_path_is_refused_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep").unwrap();
    let path = dir.path().join("trace.json");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let (_, stderr) = run_child("child_refused", &path);
    assert_eq!(stderr.matches("KEEL_TRACE=").count(), 1, "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(stderr.contains("tracing is off"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[ignore = "run by a_symbolic_link_at_the_path_is_refused_with_one_warning in a child process"]
#[test]
fn child_refused() {
    let pool = pool(2);
    for _ in 0..3 {
        pool.parallel(0..100u32).for_each(|i| {
            std::hint::black_box(i);
        });
    }
    keel::trace::finish();
}
