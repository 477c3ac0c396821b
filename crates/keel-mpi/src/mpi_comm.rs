//! [`Collective`] over an MPI communicator (rsmpi), for jobs started with
//! `mpiexec` / `mpirun`.
//!
//! Each variable-size operation first exchanges the sizes, so that every
//! rank knows every count before the data moves; a payload MPI cannot
//! count (its counts and displacements are `int`s) is refused on every
//! rank alike, never on one rank while the others wait.

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

use crate::comm::{Collective, CommError};

/// The most bytes one operation moves to or from one rank in total.
const LIMIT: u64 = Count::MAX as u64;

/// A [`Collective`] over an MPI communicator.
pub struct MpiComm {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl MpiComm {
    /// The group of `comm` (usually `universe.world()`).
    pub fn new(comm: SimpleCommunicator) -> Self {
        let rank = comm.rank() as usize;
        let size = comm.size() as usize;
        MpiComm { comm, rank, size }
    }

    /// Makes a panic on this rank end the whole job, with the panic's
    /// message and the rank on standard error, instead of leaving the
    /// other ranks waiting in their next collective operation (MPI gives
    /// a rank no way to leave a collective a peer will never enter).
    pub fn abort_job_on_panic() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let world = SimpleCommunicator::world();
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            // First, whole: the launcher may drop what a process writes
            // just before the job is aborted.
            eprintln!(
                "keel-mpi: rank {} of {} panicked: {message}; aborting the MPI job",
                world.rank(),
                world.size()
            );
            previous(info);
            world.abort(70)
        }));
    }

    /// Whether every rank's `ok` holds (an all-reduce).
    fn all_agree(&self, ok: bool) -> bool {
        let mine = i32::from(ok);
        let mut all = 0i32;
        self.comm
            .all_reduce_into(&mine, &mut all, SystemOperation::min());
        all == 1
    }
}

/// A payload's length as the ranks exchange it: 4 bytes per rank (MPI
/// counts are `int`s, so a longer payload cannot move anyway; it saturates
/// and is refused).
fn wire_length(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// Counts and displacements for parts of `lengths` bytes, if MPI can
/// count them.
fn partition(lengths: &[u32]) -> Option<(Vec<Count>, Vec<Count>)> {
    let mut counts = Vec::with_capacity(lengths.len());
    let mut displs = Vec::with_capacity(lengths.len());
    let mut at: u64 = 0;
    for &len in lengths {
        displs.push(Count::try_from(at).ok()?);
        counts.push(Count::try_from(len).ok()?);
        at = at.checked_add(u64::from(len)).filter(|&t| t <= LIMIT)?;
    }
    Some((counts, displs))
}

/// `buffer` cut into parts of `counts` bytes.
fn split(buffer: &[u8], counts: &[Count], displs: &[Count]) -> Vec<Vec<u8>> {
    counts
        .iter()
        .zip(displs)
        .map(|(&c, &d)| buffer[d as usize..d as usize + c as usize].to_vec())
        .collect()
}

impl Collective for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        let len = wire_length(mine.len());
        let mut lengths = vec![0u32; self.size];
        self.comm.all_gather_into(&len, &mut lengths[..]);
        // Every rank sees the same lengths, so every rank refuses alike.
        let (counts, displs) = partition(&lengths).ok_or(CommError::TooLarge {
            bytes: lengths.iter().map(|&l| u64::from(l)).sum(),
            limit: LIMIT,
        })?;
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut buffer = vec![0u8; total];
        {
            let mut parts = PartitionMut::new(&mut buffer[..], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(mine, &mut parts);
        }
        Ok(split(&buffer, &counts, &displs))
    }

    fn all_to_all(&self, outgoing: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CommError> {
        // A wrong row length is this rank's bug; the others learn of it
        // through the agreement below instead of waiting.
        let row_ok = outgoing.len() == self.size;
        let send_lengths: Vec<u32> = (0..self.size)
            .map(|r| outgoing.get(r).map_or(0, |p| wire_length(p.len())))
            .collect();
        let mut recv_lengths = vec![0u32; self.size];
        self.comm
            .all_to_all_into(&send_lengths[..], &mut recv_lengths[..]);
        let send = partition(&send_lengths);
        let recv = partition(&recv_lengths);
        if !self.all_agree(row_ok && send.is_some() && recv.is_some()) {
            if !row_ok {
                return Err(CommError::NoSuchRank {
                    rank: outgoing.len().max(self.size),
                    size: self.size,
                });
            }
            return Err(CommError::TooLarge {
                bytes: send_lengths
                    .iter()
                    .chain(&recv_lengths)
                    .map(|&l| u64::from(l))
                    .max()
                    .unwrap_or(0),
                limit: LIMIT,
            });
        }
        let ((send_counts, send_displs), (recv_counts, recv_displs)) =
            (send.expect("agreed"), recv.expect("agreed"));
        let flat: Vec<u8> = outgoing.concat();
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut buffer = vec![0u8; total];
        {
            let parts = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
            let mut into = PartitionMut::new(&mut buffer[..], &recv_counts[..], &recv_displs[..]);
            self.comm.all_to_all_varcount_into(&parts, &mut into);
        }
        Ok(split(&buffer, &recv_counts, &recv_displs))
    }

    fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<(), CommError> {
        if root >= self.size {
            // Every rank was given the same root, so every rank returns here.
            return Err(CommError::NoSuchRank {
                rank: root,
                size: self.size,
            });
        }
        let process = self.comm.process_at_rank(root as i32);
        let mut len = data.len() as u64;
        process.broadcast_into(&mut len);
        if len > LIMIT {
            return Err(CommError::TooLarge {
                bytes: len,
                limit: LIMIT,
            });
        }
        data.resize(len as usize, 0);
        process.broadcast_into(&mut data[..]);
        Ok(())
    }
}
