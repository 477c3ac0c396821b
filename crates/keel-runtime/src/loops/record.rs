//! Per-loop records. A loop's identity defaults to its call site
//! (`#[track_caller]`), the way LLVM keys loops by source location, so each
//! loop keeps its own measurements across instances; the selection methods
//! and adaptive schedules read them, and users can query them.
//!
//! Only *recorded* instances are kept, since recording costs a lock, a
//! registry lookup, two clock reads per participant and two on the caller: every instance
//! under `auto`, of a schedule that reads a record (`fsc`, `fac`, `tap`,
//! `bold`, `awf`) or caches an assignment (`binlpt`, `greedy`), and every
//! instance of a loop built with
//! [`ParallelLoop::recorded`](super::ParallelLoop::recorded), or of any
//! loop after [`record_all(true)`](super::record_all) or under
//! `KEEL_LOOP_RECORD=all`. Other instances leave the record as it was
//! (a loop that never had a recorded instance has none); their
//! [`LoopSummary`](super::LoopSummary) still gives chunks and iterations
//! (T_par and LIB `None`: no clock was read).

use std::borrow::Cow;
use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;
use serde::Serialize;

use keel_policy::select::{Run, SelectionCost, SettledBy};

use super::claim::ProfileSums;
use super::state::{self, LoopState, Resolved, Selection};
use super::Slot;

/// Identity of a loop across its instances.
///
/// Two names with equal text are one loop, however they were made: a
/// literal, a `format!` string, or a name rebuilt on every instance.
///
/// ```
/// use keel::loops::LoopId;
/// assert_eq!(LoopId::named("rows"), LoopId::named(format!("r{}", "ows")));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LoopId {
    /// The source location of the call that started the loop.
    Site(&'static Location<'static>),
    /// A name the user gave with `.id(..)`.
    Named(LoopName),
}

impl LoopId {
    /// The identity of a loop named `name` with `.id(name)`.
    pub fn named(name: impl Into<LoopName>) -> Self {
        LoopId::Named(name.into())
    }
}

impl fmt::Display for LoopId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopId::Site(l) => write!(f, "{}:{}:{}", l.file(), l.line(), l.column()),
            LoopId::Named(n) => f.write_str(n.as_str()),
        }
    }
}

/// A loop's name: a literal, or text built at run time and shared, so
/// that a name built once names every instance of a loop for the price of
/// a reference count (a hot loop should not allocate its name each time).
///
/// ```
/// use std::sync::Arc;
/// use keel::loops::LoopName;
/// let built: Arc<str> = format!("step-{}", 3).into();
/// let name = LoopName::from(Arc::clone(&built)); // no copy of the text
/// assert_eq!(name, LoopName::from("step-3"));
/// assert_eq!(name.as_str(), "step-3");
/// ```
#[derive(Clone, Debug)]
pub struct LoopName(NameText);

#[derive(Clone, Debug)]
enum NameText {
    Static(&'static str),
    Shared(Arc<str>),
}

impl LoopName {
    /// The name's text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            NameText::Static(s) => s,
            NameText::Shared(s) => s,
        }
    }
}

impl PartialEq for LoopName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for LoopName {}

impl std::hash::Hash for LoopName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for LoopName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&'static str> for LoopName {
    fn from(name: &'static str) -> Self {
        LoopName(NameText::Static(name))
    }
}

impl From<String> for LoopName {
    fn from(name: String) -> Self {
        LoopName(NameText::Shared(name.into()))
    }
}

impl From<Arc<str>> for LoopName {
    fn from(name: Arc<str>) -> Self {
        LoopName(NameText::Shared(name))
    }
}

impl From<Cow<'static, str>> for LoopName {
    fn from(name: Cow<'static, str>) -> Self {
        match name {
            Cow::Borrowed(s) => s.into(),
            Cow::Owned(s) => s.into(),
        }
    }
}

impl From<&LoopName> for LoopName {
    fn from(name: &LoopName) -> Self {
        name.clone()
    }
}

/// What one instance of a loop measured (times in seconds, monotonic clock).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InstanceStats {
    /// The schedule's canonical spec.
    pub schedule: String,
    /// The chunk parameter the schedule ran with (the loop's own, the
    /// spec's, or under `auto` the expert chunk); `None` for its default.
    pub chunk: Option<u64>,
    /// Participants.
    pub threads: usize,
    /// Iterations.
    pub iterations: u64,
    /// T_par: from the fork to the join, on the caller.
    pub t_par: f64,
    /// Each participant's finish time, from the fork.
    pub finish: Vec<f64>,
    /// Each participant's busy time: from its start to its finish.
    pub busy: Vec<f64>,
    /// Chunks each participant executed.
    pub chunks: Vec<u64>,
    /// Iterations each participant executed.
    pub thread_iterations: Vec<u64>,
    /// LIB = (1 − mean/max)·100 over the finish times (`docs/conventions.md#metrics`).
    pub lib_percent: f64,
    /// Under `auto`: why the selection method chose this instance's
    /// schedule (`explore`, `exploit`, `jump`, …); `None` for a fixed one.
    pub selection: Option<&'static str>,
}

