//! The run directory cannot be prepared by anyone else: a directory planted
//! under any name the manager could once have chosen, full of symlinks
//! where its stderr files would go, is never used and its targets are
//! never touched; the job directory is not writable by the job's user, who
//! only gets the rendezvous directory.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::bsp_binary;
use keel_cosched::machine::{Config, JobOutcome, Machine};
use keel_cosched::node::Owner;
use keel_cosched::rundir::{self, JobDir, RunDir};
use keel_cosched::sys;
use keel_cosched::JobSpec;

/// Removes the planted directories however the test ends.
struct Planted(Vec<PathBuf>);
impl Drop for Planted {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Every entry under `dir`, recursively, with its kind.
fn listing(dir: &Path) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let md = std::fs::symlink_metadata(e.path()).unwrap();
        out.push((e.path(), md.is_symlink()));
        if md.is_dir() {
            out.extend(listing(&e.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_planted_run_directory_is_never_used_and_its_symlinks_never_followed() {
    // The victim: a file the manager's user owns, which a planted
    // `rank-0.err` symlink points at.
    let private = tempfile::tempdir().unwrap();
    let victim = private.path().join("victim");
    std::fs::write(&victim, b"precious contents").unwrap();
    // Plant every name the manager derived from its pid and a counter
    // (`keel-cosched-<pid>-<n>`), each with `job-<id>/rank-0.err` for
    // every job id it could hand out first.
    let pid = sys::getpid() as u64;
    let tmp = std::env::temp_dir();
    let mut planted = Planted(Vec::new());
    for n in 0..48u64 {
        let d = tmp.join(format!("keel-cosched-{pid}-{n}"));
        std::fs::create_dir(&d).unwrap();
        planted.0.push(d.clone());
        for k in 0..48u64 {
            let job = d.join(format!("job-{}", pid * 10_000 + k));
            std::fs::create_dir(&job).unwrap();
            std::os::unix::fs::symlink(&victim, job.join("rank-0.err")).unwrap();
        }
    }
    let before: Vec<_> = planted.0.iter().map(|d| listing(d)).collect();

    let mut c = Config::new("fcfs").unwrap();
    c.split_cpus(1, 1).unwrap();
    c.bsp_command = vec![bsp_binary()];
    c.time_limit = Some(Duration::from_secs(60));
    let job = JobSpec::new(
        "one",
        1,
        ["@bsp", "--iterations", "3", "--granularity-ms", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    let report = Machine::new(c).unwrap().run(vec![job]).unwrap();
    assert_eq!(report.jobs[0].outcome, JobOutcome::Completed, "{report:?}");

    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious contents",
        "a planted symlink's target was written"
    );
    let after: Vec<_> = planted.0.iter().map(|d| listing(d)).collect();
    assert_eq!(before, after, "a planted directory was used");
    // The manager's own run directory is gone after the run.
    let ours = format!("keel-cosched-{pid}-");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(&ours))
        .filter(|n| {
            !planted
                .0
                .iter()
                .any(|p| p.file_name().unwrap() == n.as_str())
        })
        .collect();
    assert!(left.is_empty(), "run directories left behind: {left:?}");
}

#[test]
fn a_job_directory_is_the_managers_and_only_rendezvous_is_the_jobs() {
    const NOBODY: u32 = 65534;
    if !common::can_run_as_root("a_job_directory_is_the_managers_and_only_rendezvous_is_the_jobs") {
        return;
    }
    let parent = tempfile::tempdir().unwrap();
    // Let nobody reach the run directory's parent, as it can reach /tmp.
    std::fs::set_permissions(
        parent.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    let run = RunDir::create(parent.path()).unwrap();
    let owner = Owner {
        uid: NOBODY,
        gid: NOBODY,
    };
    let job: JobDir = run.job_dir(1, owner).unwrap();
    assert_eq!(std::fs::metadata(&job.dir).unwrap().uid(), 0);
    assert_eq!(std::fs::metadata(&job.rendezvous).unwrap().uid(), NOBODY);
    let target = parent.path().join("root-file");
    std::fs::write(&target, b"root's").unwrap();
    let as_nobody = |script: &str| {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("/bin/sh")
            .args(["-c", script])
            .uid(NOBODY)
            .gid(NOBODY)
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    let stderr = job.stderr(0);
    assert!(
        !as_nobody(&format!("ln -s {} {}", target.display(), stderr.display())),
        "the job's user planted a symlink where root creates its stderr file"
    );
    assert!(
        as_nobody(&format!("touch {}/r0.sock", job.rendezvous.display())),
        "the job's user can use its rendezvous directory"
    );
    let f = rundir::create_private_file(&stderr, Some(owner)).unwrap();
    assert_eq!(f.metadata().unwrap().uid(), NOBODY);
    assert_eq!(std::fs::read(&target).unwrap(), b"root's");
    assert_eq!(std::fs::metadata(&target).unwrap().uid(), 0);
}
