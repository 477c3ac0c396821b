//! Job lines come from any local user through the control socket: every
//! field over a limit is refused with a message naming the limit, for
//! lines, files and specs built in code alike, and a machine refuses a job
//! wider than itself.

use keel_cosched::job::{
    read_jobs, JobLineError, JobSpec, MAX_ARGS, MAX_ARG_BYTES, MAX_ARRIVAL_SECS, MAX_FILE_BYTES,
    MAX_LINE_BYTES, MAX_NAME_BYTES, MAX_RANKS,
};

fn refused(line: &str) -> JobLineError {
    JobSpec::parse_line(line).expect_err(line)
}

#[test]
fn fields_over_a_limit_are_refused_naming_it() {
    let long_arg = "x".repeat(MAX_ARG_BYTES + 1);
    let many_args = vec!["a"; MAX_ARGS].join(" ");
    let long_name = "n".repeat(MAX_NAME_BYTES + 1);
    let long_line = format!("a 1 -- {}", "y ".repeat(MAX_LINE_BYTES));
    for (line, needle) in [
        ("a 1 arrival=1e20 -- true", "MAX_ARRIVAL_SECS"),
        ("a 1 arrival=1e19 -- true", "MAX_ARRIVAL_SECS"),
        ("a 1 arrival=1000000.5 -- true", "MAX_ARRIVAL_SECS"),
        ("a 1000000000000 -- true", "MAX_RANKS"),
        ("a 4097 -- true", "MAX_RANKS"),
        (
            "a 99999999999999999999999999999999999999999 -- true",
            "(41 digits)",
        ),
        (&format!("a 1 -- {long_arg}"), "MAX_ARG_BYTES"),
        (&format!("a 1 -- true {many_args}"), "MAX_ARGS"),
        (&format!("{long_name} 1 -- true"), "MAX_NAME_BYTES"),
        (&long_line, "MAX_LINE_BYTES"),
    ] {
        let e = refused(line);
        assert!(
            matches!(e, JobLineError::OverLimit { .. }),
            "{line:.60}: {e:?}"
        );
        assert!(e.to_string().contains(needle), "{line:.60}: `{e}`");
        assert!(e.to_string().contains("over the limit"), "{e}");
    }
    // At the limits, lines parse.
    let at = JobSpec::parse_line(&format!(
        "{} {MAX_RANKS} arrival={MAX_ARRIVAL_SECS} -- {} {}",
        "n".repeat(MAX_NAME_BYTES),
        "x".repeat(MAX_ARG_BYTES),
        vec!["a"; MAX_ARGS - 1].join(" ")
    ))
    .unwrap();
    assert_eq!(at.ranks, MAX_RANKS);
    assert_eq!(at.command.len(), MAX_ARGS);
    // A NUL byte cannot reach a program.
    assert!(refused("a 1 -- 'x\0y'").to_string().contains("NUL"));
}

#[test]
fn a_long_pes_list_is_refused_before_it_is_collected() {
    let pes = vec!["0"; 30_000].join(",");
    let e = refused(&format!("a 2 pes={pes} -- true"));
    assert!(e.to_string().contains("30000 PEs for 2 ranks"), "{e}");
}

#[test]
fn specs_built_in_code_are_validated_too() {
    let ok = JobSpec::new("a", 2, vec!["true".into()]);
    assert_eq!(ok.validate(), Ok(()));
    let mut far = ok.clone();
    far.arrival = 1e20;
    assert!(far
        .validate()
        .unwrap_err()
        .to_string()
        .contains("MAX_ARRIVAL_SECS"));
    far.arrival = f64::NAN;
    assert!(far.validate().is_err());
    let mut wide = ok.clone();
    wide.ranks = usize::MAX;
    assert!(wide
        .validate()
        .unwrap_err()
        .to_string()
        .contains("MAX_RANKS"));
    let twice = ok.clone().on_pes(vec![1, 1]);
    assert!(twice
        .validate()
        .unwrap_err()
        .to_string()
        .contains("named twice"));
    let mut empty = ok.clone();
    empty.command.clear();
    assert!(empty.validate().is_err());
}

#[test]
fn a_job_fits_a_machine_only_within_its_pes() {
    let job = JobSpec::new("a", 2, vec!["true".into()]);
    assert_eq!(job.check_fits(2), Ok(()));
    let e = job.check_fits(1).unwrap_err();
    assert!(
        e.to_string()
            .contains("needs 2 PEs but this machine has only 1"),
        "{e}"
    );
    let e = job.clone().on_pes(vec![0, 2]).check_fits(2).unwrap_err();
    assert!(e.to_string().contains("PE 2 does not exist"), "{e}");
}

#[test]
fn an_oversized_job_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let line = "a 1 -- true\n";
    let copies = MAX_FILE_BYTES as usize / line.len() + 1;
    std::fs::write(&path, line.repeat(copies)).unwrap();
    let e = read_jobs(&path).unwrap_err();
    assert!(e.to_string().contains("MAX_FILE_BYTES"), "{e}");
}

#[test]
fn a_fifo_device_or_directory_as_job_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("jobs.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Without a writer, an open that waited would never return: the test
    // would hang rather than fail.
    for path in [fifo.as_path(), "/dev/zero".as_ref(), dir.path()] {
        let e = read_jobs(path).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
