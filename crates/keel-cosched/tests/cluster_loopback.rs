//! The cluster mode on loopback: a machine manager and two node managers
//! as separate processes (shared-key authentication), tasks registering
//! themselves as Slurm's do through the SPANK plugin. Runs on any Linux
//! machine, as any user.

mod cluster;
mod common;

use std::time::Duration;

use cluster::{lcg_expected, lcg_script, sample_gangs, two_cpus, Cluster, GangSamples};
use keel_cosched::sys::{self, Pid};

const ITERATIONS: u64 = 1_500_000;

/// Two 2-task steps on nodes n1 and n2; the outputs' paths.
fn two_steps(c: &mut Cluster) -> (Vec<Pid>, Vec<std::path::PathBuf>) {
    let mut pids = Vec::new();
    let mut outs = Vec::new();
    for job in 1..=2u32 {
        for (rank, node) in ["n1", "n2"].iter().enumerate() {
            let out = c.dir.path().join(format!("out-{job}-{rank}"));
            let script = lcg_script(ITERATIONS, &out);
            pids.push(c.start_task(node, job, rank as u32, 2, &script));
            outs.push(out);
        }
    }
    (pids, outs)
}

fn check_outputs(outs: &[std::path::PathBuf]) {
    let want = lcg_expected(ITERATIONS);
    for o in outs {
        let got = std::fs::read_to_string(o).unwrap_or_else(|e| panic!("{}: {e}", o.display()));
        assert_eq!(
            got.trim().parse::<u64>().ok(),
            Some(want),
            "{}",
            o.display()
        );
    }
}

