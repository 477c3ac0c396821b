//! The two kernels every LPT-style policy shares: ordering tasks heaviest
//! first, and a structure that finds the least-loaded PU.
//!
//! Both are hot: at 1,000,000 tasks the order and the assignment are
//! each about half of greedy's decision, so the order is a sort over packed
//! integer keys rather than a comparator over indices (which would chase
//! pointers on every comparison), and the assignment a branch-free replay
//! of a tournament tree.

/// Tasks in LPT order: heaviest first, ties by lower index.
///
/// Sorting is the floor any LPT pays, so it is kept to a sort of plain
/// `u64`s, cheaper than sorting the loads themselves. Each key is the
/// load's inverted IEEE bits (non-negative floats order like their bits;
/// inverting sorts descending) truncated to make room for the task index in
/// the low bits. Truncation only merges loads that agree in their top bits;
/// those rare runs are then re-sorted by exact load, so the order is exactly
/// LPT's. When every task is ordered, the keys are dealt into buckets by
/// their top varying bits and each bucket sorted in cache (`bucket_sort`);
/// otherwise one `sort_unstable` sorts them.
///
/// Loads are read from the caller's slice as the order is walked, each
/// asked for (prefetched) some tasks ahead, so that those random reads
/// overlap the assignment's dependency chain.
/// [`LptOrder::assign_into`] writes the placement through windows of tasks
/// that stay in the L1 cache rather than by one random store per task.
#[derive(Clone, Debug)]
pub struct LptOrder<'a> {
    loads: &'a [f64],
    keys: Vec<u64>,
    index_mask: u64,
}

impl<'a> LptOrder<'a> {
    /// Orders the tasks `0..loads.len()` for which `keep` holds. Loads must
    /// be finite and `>= 0` (validated by [`MappingInput`](super::MappingInput)).
    pub fn new(loads: &'a [f64], keep: impl Fn(usize) -> bool) -> Self {
        let index_mask = index_mask(loads);
        // Presized: a filtered iterator has no size hint, and growing the
        // buffer by doubling re-copies (and re-faults) it a dozen times.
        let mut keys: Vec<u64> = Vec::with_capacity(loads.len());
        keys.extend(
            (0..loads.len())
                .filter(|&i| keep(i))
                .map(|i| packed_key(loads, index_mask, i)),
        );
        Self::sorted(loads, keys, index_mask)
    }

    /// Orders the tasks `0..loads.len()` whose `movable` flag is set, or all
    /// of them when there are no flags: the same order as [`LptOrder::new`]
    /// with that filter, built without a test per task when every task may
    /// move (the common case, and a single pass the compiler vectorises).
    pub(crate) fn movable(loads: &'a [f64], movable: Option<&[bool]>) -> Self {
        match movable {
            Some(flags) => Self::new(loads, |t| flags[t]),
            None => {
                let index_mask = index_mask(loads);
                let keys = super::bucket_sort::sorted_keys(loads, index_mask);
                Self::exact(loads, keys, index_mask)
            }
        }
    }

    /// Sorts `keys` and puts each run of truncated-equal keys in exact order.
    fn sorted(loads: &'a [f64], mut keys: Vec<u64>, index_mask: u64) -> Self {
        keys.sort_unstable();
        Self::exact(loads, keys, index_mask)
    }

    /// Puts each run of truncated-equal keys of sorted `keys` in exact order.
    fn exact(loads: &'a [f64], mut keys: Vec<u64>, index_mask: u64) -> Self {
        let exact = |i: usize| !(loads[i] + 0.0).to_bits();
        let task = |k: u64| (k & index_mask) as usize;
        let high = !index_mask;
        let mut from = 0;
        while let Some(start) = first_tie(&keys[from..], high).map(|at| from + at) {
            let end = start
                + 1
                + keys[start + 1..]
                    .iter()
                    .take_while(|&&k| (k ^ keys[start]) & high == 0)
                    .count();
            keys[start..end].sort_unstable_by_key(|&k| (exact(task(k)), task(k)));
            from = end;
        }
        LptOrder {
            loads,
            keys,
            index_mask,
        }
    }

