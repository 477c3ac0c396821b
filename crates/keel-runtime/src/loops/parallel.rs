//! The loop's builder and its entry points: per index, per chunk, per
//! piece of a mutable slice, fold-reduce; each in an infallible form and a
//! `try_` form with the typed errors.

use std::ops::Range;
use std::panic::Location;
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;

use super::{or_panic, LoopError, LoopId, LoopIndex, LoopName, LoopSummary, Mode, Schedule};
use crate::pool::ThreadPool;

/// A parallel loop being configured.
#[must_use = "a loop runs only when one of its for_each or fold_reduce forms is called"]
pub struct ParallelLoop<'p, I> {
    pub(super) pool: Option<&'p ThreadPool>,
    pub(super) range: Range<I>,
    pub(super) schedule: Option<Schedule>,
    pub(super) chunk: Option<u64>,
    pub(super) id: LoopId,
    pub(super) weights: Option<Arc<[f64]>>,
    pub(super) workload: Option<&'p [f64]>,
    pub(super) recorded: bool,
}

/// A loop over `range` on the global pool; its identity is the caller's
/// source location.
#[track_caller]
pub fn parallel<I: LoopIndex>(range: Range<I>) -> ParallelLoop<'static, I> {
    ParallelLoop {
        pool: None,
        range,
        schedule: None,
        chunk: None,
        id: LoopId::Site(Location::caller()),
        weights: None,
        workload: None,
        recorded: false,
    }
}

/// Runs `body(i)` for every `i` in `range` on the global pool, with the
/// schedule from `KEEL_SCHEDULE` (else `auto`): [`ParallelLoop::for_each`].
///
/// # Panics
///
/// As [`ParallelLoop::for_each`]; a panic in `body` reaches the caller.
#[track_caller]
pub fn for_each<I: LoopIndex>(range: Range<I>, body: impl Fn(I) + Sync) -> LoopSummary {
    parallel(range).for_each(body)
}

/// [`for_each`] with the typed errors: [`ParallelLoop::try_for_each`].
#[track_caller]
pub fn try_for_each<I: LoopIndex>(
    range: Range<I>,
    body: impl Fn(I) + Sync,
) -> Result<LoopSummary, LoopError> {
    parallel(range).try_for_each(body)
}

/// Runs `body(chunk)` for every chunk of `range` on the global pool:
/// [`ParallelLoop::for_each_chunk`].
///
/// # Panics
///
/// As [`ParallelLoop::for_each_chunk`]; a panic in `body` reaches the caller.
#[track_caller]
pub fn for_each_chunk<I: LoopIndex>(
    range: Range<I>,
    body: impl Fn(Range<I>) + Sync,
) -> LoopSummary {
    parallel(range).for_each_chunk(body)
}

/// [`for_each_chunk`] with the typed errors:
/// [`ParallelLoop::try_for_each_chunk`].
#[track_caller]
pub fn try_for_each_chunk<I: LoopIndex>(
    range: Range<I>,
    body: impl Fn(Range<I>) + Sync,
) -> Result<LoopSummary, LoopError> {
    parallel(range).try_for_each_chunk(body)
}

impl ThreadPool {
    /// A loop over `range` on this pool; its identity is the caller's
    /// source location.
    #[track_caller]
    pub fn parallel<I: LoopIndex>(&self, range: Range<I>) -> ParallelLoop<'_, I> {
        ParallelLoop {
            pool: Some(self),
            range,
            schedule: None,
            chunk: None,
            id: LoopId::Site(Location::caller()),
            weights: None,
            workload: None,
            recorded: false,
        }
    }
}

impl<'p, I: LoopIndex> ParallelLoop<'p, I> {
    /// The schedule, parsed from `KEEL_SCHEDULE` syntax
    /// (`.schedule("guided".parse()?)`, `dynamic,4`, `awf-b`, `auto`, …);
    /// overrides the environment.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The chunk parameter (`docs/conventions.md#the-chunk-parameter`);
    /// overrides one in the spec.
    pub fn chunk(mut self, chunk: u64) -> Self {
        self.chunk = Some(chunk);
        self
    }