impl InstanceStats {
    /// Total chunks.
    pub fn total_chunks(&self) -> u64 {
        self.chunks.iter().sum()
    }
}

/// Everything kept about one loop, from its recorded instances: those of
/// `auto`, of schedules that read what records keep, and of loops asked to
/// be recorded ([`ParallelLoop::recorded`](super::ParallelLoop::recorded),
/// [`record_all`](super::record_all), `KEEL_LOOP_RECORD=all`).
///
/// ```
/// use keel::loops::{record, LoopId};
/// for _ in 0..2 {
///     keel::parallel(0..10u32).schedule("guided".parse()?).id("doc-record").for_each(|_| {});
/// }
/// // Nothing needed a record of this loop: none kept.
/// assert_eq!(record(LoopId::named("doc-record")), None);
/// keel::parallel(0..10u32)
///     .schedule("guided".parse()?)
///     .id("doc-record")
///     .recorded()
///     .for_each(|_| {});
/// let rec = record(LoopId::named("doc-record")).unwrap();
/// assert_eq!((rec.instances, rec.last.iterations), (1, 10));
/// # Ok::<(), keel::loops::ScheduleError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoopRecord {
    /// Recorded instances so far.
    pub instances: u64,
    /// The latest recorded instance.
    pub last: InstanceStats,
    /// Mean and standard deviation of the time per iteration, in seconds,
    /// from the latest instance whose schedule reads a profile (FSC, FAC,
    /// TAP, BOLD): Keel times each chunk of such instances and estimates
    /// both from the chunk times (`claim::ProfileSums`), without timing
    /// single iterations. Instances of other schedules leave it unchanged.
    pub profile: Option<(f64, f64)>,
    /// AWF's time-step-weighted history, two entries per participant:
    /// Σ s·W_i (iterations) and Σ s·T_i (seconds) over instances s = 1, 2, ….
    pub history: Vec<f64>,
    /// How many times a workload-aware schedule (`binlpt`, `greedy`) computed
    /// its iteration assignment; the other instances reused one.
    pub assignments: u64,
    /// Under `auto[,method]`: the schedule chosen at every instance, as a
    /// timeline.
    pub selection: Option<SelectionTimeline>,
    /// Σ T_par over the recorded instances, in seconds.
    pub total_time: f64,
    /// The mean of the recorded instances' LIB, in percent.
    pub mean_lib_percent: f64,
    /// The schedule of every recorded instance, run-length encoded, in
    /// instance order: one run while a fixed schedule runs, one per change
    /// under `auto` or `omp_set_schedule`. At most [`SCHEDULE_RUNS`] runs
    /// are kept (then the last run is not extended by a new schedule's
    /// instances nor any later one: they are counted in
    /// `schedule_runs_dropped`).
    pub schedules: Vec<ScheduleRun>,
    /// Instances whose run did not fit in `schedules`.
    pub schedule_runs_dropped: u64,
}

/// Runs a [`LoopRecord`] keeps in its schedule history: enough for every
/// change of a time-stepping loop's exploration and a few phase changes,
/// small enough that a record stays a few kilobytes.
pub const SCHEDULE_RUNS: usize = 64;

/// Consecutive recorded instances of a loop that ran one schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScheduleRun {
    /// The schedule's canonical spec.
    pub schedule: String,
    /// Instances in the run.
    pub instances: u64,
}

/// The decisions of a loop's selection method at every instance,
/// run-length encoded (Auto4OMP's per-loop selection, made visible).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelectionTimeline {
    /// `keel`, `expert`, `exhaustive` or `random`.
    pub method: &'static str,
    /// Consecutive instances with one schedule (portfolio index) and reason.
    pub runs: Vec<Run>,
    /// Instances the method spent trying schedules (exploration).
    pub exploration_instances: u64,
    /// Changes not stored because the timeline reached its capacity.
    pub dropped: u64,
    /// What selection cost the loop (`auto,keel`'s budget and the time of
    /// its exploration instances beyond the settled schedule's).
    pub cost: SelectionCost,
    /// Why the search of the latest instance's class ended, once it has.
    pub settled_by: Option<SettledBy>,
}

