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

// ------------------------------------------------------ Fig. 2 (grid)

/// Fig. 2 drawn from its description (§2.4): constant granularity lies on
/// the anti-diagonals avg_cpu + avg_comm = g; CS is the corner below the
/// CS_thresh diagonal, DC everything beyond the DC_thresh diagonal, and the
/// band between is split by the vertical line avg_cpu = F_thresh.
fn fig2_region(avg_cpu: f64, avg_comm: f64, p: &FcsParams) -> ProcessClass {
    let g = avg_cpu + avg_comm;
    let beyond_dc = g > p.dc_thresh;
    let corner = g < p.cs_thresh;
    match (beyond_dc, corner, avg_cpu < p.f_thresh) {
        (true, _, _) => ProcessClass::Dc,
        (false, true, _) => ProcessClass::Cs,
        (false, false, true) => ProcessClass::F,
        (false, false, false) => ProcessClass::Dc,
    }
}

#[test]
fn fig2_grid_has_all_three_regions_where_the_diagram_puts_them() {
    let p = dyadic_params();
    let step = 1.0 / 64.0;
    let (mut cs, mut f, mut dc) = (0, 0, 0);
    for i in 0..=96 {
        for j in 0..=96 {
            let (a, c) = (f64::from(i) * step, f64::from(j) * step);
            let class = classify(&stats(a, c, 1), &p);
            assert_eq!(class, fig2_region(a, c, &p), "({a}, {c})");
            match class {
                ProcessClass::Cs => {
                    cs += 1;
                    assert!(a + c < p.cs_thresh);
                }
                ProcessClass::F => {
                    f += 1;
                    assert!(a < p.f_thresh && a + c >= p.cs_thresh && a + c <= p.dc_thresh);
                }
                ProcessClass::Dc => dc += 1,
            }
        }
    }
    assert!(cs > 0 && f > 0 && dc > 0, "cs {cs}, f {f}, dc {dc}");
    // Along one anti-diagonal in the band, F gives way to DC exactly once,
    // at avg_cpu = F_thresh.
    let g = 0.5;
    let classes: Vec<ProcessClass> = (0..=32)
        .map(|i| {
            let a = f64::from(i) * step;
            classify(&stats(a, g - a, 1), &p)
        })
        .collect();
    let first_dc = classes.iter().position(|c| *c == ProcessClass::Dc).unwrap();
    assert_eq!(f64::from(first_dc as u32) * step, p.f_thresh);
    assert!(classes[..first_dc].iter().all(|c| *c == ProcessClass::F));
    assert!(classes[first_dc..].iter().all(|c| *c == ProcessClass::Dc));
}

proptest! {
    /// The class depends only on (avg_cpu, avg_comm): the same averages
    /// over any number of events classify alike, and as Fig. 2 says.
    /// Averages are multiples of 2^-12 and counts powers of two, so the
    /// totals divide back to the exact averages.
    #[test]
    fn fig2_class_depends_only_on_the_averages(
        i in 0u32..=6000,
        j in 0u32..=6000,
        log_n1 in 0u32..20,
        log_n2 in 0u32..20,
    ) {
        let p = dyadic_params();
        let (a, c) = (f64::from(i) / 4096.0, f64::from(j) / 4096.0);
        let (n1, n2) = (1u64 << log_n1, 1u64 << log_n2);
        let s1 = stats(a * n1 as f64, c * n1 as f64, n1);
        let s2 = stats(a * n2 as f64, c * n2 as f64, n2);
        prop_assert_eq!(s1.avg_cpu(), a);
        prop_assert_eq!(s2.avg_comm(), c);
        let class = classify(&s1, &p);
        prop_assert_eq!(class, classify(&s2, &p));
        prop_assert_eq!(class, fig2_region(a, c, &p));
    }

    /// Any finite, non-negative statistics classify without panicking, and
    /// a due process ends in the class [`classify`] names.
    #[test]
    fn arbitrary_statistics_classify_consistently(
        t_cpu in 0.0f64..1e6,
        t_comm in 0.0f64..1e6,
        c_comm in 0u64..1_000_000,
    ) {
        let p = FcsParams::default();
        let s = stats(t_cpu, t_comm, c_comm);
        let class = classify(&s, &p);
        let mut sched = due(ProcessClass::Cs);
        reclassify(&mut sched, &s, &p);
        prop_assert_eq!(sched.class, class);
    }
}

