//! `mandelbrot`: the escape-time Mandelbrot loop, one of Auto4OMP's five
//! applications (Auto4OMP paper §4,
//! reference 17), as a loop over the image's pixel columns (or rows).
//!
//! The image is `width × height` pixels over the rectangle
//! `[x-min, x-max] × [y-min, y-max]` of the complex plane; pixel `(col, row)`
//! samples its centre, `c = (x-min + (col + ½)·dx) + i·(y-min + (row + ½)·dy)`
//! with `dx = (x-max − x-min)/width`, `dy = (y-max − y-min)/height`. Its
//! escape time is the number of updates `z ← z² + c`, from `z = 0`, made
//! before `|z|² > 4` is first seen, at most `max-iter`: a point outside the
//! radius-2 disc costs 1, a point of the set costs `max-iter`.
//!
//! Iteration `i` of the loop computes every pixel of column `i` (with
//! `axis=columns`, the default) or of row `i` (`axis=rows`), and its work is
//! the sum of those pixels' escape times: **exactly** the number of
//! `z ← z² + c` updates [`Mandelbrot::line`] performs. The cost model is
//! computed by running that same function once at construction (in IEEE
//! double arithmetic, which Rust never contracts into fused multiply-adds,
//! so the counts are the same on every platform).
//!
//! With the default rectangle the heavy iterations form one contiguous band:
//! - by columns, the main cardioid (real parts −0.75 … 0.25) is the heavy
//!   band, right of the middle, and the period-2 bulb a lighter one to its
//!   left; the first columns (real part near −2) are nearly free. The loop
//!   is asymmetric, so a block (`static`) schedule is imbalanced on any
//!   number of threads, 2 included;
//! - by rows, the set straddles the real axis: the heavy rows are the middle
//!   band and the loop is symmetric (a 2-thread block split is balanced; 3
//!   or more threads are not).
//!
//! The origin never escapes; a point far outside escapes at once:
//!
//! ```
//! use keel_workloads::loops::mandelbrot::Mandelbrot;
//! assert_eq!(Mandelbrot::escape_time(0.0, 0.0, 100), 100);
//! assert_eq!(Mandelbrot::escape_time(3.0, 0.0, 100), 1);
//! ```

use keel_policy::Spec;

use super::LoopWorkload;
use crate::error::WorkloadError;
use crate::params::{count, number};

/// The most pixels an image may have (a typo such as `width=1e9` is an
/// error rather than a year of computing).
pub const MAX_PIXELS: usize = 1 << 26;

/// The largest `max-iter`.
pub const MAX_ITER: usize = 1 << 24;

/// Which lines of the image the loop's iterations are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Iteration `i` is pixel column `i` (fixed real part).
    Columns,
    /// Iteration `i` is pixel row `i` (fixed imaginary part).
    Rows,
}

impl Axis {
    /// The spec value.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Columns => "columns",
            Axis::Rows => "rows",
        }
    }
}

/// A Mandelbrot image computed one column (or row) per iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Mandelbrot {
    /// Pixels per row (columns).
    pub width: usize,
    /// Pixels per column (rows).
    pub height: usize,
    /// The loop runs over columns or rows.
    pub axis: Axis,
    /// The escape-time cap.
    pub max_iter: u32,
    /// Left edge of the rectangle (real part).
    pub x_min: f64,
    /// Right edge (real part).
    pub x_max: f64,
    /// Bottom edge (imaginary part), the first row.
    pub y_min: f64,
    /// Top edge (imaginary part).
    pub y_max: f64,
    work: Vec<u64>,
}

impl Default for Mandelbrot {
    /// 256 × 256 pixels over `[-2, 0.5] × [-1.25, 1.25]`, `max-iter` 1000,
    /// by columns.
    fn default() -> Self {
        let v = DEFAULT_VIEW;
        Mandelbrot::new(v.width, v.height, v.max_iter, v.x, v.y, v.axis)
    }
}

/// An image's parameters, the defaults of a spec.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Pixels per row.
    pub width: usize,
    /// Pixels per column.
    pub height: usize,
    /// The escape-time cap.
    pub max_iter: u32,
    /// Real range `(x-min, x-max)`.
    pub x: (f64, f64),
    /// Imaginary range `(y-min, y-max)`.
    pub y: (f64, f64),
    /// Columns or rows.
    pub axis: Axis,
}

