//! Tests for the coscheduling policies (FCS paper §2–3): Table 2's constants, every branch
//! of Algorithm 2 and its boundaries, the phase diagram of Fig. 2 as a
//! grid property, Algorithm 1 and the baselines' slot decisions, the
//! Ousterhout matrix's packing and compaction, and the registry and spec
//! errors.

use proptest::prelude::*;

use super::*;

fn stats(t_cpu: f64, t_comm: f64, c_comm: u64) -> CommStats {
    CommStats::new(t_cpu, t_comm, c_comm).unwrap()
}

fn proc_ref(job: JobId, rank: usize, class: ProcessClass) -> ProcRef {
    ProcRef { job, rank, class }
}

/// Thresholds that are exact in binary, so boundary values hit exactly.
fn dyadic_params() -> FcsParams {
    FcsParams {
        f_thresh: 0.125,
        cs_thresh: 0.25,
        dc_thresh: 1.0,
        ..FcsParams::default()
    }
}

/// A process due for evaluation: past `cslots_min`, not at a reset.
fn due(class: ProcessClass) -> ProcessSched {
    ProcessSched {
        class,
        cslots: DEFAULT_CSLOTS_MIN,
        tslots: 1000,
    }
}

// ---------------------------------------------------------------- Table 2

#[test]
fn table2_defaults_are_pinned() {
    let p = FcsParams::default();
    assert_eq!(p.t_slice, 0.025, "T_slice = 25 ms");
    assert_eq!(p.t_spin, 100e-6, "T_spin = 100 us");
    assert_eq!(p.cslots_min, 10, "cslots_MIN = 10");
    assert_eq!(p.dc_thresh, 1.0, "DC_thresh = 1 s");
    assert_eq!(p.cs_thresh, 0.010, "CS_thresh = 10 ms");
    assert!(
        (p.f_thresh - 0.0075).abs() < 1e-15,
        "F_thresh = 0.75 x CS_thresh"
    );
    assert_eq!(p.f_thresh, 0.75 * p.cs_thresh);
    assert_eq!(p.tslots_max, 16384, "tslots_MAX = 16384");
    assert_eq!(p.validate(), Ok(()));
    // The SB baseline spins as long as FCS's T_spin (§3).
    assert_eq!(DEFAULT_SB_SPIN, p.t_spin);
    // A bare `fcs` spec is Table 2.
    let fcs = parse("fcs").unwrap();
    assert_eq!(fcs.fcs_params(), Some(&p));
    assert_eq!(fcs.time_slice(), Some(0.025));
    assert_eq!(parse("gs").unwrap().time_slice(), Some(0.025));
}

// ------------------------------------------------------------ Algorithm 2

#[test]
fn each_classification_branch() {
    let p = FcsParams::default();
    // g = 2 s > DC_thresh: coarse granularity.
    assert_eq!(classify(&stats(2.0, 0.0, 1), &p), ProcessClass::Dc);
    // g = 5 ms < CS_thresh: fine granularity.
    assert_eq!(classify(&stats(0.004, 0.001, 1), &p), ProcessClass::Cs);
    // g = 501 ms between the thresholds, avg_cpu 1 ms < F_thresh: frustrated.
    assert_eq!(classify(&stats(0.001, 0.5, 1), &p), ProcessClass::F);
    // g = 60 ms between the thresholds, avg_cpu 50 ms >= F_thresh: communicates
    // well but infrequently.
    assert_eq!(classify(&stats(0.05, 0.01, 1), &p), ProcessClass::Dc);
    // Averages, not totals: 100 events of 4 ms + 1 ms is still fine-grained.
    assert_eq!(classify(&stats(0.4, 0.1, 100), &p), ProcessClass::Cs);
    // No communication at all: infinitely coarse.
    let silent = stats(3.0, 0.0, 0);
    assert_eq!(silent.granularity(), f64::INFINITY);
    assert_eq!(classify(&silent, &p), ProcessClass::Dc);
    assert_eq!(classify(&CommStats::default(), &p), ProcessClass::Dc);
}

