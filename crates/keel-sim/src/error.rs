//! Typed errors of the simulator: bad models, bad parameters, bad traces.
//!
//! Every message names what was wrong and what is valid:
//!
//! ```
//! use keel_sim::loops::IterationCosts;
//! let err = IterationCosts::new(&[1.0, -2.0]).unwrap_err();
//! assert!(matches!(err, keel_sim::SimError::InvalidParameter { .. }));
//! assert!(err.to_string().starts_with("invalid "));
//! ```

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
    /// A size beyond one of the simulator's named limits (a machine, an
    /// amount of simulated work, a time quantum), refused before anything
    /// is allocated or run.
    #[error("{what} {value} exceeds the simulator's limit ({limit})")]
    OverLimit {
        /// What was too large (or too small).
        what: &'static str,
        /// The offending value.
        value: String,
        /// The limit, its value and the constant that holds it.
        limit: String,
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
            value: shown(value.to_string()),
            valid,
        }
    }

    /// Shorthand for [`SimError::OverLimit`].
    pub fn over_limit(what: &'static str, value: impl ToString, limit: impl Into<String>) -> Self {
        SimError::OverLimit {
            what,
            value: shown(value.to_string()),
            limit: limit.into(),
        }
    }
}

/// A number as a person reads it: `f64`'s `Display` writes every digit
/// (309 of them for `f64::MAX`), so long numbers are written in scientific
/// notation; anything else is kept as written.
pub fn shown(text: String) -> String {
    const LONGEST: usize = 24;
    if text.len() <= LONGEST {
        return text;
    }
    match text.parse::<f64>() {
        Ok(x) => format!("{x:e}"),
        Err(_) => text,
    }
}

impl From<keel_policy::PolicyError> for SimError {
    fn from(e: keel_policy::PolicyError) -> Self {
        SimError::Policy(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_numbers_are_shown_in_scientific_notation() {
        let e = SimError::invalid("OS tick", f64::MAX, "must be small");
        let text = e.to_string();
        assert!(text.contains("1.7976931348623157e308"), "{text}");
        assert!(text.len() < 80, "{text}");
        // Short values and non-numbers are kept as written.
        assert_eq!(shown("0.025".into()), "0.025");
        let words = "a long value that is not a number at all".to_string();
        assert_eq!(shown(words.clone()), words);
    }
}
