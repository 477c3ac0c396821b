//! Loom models of the pool's fork/join protocol (`README.md` beside this
//! file), run on the shipped pool: a real [`ThreadPool`] built by the
//! crate's builder, compiled against loom through the crate's `sync`
//! facade. The main models run two regions whose participants write their own
//! cell, which the caller reads after the join, then drops the pool (the
//! shutdown epoch); another runs `region_with` with a job carried by value.
//! Loom fails a model on a data race over the job pointer
//! or a participant's cell (broken publication or join), or when every
//! thread is parked (a lost wake-up: a worker that misses its epoch, or a
//! caller that misses the last worker).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p keel-runtime
//! --lib --release loom` (the two-worker models do not finish unbounded).
//! The one-worker models explore at that bound; the two-worker model at
//! most 2 preemptions, unless run with `-- --ignored` (see below).

use super::{Broadcast, Team, ThreadPool, WaitPolicy};
use crate::sync::{thread, Arc, UnsafeCell};

/// One cell per participant, written by that participant in a region and
/// read by the caller after the join.
struct Cells(Vec<UnsafeCell<u64>>);

// SAFETY: participant `i` alone writes cell `i`, inside a region; the
// caller reads the cells only after the region's join. Whether the join
// really orders those accesses is what loom checks: it tracks every access
// to these cells and fails the model on a race.
unsafe impl Sync for Cells {}

impl Cells {
    /// Participant `index`'s cell; a method, so that a region's closure
    /// captures the whole `Sync` wrapper rather than its inner vector.
    fn cell(&self, index: usize) -> &UnsafeCell<u64> {
        &self.0[index]
    }
}

const REGIONS: u64 = 2;

/// Builds a pool of `threads` participants with `wait`, runs [`REGIONS`]
/// regions, checks every participant's write after each join, and drops
/// the pool. Explores with at most `LOOM_MAX_PREEMPTIONS` preemptions, and
/// at most `cap` when one is given.
fn model(threads: usize, wait: WaitPolicy, cap: Option<usize>) {
    let mut builder = loom::model::Builder::new();
    if let Some(cap) = cap {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(cap, |b| b.min(cap)));
    }
    builder.check(move || {
        // Everything chosen in code: the builder reads no environment
        // variable and pins nothing.
        let pool = ThreadPool::builder()
            .threads(threads)
            .wait_policy(wait)
            .pin(false)
            .build()
            .expect("a pool of 2 or 3 builds");
        let cells = Cells((0..threads).map(|_| UnsafeCell::new(0)).collect());
        for region in 1..=REGIONS {
            pool.region(|team| {
                assert_eq!(team.size, threads);
                let value = region * 10 + team.index as u64;
                // SAFETY: this participant's own cell (see `Cells`).
                cells
                    .cell(team.index)
                    .with_mut(|cell| unsafe { *cell = value });
            });
            for (index, cell) in cells.0.iter().enumerate() {
                // SAFETY: after the join (see `Cells`).
                let value = cell.with(|cell| unsafe { *cell });
                assert_eq!(
                    value,
                    region * 10 + index as u64,
                    "participant {index}'s write is visible after the join"
                );
            }
        }
        drop(pool);
    });
}

#[test]
fn loom_one_worker_passive_never_loses_a_wake_up() {
    model(2, WaitPolicy::Passive, None);
}

/// Bound 2 finds a caller that unparks only some of its sleeping workers
/// within seconds; bound 3 takes minutes on a two-core machine, so it is
/// the ignored test below.
#[test]
fn loom_two_workers_passive_never_lose_a_wake_up() {
    model(3, WaitPolicy::Passive, Some(2));
}

/// The model above at the full `LOOM_MAX_PREEMPTIONS` bound: run it with
/// `-- --ignored` (about three minutes at bound 3 on two cores).
#[test]
#[ignore = "minutes at bound 3; run with --ignored"]
fn loom_two_workers_passive_at_the_full_bound() {
    model(3, WaitPolicy::Passive, None);
}

