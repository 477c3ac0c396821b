//! The arithmetic of `keel bench loops`' interleaved rounds, as pure
//! functions over recorded times, so that it is tested without a clock.
//!
//! A round runs every entry once: the sequential reference (entry 0) and
//! each schedule (entry `i + 1`), in an order that rotates from round to
//! round ([`round_order`]). A row's ratios pair each of its times with
//! what ran in the *same* round and take the median over rounds
//! ([`ratios`]): a machine phase (a frequency change, a neighbour) then
//! slows the reference and the schedules of that round alike, or, when it
//! hits only one entry of one round, moves one of the per-round ratios
//! and not their median.

use keel_policy::stats::median_of;

/// The entries of round `round` in the order they run: `entries` indices
/// (0 is the sequential reference, `i + 1` schedule `i`), each exactly
/// once, starting at `round % entries`, so that every entry leads some
/// round and follows every other in turn.
///
/// ```
/// use keel_experiments::bench::loops::rounds::round_order;
/// let order: Vec<usize> = round_order(1, 3).collect();
/// assert_eq!(order, [1, 2, 0]);
/// assert_eq!(round_order(0, 0).count(), 0);
/// ```
pub fn round_order(round: usize, entries: usize) -> impl Iterator<Item = usize> {
    (0..entries).map(move |k| (round % entries.max(1) + k) % entries)
}

/// One schedule's ratios over the rounds it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ratios {
    /// The median over rounds of `T_par / (T_serial / P)` with `T_serial`
    /// the sequential reference of the same round.
    pub to_ideal_same_round: Option<f64>,
    /// The median over rounds of `T_par` over the fastest schedule of the
    /// same round: at least 1 by construction.
    pub to_best: Option<f64>,
}

/// A recorded time that can enter a ratio: positive and finite.
fn usable(t: f64) -> Option<f64> {
    (t.is_finite() && t > 0.0).then_some(t)
}

