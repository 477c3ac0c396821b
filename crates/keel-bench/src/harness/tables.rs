//! The report's tables: each configuration's samples summarised against
//! the sequential references.

use super::{delay_index, Harness, Latency, Runtime, Series};
use crate::gomp;
use crate::report::{AdaptiveRow, Cell, DelayRow, LatencyRow, OverheadRow, RatioRow, Report};
use crate::stats::{ratio, Summary};

impl Harness<'_> {
    /// EPCC's overhead of every sample against the reference: the median
    /// of the per-round references (EPCC subtracts the mean reference; a
    /// median resists the spikes of a shared VM).
    pub(super) fn cell(&self, series: &Series, refs: &[f64]) -> Cell {
        let reference = Summary::of(refs).map_or(f64::NAN, |s| s.median);
        let over: Vec<(f64, f64)> = series
            .samples
            .iter()
            .map(|s| (s.seconds - reference, s.chunks))
            .collect();
        let per_loop: Vec<f64> = over.iter().map(|&(o, _)| o * 1e6).collect();
        let per_chunk: Vec<f64> = over
            .iter()
            .map(|&(o, c)| if c > 0.0 { o / c * 1e9 } else { f64::NAN })
            .collect();
        let chunks: Vec<f64> = series.samples.iter().map(|s| s.chunks).collect();
        Cell {
            chunks: Summary::of(&chunks).map(|s| s.median),
            per_chunk_ns: Summary::of(&per_chunk),
            per_loop_us: Summary::of(&per_loop),
            error: series.error.clone(),
        }
    }

    pub(super) fn report(&self, seconds: f64) -> Report {
        let config = self.config;
        let (n, p) = (self.n, self.p as u64);
        let libgomp_built = self.gomp.is_ok();
        let delays = self
            .delays
            .iter()
            .enumerate()
            .map(|(i, &(d, len))| DelayRow {
                target_us: d,
                length: len,
                rust_reference_us: Summary::of(&self.ref_rust[i]).map(|s| s.scaled(1e6)),
                c_reference_us: Summary::of(&self.ref_c[i]).map(|s| s.scaled(1e6)),
            })
            .collect();
        let mut overhead = Vec::new();
        for (di, &d) in config.delays_us.iter().enumerate() {
            let i = delay_index(&self.delays, d);
            for (si, s) in config.schedules.iter().enumerate() {
                let series = &self.overhead[di * config.schedules.len() + si];
                let keel = self.cell(&series[0], &self.ref_rust[i]);
                let libgomp = libgomp_built.then(|| self.cell(&series[1], &self.ref_c[i]));
                let rayon = self.cell(&series[2], &self.ref_rust[i]);
                overhead.push(OverheadRow {
                    delay_us: d,
                    schedule: s.label(),
                    rayon_mapping: s.rayon_mapping(n, p),
                    keel_over_libgomp: ratio(
                        keel.per_chunk_ns,
                        libgomp.as_ref().and_then(|c| c.per_chunk_ns),
                    ),
                    keel_over_rayon: ratio(keel.per_chunk_ns, rayon.per_chunk_ns),
                    keel,
                    libgomp,
                    rayon,
                });
            }
        }
        let latency: Vec<LatencyRow> = Latency::ALL
            .iter()
            .filter(|k| libgomp_built || k.runtime() != Runtime::Libgomp)
            .map(|&k| {
                let series = &self.latency[k as usize];
                let ns: Vec<f64> = series.samples.iter().map(|s| s.seconds * 1e9).collect();
                LatencyRow {
                    runtime: k.runtime(),
                    what: k.what(self.p),
                    ns: Summary::of(&ns),
                    reps: self.latency_reps[k as usize],
                    error: series.error.clone(),
                }
            })
            .collect();
        let lat = |k: Latency| {
            let ns: Vec<f64> = self.latency[k as usize]
                .samples
                .iter()
                .map(|s| s.seconds * 1e9)
                .collect();
            Summary::of(&ns)
        };
        let latency_ratios = if libgomp_built {
            vec![
                RatioRow {
                    what: "empty parallel loop: Keel loop / libgomp parallel for".into(),
                    keel_over_libgomp: ratio(lat(Latency::KeelLoop), lat(Latency::GompLoop)),
                },
                RatioRow {
                    what: "fork + join: Keel region / libgomp parallel region".into(),
                    keel_over_libgomp: ratio(lat(Latency::KeelRegion), lat(Latency::GompRegion)),
                },
            ]
        } else {
            Vec::new()
        };
        let na = config.adaptive_schedules.len();
        let mut adaptive = Vec::new();
        for (di, &d) in config.adaptive_delays_us.iter().enumerate() {
            let i = delay_index(&self.delays, d);
            let cells: Vec<Cell> = (0..na)
                .map(|ai| self.cell(&self.adaptive[di * na + ai], &self.ref_rust[i]))
                .collect();
            let named = |name: &str| {
                config
                    .adaptive_schedules
                    .iter()
                    .position(|s| s == name)
                    .map(|i| &cells[i])
            };
            let ss = named("dynamic").and_then(|c| c.per_chunk_ns);
            // Marginal cost of a chunk: the overhead beyond a static loop's
            // (fork, join, one block per thread), per chunk beyond its.
            let marginal = |c: &Cell| -> Option<f64> {
                let base = named("static")?;
                let (loop_us, base_us) = (c.per_loop_us?.median, base.per_loop_us?.median);
                let extra = c.chunks? - base.chunks?;
                (extra >= 1.0).then(|| (loop_us - base_us) * 1e3 / extra)
            };
            let ss_marginal = named("dynamic").and_then(&marginal);
            for (ai, cell) in cells.iter().enumerate() {
                let m = marginal(cell);
                adaptive.push(AdaptiveRow {
                    delay_us: d,
                    schedule: config.adaptive_schedules[ai].clone(),
                    per_chunk_over_ss: ratio(cell.per_chunk_ns, ss),
                    marginal_per_chunk_ns: m,
                    marginal_over_ss: match (m, ss_marginal) {
                        (Some(m), Some(s)) if s > 0.0 => Some(m / s),
                        _ => None,
                    },
                    cell: cell.clone(),
                });
            }
        }
        Report {
            threads: self.p,
            cores: std::thread::available_parallelism().map_or(0, |c| c.get()),
            rounds: config.rounds,
            iterations: n,
            seconds_per_delay_unit: self.seconds_per_unit,
            keel_wait_policy: "active (WaitPolicy::Active)".into(),
            libgomp: match &self.gomp {
                Ok(_) => None,
                Err(e) => Some(e.clone()),
            },
            libgomp_wait_policy: libgomp_built.then(gomp::wait_policy),
            config: config.clone(),
            delays,
            overhead,
            latency,
            latency_ratios,
            adaptive,
            instant_now_ns: Summary::of(&self.clock).map(|s| s.scaled(1e9)),
            clock_pair_ns: Summary::of(&self.clock_pair).map(|s| s.scaled(1e9)),
            goals: self.goals(),
            other_load_cpus: self.load.iter().map(|l| l.0).collect(),
            steal_cpus: self.load.iter().map(|l| l.1).collect(),
            isolation: self.isolation.clone(),
            seconds,
        }
    }
}
