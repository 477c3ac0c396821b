//! `round-robin`: the k-th movable task goes to the (k mod q)-th available
//! PU. OpenMP's `schedule(static,1)`; MOGSLib's `round_robin`.

use super::{Mapping, MappingInput, MappingPolicy};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::Spec;

/// The round-robin policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin;

impl RoundRobin {
    /// Builds from a spec (no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&[])?;
        Ok(RoundRobin)
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let (mut placement, _) = input.pinned_start();
        let pus = input.available_pus();
        let movable = (0..input.ntasks()).filter(|&t| input.is_migratable(t));
        for (task, &pu) in movable.zip(pus.iter().cycle()) {
            placement[task] = pu;
        }
        Mapping::complete(placement, input.npus())
    }
}

impl MappingPolicy for RoundRobin {
    fn spec(&self) -> Spec {
        Spec::named("round-robin")
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("round-robin", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_tasks_in_turn_over_available_pus() {
        let loads = [1.0; 5];
        let input = MappingInput::new(&loads, &[0.0; 3])
            .unwrap()
            .with_availability(&[true, false, true])
            .unwrap();
        assert_eq!(RoundRobin.decide(&input).as_slice(), &[0, 2, 0, 2, 0]);
    }
}
