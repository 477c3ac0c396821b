//! One policy, every context: the thread runtime and the simulator keep a
//! loop's memory in the same `keel_policy::dls::LoopMemory` and feed it the
//! same quantities — per thread, its iterations and its busy time, weighted
//! by the instance's step number — so that AWF learns alike in both.

use keel::loops::{LoopId, LoopRecord};
use keel_policy::dls::LoopMemory;
use keel_sim::loops::{IterationCosts, Machine, Stepper};
use keel_sim::OverheadModel;

/// Σ s·(W_i, T_i) over the steps, from each step's per-thread iterations
/// and busy seconds.
fn weighted(steps: &[(Vec<u64>, Vec<f64>)]) -> Vec<f64> {
    let threads = steps[0].0.len();
    let mut history = vec![0.0; 2 * threads];
    for (s, (work, busy)) in steps.iter().enumerate() {
        let step = (s + 1) as f64;
        for i in 0..threads {
            history[2 * i] += step * work[i] as f64;
            history[2 * i + 1] += step * busy[i];
        }
    }
    history
}

fn assert_close(memory: &LoopMemory, expected: &[f64], context: &str) {
    let kept = memory
        .history_for(expected.len() / 2)
        .expect("kept for the team");
    for (k, (a, b)) in kept.iter().zip(expected).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{context}: entry {k}: {a} != {b}"
        );
    }
}

#[test]
fn the_runtime_and_the_simulator_feed_a_loop_s_memory_the_same_quantities() {
    const STEPS: usize = 3;
    // The runtime: its record's own per-instance iterations and busy times.
    let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    let id = "loop-memory/awf";
    let mut runtime_steps = Vec::new();
    for _ in 0..STEPS {
        pool.parallel(0..2_000u64)
            .schedule("awf-b".parse().unwrap())
            .id(id)
            .recorded()
            .for_each(|i| {
                std::hint::black_box(i * i);
            });
        let record: LoopRecord = keel::loops::record(LoopId::named(id)).unwrap();
        runtime_steps.push((
            record.last.thread_iterations.clone(),
            record.last.busy.clone(),
        ));
    }
    let record = keel::loops::record(LoopId::named(id)).unwrap();
    assert_eq!(record.memory.steps(), STEPS as u64);
    assert_close(&record.memory, &weighted(&runtime_steps), "runtime");

    // The simulator: workers start at the fork, so each finish time is the
    // worker's busy time.
    let machine = Machine::uniform(2, OverheadModel::ZERO).unwrap();
    let mut stepper = Stepper::new(machine, "awf-b", 7).unwrap();
    let costs = IterationCosts::uniform(2_000, 1e-6).unwrap();
    let mut sim_steps = Vec::new();
    for _ in 0..STEPS {
        let r = stepper.run("awf", &costs).unwrap();
        sim_steps.push((r.thread_iterations.clone(), r.finish.clone()));
    }
    let memory = stepper.memory("awf").unwrap();
    assert_eq!(memory.steps(), STEPS as u64);
    assert_close(memory, &weighted(&sim_steps), "simulator");
}
