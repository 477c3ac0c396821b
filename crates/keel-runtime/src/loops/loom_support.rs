//! What the loop instance's loom models share (`loops/loom_tests.rs` for
//! the push form of a [`Workshare`](super::Workshare),
//! `loops/foreign/loom_cursor.rs` for its pull form): per-participant
//! chunk cells whose reads loom checks for races, and the checks made on
//! them — the record against the cells, every iteration exactly once.

use std::ops::Range;

use super::{record, LoopId};
use crate::sync::UnsafeCell;

/// One cell per participant: the chunks it ran or pulled, in order.
pub(super) struct Chunks(Vec<UnsafeCell<Vec<(u64, u64)>>>);

// SAFETY: participant `i`'s thread alone writes cell `i` (a `Workshare`
// calls the body with the participant's own index, on its own thread; a
// cursor belongs to one participant), before it leaves; the others are read
// by the recorder after the countdown, and by the model after the join.
// Whether those really order the accesses is what loom checks: it fails the
// model on a race.
unsafe impl Sync for Chunks {}

impl Chunks {
    /// Cells for `threads` participants, leaked: a `Workshare`'s body is a
    /// reference, and loom's threads take only `'static` closures (a few
    /// bytes per execution).
    pub(super) fn leak(threads: usize) -> &'static Chunks {
        Box::leak(Box::new(Chunks(
            (0..threads).map(|_| UnsafeCell::new(Vec::new())).collect(),
        )))
    }

    /// Appends `chunk` to participant `me`'s cell.
    pub(super) fn push(&self, me: usize, chunk: Range<u64>) {
        // SAFETY: participant `me`'s own cell (see `Chunks`).
        self.0[me].with_mut(|cell| unsafe { (*cell).push((chunk.start, chunk.end)) });
    }

    /// The body of an instance that records its chunks here.
    pub(super) fn body(&'static self) -> &'static (dyn Fn(usize, u64, u64) + Sync) {
        Box::leak(Box::new(move |me: usize, from: u64, to: u64| {
            self.push(me, from..to)
        }))
    }

    /// How many participants have a cell.
    pub(super) fn participants(&self) -> usize {
        self.0.len()
    }

    /// Participant `me`'s chunks.
    pub(super) fn of(&self, me: usize) -> Vec<(u64, u64)> {
        // SAFETY: only after `me` left (see `Chunks`); loom checks it.
        self.0[me].with(|cell| unsafe { (*cell).clone() })
    }

    pub(super) fn all(&self) -> Vec<Vec<(u64, u64)>> {
        (0..self.0.len()).map(|me| self.of(me)).collect()
    }
}

/// Loop `id`'s record agrees with every participant's cell (chunks and
/// iterations per participant) over `0..n` and counts `instances`.
pub(super) fn check_record(id: &'static str, chunks: &Chunks, n: u64, instances: u64) {
    let all = chunks.all();
    let counts: Vec<u64> = all.iter().map(|c| c.len() as u64).collect();
    let iterations: Vec<u64> = all
        .iter()
        .map(|c| c.iter().map(|(from, to)| to - from).sum())
        .collect();
    let rec = record(LoopId::named(id)).expect("a recorded instance keeps a record");
    assert_eq!(rec.instances, instances, "one record per instance");
    assert_eq!(
        rec.last.chunks, counts,
        "the record sees every participant's chunks"
    );
    assert_eq!(rec.last.thread_iterations, iterations);
    assert_eq!(rec.last.iterations, n);
}

/// After the join: every iteration of `0..n` in exactly one chunk of one
/// participant.
pub(super) fn check_cover(chunks: &Chunks, n: u64) {
    let mut ran: Vec<(u64, u64)> = chunks.all().into_iter().flatten().collect();
    ran.sort_unstable();
    let mut next = 0;
    for &(from, to) in &ran {
        assert!(from < to, "empty chunk {from}..{to}");
        assert_eq!(from, next, "chunks {ran:?} leave a gap or overlap");
        next = to;
    }
    assert_eq!(next, n, "chunks {ran:?} cover 0..{n}");
}
