//! Farm workloads: the task streams of the paper's experiments
//! (FastFlow ARRS paper §III), each with a body that
//! does the work, deterministic and reading no clock.
//!
//! | name | tasks | cost | paper |
//! |---|---|---|---|
//! | [`primes`](Primes) | count the primes up to `limit` by trial division | uniform (`limit=7500`, about 0.14 ms here), or cheaper on the first `fast-workers` workers (`fast-limit=2000`, about 6.5× cheaper) | §III-B (Fig. 6), §III-C (Figs. 7–8), §III-D (Fig. 10) |
//! | [`md`](MdPairs) | one Lennard-Jones pair force | very short, uniform | §III-E.1, CMD (Fig. 11) |
//! | [`material`](Material) | a local search on a cutting-order solution; results return to the pool | per-worker strategy cost | §III-E.2 (Fig. 13) |
//!
//! Built from spec strings with the policies' grammar, e.g.
//! `primes:tasks=4000,limit=7500,fast-limit=2000,fast-workers=1`; every
//! default is fixed and pinned by `tests/golden.rs`.
//!
//! A `primes` stream with one fast worker: its tasks count to a lower limit.
//!
//! ```
//! use keel_workloads::farm::{count_primes, Primes};
//! assert_eq!(count_primes(10), 4); // 2, 3, 5, 7
//! let primes = Primes::parse("primes:tasks=10,limit=100,fast-limit=10,fast-workers=1").unwrap();
//! assert_eq!((primes.run(0), primes.run(1)), (4, 25));
//! ```

pub mod material;
pub mod md;
pub mod primes;

pub use material::{Material, Solution};
pub use md::MdPairs;
pub use primes::{count_primes, Primes};
