//! Everything that can stop a command, each with a message a user can act on.

use keel_policy::PolicyError;
use keel_workloads::{TraceError, WorkloadError};

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A policy spec that does not build.
    #[error(transparent)]
    Policy(#[from] PolicyError),

    /// A policy that refused the input.
    #[error("policy `{spec}` failed: {source}")]
    Decision {
        /// The policy spec.
        spec: String,
        /// Why.
        #[source]
        source: PolicyError,
    },

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

    /// Output could not be written.
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
            other => CliError::Usage(other.to_string()),
        }
    }
}
