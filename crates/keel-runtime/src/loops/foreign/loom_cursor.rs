//! Loom models of a pulled [`Workshare`]: participants that take their
//! chunks one [`Cursor::next`] at a time, the way the OpenMP interposer
//! drives an instance from `GOMP_loop_*_next`. The cursor claims through
//! the same counters, slots and steal ranges as the push form
//! (`loops/loom_tests.rs`), leaves through the same countdown and keeps
//! the instance alive through the crate's `Arc`; all of them take loom's
//! types through the `sync` facade, so these models check the shipped
//! cursor.
//!
//! Each participant appends the chunks its cursor hands out to a loom cell
//! of its own before it leaves; the participant that gets the summary reads
//! every cell at once (a race loom reports unless the countdown orders the
//! others' pulls before the record) and compares the record's per-thread
//! counts with them (a stale `Relaxed` slot store the countdown failed to
//! order). After the join the models check that the chunks cover the range
//! exactly once, that one participant prepared the instance and that the
//! instance was recorded once.
//!
//! Two more models run an unrecorded instance twice the way the
//! interposer does, the second renewed from the first's preparation.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p keel-runtime
//! --lib --release loom`. Every model here explores at that bound.

use super::{Cursor, Workshare};
use crate::loops::loom_support::{check_cover, check_record as check_cells, Chunks};
use crate::loops::{LoopId, LoopSummary, Schedule};
use crate::sync::{thread, Arc};

/// A recorded, pulled instance of loop `id` under `spec` over `0..n` for
/// `threads` participants, with its chunk cells.
fn instance(
    id: &'static str,
    spec: &str,
    n: u64,
    threads: usize,
) -> (Arc<Workshare<'static>>, &'static Chunks) {
    let schedule: Schedule = spec.parse().expect("the model's schedule parses");
    let work = Workshare::pulled(LoopId::named(id), &schedule, n, threads).recorded();
    (Arc::new(work), Chunks::leak(threads))
}

/// The record of loop `id` agrees with every participant's cell and counts
/// one instance.
fn check_record(id: &'static str, chunks: &Chunks, n: u64) {
    check_cells(id, chunks, n, 1);
}

/// What the participant that got the summary checks at once.
fn check_summary(id: &'static str, summary: &LoopSummary, chunks: &Chunks, n: u64) {
    assert_eq!(summary.iterations, n);
    assert_eq!(summary.threads, chunks.participants());
    let pulled: u64 = chunks.all().iter().map(|c| c.len() as u64).sum();
    assert_eq!(summary.chunks, pulled, "summary's chunks");
    check_record(id, chunks, n);
}

/// Participant `me` joins (its own reference moves into the cursor), pulls
/// at most `limit` chunks, then leaves: by [`Cursor::leave`] when `by_drop`
/// is false (checking the record at once when it got the summary), by
/// dropping the cursor otherwise. Returns whether it got the summary.
fn pull(
    work: Arc<Workshare<'static>>,
    me: usize,
    id: &'static str,
    chunks: &Chunks,
    n: u64,
    limit: usize,
    by_drop: bool,
) -> bool {
    let mut cursor = Workshare::join(work, me).expect("a valid participant");
    for _ in 0..limit {
        let Some(chunk) = cursor.next() else { break };
        chunks.push(me, chunk);
    }
    if by_drop {
        drop(cursor);
        return false;
    }
    let summary = cursor.leave();
    if let Some(summary) = &summary {
        check_summary(id, summary, chunks, n);
    }
    summary.is_some()
}

/// `threads` cursors pull the whole loop together: participant 0 on the
/// model's thread, the others on threads of their own.
fn together(id: &'static str, spec: &'static str, n: u64, threads: usize) {
    let (work, chunks) = instance(id, spec, n, threads);
    let others: Vec<_> = (1..threads)
        .map(|me| {
            let work = Arc::clone(&work);
            thread::spawn(move || pull(work, me, id, chunks, n, usize::MAX, false))
        })
        .collect();
    let mut recorders = vec![pull(Arc::clone(&work), 0, id, chunks, n, usize::MAX, false)];
    recorders.extend(others.into_iter().map(|h| h.join().expect("participant")));
    check_cover(chunks, n);
    assert_eq!(work.preparations(), 1, "exactly one participant prepares");
    assert_eq!(
        recorders.iter().filter(|&&r| r).count(),
        1,
        "exactly one participant gets the summary"
    );
}