    /// Relative speeds of the participants, one per thread, for `wf` (LB4OMP's
    /// `KMP_WEIGHTS`): offered to the schedule as a user component. They apply
    /// when the loop runs on the whole team; a loop nested inside a region
    /// runs on one thread and ignores them. A wrong length is a typed error.
    pub fn weights(mut self, weights: impl Into<Arc<[f64]>>) -> Self {
        self.weights = Some(weights.into());
        self
    }

    /// Per-iteration workload hints (one non-negative number per iteration,
    /// any unit), for the workload-aware schedules `binlpt` and `greedy`
    /// (BinLPT's `omp_set_workload`); other schedules ignore them. Such a
    /// schedule maps the iterations once and reuses that assignment in later
    /// instances of this loop until the hints (compared bit for bit), the
    /// team or the chunk change.
    pub fn workload<'w>(self, loads: &'w [f64]) -> ParallelLoop<'w, I>
    where
        'p: 'w,
    {
        ParallelLoop {
            pool: self.pool,
            range: self.range,
            schedule: self.schedule,
            chunk: self.chunk,
            id: self.id,
            weights: self.weights,
            workload: Some(loads),
            recorded: self.recorded,
        }
    }

    /// Records this instance in the loop's [`LoopRecord`](super::LoopRecord)
    /// even when nothing needs it: its participants then read the clock at
    /// their start and finish, so the record (and the summary's LIB) has
    /// finish and busy times. `auto` loops and schedules that read what
    /// records keep are recorded anyway; [`record_all`](super::record_all)
    /// or `KEEL_LOOP_RECORD=all` records every loop.
    ///
    /// ```
    /// use keel::loops::{record, LoopId};
    /// let summary = keel::parallel(0..64u32)
    ///     .schedule("dynamic,4".parse()?)
    ///     .id("doc-recorded")
    ///     .recorded()
    ///     .for_each(|_| {});
    /// assert!(summary.lib_percent.is_some());
    /// let rec = record(LoopId::named("doc-recorded")).expect("recorded");
    /// assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 64);
    /// # Ok::<(), keel::loops::ScheduleError>(())
    /// ```
    pub fn recorded(mut self) -> Self {
        self.recorded = true;
        self
    }

    /// Names the loop, so that its records do not depend on the call site:
    /// a literal (`.id("solver")`) or a name built at run time
    /// (`.id(format!("solver/{level}"))`); names with equal text are one
    /// loop.
    pub fn id(mut self, name: impl Into<LoopName>) -> Self {
        self.id = LoopId::Named(name.into());
        self
    }

    /// Runs `body(i)` for every index (std's `Iterator::for_each`, rayon's
    /// `ParallelIterator::for_each`).
    ///
    /// What the environment gets wrong does not stop the loop: a
    /// `KEEL_SCHEDULE` that does not parse or cannot run this loop, or a bad
    /// pool variable, is warned about once per process on stderr and the
    /// default used; a global pool that cannot be built runs the loop on the
    /// calling thread (one warning per process). [`Self::try_for_each`]
    /// returns these as typed errors instead.
    ///
    /// # Panics
    ///
    /// On what only code can get wrong, with the [`LoopError`]'s message:
    /// an invalid schedule given with [`Self::schedule`] (or one that
    /// cannot plan this loop, e.g. [`Self::weights`] of the wrong length),
    /// or a `u128`/`i128` range longer than `u64::MAX`. A panic in `body`
    /// reaches the caller once the participants have joined; the pool stays
    /// usable.
    #[track_caller]
    pub fn for_each(self, body: impl Fn(I) + Sync) -> LoopSummary {
        or_panic(self.run_each(&body, Mode::Lenient))
    }

    /// [`Self::for_each`] with the typed errors: what the environment or the
    /// code got wrong is a [`LoopError`], and no iteration has run when one
    /// is returned. Unlike rayon's `try_for_each`, the body is not fallible:
    /// the `Result` is about the loop, not the iterations.
    pub fn try_for_each(self, body: impl Fn(I) + Sync) -> Result<LoopSummary, LoopError> {
        self.run_each(&body, Mode::Strict)
    }

    fn run_each(self, body: &(impl Fn(I) + Sync), mode: Mode) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(mode, &|_, from: u64, to: u64| {
            for offset in from..to {
                body(I::at(start, offset));
            }
        })
    }

    /// Runs `body(chunk)` for every chunk the schedule hands out.
    ///
    /// # Panics
    ///
    /// As [`Self::for_each`], whose notes on the environment apply too.
    #[track_caller]
    pub fn for_each_chunk(self, body: impl Fn(Range<I>) + Sync) -> LoopSummary {
        or_panic(self.run_chunks(&body, Mode::Lenient))
    }

    /// [`Self::for_each_chunk`] with the typed errors, as
    /// [`Self::try_for_each`]; the body is not fallible.
    pub fn try_for_each_chunk(
        self,
        body: impl Fn(Range<I>) + Sync,
    ) -> Result<LoopSummary, LoopError> {
        self.run_chunks(&body, Mode::Strict)
    }

    fn run_chunks(
        self,
        body: &(impl Fn(Range<I>) + Sync),
        mode: Mode,
    ) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(mode, &|_, from: u64, to: u64| {
            body(I::at(start, from)..I::at(start, to))
        })
    }

    /// Folds every index into a per-participant accumulator and combines
    /// the accumulators at the join (rayon's `fold` + `reduce`, OpenMP's
    /// `reduction` clause): each participant starts from `identity()`,
    /// folds the chunks the schedule hands it, in the order it claims them,
    /// with `fold`; the caller then combines the participants' results in
    /// participant order with `reduce`. An empty loop returns `identity()`.
    ///
    /// `reduce` must be associative, and `identity()` its neutral element,
    /// for the result not to depend on the schedule; with floating point
    /// the result is the sequential sum up to rounding (the order of the
    /// additions depends on the schedule).
    ///
    /// ```
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let sum = pool
    ///     .parallel(0..1000u64)
    ///     .fold_reduce(|| 0u64, |acc, i| acc + i, |a, b| a + b);
    /// assert_eq!(sum, 499_500);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`Self::for_each`], whose notes on the environment apply too.
    #[track_caller]
    pub fn fold_reduce<T: Send>(
        self,
        identity: impl Fn() -> T + Sync,
        fold: impl Fn(T, I) -> T + Sync,
        reduce: impl Fn(T, T) -> T,
    ) -> T {
        or_panic(self.run_fold(&identity, &fold, reduce, Mode::Lenient)).0
    }

    /// [`Self::fold_reduce`] with the typed errors, as
    /// [`Self::try_for_each`], and the instance's summary; the body is not
    /// fallible.
    pub fn try_fold_reduce<T: Send>(
        self,
        identity: impl Fn() -> T + Sync,
        fold: impl Fn(T, I) -> T + Sync,
        reduce: impl Fn(T, T) -> T,
    ) -> Result<(T, LoopSummary), LoopError> {
        self.run_fold(&identity, &fold, reduce, Mode::Strict)
    }

    fn run_fold<T: Send>(
        self,
        identity: &(impl Fn() -> T + Sync),
        fold: &(impl Fn(T, I) -> T + Sync),
        reduce: impl Fn(T, T) -> T,
        mode: Mode,
    ) -> Result<(T, LoopSummary), LoopError> {
        let start = self.range.start;
        let participants = self.pool_for(mode)?.team_size_here();
        // One accumulator per participant, each on its own cache lines:
        // participant `me` is the only one to lock `partial[me]` during the
        // region, so the lock is never contended.
        let partial: Vec<CachePadded<Mutex<Option<T>>>> = (0..participants)
            .map(|_| CachePadded::new(Mutex::new(None)))
            .collect();
        let summary = self.run(mode, &|me, from: u64, to: u64| {
            let mut slot = partial[me].lock().unwrap_or_else(|e| e.into_inner());
            let acc = slot.take().unwrap_or_else(identity);
            *slot = Some((from..to).fold(acc, |acc, offset| fold(acc, I::at(start, offset))));
        })?;
        let result = partial
            .into_iter()
            .filter_map(|slot| {
                CachePadded::into_inner(slot)
                    .into_inner()
                    .unwrap_or_else(|e| e.into_inner())
            })
            .reduce(reduce)
            .unwrap_or_else(identity);
        Ok((result, summary))
    }
}

