//! `block`: contiguous blocks of equal task counts, the "no load balancing"
//! baseline (OpenMP's `schedule(static)`, MOGSLib's `compact`). With `n`
//! movable tasks and `q` available PUs, the first `n mod q` PUs get one extra.

use super::{Mapping, MappingInput, MappingPolicy};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::Spec;

/// The block policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Block;

impl Block {
    /// Builds from a spec (no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&[])?;
        Ok(Block)
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let (mut placement, _) = input.pinned_start();
        let pus = input.available_pus();
        let movable: Vec<usize> = (0..input.ntasks())
            .filter(|&t| input.is_migratable(t))
            .collect();
        let (base, extra) = (movable.len() / pus.len(), movable.len() % pus.len());
        let mut next = movable.iter();
        for (k, &pu) in pus.iter().enumerate() {
            let size = base + usize::from(k < extra);
            for &task in next.by_ref().take(size) {
                placement[task] = pu;
            }
        }
        Mapping::complete(placement, input.npus())
    }
}

impl MappingPolicy for Block {
    fn spec(&self) -> Spec {
        Spec::named("block")
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("block", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_into_contiguous_blocks_with_the_remainder_first() {
        let loads = [1.0; 7];
        let input = MappingInput::new(&loads, &[0.0; 3]).unwrap();
        assert_eq!(Block.decide(&input).as_slice(), &[0, 0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn skips_unavailable_pus_and_leaves_pinned_tasks() {
        let loads = [1.0; 5];
        let input = MappingInput::new(&loads, &[0.0; 3])
            .unwrap()
            .with_availability(&[true, false, true])
            .unwrap()
            .with_current(&[2, 2, 2, 2, 2])
            .unwrap()
            .with_migratable(&[true, false, true, true, true])
            .unwrap();
        assert_eq!(Block.decide(&input).as_slice(), &[0, 2, 0, 2, 2]);
    }
}