// --------------------------------------------------------- parameters

/// Sets one time field of the parameters.
type SetTime = fn(&mut FcsParams, f64);

#[test]
fn fcs_params_validation_names_the_bad_parameter() {
    let bad_times: [(&str, SetTime); 5] = [
        ("t-slice", |p, v| p.t_slice = v),
        ("t-spin", |p, v| p.t_spin = v),
        ("dc-thresh", |p, v| p.dc_thresh = v),
        ("cs-thresh", |p, v| p.cs_thresh = v),
        ("f-thresh", |p, v| p.f_thresh = v),
    ];
    for (key, set) in bad_times {
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut p = FcsParams::default();
            set(&mut p, v);
            match p.validate() {
                Err(CoschedError::Parameter { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{key} = {v}: {other:?}"),
            }
        }
    }
    let p = FcsParams {
        cslots_min: 0,
        ..FcsParams::default()
    };
    assert!(matches!(
        p.validate(),
        Err(CoschedError::Parameter {
            key: "cslots-min",
            ..
        })
    ));
    let p = FcsParams {
        tslots_max: 0,
        ..FcsParams::default()
    };
    assert!(matches!(
        p.validate(),
        Err(CoschedError::Parameter {
            key: "tslots-max",
            ..
        })
    ));
    // Out of order.
    for (f, cs, dc) in [(0.02, 0.01, 1.0), (0.005, 2.0, 1.0), (3.0, 2.0, 1.0)] {
        let p = FcsParams {
            f_thresh: f,
            cs_thresh: cs,
            dc_thresh: dc,
            ..FcsParams::default()
        };
        let err = p.validate().unwrap_err();
        assert!(matches!(err, CoschedError::ThresholdOrder { .. }), "{err}");
        assert!(err
            .to_string()
            .contains("f-thresh <= cs-thresh <= dc-thresh"));
        assert!(Fcs::new(p).is_err());
    }
    // Equal thresholds are allowed (the band collapses).
    let p = FcsParams {
        f_thresh: 0.5,
        cs_thresh: 0.5,
        dc_thresh: 0.5,
        ..FcsParams::default()
    };
    assert_eq!(p.validate(), Ok(()));
}

#[test]
fn fcs_spec_parameters() {
    let fcs = Fcs::from_spec(&Spec::parse("fcs:cs-thresh=0.02").unwrap()).unwrap();
    assert_eq!(fcs.params().cs_thresh, 0.02);
    assert_eq!(
        fcs.params().f_thresh,
        0.75 * 0.02,
        "F_thresh follows CS_thresh"
    );
    let all = "fcs:t-slice=0.05,t-spin=5e-5,cslots-min=3,dc-thresh=2,cs-thresh=0.02,f-thresh=0.001,tslots-max=64";
    let p = *Fcs::from_spec(&Spec::parse(all).unwrap()).unwrap().params();
    assert_eq!(
        p,
        FcsParams {
            t_slice: 0.05,
            t_spin: 5e-5,
            cslots_min: 3,
            dc_thresh: 2.0,
            cs_thresh: 0.02,
            f_thresh: 0.001,
            tslots_max: 64,
        }
    );
    // api.md's underscore spelling names the same parameters.
    let fcs = parse("fcs:cs_thresh=0.01,t_spin=1e-4").unwrap();
    assert_eq!(fcs.fcs_params(), Some(&FcsParams::default()));
    // Spec round trips.
    for text in ["fcs", all, "fcs:cs-thresh=0.02", "fcs:tslots-max=8"] {
        let policy = parse(text).unwrap();
        let again = parse(&policy.spec().to_string()).unwrap();
        assert_eq!(again.fcs_params(), policy.fcs_params(), "{text}");
    }
    assert_eq!(parse("fcs").unwrap().spec().to_string(), "fcs");
    assert_eq!(
        parse("fcs:cs-thresh=0.02").unwrap().spec().to_string(),
        "fcs:cs-thresh=0.02"
    );
}

#[test]
fn spec_parameter_errors_are_typed() {
    let param = |text: &str| match parse(text).unwrap_err() {
        CoschedError::Parameter { key, .. } => key,
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(param("fcs:t-spin=-1"), "t-spin");
    assert_eq!(param("fcs:t-slice=0"), "t-slice");
    assert_eq!(param("fcs:dc-thresh=inf"), "dc-thresh");
    assert_eq!(param("fcs:cs-thresh=NaN"), "cs-thresh");
    assert_eq!(param("fcs:cslots-min=0"), "cslots-min");
    assert_eq!(param("fcs:tslots-max=0"), "tslots-max");
    assert_eq!(param("sb:spin=0"), "spin");
    assert_eq!(param("gs:t-slice=-0.1"), "t-slice");
    assert!(matches!(
        parse("fcs:f-thresh=0.5").unwrap_err(),
        CoschedError::ThresholdOrder { .. }
    ));
    // Not a number, or a nested spec: the spec layer's InvalidParameter.
    for text in ["fcs:t-spin=abc", "fcs:cslots-min=1.5", "sb:spin=(x)"] {
        assert!(
            matches!(
                parse(text).unwrap_err(),
                CoschedError::Spec(PolicyError::InvalidParameter { .. })
            ),
            "{text}"
        );
    }
    // Unknown keys list the valid ones.
    let err = parse("fcs:bogus=1").unwrap_err().to_string();
    assert!(
        err.contains("`bogus`") && err.contains("cs-thresh, f-thresh"),
        "{err}"
    );
    let err = parse("local:spin=1").unwrap_err().to_string();
    assert!(err.contains("valid parameters: none"), "{err}");
    assert!(parse("fcfs:x=1").is_err());
    assert!(parse("gs:spin=1").is_err());
    // Malformed.
    assert!(matches!(
        parse("fcs:").unwrap_err(),
        CoschedError::Spec(PolicyError::Spec(_))
    ));
}

// ------------------------------------------------------------- registry

#[test]
fn registry_names_specs_and_unknown_names() {
    let r = registry();
    assert_eq!(r.family(), "cosched");
    assert_eq!(r.names(), NAMES);
    for name in NAMES {
        let policy = r.build(name).unwrap();
        assert_eq!(policy.name(), name);
        assert_eq!(policy.spec().to_string(), name, "defaults print bare");
        assert_eq!(policy.classifies(), name == "fcs");
    }
    let sharing: Vec<TimeSharing> = NAMES
        .iter()
        .map(|n| r.build(n).unwrap().time_sharing())
        .collect();
    assert_eq!(
        sharing,
        [
            TimeSharing::Batch,
            TimeSharing::Gang,
            TimeSharing::Uncoordinated,
            TimeSharing::Uncoordinated,
            TimeSharing::Gang
        ]
    );
    assert_eq!(r.build("local").unwrap().time_slice(), None);
    assert_eq!(r.build("fcfs").unwrap().time_slice(), None);
    assert_eq!(r.build("gs:t-slice=0.1").unwrap().time_slice(), Some(0.1));
    assert_eq!(
        r.build("gs:t-slice=0.1").unwrap().spec().to_string(),
        "gs:t-slice=0.1"
    );
    assert_eq!(
        r.build("sb:spin=5e-5").unwrap().spec().to_string(),
        "sb:spin=0.00005"
    );

    let err = r.build("ics").err().unwrap();
    assert_eq!(
        err.to_string(),
        "unknown cosched policy `ics`; valid names: fcfs, gs, local, sb, fcs"
    );
    let err = parse("ics").unwrap_err();
    assert!(matches!(
        err,
        CoschedError::Spec(PolicyError::UnknownPolicy { .. })
    ));
    // Family errors arrive as PolicyErrors through the generic registry.
    match r.build("fcs:f-thresh=0.5").err().unwrap() {
        PolicyError::InvalidParameter { policy, key, .. } => {
            assert_eq!((policy.as_str(), key.as_str()), ("fcs", "f-thresh"));
        }
        other => panic!("{other:?}"),
    }
    match r.build("sb:spin=-1").err().unwrap() {
        PolicyError::InvalidParameter { key, .. } => assert_eq!(key, "spin"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        r.build("fcs:nope=1").err().unwrap(),
        PolicyError::UnknownParameter { .. }
    ));
}

// ------------------------------------------------ Algorithm 1 and slots

fn pe_with(assigned: Option<ProcRef>) -> (PeSlot, Vec<ProcRef>) {
    let resident = vec![
        proc_ref(1, 0, ProcessClass::Cs),
        proc_ref(2, 1, ProcessClass::F),
        proc_ref(3, 0, ProcessClass::Dc),
    ];
    (
        PeSlot {
            assigned,
            resident: resident.clone(),
        },
        resident,
    )
}

#[test]
fn algorithm1_cs_assigned_runs_alone_and_polls() {
    let fcs = parse("fcs").unwrap();
    let cs = proc_ref(1, 0, ProcessClass::Cs);
    let (pe, _) = pe_with(Some(cs));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [cs]);
    assert!(d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::Poll);
    assert_eq!(d.wait, fcs.wait_mode(ProcessClass::Cs));
}

#[test]
fn algorithm1_f_assigned_resumes_everyone_and_boosts_it() {
    let fcs = parse("fcs:t-spin=2e-4").unwrap();
    let f = proc_ref(2, 1, ProcessClass::F);
    let (pe, resident) = pe_with(Some(f));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [resident[1], resident[0], resident[2]]);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, Some(f));
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 2e-4 });
    assert_eq!(d.wait, fcs.wait_mode(ProcessClass::F));
}

