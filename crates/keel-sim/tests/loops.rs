//! The loop model's contract: determinism, the analytical cases, exactly-once
//! execution for every schedule, and typed errors on bad input.

use keel_policy::dls::registry;
use keel_sim::loops::{simulate, IterationCosts, Machine, Stepper};
use keel_sim::{Noise, OverheadModel, SimError, WorkerModel};

/// Every fixed schedule name the registry knows, plus chunked and selecting forms.
fn every_schedule() -> Vec<String> {
    let mut names: Vec<String> = registry().names().iter().map(|n| n.to_string()).collect();
    names.extend(
        ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"]
            .iter()
            .map(|s| s.to_string()),
    );
    names
}

fn noisy_machine(p: usize, overhead: OverheadModel) -> Machine {
    let workers = (0..p)
        .map(|i| {
            WorkerModel::with(
                1.0 + 0.25 * (i % 3) as f64,
                Noise::Uniform { spread: 0.2 },
                &[],
            )
            .unwrap()
        })
        .collect();
    Machine::new(workers, overhead).unwrap()
}

const SOME_OVERHEAD: OverheadModel = OverheadModel {
    fork_join: 2e-6,
    claim_local: 1e-8,
    claim_serial: 5e-8,
};

#[test]
fn same_seed_same_result_and_another_seed_differs() {
    let costs: Vec<f64> = (0..500).map(|i| 1e-6 * (1 + i % 7) as f64).collect();
    let costs = IterationCosts::new(&costs).unwrap();
    let machine = noisy_machine(4, SOME_OVERHEAD);
    for schedule in ["ss", "awf-b", "maf", "static-steal", "auto,random"] {
        let run = |seed| {
            let mut s = Stepper::new(machine.clone(), schedule, seed).unwrap();
            (0..3)
                .map(|_| s.run("l", &costs).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7), "{schedule}");
        assert_ne!(run(7)[0].t_par, run(8)[0].t_par, "{schedule}");
    }
}

#[test]
fn static_on_uniform_costs_takes_n_c_over_p() {
    // Costs of 0.5 s are exact in binary, so the sums are exact.
    for (n, p) in [(1000usize, 4usize), (96, 3), (20, 20)] {
        let costs = IterationCosts::uniform(n, 0.5).unwrap();
        let machine = Machine::uniform(p, OverheadModel::ZERO).unwrap();
        let r = simulate(&costs, &machine, "static", 1).unwrap();
        assert_eq!(r.t_par, n as f64 * 0.5 / p as f64, "N={n} P={p}");
        assert_eq!(r.lib_percent, 0.0);
        assert_eq!(r.total_chunks(), p as u64);
    }
}

/// Greedy list scheduling, written independently: iterations in order, each
/// to the earliest-free worker (ties to the lowest index).
fn list_schedule(costs: &[f64], p: usize) -> Vec<f64> {
    let mut free = vec![0.0f64; p];
    for &c in costs {
        let w = (0..p)
            .min_by(|&a, &b| free[a].total_cmp(&free[b]).then(a.cmp(&b)))
            .unwrap();
        free[w] += c;
    }
    free
}

#[test]
fn ss_with_zero_overhead_is_list_scheduling() {
    let costs: Vec<f64> = (0..777u64)
        .map(|i| ((i * 7919) % 101 + 1) as f64 * 0.25)
        .collect();
    let ic = IterationCosts::new(&costs).unwrap();
    for p in [1, 2, 3, 8, 64] {
        let machine = Machine::uniform(p, OverheadModel::ZERO).unwrap();
        let r = simulate(&ic, &machine, "ss", 1).unwrap();
        let mut expected = list_schedule(&costs, p);
        let mut got = r.finish.clone();
        expected.sort_by(f64::total_cmp);
        got.sort_by(f64::total_cmp);
        assert_eq!(got, expected, "P={p}");
        assert_eq!(r.t_par, *expected.last().unwrap());
    }
}

