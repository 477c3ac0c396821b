//! `persistent`, `drift` and `phase`: a hot band of domains over the same
//! grid as [`lassen`](super::LassenLike) (16 domains per PU, block-mapped
//! at start, row-major ids), moving in ways that decide whether balancing
//! pays. Each domain costs a base 50 µs per step, done serially, plus
//! 2 ms while it is in the band, spread evenly over the 64 cells its
//! potential-task loop visits. The band is a quarter of the grid's rows
//! (at least one):
//!
//! | name | where the band is at step `s` of `S` | balancing |
//! |---|---|---|
//! | `persistent` | the first rows, all run | pays once, then never again |
//! | `drift` | slides down half the grid over the run (its first row at `⌊H/2 · s/S⌋`) | pays now and then |
//! | `phase` | the first rows for the first half, the last rows after | pays once per phase |
//!
//! `lassen`'s front, crossing the whole grid in the run, is the fast case.

use keel_policy::{PolicyError, Spec};

use super::lassen::grid_neighbours;
use super::{units_for_us, ObjectWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// How the band moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Motion {
    /// It stays on the first rows.
    Persistent,
    /// It slides down half the grid over the run.
    Drift,
    /// It jumps from the first rows to the last half-way through the run.
    Phase,
}

impl Motion {
    /// The workload's name.
    pub fn name(self) -> &'static str {
        match self {
            Motion::Persistent => "persistent",
            Motion::Drift => "drift",
            Motion::Phase => "phase",
        }
    }
}

/// A hot band of domains: the parameters of `persistent`, `drift` and
/// `phase`.
#[derive(Clone, Debug, PartialEq)]
pub struct HotBand {
    /// How the band moves.
    pub motion: Motion,
    /// PUs it is sized for.
    pub pus: usize,
    /// Domains along x (default 8).
    pub width: usize,
    /// Domains along y (default 2·PUs, so 16 domains per PU).
    pub height: usize,
    /// Steps of a run.
    pub steps: usize,
    /// Serial work of every domain in every step, µs.
    pub base_us: f64,
    /// Extra work of a domain in the band, µs, spread over its cells.
    pub hot_us: f64,
    /// Cells of a domain's potential-task loop.
    pub cells: usize,
    /// Multiplies every cost (quick runs use less than 1).
    pub scale: f64,
}

impl HotBand {
    /// The pinned defaults of `motion` for `pus` PUs.
    pub fn for_pus(motion: Motion, pus: usize) -> Self {
        HotBand {
            motion,
            pus,
            width: 8,
            height: 2 * pus,
            steps: 300,
            base_us: 50.0,
            hot_us: 2000.0,
            cells: 64,
            scale: 1.0,
        }
    }

    /// Builds from `persistent|drift|phase[:pus=P,width=W,height=H,steps=S,base-us=B,hot-us=F,cells=C,scale=X]`.
    pub fn from_spec(motion: Motion, spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "pus", "width", "height", "steps", "base-us", "hot-us", "cells", "scale",
        ])?;
        let pus = count(spec, "pus", 2, 1, 4096)?;
        let d = HotBand::for_pus(motion, pus);
        Ok(HotBand {
            motion,
            pus,
            width: count(spec, "width", d.width, 1, 4096)?,
            height: count(spec, "height", d.height, 1, 4096)?,
            steps: count(spec, "steps", d.steps, 1, 1_000_000)?,
            base_us: number(spec, "base-us", d.base_us, (0.0, false), 1e6)?,
            hot_us: number(spec, "hot-us", d.hot_us, (0.0, false), 1e7)?,
            cells: count(spec, "cells", d.cells, 1, 1 << 20)?,
            scale: number(spec, "scale", d.scale, (0.0, true), 100.0)?,
        })
    }

    /// Builds from a spec string whose name is one of the three motions.
    pub fn parse(spec: &str) -> Result<Self, WorkloadError> {
        let spec = Spec::parse(spec).map_err(PolicyError::from)?;
        let motion = match spec.name.as_str() {
            "persistent" => Motion::Persistent,
            "drift" => Motion::Drift,
            "phase" => Motion::Phase,
            other => {
                return Err(WorkloadError::UnknownWorkload {
                    name: other.to_string(),
                    valid: ["persistent", "drift", "phase"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                })
            }
        };
        Self::from_spec(motion, &spec)
    }

    /// Rows in the band: a quarter of the grid's, at least one.
    pub fn band_rows(&self) -> usize {
        (self.height / 4).max(1)
    }

    /// The band's first row at `step`.
    pub fn band_start(&self, step: usize) -> usize {
        let last = self.height - self.band_rows();
        match self.motion {
            Motion::Persistent => 0,
            Motion::Drift => ((self.height / 2) * step / self.steps).min(last),
            Motion::Phase if 2 * step < self.steps => 0,
            Motion::Phase => last,
        }
    }

    /// Whether `domain` is in the band at `step`.
    pub fn hot(&self, domain: usize, step: usize) -> bool {
        let row = domain / self.width;
        let start = self.band_start(step);
        (start..start + self.band_rows()).contains(&row)
    }
}

