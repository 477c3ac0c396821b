//! Measured inputs of the loop schedules, read through the context handler
//! once per loop instance (ARTful: no side doors), validated, and given
//! neutral fallbacks when absent.
//!
//! | concept | shape | fallback when absent |
//! |---|---|---|
//! | [`Concept::IterationProfile`] | `[μ, σ]` s/iteration | none: the schedule runs as `mfac2` |
//! | [`Concept::SchedulingOverhead`] | `[h]` seconds | [`DEFAULT_OVERHEAD`] |
//! | [`Concept::ThreadWeights`] | one per thread | every weight 1 |
//! | [`Concept::ThreadHistory`] | `[ΣsW_i, ΣsT_i]` per thread | thread weights, else 1 |
//!
//! Why `mfac2` for a missing profile rather than LB4OMP's `KMP_MU`/`KMP_SIGMA`
//! defaults (1600 µs / 30 µs): LB4OMP parses those but never uses them (the
//! profile file is read instead), and their ratio σ/μ ≈ 0.02 is arbitrary —
//! fed to FAC it gives a first batch of nearly `N/P` per thread, a static
//! schedule in disguise. mFAC2 is the factoring rule that needs no profile
//! (FAC with `x = 2`), the one Auto4OMP keeps in its portfolio for exactly
//! that reason (paper §3.2, criterion C1). A mean of 0 (iterations faster
//! than the clock) counts as absent too: every profile formula divides by μ.

use crate::concept::Concept;
use crate::context::ContextHandler;
use crate::error::PolicyError;

use super::LoopShape;

/// Scheduling overhead `h` assumed when the context measures none: 1 µs.
/// LB4OMP's `KMP_OVERHEAD` default is 1000 µs, two to three orders of
/// magnitude above one dispatch measured here (EPCC schedbench-style: about
/// 6–22 ns per chunk, plus the runtime's bookkeeping); 1 µs is a
/// conservative upper estimate of one chunk's cost including timing.
pub const DEFAULT_OVERHEAD: f64 = 1e-6;

/// A usable iteration profile: mean `μ > 0` and standard deviation `σ >= 0`,
/// in seconds per iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Mean seconds per iteration, `> 0`.
    pub mean: f64,
    /// Standard deviation of seconds per iteration, `>= 0`.
    pub sd: f64,
}

/// What a context accumulates to measure the [`Profile`] that FSC, FAC, TAP
/// and BOLD read: per worker, the count `C`, `Σs`, `ΣT` and `ΣT²/s` over its
/// chunks of `s` iterations that took `T` seconds. If iterations were
/// independent with mean μ and deviation σ, a chunk's time would have mean
/// `sμ` and variance `sσ²`, so `μ̂ = ΣT / Σs` and
/// `σ̂² = (1/C)·Σ (T − sμ̂)²/s` estimate the profile without timing single
/// iterations (LB4OMP's profiling run does, at two clock reads per
/// iteration). Neighbouring iterations that are alike make σ̂ larger, which
/// errs towards smaller chunks. Pure arithmetic, so every context (threads,
/// simulator) measures the profile the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProfileSums {
    chunks: f64,
    iterations: f64,
    seconds: f64,
    squares_over_size: f64,
}

impl ProfileSums {
    /// Adds one chunk of `size` iterations that took `seconds` (an empty
    /// chunk says nothing and is skipped).
    pub fn add(&mut self, size: u64, seconds: f64) {
        if size == 0 {
            return;
        }
        self.chunks += 1.0;
        self.iterations += size as f64;
        self.seconds += seconds;
        self.squares_over_size += seconds * seconds / size as f64;
    }

    /// Adds another worker's sums.
    pub fn merge(&mut self, other: ProfileSums) {
        self.chunks += other.chunks;
        self.iterations += other.iterations;
        self.seconds += other.seconds;
        self.squares_over_size += other.squares_over_size;
    }

