//! The selection protocol: parsing `auto[,method]`, the per-loop selector,
//! its record, per-loop isolation, and no allocation per instance.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use super::testing::{drive_selector, FakeLoop};
use super::*;

/// Counts allocations of the current thread (tests run in parallel).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: delegates every call to the system allocator unchanged; the
// thread-local counter is a const-initialised `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const TIMES: [f64; 12] = [
    0.060, 0.045, 0.040, 0.038, 0.039, 0.036, 0.030, 0.041, 0.042, 0.043, 0.044, 0.033,
];
const LIBS: [f64; 12] = [30.0, 4.0, 6.0, 5.0, 5.0, 4.0, 3.0, 5.0, 5.0, 5.0, 5.0, 3.0];

#[test]
fn parse_auto_accepts_every_method_and_both_syntaxes() {
    let method = |text: &str| parse_auto(text).unwrap().unwrap().method;
    assert_eq!(method("auto"), Method::Keel);
    assert_eq!(method("AUTO"), Method::Keel);
    assert_eq!(method(" auto "), Method::Keel);
    for m in Method::ALL {
        assert_eq!(method(&format!("auto,{m}")), m);
        assert_eq!(method(&format!("auto, {}", m.name().to_uppercase())), m);
        assert_eq!(method(&format!("auto:method={m}")), m);
    }
    let spec = parse_auto("auto:method=random,seed=7,expert-chunk=0")
        .unwrap()
        .unwrap();
    assert_eq!(
        spec,
        AutoSpec::new(Method::Random)
            .with_seed(7)
            .with_expert_chunk(false)
    );
    assert_eq!(spec.text(), "auto:method=random,seed=7,expert-chunk=0");
    assert_eq!(parse_auto(&spec.text()).unwrap().unwrap(), spec);
    assert_eq!(AutoSpec::new(Method::Expert).text(), "auto,expert");
    assert!(AutoSpec::new(Method::Keel).expert_chunk);
    for other in ["static", "dynamic,4", "gac", "automatic", "tap:alpha=1", ""] {
        assert!(parse_auto(other).is_none(), "{other}");
    }
}

#[test]
fn malformed_methods_list_the_valid_ones() {
    let err = |text: &str| parse_auto(text).unwrap().unwrap_err();
    for text in ["auto,fuzzy", "auto,2", "auto:method=bandit", "auto,gac"] {
        let e = err(text);
        assert!(
            matches!(
                e,
                PolicyError::UnknownPolicy {
                    family: "selection method",
                    ..
                }
            ),
            "{text}: {e}"
        );
        assert!(
            e.to_string().contains("keel, expert, exhaustive, random"),
            "{text}: {e}"
        );
    }
    for text in ["auto,", "auto,keel,3", "auto, "] {
        let e = err(text);
        assert!(matches!(e, PolicyError::Spec(_)), "{text}: {e}");
        assert!(e.to_string().contains("keel, expert, exhaustive, random"));
    }
    assert!(matches!(
        err("auto:chunk=3"),
        PolicyError::UnknownParameter { .. }
    ));
    assert!(matches!(
        err("auto:seed=-1"),
        PolicyError::InvalidParameter { .. }
    ));
    assert!(matches!(
        err("auto:expert-chunk=2"),
        PolicyError::InvalidParameter { .. }
    ));
    // The same errors reach a context through parse_setting.
    assert!(parse_setting("auto,fuzzy").is_err());
    assert!(parse_setting("dynamc").is_err());
}

#[test]
fn parse_setting_falls_back_to_fixed_schedules() {
    match parse_setting("static-steal,16").unwrap() {
        Setting::Fixed { schedule, chunk } => {
            assert_eq!(schedule.spec().to_string(), "static-steal:chunk=16");
            assert_eq!(chunk, Some(16));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_setting("auto,exhaustive").unwrap(),
        Setting::Auto(AutoSpec {
            method: Method::Exhaustive,
            ..
        })
    ));
}

#[test]
fn the_portfolio_builds_in_convention_order() {
    let names: Vec<String> = portfolio().iter().map(|s| s.spec().to_string()).collect();
    assert_eq!(names, AUTO4OMP_PORTFOLIO);
    assert_eq!(PORTFOLIO_LEN, 12);
}

