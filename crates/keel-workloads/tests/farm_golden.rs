//! The farm workloads' parameters and results, pinned: a change to a
//! default or to a body shows up here, not as a silent shift in
//! `keel bench farm`.

use keel_policy::Spec;
use keel_workloads::farm::{count_primes, Material, MdPairs, Primes};
use keel_workloads::WorkloadError;

#[test]
fn prime_counts_are_pi_of_the_limit() {
    assert_eq!(count_primes(2), 1);
    assert_eq!(count_primes(100), 25);
    assert_eq!(count_primes(2000), 303);
    assert_eq!(count_primes(7500), 950);
}

#[test]
fn primes_defaults_and_the_heterogeneous_variant() {
    let p = Primes::default();
    assert_eq!(
        p.spec(),
        "primes:tasks=1000,limit=7500,fast-limit=2000,fast-workers=0"
    );
    assert_eq!(Primes::parse(&p.spec()).unwrap(), p);
    assert_eq!((p.run(0), p.run(5)), (950, 950));
    let h = Primes::parse("primes:tasks=16000,fast-workers=1").unwrap();
    assert_eq!((h.run(0), h.run(1)), (303, 950));
    // Eq. 2 for two workers, one 6.5 times faster.
    assert!((h.model_speedup(2, 6.5) - 3.75).abs() < 1e-12);
    assert_eq!(p.model_speedup(2, 6.5), 1.0);
    for bad in [
        "primes:limit=1",
        "primes:tasks=-1",
        "primes:speed=2",
        "primes:fast-limit=x",
    ] {
        assert!(Primes::parse(bad).is_err(), "{bad}");
    }
    assert!(matches!(
        Primes::parse("prime"),
        Err(WorkloadError::UnknownWorkload { .. })
    ));
}

#[test]
fn md_pairs_are_pinned() {
    let m = MdPairs::default();
    assert_eq!(m.spec(), "md:pairs=68000,molecules=4096,box=16,seed=2015");
    assert_eq!(m.pair(12345), (57, 400));
    let near = (0..m.pairs).filter(|&i| m.run(i) != 0.0).count();
    assert_eq!(near, 992, "pairs within the cut-off");
    assert!((m.run(16) - -2.5358829694162748e-2).abs() < 1e-15);
    let again = MdPairs::from_spec(&Spec::parse(&m.spec()).unwrap()).unwrap();
    assert_eq!(again, m);
    assert!(MdPairs::from_spec(&Spec::parse("md:molecules=1").unwrap()).is_err());
}

#[test]
fn material_is_pinned() {
    let m = Material::default();
    assert_eq!(
        m.spec(),
        "material:pool=16,tasks=1000,pieces=64,stock=1000,effort=400,costs=1/4,seed=2013"
    );
    assert_eq!(m.lengths()[0], 284);
    let init = m.initial();
    assert_eq!(init.len(), 16);
    assert_eq!(init[0].waste, 5141);
    assert_eq!(init.iter().map(|s| s.waste).min(), Some(3141));
    // Both strategies improve; the results depend only on input and worker.
    let a = m.improve(0, init[0].clone());
    let b = m.improve(1, init[0].clone());
    assert_eq!((a.waste, b.waste), (2141, 2141));
    assert_eq!(a.generation, 1);
    assert_eq!(m.improve(0, init[0].clone()), a);
    assert_eq!((m.cost_of(0), m.cost_of(1), m.cost_of(2)), (1, 4, 1));
    // The search issues exactly `tasks` tasks.
    let mut search = m.search();
    let mut issued = init.len();
    let mut queue: std::collections::VecDeque<_> = init.into();
    while let Some(s) = queue.pop_front() {
        if let Some(next) = search.collect(s) {
            issued += 1;
            queue.push_back(next);
        }
    }
    assert_eq!(issued, 1000);
    assert!(search.best <= 5141);
    let spec = Spec::parse("material:costs=2/3/5,tasks=10").unwrap();
    let custom = Material::from_spec(&spec).unwrap();
    assert_eq!(custom.costs, [2, 3, 5]);
    assert_eq!(custom.initial().len(), 10);
    assert!(Material::from_spec(&Spec::parse("material:costs=1/0").unwrap()).is_err());
    assert!(Material::from_spec(&Spec::parse("material:stock=10").unwrap()).is_err());
}