/// The spinning path before the park: the budget is cut to 2 steps under
/// loom, each a yield loom explores.
#[test]
fn loom_one_worker_spinning_then_parking_never_loses_a_wake_up() {
    model(2, WaitPolicy::Spins(2), None);
}

/// Two outside threads start a region each on one pool of 2: the region
/// lock serialises them, and each caller sees its own participants' writes
/// after its join (each caller has its own cells, read after the region
/// lock is released).
#[test]
fn loom_two_callers_are_serialised_and_each_sees_its_region() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(2, |b| b.min(2)));
    builder.check(|| {
        let pool = Arc::new(
            ThreadPool::builder()
                .threads(2)
                .wait_policy(WaitPolicy::Passive)
                .pin(false)
                .build()
                .expect("a pool of 2 builds"),
        );
        let run = |pool: &ThreadPool, caller: u64| {
            let cells = Cells((0..2).map(|_| UnsafeCell::new(0)).collect());
            pool.region(|team| {
                let value = caller * 10 + team.index as u64;
                // SAFETY: this participant's own cell (see `Cells`).
                cells
                    .cell(team.index)
                    .with_mut(|cell| unsafe { *cell = value });
            });
            for (index, cell) in cells.0.iter().enumerate() {
                // SAFETY: after the join (see `Cells`).
                let value = cell.with(|cell| unsafe { *cell });
                assert_eq!(value, caller * 10 + index as u64);
            }
        };
        let other = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || run(&pool, 2))
        };
        run(&pool, 1);
        other.join().expect("the other caller finishes");
    });
}

/// A job carried by value in the fork block ([`Broadcast`]): the region
/// number and the address of the cells.
#[derive(Clone, Copy)]
struct Stamp<'a> {
    region: u64,
    cells: &'a Cells,
    /// Written by `setup` on the caller before the fork, read by every
    /// participant.
    ready: &'a UnsafeCell<u64>,
}

// SAFETY: `ready` is written only by `setup` (no region running) and read
// by participants of the region that follows; loom checks that ordering.
unsafe impl Sync for Stamp<'_> {}

impl Broadcast for Stamp<'_> {
    fn run(&self, team: Team) -> u64 {
        // SAFETY: written by `setup` before the fork, not again before the
        // join: loom checks that the fork orders the two.
        let ready = self.ready.with(|r| unsafe { *r });
        assert_eq!(ready, self.region, "setup's write is visible to the job");
        // SAFETY: this participant's own cell (see `Cells`).
        self.cells
            .cell(team.index)
            .with_mut(|cell| unsafe { *cell = self.region * 10 + team.index as u64 });
        team.index as u64 + 1
    }
}

/// `region_with`: the job's bytes, `setup`'s writes and the workers'
/// tallies are published by the fork and the join; `join` sees every
/// participant's write and the summed tallies.
#[test]
fn loom_a_broadcast_job_its_setup_and_tallies_are_published() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(2, |b| b.min(2)));
    builder.check(|| {
        let pool = ThreadPool::builder()
            .threads(2)
            .wait_policy(WaitPolicy::Spins(1))
            .pin(false)
            .build()
            .expect("a pool of 2 builds");
        let cells = Cells((0..2).map(|_| UnsafeCell::new(0)).collect());
        let ready = UnsafeCell::new(0);
        for region in 1..=REGIONS {
            let job = Stamp {
                region,
                cells: &cells,
                ready: &ready,
            };
            let seen = pool.region_with(
                job,
                // SAFETY: no region runs while `setup` does.
                || ready.with_mut(|r| unsafe { *r = region }),
                |tally| {
                    for (index, cell) in cells.0.iter().enumerate() {
                        // SAFETY: after the join.
                        let value = cell.with(|cell| unsafe { *cell });
                        assert_eq!(value, region * 10 + index as u64);
                    }
                    tally
                },
            );
            assert_eq!(seen, 1 + 2, "participants 0 and 1 tally 1 and 2");
        }
        drop(pool);
    });
}
