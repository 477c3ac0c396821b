//! One loop instance's lifecycle, apart from who runs its participants:
//! [`prepare`] (resolve the schedule, read what the loop kept, build the
//! plan's inputs) → [`Prepared::plan`] → `claim::participate(me)` on every
//! participant → [`Prepared::finish`] (record, summarise). Keel's pool
//! drives it as one fork/join (`pool_driver.rs`); threads Keel does
//! not own drive it through `foreign::Workshare`, where the first thread
//! to arrive prepares and the last to leave finishes.
//!
//! An instance touches the loop's state only when it is recorded
//! (`recording.rs` decides which are).

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use crossbeam_utils::CachePadded;
use keel_policy::concept::{Concept, Origin};
use keel_policy::dls::{
    LoopSchedule, LoopShape, Plan, Recall, SharedAssignment, StepMeasurement, WorkloadSchedule,
};
use keel_policy::select::{self, Measurement};
use keel_policy::{ContextHandler, PolicyError};
use smallvec::SmallVec;

use super::record::measured_profile;
use super::recording::must_record;
use super::schedule::{ResolvedSchedule, ScheduleKind};
use super::state::{self, Lease, LeaseCount, LoopState, Parsed, Resolved, Selection, SharedState};
use super::{LoopId, LoopSummary, Slot, HINTS};
use crate::trace;

/// What `auto` chose for one instance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Selected {
    pub(crate) method: &'static str,
    pub(crate) phase: &'static str,
}

/// What one instance is run with, as its caller configured it.
#[derive(Clone, Copy)]
pub(crate) struct LoopSpec<'a> {
    pub(crate) id: &'a LoopId,
    pub(crate) schedule: &'a ResolvedSchedule,
    pub(crate) iterations: u64,
    pub(crate) threads: usize,
    /// The loop's own chunk parameter.
    pub(crate) chunk: Option<u64>,
    /// User weights, already checked to apply to this team.
    pub(crate) weights: Option<&'a [f64]>,
    pub(crate) hints: Option<&'a [f64]>,
    /// Record this instance even if nothing needs it.
    pub(crate) record: bool,
}

/// Everything an instance decides before any participant runs. Owned, so
/// that whoever plans it can hand it to participants on other threads.
pub(crate) struct Prepared {
    pub(crate) parsed: Parsed,
    pub(crate) shape: LoopShape,
    profile: Option<[f64; 2]>,
    /// Whether AWF's history was copied into the caller's buffer.
    history: bool,
    assignment: Option<SharedAssignment>,
    pub(crate) selected: Option<Selected>,
    /// The loop's state, when this instance is recorded.
    state: Option<SharedState>,
    /// Time every chunk for the iteration profile.
    pub(crate) profiled: bool,
    /// The lease this instance runs under: a workshare that keeps its
    /// preparation takes further instances from it.
    pub(crate) lease: Option<LeaseCount>,
}

/// AWF's history as the plan reads it: on the caller's stack, beside the
/// [`Prepared`] instance, so that preparing moves no more than a few words.
pub(crate) type History = SmallVec<[f64; 32]>;

/// Resolves the schedule of an instance of `spec` and gathers what its
/// plan reads (AWF's history into `history`); no iteration runs here.
pub(crate) fn prepare(spec: &LoopSpec<'_>, history: &mut History) -> Result<Prepared, PolicyError> {
    if let Some(parsed) = spec.schedule.fixed() {
        if !must_record(false, parsed.reads_state, spec.record) {
            let chunk = spec.chunk.or(parsed.chunk);
            return Ok(Prepared {
                parsed: Arc::clone(parsed),
                shape: LoopShape::new(spec.iterations, spec.threads, chunk)?,
                profile: None,
                history: false,
                assignment: None,
                selected: None,
                state: None,
                profiled: false,
                lease: None,
            });
        }
    }
    let loop_state = state::state_of(spec.id);
    let mut st = state::lock(&loop_state);
    let Resolution {
        parsed,
        chunk: auto_chunk,
        selected,
        measure,
        lease,
    } = resolve(&mut st, spec)?;
    let recall = st.memory.recall(parsed.schedule.as_ref(), spec.threads);
    history.clear();
    if let Some(kept) = recall.history {
        history.extend_from_slice(kept);
    }
    let (profile, profiled, copied) = (
        recall.profile.copied(),
        recall.profiled,
        recall.history.is_some(),
    );
    // The loop's own chunk wins; under `auto` the expert chunk takes
    // the chunk parameter's place (docs/conventions.md#the-chunk-parameter).
    let chunk = spec.chunk.or(auto_chunk).or(parsed.chunk);
    let shape = LoopShape::new(spec.iterations, spec.threads, chunk)?;
    let assignment = match parsed.schedule.as_workload() {
        Some(workload) => Some(assignment_for(
            &mut st, workload, &parsed, &shape, spec.hints,
        )?),
        None => None,
    };
    // An exploited `auto` choice the selector does not need measured runs
    // like its fixed schedule: no clocks, no record (unless the schedule
    // reads what records keep, or recording was asked for).
    let recorded = must_record(measure, parsed.reads_state, spec.record);
    drop(st);
    Ok(Prepared {
        parsed,
        shape,
        profile,
        history: copied,
        assignment,
        selected,
        state: recorded.then_some(loop_state),
        profiled,
        lease,
    })
}

