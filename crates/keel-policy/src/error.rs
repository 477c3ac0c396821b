//! Typed errors shared by every policy family. Each message says what was
//! wrong and, where there is a closed set of valid answers, lists them.
//!
//! An unknown name lists the valid ones:
//!
//! ```
//! let err = keel_policy::mapping::registry().build("gredy").unwrap_err();
//! let message = err.to_string();
//! assert!(message.starts_with("unknown mapping policy `gredy`"));
//! assert!(message.contains("greedy"));
//! ```

use crate::concept::Concept;

/// The longest input a [`SpecError`]'s message quotes whole; longer inputs
/// are quoted around the problem, so a hostile input cannot make the
/// message arbitrarily long.
const QUOTE_LIMIT: usize = 160;

/// A spec string that does not follow the grammar.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("malformed spec `{}` at byte {position}: {problem}", quote(input, *position))]
pub struct SpecError {
    /// The whole input.
    pub input: String,
    /// Byte offset of the problem.
    pub position: usize,
    /// What is wrong there.
    pub problem: String,
}

/// `input` whole when it is short, else the [`QUOTE_LIMIT`] bytes around
/// `position` with `...` marking what is left out.
fn quote(input: &str, position: usize) -> String {
    if input.len() <= QUOTE_LIMIT {
        return input.to_string();
    }
    let floor = |mut i: usize| {
        i = i.min(input.len());
        while !input.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(position.saturating_sub(QUOTE_LIMIT / 2));
    let end = floor(start + QUOTE_LIMIT);
    format!(
        "{}{}{}",
        if start > 0 { "..." } else { "" },
        &input[start..end],
        if end < input.len() { "..." } else { "" }
    )
}

/// Everything that can go wrong between a context, the registry and a policy.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A spec string did not parse.
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// No policy of that name is registered in the family.
    #[error("unknown {family} policy `{name}`; valid names: {}", valid.join(", "))]
    UnknownPolicy {
        /// The family searched (`mapping`, `loop schedule`, ...).
        family: &'static str,
        /// The name asked for.
        name: String,
        /// The registered names.
        valid: Vec<String>,
    },

    /// A name was registered twice in one family.
    #[error("a {family} policy named `{name}` is already registered")]
    DuplicatePolicy {
        /// The family.
        family: &'static str,
        /// The name.
        name: String,
    },

    /// A spec named a parameter the policy does not take.
    #[error("policy `{policy}` has no parameter `{key}`; valid parameters: {}", if valid.is_empty() { "none".to_string() } else { valid.join(", ") })]
    UnknownParameter {
        /// The policy.
        policy: String,
        /// The unknown key.
        key: String,
        /// The keys the policy accepts.
        valid: Vec<String>,
    },

    /// A parameter's value is outside what the policy accepts.
    #[error("policy `{policy}`: parameter `{key}` = `{value}` is invalid: expected {expected}")]
    InvalidParameter {
        /// The policy.
        policy: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What would be valid.
        expected: String,
    },

    /// The context cannot provide an input the policy needs (paper Fig. 1, step 2).
    #[error("policy `{policy}` requires {requirement}, which no registered component provides (registered: {})", if available.is_empty() { "nothing".to_string() } else { available.join(", ") })]
    UnmetRequirement {
        /// The policy that asked.
        policy: String,
        /// The unmet requirement.
        requirement: Concept,
        /// What the context does provide.
        available: Vec<String>,
    },

    /// A component holds data of the wrong shape for its concept.
    #[error("policy `{policy}`: component `{component}` is malformed: {problem}")]
    MalformedComponent {
        /// The policy that asked.
        policy: String,
        /// The component's name.
        component: String,
        /// What is wrong.
        problem: String,
    },

    /// Two inputs disagree on the number of tasks or PUs.
    #[error("{concept} has {found} entries but there are {expected} {unit}")]
    LengthMismatch {
        /// The input that disagrees.
        concept: Concept,
        /// The length implied by the primary input.
        expected: usize,
        /// The length found.
        found: usize,
        /// `tasks` or `PUs`.
        unit: &'static str,
    },

    /// A load, speed or time is NaN, infinite, negative (or zero for speeds).
    #[error("{what} {index} is {}: {expected}", compact(*value))]
    InvalidNumber {
        /// What the number is ("task load", "PU speed", ...).
        what: &'static str,
        /// Its index.
        index: usize,
        /// The value found.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },

    /// Loads are each finite but so large that a PU's time would overflow.
    #[error("loads are too large: a PU's time could reach {bound:e}, beyond the range of f64 (scale the loads down)")]
    LoadOverflow {
        /// The bound that overflowed (infinite).
        bound: f64,
    },

    /// A `hier` level was asked for more nodes than the PUs it groups.
    ///
    /// A nested `hier` sees only its share of the PUs; each enclosing level
    /// rewrites `machine` to its own count and prepends itself to `level`,
    /// so the message names the PU count the user gave.
    #[error(
        "policy `hier`{}: parameter `nodes` = `{nodes}` is invalid: expected at most {}",
        if level.is_empty() { String::new() } else { format!(" ({level})") },
        if level.is_empty() {
            format!("the number of PUs ({machine})")
        } else {
            format!("the {group} PUs that level is given, of the {machine} PUs in all")
        }
    )]
    HierNodes {
        /// The node count asked for.
        nodes: usize,
        /// The PUs that level groups.
        group: usize,
        /// The PUs of the whole problem.
        machine: usize,
        /// Where the level sits, outermost first (`inner of hier:nodes=2`);
        /// empty for the outermost level.
        level: String,
    },

    /// There is no PU at all.
    #[error("there are no PUs to map onto (need at least one)")]
    NoPus,

    /// Every PU is marked unavailable.
    #[error("all {0} PUs are unavailable: at least one must accept work")]
    NoAvailablePu(usize),

    /// A placement names a PU that does not exist.
    #[error("task {task} is placed on PU {pu}, but there are only {npus} PUs")]
    PuOutOfRange {
        /// The task.
        task: usize,
        /// The PU it names.
        pu: usize,
        /// The number of PUs.
        npus: usize,
    },

    /// An unmigratable task has no current PU, so it cannot stay where it is.
    #[error("task {task} is not migratable but has no current PU (provide a current mapping that places it)")]
    UnplacedUnmigratable {
        /// The task.
        task: usize,
    },

    /// An unmigratable task sits on a PU that may not run work (GreedyLB aborts here too).
    #[error("task {task} is not migratable but sits on unavailable PU {pu}")]
    PinnedToUnavailable {
        /// The task.
        task: usize,
        /// Its PU.
        pu: usize,
    },
}

