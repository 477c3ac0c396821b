//! What dispatching costs on this machine, measured once per process the
//! first time `auto` needs it: the [`DispatchCost`] every loop selector of
//! the process consults (`keel_policy::select::cost`).
//!
//! - **Per chunk**: a claim is one read-modify-write of the instance's
//!   shared counter, and under a team claiming at once the counter's cache
//!   line moves between cores on every claim. Two threads (one where the
//!   process may use a single CPU) take turns incrementing one counter;
//!   the time per increment per thread, plus the claim path's own work —
//!   a one-thread [`Workshare`](super::Workshare) under `dynamic,1`
//!   pulled chunk by chunk through its [`Cursor`](super::Cursor), the
//!   path the OpenMP interposer's `GOMP_loop_*_next` takes — is the cost
//!   of a claim.
//! - **Per clock read**: `Instant::now()` timed back to back.
//! - **Per measured instance**: what `auto` adds to an instance it
//!   measures: two clock reads per participant and the selector's
//!   `choose` + `observe` (timed on a scratch selector that exploits),
//!   with the record's update counted as one more selector step.
//!
//! ```
//! let cost = keel::loops::dispatch_cost();
//! assert!(cost.per_chunk > 0.0 && cost.per_chunk < 1e-3);
//! assert!(cost.per_measured_instance > 0.0);
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::select::cost::DispatchCost;
use keel_policy::select::{AutoSpec, Measurement, Method};

// The measurement runs inside a program's first `auto` loop, so it is
// kept to a few tenths of a millisecond: a 0.2 s program must not pay a
// percent for it (16,384 contended claims take about 4 ms on two cores
// of the development machine).

/// Claims each thread makes while the per-chunk cost is measured.
const CLAIMS: u64 = 1 << 11;
/// Clock reads timed.
const CLOCK_READS: u32 = 1 << 10;
/// Selector steps timed (after a warm-up that settles its search).
const SELECTOR_STEPS: u32 = 64;

static MEASURED: OnceLock<DispatchCost> = OnceLock::new();

/// The dispatch cost of this process, measured on first use (a few tenths
/// of a millisecond) and then kept.
pub fn dispatch_cost() -> DispatchCost {
    *MEASURED.get_or_init(measure)
}

fn measure() -> DispatchCost {
    let per_clock_read = clock_read();
    let per_chunk = contended_claim() + uncontended_claim();
    let per_measured_instance = 2.0 * per_clock_read * 2.0 + 2.0 * selector_step();
    DispatchCost {
        per_chunk,
        per_clock_read,
        per_measured_instance,
    }
}

fn clock_read() -> f64 {
    let start = Instant::now();
    for _ in 0..CLOCK_READS {
        black_box(Instant::now());
    }
    start.elapsed().as_secs_f64() / f64::from(CLOCK_READS)
}

/// Seconds per chunk of a one-thread `dynamic,1` workshare pulled through
/// its cursor (the counter's increment included).
#[cfg(not(loom))]
fn uncontended_claim() -> f64 {
    use super::{LoopId, Schedule, Workshare};
    let Ok(schedule) = "dynamic,1".parse::<Schedule>() else {
        return 0.0;
    };
    let work = std::sync::Arc::new(Workshare::pulled(
        LoopId::named("keel:dispatch-cost"),
        &schedule,
        CLAIMS,
        1,
    ));
    let Ok(mut cursor) = Workshare::join(work, 0) else {
        return 0.0;
    };
    let start = Instant::now();
    let mut chunks = 0u64;
    while let Some(range) = cursor.next() {
        black_box(range);
        chunks += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    drop(cursor.leave());
    elapsed / chunks.max(1) as f64
}

/// Under loom the workshare's atomics exist only inside a model: the bare
/// increment stands in.
#[cfg(loom)]
fn uncontended_claim() -> f64 {
    let counter = CachePadded::new(AtomicU64::new(0));
    let start = Instant::now();
    for _ in 0..CLAIMS {
        black_box(counter.fetch_add(black_box(1), Ordering::AcqRel));
    }
    start.elapsed().as_secs_f64() / CLAIMS as f64
}

/// Seconds per claim per thread with two threads claiming one counter.
fn contended_claim() -> f64 {
    let two = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    if !two {
        return 0.0;
    }
    let counter = CachePadded::new(AtomicU64::new(0));
    let barrier = Barrier::new(2);
    let claim_all = || {
        barrier.wait();
        let start = Instant::now();
        while counter.fetch_add(1, Ordering::AcqRel) < 2 * CLAIMS {}
        start.elapsed().as_secs_f64()
    };
    let spawned = std::thread::scope(|s| {
        let other = std::thread::Builder::new().spawn_scoped(s, claim_all);
        match other {
            Ok(handle) => {
                let mine = claim_all();
                handle.join().ok().map(|theirs| mine.max(theirs))
            }
            Err(_) => None,
        }
    });
    // Each thread made about half of the claims in that time.
    spawned.map_or(0.0, |elapsed| elapsed / CLAIMS as f64)
}

/// Seconds of one `choose` + `observe` of a selector that exploits.
fn selector_step() -> f64 {
    let mut selector = AutoSpec::new(Method::Keel).selector(0);
    let step = |selector: &mut keel_policy::select::LoopSelector, k: u32| {
        let choice = selector.choose(1000, 2);
        if choice.measure {
            let t = 1e-3 * (1.0 + 0.01 * f64::from(k % 7));
            let _ = selector.observe(&Measurement::new(t, 1.0).with_iterations(1000));
        }
    };
    for k in 0..32 {
        step(&mut selector, k);
    }
    let start = Instant::now();
    for k in 0..SELECTOR_STEPS {
        step(&mut selector, k);
    }
    start.elapsed().as_secs_f64() / f64::from(SELECTOR_STEPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_cost_is_positive_finite_and_kept() {
        let first = dispatch_cost();
        assert!(first.is_valid());
        assert!(first.per_chunk > 0.0 && first.per_chunk < 1e-4, "{first:?}");
        assert!(first.per_clock_read > 0.0 && first.per_clock_read < 1e-5);
        assert!(first.per_measured_instance > 2.0 * first.per_clock_read);
        assert_eq!(dispatch_cost(), first, "measured once");
    }
}
