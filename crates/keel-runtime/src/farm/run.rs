//! [`Farm`] and one run of it: queues, worker threads, the emitter on the
//! calling thread, panics resumed, the report.

use std::panic;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use super::emitter::{emit, Emitter};
use super::shared::{AbortOnUnwind, Msg, Shared, Slot};
use super::spsc;
use super::sync::Arc;
use super::worker::worker_main;
use super::{
    CostHint, Dispatch, FarmBuilder, FarmConfig, FarmError, FarmReport, Feedback, Signal, Worker,
};

/// A farm: its workers start with each run and end with it.
#[derive(Debug)]
pub struct Farm {
    pub(super) workers: usize,
    /// The policy's canonical spec, as [`Farm::policy`] gives it.
    pub(super) policy_spec: String,
    pub(super) capacity: Option<usize>,
    pub(super) output_capacity: Option<usize>,
    pub(super) dispatch: Box<dyn Dispatch>,
    pub(super) spins: u32,
    pub(super) pin: Option<Vec<core_affinity::CoreId>>,
    /// Speeds the user told ([`FarmBuilder::speeds`]).
    pub(super) speeds: Option<Vec<f64>>,
}

impl Farm {
    /// A builder.
    pub fn builder() -> FarmBuilder {
        FarmBuilder::default()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The dispatch policy's canonical spec (`arrs:chunk=100`, …).
    pub fn policy(&self) -> &str {
        &self.policy_spec
    }

    /// Capacity of the input queues (`None` = unbounded).
    pub fn input_capacity(&self) -> Option<usize> {
        self.dispatch.capacity().or(self.capacity)
    }

    /// Runs `work` on every item of `items`, no collector. Returns when
    /// every item has run; a panic in `work` is resumed here.
    pub fn run<I, F>(&mut self, items: I, work: F) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        F: Fn(Worker, I::Item) + Sync,
    {
        self.execute(
            items.into_iter(),
            &work,
            None::<fn((), &mut Feedback<I::Item>)>,
            false,
            None,
        )
    }

    /// As [`Self::run`], with each item's cost hint: `hint(&item)` work
    /// units (seconds at speed 1, or any unit shared by all items). A
    /// policy that reads hints (`eft`) sees it as the item is dispatched;
    /// the workers count it as work done when they measure their speed.
    /// A hint that is NaN, negative or infinite counts as no hint (`eft`
    /// then takes the mean of the valid ones); `hint` is called twice per
    /// item, by the emitter and by the worker, so it should be cheap and
    /// pure.
    ///
    /// ```
    /// use keel::farm::Farm;
    /// let mut farm = Farm::builder().workers(2).policy("eft").speeds(vec![1.0, 0.1]).build().unwrap();
    /// let report = farm.run_hinted([3.0, 2.0, 1.0], |&c: &f64| c, |_, _| {}).unwrap();
    /// // Every item finishes earliest on the fast worker.
    /// assert_eq!(report.per_worker, vec![3, 0]);
    /// ```
    pub fn run_hinted<I, H, F>(
        &mut self,
        items: I,
        hint: H,
        work: F,
    ) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        H: Fn(&I::Item) -> f64 + Sync,
        F: Fn(Worker, I::Item) + Sync,
    {
        self.execute(
            items.into_iter(),
            &work,
            None::<fn((), &mut Feedback<I::Item>)>,
            false,
            Some(&hint),
        )
    }

    /// Runs `work` on every item and hands each result to `collect` on the
    /// calling thread, in the order results arrive.
    pub fn run_collect<I, R, F, C>(
        &mut self,
        items: I,
        work: F,
        mut collect: C,
    ) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        R: Send,
        F: Fn(Worker, I::Item) -> R + Sync,
        C: FnMut(R),
    {
        let collect = |r: R, _: &mut Feedback<I::Item>| collect(r);
        self.execute(items.into_iter(), &work, Some(collect), false, None)
    }

    /// A farm with feedback: `collect` gets each result and may send new
    /// items back to the emitter ([`Feedback::send`]). The run ends when
    /// the collector calls [`Feedback::stop`] (after the results in flight
    /// arrive), or when the source and the pool are empty and every item
    /// dispatched has come back.
    pub fn run_feedback<I, R, F, C>(
        &mut self,
        items: I,
        work: F,
        collect: C,
    ) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        R: Send,
        F: Fn(Worker, I::Item) -> R + Sync,
        C: FnMut(R, &mut Feedback<I::Item>),
    {
        self.execute(items.into_iter(), &work, Some(collect), true, None)
    }

    fn execute<T, R, I, F, C>(
        &mut self,
        source: I,
        work: &F,
        mut collect: Option<C>,
        feedback: bool,
        hint: Option<CostHint<'_, T>>,
    ) -> Result<FarmReport, FarmError>
    where
        T: Send,
        R: Send,
        I: Iterator<Item = T>,
        F: Fn(Worker, T) -> R + Sync,
        C: FnMut(R, &mut Feedback<T>),
    {
        let start = Instant::now();
        let p = self.workers;
        let capacity = self.input_capacity();
        self.dispatch.start(&FarmConfig::new(p, capacity)?)?;
        let shared = Shared {
            master: Arc::new(Signal::new()),
            reached: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            panic: std::sync::Mutex::new(None),
            slots: (0..p)
                .map(|_| {
                    CachePadded::new(Slot {
                        signal: Arc::new(Signal::new()),
                        marker_seen: AtomicU64::new(0),
                        processed: AtomicU64::new(0),
                        done: AtomicU64::new(0),
                        busy_ns: AtomicU64::new(0),
                        work_bits: AtomicU64::new(0.0f64.to_bits()),
                    })
                })
                .collect(),
        };
        let mut inputs = Vec::with_capacity(p);
        let mut worker_ends = Vec::with_capacity(p);
        let mut outputs = Vec::new();
        for slot in &shared.slots {
            let (tx, rx) =
                spsc::channel::<Msg<T>>(capacity, slot.signal.clone(), shared.master.clone());
            inputs.push(tx);
            let out = collect.is_some().then(|| {
                let (otx, orx) = spsc::channel::<R>(
                    self.output_capacity,
                    shared.master.clone(),
                    slot.signal.clone(),
                );
                outputs.push(orx);
                otx
            });
            worker_ends.push((rx, out));
        }

        let mut report = FarmReport::default();
        let spins = self.spins;
        let dispatch = &mut self.dispatch;
        let pin = &self.pin;
        let measure = dispatch.reads_speeds();
        let told = self.speeds.as_deref();
        let spawned: Result<(), FarmError> = std::thread::scope(|scope| {
            for (index, (rx, out)) in worker_ends.into_iter().enumerate() {
                let me = Worker { index, workers: p };
                let shared = &shared;
                let core = pin.as_ref().map(|cores| cores[index % cores.len()]);
                let spawned = std::thread::Builder::new()
                    .name(format!("keel-farm-{index}"))
                    .spawn_scoped(scope, move || {
                        if let Some(core) = core {
                            // Best effort, as the pool's pinning.
                            core_affinity::set_for_current(core);
                        }
                        worker_main(me, rx, out, work, shared, spins, measure.then_some(hint))
                    });
                if let Err(e) = spawned {
                    shared.abort();
                    return Err(FarmError::Spawn(e.to_string()));
                }
            }
            let _guard = AbortOnUnwind(&shared);
            let tracer = crate::trace::tracer();
            let mut emitter = Emitter {
                shared: &shared,
                dispatch: dispatch.as_mut(),
                inputs: &mut inputs,
                outputs: &mut outputs,
                spins,
                feedback,
                measure,
                told,
                hint,
                report: &mut report,
                waits: tracer.map(|_| Vec::new()),
            };
            emit(&mut emitter, source, collect.as_mut());
            if let (Some(tracer), Some(waits)) = (tracer, &emitter.waits) {
                tracer.write(crate::trace::Track::FarmEmitter, waits);
            }
            // End every queue now, so that workers still waiting leave.
            drop(std::mem::take(&mut inputs));
            drop(std::mem::take(&mut outputs));
            Ok(())
        });
        spawned?;
        let payload = shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(payload) = payload {
            panic::resume_unwind(payload);
        }
        report.per_worker = shared
            .slots
            .iter()
            .map(|s| s.processed.load(Ordering::Relaxed))
            .collect();
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }
}