#[test]
fn thresholds_are_strict_inequalities_as_in_the_paper() {
    let p = dyadic_params();
    // g == DC_thresh is not "> DC_thresh": with a low avg_cpu it is F, not DC.
    let s = stats(0.0625, 0.9375, 1);
    assert_eq!(s.granularity(), 1.0);
    assert_eq!(classify(&s, &p), ProcessClass::F);
    // Just above DC_thresh it is DC.
    assert_eq!(classify(&stats(0.0625, 0.9376, 1), &p), ProcessClass::Dc);
    // g == CS_thresh is not "< CS_thresh": F (low avg_cpu) rather than CS.
    let s = stats(0.0625, 0.1875, 1);
    assert_eq!(s.granularity(), 0.25);
    assert_eq!(classify(&s, &p), ProcessClass::F);
    assert_eq!(classify(&stats(0.0625, 0.1874, 1), &p), ProcessClass::Cs);
    // avg_cpu == F_thresh is not "< F_thresh": DC.
    let s = stats(0.125, 0.375, 1);
    assert_eq!(classify(&s, &p), ProcessClass::Dc);
    assert_eq!(classify(&stats(0.1249, 0.375, 1), &p), ProcessClass::F);
    // With Table 2 itself: g exactly 10 ms, all computation, is DC.
    assert_eq!(
        classify(&stats(0.010, 0.0, 1), &FcsParams::default()),
        ProcessClass::Dc
    );
}

#[test]
fn reset_at_tslots_max_comes_first_and_forces_cs() {
    let p = FcsParams::default();
    let coarse = stats(5.0, 0.0, 1);
    let mut s = ProcessSched {
        class: ProcessClass::Dc,
        cslots: 500,
        tslots: 16384,
    };
    assert_eq!(reclassify(&mut s, &coarse, &p), Reclass::Reset);
    assert_eq!(s.class, ProcessClass::Cs, "the reset wins over DC stats");
    assert_eq!(s.cslots, 0);
    assert_eq!(s.tslots, 16384, "tslots counts since the start");
    // A multiple of tslots_max resets even a CS process below cslots_min.
    let mut s = ProcessSched {
        class: ProcessClass::Cs,
        cslots: 3,
        tslots: 2 * 16384,
    };
    assert_eq!(reclassify(&mut s, &coarse, &p), Reclass::Reset);
    assert!(Reclass::Reset.resets_stats());
    // One slot short of the reset, the DC stats are evaluated normally.
    let mut s = ProcessSched {
        class: ProcessClass::Cs,
        cslots: 500,
        tslots: 16383,
    };
    assert_eq!(
        reclassify(&mut s, &coarse, &p),
        Reclass::Changed {
            from: ProcessClass::Cs,
            to: ProcessClass::Dc
        }
    );
}

#[test]
fn cslots_min_holds_off_a_class_change() {
    let p = FcsParams::default();
    let coarse = stats(5.0, 0.0, 1);
    let mut s = ProcessSched {
        class: ProcessClass::Cs,
        cslots: p.cslots_min - 1,
        tslots: 100,
    };
    assert_eq!(reclassify(&mut s, &coarse, &p), Reclass::Unchanged);
    assert_eq!(s.class, ProcessClass::Cs);
    assert_eq!(
        s.cslots,
        p.cslots_min - 1,
        "reclassify does not count slots"
    );
    // At exactly cslots_min the process is evaluated ("<", not "<=").
    s.cslots = p.cslots_min;
    let r = reclassify(&mut s, &coarse, &p);
    assert_eq!(
        r,
        Reclass::Changed {
            from: ProcessClass::Cs,
            to: ProcessClass::Dc
        }
    );
    assert!(r.resets_stats());
    assert_eq!(s.class, ProcessClass::Dc);
    assert_eq!(s.cslots, 0, "cslots counts slots in the current class");
    assert_eq!(s.tslots, 100);
}

#[test]
fn an_unchanged_class_keeps_counting() {
    let p = FcsParams::default();
    let mut s = due(ProcessClass::F);
    s.cslots = 40;
    let r = reclassify(&mut s, &stats(0.001, 0.5, 1), &p);
    assert_eq!(r, Reclass::Unchanged);
    assert!(!r.resets_stats());
    assert_eq!((s.class, s.cslots), (ProcessClass::F, 40));
}

