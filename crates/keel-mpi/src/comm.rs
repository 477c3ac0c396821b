//! The collective operations Keel's distributed protocols need, over any
//! layer that provides them: MPI (`MpiComm`, feature `mpi`) on a
//! cluster, [`crate::LocalRanks`] (threads as ranks) in tests and in one
//! process.
//!
//! Every operation is collective: every rank of the group calls it, in the
//! same order. Payloads are bytes; the protocols encode and decode them
//! (`wire.rs`), so a layer only moves bytes.

use thiserror::Error;

/// What a collective operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommError {
    /// Another rank failed (panicked, or left the group) before it took
    /// part in the operation: the operation cannot complete.
    #[error("rank {rank} failed before this collective operation completed")]
    PeerFailed {
        /// The rank that failed.
        rank: usize,
    },
    /// A payload larger than the layer can move in one operation (MPI
    /// counts are `int`s).
    #[error("a payload of {bytes} bytes is more than one collective operation can move ({limit})")]
    TooLarge {
        /// The payload's size.
        bytes: u64,
        /// The layer's limit.
        limit: u64,
    },
    /// A root or destination rank outside the group.
    #[error("rank {rank} is outside a group of {size}")]
    NoSuchRank {
        /// The rank asked for.
        rank: usize,
        /// The group's size.
        size: usize,
    },
    /// The underlying layer reported an error.
    #[error("{0}")]
    Layer(String),
}

/// A group of ranks and the collective operations Keel uses.
///
/// ```
/// use keel_mpi::{Collective, LocalRanks};
///
/// let sums = LocalRanks::run(3, |comm| {
///     let mine = [comm.rank() as u8];
///     let all = comm.all_gather(&mine).unwrap();
///     all.iter().map(|v| v[0] as usize).sum::<usize>()
/// });
/// assert_eq!(sums, [Ok(3), Ok(3), Ok(3)]);
/// ```
pub trait Collective {
    /// This rank's index in the group, `0..size()`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Every rank's `mine`, in rank order, on every rank.
    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError>;

    /// `outgoing[r]` to rank `r`, for every `r`; returns what each rank
    /// sent to this one, in rank order. `outgoing.len()` must be `size()`.
    fn all_to_all(&self, outgoing: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CommError>;

    /// Root's `data` on every rank (the others' `data` is replaced).
    fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<(), CommError>;
}
