//! `lb-test`: Charm++'s `lb_test` as objects
//! (`tests/charm++/load_balancing/lb_test/` in Charm++).
//! Elements on a ring or a 2-D mesh; each does `min + (max − min)·U⁴` µs
//! of serial work per step (U uniform in [0, 1), ChaCha8 from `seed`), in
//! [10 µs, 3 ms] by default; with lb_test's dynamic imbalance the loads are
//! re-drawn half-way between balancing steps (at steps `period/2 + k·period`),
//! and balancing runs every 40 steps.

use keel_policy::{PolicyError, Spec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::lassen::grid_neighbours;
use super::{units_for_us, ObjectWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// How elements talk to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Element i talks to i ± 1 (mod n).
    Ring,
    /// A ⌈√n⌉-wide 2-D mesh, 4 neighbours.
    Mesh,
}

/// lb_test's elements.
#[derive(Clone, Debug, PartialEq)]
pub struct LbTestObjects {
    /// The communication pattern.
    pub topology: Topology,
    /// Elements.
    pub elements: usize,
    /// PUs it is sized for.
    pub pus: usize,
    /// Steps of a run.
    pub steps: usize,
    /// Balancing period (loads re-drawn half-way between).
    pub period: usize,
    /// Lightest work, µs.
    pub min_us: f64,
    /// Heaviest work, µs.
    pub max_us: f64,
    /// Seed of the first draw; draw k uses `seed + k`.
    pub seed: u64,
    /// Multiplies every cost.
    pub scale: f64,
    loads: Vec<Vec<f64>>,
}

impl Default for LbTestObjects {
    fn default() -> Self {
        LbTestObjects::new(Topology::Ring, 64, 2, 120, 40, 10.0, 3000.0, 12345, 1.0)
    }
}

impl LbTestObjects {
    /// Builds and draws every phase's loads.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        topology: Topology,
        elements: usize,
        pus: usize,
        steps: usize,
        period: usize,
        min_us: f64,
        max_us: f64,
        seed: u64,
        scale: f64,
    ) -> Self {
        let mut w = LbTestObjects {
            topology,
            elements,
            pus,
            steps,
            period,
            min_us,
            max_us,
            seed,
            scale,
            loads: Vec::new(),
        };
        w.loads = (0..=w.phase(steps.saturating_sub(1)))
            .map(|k| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(k as u64));
                (0..elements)
                    .map(|_| {
                        let u: f64 = rng.gen();
                        min_us + (max_us - min_us) * u.powi(4)
                    })
                    .collect()
            })
            .collect();
        w
    }

    /// Builds from `lb-test[:topology=ring|mesh,elements=N,pus=P,steps=S,period=K,min-us=A,max-us=B,seed=R,scale=X]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "topology", "elements", "pus", "steps", "period", "min-us", "max-us", "seed", "scale",
        ])?;
        let d = LbTestObjects::default();
        let topology = match spec.choice("topology", &["ring", "mesh"])? {
            Some("mesh") => Topology::Mesh,
            _ => Topology::Ring,
        };
        let min_us = number(spec, "min-us", d.min_us, (0.0, false), 1e7)?;
        Ok(LbTestObjects::new(
            topology,
            count(spec, "elements", d.elements, 1, 1 << 20)?,
            count(spec, "pus", d.pus, 1, 4096)?,
            count(spec, "steps", d.steps, 1, 1_000_000)?,
            count(spec, "period", d.period, 2, 1_000_000)?,
            min_us,
            number(spec, "max-us", d.max_us.max(min_us), (min_us, false), 1e7)?,
            spec.parsed::<u64>("seed", "an unsigned 64-bit integer")?
                .unwrap_or(d.seed),
            number(spec, "scale", d.scale, (0.0, true), 100.0)?,
        ))
    }

    /// Builds from a spec string.
    pub fn parse(spec: &str) -> Result<Self, WorkloadError> {
        Self::from_spec(&Spec::parse(spec).map_err(PolicyError::from)?)
    }

    /// Which draw of the loads holds at `step`: 0 until `period/2`, then
    /// one more at each `period/2 + k·period`.
    pub fn phase(&self, step: usize) -> usize {
        let half = self.period / 2;
        if step < half {
            0
        } else {
            (step - half) / self.period + 1
        }
    }

    /// The work of `element` at `step`, µs (before `scale`).
    pub fn load_us(&self, element: usize, step: usize) -> f64 {
        self.loads[self.phase(step)][element]
    }
}

impl ObjectWorkload for LbTestObjects {
    fn spec(&self) -> String {
        format!(
            "lb-test:topology={},elements={},pus={},steps={},period={},min-us={},max-us={},seed={},scale={}",
            match self.topology {
                Topology::Ring => "ring",
                Topology::Mesh => "mesh",
            },
            self.elements,
            self.pus,
            self.steps,
            self.period,
            self.min_us,
            self.max_us,
            self.seed,
            self.scale
        )
    }
    fn objects(&self) -> usize {
        self.elements
    }
    fn pus(&self) -> usize {
        self.pus
    }
    fn steps(&self) -> usize {
        self.steps
    }
    fn period(&self) -> Option<usize> {
        Some(self.period)
    }
    fn serial_units(&self, object: usize, step: usize) -> u64 {
        units_for_us(self.load_us(object, step) * self.scale)
    }
    fn cells(&self, _: usize) -> usize {
        0
    }
    fn cell_units(&self, _: usize, _: usize, _: usize) -> u64 {
        0
    }
    fn neighbours(&self, object: usize) -> Vec<usize> {
        let n = self.elements;
        match self.topology {
            Topology::Ring if n < 2 => Vec::new(),
            Topology::Ring if n == 2 => vec![1 - object],
            Topology::Ring => vec![(object + n - 1) % n, (object + 1) % n],
            Topology::Mesh => {
                let width = (n as f64).sqrt().ceil() as usize;
                grid_neighbours(object, width, n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults() {
        let w = LbTestObjects::default();
        assert_eq!(
            w.spec(),
            "lb-test:topology=ring,elements=64,pus=2,steps=120,period=40,min-us=10,max-us=3000,seed=12345,scale=1"
        );
        assert_eq!(w.period(), Some(40));
        // Re-drawn half-way between balancing steps 40, 80.
        let phases: Vec<usize> = [0, 19, 20, 59, 60, 100, 119]
            .iter()
            .map(|&s| w.phase(s))
            .collect();
        assert_eq!(phases, [0, 0, 1, 1, 2, 3, 3]);
        assert_ne!(w.load_us(0, 0), w.load_us(0, 20));
        for s in [0, 20, 60, 100] {
            for e in 0..64 {
                let l = w.load_us(e, s);
                assert!((10.0..=3000.0).contains(&l));
            }
        }
        let mean: f64 = (0..64).map(|e| w.load_us(e, 0)).sum::<f64>() / 64.0;
        assert!((300.0..1000.0).contains(&mean), "U⁴ skew: mean {mean}");
        assert_eq!(w.neighbours(0), vec![63, 1]);
        let mesh = LbTestObjects::parse("lb-test:topology=mesh").unwrap();
        assert_eq!(mesh.neighbours(9), vec![8, 10, 1, 17]);
        assert_eq!(LbTestObjects::parse(&mesh.spec()).unwrap(), mesh);
        assert_eq!(w.serial_units(3, 7), units_for_us(w.load_us(3, 7)));
        assert_eq!(w.total_units(), GOLDEN_TOTAL);
    }

    const GOLDEN_TOTAL: u64 = 1_225_199_700;
}
