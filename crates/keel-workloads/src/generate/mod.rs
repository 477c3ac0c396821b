//! Built-in workload generators, named by spec strings with the policies'
//! grammar (`docs/conventions.md#spec-strings`):
//! `lb-test:tasks=16000,pus=80,seed=12345`.
//!
//! Every generator is deterministic from its parameters (random ones draw
//! from [`rand_chacha::ChaCha8Rng`], whose stream is fixed across platforms
//! and releases), so golden tests pin each workload and a retuning shows.
//! Loads are in seconds. Every generator also takes
//! - `pus=P`: the number of PUs (idle, equal speed, all available);
//! - `current=block|round-robin|greedy|none`: the mapping the tasks start
//!   from, so that `refine` and `greedy-refine` have something to refine
//!   ([`Start`]; default `block`).
//!
//! Adding a generator is one file and one line in [`generators`].
//!
//! A generated problem has one load per task and one per PU:
//!
//! ```
//! use keel_workloads::generate;
//! let problem = generate("lb-test:tasks=64,pus=4,seed=1").unwrap();
//! assert_eq!(problem.task_loads.len(), 64);
//! assert_eq!(problem.pu_loads.len(), 4);
//! // Deterministic from its parameters.
//! assert_eq!(problem.task_loads, generate("lb-test:tasks=64,pus=4,seed=1").unwrap().task_loads);
//! ```

mod hotspot;
mod lb_test;
mod leanmd;
mod ramp;

pub use hotspot::Hotspot;
pub use lb_test::LbTest;
pub use leanmd::LeanMd;
pub use ramp::Ramp;

use keel_policy::mapping::runtime_context;
use keel_policy::{Model, Spec};

use crate::error::WorkloadError;
pub(crate) use crate::params::count;
use crate::MappingProblem;

/// The most tasks a generator makes (80 MB of loads), so that a typo such as
/// `tasks=1e12` is an error rather than an allocation failure.
pub const MAX_TASKS: usize = 10_000_000;

/// The most PUs a generator makes.
pub const MAX_PUS: usize = 1_000_000;

/// A named generator.
#[derive(Clone, Copy, Debug)]
pub struct Generator {
    /// Its kebab-case name.
    pub name: &'static str,
    /// One line saying what it models.
    pub summary: &'static str,
    /// Its own parameters with their defaults (besides `pus` and `current`).
    pub params: &'static str,
    build: fn(&Spec) -> Result<MappingProblem, WorkloadError>,
}

impl Generator {
    /// Generates the workload `spec` describes; `spec.name` is not checked.
    pub fn build(&self, spec: &Spec) -> Result<MappingProblem, WorkloadError> {
        (self.build)(spec)
    }
}

static GENERATORS: [Generator; 4] = [
    Generator {
        name: LbTest::NAME,
        summary: "Charm++ lb_test: per-element work min + (max-min)*U^4, U uniform in [0,1)",
        params: "tasks=16000, pus=80, min-us=10, max-us=3000, seed=12345, redraw-seed=S (none)",
        build: |s| LbTest::from_spec(s)?.problem(),
    },
    Generator {
        name: LeanMd::NAME,
        summary: "LeanMD-like: 38 pair computes per cell, particles per cell 100 -> 250 with cell id",
        params: "x=8, y=8, z=8, pus=64, ns-per-pair=10",
        build: |s| LeanMd::from_spec(s)?.problem(),
    },
    Generator {
        name: Ramp::NAME,
        summary: "linearly increasing loads, heavy end last (a triangular loop)",
        params: "tasks=10000, pus=16, min-us=1, max-us=1000",
        build: |s| Ramp::from_spec(s)?.problem(),
    },
    Generator {
        name: Hotspot::NAME,
        summary: "a contiguous hot spot (Gaussian bump) over a light base, with jitter",
        params: "tasks=8192, pus=32, base-us=20, peak-us=2000, center=0.3, width=0.05, jitter=0.1, seed=1",
        build: |s| Hotspot::from_spec(s)?.problem(),
    },
];

/// Every built-in generator, in a stable order.
pub fn generators() -> &'static [Generator] {
    &GENERATORS
}

/// Generates the workload named by a spec string.
pub fn generate(spec: &str) -> Result<MappingProblem, WorkloadError> {
    generate_spec(&Spec::parse(spec)?)
}

/// Generates the workload named by a parsed spec.
pub fn generate_spec(spec: &Spec) -> Result<MappingProblem, WorkloadError> {
    GENERATORS
        .iter()
        .find(|g| g.name == spec.name)
        .ok_or_else(|| WorkloadError::UnknownWorkload {
            name: spec.name.clone(),
            valid: GENERATORS.iter().map(|g| g.name.to_string()).collect(),
        })?
        .build(spec)
}

/// The mapping a generated workload starts from (`current=...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Contiguous equal-count blocks: a program that never balanced.
    Block,
    /// Task `i` on PU `i mod P`: Charm++'s default round-robin insertion.
    RoundRobin,
    /// Greedy's mapping of the loads the tasks had when it was made: a
    /// program that balanced once and then drifted (lb-test's `redraw-seed`).
    Greedy,
    /// Every task unplaced: refining policies have nothing to refine.
    None,
}

