use super::*;
use keel::loops::{ScheduleRunReport, SelectionReport, SelectionRunReport};

fn line(name: &str, total_time: f64, schedules: &[(&str, u64)]) -> SiteReport {
    SiteReport {
        object: None,
        offset: None,
        symbol: None,
        report: LoopReport {
            name: name.into(),
            instances: schedules.iter().map(|s| s.1).sum(),
            total_time,
            mean_lib_percent: 12.5,
            threads: 2,
            iterations: 100,
            schedules: schedules
                .iter()
                .map(|&(schedule, instances)| ScheduleRunReport {
                    schedule: schedule.into(),
                    instances,
                })
                .collect(),
            schedule_runs_dropped: 0,
            selection: None,
        },
    }
}

fn process(loops: Vec<SiteReport>) -> ProcessReport {
    ProcessReport::new("/bin/app".into(), 42, 7, 1, loops)
}

fn write_lines(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.jsonl");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn reads_one_report_per_line_and_refuses_what_is_not_one() {
    let one =
        serde_json::to_string(&process(vec![line("omp:app+0x10", 0.5, &[("gss", 4)])])).unwrap();
    let (_dir, path) = write_lines(&format!("{one}\n\n{one}\n"));
    let reports = read_reports(&path).unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1].loops[0].report.schedules[0].schedule, "gss");

    for (text, expect) in [
        ("", "holds no loop report"),
        ("{\"format\":1}\n", "line 1: not a keel-omp loop report"),
        ("not json\n", "line 1"),
        (&format!("{one}\n[1,2]\n"), "line 2"),
        (
            &one.replace("keel-omp-report", "other"),
            "this keel reads \"keel-omp-report\" version 1",
        ),
        (&one.replace("\"version\":1", "\"version\":9"), "version 9"),
    ] {
        let (_dir, path) = write_lines(text);
        let err = read_reports(&path).unwrap_err().to_string();
        assert!(err.contains(expect), "{text:?}: {err}");
    }
    let err = read_reports(Path::new("/nonexistent/report.jsonl")).unwrap_err();
    assert!(err.to_string().contains("cannot read"), "{err}");
}

#[test]
fn a_huge_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    // Sparse: no disk is spent on it.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(MAX_REPORT_BYTES + 10)
        .unwrap();
    let err = read_reports(&path).unwrap_err().to_string();
    assert!(err.contains("is larger than"), "{err}");
}

#[test]
fn tables_name_loops_share_time_and_show_the_schedule_history() {
    let mut hot = line("omp:app+0x20", 3.0, &[("static", 2), ("gss", 38)]);
    hot.symbol = Some("main._omp_fn.0".into());
    hot.report.selection = Some(SelectionReport {
        method: "keel".into(),
        exploration_instances: 2,
        dropped: 0,
        runs: vec![SelectionRunReport {
            first: 0,
            instances: 40,
            schedule: "gss".into(),
            reason: "exploit".into(),
        }],
        cost: Some(keel::policy::select::SelectionCost {
            loop_seconds: 3.0,
            exploration_seconds: 0.2,
            exploration_excess_seconds: 0.03,
            exploration_instances: 2,
            unmeasured_instances: 0,
            classes: 1,
        }),
        settled_by: Some("imbalance \u{1b}[31mbound".into()),
    });
    let cold = line("omp:app+0x40", 1.0, &[("ss", 10)]);
    let mut out = Vec::new();
    write_tables(&[process(vec![hot, cold])], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("/bin/app (pid 42): Keel took 7 loop instances, forwarded 1"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[1].contains("loop") && rows[1].ends_with("schedules over time"));
    assert!(rows[2].starts_with("  main._omp_fn.0 (app+0x20)"), "{text}");
    assert!(
        rows[2].contains("75.0 %") && rows[2].contains("3.000 s"),
        "{text}"
    );
    assert!(
        rows[2].ends_with("auto,keel (2 explored; exploring cost 30.00 ms = 1.0 % of 3.00 s; settled by imbalance [31mbound): static×2 → gss×38"),
        "{text}"
    );
    assert!(
        rows[3].starts_with("  app+0x40") && rows[3].ends_with("ss×10"),
        "{text}"
    );
}

#[test]
fn long_histories_are_cut_with_what_was_left_out() {
    let runs: Vec<(String, u64)> = (0..9)
        .map(|i| (if i % 2 == 0 { "static" } else { "gss" }.to_string(), 1))
        .collect();
    let runs: Vec<(&str, u64)> = runs.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    let mut site = line("omp:app+0x1", 1.0, &runs);
    assert_eq!(
        history(&site.report),
        "static×1 → gss×1 → (4 instances in 4 runs) → static×1 → gss×1 → static×1"
    );
    site.report.schedules.truncate(6);
    assert_eq!(
        history(&site.report),
        "static×1 → gss×1 → static×1 → gss×1 → static×1 → gss×1"
    );
    site.report.schedule_runs_dropped = 5;
    assert!(history(&site.report).ends_with("gss×1 → (5 later instances not kept)"));
}

#[test]
fn symbols_of_this_test_binary_are_found_by_offset() {
    let exe = std::env::current_exe().unwrap();
    let symbols = Symbols::read(&exe).expect("an ELF test binary");
    let (start, size, name) = symbols
        .functions
        .iter()
        .find(|f| f.1 > 1 && f.2.contains("symbols_of_this_test_binary"))
        .cloned()
        .expect("this test's own symbol");
    let offset = start - symbols.base;
    assert_eq!(
        symbols.at(offset + size / 2).as_deref(),
        Some(name.as_str())
    );
    assert_ne!(symbols.at(offset + size).as_deref(), Some(name.as_str()));
    assert_eq!(symbols.at(u64::MAX), None);
    assert!(Symbols::read(Path::new("/nonexistent")).is_none());
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"\x7fELF not really").unwrap();
    assert!(Symbols::read(&junk).is_none());
}

#[test]
fn terminal_control_sequences_in_a_report_are_not_printed() {
    let mut evil = line("omp:\x1b]0;owned\x07app+0x20", 1.0, &[("static\x1b[2J", 3)]);
    evil.symbol = Some("main\x1b[31m\u{9b}1m".into());
    let mut report = process(vec![evil]);
    report.program = "/bin/\x1b[5mapp\r".into();
    let mut out = Vec::new();
    write_tables(&[report], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    // What is left of each name is still shown.
    assert!(text.contains("/bin/[5mapp"), "{text}");
    assert!(text.contains("main[31m1m"), "{text}");
    assert!(text.contains("static[2J×3"), "{text}");
}

#[test]
fn a_fifo_or_device_as_report_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("report.fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(status.is_ok_and(|s| s.success()), "mkfifo runs");
    // Without a writer, an open that waited would never return: the test
    // would hang rather than fail.
    for path in [fifo.as_path(), "/dev/zero".as_ref(), dir.path()] {
        let e = read_reports(path).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
