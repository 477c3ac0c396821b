//! The harness end to end on a tiny configuration: every table row is
//! there, chunk counts are the ones each mapping promises, the JSON
//! document and the tables are written. No timing is asserted.

use keel_bench::{run, Config, Runtime, Sched};

#[test]
fn a_quick_run_fills_every_table() {
    let mut config = Config::quick();
    config.rounds = 1;
    let n = config.iterations();
    let p = config.threads as u64;
    let mut lines = Vec::new();
    let report = run(&config, &mut |l| lines.push(l.to_string())).unwrap();
    assert_eq!(lines.len(), 2, "warm-up and one recorded round: {lines:?}");

    assert_eq!(report.threads, 2);
    assert_eq!(report.iterations, n);
    assert_eq!(report.delays.len(), 2);
    for d in &report.delays {
        assert!(d.length >= 1);
        assert!(d.rust_reference_us.is_some());
        assert_eq!(d.c_reference_us.is_some(), cfg!(feature = "libgomp"));
    }

    // (a) one row per delay and schedule, three runtimes each.
    assert_eq!(
        report.overhead.len(),
        config.delays_us.len() * Sched::DEFAULT.len()
    );
    assert_eq!(report.libgomp.is_none(), cfg!(feature = "libgomp"));
    for row in &report.overhead {
        let sched = Sched::DEFAULT
            .iter()
            .find(|s| s.label() == row.schedule)
            .unwrap();
        // rayon's pieces are counted as they run; the static and dynamic
        // mappings are exact because N / k is a power of two.
        let rayon = row.rayon.chunks.unwrap();
        match sched {
            Sched::Static => assert_eq!(rayon, p as f64),
            Sched::Dynamic(k) => assert_eq!(rayon, (n / k) as f64),
            Sched::Guided(_) => assert!(rayon >= 1.0),
        }
        assert!(row.rayon.per_chunk_ns.is_some() && row.rayon.error.is_none());
        match &row.keel.error {
            None => {
                let keel = row.keel.chunks.unwrap();
                if let Sched::Dynamic(k) = sched {
                    assert_eq!(keel, (n / k) as f64, "{}", row.schedule);
                }
                assert!(keel >= 1.0);
                assert!(row.keel.per_chunk_ns.is_some());
            }
            // Tolerated while the schedule registry is incomplete.
            Some(e) => assert!(!e.is_empty()),
        }
        match &row.libgomp {
            Some(g) => {
                assert_eq!(g.chunks, Some(sched.gomp_chunks(n, p) as f64));
                assert!(g.per_chunk_ns.is_some());
            }
            None => assert!(
                report.libgomp.is_some(),
                "no libgomp column, so none built in"
            ),
        }
    }

    // (b) Keel and rayon always, libgomp when built in.
    let runtimes: Vec<Runtime> = report.latency.iter().map(|r| r.runtime).collect();
    let expected = if cfg!(feature = "libgomp") { 6 } else { 4 };
    assert_eq!(runtimes.len(), expected, "{runtimes:?}");
    for r in &report.latency {
        assert!(r.error.is_some() || r.ns.is_some(), "{}", r.what);
        assert!(r.reps >= 20);
    }
    assert_eq!(report.latency_ratios.is_empty(), !cfg!(feature = "libgomp"));

    // (c) one row per adaptive delay and schedule; ss is its own baseline.
    assert_eq!(
        report.adaptive.len(),
        config.adaptive_delays_us.len() * config.adaptive_schedules.len()
    );
    assert_eq!(report.adaptive[0].schedule, "static");
    assert_eq!(
        report.adaptive[0].marginal_per_chunk_ns, None,
        "no chunk beyond its own"
    );
    let ss = &report.adaptive[1];
    assert_eq!(ss.schedule, "dynamic");
    if ss.cell.per_chunk_ns.is_some_and(|s| s.median > 0.0) {
        assert_eq!(ss.per_chunk_over_ss, Some(1.0));
    }
    if ss.marginal_per_chunk_ns.is_some_and(|m| m > 0.0) {
        assert_eq!(ss.marginal_over_ss, Some(1.0));
    }

    // (d) the clock.
    assert!(report.instant_now_ns.unwrap().median > 0.0);
    assert!(!report.isolation.is_empty());

    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["overhead"].as_array().unwrap().len(),
        report.overhead.len()
    );
    let mut text = Vec::new();
    report.write_tables(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    for needle in [
        "(a) Overhead per chunk",
        "(b) Empty parallel loop",
        "(c) Keel schedules",
        "(d) One Instant::now()",
        "dynamic,8",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
}

#[test]
fn bad_configurations_are_errors() {
    let mut config = Config::quick();
    config.rounds = 0;
    assert!(run(&config, &mut |_| {}).is_err());
    let mut config = Config::quick();
    config.delays_us = vec![-1.0];
    assert!(run(&config, &mut |_| {}).is_err());
}
