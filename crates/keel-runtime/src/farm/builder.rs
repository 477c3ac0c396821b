//! [`FarmBuilder`]: checks every choice and builds a [`Farm`].

use super::policy;
use super::{Dispatch, Farm, FarmConfig, FarmError, DEFAULT_FARM_SPINS};
use crate::pool::WaitPolicy;

/// Builds a [`Farm`], naming every choice.
#[derive(Debug, Default)]
pub struct FarmBuilder {
    workers: Option<usize>,
    policy: Option<String>,
    dispatch: Option<Box<dyn Dispatch>>,
    capacity: Option<usize>,
    output_capacity: Option<usize>,
    wait: Option<WaitPolicy>,
    pin: Option<Vec<usize>>,
    speeds: Option<Vec<f64>>,
}

impl FarmBuilder {
    /// Number of workers (default: the available cores).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// The dispatch policy as a spec (`rr`, `arrs:chunk=300`, `on-demand`,
    /// ...; default `rr`).
    pub fn policy(mut self, spec: impl Into<String>) -> Self {
        self.policy = Some(spec.into());
        self
    }

    /// A policy object, e.g. one built from a user registry.
    pub fn dispatch(mut self, dispatch: Box<dyn Dispatch>) -> Self {
        self.dispatch = Some(dispatch);
        self
    }

    /// Bounds every input queue at `capacity` items (default unbounded,
    /// as in the paper; `on-demand` sets its own).
    pub fn input_capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Bounds every worker's output queue to the collector (default: the
    /// input capacity given to [`Self::input_capacity`], else unbounded).
    pub fn output_capacity(mut self, capacity: usize) -> Self {
        self.output_capacity = Some(capacity);
        self
    }

    /// How waiting threads wait (default: spin [`DEFAULT_FARM_SPINS`], park).
    pub fn wait_policy(mut self, wait: WaitPolicy) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Pins worker `w` to core `cores[w % cores.len()]` (e.g. `[0, 0, 1]`
    /// puts two of three workers on core 0). The emitter is not pinned.
    pub fn pin(mut self, cores: Vec<usize>) -> Self {
        self.pin = Some(cores);
        self
    }

    /// Tells the farm each worker's speed (work units per second, or any
    /// unit: only ratios matter), one per worker, each finite and `> 0`. A
    /// policy that reads speeds (`eft`) then uses these instead of
    /// measuring them; the others ignore them.
    ///
    /// ```
    /// use keel::farm::{Farm, FarmError};
    /// assert!(Farm::builder().workers(2).policy("eft").speeds(vec![1.0, 0.1]).build().is_ok());
    /// assert!(matches!(
    ///     Farm::builder().workers(2).speeds(vec![1.0]).build(),
    ///     Err(FarmError::SpeedCount { speeds: 1, workers: 2 })
    /// ));
    /// ```
    pub fn speeds(mut self, speeds: Vec<f64>) -> Self {
        self.speeds = Some(speeds);
        self
    }

    /// Checks every choice and builds the farm (no thread starts yet).
    pub fn build(self) -> Result<Farm, FarmError> {
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if workers == 0 {
            return Err(FarmError::ZeroWorkers);
        }
        if self.capacity == Some(0) || self.output_capacity == Some(0) {
            return Err(FarmError::ZeroCapacity);
        }
        if let Some(speeds) = &self.speeds {
            if speeds.len() != workers {
                return Err(FarmError::SpeedCount {
                    speeds: speeds.len(),
                    workers,
                });
            }
            if let Some((worker, &speed)) = speeds
                .iter()
                .enumerate()
                .find(|(_, s)| !(s.is_finite() && **s > 0.0))
            {
                return Err(FarmError::BadSpeed { worker, speed });
            }
        }
        let dispatch = match (self.dispatch, self.policy) {
            (Some(d), _) => d,
            (None, Some(spec)) => policy::parse(&spec)?,
            (None, None) => Box::new(policy::RoundRobin::new()),
        };
        let pin = match self.pin {
            None => None,
            Some(cores) => {
                let ids = core_affinity::get_core_ids().unwrap_or_default();
                if let Some(&core) = cores.iter().find(|&&c| c >= ids.len()) {
                    return Err(FarmError::BadPin {
                        core,
                        cores: ids.len(),
                    });
                }
                (!cores.is_empty()).then(|| cores.iter().map(|&c| ids[c]).collect())
            }
        };
        let mut farm = Farm {
            workers,
            policy_spec: String::new(),
            capacity: self.capacity,
            output_capacity: self.output_capacity.or(self.capacity),
            dispatch,
            spins: self
                .wait
                .unwrap_or(WaitPolicy::Spins(DEFAULT_FARM_SPINS))
                .spins(),
            pin,
            speeds: self.speeds,
        };
        // Validates the policy against this farm now rather than at run.
        let config = FarmConfig::new(workers, farm.input_capacity())?;
        farm.dispatch.start(&config)?;
        farm.policy_spec = farm.dispatch.spec().to_string();
        Ok(farm)
    }
}
