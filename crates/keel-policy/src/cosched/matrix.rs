//! The Ousterhout matrix of gang scheduling (FCS paper §2.2, "packs the
//! jobs into an Ousterhout matrix"; Ousterhout, ICDCS 1982): rows are time
//! slots, columns are PEs, and each job occupies one cell per process, all
//! in one row.
//!
//! Packing is first fit: a job goes to the first row with enough free PEs,
//! taking the lowest-numbered ones, or to a new row at the bottom. A job's
//! processes never change PE once placed (moving one would be a migration),
//! so compaction after a removal only moves whole jobs *up* into an
//! earlier row whose cells in the job's columns are all free, then drops
//! empty rows. Compaction runs to a fixed point: afterwards no job could
//! move to an earlier row.

use std::collections::BTreeMap;

use super::{CoschedError, JobId, PeSlot, ProcRef, ProcessClass};

/// A row of the matrix: a time slot.
pub type SlotIndex = usize;

/// Where a job sits: its row and the PE of each rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The job's row (time slot).
    pub row: SlotIndex,
    /// `pes[rank]` is the PE of the job's process `rank`.
    pub pes: Vec<usize>,
}

/// An Ousterhout matrix over a fixed number of PEs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    pes: usize,
    row_limit: Option<usize>,
    /// `cells[row][pe]` = the job and rank there.
    cells: Vec<Vec<Option<(JobId, usize)>>>,
    jobs: BTreeMap<JobId, Placement>,
}

impl Matrix {
    /// An empty matrix over `pes` PEs, with as many rows as packing needs.
    /// (With 0 PEs every job is too wide.)
    pub fn new(pes: usize) -> Self {
        Matrix {
            pes,
            row_limit: None,
            cells: Vec::new(),
            jobs: BTreeMap::new(),
        }
    }

    /// An empty matrix that never grows beyond `max_rows` rows (the
    /// multiprogramming level): a job that fits no allowed row is
    /// [`CoschedError::MatrixFull`]. A limit of 1 is space slicing (FCFS).
    pub fn with_row_limit(pes: usize, max_rows: usize) -> Self {
        Matrix {
            row_limit: Some(max_rows),
            ..Matrix::new(pes)
        }
    }

    /// The number of PEs (columns).
    pub fn pes(&self) -> usize {
        self.pes
    }

    /// The number of rows (time slots) in use; never an empty one.
    pub fn rows(&self) -> usize {
        self.cells.len()
    }

    /// The row limit, if any.
    pub fn row_limit(&self) -> Option<usize> {
        self.row_limit
    }

    /// The number of jobs placed.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job is placed.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Places `job`'s `processes` processes by first fit and returns its
    /// row: the first row with at least `processes` free PEs (the job takes
    /// the lowest-numbered free ones, rank order = PE order), else a new
    /// row.
    pub fn pack(&mut self, job: JobId, processes: usize) -> Result<SlotIndex, CoschedError> {
        self.check_new(job, processes)?;
        let found = self
            .cells
            .iter()
            .position(|row| row.iter().filter(|c| c.is_none()).count() >= processes);
        let row = match found {
            Some(row) => row,
            None => self.new_row(job)?,
        };
        let pes: Vec<usize> = (0..self.pes)
            .filter(|&pe| self.cells[row][pe].is_none())
            .take(processes)
            .collect();
        self.place(job, row, pes);
        Ok(row)
    }

    /// Places `job` with rank `r` on PE `pes[r]` in the first row where all
    /// those PEs are free, else a new row (the paper's scenarios pin jobs to
    /// given nodes, Figs. 3 and 4).
    pub fn pack_on(&mut self, job: JobId, pes: &[usize]) -> Result<SlotIndex, CoschedError> {
        for (i, &pe) in pes.iter().enumerate() {
            if pe >= self.pes {
                return Err(CoschedError::PeOutOfRange {
                    job,
                    pe,
                    pes: self.pes,
                });
            }
            if pes[..i].contains(&pe) {
                return Err(CoschedError::RepeatedPe { job, pe });
            }
        }
        self.check_new(job, pes.len())?;
        let row = match self.first_row_free_on(pes, self.cells.len()) {
            Some(row) => row,
            None => self.new_row(job)?,
        };
        self.place(job, row, pes.to_vec());
        Ok(row)
    }

    /// Takes `job` out of the matrix, compacts it, and returns where the
    /// job was. Other jobs may move up a row or more (their PEs never
    /// change): re-read [`Matrix::slot_of`] afterwards.
    pub fn remove(&mut self, job: JobId) -> Result<Placement, CoschedError> {
        let placement = self
            .jobs
            .remove(&job)
            .ok_or(CoschedError::UnknownJob { job })?;
        for &pe in &placement.pes {
            self.cells[placement.row][pe] = None;
        }
        self.compact();
        Ok(placement)
    }

    /// The row of `job`, if placed.
    pub fn slot_of(&self, job: JobId) -> Option<SlotIndex> {
        self.jobs.get(&job).map(|p| p.row)
    }

    /// Where `job` is, if placed.
    pub fn placement(&self, job: JobId) -> Option<&Placement> {
        self.jobs.get(&job)
    }