#[test]
fn loom_cursor_dynamic_two_participants() {
    loom::model(|| together("loom-cursor-dynamic-2", "dynamic,1", 3, 2));
}

#[test]
fn loom_cursor_dynamic_three_participants() {
    loom::model(|| together("loom-cursor-dynamic-3", "dynamic,1", 3, 3));
}

/// `af` claims by a CAS on the shared counter, 2 iterations a claim with
/// `divider=50` (see `loops/loom_tests.rs`).
#[test]
fn loom_cursor_af_two_participants() {
    loom::model(|| together("loom-cursor-af-2", "af:divider=50", 4, 2));
}

#[test]
fn loom_cursor_af_three_participants() {
    loom::model(|| together("loom-cursor-af-3", "af:divider=50", 6, 3));
}

/// A cursor that takes one chunk and is dropped, as a cancelled OpenMP
/// loop's is: the other two finish the loop, and the instance is recorded
/// once whichever of the three leaves last (the dropped cursor loses the
/// summary when it is last, but still records). Every reference to the
/// instance lives in a cursor, so the last cursor to go frees it.
#[test]
fn loom_cursor_early_leaver_by_drop() {
    loom::model(|| {
        const ID: &str = "loom-cursor-early";
        const N: u64 = 3;
        let (work, chunks) = instance(ID, "dynamic,1", N, 3);
        let handles: Vec<_> = (0..3)
            .map(|me| {
                let work = Arc::clone(&work);
                thread::spawn(move || {
                    let early = me == 2;
                    let limit = if early { 1 } else { usize::MAX };
                    pull(work, me, ID, chunks, N, limit, early)
                })
            })
            .collect();
        drop(work);
        let recorders: Vec<bool> = handles
            .into_iter()
            .map(|h| h.join().expect("participant"))
            .collect();
        assert!(recorders.iter().filter(|&&r| r).count() <= 1);
        assert!(chunks.of(2).len() <= 1, "the early cursor pulled one chunk");
        check_cover(chunks, N);
        check_record(ID, chunks, N);
    });
}

/// A cursor that joins after the others have pulled everything and left:
/// it gets no chunk, and being the last to leave it records the instance
/// with every participant's chunks; its reference is the instance's last.
#[test]
fn loom_cursor_joins_after_the_others_left() {
    loom::model(|| {
        const ID: &str = "loom-cursor-late";
        const N: u64 = 3;
        let (work, chunks) = instance(ID, "dynamic,1", N, 3);
        let early: Vec<_> = (0..2)
            .map(|me| {
                let work = Arc::clone(&work);
                thread::spawn(move || pull(work, me, ID, chunks, N, usize::MAX, false))
            })
            .collect();
        let recorders: Vec<bool> = early
            .into_iter()
            .map(|h| h.join().expect("participant"))
            .collect();
        assert!(
            recorders.iter().all(|&r| !r),
            "a participant is still to come"
        );
        assert!(
            pull(work, 2, ID, chunks, N, usize::MAX, false),
            "it leaves last"
        );
        assert!(chunks.of(2).is_empty(), "nothing was left for it");
        check_cover(chunks, N);
    });
}

/// The OpenMP interposer's `*_next` over a cursor: chunks from
/// `Cursor::next_final_last`, which hands out a chunk that ends at the
/// loop's end last, so that `lastprivate` copies out on the thread that ran
/// the final iteration. Returns whether this participant got the summary.
fn pull_holding_last(
    work: Arc<Workshare<'static>>,
    me: usize,
    id: &'static str,
    chunks: &Chunks,
    n: u64,
) -> bool {
    let mut cursor = Some(Workshare::join(work, me).expect("a valid participant"));
    while let Some(chunk) = cursor.as_mut().and_then(Cursor::next_final_last) {
        chunks.push(me, chunk);
    }
    let summary = cursor.take().expect("left once, here").leave();
    if let Some(summary) = &summary {
        check_summary(id, summary, chunks, n);
    }
    summary.is_some()
}

