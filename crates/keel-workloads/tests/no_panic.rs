//! Trace reading never panics, whatever the bytes.

use keel_workloads::trace::{parse_trace, TaskFormat};
use proptest::prelude::*;

/// Bytes that look like CSV or JSON often enough to get past the first check.
fn tracey() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(
            b"load,migratable,current_pu,background,speed,available\n\r\"#{}[]:0123456789.-e truefalsenulltask_loadsnum_pus\xff"
                .to_vec(),
        ),
        0..200,
    )
}

proptest! {
    #[test]
    fn arbitrary_bytes_give_a_result_not_a_panic(
        tasks in prop_oneof![tracey(), prop::collection::vec(any::<u8>(), 0..200)],
        pu_file in prop::option::of(tracey()),
        pus in prop::option::of(0usize..5),
    ) {
        for format in [TaskFormat::Csv, TaskFormat::Json] {
            let _ = parse_trace(format, "t", &tasks, pu_file.as_deref().map(|b| ("p", b)), pus);
        }
    }

    #[test]
    fn valid_csv_round_trips(loads in prop::collection::vec(0.0f64..1e6, 1..50), pus in 1usize..8) {
        let text: String = std::iter::once("load".to_string())
            .chain(loads.iter().map(|l| format!("{l:?}")))
            .collect::<Vec<_>>()
            .join("\n");
        let problem = parse_trace(TaskFormat::Csv, "t.csv", text.as_bytes(), None, Some(pus)).unwrap();
        prop_assert_eq!(problem.npus(), pus);
        prop_assert_eq!(problem.task_loads, loads);
    }
}