    /// Number of ordered tasks.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no task is ordered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Task indices, heaviest first.
    pub fn tasks(&self) -> impl Iterator<Item = usize> + '_ {
        self.keys.iter().map(|&k| (k & self.index_mask) as usize)
    }

    /// `(task, load)` pairs, heaviest first.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.tasks().map(|t| (t, self.loads[t]))
    }

    /// LPT on `tree` without recording where tasks went (for a bound).
    pub fn assign(&self, tree: &mut PuHeap, speeds: Option<&[f64]>) {
        let mask = self.index_mask;
        let loads = self.loads;
        for (&key, &ahead) in self.keys.iter().zip(self.ahead()) {
            prefetch(loads, (ahead & mask) as usize);
            let load = loads[(key & mask) as usize];
            tree.add_to_least(|pu| speeds.map_or(load, |s| load / s[pu]));
        }
    }

    /// LPT: each task in order to the least-loaded PU of `tree`, which grows
    /// by `load / speed`; writes each task's PU into `placement`.
    pub fn assign_into(
        mut self,
        tree: &mut PuHeap,
        speeds: Option<&[f64]>,
        placement: &mut [usize],
    ) {
        if self.keys.len() == placement.len() && fits_window_entry(tree.time.len()) {
            return self.assign_windowed(tree, speeds, placement);
        }
        let mask = self.index_mask;
        let loads = self.loads;
        for j in 0..self.keys.len() {
            if let Some(&ahead) = self.keys.get(j + PREFETCH_AHEAD) {
                prefetch(loads, (ahead & mask) as usize);
            }
            let task = self.keys[j] & mask;
            let load = loads[task as usize];
            let pu = tree.add_to_least(|pu| speeds.map_or(load, |s| load / s[pu]));
            // The key is spent: keep (task, PU) in its slot, so the random
            // stores into `placement` happen after the loop.
            self.keys[j] = (task << 32) | pu as u64;
        }
        for &key in &self.keys {
            placement[(key >> 32) as usize] = key as u32 as usize;
        }
    }

    /// [`LptOrder::assign_into`] when every task is ordered: the placement
    /// is written through windows of [`WINDOW`] tasks rather than by one
    /// store per task at a random place in it.
    ///
    /// At 1,000,000 tasks the placement is 8 MB, and a store to a random
    /// task's slot misses every cache level: those stores cost as much as
    /// a third of a sort of the loads. Here the loop appends each decision,
    /// as the task's offset in its window and its PU, to its window's own
    /// stretch of `placement` (window `w`'s tasks are `w·WINDOW ..`, as many
    /// as its stretch holds, so `placement` itself is the buffer); one
    /// window at a time is then copied aside and put in task order, both
    /// inside the L1 cache.
    fn assign_windowed(self, tree: &mut PuHeap, speeds: Option<&[f64]>, placement: &mut [usize]) {
        let mask = self.index_mask;
        let loads = self.loads;
        let mut next: Vec<usize> = (0..placement.len().div_ceil(WINDOW))
            .map(|w| w * WINDOW)
            .collect();
        // The loads are read in the order's random task order: each read
        // is asked for `PREFETCH_AHEAD` tasks early, so that it has
        // arrived when the assignment (a dependency chain through the PU
        // tree, which leaves the memory units idle) comes to it.
        for (&key, &ahead) in self.keys.iter().zip(self.ahead()) {
            prefetch(loads, (ahead & mask) as usize);
            let task = (key & mask) as usize;
            let load = loads[task];
            let pu = tree.add_to_least(|pu| speeds.map_or(load, |s| load / s[pu]));
            let slot = &mut next[task / WINDOW];
            placement[*slot] = (task % WINDOW) | (pu << WINDOW_BITS);
            *slot += 1;
        }
        let mut aside = vec![0; placement.len().min(WINDOW)];
        for window in placement.chunks_mut(WINDOW) {
            let aside = &mut aside[..window.len()];
            aside.copy_from_slice(window);
            for &entry in aside.iter() {
                window[entry % WINDOW] = entry >> WINDOW_BITS;
            }
        }
    }

    /// Each key's successor `PREFETCH_AHEAD` places on, whose load is
    /// prefetched as the key is assigned; key 0 (task 0) past the end, which
    /// is harmless.
    fn ahead(&self) -> impl Iterator<Item = &u64> + '_ {
        self.keys
            .iter()
            .skip(PREFETCH_AHEAD)
            .chain(std::iter::repeat(&0))
    }
}

