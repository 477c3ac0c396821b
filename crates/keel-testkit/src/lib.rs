//! The rule Keel's tests follow for what they need from the environment
//! (root, two CPUs, an OpenMP compiler, `nm`, a Slurm cluster, ...).
//!
//! A test that has what it needs says so and runs; one that lacks it says
//! `SKIPPED:` and passes without asserting, so that `cargo test` passes on
//! a machine without those tools. Where the environment is known to
//! provide something, the comma-separated variable `KEEL_TESTS_REQUIRE`
//! names it (CI sets it, for instance `root,gcc -fopenmp`), and a test
//! that finds it missing fails instead: a broken setup there must not
//! pass as a row of skips.
//!
//! Both lines go to the process's standard error directly, not through
//! the test harness's captured output, so that they show in `cargo test`'s
//! output of passing tests too and a log can count what ran and what was
//! skipped.

use std::io::Write;

/// The variable naming, comma-separated, what the environment provides.
const REQUIRE: &str = "KEEL_TESTS_REQUIRE";

/// What a test does about one thing it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// It has it: it runs.
    Run,
    /// It lacks it and nothing says it should be there: it is skipped.
    Skip,
    /// It lacks it but `required` (the value of [`REQUIRE`]) names it.
    Fail,
}

/// The verdict for a test that needs `what` and has it or not (`have`),
/// given the value of `KEEL_TESTS_REQUIRE` (`required`; empty when unset).
/// Names match after trimming, so `root, gcc -fopenmp` names both.
fn verdict(what: &str, have: bool, required: &str) -> Verdict {
    if have {
        Verdict::Run
    } else if required.split(',').any(|r| r.trim() == what) {
        Verdict::Fail
    } else {
        Verdict::Skip
    }
}

/// Whether `test`, which needs `what` from the environment, can run:
/// `have` says whether the environment has it.
///
/// With `have`, writes `ran: {test} (with {what})` to standard error and
/// returns `true`. Without, panics if `KEEL_TESTS_REQUIRE` (a
/// comma-separated list, each name trimmed) names `what`; otherwise
/// writes `SKIPPED: {test} needs {what}` and returns `false`, and the
/// test should return without asserting anything.
///
/// # Panics
///
/// When `have` is false and `KEEL_TESTS_REQUIRE` names `what`; the panic
/// points at the caller.
///
/// # Examples
///
/// ```
/// fn needs_sh() {
///     let test = "needs_sh";
///     let have = std::process::Command::new("sh")
///         .args(["-c", "exit 0"])
///         .status()
///         .is_ok_and(|s| s.success());
///     if !keel_testkit::can_run(test, "sh", have) {
///         return;
///     }
///     // The test proper, which may rely on `sh`.
/// }
/// needs_sh();
///
/// // Something the environment has always runs.
/// assert!(keel_testkit::can_run("doc example", "a Rust toolchain", true));
/// ```
#[track_caller]
pub fn can_run(test: &str, what: &str, have: bool) -> bool {
    // A value that is not Unicode names nothing this rule could match.
    let required = std::env::var(REQUIRE).unwrap_or_default();
    match verdict(what, have, &required) {
        Verdict::Run => {
            let _ = writeln!(std::io::stderr().lock(), "ran: {test} (with {what})");
            true
        }
        Verdict::Skip => {
            let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test} needs {what}");
            false
        }
        Verdict::Fail => {
            panic!("{test} needs {what}, and {REQUIRE} says this environment has it")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_test_has_runs_whatever_is_required() {
        assert_eq!(verdict("root", true, ""), Verdict::Run);
        assert_eq!(verdict("root", true, "root"), Verdict::Run);
        assert!(can_run("have_runs", "something it has", true));
    }

    #[test]
    fn what_the_test_lacks_is_skipped_unless_required() {
        assert_eq!(verdict("root", false, ""), Verdict::Skip);
        assert_eq!(verdict("root", false, "two CPUs,slurm"), Verdict::Skip);
        // A name matches whole, not as a part of another.
        assert_eq!(verdict("gcc", false, "gcc -fopenmp"), Verdict::Skip);
        assert_eq!(verdict("gcc -fopenmp", false, "gcc"), Verdict::Skip);
        assert_eq!(verdict("root", false, "Root"), Verdict::Skip);
    }

    #[test]
    fn what_the_test_lacks_fails_where_required() {
        assert_eq!(verdict("root", false, "root"), Verdict::Fail);
        assert_eq!(
            verdict("gcc -fopenmp", false, "root, gcc -fopenmp ,nm"),
            Verdict::Fail
        );
        assert_eq!(verdict("nm", false, "root,gcc -fopenmp,nm"), Verdict::Fail);
    }

    /// No environment requires this name, so the test does not depend on
    /// `KEEL_TESTS_REQUIRE`, which other tests of this binary never set.
    #[test]
    fn can_run_skips_what_nothing_requires() {
        assert!(!can_run(
            "lacking_skips",
            "a tool no environment names in KEEL_TESTS_REQUIRE",
            false
        ));
    }
}