/// `mandelbrot`'s defaults: the whole set by columns, the cardioid a heavy
/// band right of the middle.
pub const DEFAULT_VIEW: View = View {
    width: 256,
    height: 256,
    max_iter: 1000,
    x: (-2.0, 0.5),
    y: (-1.25, 1.25),
    axis: Axis::Columns,
};

/// `mandelbrot-edge`'s defaults: the upper half of the set by rows, so the
/// real axis, where the set is widest, is row 0 and the costly iterations
/// are contiguous at the start of the range (the first half of the 1,000
/// rows holds 93 % of the work, the last 30 % under 1 %). About 16 million
/// escape-time updates (some 70 ms sequentially on a 2.5 GHz Xeon core), so
/// an instance on 2 threads takes tens of milliseconds.
pub const EDGE_VIEW: View = View {
    width: 128,
    height: 1000,
    max_iter: 500,
    x: (-2.0, 0.5),
    y: (0.0, 1.25),
    axis: Axis::Rows,
};

impl Mandelbrot {
    /// The workload's name.
    pub const NAME: &'static str = "mandelbrot";

    /// The name of the same loop over [`EDGE_VIEW`].
    pub const EDGE_NAME: &'static str = "mandelbrot-edge";

    /// An image of `width × height` pixels over `x_range × y_range`, looped
    /// over by `axis`, with its cost model computed (one sequential pass
    /// over the image).
    ///
    /// # Panics
    /// If the image is empty or larger than [`MAX_PIXELS`], `max_iter` is 0,
    /// or a range is empty or not finite; [`Mandelbrot::from_spec`] reports
    /// these as errors instead.
    pub fn new(
        width: usize,
        height: usize,
        max_iter: u32,
        x_range: (f64, f64),
        y_range: (f64, f64),
        axis: Axis,
    ) -> Self {
        assert!(width >= 1 && height >= 1 && width.saturating_mul(height) <= MAX_PIXELS);
        assert!(max_iter >= 1);
        for (lo, hi) in [x_range, y_range] {
            assert!(lo.is_finite() && hi.is_finite() && lo < hi);
        }
        let mut m = Mandelbrot {
            width,
            height,
            axis,
            max_iter,
            x_min: x_range.0,
            x_max: x_range.1,
            y_min: y_range.0,
            y_max: y_range.1,
            work: Vec::new(),
        };
        let lines = match axis {
            Axis::Columns => width,
            Axis::Rows => height,
        };
        m.work = (0..lines).map(|i| m.line(i)).collect();
        m
    }

    /// Builds from
    /// `mandelbrot[:width=W,height=H,max-iter=M,x-min=..,x-max=..,y-min=..,y-max=..,axis=columns|rows]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        Self::from_spec_with(spec, &DEFAULT_VIEW)
    }

    /// Builds from a spec whose missing parameters take `defaults` (the
    /// `mandelbrot` and `mandelbrot-edge` workloads differ only there).
    pub fn from_spec_with(spec: &Spec, defaults: &View) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "width", "height", "max-iter", "x-min", "x-max", "y-min", "y-max", "axis",
        ])?;
        let axis = match spec.choice("axis", &["columns", "rows"])? {
            Some("rows") => Axis::Rows,
            Some(_) => Axis::Columns,
            None => defaults.axis,
        };
        let width = count(spec, "width", defaults.width, 1, MAX_PIXELS)?;
        let height = count(spec, "height", defaults.height, 1, MAX_PIXELS / width)?;
        let max_iter = count(spec, "max-iter", defaults.max_iter as usize, 1, MAX_ITER)? as u32;
        let x_min = number(spec, "x-min", defaults.x.0, (f64::MIN, false), f64::MAX)?;
        let x_max = number(spec, "x-max", defaults.x.1, (x_min, true), f64::MAX)?;
        let y_min = number(spec, "y-min", defaults.y.0, (f64::MIN, false), f64::MAX)?;
        let y_max = number(spec, "y-max", defaults.y.1, (y_min, true), f64::MAX)?;
        Ok(Mandelbrot::new(
            width,
            height,
            max_iter,
            (x_min, x_max),
            (y_min, y_max),
            axis,
        ))
    }

    /// The escape time of the point `c = cx + i·cy`: updates made before
    /// `|z|² > 4` is seen, at most `max_iter`.
    #[inline]
    pub fn escape_time(cx: f64, cy: f64, max_iter: u32) -> u32 {
        let (mut zx, mut zy) = (0.0f64, 0.0f64);
        let mut n = 0;
        while n < max_iter {
            let (x2, y2) = (zx * zx, zy * zy);
            if x2 + y2 > 4.0 {
                break;
            }
            zy = 2.0 * zx * zy + cy;
            zx = x2 - y2 + cx;
            n += 1;
        }
        n
    }

    /// Computes line `i` (column or row, as [`Mandelbrot::axis`] says) and
    /// returns the sum of its escape times: the iteration's work, and its
    /// whole computation.
    ///
    /// # Panics
    /// If `i` is not a line of the image.
    pub fn line(&self, i: usize) -> u64 {
        let dx = (self.x_max - self.x_min) / self.width as f64;
        let dy = (self.y_max - self.y_min) / self.height as f64;
        let x = |col: usize| self.x_min + (col as f64 + 0.5) * dx;
        let y = |row: usize| self.y_min + (row as f64 + 0.5) * dy;
        match self.axis {
            Axis::Columns => {
                assert!(i < self.width, "column {i} of {}", self.width);
                let cx = x(i);
                (0..self.height)
                    .map(|row| u64::from(Self::escape_time(cx, y(row), self.max_iter)))
                    .sum()
            }
            Axis::Rows => {
                assert!(i < self.height, "row {i} of {}", self.height);
                let cy = y(i);
                (0..self.width)
                    .map(|col| u64::from(Self::escape_time(x(col), cy, self.max_iter)))
                    .sum()
            }
        }
    }
}