#[test]
fn choices_carry_the_expert_chunk_when_enabled() {
    let mut sel = AutoSpec::new(Method::Expert).selector(0);
    let choice = sel.choose(1_000_000, 20);
    assert_eq!(
        choice,
        Choice {
            instance: 0,
            index: 0,
            chunk: Some(48),
            phase: Phase::First,
            measure: true,
            lease: 1
        }
    );
    assert_eq!(choice.name(), "static");
    sel.observe(&Measurement::new(0.1, 3.0)).unwrap();
    // Too few iterations: the expert chunk is 0 and ignored.
    assert_eq!(sel.choose(10, 20).chunk, None);
    let mut off = AutoSpec::new(Method::Expert)
        .with_expert_chunk(false)
        .selector(0);
    assert_eq!(off.choose(1_000_000, 20).chunk, None);
}

#[test]
fn an_unobserved_choice_is_repeated_and_bad_measurements_are_rejected() {
    let mut sel = AutoSpec::new(Method::Exhaustive).selector(0);
    assert_eq!(sel.choose(100, 2).index, 0);
    // Measurement lost: the same schedule again, as another instance.
    let again = sel.choose(100, 2);
    assert_eq!((again.index, again.instance), (0, 1));
    for bad in [
        Measurement::new(f64::NAN, 1.0),
        Measurement::new(-1.0, 1.0),
        Measurement::new(0.1, 101.0),
        Measurement::new(0.1, f64::INFINITY),
    ] {
        assert!(matches!(
            sel.observe(&bad),
            Err(PolicyError::InvalidNumber { .. })
        ));
    }
    // Still pending after the errors; this one counts.
    sel.observe(&Measurement::new(0.1, 1.0)).unwrap();
    assert_eq!(sel.choose(100, 2).index, 1);
    // A measurement with nothing pending is ignored.
    sel.observe(&Measurement::new(0.1, 1.0)).unwrap();
    sel.observe(&Measurement::new(0.5, 90.0)).unwrap();
    assert_eq!(sel.choose(100, 2).index, 2);
}

#[test]
fn measurements_from_finish_times() {
    let finish = [0.5, 1.0];
    let m = Measurement::from_finish_times(&finish).with_iterations(10);
    assert_eq!(m.t_par, 1.0);
    assert_eq!(m.lib, 25.0);
    assert_eq!(m.iterations, Some(10));
    assert_eq!(m.finish_times, Some(&finish[..]));
}

#[test]
fn the_record_is_a_run_length_timeline() {
    let mut sel = AutoSpec::new(Method::Exhaustive).selector(0);
    let mut fake = FakeLoop::new(TIMES, LIBS, 0.0, 0);
    let out = drive_selector(&mut sel, &mut fake, 20);
    let record = sel.record();
    assert_eq!(record.instances(), 20);
    assert_eq!(record.dropped(), 0);
    // Twelve one-instance trials, then one run of the fastest (6).
    assert_eq!(record.runs().len(), 13);
    assert_eq!(
        record.runs()[12],
        Run {
            first: 12,
            len: 8,
            index: 6,
            phase: Phase::Exploit
        }
    );
    assert_eq!(record.exploration_instances(), 12);
    let decisions: Vec<Decision> = record.decisions().collect();
    assert_eq!(decisions.len(), 20);
    assert!(decisions
        .iter()
        .zip(&out.choices)
        .enumerate()
        .all(|(k, (d, &c))| d.instance == k as u64 && d.index == c));
    assert_eq!(decisions[3].phase, Phase::Explore);
    assert_eq!(Phase::Reexplore.label(), "re-explore");
}

#[test]
fn a_full_record_counts_what_it_drops() {
    let mut spec = AutoSpec::new(Method::Random);
    spec.record_runs = 4;
    let mut sel = spec.selector(0);
    for _ in 0..50 {
        sel.choose(1000, 2);
        sel.observe(&Measurement::new(0.01, 50.0)).unwrap();
    }
    let record = sel.record();
    assert_eq!(record.instances(), 50);
    assert_eq!(record.runs().len(), 4);
    let stored: u64 = record.runs().iter().map(|r| r.len).sum();
    assert_eq!(stored + record.dropped(), 50);
}

