//! Jobs: arrival, packing into the matrix (or the batch queue), activation
//! and completion.

use keel_policy::cosched::{CoschedError, JobId, TimeSharing};
use rand::Rng;

use super::{policy_error, Event, JobPhase, Phase, Sim};
use crate::error::SimError;

impl Sim<'_> {
    pub(super) fn arrive(&mut self, k: usize) -> Result<(), SimError> {
        match self.sharing {
            TimeSharing::Batch => {
                self.jobs[k].phase = JobPhase::Queued;
                self.batch_queue.push_back(k);
                self.start_batch()
            }
            TimeSharing::Gang => {
                self.place(k)?;
                self.activate(k);
                if !self.strobe_pending {
                    let boundary = (self.now / self.slice).ceil() * self.slice;
                    self.q.schedule(boundary.max(self.now), Event::Strobe);
                    self.strobe_pending = true;
                }
                Ok(())
            }
            TimeSharing::Uncoordinated => {
                self.place(k)?;
                self.activate(k);
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                Ok(())
            }
        }
    }

    /// Packs job `k` into the matrix; `Ok(false)` when a row-limited matrix
    /// has no room yet.
    pub(super) fn try_place(&mut self, k: usize) -> Result<bool, SimError> {
        let id = k as JobId;
        let packed = match &self.jobs[k].spec.pes {
            Some(pes) => self.matrix.pack_on(id, pes),
            None => self.matrix.pack(id, self.jobs[k].spec.processes),
        };
        match packed {
            Ok(_) => {}
            Err(CoschedError::MatrixFull { .. }) => return Ok(false),
            Err(e) => return Err(policy_error(e)),
        }
        let pes = self
            .matrix
            .placement(id)
            .map(|p| p.pes.clone())
            .ok_or_else(|| SimError::Policy(format!("job {k} vanished from the matrix")))?;
        let first = self.jobs[k].first;
        for (rank, &pe) in pes.iter().enumerate() {
            self.procs[first + rank].pe = pe;
            self.pes[pe].members.push(first + rank);
        }
        self.jobs[k].pes = pes;
        Ok(true)
    }

    pub(super) fn place(&mut self, k: usize) -> Result<(), SimError> {
        if self.try_place(k)? {
            Ok(())
        } else {
            Err(SimError::Policy(format!("job {k} does not fit the matrix")))
        }
    }

    pub(super) fn activate(&mut self, k: usize) {
        let now = self.now;
        let quantum = self.model.os.quantum;
        let job = &mut self.jobs[k];
        job.phase = JobPhase::Active;
        job.start = now;
        for rank in 0..job.spec.processes {
            let p = &mut self.procs[job.first + rank];
            p.phase = Phase::Compute {
                remaining: job.spec.compute(rank, 0),
            };
            p.class_since = now;
            p.phase_since = now;
            p.suspended_in_phase = 0.0;
            // A process starts at an arbitrary point of its time slice, so
            // the PEs' schedulers are not in phase.
            p.counter = quantum * (1.0 - self.rng.gen::<f64>());
        }
    }

    pub(super) fn start_batch(&mut self) -> Result<(), SimError> {
        while let Some(&k) = self.batch_queue.front() {
            if !self.try_place(k)? {
                break;
            }
            self.batch_queue.pop_front();
            self.activate(k);
            for pe in self.jobs[k].pes.clone() {
                self.redecide(pe)?;
            }
        }
        Ok(())
    }

    pub(super) fn job_done(&mut self, k: usize) -> Result<(), SimError> {
        self.matrix.remove(k as JobId).map_err(policy_error)?;
        match self.sharing {
            TimeSharing::Gang => Ok(()),
            TimeSharing::Uncoordinated => {
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                Ok(())
            }
            TimeSharing::Batch => {
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                self.start_batch()
            }
        }
    }
}
