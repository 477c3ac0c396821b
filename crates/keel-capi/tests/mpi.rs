//! `keel_mpi_plan` from C under MPICH (`--features mpi`; CI builds it after
//! scripts/install-mpich.sh): `examples-c/mpi_plan.c` compiled with `mpicc`
//! against this build's libkeel.so and run by `mpiexec` on 1, 2 and 4 ranks
//! (exports and imports pair up, every object kept or imported once,
//! λ falls), and with a NULL array on rank 1 of 3 (the same error on every
//! rank that prints, no hang). Each job runs under a deadline.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// The directory holding the libkeel.so cargo built for this test run
/// (beside the test in `deps/`, else one level up).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .iter()
        .find(|dir| dir.join("libkeel.so").is_file())
        .unwrap_or_else(|| panic!("libkeel.so not found beside {}", exe.display()))
        .to_path_buf()
}

fn build(dir: &Path) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join("mpi_plan");
    let lib = library_dir();
    let out = Command::new("mpicc")
        .args(["-DKEEL_MPI", "-Wall", "-Werror", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples-c/mpi_plan.c"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lkeel", "-o"])
        .arg(&exe)
        .output()
        .expect("mpicc runs (scripts/install-mpich.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn launch(ranks: usize, exe: &Path, args: &[&str]) -> (Option<i32>, String) {
    // The library this test was built with, first: cargo's own library
    // path for tests may list a libkeel.so of another build (without the
    // mpi feature) ahead of the rpath.
    let mut child = Command::new("mpiexec")
        .env("LD_LIBRARY_PATH", library_dir())
        .arg("-n")
        .arg(ranks.to_string())
        .arg(exe)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = child
        .wait_timeout(Duration::from_secs(120))
        .unwrap()
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("mpi_plan on {ranks} ranks still ran after 120 s: a hang")
        });
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (status.code(), text)
}

fn field(line: &str, name: &str) -> usize {
    let mut words = line.split_whitespace();
    words.find(|w| *w == name);
    words.next().unwrap().parse().unwrap()
}

#[test]
fn c_ranks_get_paired_lists_and_one_error_for_a_bad_argument() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    for (ranks, shape) in [
        (1, ""),
        (2, ""),
        (4, ""),
        (1, "tree"),
        (3, "tree"),
        (4, "tree"),
    ] {
        let (status, text) = launch(ranks, &exe, &[shape]);
        assert_eq!(status, Some(0), "{text}");
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("rank ")).collect();
        assert_eq!(lines.len(), ranks, "{text}");
        let exports: usize = lines.iter().map(|l| field(l, "exports")).sum();
        let imports: usize = lines.iter().map(|l| field(l, "imports")).sum();
        let keeps: usize = lines.iter().map(|l| field(l, "keeps")).sum();
        assert_eq!(exports, imports, "{text}");
        assert_eq!(keeps + imports, 16 * ranks, "{text}");
        if ranks > 1 {
            let summary = text.lines().find(|l| l.starts_with("lambda")).unwrap();
            let after: f64 = summary.split_whitespace().nth(3).unwrap().parse().unwrap();
            // One level balances the 16-object blocks exactly; the tree
            // lends whole objects between groups, within one object of it.
            let bound = if shape.is_empty() { 0.0 } else { 0.05 };
            assert!(after <= bound, "{shape}: {summary}");
        }
    }
    for shape in ["", "tree"] {
        let (status, text) = launch(3, &exe, &["bad", shape]);
        assert_ne!(status, Some(0), "{text}");
        let errors: Vec<&str> = text.lines().filter(|l| l.contains(" error ")).collect();
        assert!(!errors.is_empty(), "{text}");
        for line in errors {
            assert!(
                line.ends_with(
                    "error KEEL_ERR_INVALID_INPUT: rank 1: weights is NULL for 16 objects"
                ),
                "{shape}: {line}"
            );
        }
    }
}