#[test]
fn every_target_class_is_reachable_from_every_class() {
    let p = FcsParams::default();
    let targets = [
        (stats(0.004, 0.001, 1), ProcessClass::Cs),
        (stats(0.001, 0.5, 1), ProcessClass::F),
        (stats(2.0, 0.0, 1), ProcessClass::Dc),
        (stats(0.05, 0.01, 1), ProcessClass::Dc),
    ];
    for from in [ProcessClass::Cs, ProcessClass::F, ProcessClass::Dc] {
        for (st, to) in &targets {
            let mut s = due(from);
            let r = reclassify(&mut s, st, &p);
            assert_eq!(s.class, *to, "{from} with {st:?}");
            if from == *to {
                assert_eq!(r, Reclass::Unchanged);
            } else {
                assert_eq!(r, Reclass::Changed { from, to: *to });
            }
        }
    }
}

#[test]
fn finish_slot_counts_the_slot_then_reclassifies() {
    let p = FcsParams {
        tslots_max: 25,
        ..FcsParams::default()
    };
    let frustrated = stats(0.001, 0.5, 1);
    let mut s = ProcessSched::new();
    assert_eq!(
        s,
        ProcessSched {
            class: ProcessClass::Cs,
            cslots: 0,
            tslots: 0
        }
    );
    let mut log = Vec::new();
    for _ in 0..30 {
        log.push(s.finish_slot(&frustrated, &p));
    }
    // Slots 1..9: held off by cslots_min = 10.
    assert!(log[..9].iter().all(|r| *r == Reclass::Unchanged));
    // Slot 10: first evaluation.
    assert_eq!(
        log[9],
        Reclass::Changed {
            from: ProcessClass::Cs,
            to: ProcessClass::F
        }
    );
    // Slots 11..24: stays F.
    assert!(log[10..24].iter().all(|r| *r == Reclass::Unchanged));
    // Slot 25 = tslots_max: reset to CS.
    assert_eq!(log[24], Reclass::Reset);
    // Slots 26..30: CS again, held off (cslots restarted at 0).
    assert!(log[25..].iter().all(|r| *r == Reclass::Unchanged));
    assert_eq!(s.class, ProcessClass::Cs);
    assert_eq!((s.cslots, s.tslots), (5, 30));
}

#[test]
fn processes_of_one_job_reset_together() {
    // Same assigned slots → same tslots → the reset lands on the same slot
    // for every rank, whatever their classes and statistics (§2.4).
    let p = FcsParams {
        tslots_max: 40,
        ..FcsParams::default()
    };
    let per_rank = [
        stats(0.001, 0.5, 1),
        stats(2.0, 0.0, 1),
        stats(0.004, 0.001, 1),
    ];
    let mut ranks = [ProcessSched::new(); 3];
    for slot in 1..=80u64 {
        let results: Vec<Reclass> = ranks
            .iter_mut()
            .zip(&per_rank)
            .map(|(s, st)| s.finish_slot(st, &p))
            .collect();
        let resets = results.iter().filter(|r| **r == Reclass::Reset).count();
        if slot % 40 == 0 {
            assert_eq!(resets, 3, "slot {slot}");
        } else {
            assert_eq!(resets, 0, "slot {slot}");
        }
    }
}

// ----------------------------------------------------------- statistics

#[test]
fn bad_statistics_are_typed_errors_not_panics() {
    for bad in [f64::NAN, -1.0, -0.0001, f64::INFINITY, f64::NEG_INFINITY] {
        let err = CommStats::new(bad, 0.0, 1).unwrap_err();
        assert!(
            matches!(err, CoschedError::Statistic { what: "T_cpu", .. }),
            "{err}"
        );
        let err = CommStats::new(0.0, bad, 1).unwrap_err();
        assert!(
            matches!(err, CoschedError::Statistic { what: "T_comm", .. }),
            "{err}"
        );
        assert!(err.to_string().contains("T_comm"), "{err}");
    }
    let s = stats(0.3, 0.1, 4);
    assert_eq!((s.t_cpu(), s.t_comm(), s.c_comm()), (0.3, 0.1, 4));
    assert!((s.avg_cpu() - 0.075).abs() < 1e-15);
    assert!((s.avg_comm() - 0.025).abs() < 1e-15);
    assert!((s.granularity() - 0.1).abs() < 1e-15);
}

mod params;
mod slots;