#[test]
fn algorithm1_dc_assigned_or_empty_cell_resumes_everyone_unboosted() {
    let fcs = parse("fcs").unwrap();
    let dc = proc_ref(3, 0, ProcessClass::Dc);
    let (pe, resident) = pe_with(Some(dc));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [resident[2], resident[0], resident[1]]);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });
    // The CS process of another slot runs here too, spin-blocking.
    assert!(d.runnable.contains(&resident[0]));

    let (pe, resident) = pe_with(None);
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, resident);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });

    // Nothing on the PE: nothing runs.
    let d = fcs.decide(&PeSlot::default());
    assert!(d.runnable.is_empty());
}

#[test]
fn algorithm1_tolerates_a_missing_or_duplicated_resident() {
    let params = FcsParams::default();
    let f = proc_ref(9, 2, ProcessClass::F);
    let other = proc_ref(4, 0, ProcessClass::Dc);
    let pe = PeSlot {
        assigned: Some(f),
        resident: vec![other, other, proc_ref(9, 2, ProcessClass::Cs)],
    };
    let d = context_switch(&pe, &params);
    assert_eq!(d.runnable, [f, other], "assigned first, each process once");
    assert_eq!(d.boosted, Some(f));
    // A CS assigned process missing from the residents still runs alone.
    let cs = proc_ref(7, 0, ProcessClass::Cs);
    let d = context_switch(
        &PeSlot {
            assigned: Some(cs),
            resident: vec![other],
        },
        &params,
    );
    assert_eq!(d.runnable, [cs]);
    assert!(d.exclusive);
    // Equal slots give equal decisions (the paper's early return).
    assert_eq!(context_switch(&pe, &params), context_switch(&pe, &params));
}