impl SelectionTimeline {
    /// The timeline of `selection`, with `unrun` leased instances that have
    /// not run yet left out.
    fn of(selection: &Selection, unrun: u32) -> Self {
        let (record, cost) = selection.selector.view_without_unrun(unrun);
        SelectionTimeline {
            method: selection.spec.method.name(),
            runs: record.runs().to_vec(),
            exploration_instances: record.exploration_instances(),
            dropped: record.dropped(),
            cost,
            settled_by: selection.selector.settled_by(),
        }
    }
}

/// The iteration profile the participants' `slots` measured in a
/// profiled instance: their chunk-time sums, merged.
pub(crate) fn measured_profile(slots: &[CachePadded<Slot>]) -> Option<(f64, f64)> {
    let mut sums = ProfileSums::default();
    for slot in slots {
        let bits = std::array::from_fn(|i| slot.profile[i].load(Ordering::Relaxed));
        sums.merge(ProfileSums::from_bits(bits));
    }
    sums.profile()
}

/// A copy of a loop's record, with what the loop's memory keeps and its
/// selection timeline.
fn snapshot(state: &LoopState) -> LoopRecord {
    let mut record = state.record.clone();
    record.profile = state.memory.profile();
    record.history = state.memory.history().to_vec();
    record.assignments = state.memory.assignments();
    if let Some((_, Resolved::Auto(selection))) = &state.resolved {
        let unrun = state.lease.as_ref().map_or(0, |lease| {
            lease.left.load(std::sync::atomic::Ordering::Relaxed)
        });
        record.selection = Some(SelectionTimeline::of(selection, unrun));
    }
    record
}

impl LoopRecord {
    /// Stores what the participants' `slots` measured in an instance that
    /// took `t_par`, reusing the record's buffers (no allocation once warm).
    pub(crate) fn store(
        &mut self,
        schedule: &str,
        iterations: u64,
        slots: &[CachePadded<Slot>],
        t_par: f64,
    ) {
        let f64_of = |word: &crate::sync::AtomicU64| f64::from_bits(word.load(Ordering::Relaxed));
        self.instances += 1;
        let last = &mut self.last;
        last.schedule.clear();
        last.schedule.push_str(schedule);
        last.threads = slots.len();
        last.iterations = iterations;
        last.t_par = t_par;
        last.finish.clear();
        last.finish.extend(slots.iter().map(|s| f64_of(&s.finish)));
        last.busy.clear();
        last.busy
            .extend(slots.iter().map(|s| f64_of(&s.finish) - f64_of(&s.start)));
        last.chunks.clear();
        last.chunks
            .extend(slots.iter().map(|s| s.chunks.load(Ordering::Relaxed)));
        last.thread_iterations.clear();
        last.thread_iterations
            .extend(slots.iter().map(|s| s.iterations.load(Ordering::Relaxed)));
        last.lib_percent = keel_policy::metrics::lib_percent(&last.finish);
        let lib_percent = last.lib_percent;
        self.total_time += t_par;
        self.mean_lib_percent += (lib_percent - self.mean_lib_percent) / self.instances as f64;
        self.extend_schedules(schedule);
    }
}

impl LoopRecord {
    /// Counts an instance of `schedule` in the run-length history; a new
    /// run (one allocation) only when the schedule changed.
    fn extend_schedules(&mut self, schedule: &str) {
        let full = self.schedules.len() >= SCHEDULE_RUNS;
        match self.schedules.last_mut() {
            Some(run) if run.schedule == schedule && self.schedule_runs_dropped == 0 => {
                run.instances += 1
            }
            _ if full || self.schedule_runs_dropped > 0 => self.schedule_runs_dropped += 1,
            _ => self.schedules.push(ScheduleRun {
                schedule: schedule.to_string(),
                instances: 1,
            }),
        }
    }
}

/// A copy of the record of loop `id`, if it has had a recorded instance.
pub fn record(id: LoopId) -> Option<LoopRecord> {
    let state = state::existing(&id)?;
    let state = state::lock(&state);
    (state.record.instances > 0).then(|| snapshot(&state))
}

/// Copies of the records of every loop that has had a recorded instance,
/// in no particular order.
pub fn all_records() -> Vec<(LoopId, LoopRecord)> {
    let mut all = Vec::new();
    state::for_each_state(|id, state| {
        if state.record.instances > 0 {
            all.push((id.clone(), snapshot(state)));
        }
    });
    all
}

/// Forgets every record and every selection state (tests, or a program
/// starting a new phase: `auto` loops then select afresh). Iteration
/// assignments are kept: they depend only on their inputs, which are
/// checked on every instance.
pub fn clear_records() {
    state::for_each_state(|_, state| {
        state.record = LoopRecord::default();
        state.memory.forget_measurements();
        state.resolved = None;
    });
}
