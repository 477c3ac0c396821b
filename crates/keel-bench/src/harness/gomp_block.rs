//! libgomp's block of a round (its workers ended by
//! `omp_pause_resource_all` after the block).

use super::{delay_index, latency_reps, process_threads, BenchError, Harness, Latency};

impl Harness<'_> {
    pub(super) fn gomp_block(
        &mut self,
        round: usize,
        record: Option<usize>,
    ) -> Result<(), BenchError> {
        let gomp = self
            .gomp
            .as_ref()
            .map_err(|e| BenchError::Gomp(e.clone()))?;
        // Start libgomp's workers before anything is timed.
        gomp.empty_region(200);
        let threads = process_threads();
        let n = self.n;
        let p = self.p as u64;
        let config = self.config;
        for (di, &d) in config.delays_us.iter().enumerate() {
            let len = self.delays[delay_index(&self.delays, d)].1;
            let reps = self.reps_for(d);
            for (si, s) in config.schedules.iter().enumerate() {
                let (kind, chunk) = s.omp();
                let (got_kind, _) = gomp.set_schedule(kind, chunk);
                if got_kind != kind as i32 {
                    return Err(BenchError::Gomp(format!(
                        "omp_set_schedule({kind:?}) read back as kind {got_kind}"
                    )));
                }
                gomp.parallel_loop(n, len, 1);
                let seconds = gomp.parallel_loop(n, len, reps) / reps as f64;
                let chunks = s.gomp_chunks(n, p) as f64;
                self.overhead[di * config.schedules.len() + si][1].push(record, seconds, chunks);
            }
        }
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::GompLoop,
            &mut |r| gomp.empty_loop(p, r),
        );
        let total = gomp.empty_loop(p, reps);
        self.latency[Latency::GompLoop as usize].push(record, total / reps as f64, 0.0);
        let reps = latency_reps(
            &mut self.latency_reps,
            config.sample_seconds,
            Latency::GompRegion,
            &mut |r| gomp.empty_region(r),
        );
        let total = gomp.empty_region(reps);
        self.latency[Latency::GompRegion as usize].push(record, total / reps as f64, 0.0);
        gomp.pause().map_err(BenchError::Gomp)?;
        if round == 1 {
            let t = threads.map_or("unknown".to_string(), |t| t.to_string());
            self.isolation
                .push(format!("Libgomp block: the process has {t} threads"));
            let after = process_threads().map_or("unknown".to_string(), |t| t.to_string());
            self.isolation.push(format!(
                "after omp_pause_resource_all: the process has {after} threads"
            ));
        }
        Ok(())
    }
}
