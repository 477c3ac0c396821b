//! `KEEL_TRACE`: the trace file holds one complete event per executed
//! chunk, on the participant that ran it, and the chunks cover the loop
//! exactly once. Its own test binary: the variable is read once, on the
//! first loop.

use keel::{ThreadPool, WaitPolicy};

#[test]
fn every_chunk_becomes_one_trace_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    std::env::set_var("KEEL_TRACE", &path);
    let pool = ThreadPool::builder()
        .threads(2)
        .wait_policy(WaitPolicy::Spins(1000))
        .build()
        .unwrap();
    let summary = pool
        .parallel(0..1000u32)
        .schedule("dynamic,7".parse().unwrap())
        .for_each(|i| {
            std::hint::black_box(i);
        });

    let mut text = std::fs::read_to_string(&path).unwrap();
    // The array is left open (the format allows it); close it to parse.
    text.push(']');
    let events: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(events.len() as u64, summary.chunks);
    let mut covered = vec![0u8; 1000];
    for e in &events {
        assert_eq!(e["ph"], "X");
        assert_eq!(e["name"], "ss:chunk=7");
        assert!(e["tid"].as_u64().unwrap() < 2);
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
        let (from, to) = (
            e["args"]["from"].as_u64().unwrap(),
            e["args"]["to"].as_u64().unwrap(),
        );
        for i in from..to {
            covered[i as usize] += 1;
        }
    }
    assert!(covered.iter().all(|&c| c == 1));

    // Under `auto`, each instance's events name the method, its choice and
    // why: ExhaustiveSel's first two trials are static and ss.
    for _ in 0..2 {
        pool.parallel(0..100u32)
            .schedule("auto,exhaustive".parse().unwrap())
            .id("traced-auto")
            .for_each(|i| {
                std::hint::black_box(i);
            });
    }
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push(']');
    let events: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let names: std::collections::BTreeSet<String> = events
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains("exhaustive → static (explore)"), "{names:?}");
    assert!(names.contains("exhaustive → ss (explore)"), "{names:?}");
    let _ = std::fs::remove_file(&path);
}
