//! What a loop remembers across its instances, for the schedules that read
//! it: the iteration profile, AWF's time-step-weighted history, and a
//! workload-aware schedule's iteration assignment. Pure bookkeeping: the
//! context (`keel::loops` on threads, `keel-sim` in simulated time) measures
//! each instance and hands the numbers over; nothing here reads a clock.

use std::sync::Arc;

use crate::concept::{Concept, Model, Origin, Subject};
use crate::context::ContextHandler;
use crate::PolicyError;

use super::{LoopSchedule, LoopShape, SharedAssignment, WorkloadSchedule};

/// The user's per-iteration hints, as a workload-aware schedule reads them.
const HINTS: Concept = Concept::Workload {
    subject: Subject::Tasks,
    model: Model::Static,
};

/// One loop's memory across its instances ("time steps"), shared by every
/// context that runs loops so that a schedule sees the same inputs on
/// threads and in simulation.
///
/// - **Iteration profile** (FSC, FAC, TAP, BOLD): the latest measured
///   `(μ, σ)` of the time per iteration; an instance that measured none
///   leaves it as it was.
/// - **AWF history**: per participant `i`, `Σ_s s·W_i,s` and `Σ_s s·T_i,s`
///   over time steps `s = 1, 2, …` (Banicescu, Velusamy and Devaprasad,
///   "On the scalability of dynamic scheduling scientific applications with
///   adaptive weighted factoring", §3: a PE's weight comes from the
///   iterations it executed and the time it spent executing them in the
///   previous steps, later steps weighing more). `T_i,s` is the
///   participant's **busy time** in step `s`, from its start in the
///   instance to its finish (its last, empty claim), not its finish time
///   from the fork: a participant that joined late did not spend that delay
///   computing, and charging it would make it look slow. A context whose
///   participants all start at the fork (the simulator) has busy time equal
///   to finish time.
/// - **Assignment**: a workload-aware schedule's (`binlpt`, `greedy`)
///   iteration assignment, reused while the schedule, team, chunk and hints
///   are unchanged (the ARTful paper's multiloop support).
///
/// ```
/// use keel_policy::dls::{LoopMemory, LoopShape, StepMeasurement};
/// use keel_policy::select::parse_setting;
/// use keel_policy::ContextHandler;
/// let (awf, _) = parse_setting("awf")?.into_fixed().expect("a fixed schedule");
/// let mut memory = LoopMemory::new();
/// assert!(memory.recall(awf.as_ref(), 2).history.is_none()); // nothing measured yet
/// memory.remember(&StepMeasurement { iterations: &[60, 40], busy: &[1.0, 1.0], profile: None });
/// memory.remember(&StepMeasurement { iterations: &[50, 50], busy: &[1.0, 2.0], profile: None });
/// // Step-weighted: 1·60 + 2·50 iterations, 1·1.0 + 2·1.0 seconds, …
/// assert_eq!(memory.history(), &[160.0, 3.0, 140.0, 5.0]);
/// let recall = memory.recall(awf.as_ref(), 2);
/// let mut ctx = ContextHandler::new();
/// recall.provide(&mut ctx);
/// let plan = awf.plan(&LoopShape::new(100, 2, None)?, &ctx)?;
/// # let _ = plan;
/// # Ok::<(), keel_policy::PolicyError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LoopMemory {
    steps: u64,
    /// `[μ, σ]`, as a schedule reads it.
    profile: Option<[f64; 2]>,
    history: Vec<f64>,
    assignment: Option<CachedAssignment>,
    assignments: u64,
}

/// What one instance measured, as [`LoopMemory::remember`] takes it; one
/// entry per participant in `iterations` and `busy`.
#[derive(Clone, Copy, Debug)]
pub struct StepMeasurement<'a> {
    /// Iterations each participant executed.
    pub iterations: &'a [u64],
    /// Each participant's busy time in seconds: from its start in the
    /// instance to its finish (see [`LoopMemory`] for why not the finish
    /// time from the fork).
    pub busy: &'a [f64],
    /// The iteration profile `(μ, σ)` the instance measured, if it was
    /// profiled and measured a chunk.
    pub profile: Option<(f64, f64)>,
}

