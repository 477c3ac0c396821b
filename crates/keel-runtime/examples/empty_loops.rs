//! Runs `N` empty `static` loops on a pool of one participant, so that
//! the per-instance cost of the loop path can be counted in instructions:
//! `valgrind --tool=callgrind` counts the same instructions on every run,
//! where wall-clock timings on a busy machine do not. Take the difference
//! of two runs (say `N` = 1000 and 11000) to remove the start-up cost:
//!
//! ```text
//! cargo build --release -p keel-runtime --example empty_loops
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/empty_loops 1000
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/empty_loops 11000
//! ```
//!
//! Optional arguments: the schedule (`static` by default), `--iterations K`
//! (iterations per loop, 1 by default: with more, the difference between
//! two schedules' counts per extra chunk is a chunk's marginal cost), and
//! `--recorded`, which records every instance (`ParallelLoop::recorded`),
//! to count what recording costs.

use std::hint::black_box;

use keel::{Schedule, ThreadPool, WaitPolicy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let mut schedule: Schedule = "static".parse()?;
    let mut iterations = 1u64;
    let mut recorded = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--recorded" => recorded = true,
            "--iterations" => {
                iterations = args.next().ok_or("--iterations needs a count")?.parse()?;
            }
            spec => schedule = spec.parse()?,
        }
    }
    let pool = ThreadPool::builder()
        .threads(1)
        .wait_policy(WaitPolicy::Passive)
        .pin(false)
        .build()?;
    let mut chunks = 0;
    for _ in 0..n {
        let mut lp = pool
            .parallel(0..iterations)
            .schedule(schedule.clone())
            .id("empty");
        if recorded {
            lp = lp.recorded();
        }
        chunks += lp
            .try_for_each(|i| {
                black_box(i);
            })?
            .chunks;
    }
    println!("{n} loops, {chunks} chunks");
    Ok(())
}
