//! `refine`: start from the current mapping and move tasks off PUs whose time
//! exceeds `tolerance × average`, with as few migrations as the greedy rule
//! allows — Charm++'s RefineLB (`src/ck-ldb/RefineLB.C`, legacy Refiner
//! with `overLoad = 1.05`), implemented without its O(light × objects) scan.
//!
//! 1. Tasks with no current PU, or on an unavailable PU, are placed first,
//!    heaviest to least loaded (they must move anyway).
//! 2. `average` is the time every available PU would have if the total work
//!    (tasks plus background) were spread in proportion to speed; with equal
//!    speeds it is the mean PU time. `limit = tolerance × average`.
//! 3. Overloaded PUs are visited heaviest first. Each gives its largest task
//!    that fits on the least-loaded PU without lifting it above `limit`
//!    (moving the largest fitting task sheds the most time per migration),
//!    until it is under `limit` or nothing fits. PUs at or above the average
//!    no longer receive.
//!
//! Cost: O(n + P) to group tasks plus a sort of each overloaded PU's tasks.

use super::{lpt_order, Mapping, MappingInput, MappingPolicy, PuHeap, REFINING_REQUIREMENTS};
use crate::concept::Requirement;
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::{Spec, SpecValue};
use crate::NO_PU;

/// Default tolerance shared by `refine` and `greedy-refine` (Charm++ RefineLB's
/// `overLoad`), so that one value means the same to every refining policy.
pub const DEFAULT_TOLERANCE: f64 = 1.05;

/// The refine policy.
#[derive(Clone, Copy, Debug)]
pub struct Refine {
    /// PUs above `tolerance × average` shed tasks; must be `>= 1`.
    pub tolerance: f64,
}

impl Default for Refine {
    fn default() -> Self {
        Refine {
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

impl Refine {
    /// Builds from `refine[:tolerance=T]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&["tolerance"])?;
        Ok(Refine {
            tolerance: spec
                .number_at_least("tolerance", 1.0)?
                .unwrap_or(DEFAULT_TOLERANCE),
        })
    }

    /// The decision on validated inputs. Without a current mapping every task
    /// counts as unplaced, so the result is the greedy one.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let loads = input.task_loads();
        let npus = input.npus();
        let mut placement: Vec<usize> = (0..input.ntasks())
            .map(|t| {
                input
                    .current(t)
                    .filter(|&p| input.is_available(p))
                    .unwrap_or(NO_PU)
            })
            .collect();
        let mut times = input.loads_of(&placement);
        let pus = input.available_pus();

        // 1. Homeless tasks first, LPT onto the least-loaded PUs.
        let homeless = lpt_order(loads, |t| placement[t] == NO_PU);
        if !homeless.is_empty() {
            let mut heap = PuHeap::new(times, pus.iter().copied());
            for task in homeless {
                let pu = heap.least();
                placement[task] = pu;
                heap.add(pu, loads[task] / input.speed(pu));
            }
            times = heap.into_times();
        }

        // 2. The target.
        let total_speed: f64 = pus.iter().map(|&p| input.speed(p)).sum();
        let total_work: f64 = loads.iter().sum::<f64>()
            + pus
                .iter()
                .map(|&p| input.pu_loads()[p] * input.speed(p))
                .sum::<f64>();
        let average = total_work / total_speed;
        let limit = self.tolerance * average;

        // 3. Group movable tasks by PU (counting sort), then shed.
        let mut start = vec![0usize; npus + 1];
        for (t, &p) in placement.iter().enumerate() {
            if input.is_migratable(t) {
                start[p + 1] += 1;
            }
        }
        for p in 0..npus {
            start[p + 1] += start[p];
        }
        let mut fill = start.clone();
        let mut grouped = vec![0usize; start[npus]];
        for (t, &p) in placement.iter().enumerate() {
            if input.is_migratable(t) {
                grouped[fill[p]] = t;
                fill[p] += 1;
            }
        }

        let mut donors: Vec<usize> = pus.iter().copied().filter(|&p| times[p] > limit).collect();
        donors.sort_unstable_by(|&a, &b| times[b].total_cmp(&times[a]).then(a.cmp(&b)));
        let mut receivers = PuHeap::new(times.clone(), pus.iter().copied());
        for donor in donors {
            // Tasks of this PU, heaviest first; `taken` marks moved ones.
            let mut tasks: Vec<(f64, usize)> = grouped[start[donor]..start[donor + 1]]
                .iter()
                .map(|&t| (loads[t], t))
                .collect();
            tasks.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            // `next_free[i]` leads to the first untaken task at or after `i`
            // (path-compressed), so skipping moved tasks stays near O(1).
            let mut next_free: Vec<usize> = (0..=tasks.len()).collect();
            let mut donor_time = receivers.time(donor);
            while donor_time > limit {
                let receiver = receivers.least();
                let room = limit - receivers.time(receiver);
                if receiver == donor || receivers.time(receiver) >= average || room <= 0.0 {
                    break;
                }
                let capacity = room * input.speed(receiver);
                let first_fit = tasks.partition_point(|&(w, _)| w > capacity);
                let i = find_free(&mut next_free, first_fit);
                if i == tasks.len() || tasks[i].0 <= 0.0 {
                    break;
                }
                let (w, task) = tasks[i];
                next_free[i] = i + 1;
                placement[task] = receiver;
                donor_time -= w / input.speed(donor);
                receivers.add(receiver, w / input.speed(receiver));
            }
        }
        Mapping::complete(placement, npus)
    }
}

/// The first untaken index at or after `i` (`next_free.len() - 1` if none).
fn find_free(next_free: &mut [usize], i: usize) -> usize {
    let mut root = i;
    while next_free[root] != root {
        root = next_free[root];
    }
    let mut at = i;
    while next_free[at] != root {
        at = std::mem::replace(&mut next_free[at], root);
    }
    root
}

impl MappingPolicy for Refine {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("refine");
        spec.params.push((
            "tolerance".into(),
            SpecValue::Token(self.tolerance.to_string()),
        ));
        spec
    }

