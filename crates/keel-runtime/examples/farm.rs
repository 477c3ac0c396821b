//! A task farm dispatching items of uneven cost with ARRS.
//!
//! The emitter and the collector run on the calling thread; two workers
//! run the items. `arrs` is the adaptive round-robin of the FastFlow ARRS
//! paper: it deals items round-robin in blocks and, between blocks, waits
//! for a marker from each worker, so a worker that falls behind gets no
//! new block until it catches up. The report says how many items each
//! worker ran and how many blocks were sent.
//!
//! Run with `cargo run -p keel-runtime --example farm`.

use std::hint::black_box;

use keel::farm::Farm;

/// Items in the stream.
const ITEMS: u64 = 20_000;

/// Uneven work: every 16th item costs 20 times the others.
fn process(item: u64) -> u64 {
    let rounds = if item.is_multiple_of(16) { 2_000 } else { 100 };
    let mut x = item;
    for _ in 0..rounds {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x % 1_000
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Under KEEL_TRACE, completes the trace file on every return.
    let _trace = keel::trace::FinishGuard::new();
    let mut farm = Farm::builder().workers(2).policy("arrs").build()?;
    let mut checksum = 0u64;
    let report = farm.run_collect(
        0..ITEMS,
        |_worker, item| process(item),
        |result| checksum += result,
    )?;

    println!(
        "policy {}: {} items in {:.1} ms",
        farm.policy(),
        report.items,
        report.seconds * 1e3
    );
    for (worker, items) in report.per_worker.iter().enumerate() {
        println!("  worker {worker}: {items} items");
    }
    println!(
        "{} marker blocks, {} results collected (checksum {checksum})",
        report.blocks, report.collected
    );
    assert_eq!(report.collected, ITEMS);
    Ok(())
}
