//! `greedy`: Largest Processing Time first (ARTful paper Algorithm 1) with
//! Charm++ GreedyLB's semantics (`src/ck-ldb/GreedyLB.C`, TreeLB's
//! `greedy.h`): PUs start at
//! their background time plus their unmigratable tasks; the heaviest movable
//! task goes to the PU with the least time, which grows by `load / speed`;
//! unavailable PUs get nothing; ties go to the lower task, then PU, index.
//!
//! Cost: one sort of the movable tasks, O(n log n), plus O(n log P) heap work.

use super::{LptOrder, Mapping, MappingInput, MappingPolicy, PuHeap};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::Spec;

/// The greedy (LPT) policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Greedy;

impl Greedy {
    /// Builds from a spec (no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&[])?;
        Ok(Greedy)
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let (placement, _) = self.decide_with_times(input);
        Mapping::complete(placement, input.npus())
    }

    /// The decision plus each PU's resulting time.
    pub(crate) fn decide_with_times(&self, input: &MappingInput<'_>) -> (Vec<usize>, Vec<f64>) {
        let (mut placement, times) = match input.migratable() {
            // Every task is ordered and gets a PU below, so the placement
            // needs no "unplaced" fill: a zeroed buffer comes from the
            // allocator without a pass over it.
            None => (vec![0; input.ntasks()], input.pu_loads().to_vec()),
            Some(_) => input.pinned_start(),
        };
        let mut tree = PuHeap::new(times, available(input));
        let order = LptOrder::movable(input.task_loads(), input.migratable());
        order.assign_into(&mut tree, input.speeds(), &mut placement);
        (placement, tree.into_times())
    }

    /// Each PU's time after greedy over a precomputed order, without the
    /// placement (greedy-refine needs only greedy's makespan).
    pub(crate) fn times_in_order(
        &self,
        input: &MappingInput<'_>,
        order: &LptOrder<'_>,
    ) -> Vec<f64> {
        let (_, times) = input.pinned_start();
        let mut tree = PuHeap::new(times, available(input));
        order.assign(&mut tree, input.speeds());
        tree.into_times()
    }

    /// LPT on plain slices with no context handler and no validation: the
    /// "native" baseline the portability benchmark compares against.
    pub fn map_direct(task_loads: &[f64], npus: usize) -> Vec<usize> {
        let mut placement = vec![0; task_loads.len()];
        let mut tree = PuHeap::new(vec![0.0; npus], 0..npus);
        LptOrder::movable(task_loads, None).assign_into(&mut tree, None, &mut placement);
        placement
    }
}

/// The available PUs, without collecting them.
fn available<'a>(input: &'a MappingInput<'_>) -> impl Iterator<Item = usize> + 'a {
    (0..input.npus()).filter(|&p| input.is_available(p))
}