#[test]
fn baseline_slot_decisions() {
    let assigned = proc_ref(2, 1, ProcessClass::F);
    let (pe, resident) = pe_with(Some(assigned));
    let (empty, _) = pe_with(None);

    // GS and FCFS: the assigned process alone, busy-waiting, whatever its
    // class; an empty cell idles.
    for name in ["gs", "fcfs"] {
        let p = parse(name).unwrap();
        let d = p.decide(&pe);
        assert_eq!(d.runnable, [assigned], "{name}");
        assert!(d.exclusive);
        assert_eq!(d.boosted, None);
        assert_eq!(d.wait, WaitMode::Poll);
        let d = p.decide(&empty);
        assert!(d.runnable.is_empty(), "{name}: an empty cell idles");
        assert!(!d.exclusive);
        for class in [ProcessClass::Cs, ProcessClass::F, ProcessClass::Dc] {
            assert_eq!(p.wait_mode(class), WaitMode::Poll);
        }
    }

    // Local: every resident process, busy-waiting, no favourite.
    let local = parse("local").unwrap();
    for slot in [&pe, &empty] {
        let d = local.decide(slot);
        let mut got = d.runnable.clone();
        got.sort();
        let mut want = resident.clone();
        want.sort();
        assert_eq!(got, want);
        assert!(!d.exclusive);
        assert_eq!(d.boosted, None);
        assert_eq!(d.wait, WaitMode::Poll);
    }

    // SB: the same, spin-blocking for its spin time.
    let sb = parse("sb").unwrap();
    let d = sb.decide(&pe);
    assert_eq!(d.runnable.len(), 3);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });
    let sb = parse("sb:spin=3e-5").unwrap();
    assert_eq!(sb.decide(&empty).wait, WaitMode::SpinBlock { spin: 3e-5 });
    assert_eq!(
        sb.wait_mode(ProcessClass::Dc),
        WaitMode::SpinBlock { spin: 3e-5 }
    );
}

