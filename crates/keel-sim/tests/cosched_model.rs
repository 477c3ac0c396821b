//! The cluster model's contract: determinism, the cost of a job alone,
//! exactly-once iterations, what each time-sharing discipline may and may
//! not do, busy-waiting versus spin-blocking, FCS's classification end to
//! end, and typed errors for bad input. Scenarios are scaled down so the
//! whole file runs in a few seconds in a debug build.

use keel_policy::cosched::NAMES;
use keel_sim::cluster::{simulate_spec, CommClock, CoschedModel, CoschedRun, CpuClock};
use keel_sim::SimError;
use keel_workloads::bsp::{self, BspJob, BspScenario, Pattern};

fn model(s: &BspScenario) -> CoschedModel {
    CoschedModel::new(s.nodes, s.pes_per_node)
        .unwrap()
        .with_seed(7)
}

fn run(m: &CoschedModel, policy: &str, jobs: &[BspJob]) -> CoschedRun {
    simulate_spec(m, policy, jobs).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

/// The §3.2 scenarios at 2 % of their iterations (240 iterations: enough
/// for FCS's ten slots of classification).
fn quick_verification() -> Vec<BspScenario> {
    [
        bsp::fine_grained(),
        bsp::load_imbalanced(),
        bsp::complementing(),
    ]
    .into_iter()
    .map(|s| s.scaled(0.02).unwrap())
    .collect()
}

#[test]
fn same_seed_same_result_and_the_seed_matters() {
    let s = bsp::load_imbalanced().scaled(0.01).unwrap();
    let m = model(&s);
    for policy in NAMES {
        let a = run(&m, policy, &s.jobs);
        let b = run(&m, policy, &s.jobs);
        assert_eq!(a, b, "{policy}");
    }
    // The OS schedulers' phases come from the seed: the uncoordinated
    // policies see them.
    let other = m.clone().with_seed(8);
    assert_ne!(
        run(&m, "local", &s.jobs).makespan,
        run(&other, "local", &s.jobs).makespan
    );
}

#[test]
fn a_job_alone_takes_iterations_times_granularity_plus_communication() {
    let m = CoschedModel::new(2, 2).unwrap();
    let latency = m.net.latency;
    for pattern in [Pattern::Ring, Pattern::Barrier, Pattern::NearestNeighbour] {
        let job = BspJob::new(4, 0.005, 300, pattern).unwrap();
        let want = 300.0 * (0.005 + latency);
        for policy in NAMES {
            let r = run(&m, policy, std::slice::from_ref(&job));
            let err = (r.makespan - want).abs() / want;
            // FCS's monitoring (2 µs per call) and one context switch are
            // the only extras.
            assert!(
                err < 1e-3,
                "{policy} {pattern:?}: {} s, want {want} s",
                r.makespan
            );
            assert!(
                r.jobs[0].end >= want - 1e-9,
                "{policy}: faster than possible"
            );
        }
    }
}

#[test]
fn every_iteration_of_every_process_runs_exactly_once() {
    for s in quick_verification() {
        let m = model(&s);
        for policy in NAMES {
            let r = run(&m, policy, &s.jobs);
            for p in &r.processes {
                let job = &s.jobs[p.job];
                assert_eq!(p.iterations, job.iterations, "{policy} {} {p:?}", s.name);
                // The CPU it computed is its iterations' costs, once each
                // (plus FCS's monitoring per communication).
                let work: f64 = (0..job.iterations).map(|i| job.compute(p.rank, i)).sum();
                let monitor = if policy == "fcs" {
                    m.monitor_cost * (job.iterations - 1) as f64
                } else {
                    0.0
                };
                assert!(
                    (p.cpu - work - monitor).abs() < 1e-6,
                    "{policy} {}: cpu {} vs work {}",
                    s.name,
                    p.cpu,
                    work + monitor
                );
                assert_eq!(p.comm_events, job.iterations, "{policy} {p:?}");
            }
        }
    }
    // With variability too, on the big machine.
    let s = bsp::fig5(0.016, 1.0, Pattern::NearestNeighbour)
        .unwrap()
        .scaled(0.05)
        .unwrap();
    for policy in ["gs", "sb", "fcs"] {
        let r = run(&model(&s), policy, &s.jobs);
        assert!(r.processes.iter().all(|p| p.iterations == 50), "{policy}");
    }
}

/// Whether segments on one PE overlap in time.
fn overlapping(r: &CoschedRun) -> bool {
    let mut by_pe = r.segments.clone();
    by_pe.sort_by(|a, b| a.pe.cmp(&b.pe).then(a.from.total_cmp(&b.from)));
    by_pe
        .windows(2)
        .any(|w| w[0].pe == w[1].pe && w[1].from < w[0].to - 1e-12)
}

#[test]
fn gang_scheduling_runs_one_process_per_pe_and_only_the_slots_job() {
    let s = bsp::fine_grained().scaled(0.02).unwrap();
    let mut m = model(&s);
    m.trace_limit = 1_000_000;
    let r = run(&m, "gs", &s.jobs);
    assert!(!r.segments.is_empty());
    assert!(!overlapping(&r), "two processes on one PE at once");
    let slice = 0.025;
    let mut job_of_slot = std::collections::HashMap::new();
    for seg in &r.segments {
        if seg.to - seg.from < 1e-9 {
            continue;
        }
        let slot = (seg.from / slice + 1e-9).floor() as u64;
        // A segment never runs over the slot's end...
        assert!(
            seg.to <= (slot + 1) as f64 * slice + 1e-9,
            "segment {seg:?} crosses a strobe"
        );
        // ...and every PE runs the same job in a slot.
        let job = *job_of_slot.entry(slot).or_insert(seg.job);
        assert_eq!(job, seg.job, "slot {slot}: jobs {job} and {}", seg.job);
    }
    // Both jobs had slots, alternating.
    assert!(job_of_slot.values().any(|&j| j == 0));
    assert!(job_of_slot.values().any(|&j| j == 1));
    // No policy ever runs two processes on one PE at once.
    for policy in NAMES {
        let r = run(&m, policy, &s.jobs);
        assert!(!overlapping(&r), "{policy}");
    }
}

#[test]
fn fcfs_starts_job_k_only_after_job_k_minus_1_ends() {
    let mut s = bsp::complementing().scaled(0.01).unwrap();
    // Later arrivals too, out of index order: job 2 arrives while job 0
    // runs and after job 3, so it runs last.
    s.jobs[2] = s.jobs[2].clone().arriving_at(0.5).unwrap();
    let mut m = model(&s);
    m.trace_limit = 1_000_000;
    let r = run(&m, "fcfs", &s.jobs);
    let order = [0, 1, 3, 2];
    for w in order.windows(2) {
        let (before, k) = (w[0], w[1]);
        assert!(
            r.jobs[k].start >= r.jobs[before].end - 1e-9,
            "job {k} started at {} before job {before} ended at {}",
            r.jobs[k].start,
            r.jobs[before].end
        );
        let first_run = r
            .segments
            .iter()
            .filter(|x| x.job == k)
            .map(|x| x.from)
            .fold(f64::INFINITY, f64::min);
        assert!(first_run >= r.jobs[before].end - 1e-9);
    }
    // One job at a time: the makespan is the sum of the dedicated times.
    let total: f64 = r.jobs.iter().map(|j| j.dedicated).sum();
    assert!(
        (r.makespan - total).abs() / total < 1e-3,
        "{} vs {total}",
        r.makespan
    );
}

/// Job 0: two processes on PEs 0 and 1, rank 1 computing ten times more,
/// so rank 0 waits 90 % of the time. Job 1: one process on PE 0 that only
/// computes (2 s).
fn spinner_and_worker() -> Vec<BspJob> {
    let waiter = BspJob::new(2, 0.001, 400, Pattern::Ring)
        .unwrap()
        .with_weights(vec![1.0, 10.0])
        .unwrap()
        .on_pes(vec![0, 1])
        .unwrap();
    let worker = BspJob::new(1, 0.01, 200, Pattern::Ring)
        .unwrap()
        .on_pes(vec![0])
        .unwrap();
    vec![waiter, worker]
}

#[test]
fn busy_waiting_holds_the_cpu_and_spin_blocking_gives_it_away() {
    let m = CoschedModel::new(1, 2).unwrap().with_seed(3);
    let jobs = spinner_and_worker();
    let local = run(&m, "local", &jobs);
    let sb = run(&m, "sb", &jobs);
    // Under Local the waiting rank spins through its time slices, so the
    // worker gets about half of PE 0; under SB it blocks after 100 µs and
    // the worker runs almost alone.
    assert!(
        local.jobs[1].end > 1.5 * sb.jobs[1].end,
        "worker: local {} s, sb {} s",
        local.jobs[1].end,
        sb.jobs[1].end
    );
    // The waiter's rank 0 still computes 1 ms in every 10 and preempts
    // the worker when it wakes: the worker gets about 89 % of PE 0.
    assert!(sb.jobs[1].end < 2.0 * 1.2, "sb worker {}", sb.jobs[1].end);
    let spin = |r: &CoschedRun| r.processes[0].spin;
    assert!(spin(&local) > 1.0, "local spin {}", spin(&local));
    assert!(spin(&sb) < 0.1, "sb spin {}", spin(&sb));
    assert_eq!(local.processes[0].blocks, 0);
    assert!(sb.processes[0].blocks > 300);
}

#[test]
fn fcs_classifies_fine_coarse_and_imbalanced_processes() {
    let classes = |s: &BspScenario| -> Vec<Vec<&'static str>> {
        let r = run(&model(s), "fcs", &s.jobs);
        (0..s.jobs.len())
            .map(|j| r.classes_of(j).into_iter().map(Option::unwrap).collect())
            .collect()
    };
    // Fine-grained and balanced: CS.
    let fine = bsp::fine_grained().scaled(0.02).unwrap();
    assert_eq!(classes(&fine), [["CS"; 4], ["CS"; 4]]);
    // Coarse: DC.
    let coarse = BspScenario {
        jobs: (0..2)
            .map(|k| {
                BspJob::new(4, 0.1, 40, Pattern::Barrier)
                    .unwrap()
                    .with_seed(k)
            })
            .collect(),
        ..bsp::fine_grained()
    };
    assert_eq!(classes(&coarse), [["DC"; 4], ["DC"; 4]]);
    // Imbalanced and fine-grained: the light ranks are F and the heavy
    // ones DC, as §3.2.2 reports. (The heavy ranks' granularity, 10 ms of
    // compute plus a short wait, sits just above CS_thresh = 10 ms, so a
    // heavy rank may flip to CS for a while.)
    let imbalanced = bsp::load_imbalanced().scaled(0.1).unwrap();
    assert_eq!(
        classes(&imbalanced),
        [["DC", "DC", "F", "F"], ["F", "F", "DC", "DC"]]
    );
    // The timeline records when each change happened, at a strobe.
    let r = run(&model(&imbalanced), "fcs", &imbalanced.jobs);
    assert!(r.class_changes.len() >= 8);
    for c in &r.class_changes[..8] {
        assert_eq!(c.from, "CS");
        assert!(c.time < 1.0, "{c:?}");
    }
    for c in &r.class_changes {
        let slots = c.time / 0.025;
        assert!((slots - slots.round()).abs() < 1e-6, "{c:?}");
    }
    // Policies that do not classify report no class.
    let gs = run(&model(&imbalanced), "gs", &imbalanced.jobs);
    assert!(gs.processes.iter().all(|p| p.final_class.is_none()));
    assert!(gs.class_changes.is_empty());
}

