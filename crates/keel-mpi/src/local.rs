//! Ranks as threads of one process: the collective layer of tests, of
//! examples that run anywhere, and of a program that runs Keel's
//! distributed protocols on one machine without MPI.
//!
//! A rank that panics, or returns while others still wait in a collective
//! operation, fails that operation on every other rank
//! ([`CommError::PeerFailed`]) instead of leaving them waiting: the same
//! guarantee `mpiexec` gives by ending the job when a process dies.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::comm::{Collective, CommError};

/// Runs ranks as threads of this process.
#[derive(Debug)]
pub struct LocalRanks;

/// A rank's panic, as [`LocalRanks::run`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPanicked {
    /// The panic's message, when it was a string.
    pub message: String,
}

impl LocalRanks {
    /// Runs `rank_main` on `size` ranks (threads) at once and returns each
    /// rank's result in rank order, or its panic. `size` 0 runs nothing.
    ///
    /// ```
    /// use keel_mpi::{Collective, LocalRanks};
    /// let results = LocalRanks::run(2, |comm| {
    ///     if comm.rank() == 1 {
    ///         panic!("rank 1 gives up");
    ///     }
    ///     // Rank 0 is not left waiting for rank 1.
    ///     comm.all_gather(b"x").unwrap_err()
    /// });
    /// assert_eq!(results[0], Ok(keel_mpi::CommError::PeerFailed { rank: 1 }));
    /// assert_eq!(results[1].as_ref().unwrap_err().message, "rank 1 gives up");
    /// ```
    pub fn run<R, F>(size: usize, rank_main: F) -> Vec<Result<R, RankPanicked>>
    where
        R: Send,
        F: Fn(&LocalComm) -> R + Sync,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                size,
                generation: 0,
                arrived: 0,
                slots: vec![None; size],
                published: Arc::new(Vec::new()),
                failed: None,
            }),
            changed: Condvar::new(),
        });
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let comm = LocalComm {
                        rank,
                        shared: Arc::clone(&shared),
                    };
                    let rank_main = &rank_main;
                    scope.spawn(move || {
                        let result = panic::catch_unwind(AssertUnwindSafe(|| rank_main(&comm)));
                        // Whether it returned or panicked, this rank takes
                        // part in no further operation: one that others
                        // wait in cannot complete.
                        comm.shared.fail(rank);
                        result.map_err(|payload| RankPanicked {
                            message: payload
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| payload.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "a panic".to_string()),
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank's panic is caught inside it"))
                .collect()
        })
    }
}

/// One rank of a [`LocalRanks::run`] group.
#[derive(Debug)]
pub struct LocalComm {
    rank: usize,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug)]
struct State {
    size: usize,
    /// Completed operations.
    generation: u64,
    /// Ranks in the current operation.
    arrived: usize,
    /// Their contributions.
    slots: Vec<Option<Vec<u8>>>,
    /// The last completed operation's contributions, in rank order.
    published: Arc<Vec<Vec<u8>>>,
    /// The first rank that left while others could still need it.
    failed: Option<usize>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rank `rank` takes part in no further operation.
    fn fail(&self, rank: usize) {
        let mut state = self.lock();
        state.failed.get_or_insert(rank);
        self.changed.notify_all();
    }

    /// Every rank's contribution to one operation, once all gave theirs.
    fn exchange(&self, rank: usize, mine: Vec<u8>) -> Result<Arc<Vec<Vec<u8>>>, CommError> {
        let mut state = self.lock();
        if let Some(failed) = state.failed {
            return Err(CommError::PeerFailed { rank: failed });
        }
        let generation = state.generation;
        state.slots[rank] = Some(mine);
        state.arrived += 1;
        if state.arrived == state.size {
            let all: Vec<Vec<u8>> = state
                .slots
                .iter_mut()
                .map(|s| s.take().unwrap_or_default())
                .collect();
            state.published = Arc::new(all);
            state.arrived = 0;
            state.generation += 1;
            self.changed.notify_all();
            return Ok(Arc::clone(&state.published));
        }
        loop {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
            if state.generation != generation {
                return Ok(Arc::clone(&state.published));
            }
            if let Some(failed) = state.failed {
                return Err(CommError::PeerFailed { rank: failed });
            }
        }
    }
}

