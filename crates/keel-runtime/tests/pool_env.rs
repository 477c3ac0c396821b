//! A hostile `KEEL_NUM_THREADS` is a typed error naming the limit, never an
//! attempt to start that many threads; one that does not parse is the
//! default for `build` and a typed error for `try_env`. One test in this
//! file, so setting the variable races with nothing else in the process.

use keel::pool::{PoolError, MAX_THREADS};

#[test]
fn a_huge_thread_count_from_the_environment_is_refused_naming_the_limit() {
    for value in ["1000000000000", "32769", &usize::MAX.to_string()] {
        std::env::set_var("KEEL_NUM_THREADS", value);
        let err = keel::ThreadPool::builder().build().unwrap_err();
        assert!(
            matches!(err, PoolError::TooManyThreads { threads } if threads > MAX_THREADS),
            "{value}: {err:?}"
        );
        assert!(err.to_string().contains("MAX_THREADS"), "{err}");
    }
    std::env::set_var("KEEL_NUM_THREADS", "2");
    assert_eq!(keel::ThreadPool::builder().build().unwrap().threads(), 2);
    assert_eq!(
        keel::ThreadPool::builder()
            .try_env()
            .unwrap()
            .build()
            .unwrap()
            .threads(),
        2
    );
    std::env::set_var("KEEL_NUM_THREADS", "abc");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        keel::ThreadPool::builder().build().unwrap().threads(),
        cores
    );
    assert_eq!(
        keel::ThreadPool::builder().try_env().unwrap_err(),
        PoolError::BadEnv {
            var: "KEEL_NUM_THREADS",
            value: "abc".to_string(),
            expected: "a positive integer",
        }
    );
    // A choice made in code is not overridden by the environment.
    assert_eq!(
        keel::ThreadPool::builder()
            .threads(3)
            .try_env()
            .unwrap()
            .build()
            .unwrap()
            .threads(),
        3
    );
    std::env::remove_var("KEEL_NUM_THREADS");
}
