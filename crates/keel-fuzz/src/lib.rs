//! Fuzzing of Keel's parsers on stable Rust.
//!
//! Every parser that reads text from outside the program is a [`Target`]: a
//! function of the input bytes that calls the public parser and, for what it
//! accepts, checks that the result is usable (a spec prints back to itself,
//! a job's arrival is a time the daemon can wait for, a mapping policy maps
//! a small problem). A target never asserts *which* inputs are valid; it
//! fails only on a panic, a hang, or an accepted value that is unusable.
//!
//! Inputs come from two generators per target, chosen alternately by case
//! number:
//!
//! - [`grammar`]: proptest strategies producing well-formed-ish inputs
//!   (nested specs, extreme numbers, quoted arguments, ragged CSV rows);
//! - [`mutate`]: byte-level mutation of the committed seed corpus
//!   (`corpus/<target>/*`): bit flips, inserted, deleted and repeated
//!   ranges, splices of two seeds, numbers replaced by extreme values.
//!
//! Case `i` of a run with seed `s` depends on `(s, target, i)` only
//! ([`case_input`]), so any failure is reproduced by its seed and case
//! number, and a run can resume after a case that killed its process.
//!
//! [`driver`] runs the cases: a worker process runs them on a thread with a
//! bounded stack ([`CASE_STACK`]) under an address-space limit
//! ([`MEMORY_LIMIT`]), catching panics and timing each case against
//! [`CASE_LIMIT`]; a supervisor restarts the worker after a case that
//! aborted it (stack overflow, allocation failure) and collects every
//! failure with its input. The `keel-fuzz` binary is that worker, and the
//! command line for running a target by hand.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub mod corpus;
pub mod driver;
pub mod grammar;
pub mod mutate;
pub mod targets;

pub use targets::{target, targets, Target};

/// Largest input a generator produces, bytes.
pub const MAX_INPUT: usize = 64 * 1024;

/// A case running longer than this is a hang.
pub const CASE_LIMIT: Duration = Duration::from_secs(2);

/// Stack of the thread that runs the cases, bytes: deep recursion on
/// hostile nesting overflows it (a failure) long before it could pass for
/// normal behaviour on a thread with a larger stack.
pub const CASE_STACK: usize = 1 << 20;

/// Address space a worker process may use, bytes: an allocation sized by
/// an unchecked number fails (and is reported) instead of exhausting the
/// machine.
pub const MEMORY_LIMIT: u64 = 4 << 30;

/// The seed of case `index` of `target` in a run seeded with `seed`
/// (SplitMix64 over the three, so neighbouring cases are unrelated).
pub fn case_seed(seed: u64, target: &str, index: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in target.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    splitmix(splitmix(seed ^ h) ^ index)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How a case's input was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The target's proptest grammar.
    Grammar,
    /// Mutation of the seed corpus.
    Mutation,
}

impl Source {
    /// The generator of case `index`: the two alternate.
    pub fn of_case(index: u64) -> Source {
        if index.is_multiple_of(2) {
            Source::Grammar
        } else {
            Source::Mutation
        }
    }
}

/// The input of case `index`: from `grammar` or by mutating `seeds`,
/// as [`Source::of_case`] says, at most [`MAX_INPUT`] bytes.
pub fn case_input(
    grammar: &grammar::Grammar,
    seeds: &[Vec<u8>],
    seed: u64,
    target: &str,
    index: u64,
) -> Vec<u8> {
    let s = case_seed(seed, target, index);
    let mut input = match Source::of_case(index) {
        Source::Grammar => grammar.generate(s),
        Source::Mutation => mutate::mutate(&mut ChaCha8Rng::seed_from_u64(s), seeds),
    };
    input.truncate(MAX_INPUT);
    input
}

/// A seed from the clock, for runs not given one (always printed, so the
/// run can be repeated).
pub fn time_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    splitmix(now.as_secs() ^ u64::from(now.subsec_nanos()).rotate_left(32))
}

/// One line on a finished run of `target`: cases, time, rate, failures.
pub fn report_line(target: &str, summary: &driver::Summary) -> String {
    let rate = if summary.seconds > 0.0 {
        summary.cases as f64 / summary.seconds
    } else {
        0.0
    };
    format!(
        "{target:14} {:>9} cases in {:6.2} s = {:>9.0} cases/s, {} failing ({} distinct)",
        summary.cases,
        summary.seconds,
        rate,
        summary.failures.len() as u64 + summary.unreported,
        summary.distinct().len()
    )
}

/// `bytes` as printable ASCII: `\n`, `\t`, `\\` and `\xNN` escapes, cut
/// after `max` bytes with a note of the full length.
pub fn escape(bytes: &[u8], max: usize) -> String {
    let mut out = String::new();
    for &b in bytes.iter().take(max) {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    if bytes.len() > max {
        out.push_str(&format!("... ({} bytes in all)", bytes.len()));
    }
    out
}

/// Reverses [`escape`] (of an input that was not cut).
pub fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            match bytes[i + 1] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'\\' => out.push(b'\\'),
                b'x' if i + 4 <= bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(v) => {
                            out.push(v);
                            i += 4;
                            continue;
                        }
                        Err(_) => out.extend_from_slice(b"\\x"),
                    }
                }
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
            i += 2;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).chain(*b"\\x4g\\").collect();
        assert_eq!(unescape(&escape(&all, usize::MAX)), all);
    }

    #[test]
    fn case_seeds_differ_by_target_and_index() {
        assert_ne!(case_seed(1, "swf", 0), case_seed(1, "swf", 1));
        assert_ne!(case_seed(1, "swf", 0), case_seed(1, "control", 0));
        assert_eq!(case_seed(7, "swf", 3), case_seed(7, "swf", 3));
    }
}