#[test]
fn every_iteration_runs_exactly_once_under_every_schedule() {
    let schedules = every_schedule();
    for &n in &[0usize, 1, 3, 7, 16, 99, 1000] {
        let costs: Vec<f64> = (0..n).map(|i| 1e-6 * (1 + (i * 31) % 13) as f64).collect();
        let costs = IterationCosts::new(&costs).unwrap();
        for &p in &[1usize, 2, 3, 8] {
            let machine = noisy_machine(p, SOME_OVERHEAD);
            for chunk in [None, Some(1), Some(3), Some(64)] {
                for schedule in &schedules {
                    let mut stepper = Stepper::new(machine.clone(), schedule, 3).unwrap();
                    stepper.record_chunks(true);
                    // Two instances: the second plans from the first's
                    // measurements (profile, history, selection).
                    for instance in 0..2 {
                        let call = keel_sim::loops::Call { chunk, hints: None };
                        let r = stepper.run_with("l", &costs, call).unwrap_or_else(|e| {
                            panic!("{schedule} N={n} P={p} chunk={chunk:?}: {e}")
                        });
                        let seen = r.executions().unwrap();
                        assert!(
                            seen.iter().all(|&c| c == 1),
                            "{schedule} N={n} P={p} chunk={chunk:?} instance {instance}: {seen:?}"
                        );
                        assert_eq!(r.thread_iterations.iter().sum::<u64>(), n as u64);
                        assert_eq!(r.finish.len(), p);
                        // No schedule beats perfect sharing at the fastest noise.
                        let capacity: f64 = machine.workers().iter().map(|w| w.speed()).sum();
                        assert!(r.t_par >= 0.8 * costs.total() / capacity - 1e-12);
                    }
                }
            }
        }
    }
}

#[test]
fn contention_makes_tiny_chunks_expensive() {
    // 20 workers, 1 µs iterations, 100 ns per claim on the counter: the
    // counter saturates at chunk 1 (20 claims per µs needed, 10 possible).
    let costs = IterationCosts::uniform(20_000, 1e-6).unwrap();
    let overhead = OverheadModel {
        fork_join: 0.0,
        claim_local: 0.0,
        claim_serial: 100e-9,
    };
    let machine = Machine::uniform(20, overhead).unwrap();
    let one = simulate(&costs, &machine, "dynamic,1", 1).unwrap();
    let big = simulate(&costs, &machine, "dynamic,50", 1).unwrap();
    assert!(one.contention > 0.0);
    // Bounded below by the counter: N claims × 100 ns.
    assert!(one.t_par >= 20_000.0 * 100e-9);
    assert!(
        big.t_par < 0.6 * one.t_par,
        "{} vs {}",
        big.t_par,
        one.t_par
    );
}

#[test]
fn a_slow_worker_gets_fewer_iterations_under_dynamic_schedules() {
    let costs = IterationCosts::uniform(10_000, 1e-6).unwrap();
    let workers = vec![
        WorkerModel::new(1.0).unwrap(),
        WorkerModel::new(0.25).unwrap(),
    ];
    let machine = Machine::new(workers, OverheadModel::ZERO).unwrap();
    let stat = simulate(&costs, &machine, "static", 1).unwrap();
    let ss = simulate(&costs, &machine, "dynamic,10", 1).unwrap();
    assert!(ss.thread_iterations[1] < ss.thread_iterations[0] / 3);
    assert!(ss.t_par < 0.5 * stat.t_par);
    // AWF-B learns the speeds inside the instance.
    let awf = simulate(&costs, &machine, "awf-b", 1).unwrap();
    assert!(awf.t_par < 0.6 * stat.t_par, "{}", awf.t_par);
}

