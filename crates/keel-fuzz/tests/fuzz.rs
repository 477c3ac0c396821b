//! The fuzz runs: a fixed, seeded handful of cases per target in the normal
//! suite, and `fuzz_for_a_while` (ignored; `.ci/run` runs it in release)
//! for `KEEL_FUZZ_SECONDS` seconds across all targets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use keel_fuzz::driver::{supervise, Failure, Plan, Summary};
use keel_fuzz::{report_line, target, targets, time_seed};

/// The seed of the normal suite's cases.
const FIXED_SEED: u64 = 0x6b65_656c;
/// Cases per target in the normal suite (both generators alternate).
const FIXED_CASES: u64 = 200;

/// Failures already recorded in FINDINGS.md and being fixed in their
/// crates, by target and a piece of their message: printed, but not a test
/// failure unless `KEEL_FUZZ_STRICT=1`. Delete an entry once its finding
/// is fixed.
const OPEN: &[(&str, &str)] = &[];

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_keel-fuzz"))
}

fn out_dir(seed: u64) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("keel-fuzz-{seed}"))
}

fn is_open(f: &Failure) -> bool {
    std::env::var("KEEL_FUZZ_STRICT").as_deref() != Ok("1")
        && OPEN
            .iter()
            .any(|(t, piece)| f.target == *t && f.message.contains(piece))
}

/// Prints the summary and every distinct failure; returns the new ones.
fn report(name: &str, seed: u64, summary: &Summary) -> Vec<String> {
    println!("{} (seed {seed})", report_line(name, summary));
    let mut new = Vec::new();
    for f in summary.distinct() {
        if is_open(f) {
            println!("  open finding (FINDINGS.md): {f}");
        } else {
            println!("  NEW FAILURE: {f}");
            new.push(f.to_string());
        }
    }
    new
}

fn fixed_cases(name: &str) {
    let t = target(name).expect("a target of this crate");
    let plan = Plan {
        seed: FIXED_SEED,
        first: 0,
        cases: Some(FIXED_CASES),
        time: None,
        out: out_dir(FIXED_SEED),
    };
    let summary = supervise(exe(), t, &plan).expect("the worker runs");
    assert_eq!(summary.cases, FIXED_CASES, "every case ran");
    let new = report(name, FIXED_SEED, &summary);
    assert!(
        new.is_empty(),
        "{name}: {} failing case(s) (reproduce: keel-fuzz run --target {name} --seed {FIXED_SEED}):\n{}",
        new.len(),
        new.join("\n")
    );
}

#[test]
fn policy_spec_survives_fixed_cases() {
    fixed_cases("policy-spec");
}

#[test]
fn keel_schedule_survives_fixed_cases() {
    fixed_cases("keel-schedule");
}

#[test]
fn trace_json_survives_fixed_cases() {
    fixed_cases("trace-json");
}

#[test]
fn trace_csv_survives_fixed_cases() {
    fixed_cases("trace-csv");
}

#[test]
fn swf_survives_fixed_cases() {
    fixed_cases("swf");
}

#[test]
fn control_survives_fixed_cases() {
    fixed_cases("control");
}

#[test]
fn job_file_survives_fixed_cases() {
    fixed_cases("job-file");
}

#[test]
fn cosched_wire_survives_fixed_cases() {
    fixed_cases("cosched-wire");
}

#[test]
fn cosched_register_survives_fixed_cases() {
    fixed_cases("cosched-register");
}

#[test]
fn every_target_has_a_fixed_cases_test_and_seeds() {
    let source = include_str!("fuzz.rs");
    for t in targets() {
        let test = format!("fn {}_survives_fixed_cases", t.name.replace('-', "_"));
        assert!(source.contains(&test), "no `{test}` for target {}", t.name);
        let seeds = keel_fuzz::corpus::seeds(t.name).expect("the corpus reads");
        assert!(
            seeds.len() >= 3,
            "target {} has {} seeds",
            t.name,
            seeds.len()
        );
    }
}

/// `KEEL_FUZZ_SECONDS` (default 60) split evenly across the targets, seed
/// `KEEL_FUZZ_SEED` or the clock's; prints each target's cases per second.
#[test]
#[ignore = "runs for KEEL_FUZZ_SECONDS (60 s by default); .ci/run runs it in release"]
fn fuzz_for_a_while() {
    let seconds: f64 = match std::env::var("KEEL_FUZZ_SECONDS") {
        Ok(text) => text
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .unwrap_or_else(|| panic!("KEEL_FUZZ_SECONDS=`{text}` is not 0 < seconds <= 86400")),
        Err(_) => 60.0,
    };
    let seed: u64 = match std::env::var("KEEL_FUZZ_SEED") {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("KEEL_FUZZ_SEED=`{text}` is not a u64")),
        Err(_) => time_seed(),
    };
    let out = out_dir(seed);
    println!(
        "fuzz_for_a_while: seed {seed} (KEEL_FUZZ_SEED={seed} repeats it), {seconds} s, failing inputs under {}",
        out.display()
    );
    let share = Duration::from_secs_f64(seconds / targets().len() as f64);
    let mut new = Vec::new();
    for t in targets() {
        let plan = Plan {
            seed,
            first: 0,
            cases: None,
            time: Some(share),
            out: out.clone(),
        };
        let summary = supervise(exe(), t, &plan).expect("the worker runs");
        assert!(summary.cases > 0, "{}: no case ran", t.name);
        new.extend(report(t.name, seed, &summary));
    }
    assert!(
        new.is_empty(),
        "{} new failing case(s) with seed {seed}; add each to tests/regressions.rs:\n{}",
        new.len(),
        new.join("\n")
    );
}