/// `static-steal` under the interposer's hold-back: each chunk once, and
/// the one ending at the loop's end handed out once, as the last chunk of
/// the participant that handed it out, however the others stole.
fn holding_last(id: &'static str, n: u64, threads: usize) {
    let (work, chunks) = instance(id, "static-steal", n, threads);
    let others: Vec<_> = (1..threads)
        .map(|me| {
            let work = Arc::clone(&work);
            thread::spawn(move || pull_holding_last(work, me, id, chunks, n))
        })
        .collect();
    let mut recorders = vec![pull_holding_last(Arc::clone(&work), 0, id, chunks, n)];
    recorders.extend(others.into_iter().map(|h| h.join().expect("participant")));
    check_cover(chunks, n);
    let all = chunks.all();
    let finals: Vec<usize> = (0..threads)
        .filter(|&me| all[me].iter().any(|&(_, to)| to == n))
        .collect();
    assert_eq!(
        finals.len(),
        1,
        "the final chunk is handed out once: {all:?}"
    );
    assert_eq!(
        all[finals[0]].last().map(|&(_, to)| to),
        Some(n),
        "the final chunk is its participant's last: {all:?}"
    );
    assert_eq!(work.preparations(), 1, "exactly one participant prepares");
    assert_eq!(recorders.iter().filter(|&&r| r).count(), 1);
}

#[test]
fn loom_cursor_static_steal_holds_the_final_chunk_two_participants() {
    loom::model(|| holding_last("loom-cursor-steal-2", 4, 2));
}

#[test]
fn loom_cursor_static_steal_holds_the_final_chunk_three_participants() {
    loom::model(|| holding_last("loom-cursor-steal-3", 4, 3));
}

/// The OpenMP interposer's way with an unrecorded instance: each
/// participant joins into a box it keeps from loop to loop
/// (`Workshare::join_into`) and drops its cursor when it runs out; once
/// every cursor is gone the deciding thread renews the workshare for the
/// loop's next instance (`renew_same_loop`, through `Arc::get_mut`), which
/// keeps the first instance's preparation and plan and readies only the
/// counters and the slots again. Both instances hand out every iteration
/// exactly once, and only the first prepares, unless the second runs over
/// another iteration count (`second`), which it then prepares afresh.
fn renewed(spec: &'static str, n: u64, second: u64, threads: usize) {
    let schedule: Schedule = spec.parse().expect("the model's schedule parses");
    let mut work = Arc::new(Workshare::pulled(
        LoopId::named("loom-cursor-renewed"),
        &schedule,
        n,
        threads,
    ));
    for n in [n, second] {
        Arc::get_mut(&mut work)
            .expect("every cursor is gone")
            .renew_same_loop(&schedule, n);
        let chunks = Chunks::leak(threads);
        let drain = |work: Arc<Workshare<'static>>, me: usize| {
            let mut place = Box::new(None);
            Workshare::join_into(work, me, &mut place).expect("a valid participant");
            let Some(cursor) = place.as_mut() else {
                unreachable!("joined")
            };
            while let Some(chunk) = cursor.next_final_last() {
                chunks.push(me, chunk);
            }
            *place = None;
        };
        let others: Vec<_> = (1..threads)
            .map(|me| {
                let work = Arc::clone(&work);
                thread::spawn(move || drain(work, me))
            })
            .collect();
        drain(Arc::clone(&work), 0);
        for other in others {
            other.join().expect("participant");
        }
        check_cover(chunks, n);
    }
    assert_eq!(
        work.preparations(),
        if second == n { 1 } else { 2 },
        "the second instance runs from the first's preparation when it can"
    );
}

#[test]
fn loom_cursor_renewed_dynamic_two_participants() {
    loom::model(|| renewed("dynamic,1", 3, 3, 2));
}

/// Stealing empties the home ranges: the renewed instance readies them
/// again from the kept plan.
#[test]
fn loom_cursor_renewed_static_steal_two_participants() {
    loom::model(|| renewed("static-steal", 4, 4, 2));
}

#[test]
fn loom_cursor_renewed_over_another_count_prepares_again() {
    loom::model(|| renewed("dynamic,1", 3, 2, 2));
}
