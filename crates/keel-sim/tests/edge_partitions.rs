//! The adaptive schedules on `mandelbrot-edge` (costly rows contiguous at
//! the start), two workers, exact costs: the partitions behind the loop
//! runtime's figures in `docs/adaptive-factoring.md`.
//!
//! Costs are the workload's escape iterations at 4 ns each (about this
//! machine's speed on it: 70 ms for the 16.2 million of one instance), the
//! claim and fork costs those of the committed calibration, no noise.

use keel_policy::concept::{Concept, Origin};
use keel_policy::dls::LoopShape;
use keel_policy::select::parse_setting;
use keel_policy::ContextHandler;
use keel_sim::loops::instance::{simulate_plan, RunOptions};
use keel_sim::loops::{IterationCosts, Machine, Stepper};
use keel_sim::Calibration;
use keel_workloads::loops::{loop_workload, Mandelbrot};
use rand_chacha::{rand_core::SeedableRng, ChaCha8Rng};

const SECONDS_PER_UNIT: f64 = 4e-9;
const STEPS: usize = 5;

fn edge_costs() -> IterationCosts {
    let edge = loop_workload(Mandelbrot::EDGE_NAME).unwrap();
    IterationCosts::from_units(edge.work(), SECONDS_PER_UNIT).unwrap()
}

fn machine() -> Machine {
    Machine::uniform(2, Calibration::committed().unwrap().overhead).unwrap()
}

/// The last of [`STEPS`] instances under Keel's own schedule (profiles
/// measured by the earlier instances, as the runtime does).
fn stepped(schedule: &str, costs: &IterationCosts) -> f64 {
    let mut stepper = Stepper::new(machine(), schedule, 1).unwrap();
    let mut last = 0.0;
    for _ in 0..STEPS {
        last = stepper.run("edge", costs).unwrap().t_par;
    }
    last
}

/// One instance with the exact per-iteration μ and σ offered as the
/// profile: what LB4OMP's FAC, mFAC, TAP, BOLD and FSC read from a
/// profiling run of the same loop.
fn with_exact_profile(schedule: &str, costs: &IterationCosts) -> (f64, Vec<u64>) {
    let c = costs.to_vec();
    let n = c.len() as f64;
    let mean = c.iter().sum::<f64>() / n;
    let sd = (c.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
    let mut ctx = ContextHandler::new();
    ctx.provide_values(Concept::IterationProfile, Origin::Runtime, vec![mean, sd]);
    let (s, k) = parse_setting(schedule).unwrap().into_fixed().unwrap();
    let plan = s
        .plan(&LoopShape::new(costs.len(), 2, k).unwrap(), &ctx)
        .unwrap();
    let options = RunOptions {
        record_chunks: true,
        ..RunOptions::default()
    };
    let r = simulate_plan(
        &plan,
        costs,
        &machine(),
        0.0,
        options,
        &mut ChaCha8Rng::seed_from_u64(1),
    );
    let first: Vec<u64> = r
        .chunk_log
        .unwrap()
        .iter()
        .map(|w| w.first().map_or(0, |c| c.end - c.start))
        .collect();
    (r.t_par, first)
}

#[test]
fn af_and_maf_are_within_five_percent_of_ss() {
    let costs = edge_costs();
    let ss = stepped("ss", &costs);
    for s in ["af", "maf"] {
        let ratio = stepped(s, &costs) / ss;
        eprintln!("{s}: {ratio:.3} x ss");
        assert!(ratio < 1.05, "{s}: {ratio:.3} x ss");
    }
}

/// The schedules that stay within 10 % of `ss` here.
const NEAR_SS: [&str; 6] = ["af", "maf", "awf", "fsc", "static-steal", "ss"];

/// The schedules whose first chunks alone exceed a balanced share of this
/// loop's work, with the first chunk that does it.
const FIRST_CHUNK_BOUND: [(&str, f64); 10] = [
    // FAC2's first batch, N/(2P) = 250 rows per thread: rows 0..250 hold
    // 58 % of the work, so thread 0 finishes at 1.16× the balanced time.
    ("fac2", 1.16),
    ("mfac2", 1.16),
    ("tss", 1.16),
    ("gac", 1.16),
    ("wf", 1.16),
    // AWF-B..E plan as weighted FAC2 (weights 1 until measured).
    ("awf-b", 1.16),
    ("awf-c", 1.16),
    ("awf-d", 1.16),
    ("awf-e", 1.16),
    // Guided's first chunk is R/P = 500 rows: 93 % of the work.
    ("gss", 1.86),
];

#[test]
fn every_schedule_beside_ss() {
    let costs = edge_costs();
    let ss = stepped("ss", &costs);
    for s in NEAR_SS {
        let ratio = stepped(s, &costs) / ss;
        eprintln!("{s:>12}: {ratio:.3} x ss");
        assert!(ratio < 1.10, "{s}: {ratio:.3} x ss");
    }
    for (s, expected) in FIRST_CHUNK_BOUND {
        let ratio = stepped(s, &costs) / ss;
        eprintln!("{s:>12}: {ratio:.3} x ss (first chunk)");
        assert!((ratio - expected).abs() < 0.01, "{s}: {ratio:.3} x ss");
    }
}

/// FAC, mFAC, TAP and BOLD with LB4OMP's input, the exact per-iteration
/// μ and σ: their first chunks are nearly half the loop each, the rows
/// 0..480 hold about 90 % of the work, and the loop takes 1.6–1.8× `ss`.
/// Keel measures its profile from the previous instances' chunks instead,
/// which changes the figures but not the cause.
#[test]
fn profile_schedules_lose_to_their_first_chunk_as_lb4omp_s_would() {
    let costs = edge_costs();
    let ss = stepped("ss", &costs);
    for (s, first_rows, lb4omp) in [
        ("fac", [480, 480], 1.83),
        ("mfac", [480, 480], 1.83),
        ("tap", [471, 244], 1.81),
        ("bold", [391, 224], 1.60),
    ] {
        let (t, first) = with_exact_profile(s, &costs);
        let keel = stepped(s, &costs) / ss;
        eprintln!(
            "{s:>5}: exact profile {:.3} x ss, first chunks {first:?}; Keel's measured profile {keel:.3} x ss",
            t / ss
        );
        assert_eq!(first, first_rows, "{s}");
        assert!((t / ss - lb4omp).abs() < 0.01, "{s}: {:.3}", t / ss);
        assert!(keel > 1.05, "{s}: {keel:.3}");
    }
    let (t, first) = with_exact_profile("fsc", &costs);
    assert!(t / ss < 1.01, "fsc {:.3} with chunks {first:?}", t / ss);
}