/// The first `i` whose key agrees with key `i + 1` in the `high` bits.
///
/// Such ties are rare, so the search is over blocks of keys tested without
/// a branch per key (the tests compile to packed compares); only a block
/// with a tie is searched key by key.
fn first_tie(keys: &[u64], high: u64) -> Option<usize> {
    const BLOCK: usize = 16;
    let mut at = 0;
    while at + BLOCK < keys.len() {
        let block = &keys[at..at + BLOCK + 1];
        let tie = block
            .windows(2)
            .fold(false, |tie, pair| tie | ((pair[0] ^ pair[1]) & high == 0));
        if tie {
            break;
        }
        at += BLOCK;
    }
    keys[at..]
        .windows(2)
        .position(|pair| (pair[0] ^ pair[1]) & high == 0)
        .map(|i| at + i)
}

/// The low bits of a key that hold the task index: as few as `loads.len()`
/// needs, so that the load's top bits keep as much of the order as they can.
pub(super) fn index_mask(loads: &[f64]) -> u64 {
    assert!(loads.len() <= u32::MAX as usize, "at most 2^32 tasks");
    let index_bits = usize::BITS - loads.len().saturating_sub(1).leading_zeros();
    (1u64 << index_bits) - 1
}

/// Task `i`'s sort key: its load's inverted bits (heaviest first) above its
/// index.
#[inline]
pub(super) fn packed_key(loads: &[f64], index_mask: u64, i: usize) -> u64 {
    (!(loads[i] + 0.0).to_bits() & !index_mask) | i as u64
}

/// How many tasks ahead of the assignment their loads are prefetched: at
/// about 50 cycles a task, 16 tasks cover a miss to memory. Without the
/// prefetch (loads read as the loop reaches them) greedy at 1,000,000 ×
/// 1,024 took twice as long: every read missed on the chain.
const PREFETCH_AHEAD: usize = 16;

/// Asks the CPU to bring `values[index]` into the cache; an index past the
/// end is a hint about an address nobody reads, which is harmless.
#[inline(always)]
fn prefetch(values: &[f64], index: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault,
    // whatever the address; the SSE it needs is part of every x86_64 target.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            values.as_ptr().wrapping_add(index).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (values, index);
}

/// Tasks per window of [`LptOrder::assign_windowed`]: a window's
/// placement (32 KiB) and its copy fit the L1 cache together with the PU
/// tree only just, and the windows' append points (one cache line each, 245
/// at 1,000,000 tasks) fit beside them.
const WINDOW_BITS: u32 = 12;
/// `2^WINDOW_BITS`.
const WINDOW: usize = 1 << WINDOW_BITS;

/// Whether a window entry (task offset below, PU above) holds every PU
/// index below `npus`.
fn fits_window_entry(npus: usize) -> bool {
    npus.saturating_sub(1) >> (usize::BITS - WINDOW_BITS) == 0
}

/// Task indices in LPT order (heaviest first, ties by lower index).
pub fn lpt_order(loads: &[f64], keep: impl Fn(usize) -> bool) -> Vec<usize> {
    LptOrder::new(loads, keep).tasks().collect()
}

/// The least-loaded PU among a subset of PUs, keyed by `(time, index)` so
/// that ties go to the lowest PU index.
///
/// A tournament (winner) tree: each node holds the winner of its subtree as
/// the time's IEEE bits (which order like the numbers for non-negative
/// values) and the PU index. The left subtree holds the lower indices, so a
/// tie is settled by which side a node is on, and a replay from a leaf to
/// the root is one integer comparison and two conditional moves per level —
/// no data-dependent branch, which a binary heap's sift-down cannot avoid
/// and which dominated the LPT loop (see `benches/mapping.rs`). Any member
/// PU's time may change, up or down.
///
/// Siblings are stored side by side, one `Pair` per parent: a replay step
/// reads the sibling and writes the climbing winner in the same pair (one
/// bounds check a level rather than four), which is much of what a level
/// costs.
#[derive(Clone, Debug)]
pub struct PuHeap {
    /// `pairs[p]` holds nodes `2p` and `2p + 1`, the children of node `p`;
    /// the root, node 1, is side 1 of `pairs[0]`; leaf `leaves + pu` is PU
    /// `pu`.
    pairs: Vec<Pair>,
    leaves: usize,
    /// Levels below the root: `log2(leaves)`.
    depth: u32,
    time: Vec<f64>,
    member: Vec<bool>,
}

/// Two sibling nodes, each the winner of its subtree: key and PU.
#[derive(Clone, Copy, Debug)]
struct Pair {
    keys: [u64; 2],
    pus: [u32; 2],
}