    fn requirements(&self) -> &[Requirement] {
        REFINING_REQUIREMENTS
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("refine", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics;

    fn refine(loads: &[f64], npus: usize, current: &[usize], tolerance: f64) -> Vec<usize> {
        let bg = vec![0.0; npus];
        let input = MappingInput::new(loads, &bg)
            .unwrap()
            .with_current(current)
            .unwrap();
        Refine { tolerance }.decide(&input).into_vec()
    }

    #[test]
    fn a_balanced_mapping_is_left_alone() {
        let loads = [2.0, 1.0, 1.0, 2.0];
        assert_eq!(refine(&loads, 2, &[0, 0, 1, 1], 1.0), vec![0, 0, 1, 1]);
    }

    #[test]
    fn moves_the_largest_fitting_task_from_the_overloaded_pu() {
        // PU 0: 4+3+1 = 8, PU 1: 0, avg 4. The 4 fits exactly; one migration suffices.
        let loads = [4.0, 3.0, 1.0];
        let moved = refine(&loads, 2, &[0, 0, 0], 1.0);
        assert_eq!(moved, vec![1, 0, 0]);
        assert_eq!(metrics::migrations(&[0, 0, 0], &moved), 1);
    }

    #[test]
    fn skips_tasks_that_do_not_fit() {
        // PU 0: 6+2 = 8, PU 1: 2, PU 2: 2, avg 4, limit 4.2: the 6 fits nowhere; the 2 does.
        let loads = [6.0, 2.0, 2.0, 2.0];
        let moved = refine(&loads, 3, &[0, 0, 1, 2], 1.05);
        assert_eq!(moved, vec![0, 1, 1, 2]);
    }

    #[test]
    fn tolerance_leaves_mild_imbalance_in_place() {
        let loads = [5.5, 4.5];
        assert_eq!(refine(&loads, 2, &[0, 1], 1.2), vec![0, 1]);
    }

    #[test]
    fn homeless_tasks_and_tasks_on_unavailable_pus_are_placed() {
        let loads = [3.0, 3.0, 1.0];
        let bg = [0.0; 3];
        let input = MappingInput::new(&loads, &bg)
            .unwrap()
            .with_current(&[NO_PU, 2, 0])
            .unwrap()
            .with_availability(&[true, true, false])
            .unwrap();
        let map = Refine::default().decide(&input);
        assert_eq!(map.as_slice(), &[1, 0, 0]);
    }

    #[test]
    fn many_equal_tasks_on_one_pu_refine_in_near_linear_time() {
        // Quadratic rescanning made this take seconds; it must stay fast.
        let loads = vec![1.0; 40_000];
        let current = vec![0; 40_000];
        let start = std::time::Instant::now();
        let map = refine(&loads, 80, &current, 1.0);
        assert!(
            start.elapsed().as_secs_f64() < 5.0,
            "took {:?}",
            start.elapsed()
        );
        assert!(map.iter().all(|&p| p < 80));
        assert_eq!(metrics::migrations(&current, &map), 40_000 - 500);
    }

    #[test]
    fn unmigratable_tasks_never_move() {
        let loads = [4.0, 3.0, 1.0];
        let bg = [0.0; 2];
        let input = MappingInput::new(&loads, &bg)
            .unwrap()
            .with_current(&[0, 0, 0])
            .unwrap()
            .with_migratable(&[false, true, true])
            .unwrap();
        // PU 0 keeps its pinned 4; the 3 and then the 1 move (4 | 4).
        assert_eq!(Refine::default().decide(&input).as_slice(), &[0, 1, 1]);
    }
}