#[test]
fn fcs_wait_modes_by_class() {
    let fcs = parse("fcs:t-spin=1e-3").unwrap();
    assert_eq!(fcs.wait_mode(ProcessClass::Cs), WaitMode::Poll);
    assert_eq!(
        fcs.wait_mode(ProcessClass::F),
        WaitMode::SpinBlock { spin: 1e-3 }
    );
    assert_eq!(
        fcs.wait_mode(ProcessClass::Dc),
        WaitMode::SpinBlock { spin: 1e-3 }
    );
}

// --------------------------------------------------------------- matrix

#[test]
fn matrix_packs_first_fit() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack(1, 3), Ok(0));
    assert_eq!(m.placement(1).unwrap().pes, [0, 1, 2]);
    assert_eq!(m.pack(2, 2), Ok(1), "row 0 has one free PE");
    assert_eq!(m.placement(2).unwrap().pes, [0, 1]);
    assert_eq!(m.pack(3, 1), Ok(0), "the first row with room");
    assert_eq!(m.placement(3).unwrap().pes, [3]);
    assert_eq!(m.pack(4, 2), Ok(1));
    assert_eq!(m.placement(4).unwrap().pes, [2, 3]);
    assert_eq!(m.pack(5, 4), Ok(2));
    assert_eq!(m.rows(), 3);
    assert_eq!(m.len(), 5);
    assert_eq!(m.cell(0, 3), Some((3, 0)));
    assert_eq!(m.cell(1, 3), Some((4, 1)));
    assert_eq!(m.cell(9, 0), None);
    assert_eq!(m.cell(0, 9), None);
    assert_eq!(m.jobs_in_row(1), [2, 4]);
    assert_eq!(m.free_in_row(0), 0);
    assert_eq!(m.on_pe(2), [(0, 1, 2), (1, 4, 0), (2, 5, 2)]);
    assert_eq!(
        (m.next_row(0), m.next_row(1), m.next_row(2)),
        (1, 2, 0),
        "rows rotate"
    );
    assert_eq!(Matrix::new(4).next_row(0), 0);
}

