//! The pool's environment variables, read like their OpenMP counterparts
//! (`OMP_NUM_THREADS`, `OMP_WAIT_POLICY`, `OMP_PROC_BIND`).

use super::{PoolBuilder, DEFAULT_SPINS};

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
    /// An environment variable does not parse ([`PoolBuilder::try_env`];
    /// [`PoolBuilder::build`] warns and uses the default instead).
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

/// One pool variable: its name, what it accepts, what an unset or bad
/// value falls back to, and its parser.
struct Var<T> {
    name: &'static str,
    expected: &'static str,
    default: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<T> Var<T> {
    /// The value, `None` when unset; a bad value is a typed error.
    fn strict(&self) -> Result<Option<T>, PoolError> {
        read(self.name)
            .map(|v| {
                (self.parse)(&v).ok_or(PoolError::BadEnv {
                    var: self.name,
                    value: v,
                    expected: self.expected,
                })
            })
            .transpose()
    }

    /// The value, `None` when unset or bad; a bad value is warned about
    /// once per process (as libgomp does with `OMP_NUM_THREADS`).
    fn lenient(&self) -> Option<T> {
        self.strict().unwrap_or_else(|err| {
            if let PoolError::BadEnv { value, .. } = &err {
                crate::warn::once(self.name, value, || {
                    format!(
                        "{}={value:?} is invalid (expected {}); using {}",
                        self.name, self.expected, self.default
                    )
                });
            }
            None
        })
    }
}

/// `KEEL_NUM_THREADS`: a positive integer.
const THREADS: Var<usize> = Var {
    name: "KEEL_NUM_THREADS",
    expected: "a positive integer",
    default: "the available cores",
    parse: |v| v.parse().ok().filter(|&n| n > 0),
};

/// `KEEL_WAIT_POLICY`: `active`, `passive`, or a spin count.
const WAIT: Var<WaitPolicy> = Var {
    name: "KEEL_WAIT_POLICY",
    expected: "active, passive, or a number of spins",
    default: "a bounded spin",
    parse: |v| match v.to_ascii_lowercase().as_str() {
        "active" => Some(WaitPolicy::Active),
        "passive" => Some(WaitPolicy::Passive),
        other => other.parse().ok().map(WaitPolicy::Spins),
    },
};

/// `KEEL_PIN`: `true|false|1|0|yes|no|on|off`.
const PIN: Var<bool> = Var {
    name: "KEEL_PIN",
    expected: "true or false",
    default: "no pinning",
    parse: |v| match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    },
};

/// `KEEL_NUM_THREADS`, `None` when unset or bad (warned once).
///
/// A `Result` for [`PoolBuilder::build`]'s `?`: it is always `Ok`.
pub(crate) fn threads() -> Result<Option<usize>, PoolError> {
    Ok(THREADS.lenient())
}

/// `KEEL_WAIT_POLICY`, `None` when unset or bad (warned once); always `Ok`.
pub(crate) fn wait_policy() -> Result<Option<WaitPolicy>, PoolError> {
    Ok(WAIT.lenient())
}

/// `KEEL_PIN`, `None` when unset or bad (warned once); always `Ok`.
pub(crate) fn pin() -> Result<Option<bool>, PoolError> {
    Ok(PIN.lenient())
}

impl PoolBuilder {
    /// Fills the choices not made in code from `KEEL_NUM_THREADS`,
    /// `KEEL_WAIT_POLICY` and `KEEL_PIN`, with a typed error for a variable
    /// that does not parse: the checked form of what
    /// [`PoolBuilder::build`] does, which warns once and uses the default
    /// instead.
    ///
    /// ```
    /// // An unset variable leaves its choice to `build`'s default.
    /// let pool = keel::ThreadPool::builder().threads(2).try_env()?.build()?;
    /// assert_eq!(pool.threads(), 2);
    /// # Ok::<(), keel::PoolError>(())
    /// ```
    pub fn try_env(mut self) -> Result<Self, PoolError> {
        if self.threads.is_none() {
            self.threads = THREADS.strict()?;
        }
        if self.wait.is_none() {
            self.wait = WAIT.strict()?;
        }
        if self.pin.is_none() {
            self.pin = PIN.strict()?;
        }
        Ok(self)
    }
}
