//! `multi-loop`: three loops per step, each wanting a different schedule,
//! so that no one schedule for the whole program is best and a selection
//! per loop is needed:
//!
//! 1. `mandel`: Mandelbrot rows over the upper half-plane
//!    (`mandelbrot-edge`'s view, [`crate::loops::mandelbrot::EDGE_VIEW`],
//!    at `width × height` pixels): the heavy rows are contiguous at the start
//!    of the range, so `static`'s first thread gets most of the work and a
//!    schedule that keeps handing out chunks to the end balances it;
//! 2. `tasks`: `tasks` independent tasks whose costs are Pareto draws
//!    `⌊task-min · (1 − U)^(−1/alpha)⌋` spin units (ChaCha8 from `seed`, one
//!    draw per task), heavy ones scattered at random: a dynamic schedule
//!    with small chunks wins;
//! 3. `triad`: a balanced STREAM triad over `elements` doubles, one
//!    iteration per element (as [`stream`](super::Stream) is), where `static`
//!    wins and one-at-a-time claims cost more than the element.
//!
//! `triad`'s `a` is written through relaxed `AtomicU64` stores, each element
//! by its own iteration alone (the argument of [`stream`](super::Stream)).

use std::sync::atomic::{AtomicU64, Ordering};

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::loops::mandelbrot::{Mandelbrot, EDGE_VIEW, MAX_ITER};
use crate::params::{count, number};

/// The most spin units one task may cost (a Pareto draw is capped here).
pub const MAX_TASK_UNITS: u64 = 1 << 22;

/// Three loops per step wanting different schedules.
#[derive(Debug)]
pub struct MultiLoop {
    mandel: Mandelbrot,
    task_min: u64,
    alpha: f64,
    seed: u64,
    task_units: Vec<u64>,
    elements: usize,
    steps: usize,
    a: Vec<AtomicU64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl MultiLoop {
    /// The spec name.
    pub const NAME: &'static str = "multi-loop";
    /// The Mandelbrot rows' loop.
    pub const MANDEL: &'static str = "mandel";
    /// The Pareto tasks' loop.
    pub const TASKS: &'static str = "tasks";
    /// The triad's loop.
    pub const TRIAD: &'static str = "triad";

    /// Builds from
    /// `multi-loop[:width=96,height=128,max-iter=400,tasks=1000,task-min=500,alpha=1.5,seed=11,elements=500000,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "width", "height", "max-iter", "tasks", "task-min", "alpha", "seed", "elements",
            "steps",
        ])?;
        let width = count(spec, "width", 96, 1, 1 << 12)?;
        let height = count(spec, "height", 128, 1, 1 << 12)?;
        let max_iter = count(spec, "max-iter", 400, 1, MAX_ITER)? as u32;
        let tasks = count(spec, "tasks", 1000, 1, 1 << 20)?;
        let task_min = count(spec, "task-min", 500, 1, MAX_TASK_UNITS as usize)? as u64;
        let alpha = number(spec, "alpha", 1.5, (0.0, true), 100.0)?;
        let seed = count(spec, "seed", 11, 0, usize::MAX)? as u64;
        let elements = count(spec, "elements", 500_000, 1, 1 << 28)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let task_units = (0..tasks)
            .map(|_| {
                let u: f64 = rng.gen();
                // 1 − U is in (0, 1]: the power is finite and ≥ 1.
                let units = (task_min as f64 * (1.0 - u).powf(-1.0 / alpha)).floor();
                (units as u64).clamp(task_min, MAX_TASK_UNITS)
            })
            .collect();
        Ok(MultiLoop {
            mandel: Mandelbrot::new(
                width,
                height,
                max_iter,
                EDGE_VIEW.x,
                EDGE_VIEW.y,
                EDGE_VIEW.axis,
            ),
            task_min,
            alpha,
            seed,
            task_units,
            elements,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            a: (0..elements).map(|_| AtomicU64::new(0)).collect(),
            b: (0..elements).map(|i| (i % 7) as f64).collect(),
            c: (0..elements).map(|i| (i % 5) as f64).collect(),
        })
    }

    /// The Mandelbrot rows (their exact work per row, and the body).
    pub fn mandel(&self) -> &Mandelbrot {
        &self.mandel
    }

    /// Spin units of every task.
    pub fn task_units(&self) -> &[u64] {
        &self.task_units
    }
}