impl Collective for LocalComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.lock().size
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        Ok(self.shared.exchange(self.rank, mine.to_vec())?.to_vec())
    }

    fn all_to_all(&self, outgoing: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CommError> {
        let size = self.size();
        if outgoing.len() != size {
            return Err(CommError::NoSuchRank {
                rank: outgoing.len().max(size),
                size,
            });
        }
        // Each rank contributes its row; this rank keeps its column.
        let mut row = Vec::new();
        for part in outgoing {
            row.extend_from_slice(&(part.len() as u64).to_le_bytes());
            row.extend_from_slice(part);
        }
        let rows = self.shared.exchange(self.rank, row)?;
        rows.iter()
            .map(|row| {
                column(row, self.rank).ok_or_else(|| CommError::Layer("a malformed row".into()))
            })
            .collect()
    }

    fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<(), CommError> {
        let size = self.size();
        if root >= size {
            return Err(CommError::NoSuchRank { rank: root, size });
        }
        let mine = if self.rank == root {
            std::mem::take(data)
        } else {
            Vec::new()
        };
        let all = self.shared.exchange(self.rank, mine)?;
        *data = all[root].clone();
        Ok(())
    }
}

/// Part `index` of a row of length-prefixed parts.
fn column(row: &[u8], index: usize) -> Option<Vec<u8>> {
    let mut rest = row;
    for i in 0.. {
        let len = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        let len = usize::try_from(len).ok()?;
        let part = rest.get(8..8usize.checked_add(len)?)?;
        if i == index {
            return Some(part.to_vec());
        }
        rest = &rest[8 + len..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_to_all_delivers_each_part_to_its_rank() {
        let results = LocalRanks::run(4, |comm| {
            let me = comm.rank() as u8;
            let outgoing: Vec<Vec<u8>> = (0..4u8).map(|to| vec![me, to, me ^ to]).collect();
            comm.all_to_all(&outgoing).unwrap()
        });
        for (me, incoming) in results.into_iter().enumerate() {
            let incoming = incoming.unwrap();
            for (from, part) in incoming.iter().enumerate() {
                assert_eq!(part, &[from as u8, me as u8, from as u8 ^ me as u8]);
            }
        }
    }

    #[test]
    fn broadcast_and_repeated_operations_keep_their_order() {
        let results = LocalRanks::run(3, |comm| {
            let mut seen = Vec::new();
            for round in 0..50u8 {
                let mut data = if comm.rank() == (round % 3) as usize {
                    vec![round]
                } else {
                    vec![0xff; 7]
                };
                comm.broadcast((round % 3) as usize, &mut data).unwrap();
                seen.push(data[0]);
                let all = comm.all_gather(&[round, comm.rank() as u8]).unwrap();
                assert!(all.iter().enumerate().all(|(r, v)| v == &[round, r as u8]));
            }
            seen
        });
        for r in results {
            assert_eq!(r.unwrap(), (0..50).collect::<Vec<u8>>());
        }
    }

    #[test]
    fn a_rank_that_returns_early_fails_the_others_operation() {
        let results = LocalRanks::run(3, |comm| {
            if comm.rank() == 2 {
                return Ok(Vec::new());
            }
            comm.all_gather(b"x")
        });
        for r in &results[..2] {
            assert_eq!(r.as_ref().unwrap(), &Err(CommError::PeerFailed { rank: 2 }));
        }
    }

    #[test]
    fn bad_roots_and_row_counts_are_errors() {
        let results = LocalRanks::run(1, |comm| {
            let mut data = vec![1];
            (
                comm.broadcast(1, &mut data),
                comm.all_to_all(&[vec![], vec![]]),
            )
        });
        let (b, a) = results.into_iter().next().unwrap().unwrap();
        assert_eq!(b, Err(CommError::NoSuchRank { rank: 1, size: 1 }));
        assert!(matches!(a, Err(CommError::NoSuchRank { .. })));
        assert_eq!(LocalRanks::run(0, |_| ()).len(), 0);
    }
}
