//! Trace reading: every accepted form, and every malformed one giving a
//! typed error that says what and where.

use std::io::Write;
use std::path::PathBuf;

use keel_policy::{Model, PolicyError, NO_PU};
use keel_workloads::trace::{parse_trace, TaskFormat};
use keel_workloads::{read_trace, TraceError};

fn json(text: &str) -> Result<keel_workloads::MappingProblem, TraceError> {
    parse_trace(TaskFormat::Json, "t.json", text.as_bytes(), None, None)
}

fn csv(text: &str, pus: Option<usize>) -> Result<keel_workloads::MappingProblem, TraceError> {
    parse_trace(TaskFormat::Csv, "t.csv", text.as_bytes(), None, pus)
}

fn csv_with_pus(
    tasks: &str,
    pu_file: &str,
    pus: Option<usize>,
) -> Result<keel_workloads::MappingProblem, TraceError> {
    parse_trace(
        TaskFormat::Csv,
        "t.csv",
        tasks.as_bytes(),
        Some(("p.csv", pu_file.as_bytes())),
        pus,
    )
}

fn message(result: Result<keel_workloads::MappingProblem, TraceError>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn full_json_trace() {
    let p = json(
        r#"{"task_loads": [3, 1.5, 2], "pu_loads": [0, 0.5], "pu_speeds": [1, 2],
            "pu_available": [true, true], "migratable": [true, false, true],
            "current_mapping": [0, 1, null], "num_pus": 2}"#,
    )
    .unwrap();
    assert_eq!(p.task_loads, vec![3.0, 1.5, 2.0]);
    assert_eq!(p.pu_loads, vec![0.0, 0.5]);
    assert_eq!(p.pu_speeds, Some(vec![1.0, 2.0]));
    assert_eq!(p.pu_available, Some(vec![true, true]));
    assert_eq!(p.migratable, Some(vec![true, false, true]));
    assert_eq!(p.current, Some(vec![0, 1, NO_PU]));
    assert_eq!(p.model, Model::Dynamic);
}

#[test]
fn minimal_json_trace_takes_the_pu_count_from_num_pus_or_the_caller() {
    let p = json(r#"{"task_loads": [1, 2], "num_pus": 3}"#).unwrap();
    assert_eq!(p.pu_loads, vec![0.0; 3]);
    assert_eq!(p.current, None);
    let p = parse_trace(
        TaskFormat::Json,
        "t.json",
        br#"{"task_loads": [1]}"#,
        None,
        Some(2),
    )
    .unwrap();
    assert_eq!(p.npus(), 2);
}

#[test]
fn csv_task_table_with_every_column() {
    let p = csv(
        "# measured on step 40\nload, migratable, current_pu\n3,true,0\n1.5, 0 ,1\n2,TRUE,\n",
        Some(2),
    )
    .unwrap();
    assert_eq!(p.task_loads, vec![3.0, 1.5, 2.0]);
    assert_eq!(p.migratable, Some(vec![true, false, true]));
    assert_eq!(p.current, Some(vec![0, 1, NO_PU]));
    assert_eq!(p.model, Model::Dynamic);
}

#[test]
fn csv_columns_may_come_in_any_order_and_case() {
    let p = csv("Current_PU,LOAD\n1,4\n0,5\n", Some(2)).unwrap();
    assert_eq!(p.task_loads, vec![4.0, 5.0]);
    assert_eq!(p.current, Some(vec![1, 0]));
}

#[test]
fn csv_pu_file_gives_the_pu_count_and_data() {
    let p = csv_with_pus(
        "load\n1\n2\n",
        "background,speed,available\n0.5,1,true\n0,2,false\n0,1,1\n",
        None,
    )
    .unwrap();
    assert_eq!(p.npus(), 3);
    assert_eq!(p.pu_loads, vec![0.5, 0.0, 0.0]);
    assert_eq!(p.pu_speeds, Some(vec![1.0, 2.0, 1.0]));
    assert_eq!(p.pu_available, Some(vec![true, false, true]));
    // A PU file with one column leaves the others at their defaults.
    let p = csv_with_pus("load\n1\n", "speed\n1\n3\n", Some(2)).unwrap();
    assert_eq!(p.pu_loads, vec![0.0, 0.0]);
    assert_eq!(p.pu_available, None);
}

#[test]
fn read_trace_reads_files_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    };
    let tasks = write("loads.CSV", "load\n1\n2\n3\n");
    let pus = write("pus.csv", "speed\n1\n1\n");
    let p = read_trace(&tasks, Some(&pus), None).unwrap();
    assert_eq!(p.npus(), 2);
    let tasks = write("loads.json", r#"{"task_loads":[1,2],"num_pus":1}"#);
    assert_eq!(read_trace(&tasks, None, None).unwrap().ntasks(), 2);

    let txt = write("loads.txt", "load\n1\n");
    let err = read_trace(&txt, None, Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::UnknownFormat { .. }), "{err}");
    let err = read_trace(&tasks, Some(&txt), None).unwrap_err();
    assert!(err.to_string().contains(".csv PU file"), "{err}");
    let missing = dir.path().join("missing.csv");
    let err = read_trace(&missing, None, Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }), "{err}");
    assert!(err.to_string().contains("missing.csv"), "{err}");
}