/// §3.2.3's fillers compute 5 ms per iteration. With T_cpu in CPU seconds
/// (Table 1) they average T̄cpu ≈ 5 ms < F_thresh and stay CS, so job 0's F
/// ranks wait out the fillers' gang slots. Timed with a wall clock between
/// the hooks, suspensions included, they pick up the 75 ms their partners
/// spend in other slots and become DC, as the paper reports; but the same
/// reading moves the balanced jobs of §3.2.1 off CS, which the paper does
/// not report. The paper's classes cannot all come from one clock.
#[test]
fn the_measurement_clock_decides_the_complementing_fillers_class() {
    let classes = |m: &CoschedModel, s: &BspScenario| -> Vec<Vec<&'static str>> {
        let r = run(m, "fcs", &s.jobs);
        (0..s.jobs.len())
            .map(|j| r.classes_of(j).into_iter().map(Option::unwrap).collect())
            .collect()
    };
    let complementing = bsp::complementing().scaled(0.02).unwrap();
    let fine = bsp::fine_grained().scaled(0.02).unwrap();
    let cpu = model(&complementing);
    let mut wall = cpu.clone();
    wall.comm_clock = CommClock::Wall;
    wall.cpu_clock = CpuClock::Elapsed;

    let by_cpu = classes(&cpu, &complementing);
    assert_eq!(by_cpu[0], ["DC", "DC", "F", "F"]);
    assert!(by_cpu[1..].iter().all(|j| j == &["CS", "CS"]), "{by_cpu:?}");
    let by_wall = classes(&wall, &complementing);
    assert_eq!(by_wall[0], ["DC", "DC", "F", "F"]);
    assert!(
        by_wall[1..].iter().all(|j| j == &["DC", "DC"]),
        "{by_wall:?}"
    );
    // The fillers as DC give job 0's F ranks their slot back.
    let job0 = |m: &CoschedModel| run(m, "fcs", &complementing.jobs).jobs[0].runtime;
    assert!(
        job0(&wall) < 0.8 * job0(&cpu),
        "{} {}",
        job0(&wall),
        job0(&cpu)
    );

    assert_eq!(classes(&cpu, &fine), [["CS"; 4], ["CS"; 4]]);
    let fine_by_wall = classes(&wall, &fine);
    assert!(
        fine_by_wall.iter().flatten().any(|&c| c != "CS"),
        "{fine_by_wall:?}"
    );
    // T_cpu in CPU seconds never counts the time a process waits for the CPU.
    let r = run(&wall, "fcs", &complementing.jobs);
    for p in &r.processes {
        let work = complementing.jobs[p.job].expected_work(p.rank);
        assert!(p.cpu >= work && p.cpu < 1.05 * work, "{p:?} {work}");
    }
}

