//! The calibration file: the [`OverheadModel`] derived from empty-body
//! microbenchmarks of the thread runtime, the raw measurements it came
//! from, the machine and the date. `keel sim calibrate` (keel-cli, which
//! may run the thread runtime; this crate may not) measures and writes it;
//! the simulator loads it. The file the validation's goals use is committed
//! as `calibration/default.json` and embedded ([`Calibration::committed`]).
//!
//! **What is measured** (each the median of several repeats):
//! - `fork_join`: an empty parallel loop (`static`, one iteration per
//!   thread) on P threads, from the fork to the join;
//! - `claim_1_thread`: `dynamic,1` over N iterations of an empty body on
//!   one thread, per iteration: one uncontended claim;
//! - `claim_2_threads`: the same on two threads, per iteration: with an
//!   empty body the two threads claim back to back, so the shared counter's
//!   cache line is always contended and the loop runs at the counter's rate.
//! - `spin_unit`: seconds per unit of `keel_workloads::steps::spin` on one
//!   thread (the synthetic workloads' cost unit), a sequential kernel
//!   timing, not an overhead.
//!
//! **How the model follows** ([`OverheadModel::from_claims`]): the model
//! serves claims one at a time for `claim_serial` seconds and lets each
//! worker add `claim_local`. Back-to-back claims of two workers go at
//! `max(claim_serial, (claim_local + claim_serial)/2)` per claim, one worker
//! at `claim_local + claim_serial`. So when the two-thread rate `t₂` is above
//! half the one-thread cost `t₁`, `claim_serial = t₂` (contention shows) and
//! `claim_local = max(t₁ − t₂, 0)`; otherwise contention is not visible and
//! `claim_serial = t₁/2`, `claim_local = t₁/2`. When `t₂ > t₁` — on real
//! hardware a contended line costs more than an uncontended one — the model
//! keeps the contended rate, which is what makes small chunks expensive at
//! scale, and so overstates one lone claim by `t₂ − t₁`.
//!
//! The model from claim costs, and the committed file's round trip:
//!
//! ```
//! use keel_sim::{Calibration, OverheadModel};
//! // One thread claims in 40 ns, two in 30 ns each: 30 ns are serial.
//! let model = OverheadModel::from_claims(5e-6, 40e-9, 30e-9).unwrap();
//! assert_eq!((model.fork_join, model.claim_serial), (5e-6, 30e-9));
//! let committed = Calibration::committed().unwrap();
//! assert_eq!(Calibration::from_json(&committed.to_json()).unwrap(), committed);
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::error::SimError;
use crate::overhead::OverheadModel;

/// The file format's version.
pub const FORMAT: u32 = 1;

/// The committed calibration's text.
const COMMITTED: &str = include_str!("../calibration/default.json");

/// A calibration file that does not load.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CalibrationError {
    /// The file could not be read or written.
    #[error("calibration file `{path}`: {message}")]
    Io {
        /// The path.
        path: String,
        /// The system's message.
        message: String,
    },
    /// Not a calibration file.
    #[error("calibration file: line {line}, column {column}: {problem}")]
    Json {
        /// The line (1-based).
        line: usize,
        /// The column (1-based).
        column: usize,
        /// What is wrong.
        problem: String,
    },
    /// A file of another format version.
    #[error("calibration file has format {found}; this Keel reads format {FORMAT}: run `keel sim calibrate` again")]
    Format {
        /// The version found.
        found: u32,
    },
    /// Values out of range.
    #[error("calibration file: {0}")]
    Invalid(#[from] SimError),
}

/// The raw measurements, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    /// Threads of the fork-join measurement.
    pub threads: usize,
    /// Repeats each figure is the median of.
    pub repeats: usize,
    /// Iterations of each claim loop.
    pub claim_iterations: u64,
    /// Empty parallel loop, fork to join.
    pub fork_join: f64,
    /// `dynamic,1`, empty body, 1 thread: seconds per iteration.
    pub claim_1_thread: f64,
    /// `dynamic,1`, empty body, 2 threads: seconds per iteration.
    pub claim_2_threads: f64,
    /// Seconds per `spin` unit, sequential.
    pub spin_unit: f64,
}

/// The machine the calibration was taken on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineDescription {
    /// The CPU model, as the OS names it.
    pub cpu: String,
    /// Logical CPUs available to the process.
    pub logical_cpus: usize,
    /// Operating system and architecture.
    pub os: String,
}

