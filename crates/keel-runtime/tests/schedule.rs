//! `keel::Schedule`: parsed once where it is written, printed back in
//! normal form, reusable across loops.

use std::sync::atomic::{AtomicU64, Ordering};

use keel::{LoopError, Schedule, ScheduleError};

mod common;
use common::{counters, not_once, pool};

#[test]
fn every_registered_name_and_auto_form_parses_and_prints_back_its_normal_form() {
    let mut specs = keel::policy::dls::registry().names();
    specs.extend(
        [
            "dynamic,4",
            "static,16",
            "guided,2",
            "auto",
            "auto,keel",
            "auto,expert",
            "auto,exhaustive",
            "auto,random",
            "auto:method=random,seed=3",
            "auto:method=exhaustive,expert-chunk=0",
            "auto:pin=static",
            "binlpt:chunks=80",
            "tap:alpha=0.5,chunk=2",
        ]
        .map(String::from),
    );
    for spec in specs {
        let schedule: Schedule = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(schedule.as_str(), spec);
        let normal = schedule.to_string();
        let again: Schedule = normal.parse().unwrap_or_else(|e| panic!("{normal}: {e}"));
        assert_eq!(again.to_string(), normal, "{spec}: normal form is stable");
    }
    let show = |s: &str| s.parse::<Schedule>().unwrap().to_string();
    assert_eq!(show("dynamic,4"), "ss:chunk=4");
    assert_eq!(show("auto"), "auto");
    assert_eq!(show("auto:method=keel"), "auto");
    assert_eq!(show("auto,expert"), "auto,expert");
    assert_eq!(show("auto:method=expert"), "auto,expert");
    assert_eq!(
        show("auto:method=random,seed=3,expert-chunk=0"),
        "auto:method=random,seed=3,expert-chunk=0"
    );
    assert_eq!(show("binlpt:chunks=80"), "binlpt:chunks=80,cut=improved");
}

#[test]
fn a_bad_schedule_is_a_typed_error_naming_the_text() {
    for bad in [
        "bogus",
        "dynamic,0",
        "dynamic,x",
        "auto,fuzzy",
        "binlpt:chunks=0",
    ] {
        let err: ScheduleError = bad.parse::<Schedule>().unwrap_err();
        assert_eq!(err.spec, bad);
        let message = err.to_string();
        assert!(message.contains(bad), "{message}");
        assert!(matches!(
            LoopError::from(err),
            LoopError::Schedule {
                source_name: "schedule",
                ..
            }
        ));
    }
}

#[test]
fn one_schedule_serves_many_loops() {
    let pool = pool(2);
    let schedule: Schedule = "dynamic,3".parse().unwrap();
    let sum = AtomicU64::new(0);
    for (k, n) in [10u64, 100, 1000].into_iter().enumerate() {
        let hits = counters(n);
        let summary = pool
            .parallel(0..n)
            .schedule(schedule.clone())
            .id(format!("reused-schedule-{k}"))
            .for_each(|i| {
                sum.fetch_add(i, Ordering::Relaxed);
                hits[i as usize].fetch_add(1, Ordering::Relaxed);
            });
        assert_eq!(summary.chunks, n.div_ceil(3));
        assert!(not_once(&hits).is_empty(), "{n}");
    }
    assert_eq!(sum.into_inner(), 45 + 4950 + 499_500);
}
