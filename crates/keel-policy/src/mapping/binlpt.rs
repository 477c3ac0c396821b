//! `binlpt`: BinLPT (Penna et al., WSCAD 2017; ARTful paper §4.1), as in
//! Penna's libgomp fork and MOGSLib implement it. Movable tasks, in index
//! order, are cut into at
//! most `chunks` contiguous chunks by workload; the chunks are then mapped
//! largest first to the least-loaded PU (LPT).
//!
//! Two cut rules:
//! - [`BinLptCut::Faithful`] — the reference rule of libgomp-BinLPT and
//!   MOGSLib: with `target = total / K`, each of the first `K − 1` chunks
//!   grows until its load first *exceeds* the target (it keeps the crossing
//!   task); the last takes the rest. It often yields fewer than K chunks.
//!   Chunks are ordered with the reference's exchange sort so that ties
//!   between equal chunk loads land on the same threads (golden vectors);
//!   that sort is O(K²), as in the reference.
//! - [`BinLptCut::Improved`] — Keel's rule: each chunk ends at the boundary
//!   whose prefix sum is *closest* to its share of the remaining load
//!   (`remaining / chunks left`), never leaving fewer tasks than chunks, so it
//!   always yields exactly `min(K, n)` non-empty chunks; chunks are ordered by
//!   an O(K log K) sort (heaviest first, lower index on ties).

use super::{lpt_order, Mapping, MappingInput, MappingPolicy, PuHeap};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::{Spec, SpecValue};

/// Largest chunk count the faithful cut accepts: its reference exchange sort
/// is O(K²), and even empty trailing chunks change its tie order (so they
/// cannot be dropped), which makes K beyond a few thousand impractical.
pub const MAX_FAITHFUL_CHUNKS: usize = 4096;

/// Largest chunk count any cut accepts. The improved cut never makes more
/// chunks than tasks, so a larger count could only be a typo; refusing it
/// beats silently treating `chunks=18446744073709551615` as "one per task".
pub const MAX_CHUNKS: usize = 1 << 24;

/// How BinLPT cuts the task sequence into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinLptCut {
    /// The reference's first-crossing cut with a fixed target.
    Faithful,
    /// Nearest-boundary cut with an adaptive target; exactly `min(K, n)` chunks.
    Improved,
}

/// The BinLPT policy.
#[derive(Clone, Copy, Debug)]
pub struct BinLpt {
    /// Maximum number of chunks; `None` means one per available PU
    /// (libgomp-BinLPT's default).
    pub chunks: Option<usize>,
    /// The cut rule.
    pub cut: BinLptCut,
}

impl Default for BinLpt {
    fn default() -> Self {
        BinLpt {
            chunks: None,
            cut: BinLptCut::Improved,
        }
    }
}