#[test]
fn bad_numbers_name_the_line_and_column() {
    let err = message(csv("load,migratable\n1,true\nabc,true\n", Some(1)));
    assert_eq!(
        err,
        "t.csv:3, column 1: `load` = `abc` is invalid: expected a finite number >= 0"
    );
    for bad in ["NaN", "-1", "inf", "1e999", "0x10"] {
        let err = csv(&format!("load\n1\n{bad}\n"), Some(1)).unwrap_err();
        assert!(matches!(err, TraceError::BadValue { .. }), "{bad}: {err}");
        assert!(err.to_string().starts_with("t.csv:3, column 1"), "{err}");
    }
    // A blank line is skipped, but a blank cell is not a load.
    let err = message(csv("load,migratable\n1,true\n\n,true\n", Some(1)));
    assert!(err.starts_with("t.csv:4, column 1: `load` = ``"), "{err}");
    let err = message(csv("load,migratable\n1,yes\n", Some(1)));
    assert!(
        err.contains("t.csv:2, column 2") && err.contains("true, false, 1 or 0"),
        "{err}"
    );
    let err = message(csv("load,current_pu\n1,-1\n", Some(1)));
    assert!(err.contains("`current_pu` = `-1`"), "{err}");
    let err = message(csv_with_pus("load\n1\n", "speed\n1\n0\n", None));
    assert!(err.starts_with("p.csv:3, column 1: `speed` = `0`"), "{err}");
    let err = message(csv_with_pus("load\n1\n", "background\n-2\n", None));
    assert!(err.starts_with("p.csv:2"), "{err}");
}

