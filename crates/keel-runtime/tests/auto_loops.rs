//! Schedule selection in the loop context (Auto4OMP §3): every method runs
//! every iteration once, keeps its state per loop however loops interleave,
//! records its choice at every instance, and rejects unknown methods.

use std::sync::atomic::Ordering;

use keel::loops::{record, LoopError, LoopId, Schedule};
use keel::policy::dls::AUTO4OMP_PORTFOLIO;

mod common;
use common::{counters, not_once, pool};

const METHODS: [&str; 5] = [
    "auto",
    "auto,keel",
    "auto,expert",
    "auto,exhaustive",
    "auto,random",
];

#[test]
fn every_method_runs_every_iteration_once_at_every_instance() {
    let pool = pool(3);
    for method in METHODS {
        let id = format!("once-{method}");
        for instance in 0..30u64 {
            let n = 500 + instance * 37;
            let hits = counters(n);
            pool.parallel(0..n)
                .schedule(method.parse().unwrap())
                .id(id.clone())
                .for_each(|i| {
                    hits[i as usize].fetch_add(1, Ordering::Relaxed);
                });
            let bad = not_once(&hits);
            assert!(bad.is_empty(), "{method}, instance {instance}: {bad:?}");
        }
        let rec = record(LoopId::named(id)).unwrap();
        let timeline = rec.selection.expect("auto records its choices");
        assert_eq!(
            timeline.runs.iter().map(|r| r.len).sum::<u64>(),
            30,
            "{method}"
        );
        assert!(rec.last.selection.is_some());
    }
}

/// ExhaustiveSel tries the portfolio in order, one schedule per instance:
/// two loops interleaved instance by instance must each see the whole
/// sequence from the start, unaffected by the other.
#[test]
fn each_loop_keeps_its_own_selection_state() {
    let pool = pool(2);
    let mut seen = [Vec::new(), Vec::new()];
    for _ in 0..12 {
        for (k, id) in ["interleaved-a", "interleaved-b"].into_iter().enumerate() {
            let n = if k == 0 { 1000u32 } else { 3000 };
            pool.parallel(0..n)
                .schedule("auto,exhaustive".parse().unwrap())
                .id(id)
                .for_each(|_| {});
            seen[k].push(record(LoopId::named(id)).unwrap().last.schedule);
        }
    }
    for sequence in &seen {
        assert_eq!(sequence, &AUTO4OMP_PORTFOLIO.to_vec(), "{sequence:?}");
    }
}

#[test]
fn the_expert_chunk_takes_the_chunk_parameters_place() {
    let pool = pool(2);
    let run = |schedule: &str, id: &'static str| {
        pool.parallel(0..1_000_000u64)
            .schedule(schedule.parse().unwrap())
            .id(id)
            .for_each_chunk(|_| {});
        record(LoopId::named(id)).unwrap().last.chunk
    };
    let expert = keel::policy::select::expert_chunk(1_000_000, 2);
    assert!(expert.is_some());
    assert_eq!(run("auto,exhaustive", "expert-on"), expert);
    assert_eq!(
        run("auto:method=exhaustive,expert-chunk=0", "expert-off"),
        None
    );
}

#[test]
fn unknown_methods_are_typed_errors_listing_the_valid_ones() {
    for bad in ["auto,fuzzy", "auto,", "auto:method=best"] {
        let err = bad.parse::<Schedule>().unwrap_err();
        assert_eq!(err.spec, bad);
        // Converted for a caller whose error type is `LoopError`.
        assert!(
            matches!(LoopError::from(err.clone()), LoopError::Schedule { .. }),
            "{bad}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("keel") && message.contains("exhaustive"),
            "{bad}: {message}"
        );
    }
}
