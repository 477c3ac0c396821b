//! `lassen`: a Lassen-like moving front (LLNL's Lassen proxy, whose source
//! is not public; the Charm++ + OpenMP paper's §5 application). A 2-D grid of domains, 16 per PU (8 × 4 for 2
//! PUs), block-mapped at start (row-major ids). A circular front expands
//! from corner (0, 0) and crosses the grid — reaches the far corner — in
//! 300 steps. Each domain costs a base 50 µs per step, done serially, plus
//! 2 ms while the front is within one domain of it (|distance of the
//! domain's centre from the corner − radius| ≤ 1 domain), spread evenly over
//! the 64 cells its potential-task loop visits.

use keel_policy::{PolicyError, Spec};

use super::{units_for_us, ObjectWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// The Lassen-like proxy's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LassenLike {
    /// PUs it is sized for.
    pub pus: usize,
    /// Domains along x (default 8).
    pub width: usize,
    /// Domains along y (default 2·PUs, so 16 domains per PU).
    pub height: usize,
    /// Steps for the front to cross the grid (and of a run).
    pub steps: usize,
    /// Serial work of every domain in every step, µs.
    pub base_us: f64,
    /// Extra work of a domain near the front, µs, spread over its cells.
    pub front_us: f64,
    /// Cells of a domain's potential-task loop.
    pub cells: usize,
    /// Multiplies every cost (quick runs use less than 1).
    pub scale: f64,
}

impl Default for LassenLike {
    fn default() -> Self {
        LassenLike::for_pus(2)
    }
}

impl LassenLike {
    /// The pinned defaults for `pus` PUs.
    pub fn for_pus(pus: usize) -> Self {
        LassenLike {
            pus,
            width: 8,
            height: 2 * pus,
            steps: 300,
            base_us: 50.0,
            front_us: 2000.0,
            cells: 64,
            scale: 1.0,
        }
    }

    /// Builds from `lassen[:pus=P,width=W,height=H,steps=S,base-us=B,front-us=F,cells=C,scale=X]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "pus", "width", "height", "steps", "base-us", "front-us", "cells", "scale",
        ])?;
        let pus = count(spec, "pus", 2, 1, 4096)?;
        let d = LassenLike::for_pus(pus);
        Ok(LassenLike {
            pus,
            width: count(spec, "width", d.width, 1, 4096)?,
            height: count(spec, "height", d.height, 1, 4096)?,
            steps: count(spec, "steps", d.steps, 1, 1_000_000)?,
            base_us: number(spec, "base-us", d.base_us, (0.0, false), 1e6)?,
            front_us: number(spec, "front-us", d.front_us, (0.0, false), 1e7)?,
            cells: count(spec, "cells", d.cells, 1, 1 << 20)?,
            scale: number(spec, "scale", d.scale, (0.0, true), 100.0)?,
        })
    }

    /// Builds from a spec string.
    pub fn parse(spec: &str) -> Result<Self, WorkloadError> {
        Self::from_spec(&Spec::parse(spec).map_err(PolicyError::from)?)
    }

    /// The front's radius at `step`, in domains.
    pub fn radius(&self, step: usize) -> f64 {
        let diagonal = (self.width as f64).hypot(self.height as f64);
        diagonal * step as f64 / self.steps as f64
    }

    /// Whether the front is within one domain of `domain` at `step`.
    pub fn near_front(&self, domain: usize, step: usize) -> bool {
        let (x, y) = (domain % self.width, domain / self.width);
        let centre = (x as f64 + 0.5).hypot(y as f64 + 0.5);
        (centre - self.radius(step)).abs() <= 1.0
    }

    /// Domains near the front at `step`.
    pub fn hot_domains(&self, step: usize) -> usize {
        (0..self.objects())
            .filter(|&d| self.near_front(d, step))
            .count()
    }
}

impl ObjectWorkload for LassenLike {
    fn spec(&self) -> String {
        format!(
            "lassen:pus={},width={},height={},steps={},base-us={},front-us={},cells={},scale={}",
            self.pus,
            self.width,
            self.height,
            self.steps,
            self.base_us,
            self.front_us,
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
        if self.near_front(object, step) {
            units_for_us(self.front_us * self.scale / self.cells as f64)
        } else {
            0
        }
    }
    fn neighbours(&self, object: usize) -> Vec<usize> {
        grid_neighbours(object, self.width, self.objects())
    }
}

/// 4-neighbours of `object` in a row-major grid `width` wide holding `n`.
pub(super) fn grid_neighbours(object: usize, width: usize, n: usize) -> Vec<usize> {
    let (x, y) = (object % width, object / width);
    let mut out = Vec::with_capacity(4);
    if x > 0 {
        out.push(object - 1);
    }
    if x + 1 < width && object + 1 < n {
        out.push(object + 1);
    }
    if y > 0 {
        out.push(object - width);
    }
    if object + width < n {
        out.push(object + width);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults() {
        let l = LassenLike::default();
        assert_eq!(
            l.spec(),
            "lassen:pus=2,width=8,height=4,steps=300,base-us=50,front-us=2000,cells=64,scale=1"
        );
        assert_eq!(l.objects(), 32, "16 domains per PU");
        assert_eq!(LassenLike::for_pus(4).objects(), 64);
        assert_eq!(l.serial_units(0, 0), 15_000);
        // 2 ms over 64 cells.
        assert!(l.near_front(0, 0));
        assert_eq!(l.cell_units(0, 0, 7), 9_375);
        assert_eq!(l.units(0, 0), 15_000 + 64 * 9_375);
        assert_eq!(l.cell_units(31, 0, 0), 0);
        // The front reaches the far corner at step 300.
        assert!((l.radius(300) - 80f64.sqrt()).abs() < 1e-12);
        assert!(l.near_front(31, 299) && !l.near_front(0, 299));
        let hot: Vec<usize> = [0, 50, 100, 150, 200, 250, 299]
            .iter()
            .map(|&s| l.hot_domains(s))
            .collect();
        assert_eq!(hot, [1, 4, 10, 11, 8, 9, 1]);
        assert_eq!(l.total_units(), 1419600000);
        assert_eq!(l.neighbours(9), vec![8, 10, 1, 17]);
        assert_eq!(LassenLike::parse(&l.spec()).unwrap(), l);
        assert!(LassenLike::parse("lassen:scale=0").is_err());
    }
}