impl LoopWorkload for Mandelbrot {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:width={},height={},max-iter={},x-min={},x-max={},y-min={},y-max={},axis={}",
            Self::NAME,
            self.width,
            self.height,
            self.max_iter,
            self.x_min,
            self.x_max,
            self.y_min,
            self.y_max,
            self.axis.name()
        )
    }

    fn unit(&self) -> &'static str {
        "escape-time iterations"
    }

    fn work(&self) -> &[u64] {
        &self.work
    }

    fn run(&self, i: usize) -> f64 {
        self.line(i) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::loop_workload;

    #[test]
    fn escape_times_of_known_points() {
        assert_eq!(Mandelbrot::escape_time(0.0, 0.0, 100), 100); // in the set
        assert_eq!(Mandelbrot::escape_time(-1.0, 0.0, 100), 100); // period 2
        assert_eq!(Mandelbrot::escape_time(3.0, 0.0, 100), 1); // |c| > 2
        assert_eq!(Mandelbrot::escape_time(1.0, 0.0, 100), 3); // 0, 1, 2, 5: |2|² = 4 is not > 4
        assert_eq!(Mandelbrot::escape_time(0.5, 0.0, 100), 5);
    }

    #[test]
    fn the_body_does_exactly_the_modelled_work() {
        for axis in ["columns", "rows"] {
            let m = loop_workload(&format!(
                "mandelbrot:width=64,height=48,max-iter=200,axis={axis}"
            ))
            .unwrap();
            assert_eq!(m.iterations(), if axis == "rows" { 48 } else { 64 });
            for i in 0..m.iterations() {
                assert_eq!(m.run(i), m.work()[i] as f64, "{axis} {i}");
            }
            // Both axes cover the same pixels.
            let other = if axis == "rows" { "columns" } else { "rows" };
            let t = loop_workload(&format!(
                "mandelbrot:width=64,height=48,max-iter=200,axis={other}"
            ))
            .unwrap();
            assert_eq!(m.total_work(), t.total_work());
        }
    }

    /// The heavy (above-mean) iterations of `w`, checked to be one band.
    fn heavy_band(w: &[u64]) -> (usize, usize) {
        let mean = w.iter().sum::<u64>() as f64 / w.len() as f64;
        let heavy: Vec<usize> = (0..w.len()).filter(|&r| w[r] as f64 > mean).collect();
        let (first, last) = (heavy[0], *heavy.last().unwrap());
        assert_eq!(heavy.len(), last - first + 1, "{heavy:?}");
        (first, last)
    }

    #[test]
    fn heavy_columns_are_contiguous_and_right_of_the_middle() {
        let m = Mandelbrot::new(128, 128, 500, (-2.0, 0.5), (-1.25, 1.25), Axis::Columns);
        let w = m.work();
        // The cardioid: real parts about -0.75 .. 0.25, columns 64 .. 115
        // (67 ..= 119 above the mean).
        let (first, last) = heavy_band(w);
        assert!(
            (60..=70).contains(&first) && (108..=122).contains(&last),
            "{first}..={last}"
        );
        // A 2-thread block split is imbalanced: the right half is heavier.
        let left: u64 = w[..64].iter().sum();
        let right: u64 = w[64..].iter().sum();
        assert!(right > 2 * left, "{left} vs {right}");
        assert!(w[0] < 200, "{}", w[0]);
    }

    #[test]
    fn heavy_rows_are_contiguous_in_the_middle_and_symmetric() {
        let m = Mandelbrot::new(128, 128, 500, (-2.0, 0.5), (-1.25, 1.25), Axis::Rows);
        let w = m.work();
        // Symmetric about the real axis (rows mirror exactly: cy → −cy).
        for row in 0..64 {
            assert_eq!(w[row], w[127 - row], "row {row}");
        }
        // The heavy rows (above the mean) form one band in the middle.
        let (first, last) = heavy_band(w);
        assert!(first > 16 && last < 111, "{first}..={last}");
        // The edge rows miss the disc of radius 2 only partly: light.
        assert!(w[0] < w[64] / 10, "{} vs {}", w[0], w[64]);
    }

    /// Golden values of the default workload: retuning it must be on purpose.
    #[test]
    fn golden_default() {
        let m = loop_workload("mandelbrot").unwrap();
        assert_eq!(
            m.spec(),
            "mandelbrot:width=256,height=256,max-iter=1000,x-min=-2,x-max=0.5,y-min=-1.25,y-max=1.25,axis=columns"
        );
        assert_eq!(m.iterations(), 256);
        let w = m.work();
        for (column, work) in GOLDEN_COLUMNS {
            assert_eq!(w[column], work, "column {column}");
        }
        assert_eq!(m.total_work(), GOLDEN_TOTAL);
    }

    const GOLDEN_COLUMNS: [(usize, u64); 6] = [
        (0, 326),
        (64, 3_612),
        (128, 20_672),
        (160, 117_514),
        (200, 153_294),
        (255, 1_008),
    ];
    const GOLDEN_TOTAL: u64 = 16_216_664;

    /// Golden values of `mandelbrot-edge`: its costly rows are contiguous at
    /// the start of the range; retuning it must be on purpose.
    #[test]
    fn golden_edge() {
        let m = loop_workload("mandelbrot-edge").unwrap();
        assert_eq!(
            m.spec(),
            "mandelbrot:width=128,height=1000,max-iter=500,x-min=-2,x-max=0.5,y-min=0,y-max=1.25,axis=rows"
        );
        assert_eq!(m.iterations(), 1000);
        let w = m.work();
        for (row, work) in GOLDEN_EDGE_ROWS {
            assert_eq!(w[row], work, "row {row}");
        }
        assert_eq!(m.total_work(), GOLDEN_EDGE_TOTAL);
        // The costly iterations come first: the first half of the rows
        // holds over 90 % of the work (a 2-thread block split is about 13:1),
        // the last 30 % under 1 %.
        let total = m.total_work() as f64;
        let head: u64 = w[..500].iter().sum();
        let tail: u64 = w[700..].iter().sum();
        assert!(head as f64 > 0.9 * total, "{head} of {total}");
        assert!((tail as f64) < 0.01 * total, "{tail} of {total}");
        // Parameters still override the edge view's defaults.
        let small = loop_workload("mandelbrot-edge:height=10").unwrap();
        assert_eq!(small.iterations(), 10);
    }

    const GOLDEN_EDGE_ROWS: [(usize, u64); 5] = [
        (0, GOLDEN_EDGE_0),
        (100, GOLDEN_EDGE_100),
        (400, GOLDEN_EDGE_400),
        (700, GOLDEN_EDGE_700),
        (999, GOLDEN_EDGE_999),
    ];
    const GOLDEN_EDGE_0: u64 = 43_771;
    const GOLDEN_EDGE_100: u64 = 40_379;
    const GOLDEN_EDGE_400: u64 = 22_508;
    const GOLDEN_EDGE_700: u64 = 2_011;
    const GOLDEN_EDGE_999: u64 = 285;
    const GOLDEN_EDGE_TOTAL: u64 = 16_243_701;
}
