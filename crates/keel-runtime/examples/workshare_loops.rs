//! Runs `N` instances of a `Workshare` with one participant, the calling
//! thread, so that the per-instance cost of the path threads Keel does not
//! own take can be counted in instructions, as `empty_loops` counts the
//! pool's: take the difference of two runs under `valgrind --tool=callgrind`
//! (say `N` = 1000 and 11000) to remove the start-up cost:
//!
//! ```text
//! cargo build --release -p keel-runtime --example workshare_loops
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/workshare_loops 1000
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/workshare_loops 11000
//! ```
//!
//! Optional arguments: the schedule (`dynamic,1` by default) and the
//! iterations per instance (16 by default).

use std::hint::black_box;

use keel::loops::{LoopId, Workshare};
use keel::Schedule;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let schedule: Schedule = args.next().as_deref().unwrap_or("dynamic,1").parse()?;
    let iterations: u64 = args.next().map_or(Ok(16), |a| a.parse())?;
    let body = |_: usize, from: u64, to: u64| {
        black_box((from, to));
    };
    let mut chunks = 0;
    for _ in 0..n {
        let work = Workshare::new(LoopId::named("workshare"), &schedule, iterations, 1, &body);
        chunks += work.participate(0)?.map_or(0, |summary| summary.chunks);
    }
    println!("{n} instances, {chunks} chunks");
    Ok(())
}