/// What a loop's memory offers one instance of a schedule: only what the
/// schedule reads, and the history only when it fits the team.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Recall<'m> {
    /// The iteration profile `[μ, σ]`, for a schedule that reads one.
    pub profile: Option<&'m [f64; 2]>,
    /// AWF's history, two entries per participant, for a schedule that
    /// reads it.
    pub history: Option<&'m [f64]>,
    /// Whether the schedule reads a profile, so the instance should
    /// measure one (even when none is known yet).
    pub profiled: bool,
}

impl<'m> Recall<'m> {
    /// Offers the recalled profile and history to `ctx` as runtime
    /// components.
    #[inline]
    pub fn provide(self, ctx: &mut ContextHandler<'m>) {
        if let Some(values) = self.profile {
            ctx.provide_values(Concept::IterationProfile, Origin::Runtime, &values[..]);
        }
        if let Some(history) = self.history {
            ctx.provide_values(Concept::ThreadHistory, Origin::Runtime, history);
        }
    }
}

/// A workload-aware schedule's assignment and what it was made from.
#[derive(Clone, Debug)]
struct CachedAssignment {
    canonical: String,
    threads: usize,
    chunk: Option<u64>,
    /// The hints' bit patterns: equal bits, equal assignment.
    hints: Vec<u64>,
    assignment: SharedAssignment,
}

impl CachedAssignment {
    fn matches(&self, canonical: &str, shape: &LoopShape, hints: &[f64]) -> bool {
        self.canonical == canonical
            && self.threads == shape.threads
            && self.chunk == shape.chunk
            && self.hints.len() == hints.len()
            && self.hints.iter().zip(hints).all(|(&a, b)| a == b.to_bits())
    }
}

impl LoopMemory {
    /// A loop that has run no instance.
    pub fn new() -> Self {
        Self::default()
    }

    /// Instances remembered so far (AWF's current time step).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The latest iteration profile `(μ, σ)`, in seconds.
    pub fn profile(&self) -> Option<(f64, f64)> {
        self.profile.map(|[mean, sd]| (mean, sd))
    }

    /// AWF's history: `Σ s·W_i` (iterations) and `Σ s·T_i` (seconds) per
    /// participant `i`, interleaved; empty before the first instance.
    pub fn history(&self) -> &[f64] {
        &self.history
    }

    /// How many times an assignment was computed; the other instances of
    /// workload-aware schedules reused one.
    pub fn assignments(&self) -> u64 {
        self.assignments
    }