/// `v` as a message shows it: plainly when that is short, in scientific
/// notation when the plain form would run to many digits (`f64::MAX` is
/// `1.7976931348623157e308`, not 309 digits; `1e-300` is not 300 zeros).
pub fn compact(v: f64) -> String {
    let magnitude = v.abs();
    if v.is_finite() && magnitude != 0.0 && !(1e-5..1e16).contains(&magnitude) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_numbers_stay_short() {
        assert_eq!(compact(f64::MAX), "1.7976931348623157e308");
        assert_eq!(compact(f64::MIN), "-1.7976931348623157e308");
        assert_eq!(compact(-1e300), "-1e300");
        assert_eq!(compact(1e-300), "1e-300");
        assert_eq!(compact(1.5), "1.5");
        assert_eq!(compact(-2.0), "-2");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(f64::NAN), "NaN");
        assert_eq!(compact(f64::INFINITY), "inf");
        assert_eq!(compact(123456789.0), "123456789");
    }

    #[test]
    fn invalid_numbers_print_compactly() {
        let err = PolicyError::InvalidNumber {
            what: "task load",
            index: 3,
            value: -f64::MAX,
            expected: "a finite number >= 0",
        };
        assert_eq!(
            err.to_string(),
            "task load 3 is -1.7976931348623157e308: a finite number >= 0"
        );
    }
}
