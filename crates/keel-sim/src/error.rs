//! Typed errors of the simulator: bad models, bad parameters, bad traces.

use thiserror::Error;

/// Everything that can go wrong when building or running a simulation.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SimError {
    /// A model parameter is outside its valid range (what, and what is valid).
    #[error("invalid {what}: {value} ({valid})")]
    InvalidParameter {
        /// The parameter's name.
        what: &'static str,
        /// The offending value, as written.
        value: String,
        /// What would have been accepted.
        valid: &'static str,
    },
    /// A policy refused its inputs; the message is the policy's.
    #[error("policy error: {0}")]
    Policy(String),
}

impl SimError {
    /// Shorthand for [`SimError::InvalidParameter`].
    pub fn invalid(what: &'static str, value: impl ToString, valid: &'static str) -> Self {
        SimError::InvalidParameter {
            what,
            value: value.to_string(),
            valid,
        }
    }
}

impl From<keel_policy::PolicyError> for SimError {
    fn from(e: keel_policy::PolicyError) -> Self {
        SimError::Policy(e.to_string())
    }
}
