//! Keel's block of a round: a pool with `WaitPolicy::Active` built for the
//! block and dropped at its end, and the timed Keel loops and regions.

use std::hint::black_box;
use std::time::Instant;

use keel::{LoopError, ThreadPool, WaitPolicy};

use super::{delay_index, latency_reps, BenchError, Harness, Latency, Runtime};
use crate::delay::delay;

impl Harness<'_> {
    pub(super) fn keel_block(
        &mut self,
        round: usize,
        record: Option<usize>,
    ) -> Result<(), BenchError> {
        let pool = ThreadPool::builder()
            .threads(self.p)
            .wait_policy(WaitPolicy::Active)
            .pin(false)
            .build()?;
        for _ in 0..200 {
            pool.region(|_| {});
        }
        self.note_threads(round, Runtime::Keel);
        let n = self.n;
        let config = self.config;
        for (di, &d) in config.delays_us.iter().enumerate() {
            let len = self.delays[delay_index(&self.delays, d)].1;
            let reps = self.reps_for(d);
            for si in 0..config.schedules.len() {
                let cell = di * config.schedules.len() + si;
                let (spec, id) = &self.overhead_names[cell];
                let series = &mut self.overhead[cell][0];
                match keel_loop(&pool, n, len, spec, id, 1)
                    .and_then(|_| keel_loop(&pool, n, len, spec, id, reps))
                {
                    Ok((seconds, chunks)) => series.push(record, seconds, chunks),
                    Err(e) => series.error = Some(e.to_string()),
                }
            }
        }
        let p = self.p as u64;
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::KeelLoop,
            &mut |r| keel_empty_loop(&pool, p, r).unwrap_or(f64::NAN),
        );
        let series = &mut self.latency[Latency::KeelLoop as usize];
        match keel_empty_loop(&pool, p, reps) {
            Ok(total) => series.push(record, total / reps as f64, 0.0),
            Err(e) => series.error = Some(e.to_string()),
        }
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::KeelRegion,
            &mut |r| keel_empty_region(&pool, r),
        );
        let total = keel_empty_region(&pool, reps);
        self.latency[Latency::KeelRegion as usize].push(record, total / reps as f64, 0.0);

        let na = config.adaptive_schedules.len();
        for (di, &d) in config.adaptive_delays_us.iter().enumerate() {
            let len = self.delays[delay_index(&self.delays, d)].1;
            let reps = self.reps_for(d);
            for ai in 0..na {
                let (spec, id) = &self.adaptive_names[di * na + ai];
                let series = &mut self.adaptive[di * na + ai];
                match keel_loop(&pool, n, len, spec, id, 1)
                    .and_then(|_| keel_loop(&pool, n, len, spec, id, reps))
                {
                    Ok((seconds, chunks)) => series.push(record, seconds, chunks),
                    Err(e) => series.error = Some(e.to_string()),
                }
            }
        }
        drop(pool);
        Ok(())
    }
}

/// `reps` Keel loops of `n` delays; seconds and chunks per loop.
fn keel_loop(
    pool: &ThreadPool,
    n: u64,
    len: u32,
    spec: &str,
    id: &str,
    reps: u64,
) -> Result<(f64, f64), LoopError> {
    let schedule: keel::Schedule = spec.parse()?;
    // Built once: naming each instance then costs a reference count.
    let id = keel::loops::LoopName::from(id.to_string());
    let t = Instant::now();
    let mut chunks = 0;
    for _ in 0..reps {
        let summary = pool
            .parallel(0..n)
            .schedule(schedule.clone())
            .id(&id)
            .try_for_each(|_| delay(len))?;
        chunks += summary.chunks;
    }
    let reps = reps as f64;
    Ok((t.elapsed().as_secs_f64() / reps, chunks as f64 / reps))
}

/// Total seconds of `reps` empty static Keel loops of `p` iterations.
fn keel_empty_loop(pool: &ThreadPool, p: u64, reps: u64) -> Result<f64, LoopError> {
    let schedule: keel::Schedule = "static".parse()?;
    let t = Instant::now();
    for _ in 0..reps {
        pool.parallel(0..p)
            .schedule(schedule.clone())
            .id("keel-bench/empty")
            .try_for_each(|i| {
                black_box(i);
            })?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// Total seconds of `reps` empty Keel regions (fork + join).
fn keel_empty_region(pool: &ThreadPool, reps: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        pool.region(|team| {
            black_box(team.index);
        });
    }
    t.elapsed().as_secs_f64()
}