#[test]
fn matrix_compacts_after_removal_without_moving_pes() {
    let mut m = Matrix::new(4);
    m.pack(1, 4).unwrap(); // row 0
    m.pack(2, 2).unwrap(); // row 1, PEs 0-1
    m.pack(3, 3).unwrap(); // row 2, PEs 0-2
    m.pack(4, 1).unwrap(); // row 1, PE 2
    assert_eq!(m.rows(), 3);
    // Removing job 1 empties row 0: job 2 (PEs 0,1) and job 4 (PE 2) move
    // up; job 3 (PEs 0-2) then finds row 1 free on its PEs.
    let gone = m.remove(1).unwrap();
    assert_eq!(
        gone,
        Placement {
            row: 0,
            pes: vec![0, 1, 2, 3]
        }
    );
    assert_eq!(m.slot_of(2), Some(0));
    assert_eq!(m.slot_of(4), Some(0));
    assert_eq!(m.slot_of(3), Some(1));
    assert_eq!(m.rows(), 2);
    assert_eq!(m.placement(3).unwrap().pes, [0, 1, 2], "PEs never change");
    // A job whose PEs are busy in every earlier row stays put.
    let mut m = Matrix::new(2);
    m.pack(1, 2).unwrap();
    m.pack(2, 2).unwrap();
    m.pack(3, 2).unwrap();
    m.remove(2).unwrap();
    assert_eq!(
        (m.slot_of(1), m.slot_of(3), m.rows()),
        (Some(0), Some(1), 2)
    );
    m.remove(1).unwrap();
    m.remove(3).unwrap();
    assert!(m.is_empty());
    assert_eq!(m.rows(), 0);
}

#[test]
fn matrix_errors_are_typed() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack(1, 0), Err(CoschedError::EmptyJob { job: 1 }));
    assert_eq!(
        m.pack(1, 5),
        Err(CoschedError::JobTooWide {
            job: 1,
            processes: 5,
            pes: 4
        })
    );
    m.pack(1, 2).unwrap();
    assert_eq!(m.pack(1, 1), Err(CoschedError::DuplicateJob { job: 1 }));
    assert_eq!(
        m.pack_on(1, &[3]),
        Err(CoschedError::DuplicateJob { job: 1 })
    );
    assert_eq!(m.remove(7), Err(CoschedError::UnknownJob { job: 7 }));
    assert_eq!(
        m.pack_on(2, &[0, 4]),
        Err(CoschedError::PeOutOfRange {
            job: 2,
            pe: 4,
            pes: 4
        })
    );
    assert_eq!(
        m.pack_on(2, &[1, 2, 1]),
        Err(CoschedError::RepeatedPe { job: 2, pe: 1 })
    );
    assert_eq!(m.pack_on(2, &[]), Err(CoschedError::EmptyJob { job: 2 }));
    assert!(Matrix::new(0).pack(1, 1).is_err());
    // A failed pack leaves the matrix untouched.
    assert_eq!(m.len(), 1);
    assert_eq!(m.rows(), 1);
    // Row limit 1 (space slicing): a job that does not fit waits.
    let mut batch = Matrix::with_row_limit(4, 1);
    batch.pack(1, 3).unwrap();
    assert_eq!(
        batch.pack(2, 2),
        Err(CoschedError::MatrixFull { job: 2, rows: 1 })
    );
    assert_eq!(batch.pack(3, 1), Ok(0));
    batch.remove(1).unwrap();
    assert_eq!(batch.pack(2, 2), Ok(0));
    // Errors convert for the generic registry's callers.
    let e: PolicyError = CoschedError::JobTooWide {
        job: 1,
        processes: 5,
        pes: 4,
    }
    .into();
    assert!(e.to_string().contains("needs 5 PEs"), "{e}");
}

/// The paper's §3.2.3 scenario (Fig. 4): a 4-process job on PEs 0-3 and
/// three 2-process jobs on PEs 2-3. Under FCS, with job 0's ranks 0 and 1
/// DC, those ranks run in every slot (filling the holes), while under GS
/// PEs 0 and 1 idle in the other jobs' slots.
#[test]
fn fig4_packing_and_hole_filling() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack_on(0, &[0, 1, 2, 3]), Ok(0));
    for job in 1..=3 {
        assert_eq!(m.pack_on(job, &[2, 3]), Ok(job as usize));
    }
    assert_eq!(m.rows(), 4);
    let class_of = |job: JobId, rank: usize| match (job, rank) {
        (0, 0 | 1) => ProcessClass::Dc,
        (0, _) => ProcessClass::F,
        _ => ProcessClass::Dc,
    };
    let fcs = parse("fcs").unwrap();
    let gs = parse("gs").unwrap();
    for row in 1..4 {
        let slot = m.pe_slot(row, 0, class_of);
        assert_eq!(slot.assigned, None);
        assert_eq!(slot.resident, [proc_ref(0, 0, ProcessClass::Dc)]);
        assert_eq!(
            fcs.decide(&slot).runnable,
            slot.resident,
            "FCS fills the hole"
        );
        assert!(gs.decide(&slot).runnable.is_empty(), "GS idles");
    }
    // Row 0 on PE 2: job 0's rank 2 is F, so it is boosted over the three
    // other jobs' processes resident there.
    let slot = m.pe_slot(0, 2, class_of);
    assert_eq!(slot.resident.len(), 4);
    let d = fcs.decide(&slot);
    assert_eq!(d.boosted, Some(proc_ref(0, 2, ProcessClass::F)));
    assert_eq!(d.runnable.len(), 4);
}