impl BinLpt {
    /// Builds from `binlpt[:chunks=K][,cut=faithful|improved]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&["chunks", "cut"])?;
        let cut = match spec.choice("cut", &["faithful", "improved"])? {
            Some("faithful") => BinLptCut::Faithful,
            _ => BinLptCut::Improved,
        };
        let chunks = spec.count_in("chunks", 1, MAX_CHUNKS)?;
        if let (BinLptCut::Faithful, Some(k)) = (cut, chunks) {
            if k > MAX_FAITHFUL_CHUNKS {
                return Err(spec.invalid(
                    "chunks",
                    &k.to_string(),
                    &format!(
                        "at most {MAX_FAITHFUL_CHUNKS} with cut=faithful, whose reference sort is \
                         quadratic in the chunk count (cut=improved takes up to {MAX_CHUNKS})"
                    ),
                ));
            }
        }
        Ok(BinLpt { chunks, cut })
    }

    /// Chunk boundaries over `loads`: chunk `c` is `bounds[c]..bounds[c + 1]`.
    /// Faithful cuts may end with empty chunks, as the reference's do, so
    /// their count is capped at [`MAX_FAITHFUL_CHUNKS`] (the boundaries are
    /// allocated per chunk); improved cuts make at most one per task.
    pub fn cut_points(&self, loads: &[f64], chunks: usize) -> Vec<usize> {
        let chunks = match self.cut {
            BinLptCut::Faithful => chunks.clamp(1, MAX_FAITHFUL_CHUNKS),
            BinLptCut::Improved => chunks.max(1),
        };
        let mut prefix = Vec::with_capacity(loads.len() + 1);
        prefix.push(0.0);
        let mut sum = 0.0;
        for &w in loads {
            sum += w;
            prefix.push(sum);
        }
        match self.cut {
            BinLptCut::Faithful => faithful_cuts(&prefix, chunks),
            BinLptCut::Improved => improved_cuts(&prefix, chunks),
        }
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let (mut placement, times) = input.pinned_start();
        let pus = input.available_pus();
        let movable: Vec<usize> = (0..input.ntasks())
            .filter(|&t| input.is_migratable(t))
            .collect();
        let loads: Vec<f64> = movable.iter().map(|&t| input.task_loads()[t]).collect();
        let k = match self.cut {
            // One chunk per available PU by default; the faithful cut keeps
            // the reference's bound even when PUs outnumber it.
            BinLptCut::Faithful => self.chunks.unwrap_or(pus.len()).min(MAX_FAITHFUL_CHUNKS),
            BinLptCut::Improved => self.chunks.unwrap_or(pus.len()),
        };
        let bounds = self.cut_points(&loads, k);
        let chunk_loads: Vec<f64> = bounds
            .windows(2)
            .map(|w| loads[w[0]..w[1]].iter().sum())
            .collect();
        let order = match self.cut {
            BinLptCut::Faithful => exchange_sort_largest_first(&chunk_loads),
            BinLptCut::Improved => lpt_order(&chunk_loads, |_| true),
        };
        let mut heap = PuHeap::new(times, pus);
        for chunk in order {
            let pu = heap.least();
            for &task in &movable[bounds[chunk]..bounds[chunk + 1]] {
                placement[task] = pu;
            }
            heap.add(pu, chunk_loads[chunk] / input.speed(pu));
        }
        Mapping::complete(placement, input.npus())
    }
}

