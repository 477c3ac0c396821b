//! The driver itself: each way a case can fail is caught and reported with
//! its input, and a supervised run goes on after a case that killed its
//! worker. Uses the `self-test` target, which fails on purpose.

use std::path::Path;

use keel_fuzz::driver::{check_in_child, supervise, Kind, Plan};
use keel_fuzz::targets::SELF_TEST;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_keel-fuzz"))
}

#[track_caller]
fn fails_with(input: &str, expected: &str) {
    let e = check_in_child(exe(), "self-test", input.as_bytes())
        .expect_err("the self-test target fails on this input");
    assert!(
        e.contains(expected),
        "`{input}`: expected `{expected}` in:\n{e}"
    );
}

#[test]
fn one_input_reports_each_kind_of_failure() {
    check_in_child(exe(), "self-test", b"ok").expect("`ok` passes");
    fails_with("panic", "self-test panic");
    fails_with("check", "self-test check");
    fails_with("overflow", "overflowed its stack");
    fails_with("alloc", "memory allocation");
    fails_with("hang", "no answer after 2s");
}

#[test]
fn a_supervised_run_goes_on_after_crashes_and_hangs() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("keel-fuzz-driver-test");
    let plan = Plan {
        seed: 11,
        first: 0,
        cases: Some(24),
        time: None,
        out,
    };
    let summary = supervise(exe(), &SELF_TEST, &plan).expect("the worker runs");
    assert_eq!(summary.cases, 24, "every case ran despite the crashes");
    for kind in [Kind::Panic, Kind::Check, Kind::Crash] {
        assert!(
            summary.failures.iter().any(|f| f.kind == kind),
            "no {kind:?} among {:#?}",
            summary.failures
        );
    }
    for f in &summary.failures {
        let expected: &[u8] = match f.kind {
            Kind::Panic => b"panic",
            Kind::Check => b"check",
            Kind::Hang => b"hang",
            Kind::Crash => {
                assert!(f.input == b"overflow" || f.input == b"alloc", "{f}");
                continue;
            }
        };
        assert_eq!(f.input, expected, "{f}");
        assert_eq!(std::fs::read(&f.file).expect("input saved"), f.input);
    }
}
