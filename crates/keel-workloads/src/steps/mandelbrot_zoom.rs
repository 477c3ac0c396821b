//! `mandelbrot-zoom`: Auto4OMP's Mandelbrot (paper §4, whose heavy rows are
//! contiguous) as a time-stepping program: each step computes one image,
//! one loop iteration per pixel column, of a window that shrinks by `zoom`
//! per step around a point of seahorse valley. The heavy columns (those
//! crossing the set's boundary, where escape times are long) move and widen
//! from step to step, so a schedule's balance changes over the run.

use keel_policy::Spec;

use super::{LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::loops::Mandelbrot;
use crate::params::{count, number};

/// The zoom's centre, in seahorse valley.
pub const CENTRE: (f64, f64) = (-0.743_643_887_037_151, 0.131_825_904_205_33);

/// A zooming Mandelbrot.
#[derive(Clone, Debug, PartialEq)]
pub struct MandelbrotZoom {
    width: usize,
    height: usize,
    max_iter: u32,
    steps: usize,
    /// Window side at step 0.
    start: f64,
    /// Factor the window side is multiplied by per step.
    zoom: f64,
}

impl MandelbrotZoom {
    /// The spec name.
    pub const NAME: &'static str = "mandelbrot-zoom";

    /// Builds from `mandelbrot-zoom[:width=256,height=320,max-iter=500,steps=100,start=3,zoom=0.96]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["width", "height", "max-iter", "steps", "start", "zoom"])?;
        Ok(MandelbrotZoom {
            width: count(spec, "width", 256, 1, 1 << 14)?,
            height: count(spec, "height", 320, 1, 1 << 14)?,
            max_iter: count(spec, "max-iter", 500, 1, 1 << 20)? as u32,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            start: number(spec, "start", 3.0, (0.0, true), 100.0)?,
            zoom: number(spec, "zoom", 0.96, (0.0, true), 1.0)?,
        })
    }

    /// The window side at `step`.
    pub fn side(&self, step: usize) -> f64 {
        self.start * self.zoom.powi(step as i32)
    }
}

impl SteppedWorkload for MandelbrotZoom {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:width={},height={},max-iter={},steps={},start={},zoom={}",
            Self::NAME,
            self.width,
            self.height,
            self.max_iter,
            self.steps,
            self.start,
            self.zoom
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.width,
        }]
    }

    fn run(&self, step: usize, call: usize, column: usize) -> f64 {
        assert!(step < self.steps && call == 0 && column < self.width);
        let side = self.side(step);
        let (dx, dy) = (side / self.width as f64, side / self.height as f64);
        let cx = CENTRE.0 - side / 2.0 + (column as f64 + 0.5) * dx;
        let y0 = CENTRE.1 - side / 2.0;
        (0..self.height)
            .map(|row| {
                let cy = y0 + (row as f64 + 0.5) * dy;
                f64::from(Mandelbrot::escape_time(cx, cy, self.max_iter))
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the defaults: any change to them changes the bench.
    #[test]
    fn golden_defaults() {
        let w = MandelbrotZoom::from_spec(&Spec::parse("mandelbrot-zoom").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "mandelbrot-zoom:width=256,height=320,max-iter=500,steps=100,start=3,zoom=0.96"
        );
        let column_work =
            |step: usize| -> Vec<f64> { (0..256).map(|c| w.run(step, 0, c)).collect() };
        let first = column_work(0);
        let last = column_work(99);
        assert_eq!(first.iter().sum::<f64>(), 7_255_259.0);
        assert_eq!(last.iter().sum::<f64>(), 19_504_476.0);
        // The heaviest column moves as the window zooms.
        let argmax = |v: &[f64]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
        assert_ne!(argmax(&first), argmax(&last));
    }
}
