//! What a loop's memory keeps on threads: AWF's history is built from each
//! participant's iterations and busy time (start to finish), the same
//! quantities the simulator feeds it (`keel-sim`'s
//! `awf_history_is_step_weighted_work_and_busy_time`).

use keel::loops::{record, LoopId};
use keel::ThreadPool;

#[test]
fn awf_history_is_step_weighted_work_and_busy_time() {
    let pool = ThreadPool::builder().threads(2).build().unwrap();
    let mut expected = vec![0.0; 4];
    for step in 1..=3u32 {
        pool.parallel(0..200u32)
            .schedule("awf".parse().unwrap())
            .id("memory-awf")
            .for_each(|i| {
                std::hint::black_box(i);
            });
        let rec = record(LoopId::named("memory-awf")).expect("awf reads its record");
        assert_eq!(rec.instances, u64::from(step));
        let weight = f64::from(step);
        for (i, (&work, &busy)) in rec
            .last
            .thread_iterations
            .iter()
            .zip(&rec.last.busy)
            .enumerate()
        {
            expected[2 * i] += weight * work as f64;
            expected[2 * i + 1] += weight * busy;
        }
        assert_eq!(rec.history, expected, "after instance {step}");
        // Busy time, not the finish time from the fork.
        for ((&busy, &finish), slot) in rec.last.busy.iter().zip(&rec.last.finish).zip(0..) {
            assert!(
                busy <= finish,
                "participant {slot}: busy {busy} > finish {finish}"
            );
        }
    }
}
