//! A time-stepping loop with uneven iterations under the `auto` schedule.
//!
//! Iteration `i` of each step costs work proportional to `i` (a triangular
//! load, as in a lower-triangular solve), so equal static blocks leave the
//! first thread idle while the last one works. Under `auto` (= `auto,keel`)
//! Keel measures each instance of the loop, tries schedules of the Auto4OMP
//! portfolio in rounds, keeps the fastest and watches it for changes. The
//! loop's record, keyed by the name given with `.id(..)`, shows the
//! schedule chosen at every instance.
//!
//! Run with `cargo run -p keel-runtime --example auto_loop`.

use std::hint::black_box;

use keel::loops::{self, LoopId};
use keel::policy::dls::AUTO4OMP_PORTFOLIO;
use keel::policy::select::Phase;

/// Time steps: enough instances for the selection to finish its search.
const STEPS: usize = 150;
/// Iterations per step.
const N: u32 = 2_000;

/// Work proportional to `i`; `black_box` keeps the optimiser from folding it.
fn work(i: u32) -> f64 {
    let mut x = 0.0f64;
    for k in 0..i / 16 {
        x += black_box(k as f64).sqrt();
    }
    x
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Under KEEL_TRACE, completes the trace file on every return.
    let _trace = keel::trace::FinishGuard::new();
    let pool = keel::ThreadPool::builder().threads(2).build()?;
    let auto: keel::Schedule = "auto".parse()?;
    let mut t_par = 0.0;
    for _ in 0..STEPS {
        let summary = pool
            .parallel(0..N)
            .schedule(auto.clone())
            .id("triangular")
            .try_for_each(|i| {
                black_box(work(i));
            })?;
        // `auto` loops are always recorded, so their summaries carry T_par.
        t_par += summary.t_par.unwrap_or_default();
    }

    let record = loops::record(LoopId::named("triangular")).ok_or("the loop kept no record")?;
    println!(
        "{} instances on {} threads, {:.1} ms in the loop in all",
        record.instances,
        record.last.threads,
        t_par * 1e3
    );
    println!(
        "last instance: schedule {}, LIB {:.1} %",
        record.last.schedule, record.last.lib_percent
    );
    let timeline = record
        .selection
        .ok_or("an auto loop keeps a selection timeline")?;
    println!(
        "method auto,{}: {} instances spent trying schedules",
        timeline.method, timeline.exploration_instances
    );
    // Instances per schedule while the method exploited its choice (the
    // rest were trials of a search).
    let mut exploited = [0u64; AUTO4OMP_PORTFOLIO.len()];
    for run in timeline.runs.iter().filter(|r| r.phase == Phase::Exploit) {
        exploited[run.index] += run.len;
    }
    for (name, &count) in AUTO4OMP_PORTFOLIO.iter().zip(&exploited) {
        if count > 0 {
            println!("  exploited {name:<12} for {count:>3} instances");
        }
    }
    // The latest runs of instances with one schedule and one reason.
    let from = timeline.runs.len().saturating_sub(4);
    for run in &timeline.runs[from..] {
        println!(
            "  instances {:>3}..{:<3} {:<12} ({})",
            run.first,
            run.first + run.len,
            AUTO4OMP_PORTFOLIO[run.index],
            run.phase
        );
    }
    Ok(())
}
