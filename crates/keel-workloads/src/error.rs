//! Typed errors: what was wrong, where, and what would be valid.

use keel_policy::{PolicyError, SpecError};

/// A workload spec that cannot be generated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// The spec string did not parse.
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// No generator of that name.
    #[error("unknown workload `{name}`; valid names: {}", valid.join(", "))]
    UnknownWorkload {
        /// The name asked for.
        name: String,
        /// The generators' names.
        valid: Vec<String>,
    },

    /// The spec names a parameter the generator does not take.
    #[error("workload `{workload}` has no parameter `{key}`; valid parameters: {}", valid.join(", "))]
    UnknownParameter {
        /// The generator.
        workload: String,
        /// The unknown key.
        key: String,
        /// The keys it accepts.
        valid: Vec<String>,
    },

    /// A parameter's value is out of range.
    #[error(
        "workload `{workload}`: parameter `{key}` = `{value}` is invalid: expected {expected}"
    )]
    InvalidParameter {
        /// The generator.
        workload: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What would be valid.
        expected: String,
    },

    /// A policy used to build the starting mapping refused the problem.
    #[error(transparent)]
    Policy(PolicyError),
}

impl From<PolicyError> for WorkloadError {
    /// Generators reuse [`keel_policy::Spec`]'s parameter helpers, whose
    /// errors speak of a "policy"; here the subject is a workload.
    fn from(error: PolicyError) -> Self {
        match error {
            PolicyError::Spec(e) => WorkloadError::Spec(e),
            PolicyError::UnknownParameter { policy, key, valid } => {
                WorkloadError::UnknownParameter {
                    workload: policy,
                    key,
                    valid,
                }
            }
            PolicyError::InvalidParameter {
                policy,
                key,
                value,
                expected,
            } => WorkloadError::InvalidParameter {
                workload: policy,
                key,
                value,
                expected,
            },
            other => WorkloadError::Policy(other),
        }
    }
}

/// A trace file that cannot be read into a [`crate::MappingProblem`].
///
/// `at` fields name a place the way compilers do: `file:line:column` for CSV
/// and JSON syntax, `file` plus a field such as `task_loads[3]` for JSON
/// values.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// The extension is neither `.json` nor `.csv`.
    #[error("`{path}`: unknown trace format; expected {expected}")]
    UnknownFormat {
        /// The file.
        path: String,
        /// The accepted extensions.
        expected: &'static str,
    },

    /// The file does not follow JSON or CSV syntax, or a JSON value has the
    /// wrong type.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: String,
        /// What is wrong.
        message: String,
    },

    /// A CSV file with no header row.
    #[error("`{path}` is empty; its first line must name the columns (valid: {})", valid.join(", "))]
    Empty {
        /// The file.
        path: String,
        /// The columns it may have.
        valid: Vec<&'static str>,
    },

    /// A required CSV column is absent.
    #[error("`{path}`: missing column `{column}` (the header has: {})", found.join(", "))]
    MissingColumn {
        /// The file.
        path: String,
        /// The missing column.
        column: &'static str,
        /// The columns the header does name.
        found: Vec<String>,
    },

    /// A CSV column that is not understood (a typo would otherwise be ignored).
    #[error("`{path}`: unknown column `{column}`; valid columns: {}", valid.join(", "))]
    UnknownColumn {
        /// The file.
        path: String,
        /// The column.
        column: String,
        /// The columns the file may have.
        valid: Vec<&'static str>,
    },

    /// A CSV column named twice.
    #[error("`{path}`: column `{column}` appears twice in the header")]
    DuplicateColumn {
        /// The file.
        path: String,
        /// The column.
        column: String,
    },

    /// A value that does not parse or is out of range.
    #[error("{at}: `{field}` = `{value}` is invalid: expected {expected}")]
    BadValue {
        /// Where.
        at: String,
        /// The column or JSON field (with its index for arrays).
        field: String,
        /// The value as written.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },

    /// Two tasks with the same id (the `id`/`task` CSV column or the JSON
    /// `task_ids` array): a mapping keyed by id would be ambiguous.
    #[error("{at}: task id `{id}` appears twice (first at {first})")]
    DuplicateTaskId {
        /// Where the second one is.
        at: String,
        /// The id.
        id: String,
        /// Where the first one is.
        first: String,
    },

    /// A CSV task table with both an `id` and a `task` column.
    #[error("`{path}`: columns `id` and `task` both name the task; keep one")]
    TwoIdColumns {
        /// The file.
        path: String,
    },

    /// The trace lists no task.
    #[error("`{path}` contains no tasks")]
    NoTasks {
        /// The file.
        path: String,
    },

    /// Nothing says how many PUs there are.
    #[error("`{path}` does not say how many PUs there are: give the number of PUs (`num_pus` in JSON, `--pus` on the command line), PU loads, speeds or availability, or a PU file")]
    UnknownPuCount {
        /// The task file.
        path: String,
    },

    /// Two sources disagree on the number of PUs.
    #[error("the inputs disagree on the number of PUs: {}", counts.iter().map(|(who, n)| format!("{who} says {n}")).collect::<Vec<_>>().join(", "))]
    PuCountConflict {
        /// Each source and the count it implies.
        counts: Vec<(String, usize)>,
    },

    /// A source states more PUs than a trace may have, so that a typo such
    /// as `--pus 18446744073709551615` is an error rather than an
    /// allocation failure.
    #[error("{who} says {count} PUs, but a trace may have at most {limit} (MAX_PUS)")]
    TooManyPus {
        /// The source (`num_pus in t.json`, `the PU count given (--pus)`).
        who: String,
        /// The count it states.
        count: usize,
        /// The limit, [`crate::generate::MAX_PUS`].
        limit: usize,
    },

    /// The same per-PU field is given by two sources.
    #[error("{field} is given twice: by {first} and by {second}")]
    DuplicateField {
        /// The field.
        field: &'static str,
        /// One source.
        first: String,
        /// The other.
        second: String,
    },

    /// A per-task array whose length differs from the number of tasks.
    #[error("{at}: `{field}` has {found} entries but there are {expected} tasks")]
    LengthMismatch {
        /// The file.
        at: String,
        /// The field.
        field: &'static str,
        /// Its length.
        found: usize,
        /// The number of tasks.
        expected: usize,
    },

    /// The trace parses but is not a valid mapping problem.
    #[error("{at}: {source}")]
    Invalid {
        /// The file, and the line of the task concerned when known.
        at: String,
        /// What the policy library rejected.
        #[source]
        source: PolicyError,
    },
}
