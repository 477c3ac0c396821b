//! `KEEL_LOOP_RECORD=all` and `keel::loops::record_all`: every instance of
//! every loop recorded, and the code's switch winning over the
//! environment. One test in this file, so setting the variable and the
//! process-wide switch races with nothing else in the process.

use keel::loops::{record, record_all, LoopId};
use keel::ThreadPool;

fn run(pool: &ThreadPool, id: &str) -> keel::loops::LoopSummary {
    pool.parallel(0..40u32)
        .schedule("dynamic,4".parse().unwrap())
        .id(id.to_string())
        .for_each(|_| {})
}

#[test]
fn the_environment_and_the_switch_record_every_loop() {
    std::env::set_var("KEEL_LOOP_RECORD", "all");
    let pool = ThreadPool::builder().threads(2).build().unwrap();
    let summary = run(&pool, "env-all");
    assert!(summary.lib_percent.is_some_and(f64::is_finite));
    let rec = record(LoopId::named("env-all")).unwrap();
    assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 40);
    assert_eq!(rec.last.busy.len(), 2);

    record_all(false);
    let summary = run(&pool, "switched-off");
    assert!(summary.lib_percent.is_none());
    assert_eq!(record(LoopId::named("switched-off")), None);
    // A loop recorded earlier keeps its record; its later unrecorded
    // instances leave it as it was.
    run(&pool, "env-all");
    assert_eq!(record(LoopId::named("env-all")).unwrap().instances, 1);

    record_all(true);
    run(&pool, "switched-off");
    assert_eq!(record(LoopId::named("switched-off")).unwrap().instances, 1);
}