    /// The four sums as bits, for a context that stores them in atomics.
    pub fn to_bits(self) -> [u64; 4] {
        [
            self.chunks.to_bits(),
            self.iterations.to_bits(),
            self.seconds.to_bits(),
            self.squares_over_size.to_bits(),
        ]
    }

    /// The inverse of [`ProfileSums::to_bits`].
    pub fn from_bits(bits: [u64; 4]) -> Self {
        ProfileSums {
            chunks: f64::from_bits(bits[0]),
            iterations: f64::from_bits(bits[1]),
            seconds: f64::from_bits(bits[2]),
            squares_over_size: f64::from_bits(bits[3]),
        }
    }

    /// `(μ̂, σ̂)` in seconds per iteration; `None` without chunks.
    pub fn profile(&self) -> Option<(f64, f64)> {
        if self.chunks < 1.0 || self.iterations <= 0.0 {
            return None;
        }
        let mean = self.seconds / self.iterations;
        // Σ (T − sμ)²/s = ΣT²/s − 2μΣT + μ²Σs
        let spread =
            self.squares_over_size - 2.0 * mean * self.seconds + mean * mean * self.iterations;
        Some((mean, (spread / self.chunks).max(0.0).sqrt()))
    }
}

/// Reads one loop instance's inputs for the schedule `name`.
pub(crate) struct Inputs<'a, 'c> {
    pub name: &'static str,
    pub shape: LoopShape,
    pub ctx: &'a ContextHandler<'c>,
}

impl<'a> Inputs<'a, '_> {
    fn values(&self, concept: Concept) -> Result<Option<&'a [f64]>, PolicyError> {
        self.ctx.values(self.name, concept)
    }

    fn expect_len(&self, concept: Concept, values: &[f64], len: usize) -> Result<(), PolicyError> {
        if values.len() == len {
            return Ok(());
        }
        Err(PolicyError::LengthMismatch {
            concept,
            expected: len,
            found: values.len(),
            unit: match concept {
                Concept::ThreadHistory => "entries (2 per thread)",
                Concept::ThreadWeights => "threads",
                _ => "entries",
            },
        })
    }

    /// The profile, `None` when absent or when its mean is 0.
    pub fn profile(&self) -> Result<Option<Profile>, PolicyError> {
        let Some(v) = self.values(Concept::IterationProfile)? else {
            return Ok(None);
        };
        self.expect_len(Concept::IterationProfile, v, 2)?;
        check_each(v, "iteration profile entry")?;
        Ok((v[0] > 0.0).then_some(Profile {
            mean: v[0],
            sd: v[1],
        }))
    }

    /// `h` in seconds, [`DEFAULT_OVERHEAD`] when absent.
    pub fn overhead(&self) -> Result<f64, PolicyError> {
        let Some(v) = self.values(Concept::SchedulingOverhead)? else {
            return Ok(DEFAULT_OVERHEAD);
        };
        self.expect_len(Concept::SchedulingOverhead, v, 1)?;
        check_each(v, "scheduling overhead")?;
        Ok(v[0])
    }

    /// Static weights from [`Concept::ThreadWeights`], uniform when absent.
    pub fn weights(&self) -> Result<Weights<'a>, PolicyError> {
        let Some(v) = self.values(Concept::ThreadWeights)? else {
            return Ok(Weights::uniform());
        };
        self.expect_len(Concept::ThreadWeights, v, self.shape.threads)?;
        for (index, &value) in v.iter().enumerate() {
            if !(value.is_finite() && value > 0.0) {
                return Err(PolicyError::InvalidNumber {
                    what: "thread weight",
                    index,
                    value,
                    expected: "a finite number > 0",
                });
            }
        }
        Ok(Weights::direct(v))
    }

    /// AWF's weights from [`Concept::ThreadHistory`]; falls back to
    /// [`Inputs::weights`] when absent or when no thread has data yet.
    pub fn history_weights(&self) -> Result<Weights<'a>, PolicyError> {
        let Some(v) = self.values(Concept::ThreadHistory)? else {
            return self.weights();
        };
        self.expect_len(Concept::ThreadHistory, v, 2 * self.shape.threads)?;
        check_each(v, "thread history entry")?;
        match Weights::history(v) {
            Some(w) => Ok(w),
            None => self.weights(),
        }
    }
}