    /// The placed jobs in id order.
    pub fn jobs(&self) -> impl Iterator<Item = (JobId, &Placement)> {
        self.jobs.iter().map(|(j, p)| (*j, p))
    }

    /// The job and rank in cell (`row`, `pe`); `None` for a free cell or
    /// one outside the matrix.
    pub fn cell(&self, row: SlotIndex, pe: usize) -> Option<(JobId, usize)> {
        *self.cells.get(row)?.get(pe)?
    }

    /// The jobs in `row`, ordered by their lowest PE.
    pub fn jobs_in_row(&self, row: SlotIndex) -> Vec<JobId> {
        let mut jobs = Vec::new();
        for (job, _) in self.cells.get(row).into_iter().flatten().flatten() {
            if !jobs.contains(job) {
                jobs.push(*job);
            }
        }
        jobs
    }

    /// Free cells in `row` (0 outside the matrix).
    pub fn free_in_row(&self, row: SlotIndex) -> usize {
        self.cells
            .get(row)
            .map_or(0, |r| r.iter().filter(|c| c.is_none()).count())
    }

    /// Every process placed on `pe`, as `(row, job, rank)` in row order.
    pub fn on_pe(&self, pe: usize) -> Vec<(SlotIndex, JobId, usize)> {
        self.cells
            .iter()
            .enumerate()
            .filter_map(|(row, cells)| cells.get(pe).copied().flatten().map(|(j, r)| (row, j, r)))
            .collect()
    }

    /// The row after `row`, cyclically: the slot a gang scheduler switches
    /// to next (0 when the matrix is empty).
    pub fn next_row(&self, row: SlotIndex) -> SlotIndex {
        if self.cells.is_empty() {
            0
        } else {
            (row + 1) % self.cells.len()
        }
    }

    /// What a policy sees of `pe` when `row` is the active slot: the
    /// process in cell (`row`, `pe`) as assigned and every process on `pe`
    /// as resident, with classes from `class_of(job, rank)`.
    pub fn pe_slot(
        &self,
        row: SlotIndex,
        pe: usize,
        class_of: impl Fn(JobId, usize) -> ProcessClass,
    ) -> PeSlot {
        let proc_ref = |job, rank| ProcRef {
            job,
            rank,
            class: class_of(job, rank),
        };
        PeSlot {
            assigned: self.cell(row, pe).map(|(j, r)| proc_ref(j, r)),
            resident: self
                .on_pe(pe)
                .into_iter()
                .map(|(_, j, r)| proc_ref(j, r))
                .collect(),
        }
    }

    fn check_new(&self, job: JobId, processes: usize) -> Result<(), CoschedError> {
        if processes == 0 {
            return Err(CoschedError::EmptyJob { job });
        }
        if processes > self.pes {
            return Err(CoschedError::JobTooWide {
                job,
                processes,
                pes: self.pes,
            });
        }
        if self.jobs.contains_key(&job) {
            return Err(CoschedError::DuplicateJob { job });
        }
        Ok(())
    }

    /// Appends an empty row if the limit allows.
    fn new_row(&mut self, job: JobId) -> Result<SlotIndex, CoschedError> {
        if let Some(limit) = self.row_limit {
            if self.cells.len() >= limit {
                return Err(CoschedError::MatrixFull { job, rows: limit });
            }
        }
        self.cells.push(vec![None; self.pes]);
        Ok(self.cells.len() - 1)
    }

    fn place(&mut self, job: JobId, row: SlotIndex, pes: Vec<usize>) {
        for (rank, &pe) in pes.iter().enumerate() {
            debug_assert!(self.cells[row][pe].is_none());
            self.cells[row][pe] = Some((job, rank));
        }
        self.jobs.insert(job, Placement { row, pes });
    }

    /// The first row before `before` whose cells on `pes` are all free.
    fn first_row_free_on(&self, pes: &[usize], before: SlotIndex) -> Option<SlotIndex> {
        self.cells[..before.min(self.cells.len())]
            .iter()
            .position(|row| pes.iter().all(|&pe| row[pe].is_none()))
    }

    /// Moves jobs up while any can move, then drops empty rows.
    fn compact(&mut self) {
        loop {
            // Top to bottom, left to right: an upper job settles first, so
            // the space a lower job frees is seen by the ones below it.
            let mut order: Vec<(SlotIndex, usize, JobId)> = self
                .jobs
                .iter()
                .map(|(&job, p)| (p.row, p.pes.iter().copied().min().unwrap_or(0), job))
                .collect();
            order.sort_unstable();
            let mut moved = false;
            for (_, _, job) in order {
                let Placement { row, pes } = self.jobs[&job].clone();
                if let Some(up) = self.first_row_free_on(&pes, row) {
                    for &pe in &pes {
                        self.cells[up][pe] = self.cells[row][pe].take();
                    }
                    self.jobs.get_mut(&job).expect("job is placed").row = up;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        let mut renumber = Vec::with_capacity(self.cells.len());
        let mut kept = 0;
        for row in &self.cells {
            renumber.push(kept);
            if row.iter().any(Option::is_some) {
                kept += 1;
            }
        }
        self.cells.retain(|row| row.iter().any(Option::is_some));
        for p in self.jobs.values_mut() {
            p.row = renumber[p.row];
        }
    }
}
