//! `lpt-eft`: LPT with earliest-finish-time placement, the heterogeneous
//! LPT that Gonzalez, Ibarra and Sahni analyse in "Bounds for LPT schedules
//! on uniform processors" (SIAM J. Comput., 1977): tasks heaviest first,
//! each onto the PU where it would *finish* earliest, `time[p] + load /
//! speed[p]`.
//!
//! `greedy` (Charm++'s GreedyLB) puts each task on the PU with the least
//! time *before* the task, so on PUs of speeds `[1, 0.1]` it sends the
//! second-heaviest task to the slow PU as soon as the fast one is busier,
//! whatever that task then costs there. Where speeds are equal the two rules
//! agree: the least-loaded PU is also the one that finishes first.
//!
//! A policy of its own rather than a parameter of `greedy`: `greedy` is the
//! port of GreedyLB and keeps GreedyLB's decisions, which the objects
//! runtime and the simulator compare against Charm++'s published runs; a
//! different placement rule under the same name would make a spec such as
//! `greedy` mean two algorithms, and its hot loop would carry the branch.
//!
//! Semantics otherwise as `greedy`'s: PUs start at their background time
//! plus their unmigratable tasks (which stay), unavailable PUs get nothing,
//! speeds come from the context (1 when absent).
//! Ties in finish time go to the lower PU index. Among PUs of one speed the
//! one with less time committed is taken as finishing first even where
//! rounding makes the two sums equal (with exact arithmetic it does finish
//! first).
//!
//! **Cost.** One sort, O(n log n). The PUs are grouped by speed into K
//! classes, each with its own tournament tree ([`PuHeap`]): inside a class
//! the earliest finish is the least time, so each task compares the K class
//! winners and updates one tree, O(K + log P). Classes are visited fastest
//! first and the scan stops at a class that cannot beat the best finish
//! even from the earliest start any PU had, so large tasks rarely look at
//! slow classes. In all: O(n log n + n (K + log P)); K is 1 on equal speeds
//! and usually a handful (a few PU models), P when every speed differs. A
//! faster exact rule needs a dynamic lower envelope of the lines
//! `time[p] + w / speed[p]` under updates, which a scan over a few classes
//! does not repay.

use super::{LptOrder, Mapping, MappingInput, MappingPolicy, PuHeap};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::Spec;

/// The LPT earliest-finish-time policy (see the module notes for the rule,
/// its ties and its cost). On a fast and a slow PU:
///
/// ```
/// use keel_policy::mapping::{registry, MappingInput};
/// use keel_policy::metrics::evaluate;
/// use keel_policy::{Concept, Origin};
/// let (tasks, pus, speeds) = ([1.0, 2.0, 3.0], [0.0, 0.0], [1.0, 0.1]);
/// let mut ctx = keel_policy::mapping::runtime_context(&tasks, &pus);
/// ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
/// let input = MappingInput::new(&tasks, &pus).unwrap().with_speeds(&speeds).unwrap();
/// let makespan = |spec: &str| {
///     let mapping = registry().build(spec).unwrap().map(&ctx).unwrap();
///     evaluate(&input, &mapping).makespan
/// };
/// // Every task finishes earliest on the fast PU: 1 + 2 + 3.
/// assert_eq!(makespan("lpt-eft"), 6.0);
/// // GreedyLB sends the 2 to the slow PU once the fast one holds the 3.
/// assert!((makespan("greedy") - 20.0).abs() < 1e-9);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LptEft;

/// One PU as the earliest-finish-time rule sees it for one task: the time
/// already committed on it, its speed, and when the task would finish
/// there, `time + load / speed`. Every context that places by earliest
/// finish (this mapping, the farm's `eft` dispatch) builds candidates here
/// and compares them with [`EftCandidate::beats`], so the arithmetic and the
/// ties are one rule.
///
/// ```
/// use keel_policy::mapping::EftCandidate;
/// // A task of 2 units: a fast PU busy until 3, or an idle one 10× slower.
/// let fast = EftCandidate::new(0, 3.0, 1.0, 2.0);
/// let slow = EftCandidate::new(1, 0.0, 0.1, 2.0);
/// assert_eq!((fast.finish, slow.finish), (5.0, 20.0));
/// assert!(fast.beats(&slow));
/// assert_eq!(EftCandidate::earliest([slow, fast]), Some(fast));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EftCandidate {
    /// The PU (or worker) index.
    pub pu: usize,
    /// Time already committed on it.
    pub time: f64,
    /// Its speed (work units per unit of time, `> 0`).
    pub speed: f64,
    /// What the task adds to the PU's time: `load / speed`.
    pub duration: f64,
    /// When the task would finish there: `time + duration`.
    pub finish: f64,
}

