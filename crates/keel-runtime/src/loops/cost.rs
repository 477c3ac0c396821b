//! What dispatching costs on this machine, measured once per process the
//! first time `auto` needs it: the [`DispatchCost`] every loop selector of
//! the process consults (`keel_policy::select::cost`). What one thread can
//! measure is measured at once; the contended claim, which needs a second
//! thread, in the background (see [`dispatch_cost`]).
//!
//! - **Per chunk**: a claim is one read-modify-write of the instance's
//!   shared counter, and between chunks of work the counter's cache line
//!   was last written by another thread of the team: every claim moves it
//!   between cores. Two threads hand one counter back and forth (none
//!   where the process may use a single CPU); the time per handoff, plus
//!   the claim path's own work —
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::select::cost::DispatchCost;
use keel_policy::select::{AutoSpec, Measurement, Method};

// The measurement runs inside a program's first `auto` loop, so it is
// kept to a few tenths of a millisecond: a 0.2 s program must not pay a
// percent for it (16,384 contended claims take about 4 ms on two cores
// of the development machine).

/// Claims of the uncontended claim path timed.
const CLAIMS: u64 = 1 << 11;
/// Handoffs of the contended counter per timed batch, each way.
const HANDOFF_BATCH: u64 = 32;
/// Batches of handoffs timed at most.
const HANDOFF_BATCHES: usize = 16;
/// How long the timed handoffs may take in all.
const HANDOFF_DEADLINE: std::time::Duration = std::time::Duration::from_micros(300);
/// How long the helper thread may take to start handing off: a thread's
/// start takes 0.1–7 ms on the development machine (a sleeping virtual CPU
/// waking), which any measurement with a second thread pays.
const HANDOFF_START_DEADLINE: std::time::Duration = std::time::Duration::from_millis(10);
/// Clock reads timed.
const CLOCK_READS: u32 = 1 << 10;
/// Selector steps timed (after a warm-up that settles its search).
const SELECTOR_STEPS: u32 = 64;

/// What this thread measures at once: the claim path, the clock, the
/// selector; the contended claim still at the pessimistic default's.
static LOCAL: OnceLock<DispatchCost> = OnceLock::new();
/// The same with the contended claim measured, once the background
/// measurement has finished.
static MEASURED: OnceLock<DispatchCost> = OnceLock::new();

/// The dispatch cost of this process, as measured so far. The first call
/// measures what one thread can (a few tenths of a millisecond) and starts
/// the contended claim's measurement on a thread of its own, which needs a
/// second thread started and scheduled (milliseconds on some machines: a
/// program must not wait for it); until that ends, a claim's contention is
/// taken at the pessimistic default's, which errs towards fewer,
/// larger chunks.
pub fn dispatch_cost() -> DispatchCost {
    if let Some(cost) = MEASURED.get() {
        return *cost;
    }
    let local = *LOCAL.get_or_init(|| {
        let uncontended = uncontended_claim();
        let local = measure_local(uncontended);
        measure_contention_in_background(local, uncontended);
        local
    });
    MEASURED.get().copied().unwrap_or(local)
}

/// Waits up to `timeout` for the contended claim's measurement; the cost
/// as it then stands (for tests and tools that want the final figure).
pub fn dispatch_cost_settled(timeout: std::time::Duration) -> DispatchCost {
    let start = Instant::now();
    let mut cost = dispatch_cost();
    while MEASURED.get().is_none() && start.elapsed() < timeout {
        std::thread::sleep(std::time::Duration::from_micros(200));
        cost = dispatch_cost();
    }
    cost
}

/// The cost with the claim path's own work `uncontended` and the
/// default's contention.
fn measure_local(uncontended: f64) -> DispatchCost {
    let per_clock_read = clock_read();
    let per_chunk = DispatchCost::default().per_chunk + uncontended;
    let per_measured_instance = 2.0 * per_clock_read * 2.0 + 2.0 * selector_step();
    DispatchCost {
        per_chunk,
        per_clock_read,
        per_measured_instance,
    }
}

