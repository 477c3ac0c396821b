//! Everything that can stop a command, each with a message a user can act on,
//! and the exit status it ends the process with.
//!
//! Exit statuses follow the usual Unix split (clap's, GNU's): [`USAGE`] (2)
//! when the command line is wrong — a flag clap refuses, a bad value, a spec
//! that does not parse, an unknown name: the user fixes the command;
//! [`RUNTIME`] (1) when a well-formed command could not finish — an input
//! file that does not read or parse, output that cannot be written, a policy
//! that fails on valid input, an experiment that fails, or some rows that
//! could not run (printed after the rows that could). 0 only when everything
//! asked for ran.

use keel_policy::PolicyError;
use keel_workloads::{TraceError, WorkloadError};

/// Exit status of a usage error: the command line must change.
pub const USAGE: u8 = 2;

/// Exit status of a runtime failure: the command was well-formed but did
/// not finish, or finished only in part.
pub const RUNTIME: u8 = 1;

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A policy spec that does not build.
    #[error(transparent)]
    Policy(#[from] PolicyError),

    /// A workload spec that does not generate.
    #[error(transparent)]
    Workload(#[from] WorkloadError),

    /// A trace file that does not read.
    #[error(transparent)]
    Trace(#[from] TraceError),

    /// A demo section that does not exist.
    #[error("unknown demo section `{name}`; valid sections: {}", valid.join(", "))]
    UnknownSection {
        /// The name asked for.
        name: String,
        /// The sections there are.
        valid: Vec<&'static str>,
    },

    /// Arguments that do not make a command.
    #[error("{0}")]
    Usage(String),

    /// A well-formed command that failed while running (a file that could
    /// not be written, a simulator that refused its inputs).
    #[error("{0}")]
    Runtime(String),

    /// Some rows of a table could not run; the others were printed. Each
    /// entry names the row and says why.
    #[error("{} of {total} {what} failed:\n  {}", failed.len(), failed.join("\n  "))]
    Partial {
        /// What the rows are (`policies`, `schedules`).
        what: &'static str,
        /// How many rows were asked for.
        total: usize,
        /// `name: reason` of each failed row.
        failed: Vec<String>,
    },

    /// Output could not be written (also: a file could not be read).
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),

    /// The JSON report could not be encoded.
    #[error("cannot encode the JSON report: {0}")]
    Json(#[from] serde_json::Error),
}

impl From<keel_experiments::ExperimentError> for CliError {
    /// Every experiment error keeps its message; the spec and workload
    /// errors keep their own variants (and messages) as when the CLI met
    /// them first-hand.
    fn from(e: keel_experiments::ExperimentError) -> Self {
        use keel_experiments::ExperimentError as E;
        match e {
            E::Policy(p) => CliError::Policy(p),
            E::Workload(w) => CliError::Workload(w),
            // The simulator refuses inputs it cannot model (a cluster too
            // large, an unknown clock or kernel): values the user gave.
            usage @ (E::Invalid(_) | E::Sim { .. }) => CliError::Usage(usage.to_string()),
            E::Failed(message) => CliError::Runtime(message),
        }
    }
}

impl CliError {
    /// The process's exit status for this error: [`USAGE`] or [`RUNTIME`]
    /// (see the module docs).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Policy(_)
            | CliError::Workload(_)
            | CliError::UnknownSection { .. }
            | CliError::Usage(_) => USAGE,
            CliError::Trace(_)
            | CliError::Runtime(_)
            | CliError::Partial { .. }
            | CliError::Io(_)
            | CliError::Json(_) => RUNTIME,
        }
    }
}
