//! The live Slurm cluster of `scripts/slurm-local.sh` as the tests see it:
//! its nodes, its plugstack, `srun` with a deadline, and Keel's SPANK
//! plugin installed where the plugstack loads it from.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where the live cluster's plugstack loads Keel's plugin from.
pub const LIVE_PLUGIN: &str = "/run/keel-slurm/keel_cosched_spank.so";

/// The plugin's sources.
pub fn spank_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spank")
}

/// The live cluster's plugstack line for the plugin: its arguments, when
/// `KEEL_SLURM_PLUGSTACK` names a plugstack.conf (the file
/// `scripts/slurm-local.sh` writes, `/run/keel-slurm/plugstack.conf`)
/// that loads [`LIVE_PLUGIN`], e.g.
///
/// ```text
/// optional /run/keel-slurm/keel_cosched_spank.so socket=/run/keel-slurm/nm-%n.sock
/// ```
pub fn live_plugstack() -> Option<Vec<String>> {
    let path = std::env::var_os("KEEL_SLURM_PLUGSTACK")?;
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let l = l.split('#').next().unwrap_or("");
        let mut f = l.split_whitespace();
        let kind = f.next()?;
        (matches!(kind, "required" | "optional") && f.next()? == LIVE_PLUGIN)
            .then(|| f.map(str::to_string).collect())
    })
}

/// The nodes `sinfo` reports up, when `SLURM_CONF` names a cluster.
pub fn live_nodes() -> Vec<String> {
    if std::env::var_os("SLURM_CONF").is_none() {
        return Vec::new();
    }
    let Ok(out) = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N %t"])
        .output()
    else {
        return Vec::new();
    };
    let mut nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (node, state) = l.split_once(' ')?;
            ["idle", "mix", "alloc"]
                .contains(&state.trim())
                .then(|| node.to_string())
        })
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// `srun ARGS` with a deadline; its output whatever its status.
pub fn srun(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new("srun")
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("srun starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("srun {args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Builds the plugin and puts it where the plugstack loads it from,
/// atomically (a step starting meanwhile loads the old or the new file,
/// never half of one).
pub fn install_live_plugin() {
    let built = tempfile::tempdir().unwrap();
    let out = Command::new("make")
        .arg("-C")
        .arg(spank_dir())
        .arg(format!("OUT={}", built.path().display()))
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = PathBuf::from(format!("{LIVE_PLUGIN}.new"));
    std::fs::copy(built.path().join("keel_cosched_spank.so"), &fresh).unwrap();
    std::fs::rename(&fresh, LIVE_PLUGIN).unwrap();
}