impl Start {
    const NAMES: [&'static str; 4] = ["block", "round-robin", "greedy", "none"];

    /// Reads `current=...`, or `default` when absent.
    pub fn from_spec(spec: &Spec, default: Start) -> Result<Start, WorkloadError> {
        Ok(match spec.choice("current", &Self::NAMES)? {
            None => default,
            Some("block") => Start::Block,
            Some("round-robin") => Start::RoundRobin,
            Some("greedy") => Start::Greedy,
            Some(_) => Start::None,
        })
    }

    /// The starting placement of tasks with `loads` on `npus` idle PUs.
    ///
    /// It is computed by the registry's own policy of the same name, so that
    /// `block` on a `current=block` workload reports zero migrations.
    pub fn placement(
        self,
        loads: &[f64],
        npus: usize,
    ) -> Result<Option<Vec<usize>>, WorkloadError> {
        let name = match self {
            Start::Block => "block",
            Start::RoundRobin => "round-robin",
            Start::Greedy => "greedy",
            Start::None => return Ok(None),
        };
        let idle = vec![0.0; npus];
        let policy = keel_policy::mapping::registry().build(name)?;
        let mapping = policy.map(&runtime_context(loads, &idle))?;
        Ok(Some(mapping.into_vec()))
    }

    /// A generated (static-model) problem over `loads` on `npus` PUs whose
    /// current mapping is this start computed for `placed_for` — the loads
    /// the program last balanced for, `None` meaning `loads` themselves.
    pub fn problem(
        self,
        loads: Vec<f64>,
        placed_for: Option<&[f64]>,
        npus: usize,
    ) -> Result<MappingProblem, WorkloadError> {
        let current = self.placement(placed_for.unwrap_or(&loads), npus)?;
        let mut problem = MappingProblem::new(loads, npus, Model::Static);
        problem.current = current;
        Ok(problem)
    }
}

/// Parameter keys every generator takes.
const COMMON_KEYS: [&str; 2] = ["pus", "current"];

/// Checks `spec`'s keys against a generator's own plus the common ones.
fn check_keys(spec: &Spec, own: &[&str]) -> Result<(), WorkloadError> {
    let valid: Vec<&str> = own.iter().chain(&COMMON_KEYS).copied().collect();
    Ok(spec.check_keys(&valid)?)
}

/// A finite number in `min..=max`, `default` when absent.
fn number(spec: &Spec, key: &str, default: f64, min: f64, max: f64) -> Result<f64, WorkloadError> {
    crate::params::number(spec, key, default, (min, false), max)
}

/// A seed (any unsigned 64-bit integer).
fn seed(spec: &Spec, key: &str) -> Result<Option<u64>, WorkloadError> {
    Ok(spec.parsed::<u64>(key, "an integer in 0..=18446744073709551615")?)
}

/// `pus=P`, shared by every generator.
fn pus(spec: &Spec, default: usize) -> Result<usize, WorkloadError> {
    count(spec, "pus", default, 1, MAX_PUS)
}

/// Microseconds to seconds, the unit of every generated load.
const SECONDS_PER_US: f64 = 1e-6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_and_parameters_are_typed_errors_listing_the_valid_ones() {
        let err = generate("lb_test").unwrap_err();
        assert!(matches!(err, WorkloadError::UnknownWorkload { .. }));
        assert_eq!(
            err.to_string(),
            "unknown workload `lb_test`; valid names: lb-test, leanmd, ramp, hotspot"
        );
        let err = generate("ramp:tasks=10,colour=red")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("workload `ramp` has no parameter `colour`"),
            "{err}"
        );
        assert!(
            err.contains("tasks") && err.contains("pus") && err.contains("current"),
            "{err}"
        );
        let err = generate("ramp:tasks=").unwrap_err();
        assert!(matches!(err, WorkloadError::Spec(_)), "{err}");
    }

    #[test]
    fn out_of_range_parameters_say_what_is_valid() {
        for bad in [
            "lb-test:pus=0",
            "lb-test:tasks=-3",
            "lb-test:tasks=100000000000",
            "lb-test:min-us=nan",
            "lb-test:min-us=10,max-us=5",
            "lb-test:seed=x",
            "leanmd:x=0",
            "leanmd:x=1000,y=1000,z=1000",
            "hotspot:width=0",
            "hotspot:jitter=1",
            "ramp:current=sideways",
        ] {
            let err = generate(bad).unwrap_err();
            assert!(
                matches!(err, WorkloadError::InvalidParameter { .. }),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("expected"), "{bad}: {err}");
        }
    }

    #[test]
    fn every_generator_builds_a_valid_problem_with_its_defaults() {
        for g in generators() {
            let problem = generate(g.name).unwrap();
            problem.input().unwrap();
            assert!(problem.ntasks() > 0, "{}", g.name);
            assert_eq!(problem.model, keel_policy::Model::Static);
            // Default start is block: the block policy moves nothing.
            let block = keel_policy::mapping::registry().build("block").unwrap();
            let mapping = block.map(&problem.context()).unwrap();
            assert_eq!(
                problem.current.as_deref(),
                Some(mapping.as_slice()),
                "{}",
                g.name
            );
        }
    }

    #[test]
    fn current_selects_the_starting_mapping() {
        let none = generate("ramp:tasks=8,pus=2,current=none").unwrap();
        assert_eq!(none.current, None);
        let rr = generate("ramp:tasks=5,pus=2,current=round-robin").unwrap();
        assert_eq!(rr.current, Some(vec![0, 1, 0, 1, 0]));
        let greedy = generate("ramp:tasks=4,pus=2,current=greedy,min-us=1,max-us=4").unwrap();
        assert_eq!(greedy.current, Some(vec![0, 1, 1, 0]));
    }
}