/// Every value finite and `>= 0` (times, counts).
fn check_each(values: &[f64], what: &'static str) -> Result<(), PolicyError> {
    for (index, &value) in values.iter().enumerate() {
        if !(value.is_finite() && value >= 0.0) {
            return Err(PolicyError::InvalidNumber {
                what,
                index,
                value,
                expected: "a finite number >= 0",
            });
        }
    }
    Ok(())
}

/// Per-thread weights normalised to `Σw = P`, borrowed from the context.
/// Normalising once at plan time (a scale factor, not a copy) keeps the
/// per-request cost O(1) and lets users give relative speeds in any unit;
/// the WF paper normalises the same way (LB4OMP uses `KMP_WEIGHTS` as given).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights<'a> {
    source: Source<'a>,
    /// `P / Σ raw` over the threads.
    scale: f64,
    /// Raw value of a thread without data (history: the mean rate).
    fill: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Source<'a> {
    Uniform,
    /// Raw weights, one per thread.
    Direct(&'a [f64]),
    /// `[ΣsW_i, ΣsT_i]` pairs; raw weight = ΣsW_i / ΣsT_i.
    History(&'a [f64]),
}

impl<'a> Weights<'a> {
    /// Every thread weighs 1.
    pub fn uniform() -> Self {
        Weights {
            source: Source::Uniform,
            scale: 1.0,
            fill: 1.0,
        }
    }

    /// Raw weights (finite, `> 0`), one per thread. A slice whose sum is
    /// not positive and finite is used unscaled (the context handler path
    /// rejects such weights before they get here).
    pub fn direct(raw: &'a [f64]) -> Self {
        let total: f64 = raw.iter().sum();
        let scale = if total > 0.0 && total.is_finite() {
            raw.len() as f64 / total
        } else {
            1.0
        };
        Weights {
            source: Source::Direct(raw),
            scale,
            fill: 1.0,
        }
    }

    /// AWF's weights `w_i ∝ ΣsW_i/ΣsT_i` from `[ΣsW_i, ΣsT_i]` pairs
    /// (LB4OMP `kmp_sch_awf`: `w_i = awap·ΣW_i/ΣT_i · P/trw`, which is the
    /// same ratio normalised to `Σw = P`). A thread with no iterations or no
    /// time yet says nothing about its speed: it gets the mean rate of the
    /// others (LB4OMP would divide 0 by 0). `None` when no thread has data.
    pub fn history(pairs: &'a [f64]) -> Option<Self> {
        let (mut sum, mut known) = (0.0, 0usize);
        for pair in pairs.chunks_exact(2) {
            if let Some(rate) = rate(pair) {
                sum += rate;
                known += 1;
            }
        }
        if known == 0 || sum <= 0.0 || !sum.is_finite() {
            return None;
        }
        let threads = pairs.len() / 2;
        let fill = sum / known as f64;
        let total = sum + fill * (threads - known) as f64;
        Some(Weights {
            source: Source::History(pairs),
            scale: threads as f64 / total,
            fill,
        })
    }

    /// Thread `thread`'s weight (1 for threads beyond the slice).
    #[inline]
    pub fn get(&self, thread: usize) -> f64 {
        let raw = match self.source {
            Source::Uniform => return 1.0,
            Source::Direct(raw) => raw.get(thread).copied(),
            Source::History(pairs) => pairs
                .get(2 * thread..2 * thread + 2)
                .map(|pair| rate(pair).unwrap_or(self.fill)),
        };
        raw.map_or(1.0, |r| r * self.scale)
    }
}

/// Iterations per second of one `[ΣsW, ΣsT]` pair, if it has data.
fn rate(pair: &[f64]) -> Option<f64> {
    let (work, time) = (pair[0], pair[1]);
    (work > 0.0 && time > 0.0)
        .then(|| work / time)
        .filter(|r| r.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concept::Origin;

    fn inputs<'a, 'c>(ctx: &'a ContextHandler<'c>, threads: usize) -> Inputs<'a, 'c> {
        Inputs {
            name: "test",
            shape: LoopShape::new(100, threads, None).unwrap(),
            ctx,
        }
    }

    #[test]
    fn absent_inputs_take_the_documented_fallbacks() {
        let ctx = ContextHandler::new();
        let i = inputs(&ctx, 3);
        assert_eq!(i.profile().unwrap(), None);
        assert_eq!(i.overhead().unwrap(), DEFAULT_OVERHEAD);
        assert_eq!(i.weights().unwrap(), Weights::uniform());
        assert_eq!(i.history_weights().unwrap(), Weights::uniform());
    }

    #[test]
    fn a_zero_mean_profile_counts_as_absent_and_bad_numbers_are_typed_errors() {
        let mut ctx = ContextHandler::new();
        ctx.provide_values(Concept::IterationProfile, Origin::Runtime, vec![0.0, 1.0]);
        assert_eq!(inputs(&ctx, 2).profile().unwrap(), None);

        let mut ctx = ContextHandler::new();
        ctx.provide_values(Concept::IterationProfile, Origin::Runtime, vec![1.0, -1.0]);
        assert!(matches!(
            inputs(&ctx, 2).profile(),
            Err(PolicyError::InvalidNumber { index: 1, .. })
        ));

        let mut ctx = ContextHandler::new();
        ctx.provide_values(Concept::ThreadWeights, Origin::User, vec![1.0, 2.0]);
        assert!(matches!(
            inputs(&ctx, 3).weights(),
            Err(PolicyError::LengthMismatch {
                expected: 3,
                found: 2,
                ..
            })
        ));
        let mut ctx = ContextHandler::new();
        ctx.provide_values(Concept::ThreadWeights, Origin::User, vec![1.0, 0.0]);
        assert!(inputs(&ctx, 2).weights().is_err());
    }

    #[test]
    fn direct_weights_are_normalised_to_the_thread_count() {
        let raw = [1.0, 3.0];
        let w = Weights::direct(&raw);
        assert_eq!((w.get(0), w.get(1)), (0.5, 1.5));
    }

    #[test]
    fn history_weights_follow_the_rate_and_fill_unknown_threads_with_the_mean() {
        // Thread 0: 100 it in 4 s (25 it/s); thread 1: 100 it in 1 s; thread 2: no data.
        let pairs = [100.0, 4.0, 100.0, 1.0, 0.0, 0.0];
        let w = Weights::history(&pairs).unwrap();
        // Rates 25, 100, mean 62.5; total 187.5; scale 3/187.5.
        let expect = |r: f64| r * 3.0 / 187.5;
        assert!((w.get(0) - expect(25.0)).abs() < 1e-12);
        assert!((w.get(1) - expect(100.0)).abs() < 1e-12);
        assert!((w.get(2) - expect(62.5)).abs() < 1e-12);
        assert!(((0..3).map(|t| w.get(t)).sum::<f64>() - 3.0).abs() < 1e-12);
        assert_eq!(Weights::history(&[0.0, 0.0, 0.0, 5.0]), None);
    }

    #[test]
    fn profile_sums_estimate_mean_and_deviation_from_chunk_times() {
        // Two chunks of 4 iterations taking 4 s and 12 s: μ̂ = 2, and
        // σ̂² = ((4 − 8)²/4 + (12 − 8)²/4)/2 = 4. An empty chunk is skipped.
        let mut s = ProfileSums::default();
        s.add(4, 8.0 - 4.0);
        s.add(4, 8.0 + 4.0);
        s.add(0, 1.0);
        let (mean, sd) = s.profile().unwrap();
        assert_eq!(mean, 2.0);
        assert!((sd - 2.0).abs() < 1e-12, "{sd}");
        assert_eq!(ProfileSums::from_bits(s.to_bits()), s);
        assert_eq!(ProfileSums::default().profile(), None);
    }
}
