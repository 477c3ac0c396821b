//! The SWF reader, writer and arrival stream: the sample log, every error
//! with its line and field, round trips and arbitrary text.

use super::*;
use proptest::prelude::*;

const SAMPLE: &str = "\
; Version: 2.2
; Computer: Test cluster
; Installation: nowhere
; MaxJobs: 5
; MaxRecords: 5
; Preemption: No
; UnixStartTime: 1000000000
; TimeZoneString: Europe/Rome
; MaxNodes: 4
; MaxProcs: 8
; Note: a hand-written sample
;       continued on a line with no key
;
1   0      10    3600  4  3500.5 1024 4  7200 2048 1  1  1  3  1  1 -1 -1
2   5.5    0     60    8  -1     -1   8  -1   -1   0  2  1  -1 2  -1 -1 -1

3   30     -1    -1    -1 -1     -1   2  600  -1   5  1  1  -1 1  -1 -1 -1
; a comment between jobs is not header
4   20     100   0     2  0      -1   2  60   -1   1  3  2  4  1  1  1  12.25
5   40     0     100   16 -1     -1   16 100  -1   1  1  1  -1 1  -1 -1 -1
";

#[test]
fn swf_sample_parses_header_and_jobs() {
    let log = parse_swf(SAMPLE).unwrap();
    assert_eq!(log.version(), Some("2.2"));
    assert_eq!(log.max_procs().unwrap(), Some(8));
    assert_eq!(log.max_nodes().unwrap(), Some(4));
    assert_eq!(log.unix_start_time().unwrap(), Some(1_000_000_000));
    assert_eq!(log.header("computer").unwrap().value, "Test cluster");
    assert_eq!(log.header("Note").unwrap().line, 11);
    // The continuation line, the bare `;` and the comment between jobs
    // are not key/value pairs.
    assert_eq!(log.header.len(), 11);
    assert!(log.header.iter().all(HeaderField::is_standard));

    assert_eq!(log.jobs.len(), 5);
    let first = &log.jobs[0];
    assert_eq!(
        *first,
        SwfJob {
            line: 14,
            id: 1,
            submit_time: 0.0,
            wait_time: Some(10.0),
            run_time: Some(3600.0),
            allocated_procs: Some(4),
            avg_cpu_time: Some(3500.5),
            used_memory_kb: Some(1024.0),
            requested_procs: Some(4),
            requested_time: Some(7200.0),
            requested_memory_kb: Some(2048.0),
            status: Some(SwfStatus::Completed),
            user_id: Some(1),
            group_id: Some(1),
            executable: Some(3),
            queue: Some(1),
            partition: Some(1),
            preceding_job: None,
            think_time: None,
        }
    );
    assert_eq!(log.jobs[1].line, 15);
    assert_eq!(log.jobs[1].submit_time, 5.5);
    assert_eq!(log.jobs[1].status, Some(SwfStatus::Failed));
    assert_eq!(log.jobs[2].line, 17);
    assert_eq!(log.jobs[2].status, Some(SwfStatus::Cancelled));
    assert_eq!(log.jobs[2].allocated_procs, None);
    assert_eq!(log.jobs[3].line, 19);
    assert_eq!(log.jobs[3].preceding_job, Some(1));
    assert_eq!(log.jobs[3].think_time, Some(12.25));
}

#[test]
fn swf_arrivals_sort_fall_back_and_drop() {
    let log = parse_swf(SAMPLE).unwrap();
    let stream = arrivals(&log.jobs, 8, WideJobs::Drop).unwrap();
    // Job 3 has no run time (it is requested-width only); job 5 needs 16.
    let ids: Vec<u64> = stream.jobs.iter().map(|a| a.id).collect();
    assert_eq!(ids, [1, 2, 4]);
    assert_eq!(
        stream.dropped,
        [
            Dropped {
                id: 3,
                line: 17,
                reason: DropReason::UnknownRunTime
            },
            Dropped {
                id: 5,
                line: 20,
                reason: DropReason::TooWide { procs: 16 }
            },
        ]
    );
    assert_eq!(stream.jobs[1].procs, 8);
    assert_eq!(stream.jobs[2].run_time, 0.0);

    // Unsorted input comes out sorted; requested width stands in for an
    // unknown allocation; width 0 and unknown width are dropped.
    let text = "\
7 50 -1 10 -1 -1 -1 3 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
6 20 -1 10 2 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
8 20 -1 10 0 -1 -1 0 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
9 10 -1 10 -1 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
";
    let stream = arrivals(&parse_swf(text).unwrap().jobs, 4, WideJobs::Reject).unwrap();
    let got: Vec<(u64, usize)> = stream.jobs.iter().map(|a| (a.id, a.procs)).collect();
    assert_eq!(got, [(6, 2), (7, 3)]);
    let reasons: Vec<DropReason> = stream.dropped.iter().map(|d| d.reason).collect();
    assert_eq!(reasons, [DropReason::ZeroWidth, DropReason::UnknownWidth]);
}