/// What [`resolve`] decided for an instance.
struct Resolution {
    parsed: Parsed,
    /// `auto`'s chunk parameter.
    chunk: Option<u64>,
    selected: Option<Selected>,
    /// Whether the selector needs this instance measured.
    measure: bool,
    lease: Option<LeaseCount>,
}

impl Prepared {
    /// Whether this instance reads the participants' clocks and updates
    /// the loop's record.
    pub(crate) fn recorded(&self) -> bool {
        self.state.is_some()
    }

    /// The context handler the plan reads: what the loop measured before as
    /// runtime components, the user's weights and hints as user components.
    ///
    /// It fills the caller's handler: the handler's inline storage is too
    /// large to return by value on every instance.
    pub(crate) fn provide<'a>(
        &'a self,
        ctx: &mut ContextHandler<'a>,
        spec: &LoopSpec<'a>,
        history: &'a History,
    ) {
        let recall = Recall {
            profile: self.profile.as_ref(),
            history: self.history.then_some(&history[..]),
            profiled: self.profiled,
        };
        recall.provide(ctx);
        if let Some(weights) = spec.weights {
            ctx.provide_values(Concept::ThreadWeights, Origin::User, weights);
        }
        if let Some(hints) = spec.hints {
            ctx.provide_values(HINTS, Origin::User, hints);
        }
        if let Some(assignment) = &self.assignment {
            ctx.provide_assignment(Origin::Runtime, assignment);
        }
    }

    /// The plan: a pure function of the prepared inputs, so participants
    /// that each make it get equal plans.
    pub(crate) fn plan<'c>(&self, ctx: &'c ContextHandler<'_>) -> Result<Plan<'c>, PolicyError> {
        self.parsed.schedule.plan(&self.shape, ctx)
    }

    /// How the trace names the instance: its loop id and schedule, and
    /// under `auto` the method's choice and why it made it. `None` when
    /// tracing is off.
    pub(crate) fn label(&self, id: &LoopId) -> Option<trace::LoopLabel> {
        trace::tracer()?;
        let schedule = match &self.selected {
            Some(sel) => format!("{} → {} ({})", sel.method, self.parsed.canonical, sel.phase),
            None => self.parsed.canonical.clone(),
        };
        let id = id.to_string();
        Some(trace::LoopLabel {
            name: format!("{id} [{schedule}]"),
            schedule,
            id,
        })
    }

    /// After every participant left: records a recorded instance (and lets
    /// `auto`'s selector observe it) and returns the summary.
    pub(crate) fn finish(
        &self,
        id: &LoopId,
        slots: &[CachePadded<Slot>],
        t_par: Option<f64>,
    ) -> LoopSummary {
        let iterations = self.shape.iterations;
        let Some(loop_state) = &self.state else {
            return LoopSummary {
                id: id.clone(),
                threads: slots.len(),
                iterations,
                chunks: slots.iter().map(|s| s.chunks.load(Ordering::Relaxed)).sum(),
                t_par,
                lib_percent: None,
            };
        };
        let mut st = state::lock(loop_state);
        let st = &mut *st;
        let record = &mut st.record;
        record.store(
            &self.parsed.canonical,
            iterations,
            slots,
            // A recorded instance always read the fork's clock.
            t_par.unwrap_or(f64::NAN),
        );
        st.memory.remember(&StepMeasurement {
            iterations: &record.last.thread_iterations,
            busy: &record.last.busy,
            profile: if self.profiled {
                measured_profile(slots)
            } else {
                None
            },
        });
        record.last.selection = self.selected.map(|s| s.phase);
        record.last.chunk = self.shape.chunk;
        let summary = LoopSummary {
            id: id.clone(),
            threads: slots.len(),
            iterations,
            chunks: record.last.total_chunks(),
            t_par,
            lib_percent: Some(record.last.lib_percent),
        };
        if let (Some(_), Some((_, Resolved::Auto(selection)))) = (self.selected, &mut st.resolved) {
            let measurement =
                Measurement::from_finish_times(&record.last.finish).with_iterations(iterations);
            // Finish times come from a monotonic clock and LIB from them, so
            // the selector cannot refuse them; if it ever did, the choice
            // stays pending and is simply retried.
            let _ = selection.selector.observe(&measurement);
        }
        summary
    }
}

