//! A deterministic fake "loop" for selection tests: each portfolio index has
//! a base time and LIB per phase of the run; measured times are the base
//! times times seeded log-normal noise, with optional rare spikes (a
//! preempted thread on a shared machine).

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LoopSelector, Measurement, Select, PORTFOLIO_LEN};

/// Base times and LIBs from instance `start` on.
#[derive(Clone, Debug)]
pub struct Stage {
    pub start: u64,
    pub times: [f64; PORTFOLIO_LEN],
    pub libs: [f64; PORTFOLIO_LEN],
}

#[derive(Clone, Debug)]
pub struct FakeLoop {
    pub stages: Vec<Stage>,
    /// Relative standard deviation of the log-normal noise.
    pub noise: f64,
    /// Probability and factor of a spike.
    pub spike: (f64, f64),
    /// Multiplies every base time by `drift^instance`.
    pub drift: f64,
    rng: ChaCha8Rng,
}

impl FakeLoop {
    pub fn new(
        times: [f64; PORTFOLIO_LEN],
        libs: [f64; PORTFOLIO_LEN],
        noise: f64,
        seed: u64,
    ) -> Self {
        FakeLoop {
            stages: vec![Stage {
                start: 0,
                times,
                libs,
            }],
            noise,
            spike: (0.0, 1.0),
            drift: 1.0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn then(
        mut self,
        start: u64,
        times: [f64; PORTFOLIO_LEN],
        libs: [f64; PORTFOLIO_LEN],
    ) -> Self {
        self.stages.push(Stage { start, times, libs });
        self
    }

    pub fn stage(&self, instance: u64) -> &Stage {
        self.stages
            .iter()
            .rev()
            .find(|s| s.start <= instance)
            .expect("stage 0 starts at 0")
    }

    /// The noise-free time of `index` at `instance`.
    pub fn base(&self, instance: u64, index: usize) -> f64 {
        self.stage(instance).times[index] * self.drift.powf(instance as f64)
    }

    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Runs `index` at `instance`: `(T_par, LIB)`.
    pub fn run(&mut self, instance: u64, index: usize) -> (f64, f64) {
        let base = self.base(instance, index);
        let lib = self.stage(instance).libs[index];
        let z = self.normal();
        let spike = if self.uniform() < self.spike.0 {
            self.spike.1
        } else {
            1.0
        };
        (base * (self.noise * z).exp() * spike, lib)
    }
}

/// What a driven run did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub choices: Vec<usize>,
    /// Sum of measured times.
    pub total: f64,
    /// Sum over instances of `base(chosen) − min base`: the expected loss
    /// against an oracle that knows the base times.
    pub regret: f64,
}

/// Drives a state machine over `instances` instances of `fake`.
pub fn drive(sel: &mut dyn Select, fake: &mut FakeLoop, instances: u64) -> Outcome {
    let mut out = Outcome::default();
    for k in 0..instances {
        let (index, _) = sel.next();
        let (t, lib) = fake.run(k, index);
        sel.observe(&Measurement::new(t, lib));
        record(&mut out, fake, k, index, t);
    }
    out
}

/// Drives a [`LoopSelector`] (expert chunk computed for `N = 10⁶`, `P = 2`).
pub fn drive_selector(sel: &mut LoopSelector, fake: &mut FakeLoop, instances: u64) -> Outcome {
    let mut out = Outcome::default();
    for k in 0..instances {
        let choice = sel.choose(1_000_000, 2);
        let (t, lib) = fake.run(k, choice.index);
        sel.observe(&Measurement::new(t, lib)).unwrap();
        record(&mut out, fake, k, choice.index, t);
    }
    out
}

fn record(out: &mut Outcome, fake: &FakeLoop, k: u64, index: usize, t: f64) {
    let best = (0..PORTFOLIO_LEN)
        .map(|i| fake.base(k, i))
        .fold(f64::INFINITY, f64::min);
    out.choices.push(index);
    out.total += t;
    out.regret += fake.base(k, index) - best;
}

/// Total base time of the best fixed schedule (ManualBest on base times).
pub fn manual_best(fake: &FakeLoop, instances: u64) -> (usize, f64) {
    (0..PORTFOLIO_LEN)
        .map(|i| (i, (0..instances).map(|k| fake.base(k, i)).sum::<f64>()))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("non-empty portfolio")
}
