//! The iteration profile `(μ, σ)` a context measures for the schedules that
//! read one (FSC, FAC, TAP, BOLD), estimated from chunk times exactly as the
//! thread runtime does (`keel::loops::claim::ProfileSums`): if iterations
//! are independent with mean μ and deviation σ, a chunk of `s` iterations
//! takes `sμ` on average with variance `sσ²`, so `μ̂ = ΣT/Σs` and
//! `σ̂² = (1/C)·Σ(T − sμ̂)²/s`. This is context code (what is measured), not
//! a schedule's formula, so the simulator keeps its own copy.

/// Per-worker sums over its chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProfileSums {
    chunks: f64,
    iterations: f64,
    seconds: f64,
    squares_over_size: f64,
}

impl ProfileSums {
    /// Adds one chunk of `size` iterations that took `seconds`.
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
    pub fn merge(&mut self, other: &ProfileSums) {
        self.chunks += other.chunks;
        self.iterations += other.iterations;
        self.seconds += other.seconds;
        self.squares_over_size += other.squares_over_size;
    }

    /// `(μ̂, σ̂)` in seconds per iteration; `None` without chunks.
    pub fn profile(&self) -> Option<(f64, f64)> {
        if self.chunks < 1.0 || self.iterations <= 0.0 {
            return None;
        }
        let mean = self.seconds / self.iterations;
        let spread =
            self.squares_over_size - 2.0 * mean * self.seconds + mean * mean * self.iterations;
        Some((mean, (spread / self.chunks).max(0.0).sqrt()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_runtime_estimator() {
        let mut s = ProfileSums::default();
        s.add(4, 8.0 - 4.0);
        s.add(4, 8.0 + 4.0);
        s.add(0, 1.0);
        let (mean, sd) = s.profile().unwrap();
        assert_eq!(mean, 2.0);
        assert!((sd - 2.0).abs() < 1e-12);
        assert_eq!(ProfileSums::default().profile(), None);
    }
}