#[test]
fn loops_keep_their_own_state_however_they_interleave() {
    for method in Method::ALL {
        let spec = AutoSpec::new(method).with_seed(3);
        let other_times = TIMES.map(|t| 0.1 - t);
        // Each loop alone.
        let alone = |times, stream, seed| {
            let mut sel = spec.selector(stream);
            let mut fake = FakeLoop::new(times, LIBS, 0.05, seed);
            drive_selector(&mut sel, &mut fake, 120).choices
        };
        let a_alone = alone(TIMES, 1, 10);
        let b_alone = alone(other_times, 2, 20);
        // Interleaved irregularly: a, b, b, a, b, b, ...
        let (mut a, mut b) = (spec.selector(1), spec.selector(2));
        let mut fa = FakeLoop::new(TIMES, LIBS, 0.05, 10);
        let mut fb = FakeLoop::new(other_times, LIBS, 0.05, 20);
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        let (mut ka, mut kb) = (0u64, 0u64);
        while ka < 120 || kb < 120 {
            let turn_a = (ka + kb) % 3 == 0 && ka < 120 || kb >= 120;
            let (sel, fake, k, out) = if turn_a {
                (&mut a, &mut fa, &mut ka, &mut ca)
            } else {
                (&mut b, &mut fb, &mut kb, &mut cb)
            };
            let choice = sel.choose(1_000_000, 2);
            let (t, lib) = fake.run(*k, choice.index);
            sel.observe(&Measurement::new(t, lib)).unwrap();
            out.push(choice.index);
            *k += 1;
        }
        assert_eq!(ca, a_alone, "{method}");
        assert_eq!(cb, b_alone, "{method}");
    }
}

#[test]
fn no_allocation_per_instance_once_built() {
    for method in Method::ALL {
        let mut sel = AutoSpec::new(method).selector(5);
        let mut fake = FakeLoop::new(TIMES, LIBS, 0.05, 1).then(300, LIBS.map(|l| l / 100.0), LIBS);
        let mut samples = [(0.0, 0.0); 600];
        let mut indices = [0usize; 600];
        // Precompute nothing: FakeLoop::run does not allocate either.
        let before = allocations();
        for (k, (sample, index)) in samples.iter_mut().zip(indices.iter_mut()).enumerate() {
            let choice = sel.choose(1_000_000, 2);
            *sample = fake.run(k as u64, choice.index);
            *index = choice.index;
            sel.observe(&Measurement::new(sample.0, sample.1).with_iterations(1_000_000))
                .unwrap();
        }
        assert_eq!(allocations() - before, 0, "{method}");
        assert_eq!(sel.record().instances(), 600);
    }
}

#[test]
fn selectors_are_send() {
    fn send<T: Send>() {}
    send::<LoopSelector>();
    send::<AutoSpec>();
}

#[test]
fn a_pin_overrides_every_choice_while_the_method_still_runs() {
    let spec = parse_auto("auto:method=exhaustive,pin=static,expert-chunk=0")
        .unwrap()
        .unwrap();
    assert_eq!(spec.pin(), Some(0));
    assert_eq!(
        spec.text(),
        "auto:method=exhaustive,expert-chunk=0,pin=static"
    );
    assert_eq!(parse_auto(&spec.text()).unwrap().unwrap(), spec);
    let mut sel = spec.selector(0);
    let mut times = [0.04; 12];
    times[5] = 0.01;
    for _ in 0..30 {
        let choice = sel.choose(1000, 2);
        assert_eq!(
            (choice.index, choice.phase, choice.chunk),
            (0, Phase::Pinned, None)
        );
        sel.observe(&Measurement::new(times[choice.index], 5.0))
            .unwrap();
    }
    assert_eq!(sel.record().runs().len(), 1);
    assert_eq!(sel.record().runs()[0].len, 30);
    assert_eq!(sel.record().exploration_instances(), 0);
}

#[test]
fn a_pin_must_name_a_portfolio_schedule() {
    let err = parse_auto("auto:pin=dynamic")
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("dynamic"), "{err}");
    assert!(err.contains("static, ss, tss"), "{err}");
    assert_eq!(
        parse_auto("auto:pin=AWF-C").unwrap().unwrap().pin(),
        Some(8),
        "names are case-insensitive like the method's"
    );
}