/// Key of a leaf with no member PU: above every finite time's bits.
const OUTSIDE: u64 = u64::MAX - 1;

#[inline]
fn key(time: f64) -> u64 {
    debug_assert!(time >= 0.0 && time.is_finite(), "PU times are finite, >= 0");
    // `+ 0.0` maps -0.0 to +0.0, whose bits order correctly.
    (time + 0.0).to_bits()
}

impl PuHeap {
    /// A tree over `pus` with starting times `times` (indexed by PU).
    pub fn new(times: Vec<f64>, pus: impl IntoIterator<Item = usize>) -> Self {
        let npus = times.len();
        debug_assert!(npus < u32::MAX as usize);
        let leaves = npus.next_power_of_two().max(1);
        let mut member = vec![false; npus];
        for pu in pus {
            member[pu] = true;
        }
        let outside = Pair {
            keys: [OUTSIDE; 2],
            pus: [u32::MAX; 2],
        };
        let mut pairs = vec![outside; leaves];
        let mut set = |node: usize, key: u64, pu: u32| {
            let pair = &mut pairs[node >> 1];
            pair.keys[node & 1] = key;
            pair.pus[node & 1] = pu;
        };
        for pu in (0..npus).filter(|&p| member[p]) {
            set(leaves + pu, key(times[pu]), pu as u32);
        }
        for i in (1..leaves).rev() {
            let Pair { keys, pus } = pairs[i];
            let right_wins = usize::from(keys[1] < keys[0]);
            let pair = &mut pairs[i >> 1];
            pair.keys[i & 1] = keys[right_wins];
            pair.pus[i & 1] = pus[right_wins];
        }
        PuHeap {
            pairs,
            leaves,
            depth: leaves.trailing_zeros(),
            time: times,
            member,
        }
    }

    /// The least-loaded PU. The inputs guarantee at least one member.
    #[inline]
    pub fn least(&self) -> usize {
        self.pairs[0].pus[1] as usize
    }

    /// Current time of PU `pu`.
    #[inline]
    pub fn time(&self, pu: usize) -> f64 {
        self.time[pu]
    }

    /// Whether `pu` is in the tree.
    pub fn contains(&self, pu: usize) -> bool {
        self.member.get(pu).copied().unwrap_or(false)
    }

    /// Adds `delta` to member PU `pu`'s time (the result must stay `>= 0`).
    #[inline]
    pub fn add(&mut self, pu: usize, delta: f64) {
        debug_assert!(self.member[pu]);
        self.time[pu] += delta;
        self.replay(pu, key(self.time[pu]));
    }

    /// Adds `delta(pu)` to the least-loaded PU `pu`'s time and returns
    /// `pu`: [`PuHeap::least`] then [`PuHeap::add`], with the PU's new key
    /// computed from the root's key rather than from its stored time, so
    /// that LPT's chain from one task to the next (least PU, its new key,
    /// the replay) skips a store and reload of the time.
    #[inline]
    pub(crate) fn add_to_least(&mut self, delta: impl FnOnce(usize) -> f64) -> usize {
        let root = self.pairs[0];
        let pu = root.pus[1] as usize;
        let delta = delta(pu);
        self.time[pu] += delta;
        // The root key is the bits of the PU's time with -0.0 read as +0.0,
        // so the sum is the number `time + delta` is, and never -0.0 (the
        // time and `delta` are `>= 0`): its bits are `key(time + delta)`.
        let sum = f64::from_bits(root.keys[1]) + delta;
        debug_assert_eq!(sum.to_bits(), key(self.time[pu]));
        self.replay(pu, sum.to_bits());
        pu
    }

    /// Puts `key` in member PU `pu`'s leaf and replays its path to the root.
    #[inline]
    fn replay(&mut self, pu: usize, key: u64) {
        let mut winner_key = key;
        let mut winner = pu as u32;
        let mut i = self.leaves + pu;
        // `pairs` has `leaves` entries, a power of two: masking the index
        // changes none, and lets the compiler drop the bounds check.
        let Some(last) = self.pairs.len().checked_sub(1) else {
            return;
        };
        let pairs = &mut self.pairs[..];
        // A fixed trip count rather than a test for the root each level.
        for _ in 0..self.depth {
            let pair = &mut pairs[(i >> 1) & last];
            let side = i & 1;
            pair.keys[side] = winner_key;
            pair.pus[side] = winner;
            let (sibling_key, sibling) = (pair.keys[side ^ 1], pair.pus[side ^ 1]);
            // A left sibling (odd i) holds lower indices and also wins ties:
            // `s <= w` is `s < w + 1`, and keys never reach u64::MAX.
            let sibling_wins = sibling_key < winner_key + side as u64;
            winner_key = std::hint::select_unpredictable(sibling_wins, sibling_key, winner_key);
            winner = std::hint::select_unpredictable(sibling_wins, sibling, winner);
            i >>= 1;
        }
        let root = &mut self.pairs[0];
        root.keys[1] = winner_key;
        root.pus[1] = winner;
    }