/// The schedule of this instance: resolved once per distinct text and then
/// reused, so later instances neither allocate nor build a selector. Under
/// `auto[,method]` the loop's selector picks a portfolio schedule and,
/// with the expert chunk on, a chunk parameter.
fn resolve(st: &mut LoopState, spec: &LoopSpec<'_>) -> Result<Resolution, PolicyError> {
    let text = &*spec.schedule.text;
    let fresh = !matches!(&st.resolved, Some((cached, _)) if **cached == *text);
    if fresh {
        let resolved = match &spec.schedule.kind {
            ScheduleKind::Fixed(parsed) => Resolved::Fixed(Arc::clone(parsed)),
            ScheduleKind::Auto(auto) => Resolved::Auto(Box::new(Selection {
                selector: auto
                    .selector(stream_of(spec.id))
                    .with_cost(super::cost::dispatch_cost()),
                spec: *auto,
            })),
        };
        st.resolved = Some((text.to_string(), resolved));
    }
    match &mut st.resolved {
        Some((_, Resolved::Fixed(parsed))) => Ok(Resolution {
            parsed: Arc::clone(parsed),
            chunk: None,
            selected: None,
            // No selector: whether to record is the schedule's and the
            // caller's matter alone.
            measure: false,
            lease: None,
        }),
        Some((_, Resolved::Auto(selection))) => {
            if let Some(lease) = &st.lease {
                let same_shape =
                    lease.iterations == spec.iterations && lease.threads == spec.threads;
                if same_shape && state::take_leased(&lease.left) {
                    return Ok(Resolution {
                        parsed: Arc::clone(&lease.parsed),
                        chunk: lease.chunk,
                        selected: Some(Selected {
                            method: lease.method,
                            phase: select::Phase::Exploit.label(),
                        }),
                        measure: false,
                        lease: Some(Arc::clone(&lease.left)),
                    });
                }
                // Ran out, or the loop changed shape: what is left never ran.
                let unused = lease.left.swap(0, std::sync::atomic::Ordering::Relaxed);
                selection.selector.return_lease(unused);
                st.lease = None;
            }
            selection.selector.set_cost(super::cost::dispatch_cost());
            let choice = selection.selector.choose(spec.iterations, spec.threads);
            let method = selection.spec.method.name();
            let parsed = Arc::clone(&portfolio()[choice.index]);
            let lease = (choice.lease > 1).then(|| {
                let left = LeaseCount::new((choice.lease - 1).into());
                st.lease = Some(Lease {
                    parsed: Arc::clone(&parsed),
                    chunk: choice.chunk,
                    iterations: spec.iterations,
                    threads: spec.threads,
                    method,
                    left: Arc::clone(&left),
                });
                left
            });
            Ok(Resolution {
                parsed,
                chunk: choice.chunk,
                selected: Some(Selected {
                    method,
                    phase: choice.phase.label(),
                }),
                measure: choice.measure,
                lease,
            })
        }
        None => unreachable!("resolved just above"),
    }
}

/// The Auto4OMP portfolio, built once through the registry, in
/// portfolio order (the selectors' indices).
fn portfolio() -> &'static [Parsed] {
    static PORTFOLIO: OnceLock<Vec<Parsed>> = OnceLock::new();
    PORTFOLIO.get_or_init(|| {
        select::portfolio()
            .into_iter()
            .map(|schedule| state::ParsedSchedule::new(schedule, None))
            .collect()
    })
}

/// A stable number per loop, separating RandomSel's random streams.
fn stream_of(id: &LoopId) -> u64 {
    // FNV-1a over the loop's printed identity: stable across runs.
    id.to_string().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A workload-aware schedule's assignment: the cached one while the
/// schedule, team, chunk and hints are unchanged, else a new one (counted in
/// the record's `assignments`).
fn assignment_for(
    st: &mut LoopState,
    workload: &WorkloadSchedule,
    parsed: &Parsed,
    shape: &LoopShape,
    hints: Option<&[f64]>,
) -> Result<SharedAssignment, PolicyError> {
    let name = workload.spec().name;
    let hints = hints.ok_or_else(|| PolicyError::InvalidParameter {
        policy: name.clone(),
        key: "workload".to_string(),
        value: "none".to_string(),
        expected: format!(
            "per-iteration workload hints: `{name}` maps iterations by their loads; \
             pass them with .workload(&loads)"
        ),
    })?;
    st.memory
        .assignment(workload, &parsed.canonical, shape, hints)
}
