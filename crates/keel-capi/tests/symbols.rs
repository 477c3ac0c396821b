//! libkeel.so exports the C API and nothing else: no OpenMP runtime entry
//! point (`GOMP_*`, `__kmpc_*`, `omp_*`) that would interpose the OpenMP
//! calls of every program linking it, as keel-omp's preload library does
//! on purpose.

use std::process::Command;

#[test]
fn libkeel_exports_only_keel_symbols() {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib = [deps, deps.parent().unwrap()]
        .iter()
        .map(|d| d.join("libkeel.so"))
        .find(|l| l.exists())
        .expect("libkeel.so beside the test");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output();
    if !keel_testkit::can_run("libkeel_exports_only_keel_symbols", "nm", out.is_ok()) {
        return;
    }
    let out = out.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let foreign: Vec<&&str> = names
        .iter()
        .filter(|n| n.starts_with("GOMP_") || n.starts_with("__kmpc_") || n.starts_with("omp_"))
        .collect();
    assert!(foreign.is_empty(), "OpenMP symbols exported: {foreign:?}");
    let other: Vec<&&str> = names.iter().filter(|n| !n.starts_with("keel_")).collect();
    assert!(other.is_empty(), "symbols outside keel_*: {other:?}");
    // Every entry point of the header is there (those of its `KEEL_MPI`
    // section only in a build with the `mpi` feature).
    let header = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/keel.h"),
    )
    .unwrap();
    let mut in_mpi = false;
    for line in header.lines() {
        if line.starts_with("#if defined(KEEL_MPI)") {
            in_mpi = true;
        } else if line.starts_with("#endif") {
            in_mpi = false;
        }
        if line.starts_with([' ', '/', '#', '}'])
            || line.starts_with("typedef")
            || (in_mpi && !cfg!(feature = "mpi"))
        {
            continue;
        }
        if let Some(open) = line.find('(') {
            let name = line[..open].rsplit([' ', '*']).next().unwrap();
            assert!(names.contains(&name), "{name} is declared but not exported");
        }
    }
    assert!(names.len() >= 20, "{names:?}");
}