impl EftCandidate {
    /// The candidate for a task of `load` work units on `pu`.
    #[inline]
    pub fn new(pu: usize, time: f64, speed: f64, load: f64) -> Self {
        let duration = load / speed;
        EftCandidate {
            pu,
            time,
            speed,
            duration,
            finish: time + duration,
        }
    }

    /// Whether this candidate is taken over `other`: the earlier finish;
    /// on equal finish times, at one speed the one with less time
    /// committed (with exact arithmetic it does finish first; rounding made
    /// the sums equal), then the lower index; at different speeds the lower
    /// index.
    #[inline]
    pub fn beats(&self, other: &Self) -> bool {
        if self.finish != other.finish {
            return self.finish < other.finish;
        }
        if self.speed == other.speed && self.time != other.time {
            return self.time < other.time;
        }
        self.pu < other.pu
    }

    /// The candidate that [`Self::beats`] every other, `None` when empty.
    pub fn earliest(candidates: impl IntoIterator<Item = Self>) -> Option<Self> {
        candidates
            .into_iter()
            .fold(None, |best: Option<Self>, c| match best {
                Some(b) if !c.beats(&b) => Some(b),
                _ => Some(c),
            })
    }
}

/// The available PUs of one speed.
struct SpeedClass {
    speed: f64,
    /// Global PU index of each member, ascending, so that a tie inside the
    /// class's tree (by local index) is a tie by PU index.
    pus: Vec<usize>,
    tree: PuHeap,
}

impl LptEft {
    /// Builds from a spec (no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&[])?;
        Ok(LptEft)
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let (mut placement, times) = input.pinned_start();
        let available = input.available_pus();
        let floor = available
            .iter()
            .map(|&p| times[p])
            .fold(f64::INFINITY, f64::min);
        let mut classes = speed_classes(input, &available, &times);
        let order = LptOrder::new(input.task_loads(), |t| input.is_migratable(t));
        for (task, load) in order.iter() {
            // The best candidate so far and its class.
            let mut best: Option<(EftCandidate, usize)> = None;
            for (k, class) in classes.iter().enumerate() {
                if let Some((b, _)) = best {
                    // Later classes are slower: none of them can finish
                    // before `floor + load / speed`.
                    if floor + load / class.speed > b.finish {
                        break;
                    }
                }
                // Inside a class the least time finishes first (ties to
                // the lower index, as `beats` orders one speed).
                let local = class.tree.least();
                let here =
                    EftCandidate::new(class.pus[local], class.tree.time(local), class.speed, load);
                if best.is_none_or(|(b, _)| here.beats(&b)) {
                    best = Some((here, k));
                }
            }
            let (chosen, k) = best.expect("validated: at least one PU is available");
            let class = &mut classes[k];
            let local = class.tree.least();
            class.tree.add(local, chosen.duration);
            placement[task] = chosen.pu;
        }
        Mapping::complete(placement, input.npus())
    }
}

/// The available PUs grouped by speed, fastest class first.
fn speed_classes(input: &MappingInput<'_>, available: &[usize], times: &[f64]) -> Vec<SpeedClass> {
    let mut by_speed: Vec<(f64, usize)> = available.iter().map(|&p| (input.speed(p), p)).collect();
    // Fastest first, PU index ascending inside a speed.
    by_speed.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut classes: Vec<SpeedClass> = Vec::new();
    let mut start = 0;
    for i in 1..=by_speed.len() {
        if i == by_speed.len() || by_speed[i].0 != by_speed[start].0 {
            let pus: Vec<usize> = by_speed[start..i].iter().map(|&(_, p)| p).collect();
            let local_times = pus.iter().map(|&p| times[p]).collect();
            let tree = PuHeap::new(local_times, 0..pus.len());
            classes.push(SpeedClass {
                speed: by_speed[start].0,
                pus,
                tree,
            });
            start = i;
        }
    }
    classes
}

impl MappingPolicy for LptEft {
    fn spec(&self) -> Spec {
        Spec::named("lpt-eft")
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("lpt-eft", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
#[path = "lpt_eft_tests.rs"]
mod tests;