    /// All PU times, indexed by PU.
    pub fn into_times(self) -> Vec<f64> {
        self.time
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
    fn loads_that_differ_only_in_low_bits_keep_their_exact_order() {
        let base = 1.0f64;
        let next = f64::from_bits(base.to_bits() + 1);
        let loads = [base, next, base, 0.5, next];
        assert_eq!(lpt_order(&loads, |_| true), vec![1, 4, 0, 2, 3]);
        let order = LptOrder::new(&loads, |_| true);
        let in_order: Vec<f64> = order.iter().map(|(_, w)| w).collect();
        assert_eq!(in_order, vec![next, next, base, base, 0.5]);
        assert!(LptOrder::new(&[], |_| true).is_empty());
        assert_eq!(lpt_order(&[7.0], |_| true), vec![0]);
    }

    #[test]
    fn first_tie_finds_the_first_adjacent_pair_equal_in_high_bits() {
        let high = !0xffu64;
        for len in [0usize, 1, 2, 16, 17, 18, 33, 100] {
            // Distinct high bits everywhere, then one tie at each place.
            let distinct: Vec<u64> = (0..len as u64).map(|i| (i << 8) | (i & 0xff)).collect();
            assert_eq!(first_tie(&distinct, high), None, "len {len}");
            for at in 0..len.saturating_sub(1) {
                let mut keys = distinct.clone();
                keys[at + 1] = (keys[at] & high) | 0x7f;
                // A later tie must not hide the first.
                if at + 3 < len {
                    keys[at + 3] = (keys[at + 2] & high) | 1;
                }
                assert_eq!(first_tie(&keys, high), Some(at), "len {len}, at {at}");
            }
        }
    }

    #[test]
    fn the_unfiltered_order_is_the_order_with_every_task_kept() {
        // Duplicates and low-bit neighbours exercise the exact tie fix-up.
        let next = f64::from_bits(1.0f64.to_bits() + 1);
        let loads: Vec<f64> = (0..300)
            .map(|i| match i % 5 {
                0 => 1.0,
                1 => next,
                _ => ((i * 37) % 23) as f64,
            })
            .collect();
        let tasks = |order: LptOrder<'_>| order.tasks().collect::<Vec<_>>();
        assert_eq!(
            tasks(LptOrder::movable(&loads, None)),
            tasks(LptOrder::new(&loads, |_| true))
        );
        let flags: Vec<bool> = (0..loads.len()).map(|i| i % 3 != 1).collect();
        let kept = tasks(LptOrder::movable(&loads, Some(&flags)));
        assert_eq!(kept, tasks(LptOrder::new(&loads, |t| flags[t])));
        assert_eq!(kept.len(), 200);
        assert!(LptOrder::movable(&[], None).is_empty());
    }

    #[test]
    fn tree_agrees_with_a_linear_scan_under_random_updates() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for npus in [1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 300] {
            let members: Vec<usize> = (0..npus).filter(|p| p % 7 != 3 || npus == 1).collect();
            let start: Vec<f64> = (0..npus).map(|p| (p % 3) as f64).collect();
            let mut tree = PuHeap::new(start.clone(), members.iter().copied());
            let mut times = start;
            for _ in 0..500 {
                let expected = members
                    .iter()
                    .copied()
                    .min_by(|&a, &b| times[a].total_cmp(&times[b]).then(a.cmp(&b)))
                    .unwrap();
                assert_eq!(tree.least(), expected, "npus {npus}");
                // Small integer steps make ties frequent.
                let pu = members[(next() % members.len() as u64) as usize];
                let delta = (next() % 3) as f64;
                tree.add(pu, delta);
                times[pu] += delta;
            }
        }
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
        heap.add(2, -5.5);
        assert_eq!(heap.least(), 2, "times may also fall");
        assert_eq!(heap.time(2), 0.5);
    }
}