/// Measures the contended claim on a thread of its own and publishes
/// `local` with it in place of the default's; a thread that cannot start
/// leaves the local figures.
fn measure_contention_in_background(local: DispatchCost, uncontended: f64) {
    let spawned = std::thread::Builder::new()
        .name("keel-dispatch-cost".into())
        .spawn(move || {
            let per_chunk = contended_claim() + uncontended;
            let _ = MEASURED.set(DispatchCost { per_chunk, ..local });
        });
    drop(spawned);
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

/// Seconds a claim waits for the shared counter's cache line when another
/// thread of the team wrote it last: two threads hand one counter back and
/// forth, each incrementing it only after seeing the other's increment, so
/// that every increment moves the line between their cores, as a claim
/// between chunks of work does. Two threads racing through increments
/// would not measure it: each keeps the line for many increments in a row
/// (a few nanoseconds each on the development machine, where a handoff
/// takes 35–50 ns).
///
/// The fastest of short batches counts (a batch the scheduler interrupted
/// measured the interruption), and the handoffs stop at a deadline, so that
/// a helper thread that is not scheduled costs the program at most that.
/// Without a second CPU a team's threads take turns on one core and no line
/// moves: 0. With one, but no batch done by the deadline (the CPUs were
/// busy: inside an OpenMP program the team's other threads may be
/// spinning), the contended claim is not known and the pessimistic
/// default's stands ([`DispatchCost::default`]).
fn contended_claim() -> f64 {
    let two = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    if !two {
        return 0.0;
    }
    let counter = CachePadded::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    // Increments the counter whenever it holds `parity` mod 2 (the other
    // thread's increment made it so). The timing thread records each
    // batch's time per handoff and tells the other to stop.
    let take_turns = |parity: u64, mut batches: Option<&mut Vec<f64>>| {
        // The batches start once the other thread has taken a turn: its
        // start is not a handoff.
        let mut batch_start = Instant::now();
        let mut deadline = batch_start + HANDOFF_START_DEADLINE;
        let mut started = false;
        let mut turns = 0u64;
        loop {
            let value = counter.load(Ordering::Acquire);
            if value % 2 == parity {
                counter.store(value + 1, Ordering::Release);
                let Some(times) = batches.as_deref_mut() else {
                    continue;
                };
                if !started {
                    if value > 0 {
                        started = true;
                        batch_start = Instant::now();
                        deadline = batch_start + HANDOFF_DEADLINE;
                    }
                    continue;
                }
                turns += 1;
                if turns.is_multiple_of(HANDOFF_BATCH) {
                    let now = Instant::now();
                    let handoffs = (2 * HANDOFF_BATCH) as f64;
                    times.push((now - batch_start).as_secs_f64() / handoffs);
                    batch_start = now;
                    if times.len() == HANDOFF_BATCHES || now > deadline {
                        break;
                    }
                }
            } else if stop.load(Ordering::Relaxed)
                || (batches.is_some() && Instant::now() > deadline)
            {
                break;
            } else if batches.is_some() && !started {
                // The helper has not started: leave the CPUs to it and to
                // the program (a yield would still spin when others run).
                std::thread::sleep(std::time::Duration::from_micros(50));
            } else {
                std::hint::spin_loop();
            }
        }
        stop.store(true, Ordering::Relaxed);
    };
    let mut batches = Vec::with_capacity(HANDOFF_BATCHES);
    let spawned = std::thread::scope(|s| {
        let other = std::thread::Builder::new().spawn_scoped(s, || take_turns(1, None));
        match other {
            Ok(handle) => {
                take_turns(0, Some(&mut batches));
                handle.join().is_ok()
            }
            Err(_) => false,
        }
    });
    let unknown = DispatchCost::default().per_chunk;
    if !spawned {
        return unknown;
    }
    batches.into_iter().reduce(f64::min).unwrap_or(unknown)
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
        let first = dispatch_cost_settled(std::time::Duration::from_secs(10));
        assert!(first.is_valid());
        assert!(first.per_chunk > 0.0 && first.per_chunk < 1e-4, "{first:?}");
        assert!(first.per_clock_read > 0.0 && first.per_clock_read < 1e-5);
        assert!(first.per_measured_instance > 2.0 * first.per_clock_read);
        assert_eq!(dispatch_cost(), first, "measured once");
    }
}