#[test]
fn swf_arrivals_reject_wide_jobs_and_empty_clusters() {
    let log = parse_swf(SAMPLE).unwrap();
    let err = arrivals(&log.jobs, 8, WideJobs::Reject).unwrap_err();
    assert!(
        matches!(
            err,
            SwfError::TooWide {
                line: 20,
                id: 5,
                procs: 16,
                pes: 8
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "line 20: job 5 needs 16 processors but the cluster has 8 PEs"
    );
    assert!(matches!(
        arrivals(&log.jobs, 0, WideJobs::Drop),
        Err(SwfError::NoPes)
    ));
    assert_eq!(
        arrivals(&log.jobs, 16, WideJobs::Reject)
            .unwrap()
            .jobs
            .len(),
        4
    );
}

/// A valid job line with field `index` (0-based) replaced.
fn with_field(index: usize, value: &str) -> String {
    let mut fields: Vec<&str> = "1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1"
        .split(' ')
        .collect();
    fields[index] = value;
    format!("; Version: 2.2\n\n{}\n", fields.join(" "))
}

fn error_of(text: &str) -> SwfError {
    parse_swf(text).unwrap_err()
}

#[test]
fn swf_wrong_field_count_names_the_line() {
    let err = error_of("; header\n1 0 10 3600 4\n");
    assert!(
        matches!(err, SwfError::FieldCount { line: 2, found: 5 }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "line 2: a job line has 18 whitespace-separated fields, this one has 5"
    );
    let err = error_of(&format!("{}\n", with_field(17, "-1 7").trim_end()));
    assert!(
        matches!(err, SwfError::FieldCount { line: 3, found: 19 }),
        "{err:?}"
    );
}

#[test]
fn swf_non_numbers_name_line_and_field() {
    for (index, value, expected) in [
        (1, "soon", "a finite number"),
        (3, "NaN", "a finite number"),
        (3, "inf", "a finite number"),
        (4, "four", "an integer"),
        (4, "4.5", "an integer"),
        (0, "1e300", "an integer"),
        (11, "alice", "an integer"),
    ] {
        let err = error_of(&with_field(index, value));
        match &err {
            SwfError::NotANumber {
                line,
                field,
                name,
                value: v,
                expected: e,
            } => {
                assert_eq!(*line, 3);
                assert_eq!(*field, index + 1);
                assert_eq!(*name, FIELD_NAMES[index]);
                assert_eq!(v, value);
                assert_eq!(*e, expected);
            }
            other => panic!("{value} in field {}: {other:?}", index + 1),
        }
    }
    let err = error_of(&with_field(4, "four"));
    assert_eq!(
        err.to_string(),
        "line 3: field 5 (allocated processors) = `four` is not an integer"
    );
}

#[test]
fn swf_negative_values_other_than_minus_one_are_errors() {
    for index in 0..FIELDS {
        let err = error_of(&with_field(index, "-2"));
        assert!(
            matches!(err, SwfError::Negative { line: 3, field, .. } if field == index + 1),
            "field {}: {err:?}",
            index + 1
        );
    }
    let err = error_of(&with_field(3, "-0.5"));
    assert_eq!(
        err.to_string(),
        "line 3: field 4 (run time) = `-0.5` is negative; the only negative value allowed is -1 (unknown)"
    );
    // -1 in any spelling is unknown; `4.0` is an integer.
    let log = parse_swf(&with_field(3, "-1.0")).unwrap();
    assert_eq!(log.jobs[0].run_time, None);
    let log = parse_swf(&with_field(4, "4.0")).unwrap();
    assert_eq!(log.jobs[0].allocated_procs, Some(4));
    let log = parse_swf(&with_field(4, "-1.0")).unwrap();
    assert_eq!(log.jobs[0].allocated_procs, None);
}

#[test]
fn swf_required_fields_cannot_be_unknown() {
    for index in [0, 1] {
        let err = error_of(&with_field(index, "-1"));
        assert!(
            matches!(err, SwfError::Unknown { line: 3, field, .. } if field == index + 1),
            "{err:?}"
        );
    }
    assert_eq!(
        error_of(&with_field(1, "-1")).to_string(),
        "line 3: field 2 (submit time) is -1 (unknown), but every job needs one"
    );
}

#[test]
fn swf_status_codes() {
    for (code, status) in [
        ("0", Some(SwfStatus::Failed)),
        ("1", Some(SwfStatus::Completed)),
        ("3", Some(SwfStatus::Partial(3))),
        ("5", Some(SwfStatus::Cancelled)),
        ("-1", None),
    ] {
        assert_eq!(
            parse_swf(&with_field(10, code)).unwrap().jobs[0].status,
            status
        );
    }
    let err = error_of(&with_field(10, "6"));
    assert!(
        matches!(err, SwfError::BadStatus { line: 3, value: 6 }),
        "{err:?}"
    );
}

#[test]
fn swf_duplicate_job_numbers_name_both_lines() {
    let line = "1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1";
    let other = "2 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1";
    let err = error_of(&format!("{line}\n{other}\n; note\n{line}\n"));
    assert!(
        matches!(
            err,
            SwfError::DuplicateJob {
                line: 4,
                id: 1,
                first_line: 1
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "line 4: job number 1 already appears on line 1"
    );
}

#[test]
fn swf_bad_header_values_are_reported_on_request() {
    let log = parse_swf("; MaxProcs: lots\n; MaxNodes: 12\n").unwrap();
    assert!(log.jobs.is_empty());
    let err = log.max_procs().unwrap_err();
    assert!(
        matches!(err, SwfError::BadHeader { line: 1, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "line 1: header `MaxProcs: lots` is invalid: expected a non-negative integer"
    );
    assert_eq!(log.max_nodes().unwrap(), Some(12));
    assert_eq!(log.unix_start_time().unwrap(), None);
}

#[test]
fn swf_files_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.swf");
    std::fs::write(&path, b"; Computer: caf\xe9\n1 2 3\n").unwrap();
    let err = read_swf(&path).unwrap_err();
    assert!(
        matches!(&err, SwfError::InFile { source, .. }
            if matches!(**source, SwfError::FieldCount { line: 2, found: 3 })),
        "{err:?}"
    );
    assert!(
        err.to_string().ends_with(
            "log.swf`: line 2: a job line has 18 whitespace-separated fields, this one has 3"
        ),
        "{err}"
    );
    std::fs::write(&path, SAMPLE).unwrap();
    assert_eq!(read_swf(&path).unwrap(), parse_swf(SAMPLE).unwrap());
    let err = read_swf(&dir.path().join("missing.swf")).unwrap_err();
    assert!(matches!(err, SwfError::Io { .. }), "{err:?}");
}

fn real() -> impl Strategy<Value = Option<f64>> {
    prop::option::of(prop_oneof![
        0.0f64..1e9,
        (0u32..100_000).prop_map(f64::from)
    ])
}

fn integer() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(prop_oneof![0u64..10, any::<u32>().prop_map(u64::from)])
}

fn status() -> impl Strategy<Value = Option<SwfStatus>> {
    prop::option::of((0u64..=5).prop_map(|c| SwfStatus::from_code(c).unwrap()))
}

prop_compose! {
    fn job()(
        submit_time in 0.0f64..1e9,
        times in prop::array::uniform6(real()),
        counts in prop::array::uniform9(integer()),
        status in status(),
        memory in real(),
    ) -> SwfJob {
        SwfJob {
            line: 0,
            id: 0,
            submit_time,
            wait_time: times[0],
            run_time: times[1],
            allocated_procs: counts[0],
            avg_cpu_time: times[2],
            used_memory_kb: times[3],
            requested_procs: counts[1],
            requested_time: times[4],
            requested_memory_kb: memory,
            status,
            user_id: counts[2],
            group_id: counts[3],
            executable: counts[4],
            queue: counts[5],
            partition: counts[6],
            preceding_job: counts[7],
            think_time: times[5],
        }
    }
}

proptest! {
    #[test]
    fn swf_write_then_parse_round_trips(
        mut jobs in prop::collection::vec(job(), 0..20),
        ids in prop::collection::hash_set(1u64..1_000_000, 20),
        header in prop::collection::vec(
            (prop::sample::select(STANDARD_HEADER_KEYS), "[A-Za-z0-9./-]{1,20}"),
            0..6,
        ),
    ) {
        let header: Vec<HeaderField> = header
            .into_iter()
            .enumerate()
            .map(|(i, (key, value))| HeaderField { line: i + 1, key: key.to_string(), value })
            .collect();
        for ((i, job), id) in jobs.iter_mut().enumerate().zip(ids) {
            job.id = id;
            job.line = header.len() + i + 1;
        }
        let log = SwfLog { header, jobs };
        let text = log.to_string();
        prop_assert_eq!(parse_swf(&text).unwrap(), log);
    }

    #[test]
    fn swf_arbitrary_text_gives_a_result_not_a_panic(
        text in prop::collection::vec(
            prop::sample::select(b"0123456789 -.;:\neEinfNaMxPrcos\t".to_vec()),
            0..300,
        ),
    ) {
        let text = String::from_utf8(text).unwrap();
        if let Ok(log) = parse_swf(&text) {
            let _ = log.max_procs();
            let _ = arrivals(&log.jobs, 4, WideJobs::Reject);
        }
    }
}

#[test]
fn swf_sizes_past_the_limits_are_typed_errors() {
    use super::parse::{parse_at_most, read_at_most};
    let err = parse_at_most(SAMPLE, 2).unwrap_err();
    assert!(
        matches!(err, SwfError::TooManyJobs { line: 17, limit: 2 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("MAX_SWF_JOBS = 2"), "{err}");
    assert_eq!(parse_at_most(SAMPLE, 5).unwrap().jobs.len(), 5);
    // A device has no size to check up front: the read stops past the limit.
    let err = read_at_most(std::path::Path::new("/dev/zero"), 4096).unwrap_err();
    assert!(
        matches!(err, SwfError::TooLarge { limit: 4096, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("MAX_SWF_BYTES"), "{err}");
}