    /// What `schedule` reads of this memory for a team of `threads`.
    #[inline]
    pub fn recall(&self, schedule: &dyn LoopSchedule, threads: usize) -> Recall<'_> {
        let reads = |concept| schedule.requirements().iter().any(|r| r.concept == concept);
        let profiled = reads(Concept::IterationProfile);
        let history = (reads(Concept::ThreadHistory) && self.history.len() == 2 * threads)
            .then_some(&self.history[..]);
        Recall {
            profile: self.profile.as_ref().filter(|_| profiled),
            history,
            profiled,
        }
    }

    /// Remembers one more instance: the profile it measured, if any, and
    /// its step-weighted work and busy time per participant. A team of a
    /// new size starts the history afresh. Allocates only then.
    #[inline]
    pub fn remember(&mut self, step: &StepMeasurement<'_>) {
        debug_assert_eq!(step.iterations.len(), step.busy.len());
        self.steps += 1;
        if let Some((mean, sd)) = step.profile {
            self.profile = Some([mean, sd]);
        }
        let threads = step.iterations.len();
        if self.history.len() != 2 * threads {
            self.history.clear();
            self.history.resize(2 * threads, 0.0);
        }
        let weight = self.steps as f64;
        for (i, (&work, &busy)) in step.iterations.iter().zip(step.busy).enumerate() {
            self.history[2 * i] += weight * work as f64;
            self.history[2 * i + 1] += weight * busy;
        }
    }

    /// Forgets the measurements (steps, profile, history, the count of
    /// assignments) and keeps the cached assignment: it depends only on
    /// its inputs, which every instance checks.
    pub fn forget_measurements(&mut self) {
        let assignment = self.assignment.take();
        *self = LoopMemory {
            assignment,
            ..LoopMemory::default()
        };
    }

    /// `workload`'s assignment for `shape` and `hints`: the cached one
    /// while its spec text `canonical`, team, chunk and hints are
    /// unchanged, else a new one (counted in [`assignments`](Self::assignments)).
    pub fn assignment(
        &mut self,
        workload: &WorkloadSchedule,
        canonical: &str,
        shape: &LoopShape,
        hints: &[f64],
    ) -> Result<SharedAssignment, PolicyError> {
        if let Some(cached) = &self.assignment {
            if cached.matches(canonical, shape, hints) {
                return Ok(Arc::clone(&cached.assignment));
            }
        }
        let mut ctx = ContextHandler::new();
        ctx.provide_values(HINTS, Origin::User, hints);
        let assignment = Arc::new(workload.assign(shape, &ctx)?);
        self.assignments += 1;
        self.assignment = Some(CachedAssignment {
            canonical: canonical.to_string(),
            threads: shape.threads,
            chunk: shape.chunk,
            hints: hints.iter().map(|h| h.to_bits()).collect(),
            assignment: Arc::clone(&assignment),
        });
        Ok(assignment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(spec: &str) -> Box<dyn LoopSchedule> {
        crate::dls::parse_schedule(spec).unwrap().0
    }

    #[test]
    fn history_weights_later_steps_more_and_restarts_for_a_new_team() {
        let mut memory = LoopMemory::new();
        let step = |iterations: &'static [u64], busy: &'static [f64]| StepMeasurement {
            iterations,
            busy,
            profile: None,
        };
        memory.remember(&step(&[10, 20], &[1.0, 2.0]));
        memory.remember(&step(&[30, 40], &[3.0, 4.0]));
        assert_eq!(memory.steps(), 2);
        assert_eq!(memory.history(), &[70.0, 7.0, 100.0, 10.0]);
        memory.remember(&step(&[5, 5, 5], &[1.0, 1.0, 1.0]));
        assert_eq!(memory.history(), &[15.0, 3.0, 15.0, 3.0, 15.0, 3.0]);
    }

    #[test]
    fn recall_offers_only_what_the_schedule_reads() {
        let mut memory = LoopMemory::new();
        memory.remember(&StepMeasurement {
            iterations: &[1, 1],
            busy: &[1.0, 1.0],
            profile: Some((2.0, 0.5)),
        });
        let fac = memory.recall(schedule("fac").as_ref(), 2);
        assert_eq!(
            (fac.profile, fac.history, fac.profiled),
            (Some(&[2.0, 0.5]), None, true)
        );
        let awf = memory.recall(schedule("awf").as_ref(), 2);
        assert_eq!((awf.profile, awf.profiled), (None, false));
        assert_eq!(awf.history, Some(&[1.0, 1.0, 1.0, 1.0][..]));
        // A history of another team's size is not offered.
        assert_eq!(memory.recall(schedule("awf").as_ref(), 3).history, None);
        assert_eq!(
            memory.recall(schedule("static").as_ref(), 2),
            Recall::default()
        );
    }

    #[test]
    fn an_unprofiled_instance_keeps_the_profile_and_forgetting_keeps_the_assignment() {
        let mut memory = LoopMemory::new();
        let measured = |profile| StepMeasurement {
            iterations: &[1],
            busy: &[1.0],
            profile,
        };
        memory.remember(&measured(Some((1.0, 0.1))));
        memory.remember(&measured(None));
        assert_eq!(memory.profile(), Some((1.0, 0.1)));

        let binlpt = schedule("binlpt");
        let workload = binlpt.as_workload().unwrap();
        let shape = LoopShape::new(8, 2, None).unwrap();
        let hints = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let first = memory
            .assignment(workload, "binlpt", &shape, &hints)
            .unwrap();
        let again = memory
            .assignment(workload, "binlpt", &shape, &hints)
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(memory.assignments(), 1);
        memory.forget_measurements();
        assert_eq!(
            (memory.steps(), memory.profile(), memory.assignments()),
            (0, None, 0)
        );
        let kept = memory
            .assignment(workload, "binlpt", &shape, &hints)
            .unwrap();
        assert!(Arc::ptr_eq(&first, &kept));
        let other = [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0];
        memory
            .assignment(workload, "binlpt", &shape, &other)
            .unwrap();
        assert_eq!(memory.assignments(), 1);
    }
}
