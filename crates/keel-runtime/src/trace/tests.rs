use super::*;
use std::fs::OpenOptions;

fn chunk() -> ChunkEvent {
    let now = Instant::now();
    ChunkEvent {
        start: now,
        end: now,
        from: 0,
        to: 1,
    }
}

fn label() -> LoopLabel {
    LoopLabel {
        name: "l\"oop [static]".to_string(),
        schedule: "static".to_string(),
        id: "l\"oop".to_string(),
    }
}

fn parse(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_full_device_is_reported_once_naming_the_path() {
    let path = Path::new("/dev/full");
    let Ok(file) = OpenOptions::new().write(true).open(path) else {
        // On the real stderr, not the captured one, so that the skip
        // shows in `cargo test`'s output.
        let _ = writeln!(io::stderr().lock(), "SKIPPED: no /dev/full here");
        return;
    };
    let tracer = Tracer::with_file(file, path).unwrap();
    let warning = tracer
        .append(Track::Loop(0), |t, out| {
            t.event(out, &metadata("thread_name", 1, 0, "x"))
        })
        .expect("a warning");
    assert!(warning.contains("KEEL_TRACE=/dev/full"), "{warning}");
    assert!(warning.contains("cannot write the trace"), "{warning}");
    // Once: later chunks are dropped without a second warning.
    assert_eq!(tracer.append(Track::Loop(1), |_, _| Ok(())), None);
    tracer.finish();
}

#[test]
fn a_finished_file_is_strict_json_and_later_events_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let tracer = Tracer::create(&path).unwrap();
    tracer.write_loop(&label(), 0, &[chunk(), chunk()]);
    let now = Instant::now();
    let span = |what| Span {
        start: now,
        end: now,
        what,
    };
    tracer.write(Track::FarmWorker(1), &[span(What::Item { n: 0 })]);
    tracer.write(
        Track::Pu(0),
        &[
            span(What::Object { step: 2, object: 5 }),
            span(What::Task {
                step: 2,
                object: 5,
                from: 0,
                to: 3,
                owner: 1,
                stolen: true,
            }),
        ],
    );
    tracer.finish();
    let before = std::fs::read_to_string(&path).unwrap();
    tracer.finish();
    tracer.write_loop(&label(), 1, &[chunk()]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    let trace = parse(&path);
    assert_eq!(trace["displayTimeUnit"], "ms");
    let events = trace["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "process_name",
            "thread_name",
            "l\"oop [static]",
            "l\"oop [static]",
            "thread_name",
            "item",
            "thread_name",
            "object 5",
            "stolen chunk"
        ]
    );
    assert!(events[0]["args"]["name"]
        .as_str()
        .unwrap()
        .starts_with("keel: "));
    assert_eq!(events[1]["args"]["name"], "loop participant 0");
    assert_eq!(events[2]["args"]["loop"], "l\"oop");
    assert_eq!(events[4]["args"]["name"], "farm worker 1");
    assert_eq!(events[4]["tid"], FARM_TID + 1);
    assert_eq!(events[6]["args"]["name"], "objects PU 0");
    assert_eq!(events[8]["cat"], "stolen");
    assert_eq!(events[8]["args"]["stolen"], true);
    assert_eq!(events[8]["args"]["owner"], 1);
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, "keep").unwrap();
    let link = dir.path().join("trace.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = open(&link).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    // A dangling link is refused too (it would create its target).
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    let e = open(&dangling).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(!dir.path().join("nowhere").exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.json");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let e = open(&fifo).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // A directory is no regular file either.
    let e = open(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[cfg(unix)]
#[test]
fn a_new_file_is_created_with_mode_0644_and_an_old_one_truncated() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    std::fs::write(&path, "x".repeat(10_000)).unwrap();
    let tracer = Tracer::create(&path).unwrap();
    tracer.finish();
    let trace = parse(&path);
    assert_eq!(trace["traceEvents"].as_array().unwrap().len(), 1);
    let fresh = dir.path().join("fresh.json");
    Tracer::create(&fresh).unwrap().finish();
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    // The umask may take bits away, never add any.
    assert_eq!(mode & !0o644, 0, "{mode:o}");
    assert_ne!(mode & 0o600, 0, "{mode:o}");
}
