//! Over-decomposed objects, remapped by measured load with the policy from
//! `KEEL_LB` (default `greedy`), with work stealing inside steps.
//!
//! Sixty-four objects, far more than the two PUs, each own some state and
//! do work in every step; their costs differ (object `k` costs about `k`
//! units), so the initial `block` placement puts most of the work on the
//! last PU. Keel measures each object's time, and every `PERIOD` steps the
//! mapping policy maps the objects afresh; their state moves with them. The
//! policy is `KEEL_LB`'s spec (`KEEL_LB=refine cargo run ...`), else
//! `greedy` (LPT on the measured loads, Charm++'s GreedyLB); a spec that
//! does not build stops the example with the policy error. Inside a step each object
//! runs its work as a potential task (`StepContext::for_each`) that an idle
//! PU may steal chunks of (`history-idle` exposure).
//!
//! Run with `cargo run -p keel-runtime --example objects`.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use keel::objects::{Object, Objects, StepContext};

/// Objects: many more than PUs.
const OBJECTS: usize = 64;
/// Steps to run.
const STEPS: usize = 12;
/// Remap after every this many steps.
const PERIOD: usize = 4;

/// An object whose per-step cost grows with its id.
struct Cell {
    id: usize,
    value: u64,
}

impl Object for Cell {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let acc = AtomicU64::new(0);
        // Units of work for this step, split into chunks an idle PU may steal.
        ctx.for_each(0..4 * (self.id + 1), |unit| {
            let mut x = unit as u64 ^ self.value;
            for _ in 0..200 {
                x = black_box(x.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(3));
            }
            acc.fetch_add(x % 7, Ordering::Relaxed);
        });
        self.value = self.value.wrapping_add(acc.into_inner());
    }
}

fn main() -> ExitCode {
    // Under KEEL_TRACE, completes the trace file on every return.
    let _trace = keel::trace::FinishGuard::new();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("objects example: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let pool = keel::ThreadPool::builder().threads(2).build()?;
    let cells: Vec<Cell> = (0..OBJECTS).map(|id| Cell { id, value: 1 }).collect();
    // No `.policy(..)`: the remap policy comes from `KEEL_LB`, else `greedy`.
    let mut run = Objects::builder()
        .initial("block")
        .period(PERIOD)
        .stealing("history-idle")
        .build(&pool, cells)?;

    let report = run.run(STEPS)?;
    println!(
        "{} objects on {} PUs, {} steps, policy {}, stealing {}",
        run.len(),
        run.pus(),
        report.steps,
        run.policy(),
        run.stealing()
    );
    for r in &report.rebalances {
        println!(
            "  remap after step {:>2}: {:>2} objects moved, λ of the measured loads {:.2} -> {:.2}",
            r.step, r.migrations, r.lambda_before, r.lambda_after
        );
    }
    let mut per_pu = vec![0usize; run.pus()];
    for &pu in run.placement() {
        per_pu[pu] += 1;
    }
    println!("objects per PU now: {per_pu:?}");
    println!(
        "run λ {:.3}; potential tasks: {} chunks, {} stolen",
        report.lambda, report.tasks.chunks, report.tasks.steals
    );
    Ok(())
}
