//! rayon's block of a round (a persistent pool whose workers fall asleep
//! after the block).

use std::hint::black_box;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{delay_index, latency_reps, Harness, Latency, Runtime};
use crate::delay::delay;
use crate::rayon_side::{for_each_counted, take_pieces};

impl Harness<'_> {
    pub(super) fn rayon_block(&mut self, round: usize, record: Option<usize>) {
        let pool = &self.rayon;
        pool.install(|| {
            (0..self.n).into_par_iter().for_each(|i| {
                black_box(i);
            })
        });
        self.note_threads(round, Runtime::Rayon);
        let pool = &self.rayon;
        let (n, p) = (self.n, self.p as u64);
        let config = self.config;
        take_pieces(pool);
        for (di, &d) in config.delays_us.iter().enumerate() {
            let len = self.delays[delay_index(&self.delays, d)].1;
            let reps = self.reps_for(d);
            for (si, s) in config.schedules.iter().enumerate() {
                let bounds = s.rayon_bounds(n, p);
                pool.install(|| for_each_counted(n, bounds, |_| delay(len)));
                take_pieces(pool);
                let total = pool.install(|| {
                    let t = Instant::now();
                    for _ in 0..reps {
                        for_each_counted(n, bounds, |_| delay(len));
                    }
                    t.elapsed().as_secs_f64()
                });
                let pieces = take_pieces(pool) as f64 / reps as f64;
                self.overhead[di * config.schedules.len() + si][2].push(
                    record,
                    total / reps as f64,
                    pieces,
                );
            }
        }
        let in_pool = |reps: u64| {
            pool.install(|| {
                let t = Instant::now();
                for _ in 0..reps {
                    (0..p).into_par_iter().for_each(|i| {
                        black_box(i);
                    });
                }
                t.elapsed().as_secs_f64()
            })
        };
        let outside = |reps: u64| {
            let t = Instant::now();
            for _ in 0..reps {
                pool.install(|| {
                    (0..p).into_par_iter().for_each(|i| {
                        black_box(i);
                    })
                });
            }
            t.elapsed().as_secs_f64()
        };
        let mut pilot_in = in_pool;
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::RayonInPool,
            &mut pilot_in,
        );
        let total = in_pool(reps);
        self.latency[Latency::RayonInPool as usize].push(record, total / reps as f64, 0.0);
        let mut pilot_out = outside;
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::RayonOutside,
            &mut pilot_out,
        );
        let total = outside(reps);
        self.latency[Latency::RayonOutside as usize].push(record, total / reps as f64, 0.0);
        // Let rayon's workers finish spinning and fall asleep.
        std::thread::sleep(Duration::from_millis(5));
    }
}
