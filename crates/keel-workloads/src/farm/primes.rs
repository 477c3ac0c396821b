//! `primes`: the paper's synthetic task, "calculating all prime numbers up
//! to 7,500" (§III-B), by trial division up to `√k` for every `k` in
//! `2..=limit`. Heterogeneous workers are simulated as the paper does
//! (§III-C): the tasks run by the first `fast-workers` workers count only
//! up to `fast-limit` (2,000: about 6.5× cheaper on this machine, so Eq. 2
//! gives `S = Σsᵢ / (p·s₁) = (6.5 + 1) / 2 ≈ 3.75` for two workers).
//!
//! Trial division, and the fast workers' lower limit:
//!
//! ```
//! use keel_workloads::farm::{count_primes, Primes};
//! assert_eq!(count_primes(7_500), 950);
//! let p = Primes { fast_workers: 2, ..Primes::default() };
//! assert_eq!((p.limit_for(1), p.limit_for(2)), (2_000, 7_500));
//! assert_eq!(Primes::parse(&p.spec()).unwrap(), p);
//! ```

use keel_policy::Spec;

use crate::error::WorkloadError;
use crate::params::count;

/// The paper's task: primes up to 7,500.
pub const DEFAULT_LIMIT: u32 = 7_500;
/// The fast worker's task: primes up to 2,000.
pub const DEFAULT_FAST_LIMIT: u32 = 2_000;
/// Default number of tasks.
pub const DEFAULT_TASKS: usize = 1_000;
/// The largest limit accepted (a typo should not take hours per task).
pub const MAX_LIMIT: usize = 10_000_000;

/// The number of primes in `2..=limit`, by trial division.
pub fn count_primes(limit: u32) -> u32 {
    let mut count = 0;
    for k in 2..=limit {
        let mut d = 2;
        let mut prime = true;
        while d * d <= k {
            if k % d == 0 {
                prime = false;
                break;
            }
            d += 1;
        }
        count += u32::from(prime);
    }
    count
}

/// A stream of prime-counting tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Primes {
    /// Number of tasks.
    pub tasks: usize,
    /// Each task counts the primes up to this.
    pub limit: u32,
    /// ... except on the first `fast_workers` workers, which count to this.
    pub fast_limit: u32,
    /// Number of fast workers (0 = uniform).
    pub fast_workers: usize,
}

impl Default for Primes {
    /// 1,000 uniform tasks up to 7,500.
    fn default() -> Self {
        Primes {
            tasks: DEFAULT_TASKS,
            limit: DEFAULT_LIMIT,
            fast_limit: DEFAULT_FAST_LIMIT,
            fast_workers: 0,
        }
    }
}

impl Primes {
    /// The workload's name.
    pub const NAME: &'static str = "primes";

    /// `primes[:tasks=1000,limit=7500,fast-limit=2000,fast-workers=0]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["tasks", "limit", "fast-limit", "fast-workers"])?;
        let d = Primes::default();
        Ok(Primes {
            tasks: count(spec, "tasks", d.tasks, 0, usize::MAX)?,
            limit: count(spec, "limit", d.limit as usize, 2, MAX_LIMIT)? as u32,
            fast_limit: count(spec, "fast-limit", d.fast_limit as usize, 2, MAX_LIMIT)? as u32,
            fast_workers: count(spec, "fast-workers", d.fast_workers, 0, 1 << 16)?,
        })
    }

    /// Builds from a spec string.
    pub fn parse(text: &str) -> Result<Self, WorkloadError> {
        let spec = Spec::parse(text)?;
        if spec.name != Self::NAME {
            return Err(WorkloadError::UnknownWorkload {
                name: spec.name,
                valid: vec![Self::NAME.into()],
            });
        }
        Self::from_spec(&spec)
    }

    /// The spec that rebuilds this workload, every parameter spelled out.
    pub fn spec(&self) -> String {
        format!(
            "primes:tasks={},limit={},fast-limit={},fast-workers={}",
            self.tasks, self.limit, self.fast_limit, self.fast_workers
        )
    }

    /// The limit worker `worker` counts to.
    pub fn limit_for(&self, worker: usize) -> u32 {
        if worker < self.fast_workers {
            self.fast_limit
        } else {
            self.limit
        }
    }

    /// Runs one task on worker `worker`; returns the count (a checksum).
    pub fn run(&self, worker: usize) -> u32 {
        count_primes(std::hint::black_box(self.limit_for(worker)))
    }

    /// The paper's Eq. 2 for these workers, given the measured speed of a
    /// fast worker relative to a slow one: `S = Σsᵢ / (p·s_slow)`.
    pub fn model_speedup(&self, workers: usize, fast_speed: f64) -> f64 {
        let fast = self.fast_workers.min(workers) as f64;
        let slow = workers as f64 - fast;
        if slow == 0.0 {
            return 1.0;
        }
        (fast * fast_speed + slow) / workers as f64
    }
}