/// The nodes of a report, sorted (they join in any order).
fn node_names(report: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = report["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn start(c: &mut Cluster, mm_args: &[&str]) {
    let (a, b) = two_cpus();
    c.start_mm(mm_args);
    c.start_nm("n1", &a, &[]);
    c.start_nm("n2", &b, &[]);
}

#[test]
fn two_steps_are_gang_scheduled_across_two_node_managers() {
    let mut c = Cluster::new();
    start(&mut c, &["--policy", "gs:t-slice=0.05"]);
    let (pids, outs) = two_steps(&mut c);
    // Sample who is stopped: a step's two tasks on two nodes must be
    // stopped together (gang), and every task must be stopped sometimes
    // (two steps share the PEs). Tasks 2j and 2j+1 are step j's.
    let GangSamples {
        samples,
        split,
        stopped,
    } = sample_gangs(
        Duration::from_secs(60),
        Duration::from_millis(3),
        || pids.iter().any(|&p| !common::gone(p)),
        || {
            let st: Vec<Option<char>> = pids.iter().map(|&p| sys::proc_state(p)).collect();
            st.iter()
                .all(|s| matches!(s, Some('R' | 'S' | 'T')))
                .then(|| {
                    st.iter()
                        .enumerate()
                        .map(|(i, s)| (i / 2, i, *s == Some('T')))
                        .collect()
                })
        },
    );
    c.wait_tasks(Duration::from_secs(60));
    check_outputs(&outs);
    assert!(
        samples >= 20,
        "only {samples} samples with all four tasks alive"
    );
    assert_eq!(stopped.len(), pids.len(), "{stopped:?}");
    assert!(
        stopped.values().all(|&n| n > 0),
        "a task was never stopped: {stopped:?} of {samples}"
    );
    // Switches are not instantaneous: allow a few split samples.
    assert!(
        f64::from(split) <= 0.2 * f64::from(2 * samples),
        "{split} split gang samples of {}",
        2 * samples
    );
    let report = c.stop_mm();
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{report}");
    assert!(steps.iter().all(|s| s["ended_s"].is_number()), "{report}");
    assert_eq!(node_names(&report), ["n1", "n2"], "{report}");
    assert!(
        report["skew"]["slots"].as_u64().unwrap_or(0) > 10,
        "{report}"
    );
    for i in 0..2 {
        c.stop_nm(i);
    }
    assert!(c.leftover_pages().is_empty(), "{:?}", c.leftover_pages());
}

#[test]
fn a_killed_node_manager_leaves_its_tasks_running() {
    let mut c = Cluster::new();
    start(&mut c, &["--policy", "gs:t-slice=0.05"]);
    let (_pids, outs) = two_steps(&mut c);
    std::thread::sleep(Duration::from_millis(300));
    let n2 = c.nms[1].1.id() as Pid;
    sys::kill(n2, libc::SIGKILL).expect("kill nm");
    c.wait_tasks(Duration::from_secs(60));
    check_outputs(&outs);
    let report = c.stop_mm();
    let notices = report["notices"].to_string();
    assert!(notices.contains("node n2 is down"), "{report}");
    c.stop_nm(0);
    // The dead NM's guardians removed its tasks' pages and its run
    // directory once the tasks ended.
    assert!(
        common::wait_until(Duration::from_secs(5), || c.leftover_pages().is_empty()),
        "{:?}",
        c.leftover_pages()
    );
}

#[test]
fn a_killed_machine_manager_lets_every_task_run() {
    let mut c = Cluster::new();
    start(&mut c, &["--policy", "gs:t-slice=0.05"]);
    let (_pids, outs) = two_steps(&mut c);
    std::thread::sleep(Duration::from_millis(300));
    let mut mm = c.mm.take().expect("mm");
    let _ = mm.kill();
    let _ = mm.wait();
    c.wait_tasks(Duration::from_secs(60));
    check_outputs(&outs);
    for i in 0..2 {
        let log = c.stop_nm(i);
        assert!(
            log.contains("no heartbeat") || log.contains("connection lost"),
            "{log}"
        );
    }
    assert!(c.leftover_pages().is_empty(), "{:?}", c.leftover_pages());
}

#[test]
fn hostile_peers_are_refused_and_the_manager_serves_on() {
    use std::io::Write;
    let mut c = Cluster::new();
    start(&mut c, &["--policy", "gs:t-slice=0.05"]);
    let addr = format!("127.0.0.1:{}", c.port);
    let other_key = c.dir.path().join("other-key");
    keel_cosched::cluster::auth::SharedKey::generate(&other_key).expect("key");
    // Garbage, an absurd length, a frame cut short, a silent peer.
    let hostile: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        vec![0xff, 0xff, 0xff, 0xff, 1, 2, 3],
        vec![0, 0, 0, 0],
        vec![0, 0, 1, 0, b'x'],
    ];
    let mut held = Vec::new();
    for bytes in &hostile {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.write_all(bytes);
            held.push(s);
        }
    }
    held.push(std::net::TcpStream::connect(&addr).expect("connect"));
    // A peer with the wrong key: a real node manager, refused.
    let (a, _) = two_cpus();
    let pages = c.pages();
    let mut wrong = std::process::Command::new(env!("CARGO_BIN_EXE_keel-cosched"))
        .args(["nm", "--mm", &addr, "--node", "n9", "--cpus", &a])
        .arg("--auth")
        .arg(format!("key:{}", other_key.display()))
        .arg("--socket")
        .arg(c.dir.path().join("nm-n9.sock"))
        .arg("--page-dir")
        .arg(&pages)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nm starts");
    let (_pids, outs) = two_steps(&mut c);
    c.wait_tasks(Duration::from_secs(60));
    check_outputs(&outs);
    let _ = wrong.kill();
    let _ = wrong.wait();
    drop(held);
    let report = c.stop_mm();
    assert_eq!(node_names(&report), ["n1", "n2"], "{report}");
    assert_eq!(
        report["steps"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
}

#[test]
fn clock_offsets_are_estimated_and_switches_meet() {
    let mut c = Cluster::new();
    let (a, b) = two_cpus();
    c.start_mm(&["--policy", "local", "--tick-ms", "25", "--slots", "200"]);
    c.start_nm("n1", &a, &["--clock-offset-ms", "3700"]);
    c.start_nm("n2", &b, &["--clock-offset-ms", "-1200.5"]);
    let mut mm = c.mm.take().expect("mm");
    assert!(
        cluster::wait_child(&mut mm, Duration::from_secs(30)),
        "mm did not finish its slots"
    );
    let text = std::fs::read_to_string(c.dir.path().join("mm.json")).expect("report");
    let report: serde_json::Value = serde_json::from_str(&text).expect("json");
    let skew = &report["skew"];
    assert_eq!(skew["nodes"], 2, "{report}");
    assert!(skew["slots"].as_u64().unwrap_or(0) >= 150, "{report}");
    let est = skew["estimated"]["median"].as_f64().expect("estimated");
    let real = skew["true_clock"]["median"].as_f64().expect("true clock");
    // The offsets (seconds apart) are recovered to within a millisecond.
    assert!(
        (est - real).abs() < 1e-3,
        "estimated {est} s vs true {real} s"
    );
    assert!(
        skew["true_clock"]["median"].as_f64().unwrap() < 5e-3,
        "{report}"
    );
}

#[test]
fn silent_heartbeats_let_tasks_run_and_the_nodes_rejoin() {
    let mut c = Cluster::new();
    start(&mut c, &["--policy", "gs:t-slice=0.05"]);
    let (pids, outs) = two_steps(&mut c);
    std::thread::sleep(Duration::from_millis(300));
    // A stopped machine manager is a partition as its NMs see it: its
    // connections stay open and nothing arrives.
    let mm = c.mm.as_ref().expect("mm").id() as Pid;
    sys::kill(mm, libc::SIGSTOP).expect("stop mm");
    // After 4 slots (at least 200 ms) every task runs: none stays stopped.
    std::thread::sleep(Duration::from_millis(600));
    let running = common::wait_until(Duration::from_secs(2), || {
        pids.iter()
            .all(|&p| common::gone(p) || sys::proc_state(p) != Some('T'))
    });
    sys::kill(mm, libc::SIGCONT).expect("continue mm");
    assert!(running, "a task stayed stopped without heartbeats");
    c.wait_tasks(Duration::from_secs(60));
    check_outputs(&outs);
    let report = c.stop_mm();
    // The nodes said they ran unmanaged, and came back.
    assert!(
        report["notices"].to_string().contains("ran unmanaged"),
        "{report}"
    );
    for i in 0..2 {
        let log = c.stop_nm(i);
        assert!(log.contains("heartbeats are back"), "{log}");
    }
}