#[test]
fn bad_json_values_name_the_field() {
    let err = message(json(r#"{"task_loads": [1, -2], "num_pus": 1}"#));
    assert_eq!(
        err,
        "t.json: `task_loads[1]` = `-2` is invalid: expected a finite number >= 0"
    );
    let err = message(json(r#"{"task_loads": [1], "pu_speeds": [0]}"#));
    assert!(err.contains("`pu_speeds[0]` = `0`"), "{err}");
    let err = message(json(r#"{"task_loads": [1], "pu_loads": [-1]}"#));
    assert!(err.contains("pu_loads[0]"), "{err}");
}

#[test]
fn malformed_json_reports_line_and_column() {
    for (text, needle) in [
        ("", "EOF"),
        ("{", "line 1"),
        (r#"{"task_loads": [1, "x"]}"#, "column"),
        (r#"{"task_loads": [1, NaN]}"#, "column"),
        (r#"{"task_loads": [1e999]}"#, "out of range"),
        (r#"{"task_loads": [1], "current_mapping": [-1]}"#, "-1"),
        (
            r#"{"task_loads": [1], "pu_loadz": [1]}"#,
            "unknown field `pu_loadz`",
        ),
        (r#"{"num_pus": 2}"#, "missing field `task_loads`"),
        ("[1, 2]", "invalid type"),
        ("{\n\"task_loads\": [1],\n\"num_pus\": -1}", "line 3"),
    ] {
        let err = json(text).unwrap_err();
        assert!(matches!(err, TraceError::Syntax { .. }), "{text}: {err}");
        let err = err.to_string();
        assert!(err.starts_with("t.json: "), "{err}");
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn malformed_csv_is_a_typed_error() {
    let err = csv("", Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::Empty { .. }), "{err}");
    assert!(
        err.to_string().contains("load, migratable, current_pu"),
        "{err}"
    );
    let err = csv("# only a comment\n", Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::Empty { .. }), "{err}");

    let err = csv("migratable\ntrue\n", Some(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`t.csv`: missing column `load` (the header has: migratable)"
    );
    let err = csv("load,weight\n1,2\n", Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::UnknownColumn { .. }), "{err}");
    assert!(err.to_string().contains("`weight`"), "{err}");
    let err = csv("load,LOAD\n1,2\n", Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::DuplicateColumn { .. }), "{err}");

    let err = csv("load,migratable\n1,true\n2\n", Some(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.csv:3: this row has 1 fields but the header has 2"
    );
    let err = csv("load\n\u{ff}\n", Some(1));
    assert!(err.is_err());
    let err = parse_trace(TaskFormat::Csv, "t.csv", b"load\n\xff\xfe\n", None, Some(1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("t.csv:2") && err.contains("UTF-8"), "{err}");
}

#[test]
fn line_numbers_count_blank_lines_comments_and_crlf() {
    for (text, line) in [
        ("load\n1\n\n\nx\n", 5),
        ("# c\n\nload\n1\n# c\n# d\nx\n", 7),
        ("load\r\n1\r\n\r\nx\r\n", 4),
        ("load\n\"1\n\"\nx\n", 4),
    ] {
        let err = message(csv(text, Some(1)));
        assert!(
            err.starts_with(&format!("t.csv:{line}, column 1")),
            "{text:?}: {err}"
        );
    }
    let err = message(csv("load,migratable\n\n1,true\n\n2\n", Some(1)));
    assert!(err.starts_with("t.csv:5: this row has 1 fields"), "{err}");
}

#[test]
fn empty_traces_are_rejected() {
    let err = csv("load\n", Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::NoTasks { .. }), "{err}");
    let err = json(r#"{"task_loads": [], "num_pus": 1}"#).unwrap_err();
    assert!(matches!(err, TraceError::NoTasks { .. }), "{err}");
}

#[test]
fn per_task_arrays_must_match_the_task_count() {
    let err = json(r#"{"task_loads": [1, 2], "migratable": [true], "num_pus": 1}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.json: `migratable` has 1 entries but there are 2 tasks"
    );
    let err = json(r#"{"task_loads": [1], "current_mapping": [0, 0], "num_pus": 1}"#).unwrap_err();
    assert!(matches!(err, TraceError::LengthMismatch { .. }), "{err}");
}

#[test]
fn the_pu_count_must_be_known_and_agreed() {
    let err = csv("load\n1\n", None).unwrap_err();
    assert!(matches!(err, TraceError::UnknownPuCount { .. }), "{err}");
    let err = json(r#"{"task_loads": [1]}"#).unwrap_err();
    assert!(err.to_string().contains("num_pus"), "{err}");

    let err = json(r#"{"task_loads": [1], "num_pus": 3, "pu_loads": [0, 0]}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the inputs disagree on the number of PUs: num_pus in t.json says 3, pu_loads in t.json says 2"
    );
    let err =
        json(r#"{"task_loads": [1], "pu_speeds": [1], "pu_available": [true, true]}"#).unwrap_err();
    assert!(matches!(err, TraceError::PuCountConflict { .. }), "{err}");
    let err = csv_with_pus("load\n1\n", "speed\n1\n1\n", Some(3)).unwrap_err();
    assert!(
        err.to_string().contains("the rows of p.csv says 2"),
        "{err}"
    );
    assert!(err.to_string().contains("(--pus) says 3"), "{err}");

    let err = parse_trace(
        TaskFormat::Json,
        "t.json",
        br#"{"task_loads": [1], "pu_speeds": [1, 1]}"#,
        Some(("p.csv", b"speed\n1\n1\n")),
        None,
    )
    .unwrap_err();
    assert!(matches!(err, TraceError::DuplicateField { .. }), "{err}");
    assert!(err.to_string().contains("pu_speeds in t.json") && err.to_string().contains("p.csv"));
}

#[test]
fn zero_pus_and_all_unavailable_are_rejected() {
    let err = csv("load\n1\n", Some(0)).unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::Invalid {
                source: PolicyError::NoPus,
                ..
            }
        ),
        "{err}"
    );
    let err = csv_with_pus("load\n1\n", "available\nfalse\n0\n", None).unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::Invalid {
                source: PolicyError::NoAvailablePu(2),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("all 2 PUs are unavailable"),
        "{err}"
    );
}

#[test]
fn placement_errors_point_at_the_task_line() {
    let err = csv("load,current_pu\n1,0\n2,5\n", Some(2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.csv:3: task 1 is placed on PU 5, but there are only 2 PUs"
    );
    let err = csv("load,migratable\n1,false\n", Some(2)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("t.csv:2: task 0 is not migratable"),
        "{err}"
    );
    let err = json(r#"{"task_loads": [1], "current_mapping": [3], "num_pus": 2}"#).unwrap_err();
    assert!(err.to_string().starts_with("t.json: task 0"), "{err}");
}

#[test]
fn huge_pu_counts_are_refused_before_anything_is_allocated() {
    for pus in [
        usize::MAX,
        1_000_000_000,
        keel_workloads::trace::MAX_PUS + 1,
    ] {
        let err = csv("load\n1\n", Some(pus)).unwrap_err();
        assert!(
            matches!(err, TraceError::TooManyPus { count, limit, .. }
                if count == pus && limit == keel_workloads::trace::MAX_PUS),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the PU count given (--pus) says {pus} PUs, but a trace may have at most 1000000 (MAX_PUS)"
            )
        );
        let err = json(&format!(r#"{{"task_loads": [1], "num_pus": {pus}}}"#)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("num_pus in t.json says {pus} PUs")),
            "{err}"
        );
    }
    let p = csv("load\n1\n", Some(keel_workloads::trace::MAX_PUS)).unwrap();
    assert_eq!(p.npus(), keel_workloads::trace::MAX_PUS);
}

#[test]
fn the_unplaced_marker_is_refused_as_a_pu_index_in_json_as_in_csv() {
    let max = usize::MAX;
    let err = json(&format!(
        r#"{{"task_loads": [1, 2], "current_mapping": [0, {max}], "num_pus": 1}}"#
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "t.json: `current_mapping[1]` = `{max}` is invalid: expected a PU index (an integer >= 0), or null for an unplaced task"
        )
    );
    let err = csv(&format!("load,current_pu\n1,0\n2,{max}\n"), Some(1)).unwrap_err();
    assert!(matches!(err, TraceError::BadValue { .. }), "{err}");
    assert!(err.to_string().starts_with("t.csv:3, column 2"), "{err}");
    // `null` and an empty cell still mean unplaced.
    let p = json(r#"{"task_loads": [1, 2], "current_mapping": [0, null], "num_pus": 1}"#).unwrap();
    assert_eq!(p.current, Some(vec![0, NO_PU]));
}

#[test]
fn huge_bad_loads_are_quoted_compactly() {
    let err = json(r#"{"task_loads": [1, -1e300], "num_pus": 1}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.json: `task_loads[1]` = `-1e300` is invalid: expected a finite number >= 0"
    );
}

#[test]
fn task_ids_are_kept_unique_and_optional() {
    let p = csv("task,load\nalpha,3\n beta ,2\n", Some(2)).unwrap();
    assert_eq!(
        p.task_ids,
        Some(vec!["alpha".to_string(), "beta".to_string()])
    );
    assert_eq!(csv("load\n1\n", Some(1)).unwrap().task_ids, None);
    let p = json(r#"{"task_loads":[1,2],"task_ids":["a","b"],"num_pus":1}"#).unwrap();
    assert_eq!(p.task_ids, Some(vec!["a".to_string(), "b".to_string()]));

    let e = csv("id,load\na,1\nb,1\na,2\n", Some(1)).unwrap_err();
    assert!(
        matches!(&e, TraceError::DuplicateTaskId { id, .. } if id == "a"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains(":4: task id `a` appears twice (first at"),
        "{e}"
    );
    let e = json(r#"{"task_loads":[1,2],"task_ids":["a","a"],"num_pus":1}"#).unwrap_err();
    assert!(matches!(e, TraceError::DuplicateTaskId { .. }), "{e:?}");
    let e = json(r#"{"task_loads":[1,2],"task_ids":["a"],"num_pus":1}"#).unwrap_err();
    assert!(matches!(e, TraceError::LengthMismatch { .. }), "{e:?}");
    let e = csv("id,task,load\na,b,1\n", Some(1)).unwrap_err();
    assert!(matches!(e, TraceError::TwoIdColumns { .. }), "{e:?}");
    let e = csv("id,load\n ,1\n", Some(1)).unwrap_err();
    assert!(matches!(e, TraceError::BadValue { .. }), "{e:?}");
    let e = csv("id,load,owner\na,1,me\n", Some(1)).unwrap_err();
    assert!(matches!(e, TraceError::UnknownColumn { .. }), "{e:?}");
}