impl MachineDescription {
    /// This machine (Linux's `/proc/cpuinfo` for the model, else "unknown").
    pub fn this_machine() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        MachineDescription {
            cpu,
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// A calibration: the model, where it came from, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`FORMAT`].
    pub format: u32,
    /// The derived overhead model.
    pub overhead: OverheadModel,
    /// Seconds per `keel_workloads::steps::spin` unit on one thread.
    pub spin_unit_seconds: f64,
    /// The raw measurements.
    pub measurements: Measurements,
    /// The machine.
    pub machine: MachineDescription,
    /// The date measured, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Free text: how it was run.
    #[serde(default)]
    pub notes: String,
}

impl OverheadModel {
    /// The model from measured claim costs (see the module docs):
    /// `fork_join` and the per-iteration times of `dynamic,1` with an empty
    /// body on one thread (`t1`) and on two (`t2`), in seconds.
    pub fn from_claims(fork_join: f64, t1: f64, t2: f64) -> Result<Self, SimError> {
        for (what, v) in [
            ("fork_join", fork_join),
            ("claim_1_thread", t1),
            ("claim_2_threads", t2),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SimError::invalid(what, v, "must be finite and ≥ 0 seconds"));
            }
        }
        let (claim_local, claim_serial) = if t2 > t1 / 2.0 {
            ((t1 - t2).max(0.0), t2)
        } else {
            (t1 / 2.0, t1 / 2.0)
        };
        let model = OverheadModel {
            fork_join,
            claim_local,
            claim_serial,
        };
        model.validate()?;
        Ok(model)
    }
}

impl Calibration {
    /// Derives the model from `measurements`.
    pub fn from_measurements(
        measurements: Measurements,
        machine: MachineDescription,
        date: String,
        notes: String,
    ) -> Result<Self, SimError> {
        let overhead = OverheadModel::from_claims(
            measurements.fork_join,
            measurements.claim_1_thread,
            measurements.claim_2_threads,
        )?;
        let calibration = Calibration {
            format: FORMAT,
            overhead,
            spin_unit_seconds: measurements.spin_unit,
            measurements,
            machine,
            date,
            notes,
        };
        calibration.validate()?;
        Ok(calibration)
    }

    fn validate(&self) -> Result<(), SimError> {
        self.overhead.validate()?;
        if !(self.spin_unit_seconds.is_finite() && self.spin_unit_seconds > 0.0) {
            return Err(SimError::invalid(
                "spin_unit_seconds",
                self.spin_unit_seconds,
                "must be finite and > 0",
            ));
        }
        Ok(())
    }

    /// Parses a calibration file's text.
    pub fn from_json(text: &str) -> Result<Self, CalibrationError> {
        let c: Calibration = serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            CalibrationError::Json {
                line: e.line(),
                column: e.column(),
                problem: match message.find(" at line ") {
                    Some(at) => message[..at].to_string(),
                    None => message,
                },
            }
        })?;
        if c.format != FORMAT {
            return Err(CalibrationError::Format { found: c.format });
        }
        c.validate()?;
        Ok(c)
    }

    /// The file's text (pretty JSON, one trailing newline).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("plain data always encodes");
        text.push('\n');
        text
    }

    /// Loads a calibration file.
    pub fn load(path: &Path) -> Result<Self, CalibrationError> {
        let text = std::fs::read_to_string(path).map_err(|e| CalibrationError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_json(&text)
    }

    /// Writes the file.
    pub fn save(&self, path: &Path) -> Result<(), CalibrationError> {
        std::fs::write(path, self.to_json()).map_err(|e| CalibrationError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// The committed calibration (`calibration/default.json`), embedded.
    pub fn committed() -> Result<Self, CalibrationError> {
        Self::from_json(COMMITTED)
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_follows_the_claim_rates() {
        // Contended: 2 threads slower per claim than half of one.
        let m = OverheadModel::from_claims(1e-6, 10e-9, 30e-9).unwrap();
        assert_eq!((m.claim_local, m.claim_serial), (0.0, 30e-9));
        let m = OverheadModel::from_claims(1e-6, 40e-9, 30e-9).unwrap();
        assert!((m.claim_local - 10e-9).abs() < 1e-18);
        assert_eq!(m.claim_serial, 30e-9);
        // Perfect scaling: no contention visible.
        let m = OverheadModel::from_claims(1e-6, 40e-9, 20e-9).unwrap();
        assert_eq!((m.claim_local, m.claim_serial), (20e-9, 20e-9));
        assert!(OverheadModel::from_claims(f64::NAN, 1e-9, 1e-9).is_err());
    }

    #[test]
    fn files_round_trip_and_bad_ones_are_typed_errors() {
        let committed = Calibration::committed().unwrap();
        let again = Calibration::from_json(&committed.to_json()).unwrap();
        assert_eq!(committed, again);
        assert!(matches!(
            Calibration::from_json("{"),
            Err(CalibrationError::Json { line: 1, .. })
        ));
        let old = committed
            .to_json()
            .replace("\"format\": 1", "\"format\": 0");
        assert_eq!(
            Calibration::from_json(&old),
            Err(CalibrationError::Format { found: 0 })
        );
        let negative = committed
            .to_json()
            .replacen("\"fork_join\": ", "\"fork_join\": -", 1);
        assert!(matches!(
            Calibration::from_json(&negative),
            Err(CalibrationError::Invalid(_))
        ));
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(today().len(), 10);
    }
}