#[test]
fn clock_names_parse_and_bad_ones_are_typed_errors() {
    assert_eq!(CommClock::parse("wall").unwrap(), CommClock::Wall);
    assert_eq!(
        CommClock::parse(" scheduled ").unwrap(),
        CommClock::Scheduled
    );
    assert_eq!(CpuClock::parse("elapsed").unwrap(), CpuClock::Elapsed);
    assert_eq!(CpuClock::parse("cpu").unwrap().name(), "cpu");
    for e in [
        CommClock::parse("cpu").unwrap_err(),
        CpuClock::parse("wall").unwrap_err(),
    ] {
        assert!(matches!(e, SimError::InvalidParameter { .. }), "{e:?}");
    }
    assert!(CpuClock::parse("")
        .unwrap_err()
        .to_string()
        .contains("cpu, elapsed"));
}

#[test]
fn paper_orderings_hold_where_the_model_reproduces_them() {
    // §3.2.2 at 10 %: SB and FCS use the gaps, GS and FCFS cannot, Local
    // is worst.
    let s = bsp::load_imbalanced().scaled(0.1).unwrap();
    let m = model(&s);
    let max = |p| run(&m, p, &s.jobs).makespan;
    let (fcfs, local, gs, sb, fcs) = (max("fcfs"), max("local"), max("gs"), max("sb"), max("fcs"));
    assert!(sb < 0.8 * gs && fcs < 0.8 * gs, "sb {sb} fcs {fcs} gs {gs}");
    assert!((fcs - sb).abs() / sb < 0.03, "fcs {fcs} sb {sb}");
    assert!((gs - fcfs).abs() / fcfs < 0.01);
    assert!(local > gs);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let m = CoschedModel::new(2, 2).unwrap();
    let job = BspJob::new(4, 0.005, 10, Pattern::Ring).unwrap();
    let too_wide = BspJob::new(5, 0.005, 10, Pattern::Ring).unwrap();
    let off_machine = BspJob::new(2, 0.005, 10, Pattern::Ring)
        .unwrap()
        .on_pes(vec![3, 4])
        .unwrap();
    let mut broken = job.clone();
    broken.iterations = 0;
    for (jobs, what) in [
        (vec![too_wide], "job size"),
        (vec![off_machine], "job placement"),
        (vec![broken], "job"),
    ] {
        for policy in NAMES {
            match simulate_spec(&m, policy, &jobs) {
                Err(SimError::InvalidParameter { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{policy} {what}: {other:?}"),
            }
        }
    }
    let e = simulate_spec(&m, "lottery", std::slice::from_ref(&job)).unwrap_err();
    assert!(matches!(e, SimError::Policy(_)), "{e:?}");
    assert!(e.to_string().contains("fcfs, gs, local, sb, fcs"), "{e}");
    assert!(simulate_spec(&m, "fcs:cs-thresh=-1", std::slice::from_ref(&job)).is_err());
    let mut bad = m.clone();
    bad.net.latency = -1.0;
    assert!(simulate_spec(&bad, "gs", std::slice::from_ref(&job)).is_err());
    let mut bad = m;
    bad.pe_speeds = vec![1.0];
    assert!(simulate_spec(&bad, "gs", &[job]).is_err());
    // No jobs: an empty run, not a hang.
    let r = simulate_spec(&CoschedModel::new(1, 1).unwrap(), "fcs", &[]).unwrap();
    assert_eq!(r.makespan, 0.0);
}

/// A log's run time of 10⁹ s at 0.1 s granularity is 10¹⁰ iterations: the
/// run is refused at once with the limit named, for every policy, instead
/// of simulating for days. A tiny OS tick or gang slice is refused the
/// same way instead of multiplying the events without end.
#[test]
fn runs_past_the_work_and_quantum_limits_are_refused_at_once() {
    use keel_sim::cluster::{MAX_PROCESS_ITERATIONS, MIN_QUANTUM};
    let m = CoschedModel::new(2, 2).unwrap();
    let huge = BspJob::new(4, 0.1, 10_000_000_000, Pattern::Barrier).unwrap();
    let started = std::time::Instant::now();
    for policy in NAMES {
        let e = simulate_spec(&m, policy, std::slice::from_ref(&huge)).unwrap_err();
        assert!(matches!(e, SimError::OverLimit { .. }), "{policy}: {e:?}");
        assert!(e.to_string().contains("MAX_PROCESS_ITERATIONS"), "{e}");
    }
    assert!(started.elapsed().as_secs() < 5);
    // Exactly at the limit the work is accepted (checked without running).
    let at_limit = BspJob::new(4, 0.1, MAX_PROCESS_ITERATIONS / 4, Pattern::Barrier).unwrap();
    assert!(keel_sim::cluster::check_work(std::slice::from_ref(&at_limit)).is_ok());
    assert!(keel_sim::cluster::check_work(&[at_limit.clone(), at_limit]).is_err());

    let job = BspJob::new(4, 0.005, 10, Pattern::Ring).unwrap();
    for tick in [1e-12, MIN_QUANTUM / 2.0, 1e9] {
        let mut bad = m.clone();
        bad.os.tick = tick;
        let e = simulate_spec(&bad, "local", std::slice::from_ref(&job)).unwrap_err();
        assert!(e.to_string().contains("MIN_QUANTUM"), "{e}");
        let mut bad = m.clone();
        bad.os.quantum = tick;
        assert!(bad.validate().is_err());
    }
    let e = simulate_spec(&m, "gs:t-slice=0.0000000001", std::slice::from_ref(&job));
    assert!(e.is_err(), "{e:?}");
}
