//! `keel-bench-loops` as a user runs it: `--json` prints one document with
//! every section; bad arguments fail with exit code 2.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_keel-bench-loops"))
}

#[test]
fn quick_json_run() {
    let out = bench()
        .args(["--quick", "--rounds", "1", "--json", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "overhead",
        "latency",
        "adaptive",
        "instant_now_ns",
        "delays",
    ] {
        assert!(!json[key].is_null(), "{key} missing");
    }
    assert_eq!(json["threads"], 2);
    if cfg!(feature = "libgomp") {
        // The binary re-executes itself so that libgomp waits actively.
        assert_eq!(json["libgomp_wait_policy"], "active");
    } else {
        assert!(json["libgomp"]
            .as_str()
            .unwrap()
            .contains("--features libgomp"));
    }
}

#[test]
fn bad_arguments_fail_with_exit_code_2() {
    let out = bench().args(["--rounds", "0", "--quick"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error:"));
    let out = bench().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
