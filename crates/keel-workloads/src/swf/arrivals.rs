//! The job stream a simulated cluster receives from a log: usable jobs by
//! submit time, and the skipped ones with the reason.

use super::{SwfError, SwfJob};

/// What [`arrivals`] does with a job wider than the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideJobs {
    /// Skip it and list it in [`Arrivals::dropped`] (for replaying a big
    /// machine's log on a small cluster).
    Drop,
    /// Fail with [`SwfError::TooWide`] (for logs that should fit).
    Reject,
}

/// One job as a cluster receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    /// The job number.
    pub id: u64,
    /// The log line it came from.
    pub line: usize,
    /// Submit time, seconds from the start of the log.
    pub submit_time: f64,
    /// PEs it needs: its allocated processors, or its requested ones when
    /// the log does not say what it got.
    pub procs: usize,
    /// Wall-clock seconds it ran for in the log (0: under 0.5 s).
    pub run_time: f64,
    /// The time limit it asked for, if known.
    pub requested_time: Option<f64>,
    /// Its user, if known.
    pub user_id: Option<u64>,
}

/// Why [`arrivals`] skipped a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Neither its allocated nor its requested processors are known.
    UnknownWidth,
    /// It had 0 processors (typically a job cancelled before it started).
    ZeroWidth,
    /// Its run time is unknown.
    UnknownRunTime,
    /// It needs more processors than the cluster has ([`WideJobs::Drop`]).
    TooWide {
        /// The processors it needs.
        procs: u64,
    },
}

/// A job [`arrivals`] skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The job number.
    pub id: u64,
    /// The log line.
    pub line: usize,
    /// Why.
    pub reason: DropReason,
}

/// The arrival stream of a log on a given cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrivals {
    /// Usable jobs, by submit time (job number breaks ties).
    pub jobs: Vec<Arrival>,
    /// Skipped jobs, in log order.
    pub dropped: Vec<Dropped>,
}

/// The jobs a cluster of `pes` PEs receives from a log (see the module
/// docs for which jobs are skipped).
pub fn arrivals(jobs: &[SwfJob], pes: usize, wide: WideJobs) -> Result<Arrivals, SwfError> {
    if pes == 0 {
        return Err(SwfError::NoPes);
    }
    let mut out = Arrivals::default();
    for job in jobs {
        let drop = |reason| Dropped {
            id: job.id,
            line: job.line,
            reason,
        };
        let Some(procs) = job.allocated_procs.or(job.requested_procs) else {
            out.dropped.push(drop(DropReason::UnknownWidth));
            continue;
        };
        if procs == 0 {
            out.dropped.push(drop(DropReason::ZeroWidth));
            continue;
        }
        let fits = usize::try_from(procs).ok().filter(|&p| p <= pes);
        let Some(width) = fits else {
            match wide {
                WideJobs::Drop => {
                    out.dropped.push(drop(DropReason::TooWide { procs }));
                    continue;
                }
                WideJobs::Reject => {
                    return Err(SwfError::TooWide {
                        line: job.line,
                        id: job.id,
                        procs,
                        pes,
                    })
                }
            }
        };
        let Some(run_time) = job.run_time else {
            out.dropped.push(drop(DropReason::UnknownRunTime));
            continue;
        };
        out.jobs.push(Arrival {
            id: job.id,
            line: job.line,
            submit_time: job.submit_time,
            procs: width,
            run_time,
            requested_time: job.requested_time,
            user_id: job.user_id,
        });
    }
    // Logs are meant to be sorted by submit time; do not rely on it.
    out.jobs.sort_by(|a, b| {
        a.submit_time
            .total_cmp(&b.submit_time)
            .then(a.id.cmp(&b.id))
    });
    Ok(out)
}