impl MappingPolicy for BinLpt {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("binlpt");
        if let Some(k) = self.chunks {
            spec.params
                .push(("chunks".into(), SpecValue::Token(k.to_string())));
        }
        let cut = match self.cut {
            BinLptCut::Faithful => "faithful",
            BinLptCut::Improved => "improved",
        };
        spec.params
            .push(("cut".into(), SpecValue::Token(cut.into())));
        spec
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("binlpt", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

/// The reference cut: fixed target, each chunk keeps its crossing task.
fn faithful_cuts(prefix: &[f64], k: usize) -> Vec<usize> {
    let n = prefix.len() - 1;
    let target = prefix[n] / k as f64;
    let mut bounds = vec![0];
    let mut start = 0;
    for c in 0..k {
        let end = if start >= n || c + 1 == k {
            n
        } else {
            let mut j = start + 1;
            while j < n && prefix[j] - prefix[start] <= target {
                j += 1;
            }
            j
        };
        bounds.push(end);
        start = end;
    }
    bounds
}

/// Keel's cut: nearest boundary to an adaptive share, `min(k, n)` chunks.
fn improved_cuts(prefix: &[f64], k: usize) -> Vec<usize> {
    let n = prefix.len() - 1;
    let k = k.min(n);
    let mut bounds = vec![0];
    let mut start = 0;
    for c in 0..k {
        let left = k - c;
        let end = if left == 1 {
            n
        } else {
            // Leave at least one task for each later chunk.
            let (lo, hi) = (start + 1, n - (left - 1));
            let goal = prefix[start] + (prefix[n] - prefix[start]) / left as f64;
            let above = lo + prefix[lo..=hi].partition_point(|&p| p < goal);
            if above > hi {
                hi
            } else if above > lo && goal - prefix[above - 1] <= prefix[above] - goal {
                above - 1
            } else {
                above
            }
        };
        bounds.push(end);
        start = end;
    }
    bounds
}

/// The reference's chunk order: an exchange sort ascending by load carrying
/// chunk indices, read from the largest end. Reproduces its tie order.
fn exchange_sort_largest_first(loads: &[f64]) -> Vec<usize> {
    let mut sorted = loads.to_vec();
    let mut index: Vec<usize> = (0..loads.len()).collect();
    for i in 0..sorted.len() {
        for j in i + 1..sorted.len() {
            if sorted[j] < sorted[i] {
                sorted.swap(i, j);
                index.swap(i, j);
            }
        }
    }
    index.reverse();
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cut: BinLptCut, loads: &[f64], pus: usize, k: usize) -> (Vec<usize>, Vec<f64>) {
        let bg = vec![0.0; pus];
        let input = MappingInput::new(loads, &bg).unwrap();
        let map = BinLpt {
            chunks: Some(k),
            cut,
        }
        .decide(&input);
        let times = input.loads_of(map.as_slice());
        (map.into_vec(), times)
    }

    fn sizes(bounds: &[usize]) -> Vec<usize> {
        bounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Golden vectors reproduced from libgomp-BinLPT and MOGSLib.
    #[test]
    fn faithful_cut_reproduces_the_golden_vectors() {
        let threes_then_ones: Vec<f64> = [3.0; 8].iter().chain(&[1.0; 8]).copied().collect();
        let ten_ones_ten: Vec<f64> = std::iter::once(10.0)
            .chain([1.0; 8])
            .chain([10.0])
            .collect();
        /// (loads, PUs, K, chunk sizes, taskmap, thread loads)
        type Golden = (Vec<f64>, usize, usize, Vec<usize>, Vec<usize>, Vec<f64>);
        #[rustfmt::skip]
        let cases: Vec<Golden> = vec![
            (vec![5.0; 4], 2, 2, vec![3, 1], vec![0, 0, 0, 1], vec![15.0, 5.0]),
            (vec![1.0, 2.0, 3.0, 4.0, 5.0], 2, 2, vec![4, 1], vec![0, 0, 0, 0, 1], vec![10.0, 5.0]),
            (vec![5.0, 4.0, 3.0, 2.0, 1.0], 2, 4, vec![1, 1, 2, 1], vec![0, 0, 1, 1, 1], vec![9.0, 6.0]),
            (threes_then_ones.clone(), 2, 4, vec![3, 3, 5, 5],
             [vec![0; 6], vec![1; 10]].concat(), vec![18.0, 14.0]),
            (threes_then_ones, 4, 8, vec![2, 2, 2, 2, 5, 3, 0, 0],
             vec![3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1], vec![11.0, 9.0, 6.0, 6.0]),
            (ten_ones_ten, 2, 4, vec![1, 8, 1, 0], [vec![0; 9], vec![1]].concat(), vec![18.0, 10.0]),
        ];
        for (loads, pus, k, chunk_sizes, taskmap, thread_loads) in cases {
            let policy = BinLpt {
                chunks: Some(k),
                cut: BinLptCut::Faithful,
            };
            assert_eq!(
                sizes(&policy.cut_points(&loads, k)),
                chunk_sizes,
                "{loads:?}"
            );
            let (map, times) = run(BinLptCut::Faithful, &loads, pus, k);
            assert_eq!(map, taskmap, "{loads:?} P={pus} K={k}");
            assert_eq!(times, thread_loads, "{loads:?} P={pus} K={k}");
        }
    }

    #[test]
    fn improved_cut_always_yields_k_non_empty_chunks() {
        let policy = BinLpt {
            chunks: None,
            cut: BinLptCut::Improved,
        };
        let loads: Vec<f64> = [3.0; 8].iter().chain(&[1.0; 8]).copied().collect();
        let bounds = policy.cut_points(&loads, 8);
        assert_eq!(sizes(&bounds), vec![1, 1, 1, 2, 1, 2, 4, 4]);
        // A single huge task cannot starve later chunks.
        let spike = [100.0, 1.0, 1.0, 1.0];
        assert_eq!(sizes(&policy.cut_points(&spike, 3)), vec![1, 1, 2]);
        // Fewer tasks than chunks: one task per chunk.
        assert_eq!(sizes(&policy.cut_points(&[1.0, 2.0], 5)), vec![1, 1]);
        assert_eq!(policy.cut_points(&[], 4), vec![0]);
    }

    #[test]
    fn improved_cut_balances_where_the_faithful_one_overshoots() {
        let loads: Vec<f64> = [3.0; 8].iter().chain(&[1.0; 8]).copied().collect();
        let (_, faithful) = run(BinLptCut::Faithful, &loads, 4, 8);
        let (_, improved) = run(BinLptCut::Improved, &loads, 4, 8);
        let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        assert_eq!(max(&faithful), 11.0);
        assert_eq!(max(&improved), 9.0, "{improved:?}");
    }

    #[test]
    fn default_chunk_count_is_one_per_available_pu() {
        let loads = [1.0; 6];
        let input = MappingInput::new(&loads, &[0.0; 3]).unwrap();
        let map = BinLpt::default().decide(&input);
        assert_eq!(map.as_slice(), &[0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn spec_round_trip_and_validation() {
        let policy = BinLpt::from_spec(&"binlpt:chunks=80,cut=faithful".parse().unwrap()).unwrap();
        assert_eq!(policy.chunks, Some(80));
        assert_eq!(policy.cut, BinLptCut::Faithful);
        assert_eq!(policy.spec().to_string(), "binlpt:chunks=80,cut=faithful");
        assert!(BinLpt::from_spec(&"binlpt:chunks=0".parse().unwrap()).is_err());
        assert!(BinLpt::from_spec(&"binlpt:cut=best".parse().unwrap()).is_err());
        let err = BinLpt::from_spec(&"binlpt:chunks=60000,cut=faithful".parse().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("cut=improved"), "{err}");
        assert!(BinLpt::from_spec(&"binlpt:chunks=60000".parse().unwrap()).is_ok());
        let policy = BinLpt::default();
        assert_eq!(
            policy.cut_points(&[1.0], 0),
            vec![0, 1],
            "k = 0 means one chunk"
        );
    }

    #[test]
    fn huge_chunk_counts_are_refused_with_the_limit_named() {
        for text in [
            "binlpt:chunks=18446744073709551615",
            "binlpt:chunks=16777217",
            "binlpt:chunks=18446744073709551616",
        ] {
            let err = BinLpt::from_spec(&text.parse().unwrap()).unwrap_err();
            assert!(
                matches!(&err, PolicyError::InvalidParameter { key, .. } if key == "chunks"),
                "{text}: {err}"
            );
            assert!(err.to_string().contains("1..=16777216"), "{text}: {err}");
        }
        let policy = BinLpt::from_spec(&"binlpt:chunks=16777216".parse().unwrap()).unwrap();
        assert_eq!(policy.chunks, Some(MAX_CHUNKS));
        // A policy built in code with a huge count allocates per task, or per
        // capped chunk for the faithful cut, never per chunk asked for.
        let faithful = BinLpt {
            chunks: Some(usize::MAX),
            cut: BinLptCut::Faithful,
        };
        assert_eq!(
            faithful.cut_points(&[1.0, 1.0], usize::MAX).len(),
            MAX_FAITHFUL_CHUNKS + 1
        );
        let improved = BinLpt {
            chunks: Some(usize::MAX),
            cut: BinLptCut::Improved,
        };
        assert_eq!(improved.cut_points(&[1.0, 1.0], usize::MAX), vec![0, 1, 2]);
    }
}