#[derive(Clone, Debug)]
enum Op {
    Pack(usize),
    PackOn(Vec<usize>),
    Remove(usize),
}

fn op(pes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        (1..=pes).prop_map(Op::Pack),
        proptest::sample::subsequence((0..pes).collect::<Vec<_>>(), 1..=pes)
            .prop_shuffle()
            .prop_map(Op::PackOn),
        any::<usize>().prop_map(Op::Remove),
    ]
}

fn check_matrix(m: &Matrix, sizes: &std::collections::BTreeMap<JobId, usize>) {
    // Every process of every job sits in exactly one cell, its own.
    let mut seen = std::collections::BTreeMap::<(JobId, usize), usize>::new();
    for row in 0..m.rows() {
        assert!(m.free_in_row(row) < m.pes(), "row {row} is empty");
        for pe in 0..m.pes() {
            if let Some(cell) = m.cell(row, pe) {
                *seen.entry(cell).or_default() += 1;
                let p = m.placement(cell.0).expect("a cell names a placed job");
                assert_eq!((p.row, p.pes[cell.1]), (row, pe));
            }
        }
    }
    let expected: usize = sizes.values().sum();
    assert_eq!(seen.len(), expected);
    assert!(seen.values().all(|&n| n == 1));
    for (&job, &n) in sizes {
        for rank in 0..n {
            assert_eq!(seen.get(&(job, rank)), Some(&1), "job {job} rank {rank}");
        }
        // Compacted: no earlier row is free on all of the job's PEs.
        let p = m.placement(job).unwrap();
        for row in 0..p.row {
            assert!(
                p.pes.iter().any(|&pe| m.cell(row, pe).is_some()),
                "job {job} could move up to row {row}"
            );
        }
    }
    assert_eq!(m.len(), sizes.len());
}

proptest! {
    #[test]
    fn matrix_places_each_process_exactly_once(
        (pes, ops) in (1usize..8).prop_flat_map(|pes| (Just(pes), proptest::collection::vec(op(pes), 1..60)))
    ) {
        let mut m = Matrix::new(pes);
        let mut sizes = std::collections::BTreeMap::new();
        let mut next: JobId = 0;
        for op in ops {
            match op {
                Op::Pack(n) => {
                    let row = m.pack(next, n).unwrap();
                    // First fit: no earlier row had n free PEs.
                    for r in 0..row {
                        prop_assert!(m.free_in_row(r) < n);
                    }
                    sizes.insert(next, n);
                    next += 1;
                }
                Op::PackOn(on) => {
                    let row = m.pack_on(next, &on).unwrap();
                    prop_assert_eq!(&m.placement(next).unwrap().pes, &on);
                    prop_assert_eq!(m.slot_of(next), Some(row));
                    sizes.insert(next, on.len());
                    next += 1;
                }
                Op::Remove(k) => {
                    if sizes.is_empty() {
                        prop_assert!(m.remove(next).is_err());
                    } else {
                        let job = *sizes.keys().nth(k % sizes.len()).unwrap();
                        let before = m.placement(job).unwrap().clone();
                        prop_assert_eq!(m.remove(job).unwrap(), before);
                        sizes.remove(&job);
                        prop_assert!(m.remove(job).is_err());
                    }
                }
            }
            check_matrix(&m, &sizes);
        }
    }
}
