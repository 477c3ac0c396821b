//! The sort under [`LptOrder`](super::LptOrder) when every task is ordered:
//! one pass that deals the keys into buckets by their top varying bits,
//! then a sort of each bucket, which fits in the L1 cache.
//!
//! A comparison sort of 1,000,000 keys (8 MB) reads and writes them about
//! ten times before its parts fit a cache; the bucket pass does it once,
//! leaving sorts of about 500 keys. The keys are dealt straight from the
//! loads, so the key buffer is written once, by the bucket pass.
//!
//! The buckets are cut on the bits just below the highest bit in which
//! the heaviest and the lightest task's keys differ: every key lies between
//! those two, so it shares every bit above, and a key's bucket number
//! (`BUCKET_BITS` of its bits) grows with the key. On inputs where most
//! loads fall in one bucket this costs one sort of them, as before, plus
//! the pass.

use super::lpt::packed_key;

/// Fewest tasks for which the bucket pass pays for its counting.
const BUCKETED_MIN: usize = 1 << 14;
/// Bits of a key that pick its bucket: 1,024 buckets, whose append points
/// (one cache line each) fit the L1 cache.
const BUCKET_BITS: u32 = 10;
/// `2^BUCKET_BITS`.
const BUCKETS: usize = 1 << BUCKET_BITS;

/// The packed keys of tasks `0..loads.len()`, sorted ascending.
pub(super) fn sorted_keys(loads: &[f64], index_mask: u64) -> Vec<u64> {
    let key = |i: usize| packed_key(loads, index_mask, i);
    let n = loads.len();
    if n < BUCKETED_MIN {
        let mut keys: Vec<u64> = (0..n).map(key).collect();
        keys.sort_unstable();
        return keys;
    }
    // Non-negative loads order like their bits; a key inverts them. The
    // extremes are taken as numbers (`+ 0.0` reads -0.0 as +0.0), written
    // as comparisons so that they compile to packed minimums and maximums.
    let (least, most) = loads
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(least, most), &load| {
            let load = load + 0.0;
            (
                if load < least { load } else { least },
                if load > most { load } else { most },
            )
        });
    let differ = (!least.to_bits() ^ !most.to_bits()) & !index_mask;
    if differ == 0 {
        // Every key agrees above the index: index order is key order.
        return (0..n).map(key).collect();
    }
    let top = u64::BITS - differ.leading_zeros();
    let shift = top.saturating_sub(BUCKET_BITS);
    let bucket = |key: u64| ((key >> shift) as usize) & (BUCKETS - 1);
    let mut next = vec![0usize; BUCKETS];
    for i in 0..n {
        next[bucket(key(i))] += 1;
    }
    let mut start = 0;
    let mut bounds = Vec::with_capacity(BUCKETS + 1);
    for slot in next.iter_mut() {
        bounds.push(start);
        start += std::mem::replace(slot, start);
    }
    bounds.push(n);
    let mut keys = vec![0u64; n];
    for i in 0..n {
        let key = key(i);
        let slot = &mut next[bucket(key)];
        keys[*slot] = key;
        *slot += 1;
    }
    for pair in bounds.windows(2) {
        keys[pair[0]..pair[1]].sort_unstable();
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::super::lpt::index_mask;
    use super::*;

    fn comparison_sorted(loads: &[f64]) -> Vec<u64> {
        let mask = index_mask(loads);
        let mut keys: Vec<u64> = (0..loads.len())
            .map(|i| packed_key(loads, mask, i))
            .collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn agrees_with_one_comparison_sort_on_every_spread_of_loads() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in [BUCKETED_MIN - 1, BUCKETED_MIN, 3 * BUCKETED_MIN + 7] {
            let spreads: Vec<Vec<f64>> = vec![
                // Many magnitudes, as `lb_test`'s loads.
                (0..n)
                    .map(|_| (next() % 1_000_000) as f64 * 1e-6 + 1e-5)
                    .collect(),
                // Few distinct loads, zeros among them (-0.0 too).
                (0..n)
                    .map(|i| match next() % 4 {
                        0 if i % 2 == 0 => -0.0,
                        0 => 0.0,
                        k => k as f64,
                    })
                    .collect(),
                // All equal, and all but one equal.
                vec![2.5; n],
                (0..n)
                    .map(|i| if i == n / 2 { 1e300 } else { 1.0 })
                    .collect(),
                // Loads that differ only in their lowest bits.
                (0..n)
                    .map(|_| f64::from_bits(1.0f64.to_bits() + next() % 64))
                    .collect(),
            ];
            for loads in spreads {
                let mask = index_mask(&loads);
                assert_eq!(
                    sorted_keys(&loads, mask),
                    comparison_sorted(&loads),
                    "n {n}"
                );
            }
        }
        assert!(sorted_keys(&[], 0).is_empty());
    }
}