impl ObjectWorkload for HotBand {
    fn spec(&self) -> String {
        format!(
            "{}:pus={},width={},height={},steps={},base-us={},hot-us={},cells={},scale={}",
            self.motion.name(),
            self.pus,
            self.width,
            self.height,
            self.steps,
            self.base_us,
            self.hot_us,
            self.cells,
            self.scale
        )
    }
    fn objects(&self) -> usize {
        self.width * self.height
    }
    fn pus(&self) -> usize {
        self.pus
    }
    fn steps(&self) -> usize {
        self.steps
    }
    fn period(&self) -> Option<usize> {
        None
    }
    fn serial_units(&self, _: usize, _: usize) -> u64 {
        units_for_us(self.base_us * self.scale)
    }
    fn cells(&self, _: usize) -> usize {
        self.cells
    }
    fn cell_units(&self, object: usize, step: usize, _: usize) -> u64 {
        if self.hot(object, step) {
            units_for_us(self.hot_us * self.scale / self.cells as f64)
        } else {
            0
        }
    }
    fn neighbours(&self, object: usize) -> Vec<usize> {
        grid_neighbours(object, self.width, self.objects())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults() {
        let p = HotBand::for_pus(Motion::Persistent, 2);
        assert_eq!(
            p.spec(),
            "persistent:pus=2,width=8,height=4,steps=300,base-us=50,hot-us=2000,cells=64,scale=1"
        );
        assert_eq!(p.objects(), 32);
        assert_eq!(p.band_rows(), 1);
        assert_eq!(p.serial_units(0, 0), 15_000);
        assert_eq!(p.cell_units(0, 0, 3), 9_375);
        assert_eq!(p.cell_units(8, 0, 3), 0);
        // The band stays on row 0, all of it on PU 0 under block mapping.
        assert!((0..300).all(|s| (0..8).all(|d| p.hot(d, s)) && !p.hot(8, s)));
        assert_eq!(p.total_units(), 300 * (32 * 15_000 + 8 * 64 * 9_375));

        let d = HotBand::for_pus(Motion::Drift, 4);
        assert_eq!((d.height, d.band_rows()), (8, 2));
        let starts: Vec<usize> = [0, 74, 75, 150, 225, 299]
            .iter()
            .map(|&s| d.band_start(s))
            .collect();
        assert_eq!(starts, [0, 0, 1, 2, 3, 3]);

        let h = HotBand::for_pus(Motion::Phase, 2);
        assert_eq!((h.band_start(149), h.band_start(150)), (0, 3));
        assert!(h.hot(0, 0) && h.hot(31, 150) && !h.hot(0, 150));

        for m in [Motion::Persistent, Motion::Drift, Motion::Phase] {
            let w = HotBand::for_pus(m, 3);
            assert_eq!(HotBand::parse(&w.spec()).unwrap(), w);
        }
        assert!(HotBand::parse("drift:scale=0").is_err());
        assert!(HotBand::parse("drift:front-us=3").is_err());
        assert!(HotBand::parse("lassen").is_err());
    }
}