impl MappingPolicy for Greedy {
    fn spec(&self) -> Spec {
        Spec::named("greedy")
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("greedy", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greedy(loads: &[f64], npus: usize) -> Vec<usize> {
        let bg = vec![0.0; npus];
        Greedy
            .decide(&MappingInput::new(loads, &bg).unwrap())
            .into_vec()
    }

    #[test]
    fn wikipedia_lpt_example() {
        // {5,4,3,3,3} on 2 machines: LPT gives [8,10] (optimum [9,9]).
        let loads = [5.0, 4.0, 3.0, 3.0, 3.0];
        let map = greedy(&loads, 2);
        assert_eq!(map, vec![0, 1, 1, 0, 1]);
    }

    #[test]
    fn equal_loads_deal_round_robin_by_index() {
        assert_eq!(greedy(&[1.0; 6], 3), vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn background_load_and_speed_count() {
        // PU 0 is busy for 10; PU 1 is twice as fast.
        let loads = [4.0, 4.0, 2.0];
        let input = MappingInput::new(&loads, &[10.0, 0.0, 0.0])
            .unwrap()
            .with_speeds(&[1.0, 2.0, 1.0])
            .unwrap();
        // Task 0 -> PU 1 (t=2), task 1 -> PU 2 (t=4), task 2 -> PU 1 (t=3).
        assert_eq!(Greedy.decide(&input).as_slice(), &[1, 2, 1]);
    }

    #[test]
    fn unmigratable_tasks_stay_and_count_unavailable_pus_get_nothing() {
        let loads = [9.0, 1.0, 1.0, 1.0];
        let input = MappingInput::new(&loads, &[0.0; 3])
            .unwrap()
            .with_current(&[0, 2, 2, 2])
            .unwrap()
            .with_migratable(&[false, true, true, true])
            .unwrap()
            .with_availability(&[true, true, false])
            .unwrap();
        assert_eq!(Greedy.decide(&input).as_slice(), &[0, 1, 1, 1]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        /// Greedy's two starts agree: with no migratability flags (every
        /// task ordered without a test, placement zeroed) and with every
        /// task flagged movable (the filtered order from the pinned start),
        /// on sizes past the validation's eight lanes, with duplicate loads,
        /// speeds, background and unavailable PUs; each task placed once on
        /// an available PU.
        #[test]
        fn greedy_without_flags_equals_greedy_with_every_task_movable(
            quarters in proptest::collection::vec(0u32..40, 0..300),
            pus in proptest::collection::vec((0u32..8, 1u32..9, 0u32..5), 1..20),
        ) {
            let loads: Vec<f64> = quarters.iter().map(|&q| f64::from(q) / 4.0).collect();
            let pu_loads: Vec<f64> = pus.iter().map(|p| f64::from(p.0)).collect();
            let speeds: Vec<f64> = pus.iter().map(|p| f64::from(p.1) / 2.0).collect();
            let mut available: Vec<bool> = pus.iter().map(|p| p.2 != 0).collect();
            available[0] = true;
            let movable = vec![true; loads.len()];
            let input = MappingInput::new(&loads, &pu_loads)
                .unwrap()
                .with_speeds(&speeds)
                .unwrap()
                .with_availability(&available)
                .unwrap();
            let plain = Greedy.decide(&input);
            let flagged = Greedy.decide(&input.with_migratable(&movable).unwrap());
            proptest::prop_assert_eq!(plain.counts().iter().sum::<usize>(), loads.len());
            for &pu in plain.as_slice() {
                proptest::prop_assert!(available[pu], "task on unavailable PU {}", pu);
            }
            proptest::prop_assert_eq!(plain, flagged);
        }
    }

    /// Greedy as its definition reads: pinned tasks counted first, then
    /// every movable task, heaviest first and lower index first among equal
    /// loads, to the available PU of least time (lower index first among
    /// equal times), by a scan of every PU.
    fn reference_greedy(input: &MappingInput<'_>) -> Vec<usize> {
        let (mut placement, mut times) = input.pinned_start();
        let mut order: Vec<usize> = (0..input.ntasks())
            .filter(|&t| input.is_migratable(t))
            .collect();
        let loads = input.task_loads();
        order.sort_by(|&a, &b| loads[b].partial_cmp(&loads[a]).unwrap().then(a.cmp(&b)));
        for task in order {
            let mut best: Option<usize> = None;
            for pu in (0..input.npus()).filter(|&p| input.is_available(p)) {
                if best.is_none_or(|b| times[pu] < times[b]) {
                    best = Some(pu);
                }
            }
            let pu = best.expect("validated: some PU is available");
            times[pu] += loads[task] / input.speed(pu);
            placement[task] = pu;
        }
        placement
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// The hand-tuned path (packed-key order, PU tree, placement written
        /// through windows of tasks) decides exactly what the definition
        /// does, on task counts past one window, with duplicate loads, and
        /// with or without speeds, background loads, unavailable PUs and
        /// unmigratable tasks; every task is placed once, on an available
        /// PU, and pinned tasks stay home.
        #[test]
        fn greedy_equals_the_reference_scan(
            ntasks in 0usize..10_000,
            distinct in 1u32..400,
            seed in proptest::prelude::any::<u64>(),
            pus in proptest::collection::vec((0u32..8, 1u32..9, 0u32..5), 1..24),
            options in 0u8..16,
        ) {
            let mut state = seed | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let loads: Vec<f64> = (0..ntasks)
                .map(|_| f64::from((next() % u64::from(distinct)) as u32) / 4.0)
                .collect();
            let npus = pus.len();
            let pu_loads: Vec<f64> = pus.iter().map(|p| f64::from(p.0)).collect();
            let speeds: Vec<f64> = pus.iter().map(|p| f64::from(p.1) / 2.0).collect();
            let mut available: Vec<bool> = pus.iter().map(|p| p.2 != 0).collect();
            available[0] = true;
            let current: Vec<usize> = (0..ntasks)
                .map(|_| {
                    let pu = (next() % npus as u64) as usize;
                    if available[pu] { pu } else { 0 }
                })
                .collect();
            let movable: Vec<bool> = (0..ntasks).map(|_| next() % 5 != 0).collect();
            let zeros = vec![0.0; npus];
            let mut input = MappingInput::new(
                &loads,
                if options & 1 != 0 { &pu_loads } else { &zeros },
            )
            .unwrap();
            if options & 2 != 0 {
                input = input.with_speeds(&speeds).unwrap();
            }
            if options & 4 != 0 {
                input = input.with_availability(&available).unwrap();
            }
            if options & 8 != 0 {
                input = input
                    .with_current(&current)
                    .unwrap()
                    .with_migratable(&movable)
                    .unwrap();
            }
            let decided = Greedy.decide(&input);
            let expected = reference_greedy(&input);
            proptest::prop_assert_eq!(decided.as_slice(), &expected[..]);
            proptest::prop_assert_eq!(decided.counts().iter().sum::<usize>(), ntasks);
            for (task, &pu) in decided.as_slice().iter().enumerate() {
                proptest::prop_assert!(input.is_available(pu));
                if !input.is_migratable(task) {
                    proptest::prop_assert_eq!(pu, current[task]);
                }
            }
        }
    }

    #[test]
    fn window_edges_decide_as_the_reference() {
        // One task short of, at, and past the placement's windows of 4,096
        // tasks, and past the order's bucketed sort (16,384 tasks), on one
        // PU, 3 and 1,000 (PU indices of several bits).
        for ntasks in [1, 4095, 4096, 4097, 8192, 12_289, 20_000] {
            let loads: Vec<f64> = (0..ntasks).map(|i| ((i * 7919) % 97) as f64).collect();
            for npus in [1, 3, 1000] {
                let pus = vec![0.0; npus];
                let input = MappingInput::new(&loads, &pus).unwrap();
                assert_eq!(
                    Greedy.decide(&input).into_vec(),
                    reference_greedy(&input),
                    "{ntasks} tasks on {npus} PUs"
                );
            }
        }
    }

    #[test]
    fn direct_call_agrees_with_the_policy() {
        let loads: Vec<f64> = (0..100).map(|i| ((i * 37) % 11) as f64).collect();
        assert_eq!(Greedy::map_direct(&loads, 7), greedy(&loads, 7));
    }
}
