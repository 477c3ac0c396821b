//! Enacting a mapping: each PU is a scoped thread that runs its tasks in
//! index order and times each one. The measured per-task times are the
//! runtime's dynamic task workload, fed back to a policy through
//! [`measured_context`] — the measure-map-migrate loop of Charm++'s
//! periodic balancing, in its smallest form.

use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use keel_policy::{Concept, ContextHandler, Mapping, Model, Origin, PolicyError, Subject};

/// What running a mapping measured, in seconds from a monotonic clock.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Wall time of each task, indexed by task.
    pub task_times: Vec<f64>,
    /// Time each PU spent running its tasks.
    pub pu_busy: Vec<f64>,
    /// Wall time of the whole step (start to the last PU's finish).
    pub wall: f64,
}

/// Why [`enact`] could not run.
#[derive(Debug, thiserror::Error)]
pub enum EnactError {
    /// A PU count of zero cannot run anything.
    #[error("cannot enact a mapping on 0 PUs")]
    NoPus,
}

/// Runs `work(task)` for every task of `mapping` on the thread of its PU.
///
/// Every task runs exactly once. A panic inside `work` stops that PU's
/// remaining tasks, lets the other PUs finish, and is then resumed on the
/// caller's thread, as `std::thread::scope` does.
///
/// Each PU's tasks run on that PU's thread; then `greedy` maps the tasks
/// again from their measured times.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keel::policy::{mapping, Mapping};
/// use std::sync::Mutex;
/// let map = Mapping::new(vec![0, 0, 1, 1], 2)?;
/// // The thread each task ran on.
/// let ran_on = Mutex::new(vec![None; 4]);
/// let measured = keel::enact(&map, |task| {
///     ran_on.lock().unwrap()[task] = Some(std::thread::current().id());
/// })?;
/// let ran_on = ran_on.into_inner()?;
/// assert!(ran_on.iter().all(Option::is_some));
/// assert_eq!(ran_on[0], ran_on[1]); // PU 0's thread
/// assert_eq!(ran_on[2], ran_on[3]); // PU 1's thread
/// assert_ne!(ran_on[0], ran_on[2]);
/// assert_eq!(measured.task_times.len(), 4);
/// let ctx = keel::measured_context(&measured, &map, &[0.0, 0.0])?;
/// let remapped = mapping::registry().build("greedy")?.map(&ctx)?;
/// assert_eq!((remapped.ntasks(), remapped.npus()), (4, 2));
/// # Ok(()) }
/// ```
pub fn enact<F>(mapping: &Mapping, work: F) -> Result<Measured, EnactError>
where
    F: Fn(usize) + Sync,
{
    let npus = mapping.npus();
    if npus == 0 {
        return Err(EnactError::NoPus);
    }
    let mut per_pu: Vec<Vec<usize>> = vec![Vec::new(); npus];
    for (task, &pu) in mapping.as_slice().iter().enumerate() {
        per_pu[pu].push(task);
    }
    let start = Instant::now();
    let work = &work;
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = per_pu
            .iter()
            .map(|tasks| {
                scope.spawn(move || {
                    let began = Instant::now();
                    let mut times = Vec::with_capacity(tasks.len());
                    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                        for &task in tasks {
                            let t0 = Instant::now();
                            work(task);
                            times.push((task, t0.elapsed().as_secs_f64()));
                        }
                    }));
                    (times, began.elapsed().as_secs_f64(), outcome)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("the PU thread catches panics"))
            .collect()
    });
    let wall = start.elapsed().as_secs_f64();

    let mut measured = Measured {
        task_times: vec![0.0; mapping.ntasks()],
        pu_busy: vec![0.0; npus],
        wall,
    };
    let mut first_panic = None;
    for (pu, (times, busy, outcome)) in results.into_iter().enumerate() {
        measured.pu_busy[pu] = busy;
        for (task, t) in times {
            measured.task_times[task] = t;
        }
        if let Err(payload) = outcome {
            first_panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = first_panic {
        panic::resume_unwind(payload);
    }
    Ok(measured)
}

/// A context handler whose task workload is what `measured` observed
/// (dynamic model, runtime origin), with the mapping that produced it as the
/// current mapping, so refining policies start from where tasks ran.
pub fn measured_context<'a>(
    measured: &'a Measured,
    mapping: &'a Mapping,
    pu_background: &'a [f64],
) -> Result<ContextHandler<'a>, PolicyError> {
    if pu_background.len() != mapping.npus() {
        return Err(PolicyError::LengthMismatch {
            concept: Concept::PU_LOADS,
            expected: mapping.npus(),
            found: pu_background.len(),
            unit: "PUs",
        });
    }
    let dynamic = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(
        dynamic(Subject::Tasks),
        Origin::Runtime,
        &measured.task_times[..],
    )
    .provide_values(dynamic(Subject::Pus), Origin::Runtime, pu_background)
    .provide_placement(Origin::Runtime, mapping.as_slice());
    Ok(ctx)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use keel_policy::mapping;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn every_task_runs_exactly_once_on_its_pu() {
        let placement: Vec<usize> = (0..1000).map(|i| (i * 7) % 5).collect();
        let map = Mapping::new(placement.clone(), 5).unwrap();
        let runs: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
        let measured = enact(&map, |t| {
            runs[t].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
        assert_eq!(measured.task_times.len(), 1000);
    }

    #[test]
    fn measured_loads_drive_a_rebalance_that_moves_the_heavy_task() {
        // Two heavy tasks start on PU 0; measuring then refining splits them.
        let map = Mapping::new(vec![0, 0, 1, 1], 2).unwrap();
        let measured = enact(&map, |t| {
            if t < 2 {
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .unwrap();
        let bg = [0.0, 0.0];
        let ctx = measured_context(&measured, &map, &bg).unwrap();
        let refined = mapping::registry()
            .build("refine")
            .unwrap()
            .map(&ctx)
            .unwrap();
        assert_ne!(
            refined.pu_of(0),
            refined.pu_of(1),
            "{refined:?} {measured:?}"
        );
    }

    #[test]
    fn a_panic_in_user_code_reaches_the_caller_after_other_pus_finish() {
        let map = Mapping::new(vec![0, 1, 1, 1], 2).unwrap();
        let done = AtomicUsize::new(0);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            enact(&map, |t| {
                if t == 0 {
                    panic!("task 0 failed");
                }
                done.fetch_add(1, Ordering::Relaxed);
            })
        }));
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 0 failed"));
        assert_eq!(done.load(Ordering::Relaxed), 3, "other PUs ran their tasks");
    }

    #[test]
    fn mismatched_background_is_a_typed_error() {
        let map = Mapping::new(vec![0], 2).unwrap();
        let measured = enact(&map, |_| {}).unwrap();
        assert!(measured_context(&measured, &map, &[0.0]).is_err());
    }
}