impl<'p> ParallelLoop<'p, usize> {
    /// Runs `body(start, chunk)` on disjoint pieces of `data`: for every
    /// chunk `a..b` of the loop's range that the schedule hands out, `chunk` is
    /// `&mut data[a..b]` and `start` is `a`. Every index of the range is in
    /// exactly one chunk, so each element is borrowed mutably once, with no
    /// lock or atomic (OpenMP's `parallel for` over an array, rayon's
    /// `par_chunks_mut` with the schedule choosing the chunks). The range
    /// must lie inside `data`: `pool.parallel(0..data.len())` covers it
    /// all.
    ///
    /// ```
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let mut squares = vec![0u64; 1000];
    /// pool.parallel(0..squares.len())
    ///     .schedule("guided".parse().unwrap())
    ///     .for_each_chunk_mut(&mut squares, |start, chunk| {
    ///         for (k, x) in chunk.iter_mut().enumerate() {
    ///             let i = (start + k) as u64;
    ///             *x = i * i;
    ///         }
    ///     });
    /// assert_eq!(squares[999], 998_001);
    /// ```
    ///
    /// # Panics
    ///
    /// When the range reaches past the end of `data` (as slice indexing
    /// does), and as [`Self::for_each`], whose notes on the environment
    /// apply too.
    #[track_caller]
    pub fn for_each_chunk_mut<T: Send>(
        self,
        data: &mut [T],
        body: impl Fn(usize, &mut [T]) + Sync,
    ) -> LoopSummary {
        or_panic(self.run_chunks_mut(data, &body, Mode::Lenient))
    }

