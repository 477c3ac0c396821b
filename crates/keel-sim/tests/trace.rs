//! Trace formats: what parses, and line-numbered typed errors for what does not.

use keel_sim::trace::{parse_csv, parse_json, read_trace, TraceError};

#[test]
fn csv_with_steps_loops_and_units() {
    let text = "# a comment\nstep,loop,iteration,cost_us\n0,a,0,1.5\n0,a,1,2\n0,b,0,4\n\n1,a,0,3\n";
    let t = parse_csv(text).unwrap();
    assert_eq!(t.instances.len(), 3);
    assert_eq!(t.instances[0].loop_name, "a");
    assert_eq!(t.instances[0].costs, vec![1.5e-6, 2e-6]);
    assert_eq!((t.instances[2].step, t.iterations()), (1, 4));
    // A bare cost column is one instance of loop `loop` at step 0.
    let t = parse_csv("cost\n0.5\n0.25\n").unwrap();
    assert_eq!(t.instances[0].costs, vec![0.5, 0.25]);
    assert_eq!(t.instances[0].loop_name, "loop");
    assert_eq!(t.instances[0].iteration_costs().unwrap().total(), 0.75);
}

#[test]
fn csv_errors_name_their_line() {
    let cases: [(&str, usize); 10] = [
        ("cost\n1\n-2\n", 3),
        ("cost\n1\nnan\n", 3),
        ("cost\n1\nfast\n", 3),
        ("step,cost\n0,1\nx,1\n", 3),
        ("step,cost\n1,1\n0,1\n", 3),
        ("loop,cost\na,1\nb,1\na,1\n", 4),
        ("iteration,cost\n0,1\n2,1\n", 3),
        ("cost\n1,2\n", 2),
        ("# c\nload\n1\n", 2),
        ("cost,cost_us\n1,1\n", 1),
    ];
    for (text, line) in cases {
        let err = parse_csv(text).unwrap_err();
        let got = match &err {
            TraceError::BadField { line, .. }
            | TraceError::Order { line, .. }
            | TraceError::FieldCount { line, .. }
            | TraceError::BadHeader { line, .. } => *line,
            other => panic!("{text:?}: {other:?}"),
        };
        assert_eq!(got, line, "{text:?}: {err}");
        assert!(
            err.to_string().starts_with(&format!("line {line}")),
            "{err}"
        );
    }
    assert!(matches!(
        parse_csv("cost\n-1\n").unwrap_err(),
        TraceError::BadField { ref column, .. } if column == "cost"
    ));
    assert_eq!(parse_csv("cost\n"), Err(TraceError::Empty));
    assert!(matches!(
        parse_csv("# only a comment\n"),
        Err(TraceError::MissingHeader { .. })
    ));
    assert!(matches!(
        parse_csv(""),
        Err(TraceError::MissingHeader { .. })
    ));
}

#[test]
fn json_one_instance_or_many() {
    let t = parse_json(r#"{"unit": "ms", "costs": [1, 2.5]}"#).unwrap();
    assert_eq!(t.instances[0].costs, vec![1e-3, 2.5e-3]);
    let t = parse_json(
        r#"{"instances": [{"step": 0, "loop": "a", "costs": [1]}, {"step": 1, "costs": [2, 3]}]}"#,
    )
    .unwrap();
    assert_eq!(t.instances.len(), 2);
    assert_eq!(t.instances[1].loop_name, "loop");
    assert_eq!(t.iterations(), 3);
}

#[test]
fn json_errors_name_their_line_and_column() {
    let bad_cost = "{\n  \"costs\": [1,\n    -2]\n}";
    match parse_json(bad_cost).unwrap_err() {
        TraceError::Json { line, problem, .. } => {
            assert_eq!(line, 3);
            assert!(problem.contains("-2"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    let empty_instance = "{\"instances\": [\n {\"costs\": [1]},\n {\"costs\": []}\n]}";
    let err = parse_json(empty_instance).unwrap_err();
    assert!(matches!(err, TraceError::Json { line: 3, .. }), "{err:?}");
    for text in [
        "{\"costs\": [1], \"colour\": 2}",
        "{\"unit\": \"hours\", \"costs\": [1]}",
        "{\"costs\": [1], \"instances\": []}",
        "{}",
        "[1, 2]",
        "{\"costs\": [1,",
    ] {
        assert!(
            matches!(parse_json(text), Err(TraceError::Json { .. })),
            "{text}"
        );
    }
    assert_eq!(parse_json("{\"costs\": []}"), Err(TraceError::Empty));
}

#[test]
fn files_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "cost_ns\n10\n").unwrap();
    assert_eq!(read_trace(&csv).unwrap().instances[0].costs, vec![1e-8]);
    let txt = dir.path().join("t.txt");
    std::fs::write(&txt, "cost\n1\n").unwrap();
    assert!(matches!(
        read_trace(&txt),
        Err(TraceError::UnknownFormat { .. })
    ));
    assert!(matches!(
        read_trace(&dir.path().join("missing.csv")),
        Err(TraceError::Io { .. })
    ));
}