/// Each schedule's [`Ratios`] from the rounds' recorded times: `serial[r]`
/// is round `r`'s sequential reference, `schedules[i]` schedule `i`'s time
/// per round (`None` for a schedule that failed: it gets no ratios and is
/// no round's best), `threads` is `P`.
///
/// A round counts for a ratio only where both of its times are usable
/// (positive, finite): a missing round, a zero or a NaN is skipped, never
/// a panic; a ratio with no round left is `None`, as is every ratio to
/// the ideal for `threads == 0`.
///
/// ```
/// use keel_experiments::bench::loops::rounds::ratios;
/// // Two rounds at P = 2; the second round ran 1.5 times slower
/// // throughout, which the same-round ratios do not see.
/// let serial = [1.0, 1.5];
/// let a = vec![0.55, 0.825];
/// let b = vec![0.60, 0.90];
/// let r = ratios(&serial, &[Some(a.as_slice()), Some(b.as_slice())], 2);
/// assert!((r[0].to_ideal_same_round.unwrap() - 1.1).abs() < 1e-12);
/// assert_eq!(r[0].to_best, Some(1.0));
/// assert!((r[1].to_best.unwrap() - 0.60 / 0.55).abs() < 1e-12);
/// ```
pub fn ratios(serial: &[f64], schedules: &[Option<&[f64]>], threads: usize) -> Vec<Ratios> {
    let rounds = schedules
        .iter()
        .flatten()
        .map(|times| times.len())
        .max()
        .unwrap_or(0);
    let best: Vec<Option<f64>> = (0..rounds)
        .map(|r| {
            schedules
                .iter()
                .flatten()
                .filter_map(|times| times.get(r).copied().and_then(usable))
                .min_by(f64::total_cmp)
        })
        .collect();
    schedules
        .iter()
        .map(|times| {
            let Some(times) = times else {
                return Ratios::default();
            };
            let mut to_ideal = Vec::with_capacity(times.len());
            let mut to_best = Vec::with_capacity(times.len());
            for (r, &t) in times.iter().enumerate() {
                let Some(t) = usable(t) else { continue };
                if let Some(s) = serial.get(r).copied().and_then(usable) {
                    if threads > 0 {
                        to_ideal.push(t / (s / threads as f64));
                    }
                }
                if let Some(b) = best[r] {
                    to_best.push(t / b);
                }
            }
            Ratios {
                to_ideal_same_round: median_of(&to_ideal),
                to_best: median_of(&to_best),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_policy::stats::median;

    #[test]
    fn every_round_runs_every_entry_once_and_each_entry_leads_a_round() {
        for entries in 1..6 {
            let mut leaders = Vec::new();
            for round in 0..entries * 2 {
                let mut order: Vec<usize> = round_order(round, entries).collect();
                leaders.push(order[0]);
                order.sort_unstable();
                assert_eq!(order, (0..entries).collect::<Vec<_>>(), "round {round}");
            }
            leaders.sort_unstable();
            leaders.dedup();
            assert_eq!(leaders.len(), entries, "{entries} entries");
        }
    }

    /// The reference measured once, before the schedules, in a slow phase
    /// (the machine at a lower frequency, or a neighbour on the core)
    /// makes every schedule "beat" its ideal; paired within the rounds,
    /// the same phase slows both sides and the ratios stay above 1.
    #[test]
    fn a_slow_first_reference_cannot_make_a_schedule_beat_its_ideal() {
        const P: usize = 2;
        // Unit-speed times: sequential 1.0 s; schedule A 10 % over its
        // ideal of 0.5 s, B 30 % over, C 80 % over.
        let costs = [1.10, 1.30, 1.80];
        // Round 0 runs in a slow phase (everything 1.6 times slower); in
        // round 2 a neighbour hits the sequential run alone.
        let phase = [1.6, 1.0, 1.0];
        let serial: Vec<f64> = (0..3)
            .map(|r| phase[r] * if r == 2 { 1.6 } else { 1.0 })
            .collect();
        let times: Vec<Vec<f64>> = costs
            .iter()
            .map(|c| phase.iter().map(|p| p * c * 0.5).collect())
            .collect();

        // Measured once before the rounds, the reference is the slow
        // phase's median: A and B come out below their ideal (0.69 and
        // 0.81), the impossible figures of a LavaMD run.
        let reference_before = median(&mut [1.6, 1.6, 1.6]);
        let old: Vec<f64> = times
            .iter()
            .map(|t| median(&mut t.clone()) / (reference_before / P as f64))
            .collect();
        assert!(old[0] < 0.7 && old[1] < 0.97, "{old:?}");

        let slices: Vec<Option<&[f64]>> = times.iter().map(|t| Some(t.as_slice())).collect();
        let r = ratios(&serial, &slices, P);
        for (ratios, cost) in r.iter().zip(costs) {
            let ideal = ratios.to_ideal_same_round.unwrap();
            assert!(ideal >= 1.0, "{ideal}");
            // Round 2's lone slow reference moved one round, not the median.
            assert!((ideal - cost).abs() < 1e-12, "{ideal} vs {cost}");
            assert!(ratios.to_best.unwrap() >= 1.0);
        }
        assert_eq!(r[0].to_best, Some(1.0));
        assert!((r[2].to_best.unwrap() - 1.80 / 1.10).abs() < 1e-12);
    }

    #[test]
    fn failed_schedules_and_unusable_times_are_skipped() {
        let serial = [2.0, f64::NAN, 2.0];
        let a = [1.0, 1.0, 0.0];
        let b = [2.0, f64::INFINITY, 1.5];
        let r = ratios(&serial, &[Some(&a[..]), None, Some(&b[..])], 2);
        assert_eq!(r[1], Ratios::default());
        // A: round 0 only for the ideal (round 1's reference is NaN,
        // round 2's own time 0); rounds 0 and 1 for the best.
        assert_eq!(r[0].to_ideal_same_round, Some(1.0));
        assert_eq!(r[0].to_best, Some(1.0));
        // B: rounds 0 and 2 (median of 2.0 and 1.5); best 2/1 and 1.5/1.5.
        assert_eq!(r[2].to_ideal_same_round, Some(1.75));
        assert_eq!(r[2].to_best, Some(1.5));
        // No threads: no ideal; a reference shorter than the rounds and a
        // schedule with no rounds give what they can, without a panic.
        let none = ratios(&[1.0], &[Some(&[0.5, 0.5][..]), Some(&[][..])], 0);
        assert_eq!(none[0].to_ideal_same_round, None);
        assert_eq!(none[0].to_best, Some(1.0));
        assert_eq!(none[1], Ratios::default());
        assert!(ratios(&[], &[], 4).is_empty());
    }
}
