//! Why an experiment did not run: each variant carries the message a user
//! can act on, already naming the experiment or the option at fault.
//!
//! ```
//! use keel_experiments::ExperimentError;
//! let e = ExperimentError::Invalid("--reps must be at least 1".into());
//! assert_eq!(e.to_string(), "--reps must be at least 1");
//! ```

use keel_policy::PolicyError;
use keel_workloads::WorkloadError;

/// A failed experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// A configuration that does not make an experiment (a zero count, a
    /// negative noise, too many steps); the message names the setting.
    #[error("{0}")]
    Invalid(String),

    /// The simulator, the calibration or a trace refused the input.
    #[error("{context}: {source}")]
    Sim {
        /// The experiment that asked (`sim`, `sim farm`, …).
        context: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A policy spec that does not build, or a policy that refused its input.
    #[error(transparent)]
    Policy(#[from] PolicyError),

    /// A workload spec that does not generate.
    #[error(transparent)]
    Workload(#[from] WorkloadError),

    /// A valid experiment that failed while it ran (a program that could
    /// not be built or run, or whose results disagree).
    #[error("{0}")]
    Failed(String),
}

impl ExperimentError {
    /// A simulator-side error seen by the experiment `context`.
    pub fn sim(context: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ExperimentError::Sim {
            context,
            source: Box::new(e),
        }
    }
}

/// An experiment's outcome.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;
