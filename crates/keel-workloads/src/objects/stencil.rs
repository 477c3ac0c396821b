//! `stencil`: the paper's balanced stencil (§4.4, Fig. 2): a matrix cut
//! into 16 sub-matrices, each updating its rows in a potential-task loop
//! with the same work, so that stealing can only cost. 256 rows of 4 µs per
//! object per step (about 1 ms), 100 steps.

use keel_policy::{PolicyError, Spec};

use super::{units_for_us, ObjectWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// The balanced stencil's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Stencil {
    /// PUs it is sized for.
    pub pus: usize,
    /// Sub-matrices (objects).
    pub objects: usize,
    /// Rows per sub-matrix (the potential-task loop).
    pub rows: usize,
    /// Work per row, µs.
    pub row_us: f64,
    /// Steps of a run.
    pub steps: usize,
    /// Multiplies every cost.
    pub scale: f64,
}

impl Default for Stencil {
    fn default() -> Self {
        Stencil {
            pus: 2,
            objects: 16,
            rows: 256,
            row_us: 4.0,
            steps: 100,
            scale: 1.0,
        }
    }
}

impl Stencil {
    /// Builds from `stencil[:pus=P,objects=N,rows=R,row-us=U,steps=S,scale=X]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["pus", "objects", "rows", "row-us", "steps", "scale"])?;
        let d = Stencil::default();
        Ok(Stencil {
            pus: count(spec, "pus", d.pus, 1, 4096)?,
            objects: count(spec, "objects", d.objects, 1, 1 << 20)?,
            rows: count(spec, "rows", d.rows, 1, 1 << 20)?,
            row_us: number(spec, "row-us", d.row_us, (0.0, false), 1e6)?,
            steps: count(spec, "steps", d.steps, 1, 1_000_000)?,
            scale: number(spec, "scale", d.scale, (0.0, true), 100.0)?,
        })
    }

    /// Builds from a spec string.
    pub fn parse(spec: &str) -> Result<Self, WorkloadError> {
        Self::from_spec(&Spec::parse(spec).map_err(PolicyError::from)?)
    }
}

impl ObjectWorkload for Stencil {
    fn spec(&self) -> String {
        format!(
            "stencil:pus={},objects={},rows={},row-us={},steps={},scale={}",
            self.pus, self.objects, self.rows, self.row_us, self.steps, self.scale
        )
    }
    fn objects(&self) -> usize {
        self.objects
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
        0
    }
    fn cells(&self, _: usize) -> usize {
        self.rows
    }
    fn cell_units(&self, _: usize, _: usize, _: usize) -> u64 {
        units_for_us(self.row_us * self.scale)
    }
    fn neighbours(&self, object: usize) -> Vec<usize> {
        let mut out = Vec::new();
        if object > 0 {
            out.push(object - 1);
        }
        if object + 1 < self.objects {
            out.push(object + 1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_are_balanced() {
        let s = Stencil::default();
        assert_eq!(
            s.spec(),
            "stencil:pus=2,objects=16,rows=256,row-us=4,steps=100,scale=1"
        );
        assert_eq!(s.units(3, 9), 256 * 1200);
        assert!((0..16).all(|o| s.units(o, 0) == s.units(0, 50)));
        assert_eq!(Stencil::parse(&s.spec()).unwrap(), s);
        assert_eq!(s.neighbours(0), vec![1]);
    }
}