    /// [`Self::for_each_chunk_mut`] with the typed errors, as
    /// [`Self::try_for_each`]: a range past the end of `data` is
    /// [`LoopError::SliceTooShort`]. The body is not fallible.
    pub fn try_for_each_chunk_mut<T: Send>(
        self,
        data: &mut [T],
        body: impl Fn(usize, &mut [T]) + Sync,
    ) -> Result<LoopSummary, LoopError> {
        self.run_chunks_mut(data, &body, Mode::Strict)
    }

    fn run_chunks_mut<T: Send>(
        self,
        data: &mut [T],
        body: &(impl Fn(usize, &mut [T]) + Sync),
        mode: Mode,
    ) -> Result<LoopSummary, LoopError> {
        if self.range.end > data.len() && self.range.start < self.range.end {
            return Err(LoopError::SliceTooShort {
                end: self.range.end,
                len: data.len(),
            });
        }
        let start = self.range.start;
        let base = SlicePtr(data.as_mut_ptr());
        self.run(mode, &|_, from: u64, to: u64| {
            let (a, b) = (start + from as usize, start + to as usize);
            // SAFETY: `a..b` lies inside `data` (checked above: the range
            // ends within it, and every chunk lies inside the range), and
            // the schedule hands out each iteration exactly once per
            // instance (claim.rs; the exactly-once tests check it under
            // every schedule), so no two calls get overlapping pieces. The
            // exclusive borrow of `data` lasts until `run` returns, which
            // is after the join: no piece outlives it.
            let chunk = unsafe { std::slice::from_raw_parts_mut(base.get().add(a), b - a) };
            body(a, chunk);
        })
    }
}

/// The base of a slice whose disjoint pieces go to different participants.
struct SlicePtr<T>(*mut T);

impl<T> SlicePtr<T> {
    /// Through a method, so that closures capture the whole wrapper (and
    /// its `Sync`), not the raw pointer field.
    fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: the pointer is only turned into disjoint `&mut [T]` pieces, one
// per chunk, each used by one participant: sending a `T` to another thread
// is what `T: Send` allows.
unsafe impl<T: Send> Sync for SlicePtr<T> {}
