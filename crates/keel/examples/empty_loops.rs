//! Runs `N` empty `static` loops on a pool of one participant, so that
//! the per-instance cost of the loop path can be counted in instructions:
//! `valgrind --tool=callgrind` counts the same instructions on every run,
//! where wall-clock timings on a busy machine do not. Take the difference
//! of two runs (say `N` = 1000 and 11000) to remove the start-up cost:
//!
//! ```text
//! cargo build --release -p keel --example empty_loops
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/empty_loops 1000
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/empty_loops 11000
//! ```
//!
//! An optional second argument names the schedule (`static` by default);
//! a third, `recorded`, records every instance (`ParallelLoop::recorded`),
//! to count what recording costs.

use std::hint::black_box;

use keel::{Schedule, ThreadPool, WaitPolicy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let schedule: Schedule = args.next().as_deref().unwrap_or("static").parse()?;
    let recorded = match args.next().as_deref() {
        None => false,
        Some("recorded") => true,
        Some(other) => {
            return Err(format!("unknown argument {other:?}; expected `recorded`").into())
        }
    };
    let pool = ThreadPool::builder()
        .threads(1)
        .wait_policy(WaitPolicy::Passive)
        .pin(false)
        .build()?;
    let mut chunks = 0;
    for _ in 0..n {
        let mut lp = pool
            .parallel(0..1u64)
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
