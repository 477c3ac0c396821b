//! Fig. 2's phase diagram as a grid property, the parameters' validation
//! and spec form, and the registry.

use super::*;

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
    // The underscore spelling (`cs_thresh`, `t_spin`) names the same
    // parameters.
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

#[test]
fn cosched_parameter_errors_print_compactly() {
    for spec in [
        "sb:spin=-1e300",
        "gs:t-slice=-1e300",
        "fcs:t-slice=-1e300",
        "fcs:f-thresh=1e300",
    ] {
        let err = crate::cosched::parse(spec).unwrap_err().to_string();
        assert!(err.contains("1e300") && err.len() < 300, "{spec}: {err}");
    }
}
