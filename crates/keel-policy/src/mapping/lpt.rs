//! The two kernels every LPT-style policy shares: ordering tasks heaviest
//! first, and an indexed min-heap of PU times.
//!
//! Both are hot: at 1,000,000 tasks the sort dominates, so the order is a
//! single `sort_unstable` over packed integer keys rather than a comparator
//! over indices (which would chase pointers on every comparison).

/// Tasks `0..loads.len()` for which `keep` holds, heaviest first, ties by
/// lower index. Loads must be finite and `>= 0` (validated by the input).
pub fn lpt_order(loads: &[f64], keep: impl Fn(usize) -> bool) -> Vec<usize> {
    debug_assert!(loads.len() <= u32::MAX as usize);
    // Non-negative finite f64s order like their bit patterns; `+ 0.0` turns
    // -0.0 into +0.0. Inverting the bits sorts descending, and the index in
    // the low half breaks ties toward the lower task.
    let mut keys: Vec<u128> = loads
        .iter()
        .enumerate()
        .filter(|&(i, _)| keep(i))
        .map(|(i, &w)| ((!(w + 0.0).to_bits() as u128) << 64) | i as u128)
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k as u64 as usize).collect()
}

/// Min-heap of PU times over a subset of PUs, keyed by `(time, index)` so
/// that ties go to the lowest PU index. Indexed: any PU's time can grow.
#[derive(Clone, Debug)]
pub struct PuHeap {
    heap: Vec<usize>,
    position: Vec<usize>,
    time: Vec<f64>,
}

const ABSENT: usize = usize::MAX;

impl PuHeap {
    /// A heap over `pus` with starting times `times` (indexed by PU).
    pub fn new(times: Vec<f64>, pus: impl IntoIterator<Item = usize>) -> Self {
        let mut position = vec![ABSENT; times.len()];
        let heap: Vec<usize> = pus.into_iter().collect();
        for (i, &pu) in heap.iter().enumerate() {
            position[pu] = i;
        }
        let mut this = PuHeap {
            heap,
            position,
            time: times,
        };
        for i in (0..this.heap.len() / 2).rev() {
            this.sift_down(i);
        }
        this
    }

    /// The least-loaded PU. Panics on an empty heap (inputs guarantee one PU).
    #[inline]
    pub fn least(&self) -> usize {
        self.heap[0]
    }

    /// Current time of PU `pu`.
    #[inline]
    pub fn time(&self, pu: usize) -> f64 {
        self.time[pu]
    }

    /// Whether `pu` is in the heap.
    pub fn contains(&self, pu: usize) -> bool {
        self.position.get(pu).is_some_and(|&p| p != ABSENT)
    }

    /// Adds `delta >= 0` to PU `pu`'s time.
    #[inline]
    pub fn add(&mut self, pu: usize, delta: f64) {
        self.time[pu] += delta;
        self.sift_down(self.position[pu]);
    }

    /// All PU times, indexed by PU.
    pub fn into_times(self) -> Vec<f64> {
        self.time
    }

    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        let (ta, tb) = (self.time[a], self.time[b]);
        ta < tb || (ta == tb && a < b)
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let pu = self.heap[i];
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.less(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.less(self.heap[child], pu) {
                break;
            }
            self.heap[i] = self.heap[child];
            self.position[self.heap[i]] = i;
            i = child;
        }
        self.heap[i] = pu;
        self.position[pu] = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_heaviest_first_with_index_ties() {
        let loads = [1.0, 3.0, 0.0, 3.0, -0.0, 2.5];
        assert_eq!(lpt_order(&loads, |_| true), vec![1, 3, 5, 0, 2, 4]);
        assert_eq!(lpt_order(&loads, |i| i % 2 == 1), vec![1, 3, 5]);
    }

    #[test]
    fn heap_returns_least_time_then_lowest_index() {
        let mut heap = PuHeap::new(vec![2.0, 1.0, 1.0, 0.5], [0, 1, 2]);
        assert_eq!(heap.least(), 1);
        heap.add(1, 0.5);
        assert_eq!(heap.least(), 2);
        heap.add(2, 5.0);
        assert_eq!(heap.least(), 1);
        heap.add(1, 0.5);
        assert_eq!(heap.least(), 0, "tie at 2.0 goes to PU 0");
        assert!(!heap.contains(3));
    }
}
