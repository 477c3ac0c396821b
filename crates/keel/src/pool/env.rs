//! The pool's environment variables, read like their OpenMP counterparts
//! (`OMP_NUM_THREADS`, `OMP_WAIT_POLICY`, `OMP_PROC_BIND`).

use super::DEFAULT_SPINS;

/// Most participants a pool may have (LLVM's OpenMP runtime caps its
/// teams at the same 32,768): a larger count is a typed error, not an
/// attempt to start that many threads.
///
/// ```
/// let err = keel::ThreadPool::builder().threads(keel::pool::MAX_THREADS + 1).build();
/// assert!(err.unwrap_err().to_string().contains("MAX_THREADS"));
/// ```
pub const MAX_THREADS: usize = 1 << 15;

/// How a waiting thread waits for the next region or the join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Spin until work arrives (`KEEL_WAIT_POLICY=active`): lowest latency,
    /// burns a core while idle.
    Active,
    /// Park at once (`KEEL_WAIT_POLICY=passive`): pays a wake-up per region.
    Passive,
    /// Spin for [`DEFAULT_SPINS`], then park (the default).
    #[default]
    Bounded,
    /// Spin this many times, then park.
    Spins(u32),
}

impl WaitPolicy {
    pub(crate) fn spins(self) -> u32 {
        match self {
            WaitPolicy::Active => u32::MAX,
            WaitPolicy::Passive => 0,
            WaitPolicy::Bounded => DEFAULT_SPINS,
            WaitPolicy::Spins(n) => n,
        }
    }
}

/// Why a pool could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// A pool needs at least the caller.
    #[error("a thread pool needs at least 1 thread (got 0)")]
    ZeroThreads,
    /// More participants than [`MAX_THREADS`].
    #[error("a thread pool may have at most {max} threads (MAX_THREADS), not {threads}", max = MAX_THREADS)]
    TooManyThreads {
        /// The count asked for.
        threads: usize,
    },
    /// An environment variable does not parse.
    #[error("{var}={value:?} is invalid: expected {expected}")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },
    /// The OS refused a thread.
    #[error("could not start a worker thread: {0}")]
    Spawn(String),
}

fn read(var: &'static str) -> Option<String> {
    std::env::var(var)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// `KEEL_NUM_THREADS`: a positive integer.
pub(crate) fn threads() -> Result<Option<usize>, PoolError> {
    const EXPECTED: &str = "a positive integer";
    read("KEEL_NUM_THREADS")
        .map(|v| match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(PoolError::BadEnv {
                var: "KEEL_NUM_THREADS",
                value: v,
                expected: EXPECTED,
            }),
        })
        .transpose()
}

/// `KEEL_WAIT_POLICY`: `active`, `passive`, or a spin count.
pub(crate) fn wait_policy() -> Result<Option<WaitPolicy>, PoolError> {
    read("KEEL_WAIT_POLICY")
        .map(|v| match v.to_ascii_lowercase().as_str() {
            "active" => Ok(WaitPolicy::Active),
            "passive" => Ok(WaitPolicy::Passive),
            other => other
                .parse()
                .map(WaitPolicy::Spins)
                .map_err(|_| PoolError::BadEnv {
                    var: "KEEL_WAIT_POLICY",
                    value: v.clone(),
                    expected: "active, passive, or a number of spins",
                }),
        })
        .transpose()
}

/// `KEEL_PIN`: `true|false|1|0`.
pub(crate) fn pin() -> Result<Option<bool>, PoolError> {
    read("KEEL_PIN")
        .map(|v| match v.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(PoolError::BadEnv {
                var: "KEEL_PIN",
                value: v,
                expected: "true or false",
            }),
        })
        .transpose()
}
