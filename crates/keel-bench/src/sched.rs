//! The four schedules of the head-to-head table and what each means in the
//! three runtimes.
//!
//! | schedule | Keel | libgomp | rayon (no schedules; splitter bounds) |
//! |---|---|---|---|
//! | `static` | `static`: one block per thread | `omp_sched_static`, chunk 0: one block per thread | `with_min_len(⌈N/P⌉)`: the splitter halves ranges while both halves keep ≥ ⌈N/P⌉, so N = P·2^m gives exactly P pieces (which thread runs each is up to stealing) |
//! | `dynamic,k` | `dynamic,k` (= `ss`) | `omp_sched_dynamic`, k | `with_min_len(k).with_max_len(k)`: pieces of exactly k when N/k is a power of two, each a stealable job — rayon's nearest to self-scheduling |
//! | `guided[,k]` | `guided` (= `gss`, ⌈R/P⌉) | `omp_sched_guided`, k (⌈R/P⌉, at least k) | `with_min_len(k)` and rayon's default adaptive splitter (about 2P pieces, more when thieves split): decreasing pieces on demand, its nearest to guided |
//!
//! The harness counts rayon's pieces as they run (one `for_each_init`
//! initialisation per piece), so every per-chunk number divides by chunks
//! that actually ran. N is `iters_per_thread × P` with `iters_per_thread` a
//! power of two, which makes the `static` and `dynamic` mappings exact.

use serde::Serialize;

use crate::gomp::OmpKind;

/// A schedule of the head-to-head table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Sched {
    /// Block static: one contiguous block per thread.
    Static,
    /// Self-scheduling with chunks of exactly `k`.
    Dynamic(u64),
    /// Guided self-scheduling, ⌈R/P⌉ with a minimum of `k`.
    Guided(u64),
}

impl Sched {
    /// The EPCC-style default set: `static`, `dynamic,1`, `dynamic,8`, `guided`.
    pub const DEFAULT: [Sched; 4] = [
        Sched::Static,
        Sched::Dynamic(1),
        Sched::Dynamic(8),
        Sched::Guided(1),
    ];

    /// The OpenMP name: `static`, `dynamic,8`, `guided` (chunk 1 implied).
    pub fn label(&self) -> String {
        match *self {
            Sched::Static => "static".into(),
            Sched::Dynamic(k) => format!("dynamic,{k}"),
            Sched::Guided(1) => "guided".into(),
            Sched::Guided(k) => format!("guided,{k}"),
        }
    }

    /// The `KEEL_SCHEDULE` text for Keel (the same syntax).
    pub fn keel_spec(&self) -> String {
        self.label()
    }

    /// The `omp_set_schedule` arguments (chunk 0 = the kind's default).
    pub fn omp(&self) -> (OmpKind, u64) {
        match *self {
            Sched::Static => (OmpKind::Static, 0),
            Sched::Dynamic(k) => (OmpKind::Dynamic, k),
            Sched::Guided(k) => (OmpKind::Guided, k),
        }
    }

    /// Chunks libgomp hands out for `n` iterations on `p` threads (its
    /// `gomp_iter_*_next` rules; the sequence does not depend on which
    /// thread asks).
    pub fn gomp_chunks(&self, n: u64, p: u64) -> u64 {
        match *self {
            Sched::Static => n.min(p),
            Sched::Dynamic(k) => n.div_ceil(k),
            Sched::Guided(k) => {
                let (mut remaining, mut chunks) = (n, 0);
                while remaining > 0 {
                    let q = remaining.div_ceil(p).max(k).min(remaining);
                    remaining -= q;
                    chunks += 1;
                }
                chunks
            }
        }
    }

    /// rayon's `(with_min_len, with_max_len)` for this schedule.
    pub fn rayon_bounds(&self, n: u64, p: u64) -> (usize, usize) {
        let min = |k: u64| usize::try_from(k.max(1)).unwrap_or(usize::MAX);
        match *self {
            Sched::Static => (min(n.div_ceil(p)), usize::MAX),
            Sched::Dynamic(k) => (min(k), min(k)),
            Sched::Guided(k) => (min(k), usize::MAX),
        }
    }

    /// How the rayon column runs this schedule, in words.
    pub fn rayon_mapping(&self, n: u64, p: u64) -> String {
        match self.rayon_bounds(n, p) {
            (min, usize::MAX) if *self == Sched::Static => format!("with_min_len({min})"),
            (min, max) if max != usize::MAX => format!("with_min_len({min}).with_max_len({max})"),
            (1, _) => "default splitter".to_string(),
            (min, _) => format!("default splitter, with_min_len({min})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_libgomp_chunk_counts() {
        let labels: Vec<String> = Sched::DEFAULT.iter().map(Sched::label).collect();
        assert_eq!(labels, ["static", "dynamic,1", "dynamic,8", "guided"]);
        assert_eq!(Sched::Static.gomp_chunks(2048, 2), 2);
        assert_eq!(Sched::Dynamic(8).gomp_chunks(2048, 2), 256);
        assert_eq!(Sched::Dynamic(3).gomp_chunks(10, 2), 4);
        // Guided on 2 threads, N = 10: 5, 3, 1, 1.
        assert_eq!(Sched::Guided(1).gomp_chunks(10, 2), 4);
        // With a minimum of 4: 5, 4, 1.
        assert_eq!(Sched::Guided(4).gomp_chunks(10, 2), 3);
    }

    #[test]
    fn rayon_mappings() {
        assert_eq!(Sched::Static.rayon_bounds(2048, 2), (1024, usize::MAX));
        assert_eq!(Sched::Dynamic(8).rayon_bounds(2048, 2), (8, 8));
        assert_eq!(Sched::Guided(1).rayon_mapping(2048, 2), "default splitter");
        assert_eq!(Sched::Static.rayon_mapping(2048, 2), "with_min_len(1024)");
        assert_eq!(
            Sched::Dynamic(1).rayon_mapping(2048, 2),
            "with_min_len(1).with_max_len(1)"
        );
    }
}