impl SteppedWorkload for MultiLoop {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:width={},height={},max-iter={},tasks={},task-min={},alpha={},seed={},elements={},steps={}",
            Self::NAME,
            self.mandel.width,
            self.mandel.height,
            self.mandel.max_iter,
            self.task_units.len(),
            self.task_min,
            self.alpha,
            self.seed,
            self.elements,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![
            LoopCall {
                name: Self::MANDEL,
                iterations: self.mandel.height,
            },
            LoopCall {
                name: Self::TASKS,
                iterations: self.task_units.len(),
            },
            LoopCall {
                name: Self::TRIAD,
                iterations: self.elements,
            },
        ]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps);
        match call {
            0 => self.mandel.line(i) as f64,
            1 => spin(self.task_units[i], i as u64),
            2 => {
                let v = self.b[i] + (3.0 + step as f64) * self.c[i];
                self.a[i].store(v.to_bits(), Ordering::Relaxed);
                v
            }
            _ => panic!("call {call} of 3"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::LoopWorkload;

    #[test]
    fn golden_defaults_and_the_three_loops() {
        let w = MultiLoop::from_spec(&Spec::parse("multi-loop").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "multi-loop:width=96,height=128,max-iter=400,tasks=1000,task-min=500,alpha=1.5,seed=11,elements=500000,steps=100"
        );
        let calls = w.calls(0);
        let shape: Vec<(&str, usize)> = calls.iter().map(|c| (c.name, c.iterations)).collect();
        assert_eq!(
            shape,
            [("mandel", 128), ("tasks", 1000), ("triad", 500_000)]
        );
        assert_eq!(w.calls(99), calls);
        // mandel: the exact work, heavy rows first.
        let rows = w.mandel().work();
        let total: u64 = rows.iter().sum();
        assert_eq!(total, GOLDEN_MANDEL_TOTAL);
        let first_half: u64 = rows[..64].iter().sum();
        assert_eq!(first_half, GOLDEN_MANDEL_FIRST_HALF);
        assert_eq!(w.run(0, 0, 0), rows[0] as f64);
        // tasks: Pareto draws, heavy ones scattered.
        let units = w.task_units();
        assert_eq!(units.iter().sum::<u64>(), GOLDEN_TASK_TOTAL);
        assert_eq!(units.iter().copied().max(), Some(GOLDEN_TASK_MAX));
        assert_eq!(&units[..6], GOLDEN_FIRST_TASKS);
        assert!(units.iter().all(|&u| u >= 500));
        assert_eq!(w.run(0, 1, 3), spin(units[3], 3));
        // triad: element 499,999 has b = 499,999 mod 7 = 3, c = mod 5 = 4.
        assert_eq!(w.run(2, 2, 499_999), 3.0 + 5.0 * 4.0);
    }

    /// Escape-time updates of a step's `mandel`, 93 % of them in the
    /// first half of the rows (`static` on two threads: 1.86× the ideal).
    const GOLDEN_MANDEL_TOTAL: u64 = 1_259_950;
    const GOLDEN_MANDEL_FIRST_HALF: u64 = 1_168_838;
    const GOLDEN_TASK_TOTAL: u64 = 1_536_316;
    /// 6.6 % of the tasks' total in one task.
    const GOLDEN_TASK_MAX: u64 = 101_967;
    const GOLDEN_FIRST_TASKS: [u64; 6] = [670, 532, 699, 855, 584, 1937];
}
