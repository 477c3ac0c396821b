//! Loom models of one loop instance driven by threads Keel does not own
//! ([`Workshare`], `foreign.rs`), run on the shipped code: the instance's
//! once-only preparation, the claim counters and slots (`claim.rs`), the
//! last participant's countdown and record (`instance.rs`) and the loop
//! state's lock all take loom's types through the crate's `sync` facade.
//!
//! Every participant's body appends its chunks to a loom cell of its own;
//! the participant that gets the summary reads every cell at once, so loom
//! fails a model when the countdown does not order the other participants'
//! work before the record (a race on a cell), and the record's per-thread
//! chunk and iteration counts are compared with the cells (a stale
//! `Relaxed` slot read the countdown failed to order). After the join the
//! models check that the chunks cover the range exactly once, that one
//! participant prepared the instance and that one recorded it.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p keel-runtime
//! --lib --release loom`. Every model here explores at that bound: from
//! 166 executions (two participants of `dynamic,1` over 3 iterations) to
//! about 90,000 (three of `af` over 6); all of them take about 20 s of CPU
//! (release build).

use super::loom_support::{check_cover, check_record as check_cells, Chunks};
use super::{LoopId, LoopSummary, Schedule, Workshare};
use crate::sync::{thread, Arc};

/// A recorded instance of loop `id` under `spec` over `0..n` for `threads`
/// participants, with its chunk cells.
fn instance(
    id: &'static str,
    spec: &str,
    n: u64,
    threads: usize,
) -> (Arc<Workshare<'static>>, &'static Chunks) {
    let schedule: Schedule = spec.parse().expect("the model's schedule parses");
    let chunks = Chunks::leak(threads);
    let work = Workshare::new(LoopId::named(id), &schedule, n, threads, chunks.body()).recorded();
    (Arc::new(work), chunks)
}

/// What the participant that got the summary checks at once: the summary
/// and the loop's record agree with every participant's cell, and the
/// record counts `instances` instances.
fn check_record(id: &'static str, summary: &LoopSummary, chunks: &Chunks, n: u64, instances: u64) {
    assert_eq!(summary.iterations, n);
    assert_eq!(summary.threads, chunks.participants());
    let pulled: u64 = chunks.all().iter().map(|c| c.len() as u64).sum();
    assert_eq!(summary.chunks, pulled, "summary's chunks");
    check_cells(id, chunks, n, instances);
}

/// Participant `me`'s call: the summary when it was the last to leave, in
/// which case it checks the record at once.
fn participate(
    work: &Workshare<'_>,
    me: usize,
    id: &'static str,
    chunks: &Chunks,
    n: u64,
    instances: u64,
) -> bool {
    let summary = work.participate(me).expect("a valid participant");
    if let Some(summary) = &summary {
        check_record(id, summary, chunks, n, instances);
    }
    summary.is_some()
}

/// After the join: every iteration of `0..n` in exactly one chunk of one
/// participant, one preparation, one recorder among `recorders`.
fn check_instance(work: &Workshare<'_>, chunks: &Chunks, n: u64, recorders: &[bool]) {
    check_cover(chunks, n);
    assert_eq!(work.preparations(), 1, "exactly one participant prepares");
    assert_eq!(
        recorders.iter().filter(|&&r| r).count(),
        1,
        "exactly one participant records"
    );
}

/// `threads` participants arrive together: participant 0 on the model's
/// thread, the others on threads of their own.
fn together(id: &'static str, spec: &'static str, n: u64, threads: usize) {
    let (work, chunks) = instance(id, spec, n, threads);
    let others: Vec<_> = (1..threads)
        .map(|me| {
            let work = Arc::clone(&work);
            thread::spawn(move || participate(&work, me, id, chunks, n, 1))
        })
        .collect();
    let mut recorders = vec![participate(&work, 0, id, chunks, n, 1)];
    recorders.extend(others.into_iter().map(|h| h.join().expect("participant")));
    check_instance(&work, chunks, n, &recorders);
}

#[test]
fn loom_workshare_dynamic_two_participants() {
    loom::model(|| together("loom-dynamic-2", "dynamic,1", 3, 2));
}

#[test]
fn loom_workshare_dynamic_three_participants() {
    loom::model(|| together("loom-dynamic-3", "dynamic,1", 4, 3));
}

/// `af` hands out sub-chunks of its first chunk (100 iterations, no
/// measurement yet) `100/divider` at a time, each claimed by a CAS on the
/// shared counter; with `divider=50` that is 2 iterations a claim.
#[test]
fn loom_workshare_af_two_participants() {
    loom::model(|| together("loom-af-2", "af:divider=50", 4, 2));
}

#[test]
fn loom_workshare_af_three_participants() {
    loom::model(|| together("loom-af-3", "af:divider=50", 6, 3));
}

/// Two instances of one loop, each participant running its share of the
/// first and going straight on to the second: the second's preparation
/// may lock the loop's state while the first's recorder holds it.
#[test]
fn loom_workshare_repeated_instances_share_the_loop_state() {
    loom::model(|| {
        const ID: &str = "loom-repeated";
        const N: u64 = 2;
        let (first, first_chunks) = instance(ID, "dynamic,1", N, 2);
        let (second, second_chunks) = instance(ID, "dynamic,1", N, 2);
        let run = move |work: [&Workshare<'_>; 2], me: usize| -> [bool; 2] {
            // The first instance's recorder checks a record of 1 instance;
            // the second's, of 2: the second cannot finish before the first
            // one's last participant has left it.
            [
                participate(work[0], me, ID, first_chunks, N, 1),
                participate(work[1], me, ID, second_chunks, N, 2),
            ]
        };
        let other = {
            let (first, second) = (Arc::clone(&first), Arc::clone(&second));
            thread::spawn(move || run([&first, &second], 1))
        };
        let mine = run([&first, &second], 0);
        let theirs = other.join().expect("participant");
        check_instance(&first, first_chunks, N, &[mine[0], theirs[0]]);
        check_instance(&second, second_chunks, N, &[mine[1], theirs[1]]);
    });
}

/// A participant that arrives after the others have finished: the range
/// is claimed, so it runs nothing, and it is the last to leave, so it
/// records the instance with every participant's chunks.
#[test]
fn loom_workshare_late_participant_records() {
    loom::model(|| {
        const ID: &str = "loom-late";
        const N: u64 = 3;
        let (work, chunks) = instance(ID, "dynamic,1", N, 3);
        let early: Vec<_> = (0..2)
            .map(|me| {
                let work = Arc::clone(&work);
                thread::spawn(move || participate(&work, me, ID, chunks, N, 1))
            })
            .collect();
        let mut recorders: Vec<bool> = early
            .into_iter()
            .map(|h| h.join().expect("participant"))
            .collect();
        assert!(
            recorders.iter().all(|&r| !r),
            "a participant is still to come"
        );
        recorders.push(participate(&work, 2, ID, chunks, N, 1));
        assert!(recorders[2], "the late participant leaves last");
        assert!(chunks.of(2).is_empty(), "nothing was left for it");
        check_instance(&work, chunks, N, &recorders);
    });
}

/// `static-steal`: each participant takes its home range from the front
/// under its slot's lock, and one that runs dry steals from another's
/// back; the home ranges are installed by whoever prepares the instance,
/// before any participant claims.
#[test]
fn loom_workshare_static_steal_two_participants() {
    loom::model(|| together("loom-steal-2", "static-steal", 4, 2));
}

#[test]
fn loom_workshare_static_steal_three_participants() {
    loom::model(|| together("loom-steal-3", "static-steal", 4, 3));
}