#[test]
fn auto_selects_through_the_loop_selector() {
    let costs: Vec<f64> = (0..2000)
        .map(|i| if i < 200 { 2e-5 } else { 1e-6 })
        .collect();
    let costs = IterationCosts::new(&costs).unwrap();
    let machine = Machine::uniform(4, SOME_OVERHEAD).unwrap();
    let mut s = Stepper::new(machine, "auto,exhaustive", 1).unwrap();
    let results: Vec<_> = (0..30).map(|_| s.run("l", &costs).unwrap()).collect();
    // ExhaustiveSel tries the twelve schedules first, one per instance.
    let tried: std::collections::BTreeSet<usize> = results[..12]
        .iter()
        .map(|r| r.selection.unwrap().index)
        .collect();
    assert_eq!(tried.len(), 12);
    // With the expert chunk: N=2000, P=4 gives 7.
    assert_eq!(results[0].chunk, Some(7));
    let record = s.selection_record("l").unwrap();
    assert_eq!(record.instances(), 30);
    // Then it exploits one of the fastest.
    let best = results[..12]
        .iter()
        .map(|r| r.t_par)
        .fold(f64::INFINITY, f64::min);
    assert!(results[29].t_par <= best * 1.05);
    // Time runs on across instances.
    let sum: f64 = results.iter().map(|r| r.t_par).sum();
    assert!((s.now() - sum).abs() < 1e-9);
}

#[test]
fn bad_input_is_a_typed_error() {
    let costs = IterationCosts::uniform(10, 1e-6).unwrap();
    assert!(matches!(
        Machine::uniform(0, OverheadModel::ZERO),
        Err(SimError::InvalidParameter { .. })
    ));
    assert!(matches!(
        IterationCosts::new(&[1.0, f64::NAN]),
        Err(SimError::InvalidParameter { .. })
    ));
    assert!(matches!(
        IterationCosts::new(&[-1.0]),
        Err(SimError::InvalidParameter { .. })
    ));
    let machine = Machine::uniform(2, OverheadModel::ZERO).unwrap();
    let err = simulate(&costs, &machine, "fastest", 1).unwrap_err();
    assert!(matches!(err, SimError::Policy(_)));
    assert!(err.to_string().contains("static"), "{err}");
    assert!(matches!(
        simulate(&costs, &machine, "auto,psychic", 1),
        Err(SimError::Policy(_))
    ));
    let negative = OverheadModel {
        claim_local: -1.0,
        ..OverheadModel::ZERO
    };
    assert!(Machine::uniform(2, negative).is_err());
    // wf with weights of the wrong length: the policy's typed error.
    let mut s = Stepper::new(machine, "wf", 1).unwrap();
    s.weights(vec![1.0; 3]);
    assert!(matches!(s.run("l", &costs), Err(SimError::Policy(_))));
}

/// Sizes whose allocation alone would abort the process are typed errors
/// naming the limit.
#[test]
fn loop_sizes_past_the_limits_are_refused_naming_them() {
    let e = keel_sim::IterationCosts::uniform(usize::MAX, 1e-6).unwrap_err();
    assert!(e.to_string().contains("MAX_UNIFORM_ITERATIONS"), "{e}");
    let e = keel_sim::Machine::uniform(usize::MAX, SOME_OVERHEAD).unwrap_err();
    assert!(e.to_string().contains("MAX_LOOP_WORKERS"), "{e}");
}

/// What a loop's memory keeps in simulation: AWF's history is built from
/// each worker's iterations and busy time, the same quantities the runtime
/// feeds it (`keel`'s `awf_history_is_step_weighted_work_and_busy_time`).
/// Simulated workers all start at the fork, so a worker's busy time is its
/// finish time.
#[test]
fn awf_history_is_step_weighted_work_and_busy_time() {
    let machine = noisy_machine(3, SOME_OVERHEAD);
    let costs = IterationCosts::uniform(300, 1e-6).unwrap();
    let mut stepper = Stepper::new(machine, "awf", 5).unwrap();
    let mut expected = [0.0; 6];
    for step in 1..=3u32 {
        let result = stepper.run("memory-awf", &costs).unwrap();
        let weight = f64::from(step);
        for (i, (&work, &busy)) in result
            .thread_iterations
            .iter()
            .zip(&result.finish)
            .enumerate()
        {
            expected[2 * i] += weight * work as f64;
            expected[2 * i + 1] += weight * busy;
        }
        let memory = stepper.memory("memory-awf").unwrap();
        assert_eq!(memory.steps(), u64::from(step));
        assert_eq!(memory.history(), &expected[..], "after instance {step}");
    }
}
